package count

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/ftctl/ftctl/filters"
	"github.com/ftctl/ftctl/hist"
	"github.com/ftctl/ftctl/probes"
	"github.com/ftctl/ftctl/session"
	"github.com/ftctl/ftctl/stream"
	"github.com/ftctl/ftctl/tracefs"
)

// probeEvent is the name of the Hist method's event in the session's group.
const probeEvent = "count"

// Options say what a Counter counts.
type Options struct {
	Patterns []*filters.Pattern // kernel globs (filters.Compile), at least one
	Method   Method             // Auto lets Choose decide
	PID      int                // count only this task's calls (0: every task)
	// Because, with Method Stream, is why the stream counts: the Hist method failed
	// (ProbeRefusedError says how).
	Because string
}

// ProbeRefusedError is the kernel's refusal of the Hist method's probe point on one function
// (one available_filter_functions lists, that kprobes or fprobes refuse: a function on the
// kprobe blacklist, an address kallsyms does not name). Arm returns it; the caller may count
// by the stream instead (a new Counter with Method Stream and Because).
type ProbeRefusedError struct {
	Func string
	Err  error // the tracefs error, tracefs.ErrRejected
}

func (e *ProbeRefusedError) Error() string {
	return fmt.Sprintf("the kernel refused a probe on %s: %v", e.Func, e.Err)
}

func (e *ProbeRefusedError) Unwrap() error { return e.Err }

// Counter counts calls per function in a session of ftctl's own. Use: New (nothing written),
// SetPID if a command is started meanwhile, Start under the tracefs lock (or Arm, which falls
// back on the stream), Begin, Counts as often as wanted, Stop, Counts a last time, Close, then
// the session's Teardown. Counts may be called from another goroutine than Begin's.
type Counter struct {
	Choice Choice
	fs     *tracefs.FS
	s      *session.Session
	pid    int
	// unchecked: the functions were taken by name, neither the index nor kallsyms read (New);
	// a refusal of their probe points is explained by reading them (Arm)
	unchecked bool
	trigger   string // Hist: the trigger written; Event: the trigger to write
	hist      tracefs.HistFeatures
	event     *EventOptions // Event: the event counted

	// Stream
	symbols *stream.SymbolLoader // kallsyms, loading from New on, waited for by Begin
	src     *stream.Source
	cancel  context.CancelCauseFunc
	mu      sync.Mutex
	counts  map[string]*uint64
	summary *stream.Summary
	done    chan error // the reader's end
}

// New resolves the patterns (a pattern selecting nothing: filters.ErrPattern), chooses the
// method (ErrMethod) and prepares the session (session.ErrInvalid and the like). Nothing is
// written.
//
// When every pattern names one function (no wildcard, no :mod:) and the hist method can count
// them, neither the function index nor kallsyms is read: the probe points' definitions are the
// check, the kernel refusing a function it cannot probe, and Arm reads them only then, to say
// why (reading both cost about 5 s of arming under emulation: 2.5 s for the index alone, 6.12,
// instruction clock, 2026-11-28). A dry run, which defines nothing, reads them first.
func New(fs *tracefs.FS, o Options) (*Counter, error) {
	if len(o.Patterns) == 0 {
		return nil, fmt.Errorf("%w: no function to count", ErrMethod)
	}
	ft := fs.DetectFeatures()
	if funcs, ok := namedFuncs(o.Patterns); ok && o.Method != Stream && fs.DryRun == nil {
		k := kernelOf(ft, func(string, string) int { return -1 })
		if choice, err := Choose(funcs, o.Method, k); err == nil && choice.Method == Hist {
			c, err := newCounter(fs, o, choice, ft)
			if c != nil {
				c.unchecked = true
			}
			return c, err
		}
	}
	choice, err := chooseChecked(fs, o, ft)
	if err != nil {
		return nil, err
	}
	return newCounter(fs, o, choice, ft)
}

// namedFuncs are the functions the patterns name, each once, when every pattern names one
// (no wildcard, no :mod:).
func namedFuncs(patterns []*filters.Pattern) ([]filters.Key, bool) {
	var funcs []filters.Key
	for _, p := range patterns {
		name, ok := p.ExactName()
		if !ok || p.HasModule() {
			return nil, false
		}
		if k := (filters.Key{Name: name}); !slices.Contains(funcs, k) {
			funcs = append(funcs, k)
		}
	}
	return funcs, true
}

