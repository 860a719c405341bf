package cmd

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/ftctl/ftctl/internal/outputcheck"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/spf13/cobra"
	"golang.org/x/sys/unix"

	"github.com/ftctl/ftctl/filters"
	"github.com/ftctl/ftctl/internal/fixture"
	"github.com/ftctl/ftctl/probes"
	"github.com/ftctl/ftctl/session"
	"github.com/ftctl/ftctl/tracefs"
)

func TestExitCodeTable(t *testing.T) {
	tfs := func(class, errno error) error {
		return &tracefs.Error{Op: "write", Path: "/t/x", Class: class, Errno: errno}
	}
	cases := []struct {
		err  error
		want int
	}{
		{nil, 0},
		{errors.New("boom"), 1},
		{InvalidInput(errors.New("bad flag")), 2},
		{tfs(tracefs.ErrBadInstance, nil), 2},
		{tfs(tracefs.ErrNoInstance, nil), 2},
		{tfs(tracefs.ErrRejected, unix.EINVAL), 3},
		{tfs(tracefs.ErrRejected, unix.EEXIST), 3},
		{tfs(tracefs.ErrPermission, unix.EACCES), 4},
		{tfs(tracefs.ErrForbidden, unix.EPERM), 4},
		{tfs(tracefs.ErrDisabled, unix.ENODEV), 4},
		{tfs(tracefs.ErrUnavailable, unix.ENOENT), 4},
		{tfs(tracefs.ErrNotMounted, nil), 4},
		{tfs(tracefs.ErrBusy, unix.EBUSY), 5},
		{fmt.Errorf("wrapped: %w", tfs(tracefs.ErrBusy, nil)), 5},
		{ErrInterrupted, 130},
		{context.Canceled, 130},
		{tfs(tracefs.ErrIO, unix.EIO), 1},
		{fmt.Errorf("x: %w", filters.ErrPattern), 2},
		{fmt.Errorf("x: %w", filters.ErrWouldEmpty), 2},
		{fmt.Errorf("x: %w", probes.ErrSyntax), 2},
		{fmt.Errorf("x: %w", probes.ErrEventExists), 2},
		{fmt.Errorf("x: %w", session.ErrInvalid), 2},
		{tfs(tracefs.ErrBadPath, unix.ENOENT), 2},
		{&SignalError{Signal: syscall.SIGTERM}, 143},
		{&SignalError{Signal: syscall.SIGHUP}, 129},
		{&CommandStartError{Name: "x", NotFound: true}, 127},
		{&CommandStartError{Name: "x"}, 126},
		// The probe grammar's refusals are invalid input by their sentinel, wherever they
		// come from (probe add, trace -p), and so is an event that exists (issue 14 item 3).
		{&probes.SyntaxError{Source: "p:x vfs_read %zz", Pos: 13, Msg: "Invalid register name"}, 2},
		{fmt.Errorf("starting the session: %w", &probes.SyntaxError{Msg: "x"}), 2},
		{&probes.ExistsError{Group: "kprobes", Event: "other"}, 2},
	}
	for _, c := range cases {
		if got := ExitCode(c.err); got != c.want {
			t.Errorf("ExitCode(%v) = %d, want %d", c.err, got, c.want)
		}
		if !slices.ContainsFunc(ExitStatuses, func(s ExitStatus) bool { return s.Code == c.want }) {
			t.Errorf("exit code %d is missing from ExitStatuses, the table README and ftctl(1) show", c.want)
		}
	}
	if !slices.IsSortedFunc(ExitStatuses, func(a, b ExitStatus) int { return a.Code - b.Code }) {
		t.Error("ExitStatuses is not in ascending order")
	}
}

