package stream

import (
	"container/heap"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"reflect"
	"sort"
	"strings"
	"sync/atomic"

	"github.com/ftctl/ftctl/tracedat"
	"github.com/ftctl/ftctl/tracefs"
)

// FileOptions choose what OpenFile decodes of a recording.
type FileOptions struct {
	CPU    int  // with HasCPU: only this CPU's pages (of each buffer)
	HasCPU bool //
	// Buffers are the buffers read: "" the top level's, else an instance's as
	// tracedat.File.Buffers names it. Nil: every buffer of the file.
	Buffers []string
	// Skip, when set, is asked for each event's pid: an event it says yes to is left out and
	// counted (FileInfo.Skipped). Report leaves out the recorder's threads (RecorderThreads).
	Skip func(pid int) bool
	// Enum, when set, gives enumerators the kernel's eval map left in a print fmt their
	// values (EnumResolver): used only for a file recorded on the running kernel (its UNAME
	// option names this kernel's release and machine), whose BTF describes that kernel.
	Enum func(string) (tracefs.EnumConst, bool)
}

// FileInfo is what a FileSource learned of a recording besides its events.
type FileInfo struct {
	Clock string
	CPUs  int // the most CPUs of a buffer read
	// Buffers are the buffers read ("" the top level's), when the file holds instances'.
	Buffers []string
	// Undecoded names the events the binary decoder does not print as the kernel would,
	// and why (they show field by field).
	Undecoded map[string]string
	Pages     int64
	// Partial counts CPUs whose data ended inside a page (a file cut short).
	Partial int
	// Skipped counts the events FileOptions.Skip left out.
	Skipped int64
}

// ErrFileCPU: --cpu names a CPU the recording has no data for.
var ErrFileCPU = errors.New("no such CPU in the recording")

// A recording is anyone's file (sent by colleagues, customers, CI): OpenFile checks every
// size, count, offset and depth it reads from it before use. What it costs is bounded by the
// file's size: a page buffer per CPU that holds at least a page of data (no CPU's data overlaps
// another's, so these are at most the file's size, or the decompressed data's), one pending
// event per CPU (a heap merges them by time), and the decoder's formats; a file that breaks a
// rule a kernel's never does is refused with a *FileError (errors.Is tracedat.ErrCorrupt).

// FileError says where a recording's content is not what a kernel writes: the part of the file
// (header_page, a CPU's data), the byte (-1 when unknown) and what is wrong.
type FileError struct {
	Section string
	Offset  int64
	// InData: Offset counts in the CPU's data, which are in a reader of their own (a
	// compressed file's, decompressed; a killed recording's cpuN.raw), not in the file's bytes.
	InData bool
	Reason string
}

func (e *FileError) Error() string {
	switch {
	case e.Offset < 0:
		return fmt.Sprintf("%s (%s): %s", tracedat.ErrCorrupt, e.Section, e.Reason)
	case e.InData:
		return fmt.Sprintf("%s at byte %d of %s: %s", tracedat.ErrCorrupt, e.Offset, e.Section, e.Reason)
	}
	return fmt.Sprintf("%s at byte %d (%s): %s", tracedat.ErrCorrupt, e.Offset, e.Section, e.Reason)
}

// Unwrap makes a FileError a corrupt file's (tracedat.ErrCorrupt), as tracedat.Read's.
func (e *FileError) Unwrap() error { return tracedat.ErrCorrupt }

// FileSource is a recording's events read as the kernel's are (Source): Next decodes the next
// chunk (at most fileChunk events) and emits its events in time order, every CPU's merged, a
// page's losses before its events (KindLost), as ftctl stream would have shown them; io.EOF
// once every CPU's data was read. A file holding instances' buffers (trace-cmd record -B NAME)
// has every buffer's events merged too, as trace-cmd report merges them, each event saying its
// buffer (Event.Buffer). The formats, kallsyms and saved_cmdlines are the file's. So ftctl
// report, the console's --file and its graph of a recording run the loops the live stream runs
// (Events).
type FileSource struct {
	ctx    context.Context
	o      FileOptions
	info   *FileInfo
	d      *BinaryDecoder
	h      cpuHeap
	err    error // what ended it: io.EOF, a file's fault, emit's error
	closed atomic.Bool
}

// fileChunk is how many events (and losses) a FileSource's Next emits at most.
const fileChunk = 4096

