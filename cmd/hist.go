package cmd

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/ftctl/ftctl/eventfilter"
	"github.com/ftctl/ftctl/hist"
	"github.com/ftctl/ftctl/probes"
	"github.com/ftctl/ftctl/session"
	"github.com/ftctl/ftctl/tracefs"
)

// HistOptions are the inputs of `ftctl hist`.
type HistOptions struct {
	G        *Globals
	Event    string   // SYSTEM:EVENT
	Keys     []string // --key
	Values   []string // --value
	Sort     string   // --sort
	Filter   string   // --filter
	Size     int      // --size
	Duration time.Duration
	Interval time.Duration // --interval: print the table every Interval
}

// histLong is the help text of `ftctl hist`.
const histLong = `Aggregate an event in the kernel: a hist trigger (trace-cmd's 'hist', the kernel's
events/SYSTEM/EVENT/trigger) counts the event's hits per key, and sums values, without
streaming a single event to user space. At the end (--duration, Ctrl-C, SIGTERM, SIGHUP) the
kernel's table is read, printed, and the trigger removed. --interval also prints the table (the
counts so far) every interval, after a line with the time; with -o json, each table is then one
object a line, with "interval" (from 1) and "time".

--key names up to three fields of the event's format (events/SYSTEM/EVENT/format, 'ftctl probe
format'; common_pid, common_timestamp and common_cpu exist in all; stacktrace is the call stack),
each with a modifier the kernel announces in its tracefs README: .hex .sym .sym-offset
.execname (common_pid as a program name) .syscall .log2 .buckets=N .usecs (and .percent and
.graph for values, on kernels that have them). --value sums numeric fields (hitcount is always
counted). --sort names up to two keys or values (or hitcount), each .descending or .ascending.
--filter counts only the hits for which the kernel's event filter EXPR holds (as trace --filter).

Everything is checked against the event's format and the kernel's README before anything is
written: a mistake is exit 2 with nothing changed. What only the kernel can judge comes back as
exit 3 with its error_log entry under the trigger as written.

The trigger lives in an instance of ftctl's own (ftctl-PID-ID), so it never meets another
user's triggers on the same event (the kernel refuses a second trigger with the same keys,
values, sort and filter in one instance, EEXIST, and '!hist:...' removes the one that matches
them: in a shared instance a removal could take another's). On every exit path the exact
trigger is removed ('!' and the text written), then the instance; a session killed with
SIGKILL is removed by 'ftctl reset'.`

// histExample lists the examples of `ftctl hist`.
const histExample = `  # which processes read, and how much, for 10 seconds
  sudo ftctl hist syscalls:sys_enter_read --key common_pid.execname --value count \
      --sort count.descending --duration 5s
  # the sizes asked of read(2), as a log2 histogram
  sudo ftctl hist syscalls:sys_enter_read --key count.log2 --duration 2s
  # the table every second for 5 seconds, one JSON object a line
  sudo ftctl hist syscalls:sys_enter_read --key common_pid.execname --interval 1s \
      --duration 5s -o json
  # system calls of one process, by name
  sudo ftctl hist raw_syscalls:sys_enter --key id.syscall --filter 'common_pid == 1234' -o json`

// NewCmdHist builds `ftctl hist`.
func NewCmdHist(g *Globals, runF func(context.Context, *HistOptions) error) *cobra.Command {
	opts := &HistOptions{G: g}
	c := &cobra.Command{
		Use:     "hist SYSTEM:EVENT --key FIELD[.MOD][,FIELD] [flags]",
		Short:   "Count an event's hits by key in the kernel (a hist trigger), and print the table",
		Long:    histLong,
		Example: histExample,
		Args: func(c *cobra.Command, a []string) error {
			if len(a) != 1 {
				return InvalidInput(errors.New("want one event: ftctl hist SYSTEM:EVENT --key FIELD"))
			}
			return nil
		},
		RunE: func(c *cobra.Command, a []string) error {
			opts.Event = a[0]
			return runCmd(c, runF, histRun, opts)
		},
	}
	f := c.Flags()
	f.StringArrayVar(&opts.Keys, "key", nil, "count hits per `FIELD[.MOD][,FIELD]` (repeatable; at most three fields in all)")
	f.StringArrayVar(&opts.Values, "value", nil, "also sum numeric `FIELD[.MOD]` per key (repeatable)")
	f.StringVar(&opts.Sort, "sort", "", "sort by `FIELD[.descending]`[,FIELD] (a key, a value or hitcount)")
	f.StringVar(&opts.Filter, "filter", "", "count only the hits for which event filter `EXPR` holds, e.g. 'count > 100'")
	f.IntVar(&opts.Size, "size", 0, "size the kernel's table to `N` entries (128 to 131072; default 2048)")
	f.DurationVar(&opts.Duration, "duration", 0, "end after `D` (e.g. 10s; default: until Ctrl-C)")
	f.DurationVar(&opts.Interval, "interval", 0, "also print the table every `I` (e.g. 1s): the counts so far, with the time")
	registerFlagCompletion(c, "key", noFileCompletion)
	registerFlagCompletion(c, "value", noFileCompletion)
	registerFlagCompletion(c, "sort", noFileCompletion)
	registerFlagCompletion(c, "filter", noFileCompletion)
	registerReadyFD(c, g)
	c.ValidArgsFunction = completeEventNames(g)
	return c
}

