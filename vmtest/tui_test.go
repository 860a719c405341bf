//go:build vmtest

package vmtest

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/ftctl/ftctl/internal/fixture"
	"github.com/ftctl/ftctl/internal/vtscreen"
	"github.com/ftctl/ftctl/stream"
)

// The console's end-to-end tests: the real `ftctl tui` in a pseudo-terminal on the real kernel,
// driven by keys, its screen read through a terminal emulator.

const tuiCols, tuiRows = 120, 32

// tuiRun is a running `ftctl tui` on a pseudo-terminal.
type tuiRun struct {
	t      *testing.T
	cmd    *exec.Cmd
	master *os.File
	screen *vtscreen.Screen
	raw    *fixture.SyncBuffer // every byte it wrote to the terminal
	done   chan error
	read   chan struct{}
}

// openPTY makes a pseudo-terminal pair of the console's size.
func openPTY(t *testing.T) (master, slave *os.File) {
	t.Helper()
	m, s, err := vtscreen.OpenPTY(tuiCols, tuiRows)
	if err != nil {
		t.Fatal(err)
	}
	return m, s
}

// startTUI runs ftctl with args (ending in "tui") on a new pty, as a session leader with the
// pty as its controlling terminal, and waits for its first screen. The terminal is an xterm that
// never answers a query.
func startTUI(t *testing.T, args ...string) *tuiRun {
	t.Helper()
	return startTUIEnv(t, []string{"TERM=xterm-256color"}, args...)
}

// startTUIEnv is startTUI with env (TERM=..., NO_COLOR=...) added to a minimal environment.
func startTUIEnv(t *testing.T, env []string, args ...string) *tuiRun {
	t.Helper()
	return startTUIUntil(t, env, "FOLLOWING", args...)
}

// startTUIUntil is startTUIEnv waiting for first on the first screen (a recording's stream
// may have ended already: "ENDED").
func startTUIUntil(t *testing.T, env []string, first string, args ...string) *tuiRun {
	t.Helper()
	master, slave := openPTY(t)
	cmd := ftctlCommand(t, args...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = slave, slave, slave
	cmd.Env = append([]string{"PATH=/bin", "HOME=/root"}, env...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true, Setctty: true, Ctty: 0}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	slave.Close()
	r := &tuiRun{t: t, cmd: cmd, master: master, screen: vtscreen.New(tuiCols, tuiRows), raw: &fixture.SyncBuffer{},
		done: make(chan error, 1), read: make(chan struct{})}
	go func() {
		io.Copy(io.MultiWriter(r.screen, r.raw), master) // until the slave side is gone (EIO)
		close(r.read)
	}()
	go func() { r.done <- cmd.Wait() }()
	t.Cleanup(func() {
		select {
		case err := <-r.done:
			r.done <- err
		default: // a failed test: kill it, and remove what it leaves (ftctl reset: dead sessions)
			r.cmd.Process.Kill()
			<-r.done
			ftctlRun(t, "reset")
		}
		master.Close()
	})
	r.waitFor(first)
	return r
}

// waitFor waits until the screen shows text (30 s: the VM emulates the CPU).
func (r *tuiRun) waitFor(text string) {
	r.t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		if r.screen.Contains(text) {
			return
		}
		select {
		case err := <-r.done:
			r.done <- err
			r.t.Fatalf("ftctl tui exited (%v) before showing %q; screen:\n%s", err, text, r.screen)
		case <-time.After(50 * time.Millisecond):
		}
	}
	r.t.Fatalf("the screen never showed %q:\n%s", text, r.screen)
}

// keys types into the console, then gives it a moment (keys sent together arrive as one
// input event: a digit and the text after it would be one key press).
func (r *tuiRun) keys(s string) {
	r.t.Helper()
	if _, err := r.master.Write([]byte(s)); err != nil {
		r.t.Fatalf("typing %q: %v", s, err)
	}
	time.Sleep(300 * time.Millisecond)
}

