package cmd

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/ftctl/ftctl/flight"
	"github.com/ftctl/ftctl/profile"
	"github.com/ftctl/ftctl/session"
	"github.com/ftctl/ftctl/stream"
)

// NewCmdFlight builds `ftctl flight start|status|dump|stop`.
func NewCmdFlight(g *Globals) *cobra.Command {
	c := &cobra.Command{
		Use:   "flight",
		Short: "A flight recorder: a ring that records before anyone looks, dumped on demand",
		Long: `A flight recorder keeps the last minutes of tracing in an overwrite ring, in an instance of
its own that no process holds: it records from 'flight start' until 'flight stop', whatever
happens to the shell that started it, and 'ftctl reset' leaves it alone. 'flight dump' writes
what the ring holds into a trace.dat (for 'ftctl report', trace-cmd report and KernelShark)
without stopping it: the kernel's snapshot buffer takes the ring's content while recording goes
on into the other buffer. The event formats and kernel symbols a dump needs are captured when
the recorder starts, so that a dump does not depend on the kernel still having them.

A recorder is a profile applied under the recorder's name (docs/profiles.md): its setup comes
from -f PROFILE, or from -e and --function for the simple cases.`,
		Args: args(cobra.NoArgs),
	}
	c.AddCommand(NewCmdFlightStart(g, nil), NewCmdFlightStatus(g, nil), NewCmdFlightDump(g, nil), NewCmdFlightArm(g, nil), NewCmdFlightStop(g, nil))
	c.AddCommand(flightBootCommands(g)...)
	return c
}

// FlightStartOptions are the inputs of `ftctl flight start`.
type FlightStartOptions struct {
	G         *Globals
	Name      string
	File      string   // -f PROFILE
	Events    []string // -e
	Functions []string // --function
	BufferKB  int      // --buffer-kb
}

// NewCmdFlightStart builds `ftctl flight start`.
func NewCmdFlightStart(g *Globals, runF func(context.Context, *FlightStartOptions) error) *cobra.Command {
	opts := &FlightStartOptions{G: g}
	c := &cobra.Command{
		Use:   "start NAME [-f PROFILE | -e EVENT... [--function PATTERN...]] [--buffer-kb N]",
		Short: "Start a flight recorder that records with no process",
		Long: `Start the flight recorder NAME (1 to 32 lower-case letters and digits): its instance
ftctl-owned-NAME records into an overwrite ring (the oldest events give way to the newest) of
--buffer-kb KiB per CPU, with the setup of -f PROFILE (its metadata.name is replaced by NAME) or
of -e EVENT (SYSTEM:EVENT or SYSTEM, repeatable) and --function PATTERN (the function tracer
on those functions). The snapshot buffer a dump swaps with is allocated now (as much memory again
as the ring), and the event formats and kernel symbols a dump needs are captured. The command
returns once the recorder records; no process stays.`,
		Example: `  sudo ftctl flight start box -e sched:sched_process_exit -e signal:signal_generate --buffer-kb 4096
  sudo ftctl flight start slow -f slowreads.yaml
  sudo ftctl --dry-run flight start box -e sched`,
		Args:        args(cobra.ExactArgs(1)),
		Annotations: map[string]string{AnnotationJSON: `{"profile": "box", "instance": "ftctl-owned-box", "action": "created", "changed": true, "changes": [...]}: as apply's`},
		RunE: func(c *cobra.Command, a []string) error {
			opts.Name = a[0]
			return runCmd(c, runF, flightStartRun, opts)
		},
	}
	f := c.Flags()
	f.StringVarP(&opts.File, "file", "f", "", "the recorder's setup from the profile `FILE` (YAML or JSON; - reads stdin)")
	f.StringArrayVarP(&opts.Events, "event", "e", nil, "record `EVENT` (SYSTEM:EVENT or SYSTEM; repeatable)")
	f.StringArrayVar(&opts.Functions, "function", nil, "record the calls of the functions `PATTERN` selects (the function tracer; repeatable)")
	f.IntVar(&opts.BufferKB, "buffer-kb", 0, "the ring's size per CPU in `KiB` (default: the profile's, else the kernel's)")
	return c
}