func noFileCompletion(*cobra.Command, []string, string) ([]cobra.Completion, cobra.ShellCompDirective) {
	return nil, noFiles
}

// splitEvent reads SYSTEM:EVENT (or SYSTEM/EVENT).
func splitEvent(e string) (system, event string, err error) {
	sys, ev, ok := strings.Cut(e, ":")
	if !ok {
		sys, ev, ok = strings.Cut(e, "/")
	}
	bad := func(s string) bool { return s == "" || strings.ContainsAny(s, "/:\x00 ") || s == "." || s == ".." }
	if !ok || bad(sys) || bad(ev) {
		return "", "", InvalidInput(fmt.Errorf("event %s: want SYSTEM:EVENT (e.g. syscalls:sys_enter_read; 'ftctl list events' lists them)", safe(strconv.Quote(e))))
	}
	return sys, ev, nil
}

func histRun(ctx context.Context, opts *HistOptions) error {
	g := opts.G
	if err := ownSession(g, "hist", opts.Duration); err != nil {
		return err
	}
	if opts.Interval < 0 || (opts.Interval > 0 && opts.Interval < 100*time.Millisecond) {
		return InvalidInput(errors.New("--interval must be at least 100ms"))
	}
	system, event, err := splitEvent(opts.Event)
	if err != nil {
		return err
	}
	t, err := hist.Parse(opts.Keys, opts.Values, opts.Sort, opts.Size, opts.Filter)
	if err != nil {
		return histInvalid(err)
	}
	fs, err := g.FS()
	if err != nil {
		return err
	}
	if err := checkHistEvent(fs, system, event, t); err != nil {
		return err
	}
	s, err := session.New(fs, session.NewID(os.Getpid()), session.Spec{Triggers: []session.Trigger{{System: system, Event: event, Text: t.String()}}})
	if err != nil {
		return sessionError(err)
	}
	s.Notice = g.Notice
	if err := histSetup(ctx, g, s, nil); err != nil || g.DryRun {
		return err
	}
	defer traceTeardown(g, fs, s)
	printed := 0
	if ctx.Err() == nil {
		if err := s.Begin(); err != nil {
			return err
		}
		g.Armed("counting in the " + s.Instance.Label())
		if printed, err = histIntervals(ctx, g, opts, s, system, event); err != nil {
			return err
		}
	}
	table, err := readTable(s, system, event)
	if err != nil {
		return err
	}
	var stamp histStamp
	if opts.Interval > 0 {
		stamp = histStamp{n: printed + 1, at: time.Now()}
	}
	if err := printHist(g, system+":"+event, table, stamp); err != nil {
		return err
	}
	if ctx.Err() != nil {
		return ErrInterrupted
	}
	return nil
}

// checkHistEvent checks that the event system:event exists, takes hist triggers, and has the
// fields t names.
func checkHistEvent(fs *tracefs.FS, system, event string, t *hist.Trigger) error {
	top := fs.Top()
	if !top.HasEvent(system, event) {
		return InvalidInput(fmt.Errorf("no event %s:%s (events/%s/%s does not exist; 'ftctl list events' lists them)", safe(system), safe(event), safe(system), safe(event)))
	}
	ft := fs.DetectFeatures()
	if err := top.CheckHist(system, event, ft); err != nil {
		return err
	}
	format, err := top.EventFormat(system, event)
	if err != nil {
		return err
	}
	if err := t.Check(format, hist.KernelOf(ft.Hist)); err != nil {
		return histInvalid(err)
	}
	return nil
}

