package cmd

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/ftctl/ftctl/stream"
	"github.com/ftctl/ftctl/tracefs"
)

// StreamOptions are the inputs of `ftctl stream`.
type StreamOptions struct {
	G *Globals

	Events   []string      // --event: globs on event names
	PID      int           // --pid, with HasPID
	HasPID   bool          //
	Comm     string        // --comm glob
	Grep     string        // --grep regular expression
	Count    int           // --count: stop after this many events shown (0: no limit)
	Duration time.Duration // --duration: stop after this long (0: no limit)
	Raw      bool          // --raw
	Summary  bool          // --summary: the final summary also on stdout
	Reader   string        // --reader: auto, text (trace_pipe) or binary (trace_pipe_raw)
	// IncludeSelf: --include-self, show the events of ftctl's own threads
	IncludeSelf bool

	Color bool             // colour the text output (--color; auto: a terminal, NO_COLOR unset)
	Now   func() time.Time // the clock, for the summary's duration
}

const streamJSONDoc = `NDJSON: one object per event, each on its own line, keys in this order and only when the
line had them: ` + "`ts`" + ` (seconds as a number; the raw count for the counter, uptime and x86-tsc
clocks), ` + "`cpu`, `comm`, `pid`, `tgid`" + ` (with the record-tgid option, when the kernel knew it),
` + "`flags`" + ` (irq-info), ` + "`event`" + ` (function, the probe's or tracepoint's name, marker, stack,
user_stack, graph, lost, raw), then: ` + "`func`, `parent`" + ` (each with ` + "`_offset`, `_module`, `_addr`" + `
when printed; ` + "`repeats`, `last_ts`" + ` with func-no-repeats); or ` + "`probe`, `return_to`" + ` (return
probes), ` + "`args`" + ` (an object: numbers, strings, null for (fault), arrays; anything else as the
string printed) or ` + "`text`" + ` when the arguments could not be split; or ` + "`text`" + ` and, for a
tracepoint read from trace_pipe_raw, ` + "`fields`" + ` (its own fields as recorded: numbers, strings,
arrays); or ` + "`stack`" + ` (an array of
frames); or ` + "`type`" + ` (entry, exit, call), ` + "`func`, `depth`, `duration_us`, `comment`" + ` for
function_graph; or ` + "`text`" + `. LOST lines give ` + "`{\"event\":\"lost\",\"cpu\":N,\"lost\":M}`" + ` (M null when the
kernel did not count). --raw adds ` + "`raw`" + `, the line as read. --summary ends the stream with
` + "`{\"event\":\"summary\", \"lines\", \"events\", \"shown\", \"raw\", \"own\" (events of ftctl's own threads left out), \"undecoded\" (read from the kernel but not decoded at the end: interrupted with more read than 0.3 s decodes), \"seconds\", \"end\", \"reader\" (trace_pipe or trace_pipe_raw), \"reader_why\" (why not trace_pipe_raw, with --reader auto), \"lost_reported\", \"lost_uncounted\", \"overrun\", \"dropped\", \"cpus\": [{\"cpu\", \"overrun\", \"dropped\", \"reported\"}]}`" + `.
Strings are valid UTF-8 (invalid bytes become U+FFFD) with every control character escaped.`

