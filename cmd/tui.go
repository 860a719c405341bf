package cmd

import (
	"context"
	"errors"
	"fmt"
	"os"

	"github.com/spf13/cobra"

	"github.com/ftctl/ftctl/session"
	"github.com/ftctl/ftctl/tracefs"
	"github.com/ftctl/ftctl/tui"
)

// TUIOptions are the inputs of `ftctl tui`.
type TUIOptions struct {
	G        *Globals
	Keep     bool   // --keep: leave the private instance (and its probes) on exit
	RingSize int    // --ring
	File     string // --file: a recording instead of a kernel
	Recover  bool   // --recover: File is the directory a killed ftctl record left
	Force    bool   // --force: the probe field passes what probe add --force passes
}

// tuiLong is the help text of `ftctl tui`.
const tuiLong = `An interactive terminal console over one trace array.

  1 Stream     the live events in coloured columns: space pauses, f follows,
               / searches (highlighted, n/N), e c p filter by event, comm, pid; the event rate
               and the lost-event counters (LOST lines, overruns, drops) always in view
  2 Functions  / (or i) opens the pattern field: each key shows how many functions match and
               which; enter marks it for the filter (tab: the notrace list) and leaves the
               field, esc leaves it too (until then 1-5, T and q are typed, as in every
               field); a or enter applies the marks with the swap protocol after a
               confirmation showing +N/-M per list
  3 Probes     probes of every kind; a adds one, checked as you type (a caret under the
               mistake before anything reaches the kernel; the kernel's own error_log after),
               tab completes the function and BTF argument names; e enables or disables it
               here, x removes it
  4 Top        counts per function or event (m: or comm) from the stream, sorted, live
  5 Graph      g graphs the calls of functions (roots as ftctl graph -f takes them) in a
               function_graph session of its own, which x (or leaving the console) removes:
               each call as it returns, with its duration, folded or unfolded to what it
               called (enter, space, ← →), slowest or newest first (s), one task only (f)
  T / O        cycle the tracer (nop, function, function_graph: never over an empty filter)
               and turn tracing on or off;  ? help;  q quit

By default the console works in a private instance, ftctl-PID-ID, created at the start and
removed on exit with everything in it (tracer, filters, events), and probes added without a
group go to the group ftctl_PID_ID, removed on exit too; --keep leaves both (ftctl reset removes
them later, as leftovers of a process that is gone). -B NAME attaches to an existing instance
instead: nothing is torn down, probes go to the group ftctl. Quitting always runs the teardown:
q (exit 0), Ctrl-C (exit 130), SIGTERM (143) or SIGHUP (129). It never leaves a change half done
nor races it: q waits for an apply (or a probe definition) in flight to finish; Ctrl-C, SIGTERM
and SIGHUP roll an apply back, the lists as they were (as ftctl filter does when interrupted).
Each waits 10 s at most; then q rolls back too, and after 10 s more the console quits anyway and
says what it left unfinished.

On a tracefs mounted read-only (a container's read-only bind mount: ftctl status says so), no
instance can be made: the console opens read-only over -B's instance or the top level, as they
are (the stream, the status, the lists, the probes), its status bar says read-only, and every
change (filters, tracer, tracing on or off, probes, the Top view's count, a graph) is refused
on screen with why, before the kernel is asked.

Trace data is escaped before it reaches the terminal; the console keeps the last --ring events
(memory is bounded); writes take the ftctl lock like every other command. The stream reads the
ring buffer as ftctl stream does (trace_pipe_raw where it prints what trace_pipe would, else
trace_pipe; the Stream view says which), and consumes what it reads: on an instance shared with
another reader, each sees only part of the events.

--file FILE shows a recording instead (a trace.dat of ftctl record or trace-cmd record, read as
ftctl report reads it; --recover: the directory a killed ftctl record left): the Stream view
with its search and filters, the Top view, and the Graph view of its function_graph calls
(ftctl record --tracer function_graph), over the recording's events in time order; no
kernel is read or changed, so it needs neither root nor tracefs, and the other views say so.
Every buffer of a trace-cmd record -B file is shown, an instance's events after "NAME: ". As
for a live stream, the last --ring events are kept. The file is read as ftctl report reads it,
within the same budget (ftctl report --help): a file holding what no kernel writes ends the
view's reading with the byte and why on the screen, and the console goes on.`

