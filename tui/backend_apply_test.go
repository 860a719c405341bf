package tui

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/ftctl/ftctl/filters"
	"github.com/ftctl/ftctl/internal/fixture"
	"github.com/ftctl/ftctl/tracefs"
)

// The console applies through KernelBackend.Apply, the same swap as `ftctl filter`: a change
// refused in any step (here the filter's pattern, after the notrace step that --except puts
// first) writes nothing to any list. Plain files stand in for the kernel's lists: they show
// whether anything was written.
func TestKernelBackendApplyRefusedWritesNothing(t *testing.T) {
	root := t.TempDir()
	aff, err := fixture.Read("6.12", "available_filter_functions")
	if err != nil {
		t.Fatal(err)
	}
	files := map[string]string{
		"available_filter_functions": aff,
		filters.FilterFile:           "vfs_read\n",
		filters.NotraceFile:          "#### no functions disabled ####\n",
	}
	for name, body := range files {
		if err := os.WriteFile(filepath.Join(root, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	fs, err := tracefs.Open(root, "a test")
	if err != nil {
		t.Fatal(err)
	}
	compile := func(p string) []*filters.Pattern {
		c, err := filters.Compile(p)
		if err != nil {
			t.Fatal(err)
		}
		return []*filters.Pattern{c}
	}
	b := NewKernelBackend(fs, fs.Top(), "ftctl", time.Second)
	_, err = b.Apply(context.Background(), []filters.Change{
		{File: filters.NotraceFile, Op: filters.OpAdd, Patterns: compile("vfs_write")},
		{File: filters.FilterFile, Op: filters.OpSet, Patterns: compile("no_such_fn")},
		{File: filters.NotraceFile, Op: filters.OpSet, Patterns: compile("vfs_write")},
	})
	if !errors.Is(err, filters.ErrPattern) {
		t.Errorf("error %v, want a pattern error", err)
	}
	for _, f := range []string{filters.FilterFile, filters.NotraceFile} {
		if got, _ := os.ReadFile(filepath.Join(root, f)); string(got) != files[f] {
			t.Errorf("%s was written: %q", f, got)
		}
	}
}
