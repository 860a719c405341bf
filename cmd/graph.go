package cmd

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/ftctl/ftctl/session"
	"github.com/ftctl/ftctl/stream"
)

// GraphOptions are the inputs of `ftctl graph`.
type GraphOptions struct {
	G         *Globals
	Roots     []string // -f
	Notrace   []string // -n
	Depth     int
	Threshold time.Duration
	PID       int
	Duration  time.Duration
	Count     int
	Command   []string
}

// graphLong is the help text of `ftctl graph`.
const graphLong = `What ROOT calls, and how long each call takes: the kernel's function_graph tracer
(trace-cmd record -p function_graph -g ROOT, perf-tools' funcgraph), read from the ring
buffer's pages and printed as one tree per call of ROOT, once it returned.

-f ROOT (set_graph_function) chooses the functions whose calls are graphed, with everything
they call; -n FUNC (set_graph_notrace) leaves a function and its callees out; both take names
and the kernel's globs, and each must select a traceable function. --depth N stops the graph N
calls deep (max_graph_depth). --threshold D records only the calls that took D or more
(tracing_thresh, in microseconds): the kernel then records their returns alone, and the trees
hold those calls only, each marked as seen without its entry.

Text: function_graph's own lines, per tree: "CPU) comm-pid | duration | call", a call with
callees opened by "func() {" and closed by "} /* func */" with its duration, a leaf on one line;
the kernel's marks before slow calls (+ over 10 us, ! 100 us, # 1 ms, * 10 ms, @ 100 ms, $ 1 s).
JSON (-o json): one object per line and top-level call: {"func", "duration_us", "cpu", "pid",
"comm", "calls": [{"func", "duration_us", "calls": [...]}, ...]}, "retval" where the kernel
records it (CONFIG_FUNCTION_GRAPH_RETVAL), "entry_lost": true for a call whose entry was not
recorded (before the start, lost, or --threshold) and "unfinished": true, without a duration,
for one that had not returned when the session ended.

The graph's files are the whole kernel's, not an instance's: ftctl takes them only when no
trace array runs function_graph and they hold their defaults (else exit 5), sets them under
the lock, and puts the defaults back at the end. function_graph runs in the session's own
instance where the kernel offers it there (Linux 6.11 and later); elsewhere at the top level,
only when the top level is free (the nop tracer, no event enabled, no function or pid list
set; else exit 4 with the reason), and every top-level file written is put back as it was
(the top level's ring buffer is emptied by the tracer's change, and grown for the session to
a new ring's size where it holds less). ftctl says which it does.

The session ends at --duration, after --count top-level calls, when COMMAND exits, on Ctrl-C,
SIGTERM or SIGHUP, or when stdout closes, and tears down on each as 'ftctl trace' does; calls
still open at the end are printed as unfinished (not after --count). --pid PID graphs one process
and its children; -- COMMAND starts COMMAND, graphs it and its children only, and exits as trace
-- COMMAND does (COMMAND's status; 125 when ftctl failed, 126 or 127 when COMMAND cannot be run
or found).`

// graphExample lists the examples of `ftctl graph`.
const graphExample = `  # what a read does, in the reads of one command
  sudo ftctl graph -f ksys_read -- dd if=/proc/version of=/dev/null bs=64
  # vfs_read's calls three deep, for 2 seconds, as JSON
  sudo ftctl graph -f vfs_read --depth 3 --duration 2s -o json
  # only the calls of 1 ms or more under do_sys_openat2, of process 1234
  sudo ftctl graph -f do_sys_openat2 --threshold 1ms --pid 1234 --duration 3s
  # the first 10 calls of ksys_read, without what the security hooks call
  sudo ftctl graph -f ksys_read -n security_file_permission --count 10`

