package session

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/ftctl/ftctl/eventfilter"
	"github.com/ftctl/ftctl/filters"
	"github.com/ftctl/ftctl/internal/fixture"
	"github.com/ftctl/ftctl/probes"
	"github.com/ftctl/ftctl/tracefs"
)

// Unit tests of sessions on a fake tracefs (internal/fixture.Tracefs): a plain directory whose
// instances are made and removed as the kernel makes them, and refused removal (EBUSY) while a
// file of them is open. What only the kernel does on a write (a probe's events/ directory, the
// filter lists' contents after index writes) is the VM suite's: vmtest/trace_test.go,
// vmtest/coexist_test.go.

func fakeFS(t *testing.T, extra map[string]string) (*tracefs.FS, *fixture.InstanceDirs) {
	t.Helper()
	root, dirs := fixture.Tracefs(t, "6.12", extra)
	// No kallsyms, no BTF: definitions are checked against the grammar only, never against
	// the kernel running the tests.
	// Journals go to a directory of the test's, and the boot has no id unless a test gives one.
	return &tracefs.FS{Mount: tracefs.Mount{Path: root, Found: "test"}, Dirs: dirs,
		KallsymsFile: filepath.Join(root, "no-kallsyms"), BTFDir: filepath.Join(root, "no-btf"),
		StateDir: filepath.Join(t.TempDir(), "run"), BootIDFile: filepath.Join(root, "no-boot-id")}, dirs
}

// snapshot is every file under root with its content, and every directory.
func snapshot(t *testing.T, root string) map[string]string {
	t.Helper()
	out := map[string]string{}
	filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			t.Fatal(err)
		}
		rel, _ := filepath.Rel(root, p)
		if d.IsDir() {
			out[rel+"/"] = ""
			return nil
		}
		b, _ := os.ReadFile(p)
		out[rel] = string(b)
		return nil
	})
	return out
}

// read is a file's content, without the trailing newline (a write of "1" over the fake's
// "0\n" leaves "1\n": the kernel would list "1\n" too).
func read(t *testing.T, fs *tracefs.FS, rel string) string {
	t.Helper()
	b, err := os.ReadFile(fs.Path(rel))
	if err != nil {
		t.Fatal(err)
	}
	return strings.TrimSuffix(string(b), "\n")
}

func mustCompile(t *testing.T, pats ...string) []*filters.Pattern {
	t.Helper()
	var out []*filters.Pattern
	for _, p := range pats {
		c, err := filters.Compile(p)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, c)
	}
	return out
}

// New checks a spec against the kernel and changes nothing, whether it accepts or refuses it.
func TestNewRefusesAndChangesNothing(t *testing.T) {
	fs, _ := fakeFS(t, nil)
	before := snapshot(t, fs.Root())
	id := ID{PID: 42, Nonce: "0123abcd"}
	var syntax *probes.SyntaxError
	for _, c := range []struct {
		name string
		spec Spec
		is   func(error) bool
	}{
		{"unknown tracer", Spec{Tracer: "wakeup"}, func(err error) bool { return errors.Is(err, ErrInvalid) }},
		{"function tracer without -f", Spec{Tracer: "function"}, func(err error) bool { return errors.Is(err, ErrInvalid) }},
		{"-f with nop", Spec{Tracer: "nop", Filters: mustCompile(t, "vfs_read")}, func(err error) bool { return errors.Is(err, ErrInvalid) }},
		{"a pattern that selects nothing", Spec{Filters: mustCompile(t, "no_such_fn")}, func(err error) bool { return errors.Is(err, filters.ErrPattern) }},
		{"a notrace pattern that selects nothing", Spec{Filters: mustCompile(t, "vfs_read"), Notrace: mustCompile(t, "nope_*")}, func(err error) bool { return errors.Is(err, filters.ErrPattern) }},
		{"probe syntax", Spec{Probes: []string{"p:x vfs_read %zz"}}, func(err error) bool { return errors.As(err, &syntax) }},
		{"probe removal", Spec{Probes: []string{"-:x"}}, func(err error) bool { return errors.Is(err, ErrInvalid) }},
		{"two probes of one name", Spec{Probes: []string{"p:x vfs_read", "p:x vfs_write"}}, func(err error) bool { return errors.Is(err, ErrInvalid) }},
		{"event with a slash", Spec{Events: []string{"sched/x"}}, func(err error) bool { return errors.Is(err, ErrInvalid) }},
		{"missing event", Spec{Events: []string{"sched:no_such_event"}}, func(err error) bool { return errors.Is(err, ErrInvalid) }},
		{"empty event", Spec{Events: []string{"sched:"}}, func(err error) bool { return errors.Is(err, ErrInvalid) }},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := New(fs, id, c.spec)
			if err == nil || !c.is(err) {
				t.Fatalf("New = %v", err)
			}
		})
	}
	if _, err := New(fs, id, Spec{Filters: mustCompile(t, "vfs_*"), Events: []string{"sched:sched_switch"}, PIDs: []int{7}}); err != nil {
		t.Fatalf("a good spec: %v", err)
	}
	if after := snapshot(t, fs.Root()); !mapsEqual(before, after) {
		t.Errorf("New changed the tracing directory:\nbefore %v\nafter  %v", before, after)
	}
}

