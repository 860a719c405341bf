//go:build vmtest

package vmtest

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/ftctl/ftctl/count"
	"github.com/ftctl/ftctl/session"
	"github.com/ftctl/ftctl/tracefs"
)

// controlState is what a dry run must leave byte-identical: every readable control file of the
// top level and its options (not the buffers, pipes and statistics, which tracing itself
// changes), the instances and, in each, its tracer, tracing_on, enabled events and function
// and pid lists, and ftctl's journals.
func controlState(t *testing.T) string {
	t.Helper()
	skip := regexp.MustCompile(`^(trace|trace_pipe|trace_marker.*|snapshot|free_buffer|saved_cmdlines.*|saved_tgids|` +
		`available_filter_functions.*|enabled_functions|touched_functions|dyn_ftrace_total_info|printk_formats|` +
		`per_cpu|instances|events|options|hwlat_detector|osnoise|rv|buffer_total_size_kb|error_log|timestamp_mode|` +
		`stack_trace|stack_max_size|function_profile_enabled|trace_stat|.*_stats?|[ku]probe_profile)$`)
	var b strings.Builder
	dump := func(dir, prefix string, names []string) {
		sort.Strings(names)
		for _, n := range names {
			if skip.MatchString(n) {
				continue
			}
			st, err := os.Stat(filepath.Join(dir, n))
			if err != nil || !st.Mode().IsRegular() {
				continue
			}
			if c, err := os.ReadFile(filepath.Join(dir, n)); err == nil {
				b.WriteString("== " + prefix + n + "\n" + string(c))
			}
		}
	}
	list := func(dir string) []string {
		ents, _ := os.ReadDir(dir)
		var out []string
		for _, e := range ents {
			out = append(out, e.Name())
		}
		return out
	}
	dump(tracing, "", list(tracing))
	dump(filepath.Join(tracing, "options"), "options/", list(filepath.Join(tracing, "options")))
	names := instanceNames(t)
	sort.Strings(names)
	for _, n := range names {
		dir := filepath.Join(tracing, "instances", n)
		dump(dir, "instances/"+n+"/", []string{"current_tracer", "tracing_on", "set_event", "set_ftrace_filter", "set_ftrace_notrace", "set_event_pid", "set_ftrace_pid", "buffer_size_kb", "trace_clock"})
	}
	b.WriteString("== /run/ftctl\n" + strings.Join(list("/run/ftctl"), "\n") + "\n")
	return b.String()
}

// The names a session gives (instance ftctl-PID-NONCE, group ftctl_PID_NONCE), ftctl's own
// thread ids, the padding and notes of a dry run's token lines: what differs between two runs
// of the same set-up.
var (
	planNames  = regexp.MustCompile(`ftctl([-_])[0-9]+[-_][0-9a-f]+`)
	planTIDs   = regexp.MustCompile(`common_pid != [0-9]+( && common_pid != [0-9]+)*`)
	planNotPID = regexp.MustCompile(`(set_(ftrace|event)_notrace_pid) ".*"$`)
	planNote   = regexp.MustCompile(`\s+# .*$`)
)

// planLines turns a dry run's stdout ("dry-run: " lines) or a run's --show-writes stderr ("+ "
// lines) into one comparable list.
func planLines(out, prefix string) []string {
	var lines []string
	for _, l := range strings.Split(out, "\n") {
		l, ok := strings.CutPrefix(l, prefix)
		if !ok {
			continue
		}
		l = planNames.ReplaceAllString(l, "ftctl${1}ID")
		l = planTIDs.ReplaceAllString(l, "common_pid != TIDS")
		l = planNotPID.ReplaceAllString(l, `$1 "TIDS"`)
		l = planNote.ReplaceAllString(l, "")
		lines = append(lines, strings.TrimRight(l, " "))
	}
	return lines
}

