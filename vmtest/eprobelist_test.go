//go:build vmtest

package vmtest

import (
	"encoding/json"
	"os"
	"strings"
	"testing"

	"github.com/ftctl/ftctl/probes"
)

// TestEprobeListFilter: probe list shows an event probe's "if FILTER" whether or not the
// kernel lists it: from dynamic_events where it does, else from ftctl's record of the probes it
// added (marked so); probe remove drops the record. The kernel's own listing is logged.
func TestEprobeListFilter(t *testing.T) {
	removeEventLater(t, "dynamic_events", "ftctl", "eplf")
	r := ftctlRun(t, "probe", "add", "e:ftctl/eplf sched.sched_switch p=$prev_pid if prev_pid > 0")
	if r.code != 0 {
		t.Fatalf("probe add: %v", r)
	}
	var listed string
	for _, l := range strings.Split(read(t, "dynamic_events"), "\n") {
		if strings.Contains(l, "ftctl/eplf") {
			listed = l
		}
	}
	kernelLists := strings.Contains(listed, " if ")
	t.Logf("dynamic_events lists: %q (the filter listed: %v)", listed, kernelLists)
	r = ftctlRun(t, "probe", "list", "-o", "json")
	var list []probes.Probe
	if err := json.Unmarshal(items(r.stdout), &list); r.code != 0 || err != nil {
		t.Fatalf("probe list: %v %v", err, r)
	}
	from := "ftctl"
	if kernelLists {
		from = "kernel"
	}
	found := false
	for _, p := range list {
		if p.Group == "ftctl" && p.Event == "eplf" {
			found = true
			if strings.ReplaceAll(p.Filter, " ", "") != "prev_pid>0" || p.FilterFrom != from {
				t.Errorf("filter %q from %q, want prev_pid > 0 from %s", p.Filter, p.FilterFrom, from)
			}
		}
	}
	if !found {
		t.Fatalf("not listed: %s", r.stdout)
	}
	r = ftctlRun(t, "probe", "list")
	if !kernelLists && !strings.Contains(r.stdout, "# if prev_pid > 0 (ftctl's record: the kernel does not list it)") {
		t.Errorf("probe list:\n%s", r.stdout)
	}
	if rm := ftctlRun(t, "probe", "remove", "eplf"); rm.code != 0 {
		t.Fatalf("remove: %v", rm)
	}
	if b, err := os.ReadFile("/run/ftctl/eprobe-filters.json"); err == nil && strings.Contains(string(b), "eplf") {
		t.Errorf("the record outlives the probe:\n%s", b)
	}
}
