//go:build vmtest

package vmtest

import (
	"encoding/json"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// profileFile writes a profile into the test's directory.
func profileFile(t *testing.T, name, text string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// vmprof is a profile touching each kind of object this kernel has: settings, function lists,
// events with filters, a probe with a filter, and (with hist triggers) a hist trigger on it.
func vmprof(t *testing.T, withTrigger bool) string {
	trig := ""
	if withTrigger {
		trig = `,
    "triggers": [{"event": "${group}:myread", "trigger": "hist:keys=common_pid"}]`
	}
	return `{
  "apiVersion": "ftctl.dev/v1alpha1",
  "kind": "TracingProfile",
  "metadata": {"name": "vmprof"},
  "spec": {
    "instance": {"bufferKB": 512, "clock": "mono", "options": {"sym-offset": true}},
    "functions": {"filter": ["vfs_read*"], "notrace": ["vfs_readv"]},
    "events": [
      {"name": "sched:sched_process_exit", "filter": "comm == \"sh\""},
      {"name": "sched:sched_process_fork"},
      {"name": "${group}:myread", "filter": "common_pid != 1"}
    ],
    "probes": ["p:myread vfs_read"]` + trig + `
  }
}
`
}

func hasHist(t *testing.T) bool {
	ft := topFS(t).DetectFeatures()
	return ft.HistTriggers
}

// A profile's life: planned, dry-run (nothing changed), applied, in sync, idempotent (a
// second apply writes nothing), drifted by hand (diff exit 1 naming what), repaired, kept by
// reset, exported and applied again from the export, deleted (the kernel as before).
func TestProfileLifecycle(t *testing.T) {
	file := profileFile(t, "vmprof.json", vmprof(t, hasHist(t)))
	t.Cleanup(func() { ftctlRun(t, "delete", "-f", file) })
	warmProfile(t, file)
	before := controlState(t)

	r := ftctlRun(t, "plan", "-f", file)
	if r.code != 0 || !strings.Contains(r.stdout, "profile vmprof: not applied") || !strings.Contains(r.stdout, "vfs_read*") {
		t.Fatalf("plan before apply: %v", r)
	}
	r = ftctlRun(t, "--dry-run", "apply", "-f", file)
	if r.code != 0 || !strings.Contains(r.stdout, "dry-run: mkdir "+tracing+"/instances/ftctl-owned-vmprof") {
		t.Fatalf("dry-run apply: %v", r)
	}
	if after := controlState(t); after != before {
		t.Fatalf("a dry-run apply changed the state:\n%s", lineDiff(before, after))
	}
	r = ftctlRun(t, "apply", "-f", file, "-o", "json")
	var res struct {
		Action  string `json:"action"`
		Changed bool   `json:"changed"`
	}
	if r.code != 0 || json.Unmarshal([]byte(r.stdout), &res) != nil || res.Action != "created" || !res.Changed {
		t.Fatalf("apply: %+v %v", res, r)
	}
	inst := "instances/ftctl-owned-vmprof/"
	if got := read(t, inst+"buffer_size_kb"); !strings.HasPrefix(got, "51") { // whole pages: 513 seen
		t.Errorf("buffer_size_kb %q", got)
	}
	if got := read(t, inst+"events/sched/sched_process_exit/filter"); strings.TrimSpace(got) != `comm == "sh"` {
		t.Errorf("event filter %q", got)
	}
	if got := read(t, inst+"events/ftctl_owned_vmprof/myread/enable"); !strings.HasPrefix(got, "1") { // 1* with a trigger
		t.Errorf("probe enable %q", got)
	}
	if r := ftctlRun(t, "diff", "-f", file); r.code != 0 || !strings.Contains(r.stdout, "in sync") {
		t.Fatalf("diff after apply: %v", r)
	}
	r = ftctlRun(t, "--show-writes", "apply", "-f", file, "-o", "json")
	if r.code != 0 || json.Unmarshal([]byte(r.stdout), &res) != nil || res.Action != "none" || res.Changed || strings.Contains(r.stderr, "+ write") {
		t.Fatalf("a second apply: %+v %v", res, r)
	}

	if r := ftctlRun(t, "--dry-run", "apply", "-f", file); r.code != 0 || strings.Contains(r.stdout, "dry-run:") {
		t.Fatalf("a dry run of an applied profile plans writes: %v", r)
	}

	// drift by hand: an event disabled, a function added to the filter, tracing off
	write(t, inst+"events/sched/sched_process_fork/enable", "0")
	write(t, inst+"set_ftrace_filter", "vfs_write\n")
	write(t, inst+"tracing_on", "0")
	r = ftctlRun(t, "diff", "-f", file)
	for _, want := range []string{"+ event sched:sched_process_fork", "~ function filter (set_ftrace_filter)", "      - vfs_write", "~ tracing (tracing_on): 0 -> 1"} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("diff after drift lacks %q", want)
		}
	}
	if r.code != 1 {
		t.Fatalf("diff after drift: %v", r)
	}
	r = ftctlRun(t, "apply", "-f", file, "-o", "json")
	if r.code != 0 || json.Unmarshal([]byte(r.stdout), &res) != nil || res.Action != "updated" {
		t.Fatalf("repair: %+v %v", res, r)
	}
	if r := ftctlRun(t, "diff", "-f", file); r.code != 0 {
		t.Fatalf("diff after repair: %v", r)
	}

	// reset keeps it
	if r := ftctlRun(t, "reset"); r.code != 0 || !slices.Contains(instanceNames(t), "ftctl-owned-vmprof") {
		t.Fatalf("reset: %v", r)
	}

	// export, delete, apply the export: in sync with it
	r = ftctlRun(t, "export", "-B", "ftctl-owned-vmprof")
	if r.code != 0 {
		t.Fatalf("export: %v", r)
	}
	exported := profileFile(t, "exported.yaml", r.stdout)
	if r := ftctlRun(t, "delete", "-f", file); r.code != 0 {
		t.Fatalf("delete: %v", r)
	}
	if after := controlState(t); after != before {
		t.Errorf("delete did not leave the state as before the apply:\n%s", lineDiff(before, after))
	}
	if r := ftctlRun(t, "apply", "-f", exported); r.code != 0 {
		t.Fatalf("apply of the export: %v\n%s", r, read(t, "error_log"))
	}
	if r := ftctlRun(t, "diff", "-f", exported); r.code != 0 {
		t.Errorf("diff of the applied export: %v\nexport:\n%s", r, readFile(t, exported))
	}
	if r := ftctlRun(t, "delete", "-f", exported); r.code != 0 {
		t.Fatalf("delete of the export: %v", r)
	}
	if after := controlState(t); after != before {
		t.Errorf("state after the round trip:\n%s", lineDiff(before, after))
	}
}