// restored checks, once ftctl tui has exited, that it gave the terminal back: the main screen
// shown, the cursor visible.
func (r *tuiRun) restored() {
	r.t.Helper()
	select {
	case <-r.read: // everything it wrote is on the screen
	case <-time.After(10 * time.Second):
		r.t.Fatal("the pty is still open after ftctl tui exited")
	}
	if r.screen.AltScreen() || r.screen.CursorHidden() {
		r.t.Errorf("the terminal is not restored: alternate screen %v, cursor hidden %v; screen:\n%s",
			r.screen.AltScreen(), r.screen.CursorHidden(), r.screen)
	}
}

// wait waits for the process to end and returns its exit code.
func (r *tuiRun) wait() int {
	r.t.Helper()
	select {
	case err := <-r.done:
		r.done <- err
		return exitCode(err)
	case <-time.After(30 * time.Second):
		r.t.Fatalf("ftctl tui did not exit; screen:\n%s", r.screen)
	}
	return -1
}

func instanceDir(name string) string { return filepath.Join(tracing, "instances", name) }

func exists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}

// listedFunctions is the sorted function lines of a set_ftrace_filter.
func listedFunctions(t *testing.T, rel string) []string {
	t.Helper()
	var out []string
	for _, l := range strings.Split(read(t, rel), "\n") {
		if l = strings.TrimSpace(l); l != "" && !strings.HasPrefix(l, "#") {
			out = append(out, l)
		}
	}
	sort.Strings(out)
	return out
}

// previewNames is what `ftctl functions` says the pattern selects.
func previewNames(t *testing.T, pattern string) []string {
	t.Helper()
	r := ftctlRun(t, "functions", pattern)
	if r.code != 0 {
		t.Fatalf("ftctl functions: %v", r)
	}
	var out []string
	for _, l := range strings.Split(strings.TrimSpace(r.stdout), "\n") {
		f := strings.Fields(l)
		name := f[1]
		if len(f) > 2 {
			name += " " + strings.Join(f[2:], " ")
		}
		out = append(out, name)
	}
	sort.Strings(out)
	return out
}

var matchCount = regexp.MustCompile(`([0-9][0-9,]*) functions? match`)

// applyPattern types a pattern in the Functions view, checks the preview against `ftctl
// functions`, marks it, applies it through the confirmation, and returns the count shown.
func (r *tuiRun) applyPattern(pattern string) int {
	t := r.t
	t.Helper()
	want := previewNames(t, pattern)
	r.keys("2")
	r.waitFor("/ types a pattern")
	r.keys("/" + pattern)
	r.waitFor("match ·")
	m := matchCount.FindStringSubmatch(r.screen.String())
	if m == nil {
		t.Fatalf("no count on the screen:\n%s", r.screen)
	}
	n, _ := strconv.Atoi(strings.ReplaceAll(m[1], ",", ""))
	if n != len(want) {
		t.Errorf("the console previews %d functions for %q, ftctl functions %d", n, pattern, len(want))
	}
	if !r.screen.Contains(strings.SplitN(want[0], " ", 2)[0]) {
		t.Errorf("the preview does not list %s:\n%s", want[0], r.screen)
	}
	r.keys("\r") // mark
	r.waitFor("filter  " + pattern)
	r.keys("\r") // empty field: the confirmation
	r.waitFor("swap protocol?")
	if !r.screen.Contains(fmt.Sprintf("+%d", n)) {
		t.Errorf("the confirmation does not show +%d:\n%s", n, r.screen)
	}
	r.keys("y")
	r.waitFor("applied, verified")
	return n
}

