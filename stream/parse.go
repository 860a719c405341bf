package stream

import (
	"bytes"
	"encoding/binary"
	"math/bits"
	"strings"
)

// The kernel's trace_pipe line (kernel/trace/trace_output.c trace_print_context, Linux 6.1 and
// 6.12):
//
//	"%16s-%-7d " comm-pid, ["(%7d) " tgid, or "(-------) ", with the record-tgid option],
//	"[%03d] " cpu, [flags, e.g. "d..2.", with the irq-info option (on by default)],
//	" %5lu.%06lu" seconds, or " %12llu" for the clocks that do not count nanoseconds
//	(counter, uptime, x86-tsc), then ": " and the event's own text.
//
// The parser works on bytes, without regular expressions or allocations: it runs once per
// line on a stream the kernel can produce at hundreds of thousands of lines per second.

// ParseLine parses one line (without its newline) into ev. It never fails: what it does not
// understand becomes KindRaw. Stack frames (" => sym") are grouped by a Decoder; alone, a frame
// line is raw.
func ParseLine(ev *Event, line []byte) {
	ev.reset()
	ev.Line = line
	if body, ok := parseContext(ev, line); ok {
		parseBody(ev, body)
		return
	}
	if parseLost(ev, line) || parseNoContextFunction(ev, line) || parseGraph(ev, line) {
		return
	}
	ev.Kind = KindRaw
	ev.Text = line
}

// parseContext parses the context columns. The comm is right-aligned in 16 columns, so the
// '-' before the pid is at offset 16 for any comm the kernel keeps (TASK_COMM_LEN is 16: at
// most 15 bytes), whatever the comm holds (spaces, dashes, brackets: "x-1 [000] y-267" is the
// comm "x-1 [000] y", pid 267). Should a kernel print a longer comm, the later dashes are tried
// in turn.
func parseContext(ev *Event, line []byte) ([]byte, bool) {
	for sep := 16; sep+1 < len(line) && sep < 80; sep++ {
		if line[sep] != '-' || !isDigit(line[sep+1]) {
			continue
		}
		if body, ok := parseAfterComm(ev, line, sep); ok {
			return body, true
		}
	}
	return nil, false
}

func parseAfterComm(ev *Event, line []byte, sep int) ([]byte, bool) {
	i := sep + 1
	pid, i, ok := parseUint(line, i)
	if !ok {
		return nil, false
	}
	i = skipSpaces(line, i)
	tgid := 0
	if i < len(line) && line[i] == '(' {
		// "(%7d) " or "(-------) "
		end := bytes.IndexByte(line[i:], ')')
		if end < 0 {
			return nil, false
		}
		field := line[i+1 : i+end]
		if t := trimSpaces(field); len(t) > 0 && t[0] == '-' {
			for _, c := range t {
				if c != '-' {
					return nil, false
				}
			}
			tgid = -1
		} else {
			n, j, ok := parseUint(t, 0)
			if !ok || j != len(t) {
				return nil, false
			}
			tgid = n
		}
		i = skipSpaces(line, i+end+1)
	}
	if i >= len(line) || line[i] != '[' {
		return nil, false
	}
	cpu, j, ok := parseUint(line, i+1)
	if !ok || j+1 >= len(line) || line[j] != ']' || line[j+1] != ' ' {
		return nil, false
	}
	i = j + 2
	// irq-info flags follow "] " directly; without them the timestamp's own leading space does.
	var flags []byte
	if i < len(line) && line[i] != ' ' {
		k := i
		for k < len(line) && line[k] != ' ' {
			k++
		}
		if k-i > 8 {
			return nil, false
		}
		flags = line[i:k]
		i = k
	}
	i = skipSpaces(line, i)
	ts, i, ok := parseTimestamp(line, i)
	if !ok || i+1 > len(line) || line[i] != ':' {
		return nil, false
	}
	i++
	if i < len(line) {
		if line[i] != ' ' {
			return nil, false
		}
		i++
	}
	ev.HasContext = true
	ev.Comm = trimLeftSpaces(line[:sep])
	ev.PID = pid
	ev.TGID = tgid
	ev.CPU = cpu
	ev.Flags = flags
	ev.TS = ts
	return line[i:], true
}

// parseTimestamp reads "123.456789" or "123456789" (a valid JSON number: no leading zeros).
func parseTimestamp(b []byte, i int) ([]byte, int, bool) {
	start := i
	for i < len(b) && isDigit(b[i]) {
		i++
	}
	if i == start || (b[start] == '0' && i-start > 1) {
		return nil, start, false
	}
	if i < len(b) && b[i] == '.' {
		i++
		f := i
		for i < len(b) && isDigit(b[i]) {
			i++
		}
		if i == f {
			return nil, start, false
		}
	}
	return b[start:i], i, true
}

