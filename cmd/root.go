// Package cmd is ftctl's command tree (cobra): flags, output and exit codes only. The work is
// done below it: session/ (who owns what, set-up and teardown), filters/, probes/ and stream/,
// which alone reach the kernel through tracefs/; the console is tui/. See docs/ARCHITECTURE.md.
package cmd

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"runtime/debug"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/ftctl/ftctl/filters"
	"github.com/ftctl/ftctl/session"
	"github.com/ftctl/ftctl/tracefs"
)

// Globals are the global flags and the process's IO, shared by every command. Tests build one
// with buffers and a fake tracefs directory.
type Globals struct {
	In       io.Reader
	Out, Err io.Writer

	TracefsDir  string        // --tracefs (else FTCTL_TRACEFS)
	Instance    string        // -B/--instance
	Output      string        // -o text|json
	DryRun      bool          // --dry-run
	Quiet       bool          // -q
	LockTimeout time.Duration // --lock-timeout

	fs *tracefs.FS
}

// JSON reports whether -o json was asked for.
func (g *Globals) JSON() bool { return g.Output == "json" }

// Notice prints an informational line on stderr unless -q.
func (g *Globals) Notice(format string, args ...any) {
	if !g.Quiet {
		fmt.Fprintf(g.Err, "ftctl: "+format+"\n", args...)
	}
}

// FS locates tracefs once per command. A missing tracefs is ErrNotMounted (exit 4) with the
// command that mounts it.
func (g *Globals) FS() (*tracefs.FS, error) {
	if g.fs != nil {
		return g.fs, nil
	}
	root, found := g.TracefsDir, "--tracefs"
	if root == "" {
		if v := os.Getenv("FTCTL_TRACEFS"); v != "" {
			root, found = v, "FTCTL_TRACEFS"
		}
	}
	fs, err := tracefs.Open(root, found)
	if err != nil {
		return nil, err
	}
	fs.KallsymsFile = os.Getenv("FTCTL_KALLSYMS")
	if g.DryRun {
		// The plan is the output of a dry run, except with -o json, where stdout is one JSON
		// document for scripts and the plan goes to stderr.
		fs.DryRun = g.Out
		if g.JSON() {
			fs.DryRun = g.Err
		}
	}
	g.fs = fs
	return fs, nil
}

// BeginWrite opens tracefs and takes the control-plane lock for a command that changes
// tracing state, saying on stderr whom it waits for. Release the lock when done.
func (g *Globals) BeginWrite(ctx context.Context) (*tracefs.FS, *tracefs.Lock, error) {
	fs, err := g.FS()
	if err != nil {
		return nil, nil, err
	}
	lock, err := fs.Lock(ctx, g.LockTimeout, func(h tracefs.Holder) {
		g.Notice("waiting up to %v for the tracefs lock held by %s", g.LockTimeout, h)
	})
	if err != nil {
		return nil, nil, err
	}
	return fs, lock, nil
}

// WriteInstance is the instance a write command works on (-B), created when missing (and said
// so on stderr).
func (g *Globals) WriteInstance(fs *tracefs.FS) (*tracefs.Instance, error) {
	in, created, err := fs.Ensure(g.Instance)
	if err != nil {
		return nil, err
	}
	if created {
		if g.DryRun {
			g.Notice("instance %q does not exist; it would be created", g.Instance)
		} else {
			g.Notice("created instance %q", g.Instance)
		}
	}
	return in, nil
}

// ReadInstance is the instance a read command works on (-B); a missing one is an error.
func (g *Globals) ReadInstance(fs *tracefs.FS) (*tracefs.Instance, error) {
	return fs.Lookup(g.Instance)
}

// OpenInstance finds tracefs and the trace array -B names, for a command that only reads it.
func (g *Globals) OpenInstance() (*tracefs.Instance, error) {
	fs, err := g.FS()
	if err != nil {
		return nil, err
	}
	return g.ReadInstance(fs)
}

