// Package agent keeps one profile applied on a host and says how it goes: `ftctl agent`. It
// applies the profile through profile/'s engine, checks the kernel against it on a period and
// whenever the file changes or SIGHUP asks, repairs drift (or only reports it), and exposes what
// it does and what the kernel holds (the instance's rings, the profile's hist triggers) to
// Prometheus (metrics.go). Nothing it serves changes the kernel.
//
// The profile stays applied when the agent exits, as any declared owner does: a restarted agent
// finds it in sync and writes nothing; `ftctl delete -f` removes it.
package agent

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"sync"
	"time"

	"github.com/ftctl/ftctl/flight"
	"github.com/ftctl/ftctl/profile"
	"github.com/ftctl/ftctl/tracefs"
)

// Options are the agent's settings.
type Options struct {
	File     string        // the profile's path
	Repair   bool          // repair drift (false: only report it)
	Interval time.Duration // how often the kernel is checked against the profile
	// LockTimeout bounds the wait for the tracefs lock at each check (another ftctl writing).
	LockTimeout time.Duration
	// MaxSeries caps the series one hist trigger exports; the rows beyond are folded.
	MaxSeries int
	Notice    func(format string, args ...any)
	// Owners are the users one of whom owns a flight recorder's dump directory; Signal fires
	// its SIGUSR1 trigger (the profile's spec.flight).
	Owners []int
	Signal <-chan struct{}
	// OnReload, when set, is called before (done false) and after (done true) each reload,
	// for a service manager (systemd's RELOADING=1 and READY=1).
	OnReload func(done bool)
}

// Agent is one profile kept applied.
type Agent struct {
	opts Options
	fs   *tracefs.FS

	mu      sync.Mutex
	prof    *profile.Profile // the profile in force (the last one applied)
	source  []byte           // its file's bytes, to tell a changed file from a touched one
	stats   Stats
	ready   bool       // the profile is applied and tracefs answered the last check
	lastErr string     // the last failure, for /readyz
	flight  *flightRun // the profile's flight triggers, armed; nil when it has none
	// flightWait and flightSkip pace the re-arming of triggers that are not armed (retryFlight)
	flightWait, flightSkip int
	// flightPast sums the counters of the runners stopped (a reload under another name, a
	// re-arming): the metrics' counters never go back
	flightPast flight.RunnerStats
}

// Stats are the agent's counters and its last check's result.
type Stats struct {
	Applies   uint64            // applies that wrote something (the first included)
	Repairs   uint64            // drift found and repaired
	Drifts    uint64            // checks that found drift
	Checks    uint64            // checks made
	Reloads   uint64            // new profile files applied
	Failures  map[string]uint64 // by stage: load, check, apply
	InSync    bool              // the last check found the kernel holding the profile
	LastCheck time.Time
}

// New makes an agent for the profile file on fs. Nothing is read until Start.
func New(fs *tracefs.FS, opts Options) *Agent {
	if opts.Notice == nil {
		opts.Notice = func(string, ...any) {}
	}
	if opts.Interval <= 0 {
		opts.Interval = 30 * time.Second
	}
	return &Agent{opts: opts, fs: fs, stats: Stats{Failures: map[string]uint64{}}}
}

// Start reads the profile and applies it. A profile that cannot be read, or that the kernel
// refuses, is an error here (the agent does not start on a setup it cannot hold); after Start,
// such failures are counted and the setup in force is kept.
func (a *Agent) Start(ctx context.Context) (*profile.Result, error) {
	data, p, err := a.load()
	if err != nil {
		return nil, err
	}
	if hasFlight(p) { // a dump directory that is not there is refused before anything is applied
		cfg, err := flight.ConfigOf(p.Spec.Flight)
		if err == nil {
			err = flight.CheckConfig(cfg)
		}
		if err != nil {
			return nil, err
		}
	}
	res, err := a.apply(ctx, p)
	if err != nil {
		return res, err
	}
	if hasFlight(p) {
		if err := a.startFlight(ctx, p); err != nil {
			return res, err
		}
	}
	a.mu.Lock()
	a.prof, a.source, a.ready = p, data, true
	a.stats.InSync, a.stats.LastCheck = true, time.Now()
	a.mu.Unlock()
	return res, nil
}

