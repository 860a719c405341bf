//go:build vmtest

package vmtest

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/ftctl/ftctl/stream"
)

// TestStreamBinaryMatchesText records function calls (with and without stack traces), a kprobe
// with arguments of every printing type, a kretprobe and markers into an instance, turns
// tracing off, reads the kernel's own text of the events (the trace file, printed by the same
// code as trace_pipe, and not consuming) through the line parser, then streams the same events
// from trace_pipe_raw with --reader binary: the JSON of both must be the same, event for event.
func TestStreamBinaryMatchesText(t *testing.T) {
	const group = "ftctlrawtest"
	inst := streamInstance(t, "st_raw")
	write(t, inst+"/buffer_size_kb", "1024\n")
	args := "dfd=%di:s32 path=+0(%si):string bad=+0(%ax):string how=%dx:x64 flags=+0(%dx):u32 sym=%ip:symbol arr=+0(%si):u8[4] neg=%di:s16"
	chr := ""
	if strings.Contains(read(t, "README"), "x8/16/32/64, char,") {
		chr = " ch=+0(%si):char"
	}
	write(t, "kprobe_events", "p:"+group+"/open do_sys_openat2 "+args+chr+"\n")
	removeProbeLater(t, group, "open")
	write(t, "kprobe_events", "r:"+group+"/openret do_sys_openat2 ret=$retval:s64\n")
	removeProbeLater(t, group, "openret")
	write(t, inst+"/events/"+group+"/enable", "1\n")
	write(t, inst+"/set_ftrace_filter", "vfs_read ksys_read vfs_write\n")
	write(t, inst+"/current_tracer", "function\n")

	name := "/tmp/ftctl-raw-\x1b[31mred\ttab"
	if err := os.WriteFile(name, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	defer os.Remove(name)
	// The workload: a shell the function tracer follows (set_ftrace_pid is per thread, and
	// this test's goroutines move between threads), opening files and writing markers.
	dir := filepath.Join(tracing, inst)
	work := func() {
		script := `echo $$ > ` + dir + `/set_ftrace_pid
for i in 1 2 3; do cat "$1" /etc/motd /nonexistent 2>/dev/null; done
printf 'raw marker\n' > ` + dir + `/trace_marker
printf 'esc \033[2J tab\there\n' > ` + dir + `/trace_marker
printf 'no newline' > ` + dir + `/trace_marker
printf 'del \177 c1 \302\233 bad \377\n' > ` + dir + `/trace_marker
echo > ` + dir + `/set_ftrace_pid`
		if out, err := exec.Command("/bin/sh", "-c", script, "sh", name).CombinedOutput(); err != nil {
			t.Fatalf("workload: %v: %s", err, out)
		}
	}
	// Twice: the default options with --reader binary, then sym-offset and record-tgid (which
	// the binary reader follows) with --reader auto, which must still choose trace_pipe_raw.
	for _, pass := range []struct {
		options []string
		reader  string
	}{{nil, "binary"}, {[]string{"sym-offset", "record-tgid"}, "auto"}} {
		for _, o := range pass.options {
			write(t, inst+"/options/"+o, "1\n")
		}
		truncate(t, inst+"/trace")
		write(t, inst+"/tracing_on", "1\n")
		work()
		write(t, inst+"/options/func_stack_trace", "1\n")
		work()
		write(t, inst+"/tracing_on", "0\n")
		write(t, inst+"/options/func_stack_trace", "0\n")
		compareReaders(t, inst, pass.reader, pass.options)
		for _, o := range pass.options {
			write(t, inst+"/options/"+o, "0\n")
		}
	}
}

// textJSON is the JSON of each event of a trace file's text (its '#' header left out),
// through the line parser.
func textJSON(t *testing.T, text string) []string {
	t.Helper()
	var want []string
	var d stream.Decoder
	emit := func(ev *stream.Event) error {
		want = append(want, string(stream.AppendJSON(nil, ev, false)))
		return nil
	}
	var body []string
	for _, l := range strings.SplitAfter(text, "\n") {
		if !strings.HasPrefix(l, "#") {
			body = append(body, l)
		}
	}
	if err := d.Feed([]byte(strings.Join(body, "")), emit); err != nil {
		t.Fatal(err)
	}
	d.Flush(emit)
	return want
}

// compareReaders reads the instance's trace file through the line parser, then streams the
// same events with --reader, and compares the JSON.
func compareReaders(t *testing.T, inst, reader string, options []string) {
	t.Helper()
	compareReadersKinds(t, inst, reader, options, []string{"function", "stack", "open", "openret", "marker"})
}

// compareReadersKinds is compareReaders, with the events that must be among those compared.
func compareReadersKinds(t *testing.T, inst, reader string, options, need []string) {
	t.Helper()
	text := read(t, inst+"/trace")
	want := textJSON(t, text)

	p := startStream(t, nil, append(instanceArgs(inst), "stream", "-o", "json", "--reader", reader, "--summary")...)
	if code := p.wait(t); code != 0 {
		t.Fatalf("exit %d; stderr:\n%s", code, p.errb)
	}
	var got []string
	kinds := map[string]int{}
	for _, line := range strings.SplitAfter(p.out.String(), "\n") {
		if line == "" {
			continue
		}
		if strings.Contains(line, `"event":"summary"`) {
			if !strings.Contains(line, `"reader":"trace_pipe_raw"`) || !strings.Contains(line, `"end":"eof"`) {
				t.Errorf("summary: %s", line)
			}
			continue
		}
		got = append(got, line)
	}
	withTGID, withOffset := 0, 0
	for _, ev := range events(t, strings.Join(got, "")) {
		kinds[fmt.Sprint(ev["event"])]++
		if ev["tgid"] != nil {
			withTGID++
		}
		if ev["func_offset"] != nil {
			withOffset++
		}
	}
	if opts := strings.Join(options, " "); strings.Contains(opts, "record-tgid") != (withTGID > 0) || strings.Contains(opts, "sym-offset") != (withOffset > 0) {
		t.Errorf("options %v: %d events with a tgid, %d functions with an offset", options, withTGID, withOffset)
	}
	t.Logf("options %v: %d events from trace_pipe_raw, %d from the trace file; kinds %v", options, len(got), len(want), kinds)
	for _, k := range need {
		if kinds[k] == 0 {
			t.Errorf("no %s event: the test did not test it", k)
		}
	}
	sort.Strings(got)
	sort.Strings(want)
	if strings.Join(got, "") != strings.Join(want, "") {
		diff := 0
		for i := 0; i < max(len(got), len(want)) && diff < 10; i++ {
			g, w := "", ""
			if i < len(got) {
				g = got[i]
			}
			if i < len(want) {
				w = want[i]
			}
			if g != w {
				t.Errorf("event %d:\nbinary %stext   %s", i, g, w)
				diff++
			}
		}
		os.WriteFile(filepath.Join(os.TempDir(), "raw-trace.txt"), []byte(text), 0o644)
	}
}

// instanceArgs is -B NAME for "instances/NAME", nothing for the top level ("").
func instanceArgs(inst string) []string {
	if inst == "" {
		return nil
	}
	return []string{"-B", filepath.Base(inst)}
}

// TestStreamGraphBinary: under function_graph, ftctl stream (--reader auto) reads
// trace_pipe_raw and makes the same events as the kernel's own text of the same records (a
// leaf's entry and return as one call, exits named where the kernel names them, durations as
// printed, task banners), with the default columns and with funcgraph-proc, -abstime and
// -tail; a trace_marker text forging a graph line stays one marker, where the line parser,
// reading the kernel's text, takes the forged line for a call; ftctl trace --tracer
// function_graph reads trace_pipe_raw too (where instances run function_graph: 6.11+; 6.1
// refuses it in the session's instance, exit 4). In an instance where the kernel runs
// function_graph there, else at the top level.
func TestStreamGraphBinary(t *testing.T) {
	newInstance(t, "st_graph")
	inst := "instances/st_graph"
	if !strings.Contains(read(t, inst+"/available_tracers"), "function_graph") {
		inst = "" // 6.1: the top level's
	}
	prefix := ""
	if inst != "" {
		prefix = inst + "/"
	}
	write(t, "set_graph_function", "ksys_read\n")
	t.Cleanup(func() { truncate(t, "set_graph_function") })
	write(t, prefix+"options/function-fork", "1\n")
	write(t, prefix+"current_tracer", "function_graph\n")
	t.Cleanup(func() {
		write(t, prefix+"current_tracer", "nop\n")
		write(t, prefix+"options/function-fork", "0\n")
		write(t, prefix+"tracing_on", "1\n")
		truncate(t, prefix+"set_ftrace_pid")
	})
	dir := filepath.Join(tracing, inst)
	work := func() {
		script := `echo $$ > ` + dir + `/set_ftrace_pid
for i in 1 2 3 4 5 6; do dd if=/proc/version of=/dev/null bs=64 2>/dev/null; done
echo > ` + dir + `/set_ftrace_pid`
		if out, err := exec.Command("/bin/sh", "-c", script).CombinedOutput(); err != nil {
			t.Fatalf("workload: %v: %s", err, out)
		}
	}
	for _, options := range [][]string{nil, {"funcgraph-proc", "funcgraph-abstime", "funcgraph-tail"}} {
		for _, o := range options {
			write(t, prefix+"options/"+o, "1\n")
		}
		truncate(t, prefix+"trace")
		write(t, prefix+"tracing_on", "1\n")
		work()
		write(t, prefix+"tracing_on", "0\n")
		compareReadersKinds(t, inst, "auto", options, []string{"graph"})
		for _, o := range options {
			write(t, prefix+"options/"+o, "0\n")
		}
	}

	// a marker whose text, printed by the kernel inside the graph, reads as a call
	truncate(t, prefix+"trace")
	write(t, prefix+"tracing_on", "1\n")
	forged := "x */\n 0)   1.000 us    |  forged_func(); /* y"
	if err := os.WriteFile(filepath.Join(dir, "trace_marker"), []byte(forged), 0); err != nil {
		t.Fatal(err)
	}
	work()
	write(t, prefix+"tracing_on", "0\n")
	if text := read(t, prefix+"trace"); !strings.Contains(strings.Join(textJSON(t, text), ""), `"func":"forged_func"`) {
		t.Errorf("the line parser does not take the forged line for a call: the test tests nothing:\n%s", text)
	}
	p := startStream(t, nil, append(instanceArgs(inst), "stream", "-o", "json", "--summary")...)
	if code := p.wait(t); code != 0 {
		t.Fatalf("exit %d; stderr:\n%s", code, p.errb)
	}
	marker, calls := 0, 0
	for _, ev := range events(t, p.out.String()) {
		switch ev["event"] {
		case "marker":
			if strings.Contains(fmt.Sprint(ev["text"]), "forged_func(); /* y") {
				marker++
			}
		case "graph":
			if ev["func"] == "forged_func" {
				t.Errorf("a forged call: %v", ev)
			}
			calls++
		case "summary":
			if ev["reader"] != "trace_pipe_raw" {
				t.Errorf("read %v (%v), want trace_pipe_raw", ev["reader"], ev["reader_why"])
			}
		}
	}
	if marker != 1 || calls == 0 {
		t.Errorf("%d markers holding the forged text, %d graph events:\n%s", marker, calls, p.out)
	}

	// ftctl trace --tracer function_graph, in the session's instance (set_graph_function,
	// the whole kernel's, emptied: its root would hide vfs_read, the only function traced)
	truncate(t, "set_graph_function")
	r := ftctlRun(t, "trace", "--tracer", "function_graph", "-f", "vfs_read", "-o", "json", "--", "/bin/dd", "if=/proc/version", "of=/dev/null", "bs=64")
	if inst == "" {
		// 125: under `-- COMMAND`, ftctl's own failures (here 4, unavailable) are 125 (cmd/exit.go)
		if r.code != 125 || !strings.Contains(r.stderr, "cannot run the function_graph tracer in an instance") {
			t.Errorf("want exit 125 (ftctl failed before the command: function_graph in instances needs 6.11+): %v", r)
		}
		return
	}
	if r.code != 0 || !strings.Contains(r.stderr, "(trace_pipe_raw)") {
		t.Fatalf("want exit 0 reading trace_pipe_raw: %v", r)
	}
	reads := 0
	for _, ev := range events(t, r.stdout) {
		if ev["event"] == "graph" {
			if ev["type"] != "call" || ev["func"] != "vfs_read" || ev["duration_us"] == nil {
				t.Errorf("not a call of vfs_read with its duration: %v", ev)
			}
			reads++
		}
	}
	if reads < 2 {
		t.Errorf("%d calls of vfs_read, want at least 2:\n%s", reads, r.stdout)
	}
}
