package eventfilter

import (
	"fmt"
	"sort"
	"strconv"
	"strings"

	"github.com/ftctl/ftctl/filters"
	"github.com/ftctl/ftctl/internal/kstr"
)

// The kernel's error texts (trace_events_filter.c ERRORS).
const (
	filtInvalidOp      = "Invalid operator"
	filtTooManyOpen    = "Too many '('"
	filtTooManyClose   = "Too few '('"
	filtMissingQuote   = "Missing matching quote"
	filtMissingBraceO  = "Missing '{'"
	filtMissingBraceC  = "Missing '}'"
	filtOperandTooLong = "Operand too long"
	filtExpectString   = "Expecting string field"
	filtExpectDigit    = "Expecting numeric field"
	filtIllegalFieldOp = "Illegal operation for field type"
	filtFieldNotFound  = "Field not found"
	filtIllegalIntval  = "Illegal integer value"
	filtTooManyPreds   = "Too many terms in predicate expression"
	filtInvalidFilter  = "Meaningless filter expression"
	filtInvalidCPUList = "Invalid cpulist"
	filtInvalidValue   = "Invalid value (did you forget quotes)?"
	filtErrno          = "Error"
	filtNoFilter       = "No filter found"
)

// Limits of the kernel's filter parser.
const (
	maxFilterStrVal = 256 // MAX_FILTER_STR_VAL: a quoted value is shorter
	maxFilterNumLen = 24  // sizeof(num_buf): a number (or .function address) is shorter
	// MaxLen: event_filter_write() refuses a write of PAGE_SIZE bytes or more; ftctl writes
	// the filter and a newline.
	MaxLen = 4096 - 2
)

// Predicate is one FIELD OP VALUE of a parsed filter.
type Predicate struct {
	Field    string
	Ustring  bool // FIELD.ustring: the char pointer points to user memory
	Function bool // FIELD.function: compare with a function (by name or address)
	Op       string
	Value    string // as written, quotes included
	Start    int    // byte offsets of the predicate in the filter
	End      int
}

// Filter is a filter expression that passed the checks.
type Filter struct {
	Source string
	Preds  []Predicate
}

// Error is a filter refused before it reaches the kernel.
type Error struct {
	Source string
	Pos    int    // byte offset in Source where ftctl's caret goes (may equal len(Source))
	Msg    string // the kernel's words where it has some
	Detail string // ftctl's explanation ("" if the message says it all)
	Hint   string // what to do about it, lines apart ("" if nothing to add)
	Event  string // SYSTEM:EVENT whose fields refused it, "" when any event would
	// KernelPos is where the kernel's error_log would put its caret for the same text (-1
	// where the kernel would log nothing): tests compare it with the real kernels'.
	KernelPos int
}

func (e *Error) Error() string {
	var b strings.Builder
	b.WriteString("invalid event filter")
	if e.Event != "" {
		b.WriteString(" for " + e.Event)
	}
	b.WriteString(": " + e.Msg)
	if e.Detail != "" {
		b.WriteString(": " + e.Detail)
	}
	fmt.Fprintf(&b, " (at byte %d)", e.Pos+1)
	return b.String()
}

// Parse checks a filter's syntax alone, for any event: field names and their types are not
// checked (Check does, per event).
func Parse(src string) (*Filter, error) {
	return parseEventFilter(src, nil)
}

// Check checks a filter against an event's fields, as the kernel will when it is written to
// the event's filter file. Errors are *Error.
func Check(src string, fields *Fields) (*Filter, error) {
	return parseEventFilter(src, fields)
}

// longSize is sizeof(long) of the kernel ftctl runs on: .function needs a field of that size.
// ftctl and the kernel it drives have the same word size (a 64-bit build for a 64-bit kernel).
const longSize = strconv.IntSize / 8

type filterParser struct {
	src    string // as the kernel parses it: without trailing white space
	fields *Fields
	preds  []Predicate
	// lastJoin is where the last && or || starts, for a filter that ends with one.
	lastJoin int
}

