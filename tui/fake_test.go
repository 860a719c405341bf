package tui

import (
	"context"
	"errors"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/ftctl/ftctl/count"
	"github.com/ftctl/ftctl/filters"
	"github.com/ftctl/ftctl/internal/fixture"
	"github.com/ftctl/ftctl/probes"
	"github.com/ftctl/ftctl/tracefs"
)

// fakeBackend is an in-memory kernel for the models' tests: it records what the console asked.
type fakeBackend struct {
	force   bool // ftctl tui --force (KernelBackend.SetForce)
	mu      sync.Mutex
	ix      *filters.Index
	lists   Lists
	applied [][]filters.Change
	tracer  string
	on      bool
	list    []probes.Probe
	added   []string
	// for ProbeCompletions: the fixture's BTF, a few function names
	kernel    *probes.Kernel
	funcNames []string

	counting []CountRequest // what each StartCount asked
	reads    int            // ReadCount calls while a count runs
	stops    int
	running  bool
}

func newFakeBackend(t testing.TB) *fakeBackend {
	return &fakeBackend{ix: fixtureIndex(t), tracer: "nop", on: true,
		lists:     Lists{Filter: filters.Multiset{}, Notrace: filters.Multiset{}},
		kernel:    probes.NewKernelFrom(nil, (&tracefs.FS{BTFDir: fixture.BTFDir(t)}).BTF()),
		funcNames: []string{"getname", "vfs_read", "vfs_readv", "vfs_write"}}
}

var (
	fixtureOnce sync.Once
	fixtureText string
	fixtureErr  error
)

// fixtureIndex is the 6.12 kernel's available_filter_functions.
func fixtureIndex(t testing.TB) *filters.Index {
	t.Helper()
	fixtureOnce.Do(func() { fixtureText, fixtureErr = fixture.Read("6.12", "available_filter_functions") })
	if fixtureErr != nil {
		t.Fatal(fixtureErr)
	}
	ix, err := filters.ParseIndex(fixtureText)
	if err != nil {
		t.Fatal(err)
	}
	ix.Prepare()
	return ix
}

func (f *fakeBackend) Status() (Status, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	on, kb, over, drop := f.on, 1408, int64(0), int64(0)
	return Status{Tracefs: "/sys/kernel/tracing", Instance: "ftctl-4242", Tracer: f.tracer, TracingOn: &on,
		BufferKB: &kb, Overrun: &over, Dropped: &drop}, nil
}

func (f *fakeBackend) Index() (*filters.Index, error) { return f.ix, nil }

func (f *fakeBackend) Lists() (Lists, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.lists, nil
}

func (f *fakeBackend) Apply(ctx context.Context, changes []filters.Change) ([]filters.Result, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.applied = append(f.applied, changes)
	var res []filters.Result
	for _, ch := range changes {
		before := f.lists.Filter
		if ch.File == filters.NotraceFile {
			before = f.lists.Notrace
		}
		st, err := filters.PlanStep(f.ix, before, ch)
		if err != nil {
			return res, err
		}
		if ch.File == filters.FilterFile {
			f.lists.Filter = st.Expect
		} else {
			f.lists.Notrace = st.Expect
		}
		res = append(res, filters.Result{File: ch.File, Op: ch.Op.String(), Before: st.Before.Total(),
			After: st.Expect.Total(), Added: len(st.Add), Verified: true})
	}
	return res, nil
}

func (f *fakeBackend) SetTracer(tracer string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if tracer != "nop" && len(f.lists.Filter) == 0 {
		return ErrEmptyFilter
	}
	f.tracer = tracer
	return nil
}

func (f *fakeBackend) SetTracing(on bool) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.on = on
	return nil
}

func (f *fakeBackend) Parser() probes.Parser {
	return probes.Parser{Features: probes.AllFeatures, Arch: "amd64", Force: f.force}
}

func (f *fakeBackend) ProbeCompletions(line string) []string {
	p := f.Parser()
	p.Kernel = f.kernel
	return probeLines(p, f.funcNames, line)
}

func (f *fakeBackend) Probes() ([]probes.Probe, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]probes.Probe(nil), f.list...), nil
}