// ErrFileClosed is what Next returns once the FileSource was closed.
var ErrFileClosed = errors.New("the recording's reading was closed")

// OpenFile checks the file's CPUs and header_page and sets the decoder up from its formats;
// it reads no page yet (Next does). ctx's end ends the reading (Next returns its error).
func OpenFile(ctx context.Context, f *tracedat.File, o FileOptions) (*FileSource, error) {
	s, err := openFile(ctx, f, o)
	if err != nil {
		return nil, err
	}
	return s, nil
}

// openFile is OpenFile; the source it returns holds what was learned (Info) even on error.
func openFile(ctx context.Context, f *tracedat.File, o FileOptions) (*FileSource, error) {
	s := &FileSource{ctx: ctx, o: o, info: &FileInfo{Clock: f.Clock(), Undecoded: map[string]string{}}}
	info := s.info
	multi := len(f.Buffers()) > 0
	names := o.Buffers
	if names == nil {
		names = append([]string{""}, f.Buffers()...)
	}
	var views []*tracedat.File
	for _, name := range names {
		g, err := f.Buffer(name)
		if err != nil {
			return s, err
		}
		views = append(views, g)
		info.CPUs = max(info.CPUs, g.CPUs)
	}
	if multi {
		info.Buffers = names
	}
	if o.HasCPU && (o.CPU < 0 || o.CPU >= info.CPUs) {
		return s, fmt.Errorf("%w: --cpu %d (it has CPUs 0 to %d)", ErrFileCPU, o.CPU, info.CPUs-1)
	}
	layout, err := tracefs.ParsePageLayout(string(f.HeaderPage))
	if err == nil {
		for _, g := range views {
			if err = layout.Check(g.PageSize); err != nil {
				break
			}
		}
	}
	if err != nil {
		return s, &FileError{Section: "header_page", Offset: -1, Reason: strings.TrimPrefix(err.Error(), "header_page: ")}
	}
	var cpus []*fileCPU
	for _, g := range views {
		var buffer []byte
		if multi {
			buffer = []byte(g.BufferName)
		}
		for cpu := range g.CPUs {
			if o.HasCPU && cpu != o.CPU {
				continue
			}
			if g.CPUData[cpu].Size <= 0 { // no data: no reader, no buffer
				continue
			}
			r := g.Pages(cpu)
			_, base, _ := r.Outer()
			cpus = append(cpus, &fileCPU{cpu: cpu, buffer: buffer, r: r, base: base, pageSize: g.PageSize,
				layout: layout, order: len(cpus)})
		}
	}
	if err := checkOverlap(cpus); err != nil {
		return s, err
	}
	if s.d, err = newFileDecoder(f, layout, info, o); err != nil {
		return s, err
	}
	s.h = make(cpuHeap, 0, len(cpus))
	for _, c := range cpus {
		if err := c.advance(info); err != nil {
			return s, err
		}
		if c.pending {
			s.h = append(s.h, c)
		}
	}
	heap.Init(&s.h)
	return s, nil
}

// Info is what the reading learned of the recording so far (all of it once Next returned
// io.EOF).
func (s *FileSource) Info() *FileInfo { return s.info }

// Close ends the reading: a Next in progress returns ErrFileClosed after the event it is at,
// as does every later one. It may be called from any goroutine.
func (s *FileSource) Close() error {
	s.closed.Store(true)
	return nil
}

// Next emits the next chunk's events. It returns nil while events are left; io.EOF after the
// last; the error emit returned; a *FileError where the data are not what a kernel writes (the
// events before it emitted first); ctx's error once it ended; ErrFileClosed after Close. Every
// call after an error returns it again.
func (s *FileSource) Next(emit Emit) error {
	if s.err == nil {
		s.err = s.ctx.Err()
	}
	for n := 0; s.err == nil && n < fileChunk; n++ {
		if s.closed.Load() {
			s.err = ErrFileClosed
			break
		}
		if len(s.h) == 0 {
			s.err = io.EOF
			break
		}
		s.err = s.step(emit)
	}
	if s.err != nil {
		return s.err
	}
	return nil
}