// fakeRoot makes a directory that looks enough like tracefs for status.
func fakeRoot(t *testing.T) string {
	t.Helper()
	root := t.TempDir()
	for name, body := range map[string]string{
		"current_tracer":             "function\n",
		"tracing_on":                 "0\n",
		"buffer_size_kb":             "4096\n",
		"buffer_total_size_kb":       "8192\n",
		"set_ftrace_filter":          "vfs_read\nvfs_write\n",
		"set_ftrace_notrace":         "#### no functions disabled ####\n",
		"set_event":                  "",
		"kprobe_events":              "p:ftctl/a vfs_read\np:kprobes/b\x1b[31m vfs_write\n",
		"available_tracers":          "function nop\n",
		"available_filter_functions": "vfs_read\n",
		"error_log":                  "",
		"set_ftrace_pid":             "",
		"trace_pipe":                 "",
		"trace_marker":               "",
		"per_cpu/cpu0/stats":         "overrun: 3\n",
	} {
		p := filepath.Join(root, name)
		os.MkdirAll(filepath.Dir(p), 0o755)
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	os.Mkdir(filepath.Join(root, "instances"), 0o755)
	return root
}

func run(t *testing.T, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errb bytes.Buffer
	code = Run(context.Background(), args, strings.NewReader(""), &out, &errb)
	if outputcheck.AsksJSON(args) {
		if _, err := outputSchemas.Check(out.Bytes()); err != nil {
			t.Errorf("ftctl %q: -o json does not match docs/json: %v\n%s", args, err, out.String())
		}
	}
	return code, out.String(), errb.String()
}

// outputSchemas checks every -o json output of run against the generated schemas.
var outputSchemas = outputcheck.New("../docs/json")

func TestStatusTextAndJSON(t *testing.T) {
	root := fakeRoot(t)
	code, out, errs := run(t, "--tracefs", root, "status")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	for _, want := range []string{"given by --tracefs", "function, tracing off", "4096 KiB per CPU", "2 functions",
		"notrace    none", "3 lost to overruns", "2 defined, 1 of them ftctl's", `kprobes/b\x1b[31m`} {
		if !strings.Contains(out, want) {
			t.Errorf("status text lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "\x1b") {
		t.Error("an escape sequence from kprobe_events reached the terminal")
	}

	code, out, _ = run(t, "--tracefs", root, "status", "-o", "json")
	if code != 0 {
		t.Fatal(code)
	}
	var st tracefs.Status
	if err := json.Unmarshal([]byte(out), &st); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if st.Tracefs.Path != root || st.Tracefs.Found != "--tracefs" || st.Kprobes.Owned != 1 || st.Instances[0].Filter.Functions != 2 {
		t.Errorf("%+v", st)
	}
}

func TestTracefsFromEnv(t *testing.T) {
	root := fakeRoot(t)
	t.Setenv("FTCTL_TRACEFS", root)
	code, out, errs := run(t, "status")
	if code != 0 || !strings.Contains(out, "given by FTCTL_TRACEFS") {
		t.Fatalf("exit %d: %s %s", code, out, errs)
	}
}

func TestInvalidInputExits2AndChangesNothing(t *testing.T) {
	root := fakeRoot(t)
	for _, args := range [][]string{
		{"-o", "yaml", "status"},
		{"-B", "a/b", "status"},
		{"-B", "..", "instance", "list"},
		{"-B", "", "status"},
		{"-B", strings.Repeat("n", 256), "status"},
		{"-B", "esc\x1b", "status"},
		{"instance", "create", "ok", "bad/name"},
		{"instance", "create"},
		{"status", "extra"},
		{"--no-such-flag"},
		{"--lock-timeout", "-1s", "instance", "create", "x"},
		{"--color", "sometimes", "status"},
		{"--color", "", "status"},
		{"nosuchcommand"},
	} {
		code, _, errs := run(t, append([]string{"--tracefs", root}, args...)...)
		if code != 2 {
			t.Errorf("%q: exit %d (%s), want 2", args, code, errs)
		}
		if strings.ContainsRune(errs, 0x1b) {
			t.Errorf("%q: raw escape in the error message", args)
		}
	}
	if ents, _ := os.ReadDir(filepath.Join(root, "instances")); len(ents) != 0 {
		t.Errorf("invalid input created %d instances", len(ents))
	}
}

func TestMissingInstanceForReads(t *testing.T) {
	root := fakeRoot(t)
	code, _, errs := run(t, "--tracefs", root, "-B", "ghost", "status")
	if code != 2 || !strings.Contains(errs, "ghost") {
		t.Fatalf("exit %d: %s", code, errs)
	}
	if _, err := os.Stat(filepath.Join(root, "instances/ghost")); !errors.Is(err, fs.ErrNotExist) {
		t.Fatal("a read command created the instance")
	}
}

func TestInstanceCommands(t *testing.T) {
	root := fakeRoot(t)
	code, out, errs := run(t, "--tracefs", root, "--dry-run", "instance", "create", "inc1")
	if code != 0 || !strings.Contains(out, "dry-run: mkdir "+filepath.Join(root, "instances/inc1")) {
		t.Fatalf("dry run: %d %q %q", code, out, errs)
	}
	if _, err := os.Stat(filepath.Join(root, "instances/inc1")); err == nil {
		t.Fatal("dry run created the instance")
	}
	code, _, errs = run(t, "--tracefs", root, "instance", "create", "inc1", "inc2")
	if code != 0 || !strings.Contains(errs, `created instance "inc1"`) {
		t.Fatalf("%d %s", code, errs)
	}
	code, out, _ = run(t, "--tracefs", root, "instance", "list", "-o", "json")
	if code != 0 || strings.Join(strings.Fields(payload(t, "instance-list", out)), "") != `["inc1","inc2"]` {
		t.Fatalf("%d %s", code, out)
	}
	code, _, errs = run(t, "--tracefs", root, "-q", "instance", "create", "inc1")
	if code != 0 || errs != "" {
		t.Fatalf("-q: %d %q", code, errs)
	}
	if code, _, _ = run(t, "--tracefs", root, "instance", "remove", "inc1", "inc1", "inc2"); code != 0 {
		t.Fatal(code)
	}
	if code, out, _ = run(t, "--tracefs", root, "instance", "list"); code != 0 || out != "" {
		t.Fatal(code, out)
	}
}

func TestWriterWaitsThenFailsBusy(t *testing.T) {
	root := fakeRoot(t)
	f := &tracefs.FS{Mount: tracefs.Mount{Path: root}}
	l, err := f.Lock(context.Background(), time.Second, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Unlock()
	code, _, errs := run(t, "--tracefs", root, "--lock-timeout", "100ms", "instance", "create", "x")
	if code != 5 || !strings.Contains(errs, fmt.Sprintf("pid %d", os.Getpid())) || !strings.Contains(errs, "(up to 100ms while it stays in the same hands)") {
		t.Fatalf("exit %d: %s", code, errs)
	}
	if _, err := os.Stat(filepath.Join(root, "instances/x")); err == nil {
		t.Fatal("created while the lock was held")
	}
}

func TestNotMountedExits4(t *testing.T) {
	code, _, errs := run(t, "--tracefs", filepath.Join(t.TempDir(), "missing"), "status")
	if code != 4 || !strings.Contains(errs, "missing") {
		t.Fatalf("%d %s", code, errs)
	}
}

// The options struct is what the flags parse into: runF captures it.
func TestStatusFlagsReachOptions(t *testing.T) {
	g := &Globals{In: strings.NewReader(""), Out: new(bytes.Buffer), Err: new(bytes.Buffer)}
	var got *StatusOptions
	root := NewRootCmd(g)
	for i, c := range root.Commands() {
		if c.Name() == "status" {
			root.RemoveCommand(c)
			root.AddCommand(NewCmdStatus(g, func(_ context.Context, o *StatusOptions) error { got = o; return nil }))
			_ = i
		}
	}
	root.SetArgs([]string{"-B", "inc", "-o", "json", "--dry-run", "-q", "--lock-timeout", "2s", "--color", "never", "status"})
	if err := root.Execute(); err != nil {
		t.Fatal(err)
	}
	if got == nil || got.G.Instance != "inc" || got.G.Output != "json" || !got.G.DryRun || !got.G.Quiet || got.G.LockTimeout != 2*time.Second ||
		got.G.Color != "never" {
		t.Fatalf("%+v", got)
	}
}

// --color: always and never win over everything; auto colours a terminal only, unless NO_COLOR
// is set to anything but "" (no-color.org: "0" and "false" too) or TERM is dumb.
func TestColorWanted(t *testing.T) {
	for _, c := range []struct {
		mode, noColor, term string
		terminal, want      bool
	}{
		{"auto", "", "xterm", true, true},
		{"", "", "xterm", true, true}, // a Globals built by hand: auto
		{"auto", "", "xterm", false, false},
		{"auto", "1", "xterm", true, false},
		{"auto", "0", "xterm", true, false},
		{"auto", "false", "xterm", true, false},
		{"auto", "", "dumb", true, false},
		{"always", "1", "dumb", false, true},
		{"always", "", "xterm", false, true},
		{"never", "", "xterm-256color", true, false},
	} {
		env := map[string]string{"NO_COLOR": c.noColor, "TERM": c.term}
		if got := colorWanted(c.mode, func(k string) string { return env[k] }, c.terminal); got != c.want {
			t.Errorf("--color %q, NO_COLOR=%q, TERM=%q, terminal %v: colour %v, want %v", c.mode, c.noColor, c.term, c.terminal, got, c.want)
		}
	}
}

// --color reaches the output: report's text has ANSI colours into a buffer with --color always
// (NO_COLOR set), none with auto (not a terminal) or never.
func TestColorFlagReachesOutput(t *testing.T) {
	file := filepath.Join("..", "stream", "testdata", "6.12", "tp.v7zstd.dat")
	t.Setenv("NO_COLOR", "1")
	t.Setenv("TERM", "xterm-256color")
	for mode, want := range map[string]bool{"always": true, "auto": false, "never": false} {
		code, out, errs := run(t, "--color", mode, "report", file)
		if code != 0 {
			t.Fatalf("--color %s: exit %d: %s", mode, code, errs)
		}
		if got := strings.Contains(out, "\x1b["); got != want {
			t.Errorf("--color %s: colours %v, want %v", mode, got, want)
		}
	}
}

func TestEveryCommandHasHelp(t *testing.T) {
	g := &Globals{In: strings.NewReader(""), Out: new(bytes.Buffer), Err: new(bytes.Buffer)}
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		if c.Short == "" {
			t.Errorf("%s has no short help", c.CommandPath())
		}
		for _, s := range c.Commands() {
			walk(s)
		}
	}
	walk(NewRootCmd(g))
}

// fakeRootWithFunctions adds the 6.12 function index to a fake tracing directory.
func fakeRootWithFunctions(t *testing.T) string {
	t.Helper()
	root := fakeRoot(t)
	b, err := fixture.Read("6.12", "available_filter_functions")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(root, "available_filter_functions"), []byte(b), 0o644); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(root, "README"), []byte("tracing mini-HOWTO:\n"), 0o644)
	return root
}

func TestFunctionsPreview(t *testing.T) {
	root := fakeRootWithFunctions(t)
	code, out, errs := run(t, "--tracefs", root, "functions", "vfs_read", "*:mod:nls_utf8")
	if code != 0 || !strings.Contains(out, "  vfs_read\n") || !strings.Contains(out, "char2uni [nls_utf8]") {
		t.Fatalf("%d %q %q", code, out, errs)
	}
	code, out, _ = run(t, "--tracefs", root, "functions", "--count", "vfs_*")
	if code != 0 || strings.TrimSpace(out) == "0" {
		t.Fatalf("count: %d %q", code, out)
	}
	code, out, _ = run(t, "--tracefs", root, "functions", "-o", "json", "uni2char:mod:nls*")
	var recs []struct {
		Name, Module string
		Index        int
	}
	if err := json.Unmarshal([]byte(payload(t, "functions", out)), &recs); code != 0 || err != nil || len(recs) != 1 || recs[0].Module != "nls_utf8" || recs[0].Index != 42871 {
		t.Fatalf("json: %d %v %+v", code, err, recs)
	}
	code, _, errs = run(t, "--tracefs", root, "functions", "vfs_raed")
	if code != 2 || !strings.Contains(errs, "close matches: vfs_read") {
		t.Fatalf("no match: %d %q", code, errs)
	}
	code, _, errs = run(t, "--tracefs", root, "functions", "--regex", "^vfs_(read|write)$")
	if code != 0 {
		t.Fatalf("regex: %d %s", code, errs)
	}
}

func TestFilterDryRunPlansAndWritesNothing(t *testing.T) {
	root := fakeRootWithFunctions(t)
	before, _ := os.ReadFile(filepath.Join(root, "set_ftrace_filter"))
	code, out, errs := run(t, "--tracefs", root, "--dry-run", "filter", "set", "vfs_read", "--except", "uni2char")
	if code != 0 {
		t.Fatalf("%d %s", code, errs)
	}
	after, _ := os.ReadFile(filepath.Join(root, "set_ftrace_filter"))
	if string(before) != string(after) {
		t.Fatal("dry run wrote the filter")
	}
	// notrace gets N' first, then the filter is swapped, then notrace becomes N'.
	iNotrace := strings.Index(out, "set_ftrace_notrace for writing")
	iFilter := strings.Index(out, "set_ftrace_filter for writing")
	iNotrace2 := strings.LastIndex(out, "set_ftrace_notrace for writing")
	if iNotrace < 0 || iFilter < iNotrace || iNotrace2 < iFilter {
		t.Fatalf("order of the transition:\n%s", out)
	}
	for _, want := range []string{`"42871\n"`, "# + uni2char [nls_utf8]", "# + vfs_read", `"!`, "# - vfs_write",
		"set_ftrace_filter: 1 function (+0 -1), dry run"} {
		if !strings.Contains(out, want) {
			t.Errorf("plan lacks %q:\n%s", want, out)
		}
	}
	if code, _, errs := run(t, "--tracefs", root, "filter", "set", "nope_nothing"); code != 2 || !strings.Contains(errs, "nope_nothing") {
		t.Errorf("no match: %d %s", code, errs)
	}
	if code, _, errs := run(t, "--tracefs", root, "filter", "remove", "vfs_read", "vfs_write"); code != 2 || !strings.Contains(errs, "every function") {
		t.Errorf("emptying remove: %d %s", code, errs)
	}
	if code, _, errs := run(t, "--tracefs", root, "filter", "clear"); code != 2 || !strings.Contains(errs, "function tracer is active") {
		t.Errorf("clear while tracing: %d %s", code, errs)
	}
	if code, _, errs := run(t, "--tracefs", root, "filter", "set", "!vfs_read"); code != 2 || !strings.Contains(errs, "remove") {
		t.Errorf("bang: %d %s", code, errs)
	}
}

func TestPatternsFromFile(t *testing.T) {
	root := fakeRootWithFunctions(t)
	list := filepath.Join(t.TempDir(), "funcs.txt")
	os.WriteFile(list, []byte("# the read path\nvfs_read   # and a comment\n\n  ksys_read\n"), 0o644)
	code, out, errs := run(t, "--tracefs", root, "functions", "--from-file", list)
	if code != 0 || strings.Count(out, "\n") != 2 || !strings.Contains(out, "ksys_read") {
		t.Fatalf("%d %q %q", code, out, errs)
	}
	var stdout, stderr bytes.Buffer
	code = Run(context.Background(), []string{"--tracefs", root, "functions", "--count", "--from-file", "-"},
		strings.NewReader("vfs_read\nvfs_write\n"), &stdout, &stderr)
	if code != 0 || strings.TrimSpace(stdout.String()) != "2" {
		t.Fatalf("stdin: %d %q %q", code, stdout.String(), stderr.String())
	}
	if code, _, _ := run(t, "--tracefs", root, "functions", "--from-file", "/nonexistent"); code != 2 {
		t.Fatalf("missing file: %d", code)
	}
}

// brokenPipe accepts a few bytes, then fails like a closed pipe (| head).
type brokenPipe struct{ left int }

func (b *brokenPipe) Write(p []byte) (int, error) {
	if b.left <= 0 {
		return 0, &os.PathError{Op: "write", Path: "/dev/stdout", Err: syscall.EPIPE}
	}
	if len(p) > b.left {
		n := b.left
		b.left = 0
		return n, &os.PathError{Op: "write", Path: "/dev/stdout", Err: syscall.EPIPE}
	}
	b.left -= len(p)
	return len(p), nil
}

func TestClosedStdoutEndsQuietly(t *testing.T) {
	root := fakeRootWithFunctions(t)
	var errb bytes.Buffer
	code := Run(context.Background(), []string{"--tracefs", root, "functions"}, strings.NewReader(""), &brokenPipe{left: 100}, &errb)
	if code != 0 || errb.Len() != 0 {
		t.Fatalf("exit %d, stderr %q", code, errb.String())
	}
}

// TestColorOnlyOnTerminals: /dev/null is a character device but not a terminal, a pipe and a
// buffer neither: no colour for any (the one terminal check, tracefs.IsTerminal, decides).
func TestColorOnlyOnTerminals(t *testing.T) {
	null, err := os.OpenFile(os.DevNull, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer null.Close()
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	defer w.Close()
	t.Setenv("NO_COLOR", "")
	t.Setenv("TERM", "xterm")
	for name, x := range map[string]io.Writer{"/dev/null": null, "pipe": w, "buffer": new(bytes.Buffer)} {
		if (&Globals{}).colorFor(x) || isTerminal(x) {
			t.Errorf("%s: taken for a terminal", name)
		}
	}
}

// TestNoControlBytesReachTheTerminal: names from the user or the kernel that hold terminal
// control sequences come out escaped, in errors and in output alike.
func TestNoControlBytesReachTheTerminal(t *testing.T) {
	root := fakeRoot(t)
	os.Mkdir(filepath.Join(root, "instances", "odd\x1b]2;pwned\x07"), 0o755)
	for _, args := range [][]string{
		{"-B", "ghost\x1b]2;pwned\x07", "status"},
		{"-B", "ghost\x1b]2;pwned\x07", "filter", "show"},
		{"instance", "create", "bad\x1b[31mname"},
		{"probe", "remove", "kprobes/b\x1b[31m"},
		{"probe", "list"},
		{"instance", "list"},
		{"filter", "set", "no_such\x1b[2J"},
		{"functions", "vfs\x1b[2J"},
		{"stream", "--event", "\x1b[2J"},
	} {
		code, out, errs := run(t, append([]string{"--tracefs", root}, args...)...)
		for _, s := range []string{out, errs} {
			if i := strings.IndexFunc(s, func(r rune) bool { return r < 0x20 && r != '\n' && r != '\t' || r == 0x7f }); i >= 0 {
				t.Errorf("%q (exit %d) wrote a control byte: %q", args, code, s)
			}
		}
	}
}

// Under `trace -- COMMAND`, ftctl's own failures cannot be mistaken for the command's: the
// env/timeout convention (125 ftctl failed, 126 the command cannot run, 127 not found).
func TestTraceCommandExitConvention(t *testing.T) {
	root := fakeRoot(t)
	noexec := filepath.Join(t.TempDir(), "script")
	os.WriteFile(noexec, []byte("#!/bin/sh\n"), 0o644)
	for _, c := range []struct {
		args []string
		code int
	}{
		{[]string{"trace", "--", "/no/such/command"}, 127},
		{[]string{"trace", "--", "no-such-command-in-path"}, 127},
		{[]string{"trace", "--", noexec}, 126},
		{[]string{"trace", "-f", "[", "--", "/bin/true"}, 125},
		{[]string{"trace", "--duration", "-1s", "--", "/bin/true"}, 125},
		{[]string{"trace", "--no-such-flag", "--", "/bin/true"}, 125},
		{[]string{"-o", "yaml", "trace", "--", "/bin/true"}, 125},
		{[]string{"-B", "x", "trace", "--", "/bin/true"}, 125},
		// Without a command, the table's usual codes.
		{[]string{"trace", "-f", "["}, 2},
		{[]string{"trace", "--no-such-flag"}, 2},
	} {
		code, _, errs := run(t, append([]string{"--tracefs", root}, c.args...)...)
		if code != c.code {
			t.Errorf("%q: exit %d, want %d: %s", c.args, code, c.code, errs)
		}
	}
}

// Typos are invalid input (exit 2) with close names suggested, at every level; the aliases
// people type (ls, rm) work; a group named alone prints its help (exit 0).
func TestUnknownSubcommands(t *testing.T) {
	root := fakeRoot(t)
	for _, c := range []struct {
		args    []string
		suggest string
	}{
		{[]string{"filter", "sett", "vfs_*"}, "set"},
		{[]string{"filter", "bogus"}, ""},
		{[]string{"notrace", "clr"}, "clear"},
		{[]string{"probe", "ad", "p:x vfs_read"}, "add"},
		{[]string{"instance", "creat", "x"}, "create"},
		{[]string{"stat"}, "status"},
		{[]string{"bogus"}, ""},
	} {
		code, out, errs := run(t, append([]string{"--tracefs", root}, c.args...)...)
		if code != 2 || out != "" || !strings.Contains(errs, "unknown command") {
			t.Errorf("%q: exit %d, stdout %q, stderr %q", c.args, code, out, errs)
		}
		if c.suggest != "" && !strings.Contains(errs, "did you mean") || !strings.Contains(errs, c.suggest) {
			t.Errorf("%q: no suggestion of %q: %s", c.args, c.suggest, errs)
		}
	}
	for _, a := range [][]string{{"instance", "ls"}, {"probe", "ls"}, {"filter", "ls"}} {
		if code, out, errs := run(t, append([]string{"--tracefs", root}, a...)...); code != 0 || strings.Contains(out, "Usage:") {
			t.Errorf("%q: exit %d: %s%s", a, code, out, errs)
		}
	}
	if code, out, errs := run(t, "--tracefs", root, "probe", "rm", "--dry-run", "ftctl/a"); code != 0 || strings.Contains(out, "Usage:") {
		t.Errorf("probe rm: exit %d: %s%s", code, out, errs)
	}
	if code, out, _ := run(t, "--tracefs", root, "filter"); code != 0 || !strings.Contains(out, "Usage") {
		t.Errorf("filter alone: exit %d: %s", code, out)
	}
}

// Small wrong answers: each message names the flag and says what is wrong in the user's
// words (no Go parser names), and points at the command that helps.
func TestFlagMistakesNamed(t *testing.T) {
	root := fakeRoot(t)
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"stream", "--pid", "abc"}, `--pid "abc": not a whole number`},
		{[]string{"trace", "--pid", "1,x"}, `--pid "1,x": not a whole number`},
		{[]string{"stream", "--count", "99999999999999999999"}, `--count "99999999999999999999": out of range`},
		{[]string{"stream", "--event", "["}, `--event: malformed glob "["`},
		{[]string{"stream", "--comm", `x\`}, `--comm: malformed glob`},
		{[]string{"-B", "nosuch", "status"}, "ftctl instance list"},
	} {
		code, _, errs := run(t, append([]string{"--tracefs", root}, c.args...)...)
		if code != 2 || !strings.Contains(errs, c.want) || strings.Contains(errs, "strconv") {
			t.Errorf("%q: exit %d, want 2 and %q: %s", c.args, code, c.want, errs)
		}
	}
}

// trace -p takes a probe definition: a number is a pid given to the wrong flag.
func TestTraceProbeNumberSuggestsPid(t *testing.T) {
	code, _, errs := run(t, "--tracefs", fakeRoot(t), "trace", "-p", "1234")
	if code != 2 || !strings.Contains(errs, "--pid 1234") {
		t.Errorf("exit %d: %s", code, errs)
	}
}

// trace --filter is the event filter (trace-cmd -f, probe add --filter); -f is --function. A
// --filter that reads as a function pattern (its meaning before) is refused with a pointer
// to -f; a filter's mistakes are shown under its text (exit 2), before tracefs is touched.
func TestTraceFilterFlag(t *testing.T) {
	root := fakeRoot(t)
	for _, c := range []struct {
		args []string
		want []string
	}{
		{[]string{"trace", "--filter", "vfs_read"}, []string{"not an event filter", "did you mean -f/--function vfs_read?"}},
		{[]string{"trace", "--filter", "ext4_*", "-e", "sched"}, []string{"did you mean -f/--function ext4_*?"}},
		{[]string{"trace", "-e", "sched", "--filter", "prev_pid = 1"},
			[]string{"invalid --filter: Invalid operator\n  prev_pid = 1\n           ^\n  equality is =="}},
		{[]string{"trace", "-e", "sched", "--filter", "prev_pid == 1 ||"}, []string{"Meaningless filter expression"}},
		{[]string{"trace", "-e", "sched", "--filter", "0"}, []string{`"0" clears an event's filter`}},
		{[]string{"trace", "-f", "vfs_read", "--filter", "common_pid == 1"}, []string{"applies to the events of -e and -p"}},
		{[]string{"trace", "-e", "sched", "--filter", "common_pid == 1", "--filter", "common_pid == 2"},
			[]string{"--filter given twice"}},
		{[]string{"trace", "-e", "sched", "--filter", "comm == \"\x1b[2J\" ||"}, []string{`"?[2J"`}},
	} {
		code, _, errs := run(t, append([]string{"--tracefs", root}, c.args...)...)
		if code != 2 {
			t.Errorf("%q: exit %d, want 2: %s", c.args, code, errs)
		}
		for _, w := range c.want {
			if !strings.Contains(errs, w) {
				t.Errorf("%q: stderr lacks %q:\n%s", c.args, w, errs)
			}
		}
		if strings.Contains(errs, "\x1b") {
			t.Errorf("%q: an escape sequence reached the terminal: %q", c.args, errs)
		}
	}
}

// A --filter naming a field the event lacks is exit 2 with the event's fields listed, and
// nothing made: no instance.
func TestTraceFilterFields(t *testing.T) {
	root := fakeRoot(t)
	for _, ev := range []string{"sched_switch", "sched_wakeup"} {
		format, err := fixture.Read("6.12", "format.sched."+ev)
		if err != nil {
			t.Fatal(err)
		}
		for name, body := range map[string]string{"format": format, "enable": "0\n", "filter": "none\n"} {
			p := filepath.Join(root, "events", "sched", ev, name)
			os.MkdirAll(filepath.Dir(p), 0o755)
			os.WriteFile(p, []byte(body), 0o644)
		}
	}
	code, _, errs := run(t, "--tracefs", root, "trace", "-e", "sched:sched_switch", "--filter", "prev_pidd == 1")
	want := `ftctl: invalid --filter for sched:sched_switch: Field not found: no field "prev_pidd"
  prev_pidd == 1
  ^
  did you mean prev_pid?
  its fields: prev_comm, prev_pid, prev_prio, prev_state, next_comm, next_pid, next_prio
  every event's: common_type, common_flags, common_preempt_count, common_pid, cpu, comm
`
	if code != 2 || errs != want {
		t.Errorf("exit %d:\n%s\nwant:\n%s", code, errs, want)
	}
	// The whole system: every event must have the fields.
	code, _, errs = run(t, "--tracefs", root, "trace", "-e", "sched", "--filter", "prev_pid == 1")
	if code != 2 || !strings.Contains(errs, `for sched:sched_wakeup: Field not found: no field "prev_pid"`) {
		t.Errorf("exit %d: %s", code, errs)
	}
	code, _, errs = run(t, "--tracefs", root, "trace", "-e", "sched:sched_wakeup", "--filter", `comm == 5`)
	if code != 2 || !strings.Contains(errs, "Expecting string field: comm (char[16]) is a string, not a number") {
		t.Errorf("exit %d: %s", code, errs)
	}
	if ents, _ := os.ReadDir(filepath.Join(root, "instances")); len(ents) != 0 {
		t.Errorf("instances made: %v", ents)
	}
}

// Every command's help fits 100 columns and names what a flag takes (N, D, PID, NAME...),
// never a Go type (int, ints, duration, string).
// signalExit finds "SIGNAL (exit N)", "SIGNAL (N)" and "SIGNAL or SIGNAL (exit N)" in help text;
// the last form names the second signal (the first is checked where it stands alone).
var signalExit = regexp.MustCompile(`(SIGTERM|SIGHUP|SIGINT|Ctrl-C) \((?:exit )?(\d+)\)`)

func TestHelpFitsAndSaysWhatFlagsTake(t *testing.T) {
	goType := regexp.MustCompile(`--[a-z-]+ (int|ints|uint|duration|string|strings|stringArray|intSlice)( |$)`)
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		args := append(strings.Fields(strings.TrimPrefix(c.CommandPath(), "ftctl")), "--help")
		code, out, errs := run(t, args...)
		if code != 0 {
			t.Errorf("%s --help: exit %d: %s", c.CommandPath(), code, errs)
		}
		for i, line := range strings.Split(out, "\n") {
			if n := utf8.RuneCountInString(line); n > 100 {
				t.Errorf("%s --help, line %d: %d columns: %q", c.CommandPath(), i+1, n, line)
			}
			if goType.MatchString(line) {
				t.Errorf("%s --help, line %d: a Go type as placeholder: %q", c.CommandPath(), i+1, line)
			}
		}
		// An exit status said of a signal is the table's 128+N.
		flat := strings.Join(strings.Fields(out), " ")
		for _, m := range signalExit.FindAllStringSubmatch(flat, -1) {
			if want := map[string]string{"SIGTERM": "143", "SIGHUP": "129", "SIGINT": "130", "Ctrl-C": "130"}[m[1]]; m[2] != want {
				t.Errorf("%s --help: %q: the exit status of %s is %s", c.CommandPath(), m[0], m[1], want)
			}
		}
		for _, s := range c.Commands() {
			if !s.Hidden && s.Name() != "help" && s.Name() != "completion" {
				walk(s)
			}
		}
	}
	walk(NewRootCmd(&Globals{}))
}