// NewRootCmd builds the command tree.
func NewRootCmd(g *Globals) *cobra.Command {
	root := &cobra.Command{
		Use:   "ftctl",
		Short: "A safe control plane for Linux ftrace",
		Long: `ftctl drives Linux ftrace (the files under /sys/kernel/tracing) safely: function filters
that swap atomically and never widen by accident, kprobes validated before they reach the
kernel, and a typed live event stream.

tracefs is found through /proc/self/mountinfo (tracefs, else debugfs/tracing), or given with
--tracefs or FTCTL_TRACEFS. Commands that change tracing state take a lock so that concurrent
ftctl writers never lose an update, and --dry-run prints each write instead of making it.`,
		Example: `  sudo ftctl status
  sudo ftctl status -o json
  sudo ftctl instance create mytrace
  sudo ftctl mount`,
		SilenceErrors: true,
		SilenceUsage:  true,
		// Runnable with NoArgs so that an unknown command is invalid input (exit 2).
		Args:    args(cobra.NoArgs),
		RunE:    func(c *cobra.Command, _ []string) error { return c.Help() },
		Version: version(),
		PersistentPreRunE: func(c *cobra.Command, args []string) error {
			switch g.Output {
			case "text", "json":
			default:
				return InvalidInput(fmt.Errorf("-o/--output must be text or json, not %q", g.Output))
			}
			if g.Instance != "" || c.Flags().Changed("instance") {
				if err := tracefs.ValidateInstanceName(g.Instance); err != nil {
					return err
				}
			}
			if g.LockTimeout < 0 {
				return InvalidInput(fmt.Errorf("--lock-timeout must not be negative"))
			}
			return nil
		},
	}
	root.SetIn(g.In)
	root.SetOut(g.Out)
	root.SetErr(g.Err)
	root.SetFlagErrorFunc(func(c *cobra.Command, err error) error {
		return InvalidInput(fmt.Errorf("%w\nsee '%s --help'", err, c.CommandPath()))
	})

	pf := root.PersistentFlags()
	pf.StringVar(&g.TracefsDir, "tracefs", "", "use the tracing directory `DIR` (default: $FTCTL_TRACEFS, else found in /proc/self/mountinfo)")
	pf.StringVarP(&g.Instance, "instance", "B", "", "trace instance `NAME` (default: the top-level trace array)")
	pf.StringVarP(&g.Output, "output", "o", "text", "output `FORMAT`: text or json")
	pf.BoolVar(&g.DryRun, "dry-run", false, "print each write that would happen, in order, and change nothing")
	pf.BoolVarP(&g.Quiet, "quiet", "q", false, "print no notices on stderr (errors still are)")
	pf.DurationVar(&g.LockTimeout, "lock-timeout", 5*time.Second, "how long a writer waits for another ftctl's lock before exiting 5")
	registerFlagCompletion(root, "tracefs", cobra.FixedCompletions(nil, cobra.ShellCompDirectiveFilterDirs))
	registerFlagCompletion(root, "instance", completeInstanceNames(g))
	registerFlagCompletion(root, "output", cobra.FixedCompletions([]cobra.Completion{"text", "json"}, noFiles))
	root.CompletionOptions.SetDefaultShellCompDirective(noFiles) // see complete.go

	root.AddCommand(
		NewCmdStatus(g, nil),
		NewCmdMount(g, nil),
		NewCmdInstance(g),
		NewCmdFunctions(g, nil),
		NewCmdFilter(g, filters.FilterFile),
		NewCmdFilter(g, filters.NotraceFile),
		NewCmdStream(g, nil),
		NewCmdProbe(g),
		NewCmdTrace(g, nil),
		NewCmdTUI(g, nil),
		NewCmdReset(g, nil),
	)
	return root
}

func version() string {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return "unknown"
	}
	v := bi.Main.Version
	for _, s := range bi.Settings {
		if s.Key == "vcs.revision" && len(s.Value) >= 12 {
			v += " (" + s.Value[:12] + ")"
		}
	}
	return v
}

// Main runs ftctl with the process's arguments and returns its exit code.
func Main() int {
	if len(os.Args) > 1 && os.Args[1] == session.GateArg { // ftctl trace -- COMMAND's gate
		return session.Gate(os.Args[2:])
	}
	return Run(context.Background(), os.Args[1:], os.Stdin, os.Stdout, os.Stderr)
}

// Run runs ftctl with args and IO streams; SIGINT, SIGTERM and SIGHUP cancel the command's
// context, and an interrupted command exits 130.
func Run(ctx context.Context, args []string, in io.Reader, out, errw io.Writer) int {
	// A closed stdout (| head) makes writes fail with EPIPE instead of killing ftctl: the
	// command ends quietly with exit 0 (see below).
	signal.Ignore(syscall.SIGPIPE)
	ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM, syscall.SIGHUP)
	defer stop()
	g := &Globals{In: in, Out: out, Err: errw}
	root := NewRootCmd(g)
	root.SetArgs(args)
	err := root.ExecuteContext(ctx)
	if err == nil {
		return ExitOK
	}
	if ctx.Err() != nil && errors.Is(err, context.Canceled) {
		err = ErrInterrupted
	}
	code := ExitCode(err)
	if errors.Is(err, syscall.EPIPE) { // stdout closed under us (| head): quietly done
		return ExitOK
	}
	if errors.As(err, new(*CommandExit)) { // ftctl trace -- COMMAND: its status, no message
		return code
	}
	msg := err.Error()
	if !strings.HasSuffix(msg, "\n") {
		msg += "\n"
	}
	fmt.Fprint(errw, "ftctl: "+msg)
	return code
}
