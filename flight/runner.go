package flight

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/ftctl/ftctl/profile"
	"github.com/ftctl/ftctl/session"
	"github.com/ftctl/ftctl/stream"
	"github.com/ftctl/ftctl/tracefs"
)

// Config is what a runner arms: where the dumps go, how they are rotated and rate-limited,
// and the triggers (SIGUSR1's, when given, is the one Run's signal channel fires).
type Config struct {
	Dir      string        // where the dumps go
	Keep     int           // at most this many dumps of the recorder (0: no limit by count)
	MaxBytes int64         // at most this many bytes of them (0: no limit by size)
	Rate     time.Duration // at most one dump per Rate, per trigger
	Triggers []*Trigger
}

// Runner arms a recorder's triggers and dumps its ring when one fires: the loop `ftctl flight
// arm` and `ftctl agent` both run. Each trigger is rate-limited on its own; after each dump
// the recorder's dumps are rotated. Rearm puts new triggers in place of the armed ones
// transactionally; Disarm tears the arming down (the recorder itself goes on recording).
// Arming, re-arming and firing happen in Run's goroutine, one at a time.
type Runner struct {
	Name string
	// Lock takes the tracefs lock for arming, disarming and each dump; unlock releases it.
	Lock func(ctx context.Context) (unlock func(), err error)
	// Owners are the users one of whom owns Dir (stream.MakeRecordDir).
	Owners []int
	// Notice says what happened (a dump, a trigger within the rate limit, a failure).
	Notice func(format string, args ...any)
	// Now is the clock (time.Now unless set).
	Now func() time.Time

	fs *tracefs.FS
	// dump writes one dump into out (Dump on fs, unless a test replaces it).
	dump func(ctx context.Context, out string) (*stream.DumpStats, error)
	// arm sets an arming session up (armSession, unless a test replaces it).
	arm func(ctx context.Context, cfg Config) (*Armed, error)
	// waitOn is what Run waits on for an arming session (the session itself, unless a test
	// replaces it).
	waitOn func(*Armed) waiter

	mu    sync.Mutex
	cur   *Armed
	cfg   Config
	stats RunnerStats
	swap  chan swapReq // Rearm's hand-over to a running Run; nil when Run does not run
}

// RunnerStats are a runner's counters since it was made: they go on across re-arms.
type RunnerStats struct {
	Fired        map[string]uint64 // by trigger (its Spec)
	Dumps        uint64            // dumps written
	DumpFailures uint64            // dumps that failed (the trigger stays armed)
}

// waiter is what Run waits on: an arming session (*Armed), or a test's fake.
type waiter interface {
	Next(ctx context.Context) ([]*Trigger, error)
}

type swapReq struct {
	a   *Armed
	cfg Config
	ack chan struct{}
}

// NewRunner makes the runner of recorder name on fs. Nothing is armed until Rearm.
func NewRunner(fs *tracefs.FS, name string, lock func(context.Context) (func(), error), notice func(string, ...any)) *Runner {
	if notice == nil {
		notice = func(string, ...any) {}
	}
	r := &Runner{Name: name, Lock: lock, Notice: notice, Now: time.Now, fs: fs, stats: RunnerStats{Fired: map[string]uint64{}}}
	r.waitOn = func(a *Armed) waiter { return a }
	r.arm = r.armSession
	r.dump = func(ctx context.Context, out string) (*stream.DumpStats, error) {
		return Dump(ctx, r.fs, r.Name, out, r.Owners...)
	}
	return r
}