// histIntervals waits for the end (--duration, a signal), printing the table every --interval
// meanwhile; it returns how many tables it printed.
func histIntervals(ctx context.Context, g *Globals, opts *HistOptions, s *session.Session, system, event string) (int, error) {
	if opts.Interval <= 0 {
		wait(ctx, opts.Duration)
		return 0, nil
	}
	timeout, stop := after(opts.Duration)
	defer stop()
	tk := time.NewTicker(opts.Interval)
	defer tk.Stop()
	for n := 1; ; n++ {
		select {
		case <-ctx.Done():
			return n - 1, nil
		case <-timeout:
			return n - 1, nil
		case <-tk.C:
		}
		table, err := readTable(s, system, event)
		if err != nil {
			return n - 1, err
		}
		if err := printHist(g, system+":"+event, table, histStamp{n: n, at: time.Now()}); err != nil {
			return n - 1, err
		}
	}
}

// histStamp numbers a table printed every --interval (n from 1), and says when it was read;
// n is 0 without --interval.
type histStamp struct {
	n  int
	at time.Time
}

// readTable reads the table of the session's hist trigger on SYSTEM:EVENT (the only one there:
// the instance is the session's).
func readTable(s *session.Session, system, event string) (hist.Table, error) {
	b, err := s.Instance.EventHist(system, event)
	if err != nil {
		return hist.Table{}, err
	}
	tables, err := hist.ParseOutput(string(b))
	if err != nil {
		return hist.Table{}, err
	}
	if len(tables) == 0 {
		return hist.Table{}, fmt.Errorf("the kernel's hist file of %s:%s lists no table", safe(system), safe(event))
	}
	return tables[0], nil
}

// ownSession checks the global flag a command that runs in a session of its own cannot take
// (-B), and its --duration.
func ownSession(g *Globals, name string, d time.Duration) error {
	switch {
	case g.Instance != "":
		return InvalidInput(fmt.Errorf("ftctl %s runs in its own instance; -B is not for %s", name, name))
	case d < 0:
		return InvalidInput(errors.New("--duration must not be negative"))
	}
	return nil
}

// histSetup starts the session and adds what add adds, under the lock; on failure the session
// is torn down. A signal during it ends the command right after. In a dry run the writes are
// printed (tracefs.FS.DryRun) and nothing is left to tear down: the caller stops there.
func histSetup(ctx context.Context, g *Globals, s *session.Session, add func() error) error {
	_, lock, err := g.BeginWrite(ctx)
	if err != nil {
		return err
	}
	defer lock.Unlock()
	if err := s.Start(context.WithoutCancel(ctx)); err != nil {
		if te := (*session.TriggerError)(nil); errors.As(err, &te) {
			return histRejected(hist.Rejected(te.Trigger.System, te.Trigger.Event, te.Trigger.Text, te.Err))
		}
		return sessionError(err)
	}
	if add == nil {
		if g.DryRun {
			dryRunDone(g, s)
		}
		return nil
	}
	if err := add(); err != nil {
		if !g.DryRun {
			for _, e := range s.Teardown() {
				fmt.Fprintf(g.Err, "ftctl: teardown: %v\n", e)
			}
		}
		return err
	}
	if g.DryRun {
		dryRunDone(g, s)
	}
	return nil
}

// after is a channel that fires once d has passed, nil (never) for d <= 0, and its stop.
func after(d time.Duration) (<-chan time.Time, func()) {
	if d <= 0 {
		return nil, func() {}
	}
	tm := time.NewTimer(d)
	return tm.C, func() { tm.Stop() }
}

// wait returns after d (0: never) or when ctx is done.
func wait(ctx context.Context, d time.Duration) {
	timeout, stop := after(d)
	defer stop()
	select {
	case <-ctx.Done():
	case <-timeout:
	}
}

// histInvalid renders a trigger refused before it was written: the flag, a caret, a hint.
func histInvalid(err error) error {
	var he *hist.Error
	var fe *eventfilter.Error
	switch {
	case errors.As(err, &he):
		msg := "invalid " + he.Flag
		if he.Source != "" {
			msg += ": " + safe(he.Msg) + "\n" + probes.Caret("  ", safeKeepWidth(he.Source), he.Pos)
		} else {
			msg += ": " + safe(he.Msg)
		}
		if he.Hint != "" {
			msg += "\n  " + safe(he.Hint)
		}
		return InvalidInput(errors.New(msg))
	case errors.As(err, &fe):
		return InvalidInput(filterError(err))
	}
	return InvalidInput(err)
}