func parseEventFilter(src string, fields *Fields) (*Filter, error) {
	p := &filterParser{fields: fields, lastJoin: -1}
	fail := func(pos int, msg, detail, hint string) error {
		return &Error{Source: src, Pos: pos, Msg: msg, Detail: detail, Hint: hint, KernelPos: -1}
	}
	// What the kernel never parses: event_filter_write() and apply_event_filter().
	if i := strings.IndexAny(src, "\n\x00"); i >= 0 {
		return nil, fail(i, "a filter is a single line", "", "")
	}
	if len(src) > MaxLen {
		return nil, fail(MaxLen, fmt.Sprintf("filter is too long: the kernel takes at most %d bytes", MaxLen), "", "")
	}
	// apply_event_filter() strips trailing white space (strstrip) before it parses.
	p.src = trimSpaceRight(src)
	lead := 0
	for lead < len(p.src) && kstr.IsSpace(p.src[lead]) {
		lead++
	}
	switch p.src[lead:] {
	case "":
		return nil, fail(0, "empty filter", "", "a filter is FIELD OP VALUE, e.g. common_pid == 42")
	case "0":
		return nil, fail(lead, "\"0\" clears an event's filter", "", "a session's events start with none")
	}
	if err := p.parse(); err != nil {
		err.Source = src
		if fields != nil && err.Event == "" && fieldDependent(err.Msg) {
			err.Event = fields.Event
		}
		return nil, err
	}
	return &Filter{Source: src, Preds: p.preds}, nil
}

// trimSpaceRight drops trailing white space as the kernel's strstrip() does, byte by byte
// with the kernel's isspace (so a Latin-1 NBSP too).
func trimSpaceRight(s string) string {
	end := len(s)
	for end > 0 && kstr.IsSpace(s[end-1]) {
		end--
	}
	return s[:end]
}

// fieldDependent: errors whose verdict depends on the event's fields.
func fieldDependent(msg string) bool {
	switch msg {
	case filtFieldNotFound, filtExpectString, filtExpectDigit, filtIllegalFieldOp, filtIllegalIntval:
		return true
	}
	return false
}

func (p *filterParser) at(i int) byte {
	if i < len(p.src) {
		return p.src[i]
	}
	return 0
}

func isalnum(c byte) bool { return kstr.IsDigit(c) || kstr.IsAlpha(c) }

// errAt builds an error: pos is where ftctl's caret goes, kpos where the kernel's would.
func (p *filterParser) errAt(pos, kpos int, msg, detail, hint string) *Error {
	return &Error{Pos: min(pos, len(p.src)), KernelPos: kpos, Msg: msg, Detail: detail, Hint: hint}
}

// calcStack is the kernel's calc_stack(): quotes and parentheses balanced, and an upper bound
// of the parentheses' depth and of the number of predicates.
func (p *filterParser) calcStack() (parens, preds int, err *Error) {
	s := p.src
	isPred := false
	open, maxOpen := 1, 1 // the expression counts as "(E)"
	var quote byte
	lastQuote := 0
	i := 0
	for ; i < len(s); i++ {
		c := s[i]
		if kstr.IsSpace(c) {
			continue
		}
		if quote != 0 {
			if c == quote {
				quote = 0
			}
			continue
		}
		switch c {
		case '\'', '"':
			quote, lastQuote = c, i
		case '|', '&':
			if p.at(i+1) == c {
				isPred = false
				continue
			}
		case '(':
			isPred = false
			open++
			maxOpen = max(maxOpen, open)
			continue
		case ')':
			isPred = false
			if open == 1 {
				return 0, 0, p.errAt(i, i, filtTooManyClose, "this ')' closes nothing", "")
			}
			open--
			continue
		}
		if !isPred {
			preds++
			isPred = true
		}
	}
	if quote != 0 {
		return 0, 0, p.errAt(lastQuote, lastQuote, filtMissingQuote, "this quote is not closed", "")
	}
	if open != 1 {
		level := open
		for i--; i > 0; i-- { // find the '(' left open
			if quote != 0 {
				if s[i] == quote {
					quote = 0
				}
				continue
			}
			switch s[i] {
			case '(':
				if level == open {
					return 0, 0, p.errAt(i, i, filtTooManyOpen, "this '(' is not closed", "")
				}
				level--
			case ')':
				level++
			case '\'', '"':
				quote = s[i]
			}
		}
		return 0, 0, p.errAt(0, 0, filtTooManyOpen, "this '(' is not closed", "")
	}
	return maxOpen, preds, nil
}

