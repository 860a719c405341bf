package cmd

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"strconv"
	"syscall"
	"time"

	"github.com/coreos/go-systemd/v22/daemon"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/ftctl/ftctl/flight"
	"github.com/ftctl/ftctl/profile"
	"github.com/ftctl/ftctl/session"
)

// FlightArmOptions are the inputs of `ftctl flight arm`.
type FlightArmOptions struct {
	G        *Globals
	Name     string
	Dir      string        // -d: where the dumps go
	Keep     int           // --keep
	MaxBytes int64         // --max-mb, in bytes
	Rate     time.Duration // --rate: at most one dump per, per trigger
	On       []string      // --on SYSTEM:EVENT [if FILTER]
	Latency  string        // --on-latency FUNC>DURATION or FUNC>max
	Warn     bool          // --on-warn
	// File: -f PROFILE, the recorder started from it (applied to it when it runs), applied
	// again on SIGHUP; Stop: --stop-at-exit, the recorder stopped when arm ends.
	File string
	Stop bool
	// Set names the flags given, which override the profile's spec.flight values.
	Set map[string]bool
}

const flightArmLong = `Dump the ring of the flight recorder NAME into DIR, as NAME-TIME.dat (UTC to the millisecond,
sortable; a second dump in the same millisecond is named a millisecond later), without
stopping it, whenever a trigger fires: a dump holds the minutes before the trigger.
SIGUSR1 is always a trigger; the others are events the kernel matches, in an instance of the
arming process's own (ftctl-PID-ID), where they are recorded with their filters: the process
sleeps in poll(2) on that instance's trace_pipe and the kernel wakes it only when one matched.
  --on 'SYSTEM:EVENT [if FILTER]'  an event (repeatable), e.g. a process's exit or an oom event.
  --on-latency FUNC>DURATION       a call of FUNC that takes DURATION or longer: an entry and a
                                   return probe and hist triggers compute each call's duration
                                   into a synthetic event (as 'ftctl latency' does), whose filter
                                   keeps the slow ones.
  --on-latency FUNC>max            a call of FUNC that takes longer than every call of it since
                                   arming (the first call is one): the same, and the kernel's
                                   hist onmax() sends each new maximum to a synthetic event.
  --on-warn                        a kernel WARN: its "WARNING: CPU: ..." line, seen through the
                                   printk:console event (a root process writing such a line to
                                   /dev/kmsg fires it too).
Each trigger is rate-limited on its own: one that fires within --rate (or a profile trigger's
own rate) of its last dump makes none (said on stderr), and is armed again after. After each
dump the oldest of NAME's dumps in DIR are removed until at most --keep are left and they hold
at most --max-mb MiB together (the newest is always kept). "armed" is said on stderr, "ready"
written to --ready-fd's descriptor and READY=1 sent to systemd (NOTIFY_SOCKET) once triggers
are awaited; 'ftctl flight status' shows them, what fired, and the dumps.

With -f PROFILE, arm starts the recorder from PROFILE (as 'flight start -f'), or applies PROFILE
to it when it runs, and arms the triggers of its spec.flight section (docs/profiles.md) with its
dir, keep, maxMB and rate: -d, --keep, --max-mb and --rate, when given, override the profile's
values; --on, --on-latency and --on-warn add triggers to the profile's. SIGHUP reads PROFILE
again, arms its triggers, then applies it through the engine, transactionally (a profile that
cannot be read, triggers the kernel refuses or a refused profile leave the recorder and its
triggers as they were, and arm armed); without -f, SIGHUP ends it. With
--stop-at-exit the recorder is stopped when arm ends (SIGINT, SIGTERM: packaging's systemd
unit). Otherwise the recorder goes on recording after arm ends, and whatever kills arm
(SIGKILL included) leaves it recording: 'flight stop' stops it, and 'ftctl reset' removes only
the dead arming process's instance.`