// Each command's examples are its own: every example line runs that command (after global
// flags), and every flag it uses is one the command has.
func TestExamplesAreTheCommandsOwn(t *testing.T) {
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		for i, line := range strings.Split(c.Example, "\n") {
			line = strings.TrimSpace(line)
			if line == "" || strings.HasPrefix(line, "#") || !strings.Contains(line, "ftctl") {
				continue
			}
			if before, _, ok := strings.Cut(line, " | "); ok { // what it is piped into is not ftctl's
				line = before
			}
			words := strings.Fields(strings.TrimPrefix(line, "sudo "))
			if words[0] != "ftctl" {
				continue // a continuation line or another program
			}
			found, _, err := c.Root().Find(words[1:])
			// A group's examples may run its commands; a leaf's run itself.
			if err != nil || (found != c && !strings.HasPrefix(found.CommandPath(), c.CommandPath()+" ")) {
				t.Errorf("%s, example %d runs %q, not this command: %q", c.CommandPath(), i+1, found.CommandPath(), line)
				continue
			}
			for _, w := range words[1:] {
				if w == "--" {
					break
				}
				if name, ok := strings.CutPrefix(w, "--"); ok {
					name, _, _ = strings.Cut(name, "=")
					if found.Flags().Lookup(name) == nil && found.InheritedFlags().Lookup(name) == nil {
						t.Errorf("%s, example %d uses --%s, which it does not have: %q", c.CommandPath(), i+1, name, line)
					}
				}
			}
		}
		for _, s := range c.Commands() {
			walk(s)
		}
	}
	walk(NewRootCmd(&Globals{}))
}
