package cmd

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/ftctl/ftctl/filters"
	"github.com/ftctl/ftctl/probes"
	"github.com/ftctl/ftctl/session"
	"github.com/ftctl/ftctl/stream"
	"github.com/ftctl/ftctl/tracefs"
)

// TraceOptions are the inputs of `ftctl trace`.
type TraceOptions struct {
	G        *Globals
	Filters  []string
	Notrace  []string
	Probes   []string
	Events   []string
	Tracer   string
	PID      []int
	Duration time.Duration
	Count    int
	Command  []string
}

const errCommandExited = endCause("the command exited")

// CommandExit carries the exit status of the command `ftctl trace -- COMMAND` ran: ftctl
// exits with it.
type CommandExit struct{ Code int }

func (e *CommandExit) Error() string {
	return fmt.Sprintf("the traced command exited with status %d", e.Code)
}

// NewCmdTrace builds `ftctl trace`.
func NewCmdTrace(g *Globals, runF func(*TraceOptions) error) *cobra.Command {
	opts := &TraceOptions{G: g}
	c := &cobra.Command{
		Use:   "trace [flags] [-- COMMAND ARGS...]",
		Short: "Trace in a one-shot session that always cleans up after itself",
		Long: `Set up tracing, stream the events, and leave the system exactly as it was found. The
incident-response workhorse.

A session runs in its own instance (ftctl-PID) with its own probe group (ftctl_PID), so it never
touches another user's settings, probes or instances, nor the top level. Function filters go
through the swap protocol, probes are validated before they reach the kernel, and everything is
checked before anything is changed: a mistake exits 2 with nothing done.

The session ends at --duration, after --count events, when COMMAND exits, on Ctrl-C (exit 130),
SIGTERM or SIGHUP, or when stdout closes (| head); on every one of these it stops tracing, sets
the tracer to nop, disables its events, removes its probes and its instance, each step
attempted even when one fails. If ftctl itself is killed (SIGKILL), 'ftctl reset' removes what
the session left.

With -- COMMAND, ftctl starts COMMAND, traces only it and its children (set_ftrace_pid with
function-fork, set_event_pid with event-fork; the command is held before exec until tracing is
ready, so its first calls are seen), stops when it exits, and exits with its status.`,
		Example: `  # every call of ext4 functions for 10 seconds
  sudo ftctl trace -f 'ext4_*' --duration 10s
  # a kprobe and a tracepoint, for one command, as JSON
  sudo ftctl trace -p 'p:open do_sys_openat2 path=+0(%si):string' -e sched:sched_process_exec -o json -- ls /tmp
  # function graph of vfs_read callers in one process, first 100 events
  sudo ftctl trace --tracer function_graph -f vfs_read --pid 1234 --count 100`,
		Args: func(c *cobra.Command, a []string) error {
			if c.ArgsLenAtDash() < 0 && len(a) > 0 {
				return InvalidInput(fmt.Errorf("unexpected argument %q: a command to trace goes after --", a[0]))
			}
			if c.ArgsLenAtDash() > 0 {
				return InvalidInput(fmt.Errorf("unexpected argument %q before --", a[0]))
			}
			return nil
		},
		RunE: func(c *cobra.Command, a []string) error {
			opts.Command = a
			if runF != nil {
				return runF(opts)
			}
			return traceRun(c.Context(), opts)
		},
	}
	f := c.Flags()
	f.StringArrayVarP(&opts.Filters, "filter", "f", nil, "trace functions matching `PATTERN` (kernel glob; repeatable)")
	f.StringArrayVarP(&opts.Notrace, "notrace", "n", nil, "never trace functions matching `PATTERN` (repeatable)")
	f.StringArrayVarP(&opts.Probes, "probe", "p", nil, "define a kprobe `DEFINITION` for the session (repeatable)")
	f.StringArrayVarP(&opts.Events, "event", "e", nil, "enable `SYSTEM[:EVENT]`, e.g. sched:sched_switch (repeatable)")
	registerFlagCompletion(c, "event", completeEventNames(g))
	registerFlagCompletion(c, "filter", completeFunctionNames(g))
	registerFlagCompletion(c, "notrace", completeFunctionNames(g))
	f.StringVar(&opts.Tracer, "tracer", "", "function, function_graph or nop (default: function with -f, else nop)")
	f.IntSliceVar(&opts.PID, "pid", nil, "trace only these processes and their children")
	f.DurationVar(&opts.Duration, "duration", 0, "end the session after this long (e.g. 30s)")
	f.IntVar(&opts.Count, "count", 0, "end the session after N events")
	return c
}

