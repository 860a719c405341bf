package cmd

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/ftctl/ftctl/flight"
	"github.com/ftctl/ftctl/session"
	"github.com/ftctl/ftctl/stream"
	"github.com/ftctl/ftctl/tracefs"
)

// flightBootCommands are the reboot-survival subcommands of `ftctl flight`.
func flightBootCommands(g *Globals) []*cobra.Command {
	return []*cobra.Command{NewCmdFlightBootConfig(g, nil), NewCmdFlightLastBoot(g, nil)}
}

// FlightBootOptions are the inputs of `ftctl flight boot-config`.
type FlightBootOptions struct {
	G       *Globals
	Name    string
	Events  []string // -e
	SizeMB  int      // --size-mb
	BootDir string   // --boot-dir
}

// NewCmdFlightBootConfig builds `ftctl flight boot-config`.
func NewCmdFlightBootConfig(g *Globals, runF func(context.Context, *FlightBootOptions) error) *cobra.Command {
	opts := &FlightBootOptions{G: g}
	c := &cobra.Command{
		Use:   "boot-config NAME [-e EVENT...] [--size-mb N]",
		Short: "Print the kernel parameters that keep a recorder's ring across a reboot",
		Long: `Print the kernel parameters that make the flight recorder NAME's instance (ftctl-owned-NAME)
a persistent ring buffer: the kernel creates it at boot in memory it reserves (--size-mb MiB),
enables the events -e names (SYSTEM:EVENT or SYSTEM, repeatable) in it, and a warm reboot
(a crash's, a watchdog's, 'reboot -f') keeps what it recorded, which 'ftctl flight last-boot
NAME' reads in the next boot. They are printed on one line, for the boot loader
(GRUB_CMDLINE_LINUX in /etc/default/grub); nokaslr is among them because with KASLR the
reserved memory may move from one boot to the next, losing the ring. NAME is also
reserve_mem's label: at most 15 characters.

The running kernel's command line is checked against them: what it lacks is said on stderr.
The event formats and kernel symbols the next boot needs to read the ring are saved now, in
--boot-dir (a directory a reboot keeps, not /run), with this boot's id; where the ring is
persistent already and the saved ones are an earlier boot's, they are kept ("kept": true),
since 'last-boot' needs them to read what that boot recorded (it saves this boot's after).
A kernel without the persistent ring buffer (before 6.12: no instance has last_boot_info and
the kernel has no reader of it) is exit 4.`,
		Example: `  sudo ftctl flight boot-config crash -e sched:sched_process_exit -e signal:signal_generate
  sudo ftctl flight boot-config crash -o json`,
		Args:        args(cobra.ExactArgs(1)),
		Annotations: map[string]string{AnnotationJSON: `{"name": "crash", "instance": "ftctl-owned-crash", "params": ["nokaslr", "reserve_mem=16M:4096:crash", "trace_instance=ftctl-owned-crash@crash,sched:sched_process_exit"], "missing": [], "active": true, "saved": "/var/lib/ftctl/flight/crash/boot.dat", "kept": false}: missing lists the params the running kernel was not booted with; kept is true when saved holds an earlier boot's capture, left for last-boot`},
		RunE: func(c *cobra.Command, a []string) error {
			opts.Name = a[0]
			return runCmd(c, runF, flightBootConfigRun, opts)
		},
	}
	f := c.Flags()
	f.StringArrayVarP(&opts.Events, "event", "e", nil, "enable `EVENT` in the ring from boot (SYSTEM:EVENT or SYSTEM; repeatable)")
	f.IntVar(&opts.SizeMB, "size-mb", flight.DefaultBootMB, "the memory to reserve for the ring, in `MiB`")
	f.StringVar(&opts.BootDir, "boot-dir", flight.DefaultBootDir, "save the formats and symbols under `DIR` (kept across a reboot)")
	return c
}

// bootError maps the flight package's boot errors onto exit codes.
func bootError(err error) error {
	if errors.Is(err, flight.ErrNoEvent) || errors.Is(err, stream.ErrRecordDir) {
		return InvalidInput(err)
	}
	return err
}

