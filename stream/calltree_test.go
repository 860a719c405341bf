package stream

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/ftctl/ftctl/tracefs"
)

// graphCall is one call as a flat list compares them: the task, the depth, the function and
// its duration as function_graph prints it ("" when the record has none).
type graphCall struct {
	pid   int
	depth int
	fn    string
	dur   string
}

// kernelGraphCalls reads the kernel's own function_graph text (graph.trace: funcgraph-proc on)
// into each task's calls in the order they were called.
func kernelGraphCalls(t *testing.T, text []byte) map[int][]graphCall {
	t.Helper()
	out := map[int][]graphCall{}
	open := map[int][]int{} // per task, the indexes of the calls not yet closed
	sc := bufio.NewScanner(bytes.NewReader(text))
	var ev Event
	for sc.Scan() {
		line := sc.Bytes()
		if len(line) == 0 || line[0] == '#' {
			continue
		}
		ev.reset()
		if !parseGraph(&ev, line) {
			t.Fatalf("not a function_graph line: %q", line)
		}
		g := &ev.Graph
		pid := ev.PID
		switch g.Type {
		case GraphEntry:
			open[pid] = append(open[pid], len(out[pid]))
			out[pid] = append(out[pid], graphCall{pid, g.Depth, string(g.Func), ""})
		case GraphCall:
			out[pid] = append(out[pid], graphCall{pid, g.Depth, string(g.Func), string(g.Duration)})
		case GraphExit:
			st := open[pid]
			if len(st) == 0 { // an exit whose entry was before the capture (or not recorded)
				out[pid] = append(out[pid], graphCall{pid, g.Depth, string(g.Func), string(g.Duration)})
				continue
			}
			out[pid][st[len(st)-1]].dur = string(g.Duration)
			open[pid] = st[:len(st)-1]
		}
	}
	return out
}

// graphCapture is the binary decoder set up on a graph capture of vm/fixtures-graph.sh
// (NAME.cpuN.raw.gz, with its kallsyms and saved_cmdlines), and the capture's pages.
func graphCapture(t *testing.T, kernel, name string) (*BinaryDecoder, []CPUPage) {
	t.Helper()
	dir := filepath.Join("testdata", kernel)
	syms, err := ParseKallsyms(gunzip(t, filepath.Join(dir, "graph.kallsyms.gz")))
	if err != nil {
		t.Fatal(err)
	}
	cmdlines, err := os.ReadFile(filepath.Join(dir, "graph.saved_cmdlines"))
	if err != nil {
		t.Fatal(err)
	}
	comms := tracefs.ParsePidLines(cmdlines)
	d := &BinaryDecoder{Layout: tracefs.DefaultPageLayout, Symbols: syms, Comm: func(pid int) []byte { return comms[pid] }}
	for _, f := range kernelFormats(t, kernel) {
		d.Add(f)
	}
	var pages []CPUPage
	for cpu := 0; cpu < 2; cpu++ {
		raw := gunzip(t, filepath.Join(dir, fmt.Sprintf("%s.cpu%d.raw.gz", name, cpu)))
		for ; len(raw) >= 4096; raw = raw[4096:] {
			pages = append(pages, CPUPage{CPU: cpu, Data: raw[:4096]})
		}
	}
	return d, pages
}

// graphFixture decodes a capture's pages (NAME.cpuN.raw.gz) into call trees.
func graphFixture(t *testing.T, kernel, name string) (calls []*Call, lost int64) {
	t.Helper()
	d, pages := graphCapture(t, kernel, name)
	tree := &CallTree{Done: func(c *Call) error { calls = append(calls, c); return nil }}
	if err := d.Feed(pages, tree.Add); err != nil {
		t.Fatal(err)
	}
	if err := tree.End(); err != nil {
		t.Fatal(err)
	}
	return calls, tree.Lost
}

