package cmd

import (
	"context"
	"errors"
	"fmt"
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
returns once the recorder records; no process stays. A profile's spec.flight section (its
triggers, dump directory, rotation and rate limit) is checked here and armed by 'ftctl flight
arm NAME -f PROFILE' or 'ftctl agent -f PROFILE', not by start.`,
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
	if ok, err := g.printDoc(applyFormat, res); ok {
		return err
	}
	if !g.DryRun {
		g.Notice("flight %s records in instance %s ('ftctl flight dump %s -w FILE' writes what it holds)", p.Metadata.Name, p.InstanceName(), p.Metadata.Name)
	}
	if f := p.Spec.Flight; f != nil && !g.DryRun {
		g.Notice("flight %s: the profile declares %s into %s: 'ftctl flight arm %s -f FILE' or 'ftctl agent -f FILE' arms them",
			p.Metadata.Name, plural(len(f.Triggers), "flight trigger"), safe(f.Dir), p.Metadata.Name)
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
		Short: "Show the flight recorders: ring fill, overruns per CPU, triggers, dumps",
		Example: `  sudo ftctl flight status
  sudo ftctl flight status box -o json`,
		Args: args(cobra.MaximumNArgs(1)),
		Annotations: map[string]string{AnnotationJSON: `[{"name": "box", "instance": "ftctl-owned-box", "state": "applied", "since": "2026-11-27T22:40:00Z", ` +
			`"buffer_kb": 4096, "tracing_on": true, "snapshot": true, "cpus": [{"cpu": 0, "entries": 1200, "overrun": 0, "commit_overrun": 0, ` +
			`"dropped_events": 0, "read_events": 0, "bytes": 65536}], "fill_percent": 1.6, "events": ["sched:sched_process_exit"], ` +
			`"arm": {"pid": 4242, "instance": "ftctl-4242-1a2b3c", "since": "2026-11-27T22:41:00Z", "dir": "/var/lib/ftctl/flight", "rate": "10s", "keep": 10, "max_bytes": 0, ` +
			`"triggers": [{"kind": "signal", "spec": "SIGUSR1", "fired": 1, "dumps": 1, "last_fired": "...", "last_dump": "..."}, ` +
			`{"kind": "event", "spec": "sched:sched_process_exit if comm == \"nginx\"", "event": "sched:sched_process_exit", "filter": "comm == \"nginx\"", "fired": 0, "dumps": 0}], "alive": true}, ` +
			`"dumps": [{"name": "box-20261127T224500.000Z.dat", "size": 1048576}]}]: overrun counts the events the ring overwrote; ` +
			`fill_percent the bytes in the ring against its size; "arm" is null when nothing arms it ('flight arm', or 'ftctl agent' for a profile's spec.flight), its "alive" false when the arming process is gone; ` +
			`"kind" is signal, event, latency or warn; "dumps" lists the dumps in the arm's directory, oldest first`},
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
	if ok, err := g.printDoc(flightStatusFormat, sts); ok {
		return err
	}
	if len(sts) == 0 {
		g.Notice("no flight recorder ('ftctl flight start NAME' starts one)")
	}
	for _, s := range sts {
		fmt.Fprintf(g.Out, "%s: %s, %s since %s, ring %d KiB per CPU: %s\n", s.Name, s.Instance, s.State, s.Since, s.BufferKB, s.Summary())
		for _, c := range s.CPUs {
			fmt.Fprintf(g.Out, "  cpu%d: %d events, %d overwritten, %d KiB\n", c.CPU, c.Entries, c.Overrun, c.BytesInBuffer>>10)
		}
		printArm(g, s)
	}
	return nil
}

// printArm prints who arms a recorder, its triggers and the dumps on disk.
func printArm(g *Globals, s flight.Status) {
	a := s.Arm
	if a == nil {
		fmt.Fprintf(g.Out, "  not armed ('ftctl flight arm %s -d DIR' or 'ftctl agent' dumps it on triggers)\n", s.Name)
		return
	}
	state := "armed"
	if !a.Alive {
		state = "was armed (its process is gone: no trigger dumps it)"
	}
	fmt.Fprintf(g.Out, "  %s by pid %d since %s: dumps into %s, at most one per %s per trigger, keep %d, max %d MiB\n",
		state, a.PID, a.Since.Format(time.RFC3339), safe(a.Dir), a.Rate, a.Keep, a.MaxBytes>>20)
	for _, t := range a.Triggers {
		last := ""
		if !t.LastFired.IsZero() {
			last = ", last " + t.LastFired.UTC().Format(time.RFC3339)
		}
		fmt.Fprintf(g.Out, "  trigger %s %s: fired %d, dumped %d%s\n", t.Kind, safe(t.Spec), t.Fired, t.Dumps, last)
	}
	var total int64
	for _, d := range s.Dumps {
		total += d.Size
	}
	fmt.Fprintf(g.Out, "  %d dumps on disk (%d KiB)", len(s.Dumps), total>>10)
	if len(s.Dumps) > 0 {
		fmt.Fprintf(g.Out, ", newest %s", safe(s.Dumps[len(s.Dumps)-1].Name))
	}
	fmt.Fprintln(g.Out)
}

// FlightDumpOptions are the inputs of `ftctl flight dump`.
type FlightDumpOptions struct {
	G    *Globals
	Name string
	File string // -w
}

// NewCmdFlightDump builds `ftctl flight dump`.
func NewCmdFlightDump(g *Globals, runF func(context.Context, *FlightDumpOptions) error) *cobra.Command {
	opts := &FlightDumpOptions{G: g}
	c := &cobra.Command{
		Use:   "dump NAME -w FILE",
		Short: "Write what a flight recorder's ring holds into a trace.dat, without stopping it",
		Long: `Write the ring of the flight recorder NAME into FILE, a trace.dat that 'ftctl report',
trace-cmd report and KernelShark read. The recorder goes on recording: the ring's content is
swapped into the kernel's snapshot buffer and read from there. FILE is made 0600 (it holds kernel
addresses), whole or not at all.`,
		Example: `  sudo ftctl flight dump box -w incident.dat && ftctl report incident.dat`,
		Args:    args(cobra.ExactArgs(1)),
		RunE: func(c *cobra.Command, a []string) error {
			opts.Name = a[0]
			return runCmd(c, runF, flightDumpRun, opts)
		},
	}
	registerWriteFlag(c, &opts.File, "", "write the dump to `FILE` (a trace.dat)")
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
		return InvalidInput(fmt.Errorf("-w %s: %s", safe(opts.File), safe(err.Error())))
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
		Use:   "stop NAME",
		Short: "Stop a flight recorder and remove exactly what start made",
		Long: `Stop a flight recorder and remove exactly what start made: its instance (the ring and
its snapshot buffer), its declaration and the state captured at start. A recorder that a live
'ftctl flight arm' process arms is refused (exit 5, naming the process): its triggers would
dump from a recorder gone; stop that process first (systemctl stop ftctl-flight@NAME), or give
arm --stop-at-exit so that it stops the recorder as it ends.`,
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
