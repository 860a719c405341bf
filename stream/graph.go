package stream

import (
	"bytes"
	"strconv"
)

// function_graph lines (kernel/trace/trace_functions_graph.c print_graph_*), one column per
// option, each ending in '|':
//
//	"   37.081612 |   0)     dd-312     | + 18.735 us   |      security_file_permission();"
//	 funcgraph-abstime  funcgraph-cpu  funcgraph-proc  overhead+duration  depth and call
//
// With funcgraph-cpu, funcgraph-proc and funcgraph-duration all off, only the call is left:
// "  rw_verify_area() {". Depth is two spaces per level.

// A depth comes from the kernel's record, or from a file's: anyone's number. No kernel
// records one past a few hundred (6.1: FTRACE_RETFUNC_DEPTH, 50, the size of the task's return
// stack; 6.12: the return stack is a 4096-byte shadow stack of at least three words a frame,
// fewer than 171 frames), but a record of a trace.dat may say 2^31: indented by 2 spaces a
// level, that line alone was 4 GB.
const (
	// GraphIndentMax is the deepest level a function_graph line or call tree is indented to;
	// deeper, the line shows its depth as a number ("/* depth 70 */") at that indentation.
	// Past 6.1's deepest, so that what a 6.1 kernel prints is never changed.
	GraphIndentMax = 64
	// MaxGraphDepth bounds the depths a CallTree nests calls by: a deeper call (or one of a
	// negative depth) is taken at MaxGraphDepth (or 0), so that a tree's height, which the
	// renderers recurse through, stays bounded whatever the records say. Past any kernel's.
	MaxGraphDepth = 512
)

// appendGraphIndent appends the indentation of a call at level (2 spaces a level, at most
// GraphIndentMax levels, then its depth as a number).
func appendGraphIndent(dst []byte, level, depth int) []byte {
	dst = appendSpaces(dst, 2*min(max(level, 0), GraphIndentMax))
	if level > GraphIndentMax {
		dst = append(dst, "/* depth "...)
		dst = strconv.AppendInt(dst, int64(depth), 10)
		dst = append(dst, " */ "...)
	}
	return dst
}

// parseGraph parses a function_graph line into ev, or says it is not one.
func parseGraph(ev *Event, line []byte) bool {
	i := 0
	var g Graph
	ts, cpu, comm, pid := []byte(nil), -1, []byte(nil), 0
	// funcgraph-abstime: " %12llu.%06lu |" (the clock's own units for counter-like clocks)
	if j := skipSpaces(line, 0); j < len(line) && isDigit(line[j]) {
		if t, k, ok := parseTimestamp(line, j); ok {
			if k2 := skipSpaces(line, k); k2 < len(line) && line[k2] == '|' {
				ts, i = t, k2+1
			}
		}
	}
	// funcgraph-cpu: " %*d) "
	if j := skipSpaces(line, i); j < len(line) && isDigit(line[j]) {
		n, k, ok := parseUint(line, j)
		if !ok || k >= len(line) || line[k] != ')' {
			return false
		}
		cpu, i = n, k+1
	}
	haveBar := false
	// Up to two more columns end in '|': funcgraph-proc ("comm-pid") and the duration.
	for col := 0; col < 2; col++ {
		bar := bytes.IndexByte(line[i:], '|')
		if bar < 0 {
			break
		}
		field := trimSpaces(line[i : i+bar])
		if d, ok := graphDuration(field); ok {
			g.Duration = d
			i += bar + 1
			haveBar = true
			break
		}
		dash := bytes.LastIndexByte(field, '-')
		if col > 0 || dash <= 0 {
			return false
		}
		p, k, ok := parseUint(field, dash+1)
		if !ok || k != len(field) {
			return false
		}
		comm, pid = field[:dash], p
		i += bar + 1
		haveBar = true
	}
	body := line[i:]
	if haveBar {
		// The call column starts with two spaces of its own.
		if len(body) < 2 || body[0] != ' ' || body[1] != ' ' {
			return false
		}
		body = body[2:]
	} else if cpu >= 0 || ts != nil {
		return false
	}
	indent := skipSpaces(body, 0)
	if indent%2 != 0 {
		return false
	}
	g.Depth = indent / 2
	if !parseGraphCall(&g, body[indent:]) {
		return false
	}
	ev.Kind = KindGraph
	ev.Graph = g
	ev.CPU = cpu
	ev.TS = ts
	if comm != nil {
		ev.Comm, ev.PID = comm, pid
	}
	return true
}

// graphDuration reads the duration column: "", or an overhead mark (+ ! # * @ $, or a space)
// and "%ld.%03ld us".
func graphDuration(f []byte) ([]byte, bool) {
	if len(f) == 0 {
		return nil, true
	}
	switch f[0] {
	case '+', '!', '#', '*', '@', '$':
		f = trimLeftSpaces(f[1:])
	}
	if !bytes.HasSuffix(f, []byte(" us")) {
		return nil, false
	}
	num := f[:len(f)-3]
	t, k, ok := parseTimestamp(num, 0)
	if !ok || k != len(num) {
		return nil, false
	}
	return t, true
}

// parseGraphCall reads "func() {", "func();" or "}", each optionally followed by a
// " /* comment */" (the function's name on an exit with funcgraph-tail; "= value" with
// funcgraph-retval).
func parseGraphCall(g *Graph, b []byte) bool {
	var comment []byte
	if k := bytes.Index(b, []byte(" /* ")); k >= 0 {
		if !bytes.HasSuffix(b, []byte(" */")) || len(b) < k+7 {
			return false
		}
		comment = b[k+4 : len(b)-3]
		b = b[:k]
	}
	switch {
	case len(b) == 1 && b[0] == '}':
		g.Type = GraphExit
		if isGraphFunc(comment) {
			g.Func = comment
		} else {
			g.Comment = comment
		}
		return true
	case bytes.HasSuffix(b, []byte("() {")):
		g.Type = GraphEntry
		b = b[:len(b)-4]
	case bytes.HasSuffix(b, []byte("();")):
		g.Type = GraphCall
		b = b[:len(b)-3]
	default:
		return false
	}
	if !isGraphFunc(b) {
		return false
	}
	g.Func = b
	g.Comment = comment
	return true
}

// isGraphFunc: a function as %ps prints it, a symbol name and, for a module's, " [module]".
func isGraphFunc(b []byte) bool {
	if i := bytes.Index(b, []byte(" [")); i > 0 && bytes.HasSuffix(b, []byte("]")) {
		return isSymbol(b[:i]) && isSymbol(b[i+2:len(b)-1])
	}
	return isSymbol(b)
}

// isSymbol: a kernel symbol name (identifier characters and '.', as in "foo.isra.0").
func isSymbol(b []byte) bool {
	if len(b) == 0 {
		return false
	}
	for _, c := range b {
		if !isIdent(c) && c != '.' && c != '$' {
			return false
		}
	}
	return true
}
