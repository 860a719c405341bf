package tui

import (
	"archive/tar"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ftctl/ftctl/internal/fixture"
	"github.com/ftctl/ftctl/stream"
	"github.com/ftctl/ftctl/tracedat"
)

// The Graph view: the model (fold, sort, follow, bounds) over the call trees of function_graph
// captures of both VM kernels (stream/testdata: dd reading /proc/version under
// set_graph_function ksys_read), the view over a fake backend, and a recording's trees.

func readGz(t testing.TB, path string) []byte {
	t.Helper()
	b, err := fixture.Gunzip(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// graphRecording assembles a trace.dat from a kernel's function_graph capture NAME (its pages,
// ftrace's event formats, header_page, kallsyms and saved_cmdlines), as ftctl record writes one.
func graphRecording(t testing.TB, kernel, name string) *tracedat.File {
	t.Helper()
	dir := filepath.Join("..", "stream", "testdata", kernel)
	files := map[string][]byte{}
	r := tar.NewReader(bytes.NewReader(readGz(t, filepath.Join(dir, "formats.tar.gz"))))
	for {
		h, err := r.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		if h.Name == "events/header_page" || h.Name == "events/header_event" ||
			(strings.HasPrefix(h.Name, "events/ftrace/") && strings.HasSuffix(h.Name, "/format")) {
			if files[h.Name], err = io.ReadAll(r); err != nil {
				t.Fatal(err)
			}
		}
	}
	h := &tracedat.Header{PageSize: 4096, LongSize: 8, HeaderPage: files["events/header_page"],
		HeaderEvent: files["events/header_event"], CPUs: 2,
		Options: []tracedat.Option{{ID: tracedat.OptionTraceClock, Data: []byte("[local] global\n\x00")}}}
	var names []string
	for n := range files {
		if strings.HasSuffix(n, "/format") {
			names = append(names, n)
		}
	}
	slices.Sort(names)
	for _, n := range names {
		h.Ftrace = append(h.Ftrace, files[n])
	}
	h.Kallsyms = readGz(t, filepath.Join(dir, "graph.kallsyms.gz"))
	var err error
	if h.Cmdlines, err = os.ReadFile(filepath.Join(dir, "graph.saved_cmdlines")); err != nil {
		t.Fatal(err)
	}
	var cpus []tracedat.CPUSource
	for cpu := range 2 {
		raw := readGz(t, filepath.Join(dir, fmt.Sprintf("%s.cpu%d.raw.gz", name, cpu)))
		cpus = append(cpus, tracedat.CPUSource{R: bytes.NewReader(raw), Size: int64(len(raw) / 4096 * 4096)})
	}
	var buf bytes.Buffer
	if err := tracedat.Write(&buf, h, cpus); err != nil {
		t.Fatal(err)
	}
	f, err := tracedat.Read(bytes.NewReader(buf.Bytes()), int64(buf.Len()))
	if err != nil {
		t.Fatal(err)
	}
	return f
}

// drainFeed reads a feed to its end (10 s at most).
func drainFeed(t testing.TB, feed *GraphFeed) (trees []*stream.Call, lost int64, end error) {
	t.Helper()
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			b, ok := feed.Next()
			if !ok {
				return
			}
			trees, lost = append(trees, b.Trees...), b.Lost
			if b.Err != nil {
				end = b.Err
				return
			}
		}
	}()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		feed.Close()
		<-done
		t.Fatal("the feed did not end in 10 s")
	}
	return trees, lost, end
}

// recordedTrees are the trees the Graph view gets from a recording of capture NAME.
func recordedTrees(t testing.TB, kernel, name string) []*stream.Call {
	t.Helper()
	b := &FileBackend{Name: name, File: graphRecording(t, kernel, name)}
	info, feed, err := b.StartGraph(context.Background(), GraphRequest{})
	if err != nil || !info.Recording {
		t.Fatalf("%v %+v", err, info)
	}
	trees, lost, end := drainFeed(t, feed)
	if err := b.StopGraph(); err != nil {
		t.Fatal(err)
	}
	if lost != 0 || !errors.Is(end, ErrEndOfRecording) || !strings.Contains(end.Error(), "function_graph records") {
		t.Fatalf("lost %d, end %v", lost, end)
	}
	return trees
}