func flightBootConfigRun(ctx context.Context, opts *FlightBootOptions) error {
	g := opts.G
	if _, err := flight.BootParams(opts.Name, opts.SizeMB, opts.Events); err != nil {
		return InvalidInput(err)
	}
	fs, err := g.FS()
	if err != nil {
		return err
	}
	cmdline, err := tracefs.Cmdline()
	if err != nil {
		return err
	}
	bc, err := flight.Boot(ctx, fs, opts.Name, opts.SizeMB, opts.Events, cmdline, opts.BootDir)
	if err != nil {
		return bootError(err)
	}
	if ok, err := g.printDoc(bootConfigFormat, bc); ok {
		return err
	}
	fmt.Fprintln(g.Out, strings.Join(bc.Params, " "))
	switch {
	case len(bc.Missing) > 0:
		g.Notice("flight %s: the running kernel was not booted with: %s", opts.Name, strings.Join(bc.Missing, " "))
	case bc.Active:
		g.Notice("flight %s: the running kernel was booted with them: %s records across a reboot", opts.Name, bc.Instance)
	default:
		g.Notice("flight %s: the running kernel was booted with them, but %s is no persistent ring (reserve_mem failed? see dmesg)", opts.Name, bc.Instance)
	}
	switch {
	case bc.Kept:
		g.Notice("flight %s: %s holds an earlier boot's formats and symbols, which 'ftctl flight last-boot %s' needs to read what the ring kept: left as it is (last-boot saves this boot's once it has read the ring)", opts.Name, safe(bc.Saved), opts.Name)
	case !g.DryRun:
		g.Notice("flight %s: this boot's formats and symbols saved in %s", opts.Name, safe(bc.Saved))
	}
	return nil
}

// FlightLastBootOptions are the inputs of `ftctl flight last-boot`.
type FlightLastBootOptions struct {
	G       *Globals
	Name    string
	File    string // -w
	BootDir string // --boot-dir
}

// NewCmdFlightLastBoot builds `ftctl flight last-boot`.
func NewCmdFlightLastBoot(g *Globals, runF func(context.Context, *FlightLastBootOptions) error) *cobra.Command {
	opts := &FlightLastBootOptions{G: g}
	c := &cobra.Command{
		Use:   "last-boot NAME -w FILE",
		Short: "Write what a persistent recorder's ring kept from the previous boot into a trace.dat",
		Long: `After a warm reboot, write the previous boot's events that the persistent ring of the flight
recorder NAME kept (the kernel booted with 'ftctl flight boot-config NAME''s parameters) into
FILE, a trace.dat that 'ftctl report' and trace-cmd report read. Its event formats and kernel
symbols are those boot-config (or an earlier last-boot) saved in --boot-dir, with the kernel's
addresses moved to where the previous boot had them (last_boot_info's deltas, and how far
KASLR moved the kernel since they were saved). Reading empties the ring. This boot's formats
and symbols are saved then, for the next reboot. FILE is made 0600, whole or not at all.`,
		Example: `  sudo ftctl flight last-boot crash -w lastboot.dat && ftctl report lastboot.dat`,
		Args:    args(cobra.ExactArgs(1)),
		RunE: func(c *cobra.Command, a []string) error {
			opts.Name = a[0]
			return runCmd(c, runF, flightLastBootRun, opts)
		},
	}
	registerWriteFlag(c, &opts.File, "", "write the previous boot's events to `FILE` (a trace.dat)")
	c.Flags().StringVar(&opts.BootDir, "boot-dir", flight.DefaultBootDir, "the formats and symbols saved under `DIR`")
	return c
}

func flightLastBootRun(ctx context.Context, opts *FlightLastBootOptions) error {
	g := opts.G
	if err := session.CheckOwnerName(opts.Name); err != nil {
		return InvalidInput(err)
	}
	if err := checkRecordName(opts.File); err != nil {
		return err
	}
	fs, lock, err := g.BeginWrite(ctx)
	if err != nil {
		return err
	}
	defer lock.Unlock()
	res, err := flight.LastBoot(ctx, fs, opts.Name, opts.File, opts.BootDir, fileOwners()...)
	if err != nil || res == nil { // (a dry run printed its plan)
		return bootError(err)
	}
	shift := fmt.Sprintf("addresses moved by %+#x", res.Shift.Text)
	if !res.Shift.Known {
		shift = "addresses as saved (this boot's kallsyms hide theirs)"
	}
	g.Notice("flight %s: the previous boot's %d events (%d KiB) written to %s, %s; %d lost to overwriting",
		opts.Name, res.Events, res.Bytes>>10, safe(opts.File), shift, res.Lost)
	return nil
}
