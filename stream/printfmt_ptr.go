package stream

import (
	"strconv"
	"strings"
)

// The %p conversions ftctl prints as lib/vsprintf.c does: %p (hash-ptr off) and %px, symbols
// (%pS %pB %ps), IPv4 and IPv6 addresses (%pI4 %pI6 %pi6 %pI6c), sockaddrs (%pIS and %piS with
// their letters), MAC addresses (%pM %pm), UUIDs (%pU and its variants) and hex dumps (%ph[CDN]).
// pointerExt is the list the parser takes; any other extension refuses the event's format.

// pfPointerExts are the %p extensions printed: symbols, addresses, MAC, UUID; and, by
// pointerExt, sockaddrs (%pIS..., %piS...) and hex dumps (%ph[CDN]).
var pfPointerExts = map[string]bool{"S": true, "s": true, "B": true, "x": true, "I4": true, "I6": true, "i6": true, "I6c": true, "M": true, "m": true, "U": true, "Ub": true, "UB": true, "Ul": true, "UL": true,
	"h": true, "hC": true, "hD": true, "hN": true}

// pointerExt says whether ftctl prints the %p extension ext as the kernel does.
func pointerExt(ext string) bool {
	return pfPointerExts[ext] || isSockaddrExt(ext)
}

// isSockaddrExt: %pIS or %piS and the letters ip_addr_string reads after them (p port, f
// flowinfo, s scope, c compressed; h l n b an IPv4 address's byte order).
func isSockaddrExt(ext string) bool {
	return len(ext) >= 2 && (ext[0] == 'I' || ext[0] == 'i') && ext[1] == 'S' && strings.Trim(ext[2:], "pfschlnb") == ""
}

// appendPointer prints the %p conversions ftctl formats.
func (x *pfEval) appendPointer(dst []byte, c *pfConv, v pfVal, width int, flags uint8) []byte {
	start := len(dst)
	switch {
	case c.ext != "" && c.ext[0] == 'h':
		return appendHexDump(dst, c.ext, v.b, width)
	case isSockaddrExt(c.ext):
		return padWhole(appendSockaddr(dst, c, v.b, width, flags), start, width, flags)
	}
	switch c.ext {
	case "", "x": // %px, and %p with hash-ptr off: pointer_string
		if width < 0 {
			width = 16
			flags |= pfZero
		}
		cv := pfConv{verb: 'x', qual: 'l', prec: -1}
		return appendInt(dst, &cv, v, width, flags)
	case "S", "B":
		dst = x.syms.AppendSymOffset(dst, v.u)
	case "s":
		dst = x.appendSymName(dst, v.u)
	case "I4":
		b := v.b
		if len(b) < 4 {
			return append(dst, "(efault)"...)
		}
		for i := 0; i < 4; i++ {
			if i > 0 {
				dst = append(dst, '.')
			}
			dst = strconv.AppendUint(dst, uint64(b[i]), 10)
		}
	case "I6", "i6", "I6c":
		if len(v.b) < 16 {
			return append(dst, "(efault)"...)
		}
		dst = appendIP6(dst, v.b[:16], c.ext)
	case "M", "m":
		if len(v.b) < 6 {
			return append(dst, "(efault)"...)
		}
		for i := 0; i < 6; i++ {
			if i > 0 && c.ext == "M" {
				dst = append(dst, ':')
			}
			dst = append(dst, hexDigits[v.b[i]>>4], hexDigits[v.b[i]&15])
		}
	default: // U, Ub, UB, Ul, UL
		if len(v.b) < 16 {
			return append(dst, "(efault)"...)
		}
		index := [16]int{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15}
		if c.ext == "Ul" || c.ext == "UL" {
			index = [16]int{3, 2, 1, 0, 5, 4, 7, 6, 8, 9, 10, 11, 12, 13, 14, 15}
		}
		upper := c.ext == "UB" || c.ext == "UL"
		for i, j := range index {
			if i == 4 || i == 6 || i == 8 || i == 10 {
				dst = append(dst, '-')
			}
			h, l := hexDigits[v.b[j]>>4], hexDigits[v.b[j]&15]
			if upper {
				h, l = upperHex(h), upperHex(l)
			}
			dst = append(dst, h, l)
		}
	}
	return padWhole(dst, start, width, flags)
}

// padWhole pads what was printed from start to width columns, as string() pads the whole.
func padWhole(dst []byte, start, width int, flags uint8) []byte {
	if width > len(dst)-start {
		s := append([]byte(nil), dst[start:]...)
		dst = appendPadded(dst[:start], s, width, flags)
	}
	return dst
}

