package tui

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/ftctl/ftctl/count"
	"github.com/ftctl/ftctl/filters"
	"github.com/ftctl/ftctl/probes"
	"github.com/ftctl/ftctl/stream"
	"github.com/ftctl/ftctl/tracefs"
)

// Backend is everything the console does to the kernel. Its methods do IO: the models call them
// only from tea.Cmds, never from Update. KernelBackend is the real one; tests use a fake.
type Backend interface {
	// Status reads the trace array's state for the status bar.
	Status() (Status, error)
	// Index reads available_filter_functions, prepared for previews.
	Index() (*filters.Index, error)
	// Lists reads the filter and notrace lists of the trace array.
	Lists() (Lists, error)
	// Apply carries function-list changes out with the swap protocol.
	Apply(ctx context.Context, changes []filters.Change) ([]filters.Result, error)
	// SetTracer changes current_tracer, refusing a function tracer over an empty filter.
	SetTracer(tracer string) error
	// SetTracing writes tracing_on.
	SetTracing(on bool) error
	// Parser is the probe grammar of this kernel (pure: called from Update).
	Parser() probes.Parser
	// Probes lists kprobe_events.
	Probes() ([]probes.Probe, error)
	// AddProbe defines a probe (in the console's default group when it names none) and enables
	// it in the trace array.
	AddProbe(ctx context.Context, d *probes.Definition) (*probes.Added, error)
	// EnableProbe enables or disables a probe's event in the trace array.
	EnableProbe(group, event string, on bool) error
	// RemoveProbe disables a probe everywhere and deletes it.
	RemoveProbe(ctx context.Context, group, event string) error
	// ProbeCompletions is what may stand in the last word of a probe definition being typed
	// (the probed function, then argument names from the kernel's BTF), each the whole line.
	// It reads BTF and the function list: call it from a tea.Cmd.
	ProbeCompletions(line string) []string
	// StartCount counts the calls of the functions the patterns select (ftctl count's way), or
	// an event's hits per key (a hist trigger, as ftctl hist), in a session of its own, for
	// the Top view; ReadCount reads the counts so far; StopCount removes the count's session
	// (Close does too).
	StartCount(ctx context.Context, req CountRequest) (CountInfo, error)
	ReadCount() (count.Counts, error)
	StopCount() error
	// StartGraph starts what the Graph view shows: a function_graph session of its own over
	// the roots (ftctl graph's), its call trees built off the event loop and handed over
	// through the feed; StopGraph removes it (Close does too).
	StartGraph(ctx context.Context, req GraphRequest) (GraphInfo, *GraphFeed, error)
	StopGraph() error
	// Recording (pure) says the console shows a recording (--file), not a kernel: the views
	// that read or change a kernel say so instead of asking, and the Graph view starts the
	// recording's trees itself, with no roots (graph.go).
	Recording() bool
}

// Status is what the status bar shows.
type Status struct {
	Tracefs   string // the tracing directory
	Instance  string // the trace array's name ("" top level)
	Tracer    string
	TracingOn *bool // nil when unreadable
	BufferKB  *int  // per CPU
	Overrun   *int64
	Dropped   *int64
}

// Lists are the function lists of the trace array.
type Lists struct {
	Filter, Notrace filters.Multiset
	// FilterErr and NotraceErr say why a list could not be read (EPERM on some kernels).
	FilterErr, NotraceErr error
}

// KernelBackend drives a real tracefs: one trace array (In), the probe group new probes go to
// (Group), and the lock every write takes, for LockTimeout at most.
type KernelBackend struct {
	FS          *tracefs.FS
	In          *tracefs.Instance
	Group       string
	LockTimeout time.Duration
	manager     *probes.Manager
	symbols     *stream.SymbolLoader // shared by the streams OpenStream opens

	// For ProbeCompletions: the parser with BTF, and the sorted function names, read on
	// first need.
	completeOnce sync.Once
	completer    probes.Parser
	funcNames    []string
	countMu      sync.Mutex
	counter      *count.Counter // the Top view's count (StartCount), nil when none
	graph        graphHolder    // the Graph view's graph (StartGraph)
}

