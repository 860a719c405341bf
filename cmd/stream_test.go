package cmd

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/ftctl/ftctl/internal/fixture"
	"golang.org/x/sys/unix"
)

// pipeRoot is a fake tracing directory whose trace_pipe is a regular file holding the given
// captures (stream/testdata/KERNEL/NAME.pipe): read to its end, it ends the stream as the
// kernel's does once tracing is off.
func pipeRoot(t *testing.T, kernel string, captures ...string) string {
	t.Helper()
	root := fakeRoot(t)
	var all []byte
	for _, c := range captures {
		b, err := os.ReadFile(filepath.Join("..", "stream", "testdata", kernel, c+".pipe"))
		if err != nil {
			t.Fatal(err)
		}
		all = append(all, b...)
	}
	if err := os.WriteFile(filepath.Join(root, "trace_pipe"), all, 0o644); err != nil {
		t.Fatal(err)
	}
	return root
}

func TestStreamTextIsEscaped(t *testing.T) {
	root := pipeRoot(t, "6.12", "marker", "kprobe")
	code, out, errs := run(t, "--tracefs", root, "stream")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	for _, want := range []string{
		`marker       esc \x1b[31mred\x1b[0m tab\there`,
		`e\x1b[31mx\ty-`,
		`path="/tmp/esc\x1b[31mname\ttab"`,
		`path="/tmp/quote\" x=y"`,
		`del \x7f c1 \u009b bad \xff end`,
		"my-evil proc-",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q", want)
		}
	}
	for _, bad := range []string{"\x1b", "\t", "\x7f", "\u009b", "\xff"} {
		if strings.Contains(out, bad) {
			t.Errorf("output holds a raw %q", bad)
		}
	}
	if !strings.Contains(errs, "ftctl: stream: ") || !strings.Contains(errs, "nothing lost") {
		t.Errorf("no summary on stderr: %q", errs)
	}
}

func TestStreamJSON(t *testing.T) {
	root := pipeRoot(t, "6.1", "kprobe", "marker", "overrun")
	code, out, errs := run(t, "--tracefs", root, "stream", "-o", "json", "--raw", "--summary")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
	var last map[string]any
	var probes, lost int
	for _, l := range lines {
		var obj map[string]any
		if err := json.Unmarshal([]byte(l), &obj); err != nil {
			t.Fatalf("%v: %s", err, l)
		}
		if _, ok := obj["raw"]; !ok && obj["event"] != "summary" {
			t.Errorf("--raw: no raw key in %s", l)
		}
		if args, ok := obj["args"].(map[string]any); ok && args["bad"] == nil && args["path"] != nil {
			probes++
		}
		if obj["event"] == "lost" {
			lost++
		}
		last = obj
	}
	if probes == 0 || lost != 1 {
		t.Errorf("%d probe events with a faulting and a string argument, %d lost", probes, lost)
	}
	if last["event"] != "summary" || last["end"] != "eof" || last["lost_reported"] != 1849.0 {
		t.Errorf("last object: %v", last)
	}
	if !strings.Contains(errs, "LOST:") || !strings.Contains(errs, "reported 1849") {
		t.Errorf("stderr does not report the loss: %q", errs)
	}
}

func TestStreamFilters(t *testing.T) {
	root := pipeRoot(t, "6.12", "kprobe", "marker", "function.default", "overrun")
	count := func(args ...string) int {
		t.Helper()
		code, out, errs := run(t, append([]string{"--tracefs", root, "stream", "-o", "json"}, args...)...)
		if code != 0 {
			t.Fatalf("%v: exit %d: %s", args, code, errs)
		}
		return strings.Count(out, "\n")
	}
	all := count()
	cases := []struct {
		args []string
		want func(n int) bool
	}{
		{[]string{"--event", "open"}, func(n int) bool { return n == 19 }},                         // 18 open, and the LOST line
		{[]string{"--event", "kprobes:open*", "--count", "3"}, func(n int) bool { return n == 3 }}, // count before the LOST line
		{[]string{"--event", "marker", "--comm", "my-evil*"}, func(n int) bool { return n == 3 }},
		{[]string{"--pid", "152", "--event", "openret"}, func(n int) bool { return n > 1 && n < all }},
		{[]string{"--grep", `tmp/sp ace`}, func(n int) bool { return n == 2 }},
		{[]string{"--event", "nothing"}, func(n int) bool { return n == 1 }}, // LOST lines always show
	}
	for _, c := range cases {
		if n := count(c.args...); !c.want(n) {
			t.Errorf("%v: %d events of %d", c.args, n, all)
		}
	}
}

