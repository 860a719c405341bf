package cmd

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/ftctl/ftctl/eventfilter"
	"github.com/ftctl/ftctl/filters"
	"github.com/ftctl/ftctl/probes"
	"github.com/ftctl/ftctl/session"
	"github.com/ftctl/ftctl/stream"
	"github.com/ftctl/ftctl/tracefs"
)

// TraceOptions are the inputs of `ftctl trace`.
type TraceOptions struct {
	G         *Globals
	Functions []string // -f/--function
	Notrace   []string
	Probes    []string
	Events    []string
	Tracer    string
	PID       []int
	Duration  time.Duration
	Count     int
	Command   []string
	// IncludeSelf: --include-self, show the events of ftctl's own threads
	IncludeSelf bool
	BufferKB    int      // --buffer-kb
	Clock       string   // --clock
	Options     []string // -O
	// EventFilter: --filter, set on every event the session enables (at most one).
	EventFilter []string
	Force       bool // --force: -p definitions ftctl refuses as unsafe or misleading
}

const errCommandExited = stream.EndCause("the command exited")

// CommandExit carries the exit status of the command `ftctl trace -- COMMAND` ran: ftctl
// exits with it.
type CommandExit struct{ Code int }

func (e *CommandExit) Error() string {
	return fmt.Sprintf("the traced command exited with status %d", e.Code)
}

// traceLong is the help text of `ftctl trace`.
const traceLong = `Set up tracing, stream the events, and leave the system exactly as it was found. The
incident-response workhorse.

A session runs in its own instance (ftctl-PID-ID) with its own probe group (ftctl_PID_ID; ID is
random, so that sessions of the same pid in two containers never meet), so it never touches
another user's settings, probes or instances, nor the top level. It holds a file of its instance
open while it runs: the kernel then refuses to remove it, which is how 'ftctl reset' tells a
running session from a dead one in any pid namespace. ftctl's own threads are kept out of the
instance (set_ftrace_notrace_pid, set_event_notrace_pid); --include-self keeps them in.
Function filters go through the swap protocol, probes are validated before they reach the
kernel, and everything is checked before anything is changed: a mistake exits 2 with nothing
done. --force passes the -p definitions ftctl refuses as unsafe or misleading, as probe add
--force does (a warning each on stderr), but not r<N> on a uprobe: the kernel would put that
event outside the session's group.

-f/--function PATTERN chooses functions, --filter EXPR events (trace-cmd's -f): the one --filter
applies to every event the session enables (each -e event, every event of a system named whole
or matched by a glob, each -p probe), not to functions. EXPR is the kernel's event filter: FIELD
OP VALUE, OP one of == != < <= > >= & ~ (a glob, on strings), joined by && || ! ( ); strings are
quoted. Each field must exist in each of those events (events/SYSTEM/EVENT/format, 'ftctl probe
format'; common_pid, cpu and comm exist in all). A mistake is exit 2 with the kernel's words and
a caret, before anything is made (a probe's fields, once the kernel has defined it; the session
is then removed). What only the kernel can judge (a FIELD.function symbol, a CPUS{} list; 6.1
knows neither) is exit 3 with its error_log entry under the text, and the session removed.

The session ends at --duration, after --count events, when COMMAND exits, on Ctrl-C, SIGTERM or
SIGHUP (exit 128+N: 130, 143, 129), or when stdout closes (| head); on every one of these it
stops tracing, sets the tracer to nop, disables its events, removes its probes and its
instance, each step attempted even when one fails. If ftctl itself is killed (SIGKILL), 'ftctl
reset' removes what the session left.

With -- COMMAND, ftctl starts COMMAND, traces only it and its children (set_ftrace_pid with
function-fork, set_event_pid with event-fork; the command is held before exec until tracing is
ready, so its first calls are seen), stops when it exits, and exits with its status. As with
env(1) and timeout(1), ftctl's own failures are then 125 (never 1-5, which the command may use),
126 when COMMAND cannot be run and 127 when it is not found.`

