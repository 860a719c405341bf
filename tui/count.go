package tui

import (
	"context"
	"errors"
	"strings"
	"time"

	"github.com/ftctl/ftctl/count"
	"github.com/ftctl/ftctl/filters"
)

// CountRequest is what the Top view asks the kernel to count: the calls of the functions
// Patterns select (ftctl count), or, with Event, the hits of SYSTEM:EVENT per Keys (ftctl
// hist's table).
type CountRequest struct {
	Patterns []string
	Event    string   // SYSTEM:EVENT
	Keys     []string // FIELD[.MOD], as hist --key takes them
}

// Text is the request as typed after the prompt's word.
func (r CountRequest) Text() string {
	if r.Event != "" {
		return r.Event + " " + strings.Join(r.Keys, " ")
	}
	return strings.Join(r.Patterns, " ")
}

// CountInfo says what a count started by the console counts, and how.
type CountInfo struct {
	Request CountRequest
	Funcs   int
	Method  count.Method
	Why     string
	Session string // the count's instance (ftctl-PID-ID)
}

// ErrNoCount: ReadCount or StopCount with no count running.
var ErrNoCount = errors.New("no count is running")

// The count's messages.
type (
	countStartedMsg struct {
		info CountInfo
		err  error
	}
	countReadMsg struct {
		counts count.Counts
		err    error
	}
	countStoppedMsg struct{ err error }
)

// StartCount implements Backend: the request counted by count.Counter in a session of its own
// (instance ftctl-PID-ID, its probe group), set up under the lock; a count already running is
// removed first. Close removes the count's session.
func (b *KernelBackend) StartCount(ctx context.Context, req CountRequest) (CountInfo, error) {
	if err := b.StopCount(); err != nil && !errors.Is(err, ErrNoCount) {
		return CountInfo{}, err
	}
	var c *count.Counter
	var err error
	var ps []*filters.Pattern
	for _, t := range req.Patterns {
		p, err := filters.Compile(t)
		if err != nil {
			return CountInfo{}, err
		}
		ps = append(ps, p)
	}
	opts := count.Options{Patterns: ps}
	if req.Event != "" {
		sys, ev, _ := strings.Cut(req.Event, ":")
		c, err = count.NewEvent(b.FS, count.EventOptions{System: sys, Event: ev, Keys: req.Keys})
	} else {
		c, err = count.New(b.FS, opts)
	}
	if err != nil {
		return CountInfo{}, err
	}
	// The kernel refusing a probe point, the stream counts instead, in a session of its own,
	// as ftctl count does (count.Arm).
	c, err = count.Arm(c, b.FS, opts, func(*count.ProbeRefusedError) {}, func(c *count.Counter) error {
		return b.lockedCtx(ctx, func() error { return c.Start(context.WithoutCancel(ctx)) })
	})
	if err != nil {
		return CountInfo{}, err
	}
	s := c.Session()
	if err := c.Begin(context.Background()); err != nil {
		c.Close()
		b.locked(func() error { return errors.Join(s.Teardown()...) })
		return CountInfo{}, err
	}
	b.countMu.Lock()
	b.counter = c
	b.countMu.Unlock()
	return CountInfo{Request: req, Funcs: len(c.Choice.Funcs), Method: c.Choice.Method, Why: c.Choice.Why, Session: s.Instance.Name}, nil
}

// ReadCount implements Backend.
func (b *KernelBackend) ReadCount() (count.Counts, error) {
	b.countMu.Lock()
	defer b.countMu.Unlock()
	c := b.counter
	if c == nil {
		return nil, ErrNoCount
	}
	return c.Counts()
}

// StopCount implements Backend: the count's session torn down (its trigger, probes and
// instance), under the lock when it can be had within LockTimeout, and in any case.
func (b *KernelBackend) StopCount() error {
	b.countMu.Lock()
	c := b.counter
	b.counter = nil
	b.countMu.Unlock()
	if c == nil {
		return ErrNoCount
	}
	stopErr := c.Stop(2*time.Second, true)
	c.Close()
	var errs []error
	teardown := func() error { errs = c.Session().Teardown(); return nil }
	if err := b.locked(teardown); err != nil {
		teardown()
	}
	return errors.Join(append(errs, stopErr)...)
}

func (w *writeTracker) StartCount(ctx context.Context, req CountRequest) (CountInfo, error) {
	end, err := w.begin("the count's set-up")
	if err != nil {
		return CountInfo{}, err
	}
	defer end()
	return w.Backend.StartCount(ctx, req)
}

func (w *writeTracker) StopCount() error {
	end, err := w.begin("the count's removal")
	if err != nil {
		return err
	}
	defer end()
	return w.Backend.StopCount()
}
