//go:build vmtest

package vmtest

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/ftctl/ftctl/internal/fixture"
)

// graphState is tracingState with the files function_graph sessions write at the top level.
func graphState(t *testing.T) string {
	t.Helper()
	s := tracingState(t)
	for _, f := range []string{"set_graph_function", "set_graph_notrace", "max_graph_depth", "tracing_thresh",
		"set_ftrace_notrace_pid", "options/funcgraph-proc"} {
		if _, err := os.Stat(filepath.Join(tracing, f)); err == nil {
			s += "== " + f + "\n" + read(t, f)
		}
	}
	return s
}

// graphWorld: another group's probe and another instance, which every graph session leaves
// alone (no top-level function filter: on a kernel whose instances cannot run function_graph,
// it makes the top level not free; TestGraphNotFree has it).
func graphWorld(t *testing.T) string {
	t.Helper()
	otherProbe(t)
	if err := os.Mkdir(filepath.Join(tracing, "instances", "keepme"), 0o755); err != nil && !os.IsExist(err) {
		t.Fatal(err)
	}
	removeInstanceLater(t, "keepme")
	return graphState(t)
}

// graphInInstances: the kernel's instances offer function_graph (6.11+).
func graphInInstances(t *testing.T) bool {
	return strings.Contains(read(t, "instances/keepme/available_tracers"), "function_graph")
}

type graphCall struct {
	Func       string      `json:"func"`
	DurationUS *float64    `json:"duration_us"`
	CPU        *int        `json:"cpu"`
	PID        int         `json:"pid"`
	Comm       string      `json:"comm"`
	EntryLost  bool        `json:"entry_lost"`
	Unfinished bool        `json:"unfinished"`
	Calls      []graphCall `json:"calls"`
}

func parseGraph(t *testing.T, out string) []graphCall {
	t.Helper()
	var calls []graphCall
	sc := bufio.NewScanner(strings.NewReader(out))
	sc.Buffer(nil, 16<<20)
	for sc.Scan() {
		var c graphCall
		if err := json.Unmarshal(sc.Bytes(), &c); err != nil {
			t.Fatalf("%v: %q", err, sc.Text())
		}
		calls = append(calls, c)
	}
	return calls
}

// treesSoFar is readTrees of the complete lines of a graph's JSON output so far.
func treesSoFar(out string) int {
	var calls []graphCall
	for _, l := range strings.Split(out, "\n") {
		var c graphCall
		if json.Unmarshal([]byte(l), &c) == nil {
			calls = append(calls, c)
		}
	}
	return readTrees(calls)
}

// readTrees counts the trees of ksys_read by dd that hold a vfs_read with a duration.
func readTrees(calls []graphCall) (n int) {
	for _, c := range calls {
		if c.Func != "ksys_read" || c.Comm != "dd" || c.DurationUS == nil || *c.DurationUS <= 0 || c.CPU == nil {
			continue
		}
		for _, k := range c.Calls {
			if k.Func == "vfs_read" && k.DurationUS != nil && *k.DurationUS > 0 && *k.DurationUS <= *c.DurationUS {
				n++
				break
			}
		}
	}
	return n
}

// startGraph starts ftctl graph and waits until function_graph runs (in its instance or at
// the top level) with tracing on.
func startGraph(t *testing.T, args ...string) (*exec.Cmd, *fixture.SyncBuffer, *bytes.Buffer) {
	t.Helper()
	cmd := ftctlCommand(t, append([]string{"graph"}, args...)...)
	var out fixture.SyncBuffer
	var errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	startGraphCmd(t, cmd, &errb)
	return cmd, &out, &errb
}