// NewCmdFlightArm builds `ftctl flight arm`.
func NewCmdFlightArm(g *Globals, runF func(context.Context, *FlightArmOptions) error) *cobra.Command {
	opts := &FlightArmOptions{G: g}
	var maxMB int64
	c := &cobra.Command{
		Use:   "arm NAME {-d DIR | -f PROFILE} [--on 'EVENT [if F]'] [--on-latency F>D]",
		Short: "Dump a recorder's ring on SIGUSR1, an event, a latency, a WARN; rate-limited",
		Long:  flightArmLong,
		Example: `  sudo ftctl flight arm box -d . --keep 5 --rate 1m   # an alert: pkill -USR1 -f 'arm box'
  sudo ftctl flight arm box -d . --on 'sched:sched_process_exit if comm == "nginx"' --on-warn
  sudo ftctl flight arm box -d . --on-latency 'vfs_read>10ms' --rate 5m
  sudo ftctl flight arm box -d . --on-latency 'vfs_read>max' --rate 1m   # each slowest read yet
  # what packaging's systemd unit runs: the recorder started from the profile, stopped at the end
  sudo ftctl flight arm slow -d . -f slowreads.yaml --stop-at-exit --on-warn`,
		Args: args(cobra.ExactArgs(1)),
		RunE: func(c *cobra.Command, a []string) error {
			opts.Name, opts.MaxBytes = a[0], maxMB<<20
			opts.Set = map[string]bool{}
			c.Flags().Visit(func(f *pflag.Flag) { opts.Set[f.Name] = true })
			return runCmd(c, runF, flightArmRun, opts)
		},
	}
	f := c.Flags()
	f.StringVarP(&opts.Dir, "dir", "d", "", "write the dumps into `DIR` (yours, or root's; not writable by others; overrides spec.flight.dir)")
	f.IntVar(&opts.Keep, "keep", 10, "keep at most `N` dumps of the recorder in DIR (0: no limit by count; overrides spec.flight.keep)")
	f.Int64Var(&maxMB, "max-mb", 0, "keep at most `M` MiB of the recorder's dumps in DIR (0: no limit by size; overrides spec.flight.maxMB)")
	f.DurationVar(&opts.Rate, "rate", 10*time.Second, "dump at most once per `D` for each trigger (overrides spec.flight.rate)")
	f.StringArrayVar(&opts.On, "on", nil, "dump when the event `'SYSTEM:EVENT [if FILTER]'` is recorded (repeatable; added to the profile's triggers)")
	f.StringVar(&opts.Latency, "on-latency", "", "dump when a call of FUNC takes DURATION or longer (`FUNC>DURATION`, e.g. vfs_read>10ms), or a new maximum (FUNC>max)")
	f.BoolVar(&opts.Warn, "on-warn", false, "dump on a kernel WARN")
	f.StringVarP(&opts.File, "file", "f", "", "start the recorder from the profile `FILE` (apply it when it runs) and arm its spec.flight triggers; SIGHUP applies and re-arms it")
	f.BoolVar(&opts.Stop, "stop-at-exit", false, "stop the recorder when arm ends (SIGINT, SIGTERM)")
	registerReadyFD(c, g)
	return c
}

