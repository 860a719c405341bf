//go:build vmtest

package vmtest

import (
	"bufio"
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// countWorld is histWorld plus another owner's probe on vfs_read with a hist trigger keyed as
// count's own (__probe_ip.sym) at the top level: none of it may be touched.
func countWorld(t *testing.T) string {
	t.Helper()
	histWorld(t)
	write(t, "kprobe_events", "p:othercount/vr vfs_read\n")
	removeProbeLater(t, "othercount", "vr")
	trig := "events/othercount/vr/trigger"
	write(t, trig, "hist:keys=__probe_ip.sym\n")
	t.Cleanup(func() { os.WriteFile(filepath.Join(tracing, trig), []byte("!hist:keys=__probe_ip.sym\n"), 0) })
	return countState(t)
}

// countState is the whole tracing state count could change: latencyState's files (dynamic
// and synthetic events, the other owners' hist triggers) and the other probe's trigger.
func countState(t *testing.T) string {
	t.Helper()
	s := latencyState(t)
	if _, err := os.Stat(filepath.Join(tracing, "events/othercount/vr/trigger")); err == nil {
		s += "== othercount trigger\n" + read(t, "events/othercount/vr/trigger")
	}
	return s
}

type countRow struct {
	Interval int     `json:"interval"`
	Time     string  `json:"time"`
	Seconds  float64 `json:"seconds"`
	Func     string  `json:"func"`
	Count    uint64  `json:"count"`
	Method   string  `json:"method"`
}

// countSummaryRow is the last object of count's NDJSON.
type countSummaryRow struct {
	Summary    bool    `json:"summary"`
	Intervals  int     `json:"intervals"`
	Time       string  `json:"time"`
	Seconds    float64 `json:"seconds"`
	Functions  int     `json:"functions"`
	Called     int     `json:"called"`
	Calls      uint64  `json:"calls"`
	Method     string  `json:"method"`
	LowerBound bool    `json:"lower_bound"`
}

// countRows reads count's NDJSON; each row's method must be method, and the last object must
// be the summary, which countSummary returns.
func countRows(t *testing.T, out, method string) []countRow {
	t.Helper()
	rows, _ := countOutput(t, out, method)
	return rows
}

func countSummary(t *testing.T, out, method string) countSummaryRow {
	t.Helper()
	_, sum := countOutput(t, out, method)
	return sum
}

func countOutput(t *testing.T, out, method string) ([]countRow, countSummaryRow) {
	t.Helper()
	var rows []countRow
	var sum countSummaryRow
	sc := bufio.NewScanner(strings.NewReader(out))
	for sc.Scan() {
		if sum.Summary {
			t.Errorf("an object after the summary: %q", sc.Text())
		}
		if err := json.Unmarshal(sc.Bytes(), &sum); err != nil {
			t.Fatalf("%v: %q", err, sc.Text())
		}
		if sum.Summary {
			if sum.Method != method || sum.Time == "" || sum.Intervals < 1 || sum.Functions < 1 {
				t.Errorf("summary %+v: want method %s, a time, intervals and functions", sum, method)
			}
			continue
		}
		var r countRow
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			t.Fatalf("%v: %q", err, sc.Text())
		}
		if r.Method != method || r.Interval < 1 || r.Time == "" {
			t.Errorf("row %+v: want method %s, an interval and a time", r, method)
		}
		rows = append(rows, r)
	}
	if !sum.Summary {
		t.Errorf("no summary at the end of:\n%s", out)
	}
	return rows, sum
}

func callsOf(rows []countRow, fn string) (n uint64) {
	for _, r := range rows {
		if r.Func == fn {
			n += r.Count
		}
	}
	return n
}