func mapsEqual(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if w, ok := b[k]; !ok || w != v {
			return false
		}
	}
	return true
}

// An events-only session for a pid: its instance is named for it and held; tracing stays off
// until Begin; the kernel leaves ftctl's own threads out (notrace pid lists with the fork
// options); only set_event_pid is written for the pid (set_ftrace_pid is for function tracers,
// and a locked-down kernel refuses it); nothing outside the instance changes.
func TestStartEventsOnly(t *testing.T) {
	fs, dirs := fakeFS(t, nil)
	top := snapshot(t, fs.Root())
	s, err := New(fs, ID{PID: 42, Nonce: "0123abcd"}, Spec{Events: []string{"sched:sched_switch"}, PIDs: []int{4242}})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	inst := "instances/ftctl-42-0123abcd/"
	if s.Instance.Name != "ftctl-42-0123abcd" || s.Group != "ftctl_42_0123abcd" {
		t.Errorf("instance %q, group %q", s.Instance.Name, s.Group)
	}
	if got := read(t, fs, inst+"tracing_on"); got != "0" {
		t.Errorf("tracing_on %q before Begin", got)
	}
	if got := read(t, fs, inst+"set_event_pid"); got != "4242" {
		t.Errorf("set_event_pid %q", got)
	}
	if got := read(t, fs, inst+"set_ftrace_pid"); got != "no pid" {
		t.Errorf("set_ftrace_pid written by an events-only session: %q", got)
	}
	if got := read(t, fs, inst+"events/sched/sched_switch/enable"); got != "1" {
		t.Errorf("sched_switch enable %q", got)
	}
	if got := read(t, fs, inst+"current_tracer"); got != "nop" {
		t.Errorf("current_tracer %q", got)
	}
	// ftctl's own threads, every one of them, excluded; the fork options cover later ones
	if !s.SelfExcluded {
		t.Error("SelfExcluded false on a kernel with the notrace pid files")
	}
	for _, f := range []string{"set_ftrace_notrace_pid", "set_event_notrace_pid"} {
		got := strings.Fields(read(t, fs, inst+f))
		for _, tid := range tracefs.OwnThreads() {
			if !slices.Contains(got, strconv.Itoa(tid)) && threadAlive(tid) {
				t.Errorf("%s lacks thread %d: %v", f, tid, got)
			}
		}
	}
	for _, f := range []string{"options/function-fork", "options/event-fork"} {
		if got := read(t, fs, inst+f); got != "1" {
			t.Errorf("%s %q", f, got)
		}
	}
	if err := s.Begin(); err != nil {
		t.Fatal(err)
	}
	if got := read(t, fs, inst+"tracing_on"); got != "1" {
		t.Errorf("tracing_on %q after Begin", got)
	}
	// Nothing outside the instance changed.
	now := snapshot(t, fs.Root())
	for k, v := range now {
		if strings.HasPrefix(k, inst) || k == inst {
			delete(now, k)
			continue
		}
		if top[k] != v {
			t.Errorf("%s changed: %q", k, v)
		}
	}
	if len(now) != len(top) {
		t.Errorf("files outside the instance came or went: %d before, %d after", len(top), len(now))
	}

	// Teardown: tracing off, tracer nop and events off before the rmdir, which the hold no
	// longer blocks; a second teardown finds nothing to do and fails at nothing.
	if errs := s.Teardown(); len(errs) > 0 {
		t.Fatal(errs)
	}
	if len(dirs.Removed) != 1 || dirs.Removed[0].Name != "ftctl-42-0123abcd" {
		t.Fatalf("removed %+v", dirs.Removed)
	}
	last := dirs.Removed[0].Files
	trim := func(f string) string { return strings.TrimSuffix(last[f], "\n") }
	if trim("tracing_on") != "0" || trim("current_tracer") != "nop" || trim("events/enable") != "0" {
		t.Errorf("the instance was removed with tracing_on %q, current_tracer %q, events/enable %q",
			last["tracing_on"], last["current_tracer"], last["events/enable"])
	}
	if errs := s.Teardown(); len(errs) > 0 {
		t.Errorf("second teardown: %v", errs)
	}
}