// config is what the runner arms: the profile's spec.flight (p may be nil or have none),
// the flags given overriding its dir, keep, max-mb and rate, the trigger flags added to its
// triggers. SIGUSR1's trigger is first.
func (opts *FlightArmOptions) config(p *profile.Profile) (flight.Config, error) {
	cfg := flight.Config{Dir: opts.Dir, Keep: opts.Keep, MaxBytes: opts.MaxBytes, Rate: opts.Rate, Triggers: []*flight.Trigger{flight.SignalTrigger()}}
	if p != nil && p.Spec.Flight != nil {
		pc, err := flight.ConfigOf(p.Spec.Flight)
		if err != nil {
			return cfg, InvalidInput(err)
		}
		for flag, set := range map[string]func(){"dir": func() { cfg.Dir = pc.Dir }, "keep": func() { cfg.Keep = pc.Keep },
			"max-mb": func() { cfg.MaxBytes = pc.MaxBytes }, "rate": func() { cfg.Rate = pc.Rate }} {
			if !opts.Set[flag] {
				set()
			}
		}
		cfg.Triggers = pc.Triggers
	}
	if cfg.Dir == "" || cfg.Keep < 0 || cfg.MaxBytes < 0 || cfg.Rate < 0 {
		return cfg, InvalidInput(errors.New("-d DIR (or the profile's spec.flight.dir) is required, and --keep, --max-mb and --rate must not be negative"))
	}
	if st, err := os.Stat(cfg.Dir); err != nil || !st.IsDir() {
		return cfg, InvalidInput(fmt.Errorf("dump directory %s: not a directory", safe(cfg.Dir)))
	}
	parsers := []struct {
		specs []string
		parse func(string) (*flight.Trigger, error)
	}{{opts.On, flight.ParseEventTrigger}, {nonEmpty(opts.Latency), flight.ParseLatencyTrigger}}
	for _, ps := range parsers {
		for _, s := range ps.specs {
			t, err := ps.parse(s)
			if err != nil {
				return cfg, InvalidInput(errors.New(safe(err.Error())))
			}
			cfg.Triggers = append(cfg.Triggers, t)
		}
	}
	if opts.Warn {
		cfg.Triggers = append(cfg.Triggers, flight.WarnTrigger())
	}
	return cfg, nil
}

// nonEmpty is s as a list: none when empty.
func nonEmpty(s string) []string {
	if s == "" {
		return nil
	}
	return []string{s}
}

// profile is -f's profile, nil without -f.
func (opts *FlightArmOptions) profile() (*profile.Profile, error) {
	if opts.File == "" {
		return nil, nil
	}
	return (&FlightStartOptions{G: opts.G, Name: opts.Name, File: opts.File}).profileOf()
}

func flightArmRun(ctx context.Context, opts *FlightArmOptions) (err error) {
	g := opts.G
	if err := session.CheckOwnerName(opts.Name); err != nil {
		return InvalidInput(err)
	}
	if g.DryRun {
		return InvalidInput(errors.New("flight arm waits for triggers and dumps then: 'ftctl --dry-run flight dump NAME -w FILE' shows what a dump writes"))
	}
	p, err := opts.profile()
	if err != nil {
		return err
	}
	cfg, err := opts.config(p)
	if err != nil {
		return err
	}
	fs, err := g.FS()
	if err != nil {
		return err
	}
	if p != nil {
		if err := armApply(ctx, opts, p, false); err != nil {
			return err
		}
	}
	if opts.Stop {
		defer func() {
			err = errors.Join(err, flightStopRun(context.WithoutCancel(ctx), &FlightNameOptions{G: g, Name: opts.Name}))
		}()
	}
	if _, err := flight.Statuses(fs, opts.Name); err != nil {
		return InvalidInput(err)
	}
	r := flight.NewRunner(fs, opts.Name, armLock(g), g.Notice)
	r.Owners = fileOwners()
	if err := r.Rearm(ctx, cfg, nil); err != nil {
		return armError(err)
	}
	defer r.Disarm()
	defer sdNotify(g, daemon.SdNotifyStopping)
	return armLoop(ctx, opts, r)
}

// armError is an arming failure's exit: a trigger refused or no recorder is invalid input.
func armError(err error) error {
	if errors.Is(err, flight.ErrTrigger) || errors.Is(err, flight.ErrNoRecorder) {
		return InvalidInput(err)
	}
	return sessionError(err)
}

// armLock takes the tracefs lock for the runner, as every write command does.
func armLock(g *Globals) func(context.Context) (func(), error) {
	return func(ctx context.Context) (func(), error) {
		_, l, err := g.BeginWrite(ctx)
		if err != nil {
			return nil, err
		}
		return func() { l.Unlock() }, nil
	}
}