func findCall(c *stream.Call, fn string) *stream.Call {
	if c.Func == fn {
		return c
	}
	for _, k := range c.Calls {
		if f := findCall(k, fn); f != nil {
			return f
		}
	}
	return nil
}

// TestGraphRecordingTrees: a recording's function_graph records become one tree per call of the
// root, as many as the kernel's own text of the same records opens ("ksys_read() {"), dd's,
// each with vfs_read inside and a duration, on both kernels.
func TestGraphRecordingTrees(t *testing.T) {
	for _, kernel := range []string{"6.1", "6.12"} {
		t.Run(kernel, func(t *testing.T) {
			text, err := os.ReadFile(filepath.Join("..", "stream", "testdata", kernel, "graph.trace"))
			if err != nil {
				t.Fatal(err)
			}
			want := strings.Count(string(text), "|  ksys_read() {\n")
			trees := recordedTrees(t, kernel, "graph")
			n := 0
			for _, c := range trees {
				if c.Func != "ksys_read" {
					continue
				}
				n++
				if c.Comm != "dd" || c.NoExit || c.NoEntry || c.Duration() == 0 || findCall(c, "vfs_read") == nil {
					t.Errorf("tree %+v", c)
				}
			}
			if n != want || want == 0 {
				t.Errorf("%d trees of ksys_read, the kernel's text has %d", n, want)
			}
		})
	}
}

// TestGraphRecordingWithoutGraph: a recording without function_graph events says so.
func TestGraphRecordingWithoutGraph(t *testing.T) {
	b := &FileBackend{Name: "tp.dat", File: openRecording(t)}
	_, feed, err := b.StartGraph(context.Background(), GraphRequest{})
	if err != nil {
		t.Fatal(err)
	}
	trees, _, end := drainFeed(t, feed)
	b.StopGraph()
	if len(trees) != 0 || !errors.Is(end, ErrEndOfRecording) || !strings.Contains(end.Error(), "holds no function_graph events") {
		t.Errorf("%d trees, end %v", len(trees), end)
	}
}

// call makes a call of dur ns at start, with its callees.
func call(fn string, pid int, start, dur uint64, kids ...*stream.Call) *stream.Call {
	c := &stream.Call{Func: fn, PID: pid, Comm: fmt.Sprintf("task%d", pid), Start: start, End: start + dur, Calls: kids}
	for _, k := range kids {
		k.PID, k.Comm = pid, c.Comm
	}
	return c
}

func lineFuncs(m *graphModel) []string {
	m.build()
	var out []string
	for _, l := range m.lines {
		out = append(out, strings.Repeat(" ", l.level)+l.call.Func)
	}
	return out
}

// TestGraphModelFoldSort: every tree folded at first, slowest first (those without a return
// last); enter, → and ← unfold and fold the selected call, → again goes to the first callee and
// ← to the caller; s shows the newest first; the selection stays on its call as trees come.
func TestGraphModelFoldSort(t *testing.T) {
	for _, kernel := range []string{"6.1", "6.12"} {
		t.Run(kernel, func(t *testing.T) {
			trees := recordedTrees(t, kernel, "graph")
			m := newGraphModel(100, 1_000_000)
			open := call("still_open", 7, 1, 0)
			open.NoExit = true
			m.add(append([]*stream.Call{open}, trees...), 0, 0)
			m.build()
			if len(m.lines) != len(trees)+1 {
				t.Fatalf("%d lines for %d trees: not all folded", len(m.lines), len(trees)+1)
			}
			for i := 1; i < len(trees); i++ {
				if a, b := m.lines[i-1].call.Duration(), m.lines[i].call.Duration(); a < b {
					t.Errorf("line %d (%d ns) before line %d (%d ns): not slowest first", i-1, a, i, b)
				}
			}
			if last := m.lines[len(m.lines)-1].call; last != open {
				t.Errorf("the call without a return is not last: %s", last.Func)
			}
			slowest := m.lines[0].call
			m.toggle()
			got := lineFuncs(m)
			if len(got) != len(trees)+1+len(slowest.Calls) || got[1] != " "+slowest.Calls[0].Func {
				t.Fatalf("unfolded:\n%s", strings.Join(got, "\n"))
			}
			m.unfold() // open already: to the first callee
			if l := m.selected(); l.call != slowest.Calls[0] || l.level != 1 || l.parent != 0 {
				t.Fatalf("selected %+v", l)
			}
			m.fold() // a folded callee: to its caller
			if m.selected().call != slowest {
				t.Fatalf("not back to the caller")
			}
			m.fold()
			if len(lineFuncs(m)) != len(trees)+1 {
				t.Fatalf("still unfolded")
			}
			m.toggleSort()
			m.build()
			if m.lines[0].call != trees[len(trees)-1] || m.lines[len(m.lines)-1].call != open {
				t.Errorf("newest first: %s first, %s last", m.lines[0].call.Func, m.lines[len(m.lines)-1].call.Func)
			}
			if m.selected().call != slowest {
				t.Errorf("the selection left its call on the sort")
			}
			m.add([]*stream.Call{call("newer", 8, 10, 5)}, 0, 0)
			if m.selected().call != slowest || m.lines[0].call.Func != "newer" {
				t.Errorf("the selection left its call as a tree came")
			}
		})
	}
}