// profileOf is the recorder's profile: -f's, or one made of -e and --function.
func (o *FlightStartOptions) profileOf() (*profile.Profile, error) {
	if err := session.CheckOwnerName(o.Name); err != nil {
		return nil, InvalidInput(err)
	}
	var p *profile.Profile
	switch {
	case o.File != "" && len(o.Events)+len(o.Functions) > 0:
		return nil, InvalidInput(errors.New("-f PROFILE holds the setup: -e and --function are for a recorder without one"))
	case o.File != "":
		var err error
		if p, err = loadProfile(o.G, o.File); err != nil {
			return nil, err
		}
	case len(o.Events)+len(o.Functions) == 0:
		return nil, InvalidInput(errors.New("a recorder records something: give -f PROFILE, or -e EVENT and/or --function PATTERN"))
	default:
		p = &profile.Profile{APIVersion: profile.APIVersion, Kind: profile.Kind}
		p.Spec.Functions.Filter = o.Functions
		for _, e := range o.Events {
			p.Spec.Events = append(p.Spec.Events, profile.Event{Name: e})
		}
	}
	p.Metadata.Name = o.Name
	if o.BufferKB != 0 {
		p.Spec.Instance.BufferKB = o.BufferKB
	}
	if err := p.Validate(); err != nil {
		return nil, InvalidInput(err)
	}
	return p, nil
}

func flightStartRun(ctx context.Context, opts *FlightStartOptions) error {
	g := opts.G
	p, err := opts.profileOf()
	if err != nil {
		return err
	}
	fs, lock, err := g.BeginWrite(ctx)
	if err != nil {
		return err
	}
	defer lock.Unlock()
	res, err := flight.Start(ctx, fs, p, g.Notice)
	if err != nil {
		return err
	}
	if g.JSON() {
		return writeJSON(g.Out, res)
	}
	if !g.DryRun {
		g.Notice("flight %s records in instance %s ('ftctl flight dump %s -o FILE' writes what it holds)", p.Metadata.Name, p.InstanceName(), p.Metadata.Name)
	}
	return nil
}

// FlightNameOptions are the inputs of `ftctl flight status|stop`.
type FlightNameOptions struct {
	G    *Globals
	Name string
}

// NewCmdFlightStatus builds `ftctl flight status`.
func NewCmdFlightStatus(g *Globals, runF func(context.Context, *FlightNameOptions) error) *cobra.Command {
	opts := &FlightNameOptions{G: g}
	return &cobra.Command{
		Use:   "status [NAME]",
		Short: "Show the flight recorders: ring size and fill, overwritten events per CPU",
		Example: `  sudo ftctl flight status
  sudo ftctl flight status box -o json`,
		Args: args(cobra.MaximumNArgs(1)),
		Annotations: map[string]string{AnnotationJSON: `[{"name": "box", "instance": "ftctl-owned-box", "state": "applied", "since": "2026-11-27T22:40:00Z", ` +
			`"buffer_kb": 4096, "tracing_on": true, "snapshot": true, "cpus": [{"cpu": 0, "entries": 1200, "overrun": 0, "commit_overrun": 0, ` +
			`"dropped_events": 0, "read_events": 0, "bytes": 65536}], "events": ["sched:sched_process_exit"]}]: overrun counts the events the ring overwrote`},
		RunE: func(c *cobra.Command, a []string) error {
			if len(a) == 1 {
				opts.Name = a[0]
			}
			return runCmd(c, runF, flightStatusRun, opts)
		},
	}
}

func flightStatusRun(_ context.Context, opts *FlightNameOptions) error {
	g := opts.G
	fs, err := g.FS()
	if err != nil {
		return err
	}
	sts, err := flight.Statuses(fs, opts.Name)
	if errors.Is(err, flight.ErrNoRecorder) {
		return InvalidInput(err)
	}
	if err != nil {
		return err
	}
	if g.JSON() {
		return writeJSON(g.Out, sts)
	}
	if len(sts) == 0 {
		g.Notice("no flight recorder ('ftctl flight start NAME' starts one)")
	}
	for _, s := range sts {
		fmt.Fprintf(g.Out, "%s: %s, %s since %s, ring %d KiB per CPU: %s\n", s.Name, s.Instance, s.State, s.Since, s.BufferKB, s.Summary())
		for _, c := range s.CPUs {
			fmt.Fprintf(g.Out, "  cpu%d: %d events, %d overwritten, %d KiB\n", c.CPU, c.Entries, c.Overrun, c.BytesInBuffer>>10)
		}
	}
	return nil
}

// FlightDumpOptions are the inputs of `ftctl flight dump`.
type FlightDumpOptions struct {
	G    *Globals
	Name string
	File string // -o
}