// parse is the kernel's process_preds() and predicate_parse(), without building the program.
func (p *filterParser) parse() *Error {
	nrParens, nrPreds, err := p.calcStack()
	if err != nil {
		return err
	}
	if nrPreds == 0 {
		// process_preds() returns EINVAL; error_log says "Error".
		return p.errAt(len(p.src), 0, filtErrno, "no predicate (FIELD OP VALUE)", "")
	}
	s := p.src
	depth := 0 // the kernel's top - op_stack
	n := 0
	ptr := 0
	for ptr < len(s) {
		next := ptr
		ptr++
		c := s[next]
		if kstr.IsSpace(c) {
			continue
		}
		switch c {
		case '(':
			if depth >= nrParens-1 { // 6.12's guard; the kernel logs a bare "Error"
				return p.errAt(next, 0, filtErrno, "parentheses nested deeper than the kernel counted", "")
			}
			depth++
			continue
		case '!':
			if c2 := p.at(next + 1); c2 != '=' && c2 != '~' {
				continue
			}
		}
		if n >= nrPreds {
			return p.errAt(next, next, filtTooManyPreds, "", "")
		}
		length, perr := p.parsePred(next)
		if perr != nil {
			return perr
		}
		ptr = next + length
		n++
		for {
			next = ptr
			ptr++
			c := p.at(next)
			if next < len(s) && kstr.IsSpace(c) {
				continue
			}
			switch c {
			case ')', 0:
			case '&', '|':
				if p.at(next+1) == c {
					ptr++
					break
				}
				fallthrough
			default:
				return p.errAt(next, next, filtTooManyPreds, "expected && or || (or a ')') after a predicate", "")
			}
			if c == '&' || c == '|' {
				p.lastJoin = next
				break
			}
			if c == 0 {
				goto out
			}
			if depth == 0 {
				return p.errAt(next, ptr, filtTooManyClose, "this ')' closes nothing", "")
			}
			depth--
		}
	}
	// Only the inner loop can complete a non-empty expression.
	if n > 0 {
		at := p.lastJoin
		if at < 0 {
			at = len(s)
		}
		return p.errAt(at, ptr, filtInvalidFilter, "nothing follows this operator", "")
	}
out:
	if depth != 0 {
		return p.errAt(len(s), ptr, filtTooManyOpen, "a '(' is not closed", "")
	}
	if n == 0 {
		return p.errAt(len(s), ptr, filtNoFilter, "no predicate (FIELD OP VALUE)", "")
	}
	return nil
}

// recentSyntax is said with mistakes in FIELD.function and CPUS{}, which older kernels do
// not know (6.1 refuses them as "Invalid operator" and "Invalid value").
const recentSyntax = "FIELD.function and CPUS{} are recent kernel syntax (6.1 knows neither)"

// filterOps in the kernel's order of matching ("<=" before "<").
var filterOps = []string{"~", "!=", "==", "<=", "<", ">=", ">", "&"}

