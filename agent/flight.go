package agent

import (
	"context"
	"fmt"

	"github.com/ftctl/ftctl/flight"
	"github.com/ftctl/ftctl/profile"
)

// flightRun is the profile's flight recorder's runner, armed, and the goroutine running it.
type flightRun struct {
	r      *flight.Runner
	cancel context.CancelFunc
	done   chan struct{}
	err    error // Run's, once done is closed
}

// hasFlight says whether p declares a flight recorder.
func hasFlight(p *profile.Profile) bool { return p != nil && p.Spec.Flight != nil }

// startFlight arms p's triggers on its recorder (applied already) and runs them until ctx ends
// or stopFlight. In a dry run nothing is armed.
func (a *Agent) startFlight(ctx context.Context, p *profile.Profile) error {
	if a.fs.DryRun != nil {
		return nil
	}
	cfg, err := flight.ConfigOf(p.Spec.Flight)
	if err != nil {
		return err
	}
	r := flight.NewRunner(a.fs, p.Metadata.Name, a.lockFunc(), a.opts.Notice)
	r.Owners = a.opts.Owners
	if err := r.Rearm(ctx, cfg, nil); err != nil {
		return fmt.Errorf("arming the flight triggers: %w", err)
	}
	rctx, cancel := context.WithCancel(ctx)
	fr := &flightRun{r: r, cancel: cancel, done: make(chan struct{})}
	go func() {
		defer close(fr.done)
		fr.err = r.Run(rctx, a.opts.Signal)
		if fr.err != nil {
			a.fail("flight", fmt.Errorf("the flight triggers stopped: %w", fr.err))
		}
	}()
	a.mu.Lock()
	a.flight = fr
	a.mu.Unlock()
	a.opts.Notice("flight %s armed: %d triggers, dumps into %s", p.Metadata.Name, len(cfg.Triggers), cfg.Dir)
	return nil
}

// rearmFlight puts p's triggers in place of the armed ones, commit (the profile's apply)
// between: both change or neither does.
func (a *Agent) rearmFlight(ctx context.Context, p *profile.Profile, commit func() error) error {
	cfg, err := flight.ConfigOf(p.Spec.Flight)
	if err != nil {
		return err
	}
	a.mu.Lock()
	fr := a.flight
	a.mu.Unlock()
	return fr.r.Rearm(ctx, cfg, commit)
}

// retryFlight arms the profile's triggers again where they are not armed while the profile is
// applied: their arming failed after the profile was (a reload that added spec.flight, an event
// the kernel did not have yet), or the runner stopped (its pipe failed). It tries at the next
// check, then at checks further apart after each failure (2, 4, 8, then every 16th).
func (a *Agent) retryFlight(ctx context.Context) {
	a.mu.Lock()
	p := a.prof
	if !a.ready || !hasFlight(p) || a.fs.DryRun != nil || a.flightArmedLocked() {
		a.flightWait, a.flightSkip = 0, 0
		a.mu.Unlock()
		return
	}
	if a.flightSkip > 0 {
		a.flightSkip--
		a.mu.Unlock()
		return
	}
	a.mu.Unlock()
	a.stopFlight() // a runner that stopped: its arming session removed
	err := a.startFlight(ctx, p)
	a.mu.Lock()
	if err == nil {
		a.flightWait, a.flightSkip, a.lastErr = 0, 0, ""
	} else {
		a.flightWait = min(max(2*a.flightWait, 2), 16)
		a.flightSkip = a.flightWait - 1
	}
	a.mu.Unlock()
	if err != nil {
		a.fail("flight", fmt.Errorf("arming again: %w", err))
	}
}

// stopFlight ends the runner and disarms its triggers; the recorder goes on recording.
func (a *Agent) stopFlight() {
	a.mu.Lock()
	fr := a.flight
	a.flight = nil
	a.mu.Unlock()
	if fr == nil {
		return
	}
	fr.cancel()
	<-fr.done
	fr.r.Disarm()
	a.mu.Lock()
	a.flightPast = addStats(a.flightPast, fr.r.Stats())
	a.mu.Unlock()
}

// addStats is the sum of two runners' counters.
func addStats(a, b flight.RunnerStats) flight.RunnerStats {
	sum := flight.RunnerStats{Fired: make(map[string]uint64, len(a.Fired)+len(b.Fired)),
		Dumps: a.Dumps + b.Dumps, DumpFailures: a.DumpFailures + b.DumpFailures}
	for _, m := range []map[string]uint64{a.Fired, b.Fired} {
		for k, v := range m {
			sum.Fired[k] += v
		}
	}
	return sum
}

// flightArmed says whether the runner still runs (its pipe did not fail).
func (a *Agent) flightArmed() bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.flightArmedLocked()
}

func (a *Agent) flightArmedLocked() bool {
	fr := a.flight
	if fr == nil {
		return false
	}
	select {
	case <-fr.done:
		return false
	default:
		return true
	}
}

// Close disarms the flight triggers (the recorder and the profile stay: declared owners).
func (a *Agent) Close() { a.stopFlight() }

// FlightStats are the flight runner's counters and the triggers armed, for the metrics.
type FlightStats struct {
	flight.RunnerStats
	Armed    bool
	Triggers []string // the armed triggers' specs
}

// Flight returns the flight runners' counters (the stopped ones' included); ok is false when the
// profile has no recorder.
// A recorder whose triggers are not armed (no runner) has zero counters and Armed false: its
// ftctl_flight_armed is 0, not absent, for an alert to see.
func (a *Agent) Flight() (FlightStats, bool) {
	a.mu.Lock()
	fr, has, past := a.flight, hasFlight(a.prof), a.flightPast
	a.mu.Unlock()
	if fr == nil {
		return FlightStats{RunnerStats: addStats(past, flight.RunnerStats{})}, has
	}
	st := FlightStats{RunnerStats: addStats(past, fr.r.Stats()), Armed: a.flightArmed()}
	if arm := fr.r.Armed(); arm != nil {
		for _, t := range arm.State.Triggers {
			st.Triggers = append(st.Triggers, t.Spec)
		}
	}
	return st, true
}

func (a *Agent) lockFunc() func(context.Context) (func(), error) {
	return func(ctx context.Context) (func(), error) {
		l, err := a.lock(ctx)
		if err != nil {
			return nil, err
		}
		return func() { l.Unlock() }, nil
	}
}
