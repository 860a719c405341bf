package cmd

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ftctl/ftctl/internal/fixture"
)

// A help topic or a command that does not exist is invalid input (exit 2), with a
// did-you-mean; both exited 0 printing the root's help, so a script's `CMD --help` check passed
// on a typo.
func TestUnknownHelpTopic(t *testing.T) {
	for _, c := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"help", "nosuch"}, 2, `no help topic "nosuch"`},
		{[]string{"help", "filtr"}, 2, `did you mean "filter"?`},
		{[]string{"help", "filter", "nosuch"}, 2, `unknown command "nosuch" for "ftctl filter"`},
		{[]string{"nosuch", "--help"}, 2, `unknown command "nosuch" for "ftctl"`},
		{[]string{"filter", "nosuch", "-h"}, 2, `unknown command "nosuch" for "ftctl filter"`},
		{[]string{"-B", "x", "filter", "nosuch", "--help"}, 2, `unknown command "nosuch"`},
		{[]string{"help", "filter", "set"}, 0, "Replace the list"},
		{[]string{"filter", "set", "--help"}, 0, "Replace the list"},
		{[]string{"-B", "x", "filter", "--help"}, 0, "set_ftrace_filter"},
		{[]string{"help"}, 0, "Trace and measure"},
		{[]string{"trace", "--help", "--", "ls", "nosuch"}, 0, "Usage"},
	} {
		code, out, errs := run(t, c.args...)
		if code != c.code || !strings.Contains(out+errs, c.want) {
			t.Errorf("%v: exit %d, want %d saying %q\nstdout %q\nstderr %q", c.args, code, c.code, c.want, out, errs)
		}
	}
}

// The peers' habits are answered with ftctl's spelling: trace-cmd's -l, -F, -P, -c, -g and -p
// TRACER, perf's -a, and a duration without its unit ("missing unit" said nothing of "5s?").
func TestPeerFlagHints(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"trace", "--duration", "5"}, `--duration "5": a duration needs a unit (ms, s, m, h): 5s?`},
		{[]string{"trace", "-l", "vfs_read"}, "trace-cmd's -l FUNC is -f FUNC here"},
		{[]string{"record", "-P", "1"}, "trace-cmd's -P PID is --pid PID here"},
		{[]string{"trace", "-F"}, "only it and its children are traced"},
		{[]string{"trace", "-g", "vfs_read"}, "'ftctl graph FUNC'"},
		{[]string{"count", "-a", "vfs_read"}, "every CPU by default"},
		{[]string{"trace", "-p", "function_graph"}, "use --tracer function_graph"},
	} {
		code, _, errs := run(t, c.args...)
		if code != 2 || !strings.Contains(errs, c.want) {
			t.Errorf("%v: exit %d, want 2 saying %q: %q", c.args, code, c.want, errs)
		}
	}
	// A flag no peer has, or a command without the equivalent, gets no hint.
	if _, _, errs := run(t, "status", "-l"); strings.Contains(errs, "trace-cmd") {
		t.Errorf("status -l: %q", errs)
	}
}

// instance create and remove honour -o json (it was silently ignored): one entry per NAME,
// saying what was done.
func TestInstanceJSON(t *testing.T) {
	root := fakeRoot(t)
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"instance", "create", "j1"}, `{"schema":"ftctl/instance-create/v1","items":[{"name":"j1","created":true}]}`},
		{[]string{"instance", "create", "j1"}, `{"schema":"ftctl/instance-create/v1","items":[{"name":"j1","created":false}]}`},
		{[]string{"instance", "remove", "j1"}, `{"schema":"ftctl/instance-remove/v1","items":[{"name":"j1","removed":true}]}`},
		{[]string{"instance", "remove", "j1"}, `{"schema":"ftctl/instance-remove/v1","items":[{"name":"j1","removed":false}]}`},
	} {
		code, out, errs := run(t, append([]string{"--tracefs", root, "-o", "json"}, c.args...)...)
		if got := strings.Join(strings.Fields(out), ""); code != 0 || got != c.want {
			t.Errorf("%v: exit %d, %s (want %s); %s", c.args, code, got, c.want, errs)
		}
	}
}

// A pattern that selects nothing is exit 2 with the closest names, for events and a file's
// symbols as for functions (both printed nothing and exited 0).
func TestNothingMatched(t *testing.T) {
	root := fakeRoot(t)
	if err := os.WriteFile(filepath.Join(root, "available_events"), []byte("sched:sched_switch\nsched:sched_wakeup\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	code, out, errs := run(t, "--tracefs", root, "list", "events", "sched:sched_swich")
	if code != 2 || !strings.Contains(errs, "did you mean sched:sched_switch?") {
		t.Errorf("list events sched:sched_swich: exit %d %q %q", code, out, errs)
	}
	code, out, errs = run(t, "--tracefs", root, "list", "events", "nosuch*")
	if code != 2 || out != "" || !strings.Contains(errs, `no event matches "nosuch*"`) {
		t.Errorf("list events nosuch*: exit %d %q %q", code, out, errs)
	}
	code, out, errs = run(t, "probe", "syms", "../probes/testdata/elf/exec.elf", "helpr")
	if code != 2 || out != "" || !strings.Contains(errs, `matches "helpr"; did you mean helper`) {
		t.Errorf("probe syms FILE helpr: exit %d %q %q", code, out, errs)
	}
	if code, _, errs := run(t, "probe", "syms", "../probes/testdata/elf/exec.elf", "help*"); code != 0 {
		t.Errorf("probe syms FILE help*: exit %d %q", code, errs)
	}
}

// probe format SYSTEM:EVENT shows any event's fields (it said "no such probe
// ftctl/sched:sched_switch"); a name that is neither says where to look.
func TestProbeFormatEvent(t *testing.T) {
	root := fakeRoot(t)
	format, err := fixture.Read("6.12", "format.sched.sched_switch")
	if err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(root, "events", "sched", "sched_switch", "format")
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(format), 0o644); err != nil {
		t.Fatal(err)
	}
	code, out, errs := run(t, "--tracefs", root, "probe", "format", "sched:sched_switch")
	if code != 0 || !strings.Contains(out, "prev_pid") {
		t.Errorf("probe format sched:sched_switch: exit %d %q %q", code, out, errs)
	}
	code, _, errs = run(t, "--tracefs", root, "probe", "format", "sched:nosuch")
	if code != 2 || !strings.Contains(errs, "no probe or event sched:nosuch") {
		t.Errorf("probe format sched:nosuch: exit %d %q", code, errs)
	}
}