// Every command that sets a session up takes --dry-run (issue 27): it prints the set-up's writes
// in order and changes nothing, and what it prints is what the run then writes (--show-writes),
// before it turns tracing on.
func TestSessionDryRunIsTheRun(t *testing.T) {
	// another instance (which says what tracers instances offer a new one) and another's probe;
	// not a top-level filter, which would keep graph from the top level where 6.1 runs it
	otherProbe(t)
	if err := os.Mkdir(filepath.Join(tracing, "instances", "dryworld"), 0o755); err != nil && !os.IsExist(err) {
		t.Fatal(err)
	}
	removeInstanceLater(t, "dryworld")
	dat := filepath.Join(t.TempDir(), "x.dat")
	ft := topFS(t).DetectFeatures()
	// what an earlier test left (a session killed on a timeout) is not this test's before
	if r := ftctlRun(t, "reset"); r.code != 0 {
		t.Fatalf("reset: %v", r)
	}
	cases := [][]string{
		{"trace", "-f", "vfs_read", "-n", "vfs_write", "-e", "sched:sched_switch", "--filter", "prev_pid != 0", "-O", "sym-offset", "--clock", "global"},
		{"trace", "-p", "p:open do_sys_openat2", "-e", "sched:sched_process_exit"},
		{"record", "-f", "vfs_read", "-w", dat},
		{"graph", "-f", "vfs_read", "--depth", "3"},
		{"count", "vfs_read", "vfs_write", "--method", "stream"},
	}
	if ft.HistTriggers {
		cases = append(cases, []string{"hist", "sched:sched_switch", "--key", "prev_pid"},
			[]string{"count", "vfs_read", "--method", "hist"})
	}
	if ft.HistTriggers && ft.SyntheticEvents {
		cases = append(cases, []string{"latency", "vfs_read"})
	}
	for _, args := range cases {
		t.Run(strings.Join(args[:2], " "), func(t *testing.T) {
			if args[0] == "latency" {
				// the first latency of a boot measures the probes' cost in a session of its own
				// first; the dry run plans with the cost kept, once measured (the case above)
				if r := ftctlRunFor(t, 5*time.Minute, nil, "latency", "vfs_read", "--duration", "1s"); r.code != 0 {
					t.Fatalf("latency, measuring the probes' cost: %v", r)
				}
			}
			before := controlState(t)
			dry := ftctlRun(t, append([]string{"--dry-run"}, args...)...)
			if dry.code != 0 || !strings.Contains(dry.stderr, "dry run: nothing was changed") {
				t.Fatalf("dry run: %v", dry)
			}
			if after := controlState(t); after != before {
				t.Fatalf("the dry run changed the kernel's state:\n%s", lineDiff(before, after))
			}
			if _, err := os.Stat(dat); err == nil {
				t.Fatalf("the dry run made %s", dat)
			}
			plan := planLines(dry.stdout, "dry-run: ")
			t.Logf("the plan:\n%s", strings.Join(plan, "\n"))
			if len(plan) < 3 || !strings.HasPrefix(plan[0], "mkdir "+tracing+"/instances/ftctl-ID") {
				t.Fatalf("no plan: %q", dry.stdout)
			}
			run := ftctlRunFor(t, 5*time.Minute, nil, append([]string{"--show-writes"}, append(args, "--duration", "1s")...)...)
			if run.code != 0 {
				t.Fatalf("the run: %v", run)
			}
			os.Remove(dat)
			made := planLines(run.stderr, "+ ")
			if len(made) < len(plan) || strings.Join(made[:len(plan)], "\n") != strings.Join(plan, "\n") {
				t.Errorf("the plan is not what the run wrote first:\nplan:\n%s\nrun:\n%s", strings.Join(plan, "\n"), strings.Join(made, "\n"))
			}
		})
	}
}

// lineDiff lists the lines of b not in a and of a not in b.
func lineDiff(a, b string) string {
	in := func(s string) map[string]bool {
		m := map[string]bool{}
		for _, l := range strings.Split(s, "\n") {
			m[l] = true
		}
		return m
	}
	ina, inb := in(a), in(b)
	var out []string
	for _, l := range strings.Split(a, "\n") {
		if !inb[l] {
			out = append(out, "- "+l)
		}
	}
	for _, l := range strings.Split(b, "\n") {
		if !ina[l] {
			out = append(out, "+ "+l)
		}
	}
	return strings.Join(out, "\n")
}