// threadAlive: a thread listed a moment ago may have exited since (the Go runtime ends idle
// threads rarely, but may).
func threadAlive(tid int) bool { return slices.Contains(tracefs.OwnThreads(), tid) }

// IncludeSelf leaves the notrace pid lists alone.
func TestStartIncludeSelf(t *testing.T) {
	fs, _ := fakeFS(t, nil)
	s, err := New(fs, ID{PID: 43, Nonce: "0123abcd"}, Spec{Events: []string{"sched"}, IncludeSelf: true})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	defer s.Teardown()
	inst := "instances/ftctl-43-0123abcd/"
	if got := read(t, fs, inst+"set_ftrace_notrace_pid"); got != "no pid" || s.SelfExcluded {
		t.Errorf("set_ftrace_notrace_pid %q, SelfExcluded %v", got, s.SelfExcluded)
	}
	if got := read(t, fs, inst+"events/sched/enable"); got != "1" {
		t.Errorf("events/sched/enable %q", got)
	}
}

// A kernel without the notrace pid files (before 5.8): the session starts; the stream leaves
// ftctl's events out as it decodes them.
func TestStartWithoutNotracePid(t *testing.T) {
	fs, _ := fakeFS(t, nil)
	s, err := New(fs, ID{PID: 44, Nonce: "0123abcd"}, Spec{Events: []string{"sched"}})
	if err != nil {
		t.Fatal(err)
	}
	// The instance exists already when Start makes it (a race with another session of the same
	// id is refused): make it here, without the files, as an older kernel would.
	in, _, err := fs.Ensure(s.ID.Instance())
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"set_ftrace_notrace_pid", "set_event_notrace_pid"} {
		os.Remove(in.Path(f))
	}
	s.Instance = in
	if err := s.excludeSelf(); err != nil || s.SelfExcluded {
		t.Errorf("excludeSelf = %v, SelfExcluded %v", err, s.SelfExcluded)
	}
}

// A session whose instance already exists is refused, and the cleanup of the failed start
// leaves that instance alone: the session did not create it (before: it was torn down and
// removed).
func TestStartRefusesExistingInstance(t *testing.T) {
	fs, dirs := fakeFS(t, nil)
	id := ID{PID: 45, Nonce: "0123abcd"}
	if _, _, err := fs.Ensure(id.Instance()); err != nil {
		t.Fatal(err)
	}
	s, err := New(fs, id, Spec{})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Start(context.Background()); err == nil {
		t.Fatal("Start on an existing instance succeeded")
	}
	if len(dirs.Removed) != 0 {
		t.Errorf("removed %+v: an instance the session did not create", dirs.Removed)
	}
}

