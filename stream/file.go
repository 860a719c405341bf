package stream

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/ftctl/ftctl/tracedat"
	"github.com/ftctl/ftctl/tracefs"
)

// FileOptions choose what ReadFile decodes of a recording.
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

// FileInfo is what ReadFile learned of a recording besides its events.
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

// ReadFile decodes a trace.dat's pages with the stream's BinaryDecoder (the formats,
// kallsyms and saved_cmdlines of the file) and emits its events in time order, every CPU's
// merged, a page's losses before its events (KindLost), as ftctl stream would have shown them.
// A file holding instances' buffers (trace-cmd record -B NAME) has every buffer's events
// merged too, as trace-cmd report merges them, each event saying its buffer (Event.Buffer).
func ReadFile(f *tracedat.File, o FileOptions, emit Emit) (*FileInfo, error) {
	info := &FileInfo{Clock: f.Clock(), Undecoded: map[string]string{}}
	multi := len(f.Buffers()) > 0
	names := o.Buffers
	if names == nil {
		names = append([]string{""}, f.Buffers()...)
	}
	var views []*tracedat.File
	for _, name := range names {
		g, err := f.Buffer(name)
		if err != nil {
			return info, err
		}
		views = append(views, g)
		info.CPUs = max(info.CPUs, g.CPUs)
	}
	if multi {
		info.Buffers = names
	}
	if o.HasCPU && (o.CPU < 0 || o.CPU >= info.CPUs) {
		return info, fmt.Errorf("%w: --cpu %d (it has CPUs 0 to %d)", ErrFileCPU, o.CPU, info.CPUs-1)
	}
	layout, err := tracefs.ParsePageLayout(string(f.HeaderPage))
	if err != nil {
		return info, fmt.Errorf("header_page: %w", err)
	}
	d, err := newFileDecoder(f, layout, info, o)
	if err != nil {
		return info, err
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
			cpus = append(cpus, &fileCPU{cpu: cpu, buffer: buffer, r: g.Pages(cpu), page: make([]byte, g.PageSize), layout: layout})
		}
	}
	for _, c := range cpus {
		if err := c.advance(info); err != nil {
			return info, err
		}
	}
	ev := &d.ev
	for {
		var best *fileCPU
		for _, c := range cpus {
			if c.pending() && (best == nil || c.ts() < best.ts()) {
				best = c
			}
		}
		if best == nil {
			return info, nil
		}
		r := best.recs[best.head]
		best.head++
		// common_pid: after the 2-byte type, the flags and the preempt count
		skip := r.data != nil && o.Skip != nil && len(r.data) >= 8 && o.Skip(int(int32(binary.LittleEndian.Uint32(r.data[4:]))))
		switch {
		case skip:
			info.Skipped++
		case r.data == nil:
			ev.reset()
			ev.Kind, ev.CPU, ev.Lost = KindLost, best.cpu, r.lost
		default:
			d.Decode(ev, best.cpu, r.ts, r.data)
		}
		if !skip {
			ev.Buffer = best.buffer
			if err := emit(ev); err != nil {
				return info, err
			}
		}
		if !best.pending() {
			if err := best.advance(info); err != nil {
				return info, err
			}
		}
	}
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

// fileCPU walks one CPU's pages (of one buffer), a page's records at a time.
type fileCPU struct {
	cpu    int
	buffer []byte // the buffer's name, for Event.Buffer
	r      *io.SectionReader
	page   []byte
	layout tracefs.PageLayout
	recs   []rec
	head   int
	done   bool
}

func (c *fileCPU) pending() bool { return c.head < len(c.recs) }
func (c *fileCPU) ts() uint64    { return c.recs[c.head].ts }

// advance reads pages until one has records (a page's data is copied: recs point into it).
func (c *fileCPU) advance(info *FileInfo) error {
	c.recs, c.head = c.recs[:0], 0
	for !c.done && len(c.recs) == 0 {
		n, err := io.ReadFull(c.r, c.page)
		if err == io.EOF {
			c.done = true
			return nil
		}
		if err == io.ErrUnexpectedEOF {
			info.Partial++
			c.done = true
			return nil
		}
		if err != nil {
			return fmt.Errorf("%scpu %d: %w", c.where(), c.cpu, err)
		}
		info.Pages++
		page := bytes.Clone(c.page[:n])
		p, err := ParsePage(c.layout, page)
		if err != nil {
			return fmt.Errorf("%scpu %d, page at %d: %w", c.where(), c.cpu, info.Pages, err)
		}
		if p.Missed {
			c.recs = append(c.recs, rec{ts: p.TS, lost: p.Lost})
		}
		err = p.Events(func(ts uint64, data []byte) error {
			c.recs = append(c.recs, rec{ts: ts, data: data})
			return nil
		})
		if err != nil {
			return fmt.Errorf("%scpu %d: %w", c.where(), c.cpu, err)
		}
	}
	return nil
}

// where names the buffer in an error, for an instance's.
func (c *fileCPU) where() string {
	if len(c.buffer) == 0 {
		return ""
	}
	return fmt.Sprintf("buffer %q, ", c.buffer)
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
