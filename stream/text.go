package stream

import (
	"bytes"
	"strconv"
	"unicode/utf8"
)

// TextOptions shape the text rendering.
type TextOptions struct {
	// Color adds ANSI colours to the columns ftctl writes (never to trace data, which is always
	// escaped). Callers set it only for a terminal, and never when NO_COLOR is set.
	Color bool
	// Raw prints each line as the kernel formatted it, escaped the same way.
	Raw bool
	// BufferWidth, when above 0, starts each line with the event's Buffer (escaped),
	// right-aligned in that many columns, and ": " (spaces for the top level's ""), as trace-cmd
	// report prints a file holding instances' buffers: the width of the longest name.
	BufferWidth int
}

// Column widths of the text layout: timestamp, cpu, "comm-pid", event name.
const (
	tsWidth    = 12
	cpuWidth   = 3
	taskWidth  = 22
	eventWidth = 12
)

// frameIndent starts each frame of a stack trace, on its own line.
const frameIndent = "        => "

// ANSI SGR sequences.
const (
	sgrReset = "\x1b[0m"
	sgrDim   = "\x1b[2m"
	sgrLost  = "\x1b[1;31m"
)

var kindColor = [KindLost + 1]string{
	KindRaw:       "",
	KindFunction:  "\x1b[36m",
	KindProbe:     "\x1b[32m",
	KindMarker:    "\x1b[33m",
	KindPrint:     "\x1b[34m",
	KindStack:     "\x1b[35m",
	KindUserStack: "\x1b[35m",
	KindGraph:     "\x1b[36m",
	KindLost:      sgrLost,
}

// AppendText appends ev for people, ending with a newline: aligned columns (timestamp, cpu,
// comm-pid, irq flags when the kernel printed them, event) then what the event says. Every
// byte that came from the trace goes through AppendEscaped: comm, marker text, probe strings
// and raw lines are chosen by whoever is traced, and must not drive the terminal.
//
//	4.634804   1 cat-154                .....  function     ksys_write <- do_syscall_64
func AppendText(dst []byte, ev *Event, o TextOptions) []byte {
	if o.BufferWidth > 0 {
		dst = appendBuffer(dst, ev.Buffer, o.BufferWidth)
	}
	if o.Raw && ev.Kind != KindStack && ev.Kind != KindUserStack {
		// One line, whatever it holds: a probe string may carry a newline (escaped here).
		dst = AppendEscaped(dst, ev.Line)
		return append(dst, '\n')
	}
	if o.Raw {
		for i, line := range bytes.Split(ev.Line, []byte{'\n'}) {
			if i > 0 {
				dst = append(dst, '\n')
			}
			dst = AppendEscaped(dst, line)
		}
		return append(dst, '\n')
	}
	if ev.Kind == KindRaw && !ev.HasContext {
		dst = AppendEscaped(dst, ev.Text)
		return append(dst, '\n')
	}
	// timestamp
	if o.Color && ev.TS != nil {
		dst = append(dst, sgrDim...)
	}
	dst = appendPadLeft(dst, ev.TS, tsWidth)
	if o.Color && ev.TS != nil {
		dst = append(dst, sgrReset...)
	}
	dst = append(dst, ' ')
	// cpu
	if ev.CPU >= 0 {
		var num [12]byte
		dst = appendPadLeft(dst, strconv.AppendInt(num[:0], int64(ev.CPU), 10), cpuWidth)
	} else {
		dst = appendSpaces(dst, cpuWidth)
	}
	dst = append(dst, ' ')
	// comm-pid (tgid)
	start := len(dst)
	if ev.HasContext || ev.Comm != nil {
		dst = AppendEscaped(dst, ev.Comm)
		dst = append(dst, '-')
		dst = strconv.AppendInt(dst, int64(ev.PID), 10)
		if ev.TGID > 0 {
			dst = append(dst, " ("...)
			dst = strconv.AppendInt(dst, int64(ev.TGID), 10)
			dst = append(dst, ')')
		}
	}
	dst = appendSpaces(dst, taskWidth-utf8.RuneCount(dst[start:]))
	dst = append(dst, ' ')
	if ev.Flags != nil {
		start = len(dst)
		dst = AppendEscaped(dst, ev.Flags)
		dst = appendSpaces(dst, 5-(len(dst)-start))
		dst = append(dst, ' ')
	}
	// event
	color := o.Color && kindColor[ev.Kind] != ""
	if color {
		dst = append(dst, kindColor[ev.Kind]...)
	}
	start = len(dst)
	if ev.Kind == KindLost {
		dst = append(dst, "LOST"...)
	} else {
		dst = AppendEscaped(dst, ev.EventName())
	}
	n := utf8.RuneCount(dst[start:])
	if color {
		dst = append(dst, sgrReset...)
	}
	dst = appendSpaces(dst, eventWidth-n)
	dst = append(dst, ' ')
	dst = appendDetail(dst, ev)
	return append(dst, '\n')
}

