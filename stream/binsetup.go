package stream

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"time"

	"github.com/ftctl/ftctl/tracefs"
)

// The binary reader's set-up: per_cpu/cpuN/trace_pipe_raw, formatted by ftctl (BinaryDecoder)
// instead of by the kernel. Auto takes it when everything the trace array records would print
// as trace_pipe prints it; see binaryUnfit.

// nsClocks are the trace clocks that count nanoseconds (trace_pipe prints seconds.micros).
var nsClocks = map[string]bool{"local": true, "global": true, "mono": true, "mono_raw": true, "boot": true, "perf": true, "tai": true}

// textOptions are the options that change how trace_pipe prints what it prints, with their
// default: the binary reader formats as the defaults do. print-parent, sym-offset and
// record-tgid it follows.
var textOptions = []struct {
	name string
	def  bool
}{
	{"sym-addr", false}, {"context-info", true}, {"irq-info", true},
	{"latency-format", false}, {"verbose", false}, {"raw", false},
	{"hex", false}, {"bin", false}, {"func-no-repeats", false}, {"userstacktrace", false},
	{"display-graph", false}, {"fields", false},
}

// binaryUnfit says why the binary reader would not print what trace_pipe prints (or nil):
// a clock that does not count nanoseconds, a tracer other than function, a display option off
// its default, or an enabled event that is neither a kprobe, a kretprobe nor one of ftrace's.
// forced (--reader binary) checks only what the binary reader cannot do at all. The enabled
// events' formats it read come back, for newBinarySetup (nil when forced).
func binaryUnfit(in *tracefs.Instance, o Options, forced bool) ([]*tracefs.Format, error) {
	if o.Lines != "" {
		return nil, errors.New(o.Lines)
	}
	if !littleEndian {
		return nil, errors.New("ftctl decodes little-endian ring buffers only")
	}
	clock, err := in.TraceClock()
	if err != nil {
		return nil, err
	}
	if !nsClocks[clock] {
		return nil, fmt.Errorf("the trace clock %q does not count nanoseconds", clock)
	}
	if forced {
		return nil, nil
	}
	tracer, err := in.Tracer()
	if err != nil {
		return nil, err
	}
	switch {
	case tracer == "function_graph" && o.GraphLines:
		if err := graphUnfit(in); err != nil {
			return nil, err
		}
	case tracer != "nop" && tracer != "function":
		return nil, fmt.Errorf("the %s tracer's lines are formatted by the kernel only", tracer)
	}
	for _, opt := range textOptions {
		if on, ok := in.Option(opt.name); ok && on != opt.def {
			v := '0'
			if on {
				v = '1'
			}
			return nil, fmt.Errorf("option %s is %c", opt.name, v)
		}
	}
	formats, err := enabledFormats(in)
	if err != nil {
		return nil, err
	}
	probe := BinaryDecoder{HashPtr: hashPtr(in), Dynamic: in.FS().DynamicEvents(), Attached: in.FS().EprobeAttachments(), Enum: o.enum}
	for _, f := range formats {
		if err := probe.Add(f); err != nil {
			return nil, err
		}
	}
	return formats, nil
}

// graphOptions are the funcgraph-* options that change function_graph's lines in ways the
// binary reader does not print, with their default: it prints the duration column, every
// call (funcgraph-irqs off hides the calls inside interrupts as the kernel prints, not as it
// records), no overrun lines, no return values or arguments. funcgraph-cpu, -proc,
// -abstime and -tail it follows; funcgraph-overhead changes a mark that is not part of the
// event.
var graphOptions = []struct {
	name string
	def  bool
}{
	{"funcgraph-duration", true}, {"funcgraph-irqs", true}, {"funcgraph-overrun", false},
	{"funcgraph-retval", false}, {"funcgraph-retval-hex", false}, {"funcgraph-args", false},
}

// graphUnfit says why the binary reader would not print function_graph's lines as the kernel
// does, nil when it would.
func graphUnfit(in *tracefs.Instance) error {
	for _, opt := range graphOptions {
		if on, ok := in.Option(opt.name); ok && on != opt.def {
			v := '0'
			if on {
				v = '1'
			}
			return fmt.Errorf("option %s is %c", opt.name, v)
		}
	}
	return nil
}

// hashPtr says whether the trace array's hash-ptr option is on (5.12+; on by default: a
// kernel without the option hashes %p too).
func hashPtr(in *tracefs.Instance) bool {
	on, ok := in.Option("hash-ptr")
	return on || !ok
}

// enabledFormats reads the formats of the events set_event lists.
func enabledFormats(in *tracefs.Instance) ([]*tracefs.Format, error) {
	events, err := in.EnabledEvents()
	if err != nil {
		return nil, err
	}
	var out []*tracefs.Format
	for _, e := range events {
		f, err := in.EventFormat(e.System, e.Event)
		if err != nil {
			return nil, err
		}
		out = append(out, f)
	}
	return out, nil
}

