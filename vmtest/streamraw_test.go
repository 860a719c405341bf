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

	p := startStream(t, nil, "-B", filepath.Base(inst), "stream", "-o", "json", "--reader", reader, "--summary")
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