// TestGraphModelFollow: f shows the selected call's task only (the idle tasks by CPU), f again
// every task.
func TestGraphModelFollow(t *testing.T) {
	trees := recordedTrees(t, "6.12", "graph")
	m := newGraphModel(100, 1_000_000)
	idle0, idle1 := call("do_idle", 0, 5, 1), call("do_idle", 0, 6, 2)
	idle1.CPU = 1
	m.add(append([]*stream.Call{call("vfs_read", 99, 1, 1_000_000), idle0, idle1}, trees...), 0, 0)
	all := len(lineFuncs(m))
	m.selectLine(0)
	if m.selected().call.PID != 99 {
		t.Fatalf("the slowest is not task 99's")
	}
	if f := m.toggleFollow(); f == nil || f.pid != 99 || f.comm != "task99" {
		t.Fatalf("follow %+v", f)
	}
	if got := lineFuncs(m); !reflect.DeepEqual(got, []string{"vfs_read"}) {
		t.Errorf("following 99: %q", got)
	}
	m.toggleFollow()
	if len(lineFuncs(m)) != all {
		t.Errorf("not every task again")
	}
	for i, l := range m.lines {
		if l.call == idle1 {
			m.selectLine(i)
		}
	}
	m.toggleFollow()
	if m.build(); len(m.lines) != 1 || m.lines[0].call != idle1 {
		t.Errorf("following the idle task of CPU 1: %q", lineFuncs(m))
	}
	m.toggleFollow()
	m.build()
	dd := 0
	for _, c := range trees {
		if c.Comm == "dd" {
			dd++
		}
	}
	for i, l := range m.lines {
		if l.call.Comm == "dd" {
			m.selectLine(i)
			break
		}
	}
	m.toggleFollow()
	if got := len(lineFuncs(m)); got != dd || dd == 0 {
		t.Errorf("following dd: %d lines, %d trees of dd", got, dd)
	}
}

// TestGraphModelBounds: the last maxTrees trees are kept, the older ones dropped and counted
// (with the feed's own drops), their fold marks forgotten; past maxCalls the oldest trees go
// too, never the newest.
func TestGraphModelBounds(t *testing.T) {
	m := newGraphModel(5, 1000)
	var all []*stream.Call
	for i := range 12 {
		all = append(all, call(fmt.Sprintf("f%d", i), 1, uint64(i), 10, call("kid", 1, uint64(i), 1)))
	}
	m.add(all[:3], 0, 0)
	m.selectLine(0)
	m.toggle() // the slowest is the newest of equal ones: f2
	if !m.open[all[2]] {
		t.Fatalf("f2 not open")
	}
	m.add(all[3:], 4, 2) // the feed dropped 4 more before these
	if len(m.trees) != 5 || m.dropped != 7+4 || m.lost != 2 {
		t.Errorf("%d trees, %d dropped, %d lost", len(m.trees), m.dropped, m.lost)
	}
	for i, tr := range m.trees {
		if tr.root != all[7+i] {
			t.Errorf("tree %d is %s, want f%d", i, tr.root.Func, 7+i)
		}
	}
	if len(m.open) != 0 || m.calls != 10 {
		t.Errorf("open %d, calls %d", len(m.open), m.calls)
	}
	big := newGraphModel(100, 5)
	big.add(all[:4], 0, 0) // 2 calls each
	if len(big.trees) != 2 || big.calls != 4 || big.dropped != 2 {
		t.Errorf("calls bound: %d trees, %d calls, %d dropped", len(big.trees), big.calls, big.dropped)
	}
	huge := call("huge", 1, 0, 10, call("a", 1, 0, 1), call("b", 1, 0, 1), call("c", 1, 0, 1), call("d", 1, 0, 1), call("e", 1, 0, 1))
	big.add([]*stream.Call{huge}, 0, 0)
	if len(big.trees) != 1 || big.trees[0].root != huge {
		t.Errorf("the newest tree must stay: %d trees", len(big.trees))
	}
}