// streamLong is the help text of `ftctl stream`.
const streamLong = `Read the trace array's ring buffer (-B for an instance) and print each event as it comes:
aligned columns for people, or one JSON object per event with -o json.

Two readers, the same output. trace_pipe gives lines the kernel formatted; each CPU's
trace_pipe_raw gives the ring buffer's pages, which ftctl formats itself the way the kernel
would (names from /proc/kallsyms, comms from saved_cmdlines), at a fraction of the CPU the
kernel spends on text. --reader auto (the default) takes trace_pipe_raw when everything the
trace array records prints the same that way: a clock counting nanoseconds, the nop,
function or function_graph tracer (its lines made from its entry and return records as the
kernel prints them: a leaf as "func();", task banners; with funcgraph-duration and -irqs on,
-overrun and -retval off), kprobes, kretprobes, markers, stack traces and tracepoints whose
print fmt ftctl can print as the kernel does (not a hashed %p while the hash-ptr option is
on, an enum the kernel left unresolved, a string behind a kernel pointer...), the display
options at their defaults (print-parent, sym-offset, record-tgid and hash-ptr it follows), and
no --raw (which shows the kernel's lines); otherwise trace_pipe. The summary says which it
read and, with -o json --summary, why not trace_pipe_raw (naming the event).
--reader binary insists (an event it cannot format as the kernel would is shown as
"name=value" fields); --reader text never reads trace_pipe_raw.

ftctl's own events are left out: every read of the ring buffer is a read(2) like any other,
and under a filter on read paths (vfs_read, a kprobe on do_sys_openat2) ftctl would mostly see
itself. Each of its threads has a pid of its own; an event of any of them is dropped as it is
decoded and counted in the summary ("own"). --include-self shows them, as trace-cmd's
--no-filter does.

stream only reads: it changes no tracing state. What appears is what the kernel already
traces; turn things on first (a tracer, events, kprobes, 'ftctl filter set'). --event, --pid,
--comm and --grep choose what is shown, here, after the kernel recorded it: the kernel still
records everything else, and both readers consume what they read, so the events not shown are
gone from the buffer too (for 'cat trace', and for any other reader of trace_pipe). To have the
kernel record less, narrow the tracing itself (set_event_pid, set_ftrace_pid, filters).

Trace data is untrusted: a process chooses its own comm, a probe records whatever file name it
is given, anyone with access writes trace_marker. In text output every control character and
escape sequence is shown escaped (\x1b, \t, \u009b...), a backslash is doubled, invalid UTF-8
shows as \xNN; JSON strings are always valid JSON. Colour as --color says: by default only on
a terminal, never with NO_COLOR set.

A file name can hold a newline and a line shaped like an event: the binary reader keeps each
record whole; the text reader joins a probe string the kernel printed over several lines. A
trace_marker write holding a newline still reads as two lines in trace_pipe (only root or the
tracefs group can write trace_marker).

A line the parser does not understand is printed raw, never dropped. Lost events are always
shown, whatever the filters: the kernel's LOST lines as they come, and at the end a summary on
stderr comparing the per-CPU overrun and dropped counters before and after (--summary also
prints it on stdout, as the last JSON object with -o json).

stream ends after --count events or --duration, when the buffer is empty and tracing off
(after something was read), on Ctrl-C (exit 130), or quietly when its output is closed
(| head: exit 0). The buffer is read ahead, pages at a time, while the events read before are
printed: events past --count that were already read are consumed without being shown.`

// streamExample lists the examples of `ftctl stream`.
const streamExample = `  # everything the top level traces, for people
  sudo ftctl stream
  # a kprobe's events as JSON, for 10 seconds
  sudo ftctl stream -o json --event myopen --duration 10s > events.ndjson
  # the first 20 function calls of one process, in an instance
  sudo ftctl -B mytrace stream --event function --pid 4242 --count 20
  # trace_marker lines matching a regular expression, with the summary as the last JSON line
  sudo ftctl stream -o json --event marker --grep 'request [0-9]+' --summary
  # the kernel's own lines (escaped), e.g. to compare with cat trace_pipe
  sudo ftctl stream --raw | head`

// NewCmdStream builds `ftctl stream`. runF replaces the run function in tests.
func NewCmdStream(g *Globals, runF func(context.Context, *StreamOptions) error) *cobra.Command {
	opts := &StreamOptions{G: g, Now: time.Now}
	c := &cobra.Command{
		Use:         "stream",
		Short:       "Print trace events as they happen, parsed, safely (trace_pipe or trace_pipe_raw)",
		Long:        streamLong,
		Example:     streamExample,
		Annotations: map[string]string{AnnotationJSON: streamJSONDoc},
		Args:        args(cobra.NoArgs),
		RunE: func(c *cobra.Command, _ []string) error {
			opts.HasPID = c.Flags().Changed("pid")
			opts.Color = g.colorFor(g.Out)
			if runF != nil {
				return runF(c.Context(), opts)
			}
			return streamRun(c.Context(), opts)
		},
	}
	f := c.Flags()
	f.StringArrayVar(&opts.Events, "event", nil, "show only events whose name matches `NAME|GLOB` (function, marker, a probe's or tracepoint's name, stack, graph...; SYSTEM:NAME accepted, the system is not compared); repeatable")
	f.IntVar(&opts.PID, "pid", 0, "show only events of this `PID` (the thread's, or its process's with the record-tgid option)")
	f.StringVar(&opts.Comm, "comm", "", "show only events of processes whose comm matches `NAME|GLOB`")
	f.StringVar(&opts.Grep, "grep", "", "show only events whose text line, as ftctl prints it (escaped, no colour), matches `REGEXP` (Go syntax)")
	f.IntVar(&opts.Count, "count", 0, "stop after `N` events shown (0: no limit)")
	f.DurationVar(&opts.Duration, "duration", 0, "stop after `D` (e.g. 30s, 5m; 0: no limit)")
	f.BoolVar(&opts.Raw, "raw", false, "text: print the kernel's lines as they are (still escaped); JSON: add each line as \"raw\"")
	f.StringVar(&opts.Reader, "reader", "auto", "`HOW` to read the ring buffer: text (trace_pipe, formatted by the kernel), binary (per-CPU trace_pipe_raw, formatted by ftctl: less CPU per event), auto (binary when it prints the same)")
	f.BoolVar(&opts.IncludeSelf, "include-self", false, "also show the events of ftctl's own threads (left out by default)")
	f.BoolVar(&opts.Summary, "summary", false, "also print the end-of-stream summary on stdout (with -o json: as the last object)")
	registerFlagCompletion(c, "event", completeEventNames(g))
	registerFlagCompletion(c, "reader", cobra.FixedCompletions([]cobra.Completion{"auto", "text", "binary"}, noFiles))
	return c
}

