package stream

import (
	"encoding/binary"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ftctl/ftctl/tracefs"
)

// graphLinesDecoder is graphCapture's decoder printing function_graph's lines with the
// options the capture had (funcgraph-proc and funcgraph-abstime on).
func graphLinesDecoder(t *testing.T, kernel, name string) (*BinaryDecoder, []CPUPage) {
	t.Helper()
	d, pages := graphCapture(t, kernel, name)
	d.Lines = &GraphLines{CPU: true, Proc: true, AbsTime: true, MaxCPU: 1}
	return d, pages
}

// traceTextJSON is the JSON of the events the line parser makes of a trace file's text, its
// '#' header left out.
func traceTextJSON(t *testing.T, text []byte) []string {
	t.Helper()
	var out []string
	var d Decoder
	emit := func(ev *Event) error {
		out = append(out, string(AppendJSON(nil, ev, false)))
		return nil
	}
	var body []string
	for _, l := range strings.SplitAfter(string(text), "\n") {
		if !strings.HasPrefix(l, "#") && l != "" {
			body = append(body, l)
		}
	}
	if err := d.Feed([]byte(strings.Join(body, "")), emit); err != nil {
		t.Fatal(err)
	}
	if err := d.Flush(emit); err != nil {
		t.Fatal(err)
	}
	return out
}

// TestGraphLinesMatchKernelText: function_graph's records decoded from the ring buffer's pages
// make the same events, in the same order, as the kernel's own text of the same records (the
// trace file, through the line parser): a leaf's entry and return as one call, an exit named
// only where the kernel names it, durations as the kernel prints them; on both kernels, with
// and without tracing_thresh, the pages given all at once or one by one (an entry whose return
// is on the next page is held until that page comes).
func TestGraphLinesMatchKernelText(t *testing.T) {
	for _, kernel := range []string{"6.1", "6.12"} {
		for _, name := range []string{"graph", "graph.thresh"} {
			text, err := os.ReadFile(filepath.Join("testdata", kernel, name+".trace"))
			if err != nil {
				t.Fatal(err)
			}
			want := traceTextJSON(t, text)
			for _, split := range []bool{false, true} {
				t.Run(fmt.Sprintf("%s/%s/split=%v", kernel, name, split), func(t *testing.T) {
					d, pages := graphLinesDecoder(t, kernel, name)
					var got []string
					emit := func(ev *Event) error {
						got = append(got, string(AppendJSON(nil, ev, false)))
						return nil
					}
					if split {
						// one page at a time, each CPU's in turn: the CPUs' events no longer
						// interleave by time, so each CPU's are compared apart
						for _, p := range pages {
							if err := d.Feed([]CPUPage{p}, emit); err != nil {
								t.Fatal(err)
							}
						}
					} else if err := d.Feed(pages, emit); err != nil {
						t.Fatal(err)
					}
					if err := d.FlushHeld(emit); err != nil {
						t.Fatal(err)
					}
					g, w := got, want
					if split {
						g, w = byCPU(got), byCPU(want)
					}
					compareLines(t, g, w)
					calls := 0
					for _, l := range got {
						if strings.Contains(l, `"type":"call"`) {
							calls++
						}
					}
					if name == "graph" && calls < 10 {
						t.Errorf("only %d leaf calls", calls)
					}
					t.Logf("%d events, %d leaf calls", len(got), calls)
				})
			}
		}
	}
}

// byCPU orders JSON events by their "cpu", keeping each CPU's order.
func byCPU(l []string) []string {
	var out []string
	for _, cpu := range []string{`"cpu":0,`, `"cpu":1,`} {
		for _, s := range l {
			if strings.Contains(s, cpu) {
				out = append(out, s)
			}
		}
	}
	for _, s := range l {
		if !strings.Contains(s, `"cpu":0,`) && !strings.Contains(s, `"cpu":1,`) {
			out = append(out, s)
		}
	}
	return out
}

func compareLines(t *testing.T, got, want []string) {
	t.Helper()
	if len(got) != len(want) {
		t.Errorf("%d events, the kernel's text has %d", len(got), len(want))
	}
	bad := 0
	for i := range max(len(got), len(want)) {
		g, w := "", ""
		if i < len(got) {
			g = got[i]
		}
		if i < len(want) {
			w = want[i]
		}
		if g != w {
			t.Errorf("event %d:\nbinary %s\ntext   %s", i, g, w)
			if bad++; bad == 5 {
				return
			}
		}
	}
}

