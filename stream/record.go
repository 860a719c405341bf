package stream

import (
	"cmp"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/ftctl/ftctl/tracedat"
	"github.com/ftctl/ftctl/tracefs"
)

// Recorder moves a trace array's ring-buffer pages into one file per CPU (cpuN.raw in its
// directory) with splice(2): nothing is decoded while it records. Assemble then writes the
// trace.dat: the kernel's descriptions (formats, kallsyms, saved_cmdlines...) and the pages.
//
// The pages come first. NewRecorder reads only the page header and the clock; the rest of the
// descriptions (the formats of the ftrace system and of the enabled events, and kallsyms:
// seconds under emulation) is read by ReadHeader, which the caller runs before tracing starts when it owns the trace array, and
// which Run otherwise runs beside the moving of pages, once the first pages are moved: an
// instance that is already tracing (-B) fills its buffer meanwhile, and what it overwrites
// is lost.
//
// Run wakes a few times a second, paced so that the busiest CPU's buffer is about a quarter
// full at each wake (at the rate it filled since the last), and moves every full page in a few
// splices, each as large as the pipe: a page costs a fraction of a system call, never a look
// at an event.
//
// The directory is ftctl's working space next to the final file (FILE.tmp-PID): the file
// appears under its name only complete, by a rename. Killed (SIGKILL), ftctl leaves the
// directory: header.dat, written before the first page is moved (and again, whole, once
// ReadHeader read the formats and kallsyms), holds everything but the pages, and cpuN.raw the
// pages moved so far; `ftctl report --recover DIR` reads them.
//
// A recording holds the formats of the events it recorded, not of every event the kernel has
// (about 1,900; trace-cmd record writes all of them unless given events with -e, then only
// theirs, trace-output.c read_event_files): Assemble
// looks at the type id of every record in the CPUs' files and adds the format of any other
// event found there, enabled and disabled again while recording, or written by a trigger.
type Recorder struct {
	in     *tracefs.Instance
	dir    *RecordDir
	sp     splicer
	files  []*os.File
	before []tracefs.CPUStats
	header *tracedat.Header
	// formats are the format files read for the recording, by type id: the ftrace system's,
	// the enabled events', and (Assemble) those of any other event the pages hold
	formats formatSet

	headerOnce    sync.Once
	headerDone    chan struct{} // closed once ReadHeader ended
	headerErr     error
	headerStarted bool // Run started ReadHeader: Close waits for it

	// NameSelf: Assemble names the recorder's threads in the file (SelfOption), so that
	// report leaves their events out. Set it unless the recording is to show them.
	NameSelf bool
	self     map[int]bool

	// Phase, when set, is called as each phase of the recording ends ("header: kallsyms", "formats
	// scan", "file written"...): FTCTL_TIMING prints what each took.
	Phase func(name string)

	Stats RecordStats
}

// RecordStats are the figures of a recording, per CPU: what the kernel says it handed over
// (per_cpu/cpuN/stats "read events"), what it lost (overrun + dropped events), and the bytes
// of pages moved.
type RecordStats struct {
	CPUs    []CPURecord
	Seconds float64
	End     string
	// Waits counts the waits between moves of pages (the recorder's wakes, but for bursts).
	Waits int
	// NoFormat are the event ids found in the pages that no event has any more (removed
	// while recording, a dynamic event most likely): the file has no format for them.
	NoFormat []int
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

// NewRecorder opens the trace array's CPUs and writes header.dat into dir (made by
// MakeRecordDir, empty): the page and event headers and the trace clock of in. ReadHeader adds
// the rest. Start recording with Run.
func NewRecorder(in *tracefs.Instance, dir *RecordDir) (*Recorder, error) {
	r := &Recorder{in: in, dir: dir, headerDone: make(chan struct{}), self: map[int]bool{}}
	h, err := readPageHeader(in)
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
		// open for reading too: Assemble reads the pages through this descriptor, never
		// through the name, which whoever can write the directory could make a link
		f, err := dir.dir.Create(CPUFile(cpu), 0o600)
		if err != nil {
			r.Close()
			return nil, err
		}
		r.files = append(r.files, f)
		r.Stats.CPUs = append(r.Stats.CPUs, CPURecord{CPU: cpu})
	}
	if err := r.writeHeader(h); err != nil {
		r.Close()
		return nil, err
	}
	r.before, _ = in.CPUStats()
	return r, nil
}