// SymbolLoader reads and parses kallsyms once, in the background, for every Source given it.
type SymbolLoader struct {
	fs   *tracefs.FS
	once sync.Once
	done chan struct{}
	syms *Symbols
	err  error
	ctx  context.Context
	stop context.CancelFunc
}

// NewSymbolLoader loads fs's kallsyms (tracefs.FS.Kallsyms) when first asked.
func NewSymbolLoader(fs *tracefs.FS) *SymbolLoader {
	ctx, stop := context.WithCancel(context.Background())
	return &SymbolLoader{fs: fs, done: make(chan struct{}), ctx: ctx, stop: stop}
}

// start begins the load (once) and returns the channel closed when it is done.
func (l *SymbolLoader) start() <-chan struct{} {
	l.once.Do(func() {
		go func() {
			defer close(l.done)
			b, err := l.fs.Kallsyms(l.ctx)
			if err == nil {
				l.syms, err = ParseKallsyms(b)
			}
			if err != nil {
				l.err = fmt.Errorf("%s: %w", tracefs.KallsymsPath, err)
			}
		}()
	})
	return l.done
}

// Loaded starts the load (once) and returns a channel closed when it is done: a caller that
// must decode what it reads from the start (ftctl count, whose counts are names) waits for it
// before tracing starts, while nothing waits to be decoded.
func (l *SymbolLoader) Loaded() <-chan struct{} { return l.start() }

// Close stops a load in progress and waits for it.
func (l *SymbolLoader) Close() {
	l.stop()
	l.once.Do(func() { close(l.done) }) // never started
	<-l.done
}

// binarySetup is what the binary reader needs, read before streaming starts.
type binarySetup struct {
	dec     *BinaryDecoder
	comms   *pidTable
	symbols *SymbolLoader
	owned   bool            // symbols is this reader's: closed with it
	waiting <-chan struct{} // closed when kallsyms is loaded; nil once that was seen
	notice  func(format string, args ...any)
	pages   []CPUPage

	// What was read and waits to be decoded, oldest first (from head): what came while
	// kallsyms loaded, and what the kernel had each time the decoder came back for more. The
	// buffers are reused once decoded (spare): new ones each time were garbage that brought
	// the collector round, whose stops spun on the scheduler's lock under emulation.
	backlog      [][]byte
	head         int
	backlogBytes int
	spare        [][]byte
	end          error // io.EOF read: returned once the backlog is decoded
}

