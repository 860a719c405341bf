package cmd

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/ftctl/ftctl/count"
	"github.com/ftctl/ftctl/hist"
	"github.com/ftctl/ftctl/session"
	"github.com/ftctl/ftctl/tracefs"
)

// LatencyOptions are the inputs of `ftctl latency`.
type LatencyOptions struct {
	G        *Globals
	Func     string
	By       string // "", "comm" or "pid"
	PID      int
	Duration time.Duration
	Command  []string
	// NoCorrect: the durations as measured, the probes' own cost left in (--no-correct)
	NoCorrect bool
}

// NewCmdLatency builds `ftctl latency`.
func NewCmdLatency(g *Globals, runF func(context.Context, *LatencyOptions) error) *cobra.Command {
	opts := &LatencyOptions{G: g}
	c := &cobra.Command{
		Use:   "latency FUNC [flags] [-- COMMAND ARGS...]",
		Short: "A log2 histogram of a kernel function's durations, computed in the kernel",
		Long: `How long FUNC takes, as a histogram of powers of two of microseconds (funclatency,
bpftrace's hist), computed in the kernel: nothing is streamed to user space.

ftctl defines, in its own session (instance ftctl-PID-ID, probe group ftctl_PID_ID), a probe on
FUNC's entry and one on its return (a kprobe and a kretprobe, one probe point to the kernel;
fprobes where it has no kprobe events), a synthetic event ftctl_PID_ID_lat carrying the time
between them, and three hist triggers: the entry's saves the time per task, the return's
computes the delta and fires the synthetic event (onmatch().trace()), the synthetic event's
counts the deltas by .log2. At the end (--duration, COMMAND's exit, Ctrl-C, SIGTERM, SIGHUP)
the kernel's table is read and printed, then every piece is removed in the reverse order,
each by the exact text written.

FUNC is one function: any function the kernel lets kprobes probe (one ftrace can trace,
listed in available_filter_functions, where fprobes measure it). --pid PID
counts the calls of task PID only (the kernel's common_pid: a thread id); with -- COMMAND,
ftctl starts COMMAND and counts its own calls, ending when it exits (COMMAND's children are
not counted), and exits as trace -- COMMAND does: with COMMAND's status, 125 when ftctl itself
failed, 126 or 127 when COMMAND cannot be run or found. --by comm or --by pid gives one
histogram per program name or per task.`,
		Example: `  # how long vfs_read takes, for 5 seconds
  sudo ftctl latency vfs_read --duration 5s
  # per program, as JSON
  sudo ftctl latency do_sys_openat2 --by comm -o json --duration 2s
  # the reads of one command
  sudo ftctl latency vfs_read -- dd if=/proc/version of=/dev/null bs=1
  # until Ctrl-C
  sudo ftctl latency vfs_read --by pid`,
		Args: func(c *cobra.Command, a []string) error {
			dash := c.ArgsLenAtDash()
			if dash == 0 || (dash < 0 && len(a) != 1) || dash > 1 {
				return InvalidInput(errors.New("want one function: ftctl latency FUNC [-- COMMAND]"))
			}
			return nil
		},
		RunE: func(c *cobra.Command, a []string) error {
			opts.Func = a[0]
			opts.Command = a[1:]
			return runCmd(c, runF, latencyRun, opts)
		},
	}
	f := c.Flags()
	f.StringVar(&opts.By, "by", "", "one histogram per `KEY`: comm or pid")
	f.IntVar(&opts.PID, "pid", 0, "count only the calls of task `PID`")
	f.DurationVar(&opts.Duration, "duration", 0, "end after `D` (e.g. 10s; default: until Ctrl-C or COMMAND's exit)")
	f.BoolVar(&opts.NoCorrect, "no-correct", false, "leave the probes' own cost in the durations (measured, not taken off)")
	registerFlagCompletion(c, "by", cobra.FixedCompletions([]cobra.Completion{"comm", "pid"}, noFiles))
	registerReadyFD(c, g)
	c.ValidArgsFunction = completeFunctionNames(g)
	return c
}