// readPageHeader reads what decoding the pages needs before anything else: the page header
// (header_page), the event header, and the trace clock.
func readPageHeader(in *tracefs.Instance) (*tracedat.Header, error) {
	top := in.FS().Top()
	h := &tracedat.Header{LongSize: 8}
	var err error
	if h.HeaderPage, err = top.ReadFile("events/header_page"); err != nil {
		return nil, err
	}
	h.HeaderEvent, _ = top.ReadFile("events/header_event") // read by no one (trace-cmd skips it)
	if clock, err := in.ReadFile("trace_clock"); err == nil {
		h.Options = append(h.Options, tracedat.Option{ID: tracedat.OptionTraceClock, Data: append(clock, 0)})
	}
	// which kernel: report reads the BTF of the kernel it runs on only for a file of that
	// kernel (RecordedHere)
	if o, ok := UnameOption(); ok {
		h.Options = append(h.Options, o)
	}
	return h, nil
}

// ReadHeader reads the rest of what a trace.dat holds besides the pages (every event format,
// kallsyms, the printk formats, the saved cmdlines) and writes header.dat again, whole. It runs
// once: a second call, or Run's, waits for the first and returns its error. The saved cmdlines
// are read again by Assemble: the recorded processes are in it then.
func (r *Recorder) ReadHeader() error {
	r.headerOnce.Do(func() {
		defer close(r.headerDone)
		r.headerErr = r.readHeader()
		r.phase("header")
	})
	<-r.headerDone
	return r.headerErr
}

func (r *Recorder) readHeader() error {
	h := *r.header
	if err := readDescriptions(r.in, &h, &r.formats, false, r.phase); err != nil {
		return err
	}
	if err := r.writeHeader(&h); err != nil {
		return err
	}
	*r.header = h
	return nil
}

// readDescriptions reads into h what a trace.dat holds besides the pages and the page header
// (readPageHeader): the formats of the ftrace system (function, print...: as trace-cmd writes
// them, all of them) and of the events enabled in in now, with dynamic those of every event of
// the dynamic events' groups (probes, synthetic events: the ones a later reading may find
// gone), all kept in fs too; kallsyms, the printk formats and the saved cmdlines. phase, when
// set, is called as each part is read.
func readDescriptions(in *tracefs.Instance, h *tracedat.Header, fs *formatSet, dynamic bool, phase func(string)) error {
	if phase == nil {
		phase = func(string) {}
	}
	kfs := in.FS()
	top := kfs.Top()
	events, err := kfs.Events("ftrace")
	if err != nil {
		return err
	}
	for _, e := range events {
		fs.add(kfs, tracefs.EventName{System: "ftrace", Event: e})
	}
	enabled, _ := in.EnabledEvents()
	for _, e := range enabled {
		fs.add(kfs, e)
	}
	if dynamic {
		for _, e := range dynamicEvents(kfs) {
			fs.add(kfs, e)
		}
	}
	h.Ftrace, h.Systems = fs.sections()
	phase("header: formats")
	if h.Kallsyms, err = kfs.Kallsyms(context.Background()); err != nil {
		h.Kallsyms = nil // without it, addresses print in hex: still a recording
	}
	phase("header: kallsyms")
	h.Printk, _ = top.ReadFile("printk_formats")
	h.Cmdlines, _ = top.ReadFile("saved_cmdlines")
	phase("header: printk, cmdlines")
	return nil
}

