package tracefs

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// fakeTracefs builds a directory that looks like the tracing directory of the given fixture
// kernel: enough for the read paths (status, features, instances). Writes to it are plain file
// writes, which is what lets the tests below see exactly how ftctl opens files.
func fakeTracefs(t *testing.T, kernel string) *FS {
	t.Helper()
	root := t.TempDir()
	files := map[string]string{
		"README":                     fixture(t, kernel, "README"),
		"available_tracers":          fixture(t, kernel, "available_tracers"),
		"current_tracer":             "nop\n",
		"tracing_on":                 "1\n",
		"buffer_size_kb":             fixture(t, kernel, "buffer_size_kb"),
		"buffer_total_size_kb":       "14 (expanded: 2816)\n",
		"set_ftrace_filter":          fixture(t, "6.12", "set_ftrace_filter.commands"),
		"set_ftrace_notrace":         "#### no functions disabled ####\n",
		"set_ftrace_pid":             "no pid\n",
		"set_event":                  "sched:sched_switch\nkprobes:ftx\n",
		"kprobe_events":              fixture(t, "6.12", "kprobe_events"),
		"dynamic_events":             "",
		"uprobe_events":              "",
		"error_log":                  "",
		"available_filter_functions": "vfs_read\nvfs_write\n",
		"trace_pipe":                 "",
		"trace_marker":               "",
		"options/function-fork":      "0\n",
		"options/record-tgid":        "0\n",
		"per_cpu/cpu0/stats":         fixture(t, kernel, "cpu0.stats"),
		"per_cpu/cpu1/stats":         "entries: 3\noverrun: 12\ndropped events: 1\n",
	}
	for name, body := range files {
		p := filepath.Join(root, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Mkdir(filepath.Join(root, "instances"), 0o755); err != nil {
		t.Fatal(err)
	}
	return &FS{Mount: Mount{Path: root, Found: "test"}}
}

// Write must never truncate: on set_ftrace_filter that empties the filter (every function
// traced) and on kprobe_events it deletes every probe on the system. A regular file shows it:
// writing over the start of existing content leaves the rest in place.
func TestWriteNeverTruncates(t *testing.T) {
	f := fakeTracefs(t, "6.12")
	p := f.Top().Path("set_ftrace_filter")
	if err := os.WriteFile(p, []byte("0123456789"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := f.Top().Write("set_ftrace_filter", "ab\n"); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(p); string(b) != "ab\n3456789" {
		t.Fatalf("Write truncated or misplaced data: %q", b)
	}
	if err := f.Top().Truncate("set_ftrace_filter"); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(p); len(b) != 0 {
		t.Fatalf("Truncate left %q", b)
	}
}

func TestDryRunWritesNothing(t *testing.T) {
	f := fakeTracefs(t, "6.12")
	var out bytes.Buffer
	f.DryRun = &out
	before, _ := os.ReadFile(f.Top().Path("kprobe_events"))
	if err := f.Top().Write("kprobe_events", "p:ftctl/x vfs_read\n"); err != nil {
		t.Fatal(err)
	}
	if err := f.Top().Truncate("error_log"); err != nil {
		t.Fatal(err)
	}
	in, created, err := f.Ensure("newone")
	if err != nil || !created {
		t.Fatal(err, created)
	}
	if err := f.Remove("old"); err != nil {
		t.Fatal(err)
	}
	after, _ := os.ReadFile(f.Top().Path("kprobe_events"))
	if !bytes.Equal(before, after) {
		t.Error("dry run changed kprobe_events")
	}
	if _, err := os.Stat(in.Dir()); !errors.Is(err, fs.ErrNotExist) {
		t.Error("dry run created the instance")
	}
	want := fmt.Sprintf("dry-run: write %[1]s/kprobe_events \"p:ftctl/x vfs_read\\n\"\n"+
		"dry-run: truncate %[1]s/error_log\ndry-run: mkdir %[1]s/instances/newone\ndry-run: rmdir %[1]s/instances/old\n", f.Root())
	if out.String() != want {
		t.Errorf("dry-run plan:\n%s\nwant:\n%s", out.String(), want)
	}
}

func TestWriteErrorsNameFileAndData(t *testing.T) {
	f := fakeTracefs(t, "6.12")
	err := f.Top().Write("no_such_file", "x\n")
	var e *Error
	if !errors.As(err, &e) || !errors.Is(err, ErrUnavailable) || !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("%v", err)
	}
	if !strings.Contains(err.Error(), filepath.Join(f.Root(), "no_such_file")) {
		t.Errorf("error does not name the file: %v", err)
	}
}

func TestOpErrorClasses(t *testing.T) {
	f := &FS{Mount: Mount{Path: "/nonexistent"}}
	cases := []struct {
		op    string
		errno unix.Errno
		class error
		is    error
	}{
		{"open", unix.EACCES, ErrPermission, fs.ErrPermission},
		{"open", unix.EPERM, ErrForbidden, fs.ErrPermission},
		{"open", unix.ENODEV, ErrDisabled, nil},
		{"write", unix.EBUSY, ErrBusy, nil},
		{"open", unix.ENOENT, ErrUnavailable, fs.ErrNotExist},
		{"write", unix.ENOENT, ErrRejected, fs.ErrNotExist},
		{"write", unix.EINVAL, ErrRejected, nil},
		{"write", unix.EEXIST, ErrRejected, fs.ErrExist},
		{"write", unix.E2BIG, ErrRejected, nil},
		{"read", unix.EIO, ErrIO, nil},
	}
	for _, c := range cases {
		err := f.opError(c.op, "/nonexistent/kprobe_events", "data", &fs.PathError{Op: c.op, Path: "x", Err: c.errno})
		if !errors.Is(err, c.class) || !errors.Is(err, c.errno) || (c.is != nil && !errors.Is(err, c.is)) {
			t.Errorf("%s %v: %v is not %v / %v", c.op, c.errno, err, c.class, c.is)
		}
		if !strings.Contains(err.Error(), unix.ErrnoName(c.errno)) || !strings.Contains(err.Error(), "/nonexistent/kprobe_events") {
			t.Errorf("%s %v: message %q lacks the errno name or the path", c.op, c.errno, err)
		}
	}
	if err := f.opError("write", "p", "d", nil); err != nil {
		t.Errorf("nil error became %v", err)
	}
}

func TestErrorMessageIncludesKernelLog(t *testing.T) {
	e := &Error{Op: "write", Path: "/t/kprobe_events", Data: "p:fty vfs_read %zz\n", Class: ErrRejected, Errno: unix.EINVAL,
		KernelLog: ParseErrorLog(fixture(t, "6.12", "error_log.kprobe"))}
	msg := e.Error()
	for _, want := range []string{`writing "p:fty vfs_read %zz\n" to /t/kprobe_events`, "invalid argument (EINVAL)",
		"kernel error_log: trace_kprobe: Invalid register name", "Command: p:fty vfs_read %zz"} {
		if !strings.Contains(msg, want) {
			t.Errorf("message lacks %q:\n%s", want, msg)
		}
	}
}

func TestLogsErrors(t *testing.T) {
	for file, want := range map[string]bool{
		"kprobe_events": true, "dynamic_events": true, "events/sched/sched_switch/filter": true,
		"events/kprobes/x/trigger": true, "set_ftrace_filter": false, "current_tracer": false, "events/enable": false,
	} {
		if logsErrors(file) != want {
			t.Errorf("logsErrors(%q) != %v", file, want)
		}
	}
}

// An error_log entry about the written text makes a refused write a rejection whatever the
// errno (the event filter parser answers some mistakes with EPERM, ENOENT or ESRCH); another
// writer's entry does not.
func TestExplains(t *testing.T) {
	log := ParseErrorLog(`[    9.2] event filter parse error: error: Too many terms in predicate expression
  Command: prev_pid == 1 next_pid == 2
                         ^
[    9.3] trace_kprobe: error: Invalid register name
  Command: p:fty vfs_read %zz
                          ^
`)
	for data, want := range map[string]bool{
		"prev_pid == 1 next_pid == 2\n": true,
		"p:fty vfs_read  %zz\n":         true, // the probe parser re-joins words with one space
		"prev_pid == 1\n":               false,
		"":                              false,
	} {
		if got := explains(log, data); got != want {
			t.Errorf("explains(%q) = %v", data, got)
		}
	}
}

// One feature set, read off the files: the hist trigger grammar and the synthetic events come
// from the README and the files present, as the probe grammar does, so no caller reads the
// README again to decide.
func TestDetectFeaturesHist(t *testing.T) {
	for _, k := range []string{"6.1", "6.12"} {
		fs := fakeTracefs(t, k)
		ft := fs.DetectFeatures()
		if !ft.HistTriggers || ft.SyntheticEvents || ft.FunctionProfiler {
			t.Errorf("%s: hist %v synthetic %v profiler %v, want true false false", k, ft.HistTriggers, ft.SyntheticEvents, ft.FunctionProfiler)
		}
		if ft.Hist.CommonStacktrace != (k == "6.12") {
			t.Errorf("%s: common_stacktrace %v", k, ft.Hist.CommonStacktrace)
		}
		if len(ft.Hist.Modifiers) == 0 {
			t.Errorf("%s: no hist modifiers", k)
		}
		if !ft.Hist.OnmaxTrace {
			t.Errorf("%s: onmax().trace() not detected", k)
		}
		if err := os.WriteFile(fs.Path("synthetic_events"), nil, 0o644); err != nil {
			t.Fatal(err)
		}
		if ft := fs.DetectFeatures(); !ft.SyntheticEvents || !strings.Contains(strings.Join(ft.Names(), " "), "hist-triggers") {
			t.Errorf("%s: synthetic_events present, features %v", k, ft.Names())
		}
		if err := os.WriteFile(fs.Path("README"), []byte("tracing mini-HOWTO:\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		if ft := fs.DetectFeatures(); ft.HistTriggers || len(ft.Hist.Modifiers) != 0 {
			t.Errorf("%s: a README without hist triggers: %+v", k, ft.Hist)
		}
	}
}

// An ENOENT says what was missing: an instance, a directory of the tree, or a file this kernel
// does not provide (every ENOENT said the last before).
func TestMissingReason(t *testing.T) {
	fs := fakeTracefs(t, "6.12")
	if err := os.MkdirAll(fs.Path("instances/real/events"), 0o755); err != nil {
		t.Fatal(err)
	}
	for rel, want := range map[string]string{
		"instances/typo/trace":              `there is no instance "typo"`,
		"instances/real/events/sched/x/fmt": "instances/real/events/sched does not exist here",
		"instances/real/no_such_file":       "this kernel does not provide it",
		"no_such_file":                      "this kernel does not provide it",
	} {
		_, err := fs.Top().ReadFile(rel)
		if !errors.Is(err, ErrUnavailable) || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v, want ErrUnavailable saying %q", rel, err, want)
		}
	}
}

// A read-only mount: EROFS is its own class (exit 4 in cmd/), and the reason says why.
func TestReadOnlyWrite(t *testing.T) {
	fs := fakeTracefs(t, "6.12")
	err := fs.opError("write", fs.Path("tracing_on"), "0", unix.EROFS)
	if !errors.Is(err, ErrReadOnly) || !errors.Is(err, unix.EROFS) || !strings.Contains(err.Error(), "mounted read-only") {
		t.Errorf("EROFS: %v", err)
	}
}

// A root given by --tracefs must be a tracefs or laid out as one.
func TestLocateChecksLayout(t *testing.T) {
	empty := t.TempDir()
	if _, err := Locate(empty, "--tracefs"); !errors.Is(err, ErrNotMounted) || !strings.Contains(err.Error(), "no tracefs is mounted here") {
		t.Errorf("an empty directory: %v", err)
	}
	debug := t.TempDir()
	if err := os.MkdirAll(filepath.Join(debug, "tracing"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(debug, "tracing", "trace"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := Locate(debug, "--tracefs"); err == nil || !strings.Contains(err.Error(), "did you mean "+filepath.Join(debug, "tracing")) {
		t.Errorf("debugfs's root: %v", err)
	}
	m, err := Locate(filepath.Join(debug, "tracing"), "--tracefs")
	if err != nil || m.ReadOnly {
		t.Errorf("a tracing directory: %+v %v", m, err)
	}
	file := filepath.Join(debug, "tracing", "trace")
	if _, err := Locate(file, "--tracefs"); !errors.Is(err, ErrBadPath) || !strings.Contains(err.Error(), "not a directory") {
		t.Errorf("a file: %v", err)
	}
	if _, err := Locate(filepath.Join(empty, "nope"), "FTCTL_TRACEFS"); !errors.Is(err, ErrNotMounted) {
		t.Errorf("a missing path: %v", err)
	}
}

// onmax().trace() needs both the handler and the generic trace() action announced: a README
// without either line is a kernel without it.
func TestParseHistReadmeOnmax(t *testing.T) {
	b, err := os.ReadFile("testdata/6.1/README")
	if err != nil {
		t.Fatal(err)
	}
	readme := string(b)
	for _, drop := range []string{"onmax(var) ", "trace(<synthetic_event>,param list)"} {
		var kept []string
		for _, l := range strings.Split(readme, "\n") {
			if !strings.Contains(l, drop) {
				kept = append(kept, l)
			}
		}
		if ParseHistReadme(strings.Join(kept, "\n")).OnmaxTrace {
			t.Errorf("without %q: OnmaxTrace", drop)
		}
	}
	if !ParseHistReadme(readme).OnmaxTrace {
		t.Error("6.1: no OnmaxTrace")
	}
}