func traceRun(ctx context.Context, opts *TraceOptions) error {
	g := opts.G
	if g.Instance != "" {
		return InvalidInput(errors.New("ftctl trace runs in its own instance; -B is not for trace"))
	}
	if opts.Duration < 0 || opts.Count < 0 {
		return InvalidInput(errors.New("--duration and --count must not be negative"))
	}
	spec := session.Spec{Probes: opts.Probes, Events: opts.Events, Tracer: opts.Tracer, PIDs: opts.PID}
	for _, p := range opts.PID {
		if p <= 0 {
			return InvalidInput(fmt.Errorf("--pid %d: not a process id", p))
		}
	}
	var err error
	if spec.Filters, err = compileAll(opts.Filters); err != nil {
		return err
	}
	if spec.Notrace, err = compileAll(opts.Notrace); err != nil {
		return err
	}
	var argv0 string
	if len(opts.Command) > 0 {
		if argv0, err = exec.LookPath(opts.Command[0]); err != nil {
			return InvalidInput(fmt.Errorf("cannot run %q: %w", opts.Command[0], err))
		}
	}
	fs, err := g.FS()
	if err != nil {
		return err
	}
	s, err := session.New(fs, os.Getpid(), spec)
	if err != nil {
		return sessionError(err)
	}
	s.Notice = g.Notice
	if left, err := session.Leftovers(fs); err == nil && len(left) > 0 {
		var what []string
		for _, l := range left {
			if l.Instance != "" {
				what = append(what, "instance "+l.Instance)
			}
			if l.Group != "" {
				what = append(what, "probe group "+l.Group)
			}
		}
		g.Notice("leftovers of %s whose process is gone: %s; 'ftctl reset' removes them",
			plural(len(left), "ftctl session"), safe(strings.Join(what, ", ")))
	}
	if g.DryRun {
		return InvalidInput(errors.New("ftctl trace has no --dry-run: everything it sets up lives in its own instance and is removed at the end"))
	}

	// Set up under the lock; stream without it (other ftctl writers may work meanwhile);
	// tear down under it if it can be had, and in any case.
	_, lock, err := g.BeginWrite(ctx)
	if err != nil {
		return err
	}
	// The setup must not be half-interrupted: a signal during it ends the session right after.
	setupErr := s.Start(context.WithoutCancel(ctx))
	lock.Unlock()
	if setupErr != nil {
		return sessionError(setupErr)
	}
	defer func() {
		if l, err := fs.Lock(context.Background(), 2*time.Second, nil); err == nil {
			defer l.Unlock()
		}
		for _, e := range s.Teardown() {
			fmt.Fprintf(g.Err, "ftctl: teardown: %v\n", e)
		}
	}()
	for _, p := range s.Probes {
		g.Notice("probe %s/%s", s.Group, p)
	}

	var child *exec.Cmd
	var gate *os.File
	if argv0 != "" {
		child, gate, err = startGated(argv0, opts.Command, g)
		if err != nil {
			return err
		}
		if err := s.SetPIDs([]int{child.Process.Pid}); err != nil {
			child.Process.Kill()
			child.Wait()
			return err
		}
	}
	if err := s.Begin(); err != nil {
		if child != nil {
			child.Process.Kill()
			child.Wait()
		}
		return err
	}

	sctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	so := &StreamOptions{G: g, Count: opts.Count, Duration: opts.Duration, Color: colorFor(g.Out), Now: time.Now}
	childDone := make(chan error, 1)
	if child != nil {
		gate.Write([]byte{1}) // let it exec
		gate.Close()
		go func() { childDone <- child.Wait() }()
	}
	streamDone := make(chan error, 1)
	go func() { streamDone <- streamPipe(sctx, so, s.Instance, stream.Filter{}) }()

	var childErr error
	childExited := false
	select {
	case err = <-streamDone:
	case childErr = <-childDone:
		childExited = true
		// With tracing off, the kernel ends trace_pipe once what was recorded has been read
		// (if anything was read at all: else the reader is told after 2 s).
		s.Instance.Write("tracing_on", "0")
		select {
		case err = <-streamDone:
		case <-time.After(2 * time.Second):
			cancel(errCommandExited)
			err = <-streamDone
		}
	}
	if child != nil && !childExited {
		// The session ended first (Ctrl-C, --duration, --count, stdout closed): the command
		// gets SIGINT (if the terminal has not sent it already), then SIGKILL after 2 s.
		child.Process.Signal(os.Interrupt)
		select {
		case childErr = <-childDone:
		case <-time.After(2 * time.Second):
			child.Process.Kill()
			childErr = <-childDone
		}
		childExited = true
	}
	switch {
	case ctx.Err() != nil:
		return ErrInterrupted
	case err != nil && !errors.Is(err, errCommandExited):
		return err
	}
	if child != nil {
		var ee *exec.ExitError
		if errors.As(childErr, &ee) {
			code := ee.ExitCode()
			if code < 0 { // killed by a signal
				if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
					code = 128 + int(ws.Signal())
				}
			}
			if code != 0 {
				return &CommandExit{Code: code}
			}
		} else if childErr != nil {
			return childErr
		}
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

// sessionError maps what session.New and Start refuse onto the exit-code table.
func sessionError(err error) error {
	var re *probes.RejectedError
	switch {
	case errors.As(err, &re):
		return rejectedError(re)
	case errors.Is(err, session.ErrInvalid), errors.Is(err, filters.ErrPattern), errors.Is(err, filters.ErrWouldEmpty):
		return InvalidInput(err)
	}
	var se *probes.SyntaxError
	if errors.As(err, &se) {
		return InvalidInput(syntaxError(err))
	}
	return err
}

// startGated starts COMMAND held before its exec: `ftctl __exec` waits for one byte on fd 3,
// so that ftctl can point set_ftrace_pid at the pid before the command runs a single
// instruction of its own.
func startGated(argv0 string, command []string, g *Globals) (*exec.Cmd, *os.File, error) {
	self, err := os.Executable()
	if err != nil {
		return nil, nil, err
	}
	r, w, err := os.Pipe()
	if err != nil {
		return nil, nil, err
	}
	cmd := exec.Command(self, append([]string{"__exec", "--", argv0}, command[1:]...)...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	if f, ok := g.Out.(*os.File); ok {
		cmd.Stdout = f
	}
	cmd.ExtraFiles = []*os.File{r}
	if err := cmd.Start(); err != nil {
		r.Close()
		w.Close()
		return nil, nil, err
	}
	r.Close()
	return cmd, w, nil
}

// `ftctl __exec` waits and execs on the main thread, the thread group's leader.
// An execve from another thread takes the leader's pid over, but the per-CPU pid filters of
// tracing (set_event_pid, set_ftrace_pid) were decided at that CPU's last context switch, by the
// thread's own pid: until its next one, the command was ignored, and a quick command (cat of a
// small file) lost every event (the demo showed it; TestTraceCommand repeats such a command).
// From the leader, the pid the filter was decided by is the command's.
func init() {
	if len(os.Args) > 1 && os.Args[1] == "__exec" {
		runtime.LockOSThread() // init runs on the main thread; so does main, and the gate's RunE
	}
}

// NewCmdExecGate is the hidden helper of `ftctl trace -- COMMAND`: wait for the go-ahead on
// fd 3, then exec the command in place (same pid). No go-ahead (ftctl died): exit 127.
func NewCmdExecGate() *cobra.Command {
	return &cobra.Command{
		Use:    "__exec -- PATH ARGS...",
		Short:  "internal: the gate ftctl trace starts a traced command through",
		Hidden: true,
		Args:   cobra.MinimumNArgs(1),
		RunE: func(c *cobra.Command, a []string) error {
			gate := os.NewFile(3, "gate")
			var b [1]byte
			if n, _ := io.ReadFull(gate, b[:]); n != 1 {
				os.Exit(127)
			}
			gate.Close()
			argv := append([]string{a[0]}, a[1:]...)
			err := syscall.Exec(a[0], argv, os.Environ())
			fmt.Fprintf(os.Stderr, "ftctl: exec %s: %v\n", a[0], err)
			os.Exit(127)
			return nil
		},
	}
}

const resetJSON = `Without --all, one object: "removed", an array with one object per dead session whose
leftovers were removed (or would be, with --dry-run): "pid", "instance" (ftctl-PID), "group"
(ftctl_PID) and "probes" (its event names); instance or group is absent when that part was
already gone.`

// NewCmdReset builds `ftctl reset`.
func NewCmdReset(g *Globals) *cobra.Command {
	var all, yes bool
	c := &cobra.Command{
		Use:   "reset",
		Short: "Remove what dead ftctl sessions left behind (--all: everything, to boot defaults)",
		Long: `Without --all, remove only the leftovers of ftctl trace sessions whose process is gone
(killed with SIGKILL, say): their instances ftctl-PID and probe groups ftctl_PID, saying what
it removes. Running sessions, other users' probes and instances, and the top level are not
touched. 'trace-cmd reset' by contrast wipes every kprobe on the system.

With --all, return the whole tracing state to boot defaults: every instance removed, every
kprobe and uprobe removed (each disabled first), the top-level tracer, function filters,
notrace/graph/pid lists, events, event filters and triggers cleared, the buffer emptied,
tracing on. It asks for confirmation on a terminal; scripts pass --yes.
--dry-run prints what either would do.`,
		Example: `  sudo ftctl reset
  sudo ftctl reset --dry-run
  sudo ftctl reset --all --yes`,
		Args:        args(cobra.NoArgs),
		Annotations: map[string]string{AnnotationJSON: resetJSON},
		RunE: func(c *cobra.Command, _ []string) error {
			fs, err := g.FS()
			if err != nil {
				return err
			}
			if all {
				if !yes && !g.DryRun {
					if !isTerminal(g.In) {
						return InvalidInput(errors.New("reset --all changes the whole tracing state: confirm with --yes"))
					}
					fmt.Fprint(g.Err, "Return ALL tracing state to boot defaults (every instance, kprobe, filter and event of every user)? [y/N] ")
					var answer string
					fmt.Fscanln(g.In, &answer)
					if a := strings.ToLower(strings.TrimSpace(answer)); a != "y" && a != "yes" {
						return InvalidInput(errors.New("not confirmed; nothing changed"))
					}
				}
				_, lock, err := g.BeginWrite(c.Context())
				if err != nil {
					return err
				}
				defer lock.Unlock()
				errs := session.ResetAll(fs, g.Notice)
				if len(errs) > 0 {
					return fmt.Errorf("reset --all: %w", errors.Join(errs...))
				}
				return nil
			}
			_, lock, err := g.BeginWrite(c.Context())
			if err != nil {
				return err
			}
			defer lock.Unlock()
			left, err := session.Leftovers(fs)
			if err != nil {
				return err
			}
			var errs []error
			for _, l := range left {
				errs = append(errs, session.RemoveLeftover(fs, l)...)
				if !g.JSON() {
					var what []string
					if l.Instance != "" {
						what = append(what, "instance "+l.Instance)
					}
					if l.Group != "" {
						what = append(what, "probes "+l.Group+"/{"+strings.Join(l.Probes, ",")+"}")
					}
					verb := "removed"
					if g.DryRun {
						verb = "would remove"
					}
					fmt.Fprintf(g.Out, "%s leftovers of session %d: %s\n", verb, l.PID, safe(strings.Join(what, ", ")))
				}
			}
			if g.JSON() {
				if left == nil {
					left = []session.Leftover{}
				}
				if err := writeJSON(g.Out, map[string]any{"removed": left}); err != nil {
					return err
				}
			} else if len(left) == 0 {
				g.Notice("no leftovers of dead ftctl sessions")
			}
			if len(errs) > 0 {
				return fmt.Errorf("reset: %w", errors.Join(errs...))
			}
			return nil
		},
	}
	c.Flags().BoolVar(&all, "all", false, "return ALL tracing state to boot defaults (every user's)")
	c.Flags().BoolVar(&yes, "yes", false, "do not ask for confirmation (--all)")
	return c
}

func isTerminal(r io.Reader) bool {
	f, ok := r.(*os.File)
	return ok && tracefs.IsTerminal(f)
}
