package cmd

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/ftctl/ftctl/count"
	"github.com/ftctl/ftctl/filters"
	"github.com/ftctl/ftctl/hist"
	"github.com/ftctl/ftctl/session"
	"github.com/ftctl/ftctl/stream"
	"github.com/ftctl/ftctl/tracefs"
)

// CountOptions are the inputs of `ftctl count`.
type CountOptions struct {
	G        *Globals
	Patterns []string
	Duration time.Duration
	Interval time.Duration
	Top      int
	PID      int
	Method   string
	Command  []string
}

// countLong is the help text of `ftctl count`.
const countLong = `How often kernel functions are called (perf-tools' funccount, bcc's funccount): the
functions the PATTERNs select (the kernel's glob, as filter set: vfs_*, *_read, ext4_*:mod:ext4;
every pattern must select a traceable function), counted in ftctl's own session (instance
ftctl-PID-ID), by the cheapest method the kernel allows:

  hist    for up to 64 functions: one probe event (kprobes where the kernel has kprobe
          events; fprobes where it has none, for a name kallsyms lists twice, which an fprobe
          takes on each function of the name, and where the kernel refuses a kprobe on one of
          the functions, if the tracefs README announces fprobes) with a point per function,
          and a hist trigger keyed by the probed function: the kernel counts, nothing is
          streamed.
  stream  otherwise (more functions, a name kallsyms lists twice without fprobes, no hist
          triggers): the function tracer on the functions, every call an event read and
          counted. Also when the kernel refuses the probe point of one of the functions (a
          function the kprobe blacklist holds, say, where fprobes cannot take it either): the
          hist method's pieces are removed and the stream counts, with the reason said; with
          --method hist that refusal is exit 3.

The method and why are said on stderr (and in each JSON row); --method chooses it. The kernel's
function profiler (function_profile_enabled) is not used: it is one profile for the whole
kernel, over every function, and Debian's kernels lack it.

At the end (--duration, COMMAND's exit, Ctrl-C, SIGTERM, SIGHUP) the counts are printed, most
called first, then every piece is removed (the trigger, the probes, the instance), each by the
exact text written. --interval prints the calls of each interval as it ends. --top keeps the N
most called. Functions a glob selects are listed when called; a function a PATTERN names
exactly (no wildcard) always is, with its count, 0 included, in text as with -o json (--top
aside): "not called" is a row with 0, never a missing row. With the stream method, events the
ring buffer lost make the counts lower bounds: that is said.

--pid PID counts the calls of task PID only (a thread id); with -- COMMAND, ftctl starts COMMAND
and counts its own calls (not its children's), ending when it exits, and exits as trace --
COMMAND does. -o json prints one object per line, per function and interval:
{"interval":1,"time":"...","seconds":1.0,"func":"vfs_read","count":1234,"method":"hist"},
then, once the count ended, a summary (seconds: the whole count's; functions: how many the
patterns selected, called: how many of them were called, calls: every call, --top aside;
lower_bound: the stream lost events):
{"summary":true,"intervals":1,"time":"...","seconds":1.0,"functions":2,"called":1,"calls":1234,
"method":"hist","lower_bound":false}. No summary means the count did not end normally.`

// countExample lists the examples of `ftctl count`.
const countExample = `  # the vfs_ functions called in 5 seconds
  sudo ftctl count 'vfs_*' --duration 5s
  # the 10 most called, every second, until Ctrl-C
  sudo ftctl count 'vfs_*' 'ksys_*' --interval 1s --top 10
  # the reads of one command, as JSON
  sudo ftctl count vfs_read -o json -- dd if=/proc/version of=/dev/null bs=1
  # many functions: counted from the stream
  sudo ftctl count 'ext4_*' --duration 2s`

// NewCmdCount builds `ftctl count`.
func NewCmdCount(g *Globals, runF func(context.Context, *CountOptions) error) *cobra.Command {
	opts := &CountOptions{G: g}
	c := &cobra.Command{
		Use:     "count PATTERN... [flags] [-- COMMAND ARGS...]",
		Short:   "Count the calls of kernel functions (funccount)",
		Long:    countLong,
		Example: countExample,
		Args: func(c *cobra.Command, a []string) error {
			dash := c.ArgsLenAtDash()
			if dash == 0 || len(a) == 0 {
				return InvalidInput(errors.New("want at least one pattern: ftctl count PATTERN... [-- COMMAND]"))
			}
			return nil
		},
		RunE: func(c *cobra.Command, a []string) error {
			if dash := c.ArgsLenAtDash(); dash > 0 {
				opts.Patterns, opts.Command = a[:dash], a[dash:]
			} else {
				opts.Patterns = a
			}
			return runCmd(c, runF, countRun, opts)
		},
	}
	f := c.Flags()
	f.DurationVar(&opts.Duration, "duration", 0, "end after `D` (e.g. 10s; default: until Ctrl-C or COMMAND's exit)")
	f.DurationVar(&opts.Interval, "interval", 0, "print each interval's calls every `I` (e.g. 1s)")
	f.IntVar(&opts.Top, "top", 0, "list only the `N` most called functions (of each interval)")
	f.IntVar(&opts.PID, "pid", 0, "count only the calls of task `PID`")
	f.StringVar(&opts.Method, "method", "", "count with `METHOD`: hist or stream (default: the cheapest the kernel allows)")
	registerFlagCompletion(c, "method", cobra.FixedCompletions([]cobra.Completion{"hist", "stream"}, noFiles))
	registerReadyFD(c, g)
	c.ValidArgsFunction = completeFunctionNames(g)
	return c
}