// NewCmdFlightDump builds `ftctl flight dump`.
func NewCmdFlightDump(g *Globals, runF func(context.Context, *FlightDumpOptions) error) *cobra.Command {
	opts := &FlightDumpOptions{G: g}
	c := &cobra.Command{
		Use:   "dump NAME -o FILE",
		Short: "Write what a flight recorder's ring holds into a trace.dat, without stopping it",
		Long: `Write the ring of the flight recorder NAME into FILE, a trace.dat that 'ftctl report',
trace-cmd report and KernelShark read. The recorder goes on recording: the ring's content is
swapped into the kernel's snapshot buffer and read from there. FILE is made 0600 (it holds kernel
addresses), whole or not at all.`,
		Example: `  sudo ftctl flight dump box -o incident.dat && ftctl report incident.dat`,
		Args:    args(cobra.ExactArgs(1)),
		RunE: func(c *cobra.Command, a []string) error {
			opts.Name = a[0]
			return runCmd(c, runF, flightDumpRun, opts)
		},
	}
	c.Flags().StringVarP(&opts.File, "output", "o", "", "write the dump to `FILE` (a trace.dat)")
	registerFlagCompletion(c, "output", cobra.FixedCompletions(nil, cobra.ShellCompDirectiveDefault))
	return c
}

func flightDumpRun(ctx context.Context, opts *FlightDumpOptions) error {
	g := opts.G
	if err := checkRecordName(opts.File); err != nil {
		return err
	}
	fs, lock, err := g.BeginWrite(ctx)
	if err != nil {
		return err
	}
	defer lock.Unlock()
	st, err := flight.Dump(ctx, fs, opts.Name, opts.File, fileOwners()...)
	switch {
	case errors.Is(err, stream.ErrRecordDir):
		return InvalidInput(fmt.Errorf("-o %s: %s", safe(opts.File), safe(err.Error())))
	case errors.Is(err, flight.ErrNoRecorder):
		return InvalidInput(err)
	case err != nil || st == nil: // (a dry run printed its plan)
		return err
	}
	if !g.DryRun {
		g.Notice("flight %s: %d events (%d KiB) written to %s, %d lost to overwriting%s", opts.Name, st.Events, st.Bytes>>10, safe(opts.File), st.Lost,
			map[bool]string{true: "", false: "; no snapshot buffer: the ring was read, and is empty now"}[st.Snapshot])
	}
	return nil
}

// NewCmdFlightStop builds `ftctl flight stop`.
func NewCmdFlightStop(g *Globals, runF func(context.Context, *FlightNameOptions) error) *cobra.Command {
	opts := &FlightNameOptions{G: g}
	return &cobra.Command{
		Use:     "stop NAME",
		Short:   "Stop a flight recorder and remove exactly what start made",
		Example: `  sudo ftctl flight stop box`,
		Args:    args(cobra.ExactArgs(1)),
		RunE: func(c *cobra.Command, a []string) error {
			opts.Name = a[0]
			return runCmd(c, runF, flightStopRun, opts)
		},
	}
}

func flightStopRun(ctx context.Context, opts *FlightNameOptions) error {
	g := opts.G
	if err := session.CheckOwnerName(opts.Name); err != nil {
		return InvalidInput(err)
	}
	fs, lock, err := g.BeginWrite(ctx)
	if err != nil {
		return err
	}
	defer lock.Unlock()
	if _, err := flight.Stop(fs, opts.Name); err != nil {
		if errors.Is(err, flight.ErrNoRecorder) {
			return InvalidInput(err)
		}
		return err
	}
	if !g.DryRun {
		g.Notice("flight %s stopped and removed", opts.Name)
	}
	return nil
}

// FlightArmOptions are the inputs of `ftctl flight arm`.
type FlightArmOptions struct {
	G        *Globals
	Name     string
	Dir      string        // -d: where the dumps go
	Keep     int           // --keep
	MaxBytes int64         // --max-mb, in bytes
	Rate     time.Duration // --rate: at most one dump per
}

