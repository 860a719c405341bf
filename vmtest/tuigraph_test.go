//go:build vmtest

package vmtest

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// The console's Graph view on the real kernels: a graph of vfs_read while a read loop runs,
// started from the view, seen, stopped (x) and started again, then the console left (q, or
// SIGTERM); the whole tracing state as before at each step. On 6.1 function_graph runs at the
// top level (its instances cannot run it), which is free here and put back as it was.

// graphWait bounds the waits for a graph's start, removal and the console's exit: under
// emulation, on a host shared with other VMs, each change of tracer patches every function and
// took from 4 s to more than 90 s.
const graphWait = 240 * time.Second

// waitScreen waits until a line of the screen matches re (graphWait).
func (r *tuiRun) waitScreen(re *regexp.Regexp) string {
	r.t.Helper()
	deadline := time.Now().Add(graphWait)
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

// waitText waits (graphWait) until the screen shows text, maybe wrapped over lines (the
// message line wraps at spaces).
func (r *tuiRun) waitText(text string) {
	r.t.Helper()
	deadline := time.Now().Add(graphWait)
	for time.Now().Before(deadline) {
		var words []string
		for _, l := range r.screen.Lines() {
			words = append(words, strings.Fields(l)...)
		}
		if strings.Contains(strings.Join(words, " "), text) {
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
	r.t.Fatalf("the screen never showed %q:\n%s", text, r.screen)
}

// waitExit waits up to d for the console to exit and returns its exit code (the teardown of a
// graph is slow under emulation: the tracer's change patches every function).
func (r *tuiRun) waitExit(d time.Duration) int {
	r.t.Helper()
	select {
	case err := <-r.done:
		r.done <- err
		return exitCode(err)
	case <-time.After(d):
		r.t.Fatalf("ftctl tui did not exit in %v; screen:\n%s", d, r.screen)
	}
	return -1
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
			start := time.Now()
			r.waitScreen(regexp.MustCompile("graph vfs_read · " + where))
			t.Logf("started in %.1fs", time.Since(start).Seconds())
			t.Logf("%s", r.waitScreen(graphRow))
			if !strings.Contains(read(t, "set_graph_function"), "vfs_read") {
				t.Errorf("set_graph_function: %q", read(t, "set_graph_function"))
			}
			start = time.Now()
			r.keys("x")
			r.waitScreen(regexp.MustCompile("graph stopped: its session removed"))
			t.Logf("x: removed in %.1fs", time.Since(start).Seconds())
			if after := graphState(t); after != console {
				t.Errorf("x left the state changed:\nbefore:\n%s\nafter:\n%s", console, after)
			}
			r.keys("g") // the prompt holds the roots of the last graph; ftctl graph's flags added
			r.keys(" -n rw_verify_area --depth 3")
			r.keys("\r")
			r.waitScreen(regexp.MustCompile("graph vfs_read -n rw_verify_area --depth 3 · " + where))
			r.waitScreen(graphRow)
			if got := strings.TrimSpace(read(t, "max_graph_depth")); got != "3" {
				t.Errorf("max_graph_depth %q, want 3", got)
			}
			if got := read(t, "set_graph_notrace"); !strings.Contains(got, "rw_verify_area") {
				t.Errorf("set_graph_notrace %q, want rw_verify_area", got)
			}
			want := 0
			start = time.Now()
			if leave == "q" {
				r.keys("q")
			} else {
				r.cmd.Process.Signal(syscall.SIGTERM)
				want = 143
			}
			if code := r.waitExit(graphWait); code != want {
				t.Errorf("exit %d, want %d; screen:\n%s", code, want, r.screen)
			}
			t.Logf("%s: exited in %.1fs", leave, time.Since(start).Seconds())
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
	r.waitText(`starting the graph (nothing is left changed): reading /sys/kernel/tracing/set_graph_function:`)
	r.waitText(`set_graph_function lists "vfs_write" (another user's, for every function_graph of the system)`)
	r.keys("\x1b") // the prompt keeps the roots, to fix them: esc leaves it
	if after := graphState(t); after != console {
		t.Errorf("state changed:\nbefore:\n%s\nafter:\n%s", console, after)
	}
	r.keys("q")
	if code := r.waitExit(graphWait); code != 0 {
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
	if r := ftctlRun(t, "record", "--tracer", "function_graph", "-f", "vfs_read", "-w", out, "--",
		"/bin/dd", "if=/proc/version", "of=/dev/null", "bs=1", "count=20"); r.code != 0 {
		t.Fatalf("%v", r)
	}
	r := startTUIUntil(t, []string{"TERM=xterm-256color"}, "ftctl", "tui", "--file", out)
	r.keys("5")
	r.waitFor("graph of the recording")
	t.Logf("%s", r.waitScreen(regexp.MustCompile(`\d+\.\d{3} us .*dd-\d+ +  vfs_read\(\)`)))
	r.waitFor("function_graph records")
	// The views that need a kernel say calmly there is none, and read none (issue 33: the
	// console opened with "reading available_filter_functions: … there is no kernel").
	r.keys("2")
	r.waitFor("there is no kernel")
	if r.screen.Contains("available_filter_functions") {
		t.Errorf("the Functions view of a recording names the kernel's function list:\n%s", r.screen)
	}
	r.keys("q")
	if code := r.waitExit(graphWait); code != 0 {
		t.Errorf("exit %d", code)
	}
}

// TestTUIStreamGraphBinary: the console's Stream view reads function_graph from trace_pipe_raw,
// as ftctl stream does (the binary reader prints the kernel's graph lines), not from
// trace_pipe, and leaves out its own reads: the instance traces the console's threads and a
// read loop's shell (funcgraph-proc names the task on each line), and only the shell's calls
// may show. Where instances cannot run function_graph (6.1: "function nop"), nothing to test.
func TestTUIStreamGraphBinary(t *testing.T) {
	const name = "tuigraphraw"
	inst := streamInstance(t, name)
	if !strings.Contains(read(t, inst+"/available_tracers"), "function_graph") {
		t.Skipf("this kernel's instances offer %q: no function_graph in an instance", strings.TrimSpace(read(t, inst+"/available_tracers")))
	}
	loop := exec.Command("/bin/sh", "-c", "while :; do read l < /proc/version; sleep 0.2; done")
	if err := loop.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { loop.Process.Kill(); loop.Wait() })
	write(t, inst+"/set_ftrace_filter", "vfs_read\n")
	write(t, inst+"/set_ftrace_pid", strconv.Itoa(loop.Process.Pid)+"\n")
	write(t, inst+"/options/function-fork", "1\n") // the console's threads to come
	write(t, inst+"/options/funcgraph-proc", "1\n")
	write(t, inst+"/current_tracer", "function_graph\n")
	t.Cleanup(func() { write(t, inst+"/current_tracer", "nop\n") })
	r := startTUI(t, "-B", name, "tui")
	tids, err := os.ReadDir(fmt.Sprintf("/proc/%d/task", r.cmd.Process.Pid))
	if err != nil {
		t.Fatal(err)
	}
	for _, tid := range tids {
		write(t, inst+"/set_ftrace_pid", tid.Name()+"\n") // appended (no O_TRUNC)
	}
	r.waitScreen(regexp.MustCompile(`sh-\d+ +graph .*vfs_read\(\)`))
	time.Sleep(3 * time.Second) // the console reads, its reads are traced, and must not show
	// neither its calls nor the kernel's banners of a change of task naming it (seen through
	// trace_pipe on 6.12: "1)   ftctl-168    =>   ftctl-174")
	if own := regexp.MustCompile(`ftctl-\d+ +(graph |=>)|=> +ftctl-\d+`); own.MatchString(r.screen.String()) {
		t.Errorf("the console shows its own reads (pid %d):\n%s", r.cmd.Process.Pid, r.screen)
	}
	if !r.screen.Contains("reading trace_pipe_raw") {
		t.Errorf("the Stream view does not read trace_pipe_raw:\n%s", r.screen)
	}
	r.keys("q")
	if code := r.waitExit(graphWait); code != 0 {
		t.Errorf("ftctl tui exited %d; screen:\n%s", code, r.screen)
	}
}
