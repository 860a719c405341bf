package filters

import (
	"errors"
	"strings"
	"testing"
)

func mustCompile(t *testing.T, ps ...string) []*Pattern {
	t.Helper()
	var out []*Pattern
	for _, p := range ps {
		c, err := Compile(p)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, c)
	}
	return out
}

// A tiny index with a duplicated static function and a module copy of a core name.
const tinyIndex = `vfs_read
vfs_write
dup_static
__ftrace_invalid_address___64
dup_static
dummy_xmit
ksys_read
dummy_xmit [dummy]
dummy_setup [dummy]
`

func tiny(t *testing.T) *Index {
	ix, err := ParseIndex(tinyIndex)
	if err != nil {
		t.Fatal(err)
	}
	return ix
}

func TestPlanSet(t *testing.T) {
	ix := tiny(t)
	before := Multiset{{"vfs_write", ""}: 1, {"dup_static", ""}: 1} // one of two dup records listed
	st, err := PlanStep(ix, before, Change{File: FilterFile, Op: OpSet, Patterns: mustCompile(t, "vfs_read", "*:mod:dummy")})
	if err != nil {
		t.Fatal(err)
	}
	if !equalInts(st.Add, []int{1, 8, 9}) {
		t.Errorf("add %v", st.Add)
	}
	// every record of a listed key not in the target: both dup_static records, vfs_write
	if !equalInts(st.Remove, []int{2, 3, 5}) {
		t.Errorf("remove %v", st.Remove)
	}
	want := Multiset{{"vfs_read", ""}: 1, {"dummy_xmit", "dummy"}: 1, {"dummy_setup", "dummy"}: 1}
	if !st.Expect.Equal(want) {
		t.Errorf("expect %v", st.Expect)
	}
	toks := st.IndexTokens(ix)
	if len(toks) != 6 || toks[0].Text != "1" || toks[3].Text != "!2" || toks[1].Note != "+ dummy_xmit [dummy]" {
		t.Errorf("tokens %+v", toks)
	}
}

func TestPlanAddRemove(t *testing.T) {
	ix := tiny(t)
	before := Multiset{{"vfs_read", ""}: 1, {"dup_static", ""}: 1}
	st, err := PlanStep(ix, before, Change{File: FilterFile, Op: OpAdd, Patterns: mustCompile(t, "dup_*", "ksys_read")})
	if err != nil {
		t.Fatal(err)
	}
	if len(st.Remove) != 0 || !equalInts(st.Add, []int{3, 5, 7}) {
		t.Errorf("add: %+v", st)
	}
	if st.Expect[Key{"dup_static", ""}] != 2 || st.Expect.Total() != 4 {
		t.Errorf("expect %v", st.Expect)
	}
	st, err = PlanStep(ix, before, Change{File: FilterFile, Op: OpRemove, Patterns: mustCompile(t, "dup_static")})
	if err != nil || !equalInts(st.Remove, []int{3, 5}) || len(st.Add) != 0 || !st.Expect.Equal(Multiset{{"vfs_read", ""}: 1}) {
		t.Errorf("remove: %+v %v", st, err)
	}
	// Removing everything from the filter would make it trace every function: refused.
	_, err = PlanStep(ix, before, Change{File: FilterFile, Op: OpRemove, Patterns: mustCompile(t, "vfs_read", "dup_static")})
	if !errors.Is(err, ErrWouldEmpty) {
		t.Errorf("emptying remove: %v", err)
	}
	// ...but an empty notrace list is fine.
	if _, err := PlanStep(ix, before, Change{File: NotraceFile, Op: OpRemove, Patterns: mustCompile(t, "vfs_read", "dup_static")}); err != nil {
		t.Error(err)
	}
	// A pattern that matches nothing: nothing is planned.
	_, err = PlanStep(ix, before, Change{File: FilterFile, Op: OpSet, Patterns: mustCompile(t, "vfs_read", "nope*")})
	var nm *NoMatchError
	if !errors.As(err, &nm) || nm.Pattern != "nope*" || !errors.Is(err, ErrPattern) {
		t.Errorf("no match: %v", err)
	}
	st, err = PlanStep(ix, before, Change{File: FilterFile, Op: OpClear})
	if err != nil || !st.Truncate || len(st.Expect) != 0 {
		t.Errorf("clear: %+v %v", st, err)
	}
}

