package stream

import (
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/ftctl/ftctl/tracefs"
)

// Tracepoints' print formats. The kernel prints a tracepoint with code compiled from its
// TP_printk (include/trace/trace_events.h: trace_seq_printf(s, fmt, args...)), and writes the
// same format and arguments, as text, on the "print fmt:" line of the event's format file, with
// __entry-> written REC-> and the enums it knows replaced by their values (the eval map). This
// file interprets that line: the format string cut into conversions, each with its argument
// parsed into an expression (fields, C arithmetic, comparisons, ternaries, casts, sizeof of the
// basic types, and the helpers TP_printk calls: __get_str, __get_dynamic_array(_len),
// __get_bitmask, __get_cpumask, __print_flags, __print_symbolic, __print_hex(_str),
// __print_array), once per event when its format is loaded; then each record is evaluated and
// printed as the kernel's vsnprintf (lib/vsprintf.c) and the trace_print_*_seq helpers
// (kernel/trace/trace_output.c) print it.
//
// What cannot be printed as the kernel prints it is refused when the format is parsed, never
// guessed: a name the eval map left (a kernel variable such as jiffies, or an enum the kernel
// did not resolve whose value its BTF does not give: pfParser.enum), a function other than the
// helpers above, a pointer the kernel dereferences (%s of a char *, %pI4 of an integer), a
// hashed pointer (%p, %pK while the hash-ptr option is on: the kernel hashes them with a key
// of its own), and the %p extensions pointerExt does not take. The event's error says which;
// the binary reader then leaves that event to trace_pipe.

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

// pfParser reads the arguments of a print fmt line: a C expression subset.
type pfParser struct {
	f   *tracefs.Format
	src string
	pos int
	// enum gives the value of an enumerator the eval map left (nil: none has one)
	enum func(string) (tracefs.EnumConst, bool)
	// depth bounds the recursion (a fuzzer's nested parentheses).
	depth int
}

const pfMaxDepth = 200

func clip(s string) string {
	if len(s) > 40 {
		return s[:40] + "..."
	}
	return s
}

func (p *pfParser) skipSpace() {
	for p.pos < len(p.src) && (p.src[p.pos] == ' ' || p.src[p.pos] == '\t') {
		p.pos++
	}
}

func (p *pfParser) peek(tok string) bool {
	p.skipSpace()
	return strings.HasPrefix(p.src[p.pos:], tok)
}

func (p *pfParser) accept(tok string) bool {
	if p.peek(tok) {
		p.pos += len(tok)
		return true
	}
	return false
}

func (p *pfParser) expect(tok string) error {
	if !p.accept(tok) {
		return fmt.Errorf("print fmt: %q expected at %q", tok, clip(p.src[p.pos:]))
	}
	return nil
}

// stringLit reads adjacent string literals, joined, unescaped as C does.
func (p *pfParser) stringLit() (string, error) {
	var b strings.Builder
	found := false
	for p.peek(`"`) {
		found = true
		p.pos++
		for {
			if p.pos >= len(p.src) {
				return "", errors.New("a string without its closing quote")
			}
			c := p.src[p.pos]
			p.pos++
			if c == '"' {
				break
			}
			if c != '\\' {
				b.WriteByte(c)
				continue
			}
			if p.pos >= len(p.src) {
				return "", errors.New("a string without its closing quote")
			}
			c = p.src[p.pos]
			p.pos++
			switch c {
			case 'n':
				b.WriteByte('\n')
			case 't':
				b.WriteByte('\t')
			case 'r':
				b.WriteByte('\r')
			case '0':
				b.WriteByte(0)
			case '\\', '"', '\'':
				b.WriteByte(c)
			default:
				return "", fmt.Errorf("escape \\%c in a string", c)
			}
		}
	}
	if !found {
		return "", fmt.Errorf("a string expected at %q", clip(p.src[p.pos:]))
	}
	return b.String(), nil
}

// nextArg reads ", expr".
func (p *pfParser) nextArg() (*pfExpr, error) {
	if err := p.expect(","); err != nil {
		return nil, errors.New("print fmt: fewer arguments than conversions")
	}
	return p.expr()
}

