package stream

import (
	"strings"

	"github.com/ftctl/ftctl/tracefs"
)

// A parsed argument evaluated over one record (pfEval.eval): fields read from the record's
// bytes (a __data_loc or __rel_loc field through its offset word), and C's integer arithmetic
// done at the size and signedness the parser gave each node.

// pfEval evaluates expressions over one record; scratch holds the text helpers make.
type pfEval struct {
	scratch []byte
	syms    *Symbols
}

// norm truncates v to size bytes, sign-extending when signed.
func norm(v uint64, size uint8, signed bool) uint64 {
	if size >= 8 || size == 0 {
		return v
	}
	shift := 64 - 8*uint(size)
	if signed {
		return uint64(int64(v<<shift) >> shift)
	}
	return v << shift >> shift
}

func ival(v uint64, size uint8, signed bool) pfVal {
	return pfVal{u: norm(v, size, signed), size: size, signed: signed}
}

func boolVal(b bool) pfVal {
	if b {
		return pfVal{u: 1, size: 4, signed: true}
	}
	return pfVal{size: 4, signed: true}
}

// dataLoc reads a __data_loc field: the bytes it points to, nil when out of the record.
func dataLoc(f *tracefs.Field, data []byte) []byte {
	if f.Offset < 0 || f.Offset > len(data)-4 {
		return nil
	}
	loc := uint32(loadUint(data[f.Offset:], 4))
	n, at := int(loc>>16), int(loc&0xffff)
	if strings.HasPrefix(f.Type, "__rel_loc") {
		at += f.Offset + 4
	}
	if at+n > len(data) {
		return nil
	}
	return data[at : at+n]
}

func (x *pfEval) eval(e *pfExpr, data []byte) pfVal {
	switch e.op {
	case pfNum:
		return pfVal{u: e.num, size: e.size, signed: e.signed}
	case pfStr:
		return pfVal{b: e.str}
	case pfField:
		f := e.field
		raw, ok := fieldRaw(f, data)
		if !ok {
			return pfVal{size: 8}
		}
		if e.typ == pfBytes {
			return pfVal{b: raw}
		}
		return ival(loadUint(raw, f.Size), e.size, e.signed)
	case pfIndex:
		i := x.eval(e.a, data)
		n := int(e.size)
		if e.field.Offset < 0 || e.field.Array <= 0 || i.u >= uint64(e.field.Array) || i.u > uint64(len(data)) {
			return pfVal{size: e.size}
		}
		off := e.field.Offset + int(i.u)*n
		if off > len(data)-n {
			return pfVal{size: e.size}
		}
		return ival(loadUint(data[off:], n), e.size, e.signed)
	case pfNeg:
		a := x.eval(e.a, data)
		return ival(-a.u, e.size, e.signed)
	case pfCompl:
		a := x.eval(e.a, data)
		return ival(^a.u, e.size, e.signed)
	case pfNot:
		return boolVal(x.eval(e.a, data).u == 0)
	case pfCast:
		a := x.eval(e.a, data)
		return ival(a.u, e.size, e.signed)
	case pfCond:
		if x.eval(e.c, data).u != 0 {
			return x.cast(x.eval(e.a, data), e)
		}
		return x.cast(x.eval(e.b, data), e)
	case pfLAnd:
		return boolVal(x.eval(e.a, data).u != 0 && x.eval(e.b, data).u != 0)
	case pfLOr:
		return boolVal(x.eval(e.a, data).u != 0 || x.eval(e.b, data).u != 0)
	case pfGetStr:
		return pfVal{b: cString(dataLoc(e.field, data))}
	case pfDynArray:
		return pfVal{b: dataLoc(e.field, data)}
	case pfDynLen:
		return ival(uint64(len(dataLoc(e.field, data))), 4, false)
	case pfBitmask, pfFlags, pfFlags | pfU64, pfSymbolic, pfSymbolic | pfU64, pfHex, pfHexStr, pfArray:
		start := len(x.scratch)
		x.scratch = x.helper(x.scratch, e, data)
		return pfVal{b: x.scratch[start:]}
	}
	a, b := x.eval(e.a, data), x.eval(e.b, data)
	// operands converted to the operation's type (comparisons: to the wider of theirs)
	size, signed := e.size, e.signed
	switch e.op {
	case pfLt, pfLe, pfGt, pfGe, pfEq, pfNe:
		size, signed = arith(&pfExpr{size: a.size, signed: a.signed}, &pfExpr{size: b.size, signed: b.signed})
	case pfShl, pfShr:
		b.u &= 63
	}
	au, bu := norm(a.u, size, signed), norm(b.u, size, signed)
	if e.op != pfShl && e.op != pfShr {
		a.u, b.u = au, bu
	} else {
		a.u = au
	}
	less := func() bool {
		if signed {
			return int64(a.u) < int64(b.u)
		}
		return a.u < b.u
	}
	switch e.op {
	case pfMul:
		return ival(a.u*b.u, size, signed)
	case pfDiv, pfMod:
		if b.u == 0 {
			return ival(0, size, signed) // the kernel would not have printed: see check
		}
		var r uint64
		switch {
		case signed && e.op == pfDiv:
			if int64(b.u) == -1 {
				r = -a.u
			} else {
				r = uint64(int64(a.u) / int64(b.u))
			}
		case signed:
			if int64(b.u) == -1 {
				r = 0
			} else {
				r = uint64(int64(a.u) % int64(b.u))
			}
		case e.op == pfDiv:
			r = a.u / b.u
		default:
			r = a.u % b.u
		}
		return ival(r, size, signed)
	case pfAdd:
		return ival(a.u+b.u, size, signed)
	case pfSub:
		return ival(a.u-b.u, size, signed)
	case pfShl:
		return ival(a.u<<b.u, size, signed)
	case pfShr:
		if signed {
			return ival(uint64(int64(a.u)>>b.u), size, signed)
		}
		return ival(norm(a.u, size, false)>>b.u, size, signed)
	case pfLt:
		return boolVal(less())
	case pfGe:
		return boolVal(!less())
	case pfGt:
		a, b = b, a
		return boolVal(less())
	case pfLe:
		a, b = b, a
		return boolVal(!less())
	case pfEq:
		return boolVal(a.u == b.u)
	case pfNe:
		return boolVal(a.u != b.u)
	case pfAnd:
		return ival(a.u&b.u, size, signed)
	case pfOr:
		return ival(a.u|b.u, size, signed)
	case pfXor:
		return ival(a.u^b.u, size, signed)
	}
	return pfVal{}
}

// cast converts a ternary's branch to the ternary's type.
func (x *pfEval) cast(v pfVal, e *pfExpr) pfVal {
	if e.typ != pfInt {
		return v
	}
	return ival(v.u, e.size, e.signed)
}