// NewCmdFlightArm builds `ftctl flight arm`.
func NewCmdFlightArm(g *Globals, runF func(context.Context, *FlightArmOptions) error) *cobra.Command {
	opts := &FlightArmOptions{G: g}
	var maxMB int64
	c := &cobra.Command{
		Use:   "arm NAME -d DIR [--keep N] [--max-mb M] [--rate D]",
		Short: "Dump a flight recorder's ring on SIGUSR1, rate-limited, the dumps rotated",
		Long: `Wait for SIGUSR1 and dump the ring of the flight recorder NAME into DIR at each one, as
NAME-TIME.dat (UTC, sortable), without stopping it: a dump holds the minutes before the signal.
A signal within --rate of the last dump is ignored (said on stderr), so that a storm of alerts
makes one dump. After each dump the oldest of NAME's dumps in DIR are removed until at most
--keep are left and they hold at most --max-mb MiB together (the newest is always kept).
"armed" is said on stderr once signals are awaited. SIGINT or SIGTERM ends it (the recorder goes
on recording: 'flight stop' stops it).`,
		Example: `  sudo ftctl flight arm box -d . --keep 5 --rate 1m   # an alert: pkill -USR1 -f 'arm box'`,
		Args:    args(cobra.ExactArgs(1)),
		RunE: func(c *cobra.Command, a []string) error {
			opts.Name, opts.MaxBytes = a[0], maxMB<<20
			return runCmd(c, runF, flightArmRun, opts)
		},
	}
	f := c.Flags()
	f.StringVarP(&opts.Dir, "dir", "d", "", "write the dumps into `DIR` (yours, or root's; not writable by others)")
	f.IntVar(&opts.Keep, "keep", 10, "keep at most `N` dumps of the recorder in DIR (0: no limit by count)")
	f.Int64Var(&maxMB, "max-mb", 0, "keep at most `M` MiB of the recorder's dumps in DIR (0: no limit by size)")
	f.DurationVar(&opts.Rate, "rate", 10*time.Second, "dump at most once per `D`")
	return c
}

func flightArmRun(ctx context.Context, opts *FlightArmOptions) error {
	g := opts.G
	if err := session.CheckOwnerName(opts.Name); err != nil {
		return InvalidInput(err)
	}
	if opts.Dir == "" || opts.Keep < 0 || opts.MaxBytes < 0 || opts.Rate < 0 {
		return InvalidInput(errors.New("-d DIR is required, and --keep, --max-mb and --rate must not be negative"))
	}
	if st, err := os.Stat(opts.Dir); err != nil || !st.IsDir() {
		return InvalidInput(fmt.Errorf("-d %s: not a directory", safe(opts.Dir)))
	}
	if g.DryRun {
		return InvalidInput(errors.New("flight arm waits for signals and dumps then: 'ftctl --dry-run flight dump NAME -o FILE' shows what a dump writes"))
	}
	fs, err := g.FS()
	if err != nil {
		return err
	}
	if _, err := flight.Statuses(fs, opts.Name); err != nil {
		return InvalidInput(err)
	}
	usr1 := make(chan os.Signal, 1)
	signal.Notify(usr1, syscall.SIGUSR1)
	defer signal.Stop(usr1)
	g.Notice("flight %s armed: SIGUSR1 (pid %d) dumps into %s", opts.Name, os.Getpid(), safe(opts.Dir))
	var last time.Time
	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-usr1:
		}
		if !last.IsZero() && time.Since(last) < opts.Rate {
			g.Notice("flight %s: SIGUSR1 within --rate %v of the last dump: none made", opts.Name, opts.Rate)
			continue
		}
		last = time.Now()
		if err := armDump(ctx, opts, last); err != nil {
			g.Notice("flight %s: the dump failed: %v", opts.Name, err) // armed still: the next signal tries again
		}
	}
}

// armDump makes one triggered dump and rotates the recorder's dumps.
func armDump(ctx context.Context, opts *FlightArmOptions, at time.Time) error {
	g := opts.G
	fs, lock, err := g.BeginWrite(ctx)
	if err != nil {
		return err
	}
	out := filepath.Join(opts.Dir, flight.DumpName(opts.Name, at))
	st, err := flight.Dump(ctx, fs, opts.Name, out, fileOwners()...)
	lock.Unlock()
	if err != nil {
		return err
	}
	g.Notice("flight %s: dumped %d events (%d KiB, %d overwritten) into %s", opts.Name, st.Events, st.Bytes>>10, st.Lost, safe(out))
	removed, err := flight.Rotate(opts.Dir, opts.Name, opts.Keep, opts.MaxBytes)
	for _, r := range removed {
		g.Notice("flight %s: removed the old dump %s", opts.Name, safe(r))
	}
	return err
}
