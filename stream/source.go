package stream

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"sync"
	"time"

	"github.com/ftctl/ftctl/tracefs"
)

// The stream engine: one entry point, Open, for every reader of a trace array's ring buffer
// (ftctl stream, ftctl trace and the console). It chooses between trace_pipe (lines the kernel
// formatted) and every CPU's trace_pipe_raw (pages ftctl formats the way the kernel would),
// reads ahead while the last chunk is decoded, and leaves out the events of ftctl's own threads.

// The readers Options.Reader chooses from.
const (
	ReaderAuto   = "auto"   // trace_pipe_raw when it prints the same, else trace_pipe
	ReaderText   = "text"   // trace_pipe
	ReaderBinary = "binary" // trace_pipe_raw, whatever the trace array records
)

// Names of the files read, as the summary reports them.
const (
	pipeText   = "trace_pipe"
	pipeBinary = "trace_pipe_raw"
)

// ErrReader says the reader asked for cannot be had: an unknown name, or --reader binary where
// the binary reader cannot read at all (a clock that does not count nanoseconds, a big-endian
// machine, --raw).
var ErrReader = errors.New("invalid reader")

// Options say how Open reads.
type Options struct {
	// Reader is ReaderAuto (""), ReaderText or ReaderBinary.
	Reader string
	// Lines, when set, says why the kernel's own lines are needed (--raw shows them): only
	// trace_pipe has them.
	Lines string
	// Duration ends the stream after this long (0: no limit): Next then returns
	// context.DeadlineExceeded.
	Duration time.Duration
	// IncludeSelf keeps the events of ftctl's own threads, which are left out by default: every
	// read of the ring buffer is itself a read(2), and on a filter over read paths each read
	// would record an event that wakes the next read.
	IncludeSelf bool
	// Symbols, when set, is shared by Sources opened one after the other (the console reopens
	// its reader when the tracer changes): kallsyms is then read once.
	Symbols *SymbolLoader
	// Notice receives what a person should know and nothing stops (kallsyms unreadable).
	Notice func(format string, args ...any)
	// GraphLines: function_graph's records, read from trace_pipe_raw, become the kernel's
	// lines (a leaf's entry and return one call, task banners: graphlines.go), so that auto
	// may read trace_pipe_raw under function_graph too. Without it, each record is an event
	// (entries and exits with their times, as call trees need them), and auto reads
	// trace_pipe under function_graph.
	GraphLines bool

	// enum gives print fmt the enumerators the eval map left (EnumResolver), one for both
	// binaryUnfit and newBinarySetup: the BTF is read once, if ever.
	enum func(string) (tracefs.EnumConst, bool)
}

// Source is an open stream of a trace array's events. Next is called from one goroutine; Close
// may be called from any, and makes a Next in progress return.
type Source struct {
	in     *tracefs.Instance
	opts   Options
	parent context.Context // Open's: its end is an interruption
	ctx    context.Context // parent with Duration
	cancel context.CancelFunc

	reader, why string
	pipe        chunkReader
	ra          *readAhead // trace_pipe's
	raw         rawReader  // trace_pipe_raw, read by Next itself
	bin         *binarySetup
	dec         Decoder
	closed      chan struct{} // closed by Close
	closeOnce   sync.Once
	tick        *time.Timer // the binary reader's waits while kallsyms loads

	emit     Emit // the caller's, for the current Next
	filtered Emit // emitOwn, made once
	self     selfFilter
	own      int64
	// undecoded counts what was read but left undecoded at the end; drainUntil is when the
	// decoding of what was read stops once the stream was told to end.
	undecoded  int64
	drainUntil time.Time
	before     []tracefs.CPUStats
	start      time.Time
}