// Rearm arms cfg's triggers in a new arming session (its own instance, tracing on), then runs
// commit (nil: nothing to do), then puts the new session in place of the armed one, which it
// disarms. When arming or commit fails, the session armed before stays armed, with its
// triggers, and nothing of the new one is left: the agent applies a new profile as commit, so
// a profile and its triggers change together or not at all.
func (r *Runner) Rearm(ctx context.Context, cfg Config, commit func() error) error {
	if err := CheckConfig(cfg); err != nil {
		return err
	}
	a, err := r.arm(ctx, cfg)
	if err != nil {
		return err
	}
	if commit != nil {
		if err := commit(); err != nil {
			r.disarm(a, false)
			return err
		}
	}
	r.mu.Lock()
	swap := r.swap
	if swap == nil { // not running: the new session is simply the one Run will wait on
		old := r.cur
		r.cur, r.cfg = a, cfg
		r.mu.Unlock()
		if old != nil {
			r.disarm(old, false)
			r.saveCurrent()
		}
		return nil
	}
	r.mu.Unlock()
	req := swapReq{a: a, cfg: cfg, ack: make(chan struct{})}
	select {
	case swap <- req:
		<-req.ack
		return nil
	case <-ctx.Done():
		r.disarm(a, false)
		return ctx.Err()
	}
}

// CheckConfig refuses, as ErrTrigger, a configuration a runner cannot arm: no dump directory
// (or not a directory), a negative keep, size cap or rate.
func CheckConfig(cfg Config) error {
	if cfg.Dir == "" || cfg.Keep < 0 || cfg.MaxBytes < 0 || cfg.Rate < 0 {
		return fmt.Errorf("%w: a dump directory is required, and keep, the size cap and the rate must not be negative", ErrTrigger)
	}
	if st, err := os.Stat(cfg.Dir); err != nil || !st.IsDir() {
		return fmt.Errorf("%w: the dump directory %s: not a directory", ErrTrigger, quote(cfg.Dir))
	}
	return nil
}

// armSession sets an arming session of cfg's triggers up and starts its recording, under the lock.
func (r *Runner) armSession(ctx context.Context, cfg Config) (*Armed, error) {
	unlock, err := r.Lock(ctx)
	if err != nil {
		return nil, err
	}
	st := ArmState{PID: os.Getpid(), Since: r.Now().UTC(), Dir: cfg.Dir, Rate: cfg.Rate.String(),
		Keep: cfg.Keep, MaxBytes: cfg.MaxBytes, Triggers: cfg.Triggers}
	a, err := Arm(context.WithoutCancel(ctx), r.fs, session.NewID(os.Getpid()), r.Name, st, r.Notice)
	unlock()
	if err != nil {
		return nil, err
	}
	if err := a.Begin(context.WithoutCancel(ctx)); err != nil {
		r.disarm(a, true)
		return nil, err
	}
	return a, nil
}

// disarm tears a down under the lock (taken without a deadline of the caller's: a teardown
// must happen); state: whether a's state file goes too.
func (r *Runner) disarm(a *Armed, state bool) {
	unlock, err := r.Lock(context.Background())
	if err == nil {
		defer unlock()
	}
	errs := a.disarm(state)
	if err != nil {
		errs = append(errs, fmt.Errorf("disarming without the tracefs lock: %w", err))
	}
	for _, e := range errs {
		r.Notice("flight %s: disarming: %v", r.Name, e)
	}
}

// saveCurrent writes the armed session's state again (a replaced session's teardown may have
// raced it).
func (r *Runner) saveCurrent() {
	r.mu.Lock()
	a := r.cur
	r.mu.Unlock()
	if a != nil {
		if err := a.save(); err != nil {
			r.Notice("flight %s: saving the arming state: %v", r.Name, err)
		}
	}
}

// Disarm tears the armed session down and removes its state; the recorder goes on recording.
// Run must have returned.
func (r *Runner) Disarm() {
	r.mu.Lock()
	a := r.cur
	r.cur = nil
	r.mu.Unlock()
	if a != nil {
		r.disarm(a, true)
	}
}

// Armed is the session armed now (nil before Rearm and after Disarm), for its triggers'
// names; its counters are Run's to change.
func (r *Runner) Armed() *Armed {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.cur
}