// dynamicEvents are the events of every group dynamic_events names (kprobes, uprobes, fprobes,
// eprobes, synthetic events, user events), sorted; without dynamic_events (before 5.0),
// kprobe_events', uprobe_events' and synthetic_events' (listed as NAME FIELDS...).
func dynamicEvents(kfs *tracefs.FS) []tracefs.EventName {
	top := kfs.Top()
	groups := map[string]bool{}
	if b, err := top.ReadFile("dynamic_events"); err == nil {
		for _, p := range tracefs.ParseProbeList(string(b)) {
			groups[p.Group] = true
		}
	} else {
		probes, _ := kfs.KprobesAndUprobes()
		for _, p := range probes {
			groups[p.Group] = true
		}
		if b, err := top.ReadFile("synthetic_events"); err == nil && len(strings.TrimSpace(string(b))) > 0 {
			groups["synthetic"] = true
		}
	}
	var out []tracefs.EventName
	for g := range groups {
		if g == "" || g == "ftrace" {
			continue
		}
		events, err := kfs.Events(g)
		if err != nil {
			continue
		}
		for _, e := range events {
			out = append(out, tracefs.EventName{System: g, Event: e})
		}
	}
	slices.SortFunc(out, func(a, b tracefs.EventName) int {
		return cmp.Or(strings.Compare(a.System, b.System), strings.Compare(a.Event, b.Event))
	})
	return out
}

// A recordedFormat is the format file of an event the recording holds, as the kernel wrote it.
type recordedFormat struct {
	name tracefs.EventName
	text []byte
}

// formatSet is the formats a file holds, by type id.
type formatSet map[int]recordedFormat

// add reads an event's format into the set, unless it has it; false when the kernel has no
// such event (any more).
func (s *formatSet) add(kfs *tracefs.FS, e tracefs.EventName) bool {
	for _, f := range *s {
		if f.name == e {
			return true
		}
	}
	b, err := kfs.Top().ReadFile(filepath.Join("events", e.System, e.Event, "format"))
	if err != nil {
		return false
	}
	id := tracefs.FormatID(b)
	if id < 0 {
		return false
	}
	if *s == nil {
		*s = formatSet{}
	}
	(*s)[id] = recordedFormat{e, b}
	return true
}

// sections are the set's formats as a trace.dat holds them: the ftrace system's, then the
// other systems', each sorted by name.
func (s formatSet) sections() (ftrace [][]byte, systems []tracedat.System) {
	all := make([]recordedFormat, 0, len(s))
	for _, f := range s {
		all = append(all, f)
	}
	slices.SortFunc(all, func(a, b recordedFormat) int {
		return cmp.Or(strings.Compare(a.name.System, b.name.System), strings.Compare(a.name.Event, b.name.Event))
	})
	for _, f := range all {
		switch {
		case f.name.System == "ftrace":
			ftrace = append(ftrace, f.text)
		case len(systems) == 0 || systems[len(systems)-1].Name != f.name.System:
			systems = append(systems, tracedat.System{Name: f.name.System, Formats: [][]byte{f.text}})
		default:
			systems[len(systems)-1].Formats = append(systems[len(systems)-1].Formats, f.text)
		}
	}
	return ftrace, systems
}

// addFile adds the formats a trace.dat's header holds (a saved header: SaveHeader), each
// under the system it is filed under and the name and id its text gives.
func (s *formatSet) addFile(h *tracedat.Header) {
	put := func(system string, text []byte) {
		id := tracefs.FormatID(text)
		name, _, _ := strings.Cut(string(text), "\n")
		name, ok := strings.CutPrefix(name, "name: ")
		if id < 0 || !ok {
			return
		}
		if *s == nil {
			*s = formatSet{}
		}
		(*s)[id] = recordedFormat{tracefs.EventName{System: system, Event: strings.TrimSpace(name)}, text}
	}
	for _, f := range h.Ftrace {
		put("ftrace", f)
	}
	for _, sys := range h.Systems {
		for _, f := range sys.Formats {
			put(sys.Name, f)
		}
	}
}

// addRecordedFormats finds the events whose records the CPUs' files hold (by the type id
// each record starts with) and adds the format of each the recording lacks: an event enabled
// and disabled again while recording, or one a trigger wrote. Ids no event has any more are
// kept in Stats.NoFormat.
func (r *Recorder) addRecordedFormats(cpus []*os.File) error {
	sizes := make([]int64, len(cpus))
	for k := range cpus {
		sizes[k] = r.Stats.CPUs[k].Bytes
	}
	seen, _, err := scanEventIDs(r.header, cpus, sizes)
	if err != nil {
		return err
	}
	r.Stats.NoFormat = addMissingFormats(r.in.FS(), &r.formats, seen)
	r.header.Ftrace, r.header.Systems = r.formats.sections()
	return nil
}

