package tui

import (
	"context"
	"errors"
	"io"
	"sync"
	"testing"
	"time"

	tea "charm.land/bubbletea/v2"

	"github.com/ftctl/ftctl/filters"
	"github.com/ftctl/ftctl/internal/vtscreen"
)

// blockingBackend is the fake kernel with an Apply that holds on until the test releases it, or
// until its context ends (as filters.Applier does: it puts the lists back and returns).
type blockingBackend struct {
	*fakeBackend
	started  chan struct{}
	release  chan struct{}
	obeysCtx bool // false: an apply that ignores its context (a write the kernel holds up)
	// rollback is how long putting the lists back takes once the context ends.
	rollback time.Duration

	mu         sync.Mutex
	ended      time.Time
	rolledBack bool
}

func newBlockingBackend(t *testing.T, obeysCtx bool) *blockingBackend {
	return &blockingBackend{fakeBackend: newFakeBackend(t), started: make(chan struct{}), release: make(chan struct{}),
		obeysCtx: obeysCtx, rollback: 300 * time.Millisecond}
}

func (b *blockingBackend) Apply(ctx context.Context, changes []filters.Change) ([]filters.Result, error) {
	close(b.started)
	done := ctx.Done()
	if !b.obeysCtx {
		done = nil
	}
	var res []filters.Result
	var err error
	select {
	case <-b.release:
		res, err = b.fakeBackend.Apply(ctx, changes)
	case <-done:
		time.Sleep(b.rollback)
		err = ctx.Err()
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	b.ended, b.rolledBack = time.Now(), err != nil
	return res, err
}

func (b *blockingBackend) state() (time.Time, bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.ended, b.rolledBack
}

// console is Run on a pipe and a buffer, as on a terminal.
type console struct {
	t    *testing.T
	in   *io.PipeWriter
	out  *vtscreen.Screen
	done chan error
	end  time.Time
	m    *Model
}

func startConsole(t *testing.T, ctx context.Context, b Backend, quitWait time.Duration) *console {
	m := New(Options{Backend: b, Source: NewTextSource(testTrace), Instance: "ftctl-4242-1", Private: true,
		Group: "ftctl_4242_1", Now: fixedNow, StatusEvery: time.Hour, RingSize: 1000, Context: ctx, QuitWait: quitWait})
	r, w := io.Pipe()
	c := &console{t: t, in: w, out: vtscreen.New(80, 24), done: make(chan error, 1), m: m}
	c.out.MapNewline = true // no terminal on the program's input: bubbletea takes it to be in cooked mode
	go func() {
		_, err := Run(ctx, m, r, c.out, tea.WithWindowSize(80, 24), tea.WithEnvironment([]string{"TERM=xterm-256color"}))
		c.end = time.Now()
		c.done <- err
	}()
	t.Cleanup(func() { w.Close() })
	c.waitFor("35 events")
	return c
}

func (c *console) keys(s string) {
	c.t.Helper()
	if _, err := c.in.Write([]byte(s)); err != nil {
		c.t.Fatal(err)
	}
	// One key per read, and a lone ESC read as the esc key: bubbletea waits 50 ms for the rest of
	// a sequence.
	time.Sleep(80 * time.Millisecond)
}

func (c *console) waitFor(text string) {
	c.t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !c.out.Contains(text) {
		if time.Now().After(deadline) {
			c.t.Fatalf("the console never showed %q:\n%s", text, c.out)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// exited waits up to d for Run to return.
func (c *console) exited(d time.Duration) bool {
	select {
	case err := <-c.done:
		c.done <- err
		return true
	case <-time.After(d):
		return false
	}
}

// applying marks vfs_read for the filter and confirms: the apply starts and blocks.
func (c *console) applying(b *blockingBackend) {
	c.t.Helper()
	c.keys("2")
	c.waitFor("traceable functions")
	c.keys("/vfs_read")
	c.waitFor("1 function match")
	c.keys("\r") // mark
	c.keys("\r") // empty field: the confirmation
	c.waitFor("swap protocol?")
	c.keys("y")
	select {
	case <-b.started:
	case <-time.After(5 * time.Second):
		c.t.Fatal("the apply never started")
	}
}

// q waits for the apply in flight to finish (it was confirmed), says so, then quits.
func TestQuitWaitsForApply(t *testing.T) {
	b := newBlockingBackend(t, true)
	c := startConsole(t, context.Background(), b, 10*time.Second)
	c.applying(b)
	c.keys("\x1b") // leave the pattern field
	c.keys("q")
	c.waitFor("waiting for the apply to finish")
	if c.exited(300 * time.Millisecond) {
		t.Fatal("q ended the console while the apply was running")
	}
	close(b.release)
	if !c.exited(5 * time.Second) {
		t.Fatal("the console did not quit once the apply ended")
	}
	ended, rolledBack := b.state()
	if rolledBack || ended.IsZero() || ended.After(c.end) {
		t.Errorf("apply ended %v (rolled back %v), console %v", ended, rolledBack, c.end)
	}
	if err := <-c.done; err != nil || !c.m.Quit || c.m.Aborted {
		t.Errorf("Run: %v, quit %v, aborted %v", err, c.m.Quit, c.m.Aborted)
	}
	if b.lists.Filter.Total() != 1 {
		t.Errorf("the filter after quitting: %v", b.lists.Filter)
	}
}

// ctrl+c rolls the apply back (its context ends: the Applier restores the lists), waits for
// that, then quits.
func TestAbortRollsApplyBack(t *testing.T) {
	b := newBlockingBackend(t, true)
	c := startConsole(t, context.Background(), b, 10*time.Second)
	c.applying(b)
	c.keys("\x03")
	if !c.exited(5 * time.Second) {
		t.Fatal("ctrl+c did not end the console")
	}
	ended, rolledBack := b.state()
	if !rolledBack || ended.IsZero() || ended.After(c.end) {
		t.Errorf("apply ended %v (rolled back %v), console %v", ended, rolledBack, c.end)
	}
	if !c.m.Aborted {
		t.Error("ctrl+c is an abort")
	}
}

// SIGTERM and SIGHUP end ctx: the apply is rolled back and Run returns only after it ended.
func TestSignalWaitsForRollback(t *testing.T) {
	b := newBlockingBackend(t, true)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	c := startConsole(t, ctx, b, 10*time.Second)
	c.applying(b)
	cancel()
	if !c.exited(5 * time.Second) {
		t.Fatal("the end of ctx did not end the console")
	}
	ended, rolledBack := b.state()
	if !rolledBack || ended.IsZero() || ended.After(c.end) {
		t.Errorf("apply ended %v (rolled back %v), console %v", ended, rolledBack, c.end)
	}
	if err := <-c.done; !errors.Is(err, context.Canceled) {
		t.Errorf("Run: %v", err)
	}
}

// An apply that does not end (the kernel holds a write up) holds quitting for QuitWait, then is
// cancelled, then given up after QuitWait more: the console says what it left unfinished.
func TestQuitWaitIsBounded(t *testing.T) {
	b := newBlockingBackend(t, false)
	defer close(b.release)
	c := startConsole(t, context.Background(), b, 300*time.Millisecond)
	c.applying(b)
	c.keys("\x1b")
	start := time.Now()
	c.keys("q")
	if !c.exited(5 * time.Second) {
		t.Fatal("quitting waited without bound")
	}
	if took := time.Since(start); took < 500*time.Millisecond {
		t.Errorf("gave up after %v: QuitWait is 300 ms, twice", took)
	}
	if c.m.Unfinished == "" {
		t.Error("nothing says the apply was left unfinished")
	}
}

// A write whose command was issued before the console decided to quit, but runs after, is
// refused: it would race the teardown.
func TestNoWriteStartsAfterQuit(t *testing.T) {
	fb := newFakeBackend(t)
	m := testModel(t, fb, "")
	if cmd := m.quit(false); cmd == nil {
		t.Fatal("no quit")
	}
	_, err := m.env.backend.Apply(context.Background(), nil)
	if !errors.Is(err, ErrQuitting) || len(fb.applied) != 0 {
		t.Errorf("an apply after quitting: %v, %d applied", err, len(fb.applied))
	}
	if err := m.env.backend.SetTracing(false); !errors.Is(err, ErrQuitting) || !fb.on {
		t.Errorf("a tracing_on write after quitting: %v", err)
	}
}
