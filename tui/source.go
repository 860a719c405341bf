package tui

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	tea "charm.land/bubbletea/v2"

	"github.com/ftctl/ftctl/stream"
)

// Batch is what the console receives from its source in one message: the rows read since the
// last batch. A source never blocks on a console that is busy: rows accumulate (up to a
// bound) until the console asks again.
type Batch struct {
	Rows []Row
	// Dropped counts rows the source had to discard, oldest first, because the console fell
	// more than a ring's worth behind: they were read from the kernel but never shown.
	Dropped int64
	// Err ends the stream (nil while it runs).
	Err error
	// Reader is the kernel file the events are read from ("trace_pipe_raw", or "trace_pipe"
	// with the reason when the binary reader could not be used); "" when not known.
	Reader string
}

// Source delivers the trace's events as batches. Batches is closed when the source ends.
type Source interface {
	Batches() <-chan Batch
	Close() error
}

// batchMsg carries one batch into Update.
type batchMsg Batch

// streamEndedMsg: the source closed its channel.
type streamEndedMsg struct{}

// waitBatch is the stream's re-arming command: it reads one batch from the source's channel;
// Update handles it and returns waitBatch again. At most one is outstanding, so the event loop
// never holds more than one batch in its queue and key presses are never stuck behind data.
func waitBatch(src Source) tea.Cmd {
	if src == nil {
		return nil
	}
	ch := src.Batches()
	return func() tea.Msg {
		b, ok := <-ch
		if !ok {
			return streamEndedMsg{}
		}
		return batchMsg(b)
	}
}

// collector sits between a producer of rows and the console: it accumulates rows while the
// console is busy and hands them over, all at once, when the console asks. It holds at most
// max rows; past that the oldest are dropped and counted.
type collector struct {
	in   chan []Row
	out  chan Batch
	errc chan error
	stop chan struct{}
	max  int
	done chan struct{}

	reader atomic.Pointer[string] // Batch.Reader
}

func newCollector(max int) *collector {
	c := &collector{in: make(chan []Row), out: make(chan Batch), errc: make(chan error, 1),
		stop: make(chan struct{}), max: max, done: make(chan struct{})}
	go c.run()
	return c
}

// put hands rows to the collector; false once it was stopped.
func (c *collector) put(rows []Row) bool {
	select {
	case c.in <- rows:
		return true
	case <-c.stop:
		return false
	}
}

// fail ends the stream with err (delivered after the rows already collected).
func (c *collector) fail(err error) {
	select {
	case c.errc <- err:
	default:
	}
}

func (c *collector) run() {
	defer close(c.done)
	defer close(c.out)
	var pending []Row
	var dropped int64
	var final error
	errc := c.errc
	for {
		var out chan Batch
		if len(pending) > 0 || dropped > 0 || final != nil {
			out = c.out
		}
		select {
		case rows := <-c.in:
			pending = append(pending, rows...)
			if over := len(pending) - c.max; over > 0 {
				dropped += int64(over)
				pending = append(pending[:0:0], pending[over:]...)
			}
		case err := <-errc:
			final, errc = err, nil
		case out <- Batch{Rows: pending, Dropped: dropped, Err: final, Reader: c.readerName()}:
			if final != nil {
				return
			}
			pending, dropped = nil, 0
		case <-c.stop:
			return
		}
	}
}

// setReader names the file the rows come from, for the batches from now on.
func (c *collector) setReader(name string) { c.reader.Store(&name) }

func (c *collector) readerName() string {
	if p := c.reader.Load(); p != nil {
		return *p
	}
	return ""
}

func (c *collector) close() {
	select {
	case <-c.stop:
	default:
		close(c.stop)
	}
	<-c.done
}

// EventStream is what the console reads events through: the stream engine's stream.Events (a
// stream.Source, as ftctl stream and ftctl trace read the kernel; a stream.FileSource, as ftctl
// report reads a recording), or a test's.
type EventStream = stream.Events

// PipeSource reads the trace array through the stream engine: a goroutine reads and decodes
// (off the event loop), the collector batches. When the kernel ends the stream (it does when
// tracing is turned off after something was read), the engine is opened again after a pause,
// so that turning tracing back on resumes the stream; it chooses its reader again then (the
// tracer may have changed). Close stops everything; no goroutine outlives it.
type PipeSource struct {
	open func(ctx context.Context) (EventStream, error)
	c    *collector
	ctx  context.Context
	stop context.CancelFunc
	wg   sync.WaitGroup

	mu        sync.Mutex
	cur       EventStream   // the open stream (nil while suspended or reopening)
	suspended chan struct{} // non-nil while Suspend runs: closed when it is done
	kicked    EventStream   // the stream Suspend closed: its reader opens again, not fails
}