// filter builds the client-side filter, refusing malformed input (exit 2).
func (o *StreamOptions) filter() (stream.Filter, error) {
	f := stream.Filter{PID: o.PID, HasPID: o.HasPID, Comm: o.Comm}
	for _, e := range o.Events {
		if _, name, ok := strings.Cut(e, ":"); ok {
			e = name // trace_pipe names the event, not its system
		}
		if e == "" {
			return f, InvalidInput(fmt.Errorf("--event needs a name or glob"))
		}
		f.Events = append(f.Events, e)
	}
	if o.Grep != "" {
		re, err := regexp.Compile(o.Grep)
		if err != nil {
			return f, InvalidInput(fmt.Errorf("--grep: %w", err))
		}
		f.Grep = re
	}
	// Each flag's globs checked on their own, so that the error names the flag.
	if err := (&stream.Filter{Comm: o.Comm}).Validate(); err != nil {
		return f, InvalidInput(fmt.Errorf("--comm: %w", err))
	}
	for _, e := range f.Events {
		if err := (&stream.Filter{Events: []string{e}}).Validate(); err != nil {
			return f, InvalidInput(fmt.Errorf("--event: %w", err))
		}
	}
	switch {
	case o.Reader != stream.ReaderAuto && o.Reader != stream.ReaderText && o.Reader != stream.ReaderBinary:
		return f, InvalidInput(fmt.Errorf("--reader must be auto, text or binary, not %q", o.Reader))
	case o.HasPID && o.PID < 0:
		return f, InvalidInput(fmt.Errorf("--pid must not be negative"))
	case o.Count < 0:
		return f, InvalidInput(fmt.Errorf("--count must not be negative"))
	case o.Duration < 0:
		return f, InvalidInput(fmt.Errorf("--duration must not be negative"))
	}
	return f, nil
}

func streamRun(ctx context.Context, o *StreamOptions) error {
	g := o.G
	filter, err := o.filter()
	if err != nil {
		return err
	}
	in, err := g.OpenInstance()
	if err != nil {
		return err
	}
	warnIfIdle(g, in)
	so := stream.Options{Reader: o.Reader, Duration: o.Duration, IncludeSelf: o.IncludeSelf}
	if o.Raw {
		so.Lines = "--raw prints the kernel's lines, which only trace_pipe has"
	}
	out := stream.Output{W: g.Out, JSON: g.machine(), Text: stream.TextOptions{Color: o.Color && !g.machine(), Raw: o.Raw},
		Filter: filter, Count: o.Count}
	return printStream(ctx, g, in, so, out, o.Summary)
}

// printStream streams the trace array in through the stream engine to out, then prints the
// loss summary (with summary, on stdout too). An interruption returns ctx's error (exit 130)
// after the summary; a stream ended by a stream.EndCause returns nil.
func printStream(ctx context.Context, g *Globals, in *tracefs.Instance, so stream.Options, out stream.Output, summary bool) error {
	defer stream.OneP()() // one P, unless GOMAXPROCS says otherwise: stream.OneP says why
	so.Notice = g.Notice
	so.GraphLines = true // function_graph's lines from trace_pipe_raw too, as the kernel prints them
	src, err := stream.Open(ctx, in, so)
	if err != nil {
		if errors.Is(err, stream.ErrReader) {
			return InvalidInput(err)
		}
		return err
	}
	defer src.Close()
	sum, err := stream.Copy(src, out)
	if sum != nil {
		if perr := printSummary(g, summary, sum); perr != nil {
			return perr
		}
	}
	return err // EPIPE (| head) ends quietly with exit 0: see Run
}

// warnIfIdle says on stderr when nothing will come: tracing off, or nothing enabled.
func warnIfIdle(g *Globals, in *tracefs.Instance) {
	if on, err := in.TracingOn(); err == nil && !on {
		g.Notice("tracing is off in the %s (tracing_on is 0): waiting until it is turned on", in.Label())
	}
	tracer, err1 := in.Tracer()
	events, err2 := in.EnabledEvents()
	if err1 == nil && err2 == nil && tracer == "nop" && len(events) == 0 {
		g.Notice("the %s has the nop tracer and no event enabled: only trace_marker writes will show", in.Label())
	}
}

// printSummary prints the end-of-stream summary: on stderr for people (unless -q, and then
// still when events were lost), and with --summary on stdout too.
func printSummary(g *Globals, summary bool, sum *stream.Summary) error {
	if !g.Quiet || sum.Lost() {
		fmt.Fprintf(g.Err, "ftctl: stream: %s\n", sum)
	}
	if !summary {
		return nil
	}
	if ok, err := g.printRecord(streamSummaryFormat, sum); ok {
		return err
	}
	_, err := fmt.Fprintf(g.Out, "summary: %s\n", sum)
	return err
}
