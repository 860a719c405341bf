package stream

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"github.com/ftctl/ftctl/internal/atdir"
	"github.com/ftctl/ftctl/tracedat"
	"github.com/ftctl/ftctl/tracefs"
)

// A flight recorder is a trace array left tracing into its overwriting ring buffer, read by no
// one, whose content is dumped on demand into a trace.dat without stopping it. The pieces:
//
//   - SaveHeader, when the recorder starts: what a dump needs that the kernel may no longer
//     have at incident time (the formats of the events it records, of the probes and synthetic
//     events that exist, kallsyms, the printk formats), saved as a trace.dat without CPUs;
//   - PrepareSnapshot: the snapshot buffer allocated once, at start, so that a dump at
//     incident time does not allocate a ring's worth of memory;
//   - Dump: the ring as it is now, swapped into the snapshot buffer (tracing goes on into the
//     buffer swapped in, with no gap), read from there, and the snapshot cleared for the next
//     dump; the saved header's formats, and the kernel's for any event in the pages it lacks;
//   - FreeSnapshot, when the recorder stops.
//
// Dump and the snapshot functions change the trace array's snapshot buffer: the caller holds
// ftctl's lock, and two dumps of one trace array never run at once.
//
// (seen, Debian 6.1.0-56 and 6.12.117) Removing a probe that was enabled in the trace array
// clears the trace array's ring and snapshot (the kernel drops events it can no longer
// describe): the dump after it holds nothing older than the removal
// (vmtest/flightdump_test.go). So the saved header seldom decodes what the kernel could not:
// it spares the dump reading formats and kallsyms at incident time, and keeps the symbols of a
// module unloaded since (the function tracer's addresses in it). A module loaded after
// SaveHeader has no symbols in a dump (SaveHeader again after loading it).

// DumpStats are the figures of a dump, each observed.
type DumpStats struct {
	// Events are the records in the pages dumped.
	Events int64 `json:"events"`
	// Lost is what the CPUs' stats counted lost (overrun + dropped events) in the buffer
	// dumped, read just before the swap: since that buffer was last cleared (the previous
	// dump's swap, or PrepareSnapshot), or since the ring was last reset without a snapshot.
	Lost int64 `json:"lost"`
	// Bytes and Pages are the ring-buffer pages written to the file.
	Bytes int64 `json:"bytes"`
	Pages int   `json:"pages"`
	// Snapshot: the ring was swapped into the snapshot buffer and read there; tracing went on
	// without a gap. Allocated: the snapshot buffer had to be allocated by the dump (no
	// PrepareSnapshot, or FreeSnapshot since).
	Snapshot  bool `json:"snapshot"`
	Allocated bool `json:"allocated,omitempty"`
	// Consumed: without a snapshot buffer (CONFIG_TRACER_SNAPSHOT off) the dump read the live
	// ring through trace_pipe_raw, which empties it; tracing stayed on (what it wrote while the
	// dump read may be in the file or not).
	Consumed bool `json:"consumed,omitempty"`
	// NoFormat are the event ids found in the pages that neither the saved header nor the
	// kernel has a format for (an event removed since): the file has none for them.
	NoFormat []int   `json:"no_format,omitempty"`
	Seconds  float64 `json:"seconds"`
}

// ErrNoSnapshot: the trace array has no snapshot buffer (CONFIG_TRACER_SNAPSHOT off).
var ErrNoSnapshot = fmt.Errorf("%w: no snapshot buffer (CONFIG_TRACER_SNAPSHOT)", tracefs.ErrUnavailable)

