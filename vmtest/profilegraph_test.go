//go:build vmtest

package vmtest

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// graphProf is a profile with a graph (roots, notrace, depth), claiming the top level when
// claim, with an event in its instance and, when trigger is given, a hist trigger.
func graphProf(name string, claim bool, trigger string) string {
	top := ""
	if claim {
		top = `,
    "topLevel": {"claim": true}`
	}
	trig := ""
	if trigger != "" {
		trig = `,
    "triggers": [{"event": "sched:sched_process_exit", "trigger": "` + trigger + `"}]`
	}
	return `{
  "apiVersion": "ftctl.dev/v1alpha1",
  "kind": "TracingProfile",
  "metadata": {"name": "` + name + `"},
  "spec": {
    "graph": {"roots": ["vfs_read*"], "notrace": ["vfs_readv"], "depth": 3}` + top + `,
    "events": [{"name": "sched:sched_process_exit"}]` + trig + `
  }
}
`
}

// instancesRunGraph says whether this kernel's instances run function_graph (6.12's do,
// 6.1's offer "function nop"), from a new instance's available_tracers.
func instancesRunGraph(t *testing.T) bool {
	t.Helper()
	dir := filepath.Join(tracing, "instances", "graphprobe")
	if err := os.Mkdir(dir, 0o750); err != nil {
		t.Fatal(err)
	}
	defer os.Remove(dir)
	return strings.Contains(read(t, "instances/graphprobe/available_tracers"), "function_graph")
}

