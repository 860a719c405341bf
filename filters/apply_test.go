package filters

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/ftctl/ftctl/internal/fixture"
	"github.com/ftctl/ftctl/tracefs"
)

// fakeLists is a tracing directory of plain files: the 6.12 kernel's function index, a filter
// holding vfs_read and an empty notrace list. Plain files do not behave like the kernel's lists
// (a write overwrites), but they show whether anything was written at all.
func fakeLists(t *testing.T) (*Applier, string) {
	t.Helper()
	root := t.TempDir()
	aff, err := fixture.Read("6.12", "available_filter_functions")
	if err != nil {
		t.Fatal(err)
	}
	for name, body := range map[string]string{
		"available_filter_functions": aff,
		FilterFile:                   "vfs_read\n",
		NotraceFile:                  "#### no functions disabled ####\n",
	} {
		if err := os.WriteFile(filepath.Join(root, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	fs, err := tracefs.Open(root, "a test")
	if err != nil {
		t.Fatal(err)
	}
	return &Applier{In: fs.Top(), Top: fs.Top()}, root
}

// unchanged fails the test if a list file was written (its content or modification time).
func unchanged(t *testing.T, root string) func() {
	t.Helper()
	type state struct {
		body string
		mod  int64
	}
	snap := func() map[string]state {
		m := map[string]state{}
		for _, f := range []string{FilterFile, NotraceFile} {
			p := filepath.Join(root, f)
			b, _ := os.ReadFile(p)
			st, err := os.Stat(p)
			if err != nil {
				t.Fatal(err)
			}
			m[f] = state{string(b), st.ModTime().UnixNano()}
		}
		return m
	}
	before := snap()
	return func() {
		t.Helper()
		for f, s := range snap() {
			if s != before[f] {
				t.Errorf("%s was written: %q, before %q", f, s.body, before[f].body)
			}
		}
	}
}

// A refused change changes nothing, in any list: every step's patterns are resolved, and every
// step planned, before the first write. `filter set no_such_fn --except vfs_write` used to add
// vfs_write to the notrace list, then fail on the filter's pattern and leave it there.
func TestApplyRefusedChangesNothing(t *testing.T) {
	for _, tc := range []struct {
		name    string
		changes func(t *testing.T) []Change
		want    error
	}{
		{"pattern of the second step", func(t *testing.T) []Change {
			return []Change{
				{File: NotraceFile, Op: OpAdd, Patterns: mustCompile(t, "vfs_write")},
				{File: FilterFile, Op: OpSet, Patterns: mustCompile(t, "no_such_fn")},
				{File: NotraceFile, Op: OpSet, Patterns: mustCompile(t, "vfs_write")},
			}
		}, ErrPattern},
		{"pattern of the last step", func(t *testing.T) []Change {
			return []Change{
				{File: NotraceFile, Op: OpAdd, Patterns: mustCompile(t, "vfs_write")},
				{File: FilterFile, Op: OpAdd, Patterns: mustCompile(t, "ksys_read")},
				{File: NotraceFile, Op: OpAdd, Patterns: mustCompile(t, "no_such_fn")},
			}
		}, ErrPattern},
		{"a later step would empty the filter", func(t *testing.T) []Change {
			return []Change{
				{File: NotraceFile, Op: OpAdd, Patterns: mustCompile(t, "vfs_write")},
				{File: FilterFile, Op: OpRemove, Patterns: mustCompile(t, "vfs_read")},
			}
		}, ErrWouldEmpty},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ap, root := fakeLists(t)
			check := unchanged(t, root)
			_, err := ap.Apply(context.Background(), tc.changes(t))
			if !errors.Is(err, tc.want) {
				t.Errorf("error %v, want %v", err, tc.want)
			}
			check()
		})
	}
}

// Resolving needs no lock; ApplyResolved (under the lock) re-validates: it plans on the list as
// it is by then, keeping what another writer added meanwhile, and it reads the index again when
// the one the patterns were resolved against may be stale.
func TestApplyResolvedRevalidates(t *testing.T) {
	ap, root := fakeLists(t)
	var plan bytes.Buffer
	ap.In.FS().DryRun = &plan
	ix, err := LoadIndex(ap.Top)
	if err != nil {
		t.Fatal(err)
	}
	r, err := Resolve(ix, []Change{{File: FilterFile, Op: OpAdd, Patterns: mustCompile(t, "ksys_read")}})
	if err != nil {
		t.Fatal(err)
	}
	// Another writer adds vfs_write between the resolution and the lock.
	if err := os.WriteFile(filepath.Join(root, FilterFile), []byte("vfs_read\nvfs_write\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	res, err := ap.ApplyResolved(context.Background(), r)
	if err != nil || len(res) != 1 || res[0].Before != 2 || res[0].After != 3 || res[0].Added != 1 {
		t.Fatalf("%+v %v", res, err)
	}

	// Resolved against an index that is not this kernel's (a fixture: always stale): the
	// index is read again and the patterns resolved again before planning.
	other, err := ParseIndex("ksys_read\nvfs_read\n")
	if err != nil {
		t.Fatal(err)
	}
	r, err = Resolve(other, []Change{{File: FilterFile, Op: OpAdd, Patterns: mustCompile(t, "ksys_read")}})
	if err != nil || r.recs[0][0] != 1 {
		t.Fatal(r, err)
	}
	var notices []string
	ap.Notice = func(format string, args ...any) { notices = append(notices, format) }
	plan.Reset()
	if _, err := ap.ApplyResolved(context.Background(), r); err != nil {
		t.Fatal(err)
	}
	want := ix.Resolve(mustCompile(t, "ksys_read")[0])
	if len(want) != 1 || !strings.Contains(plan.String(), `"`+strconv.Itoa(want[0])+`\n"`) || strings.Contains(plan.String(), `"1\n"`) {
		t.Errorf("planned with the stale index's numbers (ksys_read is %v here):\n%s", want, plan.String())
	}
	if len(notices) != 1 || !strings.Contains(notices[0], "reading it again") {
		t.Errorf("notices %q", notices)
	}
}