// scanEventIDs reads the pages of the CPUs' files (the first sizes[k] bytes of cpus[k], pages
// of h.PageSize laid out as h.HeaderPage says) and says which type ids their records have, and
// how many records there are.
func scanEventIDs(h *tracedat.Header, cpus []*os.File, sizes []int64) (ids []int, records int64, err error) {
	layout, err := tracefs.ParsePageLayout(string(h.HeaderPage))
	if err != nil {
		return nil, 0, err
	}
	seen := make([]bool, 1<<16)
	ps := h.PageSize
	scan := func(pages []byte) {
		for p := 0; p+ps <= len(pages); p += ps {
			page, err := ParsePage(layout, pages[p:p+ps])
			if err != nil {
				continue // Assemble copies it as it is; a reader says what is wrong with it
			}
			page.Events(func(_ uint64, data []byte) error {
				records++
				if len(data) >= 2 {
					seen[binary.LittleEndian.Uint16(data)] = true
				}
				return nil
			})
		}
	}
	var buf []byte
	for k, f := range cpus {
		size := sizes[k]
		if size <= 0 {
			continue
		}
		// mapped, the pages are looked at where the page cache holds them: a read would copy
		// megabytes, which under emulation costs a tenth of a second. A window at a time: a
		// populated mapping of a whole CPU's file (gigabytes on a long recording) would read
		// it all in and map it at once
		if scanMapped(f, size, ps, scan) {
			continue
		}
		if buf == nil {
			buf = make([]byte, 64*ps)
		}
		for off := int64(0); off < size; {
			n, err := f.ReadAt(buf[:min(int64(len(buf)), size-off)], off)
			if n < ps && err != nil {
				return nil, 0, err
			}
			scan(buf[:n])
			off += int64(n / ps * ps)
		}
	}
	for id, ok := range seen {
		if ok {
			ids = append(ids, id)
		}
	}
	return ids, records, nil
}

// addMissingFormats adds to fs the kernel's format of every id of ids fs lacks, and returns the
// ids no event has any more (removed, or made again under another id): a file has no format for
// them.
func addMissingFormats(kfs *tracefs.FS, fs *formatSet, ids []int) (noFormat []int) {
	var missing []int
	for _, id := range ids {
		if _, have := (*fs)[id]; !have {
			missing = append(missing, id)
		}
	}
	if len(missing) == 0 {
		return nil
	}
	names, _ := kfs.EventIDs()
	for _, id := range missing {
		if e, ok := names[id]; !ok || !fs.add(kfs, e) {
			noFormat = append(noFormat, id)
		} else if _, ok := (*fs)[id]; !ok { // the name has another id now: made again
			noFormat = append(noFormat, id)
		}
	}
	return noFormat
}

// mapFile maps a window of a CPU's file for addRecordedFormats (a variable: the tests take
// the reads, and count the windows).
var mapFile = tracefs.MapFile

// mapWindow is the most of a CPU's file mapped at once (a multiple of every page size).
var mapWindow int64 = 64 << 20

// scanMapped scans the first size bytes of f (whole pages of ps bytes) mapped a window at a
// time; false when a window cannot be mapped before anything was scanned (then f is read).
func scanMapped(f *os.File, size int64, ps int, scan func([]byte)) bool {
	window := max(mapWindow/int64(ps)*int64(ps), int64(ps))
	for off := int64(0); off < size; off += window {
		n := min(window, size-off)
		m, unmap, err := mapFile(f, off, int(n))
		if err != nil {
			if off == 0 {
				return false
			}
			// later windows: read instead
			buf := make([]byte, n)
			if k, _ := f.ReadAt(buf, off); k > 0 {
				scan(buf[:k])
			}
			continue
		}
		scan(m)
		unmap()
	}
	return true
}

