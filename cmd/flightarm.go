package cmd

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/coreos/go-systemd/v22/daemon"
	"github.com/spf13/cobra"

	"github.com/ftctl/ftctl/flight"
	"github.com/ftctl/ftctl/session"
	"github.com/ftctl/ftctl/tracefs"
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
	Latency  string        // --on-latency FUNC>DURATION
	Warn     bool          // --on-warn
	// File: -f PROFILE, the recorder started from it (applied to it when it runs), applied
	// again on SIGHUP; Stop: --stop-at-exit, the recorder stopped when arm ends.
	File string
	Stop bool
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
  --on-warn                        a kernel WARN: its "WARNING: CPU: ..." line, seen through the
                                   printk:console event (a root process writing such a line to
                                   /dev/kmsg fires it too).
Each trigger is rate-limited on its own: one that fires within --rate of its last dump makes
none (said on stderr), and is armed again after. After each dump the oldest of NAME's dumps in
DIR are removed until at most --keep are left and they hold at most --max-mb MiB together (the
newest is always kept). "armed" is said on stderr, and READY=1 sent to systemd (NOTIFY_SOCKET),
once triggers are awaited; 'ftctl flight status' shows them, what fired, and the dumps.

With -f PROFILE, arm starts the recorder from PROFILE (as 'flight start -f'), or applies PROFILE
to it when it runs, and SIGHUP applies PROFILE again through the engine, transactionally (a
refused profile leaves the recorder as it was, and arm armed); without -f, SIGHUP ends it. With
--stop-at-exit the recorder is stopped when arm ends (SIGINT, SIGTERM: packaging's systemd
unit). Otherwise the recorder goes on recording after arm ends, and whatever kills arm
(SIGKILL included) leaves it recording: 'flight stop' stops it, and 'ftctl reset' removes only
the dead arming process's instance.`

// NewCmdFlightArm builds `ftctl flight arm`.
func NewCmdFlightArm(g *Globals, runF func(context.Context, *FlightArmOptions) error) *cobra.Command {
	opts := &FlightArmOptions{G: g}
	var maxMB int64
	c := &cobra.Command{
		Use:   "arm NAME -d DIR [--on 'EVENT [if FILTER]'] [--on-latency FUNC>D] [--on-warn]",
		Short: "Dump a recorder's ring on SIGUSR1, an event, a latency, a WARN; rate-limited",
		Long:  flightArmLong,
		Example: `  sudo ftctl flight arm box -d . --keep 5 --rate 1m   # an alert: pkill -USR1 -f 'arm box'
  sudo ftctl flight arm box -d . --on 'sched:sched_process_exit if comm == "nginx"' --on-warn
  sudo ftctl flight arm box -d . --on-latency 'vfs_read>10ms' --rate 5m
  # what packaging's systemd unit runs: the recorder started from the profile, stopped at the end
  sudo ftctl flight arm slow -d . -f slowreads.yaml --stop-at-exit --on-warn`,
		Args: args(cobra.ExactArgs(1)),
		RunE: func(c *cobra.Command, a []string) error {
			opts.Name, opts.MaxBytes = a[0], maxMB<<20
			return runCmd(c, runF, flightArmRun, opts)
		},
	}
	f := c.Flags()
	f.StringVarP(&opts.Dir, "dir", "d", "", "write the dumps into `DIR` (yours, or root's; not writable by others)")
	f.IntVar(&opts.Keep, "keep", 10, "keep at most `N` dumps of the recorder in DIR (0: no limit by count)")
	f.Int64Var(&maxMB, "max-mb", 0, "keep at most `M` MiB of the recorder's dumps in DIR (0: no limit by size)")
	f.DurationVar(&opts.Rate, "rate", 10*time.Second, "dump at most once per `D` for each trigger")
	f.StringArrayVar(&opts.On, "on", nil, "dump when the event `'SYSTEM:EVENT [if FILTER]'` is recorded (repeatable)")
	f.StringVar(&opts.Latency, "on-latency", "", "dump when a call of FUNC takes DURATION or longer (`FUNC>DURATION`, e.g. vfs_read>10ms)")
	f.BoolVar(&opts.Warn, "on-warn", false, "dump on a kernel WARN")
	f.StringVarP(&opts.File, "file", "f", "", "start the recorder from the profile `FILE` (apply it when it runs); SIGHUP applies it again")
	f.BoolVar(&opts.Stop, "stop-at-exit", false, "stop the recorder when arm ends (SIGINT, SIGTERM)")
	return c
}

