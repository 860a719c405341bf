//go:build vmtest

package vmtest

import (
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/ftctl/ftctl/internal/vtscreen"
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
	done   chan error
	read   chan struct{}
}

// openPTY makes a pseudo-terminal pair without cgo: posix_openpt is open("/dev/ptmx"),
// unlockpt and ptsname are ioctls.
func openPTY(t *testing.T) (master, slave *os.File) {
	t.Helper()
	m, err := os.OpenFile("/dev/ptmx", os.O_RDWR|syscall.O_NOCTTY, 0)
	if err != nil {
		t.Fatalf("open /dev/ptmx: %v", err)
	}
	if err := unix.IoctlSetPointerInt(int(m.Fd()), unix.TIOCSPTLCK, 0); err != nil {
		t.Fatalf("unlockpt: %v", err)
	}
	n, err := unix.IoctlGetInt(int(m.Fd()), unix.TIOCGPTN)
	if err != nil {
		t.Fatalf("ptsname: %v", err)
	}
	s, err := os.OpenFile("/dev/pts/"+strconv.Itoa(n), os.O_RDWR|syscall.O_NOCTTY, 0)
	if err != nil {
		t.Fatalf("open the pty's slave: %v", err)
	}
	if err := unix.IoctlSetWinsize(int(s.Fd()), unix.TIOCSWINSZ, &unix.Winsize{Row: tuiRows, Col: tuiCols}); err != nil {
		t.Fatalf("TIOCSWINSZ: %v", err)
	}
	return m, s
}

// startTUI runs ftctl with args (ending in "tui") on a new pty, as a session leader with the
// pty as its controlling terminal, and waits for its first screen.
func startTUI(t *testing.T, args ...string) *tuiRun {
	t.Helper()
	master, slave := openPTY(t)
	cmd := exec.Command(ftctl, args...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = slave, slave, slave
	cmd.Env = []string{"PATH=/bin", "HOME=/root", "TERM=xterm-256color"}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true, Setctty: true, Ctty: 0}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	slave.Close()
	r := &tuiRun{t: t, cmd: cmd, master: master, screen: vtscreen.New(tuiCols, tuiRows), done: make(chan error, 1), read: make(chan struct{})}
	go func() {
		io.Copy(r.screen, master) // until the slave side is gone (EIO)
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
	r.waitFor("FOLLOWING")
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
	r.waitFor("traceable functions")
	r.keys(pattern)
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
	r.keys("\x1b") // leave the pattern field
	r.keys("T")
	r.waitFor("tracer function")
	r.keys("1")
	r.waitFor(" vfs_read <- ")
	r.keys("4")
	r.waitFor("vfs_read")
	r.keys("q")
	if code := r.wait(); code != 0 {
		t.Errorf("q: exit %d; screen:\n%s", code, r.screen)
	}
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