// Open starts reading the trace array's ring buffer. It reads nothing of it yet: Next does.
func Open(ctx context.Context, in *tracefs.Instance, o Options) (*Source, error) {
	switch o.Reader {
	case "":
		o.Reader = ReaderAuto
	case ReaderAuto, ReaderText, ReaderBinary:
	default:
		return nil, fmt.Errorf("%w: the reader must be auto, text or binary, not %q", ErrReader, o.Reader)
	}
	if o.Notice == nil {
		o.Notice = func(string, ...any) {}
	}
	s := &Source{in: in, opts: o, parent: ctx}
	s.filtered = s.emitOwn
	if o.Duration > 0 {
		s.ctx, s.cancel = context.WithTimeout(ctx, o.Duration)
	} else {
		s.ctx, s.cancel = context.WithCancel(ctx)
	}
	s.before, _ = in.CPUStats()
	if err := s.choose(); err != nil {
		s.cancel()
		return nil, err
	}
	var err error
	if s.bin != nil {
		s.pipe, err = in.OpenRawPipe(s.ctx)
		if err != nil && o.Reader != ReaderBinary {
			s.bin.close()
			s.reader, s.why, s.bin = pipeText, err.Error(), nil
		}
	}
	if s.bin == nil {
		s.pipe, err = in.OpenPipe(s.ctx)
	}
	if err != nil {
		if s.bin != nil {
			s.bin.close()
		}
		s.cancel()
		return nil, err
	}
	s.start = time.Now()
	s.closed = make(chan struct{})
	if raw, ok := s.pipe.(rawReader); ok && s.bin != nil {
		s.raw = raw
	} else {
		s.ra = startReadAhead(s.pipe)
	}
	return s, nil
}

// rawReader is tracefs.RawPipe.
type rawReader interface {
	chunkReader
	TryRead([]byte) (int, error)
}

// choose decides between trace_pipe and trace_pipe_raw, and prepares the binary reader.
func (s *Source) choose() error {
	s.reader = pipeText
	o := s.opts
	if o.Reader == ReaderText {
		return nil
	}
	forced := o.Reader == ReaderBinary
	if o.enum == nil {
		o.enum = EnumResolver(s.in.FS())
	}
	formats, err := binaryUnfit(s.in, o, forced)
	if err != nil {
		if forced {
			return fmt.Errorf("%w: --reader binary: %w", ErrReader, err)
		}
		s.why = err.Error()
		return nil
	}
	b, err := newBinarySetup(s.in, formats, o)
	if err != nil {
		if forced {
			return err
		}
		s.why = err.Error()
		return nil
	}
	s.bin, s.reader = b, pipeBinary
	if !o.IncludeSelf {
		b.dec.Skip = s.skipOwn // before decoding: emitOwn would only see them decoded
	}
	return nil
}

// Reader is the file read: "trace_pipe" or "trace_pipe_raw".
func (s *Source) Reader() string { return s.reader }

// ReaderWhy says why trace_pipe was read when auto could have chosen trace_pipe_raw ("" when
// not).
func (s *Source) ReaderWhy() string { return s.why }

// Own counts the events of ftctl's own threads left out so far.
func (s *Source) Own() int64 { return s.own }

// Next waits for the next chunk of the ring buffer and emits its events, in order, ftctl's own
// left out. It returns nil while the stream goes on; the error emit returned; io.EOF when the
// kernel ended the stream (tracing off and everything read); context.DeadlineExceeded after
// Options.Duration; the context's error once Open's context ended (what was already read is
// decoded first, within drainBudget, and the rest counted: Summary.Undecoded);
// tracefs.ErrPipeClosed after Close; or a read error.
func (s *Source) Next(emit Emit) error {
	s.emit = emit
	if s.bin != nil {
		return s.nextBinary()
	}
	c := s.ra.next()
	rerr := c.err
	if err := s.ctx.Err(); err != nil && rerr == nil {
		// Interrupted, or out of time: what was read is decoded (the kernel will not give it
		// again), this chunk and those the read-ahead holds, then the stream ends.
		rerr = err
	}
	if err := s.feedText(c); err != nil {
		return err
	}
	for rerr != nil && c.err == nil {
		select {
		case c = <-s.ra.full:
			if err := s.feedText(c); err != nil {
				return err
			}
		default:
			return rerr
		}
	}
	return rerr
}