// traceExample lists the examples of `ftctl trace`.
const traceExample = `  # every call of ext4 functions for 10 seconds
  sudo ftctl trace -f 'ext4_*' --duration 10s
  # a kprobe and a tracepoint, for one command, as JSON
  sudo ftctl trace -p 'p:open do_sys_openat2 path=+0(%si):string' \
      -e sched:sched_process_exec -o json -- ls /tmp
  # how long each vfs_read of one process takes (function_graph), first 100 events
  sudo ftctl trace --tracer function_graph -f vfs_read --pid 1234 --count 100
  # context switches into or out of pid 1
  sudo ftctl trace -e sched:sched_switch --filter 'prev_pid == 1 || next_pid == 1'
  # opens of files under /etc, by name
  sudo ftctl trace -p 'p:open do_sys_openat2 path=+0(%si):string' --filter 'path ~ "/etc/*"'`

// NewCmdTrace builds `ftctl trace`.
func NewCmdTrace(g *Globals, runF func(context.Context, *TraceOptions) error) *cobra.Command {
	opts := &TraceOptions{G: g}
	c := &cobra.Command{
		Use:     "trace [flags] [-- COMMAND ARGS...]",
		Short:   "Trace in a one-shot session that always cleans up after itself",
		Long:    traceLong,
		Example: traceExample,
		Args:    commandAfterDash("a command to trace goes after --"),
		RunE: func(c *cobra.Command, a []string) error {
			opts.Command = a
			return runCmd(c, runF, traceRun, opts)
		},
	}
	f := c.Flags()
	opts.addSessionFlags(c, "the session")
	f.DurationVar(&opts.Duration, "duration", 0, "end the session after `D` (e.g. 30s)")
	f.IntVar(&opts.Count, "count", 0, "end the session after `N` events")
	f.BoolVar(&opts.IncludeSelf, "include-self", false, "also show the events of ftctl's own threads (left out by default)")
	return c
}

// addSessionFlags adds the flags that set a session up (trace's and record's: functions,
// probes, events and their filter, tracer, pids, buffer, clock, options) with their
// completions; what names what is ended ("the session", "the recording").
func (opts *TraceOptions) addSessionFlags(c *cobra.Command, what string) {
	g := opts.G
	f := c.Flags()
	f.StringArrayVarP(&opts.Functions, "function", "f", nil, "trace functions matching `PATTERN` (kernel glob; repeatable)")
	f.StringArrayVarP(&opts.Notrace, "notrace", "n", nil, "never trace functions matching `PATTERN` (repeatable)")
	f.StringArrayVarP(&opts.Probes, "probe", "p", nil, "define a probe `DEFINITION` for "+what+": kprobe, uprobe, fprobe, tracepoint or event probe (repeatable)")
	f.StringArrayVarP(&opts.Events, "event", "e", nil, "enable `SYSTEM[:EVENT]`: sched:sched_switch, or globs as sched:* (repeatable)")
	registerFlagCompletion(c, "event", completeEventNames(g))
	registerFlagCompletion(c, "probe", completeProbeDefinition(g, true))
	f.BoolVar(&opts.Force, "force", false, forceUsage+" (-p; see probe add --help)")
	registerFlagCompletion(c, "function", completeFunctionNames(g))
	f.StringArrayVar(&opts.EventFilter, "filter", nil, "record only the events of -e and -p for which `EXPR` holds, e.g. 'prev_pid == 1'")
	registerFlagCompletion(c, "notrace", completeFunctionNames(g))
	f.StringVar(&opts.Tracer, "tracer", "", "run `TRACER`: function, function_graph or nop (default: function with -f, else nop)")
	registerFlagCompletion(c, "tracer", completeTracers(g))
	f.IntSliceVar(&opts.PID, "pid", nil, "trace only process `PID` and its children (repeatable, or PID,PID...)")
	f.IntVarP(&opts.BufferKB, "buffer-kb", "b", 0, "size the session's ring buffer to `N` KiB per CPU (default: the kernel's)")
	f.StringVarP(&opts.Clock, "clock", "C", "", "time stamp events with trace clock `NAME` (local, global, mono, boot...)")
	f.StringArrayVarP(&opts.Options, "option", "O", nil, "set trace option `OPTION` (=1), OPTION=0 or noOPTION in the session (repeatable)")
	registerFlagCompletion(c, "clock", completeClocks(g))
	registerFlagCompletion(c, "option", completeOptions(g))
	registerReadyFD(c, g)
}