// Run keeps the profile applied until ctx ends: a check every Interval, and a reload when
// reload receives (SIGHUP, or the file changed). It returns nil when ctx ends; the profile
// stays applied.
func (a *Agent) Run(ctx context.Context, reload <-chan struct{}) error {
	t := time.NewTicker(a.opts.Interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-reload:
			if a.opts.OnReload != nil {
				a.opts.OnReload(false)
			}
			a.Reload(ctx)
			if a.opts.OnReload != nil {
				a.opts.OnReload(true)
			}
		case <-t.C:
			a.Check(ctx)
			a.retryFlight(ctx)
		}
	}
}

// Reload reads the profile file again. An unchanged file is only a check. A file that cannot be
// read or is invalid is a counted failure, and the profile in force stays; a valid one is
// applied through the engine (transactionally: on failure the state before is restored), and
// the profile it replaces, when it had another name, is deleted after. A profile's flight
// triggers are armed anew with it: for the same recorder, the new triggers are armed first and
// the profile applied after, and on either's failure the old triggers stay armed.
func (a *Agent) Reload(ctx context.Context) {
	data, p, err := a.load()
	if err != nil {
		a.fail("load", err)
		return
	}
	a.mu.Lock()
	old, same := a.prof, bytes.Equal(data, a.source)
	a.mu.Unlock()
	if same {
		a.Check(ctx)
		return
	}
	if err := a.reapply(ctx, old, p); err != nil {
		return // counted
	}
	a.mu.Lock()
	a.prof, a.source, a.ready = p, data, true
	a.stats.Reloads++
	a.stats.InSync, a.stats.LastCheck = true, time.Now()
	a.mu.Unlock()
	a.opts.Notice("profile %s applied from %s", p.Metadata.Name, a.opts.File)
	if old != nil && old.Metadata.Name != p.Metadata.Name {
		if err := a.delete(ctx, old); err != nil {
			a.fail("apply", fmt.Errorf("deleting the replaced profile %s: %w", old.Metadata.Name, err))
		}
	}
}

// reapply applies p in place of old, with their flight triggers; a failure is counted.
func (a *Agent) reapply(ctx context.Context, old, p *profile.Profile) error {
	var applyErr error
	apply := func() error { _, applyErr = a.apply(ctx, p); return applyErr }
	if hasFlight(old) && hasFlight(p) && old.Metadata.Name == p.Metadata.Name && a.flightArmed() {
		if err := a.rearmFlight(ctx, p, apply); err != nil {
			if applyErr != nil {
				a.fail("apply", applyErr)
			} else {
				a.fail("flight", fmt.Errorf("arming the new triggers: %w", err))
			}
			return err
		}
		return nil
	}
	if err := apply(); err != nil {
		a.fail("apply", err)
		return err
	}
	a.stopFlight()
	if hasFlight(p) {
		if err := a.startFlight(ctx, p); err != nil {
			a.fail("flight", err) // the profile is applied; its triggers are not armed (not ready)
		}
	}
	return nil
}

// Check compares the kernel with the profile in force and, when it drifted, repairs it (unless
// Repair is off). A failure to read the kernel makes the agent not ready until a check passes.
func (a *Agent) Check(ctx context.Context) {
	a.mu.Lock()
	p := a.prof
	a.mu.Unlock()
	if p == nil {
		return
	}
	if err := a.fs.StillMounted(); err != nil {
		a.fail("check", err)
		return
	}
	lock, err := a.lock(ctx)
	if err != nil {
		a.fail("check", err)
		return
	}
	defer lock.Unlock()
	pl, err := profile.Compute(a.fs, p)
	a.mu.Lock()
	a.stats.Checks++
	a.stats.LastCheck = time.Now()
	a.mu.Unlock()
	if err != nil {
		a.fail("check", err)
		return
	}
	inSync := pl.InSync()
	if !inSync {
		a.mu.Lock()
		a.stats.Drifts++
		a.mu.Unlock()
		a.opts.Notice("profile %s drifted: %s", p.Metadata.Name, describe(pl))
		if a.opts.Repair {
			if _, err := a.applyPlan(ctx, p, pl); err != nil {
				a.fail("apply", err)
				return
			}
			inSync = true
			a.mu.Lock()
			a.stats.Repairs++
			a.stats.Applies++
			a.mu.Unlock()
			a.opts.Notice("profile %s repaired", p.Metadata.Name)
		}
	}
	a.mu.Lock()
	a.stats.InSync, a.ready, a.lastErr = inSync, true, ""
	a.mu.Unlock()
}

