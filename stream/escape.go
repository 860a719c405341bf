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
	start := 0
	for i := 0; i < len(s); {
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

// plainJSONWord says whether the 8 bytes of w all are printable ASCII other than '"' and '\'
// (the usual bit tricks: a byte is zero in x exactly when x-0x01 borrows into its top bit).
func plainJSONWord(w uint64) bool {
	const ones, highs = 0x0101010101010101, 0x8080808080808080
	hasZero := func(x uint64) uint64 { return (x - ones) & ^x & highs }
	bad := w&highs | // >= 0x80
		(w-0x20*ones)&^w&highs | // < 0x20
		hasZero(w^('"'*ones)) | hasZero(w^('\\'*ones)) | hasZero(w^(0x7f*ones))
	return bad == 0
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
	start := 0
	for i := 0; i < len(s); {
		// Skip 8 plain bytes at a time: the common case is a short clean ASCII name.
		for i+8 <= len(s) && plainJSONWord(binary.LittleEndian.Uint64(s[i:])) {
			i += 8
		}
		if i >= len(s) {
			break
		}
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