// SaveHeader captures now what a later Dump of in needs and the kernel might no longer have by
// then: the formats of the ftrace system's events, of every event enabled in in, and of every
// event of the dynamic events' groups (probes, synthetic events); kallsyms; the printk formats;
// the page and event headers, in's trace clock, and the kernel's uname. It writes them as a
// trace.dat without CPUs at path (mode 0600), whole or not at all: into a temporary file in
// path's directory, renamed. path's directory must be private (as a recording's: root's, the
// effective user's or one of owners', writable by no one else unless sticky).
func SaveHeader(in *tracefs.Instance, path string, owners ...int) error {
	h, err := readPageHeader(in)
	if err != nil {
		return err
	}
	h.PageSize = in.PageSize()
	var formats formatSet
	if err := readDescriptions(in, h, &formats, true, nil); err != nil {
		return err
	}
	return writeFileAtomic(path, owners, func(f *os.File) error { return writeSync(f, h, nil) })
}

// writeFileAtomic writes the file path with write, into PATH.tmp-PID (0600, made relative to
// path's directory held open, which must be private: MakeRecordDir's rules), renamed to path
// once write returned without error (it closes the file); removed otherwise.
func writeFileAtomic(path string, owners []int, write func(*os.File) error) error {
	parentPath, base := filepath.Split(path)
	if parentPath == "" {
		parentPath = "."
	}
	if base == "" || base == "." || base == ".." {
		return fmt.Errorf("%w: %s: not a file name", ErrRecordDir, strconv.Quote(path))
	}
	parent, err := atdir.Open(filepath.Clean(parentPath))
	if err != nil {
		return fmt.Errorf("%w: %w", ErrRecordDir, err)
	}
	defer parent.Close()
	if err := parent.CheckPrivate(append(owners, os.Geteuid())...); err != nil {
		return fmt.Errorf("%w: %w", ErrRecordDir, err)
	}
	tmp := base + ".tmp-" + strconv.Itoa(os.Getpid())
	parent.Remove(tmp) // a crashed run's, of this pid
	f, err := parent.Create(tmp, 0o600)
	if err != nil {
		return err
	}
	if err := write(f); err != nil {
		parent.Remove(tmp)
		return err
	}
	if err := parent.Rename(tmp, parent, base); err != nil {
		parent.Remove(tmp)
		return err
	}
	return parent.Sync()
}

// PrepareSnapshot allocates in's snapshot buffer (a ring's worth of memory) unless it is
// allocated already, so that Dump does not allocate it at incident time. The kernel allocates
// it only as it swaps ("1" to the snapshot file), then PrepareSnapshot clears it ("2"): what the
// ring held then is discarded. Run it before tracing starts. ErrNoSnapshot without a snapshot
// buffer.
func PrepareSnapshot(in *tracefs.Instance) error {
	if !in.HasSnapshot() {
		return ErrNoSnapshot
	}
	if ok, err := in.SnapshotAllocated(); err != nil || ok {
		return err
	}
	if err := in.WriteSnapshot(tracefs.SnapshotSwap); err != nil {
		return err
	}
	return in.WriteSnapshot(tracefs.SnapshotClear)
}

// FreeSnapshot frees in's snapshot buffer ("0"), when the flight recorder stops; nothing
// without a snapshot buffer.
func FreeSnapshot(in *tracefs.Instance) error {
	if !in.HasSnapshot() {
		return nil
	}
	return in.WriteSnapshot(tracefs.SnapshotFree)
}

// swapSettle is how long Dump lets writes in flight at the swap land in the buffer it swapped out.
const swapSettle = 10 * time.Millisecond

// Dump writes in's ring buffer as it is now into the trace.dat out, without stopping tracing:
// the formats, kallsyms and printk formats of header (SaveHeader's file), with the kernel's
// format now of any event in the pages header lacks; the page header, the trace clock and the
// uname as the kernel gives them now (they describe the pages dumped: changing the clock resets
// the ring), header's where it cannot; the saved cmdlines read now; the CPUs' stats read just
// before the swap, as options (trace-cmd's CPUSTAT).
//
// Where in has a snapshot buffer, the ring is swapped into it ("1" to the snapshot file, which
// allocates it if PrepareSnapshot did not), read from every CPU's snapshot_raw, and the snapshot
// is cleared ("2"); it is cleared before the swap too, so that nothing another user left there
// comes back into the live ring. Tracing goes on into the buffer swapped in. Without one, the
// live ring is read through trace_pipe_raw (consuming: DumpStats.Consumed), tracing left on.
//
// out is written as a recording is (MakeRecordDir's rules for its directory; its pages in
// OUT.tmp-PID first): mode 0600, under its name only whole.
func Dump(ctx context.Context, in *tracefs.Instance, header, out string, owners ...int) (*DumpStats, error) {
	return dump(ctx, in, header, out, nil, owners)
}