// appendSockaddr prints %pIS... / %piS... of a struct sockaddr as lib/vsprintf.c's
// ip_addr_string does: by sa_family (host order: little endian on x86), an AF_INET address as
// ip4_addr_string_sa ("1.2.3.4", ":port" with p; %pi with leading zeros; h and l reverse the
// bytes on a little-endian machine), AF_INET6 as ip6_addr_string_sa ("[addr]" with p, f or s;
// compressed with %pI and c; ":port", "/flowinfo", "%scope"), any other "(einval)". The port,
// flowinfo and scope are printed with the conversion's own width and flags, as number() is
// called with its spec. A record shorter than the structure (the kernel would read past it)
// prints "(efault)".
func appendSockaddr(dst []byte, c *pfConv, b []byte, width int, flags uint8) []byte {
	if len(b) < 2 {
		return append(dst, "(efault)"...)
	}
	raw := c.ext[0] == 'i'
	letters := c.ext[2:]
	has := func(l byte) bool { return strings.IndexByte(letters, l) >= 0 }
	num := func(dst []byte, v uint64) []byte {
		cv := pfConv{verb: 'u', qual: 'L', prec: c.prec}
		return appendInt(dst, &cv, pfVal{u: v, size: 8}, width, flags)
	}
	switch uint16(b[0]) | uint16(b[1])<<8 {
	case 2: // AF_INET: family, port (network order), address
		if len(b) < 8 {
			return append(dst, "(efault)"...)
		}
		index := [4]int{0, 1, 2, 3}
		if i := strings.LastIndexAny(letters, "hlnb"); i >= 0 && (letters[i] == 'h' || letters[i] == 'l') {
			index = [4]int{3, 2, 1, 0}
		}
		for i, j := range index {
			if i > 0 {
				dst = append(dst, '.')
			}
			if raw && b[4+j] < 100 {
				dst = append(dst, '0')
				if b[4+j] < 10 {
					dst = append(dst, '0')
				}
			}
			dst = strconv.AppendUint(dst, uint64(b[4+j]), 10)
		}
		if has('p') {
			dst = num(append(dst, ':'), uint64(b[2])<<8|uint64(b[3]))
		}
		return dst
	case 10: // AF_INET6: family, port, flowinfo (network order), address, scope id
		if len(b) < 28 {
			return append(dst, "(efault)"...)
		}
		bracket := has('p') || has('s') || has('f')
		if bracket {
			dst = append(dst, '[')
		}
		ext := "I6"
		switch {
		case raw:
			ext = "i6"
		case has('c'):
			ext = "I6c"
		}
		dst = appendIP6(dst, b[8:24], ext)
		if bracket {
			dst = append(dst, ']')
		}
		if has('p') {
			dst = num(append(dst, ':'), uint64(b[2])<<8|uint64(b[3]))
		}
		if has('f') {
			flow := uint64(b[4])<<24 | uint64(b[5])<<16 | uint64(b[6])<<8 | uint64(b[7])
			dst = num(append(dst, '/'), flow&0x0fffffff) // IPV6_FLOWINFO_MASK
		}
		if has('s') {
			scope := uint64(b[24]) | uint64(b[25])<<8 | uint64(b[26])<<16 | uint64(b[27])<<24
			dst = num(append(dst, '%'), scope)
		}
		return dst
	}
	return append(dst, "(einval)"...)
}

// appendHexDump prints %ph[CDN] as hex_string does: width bytes (at most 64; 1 with no width,
// none for 0), in lower-case hex, separated by a space, ':' (C), '-' (D) or nothing (N), never
// padded. A record holding fewer bytes than the width (the kernel would read on, past the
// array) prints the bytes it holds.
func appendHexDump(dst []byte, ext string, b []byte, width int) []byte {
	if width == 0 {
		return dst
	}
	sep := byte(' ')
	if len(ext) > 1 {
		switch ext[1] {
		case 'C':
			sep = ':'
		case 'D':
			sep = '-'
		case 'N':
			sep = 0
		}
	}
	n := 1
	if width > 0 {
		n = min(width, 64)
	}
	n = min(n, len(b))
	for i := 0; i < n; i++ {
		dst = append(dst, hexDigits[b[i]>>4], hexDigits[b[i]&15])
		if sep != 0 && i != n-1 {
			dst = append(dst, sep)
		}
	}
	return dst
}

func upperHex(c byte) byte {
	if c >= 'a' {
		return c - 'a' + 'A'
	}
	return c
}

// appendSymName prints %ps (sprint_symbol_no_offset): the name, " [module]", or 0x... .
func (x *pfEval) appendSymName(dst []byte, addr uint64) []byte {
	return x.syms.AppendNoOffset(dst, addr)
}

// appendIP6 prints an IPv6 address as ip6_string (I6: eight 4-digit groups), i6 (no colons)
// or ip6_compressed_string (I6c) do.
func appendIP6(dst, b []byte, ext string) []byte {
	if ext != "I6c" {
		for i := 0; i < 16; i += 2 {
			if i > 0 && ext == "I6" {
				dst = append(dst, ':')
			}
			dst = append(dst, hexDigits[b[i]>>4], hexDigits[b[i]&15], hexDigits[b[i+1]>>4], hexDigits[b[i+1]&15])
		}
		return dst
	}
	word := func(i int) uint64 { return uint64(b[2*i])<<8 | uint64(b[2*i+1]) }
	zero := func(from, to int) bool {
		for _, c := range b[from:to] {
			if c != 0 {
				return false
			}
		}
		return true
	}
	v4mapped := zero(0, 10) && b[10] == 0xff && b[11] == 0xff
	isatap := (b[8]|0x02) == 0x02 && b[9] == 0 && b[10] == 0x5e && b[11] == 0xfe
	useV4 := v4mapped || isatap
	n := 8
	if useV4 {
		n = 6
	}
	longest, colonpos := 1, -1
	for i := 0; i < n; i++ {
		z := 0
		for j := i; j < n && word(j) == 0; j++ {
			z++
		}
		if z > longest {
			longest, colonpos = z, i
		}
	}
	needColon := false
	for i := 0; i < n; i++ {
		if i == colonpos {
			if needColon || i == 0 {
				dst = append(dst, ':')
			}
			dst = append(dst, ':')
			needColon = false
			i += longest - 1
			continue
		}
		if needColon {
			dst = append(dst, ':')
		}
		dst = strconv.AppendUint(dst, word(i), 16)
		needColon = true
	}
	if useV4 {
		if needColon {
			dst = append(dst, ':')
		}
		for i := 12; i < 16; i++ {
			if i > 12 {
				dst = append(dst, '.')
			}
			dst = strconv.AppendUint(dst, uint64(b[i]), 10)
		}
	}
	return dst
}
