package stream

import (
	"encoding/binary"
	"unicode"
	"unicode/utf8"
)

// Trace data is untrusted: any process chooses its own comm (prctl, /proc/self/comm) and the
// file names a probe records, and trace_marker takes any bytes. Both encoders below make such
// bytes harmless: the JSON one always produces valid JSON, the text one never lets a control
// character or an escape sequence reach the terminal.

const hexDigits = "0123456789abcdef"

// plainText[c]: c is printed as itself by AppendEscaped (printable ASCII but the backslash).
// plainJSON[c]: c is copied as itself into a JSON string (printable ASCII but '"' and '\').
var plainText, plainJSON [256]bool

func init() {
	for c := 0x20; c < 0x7f; c++ {
		plainText[c] = c != '\\'
		plainJSON[c] = c != '\\' && c != '"'
	}
}

// AppendEscaped appends s for a terminal: printable ASCII and graphic Unicode as they are;
// a backslash doubled (so that what follows is unambiguous); \t \n \r; other C0 controls and
// DEL as \xNN; C1 controls and other non-graphic characters (bidi overrides, zero-width
// characters...) as \uNNNN or \UNNNNNNNN; each byte of invalid UTF-8 as \xNN.
func AppendEscaped(dst, s []byte) []byte {
	return appendEscaped(dst, s, false)
}

// appendEscaped is AppendEscaped; quoted also escapes '"' (for strings shown in quotes).
func appendEscaped(dst, s []byte, quoted bool) []byte {
	var i int
	if quoted {
		i = plainPrefix(s, '"', '\\', &plainJSON) // the same set: printable ASCII but '"' and '\\'
	} else {
		i = plainPrefix(s, '\\', '\\', &plainText)
	}
	if i == len(s) { // the usual case: nothing to escape
		return append(dst, s...)
	}
	start := 0
	for i < len(s) {
		c := s[i]
		if plainText[c] && (!quoted || c != '"') {
			i++
			continue
		}
		if c >= utf8.RuneSelf {
			r, size := utf8.DecodeRune(s[i:])
			if r != utf8.RuneError && unicode.IsGraphic(r) {
				i += size
				continue
			}
			dst = append(dst, s[start:i]...)
			if r == utf8.RuneError && size == 1 {
				dst = append(dst, '\\', 'x', hexDigits[c>>4], hexDigits[c&15])
			} else {
				dst = appendUEscape(dst, r)
			}
			i += size
			start = i
			continue
		}
		dst = append(dst, s[start:i]...)
		switch c {
		case '\\':
			dst = append(dst, '\\', '\\')
		case '"':
			dst = append(dst, '\\', '"')
		case '\t':
			dst = append(dst, '\\', 't')
		case '\n':
			dst = append(dst, '\\', 'n')
		case '\r':
			dst = append(dst, '\\', 'r')
		default:
			dst = append(dst, '\\', 'x', hexDigits[c>>4], hexDigits[c&15])
		}
		i++
		start = i
	}
	return append(dst, s[start:]...)
}

// plainWord says whether the 8 bytes of w all are printable ASCII other than q1 and q2 (two
// of '"' and '\\'). Each byte's low 7 bits x are tested with additions that cannot carry into
// the next byte (x <= 0x7f): x+0x60 has its top bit clear exactly when x < 0x20, x+1 has it set
// exactly when x is 0x7f, and (x^q)+0x7f has it clear exactly when x is q. A set top bit of w
// itself is a byte >= 0x80. Trace data is scanned a word at a time: byte loops are what cost
// most under emulation, and a stream has hundreds of thousands of lines per second.
func plainWord(w uint64, q1, q2 byte) bool {
	const ones, highs = 0x0101010101010101, 0x8080808080808080
	x := w &^ highs
	ok := (x + 0x60*ones) & ((x ^ uint64(q1)*ones) + 0x7f*ones) & ((x ^ uint64(q2)*ones) + 0x7f*ones)
	return (w|(x+ones)|^ok)&highs == 0
}

// plainPrefix is the length of the leading run of s made of printable ASCII other than q1 and
// q2 (plain says the same of one byte): a word at a time, the last short word overlapping the
// one before it or, for a string shorter than a word, padded with plain bytes.
func plainPrefix(s []byte, q1, q2 byte, plain *[256]bool) int {
	n := len(s)
	if n < 8 {
		var w uint64
		if cap(s) >= 8 { // trace data sits in a larger buffer: read the word, mask what follows s
			w = binary.LittleEndian.Uint64(s[:8])
		} else {
			for i, c := range s {
				w |= uint64(c) << (8 * i)
			}
		}
		mask := uint64(1)<<(8*n) - 1
		if plainWord(w&mask|0x6161616161616161&^mask, q1, q2) { // padded with 'a'
			return n
		}
		i := 0
		for i < n && plain[s[i]] {
			i++
		}
		return i
	}
	i := 0
	for ; i+8 <= n; i += 8 {
		if !plainWord(binary.LittleEndian.Uint64(s[i:]), q1, q2) {
			break
		}
	}
	if i+8 > n && i < n && plainWord(binary.LittleEndian.Uint64(s[n-8:]), q1, q2) {
		return n
	}
	for i < n && plain[s[i]] {
		i++
	}
	return i
}

func appendUEscape(dst []byte, r rune) []byte {
	if r > 0xffff {
		dst = append(dst, '\\', 'U')
		for shift := 28; shift >= 0; shift -= 4 {
			dst = append(dst, hexDigits[(r>>shift)&15])
		}
		return dst
	}
	return append(dst, '\\', 'u', hexDigits[(r>>12)&15], hexDigits[(r>>8)&15], hexDigits[(r>>4)&15], hexDigits[r&15])
}

// AppendJSONString appends s as a JSON string. The result is always valid JSON and decodes to
// what encoding/json would make of the same bytes: each byte of invalid UTF-8 becomes U+FFFD.
// Unlike encoding/json it also escapes DEL and the C1 controls (and U+2028, U+2029 as
// encoding/json does), so that no control character is left raw even in JSON on a terminal.
func AppendJSONString(dst, s []byte) []byte {
	dst = append(dst, '"')
	i := plainPrefix(s, '"', '\\', &plainJSON)
	if i == len(s) { // the usual case: nothing to escape
		dst = append(dst, s...)
		return append(dst, '"')
	}
	start := 0
	for i < len(s) {
		c := s[i]
		if plainJSON[c] {
			i++
			continue
		}
		if c >= utf8.RuneSelf {
			r, size := utf8.DecodeRune(s[i:])
			switch {
			case r == utf8.RuneError && size == 1:
				dst = append(dst, s[start:i]...)
				dst = append(dst, `\ufffd`...)
			case r < 0xa0 || r == '\u2028' || r == '\u2029':
				dst = append(dst, s[start:i]...)
				dst = appendUEscape(dst, r)
			default:
				i += size
				continue
			}
			i += size
			start = i
			continue
		}
		dst = append(dst, s[start:i]...)
		switch c {
		case '\\', '"':
			dst = append(dst, '\\', c)
		case '\n':
			dst = append(dst, '\\', 'n')
		case '\r':
			dst = append(dst, '\\', 'r')
		case '\t':
			dst = append(dst, '\\', 't')
		default:
			dst = append(dst, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&15])
		}
		i++
		start = i
	}
	dst = append(dst, s[start:]...)
	return append(dst, '"')
}
