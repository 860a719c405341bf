// Package kstr is the kernel's number and character rules (lib/kstrtox.c, lib/ctype.c) as
// its text parsers apply them: the probe grammar (probes/) and the event-filter grammar
// (eventfilter/) both use them. Matching them exactly is what lets ftctl refuse a definition or
// a filter only when the kernel would.
package kstr

import (
	"math"
	"math/bits"
)

// Strtoull is lib/kstrtox.c kstrtoull(s, base 0): an optional '+', a "0x" (hex) or "0"
// (octal) prefix or decimal, at least one digit, at most one trailing newline, no overflow.
func Strtoull(s string) (uint64, bool) {
	if s != "" && s[0] == '+' {
		s = s[1:]
	}
	base := uint64(10)
	if len(s) >= 1 && s[0] == '0' {
		if len(s) >= 3 && (s[1] == 'x' || s[1] == 'X') && IsXDigit(s[2]) {
			base, s = 16, s[2:]
		} else {
			base = 8
		}
	}
	var v uint64
	n := 0
	for n < len(s) {
		d, ok := digitVal(s[n])
		if !ok || uint64(d) >= base {
			break
		}
		hi, lo := bits.Mul64(v, base)
		if hi != 0 {
			return 0, false
		}
		lo, carry := bits.Add64(lo, uint64(d), 0)
		if carry != 0 {
			return 0, false
		}
		v = lo
		n++
	}
	if n == 0 {
		return 0, false
	}
	rest := s[n:]
	if rest == "\n" {
		rest = ""
	}
	return v, rest == ""
}

// Strtol is kstrtol(s, base 0) for a 64-bit long.
func Strtol(s string) (int64, bool) {
	if s != "" && s[0] == '-' {
		if len(s) > 1 && s[1] == '+' {
			return 0, false // kstrtoll() parses the rest without kstrtoull()'s '+'
		}
		v, ok := Strtoull(s[1:])
		if !ok || v > 1<<63 {
			return 0, false
		}
		return -int64(v), true
	}
	v, ok := Strtoull(s)
	if !ok || v > math.MaxInt64 {
		return 0, false
	}
	return int64(v), true
}

// Strtouint is kstrtouint(s, base 0).
func Strtouint(s string) (uint32, bool) {
	v, ok := Strtoull(s)
	if !ok || v > math.MaxUint32 {
		return 0, false
	}
	return uint32(v), true
}

// SimpleStrtoul is simple_strtoul(s, &tail, 0): the longest numeric prefix, no error; it
// returns the value and the number of bytes consumed.
func SimpleStrtoul(s string) (uint64, int) {
	base := uint64(10)
	i := 0
	if len(s) >= 1 && s[0] == '0' {
		if len(s) >= 3 && (s[1] == 'x' || s[1] == 'X') && IsXDigit(s[2]) {
			base, i = 16, 2
		} else {
			base = 8
		}
	}
	var v uint64
	for i < len(s) {
		d, ok := digitVal(s[i])
		if !ok || uint64(d) >= base {
			break
		}
		v = v*base + uint64(d)
		i++
	}
	return v, i
}

func digitVal(c byte) (int, bool) {
	switch {
	case c >= '0' && c <= '9':
		return int(c - '0'), true
	case c >= 'a' && c <= 'f':
		return int(c-'a') + 10, true
	case c >= 'A' && c <= 'F':
		return int(c-'A') + 10, true
	}
	return 0, false
}

// IsXDigit is the kernel's isxdigit: a hex digit.
func IsXDigit(c byte) bool { _, ok := digitVal(c); return ok }

// IsDigit is the kernel's isdigit: an ASCII digit.
func IsDigit(c byte) bool { return c >= '0' && c <= '9' }

// IsAlpha is the kernel's isalpha (lib/ctype.c): ASCII letters and the Latin-1 letters
// 0xC0-0xFF except 0xD7 and 0xF7.
func IsAlpha(c byte) bool {
	switch {
	case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z':
		return true
	case c >= 0xC0 && c != 0xD7 && c != 0xF7:
		return true
	}
	return false
}

// IsSpace is the kernel's isspace: ASCII white space and Latin-1 NBSP (0xA0). argv_split()
// splits a definition on these.
func IsSpace(c byte) bool {
	switch c {
	case ' ', '\t', '\n', '\v', '\f', '\r', 0xA0:
		return true
	}
	return false
}
