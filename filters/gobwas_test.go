package filters

import (
	"strings"

	"github.com/gobwas/glob"
)

// A third, independent implementation of the kernel's glob semantics for differential tests:
// the pattern translated into gobwas/glob syntax. ftctl first compiled patterns this way, as
// planned; over a 70,000-name index, gobwas (v1.1.0, and v0.2.3 alike) took several times the
// per-keystroke budget for a multi-star glob with classes (BENCHMARKS.md, "Pattern preview over
// 70,000 functions"), so production matching uses kglob. The translation stays as a check:
// kglob, this translation and the line-by-line port of lib/glob.c (refGlobMatch) must agree on
// every input the fuzzer finds.

// kernelGlobToGobwas translates a lib/glob.c pattern into gobwas/glob syntax that matches the
// same ASCII strings (function and module names are ASCII; patterns are checked to be). ok is
// false when the pattern can match nothing (a character class that admits no character).
//
// lib/glob.c rules reproduced here: '?' is any one character; '*' any run; '\x' is a literal x,
// and a trailing '\' matches the end of the string; '[' opens a class whose first character may
// be ']', '!' right after '[' inverts it, "a-b" is a range (empty when a > b), '-' before ']' is
// literal, '\' inside a class is literal, and a class left unterminated makes '[' a literal.
// gobwas's own extra syntax ({a,b} alternatives, its class forms) is escaped or rebuilt.
func kernelGlobToGobwas(p string) (string, bool) {
	var b strings.Builder
	for i := 0; i < len(p); {
		c := p[i]
		switch c {
		case '?', '*':
			b.WriteByte(c)
			i++
		case '\\':
			if i+1 == len(p) { // matches the terminating NUL: the end of the string
				i++
				continue
			}
			b.WriteString(glob.QuoteMeta(p[i+1 : i+2]))
			i += 2
		case '[':
			set, next, ok := kernelClass(p, i+1)
			if !ok { // malformed: '[' is a literal
				b.WriteString(glob.QuoteMeta("["))
				i++
				continue
			}
			cls, possible := gobwasClass(set)
			if !possible {
				return "", false
			}
			b.WriteString(cls)
			i = next
		default:
			b.WriteString(glob.QuoteMeta(p[i : i+1]))
			i++
		}
	}
	return b.String(), true
}

// gobwasClass writes a byte set (restricted to ASCII) as a gobwas single-character matcher:
// "?" for every character, a quoted literal for one, else a "[...]" list with each character
// escaped and '-' last. possible is false for the empty set.
func gobwasClass(set [256]bool) (string, bool) {
	var chars []byte
	dash := false
	for c := 1; c < 128; c++ {
		if !set[c] {
			continue
		}
		if c == '-' {
			dash = true
			continue
		}
		chars = append(chars, byte(c))
	}
	n := len(chars)
	if dash {
		n++
	}
	switch {
	case n == 0:
		return "", false
	case n == 127:
		return "?", true
	case n == 1:
		if dash {
			return glob.QuoteMeta("-"), true
		}
		return glob.QuoteMeta(string(chars)), true
	}
	var b strings.Builder
	b.WriteByte('[')
	for _, c := range chars {
		b.WriteByte('\\')
		b.WriteByte(c)
	}
	if dash {
		b.WriteString(`\-`)
	}
	b.WriteByte(']')
	return b.String(), true
}