// commandAfterDash accepts arguments only after --, as the command to run; hint says where
// a stray argument belongs.
func commandAfterDash(hint string) cobra.PositionalArgs {
	return func(c *cobra.Command, a []string) error {
		if c.ArgsLenAtDash() < 0 && len(a) > 0 {
			return InvalidInput(fmt.Errorf("unexpected argument %q: %s", a[0], hint))
		}
		if c.ArgsLenAtDash() > 0 {
			return InvalidInput(fmt.Errorf("unexpected argument %q before --", a[0]))
		}
		return nil
	}
}

func traceRun(ctx context.Context, opts *TraceOptions) error {
	g := opts.G
	spec, argv0, err := opts.spec()
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
	return runSession(ctx, g, fs, s, argv0, opts.Command, nil, func(command *session.Command) error {
		return traceStream(ctx, g, opts, s, command)
	})
}

// newSession makes the session of trace, graph or record (its errors mapped to the exit
// table), its notices on stderr, and says what dead sessions left behind.
func newSession(g *Globals, fs *tracefs.FS, spec session.Spec) (*session.Session, error) {
	s, err := session.New(fs, session.NewID(os.Getpid()), spec)
	if err != nil {
		return nil, sessionError(err)
	}
	s.Notice = g.Notice
	for _, why := range s.Forced() {
		g.Notice("--force: %s", safe(why))
	}
	noticeLeftovers(g, fs, s.ID)
	return s, nil
}

// runSession runs a session of trace, graph or record: the command (argv0 and argv; argv0 ""
// for none) started first, held at its gate (forked before ftctl's own threads are excluded
// from the instance, since a fork of an excluded thread would be excluded too, and traced from
// its first instruction); the session set up (traceSetup); ready, when given, for what must
// exist before tracing starts (its cleanup deferred); tracing begun (Begin); then body with the
// command. Once the set-up began, the teardown runs on every path; the command is aborted
// (never released) on every failure before body, a signal during the set-up included.
func runSession(ctx context.Context, g *Globals, fs *tracefs.FS, s *session.Session, argv0 string, argv []string,
	ready func() (cleanup func(), err error), body func(*session.Command) error) error {
	if g.DryRun {
		if argv0 != "" {
			s.TraceCommand(plannedCommandPID(fs))
		}
		if err := traceSetup(ctx, g, s); err != nil {
			return err
		}
		dryRunDone(g, s)
		return nil
	}
	var command *session.Command
	if argv0 != "" {
		var err error
		if command, err = startCommand(g, argv0, argv); err != nil {
			return err
		}
		s.TraceCommand(command.PID())
	}
	abort := func(err error) error {
		if command != nil {
			command.Abort()
		}
		return err
	}
	if err := traceSetup(ctx, g, s); err != nil {
		return abort(err)
	}
	defer traceTeardown(g, fs, s)
	if ready != nil {
		cleanup, err := ready()
		if err != nil {
			return abort(err)
		}
		defer cleanup()
	}
	if ctx.Err() != nil {
		return abort(ErrInterrupted)
	}
	if err := s.Begin(); err != nil {
		return abort(err)
	}
	g.Armed("tracing is on in the " + s.Instance.Label())
	return body(command)
}

// plannedCommandPID is the pid a dry run plans with for the command it does not start: no
// process can have it (above PID_MAX_LIMIT), and the plan shows it as $COMMAND_PID.
func plannedCommandPID(fs *tracefs.FS) int {
	fs.Placeholders = strings.NewReplacer(strconv.Itoa(session.PlannedPID), "$COMMAND_PID")
	return session.PlannedPID
}

// commandToTrace starts -- COMMAND held at its gate (none for argv0 ""), and returns the pid to
// trace: the command's, or in a dry run the planned one (no command is started).
func commandToTrace(g *Globals, fs *tracefs.FS, argv0 string, argv []string) (*session.Command, int, error) {
	switch {
	case argv0 == "":
		return nil, 0, nil
	case g.DryRun:
		return nil, plannedCommandPID(fs), nil
	}
	command, err := startCommand(g, argv0, argv)
	if err != nil {
		return nil, 0, err
	}
	return command, command.PID(), nil
}