func (p *pfParser) expr() (*pfExpr, error) {
	p.depth++
	defer func() { p.depth-- }()
	if p.depth > pfMaxDepth {
		return nil, errors.New("print fmt: expression nested too deep")
	}
	return p.cond()
}

func (p *pfParser) cond() (*pfExpr, error) {
	c, err := p.binary(0)
	if err != nil {
		return nil, err
	}
	if !p.accept("?") {
		return c, nil
	}
	a, err := p.expr()
	if err != nil {
		return nil, err
	}
	if err := p.expect(":"); err != nil {
		return nil, err
	}
	b, err := p.expr()
	if err != nil {
		return nil, err
	}
	if c.typ != pfInt {
		return nil, errors.New("print fmt: a condition that is not an integer")
	}
	e := &pfExpr{op: pfCond, c: c, a: a, b: b, typ: a.typ}
	switch {
	case a.typ != b.typ:
		// "x ? __print_flags(...) : "R"" is text both ways; bytes and text mix as text
		if a.typ == pfInt || b.typ == pfInt {
			return nil, errors.New("print fmt: a ternary of a number and a string")
		}
		e.typ = pfText
	case a.typ == pfInt:
		e.size, e.signed = arith(a, b)
	}
	return e, nil
}

// binary operators by C's precedence, lowest first.
var pfLevels = [][]struct {
	tok string
	op  pfOp
}{
	{{"||", pfLOr}},
	{{"&&", pfLAnd}},
	{{"|", pfOr}},
	{{"^", pfXor}},
	{{"&", pfAnd}},
	{{"==", pfEq}, {"!=", pfNe}},
	{{"<=", pfLe}, {">=", pfGe}, {"<", pfLt}, {">", pfGt}},
	{{"<<", pfShl}, {">>", pfShr}},
	{{"+", pfAdd}, {"-", pfSub}},
	{{"*", pfMul}, {"/", pfDiv}, {"%", pfMod}},
}

func (p *pfParser) binary(level int) (*pfExpr, error) {
	if level == len(pfLevels) {
		return p.unary()
	}
	a, err := p.binary(level + 1)
	if err != nil {
		return nil, err
	}
	for {
		p.skipSpace()
		rest := p.src[p.pos:]
		var op pfOp
		var tok string
		for _, o := range pfLevels[level] {
			if !strings.HasPrefix(rest, o.tok) {
				continue
			}
			// "|" is not "||", "&" not "&&", "<" not "<<", "==" not "=" alone
			if len(o.tok) == 1 && len(rest) > 1 && (rest[1] == rest[0] || (rest[1] == '=' && o.tok != "!")) {
				continue
			}
			op, tok = o.op, o.tok
			break
		}
		if op == 0 {
			return a, nil
		}
		p.pos += len(tok)
		b, err := p.binary(level + 1)
		if err != nil {
			return nil, err
		}
		if a.typ != pfInt || b.typ != pfInt {
			return nil, errors.New("print fmt: arithmetic or a comparison on a string or an address")
		}
		e := &pfExpr{op: op, a: a, b: b}
		switch op {
		case pfLt, pfLe, pfGt, pfGe, pfEq, pfNe, pfLAnd, pfLOr:
			e.size, e.signed = 4, true
		case pfShl, pfShr:
			e.size, e.signed = promote(a)
		default:
			e.size, e.signed = arith(a, b)
		}
		a = fold(e)
	}
}

// fold replaces an integer expression that reads no field by its value, evaluated once when
// the format is parsed (sched_switch masks prev_state with a tree of constants twice).
func fold(e *pfExpr) *pfExpr {
	if e.op == pfNum || e.typ != pfInt || !pfConstant(e) {
		return e
	}
	var x pfEval
	v := x.eval(e, nil)
	return &pfExpr{op: pfNum, num: v.u, size: e.size, signed: e.signed}
}

// promote is the type of an integer operand after C's integer promotions.
func promote(e *pfExpr) (uint8, bool) {
	if e.size < 4 {
		return 4, true
	}
	return e.size, e.signed
}

