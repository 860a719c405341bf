package tracefs

import (
	"encoding/json"
	"errors"
	"os"
	"slices"
	"testing"
)

func TestStatusFakeTree(t *testing.T) {
	f := fakeTracefs(t, "6.12")
	if _, _, err := f.Ensure("inc42"); err != nil {
		t.Fatal(err)
	}
	// The fake instance has no files: everything of it is reported unavailable, not fatal.
	st, err := f.Status("")
	if err != nil {
		t.Fatal(err)
	}
	if len(st.Instances) != 2 || st.Instances[0].Name != "" || st.Instances[1].Name != "inc42" {
		t.Fatalf("instances: %+v", st.Instances)
	}
	top := st.Instances[0]
	if top.Tracer != "nop" || top.TracingOn == nil || !*top.TracingOn {
		t.Errorf("tracer: %+v", top)
	}
	if top.BufferKB == nil || *top.BufferKB != 1408 || top.BufferAlloc || *top.BufferTotalKB != 2816 {
		t.Errorf("buffer: %+v", top)
	}
	if top.Filter == nil || top.Filter.Functions != 2 || len(top.Filter.Commands) != 2 || top.Filter.Empty {
		t.Errorf("filter: %+v", top.Filter)
	}
	if top.Notrace == nil || !top.Notrace.Empty {
		t.Errorf("notrace: %+v", top.Notrace)
	}
	if !slices.Equal(top.Events, []string{"kprobes:ftx", "sched:sched_switch"}) {
		t.Errorf("events: %v", top.Events)
	}
	if len(top.CPUs) != 2 || top.CPUs[1].Overrun != 12 || top.CPUs[1].DroppedEvents != 1 {
		t.Errorf("cpus: %+v", top.CPUs)
	}
	if len(top.Unavailable) != 0 {
		t.Errorf("top unavailable: %+v", top.Unavailable)
	}
	if st.Kprobes == nil || st.Kprobes.Count != 4 || st.Kprobes.Owned != 2 {
		t.Errorf("kprobes: %+v", st.Kprobes)
	}
	inst := st.Instances[1]
	if inst.Filter != nil || len(inst.Unavailable) == 0 || inst.Unavailable[0].Class != "absent" {
		t.Errorf("empty instance: %+v", inst)
	}
	for _, want := range []string{"kprobe-events", "error-log", "instances", "probe-btf-args", "function-fork"} {
		if !slices.Contains(st.Features, want) {
			t.Errorf("features lack %s: %v", want, st.Features)
		}
	}
	// JSON has the documented keys.
	b, err := json.Marshal(st)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"tracefs", "kernel", "lockdown", "features", "instances", "kprobes", "unavailable"} {
		if _, ok := m[k]; !ok {
			t.Errorf("JSON lacks %q", k)
		}
	}
}

func TestStatusRestrictedKernel(t *testing.T) {
	// The development machines' kernel: no kprobe_events, no filter files we can read.
	f := fakeTracefs(t, "dev-6.18")
	for _, name := range []string{"kprobe_events", "set_ftrace_filter", "set_ftrace_notrace", "available_filter_functions"} {
		if err := os.Remove(f.Path(name)); err != nil {
			t.Fatal(err)
		}
	}
	st, err := f.Status("")
	if err != nil {
		t.Fatal(err)
	}
	if st.Kprobes != nil {
		t.Errorf("kprobes reported on a kernel without kprobe_events: %+v", st.Kprobes)
	}
	var files []string
	for _, u := range st.Unavailable {
		files = append(files, u.File)
		if u.File == "kprobe_events" && (u.Class != "absent" || u.Errno != "ENOENT" || u.Reason != absentHints["kprobe_events"]) {
			t.Errorf("kprobe_events: %+v", u)
		}
	}
	if !slices.Contains(files, "kprobe_events") || !slices.Contains(files, "available_filter_functions") {
		t.Errorf("unavailable: %v", files)
	}
	if top := st.Instances[0]; top.Filter != nil || len(top.Unavailable) < 2 {
		t.Errorf("top: %+v", top)
	}
	if slices.Contains(st.Features, "kprobe-events") {
		t.Error("kprobe-events claimed")
	}
}

func TestStatusOneInstance(t *testing.T) {
	f := fakeTracefs(t, "6.1")
	if _, err := f.Status("nope"); !errors.Is(err, ErrNoInstance) {
		t.Fatal(err)
	}
	if _, err := f.Status("../x"); !errors.Is(err, ErrBadInstance) {
		t.Fatal(err)
	}
	f.Ensure("one")
	f.Ensure("two")
	st, err := f.Status("two")
	if err != nil || len(st.Instances) != 1 || st.Instances[0].Name != "two" {
		t.Fatal(st, err)
	}
}