// dump is Dump, and DumpLastBoot where fix is not nil: then the ring is read through
// trace_pipe_raw (a persistent ring has no snapshot) and the saved header's addresses are moved
// to the previous boot's.
func dump(ctx context.Context, in *tracefs.Instance, header, out string, fix *AddressShift, owners []int) (*DumpStats, error) {
	start := time.Now()
	st := &DumpStats{}
	saved, closeSaved, err := readSavedHeader(header)
	if err != nil {
		return nil, err
	}
	defer closeSaved()
	rd, err := MakeRecordDir(out, os.Getpid(), owners...)
	if err != nil {
		return nil, err
	}
	defer rd.Remove() // after the rename, nothing of it is left but the directory
	st.Snapshot = in.HasSnapshot() && fix == nil
	var sp *tracefs.Splicer
	if st.Snapshot {
		// open before the swap: a failure then costs nothing. A CPU's snapshot_raw reads the
		// trace array's snapshot buffer, whichever it is at the time of the read
		sp, err = in.OpenSnapshotSplicer()
	} else {
		sp, err = in.OpenSplicer()
		st.Consumed = true
	}
	if err != nil {
		return nil, err
	}
	defer sp.Close()
	var files []*os.File
	defer func() {
		for _, f := range files {
			f.Close()
		}
	}()
	for _, cpu := range sp.CPUs() {
		f, err := rd.dir.Create(CPUFile(cpu), 0o600)
		if err != nil {
			return nil, err
		}
		files = append(files, f)
	}
	if st.Snapshot {
		if ok, err := in.SnapshotAllocated(); err == nil && !ok {
			st.Allocated = true
		}
		if err := in.WriteSnapshot(tracefs.SnapshotClear); err != nil {
			return nil, err
		}
	}
	stats, _ := in.CPUStats() // of the buffer about to be swapped out
	if st.Snapshot {
		if err := in.WriteSnapshot(tracefs.SnapshotSwap); err != nil {
			return nil, err
		}
		// A writer on another CPU that reserved its event in the ring before the swap commits
		// it there after (the reserve and the commit hold preemption off between them, so not
		// for long): read once it has, or the clear below takes it. Under TCG the vCPUs share
		// one host thread, and the sleep hands it over. Seen once on 6.1: 4959 of 4960 markers
		// written during dumps in the dumps (TestFlightDumpNoGap).
		time.Sleep(swapSettle)
	}
	sizes, readErr := readRing(ctx, sp, files, stats, st.Snapshot || fix != nil)
	if st.Snapshot {
		// cleared even when reading failed: the next dump must not find these pages in it
		if err := in.WriteSnapshot(tracefs.SnapshotClear); err != nil && readErr == nil {
			readErr = err
		}
	}
	if readErr != nil {
		return nil, readErr
	}
	for _, s := range stats {
		st.Lost += s.Overrun + s.DroppedEvents
	}

	h := saved.Header
	if fix != nil {
		h.Kallsyms, h.Printk = fix.Kallsyms(h.Kallsyms), fix.Printk(h.Printk)
	}
	h.Options = nil
	if now, err := readPageHeader(in); err == nil {
		h.HeaderPage, h.HeaderEvent, h.Options = now.HeaderPage, now.HeaderEvent, now.Options
	} else {
		for _, o := range saved.Options {
			if o.ID == tracedat.OptionTraceClock || o.ID == tracedat.OptionUname {
				h.Options = append(h.Options, o)
			}
		}
	}
	h.PageSize = sp.PageSize()
	if b, err := in.FS().Top().ReadFile("saved_cmdlines"); err == nil && fix == nil { // (the last boot's: the saved ones)
		h.Cmdlines = b
	}
	h.Options = append(h.Options, cpuStatOptions(stats)...)
	var formats formatSet
	formats.addFile(&saved.Header)
	ids, records, err := scanEventIDs(&h, files, sizes)
	if err != nil {
		return nil, err
	}
	st.Events = records
	st.NoFormat = addMissingFormats(in.FS(), &formats, ids)
	h.Ftrace, h.Systems = formats.sections()

	var cpus []tracedat.CPUSource
	for k, f := range files {
		if err := f.Sync(); err != nil {
			return nil, err
		}
		cpus = append(cpus, tracedat.CPUSource{R: io.NewSectionReader(f, 0, sizes[k]), Size: sizes[k]})
		st.Bytes += sizes[k]
	}
	st.Pages = int(st.Bytes / int64(h.PageSize))
	const tmp = "trace.dat"
	f, err := rd.dir.Create(tmp, 0o600)
	if err != nil {
		return nil, err
	}
	if err := writeSync(f, &h, cpus); err != nil {
		return nil, err
	}
	if err := rd.dir.Rename(tmp, rd.parent, rd.file); err != nil {
		return nil, err
	}
	rd.parent.Sync()
	st.Seconds = time.Since(start).Seconds()
	return st, nil
}