func TestTUIAppliesFilterInPrivateInstanceAndTearsDown(t *testing.T) {
	before := tracingState(t)
	workload(t)
	r := startTUI(t, "tui")
	name, _ := sessionOf(t, r.cmd.Process.Pid)
	r.waitFor("instance " + name + " (private)") // the status bar comes with the first status read
	pattern := "vfs_rea*"
	n := r.applyPattern(pattern)
	got := listedFunctions(t, "instances/"+name+"/set_ftrace_filter")
	if want := previewNames(t, pattern); strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("set_ftrace_filter of %s:\n%v\nwant (ftctl functions %s):\n%v", name, got, pattern, want)
	}
	if len(got) != n {
		t.Errorf("%d functions listed, %d shown", len(got), n)
	}
	// Start the function tracer (refused over an empty filter; the filter is set now) and see
	// the workload's reads arrive in the Stream view (the console's own are left out).
	r.keys("T") // the pattern field gave the keys back when the pattern was marked
	r.waitFor("tracer function")
	r.keys("1")
	r.waitFor(" vfs_read <- ")
	r.keys("4")
	r.waitFor("vfs_read")
	r.keys("q")
	if code := r.wait(); code != 0 {
		t.Errorf("q: exit %d; screen:\n%s", code, r.screen)
	}
	r.restored()
	if exists(instanceDir(name)) {
		t.Errorf("the private instance %s is still there after quitting", name)
	}
	checkWorld(t, before)
}

func TestTUIAttachesToNamedInstance(t *testing.T) {
	const name = "tuitest"
	if err := os.Mkdir(instanceDir(name), 0o755); err != nil && !os.IsExist(err) {
		t.Fatal(err)
	}
	removeInstanceLater(t, name)
	t.Cleanup(func() { os.WriteFile(filepath.Join(instanceDir(name), "set_ftrace_filter"), nil, 0) })
	r := startTUI(t, "-B", name, "tui")
	r.waitFor("instance " + name) // the status bar comes with the first status read, a command away
	r.applyPattern("vfs_read")
	if got := listedFunctions(t, "instances/"+name+"/set_ftrace_filter"); strings.Join(got, ",") != "vfs_read" {
		t.Errorf("set_ftrace_filter of %s: %v", name, got)
	}
	r.keys("\x1b")
	r.keys("q")
	if code := r.wait(); code != 0 {
		t.Errorf("exit %d", code)
	}
	if !exists(instanceDir(name)) {
		t.Error("an attached instance was removed")
	}
	if !sessionGone(r.cmd.Process.Pid) {
		t.Errorf("a private instance was made with -B")
	}
}

// Every way out tears the private instance down: ctrl+c exits 130, the signals 128+N.
func TestTUITearsDownOnEveryWayOut(t *testing.T) {
	for _, c := range []struct {
		name string
		stop func(r *tuiRun)
		code int
	}{
		{"ctrl+c", func(r *tuiRun) { r.keys("\x03") }, 130},
		{"SIGTERM", func(r *tuiRun) { r.cmd.Process.Signal(syscall.SIGTERM) }, 143},
		{"SIGHUP", func(r *tuiRun) { r.cmd.Process.Signal(syscall.SIGHUP) }, 129},
	} {
		t.Run(c.name, func(t *testing.T) {
			before := tracingState(t)
			r := startTUI(t, "tui")
			name, _ := sessionOf(t, r.cmd.Process.Pid)
			c.stop(r)
			if code := r.wait(); code != c.code {
				t.Errorf("exit %d, want %d; screen:\n%s", code, c.code, r.screen)
			}
			r.restored()
			if exists(instanceDir(name)) {
				t.Errorf("instance %s left behind", name)
			}
			checkWorld(t, before)
		})
	}
}

func TestTUIKeepLeavesInstance(t *testing.T) {
	r := startTUI(t, "tui", "--keep")
	name, _ := sessionOf(t, r.cmd.Process.Pid)
	removeInstanceLater(t, name)
	r.keys("q")
	if code := r.wait(); code != 0 {
		t.Errorf("exit %d", code)
	}
	if !exists(instanceDir(name)) {
		t.Errorf("--keep removed %s", name)
	}
}