// countError maps a counter's errors to the exit table.
func countError(err error) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, count.ErrMethod):
		return InvalidInput(err)
	case errors.As(err, new(*hist.RejectedError)):
		return histRejected(err)
	case errors.As(err, new(*count.ProbeRefusedError)):
		return err
	}
	return sessionError(err)
}

// armCounter sets the session of first (count.New of o) up under the lock (for the command, when
// there is one), the stream counting where the kernel refuses the hist method's probe points
// (count.Arm); on failure nothing is left. In a dry run the set-up is printed.
func armCounter(ctx context.Context, g *Globals, fs *tracefs.FS, first *count.Counter, o count.Options, pid int) (*count.Counter, error) {
	fallback := func(refused *count.ProbeRefusedError) {
		g.Notice("%s: counting by the stream instead", safe(refused.Error()))
	}
	c, err := count.Arm(first, fs, o, fallback, func(c *count.Counter) error {
		c.Session().Notice = g.Notice
		c.SetPID(pid)
		_, lock, err := g.BeginWrite(ctx)
		if err != nil {
			return err
		}
		defer lock.Unlock()
		if err := c.Start(context.WithoutCancel(ctx)); err != nil {
			return err
		}
		if g.DryRun {
			dryRunDone(g, c.Session())
		}
		return nil
	})
	return c, countError(err)
}

// countInterval is what countRun prints at the end of each interval.
type countInterval struct {
	n       int
	at      time.Time
	seconds float64
	rows    []count.Row
}

func countRun(ctx context.Context, opts *CountOptions) error {
	g := opts.G
	if err := ownSession(g, "count", opts.Duration); err != nil {
		return err
	}
	method, err := opts.method()
	if err != nil {
		return err
	}
	patterns, err := compileAll(opts.Patterns)
	if err != nil {
		return err
	}
	argv0, err := lookCommand(opts.Command)
	if err != nil {
		return err
	}
	fs, err := g.FS()
	if err != nil {
		return err
	}
	co := count.Options{Patterns: patterns, Method: method, PID: opts.PID}
	first, err := count.New(fs, co)
	if err != nil {
		return countError(err)
	}
	command, pid, err := commandToTrace(g, fs, argv0, opts.Command)
	if err != nil {
		return err
	}
	abort := func(err error) error {
		if command != nil {
			command.Abort()
		}
		return err
	}
	counter, err := armCounter(ctx, g, fs, first, co, pid)
	if err != nil || g.DryRun {
		if err == nil {
			countChoiceNotice(g, counter)
		}
		return abort(err)
	}
	s := counter.Session()
	defer traceTeardown(g, fs, s)
	defer counter.Close()
	countChoiceNotice(g, counter)
	if ctx.Err() != nil {
		return abort(ErrInterrupted)
	}
	if counter.Choice.Method == count.Stream {
		defer stream.OneP()() // the stream engine decodes in one goroutine: one P, as ftctl stream
	}
	if err := counter.Begin(ctx); err != nil {
		return abort(err)
	}
	g.Armed("counting in the " + s.Instance.Label())
	return countUntilEnd(ctx, opts, namedFuncs(patterns), counter, command)
}

// method checks the options that need no kernel (exit 2 for a mistake) and returns --method.
func (opts *CountOptions) method() (count.Method, error) {
	switch {
	case opts.Interval < 0:
		return "", InvalidInput(errors.New("--interval must not be negative"))
	case opts.Interval > 0 && opts.Interval < 100*time.Millisecond:
		return "", InvalidInput(errors.New("--interval must be at least 100ms"))
	case opts.Top < 0:
		return "", InvalidInput(errors.New("--top must not be negative"))
	case opts.PID < 0 || (opts.PID > 0 && len(opts.Command) > 0):
		return "", InvalidInput(errors.New("--pid takes a task id, and not with -- COMMAND (which counts the command's calls)"))
	}
	method := count.Method(opts.Method)
	if method != count.Auto && method != count.Hist && method != count.Stream {
		return "", InvalidInput(fmt.Errorf("--method %s: want hist or stream", safe(strconv.Quote(opts.Method))))
	}
	return method, nil
}