func (f *fakeBackend) AddProbe(ctx context.Context, d *probes.Definition) (*probes.Added, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if d.IsUprobe() { // as probes.Manager.Add: the symbol resolved from the ELF file first
		if err := d.ResolveUprobe(probes.NewUserSpace()); err != nil {
			return nil, err
		}
	}
	if d.Symbol == "vfs_raed" { // the kernel does not know it
		w := d.Line("ftctl_4242", d.Event)
		return nil, &probes.RejectedError{Def: d, Written: w.Text,
			Diagnosis:   &tracefs.KernelDiagnosis{Message: "Invalid probed address or symbol", Source: d.Source(), Pos: strings.Index(d.Source(), "vfs_raed"), Command: w.Text},
			Suggestions: []string{"vfs_read", "vfs_readv"},
			Err:         &tracefs.Error{Op: "write", Path: "/sys/kernel/tracing/kprobe_events", Class: tracefs.ErrRejected, Errno: syscall.ENOENT}}
	}
	group := d.Group
	if group == "" {
		group = "ftctl_4242"
	}
	ev := d.Event
	if ev == "" {
		ev = "p_" + d.Symbol + "_0"
	}
	f.list = append(f.list, probes.Probe{Group: group, Event: ev, Type: "kprobe", Owner: "ftctl",
		Definition: d.Line(group, ev).Text, Place: d.Place(), EnabledIn: []string{"ftctl-4242"}})
	f.added = append(f.added, d.Source())
	return &probes.Added{Group: group, Event: ev, Written: d.Source()}, nil
}

func (f *fakeBackend) EnableProbe(group, event string, on bool) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	for i := range f.list {
		if f.list[i].Group == group && f.list[i].Event == event {
			if on {
				f.list[i].EnabledIn = []string{"ftctl-4242"}
			} else {
				f.list[i].EnabledIn = []string{}
			}
			return nil
		}
	}
	return errors.New("no such probe")
}

func (f *fakeBackend) RemoveProbe(ctx context.Context, group, event string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	for i := range f.list {
		if f.list[i].Group == group && f.list[i].Event == event {
			f.list = append(f.list[:i], f.list[i+1:]...)
			return nil
		}
	}
	return nil
}

// fixedNow is the tests' clock.
func fixedNow() time.Time { return time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC) }

// testModel is a console over the fake backend and a fixed text.
func testModel(t testing.TB, b Backend, text string) *Model {
	return New(Options{Backend: b, Source: NewTextSource(text), Instance: "ftctl-4242", Private: true,
		Group: "ftctl_4242", Now: fixedNow, StatusEvery: time.Hour, RingSize: 1000})
}

// countingBackend counts calls, for TestNoIOInUpdate.
type countingBackend struct {
	Backend
	n atomic.Int64
}

func (c *countingBackend) Status() (Status, error) { c.n.Add(1); return c.Backend.Status() }
func (c *countingBackend) Index() (*filters.Index, error) {
	c.n.Add(1)
	return c.Backend.Index()
}
func (c *countingBackend) Lists() (Lists, error) { c.n.Add(1); return c.Backend.Lists() }
func (c *countingBackend) Apply(ctx context.Context, ch []filters.Change) ([]filters.Result, error) {
	c.n.Add(1)
	return c.Backend.Apply(ctx, ch)
}
func (c *countingBackend) SetTracer(t string) error { c.n.Add(1); return c.Backend.SetTracer(t) }
func (c *countingBackend) SetTracing(on bool) error { c.n.Add(1); return c.Backend.SetTracing(on) }
func (c *countingBackend) Probes() ([]probes.Probe, error) {
	c.n.Add(1)
	return c.Backend.Probes()
}
func (c *countingBackend) AddProbe(ctx context.Context, d *probes.Definition) (*probes.Added, error) {
	c.n.Add(1)
	return c.Backend.AddProbe(ctx, d)
}
func (c *countingBackend) EnableProbe(g, e string, on bool) error {
	c.n.Add(1)
	return c.Backend.EnableProbe(g, e, on)
}
func (c *countingBackend) RemoveProbe(ctx context.Context, g, e string) error {
	c.n.Add(1)
	return c.Backend.RemoveProbe(ctx, g, e)
}

func (f *fakeBackend) StartCount(_ context.Context, req CountRequest) (CountInfo, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.counting = append(f.counting, req)
	f.running, f.reads = true, 0
	info := CountInfo{Request: req, Funcs: 2, Method: count.Hist, Why: "fake", Session: "ftctl-1-00000001"}
	if req.Event != "" {
		info.Funcs, info.Method = 0, count.Event
	}
	return info, nil
}

// ReadCount: vfs_read called 100 times more at each reading, vfs_write 10, and a name with an
// escape sequence once.
func (f *fakeBackend) ReadCount() (count.Counts, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if !f.running {
		return nil, ErrNoCount
	}
	f.reads++
	return count.Counts{"vfs_read": uint64(100 * f.reads), "vfs_write": uint64(10 * f.reads), "evil\x1b[31m": 1}, nil
}

func (f *fakeBackend) StopCount() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if !f.running {
		return ErrNoCount
	}
	f.running = false
	f.stops++
	return nil
}
