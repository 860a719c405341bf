package stream

import (
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/ftctl/ftctl/tracefs"
)

// The arguments of a print fmt line: a subset of C's expressions (fields, arithmetic,
// comparisons, ternaries, casts, sizeof of the basic types) parsed into pfExpr trees, each node
// typed as C types it (the integer promotions, the usual arithmetic conversions at the LP64
// sizes), and what reads no field folded into a constant once, when the format is read. The
// helpers TP_printk calls are parsed in printfmt_helpers.go.

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