// arith is the type of a binary operation's result (the usual arithmetic conversions, for
// the LP64 sizes).
func arith(a, b *pfExpr) (uint8, bool) {
	as, asg := promote(a)
	bs, bsg := promote(b)
	switch {
	case as == bs:
		return as, asg && bsg
	case as > bs:
		return as, asg
	}
	return bs, bsg
}

// pfTypes are the C types casts and sizeof name: size and signedness.
var pfTypes = map[string]struct {
	size   uint8
	signed bool
}{
	"char": {1, true}, "signed char": {1, true}, "unsigned char": {1, false}, "u8": {1, false}, "s8": {1, true}, "__u8": {1, false}, "__s8": {1, true}, "bool": {1, false}, "_Bool": {1, false},
	"short": {2, true}, "unsigned short": {2, false}, "u16": {2, false}, "s16": {2, true}, "__u16": {2, false}, "__s16": {2, true}, "__le16": {2, false}, "__be16": {2, false}, "short int": {2, true}, "unsigned short int": {2, false},
	"int": {4, true}, "unsigned int": {4, false}, "unsigned": {4, false}, "signed int": {4, true}, "u32": {4, false}, "s32": {4, true}, "__u32": {4, false}, "__s32": {4, true}, "__le32": {4, false}, "__be32": {4, false}, "gfp_t": {4, false}, "pid_t": {4, true}, "uid_t": {4, false}, "gid_t": {4, false}, "__kernel_rwf_t": {4, true}, "blk_opf_t": {4, false}, "dev_t": {4, false}, "umode_t": {2, false}, "fmode_t": {4, false}, "slab_flags_t": {4, false}, "xfs_agnumber_t": {4, false},
	"long": {8, true}, "unsigned long": {8, false}, "long int": {8, true}, "unsigned long int": {8, false}, "long long": {8, true}, "unsigned long long": {8, false}, "long long int": {8, true}, "unsigned long long int": {8, false},
	"u64": {8, false}, "s64": {8, true}, "__u64": {8, false}, "__s64": {8, true}, "__le64": {8, false}, "__be64": {8, false}, "size_t": {8, false}, "ssize_t": {8, true}, "loff_t": {8, true}, "sector_t": {8, false}, "phys_addr_t": {8, false}, "dma_addr_t": {8, false}, "resource_size_t": {8, false}, "ktime_t": {8, true}, "time64_t": {8, true}, "uintptr_t": {8, false}, "unsigned long long *": {8, false},
}

// castType reads "(type)" at the parser's position when it is a cast: a known type, or any
// pointer type. It returns the type's size and signedness, ok false (position unchanged)
// when the parenthesis opens an expression instead.
func (p *pfParser) castType() (size uint8, signed, ptr, ok bool) {
	save := p.pos
	if !p.accept("(") {
		return 0, false, false, false
	}
	start := p.pos
	end := strings.IndexByte(p.src[start:], ')')
	if end < 0 {
		p.pos = save
		return 0, false, false, false
	}
	name := strings.Join(strings.Fields(p.src[start:start+end]), " ")
	name = strings.TrimPrefix(name, "const ")
	name = strings.TrimPrefix(name, "volatile ")
	if t, ok := pfTypes[name]; ok {
		p.pos = start + end + 1
		return t.size, t.signed, false, true
	}
	if strings.HasSuffix(name, "*") && pfTypeName(strings.TrimSpace(strings.TrimRight(name, "* "))) {
		p.pos = start + end + 1
		return 8, false, true, true
	}
	p.pos = save
	return 0, false, false, false
}

// pfTypeName: a C type name (words, "struct x"), not an expression.
func pfTypeName(s string) bool {
	if s == "" {
		return false
	}
	for _, w := range strings.Fields(s) {
		for i := 0; i < len(w); i++ {
			if !isIdent(w[i]) {
				return false
			}
		}
		if isDigit(w[0]) {
			return false
		}
	}
	return true
}