// readRing moves every CPU's pages into its file and says how many bytes each got. A snapshot
// (or a persistent ring's last boot, bounded) is read until it is empty (nothing writes into it), at most its size in pages; the live ring
// (trace_pipe_raw) at most what each CPU held when the dump began (flushLimit: tracing on, a
// traced reader would never empty it).
func readRing(ctx context.Context, sp *tracefs.Splicer, files []*os.File, stats []tracefs.CPUStats, snapshot bool) ([]int64, error) {
	sizes := make([]int64, len(files))
	for k, cpu := range sp.CPUs() {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		n, err := sp.Move(k, files[k]) // the full pages, spliced
		sizes[k] += n
		if err != nil {
			return nil, err
		}
		n, err = sp.Flush(k, files[k], flushLimit(snapshot, cpu, stats, sp.BufferBytes(), sp.PageSize())) // the rest
		sizes[k] += n
		if err != nil {
			return nil, err
		}
	}
	return sizes, nil
}

// readSavedHeader opens and reads SaveHeader's file; close closes it.
func readSavedHeader(path string) (*tracedat.File, func(), error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, nil, err
	}
	fi, err := f.Stat()
	if err == nil && !fi.Mode().IsRegular() {
		err = fmt.Errorf("%s: not a regular file", path)
	}
	if err != nil {
		f.Close()
		return nil, nil, err
	}
	h, err := tracedat.Read(f, fi.Size())
	if err != nil {
		f.Close()
		return nil, nil, fmt.Errorf("reading the saved header %s: %w", path, err)
	}
	if len(h.HeaderPage) == 0 {
		f.Close()
		return nil, nil, fmt.Errorf("reading the saved header %s: %w", path, errors.New("no page header"))
	}
	return h, func() { f.Close() }, nil
}

// cpuStatOptions are the CPUs' stats as trace-cmd's CPUSTAT options.
func cpuStatOptions(stats []tracefs.CPUStats) []tracedat.Option {
	var out []tracedat.Option
	for _, st := range stats {
		out = append(out, tracedat.Option{ID: tracedat.OptionCPUStat,
			Data: []byte(fmt.Sprintf("CPU: %d\nentries: %d\noverrun: %d\ncommit overrun: %d\ndropped events: %d\nread events: %d\n\x00",
				st.CPU, st.Entries, st.Overrun, st.CommitOverrun, st.DroppedEvents, st.ReadEvents))})
	}
	return out
}
