package stream

import (
	"errors"
	"fmt"
	"strings"

	"github.com/ftctl/ftctl/tracefs"
)

// Tracepoints' print formats. The kernel prints a tracepoint with code compiled from its
// TP_printk (include/trace/trace_events.h: trace_seq_printf(s, fmt, args...)), and writes the
// same format and arguments, as text, on the "print fmt:" line of the event's format file, with
// __entry-> written REC-> and the enums it knows replaced by their values (the eval map). The
// printfmt*.go files interpret that line: the format string cut into conversions, each with
// its argument parsed into an expression (fields, C arithmetic, comparisons, ternaries, casts,
// sizeof of the basic types, and the helpers TP_printk calls: __get_str,
// __get_dynamic_array(_len), __get_bitmask, __get_cpumask, __print_flags, __print_symbolic,
// __print_hex(_str), __print_array), once per event when its format is loaded; then each record
// is evaluated and printed as the kernel's vsnprintf (lib/vsprintf.c) and the
// trace_print_*_seq helpers (kernel/trace/trace_output.c) print it.
//
// What cannot be printed as the kernel prints it is refused when the format is parsed, never
// guessed: a name the eval map left (a kernel variable such as jiffies, or an enum the kernel
// did not resolve whose value its BTF does not give: pfParser.enum), a function other than the
// helpers above, a pointer the kernel dereferences (%s of a char *, %pI4 of an integer), a
// hashed pointer (%p, %pK while the hash-ptr option is on: the kernel hashes them with a key
// of its own), and the %p extensions pointerExt does not take. The event's error says which;
// the binary reader then leaves that event to trace_pipe.
//
// This file holds the parsed form (pfExpr, pfConv, printFmt), the bounds on what a print fmt
// may cost, and the format string cut into conversions (parsePrintFmt); the arguments' parser
// is printfmt_expr.go, TP_printk's helpers printfmt_helpers.go, the evaluation over a record
// printfmt_eval.go, the printing printfmt_print.go and, for %p, printfmt_ptr.go.

// pfOp is an expression node's operation.
type pfOp uint8

const (
	pfNum   pfOp = iota + 1 // a constant
	pfStr                   // a string literal
	pfField                 // REC->field
	pfIndex                 // REC->field[expr]
	pfNeg
	pfNot
	pfCompl
	pfCast
	pfMul
	pfDiv
	pfMod
	pfAdd
	pfSub
	pfShl
	pfShr
	pfLt
	pfLe
	pfGt
	pfGe
	pfEq
	pfNe
	pfAnd
	pfXor
	pfOr
	pfLAnd
	pfLOr
	pfCond
	pfGetStr            // __get_str(f), __get_rel_str(f)
	pfDynArray          // __get_dynamic_array(f)
	pfDynLen            // __get_dynamic_array_len(f)
	pfBitmask           // __get_bitmask(f), __get_cpumask(f)
	pfFlags             // __print_flags(v, sep, {mask, "name"}...)
	pfSymbolic          // __print_symbolic(v, {value, "name"}...)
	pfHex               // __print_hex(p, len)
	pfHexStr            // __print_hex_str(p, len)
	pfArray             // __print_array(p, count, el_size)
	pfU64      = 1 << 7 // with pfFlags, pfSymbolic: the _u64 variant (0x%llx for what is left)
)

// pfType is what an expression yields, known when it is parsed.
type pfType uint8

const (
	pfInt   pfType = iota // an integer
	pfBytes               // the address of bytes in the record: an array field, a dynamic array
	pfText                // a string: __get_str, a literal, __print_*
)

// pfExpr is one node of a parsed argument.
type pfExpr struct {
	op     pfOp
	typ    pfType
	size   uint8 // pfNum, pfCast and pfIndex results: 4 or 8 (1, 2 for casts to them)
	signed bool
	num    uint64
	str    []byte
	field  *tracefs.Field
	a, b   *pfExpr
	c      *pfExpr
	sep    []byte   // pfFlags
	pairs  []pfPair // pfFlags, pfSymbolic
}