// appendBuffer appends the buffer column: name right-aligned in width columns and ": ", or
// width+2 spaces for the top level.
func appendBuffer(dst, name []byte, width int) []byte {
	if len(name) == 0 {
		return appendSpaces(dst, width+2)
	}
	start := len(dst)
	dst = AppendEscaped(dst, name)
	if pad := width - utf8.RuneCount(dst[start:]); pad > 0 {
		s := append([]byte(nil), dst[start:]...)
		dst = append(appendSpaces(dst[:start], pad), s...)
	}
	return append(dst, ": "...)
}

// BufferWidth is TextOptions.BufferWidth for the names given: the widest, escaped.
func BufferWidth(names []string) int {
	w := 0
	for _, n := range names {
		w = max(w, utf8.RuneCount(AppendEscaped(nil, []byte(n))))
	}
	return w
}

// AppendDetail appends what ev says, the last column of AppendText, with no context columns and
// no newline (a stack trace's frames still each start a line): for a display that lays the
// columns out itself (ftctl tui). Trace data is escaped exactly as in AppendText.
func AppendDetail(dst []byte, ev *Event) []byte { return appendDetail(dst, ev) }

func appendDetail(dst []byte, ev *Event) []byte {
	switch ev.Kind {
	case KindFunction:
		dst = appendSymText(dst, ev.Func)
		if ev.Parent.Name != nil {
			dst = append(dst, " <- "...)
			dst = appendSymText(dst, ev.Parent)
		}
		if ev.LastTS != nil {
			dst = append(dst, " (repeats: "...)
			dst = strconv.AppendInt(dst, ev.Repeats, 10)
			dst = append(dst, ", last_ts: "...)
			dst = append(dst, ev.LastTS...)
			dst = append(dst, ')')
		}
	case KindProbe:
		dst = append(dst, '(')
		dst = AppendEscaped(dst, ev.Loc)
		if ev.RetFrom != nil {
			dst = append(dst, " <- "...)
			dst = AppendEscaped(dst, ev.RetFrom)
		}
		dst = append(dst, ')')
		if !ev.ArgsOK {
			dst = append(dst, ' ')
			return AppendEscaped(dst, ev.Text)
		}
		for i := range ev.Args {
			a := &ev.Args[i]
			dst = append(dst, ' ')
			dst = AppendEscaped(dst, a.Name)
			dst = append(dst, '=')
			switch a.Kind {
			case ValueString:
				dst = append(dst, '"')
				dst = appendEscaped(dst, a.Value, true)
				dst = append(dst, '"')
			case ValueArray:
				dst = append(dst, '{')
				dst = AppendEscaped(dst, a.Value)
				dst = append(dst, '}')
			default:
				dst = AppendEscaped(dst, a.Value)
			}
		}
	case KindStack, KindUserStack:
		if ev.Kind == KindStack {
			dst = append(dst, "<stack trace>"...)
		} else {
			dst = append(dst, "<user stack trace>"...)
		}
		for _, f := range ev.Frames {
			dst = append(dst, '\n')
			dst = append(dst, frameIndent...)
			dst = AppendEscaped(dst, f)
		}
	case KindGraph:
		g := &ev.Graph
		if g.Duration != nil {
			dst = appendPadLeft(dst, g.Duration, 10)
			dst = append(dst, " us |"...)
		} else {
			dst = append(dst, "              |"...)
		}
		dst = appendGraphIndent(append(dst, "  "...), g.Depth, g.Depth)
		switch g.Type {
		case GraphExit:
			dst = append(dst, '}')
			if g.Func != nil {
				dst = append(dst, " /* "...)
				dst = AppendEscaped(dst, g.Func)
				dst = append(dst, " */"...)
			}
		case GraphEntry:
			dst = AppendEscaped(dst, g.Func)
			dst = append(dst, "() {"...)
		default:
			dst = AppendEscaped(dst, g.Func)
			dst = append(dst, "();"...)
		}
		if g.Comment != nil {
			dst = append(dst, " /* "...)
			dst = AppendEscaped(dst, g.Comment)
			dst = append(dst, " */"...)
		}
	case KindLost:
		if ev.Lost < 0 {
			dst = append(dst, "an uncounted number of events lost on this CPU"...)
		} else {
			dst = strconv.AppendInt(dst, ev.Lost, 10)
			dst = append(dst, " events lost on this CPU"...)
		}
	default:
		dst = AppendEscaped(dst, ev.Text)
	}
	return dst
}

func appendSymText(dst []byte, s Sym) []byte {
	dst = AppendEscaped(dst, s.Name)
	if s.Offset != nil {
		dst = append(dst, '+')
		dst = AppendEscaped(dst, s.Offset)
	}
	if s.Module != nil {
		dst = append(dst, " ["...)
		dst = AppendEscaped(dst, s.Module)
		dst = append(dst, ']')
	}
	if s.Addr != nil {
		dst = append(dst, " <"...)
		dst = AppendEscaped(dst, s.Addr)
		dst = append(dst, '>')
	}
	return dst
}

// appendPadLeft appends s (safe ASCII: digits and dots) right-aligned in width columns.
func appendPadLeft(dst, s []byte, width int) []byte {
	dst = appendSpaces(dst, width-len(s))
	return append(dst, s...)
}

const spaces = "                                                                "

func appendSpaces(dst []byte, n int) []byte {
	for n > 0 {
		k := min(n, len(spaces))
		dst = append(dst, spaces[:k]...)
		n -= k
	}
	return dst
}