func readFile(t *testing.T, p string) string {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// -e takes globs as trace-cmd does: SYSTEM:* is the system, SYSTEM:GLOB the events it
// matches; a glob that matches nothing is invalid input, with nothing changed.
func TestEventGlobs(t *testing.T) {
	fs, _ := fakeFS(t, map[string]string{
		"events/sched/sched_wakeup/enable":    "0\n",
		"events/sched/sched_waking/enable":    "0\n",
		"events/irq/irq_handler_entry/enable": "0\n",
	})
	id := ID{PID: 42, Nonce: "0123abcd"}
	for _, c := range []struct {
		events []string
		want   []string
	}{
		{[]string{"sched:*"}, []string{"sched"}},
		{[]string{"sched:sched_wak*"}, []string{"sched:sched_wakeup", "sched:sched_waking"}},
		{[]string{"*:sched_switch", "irq"}, []string{"sched:sched_switch", "irq"}},
		{[]string{"sched:sched_switch"}, []string{"sched:sched_switch"}},
	} {
		s, err := New(fs, id, Spec{Events: c.events})
		if err != nil {
			t.Errorf("%q: %v", c.events, err)
			continue
		}
		if !slices.Equal(s.spec.Events, c.want) {
			t.Errorf("%q: events %q, want %q", c.events, s.spec.Events, c.want)
		}
	}
	for _, bad := range []string{"sched:nomatch*", "nosys*:x", "sched:[", "nosys*"} {
		if _, err := New(fs, id, Spec{Events: []string{bad}}); !errors.Is(err, ErrInvalid) {
			t.Errorf("%q: %v, want invalid input", bad, err)
		}
	}
}

// --buffer-kb, --clock and -O (trace-cmd's -b, -C, -O) are checked against the kernel before
// anything changes, and set in the session's instance only.
func TestSessionBufferClockOptions(t *testing.T) {
	fs, _ := fakeFS(t, nil)
	id := ID{PID: 42, Nonce: "0123abcd"}
	for _, bad := range []Spec{
		{BufferKB: -1},
		{BufferKB: 1 << 30},
		{Clock: "sundial"},
		{Options: []string{"no-such-option"}},
		{Options: []string{"sym-offset=2"}},
		{Options: []string{""}},
		{Options: []string{"nofunction-fork"}},
	} {
		if _, err := New(fs, id, bad); !errors.Is(err, ErrInvalid) {
			t.Errorf("%+v: %v, want invalid input", bad, err)
		}
	}
	before := snapshot(t, fs.Root())
	s, err := New(fs, id, Spec{Events: []string{"sched:sched_switch"}, BufferKB: 2048, Clock: "global",
		Options: []string{"sym-offset", "record-tgid=1", "norecord-tgid"}})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	in := s.Instance
	for file, want := range map[string]string{"buffer_size_kb": "2048", "trace_clock": "global",
		"options/sym-offset": "1", "options/record-tgid": "0"} {
		b, _ := in.ReadFile(file)
		got := strings.TrimSpace(string(b))
		if file == "trace_clock" { // the fake is a plain file: the write overlays its start
			got, _, _ = strings.Cut(got, "]")
		}
		if got != want {
			t.Errorf("%s = %q, want %q", file, got, want)
		}
	}
	s.Teardown()
	after := snapshot(t, fs.Root())
	if !mapsEqual(before, after) {
		t.Errorf("the top level changed:\nbefore %v\nafter  %v", before, after)
	}
}

// --filter: checked against the formats of every event the session enables before anything
// is made (a whole system's events one by one), then written into the session's instance
// only, before its events are enabled, and gone with it.
func TestSessionEventFilter(t *testing.T) {
	extra := map[string]string{}
	for _, ev := range []string{"sched_switch", "sched_wakeup"} {
		format, err := fixture.Read("6.12", "format.sched."+ev)
		if err != nil {
			t.Fatal(err)
		}
		extra["events/sched/"+ev+"/format"] = format
		extra["events/sched/"+ev+"/filter"] = "none\n"
		extra["events/sched/"+ev+"/enable"] = "0\n"
	}
	fs, _ := fakeFS(t, extra)
	id := ID{PID: 42, Nonce: "0123abcd"}
	before := snapshot(t, fs.Root())
	for _, c := range []struct {
		spec  Spec
		event string // the event named in the error, "" for ErrInvalid
	}{
		{Spec{EventFilter: "common_pid == 1"}, ""},
		{Spec{Events: []string{"sched:sched_switch"}, EventFilter: "prev_pidd == 1"}, "sched:sched_switch"},
		{Spec{Events: []string{"sched"}, EventFilter: "prev_pid == 1"}, "sched:sched_wakeup"},
		{Spec{Events: []string{"sched:sched_wakeup"}, EventFilter: "comm == 5"}, "sched:sched_wakeup"},
		{Spec{Events: []string{"sched:sched_wakeup"}, EventFilter: "pid == 1 &&"}, ""},
	} {
		_, err := New(fs, id, c.spec)
		var fe *eventfilter.Error
		switch {
		case c.event == "" && c.spec.Events == nil && !errors.Is(err, ErrInvalid):
			t.Errorf("%+v: %v, want invalid", c.spec, err)
		case c.spec.Events != nil && (!errors.As(err, &fe) || fe.Event != c.event):
			t.Errorf("%+v: %v, want a filter error about %q", c.spec, err, c.event)
		}
	}
	if after := snapshot(t, fs.Root()); !mapsEqual(before, after) {
		t.Errorf("a refused filter changed something:\nbefore %v\nafter  %v", before, after)
	}
	// common_pid is every event's: the whole system takes it.
	if _, err := New(fs, id, Spec{Events: []string{"sched"}, EventFilter: "common_pid != 1"}); err != nil {
		t.Errorf("sched with common_pid: %v", err)
	}
	s, err := New(fs, id, Spec{Events: []string{"sched:sched_switch"}, EventFilter: "prev_pid == 1 || next_pid == 1"})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	if got := read(t, fs, "instances/"+id.Instance()+"/events/sched/sched_switch/filter"); got != "prev_pid == 1 || next_pid == 1" {
		t.Errorf("the instance's filter: %q", got)
	}
	if got := read(t, fs, "events/sched/sched_switch/filter"); got != "none" {
		t.Errorf("the top level's filter: %q", got)
	}
	s.Teardown()
	if after := snapshot(t, fs.Root()); !mapsEqual(before, after) {
		t.Errorf("the session left something:\nbefore %v\nafter  %v", before, after)
	}
}

// The events a session defines for its triggers and the triggers (Spec.Dynamic, Spec.Triggers)
// are checked by New, which writes nothing, and written by Start after the tracer, in order,
// each definition before the triggers; Teardown removes the triggers first, newest first, then
// the definitions, newest first.
func TestSpecDynamicAndTriggers(t *testing.T) {
	fs, _ := fakeFS(t, map[string]string{"synthetic_events": ""})
	id := ID{PID: 42, Nonce: "0123abcd"}
	before := snapshot(t, fs.Root())
	for _, c := range []struct {
		name string
		spec Spec
	}{
		{"unknown kind", Spec{Dynamic: []Dynamic{{Kind: 'u', Event: "x", Place: "vfs_read"}}}},
		{"bad event name", Spec{Dynamic: []Dynamic{{Kind: 'p', Event: "a/b", Place: "vfs_read"}}}},
		{"place with a space", Spec{Dynamic: []Dynamic{{Kind: 'p', Event: "x", Place: "vfs_read x=%di"}}}},
		{"another's synthetic event", Spec{Dynamic: []Dynamic{{Kind: 's', Event: "lat", Place: "u64 lat"}}}},
		{"trigger text with a newline", Spec{Triggers: []Trigger{{System: "sched", Event: "sched_switch", Text: "hist:keys=prev_pid\nx"}}}},
		{"trigger on a bad event", Spec{Triggers: []Trigger{{System: "..", Event: "x", Text: "hist:keys=a"}}}},
	} {
		if _, err := New(fs, id, c.spec); !errors.Is(err, ErrInvalid) {
			t.Errorf("%s: New = %v, want ErrInvalid", c.name, err)
		}
	}
	if after := snapshot(t, fs.Root()); !mapsEqual(before, after) {
		t.Fatalf("New changed the tracing directory")
	}
	var log bytes.Buffer
	fs.Log = &log
	spec := Spec{
		Dynamic:  []Dynamic{{Kind: 'p', Event: "e", Place: "vfs_read"}, {Kind: 's', Event: id.Synthetic("lat"), Place: "u64 lat"}},
		Triggers: []Trigger{{System: "sched", Event: "sched_switch", Text: "hist:keys=prev_pid"}},
	}
	s, err := New(fs, id, spec)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	in := fs.Path("instances/" + id.Instance())
	want := []string{
		"write " + fs.Path("kprobe_events") + ` "p:` + id.Group() + `/e vfs_read\n"`,
		"write " + fs.Path("synthetic_events") + ` "` + id.Synthetic("lat") + ` u64 lat\n"`,
		"write " + in + `/events/sched/sched_switch/trigger "hist:keys=prev_pid\n"`,
	}
	lines := strings.Split(strings.TrimSpace(log.String()), "\n")
	if len(lines) < len(want) || strings.Join(lines[len(lines)-3:], "\n") != "+ "+strings.Join(want, "\n+ ") {
		t.Fatalf("Start wrote:\n%s\nwant it to end with:\n%s", log.String(), strings.Join(want, "\n"))
	}
	log.Reset()
	s.Teardown()
	lines = strings.Split(strings.TrimSpace(log.String()), "\n")
	want = []string{
		"write " + in + `/events/sched/sched_switch/trigger "!hist:keys=prev_pid\n"`,
		"write " + fs.Path("synthetic_events") + ` "!` + id.Synthetic("lat") + `\n"`,
		"write " + fs.Path("kprobe_events") + ` "-:` + id.Group() + `/e\n"`,
	}
	if len(lines) < 3 || strings.Join(lines[:3], "\n") != "+ "+strings.Join(want, "\n+ ") {
		t.Fatalf("Teardown wrote:\n%s\nwant it to start with:\n%s", log.String(), strings.Join(want, "\n"))
	}
}

// A declared owner: its declaration written before its set-up and marked applied after, its
// pieces named after it (never a session's, so Leftovers does not list them), no hold kept;
// Undeclare removes what it wrote and the declaration, and a second Undeclare says there is
// no such owner. Bad names and graph set-ups are refused, with nothing written.
func TestDeclaredOwner(t *testing.T) {
	fs, _ := fakeFS(t, map[string]string{"synthetic_events": ""})
	before := snapshot(t, fs.Root())
	for _, name := range []string{"", "Bad", "a-b", "a_b", strings.Repeat("x", 33)} {
		if _, err := Declare(fs, name, Spec{}); !errors.Is(err, ErrInvalid) {
			t.Errorf("Declare(%q) = %v, want ErrInvalid", name, err)
		}
	}
	if _, err := Declare(fs, "g", Spec{Graph: &GraphSpec{Roots: mustCompile(t, "vfs_read")}}); !errors.Is(err, ErrInvalid) {
		t.Errorf("a graph: %v", err)
	}
	if after := snapshot(t, fs.Root()); !mapsEqual(before, after) {
		t.Fatal("refused declarations changed the tracing directory")
	}
	spec := Spec{Events: []string{"sched:sched_switch"},
		Dynamic:  []Dynamic{{Kind: 'p', Event: "e", Place: "vfs_read"}},
		Triggers: []Trigger{{System: "sched", Event: "sched_switch", Text: "hist:keys=common_pid"}}} // the fake defines no probe's events
	o, err := Declare(fs, "rec1", spec)
	if err != nil {
		t.Fatal(err)
	}
	if o.Instance != "ftctl-owned-rec1" || o.Group != "ftctl_owned_rec1" || o.State != "applied" {
		t.Errorf("owner %+v", o)
	}
	if got := read(t, fs, "instances/ftctl-owned-rec1/tracing_on"); got != "1" {
		t.Errorf("tracing_on %q, want 1: a declared owner traces once applied", got)
	}
	if got := read(t, fs, "instances/ftctl-owned-rec1/set_event_notrace_pid"); got != "" {
		t.Errorf("set_event_notrace_pid %q: the declaring process's threads, whose ids others will have, are left out of the owner's instance", got)
	}
	if _, err := Declare(fs, "rec1", spec); !errors.Is(err, ErrOwnerExists) {
		t.Errorf("declared twice: %v", err)
	}
	left, err := Leftovers(fs, ID{})
	if err != nil || len(left) != 0 {
		t.Errorf("Leftovers lists a declared owner's pieces: %v %v", left, err)
	}
	owners, err := Owners(fs)
	if err != nil || len(owners) != 1 || owners[0].Name != "rec1" || len(owners[0].Triggers) != 1 {
		t.Fatalf("Owners = %+v, %v", owners, err)
	}
	if _, err := Undeclare(fs, "rec1"); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(fs.Path("instances/ftctl-owned-rec1")); !os.IsNotExist(err) {
		t.Errorf("the instance is still there: %v", err)
	}
	if owners, _ := Owners(fs); len(owners) != 0 {
		t.Errorf("declarations left: %+v", owners)
	}
	if _, err := Undeclare(fs, "rec1"); !errors.Is(err, ErrNoOwner) {
		t.Errorf("second Undeclare: %v", err)
	}
}