var (
	stackTrace     = []byte("<stack trace>")
	userStackTrace = []byte("<user stack trace>")
	markSym        = []byte("tracing_mark_write")
	repeatsPrefix  = []byte(" (repeats: ")
	lastTSPrefix   = []byte(", last_ts:")
)

// parseBody parses what follows the context's ": ".
func parseBody(ev *Event, body []byte) {
	if len(body) > 0 && body[0] == '<' {
		switch {
		case bytes.Equal(body, stackTrace):
			ev.Kind = KindStack
			return
		case bytes.Equal(body, userStackTrace):
			ev.Kind = KindUserStack
			return
		}
	}
	sym, i, ok := parseSym(body, 0)
	if ok {
		switch {
		case i == len(body): // a function without its parent (print-parent off)
			ev.Kind = KindFunction
			ev.Func = sym
			return
		case body[i] == ' ' && i+2 < len(body) && body[i+1] == '<' && body[i+2] == '-':
			if parseParent(ev, body, i+3) {
				ev.Kind = KindFunction
				ev.Func = sym
				return
			}
		case body[i] == ':' && (i+1 == len(body) || body[i+1] == ' '):
			rest := body[min(i+2, len(body)):]
			ev.Name = sym.Name
			switch {
			case bytes.Equal(sym.Name, markSym):
				ev.Kind = KindMarker
				ev.Text = rest
			case len(rest) > 0 && rest[0] == '(' && sym.Offset == nil && parseProbe(ev, rest):
				ev.Kind = KindProbe
			default:
				ev.Kind = KindPrint
				ev.Text = rest
			}
			return
		}
	}
	ev.Kind = KindRaw
	ev.Text = body
}

// parseParent reads " <-parent" (from after "<-"), then the func-no-repeats note.
// kretprobedSym is what the kernel prints for a return address a kretprobe diverted.
var kretprobedSym = []byte(kretprobedMsg)

func parseParent(ev *Event, b []byte, i int) bool {
	parent, i, ok := parseSym(b, i)
	if !ok {
		return false
	}
	ev.Parent = parent
	if i == len(b) {
		return true
	}
	// " (repeats: %u, last_ts: %s)" (trace_func_repeats_print, Linux 5.13+)
	if !bytes.HasPrefix(b[i:], repeatsPrefix) {
		return false
	}
	n, j, ok := parseUint(b, i+len(repeatsPrefix))
	if !ok || !bytes.HasPrefix(b[j:], lastTSPrefix) {
		return false
	}
	ts, j, ok := parseTimestamp(b, skipSpaces(b, j+len(lastTSPrefix)))
	if !ok || j != len(b)-1 || b[j] != ')' {
		return false
	}
	ev.Repeats = int64(n)
	ev.LastTS = ts
	return true
}

// parseSym reads a symbol as seq_print_ip_sym prints it: "name", "name+0x4/0x1a0" (sym-offset),
// then " [module]" for a module's symbol, then " <ffffffff81234567>" (sym-addr).
func parseSym(b []byte, i int) (Sym, int, bool) {
	var s Sym
	start := i
	if bytes.HasPrefix(b[i:], kretprobedSym) { // a return address a kretprobe diverted
		s.Name = b[i : i+len(kretprobedSym)]
		return s, i + len(kretprobedSym), true
	}
	for i+8 <= len(b) && symWord(binary.LittleEndian.Uint64(b[i:])) {
		i += 8
	}
	for i < len(b) && !symStop[b[i]] {
		i++
	}
	if i == start {
		return s, start, false
	}
	s.Name = b[start:i]
	if i < len(b) && b[i] == '+' {
		j := i + 1
		for j < len(b) && isOffsetByte(b[j]) {
			j++
		}
		if j == i+1 {
			return s, start, false
		}
		s.Offset = b[i+1 : j]
		i = j
	}
	if i+2 < len(b) && b[i] == ' ' && b[i+1] == '[' {
		end := bytes.IndexByte(b[i+2:], ']')
		if end <= 0 {
			return s, start, false
		}
		s.Module = b[i+2 : i+2+end]
		i += 2 + end + 1
	}
	if i+2 < len(b) && b[i] == ' ' && b[i+1] == '<' && isHex(b[i+2]) {
		j := i + 2
		for j < len(b) && isHex(b[j]) {
			j++
		}
		if j < len(b) && b[j] == '>' {
			s.Addr = b[i+2 : j]
			i = j + 1
		}
	}
	return s, i, true
}