// graphFake is the fake backend with a graph: StartGraph records the request and hands over
// trees (the fixture's, an unfinished one, one with the kernel's text made hostile).
type graphFake struct {
	*fakeBackend
	gmu    sync.Mutex
	starts []GraphRequest
	stops  int
	feed   *GraphFeed
	trees  []*stream.Call
	err    error
}

func (f *graphFake) StartGraph(_ context.Context, req GraphRequest) (GraphInfo, *GraphFeed, error) {
	f.gmu.Lock()
	defer f.gmu.Unlock()
	f.starts = append(f.starts, req)
	if f.err != nil {
		return GraphInfo{}, nil, f.err
	}
	f.feed = NewGraphFeed(graphFeedMax)
	for _, c := range f.trees {
		f.feed.Add(c)
	}
	f.feed.SetLost(3)
	return GraphInfo{Request: req, Session: "ftctl-1-0000beef"}, f.feed, nil
}

func (f *graphFake) StopGraph() error {
	f.gmu.Lock()
	defer f.gmu.Unlock()
	if f.feed == nil {
		return ErrNoGraph
	}
	f.feed.Close()
	f.feed = nil
	f.stops++
	return nil
}

// The fake without a graph refuses one.
func (f *fakeBackend) StartGraph(context.Context, GraphRequest) (GraphInfo, *GraphFeed, error) {
	return GraphInfo{}, nil, errors.New("the fake has no graph")
}
func (f *fakeBackend) StopGraph() error { return ErrNoGraph }
func (f *fakeBackend) Recording() bool  { return false }

// TestGraphView: 5 shows the view; g asks for roots, refuses one that does not compile before
// anything reaches the backend, starts the graph; its trees show with their durations, the
// unfinished call as such, the kernel's names escaped, the lost records counted; enter unfolds;
// x removes the graph through the backend and what the feed still holds is not shown.
func TestGraphView(t *testing.T) {
	hostile := call("evil\x1b[31m", 6, 1, 2_000_000_000)
	hostile.Comm = "bad\x07comm"
	open := call("still_open", 7, 1, 0)
	open.NoExit = true
	fb := &graphFake{fakeBackend: newFakeBackend(t), trees: append(recordedTrees(t, "6.12", "graph"), hostile, open)}
	m := testModel(t, fb, testTrace)
	m.SetSize(120, 30)
	step(m, press("5"))
	if !strings.Contains(screen(m), "g graphs the calls of kernel functions") {
		t.Fatalf("%s", screen(m))
	}
	step(m, press("g"))
	typeText(m, "1vfs")
	if !strings.Contains(screen(m), "starts with a digit") {
		t.Errorf("no complaint:\n%s", screen(m))
	}
	step(m, press("enter"))
	if len(fb.starts) != 0 {
		t.Fatalf("started %v", fb.starts)
	}
	m.graph.input.SetValue("ksys_read vfs_* -n security_* --depth 4")
	step(m, press("enter"))
	if want := []GraphRequest{{Roots: []string{"ksys_read", "vfs_*"}, Notrace: []string{"security_*"}, Depth: 4}}; !reflect.DeepEqual(fb.starts, want) {
		t.Fatalf("started %v, want %v", fb.starts, want)
	}
	s := screen(m)
	for _, want := range []string{"graph ksys_read vfs_* -n security_* --depth 4 · in ftctl-1-0000beef", "lost 3", "slowest first",
		`evil\x1b[31m()`, `bad\acomm-6`, "2000000.000 us", "unfinished", "still_open() (not returned)", "▸ ksys_read() … "} {
		if !strings.Contains(s, want) {
			t.Errorf("no %q:\n%s", want, s)
		}
	}
	if strings.ContainsAny(s, "\x1b\x07") {
		t.Errorf("control characters reach the terminal: %q", s)
	}
	step(m, press("j")) // the slowest ksys_read
	step(m, press("enter"))
	if s := screen(m); !strings.Contains(s, "▾ ksys_read()") || !strings.Contains(s, "vfs_read()") {
		t.Errorf("not unfolded:\n%s", s)
	}
	step(m, press("f"))
	if s := screen(m); !strings.Contains(s, "following dd-") || strings.Contains(s, "still_open") {
		t.Errorf("not following dd:\n%s", s)
	}
	feed := fb.feed
	step(m, press("x"))
	if fb.stops != 1 || m.graph.running || !strings.Contains(screen(m), "(stopped)") {
		t.Errorf("stops %d, running %v:\n%s", fb.stops, m.graph.running, screen(m))
	}
	before := len(m.graph.model.trees)
	step(m, graphBatchMsg{gen: m.graph.gen - 1, batch: GraphBatch{Trees: []*stream.Call{call("late", 1, 1, 1)}}, ok: true})
	if len(m.graph.model.trees) != before || feed == nil {
		t.Errorf("a batch of the stopped graph was taken")
	}
}