// writeHeader writes header.dat durably, replacing the one there by a rename (a recovery reads
// one or the other, never half of one).
func (r *Recorder) writeHeader(h *tracedat.Header) error {
	const tmp = HeaderFile + ".tmp"
	r.dir.dir.Remove(tmp)
	f, err := r.dir.dir.Create(tmp, 0o600)
	if err != nil {
		return err
	}
	if err := writeSync(f, h, nil); err != nil {
		return err
	}
	return r.dir.dir.Rename(tmp, r.dir.dir, HeaderFile)
}

// SelfName is the process name under which a recording names the recorder's threads:
// trace-cmd's PROCMAPS option, one per thread, with no mappings. It is the one option of
// trace-cmd's format that names a pid and that trace-cmd report reads without a word (an
// option id of ftctl's own would make it warn "unknown option").
const SelfName = "ftctl-record"

// selfOption names tid as one of the recorder's threads.
func selfOption(tid int) tracedat.Option {
	return tracedat.Option{ID: tracedat.OptionProcMaps, Data: fmt.Appendf(nil, "%x 0 %s\n\x00", tid, SelfName)}
}

// RecorderThreads are the threads a recording names as its recorder's (SelfOption): ftctl
// record's own, whose events an instance it does not own (-B) recorded with the rest.
func RecorderThreads(f *tracedat.File) map[int]bool {
	out := map[int]bool{}
	for _, o := range f.Options {
		if o.ID != tracedat.OptionProcMaps {
			continue
		}
		var tid, maps int
		var name string
		if n, err := fmt.Sscanf(strings.TrimRight(string(o.Data), "\x00\n"), "%x %x %s", &tid, &maps, &name); err == nil && n == 3 &&
			name == SelfName && maps == 0 && tid > 0 {
			out[tid] = true
		}
	}
	return out
}

// SkipRecorder is a FileOptions.Skip that leaves out the recorder's threads of f, nil when f
// names none.
func SkipRecorder(f *tracedat.File) func(pid int) bool {
	self := RecorderThreads(f)
	if len(self) == 0 {
		return nil
	}
	return func(pid int) bool { return self[pid] }
}

// noteSelf adds the recorder's threads as they are now.
func (r *Recorder) noteSelf() {
	for _, tid := range tracefs.OwnThreads() {
		r.self[tid] = true
	}
}