// A profile's graph: refused without the claim (at spec.graph's line), applied with it (the
// top level's graph files as the profile says, function_graph running where the kernel runs
// it), held against `ftctl graph`, kept and named by reset, in sync, a hand change of each
// top-level file a difference naming it, repaired, exported and applied from the export, and
// deleted: every file as before.
func TestProfileGraph(t *testing.T) {
	unclaimed := profileFile(t, "unclaimed.json", graphProf("vmgraph", false, ""))
	r := ftctlRun(t, "plan", "-f", unclaimed)
	if r.code != 2 || !strings.Contains(r.stderr, unclaimed+":6:14: spec.graph: the kernel keeps set_graph_function, set_graph_notrace, max_graph_depth at the top level alone") {
		t.Fatalf("plan without the claim: %v", r)
	}
	runsGraph := instancesRunGraph(t)
	file := profileFile(t, "vmgraph.json", graphProf("vmgraph", true, ""))
	t.Cleanup(func() { ftctlRun(t, "delete", "-f", file) })
	warmProfile(t, file)
	before := controlState(t)

	r = ftctlRun(t, "plan", "-f", file)
	if r.code != 0 || !strings.Contains(r.stdout, "= takes the top level: set_graph_function, set_graph_notrace, max_graph_depth") ||
		!strings.Contains(r.stdout, "set_graph_function vfs_read*") {
		t.Fatalf("plan: %v", r)
	}
	t.Logf("plan:\n%s", r.stdout)
	if r := ftctlRun(t, "apply", "-f", file); r.code != 0 {
		t.Fatalf("apply: %v\n%s", r, read(t, "error_log"))
	}
	roots := read(t, "set_graph_function")
	if !strings.Contains(roots, "vfs_read\n") || strings.Contains(roots, "all functions") || strings.Contains(roots, "vfs_write\n") {
		t.Errorf("set_graph_function: %q", roots)
	}
	if got := read(t, "set_graph_notrace"); strings.TrimSpace(got) != "vfs_readv" {
		t.Errorf("set_graph_notrace: %q", got)
	}
	if got := read(t, "max_graph_depth"); strings.TrimSpace(got) != "3" {
		t.Errorf("max_graph_depth: %q", got)
	}
	inst := "instances/ftctl-owned-vmgraph/"
	where := map[bool]string{true: inst, false: ""}[runsGraph]
	if got := read(t, where+"current_tracer"); strings.TrimSpace(got) != "function_graph" {
		t.Errorf("%scurrent_tracer: %q (instances run function_graph: %v)", where, got, runsGraph)
	}
	r = ftctlRun(t, "plan", "-f", file)
	whole := "; and the whole top level (current_tracer function_graph, tracing_on)"
	if r.code != 0 || !strings.Contains(r.stdout, "in sync") || strings.Contains(r.stdout, whole) == runsGraph {
		t.Errorf("plan once applied (instances run function_graph: %v): %v", runsGraph, r)
	}
	if r := ftctlRun(t, "graph", "-f", "ksys_read", "--duration", "1s"); r.code != 5 || !strings.Contains(r.stderr, "the declared owner vmgraph claims the top level's function_graph files") {
		t.Errorf("ftctl graph while a profile claims the top level: %v", r)
	}
	if r := ftctlRun(t, "reset"); r.code != 0 || !strings.Contains(r.stdout, "kept declared owner vmgraph: instance ftctl-owned-vmgraph and the top level's ") {
		t.Errorf("reset: %v", r)
	}
	if r := ftctlRun(t, "diff", "-f", file); r.code != 0 {
		t.Fatalf("diff after apply: %v", r)
	}

	// drift by hand, each file its object
	for _, c := range []struct{ file, data, want string }{
		{"max_graph_depth", "5", "~ top level: graph depth (max_graph_depth): 5 -> 3"},
		{"set_graph_function", "vfs_write", "~ top level: graph roots (set_graph_function)"},
		{"set_graph_notrace", "vfs_write", "~ top level: graph notrace (set_graph_notrace)"},
	} {
		write(t, c.file, c.data)
		r := ftctlRun(t, "diff", "-f", file)
		if r.code != 1 || !strings.Contains(r.stdout, c.want) {
			t.Errorf("diff after %s drifted: %v", c.file, r)
		}
		if c.file == "set_graph_function" && !strings.Contains(r.stdout, "      - vfs_write") {
			t.Errorf("diff of the roots does not name what drifted in: %v", r)
		}
		var res struct {
			Action string `json:"action"`
		}
		r = ftctlRun(t, "apply", "-f", file, "-o", "json")
		if r.code != 0 || json.Unmarshal([]byte(r.stdout), &res) != nil || res.Action != "recreated" {
			t.Fatalf("repair of %s: %v", c.file, r)
		}
		if r := ftctlRun(t, "diff", "-f", file); r.code != 0 {
			t.Fatalf("diff after repairing %s: %v", c.file, r)
		}
	}

	r = ftctlRun(t, "export", "-B", "ftctl-owned-vmgraph")
	if r.code != 0 || !strings.Contains(r.stdout, "claim: true") || !strings.Contains(r.stdout, "- vfs_read\n") || !strings.Contains(r.stdout, "depth: 3") {
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
		t.Fatalf("apply of the export: %v\nexport:\n%s", r, readFile(t, exported))
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

// A graph profile the kernel refuses after the top level's files were written (a hist
// trigger on a field the event lacks, the set-up's last step): exit 3, every file as before.
func TestProfileGraphFailureRestores(t *testing.T) {
	if !hasHist(t) {
		t.Skip("no hist triggers on this kernel")
	}
	good := profileFile(t, "good.json", graphProf("vmgraphbad", true, ""))
	warmProfile(t, good)
	before := controlState(t)
	bad := profileFile(t, "bad.json", graphProf("vmgraphbad", true, "hist:keys=no_such_field"))
	t.Cleanup(func() { ftctlRun(t, "delete", "-f", bad) })
	if r := ftctlRun(t, "apply", "-f", bad); r.code != 3 {
		t.Errorf("apply of a graph profile the kernel refuses: %v", r)
	}
	if after := controlState(t); after != before {
		t.Errorf("a refused apply changed the state:\n%s", lineDiff(before, after))
	}
	// and an update that fails: the applied profile, then a trigger the kernel refuses
	if r := ftctlRun(t, "apply", "-f", good); r.code != 0 {
		t.Fatalf("apply: %v", r)
	}
	applied := controlState(t)
	if r := ftctlRun(t, "apply", "-f", bad); r.code != 3 || !strings.Contains(r.stderr, "restored") {
		t.Errorf("an update the kernel refuses: %v", r)
	}
	if after := controlState(t); after != applied {
		t.Errorf("a refused update did not put the applied profile back:\n%s", lineDiff(applied, after))
	}
	if r := ftctlRun(t, "delete", "-f", good); r.code != 0 {
		t.Fatalf("delete: %v", r)
	}
	if after := controlState(t); after != before {
		t.Errorf("delete:\n%s", lineDiff(before, after))
	}
}

// A graph profile's apply killed (SIGKILL) right after each write of the top level: delete
// puts every file back as before (the declaration recorded each before its write), and an
// apply instead finishes it (the owner set up again from the start).
func TestProfileGraphSIGKILL(t *testing.T) {
	file := profileFile(t, "vmgraphkill.json", graphProf("vmgraphkill", true, ""))
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
	var kills []int
	for i, l := range planLines(whole.stderr, "+ ") {
		if strings.Contains(l, "set_graph_") || strings.Contains(l, "max_graph_depth") {
			kills = append(kills, i+1)
		}
	}
	if len(kills) < 3 {
		t.Fatalf("the apply wrote %d graph files:\n%s", len(kills), whole.stderr)
	}
	for i, k := range kills {
		last := killAfterWrite(t, k, "--show-writes", "apply", "-f", file)
		if i%2 == 1 {
			if r := ftctlRun(t, "apply", "-f", file); r.code != 0 {
				t.Fatalf("killed after write %d (%s): apply: %v", k, last, r)
			}
			if after := controlState(t); after != applied {
				t.Errorf("killed after write %d (%s), then apply: not the applied state:\n%s", k, last, lineDiff(applied, after))
			}
		}
		if r := ftctlRun(t, "delete", "-f", file); r.code != 0 {
			t.Fatalf("killed after write %d (%s): delete: %v", k, last, r)
		}
		if after := controlState(t); after != before {
			t.Fatalf("killed after write %d (%s), then delete: not the state before:\n%s", k, last, lineDiff(before, after))
		}
	}
}