// countChoiceNotice says on stderr how the counter counts, and why.
func countChoiceNotice(g *Globals, counter *count.Counter) {
	g.Notice("counting %s by %s: %s", plural(len(counter.Choice.Funcs), "function"), counter.Choice.Method, safe(counter.Choice.Why))
}

// countUntilEnd runs a begun count to its end (--duration, the command's exit, a signal, a read
// error), printing each --interval as it ends, then the last one and the summary; the command is
// released at the start and stopped at the end when it still runs.
func countUntilEnd(ctx context.Context, opts *CountOptions, named []string, counter *count.Counter, command *session.Command) error {
	g := opts.G
	var commandDone <-chan error
	if command != nil {
		command.Release()
		commandDone = command.Done()
	}
	timeout, stop := after(opts.Duration)
	defer stop()
	var tick <-chan time.Time
	if opts.Interval > 0 {
		tk := time.NewTicker(opts.Interval)
		defer tk.Stop()
		tick = tk.C
	}
	out := &countOutput{g: g, intervals: opts.Interval > 0, top: opts.Top, named: named,
		method: string(counter.Choice.Method), functions: len(counter.Choice.Funcs), start: time.Now()}
	commandErr, commandEnded, readErr := countWait(ctx, counter, commandDone, timeout, tick, out.interval)
	// The last interval ends now: what the stream still holds was recorded before, and is read
	// and counted (Stop), but the time it takes is not the interval's.
	end := time.Now()
	if command != nil && !commandEnded {
		commandErr = command.Stop(2 * time.Second)
	}
	// ended by its command or duration, everything read is counted; by a signal, after 2 s
	if err := counter.Stop(2*time.Second, ctx.Err() == nil); err != nil && readErr == nil {
		readErr = err
	}
	if readErr == nil {
		readErr = countEmit(counter, out.interval, end)
	}
	lost := false
	if sum := counter.Summary(); sum != nil && sum.Lost() {
		g.Notice("the ring buffer lost events: the counts are lower bounds (%s)", sum)
		lost = true
	}
	if readErr == nil {
		readErr = out.summary(end, lost)
	}
	switch {
	case readErr != nil:
		return readErr
	case ctx.Err() != nil:
		return ErrInterrupted
	}
	return commandStatus(command, commandErr)
}

// countWait emits the counts at each tick until the command exits (commandEnded, with its
// error), ctx is done, timeout fires, or the counter fails (readErr, as a failed emit does).
func countWait(ctx context.Context, counter *count.Counter, commandDone <-chan error, timeout, tick <-chan time.Time,
	emit func(count.Counts, time.Time) error) (commandErr error, commandEnded bool, readErr error) {
	for {
		select {
		case commandErr = <-commandDone:
			return commandErr, true, nil
		case <-ctx.Done():
			return nil, false, nil
		case <-timeout:
			return nil, false, nil
		case readErr = <-counter.Done():
			return nil, false, readErr
		case <-tick:
			if err := countEmit(counter, emit, time.Now()); err != nil {
				return nil, false, err
			}
		}
	}
}

// countEmit emits the counter's counts so far as of now.
func countEmit(counter *count.Counter, emit func(count.Counts, time.Time) error, now time.Time) error {
	cur, err := counter.Counts()
	if err != nil {
		return err
	}
	return emit(cur, now)
}

// countOutput prints what count counted: each interval as it ends, and with -o json a last
// record that sums them up, so that a script tells "0 calls" from "did not run".
type countOutput struct {
	g         *Globals
	intervals bool     // --interval: each interval under its time
	top       int      // --top
	named     []string // the functions a pattern names exactly: a row each, 0 included
	method    string
	functions int // how many the patterns selected
	start     time.Time

	prev   count.Counts
	n      int
	last   time.Time
	calls  uint64          // over every interval, --top aside
	called map[string]bool // the functions called at least once
}

// namedFuncs are the functions patterns name exactly (no wildcard), each once, in order.
func namedFuncs(patterns []*filters.Pattern) []string {
	var out []string
	for _, p := range patterns {
		if name, ok := p.ExactName(); ok && !slices.Contains(out, name) {
			out = append(out, name)
		}
	}
	return out
}

// interval prints the calls counted since the last interval (cur: since the counting began).
func (o *countOutput) interval(cur count.Counts, now time.Time) error {
	if o.n == 0 {
		o.last, o.called = o.start, map[string]bool{}
	}
	o.n++
	all := count.Delta(o.prev, cur, 0)
	for _, r := range all {
		o.calls += r.Count
		o.called[r.Func] = true
	}
	rows := all
	if o.top > 0 && len(rows) > o.top {
		rows = rows[:o.top]
	}
	// every function named has its row, 0 included, in text as in JSON: a script (or a reader)
	// tells "not called" from "not counted"
	iv := countInterval{n: o.n, at: now, seconds: now.Sub(o.last).Seconds(), rows: withNamed(rows, all, o.named)}
	o.prev, o.last = cur, now
	return printCount(o.g, o.intervals, o.method, iv)
}