// feedText decodes a chunk of trace_pipe and gives its buffer back. The kernel prints an entry
// (a stack trace with all its frames too) within one read: whatever is pending after a read is
// complete.
func (s *Source) feedText(c readChunk) error {
	derr := s.dec.Feed(c.b, s.filtered)
	if derr == nil {
		derr = s.dec.Flush(s.filtered)
	}
	if c.b != nil {
		s.ra.release(c.b)
	}
	return derr
}

// nextBinary is Next for trace_pipe_raw, which it reads itself, in the caller's goroutine:
// each call first takes what the kernel has now (TryRead) to the end of the backlog, so the
// reads never wait for the decoder (up to readAheadMax), then decodes the backlog's oldest
// chunk; with nothing waiting, it waits for the kernel (Read). While kallsyms loads, it only
// reads, every loadPoll.
//
// One goroutine, not a reader goroutine beside the decoder: under a busy workload the two
// handed the one P back and forth (every poll, every preemption) through the Go scheduler's
// lock, and whenever the thread holding it was preempted the other spun, and runs of one build
// in one boot printed numbers of events far apart; reading in Next, close together (in-VM
// profiles, 6.12, vm/bench-hot.sh: BENCHMARKS.md, "Under a hot function filter").
//
// kallsyms takes the kernel a long time to format under emulation; 6.12's 163,000 symbols (a
// __pfx_ symbol before each function) several times as long as 6.1's 94,000, and seconds with
// a busy workload beside (BENCHMARKS.md, the same section).
func (s *Source) nextBinary() error {
	b := s.bin
	if err := s.stopped(); err != nil {
		return s.ending(err)
	}
	if err := s.drain(); err != nil {
		return err
	}
	if loading := b.loading(); loading != nil {
		if s.tick == nil {
			s.tick = time.NewTimer(loadPoll)
		} else {
			s.tick.Reset(loadPoll)
		}
		select {
		case <-loading:
			b.loaded()
		case <-s.tick.C:
			return nil
		case <-s.ctx.Done():
			return s.ending(s.stopped())
		case <-s.closed:
			return tracefs.ErrPipeClosed
		}
	}
	if b.pending() == 0 {
		if b.end != nil {
			return s.flushHeld(b.end)
		}
		if b.dec.Held() {
			// an entry waits for its CPU's next record: what the kernel has now, and with
			// nothing there the entry prints as trace_pipe prints it then ("func() {")
			if err := s.readRaw(false); err != nil {
				return err
			}
			if b.pending() == 0 {
				return s.flushHeld(b.end)
			}
		} else if err := s.readRaw(true); err != nil {
			return err
		}
		if b.pending() == 0 {
			return s.flushHeld(b.end)
		}
	}
	if err := s.stopped(); err != nil {
		return s.ending(err)
	}
	return b.decodeNext(s.filtered)
}

// ending is the binary reader's Next once the stream was told to end. After Close, nothing
// more. Interrupted, what was already read from the kernel (the backlog, up to readAheadMax) is
// still decoded, a chunk a Next (so Copy writes as it goes), for up to drainBudget and only
// once kallsyms is loaded; nothing more is read. What is left then is counted
// (Summary.Undecoded) and the end returned. Ended by its session (Open's context cancelled with
// an EndCause) or out of time (Options.Duration), all of it is decoded, kallsyms waited for:
// nobody waits at a keyboard, and the window's events are what was asked for.
func (s *Source) ending(err error) error {
	b := s.bin
	if errors.Is(err, tracefs.ErrPipeClosed) {
		return err
	}
	if b.pending() == 0 {
		return s.flushHeld(err)
	}
	if s.drainUntil.IsZero() {
		s.drainUntil = time.Now().Add(drainBudget)
	}
	// Ended by its session (an EndCause: the traced command exited) or by its Duration (the
	// parent still running), not by a person: all of it is decoded, kallsyms waited for.
	var ec EndCause
	whole := errors.As(context.Cause(s.parent), &ec) || (s.parent.Err() == nil && errors.Is(err, context.DeadlineExceeded))
	if loading := b.loading(); loading != nil {
		if whole {
			select {
			case <-loading:
			case <-s.closed:
				return tracefs.ErrPipeClosed
			}
		}
		select {
		case <-loading:
			b.loaded()
		default:
		}
	}
	if b.loading() == nil && (whole || time.Now().Before(s.drainUntil)) {
		return b.decodeNext(s.filtered)
	}
	s.undecoded += b.discard()
	return s.flushHeld(err)
}