// NO_COLOR and TERM=dumb: the console draws text only (no colour, no bold or reverse), works,
// and gives the terminal back; an xterm gets colours (the check can fail).
func TestTUIPlainTerminal(t *testing.T) {
	sgr := regexp.MustCompile("\x1b\\[([0-9;:]*)m")
	for _, c := range []struct {
		env      []string
		coloured bool
	}{
		{[]string{"TERM=xterm-256color"}, true},
		{[]string{"TERM=xterm-256color", "NO_COLOR=1"}, false},
		{[]string{"TERM=dumb"}, false},
	} {
		t.Run(strings.Join(c.env, ","), func(t *testing.T) {
			r := startTUIEnv(t, c.env, "tui")
			r.waitFor("tracer nop")
			r.keys("2")
			r.waitFor("traceable functions")
			var styled []string
			for _, m := range sgr.FindAllStringSubmatch(r.raw.String(), -1) {
				if m[1] != "" && m[1] != "0" {
					styled = append(styled, m[0])
				}
			}
			if c.coloured != (len(styled) > 0) {
				t.Errorf("%v: styled %v, want styled %v", c.env, styled[:min(len(styled), 5)], c.coloured)
			}
			r.keys("\x1b")
			r.keys("q")
			if code := r.wait(); code != 0 {
				t.Errorf("q: exit %d; screen:\n%s", code, r.screen)
			}
			r.restored()
		})
	}
}

// Probes from the console: a grammar mistake is caught with a caret before anything reaches the
// kernel; an unknown symbol is refused by the kernel, whose error_log shows; a good probe is
// defined in the console's group, enabled in its instance, and removed with it on exit.
func TestTUIProbes(t *testing.T) {
	before := tracingState(t)
	r := startTUI(t, "tui")
	name, group := sessionOf(t, r.cmd.Process.Pid)
	r.keys("3")
	r.waitFor("new probes without a group go to " + group)
	r.keys("a")
	r.keys("p:tuiop vfs_read n=%zz")
	r.waitFor("Invalid register name (found before anything reached the kernel)")
	r.keys("\r")
	r.waitFor("fix the definition first")
	if strings.Contains(read(t, "kprobe_events"), "tuiop") {
		t.Fatal("a refused definition reached kprobe_events")
	}
	r.keys("\x7f\x7f\x7f\x7f\x7f\x7f\x7f\x7f\x7f\x7f\x7f\x7f\x7f\x7f") // backspace over "vfs_read n=%zz"
	r.keys("vfs_raed")
	r.waitFor("✓ kprobe on vfs_raed")
	r.keys("\r")
	r.waitFor("kernel error_log: ")
	if !r.screen.Contains("Invalid probed address or symbol") || !r.screen.Contains("vfs_read") {
		t.Errorf("the kernel's diagnosis is not shown:\n%s", r.screen)
	}
	r.keys("\x7f\x7f\x7f\x7f\x7f\x7f\x7f\x7f")
	r.keys("vfs_read")
	r.waitFor("✓ kprobe on vfs_read")
	// tab completes the word: here $comm (both kernels announce it)
	r.keys(" $co")
	r.waitFor("tab completes: $comm")
	r.keys("\t")
	r.waitFor("✓ kprobe on vfs_read, 1 argument")
	r.keys("\r")
	r.waitFor("defined " + group + "/tuiop")
	r.waitFor(group + "/tuiop")
	if !strings.Contains(read(t, "kprobe_events"), group+"/tuiop vfs_read") {
		t.Errorf("kprobe_events:\n%s", read(t, "kprobe_events"))
	}
	if en := strings.TrimSpace(read(t, "instances/"+name+"/events/"+group+"/tuiop/enable")); en != "1" {
		t.Errorf("not enabled in %s: %q", name, en)
	}
	r.keys("1")
	r.waitFor("tuiop")
	r.keys("q")
	if code := r.wait(); code != 0 {
		t.Errorf("exit %d", code)
	}
	if strings.Contains(read(t, "kprobe_events"), group) {
		t.Errorf("the console's probes outlive it:\n%s", read(t, "kprobe_events"))
	}
	checkWorld(t, before)
}