// startGraphCmd starts an ftctl graph command and waits until function_graph runs (in its
// instance or at the top level) with tracing on; errb is its stderr.
func startGraphCmd(t *testing.T, cmd *exec.Cmd, errb *bytes.Buffer) {
	t.Helper()
	cmd.Env = []string{"PATH=/bin"}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	instance, _ := sessionOf(t, cmd.Process.Pid)
	dir := filepath.Join("instances", instance)
	deadline := time.Now().Add(30 * time.Second)
	for {
		b1, err1 := os.ReadFile(filepath.Join(tracing, dir, "current_tracer"))
		b2, err2 := os.ReadFile(filepath.Join(tracing, dir, "tracing_on"))
		running := err1 == nil && err2 == nil && strings.TrimSpace(string(b2)) == "1"
		if running && strings.TrimSpace(string(b1)) != "function_graph" {
			running = strings.TrimSpace(read(t, "current_tracer")) == "function_graph" && strings.TrimSpace(read(t, "tracing_on")) == "1"
		}
		if running {
			return
		}
		if time.Now().After(deadline) {
			cmd.Process.Kill()
			cmd.Wait()
			t.Fatalf("function_graph never ran for %s; stderr:\n%s", instance, errb.String())
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestGraph: a loop of N reads of a file, graphed under ksys_read: at least N trees of dd's
// ksys_read with a vfs_read inside, with durations, whatever ends the session (COMMAND's exit,
// --count, --duration, SIGINT, SIGTERM); each end leaves the whole tracing state as it was.
func TestGraph(t *testing.T) {
	before := graphWorld(t)
	where := "at the top level"
	if graphInInstances(t) {
		where = "runs in instance"
	}
	check := func(t *testing.T) {
		t.Helper()
		if after := graphState(t); after != before {
			t.Errorf("state changed:\nbefore:\n%s\nafter:\n%s", before, after)
		}
	}
	const n = 50
	file := "/tmp/ftctl-graph-reads"
	os.WriteFile(file, []byte(strings.Repeat("x", n+10)), 0o644)
	dd := []string{"/bin/dd", "if=" + file, "of=/dev/null", "bs=1", "count=" + strconv.Itoa(n)}
	t.Run("command", func(t *testing.T) {
		start := time.Now()
		r := ftctlRun(t, append([]string{"graph", "-f", "ksys_read", "-o", "json", "--"}, dd...)...)
		t.Logf("%.1fs", time.Since(start).Seconds())
		if r.code != 0 || !strings.Contains(r.stderr, where) {
			t.Fatalf("want exit 0 and %q: %v", where, r)
		}
		if got := readTrees(parseGraph(t, r.stdout)); got < n {
			t.Errorf("%d trees of ksys_read holding vfs_read, want at least %d:\n%s", got, n, r)
		}
		check(t)
		if r := ftctlRun(t, "graph", "-f", "ksys_read", "--", "/bin/sh", "-c", "exit 3"); r.code != 3 {
			t.Errorf("the command's status: %v", r)
		}
		check(t)
	})
	t.Run("text", func(t *testing.T) {
		r := ftctlRun(t, append([]string{"graph", "-f", "ksys_read", "--depth", "2", "--"}, dd...)...)
		if r.code != 0 || !strings.Contains(r.stdout, "|  ksys_read() {\n") || !strings.Contains(r.stdout, "|    vfs_read();") ||
			!strings.Contains(r.stdout, "|  } /* ksys_read */") || !strings.Contains(r.stdout, " us ") {
			t.Errorf("%v", r)
		}
		for _, l := range strings.Split(r.stdout, "\n") {
			if i := strings.LastIndex(l, " |  "); i >= 0 && strings.HasPrefix(l[i+4:], "    ") {
				t.Errorf("deeper than --depth 2: %q", l)
			}
		}
		check(t)
	})
	for _, end := range []string{"count", "duration", "SIGINT", "SIGTERM"} {
		t.Run(end, func(t *testing.T) {
			gate := "/tmp/ftctl-graph-go"
			os.Remove(gate)
			loop := exec.Command("/bin/sh", "-c", "while [ ! -e "+gate+" ]; do sleep 0.05; done; exec "+strings.Join(dd, " "))
			if err := loop.Start(); err != nil {
				t.Fatal(err)
			}
			args := []string{"-f", "ksys_read", "--pid", strconv.Itoa(loop.Process.Pid), "-o", "json"}
			switch end {
			case "count":
				args = append(args, "--count", "3")
			case "duration":
				args = append(args, "--duration", "8s")
			default:
				args = append(args, "--duration", "120s")
			}
			cmd, out, errb := startGraph(t, args...)
			os.WriteFile(gate, nil, 0o644)
			if err := loop.Wait(); err != nil {
				t.Fatal(err)
			}
			var sig syscall.Signal
			switch end {
			case "SIGINT":
				sig = syscall.SIGINT
			case "SIGTERM":
				sig = syscall.SIGTERM
			}
			if sig != 0 {
				// The signal once the loop's calls are out: what is checked is the end and
				// its teardown. (A second after the loop was not always enough: on 6.12 under
				// a slow host, 3382 records were read but kallsyms was still loading, and an
				// interruption decodes only within drainBudget once it is loaded.)
				deadline := time.Now().Add(60 * time.Second)
				for treesSoFar(out.String()) < n && time.Now().Before(deadline) {
					time.Sleep(100 * time.Millisecond)
				}
			}
			endWith(t, cmd, sig, errb)
			calls := parseGraph(t, out.String())
			switch got := readTrees(calls); {
			case end == "count" && len(calls) != 3:
				t.Errorf("%d trees, want 3:\n%s", len(calls), out)
			case end != "count" && got < n:
				t.Errorf("%d trees of ksys_read holding vfs_read, want at least %d:\n%s\n%s", got, n, out, errb)
			}
			check(t)
		})
	}
	t.Run("invalid", func(t *testing.T) {
		for _, args := range [][]string{
			{"-f", "no_such_function_ftctl"}, {"-f", "ksys_read", "-n", "no_such_function_ftctl"}, {},
			{"-f", "vfs_*:mod:ext4"}, {"-f", "ksys_read", "--depth", "-1"}, {"-f", "ksys_read", "--threshold", "10ns"},
			{"-f", "ksys_read", "--pid", "-3"}, {"-f", "!ksys_read"},
		} {
			if r := ftctlRun(t, append([]string{"graph", "--duration", "1s"}, args...)...); r.code != 2 {
				t.Errorf("graph %q: want exit 2: %v", args, r)
			}
		}
		check(t)
	})
}

// TestGraphNotFree: another user's function_graph setting is never taken: a root in
// set_graph_function makes the session exit 5 (busy) where it would run in its instance, 4
// where the top level it would need is not free; on a kernel whose instances cannot run
// function_graph, a top level that is not free (a function filter) is exit 4 with the reason.
// Nothing is changed either way.
func TestGraphNotFree(t *testing.T) {
	graphWorld(t)
	write(t, "set_graph_function", "vfs_write\n")
	t.Cleanup(func() { truncate(t, "set_graph_function") })
	before := graphState(t)
	r := ftctlRun(t, "graph", "-f", "ksys_read", "--duration", "1s")
	want := 4
	if graphInInstances(t) {
		want = 5
	}
	if r.code != want || !strings.Contains(r.stderr, "set_graph_function lists \"vfs_write\"") {
		t.Errorf("want exit %d naming set_graph_function: %v", want, r)
	}
	if after := graphState(t); after != before {
		t.Errorf("state changed:\nbefore:\n%s\nafter:\n%s", before, after)
	}
	truncate(t, "set_graph_function")
	write(t, "set_ftrace_filter", "vfs_read\n")
	t.Cleanup(func() { truncate(t, "set_ftrace_filter") })
	before = graphState(t)
	r = ftctlRun(t, "graph", "-f", "ksys_read", "--duration", "1s")
	if graphInInstances(t) {
		if r.code != 0 {
			t.Errorf("in an instance, the top level's filter is not in the way: %v", r)
		}
	} else if r.code != 4 || !strings.Contains(r.stderr, "set_ftrace_filter") || !strings.Contains(r.stderr, "not free") {
		t.Errorf("want exit 4 naming the top level's set_ftrace_filter: %v", r)
	}
	if after := graphState(t); after != before {
		t.Errorf("state changed:\nbefore:\n%s\nafter:\n%s", before, after)
	}
}

// graphKilled starts a graph session with roots, a notrace list, --depth and --threshold,
// SIGKILLs it once function_graph runs, and checks that it changed the state.
func graphKilled(t *testing.T, before string) {
	t.Helper()
	cmd, _, _ := startGraph(t, "-f", "ksys_read", "-n", "vfs_write", "--depth", "5", "--threshold", "3us", "--duration", "60s", "-o", "json")
	cmd.Process.Kill()
	cmd.Wait()
	if strings.TrimSpace(read(t, "max_graph_depth")) != "5" || strings.TrimSpace(read(t, "tracing_thresh")) != "3" {
		t.Fatalf("the killed session did not leave its depth and threshold:\n%s", graphState(t))
	}
	if after := graphState(t); after == before {
		t.Fatal("nothing left after SIGKILL")
	}
}

// resetFiles is what `ftctl reset -o json` says of the one journaled session it removed: each
// file's state.
func resetFiles(t *testing.T, r result) map[string]string {
	t.Helper()
	var out struct {
		Removed []struct {
			Files []struct{ File, State string } `json:"files"`
		} `json:"removed"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &out); err != nil || len(out.Removed) != 1 {
		t.Fatalf("%v: %v", err, r)
	}
	state := map[string]string{}
	for _, f := range out.Removed[0].Files {
		state[f.File] = f.State
	}
	return state
}

// TestGraphKilledThenReset: a SIGKILLed graph session leaves the kernel-wide graph files (and,
// where instances cannot run function_graph, the top level's tracer, pid lists and tracing_on)
// as it set them; `ftctl reset` puts every one back from the session's journal: the whole
// tracing state as before, each file named in its output.
func TestGraphKilledThenReset(t *testing.T) {
	before := graphWorld(t)
	graphKilled(t, before)
	r := ftctlRun(t, "reset", "-o", "json")
	if r.code != 0 {
		t.Fatalf("%v", r)
	}
	if after := graphState(t); after != before {
		t.Errorf("reset left:\n%s\nwant:\n%s\n%v", after, before, r)
	}
	state := resetFiles(t, r)
	for _, f := range []string{"set_graph_function", "set_graph_notrace", "max_graph_depth", "tracing_thresh"} {
		if state[f] != "restored" {
			t.Errorf("%s not listed as restored: %v", f, r)
		}
	}
	if !graphInInstances(t) && state["current_tracer"] != "restored" {
		t.Errorf("the top level's tracer not listed as restored: %v", r)
	}
	// the journal is gone: a second reset has nothing to do
	if r := ftctlRun(t, "reset"); r.code != 0 || !strings.Contains(r.stderr, "no leftovers") {
		t.Errorf("second reset: %v", r)
	}
}

// TestGraphKilledCommandThenReset: a SIGKILLed `ftctl graph -- COMMAND` whose command still
// runs and has forked a child: where function_graph runs at the top level (instances cannot
// run it), the kernel added the child to the top level's set_ftrace_pid (function-fork), and
// `ftctl reset` puts the list back all the same (its pids are the session's and their
// children's), with the rest: the whole tracing state as before.
func TestGraphKilledCommandThenReset(t *testing.T) {
	before := graphWorld(t)
	pids := "/tmp/ftctl-graph-pids"
	os.Remove(pids)
	script := "sleep 300 & echo $$ $! > " + pids + "; while :; do read l < /proc/version; sleep 0.2; done"
	cmd := ftctlCommand(t, "graph", "-f", "ksys_read", "-o", "json", "--", "/bin/sh", "-c", script)
	devnull, err := os.OpenFile("/dev/null", os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer devnull.Close()
	var errb bytes.Buffer
	// the command and its child outlive ftctl with its stdout and stderr: no pipe, which
	// Wait would wait for until they end (WaitDelay bounds it)
	cmd.Stdout, cmd.Stderr = devnull, &errb
	cmd.WaitDelay = time.Second
	startGraphCmd(t, cmd, &errb)
	var sh, child int
	deadline := time.Now().Add(20 * time.Second)
	for {
		b, _ := os.ReadFile(pids)
		if _, err := fmt.Sscan(string(b), &sh, &child); err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the command never started its child; stderr:\n%s", errb.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Cleanup(func() { syscall.Kill(child, syscall.SIGKILL); syscall.Kill(sh, syscall.SIGKILL) })
	top := !graphInInstances(t)
	if top {
		if l := read(t, "set_ftrace_pid"); !strings.Contains(l, strconv.Itoa(child)+"\n") {
			t.Fatalf("the child %d is not in the top level's set_ftrace_pid (function-fork):\n%s", child, l)
		}
	}
	cmd.Process.Kill()
	cmd.Wait()
	r := ftctlRun(t, "reset", "-o", "json")
	if r.code != 0 {
		t.Fatalf("%v", r)
	}
	if after := graphState(t); after != before {
		t.Errorf("reset left:\n%s\nwant:\n%s\n%v", after, before, r)
	}
	if st := resetFiles(t, r)["set_ftrace_pid"]; top && st != "restored" {
		t.Errorf("set_ftrace_pid %q, want restored: %v", st, r)
	}
	// the command runs on, untraced
	if syscall.Kill(sh, 0) != nil || syscall.Kill(child, 0) != nil {
		t.Errorf("the command (%d) or its child (%d) is gone", sh, child)
	}
}

// TestGraphKilledOtherChangedDepth: another actor sets max_graph_depth after the kill: reset
// leaves that file as the other set it, says so (the file, what it holds, what it held
// before), and puts back the rest.
func TestGraphKilledOtherChangedDepth(t *testing.T) {
	before := graphWorld(t)
	graphKilled(t, before)
	write(t, "max_graph_depth", "7")
	t.Cleanup(func() { write(t, "max_graph_depth", "0") })
	r := ftctlRun(t, "reset")
	if r.code != 0 {
		t.Fatalf("%v", r)
	}
	if got := strings.TrimSpace(read(t, "max_graph_depth")); got != "7" {
		t.Errorf("max_graph_depth is %s, want the other actor's 7", got)
	}
	if !strings.Contains(r.stdout, "max_graph_depth") || !strings.Contains(r.stdout, `holds "7"`) || !strings.Contains(r.stdout, `held "0" before`) {
		t.Errorf("reset does not say it left max_graph_depth: %v", r)
	}
	write(t, "max_graph_depth", "0")
	if after := graphState(t); after != before {
		t.Errorf("reset left:\n%s\nwant:\n%s\n%v", after, before, r)
	}
}

// TestResetAllGraphValues: reset --all puts max_graph_depth and tracing_thresh back to 0.
func TestResetAllGraphValues(t *testing.T) {
	write(t, "max_graph_depth", "4")
	write(t, "tracing_thresh", "9")
	t.Cleanup(func() { write(t, "max_graph_depth", "0"); write(t, "tracing_thresh", "0") })
	if r := ftctlRun(t, "reset", "--all", "--yes"); r.code != 0 {
		t.Fatalf("%v", r)
	}
	for _, f := range []string{"max_graph_depth", "tracing_thresh"} {
		if got := strings.TrimSpace(read(t, f)); got != "0" {
			t.Errorf("%s is %s after reset --all, want 0", f, got)
		}
	}
}

// TestGraphSmallTopRing: where function_graph runs at the top level (6.1), a top-level ring
// left at its boot size (7 KiB per CPU: on 6.1 what an instance's buffer_size_kb write as the
// boot's first use leaves) is grown for the graph to a new ring's size and put back at the
// end; before, the graph of 50 reads kept ~150 of ~2,500 events (CI, 2026-11-28).
func TestGraphSmallTopRing(t *testing.T) {
	graphWorld(t)
	if graphInInstances(t) {
		t.Skip("function_graph runs in the session's instance on this kernel: the top level's ring is not used")
	}
	old := strings.TrimSpace(read(t, "buffer_size_kb"))
	write(t, "buffer_size_kb", "7")
	t.Cleanup(func() { write(t, "buffer_size_kb", old) })
	const n = 50
	file := "/tmp/ftctl-graph-reads"
	os.WriteFile(file, []byte(strings.Repeat("x", n+10)), 0o644)
	r := ftctlRun(t, "graph", "-f", "ksys_read", "-o", "json", "--", "/bin/dd", "if="+file, "of=/dev/null", "bs=1", "count="+strconv.Itoa(n))
	if r.code != 0 || !strings.Contains(r.stderr, "sized to") {
		t.Fatalf("want exit 0 and a notice of the ring sized: %v", r)
	}
	if got := readTrees(parseGraph(t, r.stdout)); got < n {
		t.Errorf("%d trees of ksys_read holding vfs_read, want at least %d:\n%s", got, n, r)
	}
	if got := strings.TrimSpace(read(t, "buffer_size_kb")); got != "7" {
		t.Errorf("the top level's buffer_size_kb is %q after the graph, want 7 put back", got)
	}
}