// armLoop runs the runner until ctx ends or its arming session fails: SIGUSR1 fires its
// trigger, SIGHUP (with -f) applies the profile again and re-arms its triggers.
func armLoop(ctx context.Context, opts *FlightArmOptions, r *flight.Runner) error {
	g := opts.G
	usr1 := make(chan os.Signal, 1)
	signal.Notify(usr1, syscall.SIGUSR1)
	defer signal.Stop(usr1)
	var hup <-chan struct{}
	if opts.File != "" { // SIGHUP applies the profile again, instead of ending arm
		var release func()
		hup, release = claimSIGHUP()
		defer release()
	}
	rctx, cancel := context.WithCancel(ctx)
	defer cancel()
	sig, done := make(chan struct{}, 1), make(chan error, 1)
	go func() { done <- r.Run(rctx, sig) }()
	defer func() { cancel(); <-done }()
	g.Notice("flight %s armed: SIGUSR1 (pid %d)%s dumps into %s", opts.Name, os.Getpid(), armedBy(r.Armed()), safe(r.Armed().State.Dir))
	g.writeReady()
	sdNotify(g, daemon.SdNotifyReady)
	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case err := <-done:
			done <- err // for the deferred wait
			return err
		case <-usr1:
			select {
			case sig <- struct{}{}:
			default:
			}
		case <-hup:
			armReload(ctx, opts, r)
		}
	}
}

// armedBy names the triggers besides SIGUSR1, for the "armed" notice.
func armedBy(a *flight.Armed) string {
	s := ""
	for _, t := range a.State.Triggers {
		if t.Kind != flight.KindSignal {
			s += ", " + safe(strconv.Quote(t.Spec))
		}
	}
	return s
}

// armApply starts the recorder from -f's profile p, or applies p to the running recorder
// (again: SIGHUP), through the engine: a refused profile changes nothing.
func armApply(ctx context.Context, opts *FlightArmOptions, p *profile.Profile, again bool) error {
	g := opts.G
	fs, lock, err := g.BeginWrite(ctx)
	if err != nil {
		return err
	}
	defer lock.Unlock()
	if _, err := session.ReadOwner(fs, opts.Name); errors.Is(err, session.ErrNoOwner) && !again {
		_, err = flight.Start(ctx, fs, p, g.Notice)
		return err
	}
	res, err := flight.Reapply(ctx, fs, p, g.Notice)
	if err != nil {
		return err
	}
	g.Notice("flight %s: %s applied: %s (%s)", opts.Name, safe(opts.File), res.Action, plural(len(res.Changes), "change"))
	return nil
}

// armReload is SIGHUP's: the profile read again, its triggers armed in a new arming session,
// then the profile applied; if either fails the recorder and its triggers are as they were.
// systemd is told (RELOADING=1, READY=1).
func armReload(ctx context.Context, opts *FlightArmOptions, r *flight.Runner) {
	g := opts.G
	sdNotify(g, daemon.SdNotifyReloading)
	defer sdNotify(g, daemon.SdNotifyReady)
	p, err := opts.profile()
	var cfg flight.Config
	if err == nil {
		cfg, err = opts.config(p)
	}
	if err == nil {
		err = r.Rearm(ctx, cfg, func() error { return armApply(ctx, opts, p, true) })
	}
	if err != nil {
		g.Notice("flight %s: SIGHUP: %s not applied, the recorder and its triggers are as they were: %v", opts.Name, safe(opts.File), err)
		return
	}
	g.Notice("flight %s re-armed: SIGUSR1%s", opts.Name, armedBy(r.Armed()))
}

// sdNotify tells systemd the service's state (sd_notify(3): a datagram to NOTIFY_SOCKET), when
// it started ftctl with one; a failure is said, and changes nothing else.
func sdNotify(g *Globals, state string) {
	if _, err := daemon.SdNotify(false, state); err != nil {
		g.Notice("telling systemd %s: %v", state, err)
	}
}
