package cmd

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ftctl/ftctl/filters"
)

// The filters package's refusals are exit 2 through the one table (ExitCode), not converted
// command by command; a failed verification, or a list that could not be put back, is 1.
func TestFilterErrorsExitCodes(t *testing.T) {
	for _, c := range []struct {
		err  error
		want int
	}{
		{&filters.NoMatchError{Pattern: "x"}, ExitInvalid},
		{fmt.Errorf("set_ftrace_filter: %w", filters.ErrPattern), ExitInvalid},
		{fmt.Errorf("%w; use 'ftctl filter clear'", filters.ErrWouldEmpty), ExitInvalid},
		{fmt.Errorf("set_ftrace_filter: %w (the previous list was restored)", filters.ErrVerify), ExitFailure},
		{&filters.VanishedError{File: filters.FilterFile}, ExitFailure},
		{errors.New("other"), ExitFailure},
	} {
		if got := ExitCode(c.err); got != c.want {
			t.Errorf("ExitCode(%v) = %d, want %d", c.err, got, c.want)
		}
	}
}

// A refused command changes nothing, in every list: `filter set no_such_fn --except vfs_read`
// used to put vfs_read into set_ftrace_notrace (the first step of the transition), then exit 2
// on the filter's pattern. Every step's patterns are now resolved before the first write.
// (Plain files stand in for the kernel's lists: they show whether anything was written.)
func TestFilterRefusedChangesNoList(t *testing.T) {
	root := fakeRootWithFunctions(t)
	files := []string{"set_ftrace_filter", "set_ftrace_notrace"}
	read := func() map[string]string {
		m := map[string]string{}
		for _, f := range files {
			b, err := os.ReadFile(filepath.Join(root, f))
			if err != nil {
				t.Fatal(err)
			}
			m[f] = string(b)
		}
		return m
	}
	before := read()
	for _, tc := range []struct {
		args []string
		want string // in stderr
	}{
		{[]string{"filter", "set", "no_such_fn", "--except", "vfs_read"}, "no_such_fn"},
		{[]string{"filter", "set", "vfs_read", "--except", "no_such_fn"}, "no_such_fn"},
		{[]string{"filter", "set", "vfs_read", "--except", "bad pattern"}, "bad pattern"},
		{[]string{"filter", "set", "vfs_write", "--except", "vfs_read", "--except", "vfs_raed"}, "close matches: vfs_read"},
		{[]string{"notrace", "add", "vfs_read", "no_such_fn"}, "no_such_fn"},
	} {
		code, _, errs := run(t, append([]string{"--tracefs", root}, tc.args...)...)
		if code != ExitInvalid || !strings.Contains(errs, tc.want) {
			t.Errorf("%v: exit %d, want %d, stderr %q", tc.args, code, ExitInvalid, errs)
		}
		for f, b := range read() {
			if b != before[f] {
				t.Fatalf("%v changed %s: %q, was %q", tc.args, f, b, before[f])
			}
		}
	}
}
