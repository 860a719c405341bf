package stream

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/ftctl/ftctl/internal/tracedattest"
	"github.com/ftctl/ftctl/tracedat"
)

// asTraceCmd rewrites the recording src as trace-cmd record -B writes one: for each of order,
// a buffer holding the CPUs bufs gives it.
func asTraceCmd(t testing.TB, src []byte, version int, comp string, bufs map[string][]int, order []string) []byte {
	var list []tracedattest.Buffer
	for _, name := range order {
		list = append(list, tracedattest.Buffer{Name: name, CPUs: bufs[name]})
	}
	return tracedattest.TraceCmd(t, src, version, comp, list...)
}

func fileEventsOpt(t *testing.T, b []byte, o FileOptions) ([]string, *FileInfo) {
	t.Helper()
	f, err := tracedat.Read(bytes.NewReader(b), int64(len(b)))
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	info, err := ReadFile(f, o, func(ev *Event) error {
		out = append(out, string(AppendJSON(nil, ev, false)))
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out, info
}

// A file of trace-cmd record -B: every buffer's events, merged in time order, each saying its
// buffer ("" the top level's); --buffer reads one. The instance "inst" here holds both CPUs'
// pages of the capture and the top level CPU 0's: its events are the file's, each once more.
func TestReadFileBuffers(t *testing.T) {
	src := fixtureTraceDat(t, "6.12", true)
	want := fileEvents(t, src) // the capture's events, no buffer
	var want0 []string         // those of CPU 0
	for _, e := range want {
		var ev struct{ CPU int }
		if err := json.Unmarshal([]byte(e), &ev); err != nil {
			t.Fatal(err)
		}
		if ev.CPU == 0 {
			want0 = append(want0, e)
		}
	}
	if len(want0) == 0 || len(want0) == len(want) {
		t.Fatalf("%d events of CPU 0 of %d", len(want0), len(want))
	}
	tag := func(name string, events []string) []string {
		var out []string
		for _, e := range events {
			out = append(out, fmt.Sprintf(`{"schema":%q,"buffer":%q,`, EventSchema, name)+strings.TrimPrefix(e, `{"schema":"`+EventSchema+`",`))
		}
		return out
	}
	for _, c := range []struct {
		version int
		comp    string
	}{{6, ""}, {7, "none"}, {7, "zstd"}, {7, "zlib"}} {
		t.Run(fmt.Sprintf("v%d%s", c.version, c.comp), func(t *testing.T) {
			b := asTraceCmd(t, src, c.version, c.comp, map[string][]int{"": {0}, "inst": {0, 1}}, []string{"", "inst"})
			got, info := fileEventsOpt(t, b, FileOptions{})
			if len(got) != len(want0)+len(want) {
				t.Fatalf("%d events, want %d (top level) + %d (inst)", len(got), len(want0), len(want))
			}
			if strings.Join(info.Buffers, ",") != ",inst" {
				t.Errorf("buffers read %q", info.Buffers)
			}
			var top, inst []string
			for _, e := range got {
				switch {
				case strings.HasPrefix(e, `{"schema":"ftctl/event/v1","buffer":"",`):
					top = append(top, e)
				case strings.HasPrefix(e, `{"schema":"ftctl/event/v1","buffer":"inst",`):
					inst = append(inst, e)
				default:
					t.Fatalf("an event without its buffer: %s", e)
				}
			}
			sameList(t, "top level", top, tag("", want0))
			sameList(t, "inst", inst, tag("inst", want))
			only, _ := fileEventsOpt(t, b, FileOptions{Buffers: []string{"inst"}})
			sameList(t, "--buffer inst", only, tag("inst", want))
			only, _ = fileEventsOpt(t, b, FileOptions{Buffers: []string{""}})
			sameList(t, "--buffer ''", only, tag("", want0))
			cpu1, _ := fileEventsOpt(t, b, FileOptions{CPU: 1, HasCPU: true})
			if len(cpu1) != len(want)-len(want0) {
				t.Errorf("--cpu 1: %d events, want %d (inst's)", len(cpu1), len(want)-len(want0))
			}
			f, _ := tracedat.Read(bytes.NewReader(b), int64(len(b)))
			if _, err := ReadFile(f, FileOptions{Buffers: []string{"nope"}}, func(*Event) error { return nil }); !errors.Is(err, tracedat.ErrNoBuffer) {
				t.Errorf("an unknown buffer: %v", err)
			}
		})
	}
}

// The events merged from several buffers come in time order.
func TestReadFileBuffersInTimeOrder(t *testing.T) {
	src := fixtureTraceDat(t, "6.12", true)
	b := asTraceCmd(t, src, 7, "zstd", map[string][]int{"": {1}, "a": {0}}, []string{"", "a"})
	f, err := tracedat.Read(bytes.NewReader(b), int64(len(b)))
	if err != nil {
		t.Fatal(err)
	}
	var last string
	n := map[string]int{}
	if _, err := ReadFile(f, FileOptions{}, func(ev *Event) error {
		if ev.Kind == KindLost {
			return nil
		}
		ts := fmt.Sprintf("%020s", ev.TS)
		if ts < last {
			return fmt.Errorf("%s after %s", ev.TS, strings.TrimLeft(last, "0"))
		}
		last = ts
		n[string(ev.Buffer)]++
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if n[""] == 0 || n["a"] == 0 {
		t.Errorf("events per buffer: %v", n)
	}
}

// The text of a file with instances' buffers starts each line with the buffer, as trace-cmd
// report prints it: the name right-aligned to the longest, blank for the top level.
func TestTextBufferColumn(t *testing.T) {
	ev := Event{Kind: KindMarker, HasContext: true, Comm: []byte("sh"), PID: 1, CPU: 0, TS: []byte("1.000000"), Text: []byte("hi")}
	o := TextOptions{BufferWidth: BufferWidth([]string{"ab", "instance"})}
	ev.Buffer = []byte("ab")
	if got := string(AppendText(nil, &ev, o)); !strings.HasPrefix(got, "      ab: ") {
		t.Errorf("instance: %q", got)
	}
	ev.Buffer = []byte{}
	if got := string(AppendText(nil, &ev, o)); !strings.HasPrefix(got, "          ") || strings.Contains(got, ":  ") {
		t.Errorf("top level: %q", got)
	}
	ev.Buffer = []byte("x\x1b[2J")
	if got := string(AppendText(nil, &ev, o)); strings.Contains(got, "\x1b") {
		t.Errorf("a buffer's name is not escaped: %q", got)
	}
}

func sameList(t *testing.T, what string, got, want []string) {
	t.Helper()
	if len(got) != len(want) {
		t.Errorf("%s: %d events, want %d", what, len(got), len(want))
		return
	}
	for i := range got {
		if got[i] != want[i] {
			t.Errorf("%s: event %d:\n got %s\nwant %s", what, i, got[i], want[i])
			return
		}
	}
}