// dryRunDone ends a session command's dry run: what was printed is the whole set-up; nothing
// was changed, no command started, nothing read.
func dryRunDone(g *Globals, s *session.Session) {
	g.Notice("dry run: nothing was changed; the run then turns tracing on in %s, and at its end undoes everything listed above, newest first", s.Instance.Label())
}

// startCommand starts the command of -- COMMAND held at its gate, with ftctl's standard
// streams (stdout the command's output when it is a file).
func startCommand(g *Globals, argv0 string, argv []string) (*session.Command, error) {
	stdout := io.Writer(os.Stdout)
	if f, ok := g.Out.(*os.File); ok {
		stdout = f
	}
	return session.StartCommand(argv0, argv, os.Stdin, stdout, os.Stderr)
}

// tracerNames are the kernel's tracers (available_tracers across configs): given to -p, which is
// a probe here, they are trace-cmd's -p TRACER.
var tracerNames = []string{"function", "function_graph", "nop", "blk", "mmiotrace", "wakeup", "wakeup_rt",
	"wakeup_dl", "irqsoff", "preemptoff", "preemptirqsoff", "hwlat", "osnoise", "timerlat"}

// spec checks the options and turns them into a session spec (exit 2 for a mistake), with the
// command's resolved path.
func (opts *TraceOptions) spec() (spec session.Spec, argv0 string, err error) {
	g := opts.G
	if g.Instance != "" {
		return spec, "", InvalidInput(errors.New("ftctl trace runs in its own instance; -B is not for trace"))
	}
	if opts.Duration < 0 || opts.Count < 0 {
		return spec, "", InvalidInput(errors.New("--duration and --count must not be negative"))
	}
	spec = session.Spec{Probes: opts.Probes, Force: opts.Force, Events: opts.Events, Tracer: opts.Tracer, PIDs: opts.PID, IncludeSelf: opts.IncludeSelf,
		BufferKB: opts.BufferKB, Clock: opts.Clock, Options: opts.Options}
	if spec.EventFilter, err = opts.eventFilter(); err != nil {
		return spec, "", err
	}
	for _, p := range opts.Probes {
		p = strings.TrimSpace(p)
		if _, err := strconv.Atoi(p); err == nil {
			return spec, "", InvalidInput(fmt.Errorf("-p %q is a probe definition (-p 'p:NAME SYMBOL ARGS'); to trace a process, use --pid %s", p, p))
		}
		if slices.Contains(tracerNames, p) {
			return spec, "", InvalidInput(fmt.Errorf("-p %q is a probe definition (-p 'p:NAME SYMBOL ARGS'); to run the %s tracer (trace-cmd's -p), use --tracer %s", p, p, p))
		}
	}
	if len(opts.Functions) == 0 && len(opts.Probes) == 0 && len(opts.Events) == 0 && (opts.Tracer == "" || opts.Tracer == "nop") {
		g.Notice("this session traces nothing: no -f, -p or -e (and the nop tracer); it will show only markers (trace_marker)")
	}
	for _, p := range opts.PID {
		if p <= 0 {
			return spec, "", InvalidInput(fmt.Errorf("--pid %d: not a process id", p))
		}
	}
	if spec.Filters, err = compileAll(opts.Functions); err != nil {
		return spec, "", err
	}
	if spec.Notrace, err = compileAll(opts.Notrace); err != nil {
		return spec, "", err
	}
	if argv0, err = lookCommand(opts.Command); err != nil {
		return spec, "", err
	}
	return spec, argv0, nil
}