// step emits the earliest pending event (or loss) and makes its CPU's next one pending.
func (s *FileSource) step(emit Emit) error {
	best := s.h[0]
	r := best.rec
	ev := &s.d.ev
	// common_pid: after the 2-byte type, the flags and the preempt count
	skip := r.data != nil && s.o.Skip != nil && len(r.data) >= 8 && s.o.Skip(int(int32(binary.LittleEndian.Uint32(r.data[4:]))))
	switch {
	case skip:
		s.info.Skipped++
	case r.data == nil:
		ev.reset()
		ev.Kind, ev.CPU, ev.Lost = KindLost, best.cpu, r.lost
	default:
		s.d.Decode(ev, best.cpu, r.ts, r.data)
	}
	if !skip {
		ev.Buffer = best.buffer
		if err := emit(ev); err != nil {
			return err
		}
	}
	if err := best.advance(s.info); err != nil {
		return err
	}
	if best.pending {
		heap.Fix(&s.h, 0)
	} else {
		heap.Pop(&s.h)
	}
	return nil
}

// ReadFile reads a recording to its end (OpenFile, then Next until io.EOF), emitting every
// event: for a caller that wants them all at once, as the tests do.
func ReadFile(f *tracedat.File, o FileOptions, emit Emit) (*FileInfo, error) {
	s, err := openFile(context.Background(), f, o)
	if err != nil {
		return s.info, err
	}
	return s.info, Each(s, emit)
}

// checkOverlap refuses CPUs whose data share bytes of the file: trace-cmd and ftctl write each
// CPU's pages apart, and a file whose CPUs all point at the same data would cost a page buffer
// each and decode the same events again for every CPU (1,024 CPUs of one 1 MiB page: 1.9 GB).
func checkOverlap(cpus []*fileCPU) error {
	type span struct {
		c        *fileCPU
		off, end int64
	}
	byReader := map[io.ReaderAt][]span{}
	for _, c := range cpus {
		ra, off, n := c.r.Outer()
		if ra == nil || !reflect.TypeOf(ra).Comparable() {
			continue
		}
		byReader[ra] = append(byReader[ra], span{c, off, off + n})
	}
	for _, spans := range byReader {
		sort.Slice(spans, func(i, j int) bool { return spans[i].off < spans[j].off })
		for i := 1; i < len(spans); i++ {
			a, b := spans[i-1], spans[i]
			if b.off < a.end {
				return &FileError{Section: b.c.name(), Offset: b.off,
					Reason: fmt.Sprintf("its %d bytes overlap %s (%d bytes at %d)", b.end-b.off, a.c.name(), a.end-a.off, a.off)}
			}
		}
	}
	return nil
}

// newFileDecoder sets a BinaryDecoder up from the file's sections. Pointers print as the
// values recorded (hash-ptr off: the file holds them unhashed, as trace-cmd report prints them).
func newFileDecoder(f *tracedat.File, layout tracefs.PageLayout, info *FileInfo, o FileOptions) (*BinaryDecoder, error) {
	d := &BinaryDecoder{Layout: layout, PrintParent: true}
	if o.Enum != nil && RecordedHere(f) {
		d.Enum = o.Enum
	}
	if len(f.Kallsyms) > 0 {
		if syms, err := ParseKallsyms(f.Kallsyms); err == nil {
			d.Symbols = syms
		}
	}
	comms := tracefs.ParsePidLines(f.Cmdlines)
	d.Comm = func(pid int) []byte { return comms[pid] }
	add := func(system string, text []byte) {
		fm, err := tracefs.ParseFormat(system, string(text))
		if err != nil {
			info.Undecoded[system+":?"] = err.Error()
			return
		}
		if err := d.Add(fm); err != nil {
			info.Undecoded[system+":"+fm.Name] = err.Error()
		}
	}
	for _, text := range f.Ftrace {
		add("ftrace", text)
	}
	for _, s := range f.Systems {
		for _, text := range s.Formats {
			add(s.Name, text)
		}
	}
	return d, nil
}

// fileCPU walks one CPU's pages (of one buffer), one event at a time: the page it reads (a
// buffer of its own, allocated at its first page, reused for every page after) and the event
// pending for the merge.
type fileCPU struct {
	cpu      int
	buffer   []byte // the buffer's name, for Event.Buffer
	r        *io.SectionReader
	base     int64 // r's offset in the file (0: its own reader, decompressed data)
	pageSize int
	layout   tracefs.PageLayout
	order    int // the order of the CPUs (buffers, then CPUs): the first wins a tie
	page     []byte
	pos      int64 // the offset in r of the page after the current one
	lost     bool  // the current page's loss is still to come before its events
	lostN    int64
	cur      PageCursor
	rec      rec // the pending event, with pending
	pending  bool
	done     bool
}

