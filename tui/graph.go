package tui

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/ftctl/ftctl/session"
	"github.com/ftctl/ftctl/stream"
	"github.com/spf13/pflag"
)

// The Graph view's data: call trees built from function_graph's records (stream.CallTree) off
// the event loop, in a goroutine of the backend's, and handed to the view through a GraphFeed
// that the view reads from a re-arming tea.Cmd, a batch at a time. On a kernel the trees come
// from a function_graph session of its own (ftctl graph's: session.Spec.Graph, in the
// session's instance where the kernel runs function_graph there, else at the top level when
// it is free, restored exactly at the end); on a recording (--file), from the recording's
// funcgraph_entry and funcgraph_exit events.

// GraphRequest is what the Graph view asks the kernel to graph, as ftctl graph takes it: the
// roots (set_graph_function, -f), the functions left out with their callees
// (set_graph_notrace, -n), the depth (--depth), the threshold (--threshold) and a process
// (--pid).
type GraphRequest struct {
	Roots     []string
	Notrace   []string
	Depth     int
	Threshold time.Duration
	PID       int
}

// Text is the request as the prompt takes it: the roots, then the flags given.
func (r GraphRequest) Text() string {
	parts := slices.Clone(r.Roots)
	for _, n := range r.Notrace {
		parts = append(parts, "-n", n)
	}
	if r.Depth > 0 {
		parts = append(parts, "--depth", strconv.Itoa(r.Depth))
	}
	if r.Threshold > 0 {
		parts = append(parts, "--threshold", r.Threshold.String())
	}
	if r.PID > 0 {
		parts = append(parts, "--pid", strconv.Itoa(r.PID))
	}
	return strings.Join(parts, " ")
}

// ParseGraphRequest reads the Graph view's prompt: roots, and ftctl graph's flags -f ROOT,
// -n NOTRACE, --depth N, --threshold D and --pid PID, checked as ftctl graph checks them.
func ParseGraphRequest(text string) (GraphRequest, error) {
	var r GraphRequest
	fl := pflag.NewFlagSet("graph", pflag.ContinueOnError)
	fl.SetOutput(io.Discard)
	fl.StringArrayVarP(&r.Roots, "function", "f", nil, "")
	fl.StringArrayVarP(&r.Notrace, "notrace", "n", nil, "")
	fl.IntVar(&r.Depth, "depth", 0, "")
	fl.DurationVar(&r.Threshold, "threshold", 0, "")
	fl.IntVar(&r.PID, "pid", 0, "")
	if err := fl.Parse(strings.Fields(text)); err != nil {
		return GraphRequest{}, fmt.Errorf("%v (the prompt takes ROOT... [-n NOTRACE]... [--depth N] [--threshold D] [--pid PID])", err)
	}
	r.Roots = append(r.Roots, fl.Args()...)
	if _, err := session.GraphRequest(r).Spec(); err != nil {
		return GraphRequest{}, err
	}
	return r, nil
}

// GraphInfo says what a graph started by the console graphs, and where.
type GraphInfo struct {
	Request GraphRequest
	// Session is the graph's instance (ftctl-PID-ID); AtTop: function_graph runs at the top
	// level (the kernel's instances cannot run it), which is put back as it was at the end.
	Session string
	AtTop   bool
	// Recording: the trees are a recording's (--file): no session, nothing to stop.
	Recording bool
}

// Where says where the graph runs, for the message line.
func (i GraphInfo) Where() string {
	switch {
	case i.Recording:
		return "the recording's function_graph events"
	case i.AtTop:
		return "function_graph at the top level (this kernel's instances cannot run it; the top level was free, and is put back as it was when the graph stops)"
	}
	return "function_graph in instance " + safe(i.Session)
}

// GraphBatch is what the Graph view takes from a feed at a time.
type GraphBatch struct {
	Trees []*stream.Call // the top-level calls completed since the last batch, in order
	// Dropped counts trees the feed discarded, oldest first, because the view fell more than
	// a bound behind; Lost is the kernel's count of lost records so far (KindLost events).
	Dropped, Lost int64
	// Err ends the feed (nil while it runs): the stream ended, or the recording was read.
	Err error
}

// GraphFeed carries call trees from the goroutine that builds them to the Graph view: Add
// never blocks (past max trees waiting, the oldest are dropped and counted), Next blocks until
// there is something to take or the feed is closed.
type GraphFeed struct {
	mu      sync.Mutex
	pending []*stream.Call
	dropped int64
	lost    int64
	sent    int64 // lost as last sent
	err     error
	ended   bool // End was called: err ends the feed
	endSent bool // the end was taken
	max     int
	notify  chan struct{}
	closed  chan struct{}
	once    sync.Once
}

// NewGraphFeed makes a feed holding at most max trees for a view that falls behind.
func NewGraphFeed(max int) *GraphFeed {
	return &GraphFeed{max: max, notify: make(chan struct{}, 1), closed: make(chan struct{})}
}

