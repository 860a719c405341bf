package stream

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/ftctl/ftctl/tracefs"
)

// The helpers TP_printk calls: __get_str, __get_dynamic_array(_len), __get_bitmask,
// __get_cpumask, __print_flags(_u64), __print_symbolic(_u64), __print_hex(_str)
// and __print_array, parsed from the print fmt line (call), and the text ones printed per record
// as kernel/trace/trace_output.c's trace_print_*_seq helpers print them (helper, appendBitmap).

// call parses the helpers TP_printk uses, from after their "(".
func (p *pfParser) call(name string) (*pfExpr, error) {
	field := func() (*tracefs.Field, error) {
		n := p.ident()
		f := p.f.Field(n)
		if f == nil {
			return nil, fmt.Errorf("print fmt: %s(%s): no such field", name, n)
		}
		if !strings.HasPrefix(f.Type, "__data_loc") {
			return nil, fmt.Errorf("print fmt: %s(%s): not a dynamic field", name, n)
		}
		if f.Size != 4 {
			return nil, fmt.Errorf("print fmt: %s(%s): a loc of %d bytes", name, n, f.Size)
		}
		return f, p.expect(")")
	}
	e := &pfExpr{}
	switch name {
	case "__get_str", "__get_dynamic_array", "__get_dynamic_array_len", "__get_bitmask", "__get_cpumask":
		f, err := field()
		if err != nil {
			return nil, err
		}
		e.field = f
		switch name {
		case "__get_str":
			e.op, e.typ = pfGetStr, pfText
		case "__get_dynamic_array":
			e.op, e.typ = pfDynArray, pfBytes
		case "__get_dynamic_array_len":
			e.op, e.size = pfDynLen, 4
		default:
			e.op, e.typ = pfBitmask, pfText
		}
		return e, nil
	case "__print_flags", "__print_flags_u64", "__print_symbolic", "__print_symbolic_u64":
		v, err := p.expr()
		if err != nil {
			return nil, err
		}
		if v.typ != pfInt {
			return nil, fmt.Errorf("print fmt: %s of a string", name)
		}
		e.a, e.typ = v, pfText
		e.op = pfSymbolic
		if strings.HasPrefix(name, "__print_flags") {
			e.op = pfFlags
			if err := p.expect(","); err != nil {
				return nil, err
			}
			sep, err := p.stringLit()
			if err != nil {
				return nil, fmt.Errorf("print fmt: %s: %w", name, err)
			}
			e.sep = []byte(sep)
		}
		if strings.HasSuffix(name, "_u64") {
			e.op |= pfU64
		}
		ended := false
		for p.accept(",") {
			if err := p.expect("{"); err != nil {
				return nil, err
			}
			v, err := p.expr()
			if err != nil {
				return nil, err
			}
			val, ok := constant(v)
			if !ok {
				return nil, fmt.Errorf("print fmt: %s: a value that is not a constant", name)
			}
			if err := p.expect(","); err != nil {
				return nil, err
			}
			if !p.peek(`"`) {
				// { -1, NULL }: the kernel's loop ends at a pair without a name
				n, err := p.expr()
				if err != nil {
					return nil, err
				}
				if z, ok := constant(n); !ok || z != 0 {
					return nil, fmt.Errorf("print fmt: %s: a name that is not a string", name)
				}
				if err := p.expect("}"); err != nil {
					return nil, err
				}
				ended = true
				continue
			}
			s, err := p.stringLit()
			if err != nil {
				return nil, fmt.Errorf("print fmt: %s: %w", name, err)
			}
			if err := p.expect("}"); err != nil {
				return nil, err
			}
			if !ended {
				e.pairs = append(e.pairs, pfPair{val: val, name: []byte(s)})
			}
		}
		return e, p.expect(")")
	case "__print_hex", "__print_hex_str", "__print_array":
		buf, err := p.expr()
		if err != nil {
			return nil, err
		}
		if buf.typ != pfBytes {
			return nil, fmt.Errorf("print fmt: %s through a kernel pointer", name)
		}
		if err := p.expect(","); err != nil {
			return nil, err
		}
		n, err := p.expr()
		if err != nil {
			return nil, err
		}
		if n.typ != pfInt {
			return nil, fmt.Errorf("print fmt: %s: a length that is not an integer", name)
		}
		e.a, e.b, e.typ = buf, n, pfText
		e.op = pfHex
		switch name {
		case "__print_hex_str":
			e.op = pfHexStr
		case "__print_array":
			e.op = pfArray
			if err := p.expect(","); err != nil {
				return nil, err
			}
			el, err := p.expr()
			if err != nil {
				return nil, err
			}
			size, ok := constant(el)
			if !ok || (size != 1 && size != 2 && size != 4 && size != 8) {
				return nil, fmt.Errorf("print fmt: %s: element size", name)
			}
			e.c = el
			e.num = size
		}
		return e, p.expect(")")
	}
	return nil, fmt.Errorf("print fmt: calls %s()", name)
}