// kernelOf is what Choose needs of a kernel with features ft.
func kernelOf(ft tracefs.Features, symbolCount func(mod, name string) int) Kernel {
	return Kernel{
		HistTriggers:   ft.HistTriggers,
		Fprobe:         ft.Probe.Fprobe && ft.DynamicEvents,
		Kprobe:         ft.KprobeEvents,
		FunctionTracer: ft.FunctionTracer,
		Profiler:       ft.FunctionProfiler,
		SymbolCount:    symbolCount,
	}
}

// chooseChecked resolves the patterns against the function index and chooses the method with
// kallsyms' names at hand.
func chooseChecked(fs *tracefs.FS, o Options, ft tracefs.Features) (Choice, error) {
	ix, err := filters.LoadIndex(fs.Top())
	if err != nil {
		return Choice{}, err
	}
	idx, err := ix.ResolveAll(o.Patterns)
	if err != nil {
		return Choice{}, err
	}
	seen := map[filters.Key]bool{}
	var funcs []filters.Key
	for _, i := range idx {
		if k := ix.Key(i); !seen[k] {
			seen[k] = true
			funcs = append(funcs, k)
		}
	}
	k := kernelOf(ft, probes.NewKernel(fs).SymbolCount)
	choice, err := Choose(funcs, o.Method, k)
	if err != nil {
		return Choice{}, err
	}
	if o.Because != "" && choice.Method == Stream {
		choice.Why = streamWhy(o.Because, profilerWhy(k))
	}
	return choice, nil
}

// newCounter prepares the session of a counter counting as choice says.
func newCounter(fs *tracefs.FS, o Options, choice Choice, ft tracefs.Features) (*Counter, error) {
	spec := session.Spec{}
	if choice.Method == Stream {
		spec = session.Spec{Filters: o.Patterns, Tracer: "function"}
	}
	s, err := session.New(fs, session.NewID(os.Getpid()), spec)
	if err != nil {
		return nil, err
	}
	c := &Counter{Choice: choice, fs: fs, s: s, hist: ft.Hist}
	if choice.Method == Stream {
		// the names counted are kallsyms': loaded while the session is set up, and waited for
		// before tracing starts (Begin), so that nothing read waits for it (under load it
		// took seconds, and a stream ended meanwhile counted nothing)
		c.symbols = stream.NewSymbolLoader(fs)
		c.symbols.Loaded()
	}
	c.SetPID(o.PID)
	return c, nil
}

// SetPID counts only task pid's calls (a command started after New): call it before Start.
func (c *Counter) SetPID(pid int) {
	if pid <= 0 {
		return
	}
	c.pid = pid
	if c.Choice.Method == Stream {
		c.s.TraceCommand(pid) // the kernel records the task (and its children, which are not counted)
	}
}

// Session is the session the counting lives in: the caller starts it and tears it down.
func (c *Counter) Session() *session.Session { return c.s }

// Trigger is the hist trigger written (Hist, Event), "" before Arm (Hist) or for Stream.
func (c *Counter) Trigger() string { return c.trigger }

// setup is what the method adds to the session's set-up (session.Spec.Dynamic and Triggers),
// once the pid counted is known: for Hist a probe point per function and the trigger keyed by
// the probed function; for Event the event's trigger.
func (c *Counter) setup() (dyn []session.Dynamic, trig []session.Trigger, err error) {
	s := c.s
	switch c.Choice.Method {
	case Event:
		o := c.event
		return nil, []session.Trigger{{System: o.System, Event: o.Event, Text: c.trigger}}, nil
	case Hist:
	default:
		return nil, nil, nil
	}
	for _, f := range c.Choice.Funcs {
		place := f.Name
		if f.Module != "" {
			place = f.Module + ":" + f.Name
		}
		dyn = append(dyn, session.Dynamic{Kind: c.Choice.Probe, Event: probeEvent, Place: place})
	}
	filter := ""
	if c.pid > 0 {
		filter = "common_pid == " + strconv.Itoa(c.pid)
	} else {
		// ftctl's own threads (its reads of the table are vfs_read calls like any other); a
		// thread Go starts later is counted.
		var not []string
		for _, tid := range tracefs.OwnThreads() {
			not = append(not, "common_pid != "+strconv.Itoa(tid))
		}
		filter = strings.Join(not, " && ")
	}
	// the probe's fields are the kernel's for every probe (__probe_ip): the keys need no
	// check against a format, which exists only once the probe is defined
	t, err := hist.Parse([]string{"__probe_ip.sym"}, nil, "", 0, filter)
	if err != nil {
		return nil, nil, err
	}
	c.trigger = t.String()
	return dyn, []session.Trigger{{System: s.Group, Event: probeEvent, Text: c.trigger}}, nil
}