// Stats returns a copy of the runner's counters.
func (r *Runner) Stats() RunnerStats {
	r.mu.Lock()
	defer r.mu.Unlock()
	st := r.stats
	st.Fired = make(map[string]uint64, len(r.stats.Fired))
	for k, v := range r.stats.Fired {
		st.Fired[k] = v
	}
	return st
}

// Run waits for the armed triggers and dumps when they fire, until ctx ends (it returns nil
// then) or the arming session's pipe fails. A receive on sig fires the SIGUSR1 trigger (when
// the configuration has one). Rearm may be called meanwhile, from another goroutine.
func (r *Runner) Run(ctx context.Context, sig <-chan struct{}) error {
	r.mu.Lock()
	if r.cur == nil {
		r.mu.Unlock()
		return errors.New("flight: Run before Rearm")
	}
	swap := make(chan swapReq)
	r.swap = swap
	a := r.cur
	r.mu.Unlock()
	defer func() {
		r.mu.Lock()
		r.swap = nil
		r.mu.Unlock()
	}()
	var w waitLoop
	w.start(ctx, r.waitOn(a))
	defer w.stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case err := <-w.failed:
			return err
		case <-sig:
			if t := r.signalTrigger(); t != nil {
				r.fire(ctx, []*Trigger{t})
			}
		case ts := <-w.fired:
			r.fire(ctx, ts)
		case req := <-swap:
			w.stop()
			r.mu.Lock()
			old := r.cur
			r.cur, r.cfg = req.a, req.cfg
			r.mu.Unlock()
			r.disarm(old, false)
			r.saveCurrent()
			w.start(ctx, r.waitOn(req.a))
			close(req.ack)
		}
	}
}

// waitLoop runs one arming session's Next in a goroutine, handing what fired to fired.
type waitLoop struct {
	cancel context.CancelFunc
	done   chan struct{}
	fired  chan []*Trigger
	failed chan error
}

func (w *waitLoop) start(ctx context.Context, a waiter) {
	wctx, cancel := context.WithCancel(ctx)
	w.cancel, w.done = cancel, make(chan struct{})
	w.fired, w.failed = make(chan []*Trigger), make(chan error, 1)
	fired, failed, done := w.fired, w.failed, w.done
	go func() {
		defer close(done)
		for {
			ts, err := a.Next(wctx)
			if err != nil {
				if wctx.Err() == nil {
					failed <- err
				}
				return
			}
			select {
			case fired <- ts:
			case <-wctx.Done():
				return
			}
		}
	}()
}

func (w *waitLoop) stop() {
	if w.cancel != nil {
		w.cancel()
		<-w.done
		w.cancel = nil
	}
}

// signalTrigger is the armed configuration's SIGUSR1 trigger, nil when it has none.
func (r *Runner) signalTrigger() *Trigger {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, t := range r.cfg.Triggers {
		if t.Kind == KindSignal {
			return t
		}
	}
	return nil
}