func (p *pfParser) unary() (*pfExpr, error) {
	p.depth++
	defer func() { p.depth-- }()
	if p.depth > pfMaxDepth {
		return nil, errors.New("print fmt: expression nested too deep")
	}
	p.skipSpace()
	for _, u := range []struct {
		tok string
		op  pfOp
	}{{"-", pfNeg}, {"!", pfNot}, {"~", pfCompl}, {"+", 0}} {
		if p.peek(u.tok) {
			p.pos += len(u.tok)
			a, err := p.unary()
			if err != nil {
				return nil, err
			}
			if a.typ != pfInt {
				return nil, errors.New("print fmt: arithmetic on a string")
			}
			if u.op == 0 {
				return a, nil
			}
			e := &pfExpr{op: u.op, a: a}
			e.size, e.signed = promote(a)
			if u.op == pfNot {
				e.size, e.signed = 4, true
			}
			return fold(e), nil
		}
	}
	if size, signed, ptr, ok := p.castType(); ok {
		a, err := p.unary()
		if err != nil {
			return nil, err
		}
		if ptr || a.typ != pfInt {
			// a pointer cast keeps what it casts: bytes stay bytes, integers stay 64-bit
			if a.typ != pfInt {
				return a, nil
			}
			return &pfExpr{op: pfCast, a: a, size: 8, signed: false}, nil
		}
		return fold(&pfExpr{op: pfCast, a: a, size: size, signed: signed}), nil
	}
	return p.postfix()
}

func (p *pfParser) postfix() (*pfExpr, error) {
	e, err := p.primary()
	if err != nil {
		return nil, err
	}
	for p.accept("[") {
		idx, err := p.expr()
		if err != nil {
			return nil, err
		}
		if err := p.expect("]"); err != nil {
			return nil, err
		}
		if e.op != pfField || e.field.Array <= 0 || idx.typ != pfInt {
			return nil, errors.New("print fmt: an index into something other than an array field")
		}
		n := e.field.Size / e.field.Array
		if n != 1 && n != 2 && n != 4 && n != 8 {
			return nil, fmt.Errorf("print fmt: array %s of %d-byte elements", e.field.Name, n)
		}
		signed := e.field.Signed
		size := uint8(n)
		e = &pfExpr{op: pfIndex, field: e.field, a: idx, size: size, signed: signed}
	}
	return e, nil
}

func (p *pfParser) ident() string {
	p.skipSpace()
	start := p.pos
	for p.pos < len(p.src) && isIdent(p.src[p.pos]) {
		p.pos++
	}
	return p.src[start:p.pos]
}