type pfPair struct {
	val  uint64
	name []byte
}

// pfVal is an evaluated expression: an integer (u, as wide as size, sign-extended when signed)
// or bytes (b).
type pfVal struct {
	u      uint64
	size   uint8
	signed bool
	b      []byte
}

// pfConv is one piece of the format string: literal text, then (verb != 0) a conversion.
type pfConv struct {
	lit         []byte
	verb        byte // d i u x X o c s p
	flags       uint8
	width, prec int    // -1 when absent
	star        bool   // the width comes from an argument (warg)
	qual        byte   // 0, 'H' (hh), 'h', 'l', 'L' (ll), 'z'
	ext         string // what follows %p
	arg, warg   *pfExpr
}

// Conversion flags.
const (
	pfLeft = 1 << iota
	pfPlus
	pfSpace
	pfSpecial
	pfZero
)

// printFmt is an event's print fmt, parsed.
type printFmt struct {
	convs []pfConv
}

// errHashedPointer: the kernel hashes what %p prints (hash-ptr option on).
var errHashedPointer = errors.New("prints a hashed pointer (%p with option hash-ptr on)")

// A print fmt is a file's to give (a trace.dat's formats are anyone's), and it is evaluated
// for every record: its cost per record is bounded, so that reading a file costs time in
// proportion to it. The kernels' own are far inside (6.1 and 6.12: at most 7.5 KiB and 28
// conversions, cros_ec and cxl events); the kernel prints an event's line into a trace_seq
// of one or two pages (TRACE_SEQ_BUFFER_SIZE), and never a longer one.
const (
	pfMaxPrint = 64 << 10 // bytes of a print fmt line, else the event shows field by field
	pfMaxConvs = 512      // conversions (and literal runs) of a print fmt, likewise
	pfMaxText  = 16 << 10 // bytes of an event's text: past it, cut, and "[...]" said so
)

// pfTextLimit is how long an event's text may grow from its record of n bytes: 256 bytes and
// 16 a byte of the record (a flag or an enum of a few bytes prints a word), at most pfMaxText:
// a record prints in proportion to itself, whatever its print fmt.
func pfTextLimit(n int) int { return min(pfMaxText, 256+16*n) }

// parsePrintFmt parses the format's print fmt line. hashPtr: the hash-ptr option is on (bare
// %p is then hashed by the kernel, and refused).
func parsePrintFmt(f *tracefs.Format, hashPtr bool, enum func(string) (tracefs.EnumConst, bool)) (*printFmt, error) {
	if len(f.Print) > pfMaxPrint {
		return nil, fmt.Errorf("print fmt: %d bytes (ftctl decodes up to %d)", len(f.Print), pfMaxPrint)
	}
	p := &pfParser{f: f, enum: enum}
	p.src = f.Print
	format, err := p.stringLit()
	if err != nil {
		return nil, fmt.Errorf("print fmt: %w", err)
	}
	pf := &printFmt{}
	if err := pf.parseFormat(format, hashPtr); err != nil {
		return nil, err
	}
	if len(pf.convs) > pfMaxConvs {
		return nil, fmt.Errorf("print fmt: %d conversions (ftctl decodes up to %d)", len(pf.convs), pfMaxConvs)
	}
	for i := range pf.convs {
		c := &pf.convs[i]
		if c.verb == 0 {
			continue
		}
		if c.star {
			if c.warg, err = p.nextArg(); err != nil {
				return nil, err
			}
		}
		if c.arg, err = p.nextArg(); err != nil {
			return nil, err
		}
		if err := c.check(); err != nil {
			return nil, err
		}
	}
	p.skipSpace()
	if p.pos < len(p.src) {
		return nil, fmt.Errorf("print fmt: more arguments than conversions at %q", clip(p.src[p.pos:]))
	}
	return pf, nil
}