func flatten(out map[int][]graphCall, c *Call) {
	dur := ""
	if !c.NoExit {
		dur = string(appendGraphMicros(nil, c.Duration()))
	}
	out[c.PID] = append(out[c.PID], graphCall{c.PID, c.Depth, c.Func, dur})
	for _, k := range c.Calls {
		flatten(out, k)
	}
}

// TestCallTreeMatchesKernel: the trees built from the ring buffer's pages hold every call the
// kernel's own text of the same records shows, per task, in order, at its depth, with the same
// duration, on both kernels: a dd reading /proc/version under set_graph_function ksys_read.
func TestCallTreeMatchesKernel(t *testing.T) {
	for _, kernel := range []string{"6.1", "6.12"} {
		for _, name := range []string{"graph", "graph.thresh"} {
			t.Run(kernel+"/"+name, func(t *testing.T) {
				text, err := os.ReadFile(filepath.Join("testdata", kernel, name+".trace"))
				if err != nil {
					t.Fatal(err)
				}
				want := kernelGraphCalls(t, text)
				calls, lost := graphFixture(t, kernel, name)
				if lost != 0 {
					t.Errorf("%d lost", lost)
				}
				got := map[int][]graphCall{}
				for _, c := range calls {
					flatten(got, c)
				}
				n := 0
				for pid, w := range want {
					g := got[pid]
					if name == "graph.thresh" {
						// only exits, callee first in the text; the trees nest them
						byDepth := func(l []graphCall) {
							sort.Slice(l, func(i, j int) bool { return l[i].depth < l[j].depth })
						}
						byDepth(g)
						byDepth(w)
					}
					n += len(w)
					if len(g) != len(w) {
						t.Errorf("pid %d: %d calls, the kernel's text has %d", pid, len(g), len(w))
					}
					for i := range min(len(g), len(w)) {
						if g[i] != w[i] {
							t.Errorf("pid %d call %d: %+v, the kernel's text says %+v", pid, i, g[i], w[i])
							break
						}
					}
				}
				if len(got) != len(want) {
					t.Errorf("%d tasks, the kernel's text has %d", len(got), len(want))
				}
				if n < 3 {
					t.Errorf("only %d calls compared", n)
				}
				roots := 0
				for _, c := range calls {
					if c.Func == "ksys_read" && c.Depth == 0 {
						roots++
						if c.Comm != "dd" {
							t.Errorf("comm %q", c.Comm)
						}
					}
				}
				if name == "graph" && roots < 2 {
					t.Errorf("%d ksys_read trees", roots)
				}
				t.Logf("%d calls of %d tasks, %d top-level trees (%d of ksys_read)", n, len(want), len(calls), roots)
			})
		}
	}
}

// TestCallTreeRender: the text and JSON of one tree decoded from 6.12's pages: vfs_read under
// ksys_read with durations, slow calls marked, JSON nested by "calls".
func TestCallTreeRender(t *testing.T) {
	calls, _ := graphFixture(t, "6.12", "graph")
	var root *Call
	for _, c := range calls {
		if c.Func == "ksys_read" {
			root = c
			break
		}
	}
	if root == nil {
		t.Fatal("no ksys_read")
	}
	text := string(AppendCallText(nil, root))
	t.Logf("\n%s", text)
	lines := strings.Split(strings.TrimSuffix(text, "\n"), "\n")
	if !strings.HasSuffix(lines[0], "|  ksys_read() {") || !strings.Contains(lines[0], " dd-") {
		t.Errorf("first line %q", lines[0])
	}
	if !strings.Contains(lines[len(lines)-1], "|  } /* ksys_read */") || !strings.Contains(lines[len(lines)-1], "! 912.481 us ") {
		t.Errorf("last line %q", lines[len(lines)-1])
	}
	if !strings.Contains(text, "|    vfs_read() {") {
		t.Error("no vfs_read under ksys_read")
	}
	var j struct {
		Func       string   `json:"func"`
		DurationUS *float64 `json:"duration_us"`
		CPU        *int     `json:"cpu"`
		PID        int      `json:"pid"`
		Comm       string   `json:"comm"`
		Calls      []struct {
			Func       string   `json:"func"`
			DurationUS *float64 `json:"duration_us"`
		} `json:"calls"`
	}
	b := AppendCallJSON(nil, root)
	if err := json.Unmarshal(b, &j); err != nil {
		t.Fatalf("%v: %s", err, b)
	}
	if j.Func != "ksys_read" || j.DurationUS == nil || *j.DurationUS <= 0 || j.CPU == nil || j.PID != root.PID || j.Comm != "dd" {
		t.Errorf("%s", b)
	}
	found := false
	for _, k := range j.Calls {
		found = found || (k.Func == "vfs_read" && k.DurationUS != nil && *k.DurationUS > 0)
	}
	if !found {
		t.Errorf("no vfs_read with a duration in %s", b)
	}
}

