package stream

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"github.com/ftctl/ftctl/tracedat"
	"github.com/ftctl/ftctl/tracefs"
)

// Recorder moves a trace array's ring-buffer pages into one file per CPU (cpuN.raw in its
// directory) with splice(2): nothing is decoded while it records. Assemble then writes the
// trace.dat: the kernel's descriptions (formats, kallsyms, saved_cmdlines...) and the pages.
//
// The directory is ftctl's working space next to the final file (FILE.tmp-PID): the file
// appears under its name only complete, by a rename. Killed (SIGKILL), ftctl leaves the
// directory: header.dat, written before the first page is moved, holds everything but the
// pages, and cpuN.raw the pages moved so far; `ftctl report --recover DIR` reads them.
type Recorder struct {
	in     *tracefs.Instance
	dir    string
	sp     *tracefs.Splicer
	files  []*os.File
	before []tracefs.CPUStats
	header *tracedat.Header
	Stats  RecordStats
}

// RecordStats are the figures of a recording, per CPU: what the kernel says it handed over
// (per_cpu/cpuN/stats "read events"), what it lost (overrun + dropped events), and the bytes
// of pages moved.
type RecordStats struct {
	CPUs    []CPURecord
	Seconds float64
	End     string
}

// CPURecord is one CPU's figures.
type CPURecord struct {
	CPU    int   `json:"cpu"`
	Events int64 `json:"events"`
	Lost   int64 `json:"lost"`
	Bytes  int64 `json:"bytes"`
}

// Totals sums the CPUs' figures.
func (s *RecordStats) Totals() (events, lost, bytes int64) {
	for _, c := range s.CPUs {
		events += c.Events
		lost += c.Lost
		bytes += c.Bytes
	}
	return
}

func (s *RecordStats) String() string {
	ev, lost, b := s.Totals()
	out := fmt.Sprintf("%d events, %s, %d lost", ev, sizeText(b), lost)
	for _, c := range s.CPUs {
		out += fmt.Sprintf("; cpu%d %d events %s %d lost", c.CPU, c.Events, sizeText(c.Bytes), c.Lost)
	}
	return out
}

func sizeText(b int64) string {
	switch {
	case b >= 10<<20:
		return strconv.FormatInt(b>>20, 10) + " MiB"
	case b >= 10<<10:
		return strconv.FormatInt(b>>10, 10) + " KiB"
	}
	return strconv.FormatInt(b, 10) + " B"
}

// HeaderFile is the name of the recording's header (a trace.dat without CPUs) in the
// recorder's directory.
const HeaderFile = "header.dat"

// CPUFile is the name of CPU cpu's pages in the recorder's directory.
func CPUFile(cpu int) string { return "cpu" + strconv.Itoa(cpu) + ".raw" }