// TestGraphLinesKernelShapes: what the kernel prints beside the calls, made from records as
// print_graph_* makes it, reads back through the line parser as the same events: the banner
// of a task switch on a CPU (verif_pid), an interrupt's entry and return marks
// (print_graph_irq), an exit without its entry, a module's function, a leaf of the default
// columns (funcgraph-cpu only).
func TestGraphLinesKernelShapes(t *testing.T) {
	d := graphShapesDecoder(t)
	var got []string
	var lines []string
	emit := func(ev *Event) error {
		got = append(got, string(AppendJSON(nil, ev, false)))
		return nil
	}
	entry, exit := graphTypes(t, d)
	recs := [][]byte{
		graphRec(entry, 7, 0x1000, 0, 0, 0),              // outer() {       task 7
		graphRec(entry, 7, 0x2000, 1, 0, 0),              //   leaf();
		graphRec(exit, 7, 0x2000, 1, 1000, 2500),         //
		graphRec(entry, 9, 0x3000, 0, 0, 0),              // task 9 on the same CPU: a banner
		graphRec(exit, 9, 0x3000, 0, 3000, 15000),        // irq_handler(); between marks
		graphRec(exit, 7, 0x1000, 0, 100, 2_000_000_100), // } /* outer */: the leaf at depth 0 cleared its entry; a banner back to 7
		graphRec(exit, 7, 0x4000, 0, 100, 20000),         // } /* modfn [mymod] */: no entry seen
	}
	page := graphPage(t, recs)
	if err := d.Feed([]CPUPage{{CPU: 1, Data: page}}, emit); err != nil {
		t.Fatal(err)
	}
	if err := d.FlushHeld(emit); err != nil {
		t.Fatal(err)
	}
	// the kernel's text of the same records (funcgraph-cpu, 2 CPUs)
	lines = []string{
		" 1)               |  outer() {",
		" 1)   1.500 us    |    leaf();",
		" ------------------------------------------",
		" 1)    task7-7     =>    task9-9    ",
		" ------------------------------------------",
		"",
		" 1) + 12.000 us   |  irq_handler();",
		" 1)   <========== |",
		" ------------------------------------------",
		" 1)    task9-9     =>    task7-7    ",
		" ------------------------------------------",
		"",
		" 1) $ 2000000 us  |  } /* outer */",
		" 1) + 19.900 us   |  } /* modfn [mymod] */",
	}
	want := traceTextJSON(t, []byte(strings.Join(lines, "\n")+"\n"))
	compareLines(t, got, want)
}

// graphShapesDecoder decodes 6.12's funcgraph formats with a made-up kallsyms: outer, leaf,
// irq_handler inside __irqentry_text, and a module's modfn.
func graphShapesDecoder(t *testing.T) *BinaryDecoder {
	t.Helper()
	syms, err := ParseKallsyms([]byte("0000000000001000 T outer\n0000000000002000 T leaf\n" +
		"0000000000002fff T __irqentry_text_start\n0000000000003000 T irq_handler\n0000000000003100 T __irqentry_text_end\n" +
		"0000000000003200 T _etext\n0000000000004000 t modfn\t[mymod]\n"))
	if err != nil {
		t.Fatal(err)
	}
	comms := map[int][]byte{7: []byte("task7"), 9: []byte("task9")}
	d := &BinaryDecoder{Layout: tracefs.DefaultPageLayout, Symbols: syms, Comm: func(pid int) []byte { return comms[pid] },
		Lines: &GraphLines{CPU: true, MaxCPU: 1}}
	for _, f := range kernelFormats(t, "6.12") {
		if f.System == "ftrace" {
			d.Add(f)
		}
	}
	return d
}

// graphTypes are the funcgraph_entry and funcgraph_exit formats the decoder knows.
func graphTypes(t *testing.T, d *BinaryDecoder) (entry, exit *tracefs.Format) {
	t.Helper()
	for _, e := range d.events {
		if e == nil {
			continue
		}
		switch e.kind {
		case binGraphEntry:
			entry = e.format
		case binGraphExit:
			exit = e.format
		}
	}
	if entry == nil || exit == nil {
		t.Fatal("no funcgraph formats")
	}
	return entry, exit
}

// graphRec makes a funcgraph record: entry (calltime and rettime unused) or exit.
func graphRec(f *tracefs.Format, pid int, fn uint64, depth int, call, ret uint64) []byte {
	size := 0
	for _, fl := range f.Fields {
		size = max(size, fl.Offset+fl.Size)
	}
	b := make([]byte, max(size, 8))
	put := func(name string, v uint64) {
		fl := f.Field(name)
		if fl == nil {
			return
		}
		for i := 0; i < fl.Size; i++ {
			b[fl.Offset+i] = byte(v >> (8 * i))
		}
	}
	binary.LittleEndian.PutUint16(b, uint16(f.ID))
	binary.LittleEndian.PutUint32(b[4:], uint32(pid))
	put("func", fn)
	put("depth", uint64(depth))
	put("calltime", call)
	put("rettime", ret)
	return b
}

// graphPage puts records in one ring-buffer page, 1 µs apart.
func graphPage(t *testing.T, recs [][]byte) []byte {
	t.Helper()
	var evs [][]byte
	for i, r := range recs {
		delta := uint32(1000)
		if i == 0 {
			delta = 0
		}
		evs = append(evs, rbEvent(delta, r))
	}
	return page(5_000_000_000, 0, 0, evs...)
}
