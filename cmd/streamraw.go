package cmd

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"io"
	"os"
	"path"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"github.com/ftctl/ftctl/stream"
	"github.com/ftctl/ftctl/tracefs"
)

// The binary reader: per_cpu/cpuN/trace_pipe_raw, formatted by ftctl (stream.BinaryDecoder)
// instead of by the kernel. --reader auto takes it when everything the trace array records
// would print as trace_pipe prints it; see binaryUnfit.

// nsClocks are the trace clocks that count nanoseconds (trace_pipe prints seconds.micros).
var nsClocks = map[string]bool{"local": true, "global": true, "mono": true, "mono_raw": true, "boot": true, "perf": true, "tai": true}

// textOptions are the options that change how trace_pipe prints what it prints, with their
// default: the binary reader formats as the defaults do. print-parent, sym-offset and
// record-tgid it follows.
var textOptions = []struct {
	name string
	def  byte
}{
	{"sym-addr", '0'}, {"context-info", '1'}, {"irq-info", '1'},
	{"latency-format", '0'}, {"verbose", '0'}, {"raw", '0'},
	{"hex", '0'}, {"bin", '0'}, {"func-no-repeats", '0'}, {"userstacktrace", '0'},
	{"display-graph", '0'}, {"fields", '0'},
}

// binarySetup is what the binary reader needs, read before streaming starts.
type binarySetup struct {
	g       *Globals
	dec     *stream.BinaryDecoder
	comms   *pidTable
	symbols chan error // the kallsyms load, in the background; nil once done
	pages   []stream.CPUPage

	// While kallsyms loads (0.3-0.4 s of kernel time under TCG, 40-50 ms on the development
	// host),
	// what was read waits here, copied, so that the reads go on and the kernel's buffer does
	// not overrun meanwhile; beyond maxBacklog the reads wait.
	backlog      [][]byte
	backlogBytes int
}

const maxBacklog = 256 << 20

// binaryUnfit says why the binary reader would not print what trace_pipe prints (or nil):
// a clock that does not count nanoseconds, a tracer other than function, a display option off
// its default, or an enabled event that is neither a kprobe, a kretprobe nor one of ftrace's.
// forced (--reader binary) checks only what the binary reader cannot do at all. The enabled
// events' formats it read come back, for newBinarySetup (nil when forced).
func binaryUnfit(in *tracefs.Instance, o *StreamOptions, forced bool) ([]*stream.Format, error) {
	switch {
	case o.Raw:
		return nil, fmt.Errorf("--raw prints the kernel's lines, which only trace_pipe has")
	case o.Grep != "":
		return nil, fmt.Errorf("--grep matches the kernel's lines, which only trace_pipe has")
	}
	if binary.NativeEndian.Uint16([]byte{1, 0}) != 1 {
		return nil, fmt.Errorf("ftctl decodes little-endian ring buffers only")
	}
	clock, err := in.ReadFile("trace_clock")
	if err != nil {
		return nil, err
	}
	if c := currentChoice(string(clock)); !nsClocks[c] {
		return nil, fmt.Errorf("the trace clock %q does not count nanoseconds", c)
	}
	if forced {
		return nil, nil
	}
	tracer, err := in.ReadFile("current_tracer")
	if err != nil {
		return nil, err
	}
	if t := strings.TrimSpace(string(tracer)); t != "nop" && t != "function" {
		return nil, fmt.Errorf("the %s tracer's lines are formatted by the kernel only", t)
	}
	for _, opt := range textOptions {
		b, err := in.ReadFile("options/" + opt.name)
		if err != nil {
			continue // an option this kernel lacks
		}
		if len(b) > 0 && b[0] != opt.def {
			return nil, fmt.Errorf("option %s is %c", opt.name, b[0])
		}
	}
	formats, err := enabledFormats(in)
	if err != nil {
		return nil, err
	}
	var probe stream.BinaryDecoder
	for _, f := range formats {
		if err := probe.Add(f); err != nil {
			return nil, err
		}
	}
	return formats, nil
}

// currentChoice is the bracketed choice of a file like trace_clock ("local [global] counter").
func currentChoice(s string) string {
	if i := strings.IndexByte(s, '['); i >= 0 {
		if j := strings.IndexByte(s[i:], ']'); j > 0 {
			return s[i+1 : i+j]
		}
	}
	return strings.TrimSpace(s)
}

// enabledEvents lists set_event: SYSTEM and EVENT of each enabled event.
func enabledEvents(in *tracefs.Instance) ([][2]string, error) {
	b, err := in.ReadFile("set_event")
	if err != nil {
		return nil, err
	}
	var out [][2]string
	for _, line := range strings.Split(string(b), "\n") {
		if sys, name, ok := strings.Cut(strings.TrimSpace(line), ":"); ok {
			out = append(out, [2]string{sys, name})
		}
	}
	return out, nil
}