// A SIGKILL at any step of a session's set-up or run leaves what `ftctl reset` takes back to
// the state before, byte for byte (issue 27). The steps are the run's own writes: each run
// prints them as it makes them (--show-writes), and is killed once it has printed the k-th, for
// twelve k spread over a whole run's set-up and teardown (the kill lands after that write,
// before or during a later one), on the commands that set up the most pieces: latency (probes, a
// synthetic event, three triggers with variables, which hold a reference on their instance)
// and trace (a probe, the filter swap, events). graph's kill is TestGraphKilledThenReset's: a
// whole graph run switches function_graph on and off, more than a minute under TCG on a
// loaded host.
func TestSessionSIGKILLSoak(t *testing.T) {
	otherProbe(t)
	if err := os.Mkdir(filepath.Join(tracing, "instances", "soakworld"), 0o755); err != nil && !os.IsExist(err) {
		t.Fatal(err)
	}
	removeInstanceLater(t, "soakworld")
	ft := topFS(t).DetectFeatures()
	cases := [][]string{
		{"trace", "-f", "vfs_*", "-p", "p:open do_sys_openat2", "-e", "sched:sched_switch"},
	}
	if ft.HistTriggers && ft.SyntheticEvents {
		cases = append(cases, []string{"latency", "vfs_read"})
	}
	if r := ftctlRun(t, "reset"); r.code != 0 { // an earlier test's leftovers are not this one's before
		t.Fatalf("reset: %v", r)
	}
	for _, args := range cases {
		t.Run(args[0], func(t *testing.T) {
			args := append([]string{"--show-writes"}, append(args, "--duration", "1ms")...)
			whole := ftctlRun(t, args...)
			if whole.code != 0 {
				t.Fatalf("a whole run: %v", whole)
			}
			// after a whole run: the first instance or tracer of a boot expands the ring
			// buffers for good (6.1's buffer_size_kb reads "7 (expanded: 1408)" until then,
			// "1410" after), which no teardown undoes
			before := controlState(t)
			steps := len(planLines(whole.stderr, "+ "))
			if steps < 5 {
				t.Fatalf("a whole run made %d writes:\n%s", steps, whole.stderr)
			}
			// at most 12 kills a command, spread over the steps (a filter swap's tokens are
			// steps too: trace's vfs_* makes about a hundred)
			ks := map[int]bool{}
			for i := 0; i < 12; i++ {
				ks[1+i*(steps-2)/11] = true
			}
			for k := 1; k < steps; k++ {
				if !ks[k] {
					continue
				}
				last := killAfterWrite(t, k, args...)
				left := controlState(t) != before
				r := ftctlRun(t, "reset")
				if r.code != 0 {
					t.Errorf("killed after write %d of %d: reset: %v", k, steps, r)
				}
				if after := controlState(t); after != before {
					t.Fatalf("killed after write %d of %d (%s), then reset: the state is not the one before:\n%s\nreset: %v", k, steps, last, lineDiff(before, after), r)
				}
				what := map[bool]string{true: "left pieces, which reset removed", false: "nothing left"}[left]
				t.Logf("killed after write %d of %d (%s): %s", k, steps, planNames.ReplaceAllString(last, "ftctl${1}ID"), what)
			}
		})
	}
}

// killAfterWrite runs ftctl with args (which include --show-writes) and SIGKILLs it once it
// has said it made its k-th write; it returns that write.
func killAfterWrite(t *testing.T, k int, args ...string) (last string) {
	t.Helper()
	c := ftctlCommand(t, args...)
	stderr, _ := c.StderrPipe()
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	sc, seen := bufio.NewScanner(stderr), 0
	for seen < k && sc.Scan() {
		if l, ok := strings.CutPrefix(sc.Text(), "+ "); ok {
			seen, last = seen+1, l
		}
	}
	c.Process.Signal(syscall.SIGKILL)
	io.Copy(io.Discard, stderr)
	c.Wait()
	return last
}