// eventFilter checks --filter's syntax (its fields are checked against the events' formats by
// session.New): one filter, for the events of -e and -p. A --filter that reads as a function
// pattern, which --filter selected before it became the event filter, points at -f.
func (opts *TraceOptions) eventFilter() (string, error) {
	switch len(opts.EventFilter) {
	case 0:
		return "", nil
	case 1:
	default:
		return "", InvalidInput(fmt.Errorf("--filter given twice (%s): one filter applies to every event of the session; join conditions with && or ||",
			safe(strings.Join(quoteAll(opts.EventFilter), ", "))))
	}
	expr := opts.EventFilter[0]
	if _, err := eventfilter.Parse(expr); err != nil {
		if looksLikeFunctionPattern(expr) {
			return "", InvalidInput(fmt.Errorf("--filter %s is not an event filter (FIELD OP VALUE, e.g. 'common_pid == 42'); did you mean -f/--function %s?",
				safe(strconv.Quote(expr)), safe(expr)))
		}
		return "", InvalidInput(filterError(err))
	}
	if len(opts.Events) == 0 && len(opts.Probes) == 0 {
		return "", InvalidInput(errors.New("--filter applies to the events of -e and -p, and this session enables none (functions are chosen with -f/--function)"))
	}
	return expr, nil
}

// looksLikeFunctionPattern: a single word the function filter would take (vfs_read, ext4_*,
// tcp_*:mod:ipv6), with none of a filter's operators or quotes.
func looksLikeFunctionPattern(s string) bool {
	if strings.ContainsAny(s, "=<>~&|\"'()") {
		return false
	}
	_, err := filters.Compile(s)
	return err == nil
}

func quoteAll(s []string) []string {
	out := make([]string, len(s))
	for i, v := range s {
		out[i] = strconv.Quote(v)
	}
	return out
}

// noticeLeftovers says when other sessions' instances or probes are around.
func noticeLeftovers(g *Globals, fs *tracefs.FS, self session.ID) {
	left, err := session.Leftovers(fs, self)
	if err != nil || len(left) == 0 {
		return
	}
	var what []string
	for _, l := range left {
		if l.Instance != "" {
			what = append(what, "instance "+l.Instance)
		}
		if l.Group != "" {
			what = append(what, "probe group "+l.Group)
		}
		if l.Journal {
			what = append(what, "kernel-wide graph files of session "+l.ID.String())
		}
	}
	g.Notice("instances or probes of %s (running or left behind): %s; 'ftctl reset' removes those whose session is gone",
		plural(len(left), "other ftctl session"), safe(strings.Join(what, ", ")))
}

// traceSetup sets the session up under the lock. The setup is never half-interrupted: a signal
// during it ends the session right after.
func traceSetup(ctx context.Context, g *Globals, s *session.Session) error {
	_, lock, err := g.BeginWrite(ctx)
	if err != nil {
		return err
	}
	err = s.Start(context.WithoutCancel(ctx))
	lock.Unlock()
	if err != nil {
		return sessionError(err)
	}
	for _, p := range s.Probes {
		g.Notice("probe %s/%s", s.Group, p)
	}
	return nil
}

// traceTeardown tears the session down under the lock, waited for as a write command waits
// (--lock-timeout, saying whom it waits for). Without it, Teardown still removes what is the
// session's alone, and leaves the kernel-wide files a graph session changed, with their
// journal, for 'ftctl reset' (an error says so). What failed is said.
func traceTeardown(g *Globals, fs *tracefs.FS, s *session.Session) {
	l, err := fs.Lock(context.Background(), g.LockTimeout, func(h tracefs.Holder) {
		g.Notice("waiting for the tracefs lock held by %s to tear the session down (up to %v while it stays in the same hands)", h, g.LockTimeout)
	})
	if err == nil {
		defer l.Unlock()
	}
	for _, e := range s.Teardown() {
		fmt.Fprintf(g.Err, "ftctl: teardown: %v\n", e)
	}
}

// traceStream streams the session's instance until the session ends (--duration, --count,
// the command's exit, a signal, stdout closed), then ends the command if it still runs, and
// returns what ftctl exits with: the command's status when there is one.
func traceStream(ctx context.Context, g *Globals, opts *TraceOptions, s *session.Session, command *session.Command) error {
	sctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	so := stream.Options{Duration: opts.Duration, IncludeSelf: opts.IncludeSelf}
	out := stream.Output{W: g.Out, JSON: g.machine(), Text: stream.TextOptions{Color: g.colorFor(g.Out) && !g.machine()}, Count: opts.Count}
	err, commandErr := streamWithCommand(s, command, cancel, func() error {
		return printStream(sctx, g, s.Instance, so, out, false)
	})
	switch {
	case ctx.Err() != nil:
		return ErrInterrupted
	case err != nil:
		return err
	}
	return commandStatus(command, commandErr)
}