// advance makes the CPU's next event (or loss) pending, reading pages as needed; pending is
// false once its data is read.
func (c *fileCPU) advance(info *FileInfo) error {
	c.pending = false
	for !c.done {
		if c.lost {
			c.lost, c.pending = false, true
			c.rec = rec{ts: c.cur.ts, lost: c.lostN}
			return nil
		}
		if c.page != nil {
			at := c.cur.Offset()
			ts, data, err := c.cur.Next()
			if err != nil {
				return c.fail(c.pos-int64(len(c.page))+int64(c.layout.DataOffset+at), err.Error())
			}
			if data != nil {
				c.rec, c.pending = rec{ts: ts, data: data}, true
				return nil
			}
		}
		if err := c.readPage(info); err != nil {
			return err
		}
	}
	return nil
}

// readPage reads the CPU's next page, or marks its end: a last page cut short (a file cut
// short, or a recording a killed recorder left) is counted in FileInfo.Partial.
func (c *fileCPU) readPage(info *FileInfo) error {
	left := c.r.Size() - c.pos
	if left <= 0 {
		c.done = true
		return nil
	}
	if left < int64(c.pageSize) {
		info.Partial++
		c.done = true
		return nil
	}
	if c.page == nil {
		c.page = make([]byte, c.pageSize)
	}
	if _, err := c.r.ReadAt(c.page, c.pos); err != nil {
		return fmt.Errorf("%s: %w", c.name(), err)
	}
	at := c.pos
	c.pos += int64(c.pageSize)
	info.Pages++
	p, err := ParsePage(c.layout, c.page)
	if err != nil {
		return c.fail(at, err.Error())
	}
	c.cur = p.Cursor()
	c.lost, c.lostN = p.Missed, p.Lost
	return nil
}

// fail is a FileError at byte off of the CPU's data.
func (c *fileCPU) fail(off int64, reason string) error {
	if c.base == 0 { // a reader of its own: no CPU's data starts a trace.dat
		return &FileError{Section: c.name(), Offset: off, InData: true, Reason: reason}
	}
	return &FileError{Section: c.name(), Offset: c.base + off, Reason: reason}
}

// name names the CPU's data, and its buffer for an instance's.
func (c *fileCPU) name() string {
	if len(c.buffer) == 0 {
		return fmt.Sprintf("CPU %d's data", c.cpu)
	}
	return fmt.Sprintf("buffer %q, CPU %d's data", c.buffer, c.cpu)
}

// cpuHeap orders the CPUs by their pending event's time, then by their order.
type cpuHeap []*fileCPU

func (h cpuHeap) Len() int { return len(h) }
func (h cpuHeap) Less(i, j int) bool {
	a, b := h[i], h[j]
	return a.rec.ts < b.rec.ts || (a.rec.ts == b.rec.ts && a.order < b.order)
}
func (h cpuHeap) Swap(i, j int) { h[i], h[j] = h[j], h[i] }
func (h *cpuHeap) Push(x any)   { *h = append(*h, x.(*fileCPU)) }
func (h *cpuHeap) Pop() any {
	old := *h
	c := old[len(old)-1]
	*h = old[:len(old)-1]
	return c
}

// RecordedHere says whether the file was recorded on the running kernel: its UNAME option
// ("SYSNAME NODENAME RELEASE MACHINE", as trace-cmd and ftctl write it) names this kernel's
// release and machine.
func RecordedHere(f *tracedat.File) bool {
	_, _, release, machine, ok := tracefs.Uname()
	if !ok {
		return false
	}
	for _, o := range f.Options {
		if o.ID != tracedat.OptionUname {
			continue
		}
		w := strings.Fields(strings.TrimRight(string(o.Data), "\x00"))
		return len(w) == 4 && w[2] == release && w[3] == machine
	}
	return false
}

// UnameOption is the UNAME option of a recording made on the running kernel, as trace-cmd
// record writes it (trace-record.c add_uname); false when uname(2) fails.
func UnameOption() (tracedat.Option, bool) {
	sysname, node, release, machine, ok := tracefs.Uname()
	if !ok {
		return tracedat.Option{}, false
	}
	return tracedat.Option{ID: tracedat.OptionUname, Data: fmt.Appendf(nil, "%s %s %s %s\x00", sysname, node, release, machine)}, true
}
