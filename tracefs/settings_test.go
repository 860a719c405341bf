package tracefs

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// The settings accessors read and write the files the front ends used to name.
func TestSettingsAccessors(t *testing.T) {
	f := fakeTracefs(t, "6.12")
	top := f.Top()
	if on, err := top.TracingOn(); err != nil || !on {
		t.Errorf("TracingOn = %v, %v; want true", on, err)
	}
	if err := top.SetTracingOn(false); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(top.Path("tracing_on")); string(b) != "0\n" { // no O_TRUNC: "0" over "1"
		t.Errorf("tracing_on after SetTracingOn(false): %q", b)
	}
	if on, err := top.TracingOn(); err != nil || on {
		t.Errorf("TracingOn after SetTracingOn(false) = %v, %v", on, err)
	}
	if err := top.SetTracingOn(true); err != nil {
		t.Fatal(err)
	}
	if on, _ := top.TracingOn(); !on {
		t.Error("TracingOn after SetTracingOn(true): off")
	}
	if err := os.WriteFile(top.Path("current_tracer"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := top.SetTracer("function"); err != nil {
		t.Fatal(err)
	}
	if tr, err := top.Tracer(); err != nil || tr != "function" {
		t.Errorf("Tracer after SetTracer = %q, %v", tr, err)
	}
	// buffer_size_kb as 6.12 shows it before tracing first starts: "7 (expanded: 1408)"
	if kb, alloc, ok := top.BufferSizeKB(); !ok || alloc || kb != 1408 {
		t.Errorf("BufferSizeKB = %d, %v, %v; want 1408, not allocated", kb, alloc, ok)
	}
	for _, c := range []struct {
		text  string
		kb    int
		alloc bool
		ok    bool
	}{{"X\n", 0, true, false}, {"2816\n", 2816, true, true}} { // X: the CPUs' sizes differ
		if err := os.WriteFile(top.Path("buffer_size_kb"), []byte(c.text), 0o644); err != nil {
			t.Fatal(err)
		}
		if kb, alloc, ok := top.BufferSizeKB(); ok != c.ok || (ok && (kb != c.kb || alloc != c.alloc)) {
			t.Errorf("BufferSizeKB of %q = %d, %v, %v", c.text, kb, alloc, ok)
		}
	}

	if _, err := top.Clocks(); !errors.Is(err, ErrUnavailable) {
		t.Errorf("Clocks without trace_clock: %v", err)
	}
	const clocks = "[local] global counter uptime perf mono mono_raw boot tai x86-tsc\n"
	if err := os.WriteFile(top.Path("trace_clock"), []byte(clocks), 0o644); err != nil {
		t.Fatal(err)
	}
	if got, err := top.Clocks(); err != nil || !slices.Equal(got, []string{"local", "global", "counter", "uptime", "perf", "mono", "mono_raw", "boot", "tai", "x86-tsc"}) {
		t.Errorf("Clocks = %q, %v", got, err)
	}
	if c, _ := top.TraceClock(); c != "local" {
		t.Errorf("TraceClock = %q", c)
	}

	os.Remove(top.Path("tracing_on"))
	if _, err := top.TracingOn(); !errors.Is(err, ErrUnavailable) {
		t.Errorf("TracingOn without the file: %v", err)
	}
	if _, _, ok := top.BufferSizeKB(); !ok {
		t.Error("BufferSizeKB: lost")
	}
	os.Remove(top.Path("buffer_size_kb"))
	if _, _, ok := top.BufferSizeKB(); ok {
		t.Error("BufferSizeKB without the file: ok")
	}
}

func TestParseClocks(t *testing.T) {
	for text, want := range map[string][]string{
		"[local] global counter\n": {"local", "global", "counter"},
		"local [global] x86-tsc":   {"local", "global", "x86-tsc"},
		"":                         nil,
	} {
		if got := ParseClocks(text); !slices.Equal(got, want) {
			t.Errorf("ParseClocks(%q) = %q, want %q", text, got, want)
		}
	}
}

// Rel names a file as `ftctl status` and the filter commands print it; HasInstance sees an
// instance's directory.
func TestRelAndHasInstance(t *testing.T) {
	f := fakeTracefs(t, "6.1")
	if got := f.Top().Rel("set_ftrace_filter"); got != "set_ftrace_filter" {
		t.Errorf("top Rel = %q", got)
	}
	if f.HasInstance("one") {
		t.Error("HasInstance before Ensure")
	}
	in, _, err := f.Ensure("one")
	if err != nil {
		t.Fatal(err)
	}
	if !f.HasInstance("one") {
		t.Error("HasInstance after Ensure: false")
	}
	if got := in.Rel("per_cpu/cpu0/stats"); got != "instances/one/per_cpu/cpu0/stats" {
		t.Errorf("instance Rel = %q", got)
	}
	if _, err := os.Stat(filepath.Join(f.Root(), in.Rel("."))); err != nil {
		t.Errorf("Rel is not relative to the tracing directory: %v", err)
	}
}

// The event accessors of ftctl hist: the event's existence, whether it takes a hist trigger
// (the README's word and the event's hist file), and its hist file.
func TestEventHistAccessors(t *testing.T) {
	f := fakeTracefs(t, "6.12")
	top := f.Top()
	dir := filepath.Join(f.Root(), "events", "sched", "sched_switch")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "format"), []byte(fixture(t, "6.12", "format.sched.sched_switch")), 0o644); err != nil {
		t.Fatal(err)
	}
	if !top.HasEvent("sched", "sched_switch") || top.HasEvent("sched", "nosuch") || top.HasEvent("nosuch", "sched_switch") {
		t.Error("HasEvent")
	}
	ft := f.DetectFeatures()
	if !ft.HistTriggers {
		t.Fatal("6.12's README announces no hist triggers")
	}
	err := top.CheckHist("sched", "sched_switch", ft)
	var e *Error
	if !errors.As(err, &e) || !errors.Is(err, ErrUnavailable) || e.Path != filepath.Join(dir, "hist") ||
		e.Reason != "this kernel has no hist triggers (CONFIG_HIST_TRIGGERS)" {
		t.Errorf("CheckHist without a hist file: %v", err)
	}
	const table = "# event histogram\n#\n{ prev_pid: 1 } hitcount: 2\n"
	if err := os.WriteFile(filepath.Join(dir, "hist"), []byte(table), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := top.CheckHist("sched", "sched_switch", ft); err != nil {
		t.Errorf("CheckHist: %v", err)
	}
	if err := top.CheckHist("sched", "sched_switch", Features{}); !errors.Is(err, ErrUnavailable) {
		t.Errorf("CheckHist without hist triggers in the README: %v", err)
	}
	if b, err := top.EventHist("sched", "sched_switch"); err != nil || string(b) != table {
		t.Errorf("EventHist = %q, %v", b, err)
	}
	if _, err := top.EventHist("sched", "nosuch"); !errors.Is(err, ErrUnavailable) {
		t.Errorf("EventHist of a missing event: %v", err)
	}
}

// KprobesAndUprobes reads both files, or either one a kernel has; an error only without both.
func TestKprobesAndUprobes(t *testing.T) {
	f := fakeTracefs(t, "6.12")
	if err := os.WriteFile(f.Path("uprobe_events"), []byte("p:ftctl/up /bin/true:0x0000000000001010\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	names := func() []string {
		l, err := f.KprobesAndUprobes()
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, p := range l {
			out = append(out, p.Group+"/"+p.Event)
		}
		return out
	}
	all := names()
	if len(all) < 2 || all[len(all)-1] != "ftctl/up" {
		t.Errorf("both files: %q", all)
	}
	os.Remove(f.Path("kprobe_events"))
	if got := names(); !slices.Equal(got, []string{"ftctl/up"}) {
		t.Errorf("uprobe_events alone: %q", got)
	}
	os.Remove(f.Path("uprobe_events"))
	if _, err := f.KprobesAndUprobes(); !errors.Is(err, ErrUnavailable) {
		t.Errorf("neither file: %v", err)
	}
}