// flushHeld prints the function_graph entries the decoder holds for want of their CPU's next
// record (the stream ends, or waits for the kernel), then returns err.
func (s *Source) flushHeld(err error) error {
	if ferr := s.bin.dec.FlushHeld(s.filtered); ferr != nil {
		return ferr
	}
	return err
}

// stopped is ErrPipeClosed after Close, the context's error once it ended (interrupted, or out
// of time), else nil.
func (s *Source) stopped() error {
	select {
	case <-s.closed:
		return tracefs.ErrPipeClosed
	default:
	}
	return s.ctx.Err()
}

// drain takes what the kernel has now to the end of the backlog, without waiting.
func (s *Source) drain() error {
	b := s.bin
	for b.end == nil && !b.full() {
		n := b.pending()
		if err := s.readRaw(false); err != nil {
			return err
		}
		if b.pending() == n {
			return nil
		}
	}
	return nil
}

// drainBudget bounds the decoding of what was read when the stream is interrupted or out of
// time (the kernel will not give it again): a person pressing Ctrl-C waits at most this long
// for it; what is left then is counted (Summary.Undecoded). A variable for the tests.
var drainBudget = 300 * time.Millisecond

// loadPoll is how often the binary reader reads while kallsyms loads.
const loadPoll = 50 * time.Millisecond

// readRaw reads trace_pipe_raw into the backlog: what the kernel has now, or (wait) as soon as
// it has something. The kernel's end of the stream (io.EOF) waits there until the backlog is
// decoded; the end of the context, Close or a read error end the stream at once.
func (s *Source) readRaw(wait bool) error {
	b := s.bin
	buf := b.buffer()
	var n int
	var err error
	if wait {
		n, err = s.raw.Read(buf)
	} else {
		n, err = s.raw.TryRead(buf)
	}
	b.push(buf[:n])
	switch {
	case err == nil:
		return nil
	case errors.Is(err, io.EOF):
		b.end = err
		return nil
	}
	return err
}

// skipOwn says whether pid is one of ftctl's threads, and counts its event.
func (s *Source) skipOwn(pid int) bool {
	if s.self.own(pid) {
		s.own++
		return true
	}
	return false
}

// emitOwn leaves out the events of ftctl's own threads.
func (s *Source) emitOwn(ev *Event) error {
	if !s.opts.IncludeSelf && ev.Kind != KindLost && ev.Comm != nil && s.self.own(ev.PID) {
		s.own++
		return nil
	}
	return s.emit(ev)
}

// Interrupted says whether the stream ended because Open's context did, and the context's
// cause (context.Cause) then.
func (s *Source) Interrupted() (bool, error) {
	if s.parent.Err() == nil {
		return false, nil
	}
	return true, context.Cause(s.parent)
}

// Close stops reading: a Next in progress returns, the pipe is closed, the goroutines end
// (Close waits for them). Calling it again does nothing.
func (s *Source) Close() error {
	s.stopReading()
	if s.bin != nil {
		s.bin.close()
	}
	s.cancel()
	return nil
}

// stopReading closes the pipe: what is read from now on is not the stream's; a Next waiting
// returns ErrPipeClosed.
func (s *Source) stopReading() {
	if s.ra != nil {
		s.ra.stop()
	}
	s.closeOnce.Do(func() {
		close(s.closed)
		if s.raw != nil {
			s.raw.Close()
		}
	})
}

// Summary starts the loss accounting of this stream: its counters before the first read.
func (s *Source) Summary() *Summary {
	sum := NewSummary(s.before)
	sum.Reader, sum.ReaderWhy = s.reader, s.why
	return sum
}

// Finish closes the accounting: the counters after, how long, why it ended.
func (s *Source) Finish(sum *Summary, end string) {
	after, _ := s.in.CPUStats()
	sum.Own, sum.Undecoded = s.own, s.undecoded
	sum.Finish(after, time.Since(s.start).Seconds(), end)
}