// NewRecorder opens the trace array's CPUs and writes header.dat into dir (which exists and is
// empty): the kernel's descriptions as they are now, with the trace clock of in. Start
// recording with Run.
func NewRecorder(in *tracefs.Instance, dir string) (*Recorder, error) {
	r := &Recorder{in: in, dir: dir}
	h, err := readHeader(in)
	if err != nil {
		return nil, err
	}
	r.header = h
	sp, err := in.OpenSplicer()
	if err != nil {
		return nil, err
	}
	r.sp = sp
	h.PageSize = sp.PageSize()
	for _, cpu := range sp.CPUs() {
		f, err := os.OpenFile(filepath.Join(dir, CPUFile(cpu)), os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
		if err != nil {
			r.Close()
			return nil, err
		}
		r.files = append(r.files, f)
		r.Stats.CPUs = append(r.Stats.CPUs, CPURecord{CPU: cpu})
	}
	if err := writeFileSync(filepath.Join(dir, HeaderFile), h, nil); err != nil {
		r.Close()
		return nil, err
	}
	r.before, _ = in.CPUStats()
	return r, nil
}

// readHeader reads what a trace.dat holds besides the pages. The saved cmdlines are read
// again at the end (Assemble): the recorded processes are in it then.
func readHeader(in *tracefs.Instance) (*tracedat.Header, error) {
	fs := in.FS()
	top := fs.Top()
	h := &tracedat.Header{LongSize: 8}
	var err error
	if h.HeaderPage, err = top.ReadFile("events/header_page"); err != nil {
		return nil, err
	}
	h.HeaderEvent, _ = top.ReadFile("events/header_event") // read by no one (trace-cmd skips it)
	formats, systems, err := fs.EventFormatTexts()
	if err != nil {
		return nil, err
	}
	for _, s := range systems {
		if s == "ftrace" {
			h.Ftrace = formats[s]
			continue
		}
		h.Systems = append(h.Systems, tracedat.System{Name: s, Formats: formats[s]})
	}
	if h.Kallsyms, err = fs.Kallsyms(context.Background()); err != nil {
		h.Kallsyms = nil // without it, addresses print in hex: still a recording
	}
	h.Printk, _ = top.ReadFile("printk_formats")
	h.Cmdlines, _ = top.ReadFile("saved_cmdlines")
	if clock, err := in.ReadFile("trace_clock"); err == nil {
		h.Options = append(h.Options, tracedat.Option{ID: tracedat.OptionTraceClock, Data: append(clock, 0)})
	}
	return h, nil
}

// writeFileSync writes a trace.dat to path and syncs it.
func writeFileSync(path string, h *tracedat.Header, cpus []tracedat.CPUSource) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return err
	}
	hh := *h
	hh.CPUs = len(cpus)
	err = tracedat.Write(f, &hh, cpus)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

// RecordOptions say when Run stops (besides its context) and how it reports progress.
type RecordOptions struct {
	Duration time.Duration
	Count    int64 // stop once the kernel handed over at least this many events
	// Progress, when set, is called about every ProgressEvery with the figures so far.
	Progress      func(*RecordStats)
	ProgressEvery time.Duration
	// Done, when it closes, ends the recording as its context does, but as a normal end.
	Done <-chan struct{}
}

// Run moves pages until ctx ends, Duration passes, Count events were handed over, or Done
// closes. It returns ctx's error for an interruption; the pages moved stay for Assemble.
func (r *Recorder) Run(ctx context.Context, o RecordOptions) error {
	start := time.Now()
	defer func() { r.Stats.Seconds = time.Since(start).Seconds() }()
	var deadline <-chan time.Time
	if o.Duration > 0 {
		t := time.NewTimer(o.Duration)
		defer t.Stop()
		deadline = t.C
	}
	every := o.ProgressEvery
	if every <= 0 {
		every = time.Second
	}
	lastStats, lastProgress := time.Time{}, time.Now()
	for {
		moved, err := r.moveAll()
		if err != nil {
			return err
		}
		select {
		case <-ctx.Done():
			r.Stats.End = EndInterrupted
			return ctx.Err()
		case <-deadline:
			r.Stats.End = EndDuration
			return nil
		case <-o.Done:
			r.Stats.End = "done"
			return nil
		default:
		}
		if time.Since(lastStats) >= 200*time.Millisecond {
			r.updateStats()
			lastStats = time.Now()
			if o.Count > 0 {
				if ev, _, _ := r.Stats.Totals(); ev >= o.Count {
					r.Stats.End = EndCount
					return nil
				}
			}
		}
		if o.Progress != nil && time.Since(lastProgress) >= every {
			o.Progress(&r.Stats)
			lastProgress = time.Now()
		}
		if moved == 0 {
			// poll ends when a CPU is past buffer_percent; splice only takes whole pages, so a
			// trickle is collected at this pace
			r.sp.Wait(50 * time.Millisecond)
			if moved2, err := r.moveAll(); err != nil {
				return err
			} else if moved2 == 0 {
				time.Sleep(20 * time.Millisecond)
			}
		}
	}
}

