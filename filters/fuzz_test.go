package filters

import (
	"strings"
	"testing"

	"github.com/gobwas/glob"
)

// FuzzPatternAgreesWithReference: Compile never panics, and whatever it accepts matches
// exactly like the port of the kernel's filter_parse_regex + ftrace_match + glob_match.
func FuzzPatternAgreesWithReference(f *testing.F) {
	for _, s := range [][2]string{
		{"vfs_*", "vfs_read"}, {"*[!a]", "ba"}, {"[]a-c]*", "]x"}, {`a\`, "a"}, {"a[", "a["},
		{"*a*b?", "xaxbc"}, {"{x,y}", "{x,y}"}, {"[a-c-e-g]", "-"}, {"**", ""}, {"?*?", "ab"},
	} {
		f.Add(s[0], s[1])
	}
	f.Fuzz(func(t *testing.T, pat, name string) {
		p, err := Compile(pat)
		if err != nil || p.hasMod {
			return
		}
		// Function names are ASCII without NUL (kallsyms names); compare on those.
		for i := 0; i < len(name); i++ {
			if name[i] == 0 || name[i] >= 0x80 {
				return
			}
		}
		typ, search := parseRegex(pat)
		want := refMatch(typ, search, name)
		if got := p.Match(name, ""); got != want {
			t.Fatalf("pattern %q (type %v) vs %q: ftctl %v, kernel reference %v", pat, typ, name, got, want)
		}
		if typ == matchGlob {
			gp, ok := kernelGlobToGobwas(search)
			viaGobwas := false
			if ok {
				g, err := glob.Compile(gp)
				if err != nil {
					t.Fatalf("pattern %q translated to invalid gobwas syntax %q: %v", pat, gp, err)
				}
				viaGobwas = g.Match(name)
			}
			if viaGobwas != want {
				t.Fatalf("pattern %q via gobwas %q vs %q: %v, kernel reference %v", pat, gp, name, viaGobwas, want)
			}
		}
	})
}

// FuzzParseIndex: no panics; every line is one record; keys round-trip.
func FuzzParseIndex(f *testing.F) {
	f.Add("vfs_read\nvfs_write\ndummy_xmit [dummy]\n__ftrace_invalid_address___64\n")
	f.Add("a\n\n")
	f.Fuzz(func(t *testing.T, text string) {
		ix, err := ParseIndex(text)
		if err != nil {
			return
		}
		if n := len(strings.Split(strings.TrimRight(text, "\n"), "\n")); strings.TrimRight(text, "\n") != "" && ix.Len() != n {
			t.Fatalf("%d records from %d lines", ix.Len(), n)
		}
		for i := 1; i <= ix.Len(); i++ {
			k := ix.Key(i)
			if ix.Valid(i) && ix.Count(k) == 0 {
				t.Fatalf("record %d %+v not indexed", i, k)
			}
		}
	})
}