// graphEv makes a function_graph event as the binary decoder does.
func graphEv(pid, cpu int, typ GraphType, depth int, fn string, call, ret uint64) *Event {
	ev := &Event{Kind: KindGraph, PID: pid, CPU: cpu, Comm: []byte("t")}
	ev.Graph = Graph{Type: typ, Depth: depth, Func: []byte(fn), Stamp: call, CallTime: call, RetTime: ret}
	if typ == GraphEntry {
		ev.Graph.CallTime, ev.Graph.RetTime = 0, 0
	}
	return ev
}

// TestCallTreeMissing: tasks interleaved on CPUs, an exit whose entry was before the start, an
// entry whose exit was lost, the exits alone of tracing_thresh, a call open at the end.
func TestCallTreeMissing(t *testing.T) {
	var got []string
	tree := &CallTree{Done: func(c *Call) error {
		got = append(got, strings.TrimSpace(string(AppendCallJSON(nil, c))))
		return nil
	}}
	for _, ev := range []*Event{
		graphEv(7, 0, GraphExit, 1, "inner", 5, 8),      // entered before the start
		graphEv(7, 0, GraphExit, 0, "outer", 1, 10),     // ...its caller too: holds it
		graphEv(8, 1, GraphEntry, 0, "a", 11, 0),        // task 8...
		graphEv(9, 0, GraphEntry, 0, "b", 12, 0),        // ...and 9 interleaved
		graphEv(8, 0, GraphEntry, 1, "a1", 13, 0),       // 8 migrated to CPU 0
		graphEv(9, 0, GraphExit, 0, "b", 12, 14),        // b is a leaf
		graphEv(8, 0, GraphExit, 1, "a1", 13, 15),       //
		graphEv(8, 0, GraphEntry, 1, "a2", 16, 0),       // a2's exit is lost...
		graphEv(8, 0, GraphExit, 0, "a", 11, 20),        // ...a's is not
		graphEv(10, 1, GraphExit, 2, "deep", 30, 31),    // thresh: exits only, callee first
		graphEv(10, 1, GraphExit, 2, "deep2", 32, 33),   //
		graphEv(10, 1, GraphExit, 1, "mid", 29, 34),     //
		graphEv(10, 1, GraphExit, 1, "alone", 40, 41),   // no caller recorded
		graphEv(11, 1, GraphEntry, 0, "open", 50, 0),    // open at the end
		graphEv(11, 1, GraphEntry, 1, "openkid", 51, 0), //
	} {
		if err := tree.Add(ev); err != nil {
			t.Fatal(err)
		}
	}
	if err := tree.End(); err != nil {
		t.Fatal(err)
	}
	want := []string{
		`{"schema":"ftctl/graph/v1","func":"outer","duration_us":0.009,"cpu":0,"pid":7,"comm":"t","entry_lost":true,"calls":[{"func":"inner","duration_us":0.003,"entry_lost":true,"calls":[]}]}`,
		`{"schema":"ftctl/graph/v1","func":"b","duration_us":0.002,"cpu":0,"pid":9,"comm":"t","calls":[]}`,
		`{"schema":"ftctl/graph/v1","func":"a","duration_us":0.009,"cpu":1,"pid":8,"comm":"t","calls":[{"func":"a1","duration_us":0.002,"calls":[]},{"func":"a2","unfinished":true,"calls":[]}]}`,
	}
	end := map[string]bool{
		`{"schema":"ftctl/graph/v1","func":"mid","duration_us":0.005,"cpu":1,"pid":10,"comm":"t","entry_lost":true,"calls":[{"func":"deep","duration_us":0.001,"entry_lost":true,"calls":[]},{"func":"deep2","duration_us":0.001,"entry_lost":true,"calls":[]}]}`: true,
		`{"schema":"ftctl/graph/v1","func":"alone","duration_us":0.001,"cpu":1,"pid":10,"comm":"t","entry_lost":true,"calls":[]}`:                                                                                                                                 true,
		`{"schema":"ftctl/graph/v1","func":"open","cpu":1,"pid":11,"comm":"t","unfinished":true,"calls":[{"func":"openkid","unfinished":true,"calls":[]}]}`:                                                                                                       true,
	}
	if len(got) != len(want)+len(end) {
		t.Fatalf("got %d trees:\n%s", len(got), strings.Join(got, "\n"))
	}
	for i, w := range want {
		if got[i] != w {
			t.Errorf("tree %d:\n got %s\nwant %s", i, got[i], w)
		}
	}
	for _, g := range got[len(want):] {
		if !end[g] {
			t.Errorf("unexpected tree at the end: %s", g)
		}
	}
}