// streamWithCommand runs stream (which reads the session's trace array until a context cancel
// ends) beside the command (nil: none), released now, until one of them ends. When the command
// exits first, tracing is turned off in the session's trace array (Session.StopTracing,
// journaled where that is the top level): the kernel then ends the stream once what was
// recorded has been read (if anything was read at all: else the stream is cancelled after 2 s,
// errCommandExited). When the stream ends first (Ctrl-C, --duration, --count, stdout closed),
// the command gets SIGINT (if the terminal has not sent it already), then SIGKILL after 2 s.
// It returns the stream's error and the command's Wait error.
func streamWithCommand(s *session.Session, command *session.Command, cancel context.CancelCauseFunc, stream func() error) (err, commandErr error) {
	var commandDone <-chan error
	if command != nil {
		command.Release()
		commandDone = command.Done()
	}
	streamDone := make(chan error, 1)
	go func() { streamDone <- stream() }()
	select {
	case err = <-streamDone:
	case commandErr = <-commandDone:
		s.StopTracing()
		select {
		case err = <-streamDone:
		case <-time.After(2 * time.Second):
			cancel(errCommandExited)
			err = <-streamDone
		}
		return err, commandErr
	}
	if command != nil {
		commandErr = command.Stop(2 * time.Second)
	}
	return err, commandErr
}

// commandStatus is what ftctl exits with once the session of a command (-- COMMAND) ended
// without a failure of its own: the command's status (nil for 0), or Wait's error when it says
// nothing of a status.
func commandStatus(command *session.Command, commandErr error) error {
	if command == nil {
		return nil
	}
	code, ok := session.ExitStatus(commandErr)
	switch {
	case !ok:
		return commandErr
	case code != 0:
		return &CommandExit{Code: code}
	}
	return nil
}

func compileAll(texts []string) ([]*filters.Pattern, error) {
	var out []*filters.Pattern
	for _, t := range texts {
		p, err := filters.Compile(t)
		if err != nil {
			return nil, InvalidInput(err)
		}
		out = append(out, p)
	}
	return out, nil
}

// sessionError shows what session.New and Start refuse as the probe commands do (the kernel's
// diagnosis, a caret); the exit code comes from the error's class, in ExitCode.
func sessionError(err error) error {
	var re *probes.RejectedError
	var fre *eventfilter.RejectedError
	var fe *eventfilter.Error
	switch {
	case errors.As(err, &re):
		return rejectedError(re)
	case errors.As(err, &fre):
		return filterRejectedError(fre)
	case errors.As(err, &fe):
		return InvalidInput(filterError(err))
	}
	return syntaxError(err) // a probe syntax error shown with its caret; others as they are
}

// filterError renders a refused --filter: the kernel's words and ftctl's, the filter with a
// caret under the mistake, and what to do.
func filterError(err error) error {
	var fe *eventfilter.Error
	if !errors.As(err, &fe) {
		return err
	}
	msg := "invalid --filter"
	if fe.Event != "" {
		msg += " for " + safe(fe.Event)
	}
	msg += ": " + safe(fe.Msg)
	if fe.Detail != "" {
		msg += ": " + safe(fe.Detail)
	}
	msg += "\n" + probes.Caret("  ", safeKeepWidth(fe.Source), fe.Pos)
	if fe.Hint != "" {
		for _, l := range strings.Split(fe.Hint, "\n") {
			msg += "\n  " + safe(l)
		}
	}
	return errors.New(msg)
}

// filterRejectedError renders the kernel refusing a --filter ftctl's checks passed (exit 3):
// its error_log entry, with the caret under the user's text.
func filterRejectedError(re *eventfilter.RejectedError) error {
	var b strings.Builder
	writeKernelRefusal(&b, "the kernel rejected the --filter for "+safe(re.Event), re.Err, re.Diagnosis)
	if re.Diagnosis == nil {
		b.WriteString("\n  " + safe(re.Err.Error()))
	}
	b.WriteString("\n  the session was removed; nothing was traced")
	return &explained{msg: b.String(), err: re}
}