func (p *pfParser) primary() (*pfExpr, error) {
	p.skipSpace()
	if p.pos >= len(p.src) {
		return nil, errors.New("print fmt: an expression cut short")
	}
	c := p.src[p.pos]
	switch {
	case c == '(':
		p.pos++
		e, err := p.expr()
		if err != nil {
			return nil, err
		}
		return e, p.expect(")")
	case c == '"':
		s, err := p.stringLit()
		if err != nil {
			return nil, err
		}
		return &pfExpr{op: pfStr, typ: pfText, str: []byte(s)}, nil
	case c == '\'':
		if p.pos+2 < len(p.src) && p.src[p.pos+2] == '\'' && p.src[p.pos+1] != '\\' {
			v := p.src[p.pos+1]
			p.pos += 3
			return &pfExpr{op: pfNum, num: uint64(v), size: 4, signed: true}, nil
		}
		return nil, errors.New("print fmt: a character constant")
	case isDigit(c):
		return p.number()
	}
	if strings.HasPrefix(p.src[p.pos:], "REC->") {
		p.pos += len("REC->")
		name := p.ident()
		f := p.f.Field(name)
		if f == nil {
			for i := range p.f.Common {
				if p.f.Common[i].Name == name {
					f = &p.f.Common[i]
				}
			}
		}
		if f == nil {
			return nil, fmt.Errorf("print fmt: no field %q", name)
		}
		if p.peek(".") || p.peek("->") {
			return nil, fmt.Errorf("print fmt: a member of field %s", name)
		}
		e := &pfExpr{op: pfField, field: f}
		switch {
		case f.Array != 0 || strings.HasPrefix(f.Type, "__data_loc") || strings.HasPrefix(f.Type, "__rel_loc"):
			e.typ = pfBytes
			if strings.HasPrefix(f.Type, "__data_loc") || strings.HasPrefix(f.Type, "__rel_loc") {
				// the loc word itself: TP_printk names such fields only inside helpers
				e.typ, e.size = pfInt, 4
			}
		case f.Size == 1 || f.Size == 2 || f.Size == 4 || f.Size == 8:
			e.size, e.signed = uint8(f.Size), f.Signed
		default:
			return nil, fmt.Errorf("print fmt: field %s of %d bytes", name, f.Size)
		}
		return e, nil
	}
	name := p.ident()
	if name == "" {
		return nil, fmt.Errorf("print fmt: unexpected %q", clip(p.src[p.pos:]))
	}
	if name == "sizeof" {
		if err := p.expect("("); err != nil {
			return nil, err
		}
		end := strings.IndexByte(p.src[p.pos:], ')')
		if end < 0 {
			return nil, errors.New("print fmt: sizeof cut short")
		}
		t, ok := pfTypes[strings.Join(strings.Fields(p.src[p.pos:p.pos+end]), " ")]
		if !ok {
			return nil, fmt.Errorf("print fmt: sizeof(%s)", p.src[p.pos:p.pos+end])
		}
		p.pos += end + 1
		return &pfExpr{op: pfNum, num: uint64(t.size), size: 8}, nil
	}
	if !p.peek("(") {
		if p.enum == nil {
			return nil, fmt.Errorf("print fmt: %s, which the kernel did not resolve", name)
		}
		c, ok := p.enum(name)
		if !ok {
			return nil, fmt.Errorf("print fmt: %s, which the kernel did not resolve, and no enum of its BTF gives a value", name)
		}
		return &pfExpr{op: pfNum, num: c.Value, size: c.Size, signed: c.Signed}, nil
	}
	p.pos++
	return p.call(name)
}

// number reads an integer constant: decimal, 0x hex or octal, with C's suffixes.
func (p *pfParser) number() (*pfExpr, error) {
	start := p.pos
	for p.pos < len(p.src) && isAlnum(p.src[p.pos]) {
		p.pos++
	}
	lit := strings.ToLower(p.src[start:p.pos])
	digits := strings.TrimRight(lit, "ul")
	suffix := lit[len(digits):]
	v, err := strconv.ParseUint(digits, 0, 64)
	if err != nil {
		return nil, fmt.Errorf("print fmt: number %q", lit)
	}
	e := &pfExpr{op: pfNum, num: v, size: 4, signed: true}
	hexOct := len(digits) > 1 && digits[0] == '0'
	switch {
	case strings.Contains(suffix, "l"):
		e.size = 8
		e.signed = !strings.Contains(suffix, "u")
		if e.signed && v > 1<<63-1 {
			e.signed = false
		}
	case strings.Contains(suffix, "u"):
		e.signed = false
		if v > 1<<32-1 {
			e.size = 8
		}
	case v <= 1<<31-1:
	case v <= 1<<32-1 && hexOct:
		e.signed = false
	case v <= 1<<63-1:
		e.size = 8
	default:
		e.size, e.signed = 8, false
	}
	return e, nil
}

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

// constant evaluates an expression that reads no field.
func constant(e *pfExpr) (uint64, bool) {
	if !pfConstant(e) {
		return 0, false
	}
	var ctx pfEval
	v := ctx.eval(e, nil)
	return v.u, true
}

func pfConstant(e *pfExpr) bool {
	if e == nil {
		return true
	}
	switch e.op {
	case pfField, pfIndex, pfGetStr, pfDynArray, pfDynLen, pfBitmask, pfStr:
		return false
	}
	if e.typ != pfInt {
		return false
	}
	return pfConstant(e.a) && pfConstant(e.b) && pfConstant(e.c)
}

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