// helper appends what the kernel's trace_print_*_seq helper prints.
func (x *pfEval) helper(dst []byte, e *pfExpr, data []byte) []byte {
	switch e.op &^ pfU64 {
	case pfBitmask:
		return appendBitmap(dst, dataLoc(e.field, data))
	case pfFlags: // trace_print_flags_seq
		v := x.eval(e.a, data).u
		if e.op&pfU64 == 0 {
			v = norm(v, 8, false)
		}
		first := true
		for _, p := range e.pairs {
			if v == 0 {
				break
			}
			if v&p.val != p.val {
				continue
			}
			v &^= p.val
			if !first {
				dst = append(dst, e.sep...)
			}
			first = false
			dst = append(dst, p.name...)
		}
		if v != 0 {
			if !first {
				dst = append(dst, e.sep...)
			}
			dst = strconv.AppendUint(append(dst, "0x"...), v, 16)
		}
		return dst
	case pfSymbolic: // trace_print_symbols_seq
		v := x.eval(e.a, data).u
		for _, p := range e.pairs {
			if v == p.val {
				return append(dst, p.name...)
			}
		}
		return strconv.AppendUint(append(dst, "0x"...), v, 16)
	case pfHex, pfHexStr: // trace_print_hex_seq
		b := x.eval(e.a, data).b
		n := int(x.eval(e.b, data).u)
		if n < 0 || n > len(b) {
			n = len(b)
		}
		for i := 0; i < n; i++ {
			if i > 0 && e.op == pfHex {
				dst = append(dst, ' ')
			}
			dst = append(dst, hexDigits[b[i]>>4], hexDigits[b[i]&15])
		}
		return dst
	case pfArray: // trace_print_array_seq
		b := x.eval(e.a, data).b
		count := x.eval(e.b, data).u
		size := int(e.num)
		dst = append(dst, '{')
		for i := 0; uint64(i) < count && (i+1)*size <= len(b); i++ {
			if i > 0 {
				dst = append(dst, ',')
			}
			dst = strconv.AppendUint(append(dst, "0x"...), loadUint(b[i*size:], size), 16)
		}
		return append(dst, '}')
	}
	return dst
}

// appendBitmap prints a bitmap as %*pb does (bitmap_string): 32-bit chunks in hex, the most
// significant first, separated by commas, each zero-padded to its width.
func appendBitmap(dst, b []byte) []byte {
	nbits := len(b) * 8
	if nbits == 0 {
		return dst
	}
	chunk := nbits % 32
	if chunk == 0 {
		chunk = 32
	}
	first := true
	for i := (nbits+31)/32*32 - 32; i >= 0; i -= 32 {
		var v uint64
		for k := 0; k < chunk; k++ {
			bit := i + k
			if b[bit/8]&(1<<(bit%8)) != 0 {
				v |= 1 << k
			}
		}
		if !first {
			dst = append(dst, ',')
		}
		first = false
		dst = appendHex(dst, v, (chunk+3)/4)
		chunk = 32
	}
	return dst
}