// newBinarySetup reads what the decoder needs: the page layout, ftrace's own formats, the
// enabled events' formats (those binaryUnfit read, or read here when it read none), the
// options it follows; saved_cmdlines and saved_tgids are read as pids come, and kallsyms loads
// in the background (loading, loaded).
func newBinarySetup(in *tracefs.Instance, formats []*tracefs.Format, o Options) (*binarySetup, error) {
	layout, err := in.PageLayout()
	if err != nil {
		return nil, err
	}
	option := func(name string, def bool) bool {
		if on, ok := in.Option(name); ok {
			return on
		}
		return def
	}
	dec := &BinaryDecoder{Layout: layout, PrintParent: option("print-parent", true), SymOffset: option("sym-offset", false), HashPtr: hashPtr(in), Dynamic: in.FS().DynamicEvents(), Attached: in.FS().EprobeAttachments(), Enum: o.enum}
	for _, name := range []string{"function", "print", "kernel_stack", "funcgraph_entry", "funcgraph_exit"} {
		if f, err := in.EventFormat("ftrace", name); err == nil {
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
	fs := in.FS()
	comms := &pidTable{read: fs.SavedCmdlines}
	dec.Comm = comms.lookup
	if option("record-tgid", false) {
		tgids := &pidTable{read: fs.SavedTgids, now: comms}
		dec.TGID = func(pid int) int {
			n, _ := strconv.Atoi(string(tgids.lookup(pid)))
			return n
		}
	}
	if t, err := in.Tracer(); err == nil && t == "function_graph" && o.GraphLines {
		maxCPU := 0
		stats, _ := in.CPUStats()
		for _, st := range stats {
			maxCPU = max(maxCPU, st.CPU)
		}
		dec.Lines = &GraphLines{CPU: option("funcgraph-cpu", true), Proc: option("funcgraph-proc", false),
			AbsTime: option("funcgraph-abstime", false), Tail: option("funcgraph-tail", false), MaxCPU: maxCPU}
	}
	dec.Unknown = in.EventFormatByID
	s := &binarySetup{dec: dec, comms: comms, symbols: o.Symbols, notice: o.Notice}
	if s.symbols == nil {
		s.symbols, s.owned = NewSymbolLoader(fs), true
	}
	s.waiting = s.symbols.start()
	return s, nil
}

// loading is the channel closed once kallsyms is loaded, nil once that was seen (or for
// trace_pipe).
func (s *binarySetup) loading() <-chan struct{} {
	if s == nil {
		return nil
	}
	return s.waiting
}

// loaded records the end of the kallsyms load (an error: addresses print as numbers, said
// once).
func (s *binarySetup) loaded() {
	if err := s.symbols.err; err != nil {
		s.notice("stream: %v: addresses are printed as numbers", err)
	}
	s.dec.Symbols = s.symbols.syms
	s.waiting = nil
}

// full says the backlog has no room for more: readAheadMax of buffers wait to be decoded.
func (s *binarySetup) full() bool { return s.backlogBytes >= readAheadMax }

// pending is how many chunks wait in the backlog.
func (s *binarySetup) pending() int { return len(s.backlog) - s.head }

// maxSpare bounds the buffers kept for reuse once the backlog is decoded.
const maxSpare = 8

// buffer is a buffer to read a chunk into (give it to push).
func (s *binarySetup) buffer() []byte {
	if n := len(s.spare); n > 0 {
		b := s.spare[n-1]
		s.spare = s.spare[:n-1]
		return b[:cap(b)]
	}
	return make([]byte, readAheadSize)
}

// push puts a chunk read into buffer() at the end of the backlog; an empty one goes back to
// the spares.
func (s *binarySetup) push(b []byte) {
	if len(b) == 0 {
		s.recycle(b)
		return
	}
	s.backlog = append(s.backlog, b)
	s.backlogBytes += cap(b)
}

func (s *binarySetup) recycle(b []byte) {
	if len(s.spare) < maxSpare {
		s.spare = append(s.spare, b)
	}
}

// decodeNext decodes the backlog's oldest chunk.
func (s *binarySetup) decodeNext(emit Emit) error {
	b := s.backlog[s.head]
	s.backlog[s.head] = nil
	s.head++
	if s.head == len(s.backlog) {
		s.backlog, s.head = s.backlog[:0], 0
	}
	s.backlogBytes -= cap(b)
	err := s.decode(b, emit)
	s.recycle(b)
	return err
}

// discard drops the backlog and says how many events it held (ftctl's own among them: they
// are not decoded to tell).
func (s *binarySetup) discard() int64 {
	var n int64
	for _, b := range s.backlog[s.head:] {
		tracefs.RawPages(b, func(_ int, data []byte) {
			if p, err := ParsePage(s.dec.Layout, data); err == nil {
				p.Events(func(uint64, []byte) error { n++; return nil })
			}
		})
		s.backlogBytes -= cap(b)
		s.recycle(b)
	}
	clear(s.backlog)
	s.backlog, s.head = s.backlog[:0], 0
	return n
}

func (s *binarySetup) decode(b []byte, emit Emit) error {
	s.comms.tick()
	s.pages = s.pages[:0]
	tracefs.RawPages(b, func(cpu int, page []byte) {
		s.pages = append(s.pages, CPUPage{CPU: cpu, Data: page})
	})
	return s.dec.Feed(s.pages, emit)
}

// close stops the kallsyms load when it is this reader's own.
func (s *binarySetup) close() {
	if s.owned {
		s.symbols.Close()
	}
}

// pidTable is saved_cmdlines (comms) or saved_tgids, which trace_pipe looks pids up in when
// it formats a line. A pid it lacks is looked for again when the file is read again: for a pid
// never seen, after pidRefresh; for one known missing, after pidRetry. Time is taken once per
// chunk of pages (tick), not per event: reading the clock costs microseconds under emulation.
// One goroutine uses it.
//
// pidRefresh bounds how long a new process shows as "<...>", and what the reads cost: under a
// hot function filter with a workload forking all the time (70 new pids a second in the VM),
// reading the file every 20 ms showed in ftctl's in-VM profiles (BENCHMARKS.md, "Under a hot
// function filter").
type pidTable struct {
	read func() (map[int][]byte, error)
	vals map[int][]byte // a nil value: not in the file when last read
	at   time.Time      // when the file was last read
	t    time.Time      // the current chunk's time
	now  *pidTable      // the table whose tick gives the time, when not this one
	// the last pid found and its value: events come in runs of a pid (under a hot function
	// filter in the VM: BENCHMARKS.md), and a map lookup per event showed in profiles
	lastPid int
	lastVal []byte
}

const (
	pidRefresh = 100 * time.Millisecond
	pidRetry   = time.Second
)

func (c *pidTable) tick() { c.t = time.Now() }

func (c *pidTable) lookup(pid int) []byte {
	if pid == c.lastPid && c.lastVal != nil {
		return c.lastVal
	}
	v, seen := c.vals[pid]
	if v != nil {
		c.lastPid, c.lastVal = pid, v
		return v
	}
	now := c.t
	if c.now != nil {
		now = c.now.t
	}
	if c.vals != nil {
		age := now.Sub(c.at)
		if seen && age < pidRetry {
			return nil
		}
		if !seen && age < pidRefresh {
			c.vals[pid] = nil
			return nil
		}
	}
	c.at = now
	c.vals, c.lastVal = map[int][]byte{}, nil
	if m, err := c.read(); err == nil {
		c.vals = m
	}
	v = c.vals[pid]
	if v == nil {
		c.vals[pid] = nil
	} else {
		c.lastPid, c.lastVal = pid, v
	}
	return v
}