// withNamed adds to rows a row for each function named that rows lack: its count in all (the
// interval's rows, --top aside), 0 when it was not called. A kernel's key may add the module
// ("name [module]": a hist key of a module's function).
func withNamed(rows, all []count.Row, named []string) []count.Row {
	of := func(rs []count.Row, name string) (count.Row, bool) {
		for _, r := range rs {
			if r.Func == name || strings.HasPrefix(r.Func, name+" [") {
				return r, true
			}
		}
		return count.Row{}, false
	}
	out := rows
	for _, name := range named {
		if _, ok := of(rows, name); ok {
			continue
		}
		r, ok := of(all, name)
		if !ok {
			r = count.Row{Func: name}
		}
		out = append(out[:len(out):len(out)], r)
	}
	return out
}

// summary ends -o json with one record over the whole count (text has its totals per interval).
func (o *countOutput) summary(end time.Time, lowerBound bool) error {
	_, err := o.g.printRecord(countSummaryFormat, countSummaryJSON{Summary: true, Intervals: o.n, Time: end.UTC().Format(time.RFC3339Nano),
		Seconds: float64(int64(end.Sub(o.start).Seconds()*1000)) / 1000, Functions: o.functions, Called: len(o.called),
		Calls: o.calls, Method: o.method, LowerBound: lowerBound})
	return err
}

// countJSON is one row of `ftctl count -o json`.
type countJSON struct {
	Interval int     `json:"interval"` // the interval's number, from 1 (1 without --interval)
	Time     string  `json:"time"`     // when the interval ended (RFC 3339, UTC)
	Seconds  float64 `json:"seconds"`  // the interval's length
	Func     string  `json:"func"`     // the function (" [module]" after a module's, as the kernel keys it)
	Count    uint64  `json:"count"`    // its calls in the interval (0 for a function named and not called)
	Method   string  `json:"method"`   // how it was counted: hist (in the kernel) or stream
}

// countSummaryJSON is the last record of `ftctl count -o json`.
type countSummaryJSON struct {
	Summary    bool    `json:"summary"` // always true: the record that is not a function's
	Intervals  int     `json:"intervals"`
	Time       string  `json:"time"`
	Seconds    float64 `json:"seconds"`   // the whole count's
	Functions  int     `json:"functions"` // the patterns selected
	Called     int     `json:"called"`    // of them, called at least once
	Calls      uint64  `json:"calls"`     // every call, --top aside
	Method     string  `json:"method"`
	LowerBound bool    `json:"lower_bound"` // the stream lost events: the counts are at least these
}

func printCount(g *Globals, intervals bool, method string, iv countInterval) error {
	if g.machine() {
		for _, r := range iv.rows {
			_, err := g.printRecord(countFormat, countJSON{Interval: iv.n, Time: iv.at.UTC().Format(time.RFC3339Nano),
				Seconds: float64(int64(iv.seconds*1000)) / 1000, Func: r.Func, Count: r.Count, Method: method})
			if err != nil {
				return err
			}
		}
		return nil
	}
	if intervals {
		if iv.n > 1 {
			fmt.Fprintln(g.Out)
		}
		fmt.Fprintf(g.Out, "%s (%.1fs)\n", iv.at.Format("15:04:05"), iv.seconds)
	}
	width := len("FUNC")
	names := make([]string, len(iv.rows))
	for i, r := range iv.rows {
		names[i] = safe(r.Func)
		width = max(width, len(names[i]))
	}
	fmt.Fprintf(g.Out, "%-*s  %12s\n", width, "FUNC", "COUNT")
	var total uint64
	for i, r := range iv.rows {
		if _, err := fmt.Fprintf(g.Out, "%-*s  %12d\n", width, names[i], r.Count); err != nil {
			return err
		}
		total += r.Count
	}
	_, err := fmt.Fprintf(g.Out, "%s, %s\n", plural(len(iv.rows), "function"), plural(int(total), "call"))
	return err
}

// lookCommand finds the program of -- COMMAND ("" when there is none): a *CommandStartError
// (exit 126 or 127) when it cannot be run.
func lookCommand(command []string) (string, error) {
	if len(command) == 0 {
		return "", nil
	}
	argv0, err := exec.LookPath(command[0])
	if err != nil {
		return "", &CommandStartError{Name: command[0], NotFound: errors.Is(err, exec.ErrNotFound) || errors.Is(err, os.ErrNotExist), Err: err}
	}
	return argv0, nil
}