// FuzzCallTree: funcgraph records of any content (ids 10 and 11 are 6.12's funcgraph_exit
// and funcgraph_entry), in any order, make call trees whose JSON is valid and whose text is
// safe for a terminal, and every record is in a tree or dropped by nothing.
func FuzzCallTree(f *testing.F) {
	var formats []*tracefs.Format
	for _, fm := range kernelFormats(f, "6.12") {
		if fm.System == "ftrace" && strings.HasPrefix(fm.Name, "funcgraph_") {
			formats = append(formats, fm)
		}
	}
	rec := func(id byte, pid byte, fn, depth byte, call, ret byte) []byte {
		b := make([]byte, 40)
		b[0], b[4], b[8], b[16], b[24], b[32] = id, pid, fn, depth, call, ret
		return b
	}
	f.Add(append(rec(11, 1, 1, 0, 0, 0), append(rec(11, 1, 2, 1, 0, 0), append(rec(10, 1, 2, 1, 1, 2), rec(10, 1, 1, 0, 0, 3)...)...)...))
	f.Add(append(rec(10, 2, 3, 2, 1, 2), rec(10, 2, 4, 1, 0, 5)...))
	f.Add(bytes.Repeat(rec(11, 3, 5, 200, 0, 0), 3))
	f.Fuzz(func(t *testing.T, data []byte) {
		d := &BinaryDecoder{Layout: tracefs.DefaultPageLayout, Symbols: &Symbols{}}
		for _, fm := range formats {
			d.Add(fm)
		}
		tree := &CallTree{Done: func(c *Call) error {
			if js := AppendCallJSON(nil, c); !json.Valid(js) {
				t.Fatalf("invalid JSON %s", js)
			}
			checkTerminalSafe(t, string(AppendCallText(nil, c)), true)
			return nil
		}}
		var ev Event
		for i := 0; i+8 <= len(data) && i < 40*64; i += 40 {
			d.Decode(&ev, int(data[i+1]&1), uint64(i), data[i:min(i+40, len(data))])
			if err := tree.Add(&ev); err != nil {
				t.Fatal(err)
			}
		}
		if err := tree.End(); err != nil {
			t.Fatal(err)
		}
	})
}