// selfFilter knows which pids of the trace are threads of this process. A pid is looked up
// once (a stat of /proc/self/task/PID): a thread started later has a new pid, looked up when it
// first shows.
type selfFilter struct {
	pids map[int]bool
	last int // the last pid looked at, and whether it was ours: events come in runs
	mine bool
	// ownThread is tracefs.OwnThread; tests replace it.
	ownThread func(int) bool
}

// maxSelfPids bounds the table: past it, it starts over.
const maxSelfPids = 1 << 16

func (f *selfFilter) own(pid int) bool {
	if pid <= 0 {
		return false // the idle task
	}
	if pid == f.last && f.pids != nil {
		return f.mine
	}
	mine, ok := f.pids[pid]
	if !ok {
		if f.pids == nil || len(f.pids) >= maxSelfPids {
			f.pids = map[int]bool{}
		}
		look := f.ownThread
		if look == nil {
			look = tracefs.OwnThread
		}
		mine = look(pid)
		f.pids[pid] = mine
	}
	f.last, f.mine = pid, mine
	return mine
}

// readAhead reads trace_pipe in a goroutine of its own while the caller decodes and prints what
// was read before: the kernel formats the next lines while ftctl formats the last ones, so with
// a CPU to spare ftctl reads trace_pipe about as fast as cat does (BENCHMARKS.md, "Stream"). It
// hands out its few buffers in order; the goroutine ends when the pipe does, and stop waits
// for it.
type readAhead struct {
	pipe chunkReader
	free chan []byte    // buffers to read into
	full chan readChunk // what was read, in order; closed when the goroutine ends
	done chan struct{}  // closed by stop
	once sync.Once
}

// readChunk is one Read: its bytes and its error (the last chunk has one).
type readChunk struct {
	b   []byte
	err error
}

// readAheadBuffers and readAheadSize: the kernel returns at most a page per read(2); a chunk
// gathers up to readAheadSize of them. The binary reader keeps up to readAheadMax of chunks
// read and waiting to be decoded (binarySetup's backlog).
const (
	readAheadBuffers = 3
	readAheadSize    = 128 << 10
	readAheadMax     = 32 << 20
)

// chunkReader is tracefs.Pipe or tracefs.RawPipe.
type chunkReader interface {
	Read([]byte) (int, error)
	Close() error
}

func startReadAhead(p chunkReader) *readAhead {
	r := &readAhead{pipe: p, free: make(chan []byte, readAheadBuffers),
		full: make(chan readChunk, readAheadBuffers), done: make(chan struct{})}
	for range readAheadBuffers {
		r.free <- make([]byte, readAheadSize)
	}
	go r.run()
	return r
}

func (r *readAhead) run() {
	defer close(r.full)
	for {
		var b []byte
		select {
		case b = <-r.free:
		case <-r.done:
			return
		}
		n, err := r.pipe.Read(b[:cap(b)])
		r.full <- readChunk{b[:n], err} // never blocks: full holds as many as there are buffers
		if err != nil {
			return
		}
	}
}

// next waits for the next chunk. Give its buffer back with release once done with it.
func (r *readAhead) next() readChunk {
	c, ok := <-r.full
	if !ok {
		return readChunk{err: tracefs.ErrPipeClosed}
	}
	return c
}

// release gives a buffer back; it never blocks (there is room for every buffer).
func (r *readAhead) release(b []byte) {
	select {
	case r.free <- b:
	default:
	}
}

// stop closes the pipe (a Read in progress returns), ends the goroutine and waits for it; what
// it read meanwhile is dropped. It may run while another goroutine waits in next, which then
// returns ErrPipeClosed. Calling it again does nothing.
func (r *readAhead) stop() {
	r.once.Do(func() {
		close(r.done)
		r.pipe.Close()
		for range r.full {
		}
	})
}

// littleEndian: the page and event headers the binary reader decodes are the machine's own.
var littleEndian = binary.NativeEndian.Uint16([]byte{1, 0}) == 1