// TestGraphViewRefused: the backend's refusal (another user's graph files, a top level that is
// not free) is shown with its reason, and no graph runs.
func TestGraphViewRefused(t *testing.T) {
	fb := &graphFake{fakeBackend: newFakeBackend(t), err: errors.New("set_graph_function lists \"vfs_write\" (another user's)")}
	m := testModel(t, fb, testTrace)
	step(m, press("5"))
	step(m, press("g"))
	typeText(m, "vfs_read")
	step(m, press("enter"))
	if m.graph.running || !strings.Contains(screen(m), "starting the graph (nothing is left changed): set_graph_function lists") ||
		!strings.Contains(screen(m), `"vfs_write" (another user's)`) {
		t.Errorf("%s", screen(m))
	}
}

// TestGraphViewRecording: over a recording the Graph view shows its trees from the start, and
// says how many records it read.
func TestGraphViewRecording(t *testing.T) {
	file := graphRecording(t, "6.1", "graph")
	b := &FileBackend{Name: "g.dat", File: file}
	defer b.StopGraph()
	src := NewFileSource(context.Background(), file, 1000)
	defer src.Close()
	m := New(Options{Backend: b, Source: src, Now: fixedNow, StatusEvery: time.Hour, RingSize: 1000})
	m.SetSize(120, 30)
	// the commands run here, one at a time: runCmd would leave a wait behind that takes a batch
	m.Update(m.graph.Init()())
	deadline := time.Now().Add(10 * time.Second)
	for m.graph.ended == "" && time.Now().Before(deadline) {
		m.Update(waitGraph(m.graph.feed, m.graph.gen)())
	}
	step(m, press("5"))
	s := screen(m)
	for _, want := range []string{"graph of the recording", "ksys_read()", " us ", "function_graph records"} {
		if !strings.Contains(s, want) {
			t.Errorf("no %q:\n%s", want, s)
		}
	}
	step(m, press("g"))
	if m.graph.prompting || !strings.Contains(screen(m), "a recording: its function_graph calls show as recorded") {
		t.Errorf("%s", screen(m))
	}
}

// TestFlowGraph: the whole program: the Graph view's key, the roots typed, the graph's trees
// (6.12's capture) slowest first, the slowest unfolded.
func TestFlowGraph(t *testing.T) {
	fb := &graphFake{fakeBackend: newFakeBackend(t), trees: recordedTrees(t, "6.12", "graph")}
	t.Cleanup(func() { fb.StopGraph() })
	tm := newFlow(t, testModel(t, fb, testTrace), 100, 24)
	tm.waitFor("35 events")
	tm.Type("5")
	tm.waitFor("g graphs the calls")
	tm.Type("g")
	tm.Type("ksys_read")
	tm.Send(press("enter"))
	tm.waitFor("graph ksys_read · in ftctl-1-0000beef")
	tm.waitFor("▸ ksys_read()")
	tm.Send(press("enter"))
	tm.waitFor("▾ ksys_read()")
	golden(t, tm.finish())
}

func (c *countingBackend) StartGraph(ctx context.Context, req GraphRequest) (GraphInfo, *GraphFeed, error) {
	c.n.Add(1)
	return c.Backend.StartGraph(ctx, req)
}