func TestStreamInvalidInput(t *testing.T) {
	root := pipeRoot(t, "6.12", "marker")
	for _, args := range [][]string{
		{"--grep", "("}, {"--event", "[x"}, {"--comm", `a\`}, {"--count", "-1"}, {"--duration", "-1s"},
		{"--pid", "-3"}, {"--event", "sched:"}, {"extra"},
	} {
		code, out, errs := run(t, append([]string{"--tracefs", root, "stream"}, args...)...)
		if code != 2 || out != "" {
			t.Errorf("%v: exit %d, stdout %q, stderr %q", args, code, out, errs)
		}
	}
	code, _, errs := run(t, "--tracefs", root, "-B", "nosuch", "stream")
	if code != 2 {
		t.Errorf("missing instance: exit %d %s", code, errs)
	}
}

func TestStreamClosedStdoutEndsQuietly(t *testing.T) {
	root := pipeRoot(t, "6.12", "kprobe", "marker")
	var errb bytes.Buffer
	code := Run(context.Background(), []string{"--tracefs", root, "-q", "stream"}, strings.NewReader(""), &brokenPipe{left: 100}, &errb)
	if code != 0 || errb.Len() != 0 {
		t.Fatalf("exit %d, stderr %q", code, errb.String())
	}
}

// fifoRoot is a fake tracing directory whose trace_pipe blocks like the kernel's: a FIFO with
// a writer held open. The writer is returned.
func fifoRoot(t *testing.T) (string, *os.File) {
	t.Helper()
	root := fakeRoot(t)
	// Tracing on: with it off, a Pipe that has read something ends at once (the kernel's end
	// of file, emulated since 841539c), which is not what these tests are about.
	if err := os.WriteFile(filepath.Join(root, "tracing_on"), []byte("1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(root, "trace_pipe")
	os.Remove(p)
	if err := unix.Mkfifo(p, 0o600); err != nil {
		t.Fatal(err)
	}
	w, err := os.OpenFile(p, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { w.Close() })
	return root, w
}

// An interrupt (the context Run derives from the signals) ends a blocked stream at once,
// with what was read shown, the summary, and exit 130.
func TestStreamInterrupted(t *testing.T) {
	root, w := fifoRoot(t)
	w.WriteString("              sh-152     [001] .....    17.803464: tracing_mark_write: before\n")
	ctx, cancel := context.WithCancel(context.Background())
	var out, errb fixture.SyncBuffer
	done := make(chan int)
	go func() {
		done <- Run(ctx, []string{"--tracefs", root, "stream"}, strings.NewReader(""), &out, &errb)
	}()
	// Interrupted once it shows the line (a fixed sleep was overrun on a loaded machine).
	for wait := time.Now(); !strings.Contains(out.String(), "before") && time.Since(wait) < 10*time.Second; {
		time.Sleep(10 * time.Millisecond)
	}
	start := time.Now()
	cancel()
	var code int
	select {
	case code = <-done:
	case <-time.After(2 * time.Second):
		t.Fatal("stream did not end")
	}
	if d := time.Since(start); d > time.Second { // generous: loaded CI; the VM measures 200 ms
		t.Errorf("ended %v after the interrupt", d)
	}
	if code != 130 || !strings.Contains(out.String(), "before") || !strings.Contains(errb.String(), "1 events (1 shown)") {
		t.Errorf("exit %d, stdout %q, stderr %q", code, out.String(), errb.String())
	}
}

func TestStreamDuration(t *testing.T) {
	root, _ := fifoRoot(t)
	start := time.Now()
	code, out, errs := run(t, "--tracefs", root, "stream", "--duration", "150ms", "--summary", "-o", "json")
	if d := time.Since(start); code != 0 || d < 150*time.Millisecond || d > time.Second {
		t.Fatalf("exit %d after %v: %s", code, d, errs)
	}
	if !strings.Contains(out, `"end":"duration"`) {
		t.Errorf("%s", out)
	}
}

func TestStreamFlagsReachOptions(t *testing.T) {
	g := &Globals{In: strings.NewReader(""), Out: new(bytes.Buffer), Err: new(bytes.Buffer)}
	var got *StreamOptions
	root := NewRootCmd(g)
	for _, c := range root.Commands() {
		if c.Name() == "stream" {
			root.RemoveCommand(c)
		}
	}
	root.AddCommand(NewCmdStream(g, func(_ context.Context, o *StreamOptions) error { got = o; return nil }))
	root.SetArgs([]string{"-B", "x", "stream", "--event", "a", "--event", "b*", "--pid", "0", "--comm", "c",
		"--grep", "g", "--count", "5", "--duration", "2s", "--raw", "--summary"})
	if err := root.Execute(); err != nil {
		t.Fatal(err)
	}
	if got == nil || len(got.Events) != 2 || !got.HasPID || got.PID != 0 || got.Comm != "c" || got.Grep != "g" ||
		got.Count != 5 || got.Duration != 2*time.Second || !got.Raw || !got.Summary || got.Color {
		t.Fatalf("%+v", got)
	}
}

// Every key stream prints is in its documented JSON format, and every documented key is printed.
func TestStreamJSONFormatIsDocumented(t *testing.T) {
	var captures []string
	for _, p := range mustGlob(t, "../stream/testdata/6.12/*.pipe") {
		captures = append(captures, strings.TrimSuffix(filepath.Base(p), ".pipe"))
	}
	root := pipeRoot(t, "6.12", captures...)
	code, out, errs := run(t, "--tracefs", root, "stream", "-o", "json", "--raw", "--summary")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	printed := map[string]bool{}
	for _, l := range strings.Split(strings.TrimSuffix(out, "\n"), "\n") {
		var obj map[string]any
		if err := json.Unmarshal([]byte(l), &obj); err != nil {
			t.Fatal(err)
		}
		for k := range obj {
			printed[k] = true
		}
		if cpus, ok := obj["cpus"].([]any); ok && len(cpus) > 0 {
			for k := range cpus[0].(map[string]any) {
				printed[k] = true
			}
		}
	}
	// func_offset and parent_offset are documented as `func`, `parent` with `_offset`...
	docKeys := map[string]bool{}
	for _, m := range regexp.MustCompile("`([a-z_]+)`|\\\\?\"([a-z_]+)\\\\?\"").FindAllStringSubmatch(streamJSONDoc, -1) {
		docKeys[m[1]+m[2]] = true
	}
	delete(printed, "schema") // every record's: the seam's (format.go), documented once
	for k := range printed {
		base, suffix, _ := strings.Cut(k, "_")
		if !docKeys[k] && !(docKeys[base] && docKeys["_"+suffix]) {
			t.Errorf("stream prints %q, which its documented JSON format lacks", k)
		}
	}
	for _, k := range []string{"ts", "cpu", "comm", "pid", "tgid", "flags", "event", "func", "parent", "func_offset",
		"func_addr", "repeats", "last_ts", "probe", "return_to", "args", "stack", "type", "depth", "duration_us",
		"text", "lost", "raw", "lines", "events", "shown", "seconds", "end", "lost_reported", "lost_uncounted",
		"overrun", "dropped", "cpus", "reported"} {
		if !printed[k] {
			t.Errorf("no capture printed %q", k)
		}
	}
}

func mustGlob(t *testing.T, pattern string) []string {
	t.Helper()
	m, err := filepath.Glob(pattern)
	if err != nil || len(m) == 0 {
		t.Fatalf("%s: %v", pattern, err)
	}
	return m
}

// A signal ends the command with 128+N, as a shell reports a process the signal killed:
// SIGINT 130, SIGTERM 143, SIGHUP 129.
func TestSignalExitStatus(t *testing.T) {
	for _, c := range []struct {
		sig  syscall.Signal
		code int
	}{{syscall.SIGINT, 130}, {syscall.SIGTERM, 143}, {syscall.SIGHUP, 129}} {
		t.Run(c.sig.String(), func(t *testing.T) {
			root, w := fifoRoot(t)
			out := &fixture.SyncBuffer{}
			var errb bytes.Buffer
			done := make(chan int)
			go func() {
				done <- Run(context.Background(), []string{"--tracefs", root, "stream"}, strings.NewReader(""), out, &errb)
			}()
			// An event shown means the stream runs, so Run's handler is installed: only then
			// may the signal come (before, it would end the test binary).
			w.WriteString("              sh-152     [001] .....    17.803464: tracing_mark_write: running\n")
			for deadline := time.Now().Add(10 * time.Second); !strings.Contains(out.String(), "running"); {
				if time.Now().After(deadline) {
					t.Fatal("the stream did not start")
				}
				time.Sleep(5 * time.Millisecond)
			}
			syscall.Kill(os.Getpid(), c.sig)
			select {
			case code := <-done:
				if code != c.code {
					t.Errorf("exit %d after %v, want %d; stderr %q", code, c.sig, c.code, errb.String())
				}
			case <-time.After(3 * time.Second):
				t.Fatal("stream did not end")
			}
		})
	}
}