// tuiExample lists the examples of `ftctl tui`.
const tuiExample = `  sudo ftctl tui
  sudo ftctl tui --keep
  sudo ftctl -B incident42 tui
  ftctl tui --file incident.dat                 # a recording: no root, no kernel`

// NewCmdTUI builds `ftctl tui`. runF replaces the run function in tests.
func NewCmdTUI(g *Globals, runF func(context.Context, *TUIOptions) error) *cobra.Command {
	opts := &TUIOptions{G: g}
	c := &cobra.Command{
		Use:     "tui",
		Short:   "An interactive console: live stream, function filters, probes, top, call graphs",
		Long:    tuiLong,
		Example: tuiExample,
		Args:    args(cobra.NoArgs),
		RunE: func(c *cobra.Command, _ []string) error {
			if runF != nil {
				return runF(c.Context(), opts)
			}
			return tuiRun(c.Context(), opts)
		},
	}
	c.Flags().BoolVar(&opts.Keep, "keep", false, "leave the private instance ftctl-PID-ID and its probes on exit")
	c.Flags().IntVar(&opts.RingSize, "ring", tui.DefaultRingSize, "keep the last `N` events (memory is bounded by it)")
	c.Flags().StringVar(&opts.File, "file", "", "show the recording `FILE` (a trace.dat) instead of a kernel")
	c.Flags().BoolVar(&opts.Recover, "recover", false, "with --file: FILE is the FILE.tmp-PID directory a killed 'ftctl record' left")
	c.Flags().BoolVar(&opts.Force, "force", false, forceUsage+" (Probes view; see probe add --help)")
	registerFlagCompletion(c, "file", completeFiles)
	return c
}

func tuiRun(ctx context.Context, opts *TUIOptions) error {
	g := opts.G
	if err := opts.check(); err != nil {
		return err
	}
	in, okIn := terminal(g.In)
	out, okOut := terminal(g.Out)
	if !okIn || !okOut {
		return InvalidInput(errors.New("ftctl tui needs a terminal on stdin and stdout"))
	}
	if opts.File != "" {
		return tuiFileRun(ctx, opts, in, out)
	}
	fs, err := g.FS()
	if err != nil {
		return err
	}
	readOnly := tuiReadOnly(fs)
	inst, group, done, err := tuiInstance(ctx, opts, fs, readOnly != "")
	if err != nil {
		return err
	}
	defer done()
	backend := tui.NewKernelBackend(fs, inst, group, g.LockTimeout)
	backend.SetForce(opts.Force)
	var be tui.Backend = backend
	if readOnly != "" {
		be = &tui.ReadOnlyBackend{Backend: backend, Why: readOnly}
	}
	defer func() {
		// the Top view's count and the Graph view's graph, if they run: their sessions removed
		if err := backend.Close(); err != nil {
			fmt.Fprintf(g.Err, "ftctl: removing the console's count or graph: %v\n", safe(err.Error()))
		}
	}()
	src, err := tui.NewPipeSource(ctx, backend.OpenStream, opts.RingSize)
	if err != nil {
		return err
	}
	m := tui.New(tui.Options{Backend: be, Source: src, Instance: inst.Name, Private: g.Instance == "" && readOnly == "",
		Group: group, RingSize: opts.RingSize, Context: ctx, Plain: !opts.G.colorFor(out), ForceColor: opts.G.Color == "always"})
	aborted, err := tui.Run(ctx, m, in, out)
	if m.Unfinished != "" {
		fmt.Fprintf(g.Err, "ftctl: quit with %s still running after %v: what it changes in %s may be left half done\n",
			m.Unfinished, 2*tui.DefaultQuitWait, safe(inst.Label()))
	}
	switch {
	case ctx.Err() != nil, aborted:
		return ErrInterrupted
	case err != nil:
		return err
	}
	return nil
}