// enabledFormats reads the formats of the events set_event lists.
func enabledFormats(in *tracefs.Instance) ([]*stream.Format, error) {
	events, err := enabledEvents(in)
	if err != nil {
		return nil, err
	}
	var out []*stream.Format
	for _, e := range events {
		f, err := readFormat(in, e[0], e[1])
		if err != nil {
			return nil, err
		}
		out = append(out, f)
	}
	return out, nil
}

func readFormat(in *tracefs.Instance, sys, name string) (*stream.Format, error) {
	b, err := in.ReadFile(path.Join("events", sys, name, "format"))
	if err != nil {
		return nil, err
	}
	return stream.ParseFormat(sys, string(b))
}

// newBinarySetup reads what the decoder needs: the page layout, ftrace's own formats, the
// enabled events' formats (those binaryUnfit read, or read here when it read none), the
// options it follows; saved_cmdlines and saved_tgids are read as pids come, and kallsyms loads
// in the background (loading, loaded, finish).
func newBinarySetup(g *Globals, in *tracefs.Instance, formats []*stream.Format) (*binarySetup, error) {
	hp, err := in.ReadFile("events/header_page")
	if err != nil {
		return nil, err
	}
	layout, err := stream.ParsePageLayout(string(hp))
	if err != nil {
		return nil, err
	}
	option := func(name string, def bool) bool {
		if b, err := in.ReadFile("options/" + name); err == nil && len(b) > 0 {
			return b[0] == '1'
		}
		return def
	}
	dec := &stream.BinaryDecoder{Layout: layout, PrintParent: option("print-parent", true), SymOffset: option("sym-offset", false)}
	for _, name := range []string{"function", "print", "kernel_stack"} {
		if f, err := readFormat(in, "ftrace", name); err == nil {
			dec.Add(f)
		}
	}
	if formats == nil {
		if formats, err = enabledFormats(in); err != nil {
			return nil, err
		}
	}
	for _, f := range formats {
		dec.Add(f) // an error: decoded field by field (--reader binary chose that)
	}
	// saved_cmdlines and saved_tgids are the top level's, for every instance
	comms := &pidTable{in: in.FS().Top(), file: "saved_cmdlines"}
	dec.Comm = comms.lookup
	if option("record-tgid", false) {
		tgids := &pidTable{in: in.FS().Top(), file: "saved_tgids", now: comms}
		dec.TGID = func(pid int) int {
			n, _ := strconv.Atoi(string(tgids.lookup(pid)))
			return n
		}
	}
	dec.Unknown = func(id int) *stream.Format { return findFormat(in, id) }
	done := make(chan error, 1)
	s := &binarySetup{g: g, dec: dec, comms: comms, symbols: done}
	go func() {
		b, err := readProcFile("/proc/kallsyms", 8<<20)
		if err == nil {
			dec.Symbols, err = stream.ParseKallsyms(b)
		}
		if err != nil {
			err = fmt.Errorf("/proc/kallsyms: %w", err)
		}
		done <- err
	}()
	return s, nil
}

// loading is the channel that says kallsyms is loaded, nil once it is (or for trace_pipe).
func (s *binarySetup) loading() <-chan error {
	if s == nil {
		return nil
	}
	return s.symbols
}

// loaded records the end of the kallsyms load (an error: addresses print as numbers, said
// once) and decodes the backlog.
func (s *binarySetup) loaded(err error, emit stream.Emit) error {
	if err != nil {
		s.g.Notice("stream: %v: addresses are printed as numbers", err)
	}
	s.symbols = nil
	backlog := s.backlog
	s.backlog, s.backlogBytes = nil, 0
	for _, b := range backlog {
		if err := s.decode(b, emit); err != nil {
			return err
		}
	}
	return nil
}

// feed decodes a chunk Read returned, or keeps a copy while kallsyms loads.
func (s *binarySetup) feed(b []byte, emit stream.Emit) error {
	if len(b) == 0 {
		return nil
	}
	if s.symbols != nil && s.backlogBytes+len(b) <= maxBacklog {
		s.backlog = append(s.backlog, bytes.Clone(b))
		s.backlogBytes += len(b)
		return nil
	}
	if s.symbols != nil { // the backlog is full: wait
		if err := s.loaded(<-s.symbols, emit); err != nil {
			return err
		}
	}
	return s.decode(b, emit)
}

