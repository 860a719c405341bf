package stream

// Kind says what a trace line (or group of lines) was.
type Kind uint8

// The kinds of event the parser knows. Every line becomes one of them: a line that is not
// understood is KindRaw, kept whole, never dropped.
const (
	KindRaw       Kind = iota // not understood: Text holds the line (or, with a context, its body)
	KindFunction              // the function tracer: Func, Parent (Repeats with func-no-repeats)
	KindProbe                 // kprobe, kretprobe, fprobe, eprobe...: Name, Loc (RetFrom), Args
	KindMarker                // a trace_marker write: Text
	KindPrint                 // any other "NAME: text" line (tracepoints, trace_printk): Name, Text
	KindStack                 // "<stack trace>" and its " => " frames: Frames
	KindUserStack             // "<user stack trace>" and its frames
	KindGraph                 // a function_graph line: Graph
	KindLost                  // "CPU:N [LOST M EVENTS]": CPU, Lost
)

// String is the kind's name in JSON output, for the kinds whose event name is fixed.
func (k Kind) String() string {
	switch k {
	case KindFunction:
		return "function"
	case KindProbe:
		return "probe"
	case KindMarker:
		return "marker"
	case KindPrint:
		return "print"
	case KindStack:
		return "stack"
	case KindUserStack:
		return "user_stack"
	case KindGraph:
		return "graph"
	case KindLost:
		return "lost"
	}
	return "raw"
}

// Sym is a code address as the kernel printed it: "vfs_read", "vfs_read+0x4/0x1a0",
// "vfs_read <ffffffff812345>", "dummy_xmit [dummy]", or "0xffffffffc0522083" when the kernel
// found no symbol. Empty parts are nil.
type Sym struct {
	Name   []byte // the symbol (or the address the kernel printed instead)
	Offset []byte // "0x4/0x1a0" (sym-offset)
	Module []byte // "dummy" for "name [dummy]"
	Addr   []byte // "ffffffff812345" (sym-addr)
}

// ValueKind classifies a probe argument's value.
type ValueKind uint8

// Probe argument values, as the kernel prints them (kernel/trace/trace_probe.c print_type_*).
const (
	ValueOther  ValueKind = iota // anything else, kept as printed: "0x1f" (x types), "'c'", "sym+0x0/0x10"
	ValueNumber                  // a decimal integer (u and s types, bitfields)
	ValueString                  // a string, ustring, $comm: Text is the content without its quotes
	ValueFault                   // "(fault)": the kernel could not read the memory
	ValueArray                   // "{1,2,3}": Text is what is inside the braces; see Elements
)

// Arg is one "name=value" of a probe event.
type Arg struct {
	Name  []byte
	Kind  ValueKind
	Value []byte
}

// GraphType is the shape of a function_graph line.
type GraphType uint8

// function_graph line shapes (kernel/trace/trace_functions_graph.c).
const (
	GraphEntry GraphType = iota + 1 // "func() {": a call with callees; its duration comes with the "}"
	GraphExit                       // "}" (or "} /* func */")
	GraphCall                       // "func();": a leaf call, with its duration
)

// Graph is what a function_graph line says.
type Graph struct {
	Type     GraphType
	Depth    int    // nesting depth, 0 for the outermost function
	Func     []byte // the function (exits: only when the kernel named it in a comment)
	Duration []byte // microseconds as printed ("1.382"), nil when the line has none
	Comment  []byte // an exit's "/* ... */" text that is not the function's name (e.g. a return value)

	// Decoded from trace_pipe_raw, zero from trace_pipe's text:
	Stamp             uint64 // the record's time stamp, ns of the trace clock
	CallTime, RetTime uint64 // exits: when the call began and returned, ns of the trace clock
	Overrun           uint32 // exits: calls lost past the depth of the kernel's return stack
	Retval            uint64 // exits: the return value, when HasRetval (funcgraph-retval kernels)
	HasRetval         bool
}

// Event is one parsed event. The parser reuses one Event and the byte slices point into its
// input: both are valid only until the parser is called again. Copy what you keep.
type Event struct {
	Kind Kind

	// The context columns ("comm-pid (tgid) [cpu] flags timestamp: "), when the line had them.
	// function_graph lines carry some of them in their own columns (CPU, and Comm/PID/TS with
	// the funcgraph-proc and funcgraph-abstime options).
	HasContext bool
	Comm       []byte
	PID        int
	TGID       int    // 0: no tgid column (record-tgid off); -1: "(-------)", the kernel did not know it
	CPU        int    // -1 when the line does not say
	Flags      []byte // irq-info flags, e.g. "d..2." (nil with irq-info off)
	TS         []byte // the timestamp as printed: "1234.567890", or an integer for counter-like clocks

	Name []byte // KindProbe, KindPrint: the event's name; KindMarker: the printing symbol

	// KindFunction
	Func, Parent Sym
	Repeats      int64  // func-no-repeats: the call repeated this many more times...
	LastTS       []byte // ...the last of them at this time

	// KindProbe: "(Loc)" or, for return probes, "(Loc <- RetFrom)": Loc is where the function
	// returned to and RetFrom the probed function.
	Loc, RetFrom []byte
	Args         []Arg
	ArgsOK       bool // the arguments parsed; if not, Text holds them as printed

	Text []byte // KindMarker, KindPrint, KindRaw; KindProbe when !ArgsOK
	// Fields are a tracepoint's own fields, raw (KindPrint, and KindRaw for syscalls), when
	// it was decoded from trace_pipe_raw; empty from trace_pipe, whose text has no fields.
	Fields []Arg
	Frames [][]byte // KindStack, KindUserStack: the frames, outermost last, as printed
	Graph  Graph    // KindGraph
	Lost   int64    // KindLost: events lost, -1 when the kernel did not count them

	Line []byte // the line as read (for stacks: every line, newlines included)

	// Buffer is the trace array a recording's event was recorded in ("" for the top level, else
	// the instance's name), set by a FileSource only for a file holding instances' buffers
	// (trace-cmd record -B NAME); nil otherwise.
	Buffer []byte
}

// EventName is the value of the JSON "event" key: "function", the probe's or the tracepoint's
// own name, "marker", "stack", "user_stack", "graph", "lost", or "raw".
func (e *Event) EventName() []byte {
	switch e.Kind {
	case KindProbe, KindPrint:
		return e.Name
	}
	return kindNames[e.Kind]
}

var kindNames = func() [KindLost + 1][]byte {
	var n [KindLost + 1][]byte
	for k := range n {
		n[k] = []byte(Kind(k).String())
	}
	return n
}()

func (e *Event) reset() {
	args, frames, fields := e.Args[:0], e.Frames[:0], e.Fields[:0]
	*e = Event{} // cleared in place (a composite literal is built aside, then copied)
	e.Args, e.Frames, e.Fields, e.CPU = args, frames, fields, -1
}