func latencyRun(ctx context.Context, opts *LatencyOptions) error {
	g := opts.G
	if err := ownSession(g, "latency", opts.Duration); err != nil {
		return err
	}
	if err := opts.check(); err != nil {
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
	top := fs.Top()
	ft := fs.DetectFeatures()
	if err := count.CheckLatency(fs, ft); err != nil {
		return err
	}
	if err := checkLatencyFunc(g, top, opts.Func); err != nil {
		return err
	}
	fprobes := count.LatencyFprobes(ft)
	bias := latencyBias(ctx, g, fs, fprobes, opts.NoCorrect)
	command, pid, err := commandToTrace(g, fs, argv0, opts.Command)
	if err != nil {
		return err
	}
	if argv0 != "" {
		opts.PID = pid
	}
	id := session.NewID(os.Getpid())
	l := count.LatencySetupCorrected(id, opts.Func, fprobes, opts.PID, opts.By, bias.US)
	s, err := latencySession(ctx, g, fs, id, l)
	if err != nil || g.DryRun {
		if command != nil {
			command.Abort()
		}
		return latencyFuncError(top, opts.Func, err)
	}
	defer traceTeardown(g, fs, s)
	latencyNotice(g, opts.Func, s, l)
	commandErr, err := measureFor(ctx, g, s, command, opts.Duration)
	if err != nil {
		return err
	}
	table, err := latencyTable(s, l)
	if err != nil {
		return err
	}
	if err := printLatency(g, opts.Func, opts.By, table, bias); err != nil {
		return err
	}
	if ctx.Err() != nil {
		return ErrInterrupted
	}
	return commandStatus(command, commandErr)
}

// latencySession sets the session of l up (in a dry run, prints it).
func latencySession(ctx context.Context, g *Globals, fs *tracefs.FS, id session.ID, l count.Latency) (*session.Session, error) {
	s, err := session.New(fs, id, session.Spec{Dynamic: l.Dynamic, Triggers: l.Triggers})
	if err != nil {
		return nil, sessionError(err)
	}
	s.Notice = g.Notice
	return s, histSetup(ctx, g, s, nil)
}

// latencyBias is the probes' own cost to take off the durations: the one measured earlier in
// this boot, else measured now (and kept); none with --no-correct, or when it cannot be
// measured (said on stderr). A dry run takes the one kept, so that its plan is the run's; where
// none is kept yet, it says that the run measures it first and plans the uncorrected set-up.
func latencyBias(ctx context.Context, g *Globals, fs *tracefs.FS, fprobe, no bool) count.Bias {
	if no {
		return count.Bias{}
	}
	if b, ok := count.LoadBias(fs, fprobe); ok {
		return b
	}
	if g.DryRun {
		g.Notice("dry run: no probe cost is measured in this boot yet: the run first measures it, in a session of its own on %s, and then sets up these writes with the entry's timestamp moved by it (--no-correct: exactly these)", count.NearZero)
		return count.Bias{}
	}
	b, err := count.MeasureBias(fs, fprobe, func(s *session.Session) error {
		s.Notice = g.Notice
		return histSetup(ctx, g, s, nil)
	})
	if err != nil {
		g.Notice("durations not corrected: measuring the probes' own cost on %s: %s", count.NearZero, safe(err.Error()))
		return count.Bias{}
	}
	if err := count.SaveBias(fs, b); err != nil {
		g.Notice("%s", safe(err.Error()))
	}
	return b
}

// latencyNotice says on stderr what measures fn: the probes and the synthetic event.
func latencyNotice(g *Globals, fn string, s *session.Session, l count.Latency) {
	what := "kprobe and kretprobe"
	if l.Kind == 'f' {
		what = "fprobes"
	}
	g.Notice("%s: %s %s/%s and %s/%s, synthetic event %s", safe(fn), what, s.Group, l.Entry, s.Group, l.Return, l.Synthetic)
}

// check refuses --by and --pid values that do not go (exit 2).
func (opts *LatencyOptions) check() error {
	if opts.By != "" && opts.By != "comm" && opts.By != "pid" {
		return InvalidInput(fmt.Errorf("--by %s: want comm or pid", safe(strconv.Quote(opts.By))))
	}
	if opts.PID < 0 || (opts.PID > 0 && len(opts.Command) > 0) {
		return InvalidInput(errors.New("--pid takes a task id, and not with -- COMMAND (which counts the command's calls)"))
	}
	return nil
}

// checkLatencyFunc checks FUNC's form; a dry run, which defines no probe, also checks it
// against the index of traceable functions. A run leaves that to the kernel (latencyFuncError).
func checkLatencyFunc(g *Globals, top *tracefs.Instance, fn string) error {
	err := count.CheckLatencyName(fn)
	if err == nil && g.DryRun {
		err = count.CheckLatencyFunc(top, fn)
	}
	if errors.Is(err, count.ErrLatencyFunc) {
		return InvalidInput(err)
	}
	return err
}

// latencyFuncError is err, or invalid input (exit 2) where the kernel refused FUNC's probes
// and FUNC is not a traceable function.
func latencyFuncError(top *tracefs.Instance, fn string, err error) error {
	if err == nil {
		return nil
	}
	err = count.LatencyFuncRefused(top, fn, err)
	if errors.Is(err, count.ErrLatencyFunc) {
		return InvalidInput(err)
	}
	return err
}

// measureFor turns tracing on and waits for the end of the measure: the command's exit (it is
// released first, and stopped at the other ends), d (0: none) or ctx's end (a signal). A
// signal before tracing is on aborts the command. It returns the command's end.
func measureFor(ctx context.Context, g *Globals, s *session.Session, command *session.Command, d time.Duration) (commandErr, err error) {
	if ctx.Err() == nil {
		err = s.Begin()
	}
	if ctx.Err() != nil || err != nil {
		if command != nil {
			command.Abort()
		}
		return nil, err
	}
	g.Armed("measuring in the " + s.Instance.Label())
	if command == nil {
		wait(ctx, d)
		return nil, nil
	}
	command.Release()
	timeout, stop := after(d)
	defer stop()
	select {
	case commandErr = <-command.Done():
	case <-ctx.Done():
		commandErr = command.Stop(2 * time.Second)
	case <-timeout:
		commandErr = command.Stop(2 * time.Second)
	}
	return commandErr, nil
}

// latencyTable reads the histogram: the synthetic event's table, with the calls the entry's and
// the return's tables dropped. Those hold one entry per task that called FUNC, and the kernel
// never removes one: once they are full (2048 tasks by default), the calls of any new task are
// dropped there, before the synthetic event, and counted only in those tables' own hist files.
// A call dropped at its entry is in general dropped at its return too (the two tables fill
// with the same tasks), so the larger of the two counts is the calls lost.
func latencyTable(s *session.Session, l count.Latency) (hist.Table, error) {
	table, err := readTable(s, "synthetic", l.Synthetic)
	if err != nil {
		return table, err
	}
	var lost uint64
	for _, ev := range []string{l.Entry, l.Return} {
		if t, err := readTable(s, s.Group, ev); err == nil {
			lost = max(lost, t.Dropped)
		}
	}
	table.Dropped += lost
	return table, nil
}

// latencyBucket is one log2 bucket: durations in (le_us/2, le_us] µs (the kernel's .log2 key
// is ilog2(roundup_pow_of_two(v)): "2^N" holds 2^(N-1) < v <= 2^N).
type latencyBucket struct {
	LeUS  uint64 `json:"le_us"` // the bucket's upper bound in µs (a power of 2): it holds the durations above half of it and up to it
	Count uint64 `json:"count"` // the calls whose duration fell in it
}

type latencyGroup struct {
	Comm    string          `json:"comm,omitempty"` // with --by comm: the program name, its tasks summed
	PID     uint64          `json:"pid,omitempty"`  // with --by pid: the task
	Buckets []latencyBucket `json:"buckets"`        // its histogram
	Count   uint64          `json:"count"`          // its calls
}

type latencyJSON struct {
	Func    string          `json:"func"`             // the function measured
	Buckets []latencyBucket `json:"buckets"`          // the histogram of its durations, shortest first
	Count   uint64          `json:"count"`            // the calls measured (the buckets' sum)
	Groups  []latencyGroup  `json:"groups,omitempty"` // with --by: one histogram per program name or task
	Dropped uint64          `json:"dropped"`          // what the kernel's table could not hold
	// Correction: the probes' own cost taken off each duration (absent: durations as measured)
	Correction *latencyCorrection `json:"correction,omitempty"`
}

// latencyCorrection is the probes' own cost taken off each duration: the median duration of
// calls of a function that does next to nothing, measured with the same kind of probes.
type latencyCorrection struct {
	BiasUS   uint64 `json:"bias_us"`  // microseconds taken off each duration
	Func     string `json:"func"`     // the function measured
	Probes   string `json:"probes"`   // fprobe, or kprobe (a kprobe and a kretprobe)
	Calls    uint64 `json:"calls"`    // the calls measured
	Measured string `json:"measured"` // when it was measured (RFC 3339; once per boot)
	// Below counts the calls shorter than the correction (their corrected duration below
	// zero; in the first bucket)
	Below uint64 `json:"below"`
}

// belowCorrection is how many of the table's calls were shorter than the correction taken
// off: their corrected duration wrapped below zero, which the kernel lists as 2^64.
func belowCorrection(t hist.Table) uint64 {
	var n uint64
	for _, r := range t.Rows {
		if lat := r.Keys[len(r.Keys)-1]; lat.Num >= 63 {
			hits, _ := r.Value("hitcount")
			n += uint64(hits)
		}
	}
	return n
}

// latencyGroups folds the table's rows into histograms: one, or one per task (--by pid) or
// per program name (--by comm: the tasks of one name summed).
func latencyGroups(by string, t hist.Table, corrected bool) (all latencyGroup, groups []latencyGroup) {
	index := map[string]int{}
	add := func(g *latencyGroup, le, n uint64) {
		g.Count += n
		for i := range g.Buckets {
			if g.Buckets[i].LeUS == le {
				g.Buckets[i].Count += n
				return
			}
		}
		g.Buckets = append(g.Buckets, latencyBucket{le, n})
	}
	all.Buckets = []latencyBucket{}
	for _, r := range t.Rows {
		lat := r.Keys[len(r.Keys)-1]
		hits, _ := r.Value("hitcount")
		le := count.LatencyBucket(lat.Num, corrected)
		add(&all, le, uint64(hits))
		if by == "" || len(r.Keys) < 2 {
			continue
		}
		k := r.Keys[0]
		name := strconv.FormatUint(k.Num, 10)
		g := latencyGroup{PID: k.Num}
		if by == "comm" {
			name = k.Text
			g = latencyGroup{Comm: k.Text}
		}
		i, ok := index[name]
		if !ok {
			i = len(groups)
			index[name] = i
			groups = append(groups, g)
		}
		add(&groups[i], le, uint64(hits))
	}
	sortBuckets := func(g *latencyGroup) {
		sort.Slice(g.Buckets, func(i, j int) bool { return g.Buckets[i].LeUS < g.Buckets[j].LeUS })
	}
	sortBuckets(&all)
	for i := range groups {
		sortBuckets(&groups[i])
	}
	sort.SliceStable(groups, func(i, j int) bool { return groups[i].Count > groups[j].Count })
	return all, groups
}

func printLatency(g *Globals, fn, by string, t hist.Table, bias count.Bias) error {
	all, groups := latencyGroups(by, t, bias.US > 0)
	var corr *latencyCorrection
	if bias.US > 0 {
		corr = &latencyCorrection{BiasUS: bias.US, Func: bias.Func, Probes: bias.Kind, Calls: bias.Calls,
			Measured: bias.Measured.UTC().Format(time.RFC3339), Below: belowCorrection(t)}
		// the correction is the median of a function that does nothing: fewer than half its
		// calls are shorter; more than half of any function's says it is too large now
		if corr.Below*2 > all.Count {
			g.Notice("%d of %d calls were shorter than the %d µs taken off, the median of a function that does nothing:"+
				" the correction is too large for this host now (measured once per boot, perhaps while it was busier);"+
				" --no-correct gives the durations as measured", corr.Below, all.Count, corr.BiasUS)
		}
	}
	doc := latencyJSON{Func: fn, Buckets: all.Buckets, Count: all.Count, Groups: groups, Dropped: t.Dropped, Correction: corr}
	if ok, err := g.printDoc(latencyFormat, doc); ok {
		return err
	}
	if by == "" {
		groups = []latencyGroup{all}
	}
	for i, gr := range groups {
		if i > 0 {
			fmt.Fprintln(g.Out)
		}
		switch by {
		case "comm":
			fmt.Fprintf(g.Out, "comm = %s\n", safe(gr.Comm))
		case "pid":
			fmt.Fprintf(g.Out, "pid = %d\n", gr.PID)
		}
		if err := writeLog2Chart(g.Out, gr.Buckets); err != nil {
			return err
		}
	}
	_, err := fmt.Fprintf(g.Out, "%s: %d calls", safe(fn), all.Count)
	if t.Dropped > 0 {
		fmt.Fprintf(g.Out, ", %d dropped (the kernel's table was full)", t.Dropped)
	}
	fmt.Fprintln(g.Out)
	if corr != nil {
		fmt.Fprintf(g.Out, "corrected: %d µs taken off each duration, the probes' own cost (the median of %d calls of %s, %ss, measured %s);"+
			" calls at or below it are in the first bucket (--no-correct: as measured)\n",
			corr.BiasUS, corr.Calls, corr.Func, corr.Probes, corr.Measured)
	}
	return err
}

// writeLog2Chart draws funclatency's chart: one line per bucket from the lowest to the highest
// seen, empty ones included, a bar of up to 40 '*' scaled to the largest.
func writeLog2Chart(w io.Writer, buckets []latencyBucket) error {
	fmt.Fprintf(w, "%10s %-13s : %-8s %s\n", "usecs", "", "count", "distribution")
	if len(buckets) == 0 {
		_, err := fmt.Fprintf(w, "%10s\n", "(no calls)")
		return err
	}
	var most uint64
	counts := map[uint64]uint64{}
	for _, b := range buckets {
		counts[b.LeUS] = b.Count
		most = max(most, b.Count)
	}
	for le := buckets[0].LeUS; ; le *= 2 {
		lo := le/2 + 1
		if le == 1 {
			lo = 0
		}
		n := counts[le]
		bar := int(n * 40 / most)
		if _, err := fmt.Fprintf(w, "%10d -> %-10d : %-8d |%-40s|\n", lo, le, n, strings.Repeat("*", bar)); err != nil {
			return err
		}
		if le >= buckets[len(buckets)-1].LeUS || le >= 1<<62 {
			break
		}
	}
	return nil
}