func (r *Recorder) moveAll() (int64, error) {
	var moved int64
	for k := range r.files {
		n, err := r.sp.Move(k, r.files[k])
		r.Stats.CPUs[k].Bytes += n
		moved += n
		if err != nil {
			return moved, err
		}
	}
	return moved, nil
}

// updateStats reads the CPUs' stats: events handed over and lost since NewRecorder.
func (r *Recorder) updateStats() {
	now, err := r.in.CPUStats()
	if err != nil {
		return
	}
	for k := range r.Stats.CPUs {
		c := &r.Stats.CPUs[k]
		for _, a := range now {
			if a.CPU != c.CPU {
				continue
			}
			for _, b := range r.before {
				if b.CPU == c.CPU {
					c.Events = a.ReadEvents - b.ReadEvents
					c.Lost = (a.Overrun - b.Overrun) + (a.DroppedEvents - b.DroppedEvents)
				}
			}
		}
	}
}

// Flush moves what the CPUs still hold, the pages the kernel is writing too (read(2)). With
// tracing still on (tracingOff false: an instance ftctl does not own), it stops after as many
// pages as each CPU's buffer held when it began, plus one.
func (r *Recorder) Flush(tracingOff bool) error {
	if _, err := r.moveAll(); err != nil {
		return err
	}
	limit := map[int]int{}
	if !tracingOff {
		stats, _ := r.in.CPUStats()
		for _, st := range stats {
			limit[st.CPU] = int(st.BytesInBuffer)/r.sp.PageSize() + 2
		}
	}
	var errs []error
	for k := range r.files {
		maxPages := 0 // all
		if !tracingOff {
			maxPages = max(limit[r.Stats.CPUs[k].CPU], 1)
		}
		n, err := r.sp.Flush(k, r.files[k], maxPages)
		r.Stats.CPUs[k].Bytes += n
		errs = append(errs, err)
	}
	r.updateStats()
	return errors.Join(errs...)
}

// Assemble writes the trace.dat at path: the header read by NewRecorder with the saved
// cmdlines as they are now, the CPU statistics as options (trace-cmd's CPUSTAT), then every
// CPU's pages. It writes path.tmp-... in the recorder's directory and renames it, so path
// never holds half a file; then it removes the directory.
func (r *Recorder) Assemble(path string) error {
	if b, err := r.in.FS().Top().ReadFile("saved_cmdlines"); err == nil {
		r.header.Cmdlines = b
	}
	if stats, err := r.in.CPUStats(); err == nil {
		for _, st := range stats {
			r.header.Options = append(r.header.Options, tracedat.Option{ID: tracedat.OptionCPUStat,
				Data: []byte(fmt.Sprintf("CPU: %d\nentries: %d\noverrun: %d\ncommit overrun: %d\ndropped events: %d\nread events: %d\n\x00",
					st.CPU, st.Entries, st.Overrun, st.CommitOverrun, st.DroppedEvents, st.ReadEvents))})
		}
	}
	var cpus []tracedat.CPUSource
	for k, f := range r.files {
		if err := f.Sync(); err != nil {
			return err
		}
		rf, err := os.Open(f.Name())
		if err != nil {
			return err
		}
		defer rf.Close()
		cpus = append(cpus, tracedat.CPUSource{R: rf, Size: r.Stats.CPUs[k].Bytes})
	}
	tmp := filepath.Join(r.dir, "trace.dat")
	if err := writeFileSync(tmp, r.header, cpus); err != nil {
		return err
	}
	if err := os.Rename(tmp, path); err != nil {
		return err
	}
	r.Close()
	return os.RemoveAll(r.dir)
}

// Close closes the kernel's files and the CPUs' files (the directory stays).
func (r *Recorder) Close() {
	if r.sp != nil {
		r.sp.Close()
	}
	for _, f := range r.files {
		f.Close()
	}
}
