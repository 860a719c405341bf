//go:build vmtest

package vmtest

import (
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"
)

// The console's Graph view on the real kernels: a graph of vfs_read while a read loop runs,
// started from the view, seen, stopped (x) and started again, then the console left (q, or
// SIGTERM); the whole tracing state as before at each step. On 6.1 function_graph runs at the
// top level (its instances cannot run it), which is free here and put back as it was.

// waitScreen waits until a line of the screen matches re (30 s).
func (r *tuiRun) waitScreen(re *regexp.Regexp) string {
	r.t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		for _, l := range r.screen.Lines() {
			if re.MatchString(l) {
				return l
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
	r.t.Fatalf("no line matches %v:\n%s", re, r.screen)
	return ""
}

// graphReadLoop reads /proc/version a byte at a time (dash's read builtin), 20 times a second,
// until the test ends.
func graphReadLoop(t *testing.T) {
	t.Helper()
	loop := exec.Command("/bin/sh", "-c", "while :; do read l < /proc/version; sleep 0.05; done")
	if err := loop.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { loop.Process.Kill(); loop.Wait() })
}

// graphInConsole starts the console, then a graph of roots from its Graph view; it returns
// the console and the tracing state before the graph.
func graphInConsole(t *testing.T, roots string) (*tuiRun, string) {
	t.Helper()
	r := startTUI(t, "tui")
	sessionOf(t, r.cmd.Process.Pid)
	console := graphState(t)
	r.keys("5")
	r.waitFor("g graphs the calls of kernel functions")
	r.keys("g")
	r.keys(roots)
	r.keys("\r")
	return r, console
}

var graphRow = regexp.MustCompile(`\d+\.\d{3} us .*sh-\d+ +(▸ |  )vfs_read\(\)`)

func TestTUIGraph(t *testing.T) {
	before := graphWorld(t)
	graphReadLoop(t)
	where := "at the top level"
	if graphInInstances(t) {
		where = "in ftctl-"
	}
	for _, leave := range []string{"q", "SIGTERM"} {
		t.Run(leave, func(t *testing.T) {
			r, console := graphInConsole(t, "vfs_read")
			r.waitFor("graph vfs_read · " + where)
			t.Logf("%s", r.waitScreen(graphRow))
			if !strings.Contains(read(t, "set_graph_function"), "vfs_read") {
				t.Errorf("set_graph_function: %q", read(t, "set_graph_function"))
			}
			r.keys("x")
			r.waitFor("graph stopped: its session removed")
			if after := graphState(t); after != console {
				t.Errorf("x left the state changed:\nbefore:\n%s\nafter:\n%s", console, after)
			}
			r.keys("g") // the prompt holds the roots of the last graph
			r.keys("\r")
			r.waitFor("graph vfs_read · " + where)
			r.waitScreen(graphRow)
			want := 0
			if leave == "q" {
				r.keys("q")
			} else {
				r.cmd.Process.Signal(syscall.SIGTERM)
				want = 143
			}
			if code := r.wait(); code != want {
				t.Errorf("exit %d, want %d; screen:\n%s", code, want, r.screen)
			}
			r.restored()
			if after := graphState(t); after != before {
				t.Errorf("state changed:\nbefore:\n%s\nafter:\n%s", before, after)
			}
		})
	}
}

// TestTUIGraphNotFree: another user's graph files are not taken: the view says why, and
// nothing changes.
func TestTUIGraphNotFree(t *testing.T) {
	before := graphWorld(t)
	write(t, "set_graph_function", "vfs_write\n")
	t.Cleanup(func() { truncate(t, "set_graph_function") })
	r, console := graphInConsole(t, "vfs_read")
	r.waitFor("starting the graph (nothing is left changed)")
	r.waitFor("set_graph_function lists")
	if after := graphState(t); after != console {
		t.Errorf("state changed:\nbefore:\n%s\nafter:\n%s", console, after)
	}
	r.keys("q")
	if code := r.wait(); code != 0 {
		t.Errorf("exit %d", code)
	}
	truncate(t, "set_graph_function")
	if after := graphState(t); after != before {
		t.Errorf("state changed:\nbefore:\n%s\nafter:\n%s", before, after)
	}
}

// TestTUIGraphRecording: ftctl record --tracer function_graph of dd's reads, then the Graph view
// of ftctl tui --file shows its vfs_read calls with their durations. ftctl record runs
// function_graph in its instance: a kernel whose instances cannot run it has no such recording.
func TestTUIGraphRecording(t *testing.T) {
	graphWorld(t)
	if !graphInInstances(t) {
		t.Skip("this kernel's instances offer no function_graph (instances/*/available_tracers), which ftctl record runs in")
	}
	out := filepath.Join(t.TempDir(), "graph.dat")
	if r := ftctlRun(t, "record", "--tracer", "function_graph", "-f", "vfs_read", "-o", out, "--",
		"/bin/dd", "if=/proc/version", "of=/dev/null", "bs=1", "count=20"); r.code != 0 {
		t.Fatalf("%v", r)
	}
	r := startTUIUntil(t, []string{"TERM=xterm-256color"}, "ftctl", "tui", "--file", out)
	r.keys("5")
	r.waitFor("graph of the recording")
	t.Logf("%s", r.waitScreen(regexp.MustCompile(`\d+\.\d{3} us .*dd-\d+ +  vfs_read\(\)`)))
	r.waitFor("function_graph records")
	r.keys("q")
	if code := r.wait(); code != 0 {
		t.Errorf("exit %d", code)
	}
}