// NewCmdGraph builds `ftctl graph`.
func NewCmdGraph(g *Globals, runF func(context.Context, *GraphOptions) error) *cobra.Command {
	opts := &GraphOptions{G: g}
	c := &cobra.Command{
		Use:     "graph -f ROOT [flags] [-- COMMAND ARGS...]",
		Short:   "Live call graphs of kernel functions, with the time each call took (function_graph)",
		Long:    graphLong,
		Example: graphExample,
		Args:    commandAfterDash("roots go with -f, a command to graph after --"),
		RunE: func(c *cobra.Command, a []string) error {
			opts.Command = a
			return runCmd(c, runF, graphRun, opts)
		},
	}
	f := c.Flags()
	f.StringArrayVarP(&opts.Roots, "function", "f", nil, "graph the calls of functions matching `ROOT` (set_graph_function; repeatable)")
	f.StringArrayVarP(&opts.Notrace, "notrace", "n", nil, "leave out functions matching `PATTERN` and what they call (set_graph_notrace; repeatable)")
	f.IntVar(&opts.Depth, "depth", 0, "graph at most `N` calls deep (max_graph_depth; default: no limit)")
	f.DurationVar(&opts.Threshold, "threshold", 0, "record only calls that last `D` or more (tracing_thresh, e.g. 100us)")
	f.IntVar(&opts.PID, "pid", 0, "graph only process `PID` and its children")
	f.DurationVar(&opts.Duration, "duration", 0, "end after `D` (e.g. 10s)")
	f.IntVar(&opts.Count, "count", 0, "end after `N` top-level calls")
	registerReadyFD(c, g)
	registerFlagCompletion(c, "function", completeFunctionNames(g))
	registerFlagCompletion(c, "notrace", completeFunctionNames(g))
	return c
}

func graphRun(ctx context.Context, opts *GraphOptions) error {
	g := opts.G
	if err := ownSession(g, "graph", opts.Duration); err != nil {
		return err
	}
	spec, err := session.GraphRequest{Roots: opts.Roots, Notrace: opts.Notrace, Depth: opts.Depth,
		Threshold: opts.Threshold, PID: opts.PID}.Spec()
	switch {
	case opts.Count < 0:
		return InvalidInput(errors.New("--count must not be negative"))
	case opts.PID > 0 && len(opts.Command) > 0:
		return InvalidInput(errors.New("--pid takes a process id, and not with -- COMMAND (which graphs the command)"))
	case len(opts.Roots) == 0:
		return InvalidInput(errors.New("want at least one -f ROOT: graphing every function would swamp the system"))
	case err != nil:
		return InvalidInput(err)
	}
	argv0, err := lookCommand(opts.Command)
	if err != nil {
		return err
	}
	fs, err := g.FS()
	if err != nil {
		return err
	}
	s, err := newSession(g, fs, spec)
	if err != nil {
		return err
	}
	where := func() (func(), error) {
		if s.GraphAtTop() {
			g.Notice("function_graph runs at the top level: this kernel's instances cannot run it; the top level was free, and its files are put back as they were at the end")
		} else {
			g.Notice("function_graph runs in instance %s", s.Instance.Name)
		}
		return func() {}, nil
	}
	return runSession(ctx, g, fs, s, argv0, opts.Command, where, func(command *session.Command) error {
		return graphStream(ctx, g, opts, s, command)
	})
}

// graphStream reads the graph's trace array until the session ends, as traceStream does, and
// returns what ftctl exits with.
func graphStream(ctx context.Context, g *Globals, opts *GraphOptions, s *session.Session, command *session.Command) error {
	sctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	defer stream.OneP()()
	src, err := s.OpenGraph(sctx, stream.Options{Duration: opts.Duration, Notice: g.Notice})
	if err != nil {
		if command != nil {
			command.Abort()
		}
		return err
	}
	defer src.Close()
	var sum *stream.Summary
	calls := 0
	err, commandErr := streamWithCommand(s, command, cancel, func() (err error) {
		sum, calls, err = stream.CopyGraph(src, stream.GraphOutput{W: g.Out, JSON: g.machine(), Count: opts.Count})
		return err
	})
	if sum != nil && (!g.Quiet || sum.Lost()) {
		fmt.Fprintf(g.Err, "ftctl: graph: %s; %s\n", plural(calls, "call tree"), sum)
	}
	switch {
	case ctx.Err() != nil:
		return ErrInterrupted
	case err != nil:
		return err
	}
	return commandStatus(command, commandErr)
}
