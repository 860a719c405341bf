package cmd

import (
	"strings"
	"testing"
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
		{[]string{"help"}, 0, "Available Commands"},
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