// finish waits for kallsyms (or ctx) and decodes the backlog: the end of the stream.
func (s *binarySetup) finish(ctx context.Context, emit stream.Emit) error {
	if s.symbols == nil {
		return nil
	}
	select {
	case err := <-s.symbols:
		return s.loaded(err, emit)
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (s *binarySetup) decode(b []byte, emit stream.Emit) error {
	s.comms.tick()
	s.pages = s.pages[:0]
	tracefs.RawPages(b, func(cpu int, page []byte) {
		s.pages = append(s.pages, stream.CPUPage{CPU: cpu, Data: page})
	})
	return s.dec.Feed(s.pages, emit)
}

// findFormat looks for the event with this type ID among the enabled events and the dynamic
// events (an event enabled after the stream started).
func findFormat(in *tracefs.Instance, id int) *stream.Format {
	names, _ := enabledEvents(in)
	if b, err := in.FS().Top().ReadFile("dynamic_events"); err == nil {
		for _, line := range strings.Split(string(b), "\n") {
			head, _, _ := strings.Cut(line, " ")
			if _, ev, ok := strings.Cut(head, ":"); ok {
				if sys, name, ok := strings.Cut(ev, "/"); ok {
					names = append(names, [2]string{sys, name})
				}
			}
		}
	}
	want := strconv.Itoa(id)
	for _, n := range names {
		b, err := in.ReadFile(path.Join("events", n[0], n[1], "id"))
		if err != nil || strings.TrimSpace(string(b)) != want {
			continue
		}
		if f, err := readFormat(in, n[0], n[1]); err == nil {
			return f
		}
	}
	return nil
}

// pidTable is saved_cmdlines (comms) or saved_tgids, which trace_pipe looks pids up in when
// it formats a line. A pid it lacks is looked for again when the file is read again: for a pid
// never seen, after pidRefresh; for one known missing, after pidRetry. Time is taken once per
// chunk of pages (tick), not per event: reading the clock costs microseconds under emulation.
// One goroutine uses it.
type pidTable struct {
	in   *tracefs.Instance
	file string
	vals map[int][]byte // a nil value: not in the file when last read
	read time.Time      // when the file was last read
	t    time.Time      // the current chunk's time
	now  *pidTable      // the table whose tick gives the time, when not this one
}

const (
	pidRefresh = 20 * time.Millisecond
	pidRetry   = time.Second
)

func (c *pidTable) tick() { c.t = time.Now() }

func (c *pidTable) lookup(pid int) []byte {
	v, seen := c.vals[pid]
	if v != nil {
		return v
	}
	now := c.t
	if c.now != nil {
		now = c.now.t
	}
	if c.vals != nil {
		age := now.Sub(c.read)
		if seen && age < pidRetry {
			return nil
		}
		if !seen && age < pidRefresh {
			c.vals[pid] = nil
			return nil
		}
	}
	c.read = now
	c.vals = map[int][]byte{}
	if b, err := c.in.ReadFile(c.file); err == nil {
		c.vals = parseSavedCmdlines(b)
	}
	v = c.vals[pid]
	if v == nil {
		c.vals[pid] = nil
	}
	return v
}

// parseSavedCmdlines reads "PID COMM" (or "PID TGID") lines.
func parseSavedCmdlines(b []byte) map[int][]byte {
	m := map[int][]byte{}
	for _, line := range bytes.Split(b, []byte{'\n'}) {
		sp := bytes.IndexByte(line, ' ')
		if sp <= 0 {
			continue
		}
		pid, err := strconv.Atoi(string(line[:sp]))
		if err != nil {
			continue
		}
		m[pid] = append([]byte(nil), line[sp+1:]...)
	}
	return m
}

// procReadSize bounds each read of a /proc file: the kernel formats all it is asked for
// before the read returns, and a process exiting (Ctrl-C) waits for that read to end; 8 MiB of
// kallsyms at once took 0.4 s under emulation.
const procReadSize = 64 << 10

// readProcFile reads a /proc file (which says its size is 0) into memory mapped
// outside the Go heap, populated in one go: /proc/kallsyms is 4-8 MiB, and a heap buffer of
// that size, faulted in page by page and then swept by the collector, cost about as much CPU
// as the kernel's formatting of the file under emulation (an in-VM profile). The memory is
// never unmapped: the table lives as long as the stream.
func readProcFile(name string, expect int) ([]byte, error) {
	f, err := os.Open(name)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	b, err := unix.Mmap(-1, 0, expect, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS|unix.MAP_POPULATE)
	if err != nil {
		b = make([]byte, expect)
	}
	n := 0
	for {
		if n == len(b) { // larger than expected: twice the room, and copy
			bigger, err := unix.Mmap(-1, 0, 2*len(b), unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS|unix.MAP_POPULATE)
			if err != nil {
				bigger = make([]byte, 2*len(b))
			}
			copy(bigger, b)
			b = bigger
		}
		m, err := f.Read(b[n:min(n+procReadSize, len(b))])
		n += m
		if err == io.EOF {
			return b[:n], nil
		}
		if err != nil {
			return nil, err
		}
	}
}
