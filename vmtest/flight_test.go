//go:build vmtest

package vmtest

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
)

// markers writes numbered markers from..to into an instance's trace_marker.
func markers(t *testing.T, inst string, from, to int) {
	t.Helper()
	for i := from; i <= to; i++ {
		write(t, "instances/"+inst+"/trace_marker", fmt.Sprintf("flight-marker-%d\n", i))
	}
}

// A flight recorder records with no process: started, it survives `ftctl reset`; a dump holds
// the markers written before it and leaves the recorder recording (the next dump holds what came
// after, not what the first took); `ftctl report` and trace-cmd read the dumps; stop removes
// everything start made.
func TestFlightRecorder(t *testing.T) {
	warmProfile(t, profileFile(t, "vmprof.json", vmprof(t, false)))
	before := controlState(t)
	t.Cleanup(func() { ftctlRun(t, "flight", "stop", "box") })
	r := ftctlRun(t, "flight", "start", "box", "-e", "sched:sched_process_exit", "--buffer-kb", "256")
	if r.code != 0 {
		t.Fatalf("flight start: %v", r)
	}
	if r := ftctlRun(t, "reset"); r.code != 0 || !strings.Contains(r.stdout, "kept declared owner box") {
		t.Fatalf("reset: %v", r)
	}
	markers(t, "ftctl-owned-box", 1, 50)
	dir := t.TempDir()
	first := filepath.Join(dir, "first.dat")
	if r := ftctlRun(t, "flight", "dump", "box", "-o", first); r.code != 0 {
		t.Fatalf("flight dump: %v", r)
	}
	markers(t, "ftctl-owned-box", 51, 51)
	second := filepath.Join(dir, "second.dat")
	if r := ftctlRun(t, "flight", "dump", "box", "-o", second); r.code != 0 {
		t.Fatalf("second flight dump: %v", r)
	}
	rep := ftctlRun(t, "report", first)
	for _, n := range []int{1, 25, 50} {
		if !strings.Contains(rep.stdout, fmt.Sprintf("flight-marker-%d\n", n)) {
			t.Errorf("the first dump lacks marker %d: %v", n, rep)
		}
	}
	if strings.Contains(rep.stdout, "flight-marker-51\n") {
		t.Errorf("the first dump holds a marker written after it")
	}
	rep2 := ftctlRun(t, "report", second)
	if !strings.Contains(rep2.stdout, "flight-marker-51\n") || strings.Contains(rep2.stdout, "flight-marker-50\n") {
		t.Errorf("the second dump holds what came after the first, and only that: %v", rep2)
	}
	needTraceCmd(t)
	out, _ := runTraceCmd(t, "report", first)
	if !strings.Contains(out, "flight-marker-50") {
		t.Errorf("trace-cmd report of the dump lacks the markers:\n%s", out)
	}
	r = ftctlRun(t, "flight", "status", "box", "-o", "json")
	var st []struct {
		Name      string `json:"name"`
		BufferKB  int    `json:"buffer_kb"`
		TracingOn bool   `json:"tracing_on"`
		Snapshot  bool   `json:"snapshot"`
	}
	if r.code != 0 || json.Unmarshal([]byte(r.stdout), &st) != nil || len(st) != 1 || st[0].Name != "box" || !st[0].TracingOn || st[0].BufferKB < 256 {
		t.Errorf("flight status: %+v %v", st, r)
	}
	if r := ftctlRun(t, "flight", "stop", "box"); r.code != 0 {
		t.Fatalf("flight stop: %v", r)
	}
	if after := controlState(t); after != before {
		t.Errorf("state after flight stop:\n%s", lineDiff(before, after))
	}
	if r := ftctlRun(t, "flight", "stop", "box"); r.code != 2 {
		t.Errorf("a second stop: %v", r)
	}
}
