package tui

import (
	"bytes"
	"strconv"

	"github.com/ftctl/ftctl/stream"
)

// Row is one event as the console keeps it: owned, compact, and already made safe for the
// terminal where it is shown as text. The decoder's Event points into its input and is valid
// only during the call; a Row is what is left of it to display, search, filter and count.
type Row struct {
	Seq  uint64 // position in the stream, from 1: the ring and the views address rows by it
	Kind stream.Kind
	CPU  int16 // -1 when the line did not say
	PID  int32
	TGID int32
	// Comm, Name and Func are the raw bytes of the trace (interned, shared between rows, never
	// written to): what filters and counts compare. They are escaped when shown.
	Comm []byte // nil for lines without a context
	Name []byte // the probe's or tracepoint's name (KindProbe, KindPrint)
	Func []byte // the function (KindFunction; KindGraph when the line names it)
	Lost int64  // KindLost: events lost (-1: not counted)
	// text holds the timestamp then the detail column, both escaped (stream.AppendEscaped):
	// one allocation per row. The detail of an event of a recording's instance buffer starts
	// with the buffer's name and ": ".
	text  string
	tsLen uint8
}

// TS is the timestamp as printed (escaped).
func (r *Row) TS() string { return r.text[:r.tsLen] }

// Detail is what the event says (escaped, on one line).
func (r *Row) Detail() string { return r.text[r.tsLen:] }

// HasContext says whether the line had its comm-pid/cpu columns.
func (r *Row) HasContext() bool { return r.Comm != nil }

// event is a stream.Event view of the row, for stream.Filter (which only reads the fields set
// here). It points into the row; nothing is copied.
func (r *Row) event(ev *stream.Event) {
	*ev = stream.Event{Kind: r.Kind, Name: r.Name, Comm: r.Comm, PID: int(r.PID), TGID: int(r.TGID),
		CPU: int(r.CPU), HasContext: r.Comm != nil}
}

// EventName is the row's event column: "function", the probe's or tracepoint's name, "marker"...
func (r *Row) EventName() []byte {
	var ev stream.Event
	r.event(&ev)
	return ev.EventName()
}

// TopKey is what the Top view counts the row under in "function/event" mode: the function for
// function (and function_graph) events, else the event's name.
func (r *Row) TopKey() []byte {
	if r.Func != nil {
		return r.Func
	}
	return r.EventName()
}

// maxInterned bounds the intern table: past it, the table starts over (rows keep their slices).
const maxInterned = 1 << 16

// ingester turns events into rows (emit, for the stream engine; feed, for trace_pipe text):
// the stream package's escaping, plus interning of the names that repeat (comms, event and
// function names). It runs in the source's goroutine, never in Update.
type ingester struct {
	dec     stream.Decoder
	intern  map[string][]byte
	scratch []byte
	rows    []Row
}

func newIngester() *ingester { return &ingester{intern: make(map[string][]byte)} }

func (g *ingester) internBytes(b []byte) []byte {
	if b == nil {
		return nil
	}
	if v, ok := g.intern[string(b)]; ok {
		return v
	}
	if len(g.intern) >= maxInterned {
		g.intern = make(map[string][]byte)
	}
	v := bytes.Clone(b)
	if v == nil {
		v = []byte{}
	}
	g.intern[string(v)] = v
	return v
}

// feed decodes p (whole reads of trace_pipe text; a partial last line waits for the next
// call) and returns the rows it made, in a slice the caller owns.
func (g *ingester) feed(p []byte) []Row {
	g.dec.Feed(p, g.emit)
	g.dec.Flush(g.emit) // the kernel prints an entry within one read: nothing is left pending
	return g.take()
}

// take returns the rows emit made since the last take, in a slice the caller owns.
func (g *ingester) take() []Row {
	rows := g.rows
	g.rows = nil
	return rows
}

var (
	stackNewline = []byte("\n        => ")
	stackJoin    = []byte(" => ")
)

func (g *ingester) emit(ev *stream.Event) error {
	r := Row{Kind: ev.Kind, CPU: int16(ev.CPU), PID: int32(ev.PID), TGID: int32(ev.TGID), Lost: ev.Lost}
	if ev.HasContext || ev.Comm != nil {
		r.Comm = g.internBytes(ev.Comm)
		if r.Comm == nil {
			r.Comm = []byte{}
		}
	}
	switch ev.Kind {
	case stream.KindProbe, stream.KindPrint:
		r.Name = g.internBytes(ev.Name)
	case stream.KindFunction:
		r.Func = g.internBytes(ev.Func.Name)
	case stream.KindGraph:
		r.Func = g.internBytes(ev.Graph.Func)
	}
	b := stream.AppendEscaped(g.scratch[:0], ev.TS)
	if len(b) > 255 {
		b = b[:255]
	}
	r.tsLen = uint8(len(b))
	if len(ev.Buffer) > 0 { // a recording's instance buffer (trace-cmd record -B NAME)
		b = stream.AppendEscaped(b, ev.Buffer)
		b = append(b, ": "...)
	}
	if ev.Kind == stream.KindRaw && !ev.HasContext {
		b = stream.AppendEscaped(b, ev.Text)
	} else {
		b = stream.AppendDetail(b, ev)
	}
	// A stack trace's frames go on one line here: " => f1 => f2".
	if ev.Kind == stream.KindStack || ev.Kind == stream.KindUserStack {
		b = bytes.ReplaceAll(b, stackNewline, stackJoin)
	}
	g.scratch = b
	r.text = string(b)
	g.rows = append(g.rows, r)
	return nil
}

// appendTask appends "comm-pid" (and " (tgid)"), escaped.
func appendTask(dst []byte, r *Row) []byte {
	if r.Comm == nil {
		return dst
	}
	dst = stream.AppendEscaped(dst, r.Comm)
	dst = append(dst, '-')
	dst = strconv.AppendInt(dst, int64(r.PID), 10)
	if r.TGID > 0 {
		dst = append(dst, " ("...)
		dst = strconv.AppendInt(dst, int64(r.TGID), 10)
		dst = append(dst, ')')
	}
	return dst
}
