package filters

import (
	"strings"
	"sync"
	"testing"

	"github.com/ftctl/ftctl/internal/fixture"
)

// availableFunctions is available_filter_functions as captured from a VM kernel (with the
// dummy and nls_utf8 modules loaded) by vm/fixtures.sh.
func availableFunctions(t testing.TB, kernel string) string {
	t.Helper()
	s, err := fixture.Read(kernel, "available_filter_functions")
	if err != nil {
		t.Fatal(err)
	}
	return s
}

var indexCache sync.Map

func fixtureIndex(t testing.TB, kernel string) *Index {
	if ix, ok := indexCache.Load(kernel); ok {
		return ix.(*Index)
	}
	ix, err := ParseIndex(availableFunctions(t, kernel))
	if err != nil {
		t.Fatal(err)
	}
	indexCache.Store(kernel, ix)
	return ix
}

func TestParseIndexFixtures(t *testing.T) {
	for _, c := range []struct {
		kernel         string
		lines, invalid int
	}{{"6.1", 38263, 597}, {"6.12", 42871, 0}} {
		ix := fixtureIndex(t, c.kernel)
		if ix.Len() != c.lines || ix.Invalid != c.invalid {
			t.Errorf("%s: %d lines, %d invalid; want %d, %d", c.kernel, ix.Len(), ix.Invalid, c.lines, c.invalid)
		}
		last := ix.Key(ix.Len())
		if last != (Key{"uni2char", "nls_utf8"}) {
			t.Errorf("%s: last record %+v", c.kernel, last)
		}
		if n := ix.Count(Key{"dummy_xmit", "dummy"}); n != 1 {
			t.Errorf("%s: dummy_xmit [dummy] x%d", c.kernel, n)
		}
	}
	ix := fixtureIndex(t, "6.1")
	for i := 1; i <= ix.Len(); i++ {
		if strings.HasPrefix(ix.Key(i).Name, InvalidPrefix) == ix.Valid(i) {
			t.Fatalf("Valid(%d) wrong for %v", i, ix.Key(i))
		}
	}
	if ix.Valid(0) || ix.Valid(ix.Len()+1) {
		t.Error("out-of-range index valid")
	}
	if _, err := ParseIndex("a\n\nb\n"); err == nil {
		t.Error("empty line accepted")
	}
}

func TestResolve(t *testing.T) {
	ix := fixtureIndex(t, "6.12")
	resolve := func(p string) []Key {
		pat, err := Compile(p)
		if err != nil {
			t.Fatal(err)
		}
		var out []Key
		for _, i := range ix.Resolve(pat) {
			out = append(out, ix.Key(i))
		}
		if n := ix.CountMatches(pat); n != len(out) {
			t.Errorf("%q: CountMatches %d, Resolve %d", p, n, len(out))
		}
		return out
	}
	if got := resolve("vfs_read"); len(got) != 1 || got[0] != (Key{"vfs_read", ""}) {
		t.Errorf("vfs_read: %v", got)
	}
	if got := resolve("*:mod:nls_utf8"); len(got) != 2 || got[0].Module != "nls_utf8" {
		t.Errorf("nls_utf8: %v", got)
	}
	all := resolve("*")
	if len(all) != ix.Len()-ix.Invalid {
		t.Errorf("* selects %d of %d valid", len(all), ix.Len()-ix.Invalid)
	}
	core := resolve("*:mod:!*")
	mods := resolve("*:mod:*")
	if len(core)+len(mods) != len(all) || len(mods) == 0 {
		t.Errorf("core %d + modules %d != %d", len(core), len(mods), len(all))
	}
	// Duplicated static functions: a name selects every record of it.
	ix61 := fixtureIndex(t, "6.1")
	dups := 0
	ix61.lookup()
	for name, recs := range ix61.byName {
		if len(recs) > 1 {
			dups++
			p, _ := Compile(name)
			if len(ix61.Resolve(p)) != len(recs) {
				t.Errorf("%s: %d records, pattern selects %d", name, len(recs), len(ix61.Resolve(p)))
			}
		}
	}
	if dups != 190 { // 271 with the invalid-address placeholders counted, as in shared/KERNEL.md
		t.Errorf("%d duplicated names on 6.1, the fixture has 190", dups)
	}
	// Invalid-address records are never selected by a pattern.
	p, _ := Compile(InvalidPrefix + "*")
	if got := ix61.Resolve(p); len(got) != 0 {
		t.Errorf("invalid records selected: %d", len(got))
	}
}

func TestResolveAllAndSuggest(t *testing.T) {
	ix := fixtureIndex(t, "6.12")
	a, _ := Compile("vfs_read")
	b, _ := Compile("vfs_rea?")
	got, err := ix.ResolveAll([]*Pattern{a, b})
	if err != nil || len(got) != 1 {
		t.Fatalf("%v %v", got, err)
	}
	bad, _ := Compile("vfs_raed")
	_, err = ix.ResolveAll([]*Pattern{a, bad})
	var nm *NoMatchError
	if !asNoMatch(err, &nm) || nm.Pattern != "vfs_raed" || len(nm.Suggestions) == 0 || nm.Suggestions[0] != "vfs_read" {
		t.Fatalf("%v", err)
	}
	if s := ix.Suggest("sched_clock", 3); len(s) == 0 || !strings.Contains(s[0], "sched_clock") {
		t.Errorf("suggest: %v", s)
	}
}

func asNoMatch(err error, target **NoMatchError) bool {
	nm, ok := err.(*NoMatchError)
	if ok {
		*target = nm
	}
	return ok
}

func TestParseKey(t *testing.T) {
	for in, want := range map[string]Key{
		"vfs_read":                      {"vfs_read", ""},
		"dummy_xmit [dummy]":            {"dummy_xmit", "dummy"},
		"  spaced [m] ":                 {"spaced", "m"},
		"weird[notmod]":                 {"weird[notmod]", ""},
		"__ftrace_invalid_address___64": {InvalidPrefix + "64", ""},
	} {
		if got := ParseKey(in); got != want {
			t.Errorf("ParseKey(%q) = %+v", in, got)
		}
	}
}

// Prepared (grouped) and plain scans agree.
func TestPrepareAgrees(t *testing.T) {
	plain, _ := ParseIndex(availableFunctions(t, "6.1"))
	prep, _ := ParseIndex(availableFunctions(t, "6.1"))
	prep.Prepare()
	for _, s := range []string{"*", "vfs_*", "*:mod:dummy", "*_[rw]*", "uni2char", "dummy_xmit:mod:!*"} {
		p, _ := Compile(s)
		a, b := plain.Resolve(p), prep.Resolve(p)
		if !equalInts(a, b) {
			t.Errorf("%q: plain %d, prepared %d", s, len(a), len(b))
		}
	}
}
