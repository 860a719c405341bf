package filters

// Narrows and its helpers prove, from two patterns' text alone, that one selects a subset of
// what the other selects: the console then resolves a pattern that grows by filtering the
// previous one's matches instead of scanning the whole index. A false answer only costs a full
// scan; a wrong true answer would show a wrong count, so every rule below is a sufficient
// condition, checked against full scans of the real index (TestNarrowsIsSound,
// FuzzNarrowsIsSound).

// Narrows reports that every record p selects, q selects too, as far as it can prove it from the
// patterns (false when it cannot: regular expressions other than the same one, a star that
// becomes a literal, a literal '[' that becomes a class...).
func (p *Pattern) Narrows(q *Pattern) bool {
	if p.re != nil || q.re != nil {
		return p.re != nil && q.re != nil && p.Text == q.Text
	}
	return p.modulesWithin(q) && p.namesWithin(q)
}

// namesWithin: every name p's function half selects, q's selects.
func (p *Pattern) namesWithin(q *Pattern) bool {
	qAll := q.hasMod && q.fn.blank()
	pAll := p.hasMod && p.fn.blank()
	switch {
	case qAll:
		return true
	case pAll:
		return false
	}
	return globWithin(&p.fn, &q.fn)
}

// modulesWithin: every module p admits, q admits. Without :mod: every module (and the core
// kernel) is admitted; ":mod:X" admits the modules X matches ("" for X blank: every module),
// ":mod:!X" the others, the core kernel included.
func (p *Pattern) modulesWithin(q *Pattern) bool {
	switch {
	case !q.hasMod:
		return true
	case !p.hasMod || p.modExclude != q.modExclude:
		return false
	case !p.modExclude: // the modules p's glob matches ⊆ those q's matches
		switch {
		case q.mod.blank():
			return true
		case p.mod.blank():
			return false
		}
		return globWithin(&p.mod, &q.mod)
	default: // the complements: q's glob matches ⊆ p's
		switch {
		case p.mod.blank():
			return true
		case q.mod.blank():
			return false
		}
		return globWithin(&q.mod, &p.mod)
	}
}

// globWithin: every string a matches, b matches (a sufficient condition). Every form of
// filter_parse_regex (full, front, middle, end) selects what the glob of the same text selects,
// so both are compared as globs over compileKglob's tokens.
func globWithin(a, b *matcher) bool {
	if a.typ == matchIndex {
		return true // the kernel reads a number: it selects nothing
	}
	if b.typ == matchIndex {
		return false
	}
	ga, gb := a.kglob(), b.kglob()
	if ga.never {
		return true
	}
	if gb.never {
		return false
	}
	return tokensWithin(globTokens(&ga), globTokens(&gb))
}

// kglob is the matcher's glob: the compiled one, or the fast form's text as a glob.
func (m *matcher) kglob() kglob {
	if m.typ == matchGlob {
		return m.k
	}
	switch m.typ {
	case matchFront:
		return compileKglob(escapeGlob(m.search) + "*")
	case matchMiddle:
		return compileKglob("*" + escapeGlob(m.search) + "*")
	case matchEnd:
		return compileKglob("*" + escapeGlob(m.search))
	}
	return compileKglob(escapeGlob(m.search))
}

// escapeGlob makes a fast form's search text a glob of itself (it has no * ? [ \ but may have
// been cut at a star by parseRegex; escaping is for safety, not need).
func escapeGlob(s string) string {
	out := make([]byte, 0, len(s))
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case '*', '?', '[', '\\':
			out = append(out, '\\')
		}
		out = append(out, s[i])
	}
	return string(out)
}

// tokensWithin is a homomorphism check: a's tokens can be laid over b's so that each star of b
// covers a run of a's tokens (any run: a star matches any string) and each one-byte token of b
// covers one one-byte token of a whose bytes it admits. Then every string of a is one of b.
// Dynamic programming over (i, j): ok[i][j] says a[i:] is within b[j:].
func tokensWithin(a, b []gtok) bool {
	n, m := len(a), len(b)
	ok := make([][]bool, n+1)
	for i := range ok {
		ok[i] = make([]bool, m+1)
	}
	ok[n][m] = true
	for j := m - 1; j >= 0; j-- {
		ok[n][j] = b[j].kind == gStar && ok[n][j+1]
	}
	for i := n - 1; i >= 0; i-- {
		for j := m - 1; j >= 0; j-- {
			if b[j].kind == gStar {
				ok[i][j] = ok[i][j+1] || ok[i+1][j] // the star matches nothing, or takes a[i] too
				continue
			}
			ok[i][j] = a[i].kind != gStar && bytesWithin(a[i], b[j]) && ok[i+1][j+1]
		}
	}
	return ok[0][0]
}

// bytesWithin: every byte one-byte token a admits, b admits (names have no NUL).
func bytesWithin(a, b gtok) bool {
	sa, sb := a.bytes(), b.bytes()
	for w := range sa {
		if sa[w]&^sb[w] != 0 {
			return false
		}
	}
	return true
}

// bytes is the set of bytes a one-byte token admits, NUL left out.
func (t gtok) bytes() [4]uint64 {
	switch t.kind {
	case gLit:
		var s [4]uint64
		s[t.c>>6] = 1 << (t.c & 63)
		s[0] &^= 1
		return s
	case gAny:
		return [4]uint64{^uint64(1), ^uint64(0), ^uint64(0), ^uint64(0)}
	case gClass:
		s := *t.set
		s[0] &^= 1
		return s
	}
	return [4]uint64{}
}