// parseFormat cuts the format string into literal text and conversions.
func (pf *printFmt) parseFormat(s string, hashPtr bool) error {
	var lit []byte
	for i := 0; i < len(s); {
		c := s[i]
		if c != '%' {
			lit = append(lit, c)
			i++
			continue
		}
		i++
		if i < len(s) && s[i] == '%' {
			lit = append(lit, '%')
			i++
			continue
		}
		cv := pfConv{lit: lit, width: -1, prec: -1}
		lit = nil
	flags:
		for ; i < len(s); i++ {
			switch s[i] {
			case '-':
				cv.flags |= pfLeft
			case '+':
				cv.flags |= pfPlus
			case ' ':
				cv.flags |= pfSpace
			case '#':
				cv.flags |= pfSpecial
			case '0':
				cv.flags |= pfZero
			default:
				break flags
			}
		}
		if i < len(s) && s[i] == '*' {
			cv.star = true
			i++
		} else {
			for ; i < len(s) && isDigit(s[i]); i++ {
				cv.width = max(cv.width, 0)*10 + int(s[i]-'0')
			}
		}
		if i < len(s) && s[i] == '.' {
			i++
			cv.prec = 0
			if i < len(s) && s[i] == '*' {
				return errors.New("print fmt: a precision given as an argument (.*)")
			}
			for ; i < len(s) && isDigit(s[i]); i++ {
				cv.prec = cv.prec*10 + int(s[i]-'0')
			}
		}
		if cv.width > 4096 || cv.prec > 4096 {
			return errors.New("print fmt: a width or precision over 4096")
		}
		switch {
		case strings.HasPrefix(s[i:], "hh"):
			cv.qual, i = 'H', i+2
		case strings.HasPrefix(s[i:], "ll"):
			cv.qual, i = 'L', i+2
		case i < len(s) && (s[i] == 'h' || s[i] == 'l' || s[i] == 'z' || s[i] == 'Z' || s[i] == 't' || s[i] == 'L' || s[i] == 'j'):
			cv.qual = s[i]
			switch cv.qual {
			case 'Z', 't':
				cv.qual = 'z'
			case 'j':
				cv.qual = 'L'
			}
			i++
		}
		if i >= len(s) {
			return errors.New("print fmt: a conversion cut short at the end")
		}
		cv.verb = s[i]
		i++
		switch cv.verb {
		case 'd', 'i', 'u', 'x', 'X', 'o', 'c', 's':
		case 'p':
			j := i
			for j < len(s) && isAlnum(s[j]) {
				j++
			}
			cv.ext = s[i:j]
			i = j
			switch {
			case cv.ext == "" && hashPtr, cv.ext == "K":
				return errHashedPointer
			case cv.ext != "" && !pointerExt(cv.ext):
				return fmt.Errorf("prints %%p%s, which ftctl does not format", cv.ext)
			}
		default:
			return fmt.Errorf("print fmt: conversion %%%c", cv.verb)
		}
		pf.convs = append(pf.convs, cv)
	}
	pf.convs = append(pf.convs, pfConv{lit: lit})
	return nil
}

func isAlnum(c byte) bool { return isDigit(c) || (c|0x20 >= 'a' && c|0x20 <= 'z') }

// check refuses a conversion whose argument is not of a type the kernel prints without
// reading memory ftctl does not have.
func (c *pfConv) check() error {
	t := c.arg.typ
	switch c.verb {
	case 's':
		if t == pfInt {
			return errors.New("prints a string from a kernel pointer (%s of an integer)")
		}
	case 'p':
		switch c.ext {
		case "", "x", "S", "s", "B":
			if t != pfInt {
				return fmt.Errorf("prints %%p%s of bytes", c.ext)
			}
		default:
			if t != pfBytes {
				return fmt.Errorf("prints %%p%s through a kernel pointer", c.ext)
			}
		}
	default:
		if t != pfInt {
			return fmt.Errorf("prints %%%c of a string", c.verb)
		}
	}
	if c.warg != nil && c.warg.typ != pfInt {
		return errors.New("a width that is not an integer")
	}
	return nil
}
