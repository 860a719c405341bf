package filters

import "strings"

// kglob is a kernel glob compiled for speed: lib/glob.c's own single-backtrack algorithm over
// pre-parsed tokens (character classes as 256-bit sets), behind a prefilter of the literal runs
// every match must contain in order. It is what makes a full-glob preview over 70,000 functions
// fit in a keystroke. The tests check it against a port of lib/glob.c and against a translation
// of the same pattern into gobwas/glob (only there: gobwas is an independent check, not the
// engine), by table and by fuzzing.
type kglob struct {
	toks   []gtok
	minLen int      // every match is at least this long
	prefix string   // literal text before the first wildcard: must start the name
	runs   []string // literal runs between wildcards, in order: must occur in the name
	never  bool     // a class admits nothing: the pattern matches nothing
}

type gtokKind uint8

const (
	gLit   gtokKind = iota // one literal byte
	gAny                   // ?
	gStar                  // *
	gClass                 // [...]
	gEnd                   // a trailing '\': matches the end of the string
)

type gtok struct {
	kind gtokKind
	c    byte
	set  *[4]uint64
}

func compileKglob(p string) kglob {
	var g kglob
	var run strings.Builder
	flush := func() {
		if run.Len() > 0 {
			g.runs = append(g.runs, run.String())
			run.Reset()
		}
	}
	seenWild := false
	for i := 0; i < len(p); {
		c := p[i]
		switch c {
		case '?':
			g.toks = append(g.toks, gtok{kind: gAny})
			g.minLen++
			flush()
			seenWild = true
			i++
		case '*':
			g.toks = append(g.toks, gtok{kind: gStar})
			flush()
			seenWild = true
			i++
		case '\\':
			if i+1 == len(p) {
				g.toks = append(g.toks, gtok{kind: gEnd})
				i++
				continue
			}
			g.addLit(p[i+1], &run, seenWild)
			i += 2
		case '[':
			set, next, ok := kernelClass(p, i+1)
			if !ok {
				g.addLit('[', &run, seenWild)
				i++
				continue
			}
			var bits [4]uint64
			empty := true
			for b := 1; b < 256; b++ {
				if set[b] {
					bits[b>>6] |= 1 << (b & 63)
					empty = false
				}
			}
			if empty {
				g.never = true
			}
			g.toks = append(g.toks, gtok{kind: gClass, set: &bits})
			g.minLen++
			flush()
			seenWild = true
			i = next
		default:
			g.addLit(c, &run, seenWild)
			i++
		}
	}
	flush()
	return g
}

func (g *kglob) addLit(c byte, run *strings.Builder, seenWild bool) {
	g.toks = append(g.toks, gtok{kind: gLit, c: c})
	g.minLen++
	run.WriteByte(c)
	if !seenWild {
		g.prefix += string(c)
	}
}

func (g *kglob) match(s string) bool {
	if g.never || len(s) < g.minLen || !strings.HasPrefix(s, g.prefix) {
		return false
	}
	// Prefilter: the literal runs must occur in order, without overlapping.
	rest := s
	for _, r := range g.runs {
		i := strings.Index(rest, r)
		if i < 0 {
			return false
		}
		rest = rest[i+len(r):]
	}
	return g.run(s)
}

// run is lib/glob.c glob_match over tokens, with the end-of-string check on classes (see
// refGlobMatch for why).
func (g *kglob) run(s string) bool {
	toks := g.toks
	t, i := 0, 0
	backT, backI := -1, 0
	for {
		if t == len(toks) {
			if i == len(s) {
				return true
			}
			goto backtrack
		}
		switch tk := toks[t]; tk.kind {
		case gStar:
			if t == len(toks)-1 {
				return true
			}
			backT, backI = t+1, i
			if !g.skip(s, backT, &backI) {
				return false
			}
			t, i = backT, backI
			continue
		case gEnd:
			if i == len(s) {
				return true
			}
		case gAny:
			if i < len(s) {
				t, i = t+1, i+1
				continue
			}
		case gClass:
			if i < len(s) && tk.set[s[i]>>6]&(1<<(s[i]&63)) != 0 {
				t, i = t+1, i+1
				continue
			}
		case gLit:
			if i < len(s) && s[i] == tk.c {
				t, i = t+1, i+1
				continue
			}
		}
	backtrack:
		if i >= len(s) || backT < 0 { // the kernel gives up at the end of the string
			return false
		}
		backI++
		if !g.skip(s, backT, &backI) {
			return false
		}
		t, i = backT, backI
	}
}

// skip moves a star's retry position to the next place where the token after the star can
// match, when that token is a literal: the positions in between would fail and backtrack anyway.
func (g *kglob) skip(s string, t int, at *int) bool {
	if g.toks[t].kind != gLit {
		return true
	}
	j := strings.IndexByte(s[min(*at, len(s)):], g.toks[t].c)
	if j < 0 {
		return false
	}
	*at += j
	return true
}