// parsePred is the kernel's parse_pred() on the predicate starting at start: its length, or
// the error. The kernel reports positions one past ftctl's (its pos is start+1).
func (p *filterParser) parsePred(start int) (int, *Error) {
	s := p.src
	i := start
	for i < len(s) && kstr.IsSpace(s[i]) {
		i++
	}
	nameStart := i
	for i < len(s) && (isalnum(s[i]) || s[i] == '_') {
		i++
	}
	if i == nameStart {
		// parse_pred() returns -1 without a reason: the write fails with EPERM and
		// error_log says "Error" at 0.
		return 0, p.errAt(nameStart, 0, filtErrno, "expected a field name", "a predicate is FIELD OP VALUE, e.g. common_pid == 42")
	}
	pred := Predicate{Field: s[nameStart:i], Start: start}
	field := Field{Name: pred.Field, Kind: FieldAny}
	if p.fields != nil {
		f, ok := p.fields.Lookup(pred.Field)
		if !ok {
			return 0, p.notFound(nameStart, i)
		}
		field = f
	}
	if strings.HasPrefix(s[i:], ".ustring") {
		pred.Ustring = true
		i += len(".ustring")
	}
	if strings.HasPrefix(s[i:], ".function") {
		pred.Function = true
		i += len(".function")
	}
	for i < len(s) && kstr.IsSpace(s[i]) {
		i++
	}
	opStart := i
	for _, op := range filterOps {
		if strings.HasPrefix(s[i:], op) {
			pred.Op = op
			break
		}
	}
	if pred.Op == "" {
		hint := "the operators are == != < <= > >= & (bitwise) and ~ (glob, on strings)"
		if p.at(i) == '=' {
			hint = "equality is =="
		}
		return 0, p.errAt(i, i+1, filtInvalidOp, "", hint)
	}
	i += len(pred.Op)
	for i < len(s) && kstr.IsSpace(s[i]) {
		i++
	}
	vs := i // the value's start
	kernel := func(j int) int { return j + 1 }
	switch {
	case pred.Function:
		if field.Kind != FieldAny && field.Size != longSize {
			return 0, p.errAt(nameStart, kernel(i), filtIllegalFieldOp,
				fmt.Sprintf("%s.function needs a field the size of a long (%d bytes); %s has %d", pred.Field, longSize, pred.Field, field.Size), recentSyntax)
		}
		if pred.Op != "==" && pred.Op != "!=" {
			return 0, p.errAt(opStart, kernel(i), filtInvalidOp, "FIELD.function takes == or != only", recentSyntax)
		}
		if kstr.IsDigit(p.at(i)) {
			for i < len(s) && isalnum(s[i]) {
				i++
			}
			if i-vs >= maxFilterNumLen {
				return 0, p.errAt(vs, kernel(i), filtOperandTooLong, "", recentSyntax)
			}
			if _, ok := kstr.Strtoull(s[vs:i]); !ok {
				return 0, p.errAt(vs, kernel(i), filtInvalidValue, "not an address", recentSyntax)
			}
		} else {
			// The symbol runs to the next white space; whether it exists only the
			// kernel knows (kallsyms).
			for i < len(s) && !kstr.IsSpace(s[i]) {
				i++
			}
		}
	case strings.HasPrefix(s[i:], "CPUS"):
		switch field.Kind {
		case FieldNumber, FieldCPU, FieldCPUMask, FieldAny:
		default:
			return 0, p.errAt(nameStart, kernel(i), filtIllegalFieldOp, fmt.Sprintf("CPUS{} compares numbers, and %s is a string field", pred.Field), recentSyntax)
		}
		if pred.Op != "==" && pred.Op != "!=" && pred.Op != "&" {
			return 0, p.errAt(opStart, kernel(i), filtIllegalFieldOp, "CPUS{} takes ==, != or &", recentSyntax)
		}
		i += len("CPUS")
		if p.at(i) != '{' {
			return 0, p.errAt(i, kernel(i+1), filtMissingBraceO, "", "a CPU list is CPUS{0-3,6}\n"+recentSyntax)
		}
		brace := i
		i++
		for i < len(s) && s[i] != '}' {
			i++
		}
		if i >= len(s) {
			return 0, p.errAt(brace, kernel(i), filtMissingBraceC, "", recentSyntax)
		}
		if i == brace+1 {
			return 0, p.errAt(brace, kernel(i), filtInvalidCPUList, "the CPU list is empty", recentSyntax)
		}
		i++ // whether the list fits this machine only the kernel knows (cpulist_parse)
	case p.at(i) == '\'' || p.at(i) == '"':
		q := s[i]
		if pred.Op != "==" && pred.Op != "!=" && pred.Op != "~" {
			return 0, p.errAt(opStart, kernel(i), filtIllegalFieldOp, "strings are compared with ==, != or ~ (glob)", "")
		}
		if field.Kind != FieldString && field.Kind != FieldAny {
			return 0, p.errAt(vs, kernel(i), filtExpectDigit,
				fmt.Sprintf("%s (%s) is a number, not a string", pred.Field, field.Type), "compare it with a number, without quotes")
		}
		i++
		for i < len(s) && s[i] != q {
			i++
		}
		if i >= len(s) {
			return 0, p.errAt(vs, kernel(i), filtMissingQuote, "this quote is not closed", "")
		}
		if i-(vs+1) >= maxFilterStrVal {
			return 0, p.errAt(vs, kernel(i), filtOperandTooLong, fmt.Sprintf("a string is at most %d bytes", maxFilterStrVal-1), "")
		}
		i++
	case kstr.IsDigit(p.at(i)) || p.at(i) == '-':
		if field.Kind == FieldString {
			return 0, p.errAt(vs, kernel(i), filtExpectString,
				fmt.Sprintf("%s (%s) is a string, not a number", pred.Field, field.Type), "compare it with a quoted string, e.g. "+pred.Field+` == "bash"`)
		}
		if pred.Op == "~" {
			return 0, p.errAt(opStart, kernel(i), filtIllegalFieldOp, "~ (glob) compares strings", "")
		}
		if s[i] == '-' {
			i++
		}
		for i < len(s) && isalnum(s[i]) {
			i++
		}
		if i-vs >= maxFilterNumLen {
			return 0, p.errAt(vs, kernel(i), filtOperandTooLong, "", "")
		}
		num := s[vs:i]
		_, sok := kstr.Strtol(num)
		_, uok := kstr.Strtoull(num)
		ok := uok
		switch {
		case field.Kind == FieldAny:
			ok = sok || uok
		case field.Signed:
			ok = sok
		}
		if !ok {
			detail := "not a number (decimal, 0x hex or 0 octal)"
			if strings.HasPrefix(num, "-") && !field.Signed && field.Kind != FieldAny {
				detail = fmt.Sprintf("%s (%s) is unsigned", pred.Field, field.Type)
			}
			return 0, p.errAt(vs, kernel(vs), filtIllegalIntval, detail, "")
		}
	default:
		return 0, p.errAt(vs, kernel(i), filtInvalidValue, "", "a value is a number or a quoted string")
	}
	pred.Value = s[vs:i]
	pred.End = i
	p.preds = append(p.preds, pred)
	return i - start, nil
}

// notFound explains a field the event does not have.
func (p *filterParser) notFound(start, end int) *Error {
	name := p.src[start:end]
	ff := p.fields
	e := p.errAt(start, end+1, filtFieldNotFound, fmt.Sprintf("no field %q", name), "")
	e.Event = ff.Event
	own, other := ff.names()
	var all []string
	all = append(all, own...)
	all = append(all, other...)
	var hint []string
	if c := closest(name, all); c != "" {
		hint = append(hint, "did you mean "+c+"?")
	}
	if len(own) > 0 {
		hint = append(hint, "its fields: "+strings.Join(own, ", "))
	}
	hint = append(hint, "every event's: "+strings.Join(other, ", "))
	e.Hint = strings.Join(hint, "\n")
	return e
}

// closest is the name nearest to name (at most 2 edits, and fewer than half its length), or "".
func closest(name string, names []string) string {
	best, bestD := "", 3
	sorted := append([]string(nil), names...)
	sort.Strings(sorted)
	for _, n := range sorted {
		if d := filters.EditDistance(name, n, bestD); d < bestD && d*2 < len(name) {
			best, bestD = n, d
		}
	}
	return best
}