// Start sets the counter's session up, what the method needs included, each piece owned by
// the session (removed by its Teardown). The caller holds the tracefs lock. The kernel's
// refusal of the trigger is a *hist.RejectedError; of a probe point, a *ProbeRefusedError
// naming the function.
func (c *Counter) Start(ctx context.Context) error {
	dyn, trig, err := c.setup()
	if err != nil {
		return err
	}
	if err := c.s.Extend(dyn, trig); err != nil {
		return err
	}
	err = c.s.Start(ctx)
	var de *session.DynamicError
	var te *session.TriggerError
	switch {
	case errors.As(err, &de) && errors.Is(de.Err, tracefs.ErrRejected):
		return &ProbeRefusedError{Func: c.funcOf(de.Dynamic.Place), Err: de.Err}
	case errors.As(err, &de):
		return fmt.Errorf("probing %s: %w", c.funcOf(de.Dynamic.Place), de.Err)
	case errors.As(err, &te):
		return hist.Rejected(te.Trigger.System, te.Trigger.Event, te.Trigger.Text, te.Err)
	}
	return err
}

// funcOf names the function a probe point was put on.
func (c *Counter) funcOf(place string) string {
	for _, f := range c.Choice.Funcs {
		if f.Name == place || f.Module+":"+f.Name == place {
			return f.String()
		}
	}
	return place
}

// Arm starts c, made by New(fs, o), with start (which holds the tracefs lock, sets the pid
// counted with SetPID, and calls Start): when the kernel refuses one of the hist method's
// kprobe points (a function on the kprobe blacklist, say) and has fprobes, an fprobe event
// counts instead; when it refuses a point still, and Auto chose the hist method, the hist
// method's session is gone and a stream counter, in a session of its own, counts instead;
// fallback is told why first. When c took its functions by name unchecked (New), a refusal is
// first explained from the function index and kallsyms: a name that is no traceable function
// is filters.ErrPattern, one that is several symbols ErrMethod with --method hist, else counted
// by the stream (the choice says why). A failed start leaves nothing.
func Arm(c *Counter, fs *tracefs.FS, o Options, fallback func(*ProbeRefusedError), start func(*Counter) error) (*Counter, error) {
	for {
		err := start(c)
		refused := (*ProbeRefusedError)(nil)
		errors.As(err, &refused)
		if c.unchecked && (refused != nil || errors.As(err, new(*session.DynamicError))) {
			choice, cerr := chooseChecked(fs, o, fs.DetectFeatures())
			if cerr != nil {
				return nil, cerr
			}
			if choice.Method == Stream || choice.Probe != c.Choice.Probe {
				if c, err = newCounter(fs, o, choice, fs.DetectFeatures()); err != nil {
					return nil, err
				}
				continue
			}
		}
		if refused != nil {
			ft := fs.DetectFeatures()
			if choice, ok := fprobeInstead(c.Choice, kernelOf(ft, nil), "the kernel refused a kprobe on "+refused.Func); ok {
				if c, err = newCounter(fs, o, choice, ft); err != nil {
					return nil, err
				}
				continue
			}
		}
		if refused != nil && o.Method == Auto {
			fallback(refused)
			o.Method, o.Because = Stream, "the kernel refused a probe on "+refused.Func
			if c, err = New(fs, o); err != nil {
				return nil, err
			}
			continue
		}
		if err != nil {
			return nil, err
		}
		return c, nil
	}
}