func TestPlanRestore(t *testing.T) {
	ix := tiny(t)
	cur := Multiset{{"ksys_read", ""}: 1}
	want := Multiset{{"vfs_read", ""}: 1, {"dup_static", ""}: 1}
	st, err := PlanRestore(ix, cur, want, FilterFile)
	if err != nil || !equalInts(st.Add, []int{1, 3}) || !equalInts(st.Remove, []int{7}) || !st.Expect.Equal(want) || st.Truncate {
		t.Errorf("%+v %v", st, err)
	}
	// Truly empty: the filter is truncated, the kernel's way back to "every function".
	if st, err := PlanRestore(ix, cur, Multiset{}, FilterFile); err != nil || !st.Truncate {
		t.Errorf("restoring an empty filter must truncate: %+v %v", st, err)
	}
	if st, err := PlanRestore(ix, cur, Multiset{}, NotraceFile); err != nil || st.Truncate || !equalInts(st.Remove, []int{7}) {
		t.Errorf("restoring an empty notrace: %+v %v", st, err)
	}
}

// A module unloaded between the read and a restore: what vanished cannot come back. Only a truly
// empty target empties a list; a filter none of whose functions exists any more is left as it
// is (the error names what vanished), never truncated.
func TestPlanRestoreVanished(t *testing.T) {
	ix := tiny(t)
	cur := Multiset{{"ksys_read", ""}: 1}
	gone := Multiset{{"gone_fn", "gonemod"}: 1, {"other_gone", "gonemod"}: 1}
	st, err := PlanRestore(ix, cur, gone, FilterFile)
	var ve *VanishedError
	if !errors.As(err, &ve) || len(ve.Keys) != 2 || ve.File != FilterFile {
		t.Fatalf("every function vanished: %+v %v", st, err)
	}
	for _, w := range []string{"gone_fn [gonemod]", "other_gone [gonemod]", "every function", "left as it is"} {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("%q lacks %q", err, w)
		}
	}
	// The same for a notrace list is its faithful restore: the kernel lists nothing of an
	// unloaded module either, and an empty notrace excludes nothing.
	st, err = PlanRestore(ix, cur, gone, NotraceFile)
	if err != nil || st.Truncate || len(st.Add) != 0 || !equalInts(st.Remove, []int{7}) || len(st.Vanished) != 2 {
		t.Errorf("notrace: %+v %v", st, err)
	}
	// Some vanished: the rest is put back, without O_TRUNC, and the vanished are named.
	some := Multiset{{"gone_fn", "gonemod"}: 1, {"dummy_xmit", "dummy"}: 1}
	st, err = PlanRestore(ix, cur, some, FilterFile)
	if err != nil || st.Truncate || !equalInts(st.Add, []int{8}) || !equalInts(st.Remove, []int{7}) ||
		!st.Expect.Equal(Multiset{{"dummy_xmit", "dummy"}: 1}) || len(st.Vanished) != 1 || st.Vanished[0].Name != "gone_fn" {
		t.Errorf("some vanished: %+v %v", st, err)
	}
}

func TestNameTokens(t *testing.T) {
	ix := tiny(t)
	st := Step{Add: []int{1, 3, 5, 6, 8}, Remove: []int{2}}
	var got []string
	for _, tk := range st.NameTokens(ix) {
		got = append(got, tk.Text)
	}
	want := []string{"vfs_read", "dup_static", "dummy_xmit:mod:!*", "dummy_xmit:mod:dummy", "!vfs_write"}
	if len(got) != len(want) {
		t.Fatalf("%v", got)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("token %d: %q, want %q", i, got[i], want[i])
		}
	}
}

func equalInts(a, b []int) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}