// warmProfile applies and deletes a profile once: the first instance of a boot expands the
// ring buffers for good (6.1's buffer_size_kb reads "7 (expanded: 1408)" until then), which no
// delete undoes, so a test's before is taken after it.
func warmProfile(t *testing.T, file string) {
	t.Helper()
	if r := ftctlRun(t, "apply", "-f", file); r.code != 0 {
		t.Fatalf("apply: %v", r)
	}
	if r := ftctlRun(t, "delete", "-f", file); r.code != 0 {
		t.Fatalf("delete: %v", r)
	}
}

func readFile(t *testing.T, path string) string {
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// A profile the kernel refuses at its last step (a hist trigger on a field the event lacks)
// is refused with exit 3, and the state is exactly as before; so is one asking for a feature
// the kernel lacks (exit 4) and a malformed one (exit 2).
func TestProfileRefusedWritesNothing(t *testing.T) {
	if !hasHist(t) {
		t.Skip("no hist triggers on this kernel")
	}
	warmProfile(t, profileFile(t, "vmprof.json", vmprof(t, false)))
	before := controlState(t)
	bad := strings.Replace(vmprof(t, true), "hist:keys=common_pid", "hist:keys=no_such_field", 1)
	file := profileFile(t, "bad.json", bad)
	t.Cleanup(func() { ftctlRun(t, "delete", "-f", file) })
	r := ftctlRun(t, "apply", "-f", file)
	if r.code != 3 {
		t.Errorf("apply of a profile the kernel refuses: %v", r)
	}
	if after := controlState(t); after != before {
		t.Errorf("a refused apply changed the state:\n%s", lineDiff(before, after))
	}
	ft := topFS(t).DetectFeatures()
	lacking := map[bool]string{true: "", false: "fprobes"}[ft.Probe.Fprobe]
	if lacking == "" && !ft.UprobeEvents {
		lacking = "uprobes"
	}
	if lacking != "" {
		needs := profileFile(t, "needs.json", strings.Replace(vmprof(t, false), `"spec": {`, `"spec": {"requires": ["`+lacking+`"],`, 1))
		if r := ftctlRun(t, "apply", "-f", needs); r.code != 4 || !strings.Contains(r.stderr, "lacks what the profile requires: "+lacking) {
			t.Errorf("apply of a profile requiring %s: %v", lacking, r)
		}
	}
	badOption := profileFile(t, "option.json", strings.Replace(vmprof(t, false), `"sym-offset": true`, `"nosuchoption": true`, 1))
	if r := ftctlRun(t, "apply", "-f", badOption); r.code != 2 || !strings.Contains(r.stderr, `spec.instance.options "nosuchoption=1": no such trace option`) {
		t.Errorf("apply of a profile with an option the kernel lacks: %v", r)
	}
	if r := ftctlRun(t, "trace", "-e", "sched:sched_switch", "-O", "nosuchoption", "--count", "1"); r.code != 2 || !strings.Contains(r.stderr, `-O "nosuchoption": no such trace option`) {
		t.Errorf("trace -O nosuchoption: %v", r)
	}
	unknown := profileFile(t, "unknown.json", strings.Replace(vmprof(t, false), `"bufferKB"`, `"bufferKiB"`, 1))
	if r := ftctlRun(t, "apply", "-f", unknown); r.code != 2 {
		t.Errorf("apply of a profile with an unknown field: %v", r)
	}
	if after := controlState(t); after != before {
		t.Errorf("a malformed profile changed the state:\n%s", lineDiff(before, after))
	}
}

// Apply and delete touch only what the profile owns: an instance and a probe of someone
// else's are left as they are.
func TestProfileOwnership(t *testing.T) {
	newInstance(t, "someoneelse")
	write(t, "kprobe_events", "p:theirs/theiropen do_sys_openat2\n")
	removeProbeLater(t, "theirs", "theiropen")
	write(t, "instances/someoneelse/events/sched/sched_process_fork/enable", "1")
	file := profileFile(t, "vmprof.json", vmprof(t, false))
	warmProfile(t, file)
	before := controlState(t)
	if r := ftctlRun(t, "apply", "-f", file); r.code != 0 {
		t.Fatalf("apply: %v", r)
	}
	if r := ftctlRun(t, "delete", "-f", file); r.code != 0 {
		t.Fatalf("delete: %v", r)
	}
	if after := controlState(t); after != before {
		t.Errorf("apply and delete changed what is not the profile's:\n%s", lineDiff(before, after))
	}
	if !strings.Contains(read(t, "kprobe_events"), "theirs/theiropen") {
		t.Errorf("another owner's probe is gone")
	}
}

// A changed definition (a probe added) sets the owner up again: plan says so, apply says
// "recreated", and the kernel then holds the new profile.
func TestProfileRecreate(t *testing.T) {
	file := profileFile(t, "vmprof.json", vmprof(t, false))
	t.Cleanup(func() { ftctlRun(t, "delete", "-f", file) })
	warmProfile(t, file)
	before := controlState(t)
	if r := ftctlRun(t, "apply", "-f", file); r.code != 0 {
		t.Fatalf("apply: %v", r)
	}
	changed := profileFile(t, "changed.json", strings.Replace(vmprof(t, false), `"probes": ["p:myread vfs_read"]`, `"probes": ["p:myread vfs_read", "r:myret vfs_read"]`, 1))
	r := ftctlRun(t, "plan", "-f", changed)
	if r.code != 0 || !strings.Contains(r.stdout, "apply sets the owner up again") {
		t.Fatalf("plan of a changed definition: %v", r)
	}
	r = ftctlRun(t, "apply", "-f", changed, "-o", "json")
	if r.code != 0 || !strings.Contains(r.stdout, `"action": "recreated"`) {
		t.Fatalf("apply of a changed definition: %v", r)
	}
	if r := ftctlRun(t, "diff", "-f", changed); r.code != 0 {
		t.Errorf("diff after recreate: %v", r)
	}
	if !strings.Contains(read(t, "kprobe_events"), "ftctl_owned_vmprof/myret") {
		t.Errorf("the new probe is not there:\n%s", read(t, "kprobe_events"))
	}
	if r := ftctlRun(t, "delete", "-f", changed); r.code != 0 {
		t.Fatalf("delete: %v", r)
	}
	if after := controlState(t); after != before {
		t.Errorf("state after delete:\n%s", lineDiff(before, after))
	}
}

// SIGKILL anywhere in an apply: a later delete leaves the state as before the apply, a later
// apply the state of a whole apply; never an empty function filter under the function tracer.
func TestProfileSIGKILLSoak(t *testing.T) {
	if r := ftctlRun(t, "reset"); r.code != 0 {
		t.Fatalf("reset: %v", r)
	}
	text := vmprof(t, hasHist(t))
	if ft := topFS(t).DetectFeatures(); ft.HistTriggers && ft.SyntheticEvents {
		// every kind of object: a synthetic event fed by an onmatch() trigger, enabled with
		// a filter (as the slowreads runbook has it)
		text = strings.Replace(text, `"probes": ["p:myread vfs_read"],`, `"probes": ["p:myread vfs_read", "r:myret vfs_read"],
    "synthetic": [{"name": "lat", "fields": "u64 lat"}],`, 1)
		text = strings.Replace(text, `{"name": "sched:sched_process_fork"},`, `{"name": "sched:sched_process_fork"},
      {"name": "synthetic:${group}_lat", "filter": "lat > 1000"},`, 1)
		text = strings.Replace(text, `"triggers": [{"event": "${group}:myread", "trigger": "hist:keys=common_pid"}]`,
			`"triggers": [{"event": "${group}:myread", "trigger": "hist:keys=common_pid:ts0=common_timestamp.usecs"},
      {"event": "${group}:myret", "trigger": "hist:keys=common_pid:lat=common_timestamp.usecs-$ts0:onmatch(${group}.myread).trace(${group}_lat,$lat)"},
      {"event": "synthetic:${group}_lat", "trigger": "hist:keys=lat.log2"}]`, 1)
		if !strings.Contains(text, `${group}_lat,$lat`) || !strings.Contains(text, `"synthetic": [`) {
			t.Fatalf("the soak's profile was not made:\n%s", text)
		}
	}
	file := profileFile(t, "vmprof.json", text)
	t.Cleanup(func() { ftctlRun(t, "delete", "-f", file) })
	warmProfile(t, file)
	before := controlState(t)
	whole := ftctlRun(t, "--show-writes", "apply", "-f", file)
	if whole.code != 0 {
		t.Fatalf("apply: %v", whole)
	}
	applied := controlState(t)
	if r := ftctlRun(t, "delete", "-f", file); r.code != 0 {
		t.Fatalf("delete: %v", r)
	}
	steps := len(planLines(whole.stderr, "+ "))
	if steps < 8 {
		t.Fatalf("a whole apply made %d writes:\n%s", steps, whole.stderr)
	}
	inst := filepath.Join(tracing, "instances", "ftctl-owned-vmprof")
	for i := 0; i < 10; i++ {
		k := 1 + i*(steps-2)/9
		last := killAfterWrite(t, k, "--show-writes", "apply", "-f", file)
		tracer, _ := os.ReadFile(filepath.Join(inst, "current_tracer"))
		filter, _ := os.ReadFile(filepath.Join(inst, "set_ftrace_filter"))
		if strings.TrimSpace(string(tracer)) == "function" && strings.Contains(string(filter), "all functions enabled") {
			t.Errorf("killed after write %d of %d (%s): the function tracer runs with an empty filter", k, steps, last)
		}
		if i%2 == 0 {
			if r := ftctlRun(t, "delete", "-f", file); r.code != 0 {
				t.Fatalf("killed after write %d: delete: %v", k, r)
			}
			if after := controlState(t); after != before {
				t.Fatalf("killed after write %d of %d (%s), then delete: not the state before:\n%s", k, steps, last, lineDiff(before, after))
			}
			continue
		}
		if r := ftctlRun(t, "apply", "-f", file); r.code != 0 {
			t.Fatalf("killed after write %d: apply: %v", k, r)
		}
		if after := controlState(t); after != applied {
			t.Fatalf("killed after write %d of %d (%s), then apply: not the applied state:\n%s", k, steps, last, lineDiff(applied, after))
		}
		if r := ftctlRun(t, "delete", "-f", file); r.code != 0 {
			t.Fatalf("delete: %v", r)
		}
	}
}

// The guide's runbook profiles (docs/profiles/*.yaml) do what they say on both kernels: each
// is valid, applies, is in sync, records its incident's events under a workload that makes
// them, and is deleted without a trace.
func TestProfileRunbooks(t *testing.T) {
	files, _ := filepath.Glob("/etc/ftctl-profiles/*.yaml")
	if len(files) != 3 {
		t.Fatalf("runbook profiles in the VM: %v", files)
	}
	warmProfile(t, profileFile(t, "vmprof.json", vmprof(t, false)))
	for _, file := range files {
		name := strings.TrimSuffix(filepath.Base(file), ".yaml")
		t.Run(name, func(t *testing.T) {
			before := controlState(t)
			t.Cleanup(func() { ftctlRun(t, "delete", "-f", file) })
			if r := ftctlRun(t, "profile", "validate", "-f", file); r.code != 0 {
				t.Fatalf("validate: %v", r)
			}
			if r := ftctlRun(t, "apply", "-f", file); r.code != 0 {
				t.Fatalf("apply: %v\n%s", r, read(t, "error_log"))
			}
			if r := ftctlRun(t, "diff", "-f", file); r.code != 0 {
				t.Fatalf("diff after apply: %v", r)
			}
			inst := "instances/ftctl-owned-" + name + "/"
			var got, want string
			switch name {
			case "slowreads":
				for i := 0; i < 200; i++ {
					os.ReadFile("/proc/version")
				}
				got, want = read(t, inst+"events/synthetic/ftctl_owned_slowreads_lat/hist"), "lat: ~ 2^"
			case "tcpreset":
				tcpReset(t)
				got, want = read(t, inst+"trace"), "tcp_send_reset:"
				if h := read(t, inst+"events/tcp/tcp_send_reset/hist"); !strings.Contains(h, "hitcount:") {
					t.Errorf("no count per state:\n%s", h)
				}
			case "procdeath":
				c := exec.Command("/bin/sh", "-c", "kill -9 $$")
				c.Run()
				got, want = read(t, inst+"trace"), "sig=9"
			}
			if !strings.Contains(got, want) {
				t.Errorf("%s recorded no %q:\n%s", name, want, got)
			}
			if r := ftctlRun(t, "delete", "-f", file); r.code != 0 {
				t.Fatalf("delete: %v", r)
			}
			if after := controlState(t); after != before {
				t.Errorf("state after delete:\n%s", lineDiff(before, after))
			}
		})
	}
}

// tcpReset makes the kernel send a TCP reset on the loopback: a connection closed with
// SO_LINGER 0.
func tcpReset(t *testing.T) {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	c, err := net.Dial("tcp", l.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	s, err := l.Accept()
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	c.(*net.TCPConn).SetLinger(0)
	c.Close()
	time.Sleep(100 * time.Millisecond)
}

// apply --check: what apply would do, nothing written; exit 0 in sync, 1 when it would change
// something, with "changed" saying the same (config management's check mode).
func TestProfileApplyCheck(t *testing.T) {
	file := profileFile(t, "vmprof.json", vmprof(t, false))
	t.Cleanup(func() { ftctlRun(t, "delete", "-f", file) })
	warmProfile(t, file)
	before := controlState(t)
	r := ftctlRun(t, "apply", "-f", file, "--check", "-o", "json")
	if r.code != 1 || !strings.Contains(r.stdout, `"changed": true`) || !strings.Contains(r.stdout, `"action": "created"`) {
		t.Errorf("--check before apply: %v", r)
	}
	if after := controlState(t); after != before {
		t.Fatalf("--check changed the state:\n%s", lineDiff(before, after))
	}
	if r := ftctlRun(t, "apply", "-f", file); r.code != 0 {
		t.Fatalf("apply: %v", r)
	}
	if r := ftctlRun(t, "apply", "-f", file, "--check", "-o", "json"); r.code != 0 || !strings.Contains(r.stdout, `"changed": false`) {
		t.Errorf("--check after apply: %v", r)
	}
	write(t, "instances/ftctl-owned-vmprof/tracing_on", "0")
	if r := ftctlRun(t, "apply", "-f", file, "--check"); r.code != 1 || !strings.Contains(r.stdout, "~ tracing (tracing_on): 0 -> 1") {
		t.Errorf("--check after a drift: %v", r)
	}
	if got := read(t, "instances/ftctl-owned-vmprof/tracing_on"); strings.TrimSpace(got) != "0" {
		t.Errorf("--check repaired the drift")
	}
}

// A hist trigger's sort= as written (hitcount.descending, a key's .descending, a key with a
// modifier) survives export: export → delete → apply of the export gives the kernel the same
// triggers, and diff is 0.
func TestProfileExportHistSort(t *testing.T) {
	if !hasHist(t) {
		t.Skip("no hist triggers on this kernel")
	}
	file := profileFile(t, "sort.json", `{
  "apiVersion": "ftctl.dev/v1alpha1", "kind": "TracingProfile", "metadata": {"name": "histsort"},
  "spec": {
    "triggers": [
      {"event": "sched:sched_process_fork", "trigger": "hist:keys=common_pid:vals=hitcount:sort=hitcount.descending"},
      {"event": "sched:sched_process_exit", "trigger": "hist:keys=prio.log2,common_pid:vals=hitcount:sort=prio.descending,hitcount.descending"},
      {"event": "sched:sched_process_exec", "trigger": "hist:keys=pid:vals=hitcount:sort=pid.descending:size=256"},
      {"event": "sched:sched_process_free", "trigger": "hist:keys=pid.buckets=1000,common_pid.execname:sort=pid.descending,common_pid"}
    ]
  }
}
`)
	t.Cleanup(func() { ftctlRun(t, "delete", "-f", file) })
	if r := ftctlRun(t, "apply", "-f", file); r.code != 0 {
		t.Fatalf("apply: %v\n%s", r, read(t, "error_log"))
	}
	inst := "instances/ftctl-owned-histsort/events/sched/"
	listings := func() string {
		var b strings.Builder
		for _, ev := range []string{"sched_process_fork", "sched_process_exit", "sched_process_exec", "sched_process_free"} {
			b.WriteString(read(t, inst+ev+"/trigger"))
		}
		return b.String()
	}
	want := listings()
	if strings.Count(want, "descending") != 5 {
		t.Fatalf("the kernel's listing of the triggers:\n%s", want)
	}
	r := ftctlRun(t, "export", "-B", "ftctl-owned-histsort")
	if r.code != 0 {
		t.Fatalf("export: %v", r)
	}
	exported := profileFile(t, "exported.yaml", r.stdout)
	if r := ftctlRun(t, "delete", "-f", file); r.code != 0 {
		t.Fatalf("delete: %v", r)
	}
	if r := ftctlRun(t, "apply", "-f", exported); r.code != 0 {
		t.Fatalf("apply of the export: %v\n%s\nexport:\n%s", r, read(t, "error_log"), readFile(t, exported))
	}
	if got := listings(); got != want {
		t.Errorf("the export's triggers are not the profile's:\nwant:\n%s\ngot:\n%s\nexport:\n%s", want, got, readFile(t, exported))
	}
	if r := ftctlRun(t, "diff", "-f", exported); r.code != 0 {
		t.Errorf("diff of the applied export: %v", r)
	}
	if r := ftctlRun(t, "delete", "-f", exported); r.code != 0 {
		t.Fatalf("delete of the export: %v", r)
	}
}

// planGlobs runs plan -o json: whether it is in sync, and what the globs were resolved against.
func planGlobs(t *testing.T, file string) (inSync bool, from string) {
	t.Helper()
	r := ftctlRun(t, "plan", "-f", file, "-o", "json")
	var doc struct {
		InSync    bool   `json:"in_sync"`
		GlobsFrom string `json:"globsFrom"`
		Patterns  []struct {
			Pattern   string `json:"pattern"`
			Functions int    `json:"functions"`
		} `json:"patterns"`
	}
	if r.code != 0 || json.Unmarshal([]byte(r.stdout), &doc) != nil {
		t.Fatalf("plan: %v", r)
	}
	if !slices.ContainsFunc(doc.Patterns, func(p struct {
		Pattern   string `json:"pattern"`
		Functions int    `json:"functions"`
	}) bool {
		return p.Pattern == "vfs_read*" && p.Functions > 0
	}) {
		t.Errorf("plan does not show the glob with what it selects: %s", r.stdout)
	}
	return doc.InSync, doc.GlobsFrom
}

// editDeclaration rewrites a field of the resolution the profile's declaration keeps.
func editDeclaration(t *testing.T, name, field string, value any) {
	t.Helper()
	path := "/run/ftctl/owners/" + name + ".json"
	var o map[string]any
	if err := json.Unmarshal([]byte(readFile(t, path)), &o); err != nil {
		t.Fatal(err)
	}
	d, ok := o["derived"].(map[string]any)
	if !ok {
		t.Fatalf("the declaration keeps no resolution: %s", readFile(t, path))
	}
	d[field] = value
	b, _ := json.Marshal(o)
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
}

// An applied profile's globs are not resolved against available_filter_functions again while
// the declaration's resolution holds (the same function records: the fingerprint; the same
// lists in the kernel: their digests); any difference is resolved afresh, so that a drift is
// shown as the index says, a resolution the fingerprint no longer vouches for is not used,
// and one whose lists the kernel does not hold is never taken for in sync.
func TestProfileKeptGlobs(t *testing.T) {
	file := profileFile(t, "vmprof.json", vmprof(t, false))
	t.Cleanup(func() { ftctlRun(t, "delete", "-f", file) })
	if r := ftctlRun(t, "apply", "-f", file); r.code != 0 {
		t.Fatalf("apply: %v", r)
	}
	if in, from := planGlobs(t, file); !in || from != "declaration" {
		t.Fatalf("plan after apply: in sync %v, globs from %q", in, from)
	}
	inst := "instances/ftctl-owned-vmprof/"
	write(t, inst+"set_ftrace_filter", "vfs_write\n")
	if r := ftctlRun(t, "diff", "-f", file); r.code != 1 || !strings.Contains(r.stdout, "      - vfs_write") {
		t.Errorf("diff after a function was added: %v", r)
	}
	if in, from := planGlobs(t, file); in || from != "index" {
		t.Errorf("plan after a drift: in sync %v, globs from %q", in, from)
	}
	if r := ftctlRun(t, "apply", "-f", file); r.code != 0 {
		t.Fatalf("repair: %v", r)
	}
	if in, from := planGlobs(t, file); !in || from != "declaration" {
		t.Errorf("plan after the repair: in sync %v, globs from %q", in, from)
	}

	// a resolution made against other function records (a module loaded or gone since)
	editDeclaration(t, "vmprof", "fingerprint", "boot 00000000-0000-0000-0000-000000000000\n")
	if in, from := planGlobs(t, file); !in || from != "index" {
		t.Errorf("plan with another fingerprint: in sync %v, globs from %q", in, from)
	}
	// a no-op apply keeps the fresh resolution (and writes nothing to the kernel)
	if r := ftctlRun(t, "--show-writes", "apply", "-f", file); r.code != 0 || strings.Contains(r.stderr, "+ write") {
		t.Errorf("no-op apply: %v", r)
	}
	if in, from := planGlobs(t, file); !in || from != "declaration" {
		t.Errorf("plan after the no-op apply: in sync %v, globs from %q", in, from)
	}

	// a resolution whose lists the kernel does not hold is not taken for in sync: the globs
	// are resolved afresh, and the kernel is in sync with those
	editDeclaration(t, "vmprof", "filterSum", strings.Repeat("0", 64))
	if r := ftctlRun(t, "diff", "-f", file); r.code != 0 {
		t.Errorf("diff with a wrong digest kept: %v", r)
	}
	if in, from := planGlobs(t, file); !in || from != "index" {
		t.Errorf("plan with a wrong digest kept: in sync %v, globs from %q", in, from)
	}

	// other globs: resolved now, and shown
	other := profileFile(t, "other.json", strings.Replace(vmprof(t, false), `"filter": ["vfs_read*"]`, `"filter": ["vfs_read*", "vfs_write"]`, 1))
	r := ftctlRun(t, "diff", "-f", other)
	if r.code != 1 || !strings.Contains(r.stdout, "      + vfs_write") {
		t.Errorf("diff of a profile with another glob: %v", r)
	}
}

// What a profile does not own it changes only where it says so: another owner's probe
// enabled in its instance or named by its trigger is refused (exit 2, nothing written)
// unless spec.uses names it, and then plan shows it; an option the kernel keeps for every
// trace array at once (func_stack_trace, on 6.1 and 6.12) is refused (exit 4) rather than changing the
// top level's, on a first apply and on an update, the state as before.
func TestProfileOwnershipExplicit(t *testing.T) {
	write(t, "kprobe_events", "p:theirs/theiropen do_sys_openat2\n")
	removeProbeLater(t, "theirs", "theiropen")
	warmProfile(t, profileFile(t, "vmprof.json", vmprof(t, false)))
	before := controlState(t)
	uses := strings.Replace(vmprof(t, false), `{"name": "sched:sched_process_fork"},`, `{"name": "sched:sched_process_fork"},
      {"name": "theirs:theiropen"},`, 1)
	refused := profileFile(t, "refused.json", uses)
	t.Cleanup(func() { ftctlRun(t, "delete", "-f", refused) })
	for _, cmd := range []string{"plan", "apply"} {
		r := ftctlRun(t, cmd, "-f", refused)
		if r.code != 2 || !strings.Contains(r.stderr, `spec.events[2].name: "theirs:theiropen" is another owner's probe (p)`) {
			t.Errorf("%s of a profile using another owner's probe unnamed: %v", cmd, r)
		}
	}
	if after := controlState(t); after != before {
		t.Fatalf("a refused profile changed the state:\n%s", lineDiff(before, after))
	}
	named := profileFile(t, "named.json", strings.Replace(uses, `"spec": {`, `"spec": {"uses": ["theirs:theiropen"],`, 1))
	if r := ftctlRun(t, "plan", "-f", named); r.code != 0 || !strings.Contains(r.stdout, "= uses theirs:theiropen, not the profile's: another owner's probe (p)") {
		t.Errorf("plan of a profile naming what it uses: %v", r)
	}
	if r := ftctlRun(t, "apply", "-f", named); r.code != 0 {
		t.Fatalf("apply: %v", r)
	}
	if got := read(t, "instances/ftctl-owned-vmprof/events/theirs/theiropen/enable"); !strings.HasPrefix(got, "1") {
		t.Errorf("the probe it uses is not enabled in its instance: %q", got)
	}
	if r := ftctlRun(t, "diff", "-f", named); r.code != 0 || !strings.Contains(r.stdout, "= uses theirs:theiropen") {
		t.Errorf("diff: %v", r)
	}
	if r := ftctlRun(t, "delete", "-f", named); r.code != 0 {
		t.Fatalf("delete: %v", r)
	}
	if after := controlState(t); after != before {
		t.Errorf("delete did not leave the state as before:\n%s", lineDiff(before, after))
	}

	// func_stack_trace: where the kernel keeps it for every trace array, never set
	topOption := func() string { return strings.TrimSpace(read(t, "options/func_stack_trace")) }
	top := topOption()
	stack := profileFile(t, "stack.json", strings.Replace(vmprof(t, false), `"sym-offset": true`, `"sym-offset": true, "func_stack_trace": true`, 1))
	t.Cleanup(func() { ftctlRun(t, "delete", "-f", stack) })
	r := ftctlRun(t, "apply", "-f", stack)
	if topOption() != top {
		t.Fatalf("apply changed the top level's func_stack_trace (%s -> %s): %v", top, topOption(), r)
	}
	shared := r.code == 4
	t.Logf("func_stack_trace kept for every trace array at once: %v", shared)
	switch {
	case shared && strings.Contains(r.stderr, "keeps the option func_stack_trace for every trace array at once"):
		if after := controlState(t); after != before {
			t.Fatalf("a refused apply changed the state:\n%s", lineDiff(before, after))
		}
	case r.code == 0:
		if r := ftctlRun(t, "delete", "-f", stack); r.code != 0 {
			t.Fatalf("delete: %v", r)
		}
	default:
		t.Fatalf("apply with func_stack_trace: %v", r)
	}
	// the same as an update of an applied profile
	plain := profileFile(t, "plain.json", vmprof(t, false))
	if r := ftctlRun(t, "apply", "-f", plain); r.code != 0 {
		t.Fatalf("apply: %v", r)
	}
	applied := controlState(t)
	r = ftctlRun(t, "apply", "-f", stack)
	if topOption() != top {
		t.Fatalf("an update changed the top level's func_stack_trace (%s -> %s): %v", top, topOption(), r)
	}
	if shared {
		if r.code != 4 || !strings.Contains(r.stderr, "state before the apply was restored") {
			t.Errorf("update with func_stack_trace: %v", r)
		}
		if after := controlState(t); after != applied {
			t.Errorf("a refused update changed the state:\n%s", lineDiff(applied, after))
		}
	} else if r.code != 0 {
		t.Errorf("update with func_stack_trace: %v", r)
	}
	if r := ftctlRun(t, "delete", "-f", plain); r.code != 0 {
		t.Fatalf("delete: %v", r)
	}
}