func (f *GraphFeed) wake() {
	select {
	case f.notify <- struct{}{}:
	default:
	}
}

// Add hands over a top-level call.
func (f *GraphFeed) Add(c *stream.Call) error {
	f.mu.Lock()
	f.pending = append(f.pending, c)
	if over := len(f.pending) - f.max; over > 0 {
		f.dropped += int64(over)
		clear(f.pending[:over])
		f.pending = f.pending[over:]
	}
	f.mu.Unlock()
	f.wake()
	return nil
}

// SetLost records the count of lost records so far.
func (f *GraphFeed) SetLost(n int64) {
	f.mu.Lock()
	changed := n != f.lost
	f.lost = n
	f.mu.Unlock()
	if changed {
		f.wake()
	}
}

// End ends the feed with err (after the trees already added).
func (f *GraphFeed) End(err error) {
	f.mu.Lock()
	if !f.ended {
		f.ended, f.err = true, err
	}
	f.mu.Unlock()
	f.wake()
}

// Next takes what came since the last call; ok is false once the feed was closed, or ended
// and everything was taken.
func (f *GraphFeed) Next() (b GraphBatch, ok bool) {
	for {
		f.mu.Lock()
		news := len(f.pending) > 0 || f.dropped > 0 || f.lost != f.sent
		if f.endSent && !news {
			f.mu.Unlock()
			return GraphBatch{}, false
		}
		if news || f.ended {
			b = GraphBatch{Trees: f.pending, Dropped: f.dropped, Lost: f.lost}
			f.pending, f.dropped, f.sent = nil, 0, f.lost
			if f.ended {
				b.Err, f.endSent = f.err, true
				if b.Err == nil {
					b.Err = errGraphEnded
				}
			}
			f.mu.Unlock()
			return b, true
		}
		f.mu.Unlock()
		select {
		case <-f.notify:
		case <-f.closed:
			return GraphBatch{}, false
		}
	}
}

// errGraphEnded is the end of a feed that ended without a reason of its own; errKernelEnded
// the kernel's end of the graph's stream (its tracing was turned off).
var (
	errGraphEnded  = errors.New("the graph's stream ended")
	errKernelEnded = errors.New("the kernel ended the graph's stream (tracing turned off where it runs)")
)

// Close makes a Next in progress, and every later one, return.
func (f *GraphFeed) Close() {
	f.once.Do(func() { close(f.closed) })
}

// graphFeedMax bounds the trees a feed holds for a view that falls behind.
const graphFeedMax = 4096

// graphRun is a graph running for the console: the goroutine building trees into feed, and
// what stops it.
type graphRun struct {
	feed    *GraphFeed
	cancel  context.CancelFunc
	done    chan struct{}    // closed when the goroutine ended
	src     stream.Events    // the kernel's stream, or the recording's
	session *session.Session // nil for a recording
}

// stop ends the goroutine (closing the stream's pipes) and waits for it.
func (r *graphRun) stop() {
	r.cancel()
	if r.src != nil {
		r.src.Close()
	}
	<-r.done
	r.feed.Close()
}

// graphHolder is a backend's graph: one at a time.
type graphHolder struct {
	mu  sync.Mutex
	cur *graphRun
}

func (h *graphHolder) take() *graphRun {
	h.mu.Lock()
	defer h.mu.Unlock()
	r := h.cur
	h.cur = nil
	return r
}

func (h *graphHolder) set(r *graphRun) {
	h.mu.Lock()
	h.cur = r
	h.mu.Unlock()
}

// ErrNoGraph: StopGraph with no graph running.
var ErrNoGraph = errors.New("no graph is running")

// buildTrees reads src's events, a chunk at a time until Next fails (the kernel's stream and a
// recording's alike), into call trees handed to feed; at the end, the calls still open
// (unfinished) and waiting, then the end: Next's error as ended words it.
func buildTrees(feed *GraphFeed, src stream.Events, ended func(error) error) {
	defer recoverRead(feed.End)
	tree := &stream.CallTree{Done: feed.Add}
	emit := func(ev *stream.Event) error {
		if err := tree.Add(ev); err != nil {
			return err
		}
		if ev.Kind == stream.KindLost {
			feed.SetLost(tree.Lost)
		}
		return nil
	}
	var err error
	for err == nil {
		err = src.Next(emit)
	}
	tree.End()
	feed.SetLost(tree.Lost)
	feed.End(ended(err))
}

// Recording implements Backend: a kernel (its graphs are started by the user).
func (b *KernelBackend) Recording() bool { return false }