// A declared owner (issue 27) keeps tracing with no process: latency's set-up (probes, a
// synthetic event, triggers with variables, which hold a reference on their instance) declared
// as an owner records the workload's calls after the declaring call returned; `ftctl reset`
// keeps it and names it (text and JSON); `ftctl reset --all` removes it from its declaration,
// naming it; nothing of it is left.
func TestDeclaredOwnerKeptByReset(t *testing.T) {
	fs := topFS(t)
	ft := fs.DetectFeatures()
	if !ft.HistTriggers || !ft.SyntheticEvents {
		t.Skip("no hist triggers or synthetic events on this kernel")
	}
	l := count.LatencySetup(session.OwnerID("vmrec"), "vfs_read", ft.Probe.Fprobe, 0, "")
	lock, err := fs.Lock(context.Background(), 10*time.Second, func(tracefs.Holder) {})
	if err != nil {
		t.Fatal(err)
	}
	o, err := session.Declare(fs, "vmrec", session.Spec{Dynamic: l.Dynamic, Triggers: l.Triggers})
	lock.Unlock()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { session.Undeclare(topFS(t), "vmrec") })
	for i := 0; i < 50; i++ {
		os.ReadFile("/proc/version")
	}
	hist := read(t, "instances/"+o.Instance+"/events/synthetic/"+l.Synthetic+"/hist")
	if !strings.Contains(hist, "Hits:") || strings.Contains(hist, "Hits: 0\n") {
		t.Errorf("the declared owner recorded nothing:\n%s", hist)
	}
	r := ftctlRun(t, "reset")
	if r.code != 0 || !strings.Contains(r.stdout, "kept declared owner vmrec: instance ftctl-owned-vmrec, applied") {
		t.Errorf("reset: %v", r)
	}
	if !slices.Contains(instanceNames(t), o.Instance) {
		t.Fatalf("reset removed the declared owner's instance")
	}
	r = ftctlRun(t, "reset", "-o", "json")
	var doc struct {
		Owners []session.Owner `json:"owners"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &doc); err != nil || r.code != 0 || len(doc.Owners) != 1 || doc.Owners[0].Name != "vmrec" || len(doc.Owners[0].Triggers) != 3 {
		t.Errorf("reset -o json: %v %+v %v", err, doc, r)
	}
	r = ftctlRun(t, "reset", "--all", "--yes")
	if r.code != 0 || !strings.Contains(r.stderr, "removed declared owner vmrec (instance ftctl-owned-vmrec, applied since") {
		t.Errorf("reset --all: %v", r)
	}
	if slices.Contains(instanceNames(t), o.Instance) || strings.Contains(read(t, "kprobe_events")+read(t, "dynamic_events"), "ftctl_owned_vmrec") {
		t.Errorf("reset --all left the owner's pieces: instances %v\n%s%s", instanceNames(t), read(t, "kprobe_events"), read(t, "dynamic_events"))
	}
	if owners, _ := session.Owners(topFS(t)); len(owners) != 0 {
		t.Errorf("declarations left: %+v", owners)
	}
}

// -O of an option the kernel keeps for every trace array at once (6.1: the function tracer's
// func_stack_trace, in one set of flags) changes the top level's too: the session puts it back
// at its end, so it does not go on adding stacks to every instance made later (seen: the
// guide's `trace -O func_stack_trace` example left it on, and the next test's recording held
// kernel stacks nobody asked for).
func TestSessionOptionsPutBack(t *testing.T) {
	if _, err := os.Stat(filepath.Join(tracing, "options", "func_stack_trace")); err != nil {
		t.Skip("no func_stack_trace option on this kernel")
	}
	before := read(t, "options/func_stack_trace")
	r := ftctlRun(t, "trace", "-f", "vfs_read", "-O", "func_stack_trace", "--duration", "1s")
	if r.code != 0 {
		t.Fatalf("%v", r)
	}
	if after := read(t, "options/func_stack_trace"); after != before {
		t.Errorf("the top level's func_stack_trace is %q after the session, %q before; stderr:\n%s", after, before, r.stderr)
	}
}