// describe names the objects that drifted, a few of them.
func describe(pl *profile.Plan) string {
	if !pl.Declared {
		return "not applied (deleted by someone?)"
	}
	s := ""
	for i, c := range pl.Changes {
		if i == 3 {
			return s + fmt.Sprintf(" and %d more", len(pl.Changes)-3)
		}
		if i > 0 {
			s += ", "
		}
		s += c.Op + c.Object
	}
	return s
}

// load reads and checks the profile file (bounded, as every profile is).
func (a *Agent) load() ([]byte, *profile.Profile, error) {
	f, err := os.Open(a.opts.File)
	if err != nil {
		return nil, nil, err
	}
	defer f.Close()
	if st, err := f.Stat(); err != nil {
		return nil, nil, err
	} else if !st.Mode().IsRegular() {
		return nil, nil, fmt.Errorf("%s: %w", a.opts.File, errNotRegular)
	}
	data, err := profile.ReadBounded(f, a.opts.File)
	if err != nil {
		return nil, nil, err
	}
	p, err := profile.Load(a.opts.File, data)
	if err == nil {
		err = p.Validate()
	}
	if err != nil {
		return nil, nil, err
	}
	return data, p, nil
}

func (a *Agent) lock(ctx context.Context) (*tracefs.Lock, error) {
	return a.fs.Lock(ctx, a.opts.LockTimeout, func(h tracefs.Holder) {
		a.opts.Notice("waiting for the tracefs lock held by %s", h)
	})
}

// apply plans p against the kernel and applies it, under the tracefs lock.
func (a *Agent) apply(ctx context.Context, p *profile.Profile) (*profile.Result, error) {
	if err := a.fs.StillMounted(); err != nil {
		return nil, err
	}
	lock, err := a.lock(ctx)
	if err != nil {
		return nil, err
	}
	defer lock.Unlock()
	pl, err := profile.Compute(a.fs, p)
	if err != nil {
		return nil, err
	}
	res, err := a.applyPlan(ctx, p, pl)
	if err == nil && res.Changed {
		a.mu.Lock()
		a.stats.Applies++
		a.mu.Unlock()
	}
	return res, err
}

// applyPlan applies pl, p's plan; a flight recorder's profile through flight.Ensure, which
// also keeps its snapshot buffer and what its dumps need. The caller holds the lock.
func (a *Agent) applyPlan(ctx context.Context, p *profile.Profile, pl *profile.Plan) (*profile.Result, error) {
	if hasFlight(p) {
		return flight.Ensure(ctx, a.fs, p, a.opts.Notice)
	}
	return pl.Apply(ctx, a.fs, a.opts.Notice)
}

func (a *Agent) delete(ctx context.Context, p *profile.Profile) error {
	lock, err := a.lock(ctx)
	if err != nil {
		return err
	}
	defer lock.Unlock()
	if hasFlight(p) {
		_, err = flight.Stop(a.fs, p.Metadata.Name)
		return err
	}
	_, err = profile.Delete(a.fs, p)
	return err
}

func (a *Agent) fail(stage string, err error) {
	a.mu.Lock()
	a.stats.Failures[stage]++
	if stage == "check" {
		a.ready = false
	}
	a.lastErr = stage + ": " + err.Error()
	a.mu.Unlock()
	a.opts.Notice("%s failed (the setup in force is kept): %v", stage, err)
}

// Ready says whether the profile is applied and the last check could read the kernel, and
// if not, why.
func (a *Agent) Ready() (bool, string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.ready && hasFlight(a.prof) && a.fs.DryRun == nil && !a.flightArmedLocked() {
		return false, "flight: the triggers are not armed"
	}
	if a.ready {
		return true, ""
	}
	if a.lastErr == "" {
		return false, "not started"
	}
	return false, a.lastErr
}

// Snapshot returns the profile in force and a copy of the counters.
func (a *Agent) Snapshot() (*profile.Profile, Stats) {
	a.mu.Lock()
	defer a.mu.Unlock()
	st := a.stats
	st.Failures = map[string]uint64{}
	for k, v := range a.stats.Failures {
		st.Failures[k] = v
	}
	return a.prof, st
}

// errNotRegular refuses a profile path that is not a regular file (a FIFO would block a reload).
var errNotRegular = errors.New("not a regular file")