// histRejected renders the kernel refusing a trigger ftctl's checks passed (exit 3).
func histRejected(err error) error {
	var re *hist.RejectedError
	if !errors.As(err, &re) {
		return err
	}
	var b strings.Builder
	writeKernelRefusal(&b, "the kernel rejected the hist trigger on "+safe(re.Event), re.Err, re.Diagnosis)
	if re.Diagnosis == nil {
		b.WriteString("\n  " + safe(re.Err.Error()))
	}
	b.WriteString("\n  ftctl wrote: " + safe(re.Trigger))
	b.WriteString("\n  the session was removed; nothing was counted")
	return &explained{msg: b.String(), err: re}
}

// histJSON is `ftctl hist -o json`.
type histJSON struct {
	Interval int           `json:"interval,omitempty"` // with --interval: the table's number, from 1
	Time     string        `json:"time,omitempty"`     // with --interval: when it was read
	Event    string        `json:"event"`              // SYSTEM:EVENT
	Trigger  string        `json:"trigger"`            // the trigger as the kernel lists it
	Rows     []histRowJSON `json:"rows"`               // the table's rows, as the kernel sorted them
	Hits     uint64        `json:"hits"`               // the kernel's total of hits
	Entries  uint64        `json:"entries"`            // the kernel's count of keys
	Dropped  uint64        `json:"dropped"`            // hits the kernel's table could not hold
}

type histRowJSON struct {
	Keys   []histKeyJSON      `json:"keys"`   // the row's keys, in the order given
	Values map[string]float64 `json:"values"` // its values by name (hitcount always)
}

type histKeyJSON struct {
	Name string  `json:"name"`          // the key's field
	Text string  `json:"text"`          // as the kernel printed it: a program name, a symbol, a syscall, 2^5 for a .log2 bucket
	Num  *uint64 `json:"num,omitempty"` // its number, when it has one
}

// printHist prints a table: with a stamp (--interval), the JSON on one line (one object a
// line) with the interval and time, the text after a line with the time.
func printHist(g *Globals, event string, t hist.Table, stamp histStamp) error {
	emit := g.printDoc
	if stamp.n > 0 {
		emit = g.printRecord // with --interval, one a line
	}
	if ok, err := emit(histFormat, histDoc(event, t, stamp)); ok {
		return err
	}
	if stamp.n > 0 {
		if stamp.n > 1 {
			fmt.Fprintln(g.Out)
		}
		fmt.Fprintln(g.Out, stamp.at.Format("15:04:05"))
	}
	tw := tabwriter.NewWriter(g.Out, 0, 4, 2, ' ', 0)
	keys, values := t.Columns()
	var head []string
	for _, c := range append(keys, values...) {
		head = append(head, safe(strings.ToUpper(c)))
	}
	fmt.Fprintln(tw, strings.Join(head, "\t"))
	for _, r := range t.Rows {
		var cols []string
		for _, k := range r.Keys {
			text := k.Text
			if k.HasNum && (k.Mod == "execname" || k.Mod == "syscall") { // the name and the number, as the kernel shows them
				text += " [" + strconv.FormatUint(k.Num, 10) + "]"
			}
			cols = append(cols, safe(strings.ReplaceAll(text, "\n", " ")))
		}
		for _, v := range r.Values {
			cols = append(cols, safe(v.Text))
		}
		fmt.Fprintln(tw, strings.Join(cols, "\t"))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	_, err := fmt.Fprintf(g.Out, "%s: %d hits, %d entries, %d dropped\n", safe(event), t.Hits, t.Entries, t.Dropped)
	return err
}

// histDoc is a table as -o json prints it.
func histDoc(event string, t hist.Table, stamp histStamp) histJSON {
	out := histJSON{Event: event, Trigger: t.Trigger, Rows: []histRowJSON{}, Hits: t.Hits, Entries: t.Entries, Dropped: t.Dropped}
	if stamp.n > 0 {
		out.Interval, out.Time = stamp.n, stamp.at.UTC().Format(time.RFC3339Nano)
	}
	for _, r := range t.Rows {
		jr := histRowJSON{Values: map[string]float64{}}
		for _, k := range r.Keys {
			jk := histKeyJSON{Name: k.Name, Text: k.Text}
			if k.HasNum {
				n := k.Num
				jk.Num = &n
			}
			jr.Keys = append(jr.Keys, jk)
		}
		for _, v := range r.Values {
			jr.Values[v.Name] = v.Num
		}
		out.Rows = append(out.Rows, jr)
	}
	return out
}