// startCount starts ftctl count with args and waits until its session counts: tracing on in
// its instance, and the hist trigger there (hist) or the function tracer (stream).
func startCount(t *testing.T, method string, args ...string) (*exec.Cmd, *bytes.Buffer, *bytes.Buffer) {
	t.Helper()
	cmd := ftctlCommand(t, args...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	cmd.Env = []string{"PATH=/bin"}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	// a count that never shows its session within sessionOf's time (a loaded host) is ended
	// with the test: left running, it set up later, under the next subtests' checks
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	instance, group := sessionOf(t, cmd.Process.Pid)
	dir := filepath.Join(tracing, "instances", instance)
	deadline := time.Now().Add(30 * time.Second)
	for {
		on, _ := os.ReadFile(filepath.Join(dir, "tracing_on"))
		ready := strings.TrimSpace(string(on)) == "1"
		if method == "hist" {
			b, _ := os.ReadFile(filepath.Join(dir, "events", group, "count", "trigger"))
			ready = ready && strings.Contains(string(b), "hist:")
		} else {
			b, _ := os.ReadFile(filepath.Join(dir, "current_tracer"))
			ready = ready && strings.TrimSpace(string(b)) == "function"
		}
		if ready {
			// the stream reader opens its pipe right after tracing is on: what the loop
			// calls meanwhile is in the ring buffer, read from its start
			return cmd, &out, &errb
		}
		if time.Now().After(deadline) {
			cmd.Process.Kill()
			cmd.Wait()
			t.Fatalf("the count session %s never counted; stderr:\n%s", instance, errb.String())
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestCount: a loop of N reads shows at least N calls of vfs_read, by either method, whatever
// ends the session (COMMAND's exit, --duration, SIGINT, SIGTERM), and each exit leaves the
// tracing state (other owners' probes and triggers included) as it was.
func TestCount(t *testing.T) {
	before := countWorld(t)
	const n = 200
	file := "/tmp/ftctl-count-reads"
	os.WriteFile(file, []byte(strings.Repeat("x", n+10)), 0o644)
	dd := []string{"/bin/dd", "if=" + file, "of=/dev/null", "bs=1", "count=" + strconv.Itoa(n)}
	// kprobes where the kernel has kprobe events (6.1, 6.12): a point arms sooner than an fprobe
	// and costs a call no more; fprobes only where it has none
	kprobes := topFS(t).DetectFeatures().KprobeEvents
	for _, method := range []string{"hist", "stream"} {
		t.Run(method+"/command", func(t *testing.T) {
			// vfs_fsync, named, is not called by dd: its record says 0 (issue 33: a script could
			// not tell 0 calls from no run), and the summary ends the output
			r := ftctlRun(t, append([]string{"count", "vfs_read", "ksys_read", "vfs_fsync", "--method", method, "-o", "json", "--"}, dd...)...)
			if r.code != 0 {
				t.Fatalf("%v", r)
			}
			t.Logf("%s%s", r.stderr, r.stdout)
			rows, sum := countOutput(t, r.stdout, method)
			if got := callsOf(rows, "vfs_read"); got < n {
				t.Errorf("%d calls of vfs_read, want at least %d: %v", got, n, r)
			}
			if got := callsOf(rows, "ksys_read"); got < n {
				t.Errorf("%d calls of ksys_read, want at least %d: %v", got, n, r)
			}
			if !slices.ContainsFunc(rows, func(r countRow) bool { return r.Func == "vfs_fsync" && r.Count == 0 }) {
				t.Errorf("no record of vfs_fsync with 0 calls:\n%s", r.stdout)
			}
			if all := callsOf(rows, "vfs_read") + callsOf(rows, "ksys_read"); sum.Functions != 3 || sum.Called != 2 || sum.Calls != all || sum.Intervals != 1 {
				t.Errorf("summary %+v, want 3 functions, 2 called, %d calls, 1 interval", sum, all)
			}
			want := "counting 3 functions by " + method
			if method == "hist" && kprobes {
				want += ": one kprobe event"
			} else if method == "hist" {
				want += ": one fprobe event"
			}
			if !strings.Contains(r.stderr, want) {
				t.Errorf("want %q on stderr: %v", want, r)
			}
			if after := countState(t); after != before {
				t.Errorf("state changed:\n%s\n%s", before, after)
			}
			if r := ftctlRun(t, "count", "vfs_read", "--method", method, "--", "/bin/sh", "-c", "exit 3"); r.code != 3 {
				t.Errorf("the command's status: %v", r)
			}
			if after := countState(t); after != before {
				t.Errorf("state changed:\n%s\n%s", before, after)
			}
		})
		for _, sig := range []syscall.Signal{0, syscall.SIGINT, syscall.SIGTERM} {
			name := "duration"
			if sig != 0 {
				name = sig.String()
			}
			t.Run(method+"/"+name, func(t *testing.T) {
				gate := "/tmp/ftctl-count-go"
				os.Remove(gate)
				// the task that reads is the shell that waits, exec'd into dd: its pid is known first
				loop := exec.Command("/bin/sh", "-c", "while [ ! -e "+gate+" ]; do sleep 0.05; done; exec "+strings.Join(dd, " "))
				if err := loop.Start(); err != nil {
					t.Fatal(err)
				}
				dur := "60s"
				if sig == 0 {
					dur = "5s"
				}
				cmd, out, errb := startCount(t, method, "count", "vfs_rea*", "ksys_read", "--method", method, "--pid", strconv.Itoa(loop.Process.Pid), "-o", "json", "--duration", dur)
				os.WriteFile(gate, nil, 0o644)
				if err := loop.Wait(); err != nil {
					t.Fatal(err)
				}
				endWith(t, cmd, sig, errb)
				rows := countRows(t, out.String(), method)
				if got := callsOf(rows, "vfs_read"); got < n {
					t.Errorf("%d calls of vfs_read, want at least %d:\n%s\n%s", got, n, out, errb)
				}
				if after := countState(t); after != before {
					t.Errorf("state changed:\n%s\n%s", before, after)
				}
			})
		}
	}
	t.Run("interval", func(t *testing.T) {
		gate := "/tmp/ftctl-count-go"
		os.Remove(gate)
		// 4 rounds of n reads, 0.7 s apart: at least two intervals of 1 s see reads
		script := "while [ ! -e " + gate + " ]; do sleep 0.05; done; for i in 1 2 3 4; do " + strings.Join(dd, " ") + " 2>/dev/null; sleep 0.7; done"
		loop := exec.Command("/bin/sh", "-c", script)
		if err := loop.Start(); err != nil {
			t.Fatal(err)
		}
		// the reads are dd's, the shell's children: count every task's
		cmd, out, errb := startCount(t, "hist", "count", "vfs_read", "--interval", "1s", "-o", "json", "--duration", "60s")
		os.WriteFile(gate, nil, 0o644)
		if err := loop.Wait(); err != nil {
			t.Fatal(err)
		}
		endWith(t, cmd, syscall.SIGINT, errb)
		t.Logf("%s", out)
		rows := countRows(t, out.String(), "hist")
		intervals := map[int]bool{}
		for i, r := range rows { // one row per interval: vfs_read is named, 0 calls included
			intervals[r.Interval] = true
			if r.Func != "vfs_read" || (i > 0 && r.Interval != rows[i-1].Interval+1) || (i == 0 && r.Interval != 1) {
				t.Errorf("row %d: %+v", i, r)
			}
		}
		if sum := countSummary(t, out.String(), "hist"); sum.Intervals != len(rows) || sum.Calls != callsOf(rows, "vfs_read") {
			t.Errorf("summary %+v after %d intervals", sum, len(rows))
		}
		if got := callsOf(rows, "vfs_read"); got < 4*n || len(intervals) < 2 {
			t.Errorf("%d calls of vfs_read in %d intervals, want at least %d in 2 or more:\n%s", got, len(intervals), 4*n, out)
		}
		if after := countState(t); after != before {
			t.Errorf("state changed:\n%s\n%s", before, after)
		}
	})
	t.Run("text", func(t *testing.T) {
		r := ftctlRun(t, append([]string{"count", "vfs_read", "--top", "1", "--"}, dd...)...)
		t.Logf("%s", r.stdout)
		lines := strings.Split(strings.TrimSpace(r.stdout), "\n")
		if r.code != 0 || len(lines) != 3 || !strings.HasPrefix(lines[0], "FUNC ") || !strings.HasPrefix(lines[1], "vfs_read ") || lines[2] != "1 function, "+strings.Fields(lines[1])[1]+" calls" {
			t.Errorf("%v", r)
		}
	})
}

// TestCountInvalid: mistakes are refused with exit 2 before anything is written.
func TestCountInvalid(t *testing.T) {
	before := countWorld(t)
	// a name available_filter_functions lists twice: kallsyms has it twice, kprobes refuse it
	// (6.1: "The symbol is not unique"; 6.12 too); an fprobe takes it, on every function of the
	// name, as the function tracer's filter by name does (6.12): count then probes it with one
	fprobe := topFS(t).DetectFeatures().Probe.Fprobe
	dup := ""
	seen := map[string]bool{}
	for _, l := range strings.Split(read(t, "available_filter_functions"), "\n") {
		f := strings.Fields(l)
		if len(f) == 1 && !strings.HasPrefix(f[0], "__ftrace_invalid") {
			if seen[f[0]] {
				dup = f[0]
				break
			}
			seen[f[0]] = true
		}
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"no_such_function_ftctl"}, "matches no traceable function"},
		{[]string{"vfs_read", "no_such_function_ftctl*"}, "matches no traceable function"},
		{[]string{"vfs_read", "--method", "profile"}, "want hist or stream"},
		{[]string{"vfs_read", "--interval", "-1s"}, "--interval"},
		{[]string{"vfs_read", "--top", "-1"}, "--top"},
		{[]string{"vfs_read", "--pid", "-2"}, "--pid"},
		{[]string{"vfs_read", "-B", "keepme"}, "-B is not for count"},
		{[]string{"--duration", "1s"}, "at least one pattern"},
		{[]string{"--method", "hist", dup}, "not unique"},
	} {
		if c.want == "not unique" && fprobe {
			continue // fprobes take such a name (below)
		}
		r := ftctlRun(t, append([]string{"count"}, c.args...)...)
		if r.code != 2 || !strings.Contains(r.stderr, c.want) {
			t.Errorf("count %q: want exit 2 and %q: %v", c.args, c.want, r)
		}
	}
	if after := countState(t); after != before {
		t.Errorf("state changed:\n%s\n%s", before, after)
	}
	// without --method, such a name is counted from the stream, once kprobes refused it; where
	// the kernel has fprobes, by hist on an fprobe event instead (ftctl reads neither the index
	// nor kallsyms for a name: the kernel's refusal of the kprobe is the check)
	r := ftctlRun(t, "count", dup, "--duration", "1s", "-o", "json")
	t.Logf("%s: %s", dup, r.stderr)
	want := "by stream: the function tracer on them in ftctl's instance, every call an event read and counted (" + dup + " is "
	if fprobe {
		want = "counting 1 function by hist: one fprobe event with a point per function and a hist trigger on it, counted in the kernel (nothing streamed) (" + dup + " is "
	}
	if r.code != 0 || !strings.Contains(r.stderr, want) {
		t.Errorf("count %s: want %q: %v", dup, want, r)
	}
	if after := countState(t); after != before {
		t.Errorf("state changed:\n%s\n%s", before, after)
	}
}

// TestCountKilledThenReset: a SIGKILLed count leaves its instance, trigger and probe points;
// `ftctl reset` removes them all.
func TestCountKilledThenReset(t *testing.T) {
	before := countWorld(t)
	cmd, _, _ := startCount(t, "hist", "count", "vfs_read", "vfs_write", "--duration", "60s")
	cmd.Process.Kill()
	cmd.Wait()
	if after := countState(t); after == before {
		t.Fatal("nothing left after SIGKILL")
	}
	r := ftctlRun(t, "reset")
	if r.code != 0 {
		t.Errorf("%v", r)
	}
	if after := countState(t); after != before {
		t.Errorf("reset left:\n%s\nwant:\n%s\n%v", after, before, r)
	}
}

// TestHistInterval: hist --interval prints the table (the counts so far) every interval, one
// JSON object a line, numbered, the loop's hits growing to at least N; the state as it was.
func TestHistInterval(t *testing.T) {
	before := histWorld(t)
	const n = 300
	cmd, out, errb := startSession(t, histEvent+"/trigger", "hist", "syscalls:sys_enter_read", "--key", "common_pid", "--interval", "1s", "--duration", "60s", "-o", "json")
	loop := readLoop(t, n)
	if err := loop.Run(); err != nil {
		t.Fatal(err)
	}
	time.Sleep(2500 * time.Millisecond) // two tables at least
	endWith(t, cmd, syscall.SIGINT, errb)
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	var hits []float64
	for i, l := range lines {
		var h struct {
			Interval int    `json:"interval"`
			Time     string `json:"time"`
		}
		if err := json.Unmarshal([]byte(l), &h); err != nil || h.Interval != i+1 || h.Time == "" {
			t.Errorf("line %d: %v %+v: %q", i, err, h, l)
		}
		hits = append(hits, hitsOf(t, l, loop.Process.Pid))
	}
	if len(lines) < 3 || hits[len(hits)-1] < n {
		t.Errorf("%d tables, the loop's hits %v: want 3 or more, the last at least %d:\n%s", len(lines), hits, n, out)
	}
	for i := 1; i < len(hits); i++ {
		if hits[i] < hits[i-1] {
			t.Errorf("hits went down: %v", hits)
		}
	}
	checkHistWorld(t, before)
}

// waitCount waits (30 s) until the Top view's kernel table shows a count of at least n for key
// (a function's calls, a hist key's hits).
func (r *tuiRun) waitCount(key string, n uint64) {
	r.t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for got := uint64(0); got < n; {
		if time.Now().After(deadline) {
			r.t.Fatalf("never a count of %d for %s:\n%s", n, key, r.screen)
		}
		time.Sleep(200 * time.Millisecond)
		for _, l := range r.screen.Lines() {
			if f := strings.Fields(l); len(f) == 3 && f[2] == key {
				got, _ = strconv.ParseUint(strings.ReplaceAll(f[0], ",", ""), 10, 64)
			}
		}
	}
}

// stopCountAndQuit removes the Top view's count (x), leaves the console (q, exit 0), and checks
// that the terminal is given back and the tracing state is before.
func (r *tuiRun) stopCountAndQuit(before string) {
	r.t.Helper()
	r.keys("x")
	r.waitFor("count stopped")
	r.keys("q")
	if code := r.wait(); code != 0 {
		r.t.Errorf("exit %d:\n%s", code, r.screen)
	}
	r.restored()
	if after := countState(r.t); after != before {
		r.t.Errorf("state changed:\n%s\n%s", before, after)
	}
}

// TestTUICount: the console's Top view counts functions' calls in the kernel (c), its table
// shows at least N calls of vfs_read after a loop of N reads, and the count's session is removed
// by x, and by the console's end with the count running (SIGTERM), leaving the tracing state,
// other owners' probes and triggers included, as it was.
func TestTUICount(t *testing.T) {
	before := countWorld(t)
	const n = 300
	for _, way := range []string{"x", "SIGTERM"} {
		t.Run(way, func(t *testing.T) {
			r := startTUI(t, "tui")
			r.keys("4")
			r.keys("c")
			r.keys("vfs_read ksys_read")
			r.keys("\r")
			r.waitFor("by hist ·")
			if err := readLoop(t, n).Run(); err != nil {
				t.Fatal(err)
			}
			r.waitCount("vfs_read", n)
			t.Logf("%s", r.screen)
			if way == "x" {
				r.keys("x")
				r.waitFor("count stopped")
				r.keys("q")
				if code := r.wait(); code != 0 {
					t.Errorf("exit %d:\n%s", code, r.screen)
				}
			} else {
				r.cmd.Process.Signal(syscall.SIGTERM)
				if code := r.wait(); code != 143 {
					t.Errorf("exit %d:\n%s", code, r.screen)
				}
			}
			r.restored()
			if after := countState(t); after != before {
				t.Errorf("state changed:\n%s\n%s", before, after)
			}
		})
	}
}

// TestTUIHistTable: the Top view's h shows an event's hits per key from a hist trigger in a
// session of its own: at least N for a loop of N reads (sys_enter_read by pid), removed by x,
// the tracing state (other owners' triggers on the same event included) as it was.
func TestTUIHistTable(t *testing.T) {
	before := countWorld(t)
	const n = 300
	r := startTUI(t, "tui")
	r.keys("4")
	r.keys("h")
	r.keys("syscalls:sys_enter_read common_pid")
	r.keys("\r")
	r.waitFor("· x stop")
	loop := readLoop(t, n)
	if err := loop.Run(); err != nil {
		t.Fatal(err)
	}
	r.waitCount(strconv.Itoa(loop.Process.Pid), n)
	t.Logf("%s", r.screen)
	r.stopCountAndQuit(before)
}

// TestCountIntervalSeconds: each interval count prints lasts about --interval, the last one
// too: it ends when the count ends, not after the stream's drain (with nothing recorded, the
// kernel ends the stream only after 2 s: the last interval was printed as 2.5 s and more).
func TestCountIntervalSeconds(t *testing.T) {
	sleeper := exec.Command("/bin/sleep", "60") // calls nothing while counted
	if err := sleeper.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { sleeper.Process.Kill(); sleeper.Wait() }()
	r := ftctlRun(t, "count", "vfs_read", "--method", "stream", "--pid", strconv.Itoa(sleeper.Process.Pid), "--interval", "1s", "--duration", "2500ms")
	if r.code != 0 {
		t.Fatalf("%v", r)
	}
	var secs []float64
	for _, l := range strings.Split(r.stdout, "\n") {
		if m := regexp.MustCompile(`^\d\d:\d\d:\d\d \((\d+\.\d)s\)$`).FindStringSubmatch(l); m != nil {
			s, _ := strconv.ParseFloat(m[1], 64)
			secs = append(secs, s)
		}
	}
	if len(secs) != 3 || secs[0] > 1.4 || secs[1] > 1.4 || secs[2] > 0.9 {
		t.Errorf("intervals of %v s, want 1, 1, 0.5:\n%s", secs, r.stdout)
	}
}

// refusedProbeFunction is a function that available_filter_functions lists and kallsyms names
// once each (count's hist method takes it), on which the kernel refuses the last probe point
// that method tries (an fprobe where the README announces them, after a kprobe; else a kprobe):
// one of the kprobe blacklist's (debugfs), or a compiler-made name ("foo.isra.0"). "" when none
// is refused.
func refusedProbeFunction(t *testing.T) string {
	t.Helper()
	if strings.Contains(read(t, "README"), "f[:[<group>/][<event>]]") {
		return refusedProbe(t, "f", "dynamic_events")
	}
	return refusedProbe(t, "p", "kprobe_events")
}

// refusedProbe is such a function on which the kernel refuses a probe point of kind (p or f),
// defined in file.
func refusedProbe(t *testing.T, kind, file string) string {
	t.Helper()
	// debugfs for kprobes/blacklist, unmounted again if mounted here: the tracefs it automounts
	// at /sys/kernel/debug/tracing would otherwise outlive the test, found by every later one
	// (TestNotMountedThenMount found tracefs there after unmounting /sys/kernel/tracing).
	if syscall.Mount("none", "/sys/kernel/debug", "debugfs", 0, "") == nil { // already mounted: EBUSY
		defer syscall.Unmount("/sys/kernel/debug", syscall.MNT_DETACH)
	}
	var cands []string
	if b, err := os.ReadFile("/sys/kernel/debug/kprobes/blacklist"); err == nil {
		for _, l := range strings.Split(string(b), "\n") {
			if f := strings.Fields(l); len(f) == 2 {
				cands = append(cands, f[1])
			}
		}
	}
	listed := map[string]int{}
	dotted := 0
	for _, l := range strings.Split(read(t, "available_filter_functions"), "\n") {
		name, _, _ := strings.Cut(l, " ")
		listed[name]++
		if strings.Contains(name, ".") && !strings.Contains(l, "[") && dotted < 20 {
			cands = append(cands, name)
			dotted++
		}
	}
	named := map[string]int{}
	ks, err := os.ReadFile("/proc/kallsyms")
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range strings.Split(string(ks), "\n") {
		if f := strings.Fields(l); len(f) == 3 {
			named[f[2]]++
		}
	}
	for _, c := range cands {
		if listed[c] != 1 || named[c] != 1 {
			continue
		}
		if probeRefused(t, kind, file, c) {
			return c
		}
	}
	return ""
}

// probeRefused says whether the kernel refuses a probe point of kind (p or f) on fn, defined in
// file (and removed again when it is taken).
func probeRefused(t *testing.T, kind, file, fn string) bool {
	t.Helper()
	f, err := os.OpenFile(filepath.Join(tracing, file), os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	_, werr := f.Write([]byte(kind + ":ftctlrefused/probe " + fn + "\n"))
	f.Close()
	if werr != nil {
		t.Logf("the kernel refuses %s: probe %s: %v", kind, fn, werr)
		return true
	}
	write(t, file, "-:ftctlrefused/probe\n")
	return false
}

// TestCountFallsBackWhenProbeRefused: a function the hist method's probe point cannot be put on
// (the kernel refuses it, though available_filter_functions lists it) among the patterns:
// count falls back to the stream for the whole run, says so with the reason, counts the calls,
// and leaves nothing of the hist attempt; with --method hist the refusal is exit 3, nothing
// left.
func TestCountFallsBackWhenProbeRefused(t *testing.T) {
	before := countWorld(t)
	fn := refusedProbeFunction(t)
	if fn == "" {
		t.Skip("the kernel refuses a probe on no function of the kprobe blacklist or of the compiler-made names: nothing to fall back from (fprobes take them)")
	}
	if r := ftctlRun(t, "count", "vfs_read", fn, "--method", "hist", "--duration", "1s"); r.code != 3 || !strings.Contains(r.stderr, fn) {
		t.Errorf("--method hist: want exit 3 naming %s: %v", fn, r)
	}
	if after := countState(t); after != before {
		t.Errorf("state changed:\n%s\n%s", before, after)
	}
	const n = 50
	file := "/tmp/ftctl-count-refused"
	os.WriteFile(file, []byte(strings.Repeat("x", n+10)), 0o644)
	r := ftctlRun(t, "count", "vfs_read", fn, "-o", "json", "--", "/bin/dd", "if="+file, "of=/dev/null", "bs=1", "count="+strconv.Itoa(n))
	if r.code != 0 {
		t.Fatalf("%v", r)
	}
	for _, want := range []string{"refused a probe on " + fn, "counting by the stream instead", "counting 2 functions by stream", "the kernel refused a probe on " + fn} {
		if !strings.Contains(r.stderr, want) {
			t.Errorf("want %q on stderr: %v", want, r)
		}
	}
	if got := callsOf(countRows(t, r.stdout, "stream"), "vfs_read"); got < n {
		t.Errorf("%d calls of vfs_read, want at least %d: %v", got, n, r)
	}
	if after := countState(t); after != before {
		t.Errorf("state changed:\n%s\n%s", before, after)
	}
}

// TestCountFprobeWhereKprobeRefused: where the kernel has fprobes, a function it refuses a kprobe
// on (one of the kprobe blacklist's, say) is counted by hist on an fprobe event, which ftrace
// takes: not by the stream; the choice says why, the calls are counted, nothing is left.
func TestCountFprobeWhereKprobeRefused(t *testing.T) {
	ft := topFS(t).DetectFeatures()
	if !ft.Probe.Fprobe || !ft.KprobeEvents {
		t.Skip("this kernel does not have both kprobe and fprobe events")
	}
	before := countWorld(t)
	fn := refusedProbe(t, "p", "kprobe_events")
	if fn == "" {
		t.Skip("the kernel refuses a kprobe on no function of the kprobe blacklist or of the compiler-made names")
	}
	if probeRefused(t, "f", "dynamic_events", fn) {
		t.Skipf("the kernel refuses an fprobe on %s too", fn)
	}
	const n = 50
	file := "/tmp/ftctl-count-kprefused"
	os.WriteFile(file, []byte(strings.Repeat("x", n+10)), 0o644)
	for _, method := range []string{"", "hist"} {
		args := []string{"count", "vfs_read", fn, "-o", "json"}
		if method != "" {
			args = append(args, "--method", method)
		}
		r := ftctlRun(t, append(args, "--", "/bin/dd", "if="+file, "of=/dev/null", "bs=1", "count="+strconv.Itoa(n))...)
		if r.code != 0 {
			t.Fatalf("%q: %v", method, r)
		}
		want := "counting 2 functions by hist: one fprobe event with a point per function and a hist trigger on it, counted in the kernel (nothing streamed) (the kernel refused a kprobe on " + fn + ")"
		if !strings.Contains(r.stderr, want) || strings.Contains(r.stderr, "by the stream instead") {
			t.Errorf("%q: want %q on stderr: %v", method, want, r)
		}
		if got := callsOf(countRows(t, r.stdout, "hist"), "vfs_read"); got < n {
			t.Errorf("%q: %d calls of vfs_read, want at least %d: %v", method, got, n, r)
		}
		if after := countState(t); after != before {
			t.Errorf("state changed:\n%s\n%s", before, after)
		}
	}
}

// TestTUICountFallsBackWhenProbeRefused: the Top view's count falls back on the stream where
// the kernel refuses a probe on one of the functions, as ftctl count does, saying why; the
// calls of a loop of N reads are counted, and x leaves the tracing state as it was.
func TestTUICountFallsBackWhenProbeRefused(t *testing.T) {
	before := countWorld(t)
	fn := refusedProbeFunction(t)
	if fn == "" {
		t.Skip("the kernel refuses a probe on no function of the kprobe blacklist or of the compiler-made names: nothing to fall back from (fprobes take them)")
	}
	const n = 100
	r := startTUI(t, "tui")
	r.keys("4")
	r.keys("c")
	r.keys("vfs_read " + fn)
	r.keys("\r")
	r.waitFor("by stream ·")
	r.waitFor("refused a probe on " + fn)
	if err := readLoop(t, n).Run(); err != nil {
		t.Fatal(err)
	}
	r.waitCount("vfs_read", n)
	r.stopCountAndQuit(before)
}