// triggers checks the options and parses the triggers, SIGUSR1's first.
func (opts *FlightArmOptions) triggers() ([]*flight.Trigger, error) {
	if err := session.CheckOwnerName(opts.Name); err != nil {
		return nil, InvalidInput(err)
	}
	if opts.Dir == "" || opts.Keep < 0 || opts.MaxBytes < 0 || opts.Rate < 0 {
		return nil, InvalidInput(errors.New("-d DIR is required, and --keep, --max-mb and --rate must not be negative"))
	}
	if st, err := os.Stat(opts.Dir); err != nil || !st.IsDir() {
		return nil, InvalidInput(fmt.Errorf("-d %s: not a directory", safe(opts.Dir)))
	}
	if opts.G.DryRun {
		return nil, InvalidInput(errors.New("flight arm waits for triggers and dumps then: 'ftctl --dry-run flight dump NAME -w FILE' shows what a dump writes"))
	}
	ts := []*flight.Trigger{flight.SignalTrigger()}
	for _, on := range opts.On {
		t, err := flight.ParseEventTrigger(on)
		if err != nil {
			return nil, InvalidInput(errors.New(safe(err.Error())))
		}
		ts = append(ts, t)
	}
	if opts.Latency != "" {
		t, err := flight.ParseLatencyTrigger(opts.Latency)
		if err != nil {
			return nil, InvalidInput(errors.New(safe(err.Error())))
		}
		ts = append(ts, t)
	}
	if opts.Warn {
		ts = append(ts, flight.WarnTrigger())
	}
	return ts, nil
}

func flightArmRun(ctx context.Context, opts *FlightArmOptions) (err error) {
	g := opts.G
	ts, err := opts.triggers()
	if err != nil {
		return err
	}
	fs, err := g.FS()
	if err != nil {
		return err
	}
	if opts.File != "" {
		if err := armApply(ctx, opts, false); err != nil {
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
	if opts.Latency != "" {
		fn, _, _ := strings.Cut(opts.Latency, ">")
		if err := checkLatencyFunc(g, fs.Top(), fn); err != nil {
			return err
		}
	}
	a, err := armSession(ctx, g, fs, opts, ts)
	if err != nil {
		return err
	}
	defer armDisarm(g, fs, a)
	return armLoop(ctx, opts, a)
}

// armSession sets the arming session up, under the lock.
func armSession(ctx context.Context, g *Globals, fs *tracefs.FS, opts *FlightArmOptions, ts []*flight.Trigger) (*flight.Armed, error) {
	_, lock, err := g.BeginWrite(ctx)
	if err != nil {
		return nil, err
	}
	defer lock.Unlock()
	st := flight.ArmState{PID: os.Getpid(), Since: time.Now().UTC(), Dir: opts.Dir, Rate: opts.Rate.String(),
		Keep: opts.Keep, MaxBytes: opts.MaxBytes, Triggers: ts}
	a, err := flight.Arm(context.WithoutCancel(ctx), fs, session.NewID(os.Getpid()), opts.Name, st, g.Notice)
	if errors.Is(err, flight.ErrTrigger) || errors.Is(err, flight.ErrNoRecorder) {
		return nil, InvalidInput(err)
	}
	if err != nil {
		return nil, sessionError(err)
	}
	return a, nil
}

// armDisarm tears the arming session down, under the lock.
func armDisarm(g *Globals, fs *tracefs.FS, a *flight.Armed) {
	l, err := fs.Lock(context.Background(), g.LockTimeout, func(h tracefs.Holder) {
		g.Notice("waiting for the tracefs lock held by %s to disarm (up to %v while it stays in the same hands)", h, g.LockTimeout)
	})
	if err == nil {
		defer l.Unlock()
	}
	for _, e := range a.Disarm() {
		fmt.Fprintf(g.Err, "ftctl: disarming: %v\n", e)
	}
}

// armLoop waits for the triggers and dumps, until ctx ends or the arming instance fails.
func armLoop(ctx context.Context, opts *FlightArmOptions, a *flight.Armed) error {
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
	lctx, cancel := context.WithCancel(ctx)
	defer cancel()
	if err := a.Begin(lctx); err != nil {
		return err
	}
	fired, failed := make(chan []*flight.Trigger), make(chan error, 1)
	var wg sync.WaitGroup
	wg.Go(func() { armWait(lctx, a, fired, failed) })
	defer wg.Wait()
	defer cancel()
	g.Notice("flight %s armed: SIGUSR1 (pid %d)%s dumps into %s", opts.Name, os.Getpid(), armedBy(a), safe(opts.Dir))
	sdNotify(g, daemon.SdNotifyReady)
	sig := a.State.Triggers[0]
	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case err := <-failed:
			return err
		case <-usr1:
			armFire(ctx, opts, a, []*flight.Trigger{sig})
		case ts := <-fired:
			armFire(ctx, opts, a, ts)
		case <-hup:
			armReload(ctx, opts)
		}
	}
}