// Begin turns tracing on; for Stream it starts reading the instance. The reader ends with Stop
// (everything recorded read) or Close, not with ctx: a signal ends the counting through Stop.
func (c *Counter) Begin(ctx context.Context) error {
	if c.Choice.Method == Stream {
		<-c.symbols.Loaded()
	}
	if err := c.s.Begin(); err != nil {
		return err
	}
	if c.Choice.Method != Stream {
		return nil
	}
	ctx, c.cancel = context.WithCancelCause(context.WithoutCancel(ctx))
	src, err := stream.Open(ctx, c.s.Instance, stream.Options{Symbols: c.symbols})
	if err != nil {
		c.cancel(nil)
		return err
	}
	c.src, c.counts, c.summary, c.done = src, map[string]*uint64{}, src.Summary(), make(chan error, 1)
	go func() { c.done <- c.read() }()
	return nil
}

// read counts the stream's function events until it ends.
func (c *Counter) read() error {
	emit := func(ev *stream.Event) error {
		c.mu.Lock()
		defer c.mu.Unlock()
		c.summary.Count(ev, true)
		if ev.Kind != stream.KindFunction || (c.pid > 0 && ev.PID != c.pid) {
			return nil
		}
		name := ev.Func.Name
		if len(ev.Func.Module) > 0 {
			name = append(append(append(name[:len(name):len(name)], " ["...), ev.Func.Module...), ']')
		}
		p := c.counts[string(name)]
		if p == nil {
			p = new(uint64)
			c.counts[string(name)] = p
		}
		*p += 1 + uint64(max(ev.Repeats, 0))
		return nil
	}
	for {
		if err := c.src.Next(emit); err != nil {
			return err
		}
	}
}

// Done yields the Stream reader's end, should it end before Stop (a failure, or stdout
// closed); nil for Hist.
func (c *Counter) Done() <-chan error { return c.done }

// Counts reads the counts since Begin: the kernel's table (Hist), or what the stream counted.
func (c *Counter) Counts() (Counts, error) {
	if c.Choice.Method == Event {
		return c.eventCounts()
	}
	if c.Choice.Method == Hist {
		t, err := readTable(c.s.Instance, c.s.Group, probeEvent)
		if err != nil {
			return nil, err
		}
		return FromTable(t), nil
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make(Counts, len(c.counts))
	for f, n := range c.counts {
		out[f] = *n
	}
	return out, nil
}

// Stop ends the counting. Stream: tracing off, and what the ring buffer holds read and counted
// (the kernel ends the stream once it is read); after wait, the reader is ended: whole (the
// counting ended by its command or its duration, not by a person), it first decodes
// everything it read, kallsyms waited for (under load, loading it can take seconds); else
// what is left is not counted (Summary.Undecoded). Hist counts until its trigger is removed.
// It returns the reader's failure, if any.
func (c *Counter) Stop(wait time.Duration, whole bool) error {
	if c.src == nil {
		return nil
	}
	c.s.Instance.Write("tracing_on", "0")
	var err error
	select {
	case err = <-c.done:
	case <-time.After(wait):
		if whole {
			c.cancel(stream.EndCause("stopped"))
		} else {
			c.cancel(nil)
		}
		err = <-c.done
	}
	c.done = nil
	c.mu.Lock()
	c.src.Finish(c.summary, "stopped")
	c.mu.Unlock()
	c.src.Close()
	c.src = nil
	if errors.Is(err, io.EOF) || errors.Is(err, context.Canceled) || errors.Is(err, tracefs.ErrPipeClosed) || errors.As(err, new(stream.EndCause)) {
		return nil
	}
	return err
}

// Summary is the Stream reader's accounting (events, losses: counts are then lower bounds),
// complete after Stop; nil for Hist.
func (c *Counter) Summary() *stream.Summary { return c.summary }

// Close ends a reader still running (Stop not called), before the session's Teardown.
func (c *Counter) Close() {
	if c.src != nil {
		c.cancel(nil)
		c.src.Close()
		<-c.done
		c.src = nil
	}
	if c.symbols != nil {
		c.symbols.Close()
	}
}

// readTable reads the table of the one hist trigger on SYSTEM:EVENT in the instance (the
// session's own: no other trigger is there).
func readTable(in *tracefs.Instance, system, event string) (hist.Table, error) {
	b, err := in.ReadFile("events/" + system + "/" + event + "/hist")
	if err != nil {
		return hist.Table{}, err
	}
	tables, err := hist.ParseOutput(string(b))
	if err != nil {
		return hist.Table{}, err
	}
	if len(tables) == 0 {
		return hist.Table{}, fmt.Errorf("the kernel's hist file of %s:%s lists no table", system, event)
	}
	return tables[0], nil
}