// parseProbe reads "(loc) args" or "(loc <- func) args" (print_kprobe_event,
// print_kretprobe_event; fprobes, eprobes and tprobes print the same way).
func parseProbe(ev *Event, b []byte) bool {
	end := -1
	for k := 1; k < len(b); k++ {
		if b[k] == ')' && (k+1 == len(b) || b[k+1] == ' ') {
			end = k
			break
		}
	}
	if end < 0 {
		return false
	}
	loc := b[1:end]
	if k := bytes.Index(loc, []byte(" <- ")); k >= 0 {
		ev.Loc, ev.RetFrom = loc[:k], loc[k+4:]
	} else {
		ev.Loc = loc
	}
	if end+1 >= len(b) {
		ev.ArgsOK = true
		return true
	}
	args := b[end+2:]
	budget := maxArgAttempts
	if parseArgs(ev, args, &budget) {
		ev.ArgsOK = true
	} else {
		ev.Args = ev.Args[:0]
		ev.Text = args
	}
	return true
}

// parseLost reads "CPU:%d [LOST %lu EVENTS]" or "CPU:%d [LOST EVENTS]" (trace.c
// print_trace_line; the count is unknown when the ring buffer could not tell it).
func parseLost(ev *Event, line []byte) bool {
	const prefix = "CPU:"
	if len(line) < len(prefix) || string(line[:len(prefix)]) != prefix {
		return false
	}
	cpu, i, ok := parseUint(line, len(prefix))
	if !ok {
		return false
	}
	rest := line[i:]
	lost := int64(-1)
	switch {
	case string(rest) == " [LOST EVENTS]":
	case bytes.HasPrefix(rest, []byte(" [LOST ")):
		n, j, ok := parseUint(rest, len(" [LOST "))
		if !ok || string(rest[j:]) != " EVENTS]" {
			return false
		}
		lost = int64(n)
	default:
		return false
	}
	ev.Kind = KindLost
	ev.CPU = cpu
	ev.Lost = lost
	return true
}

// parseNoContextFunction reads a function line printed without context (the context-info
// option off): "func <-parent", nothing else, so that stray text is not taken for a function.
func parseNoContextFunction(ev *Event, line []byte) bool {
	sym, i, ok := parseSym(line, 0)
	if !ok || i+3 > len(line) || line[i] != ' ' || line[i+1] != '<' || line[i+2] != '-' {
		return false
	}
	if !parseParent(ev, line, i+3) {
		ev.Parent = Sym{}
		return false
	}
	ev.Kind = KindFunction
	ev.Func = sym
	return true
}

// symStop[c]: c ends a symbol name (punctuation of the line around it, or not printable ASCII).
var symStop = func() (t [256]bool) {
	for c := range t {
		t[c] = c <= ' ' || c >= 0x7f || strings.IndexByte("+:()<>[]\"=", byte(c)) >= 0
	}
	return t
}()

// symWord says whether the 8 bytes of w all are digits, lower-case letters, '_' or '`': the
// bytes of most symbol names, none of them in symStop, tested a word at a time (the ranges
// 0x30-0x39 and 0x5f-0x7a, with additions that cannot carry between bytes: see plainWord).
func symWord(w uint64) bool {
	const ones, highs = 0x0101010101010101, 0x8080808080808080
	x := w &^ highs
	lower := (x + 0x21*ones) &^ (x + 0x05*ones) // 0x5f <= x <= 0x7a
	digit := (x + 0x50*ones) &^ (x + 0x46*ones) // 0x30 <= x <= 0x39
	return (lower|digit)&^w&highs == highs
}

func isDigit(c byte) bool { return c >= '0' && c <= '9' }

func isHex(c byte) bool { return isDigit(c) || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F') }

func isOffsetByte(c byte) bool { return isHex(c) || c == 'x' || c == '/' }

func isIdent(c byte) bool {
	return c == '_' || isDigit(c) || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z')
}

// parseUint reads a decimal number of at most 10 digits.
func parseUint(b []byte, i int) (int, int, bool) {
	start, n := i, 0
	for i < len(b) && isDigit(b[i]) && i-start < 10 {
		n = n*10 + int(b[i]-'0')
		i++
	}
	if i == start || (i < len(b) && isDigit(b[i])) {
		return 0, start, false
	}
	return n, i, true
}

// skipSpaces skips the spaces from b[i] on, a word at a time: the kernel pads its columns
// (a comm is right-aligned in 16, a pid left-aligned in 7, a timestamp in 5+7).
func skipSpaces(b []byte, i int) int {
	const spaces8 = 0x2020202020202020
	for i+8 <= len(b) {
		if x := binary.LittleEndian.Uint64(b[i:]) ^ spaces8; x != 0 {
			return i + bits.TrailingZeros64(x)/8
		}
		i += 8
	}
	for i < len(b) && b[i] == ' ' {
		i++
	}
	return i
}

func trimLeftSpaces(b []byte) []byte {
	return b[skipSpaces(b, 0):]
}

func trimSpaces(b []byte) []byte {
	b = trimLeftSpaces(b)
	for len(b) > 0 && b[len(b)-1] == ' ' {
		b = b[:len(b)-1]
	}
	return b
}