// reopenAfter is the pause before the stream is opened again after an end of file.
const reopenAfter = 250 * time.Millisecond

// NewPipeSource starts reading what open returns (KernelBackend.OpenStream); max bounds the
// rows held for a console that falls behind (the ring size).
func NewPipeSource(ctx context.Context, open func(ctx context.Context) (EventStream, error), max int) (*PipeSource, error) {
	ctx, cancel := context.WithCancel(ctx)
	r, err := open(ctx)
	if err != nil {
		cancel()
		return nil, err
	}
	s := &PipeSource{open: open, c: newCollector(max), ctx: ctx, stop: cancel, cur: r}
	s.wg.Add(1)
	go s.read(r)
	return s, nil
}

// reopen waits out a Suspend, then opens the stream again.
func (s *PipeSource) reopen(pause time.Duration) (EventStream, error) {
	for {
		s.mu.Lock()
		wait := s.suspended
		s.mu.Unlock()
		if wait == nil {
			break
		}
		select {
		case <-wait:
		case <-s.ctx.Done():
			return nil, s.ctx.Err()
		}
		pause = 0
	}
	if pause > 0 {
		select {
		case <-time.After(pause):
		case <-s.ctx.Done():
			return nil, s.ctx.Err()
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.suspended != nil { // a Suspend began meanwhile: let it run first
		return nil, nil
	}
	r, err := s.open(s.ctx)
	if err == nil {
		s.cur = r
	}
	return r, err
}

// readerOf says which file a stream reads (a stream.Source knows), "" for a test's stream.
func readerOf(r EventStream) string {
	src, ok := r.(interface {
		Reader() string
		ReaderWhy() string
	})
	if !ok {
		return ""
	}
	if why := src.ReaderWhy(); why != "" {
		return src.Reader() + " (" + why + ")"
	}
	return src.Reader()
}

// pump hands r's events to c as rows, a chunk at a time, until Next fails: the one loop of
// every stream the console shows, the kernel's (PipeSource) and a recording's (FileSource). It
// returns how many events r emitted and Next's error; stopped when the collector was stopped
// (nothing is left to hand rows to).
func pump(r EventStream, g *ingester, c *collector) (n int64, stopped bool, err error) {
	emit := func(ev *stream.Event) error {
		n++
		return g.emit(ev)
	}
	for err == nil {
		err = r.Next(emit)
		if rows := g.take(); len(rows) > 0 && !c.put(rows) {
			return n, true, err
		}
	}
	return n, false, err
}

func (s *PipeSource) read(r EventStream) {
	defer s.wg.Done()
	g := newIngester()
	s.c.setReader(readerOf(r))
	for {
		_, stopped, err := pump(r, g, s.c)
		r.Close()
		if stopped {
			return
		}
		s.mu.Lock()
		s.cur = nil
		suspended := s.suspended != nil || s.kicked == r
		s.kicked = nil
		s.mu.Unlock()
		var pause time.Duration
		switch {
		case s.ctx.Err() != nil:
			return
		case suspended: // closed by Suspend: wait for it, then open again
		case errors.Is(err, io.EOF):
			pause = reopenAfter
		default:
			s.c.fail(err)
			return
		}
		for r = nil; r == nil; {
			if r, err = s.reopen(pause); err != nil {
				if s.ctx.Err() == nil {
					s.c.fail(fmt.Errorf("reopening the stream: %w", err))
				}
				return
			}
		}
		s.c.setReader(readerOf(r)) // chosen again: the tracer may have changed
	}
}

// Suspend closes the stream, runs f, and opens it again: the kernel refuses to change the
// tracer while trace_pipe or a trace_pipe_raw of the trace array is open (EBUSY:
// tracing_set_tracer checks tr->trace_ref).
func (s *PipeSource) Suspend(f func() error) error {
	done := make(chan struct{})
	s.mu.Lock()
	if s.suspended != nil {
		s.mu.Unlock()
		return errors.New("the stream is already suspended")
	}
	s.suspended = done
	r := s.cur
	s.kicked = r
	s.mu.Unlock()
	if r != nil {
		r.Close() // the reader's Read returns; Close has closed the descriptor when it returns
	}
	err := f()
	s.mu.Lock()
	s.suspended = nil
	s.mu.Unlock()
	close(done)
	return err
}

// Batches implements Source.
func (s *PipeSource) Batches() <-chan Batch { return s.c.out }

// Close stops reading (a blocked read returns at once) and waits for the goroutines.
func (s *PipeSource) Close() error {
	s.stop()
	s.c.close()
	s.wg.Wait()
	return nil
}

// SyntheticSource makes function-tracer lines at a fixed rate and feeds them through the same
// decoder and collector as trace_pipe: the load of the benchmarks, and a demo without a kernel.
type SyntheticSource struct {
	c    *collector
	stop chan struct{}
	wg   sync.WaitGroup
	// Produced counts the events made so far (read after Close).
	Produced int64
}

// NewSyntheticSource produces rate events per second, in slices of tick.
func NewSyntheticSource(rate int, tick time.Duration, max int) *SyntheticSource {
	s := &SyntheticSource{c: newCollector(max), stop: make(chan struct{})}
	s.wg.Add(1)
	go s.run(rate, tick)
	return s
}

var syntheticFuncs = []string{"vfs_read", "vfs_write", "ksys_read", "ksys_write", "do_sys_openat2",
	"__x64_sys_read", "rw_verify_area", "fsnotify", "security_file_permission", "tcp_sendmsg",
	"schedule", "__schedule", "finish_task_switch", "mutex_lock", "mutex_unlock", "kmem_cache_alloc"}

var syntheticComms = []string{"nginx", "postgres", "bash", "systemd-journal", "kworker/0:1", "sshd"}

func (s *SyntheticSource) run(rate int, tick time.Duration) {
	defer s.wg.Done()
	g := newIngester()
	t := time.NewTicker(tick)
	defer t.Stop()
	start := time.Now()
	var made int64
	var line []byte
	for {
		select {
		case <-s.stop:
			s.Produced = made
			return
		case now := <-t.C:
			due := int64(now.Sub(start).Seconds() * float64(rate))
			line = line[:0]
			for ; made < due; made++ {
				f := syntheticFuncs[made%int64(len(syntheticFuncs))]
				p := syntheticFuncs[(made/3)%int64(len(syntheticFuncs))]
				comm := syntheticComms[(made/7)%int64(len(syntheticComms))]
				pid := 1000 + (made/7)%int64(len(syntheticComms))
				us := made * 1_000_000 / int64(rate)
				line = fmt.Appendf(line, "%16s-%-7d [%03d] ..... %5d.%06d: %s <-%s\n",
					comm, pid, made%2, us/1_000_000, us%1_000_000, f, p)
			}
			if len(line) > 0 && !s.c.put(g.feed(line)) {
				s.Produced = made
				return
			}
		}
	}
}

// Batches implements Source.
func (s *SyntheticSource) Batches() <-chan Batch { return s.c.out }

// Close stops the producer and waits for it.
func (s *SyntheticSource) Close() error {
	select {
	case <-s.stop:
	default:
		close(s.stop)
	}
	s.c.close()
	s.wg.Wait()
	return nil
}

// TextSource delivers the events of a fixed trace_pipe text in one batch, then stays open:
// deterministic data for tests and golden files.
type TextSource struct {
	ch   chan Batch
	once sync.Once
}

// NewTextSource decodes text now.
func NewTextSource(text string) *TextSource {
	s := &TextSource{ch: make(chan Batch, 1)}
	s.ch <- Batch{Rows: newIngester().feed([]byte(text))}
	return s
}

// Batches implements Source.
func (s *TextSource) Batches() <-chan Batch { return s.ch }

// Close implements Source: the channel closes (the stream ends).
func (s *TextSource) Close() error {
	s.once.Do(func() { close(s.ch) })
	return nil
}

// itoa formats with thousands separators ("1,234,567").
func itoa(n int64) string {
	s := strconv.FormatInt(n, 10)
	neg := n < 0
	if neg {
		s = s[1:]
	}
	var b []byte
	for i := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b = append(b, ',')
		}
		b = append(b, s[i])
	}
	if neg {
		return "-" + string(b)
	}
	return string(b)
}