// check refuses the options that do not go together (exit 2).
func (opts *TUIOptions) check() error {
	g := opts.G
	switch {
	case g.machine():
		return InvalidInput(errors.New("ftctl tui is interactive: it has no -o json"))
	case g.DryRun:
		return InvalidInput(errors.New("ftctl tui has no --dry-run: every change it makes is confirmed first"))
	case opts.RingSize < 1000 || opts.RingSize > 10_000_000:
		return InvalidInput(fmt.Errorf("--ring %d: between 1000 and 10000000 events", opts.RingSize))
	case opts.Keep && g.Instance != "":
		return InvalidInput(errors.New("--keep is for the private instance; with -B nothing is removed anyway"))
	case opts.Recover && opts.File == "":
		return InvalidInput(errors.New("--recover goes with --file (the directory a killed ftctl record left)"))
	case opts.File != "" && (opts.Keep || g.Instance != ""):
		return InvalidInput(errors.New("--file shows a recording: -B and --keep are for a kernel's trace arrays"))
	}
	return nil
}

// tuiReadOnly is why the console opens read-only: tracefs mounted read-only (a container's
// read-only bind mount, most often), where no instance can be made and every write fails with
// EROFS; "" when it is writable.
func tuiReadOnly(fs *tracefs.FS) string {
	if !fs.Mount.ReadOnly {
		return ""
	}
	if fs.Mount.Options == "" { // a --tracefs root: statfs says read-only, not the options
		return "tracefs is mounted read-only"
	}
	return fmt.Sprintf("tracefs is mounted read-only (%s)", safe(fs.Mount.Options))
}

// tuiInstance is the instance the console works in, and its probe group: -B's, or a private
// one set up now; read-only (tracefs mounted so), -B's or the top level, as they are. done,
// once the console ended, removes the private one (--keep: keeps it, and says so).
func tuiInstance(ctx context.Context, opts *TUIOptions, fs *tracefs.FS, readOnly bool) (inst *tracefs.Instance, group string, done func(), err error) {
	g := opts.G
	if g.Instance != "" || readOnly {
		if inst, err = g.ReadInstance(fs); err != nil {
			return nil, "", nil, err
		}
		if readOnly {
			g.Notice("%s: the console opens read-only over %s, as it is (the stream and inspection; no change can be made)", tuiReadOnly(fs), safe(inst.Label()))
		}
		return inst, session.SharedGroup, func() {}, nil
	}
	// A private instance: a session with nothing to set up, but the instance and its group,
	// ftctl's own threads kept out of it, held while the console runs.
	s, err := session.New(fs, session.NewID(os.Getpid()), session.Spec{})
	if err != nil {
		return nil, "", nil, err
	}
	s.Notice = g.Notice
	if err := traceSetup(ctx, g, s); err != nil {
		return nil, "", nil, err
	}
	if err := s.Begin(); err != nil {
		traceTeardown(g, fs, s)
		return nil, "", nil, err
	}
	inst, group = s.Instance, s.Group
	return inst, group, func() {
		if opts.Keep {
			s.Release()
			fmt.Fprintf(g.Err, "ftctl: kept %s and its probes (group %s): ftctl -B %s tui attaches to it; ftctl reset removes both\n", safe(inst.Label()), group, safe(inst.Name))
			return
		}
		traceTeardown(g, fs, s)
	}, nil
}

// tuiFileRun is the console over a recording (--file): no kernel, nothing to tear down.
func tuiFileRun(ctx context.Context, opts *TUIOptions, in, out *os.File) error {
	file, closeAll, err := openRecording(opts.File, opts.Recover)
	if err != nil {
		return err
	}
	defer closeAll()
	src := tui.NewFileSource(ctx, file, opts.RingSize)
	backend := &tui.FileBackend{Name: opts.File, File: file}
	defer backend.StopGraph() // the Graph view's reading of the file, before the file closes
	m := tui.New(tui.Options{Backend: backend, Source: src,
		RingSize: opts.RingSize, Context: ctx, Plain: !opts.G.colorFor(out), ForceColor: opts.G.Color == "always"})
	aborted, err := tui.Run(ctx, m, in, out)
	switch {
	case ctx.Err() != nil, aborted:
		return ErrInterrupted
	case err != nil:
		return err
	}
	return nil
}
