package stream

import "strconv"

// A parsed print fmt printed for one record (appendPrint): its literal text and each
// conversion, integers (%d %i %u %x %X %o with their flags, width, precision and length
// qualifier), characters and strings as lib/vsprintf.c's vsnprintf prints them (number(),
// string()), the whole within pfTextLimit. The %p conversions are printfmt_ptr.go's.

// appendPrint appends the event's text as the kernel prints it, at most pfTextLimit bytes.
func (pf *printFmt) appendPrint(dst []byte, x *pfEval, data []byte) []byte {
	start, limit := len(dst), pfTextLimit(len(data))
	for i := range pf.convs {
		c := &pf.convs[i]
		if len(dst)-start+len(c.lit) > limit {
			dst = append(dst, c.lit[:max(0, limit-(len(dst)-start))]...)
			return append(dst, "[...]"...)
		}
		dst = append(dst, c.lit...)
		if c.verb == 0 {
			continue
		}
		x.scratch = x.scratch[:0]
		width := c.width
		flags := c.flags
		if c.warg != nil {
			w := int64(int32(x.eval(c.warg, data).u))
			if w < 0 {
				flags |= pfLeft
				w = -w
			}
			width = int(min(w, 4096))
		}
		v := x.eval(c.arg, data)
		switch c.verb {
		case 's':
			s := cString(v.b)
			if c.prec >= 0 && len(s) > c.prec {
				s = s[:c.prec]
			}
			dst = appendPadded(dst, s, width, flags)
		case 'c':
			dst = appendPadded(dst, []byte{byte(v.u)}, width, flags)
		case 'p':
			dst = x.appendPointer(dst, c, v, width, flags)
		default:
			dst = appendInt(dst, c, v, width, flags)
		}
		if len(dst)-start > limit {
			return append(dst[:start+limit], "[...]"...)
		}
	}
	return dst
}

// appendPadded appends s in width columns (right-aligned unless pfLeft), as string() does.
func appendPadded(dst, s []byte, width int, flags uint8) []byte {
	pad := width - len(s)
	if flags&pfLeft == 0 {
		dst = appendSpaces(dst, pad)
	}
	dst = append(dst, s...)
	if flags&pfLeft != 0 {
		dst = appendSpaces(dst, pad)
	}
	return dst
}

// appendInt prints an integer conversion as vsnprintf's number() does.
func appendInt(dst []byte, c *pfConv, v pfVal, width int, flags uint8) []byte {
	u := v.u
	signedConv := c.verb == 'd' || c.verb == 'i'
	switch c.qual {
	case 'H':
		u = norm(u, 1, signedConv)
	case 'h':
		u = norm(u, 2, signedConv)
	case 0:
		u = norm(u, 4, signedConv)
	}
	base := uint64(10)
	switch c.verb {
	case 'x', 'X':
		base = 16
	case 'o':
		base = 8
	}
	var sign byte
	if flags&pfLeft != 0 {
		flags &^= pfZero
	}
	if signedConv {
		switch {
		case int64(u) < 0:
			sign, u = '-', -u
			width--
		case flags&pfPlus != 0:
			sign = '+'
			width--
		case flags&pfSpace != 0:
			sign = ' '
			width--
		}
	}
	pfx := flags&pfSpecial != 0 && base != 10
	if pfx {
		width--
		if base == 16 {
			width--
		}
	}
	var tmp [24]byte
	digits := strconv.AppendUint(tmp[:0], u, int(base))
	if c.verb == 'X' {
		for i, d := range digits {
			if d >= 'a' {
				digits[i] = d - 'a' + 'A'
			}
		}
	}
	prec := max(c.prec, len(digits))
	width -= prec
	if flags&(pfZero|pfLeft) == 0 {
		dst = appendSpaces(dst, width)
		width = 0
	}
	if sign != 0 {
		dst = append(dst, sign)
	}
	if pfx {
		if base == 16 || u != 0 {
			dst = append(dst, '0')
		}
		if base == 16 {
			dst = append(dst, c.verb)
		}
	}
	if flags&pfLeft == 0 {
		for ; width > 0; width-- {
			dst = append(dst, '0')
		}
	}
	for i := len(digits); i < prec; i++ {
		dst = append(dst, '0')
	}
	dst = append(dst, digits...)
	return appendSpaces(dst, width)
}