// fire makes one dump for the triggers of ts that are not within the rate limit of their last.
func (r *Runner) fire(ctx context.Context, ts []*Trigger) {
	r.mu.Lock()
	a, cfg := r.cur, r.cfg
	now := r.Now()
	var by, late []*Trigger
	for _, t := range ts {
		r.stats.Fired[t.Spec]++
		switch {
		case slices.Contains(by, t): // read with another of its fires: in the dump that one makes
			a.Fire(t, now, 0)
		case a.Fire(t, now, t.rateLimit(cfg.Rate)):
			by = append(by, t)
		default:
			late = append(late, t)
		}
	}
	r.mu.Unlock()
	for _, t := range late {
		r.Notice("flight %s: %s within the rate limit %v of its last dump: none made", r.Name, quote(t.Spec), t.rateLimit(cfg.Rate))
	}
	if len(by) == 0 {
		return
	}
	out, st, err := r.dumpAt(ctx, cfg, now)
	var removed []string
	var rerr error
	if err == nil {
		removed, rerr = Rotate(cfg.Dir, r.Name, cfg.Keep, cfg.MaxBytes)
	}
	r.mu.Lock()
	if err != nil {
		r.stats.DumpFailures++
	} else {
		r.stats.Dumps++
	}
	r.mu.Unlock()
	if err != nil {
		r.Notice("flight %s: the dump failed: %v", r.Name, err) // armed still: the next trigger tries again
		return
	}
	for _, t := range by {
		r.mu.Lock()
		serr := a.Dumped(t)
		r.mu.Unlock()
		if serr != nil {
			r.Notice("flight %s: saving the arming state: %v", r.Name, serr)
		}
	}
	// said once made, rotated, counted and saved: whoever reads status or the directory on
	// seeing it finds what it says there
	if st != nil {
		r.Notice("flight %s: dumped %d events (%d KiB, %d overwritten) into %s (%s)", r.Name, st.Events, st.Bytes>>10, st.Lost, quote(out), quote(by[0].Spec))
	}
	for _, p := range removed {
		r.Notice("flight %s: removed the old dump %s", r.Name, quote(p))
	}
	if rerr != nil {
		r.Notice("flight %s: rotating the dumps: %v", r.Name, rerr)
	}
}

// dumpAt makes one triggered dump, under the lock, into the file it returns.
func (r *Runner) dumpAt(ctx context.Context, cfg Config, at time.Time) (string, *stream.DumpStats, error) {
	unlock, err := r.Lock(ctx)
	if err != nil {
		return "", nil, err
	}
	defer unlock()
	out := DumpPath(cfg.Dir, r.Name, at)
	st, err := r.dump(ctx, out)
	return out, st, err
}

// quote makes text from a profile, the command line or a path safe to print: as it is, or
// with Go's escapes when it holds a control character or a byte past ASCII (as cmd's safe).
func quote(s string) string {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c == 0x7f || c >= 0x80 {
			q := strconv.QuoteToGraphic(s)
			return q[1 : len(q)-1]
		}
	}
	return s
}

// ConfigOf is the runner's configuration declared by a profile's flight section: SIGUSR1's
// trigger first, then the section's, in its order. The section is valid (profile.Validate).
func ConfigOf(f *profile.Flight) (Config, error) {
	cfg := Config{Dir: f.Dir, Keep: f.KeepCount(), MaxBytes: int64(f.MaxMB) << 20, Rate: f.RateLimit(),
		Triggers: []*Trigger{SignalTrigger()}}
	for i, ft := range f.Triggers {
		var t *Trigger
		var err error
		switch {
		case ft.Event != "":
			spec := ft.Event
			if ft.Filter != "" {
				spec += " if " + ft.Filter
			}
			t, err = ParseEventTrigger(spec)
		case ft.Latency != "":
			t, err = ParseLatencyTrigger(ft.Latency)
		case ft.Warn:
			t = WarnTrigger()
		}
		if err == nil && t == nil {
			err = fmt.Errorf("%w: no trigger", ErrTrigger)
		}
		if err == nil && ft.Rate != "" {
			t.Rate = ft.Rate
			if t.rate, err = time.ParseDuration(ft.Rate); err == nil && t.rate < 0 {
				err = fmt.Errorf("%w: rate %q: a duration of 0 or more", ErrTrigger, ft.Rate)
			}
		}
		if err != nil {
			return Config{}, fmt.Errorf("spec.flight.triggers[%d]: %w", i, err)
		}
		cfg.Triggers = append(cfg.Triggers, t)
	}
	return cfg, nil
}

// rateLimit is t's rate limit: its own when the profile gave it one, else the arming's.
func (t *Trigger) rateLimit(arming time.Duration) time.Duration {
	if t.Rate != "" {
		return t.rate
	}
	return arming
}
