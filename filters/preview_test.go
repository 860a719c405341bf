package filters

import (
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
)

// previewPatterns cover every form filter_parse_regex chooses, classes (ranges, inverted,
// malformed, empty), escapes, a trailing '\', and every :mod: shape.
var previewPatterns = []string{
	"vfs_read", "vfs_*", "*sched*", "*_read", "*", "**", "*_[rw]*_[!x]?*", "vfs_[rw]*",
	"[a-c]*_?", "*[", "vfs_rea[", "[!a-y]*", `vfs\_read`, `vfs_read\`, `*\*`, "?", "???*",
	"*a*b*c*d*", "[]]*", "[!]]*", "[a-]*", "*[0-9][0-9]", "tcp_v[46]_*", "*:mod:nls*",
	"*:mod:", "*:mod:!", "*:mod:!dummy", "dummy_*:mod:dummy", ":mod:dummy", "*x*:mod:*",
	"*:mod:0abc", "[z-a]*", "*a??????????", "*a?????????b*", "vfs_*:mod:", "vfs_*:mod:!",
	"dummy_x*:mod:!nls*", "char2uni:mod:nls_utf8", "__x64_sys_*", "a*", "z", "*_", "_*",
}

func TestPreviewerAgrees(t *testing.T) {
	for _, kernel := range []string{"6.1", "6.12"} {
		ix := fixtureIndex(t, kernel)
		pv := NewPreviewer(ix)
		for _, s := range previewPatterns {
			p, err := Compile(s)
			if err != nil {
				t.Fatalf("%s: %v", s, err)
			}
			want := ix.Resolve(p)
			got, ok := pv.Resolve(p, nil, nil)
			if !ok || !slices.Equal(got, want) {
				t.Errorf("%s %q: previewer %d records, Index.Resolve %d", kernel, s, len(got), len(want))
			}
		}
	}
}

// TestPreviewerAgreesRandom: the same over random patterns (pieces of real names, every kind of
// glob syntax and qualifier), both kernels.
func TestPreviewerAgreesRandom(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 5))
	for _, kernel := range []string{"6.1", "6.12"} {
		ix := fixtureIndex(t, kernel)
		pv := NewPreviewer(ix)
		for i := 0; i < 300; i++ {
			s := randomPattern(r, ix)
			p, err := Compile(s)
			if err != nil {
				continue
			}
			want := ix.Resolve(p)
			if got, _ := pv.Resolve(p, nil, nil); !slices.Equal(got, want) {
				t.Errorf("%s %q: previewer %d records, Index.Resolve %d", kernel, s, len(got), len(want))
			}
		}
	}
}

func TestPreviewerCost(t *testing.T) {
	pv := NewPreviewer(fixtureIndex(t, "6.12"))
	for _, c := range []struct {
		pat      string
		min, max int
	}{
		{"vfs_read", 0, 0}, {"*", 0, 0}, {"vfs_*", 50, 500}, {"*:mod:nls*", 1, 20},
		{"*sched*", 500, 3000}, {"*_[rw]*", 3000, 15000}, {"*[!x]", 40000, 50000},
	} {
		if got := pv.Cost(mustCompile(t, c.pat)[0], nil); got < c.min || got > c.max {
			t.Errorf("cost of %q: %d, want %d to %d", c.pat, got, c.min, c.max)
		}
	}
	if got := pv.Cost(mustCompile(t, "vfs_*x")[0], []int{1, 2, 3}); got != 3 {
		t.Errorf("cost within 3 records: %d", got)
	}
}

func TestPreviewerStops(t *testing.T) {
	ix := fixtureIndex(t, "6.12")
	pv := NewPreviewer(ix)
	p, _ := Compile("*sched*")
	asked := 0
	if got, ok := pv.Resolve(p, nil, func() bool { asked++; return asked > 1 }); ok || got != nil {
		t.Errorf("a stopped resolve returned %d records, ok %v", len(got), ok)
	}
	if got, ok := pv.Resolve(p, nil, func() bool { return false }); !ok || !slices.Equal(got, ix.Resolve(p)) {
		t.Errorf("a resolve never stopped returned %d records, ok %v", len(got), ok)
	}
}

// TestDFAAgreesWithKglob: the automaton, and globTest (head and tail compared in place, the
// middle by the automaton), answer like lib/glob.c's algorithm for every name of a kernel, for
// the patterns above; patterns with too many states fall back.
func TestDFAAgreesWithKglob(t *testing.T) {
	ix := fixtureIndex(t, "6.12")
	built := 0
	for _, s := range previewPatterns {
		fn, _, _ := strings.Cut(s, ":")
		g := compileKglob(fn)
		d := newDFA(&g)
		if d == nil {
			continue
		}
		built++
		test := globTest(&g)
		for _, k := range ix.Records {
			want := g.match(k.Name)
			if got := d.match(k.Name); got != want {
				t.Fatalf("%q vs %q: automaton %v, kglob %v", s, k.Name, got, want)
			}
			if got := test(k.Name); got != want {
				t.Fatalf("%q vs %q: globTest %v, kglob %v", s, k.Name, got, want)
			}
		}
	}
	if built < len(previewPatterns)-2 {
		t.Errorf("only %d of %d patterns built an automaton", built, len(previewPatterns))
	}
	g := compileKglob("*a" + strings.Repeat("?", 20))
	if newDFA(&g) != nil {
		t.Error("an automaton of 2^20 states was built")
	}
}

// FuzzDFAAgreesWithKglob: globTest and the automaton answer like kglob (lib/glob.c).
func FuzzDFAAgreesWithKglob(f *testing.F) {
	for _, s := range previewPatterns {
		f.Add(s, "vfs_read_iter")
	}
	f.Add(`a\`, "a")
	f.Add("[!a]", "")
	f.Fuzz(func(t *testing.T, pat, name string) {
		// Compile takes printable ASCII only; names are ASCII without NUL (kallsyms).
		if !asciiNoNUL(pat) || !asciiNoNUL(name) {
			return
		}
		g := compileKglob(pat)
		want := g.match(name)
		if got := globTest(&g)(name); got != want {
			t.Fatalf("%q vs %q: globTest %v, kglob %v", pat, name, got, want)
		}
		if d := newDFA(&g); d != nil && d.match(name) != want {
			t.Fatalf("%q vs %q: automaton %v, kglob %v", pat, name, !want, want)
		}
	})
}

func asciiNoNUL(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] == 0 || s[i] >= 0x80 {
			return false
		}
	}
	return true
}

func TestNarrows(t *testing.T) {
	for _, c := range []struct {
		p, q string
		want bool
	}{
		{"vfs_*x", "vfs_*", true},
		{"vfs_r*", "vfs_*", true},
		{"vfs_read", "vfs_*", true},
		{"vfs_*", "vfs_*", true},
		{"*_[rw]*_[!x]?*", "*_[rw]*", true},
		{"*_[rw]*_", "*_[rw]*", true},
		{"*sched*", "*sch*", true},
		{"vfs_r?ad", "vfs_r*", true},
		{"vfs_[r]*", "vfs_?*", true},
		{"vfs_*:mod:dummy", "vfs_*", true},
		{"*:mod:dummy", "*:mod:", true},
		{"*:mod:dum*", "*:mod:", true},
		{"*:mod:dummy", "*:mod:dum*", true},
		{"*:mod:!dum*", "*:mod:!dummy", true},
		{"*:mod:!", "*:mod:!dummy", true},
		{"x*:mod:dummy", ":mod:dummy", true},
		{"[z-a]*", "vfs_*", true}, // selects nothing
		{`vfs_\*`, "vfs_*", true}, // a literal star is a byte like any other
		// Growing is not always narrowing.
		{"vfs_*", "vfs_", false},
		{"vfs_[", "vfs_", false},
		{"vfs_[r]", "vfs_[r", false},
		{"*_[rw]", "*_", false},
		{"vfs_*", "vfs_*x", false},
		{"*:mod:!dummy", "*:mod:!", false},
		{"*:mod:!dummy", "*:mod:!dum*", false},
		{"*:mod:", "*:mod:dummy", false},
		{"*:mod:dummy", "*:mod:!x", false},
		{"vfs_*", "vfs_*:mod:", false},
		{":mod:dummy", "x*:mod:dummy", false},
		{"ab", "[!a]b", false},
	} {
		p, err := Compile(c.p)
		if err != nil {
			t.Fatal(err)
		}
		q, err := Compile(c.q)
		if err != nil {
			t.Fatal(err)
		}
		if got := p.Narrows(q); got != c.want {
			t.Errorf("%q narrows %q: %v, want %v", c.p, c.q, got, c.want)
		}
	}
	re1, _ := CompileRegex("^vfs")
	re2, _ := CompileRegex("^vfs")
	p, _ := Compile("vfs_*")
	if !re1.Narrows(re2) || re1.Narrows(p) || p.Narrows(re1) {
		t.Error("regular expressions narrow only themselves")
	}
}

// randomPattern makes a pattern out of pieces of real names, with every kind of glob syntax
// and qualifier, to find an unsound rule of Narrows.
func randomPattern(r *rand.Rand, ix *Index) string {
	name := ix.Records[r.IntN(len(ix.Records))].Name
	var b strings.Builder
	pieces := 1 + r.IntN(4)
	for i := 0; i < pieces; i++ {
		lo := r.IntN(len(name))
		hi := min(len(name), lo+r.IntN(6))
		switch r.IntN(9) {
		case 0:
			b.WriteByte('*')
		case 1:
			b.WriteByte('?')
		case 2:
			b.WriteString("[" + name[lo:min(hi+1, len(name))] + "]")
		case 3:
			b.WriteString("[!" + name[lo:min(hi+1, len(name))] + "]")
		case 4:
			b.WriteString("[a-" + string(rune('a'+r.IntN(26))) + "]")
		case 5:
			b.WriteString(`\` + name[lo:min(lo+1, len(name))])
		case 6:
			b.WriteByte('[')
		}
		b.WriteString(name[lo:hi])
		if r.IntN(3) == 0 {
			b.WriteByte('*')
		}
	}
	s := b.String()
	switch r.IntN(8) {
	case 0:
		s += ":mod:"
	case 1:
		s += ":mod:" + []string{"dummy", "nls*", "!dummy", "!", "*", "d?mmy", "[dn]*"}[r.IntN(7)]
	}
	return s
}

// TestNarrowsIsSound: over random pairs of patterns, whenever Narrows says p selects within q,
// what p selects is within what q selects (full resolves over both kernels' indexes).
func TestNarrowsIsSound(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for _, kernel := range []string{"6.1", "6.12"} {
		ix := fixtureIndex(t, kernel)
		proved := 0
		for i := 0; i < 3000; i++ {
			a, b := randomPattern(r, ix), randomPattern(r, ix)
			if r.IntN(2) == 0 { // b grown from a: the console's case
				b = a
				g := randomPattern(r, ix)
				a = a + g[:min(len(g), 1+r.IntN(3))]
			}
			p, err1 := Compile(a)
			q, err2 := Compile(b)
			if err1 != nil || err2 != nil || !p.Narrows(q) {
				continue
			}
			proved++
			in := map[int]bool{}
			for _, i := range ix.Resolve(q) {
				in[i] = true
			}
			for _, i := range ix.Resolve(p) {
				if !in[i] {
					t.Fatalf("%q narrows %q, but it selects %v and %q does not", a, b, ix.Key(i), b)
				}
			}
		}
		t.Logf("%s: %d narrowing pairs checked", kernel, proved)
		if proved < 300 {
			t.Errorf("%s: only %d narrowing pairs tested", kernel, proved)
		}
	}
}

func FuzzNarrowsIsSound(f *testing.F) {
	f.Add("vfs_*x", "vfs_*", "vfs_readx", "")
	f.Add("*:mod:!dum*", "*:mod:!dummy", "dummy_xmit", "dummy")
	f.Add(`vfs_\*`, "vfs_*", "vfs_*", "")
	f.Fuzz(func(t *testing.T, a, b, name, module string) {
		p, err1 := Compile(a)
		q, err2 := Compile(b)
		if err1 != nil || err2 != nil || strings.IndexByte(name, 0) >= 0 || strings.IndexByte(module, 0) >= 0 {
			return
		}
		if p.Narrows(q) && p.Match(name, module) && !q.Match(name, module) {
			t.Fatalf("%q narrows %q, but %q [%s] is selected by the first only", a, b, name, module)
		}
	})
}

func BenchmarkPreviewer(b *testing.B) {
	ix := previewIndex(b)
	pv := NewPreviewer(ix)
	benchClasses(b, func(p *Pattern) { pv.Resolve(p, nil, nil) })
}

func TestPreviewerSuggestAgrees(t *testing.T) {
	ix := fixtureIndex(t, "6.12")
	pv := NewPreviewer(ix)
	for _, lit := range []string{"_", "vfs_raed", "vfs_read", "tcp_v4_do_rvc", "sched", "x", "zzzzzz", "kmalloc", "do_sys_open"} {
		want := ix.Suggest(lit, 5)
		got, ok := pv.Suggest(lit, 5, nil)
		if !ok || !slices.Equal(got, want) {
			t.Errorf("%q: previewer %v, index %v", lit, got, want)
		}
	}
	var rows editRows // reused from name to name, like Suggest
	for i, k := range ix.Records[:5000] {
		lit := []string{"vfs_raed", "x", "do_sys_open", ""}[i%4]
		if got, want := rows.distance(lit, k.Name, 3), EditDistance(lit, k.Name, 3); got != want {
			t.Fatalf("distance %q %q: %d, editDistance %d", lit, k.Name, got, want)
		}
	}
	if _, ok := pv.Suggest("_", 5, func() bool { return true }); ok {
		t.Error("a stopped suggestion answered")
	}
}
