package probes

import (
	"math"
	"math/bits"
)

// The kernel's number and character rules, as the probe parser applies them. Matching them
// exactly is what lets ftctl refuse a definition only when the kernel would.

// kstrtoull is lib/kstrtox.c kstrtoull(s, base 0): an optional '+', a "0x" (hex) or "0"
// (octal) prefix or decimal, at least one digit, at most one trailing newline, no overflow.
func kstrtoull(s string) (uint64, bool) {
	if s != "" && s[0] == '+' {
		s = s[1:]
	}
	base := uint64(10)
	if len(s) >= 1 && s[0] == '0' {
		if len(s) >= 3 && (s[1] == 'x' || s[1] == 'X') && isxdigit(s[2]) {
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

// kstrtol is kstrtol(s, base 0) for a 64-bit long.
func kstrtol(s string) (int64, bool) {
	if s != "" && s[0] == '-' {
		if len(s) > 1 && s[1] == '+' {
			return 0, false // kstrtoll() parses the rest without kstrtoull()'s '+'
		}
		v, ok := kstrtoull(s[1:])
		if !ok || v > 1<<63 {
			return 0, false
		}
		return -int64(v), true
	}
	v, ok := kstrtoull(s)
	if !ok || v > math.MaxInt64 {
		return 0, false
	}
	return int64(v), true
}

// kstrtouint is kstrtouint(s, base 0).
func kstrtouint(s string) (uint32, bool) {
	v, ok := kstrtoull(s)
	if !ok || v > math.MaxUint32 {
		return 0, false
	}
	return uint32(v), true
}

// simpleStrtoul is simple_strtoul(s, &tail, 0): the longest numeric prefix, no error; it
// returns the value and the number of bytes consumed.
func simpleStrtoul(s string) (uint64, int) {
	base := uint64(10)
	i := 0
	if len(s) >= 1 && s[0] == '0' {
		if len(s) >= 3 && (s[1] == 'x' || s[1] == 'X') && isxdigit(s[2]) {
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

func isxdigit(c byte) bool { _, ok := digitVal(c); return ok }

func isdigit(c byte) bool { return c >= '0' && c <= '9' }

// isalpha is the kernel's isalpha (lib/ctype.c): ASCII letters and the Latin-1 letters
// 0xC0-0xFF except 0xD7 and 0xF7.
func isalpha(c byte) bool {
	switch {
	case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z':
		return true
	case c >= 0xC0 && c != 0xD7 && c != 0xF7:
		return true
	}
	return false
}

// isspace is the kernel's isspace: ASCII white space and Latin-1 NBSP (0xA0). argv_split()
// splits a definition on these.
func isspace(c byte) bool {
	switch c {
	case ' ', '\t', '\n', '\v', '\f', '\r', 0xA0:
		return true
	}
	return false
}

// isGoodName is kernel/trace/trace.h is_good_name(): a C identifier (kernel ctype).
func isGoodName(name string) bool { return goodName(name, false) }

// isGoodSystemName is is_good_system_name(): a group name may also hold '-', anywhere
// (__is_good_name(name, true); a fix of 5b7a96220900e "tracing/probe: Check event/group
// naming rule at parsing" sent to stable), never '.' (seen: "p:foo.1/bar vfs_read" refused by
// 6.1 and 6.12 with BAD_GROUP_NAME, as the selftests expect).
func isGoodSystemName(name string) bool { return goodName(name, true) }

func goodName(name string, hyphen bool) bool {
	if name == "" || (!isalpha(name[0]) && name[0] != '_' && (!hyphen || name[0] != '-')) {
		return false
	}
	for i := 1; i < len(name); i++ {
		c := name[i]
		if !isalpha(c) && !isdigit(c) && c != '_' && (!hyphen || c != '-') {
			return false
		}
	}
	return true
}
