package tui

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/ftctl/ftctl/filters"
	"github.com/ftctl/ftctl/probes"
)

// ErrQuitting refuses a kernel write asked for after the console decided to quit: a command
// issued just before q runs after it, and must not race the teardown.
var ErrQuitting = errors.New("the console is quitting: nothing written")

// writeTracker is the Backend as the models see it: it counts the calls that change the kernel
// while they run, so that quitting can wait for them (a three-step --except transition must not
// be left half done, nor race the teardown for the lock), and refuses new ones once the console
// has decided to quit.
type writeTracker struct {
	Backend
	mu     sync.Mutex
	what   []string      // the writes running, oldest first ("the apply")
	idle   chan struct{} // closed when the last running write ends
	closed bool
}

func newWriteTracker(b Backend) *writeTracker { return &writeTracker{Backend: b} }

// begin counts a write in; the function it returns counts it out. It refuses once closed.
func (w *writeTracker) begin(what string) (func(), error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.closed {
		return nil, ErrQuitting
	}
	if len(w.what) == 0 {
		w.idle = make(chan struct{})
	}
	w.what = append(w.what, what)
	return func() {
		w.mu.Lock()
		defer w.mu.Unlock()
		for i, s := range w.what {
			if s == what {
				w.what = append(w.what[:i], w.what[i+1:]...)
				break
			}
		}
		if len(w.what) == 0 {
			close(w.idle)
		}
	}, nil
}

// closeIfIdle refuses every write from now on if none is running; otherwise it says which one
// runs (the oldest).
func (w *writeTracker) closeIfIdle() (running string, idle bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if len(w.what) == 0 {
		w.closed = true
		return "", true
	}
	return w.what[0], false
}

// running is the oldest write running, "" when none.
func (w *writeTracker) running() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	if len(w.what) == 0 {
		return ""
	}
	return w.what[0]
}

// wait waits up to d for the writes running to end; then, if none runs, it closes the tracker.
func (w *writeTracker) wait(d time.Duration) bool {
	w.mu.Lock()
	idle := w.idle
	busy := len(w.what) > 0
	w.mu.Unlock()
	if busy {
		t := time.NewTimer(d)
		defer t.Stop()
		select {
		case <-idle:
		case <-t.C:
		}
	}
	_, ok := w.closeIfIdle()
	return ok
}

// shut refuses every write from now on, running or not (quitting gave up waiting).
func (w *writeTracker) shut() {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.closed = true
}

func (w *writeTracker) Apply(ctx context.Context, changes []filters.Change) ([]filters.Result, error) {
	end, err := w.begin("the apply")
	if err != nil {
		return nil, err
	}
	defer end()
	return w.Backend.Apply(ctx, changes)
}

func (w *writeTracker) SetTracer(tracer string) error {
	end, err := w.begin("the tracer change")
	if err != nil {
		return err
	}
	defer end()
	return w.Backend.SetTracer(tracer)
}

func (w *writeTracker) SetTracing(on bool) error {
	end, err := w.begin("the tracing_on write")
	if err != nil {
		return err
	}
	defer end()
	return w.Backend.SetTracing(on)
}

func (w *writeTracker) AddProbe(ctx context.Context, d *probes.Definition) (*probes.Added, error) {
	end, err := w.begin("the probe definition")
	if err != nil {
		return nil, err
	}
	defer end()
	return w.Backend.AddProbe(ctx, d)
}

func (w *writeTracker) EnableProbe(group, event string, on bool) error {
	end, err := w.begin("the probe's enable write")
	if err != nil {
		return err
	}
	defer end()
	return w.Backend.EnableProbe(group, event, on)
}

func (w *writeTracker) RemoveProbe(ctx context.Context, group, event string) error {
	end, err := w.begin("the probe removal")
	if err != nil {
		return err
	}
	defer end()
	return w.Backend.RemoveProbe(ctx, group, event)
}
