package filters

// A deterministic automaton for one kernel glob, for the console's previews: one table load per
// byte of a name instead of kglob's interpreter (tokens, backtracking, a prefilter of literal
// runs). It is built from the same tokens as kglob (compileKglob), so it has lib/glob.c's
// semantics by construction; FuzzDFAAgreesWithKglob checks the two against each other.
//
// The glob is first a position automaton: state bit i set means "the first i tokens matched"; a
// star is a self-loop at its position plus an empty move past it. Sets of positions (one
// uint64: at most 63 tokens) are the states of the subset construction, which stops at
// dfaMaxStates (a pattern like `*a??????????` has exponentially many): the caller then uses
// kglob.

const (
	dfaDead = 0 // no continuation matches
	dfaSure = 1 // every continuation matches (a trailing star is reached)

	dfaMaxStates = 256 // 256 states × 256 bytes × 2 bytes: a 128 KiB table at most
	dfaMaxTokens = 63
)

// dfa is a compiled glob: trans[state<<8|byte] is the next state; final says which states
// accept at the end of the name.
type dfa struct {
	trans []uint16
	final []bool
	start uint16
}

// globTokens is the glob's token list with the tokens that change nothing removed: a trailing
// '\' (it matches only the end of the name, which the end of the list means too) and stars
// right after a star (`**` is `*`).
func globTokens(g *kglob) []gtok {
	toks := make([]gtok, 0, len(g.toks))
	for _, t := range g.toks {
		switch {
		case t.kind == gEnd:
			continue // compileKglob makes it only at the end
		case t.kind == gStar && len(toks) > 0 && toks[len(toks)-1].kind == gStar:
			continue
		}
		toks = append(toks, t)
	}
	return toks
}

// admits says whether a one-byte token matches c.
func (t gtok) admits(c byte) bool {
	switch t.kind {
	case gLit:
		return t.c == c
	case gAny:
		return true
	case gClass:
		return t.set[c>>6]&(1<<(c&63)) != 0
	}
	return false
}

// newDFA builds the automaton of a compiled glob, or returns nil when the glob has too many
// tokens or states.
func newDFA(g *kglob) *dfa {
	if g.never {
		return &dfa{trans: make([]uint16, 2<<8), final: []bool{false, true}, start: dfaDead}
	}
	return tokensDFA(globTokens(g))
}

// tokensDFA is newDFA over tokens (no gEnd, no two stars in a row).
func tokensDFA(toks []gtok) *dfa {
	d := &dfa{}
	n := len(toks)
	if n > dfaMaxTokens {
		return nil
	}
	var stars uint64
	for i, t := range toks {
		if t.kind == gStar {
			stars |= 1 << i
		}
	}
	// The bytes that move the same positions form a class: each class is computed once.
	var byByte [256]uint64
	classOf := map[uint64]bool{}
	for c := 0; c < 256; c++ {
		var m uint64
		for i, t := range toks {
			if t.kind != gStar && t.admits(byte(c)) {
				m |= 1 << i
			}
		}
		byByte[c] = m
		classOf[m] = true
	}
	closure := func(s uint64) uint64 { return s | (s&stars)<<1 } // no two stars in a row
	accept := uint64(1) << n
	sureBit := uint64(0)
	if n > 0 && toks[n-1].kind == gStar {
		sureBit = 1 << (n - 1)
	}
	ids := map[uint64]uint16{}
	var sets []uint64
	id := func(s uint64) (uint16, bool) {
		switch {
		case s == 0:
			return dfaDead, true
		case s&sureBit != 0:
			return dfaSure, true
		}
		if v, ok := ids[s]; ok {
			return v, true
		}
		if len(sets)+2 >= dfaMaxStates {
			return 0, false
		}
		v := uint16(len(sets) + 2)
		ids[s] = v
		sets = append(sets, s)
		return v, true
	}
	start, ok := id(closure(1))
	if !ok {
		return nil
	}
	d.start = start
	for k := 0; k < len(sets); k++ {
		s := sets[k]
		next := make(map[uint64]uint16, len(classOf))
		for m := range classOf {
			v, ok := id(closure((s&m)<<1 | s&stars))
			if !ok {
				return nil
			}
			next[m] = v
		}
		row := make([]uint16, 256)
		for c := 0; c < 256; c++ {
			row[c] = next[byByte[c]]
		}
		d.trans = append(d.trans, row...) // state k+2's row, once the two fixed rows are in front
	}
	fixed := make([]uint16, 2<<8)
	for c := 0; c < 256; c++ {
		fixed[256+c] = dfaSure
	}
	d.trans = append(fixed, d.trans...)
	d.final = make([]bool, len(sets)+2)
	d.final[dfaSure] = true
	for k, s := range sets {
		d.final[k+2] = s&accept != 0
	}
	return d
}

// match runs the automaton over a name, stopping as soon as the answer is known.
func (d *dfa) match(s string) bool {
	st := d.start
	if st <= dfaSure {
		return st == dfaSure
	}
	for i := 0; i < len(s); i++ {
		st = d.trans[int(st)<<8|int(s[i])]
		if st <= dfaSure {
			return st == dfaSure
		}
	}
	return d.final[st]
}

// globTest is the fastest exact test of a glob over names. A glob is HEAD*MIDDLE*TAIL, HEAD and
// TAIL without stars: they have a fixed length, so they are compared with the name's start and
// end directly (a suffix like "*_read" costs five byte comparisons, not a walk of the name), and
// only what lies between is matched against *MIDDLE* (an automaton, which stops as soon as the
// middle is found; kglob when the automaton would be too big). Without a star, the name is
// compared byte by byte.
func globTest(g *kglob) func(string) bool {
	if g.never {
		return func(string) bool { return false }
	}
	toks := globTokens(g)
	first, last := -1, -1
	for i, t := range toks {
		if t.kind == gStar {
			if first < 0 {
				first = i
			}
			last = i
		}
	}
	if first < 0 {
		all := byteSets(toks)
		return func(s string) bool { return len(s) == len(all) && setsMatch(all, s) }
	}
	head, tail := byteSets(toks[:first]), byteSets(toks[last+1:])
	var middle func(string) bool // nil: a lone star, anything
	if mid := toks[first : last+1]; len(mid) > 1 {
		if d := tokensDFA(mid); d != nil {
			middle = d.match
		} else {
			k := &kglob{toks: mid}
			middle = k.run
		}
	}
	fixed := len(head) + len(tail)
	return func(s string) bool {
		if len(s) < fixed || !setsMatch(head, s[:len(head)]) || !setsMatch(tail, s[len(s)-len(tail):]) {
			return false
		}
		return middle == nil || middle(s[len(head):len(s)-len(tail)])
	}
}

// byteSets is the bytes each one-byte token admits.
func byteSets(toks []gtok) [][4]uint64 {
	out := make([][4]uint64, len(toks))
	for i, t := range toks {
		out[i] = t.bytes()
	}
	return out
}

// setsMatch says whether each byte of s is in its set (len(s) == len(sets)).
func setsMatch(sets [][4]uint64, s string) bool {
	for i, set := range sets {
		c := s[i]
		if set[c>>6]&(1<<(c&63)) == 0 {
			return false
		}
	}
	return true
}