func (c *countingBackend) StopGraph() error { c.n.Add(1); return c.Backend.StopGraph() }

// TestGraphNoIOInUpdate: the Graph view's keys start and stop graphs in commands only.
func TestGraphNoIOInUpdate(t *testing.T) {
	fb := &countingBackend{Backend: &graphFake{fakeBackend: newFakeBackend(t)}}
	m := New(Options{Backend: fb, Source: NewTextSource(testTrace), Now: fixedNow, StatusEvery: 1 << 40})
	m.Init()
	for _, k := range []string{"5", "g", "v", "f", "s", "_", "r", "e", "a", "d", "enter", "x", "s", "f", "space", "l", "h", "j", "k", "r"} {
		m.Update(press(k))
	}
	m.Update(graphStartedMsg{info: GraphInfo{Session: "s"}, feed: NewGraphFeed(10)})
	m.Update(press("x"))
	if n := fb.n.Load(); n != 0 {
		t.Errorf("%d backend calls from Update", n)
	}
}

// FuzzGraphRendering: whatever the kernel names a function or a task, the Graph view's lines
// carry no control character and keep the screen's width.
func FuzzGraphRendering(f *testing.F) {
	f.Add("vfs_read", "dd", 3, uint64(12345))
	f.Add("evil\x1b[2J", "\x1b]0;t\x07\x9b2J\xff\u202e", 0, uint64(1))
	f.Fuzz(func(t *testing.T, fn, comm string, pid int, dur uint64) {
		m := New(Options{Backend: &graphFake{fakeBackend: &fakeBackend{tracer: "nop"}}, RingSize: 1000, Now: fixedNow})
		m.SetSize(100, 20)
		c := call(fn, pid, 1, dur, call(fn+fn, pid, 1, dur/2))
		c.Comm = comm
		m.Update(press("5"))
		m.Update(graphStartedMsg{info: GraphInfo{Request: GraphRequest{Roots: []string{fn}}, Session: comm}, feed: NewGraphFeed(10)})
		m.Update(graphBatchMsg{gen: m.graph.gen, batch: GraphBatch{Trees: []*stream.Call{c}}, ok: true})
		m.Update(press("enter"))
		checkFrame(t, m.Render(), 100)
	})
}

// TestParseGraphRequest: the Graph prompt takes ftctl graph's roots and flags, checked as
// ftctl graph checks them, and Text gives back what parses to the same request.
func TestParseGraphRequest(t *testing.T) {
	for _, c := range []struct {
		text string
		want GraphRequest
	}{
		{"vfs_read", GraphRequest{Roots: []string{"vfs_read"}}},
		{"  ksys_read   vfs_* ", GraphRequest{Roots: []string{"ksys_read", "vfs_*"}}},
		{"-f ksys_read -n security_* --notrace apparmor_* --depth 3 --threshold 100us --pid 42 vfs_read",
			GraphRequest{Roots: []string{"ksys_read", "vfs_read"}, Notrace: []string{"security_*", "apparmor_*"}, Depth: 3, Threshold: 100 * time.Microsecond, PID: 42}},
		{"", GraphRequest{}},
	} {
		got, err := ParseGraphRequest(c.text)
		if err != nil || !reflect.DeepEqual(got, c.want) {
			t.Errorf("%q: %+v, %v; want %+v", c.text, got, err, c.want)
			continue
		}
		again, err := ParseGraphRequest(got.Text())
		if err != nil || !reflect.DeepEqual(again, got) {
			t.Errorf("%q: Text %q parses to %+v, %v", c.text, got.Text(), again, err)
		}
	}
	for text, want := range map[string]string{
		"vfs_read --depth -1":       "--depth must not be negative",
		"vfs_read --depth x":        `invalid argument "x" for "--depth"`,
		"vfs_read --threshold 10ns": "want 1us or more",
		"vfs_read --pid -3":         "--pid takes a process id",
		"vfs_read --count 3":        "unknown flag: --count",
		"vfs_read -n":               "flag needs an argument",
		"vfs_read:mod:ext4":         "no :mod: part",
		"1vfs":                      "starts with a digit",
		"vfs_read -n 1sec":          "starts with a digit",
	} {
		if _, err := ParseGraphRequest(text); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: %v, want an error saying %q", text, err, want)
		}
	}
}
