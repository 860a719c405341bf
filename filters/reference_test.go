package filters

import "strings"

// refGlobMatch is a line-by-line port of lib/glob.c glob_match, the reference the gobwas
// translation is checked against (TestKernelGlobSelfTests, FuzzPatternAgreesWithReference).
// One deliberate difference: a character class never matches the end of the string. The
// kernel's class has no such check, so an inverted class ("[!x]") that meets the end of a
// name consumes the terminating NUL and goes on comparing whatever stale bytes follow in the
// caller's buffer (ftrace_match_record's stack copy of the previous symbol name): its result
// is not a function of the pattern and the name. ftctl writes indexes, so what it previews is
// what the kernel applies; see docs/design.md, "Pattern semantics".
func refGlobMatch(pat, str string) bool {
	at := func(s string, i int) byte {
		if i < len(s) {
			return s[i]
		}
		return 0
	}
	p, s := 0, 0
	backPat, backStr := -1, 0
	for {
		c := at(str, s)
		s++
		d := at(pat, p)
		p++
		switch d {
		case '?':
			if c == 0 {
				return false
			}
			continue
		case '*':
			if at(pat, p) == 0 {
				return true
			}
			backPat = p
			s--
			backStr = s
			continue
		case '[':
			if c == 0 { // ftctl's end-of-string check (see above)
				return false
			}
			match := false
			inverted := at(pat, p) == '!'
			class := p
			if inverted {
				class++
			}
			a := at(pat, class)
			class++
			malformed := false
			for {
				b := a
				if a == 0 {
					malformed = true
					break
				}
				if at(pat, class) == '-' && at(pat, class+1) != ']' {
					b = at(pat, class+1)
					if b == 0 {
						malformed = true
						break
					}
					class += 2
				}
				if a <= c && c <= b {
					match = true
				}
				a = at(pat, class)
				class++
				if a == ']' {
					break
				}
			}
			if !malformed {
				if match == inverted {
					goto backtrack
				}
				p = class
				continue
			}
			// malformed: '[' is a literal
		case '\\':
			d = at(pat, p)
			p++
		}
		// literal:
		if c == d {
			if d == 0 {
				return true
			}
			continue
		}
	backtrack:
		if c == 0 || backPat < 0 {
			return false
		}
		p = backPat
		backStr++
		s = backStr
	}
}

// refMatch is a port of ftrace_match for one parsed search.
func refMatch(typ matchType, search, str string) bool {
	switch typ {
	case matchFull:
		return str == search
	case matchFront:
		return strings.HasPrefix(str, search)
	case matchMiddle:
		return strings.Contains(str, search)
	case matchEnd:
		return strings.HasSuffix(str, search)
	case matchGlob:
		return refGlobMatch(search, str)
	}
	return false
}