// Issue 14 item 3, in the console: a definition naming another owner's event is refused (the
// kernel would add a probe point to it, and the console would enable it in its instance).
func TestTUIProbeRefusesOthersEvent(t *testing.T) {
	write(t, "kprobe_events", "p:kprobes/tuiother vfs_read\n")
	removeProbeLater(t, "kprobes", "tuiother")
	want := read(t, "kprobe_events")
	r := startTUI(t, "tui")
	r.keys("3")
	r.waitFor("new probes without a group go to")
	r.keys("a")
	r.keys("p:kprobes/tuiother vfs_write")
	r.waitFor("✓ kprobe on vfs_write")
	r.keys("\r")
	r.waitFor("kprobes/tuiother already exists")
	if got := read(t, "kprobe_events"); got != want {
		t.Errorf("kprobe_events changed:\nbefore:\n%s\nafter:\n%s", want, got)
	}
	r.keys("\x1b")
	r.keys("q")
	if code := r.wait(); code != 0 {
		t.Errorf("exit %d", code)
	}
	if got := read(t, "kprobe_events"); got != want {
		t.Errorf("after the console: kprobe_events changed:\nbefore:\n%s\nafter:\n%s", want, got)
	}
}

// TestTUIStreamAgreesWithStream: the console's Stream view reads the ring buffer through the
// binary reader (it says so) and shows the events as ftctl stream -o json reports them. A
// consuming read leaves nothing for a second reader, so the events are recorded twice at once:
// two instances with the same function filter, the same kprobe (a string argument holding
// control bytes) and the same pid filters, and the same markers (odd bytes) written to each by
// one shell pinned to one CPU. The kernel takes a timestamp per buffer, so each instance has
// its own: the console's TIME column is compared with the kernel's own text of its instance (the
// trace file, which does not consume), every other column with ftctl stream's JSON of the other
// instance (as multisets: a marker written to one instance and then the other lands between
// different neighbours in each).
func TestTUIStreamAgreesWithStream(t *testing.T) {
	const group = "ftctltuicmp"
	a, b := streamInstance(t, "tuicmp_a"), streamInstance(t, "tuicmp_b")
	write(t, "kprobe_events", "p:"+group+"/open do_sys_openat2 path=+0(%si):string\n")
	removeProbeLater(t, group, "open")
	for _, inst := range []string{a, b} {
		write(t, inst+"/tracing_on", "0\n")
		write(t, inst+"/set_ftrace_filter", "vfs_open ksys_write\n")
		write(t, inst+"/current_tracer", "function\n")
		write(t, inst+"/events/"+group+"/enable", "1\n")
		truncate(t, inst+"/trace")
	}
	name := "/tmp/ftctl-tui-\x1b[31mred\ttab"
	if err := os.WriteFile(name, []byte("x\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	defer os.Remove(name)
	// The shell waits for "go" (its pid in the filters first), reads the file, then writes each
	// marker to both instances; echo is a builtin: every event is the shell's.
	script := `read go
read l < "$1"
for m in "$2" "$3"; do
	echo "$m" > ` + filepath.Join(tracing, a, "trace_marker") + `
	echo "$m" > ` + filepath.Join(tracing, b, "trace_marker") + `
done`
	work := exec.Command("/bin/taskset", "-c", "1", "/bin/sh", "-c", script, "sh", name,
		"esc \x1b[2J tab\there", "del \x7f c1 \xc2\x9b bad \xff end")
	stdin, err := work.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := work.Start(); err != nil {
		t.Fatal(err)
	}
	pid := strconv.Itoa(work.Process.Pid)
	for _, inst := range []string{a, b} {
		write(t, inst+"/set_ftrace_pid", pid+"\n")
		write(t, inst+"/set_event_pid", pid+"\n")
		write(t, inst+"/tracing_on", "1\n")
	}
	stdin.Write([]byte("go\n"))
	stdin.Close()
	if err := work.Wait(); err != nil {
		t.Fatalf("workload: %v", err)
	}
	for _, inst := range []string{a, b} {
		write(t, inst+"/tracing_on", "0\n")
	}

	// The kernel's text of instance a, for the timestamps.
	var stamps []string
	var d stream.Decoder
	var body strings.Builder
	for _, l := range strings.SplitAfter(read(t, a+"/trace"), "\n") {
		if !strings.HasPrefix(l, "#") {
			body.WriteString(l)
		}
	}
	emit := func(ev *stream.Event) error { stamps = append(stamps, string(ev.TS)); return nil }
	if err := d.Feed([]byte(body.String()), emit); err != nil {
		t.Fatal(err)
	}
	d.Flush(emit)
	n := len(stamps)
	if n < 16 || n > tuiRows-6 {
		t.Fatalf("%d events recorded in %s, want 16 that fit on one screen:\n%s", n, a, read(t, a+"/trace"))
	}

	// The console on instance a.
	r := startTUI(t, "-B", "tuicmp_a", "tui")
	r.waitFor(fmt.Sprintf(" · %d events · ", n))
	r.waitFor("reading trace_pipe_raw")
	// The frame may still be arriving (the status line can be drawn before the rows): read the
	// screen once every row under the header is there, or after 10 s.
	var lines []string
	hdr := -1
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		lines = r.screen.Lines()
		hdr = slices.IndexFunc(lines, func(l string) bool { return strings.Contains(l, "TIME") && strings.Contains(l, "DETAIL") })
		if hdr >= 0 && hdr+n < len(lines) && !slices.ContainsFunc(lines[hdr+1:hdr+1+n], func(l string) bool { return len([]rune(l)) < 14 }) ||
			time.Now().After(deadline) {
			break
		}
	}
	if hdr < 0 || hdr+n >= len(lines) {
		t.Fatalf("no %d rows under a column header:\n%s", n, r.screen)
	}
	shown := lines[hdr+1 : hdr+1+n]
	r.keys("q")
	if code := r.wait(); code != 0 {
		t.Errorf("q: exit %d", code)
	}

	// ftctl stream of instance b.
	p := ftctlRun(t, "-B", "tuicmp_b", "stream", "-o", "json", "--summary") // tracing is off: it ends at the end of the buffer
	if p.code != 0 {
		t.Fatalf("ftctl stream: %v", p)
	}
	var want []string
	kinds := map[string]int{}
	for _, line := range strings.Split(strings.TrimSpace(p.stdout), "\n") {
		if strings.Contains(line, `"event":"summary"`) {
			if !strings.Contains(line, `"reader":"trace_pipe_raw"`) {
				t.Errorf("ftctl stream did not read trace_pipe_raw: %s", line)
			}
			continue
		}
		row, kind := consoleRow(t, line)
		kinds[kind]++
		want = append(want, row)
	}
	for _, k := range []string{"function", "open", "marker"} {
		if kinds[k] == 0 {
			t.Errorf("no %s event in %v: the test did not test it", k, kinds)
		}
	}

	// What the console shows: TIME (columns 1-12), then the rest. The JSON cannot say which
	// invalid byte a string held (it has U+FFFD, which the expected row escapes as \ufffd), so
	// the console's \xNN of one becomes \ufffd.
	invalid := regexp.MustCompile(`\\x[89a-f][0-9a-f]`)
	var got []string
	for i, l := range shown {
		row := []rune(l)
		if len(row) < 14 {
			t.Fatalf("row %d is short: %q", i, l)
		}
		if ts := strings.TrimSpace(string(row[1:13])); ts != stamps[i] {
			t.Errorf("row %d: time %q, the kernel's text %q", i, ts, stamps[i])
		}
		got = append(got, invalid.ReplaceAllLiteralString(string(row[13:]), `\ufffd`))
	}
	sort.Strings(got)
	sort.Strings(want)
	if len(got) != len(want) {
		t.Errorf("the console shows %d events, ftctl stream %d", len(got), len(want))
	}
	for i := range min(len(got), len(want)) {
		if got[i] != want[i] {
			t.Errorf("row:\nconsole       %q\nftctl stream  %q", got[i], want[i])
		}
	}
	if t.Failed() {
		t.Logf("screen:\n%s\nftctl stream:\n%s", r.screen, p.stdout)
	}
}

// consoleRow lays an event of ftctl stream -o json out as the Stream view does after its TIME
// column (cpu, comm-pid, event, what it says; escaped; cut at the screen's width), for the
// kinds TestTUIStreamAgreesWithStream records.
func consoleRow(t *testing.T, line string) (row, kind string) {
	t.Helper()
	var ev struct {
		CPU    *int            `json:"cpu"`
		Comm   string          `json:"comm"`
		PID    int             `json:"pid"`
		TGID   int             `json:"tgid"`
		Event  string          `json:"event"`
		Func   string          `json:"func"`
		Parent string          `json:"parent"`
		Probe  string          `json:"probe"`
		Args   json.RawMessage `json:"args"`
		Text   *string         `json:"text"`
	}
	if err := json.Unmarshal([]byte(line), &ev); err != nil {
		t.Fatalf("%q: %v", line, err)
	}
	esc := func(s string) string { return string(stream.AppendEscaped(nil, []byte(s))) }
	pad := func(s string, n int, left bool) string {
		if k := utf8.RuneCountInString(s); k < n {
			if left {
				return strings.Repeat(" ", n-k) + s
			}
			return s + strings.Repeat(" ", n-k)
		}
		return s
	}
	cpu := ""
	if ev.CPU != nil {
		cpu = strconv.Itoa(*ev.CPU)
	}
	task := esc(ev.Comm) + "-" + strconv.Itoa(ev.PID)
	if ev.TGID > 0 {
		task += " (" + strconv.Itoa(ev.TGID) + ")"
	}
	var detail string
	switch {
	case ev.Func != "":
		kind = "function"
		detail = esc(ev.Func)
		if ev.Parent != "" {
			detail += " <- " + esc(ev.Parent)
		}
	case ev.Probe != "":
		kind = "open"
		var args map[string]*string
		if err := json.Unmarshal(ev.Args, &args); err != nil || len(args) != 1 || args["path"] == nil {
			t.Fatalf("%q: not the probe's one string argument", line)
		}
		detail = "(" + esc(ev.Probe) + `) path="` + esc(*args["path"]) + `"`
	case ev.Text != nil:
		kind = ev.Event
		detail = esc(*ev.Text)
	default:
		t.Fatalf("%q: not a kind the test records", line)
	}
	row = " " + pad(cpu, 3, true) + " " + pad(task, 22, false) + " " + pad(esc(ev.Event), 14, false) + " " + detail
	if rs := []rune(row); len(rs) > tuiCols-13 {
		row = string(rs[:tuiCols-13])
	}
	return strings.TrimRight(row, " "), kind
}

// Quitting while an apply waits for the ftctl lock (another process holds it): q waits for the
// apply, which completes once the lock is free, and only then exits; ctrl+c and SIGTERM cancel
// it (its wait for the lock ends: nothing is written) and exit 130 and 143 without waiting for
// the lock.
func TestTUIQuitDuringApply(t *testing.T) {
	const name = "tuiquit"
	newInstance(t, name)
	filter := "instances/" + name + "/set_ftrace_filter"
	for _, c := range []struct {
		name    string
		stop    func(r *tuiRun)
		code    int
		applied bool
	}{
		{"q", func(r *tuiRun) { r.keys("\x1b"); r.keys("q") }, 0, true},
		{"ctrl+c", func(r *tuiRun) { r.keys("\x03") }, 130, false},
		{"SIGTERM", func(r *tuiRun) { r.cmd.Process.Signal(syscall.SIGTERM) }, 143, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			truncate(t, filter)
			r := startTUI(t, "--lock-timeout", "60s", "-B", name, "tui")
			r.keys("2")
			r.waitFor("/ types a pattern")
			r.keys("/vfs_read")
			r.waitFor("match ·")
			r.keys("\r")
			r.waitFor("filter  vfs_read")
			r.keys("\r")
			r.waitFor("swap protocol?")
			_, release := startLockHolder(t)
			r.keys("y")
			r.waitFor("applying")
			c.stop(r)
			if c.applied {
				r.waitFor("waiting for the apply to finish")
				select {
				case err := <-r.done:
					r.done <- err
					t.Fatalf("q ended the console while the apply waited for the lock:\n%s", r.screen)
				case <-time.After(time.Second):
				}
				release()
			}
			if code := r.wait(); code != c.code {
				t.Errorf("exit %d, want %d; screen:\n%s", code, c.code, r.screen)
			}
			r.restored()
			release()
			got := listedFunctions(t, filter)
			if c.applied && strings.Join(got, ",") != "vfs_read" || !c.applied && len(got) != 0 {
				t.Errorf("set_ftrace_filter of %s after quitting: %v", name, got)
			}
		})
	}
}