// armWait hands what fired to fired until ctx ends; an error of the pipe goes to failed.
func armWait(ctx context.Context, a *flight.Armed, fired chan<- []*flight.Trigger, failed chan<- error) {
	for {
		ts, err := a.Next(ctx)
		if err != nil {
			if ctx.Err() == nil {
				failed <- err
			}
			return
		}
		select {
		case fired <- ts:
		case <-ctx.Done():
			return
		}
	}
}

// armedBy names the triggers besides SIGUSR1, for the "armed" notice.
func armedBy(a *flight.Armed) string {
	s := ""
	for _, t := range a.State.Triggers[1:] {
		s += ", " + safe(strconv.Quote(t.Spec))
	}
	return s
}

// armFire makes one dump for the triggers of ts that are not within --rate of their last.
func armFire(ctx context.Context, opts *FlightArmOptions, a *flight.Armed, ts []*flight.Trigger) {
	g := opts.G
	now := time.Now()
	var by []*flight.Trigger
	for _, t := range ts {
		if a.Fire(t, now, opts.Rate) {
			by = append(by, t)
		} else {
			g.Notice("flight %s: %s within --rate %v of its last dump: none made", opts.Name, safe(t.Spec), opts.Rate)
		}
	}
	if len(by) == 0 {
		return
	}
	if err := armDump(ctx, opts, now, by[0].Spec); err != nil {
		g.Notice("flight %s: the dump failed: %v", opts.Name, err) // armed still: the next trigger tries again
		return
	}
	for _, t := range by {
		if err := a.Dumped(t); err != nil {
			g.Notice("flight %s: saving the arming state: %v", opts.Name, err)
		}
	}
}

// armDump makes one triggered dump and rotates the recorder's dumps.
func armDump(ctx context.Context, opts *FlightArmOptions, at time.Time, by string) error {
	g := opts.G
	fs, lock, err := g.BeginWrite(ctx)
	if err != nil {
		return err
	}
	out := flight.DumpPath(opts.Dir, opts.Name, at)
	st, err := flight.Dump(ctx, fs, opts.Name, out, fileOwners()...)
	lock.Unlock()
	if err != nil {
		return err
	}
	g.Notice("flight %s: dumped %d events (%d KiB, %d overwritten) into %s (%s)", opts.Name, st.Events, st.Bytes>>10, st.Lost, safe(out), safe(by))
	removed, err := flight.Rotate(opts.Dir, opts.Name, opts.Keep, opts.MaxBytes)
	for _, r := range removed {
		g.Notice("flight %s: removed the old dump %s", opts.Name, safe(r))
	}
	return err
}

// armApply starts the recorder from -f PROFILE, or applies it to the running recorder
// (again: SIGHUP), through the engine: a refused profile changes nothing.
func armApply(ctx context.Context, opts *FlightArmOptions, again bool) error {
	g := opts.G
	p, err := (&FlightStartOptions{G: g, Name: opts.Name, File: opts.File}).profileOf()
	if err != nil {
		return err
	}
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

// armReload is SIGHUP's: the profile applied again, systemd told (RELOADING=1, READY=1).
func armReload(ctx context.Context, opts *FlightArmOptions) {
	g := opts.G
	sdNotify(g, daemon.SdNotifyReloading)
	if err := armApply(ctx, opts, true); err != nil {
		g.Notice("flight %s: SIGHUP: %s not applied, the recorder is as it was: %v", opts.Name, safe(opts.File), err)
	}
	sdNotify(g, daemon.SdNotifyReady)
}

// sdNotify tells systemd the service's state (sd_notify(3): a datagram to NOTIFY_SOCKET), when
// it started ftctl with one; a failure is said, and changes nothing else.
func sdNotify(g *Globals, state string) {
	if _, err := daemon.SdNotify(false, state); err != nil {
		g.Notice("telling systemd %s: %v", state, err)
	}
}