// NewKernelBackend makes the backend for a trace array.
func NewKernelBackend(fs *tracefs.FS, in *tracefs.Instance, group string, lockTimeout time.Duration) *KernelBackend {
	return &KernelBackend{FS: fs, In: in, Group: group, LockTimeout: lockTimeout, manager: probes.NewManager(fs)}
}

// OpenStream opens the trace array through the stream engine (the binary reader where it
// prints what trace_pipe would, function_graph included, as ftctl stream chooses), for NewPipeSource. kallsyms is read
// once for the console's life.
func (b *KernelBackend) OpenStream(ctx context.Context) (EventStream, error) {
	if b.symbols == nil {
		b.symbols = stream.NewSymbolLoader(b.FS)
	}
	// GraphLines: function_graph too from trace_pipe_raw, its lines as the kernel prints them
	// (what ftctl stream reads)
	return stream.Open(ctx, b.In, stream.Options{Symbols: b.symbols, GraphLines: true})
}

// Close ends what the backend started: a kallsyms load in progress, the Top view's count and
// the Graph view's graph (their sessions torn down; what failed is returned).
func (b *KernelBackend) Close() error {
	if b.symbols != nil {
		b.symbols.Close()
	}
	var errs []error
	if err := b.StopCount(); !errors.Is(err, ErrNoCount) {
		errs = append(errs, err)
	}
	if err := b.StopGraph(); !errors.Is(err, ErrNoGraph) {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// locked runs f holding the tracefs lock, as every ftctl writer does.
func (b *KernelBackend) locked(f func() error) error {
	return b.lockedCtx(context.Background(), f)
}

// lockedCtx is locked with a wait for the lock that ctx can end.
func (b *KernelBackend) lockedCtx(ctx context.Context, f func() error) error {
	l, err := b.FS.Lock(ctx, b.LockTimeout, nil)
	if err != nil {
		return err
	}
	defer l.Unlock()
	return f()
}

// Status implements Backend.
func (b *KernelBackend) Status() (Status, error) {
	st := Status{Tracefs: b.FS.Root(), Instance: b.In.Name}
	t, err := b.In.Tracer()
	if err != nil {
		return st, err
	}
	st.Tracer = t
	if on, err := b.In.TracingOn(); err == nil {
		st.TracingOn = &on
	}
	if kb, _, ok := b.In.BufferSizeKB(); ok {
		st.BufferKB = &kb
	}
	if cpus, err := b.In.CPUStats(); err == nil {
		var over, drop int64
		for _, c := range cpus {
			over += c.Overrun
			drop += c.DroppedEvents
		}
		st.Overrun, st.Dropped = &over, &drop
	}
	return st, nil
}

// maxProbeCompletions bounds the candidates ProbeCompletions offers (a bare place would offer
// every function).
const maxProbeCompletions = 50

// ProbeCompletions implements Backend.
func (b *KernelBackend) ProbeCompletions(line string) []string {
	b.completeOnce.Do(func() {
		b.completer = b.manager.Parser
		b.completer.Kernel = probes.NewKernel(b.FS)
		if ix, err := filters.LoadIndex(b.FS.Top()); err == nil {
			for i := 1; i <= ix.Len(); i++ {
				if ix.Valid(i) {
					b.funcNames = append(b.funcNames, ix.Key(i).Name)
				}
			}
			slices.Sort(b.funcNames)
			b.funcNames = slices.Compact(b.funcNames)
		}
	})
	return probeLines(b.completer, b.funcNames, line)
}

// probeLines is ProbeCompletions over a parser (with BTF) and sorted function names: each
// candidate for the last word, as the whole line.
func probeLines(p probes.Parser, names []string, line string) []string {
	funcs := func(prefix string) []string {
		i, _ := slices.BinarySearch(names, prefix)
		var out []string
		for ; i < len(names) && strings.HasPrefix(names[i], prefix) && len(out) < maxProbeCompletions; i++ {
			out = append(out, names[i])
		}
		return out
	}
	cands := p.Complete(line, funcs)
	head := line[:strings.LastIndexAny(line, " \t")+1]
	out := make([]string, 0, min(len(cands), maxProbeCompletions))
	for _, c := range cands[:min(len(cands), maxProbeCompletions)] {
		out = append(out, head+c)
	}
	return out
}

// Index implements Backend.
func (b *KernelBackend) Index() (*filters.Index, error) {
	ix, err := filters.LoadIndex(b.FS.Top())
	if err != nil {
		return nil, err
	}
	ix.Prepare()
	return ix, nil
}

// Lists implements Backend.
func (b *KernelBackend) Lists() (Lists, error) {
	var l Lists
	read := func(file string) (filters.Multiset, error) {
		v, err := b.In.ReadFile(file)
		if err != nil {
			return nil, err
		}
		return filters.ListedSet(tracefs.ParseFunctionList(string(v))), nil
	}
	l.Filter, l.FilterErr = read(filters.FilterFile)
	l.Notrace, l.NotraceErr = read(filters.NotraceFile)
	return l, nil
}

// Apply implements Backend. The end of ctx stops a wait for the lock (nothing written), or makes
// the Applier put back what it changed.
func (b *KernelBackend) Apply(ctx context.Context, changes []filters.Change) (res []filters.Result, err error) {
	err = b.lockedCtx(ctx, func() error {
		ap := &filters.Applier{In: b.In, Top: b.FS.Top(), ByName: !b.FS.IndexWrites()}
		res, err = ap.Apply(ctx, changes)
		return err
	})
	return res, err
}

// ErrEmptyFilter refuses a function tracer while the filter is empty: it would trace every
// function of the kernel.
var ErrEmptyFilter = errors.New("the function filter is empty: the function tracers would trace every function; apply a filter first (Functions view)")

// SetTracer implements Backend.
func (b *KernelBackend) SetTracer(tracer string) error {
	return b.locked(func() error {
		if tracer == "function" || tracer == "function_graph" {
			v, err := b.In.ReadFile(filters.FilterFile)
			if err != nil {
				return err
			}
			if tracefs.ParseFunctionList(string(v)).Empty {
				return ErrEmptyFilter
			}
		}
		return b.In.SetTracer(tracer)
	})
}

// SetTracing implements Backend.
func (b *KernelBackend) SetTracing(on bool) error {
	return b.locked(func() error { return b.In.SetTracingOn(on) })
}

// Parser implements Backend.
func (b *KernelBackend) Parser() probes.Parser { return b.manager.Parser }

// SetForce makes the probe field pass what ftctl refuses as unsafe or misleading (ftctl tui
// --force: probes.Parser.Force).
func (b *KernelBackend) SetForce(on bool) { b.manager.Parser.Force = on }

// Probes implements Backend.
func (b *KernelBackend) Probes() ([]probes.Probe, error) {
	if err := b.manager.CheckKernel(); err != nil {
		return nil, err
	}
	return b.manager.List()
}

// AddProbe implements Backend.
func (b *KernelBackend) AddProbe(ctx context.Context, d *probes.Definition) (a *probes.Added, err error) {
	if g, _, ok := d.KernelName(); ok { // r<N> on a uprobe, passed by --force alone
		return nil, fmt.Errorf("the kernel ignores r<N> on a uprobe and the event name after it, and would name the event itself in group %s: write r:EVENT", g)
	}
	if d.Group == "" {
		d = d.WithGroup(b.Group)
	}
	err = b.locked(func() error {
		a, err = b.manager.Add(ctx, d, probes.AddOptions{Instance: b.In, Enable: true})
		return err
	})
	return a, err
}

// EnableProbe implements Backend.
func (b *KernelBackend) EnableProbe(group, event string, on bool) error {
	return b.locked(func() error { return b.manager.Enable(b.In, group, event, on) })
}

// RemoveProbe implements Backend.
func (b *KernelBackend) RemoveProbe(ctx context.Context, group, event string) error {
	return b.locked(func() error { return b.manager.Remove(ctx, group, event) })
}

// describeErr is an error for the message line: one line, the kernel's text kept.
func describeErr(what string, err error) string {
	msg := fmt.Sprintf("%s: %v", what, err)
	return strings.ReplaceAll(msg, "\n", " · ")
}
