package tracefs

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A dry run's Ensure of a missing instance prints the mkdir and gives a planned instance, read
// as the kernel makes a new one: its lists empty, the top level's per-array files, the tracers
// another instance offers (ErrPlanned when none exists), an event's format the kernel's;
// writes to it are printed, and nothing is made.
func TestPlannedInstance(t *testing.T) {
	root := t.TempDir()
	for name, body := range map[string]string{
		"set_ftrace_filter":                   "vfs_read\n",
		"available_tracers":                   "function_graph function nop\n",
		"instances/other/available_tracers":   "function nop\n",
		"events/sched/sched_switch/format":    "name: sched_switch\nID: 1\nformat:\n",
		"events/sched/sched_switch/filter":    "prev_pid != 0\n",
		"instances/other/events/sched/enable": "0\n",
	} {
		p := filepath.Join(root, name)
		os.MkdirAll(filepath.Dir(p), 0o755)
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	var plan bytes.Buffer
	fs := &FS{Mount: Mount{Path: root}, DryRun: &plan}
	in, created, err := fs.Ensure("new")
	if err != nil || !created || !in.Planned() {
		t.Fatalf("Ensure: %v created %v planned %v", err, created, in != nil && in.Planned())
	}
	if _, err := os.Stat(filepath.Join(root, "instances", "new")); !os.IsNotExist(err) {
		t.Fatalf("a dry run made the instance: %v", err)
	}
	for file, want := range map[string]string{
		"set_ftrace_filter":                "#### all functions enabled ####\n",
		"set_ftrace_notrace":               "",
		"available_tracers":                "function nop\n",
		"events/sched/sched_switch/format": "name: sched_switch\nID: 1\nformat:\n",
		"events/sched/sched_switch/filter": "none\n",
	} {
		if b, err := in.ReadFile(file); err != nil || string(b) != want {
			t.Errorf("ReadFile(%s) = %q, %v; want %q", file, b, err, want)
		}
	}
	for _, file := range []string{"trace_clock", "events/nosys/noevent/format", "current_tracer"} {
		if _, err := in.ReadFile(file); !errors.Is(err, ErrPlanned) {
			t.Errorf("ReadFile(%s): %v, want ErrPlanned", file, err)
		}
	}
	if !in.Has("set_ftrace_filter") || in.Has("no_such_file") {
		t.Error("Has does not answer from the top level")
	}
	if err := in.Write("tracing_on", "0"); err != nil {
		t.Fatal(err)
	}
	want := "dry-run: mkdir " + filepath.Join(root, "instances", "new") + "\n" +
		"dry-run: write " + filepath.Join(root, "instances", "new", "tracing_on") + " \"0\"\n"
	if plan.String() != want {
		t.Errorf("plan:\n%s\nwant:\n%s", plan.String(), want)
	}
	os.RemoveAll(filepath.Join(root, "instances", "other"))
	if _, err := in.ReadFile("available_tracers"); !errors.Is(err, ErrPlanned) || !strings.Contains(err.Error(), "no instance exists") {
		t.Errorf("available_tracers with no instance to ask: %v", err)
	}
}

// --show-writes: each write, mkdir and rmdir made is printed once made, in the dry run's words;
// a refused one is not.
func TestLogShowsWritesMade(t *testing.T) {
	root := t.TempDir()
	os.Mkdir(filepath.Join(root, "instances"), 0o755)
	os.WriteFile(filepath.Join(root, "tracing_on"), []byte("1\n"), 0o644)
	var log bytes.Buffer
	fs := &FS{Mount: Mount{Path: root}, Log: &log}
	if err := fs.Top().Write("tracing_on", "0"); err != nil {
		t.Fatal(err)
	}
	if err := fs.Top().Write("no_such_file", "1"); err == nil {
		t.Fatal("a write to a missing file succeeded")
	}
	in, _, err := fs.Ensure("x")
	if err != nil {
		t.Fatal(err)
	}
	if err := in.Remove(); err != nil {
		t.Fatal(err)
	}
	want := "+ write " + filepath.Join(root, "tracing_on") + " \"0\"\n+ mkdir " + filepath.Join(root, "instances", "x") + "\n+ rmdir " + filepath.Join(root, "instances", "x") + "\n"
	if log.String() != want {
		t.Errorf("log:\n%s\nwant:\n%s", log.String(), want)
	}
}
