package cmd

import (
	"context"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/ftctl/ftctl/internal/fixture"
)

// rawRoot is fixture.RawTracefs, its kallsyms given through FTCTL_KALLSYMS.
func rawRoot(t *testing.T, markers map[int][]string) string {
	t.Helper()
	root, kallsyms := fixture.RawTracefs(t, markers)
	t.Setenv("FTCTL_KALLSYMS", kallsyms)
	return root
}

func TestStreamBinaryReader(t *testing.T) {
	root := rawRoot(t, map[int][]string{0: {"first", "third"}, 1: {"second \x1b[2J"}})
	code, out, errs := run(t, "--tracefs", root, "stream", "-o", "json", "--summary")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	want := `{"schema":"ftctl/event/v1","ts":1.000001,"cpu":0,"comm":"cat","pid":154,"flags":".....","event":"marker","text":"first"}
{"schema":"ftctl/event/v1","ts":1.000002,"cpu":0,"comm":"e\u001bx y","pid":155,"flags":".....","event":"marker","text":"third"}
{"schema":"ftctl/event/v1","ts":2.000001,"cpu":1,"comm":"cat","pid":154,"flags":".....","event":"marker","text":"second \u001b[2J"}
`
	lines := strings.SplitAfter(out, "\n")
	if got := strings.Join(lines[:3], ""); got != want {
		t.Errorf("got\n%swant\n%s", got, want)
	}
	if !strings.Contains(lines[3], `"reader":"trace_pipe_raw"`) || !strings.Contains(lines[3], `"end":"eof"`) || !strings.Contains(lines[3], `"events":3`) {
		t.Errorf("summary %s", lines[3])
	}

	// --grep is served by the binary reader: it matches the line ftctl prints (escaped)
	_, out, _ = run(t, "--tracefs", root, "stream", "-o", "json", "--summary", "--grep", `second \\x1b\[2J$`)
	if n := strings.Count(out, `"event":"marker"`); n != 1 || !strings.Contains(out, `"reader":"trace_pipe_raw"`) {
		t.Errorf("--grep: %d events: %s", n, out)
	}
	// the text reader, asked for, and chosen by auto for --raw
	for _, args := range [][]string{{"--reader", "text"}, {"--raw"}} {
		_, out, _ = run(t, append([]string{"--tracefs", root, "stream", "-o", "json", "--summary"}, args...)...)
		if !strings.Contains(out, `"reader":"trace_pipe"`) {
			t.Errorf("%v: %s", args, out)
		}
	}
	_, out, _ = run(t, "--tracefs", root, "stream", "-o", "json", "--summary", "--raw")
	if !strings.Contains(out, `"reader_why":"--raw prints the kernel's lines`) {
		t.Errorf("no reason given: %s", out)
	}
	// auto: the function_graph tracer's lines made from its records, unless an option prints
	// what the binary reader does not (the overrun lines)
	os.WriteFile(filepath.Join(root, "current_tracer"), []byte("function_graph\n"), 0o644)
	_, out, _ = run(t, "--tracefs", root, "stream", "-o", "json", "--summary")
	if !strings.Contains(out, `"reader":"trace_pipe_raw"`) {
		t.Errorf("function_graph: %s", out)
	}
	os.MkdirAll(filepath.Join(root, "options"), 0o755)
	os.WriteFile(filepath.Join(root, "options", "funcgraph-overrun"), []byte("1\n"), 0o644)
	_, out, _ = run(t, "--tracefs", root, "stream", "-o", "json", "--summary")
	if !strings.Contains(out, `"reader_why":"option funcgraph-overrun is 1"`) {
		t.Errorf("function_graph with funcgraph-overrun: %s", out)
	}
}

func TestStreamReaderInvalid(t *testing.T) {
	root := rawRoot(t, map[int][]string{0: {"x"}})
	for _, args := range [][]string{
		{"--reader", "bogus"}, {"--reader", "binary", "--raw"},
	} {
		code, out, errs := run(t, append([]string{"--tracefs", root, "stream"}, args...)...)
		if code != 2 || out != "" {
			t.Errorf("%v: exit %d, stdout %q, stderr %q", args, code, out, errs)
		}
	}
	os.WriteFile(filepath.Join(root, "trace_clock"), []byte("local [counter]\n"), 0o644)
	code, _, errs := run(t, "--tracefs", root, "stream", "--reader", "binary")
	if code != 2 || !strings.Contains(errs, `"counter" does not count nanoseconds`) {
		t.Errorf("counter clock: exit %d %s", code, errs)
	}
}

// procsWriter notes GOMAXPROCS when the stream writes.
type procsWriter struct{ procs int }

func (w *procsWriter) Write(b []byte) (int, error) {
	w.procs = runtime.GOMAXPROCS(0)
	return len(b), nil
}

// The stream runs with one P unless GOMAXPROCS says otherwise, and gives the setting back: it
// decodes in one goroutine, and a second P only brought the scheduler's traffic between its
// goroutines, which on a CPU shared with a busy workload cost most of ftctl's time (6.12 in the
// VM, vm/bench-hot.sh: 26-70 % of cat's events delivered with two, 118-125 % with one).
func TestStreamOneProc(t *testing.T) {
	root := rawRoot(t, map[int][]string{0: {"x"}})
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(0))
	for _, c := range []struct {
		env  string
		want int
	}{{"", 1}, {"2", 2}} {
		t.Setenv("GOMAXPROCS", c.env)
		runtime.GOMAXPROCS(2)
		w := &procsWriter{}
		code := Run(context.Background(), []string{"--tracefs", root, "stream", "-o", "json"}, strings.NewReader(""), w, io.Discard)
		if code != 0 || w.procs != c.want || runtime.GOMAXPROCS(0) != 2 {
			t.Errorf("GOMAXPROCS=%q: exit %d, %d Ps while streaming (want %d), %d after", c.env, code, w.procs, c.want, runtime.GOMAXPROCS(0))
		}
	}
}