// StartGraph implements Backend: a function_graph session as ftctl graph makes it (its own
// instance and journal, the global graph files taken only when free, under the lock), its
// trace array read by the stream engine's binary reader and built into call trees in a
// goroutine. A graph already running is removed first. StopGraph (and Close) remove it.
func (b *KernelBackend) StartGraph(ctx context.Context, req GraphRequest) (GraphInfo, *GraphFeed, error) {
	if err := b.StopGraph(); err != nil && !errors.Is(err, ErrNoGraph) {
		return GraphInfo{}, nil, err
	}
	spec, err := session.GraphRequest(req).Spec()
	if err != nil {
		return GraphInfo{}, nil, err
	}
	s, err := session.New(b.FS, session.NewID(os.Getpid()), spec)
	if err != nil {
		return GraphInfo{}, nil, err
	}
	err = b.lockedCtx(ctx, func() error {
		if err := s.Start(context.WithoutCancel(ctx)); err != nil {
			return err // Start tore down what it did
		}
		if err := s.Begin(); err != nil {
			s.Teardown()
			return err
		}
		return nil
	})
	if err != nil {
		return GraphInfo{}, nil, err
	}
	rctx, cancel := context.WithCancel(context.Background())
	// kallsyms is the graph's own (a Symbols' cache is not shared between goroutines)
	src, err := s.OpenGraph(rctx, stream.Options{})
	if err != nil {
		cancel()
		b.teardownGraph(s)
		return GraphInfo{}, nil, err
	}
	r := &graphRun{feed: NewGraphFeed(graphFeedMax), cancel: cancel, done: make(chan struct{}), src: src, session: s}
	go func() {
		defer close(r.done)
		buildTrees(r.feed, src, func(err error) error {
			if errors.Is(err, io.EOF) {
				return errKernelEnded
			}
			return err
		})
	}()
	b.graph.set(r)
	return GraphInfo{Request: req, Session: s.Instance.Name, AtTop: s.GraphAtTop()}, r.feed, nil
}

// StopGraph implements Backend: the graph's stream closed, then its session torn down (the
// tracer stopped, the global graph files and, at the top level, every file written put back
// as it was, the instance removed), under the lock when it can be had within LockTimeout, and
// in any case.
func (b *KernelBackend) StopGraph() error {
	r := b.graph.take()
	if r == nil {
		return ErrNoGraph
	}
	r.stop()
	return b.teardownGraph(r.session)
}

func (b *KernelBackend) teardownGraph(s *session.Session) error {
	var errs []error
	teardown := func() error { errs = s.Teardown(); return nil }
	if err := b.locked(teardown); err != nil {
		teardown()
	}
	return errors.Join(errs...)
}

// Recording implements Backend: a recording (its trees show from the start).
func (b *FileBackend) Recording() bool { return true }

// StartGraph implements Backend: the recording's function_graph events built into call trees
// in a goroutine (stream.OpenFile, as the Stream view's reading: the CPUs merged in time
// order), ending with how many function_graph records it held. The request is not used: the recording holds
// what it holds.
func (b *FileBackend) StartGraph(ctx context.Context, req GraphRequest) (GraphInfo, *GraphFeed, error) {
	if r := b.graph.take(); r != nil {
		r.stop()
	}
	rctx, cancel := context.WithCancel(context.Background())
	r := &graphRun{feed: NewGraphFeed(graphFeedMax), cancel: cancel, done: make(chan struct{})}
	go func() {
		defer close(r.done)
		defer recoverRead(r.feed.End)
		src, err := openFile(rctx, b.File, stream.FileOptions{})
		if err != nil {
			r.feed.End(err)
			return
		}
		defer src.Close()
		g := &graphEvents{Events: src}
		buildTrees(r.feed, g, g.ended)
	}()
	b.graph.set(r)
	return GraphInfo{Request: req, Recording: true}, r.feed, nil
}

// graphEvents passes a recording's function_graph events and losses on, and counts the
// records.
type graphEvents struct {
	stream.Events
	n int
}

// Next implements stream.Events.
func (g *graphEvents) Next(emit stream.Emit) error {
	return g.Events.Next(func(ev *stream.Event) error {
		switch ev.Kind {
		case stream.KindGraph:
			g.n++
		case stream.KindLost:
		default:
			return nil
		}
		return emit(ev)
	})
}

// ended words the end of the reading: how many graph records the recording held.
func (g *graphEvents) ended(err error) error {
	switch {
	case !errors.Is(err, io.EOF):
		return err
	case g.n == 0:
		return fmt.Errorf("%w: it holds no function_graph events (record them with ftctl record --tracer function_graph -f FUNC)", ErrEndOfRecording)
	}
	return fmt.Errorf("%w: %d function_graph records", ErrEndOfRecording, g.n)
}

// StopGraph implements Backend: the reading stopped.
func (b *FileBackend) StopGraph() error {
	r := b.graph.take()
	if r == nil {
		return ErrNoGraph
	}
	r.stop()
	return nil
}

func (w *writeTracker) StartGraph(ctx context.Context, req GraphRequest) (GraphInfo, *GraphFeed, error) {
	end, err := w.begin("the graph's set-up")
	if err != nil {
		return GraphInfo{}, nil, err
	}
	defer end()
	return w.Backend.StartGraph(ctx, req)
}

func (w *writeTracker) StopGraph() error {
	end, err := w.begin("the graph's removal")
	if err != nil {
		return err
	}
	defer end()
	return w.Backend.StopGraph()
}
