package filters

import (
	"errors"
	"testing"

	"github.com/gobwas/glob"
)

func TestParseRegexMatchesKernel(t *testing.T) {
	cases := []struct {
		in     string
		typ    matchType
		search string
	}{
		{"vfs_read", matchFull, "vfs_read"},
		{"vfs_*", matchFront, "vfs_"},
		{"*_read", matchEnd, "_read"},
		{"*sched*", matchMiddle, "sched"},
		{"*", matchEnd, ""},
		{"**", matchMiddle, ""},
		{"***", matchGlob, "***"},
		{"a*b", matchGlob, "a*b"},
		{"a*b*", matchGlob, "a*b*"},
		{"*a?", matchGlob, "*a?"},
		{"a?*", matchGlob, "a?*"},
		{"[ab]*", matchGlob, "[ab]*"},
		{`a\b`, matchGlob, `a\b`},
		{"9p_*", matchIndex, "9p_*"},
		{"", matchFull, ""},
	}
	for _, c := range cases {
		typ, s := parseRegex(c.in)
		if typ != c.typ || s != c.search {
			t.Errorf("parseRegex(%q) = %v %q, want %v %q", c.in, typ, s, c.typ, c.search)
		}
	}
}

// The kernel's own glob self-tests (lib/glob.c, CONFIG_GLOB_SELFTEST) through the translation.
func TestKernelGlobSelfTests(t *testing.T) {
	tests := []struct {
		want     bool
		pat, str string
	}{
		{true, "a", "a"}, {false, "a", "b"}, {false, "a", "aa"}, {false, "a", ""},
		{true, "[a]", "a"}, {false, "[a]", "b"}, {false, "[!a]", "a"}, {true, "[!a]", "b"},
		{true, "[ab]", "a"}, {true, "[ab]", "b"}, {false, "[ab]", "c"}, {true, "[!ab]", "c"},
		{true, "[a-c]", "b"}, {false, "[a-c]", "d"},
		{true, "[a-c-e-g]", "-"}, {false, "[a-c-e-g]", "d"}, {true, "[a-c-e-g]", "f"},
		{true, "[]a-ceg-ik[]", "a"}, {true, "[]a-ceg-ik[]", "]"}, {true, "[]a-ceg-ik[]", "["},
		{true, "[]a-ceg-ik[]", "h"}, {false, "[]a-ceg-ik[]", "f"}, {false, "[!]a-ceg-ik[]", "h"},
		{false, "[!]a-ceg-ik[]", "]"}, {true, "[!]a-ceg-ik[]", "f"},
		{true, "?", "a"}, {false, "?", "aa"}, {false, "??", "a"}, {true, "?x?", "axb"},
		{false, "?x?", "abx"}, {false, "?x?", "xab"},
		{false, "*??", "a"}, {true, "*??", "ab"}, {true, "*??", "abc"}, {true, "*??", "abcd"},
		{false, "??*", "a"}, {true, "??*", "ab"}, {true, "??*", "abc"}, {true, "??*", "abcd"},
		{false, "?*?", "a"}, {true, "?*?", "ab"}, {true, "?*?", "abc"}, {true, "?*?", "abcd"},
		{true, "*b", "b"}, {true, "*b", "ab"}, {false, "*b", "ba"}, {true, "*b", "bb"},
		{true, "*b", "abb"}, {true, "*b", "bab"}, {true, "*bc", "abbc"}, {true, "*bc", "bc"},
		{true, "*bc", "bbc"}, {true, "*bc", "bcbc"},
		{true, "*ac*", "abacadaeafag"}, {true, "*ac*ae*ag*", "abacadaeafag"},
		{true, "*a*b*[bc]*[ef]*g*", "abacadaeafag"}, {false, "*a*b*[ef]*[cd]*g*", "abacadaeafag"},
		{true, "*abcd*", "abcabcabcabcdefg"}, {true, "*ab*cd*", "abcabcabcabcdefg"},
		{true, "*abcd*abcdef*", "abcabcdabcdeabcdefg"}, {false, "*abcd*", "abcabcabcabcefg"},
		{false, "*ab*cd*", "abcabcabcabcefg"},
		// ftctl's own corner cases: escapes, gobwas syntax that must stay literal, malformed
		// classes, empty ranges, a trailing backslash.
		{true, `a\*b`, "a*b"}, {false, `a\*b`, "axb"}, {true, `\[x]`, "[x]"},
		{true, "{a,b}", "{a,b}"}, {false, "{a,b}", "a"}, {true, "a,b?", "a,bc"},
		{true, "a[bc", "a[bc"}, {false, "a[bc", "ab"}, {false, "[z-a]x|*", "[z-a]x|y"},
		{false, "[z-a]*", "zebra"}, {true, "[!z-a]*", "zebra"}, {true, "[a-]", "-"}, {true, "[a-]", "a"},
		{true, `[\]`, `\`}, {true, `ab\`, "ab"}, {false, `ab\`, "abc"}, {true, `*b\`, "ab"},
		{true, "[!]]", "x"}, {false, "[!]]", "]"}, {true, "[]-a]", "^"},
	}
	for _, c := range tests {
		if got := refGlobMatch(c.pat, c.str); got != c.want {
			t.Errorf("reference: glob_match(%q, %q) = %v, want %v", c.pat, c.str, got, c.want)
		}
		m, err := compileMatcher(c.pat)
		if err != nil {
			t.Fatal(err)
		}
		want := refMatch(m.typ, m.search, c.str)
		if got := m.match(c.str); got != want {
			t.Errorf("kglob: %q vs %q = %v, reference %v", c.pat, c.str, got, want)
		}
		if m.typ == matchGlob {
			gp, ok := kernelGlobToGobwas(c.pat)
			got := false
			if ok {
				got = glob.MustCompile(gp).Match(c.str)
			}
			if got != want {
				t.Errorf("gobwas: %q -> %q: match(%q) = %v, reference %v", c.pat, gp, c.str, got, want)
			}
		}
	}
}

func TestCompileRefuses(t *testing.T) {
	for _, p := range []string{"", "!vfs_read", "1234", "9*", "vfs read", "a\tb", "vfs_read:traceoff",
		"a:mod", "a:foo:b", "esc\x1b", "ü*", "x\x7f"} {
		if _, err := Compile(p); !errors.Is(err, ErrPattern) {
			t.Errorf("Compile(%q) = %v, want ErrPattern", p, err)
		}
	}
	for _, p := range []string{"vfs_read", "*", "x:mod:ext4", ":mod:ext4", "*:mod:!*", "a:mod:", "ext4_*:mod:!ext4"} {
		if _, err := Compile(p); err != nil {
			t.Errorf("Compile(%q): %v", p, err)
		}
	}
	if _, err := CompileRegex("("); !errors.Is(err, ErrPattern) {
		t.Errorf("bad regex: %v", err)
	}
}

// ftrace_match_record's module rules.
func TestModuleQualifier(t *testing.T) {
	type rec struct{ name, mod string }
	core, dummy, nls := rec{"dummy_xmit", ""}, rec{"dummy_xmit", "dummy"}, rec{"char2uni", "nls_utf8"}
	cases := []struct {
		pat  string
		want map[rec]bool
	}{
		{"dummy_xmit", map[rec]bool{core: true, dummy: true, nls: false}},
		{"dummy_xmit:mod:dummy", map[rec]bool{core: false, dummy: true, nls: false}},
		{"*:mod:dummy", map[rec]bool{core: false, dummy: true, nls: false}},
		{":mod:dummy", map[rec]bool{core: false, dummy: true, nls: false}},
		{"*:mod:!dummy", map[rec]bool{core: true, dummy: false, nls: true}},
		{"*:mod:*", map[rec]bool{core: false, dummy: true, nls: true}},
		{"*:mod:", map[rec]bool{core: false, dummy: true, nls: true}},
		{"*:mod:!*", map[rec]bool{core: true, dummy: false, nls: false}},
		{"*:mod:!", map[rec]bool{core: true, dummy: false, nls: false}},
		{"*:mod:nls*", map[rec]bool{core: false, dummy: false, nls: true}},
		{"char*:mod:!nls_utf8", map[rec]bool{core: false, dummy: false, nls: false}},
		{"*:mod:9p", map[rec]bool{core: false, dummy: false, nls: false}}, // kernel reads "9p" as an index
	}
	for _, c := range cases {
		p, err := Compile(c.pat)
		if err != nil {
			t.Fatal(err)
		}
		for r, want := range c.want {
			if got := p.Match(r.name, r.mod); got != want {
				t.Errorf("%q matches %s [%s] = %v, want %v", c.pat, r.name, r.mod, got, want)
			}
		}
	}
}

func TestRegex(t *testing.T) {
	p, err := CompileRegex("^vfs_(read|write)$")
	if err != nil {
		t.Fatal(err)
	}
	if !p.Match("vfs_read", "") || p.Match("vfs_readv", "") || !p.Match("vfs_write", "ext4") {
		t.Error("regex semantics")
	}
}