// writeSync writes a trace.dat into f, syncs it and closes it.
func writeSync(f *os.File, h *tracedat.Header, cpus []tracedat.CPUSource) error {
	hh := *h
	hh.CPUs = len(cpus)
	err := tracedat.Write(f, &hh, cpus)
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

// The pace of Run: it waits between paceMin and paceMax, aiming at a quarter of the busiest
// CPU's buffer per wake.
const (
	paceMin = 2 * time.Millisecond
	paceMax = 100 * time.Millisecond
	// paceMaxEarly is paceMax when a CPU past buffer_percent ends the wait early
	// (Splicer.WakesEarly): a slow trickle then wakes the recorder once a second, not ten
	// times. Under emulation each wake costs Go's sysmon thread a burst of 20 µs polls around
	// the timer that ends it (BENCHMARKS.md, "Record's idle pace").
	paceMaxEarly = time.Second
)

// Run moves pages until ctx ends, Duration passes, Count events were handed over, or Done
// closes. It returns ctx's error for an interruption; the pages moved stay for Assemble. When
// ReadHeader has not run, Run starts it beside the moving, after the first move.
func (r *Recorder) Run(ctx context.Context, o RecordOptions) error {
	start := time.Now()
	defer func() { r.Stats.Seconds = time.Since(start).Seconds() }()
	r.noteSelf()
	// the end of the recording interrupts the wait under way: up to a second, idle, where
	// buffer_percent wakes the recorder (one goroutine for the whole run: one per wait would
	// wake a thread each time)
	finished, exited := make(chan struct{}), make(chan struct{})
	defer func() { close(finished); <-exited }()
	go func() {
		defer close(exited)
		var deadline <-chan time.Time
		if o.Duration > 0 {
			t := time.NewTimer(o.Duration - time.Since(start))
			defer t.Stop()
			deadline = t.C
		}
		select {
		case <-ctx.Done():
		case <-deadline:
		case <-o.Done:
		case <-finished:
			return
		}
		r.sp.Interrupt()
	}()
	every := o.ProgressEvery
	if every <= 0 {
		every = time.Second
	}
	statsEvery := every
	if o.Count > 0 {
		statsEvery = min(every, 200*time.Millisecond)
	}
	quarter := float64(r.sp.BufferBytes()) / 4
	if quarter <= 0 {
		quarter = 256 << 10
	}
	lastStats, lastProgress, lastMove := time.Now(), time.Now(), time.Now()
	rate := 0.0 // bytes a second into the busiest CPU's buffer, as last seen
	first := true
	for {
		busiest, err := r.moveAll()
		if err != nil {
			return err
		}
		now := time.Now()
		if dt := now.Sub(lastMove).Seconds(); dt > 0 {
			rate = max(float64(busiest)/dt, rate/2) // a burst is followed at once, a lull by halves
		}
		lastMove = now
		if first {
			first = false
			r.headerStarted = true
			go r.ReadHeader() // beside the moving; Assemble waits for it
		}
		select {
		case <-ctx.Done():
			r.Stats.End = EndInterrupted
			return ctx.Err()
		case <-o.Done:
			r.Stats.End = "done"
			return nil
		default:
		}
		if o.Duration > 0 && now.Sub(start) >= o.Duration {
			r.Stats.End = EndDuration
			return nil
		}
		if now.Sub(lastStats) >= statsEvery {
			r.updateStats()
			lastStats = now
			if o.Count > 0 {
				if ev, _, _ := r.Stats.Totals(); ev >= o.Count {
					r.Stats.End = EndCount
					return nil
				}
			}
		}
		if o.Progress != nil && now.Sub(lastProgress) >= every {
			o.Progress(&r.Stats)
			lastProgress = now
		}
		if float64(busiest) >= quarter {
			continue // late already: move again at once
		}
		most := paceMax
		if r.sp.WakesEarly() {
			most = paceMaxEarly
		}
		pace := most
		if rate > 0 {
			pace = min(max(time.Duration(quarter/rate*float64(time.Second)), paceMin), most)
		}
		r.Stats.Waits++
		// poll ends early when a CPU is past buffer_percent (not 0): a burst the pace missed
		r.sp.Wait(pace)
	}
}

// moveAll moves every CPU's full pages and says how many bytes the busiest CPU gave.
func (r *Recorder) moveAll() (int64, error) {
	var busiest int64
	for k := range r.files {
		n, err := r.sp.Move(k, r.files[k])
		r.Stats.CPUs[k].Bytes += n
		busiest = max(busiest, n)
		if err != nil {
			return busiest, err
		}
	}
	return busiest, nil
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

// splicer is what the Recorder needs of tracefs.Splicer (an interface: the tests model a CPU
// the kernel never stops writing).
type splicer interface {
	PageSize() int
	BufferBytes() int64
	WakesEarly() bool
	Move(k int, dst *os.File) (int64, error)
	Flush(k int, dst *os.File, maxPages int) (int64, error)
	Wait(d time.Duration)
	Interrupt()
	Close() error
}

// Flush moves what the CPUs still hold, the pages the kernel is writing too (read(2)). It reads
// at most as many pages as a CPU's buffer holds, plus two (the reader's page and the one being
// written): with tracing off (tracingOff) that is all there is; with tracing still on (an
// instance ftctl does not own, or tracing_on=0 could not be written) a CPU the kernel keeps
// writing never empties (a recorder that is traced itself feeds every read with the events of
// the read before), and Flush would read forever.
func (r *Recorder) Flush(tracingOff bool) error {
	if _, err := r.moveAll(); err != nil {
		return err
	}
	stats, _ := r.in.CPUStats()
	var errs []error
	for k := range r.files {
		n, err := r.sp.Flush(k, r.files[k], flushLimit(tracingOff, r.Stats.CPUs[k].CPU, stats, r.sp.BufferBytes(), r.sp.PageSize()))
		r.Stats.CPUs[k].Bytes += n
		errs = append(errs, err)
	}
	r.updateStats()
	return errors.Join(errs...)
}

// flushLimit is how many pages Flush reads of a CPU, never 0 (which Splicer.Flush takes for
// "until empty"). Tracing on: the bytes the CPU held when the flush began (its stats' "bytes"),
// in pages. Tracing off: the buffer's size in pages (buffer_size_kb; a page is seldom full, so
// the bytes held can be fewer pages than it holds), or twice the bytes held when the sizes are
// unknown, or 64Ki pages when neither can be read. Two pages more either way.
func flushLimit(tracingOff bool, cpu int, stats []tracefs.CPUStats, bufBytes int64, pageSize int) int {
	if pageSize <= 0 {
		pageSize = 4096
	}
	held, known := int64(0), false
	for _, st := range stats {
		if st.CPU == cpu {
			held, known = st.BytesInBuffer, true
		}
	}
	var bytes int64
	switch {
	case !tracingOff:
		bytes = held
	case bufBytes > 0:
		bytes = max(bufBytes, held)
	case known:
		bytes = 2 * held
	default:
		bytes = 64 << 10 * int64(pageSize)
	}
	return int(bytes/int64(pageSize)) + 2
}

// Assemble writes the recording's file (RecordDir's FILE): the header read by NewRecorder with
// the saved cmdlines as they are now, the CPU statistics as options (trace-cmd's CPUSTAT), then
// every CPU's pages. It writes trace.dat in the working directory, with RecordDir.Mode, and
// renames it to FILE, so FILE never holds half a file; then it removes the working directory.
// The pages are read through the descriptors they were written through.
func (r *Recorder) Assemble() error {
	if err := r.ReadHeader(); err != nil { // run beside Run, or now when Run never ran
		return err
	}
	if r.NameSelf {
		r.noteSelf()
		tids := make([]int, 0, len(r.self))
		for tid := range r.self {
			tids = append(tids, tid)
		}
		slices.Sort(tids)
		for _, tid := range tids {
			r.header.Options = append(r.header.Options, selfOption(tid))
		}
	}
	if b, err := r.in.FS().Top().ReadFile("saved_cmdlines"); err == nil {
		r.header.Cmdlines = b
	}
	if stats, err := r.in.CPUStats(); err == nil {
		r.header.Options = append(r.header.Options, cpuStatOptions(stats)...)
	}
	var cpus []tracedat.CPUSource
	for k, f := range r.files {
		if err := f.Sync(); err != nil {
			return err
		}
		size := r.Stats.CPUs[k].Bytes
		cpus = append(cpus, tracedat.CPUSource{R: io.NewSectionReader(f, 0, size), Size: size})
	}
	r.phase("assemble start")
	if err := r.addRecordedFormats(r.files); err != nil {
		return err
	}
	r.phase("formats scan")
	const tmp = "trace.dat"
	f, err := r.dir.dir.Create(tmp, 0o600)
	if err != nil {
		return err
	}
	if mode := r.dir.Mode.Perm(); mode != 0o600 {
		if err := f.Chmod(mode); err != nil { // exactly: the umask does not narrow --mode
			f.Close()
			return err
		}
	}
	if err := writeSync(f, r.header, cpus); err != nil {
		return err
	}
	r.phase("file written")
	if err := r.dir.dir.Rename(tmp, r.dir.parent, r.dir.file); err != nil {
		return err
	}
	r.dir.parent.Sync()
	r.Close()
	return r.dir.Remove()
}

func (r *Recorder) phase(name string) {
	if r.Phase != nil {
		r.Phase(name)
	}
}

// Close closes the kernel's files and the CPUs' files (the directory stays), once the reading
// of the header Run started has ended (it writes into the directory).
func (r *Recorder) Close() {
	if r.headerStarted {
		<-r.headerDone
	}
	if r.sp != nil {
		r.sp.Close()
	}
	for _, f := range r.files {
		f.Close()
	}
}
