package stream

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/ftctl/ftctl/tracefs"
)

// BinaryDecoder turns ring-buffer pages (per_cpu/cpuN/trace_pipe_raw) into the same events the
// line parser makes of trace_pipe's text, formatting them as the kernel would have: the context
// (comm from the kernel's saved_cmdlines, irq flags, the timestamp in microseconds), functions
// by name, kprobe and kretprobe locations and arguments, trace_marker text, stack traces. The
// kernel then spends nothing on formatting, which is most of what reading trace_pipe costs.
//
// It knows the events it was given formats for (Add) and the layouts of their kinds: ftrace's
// function, print and kernel_stack, and kprobes and kretprobes whose arguments have the types
// Supported accepts. An event it has no format for, or of another kind, becomes a KindPrint
// event whose text lists the fields as "name=value" (numbers in decimal, strings quoted):
// still typed, never dropped, but not what trace_pipe would have printed.
type BinaryDecoder struct {
	Layout  tracefs.PageLayout
	Symbols *Symbols
	// Comm gives a pid's comm as the kernel's saved_cmdlines has it, nil when it has none.
	Comm func(pid int) []byte
	// PrintParent: the print-parent option (a function event shows its caller).
	PrintParent bool
	// SymOffset: the sym-offset option (functions and stack frames as "name+0xoff/0xsize").
	SymOffset bool
	// TGID, when set (the record-tgid option), gives a pid's tgid as saved_tgids has it, 0
	// when it has none.
	TGID func(pid int) int
	// Unknown is called once for an event type without a format; it may return one.
	Unknown func(id int) *tracefs.Format
	// Skip, when set, is asked for each event's pid before it is decoded: an event it says
	// true to is neither decoded nor emitted (ftctl's own threads' events).
	Skip func(pid int) bool
	// HashPtr: the hash-ptr option is on (the default): the kernel hashes what %p prints, so
	// a tracepoint printing a bare %p is not decoded (Add says so). Set it before Add.
	HashPtr bool
	// Dynamic gives the dynamic events' kinds by name, as dynamic_events lists them ("p",
	// "r", "e" for an eprobe...; tracefs.FS.DynamicEvents). Set it before Add.
	Dynamic map[tracefs.EventName]string
	// Attached gives each event probe's attached event ("sched.sched_switch", which it prints
	// in place of a location; tracefs.FS.EprobeAttachments). Set it before Add.
	Attached map[tracefs.EventName]string
	// Enum, when set, gives the value of an enumerator a print fmt names because the kernel's
	// eval map left it (tcp_send_reset's TCP_ESTABLISHED; EnumResolver: the kernel's BTF).
	// Set it before Add.
	Enum func(name string) (tracefs.EnumConst, bool)
	// Lines, when set, makes function_graph's lines of its records, as the kernel prints them
	// (graphlines.go): ftctl stream and trace. Nil: each record is an event (call trees).
	Lines *GraphLines

	events map[int]*binEvent
	ev     Event
	buf    []byte // the current event's formatted bytes: the Event's slices point into it
	recs   [][]rec
	heads  []int
	pf     pfEval
	// Lines: each CPU's printer state, the events and text of what is printed beside the
	// calls, the interrupt entry text's bounds (of irqSyms)
	gcpu             []graphCPU
	lev              Event
	lbuf             []byte
	irqSyms          *Symbols
	irqStart, irqEnd uint64
}

// rec is one event of a page, or the loss before a page (data nil).
type rec struct {
	ts   uint64
	data []byte
	lost int64
}

// CPUPage is one page read from a CPU's trace_pipe_raw.
type CPUPage struct {
	CPU  int
	Data []byte
}

// binKind is how an event type is decoded.
type binKind uint8

const (
	binGeneric binKind = iota
	binFunction
	binPrint
	binStack
	binKprobe
	binKretprobe
	binEprobe     // trace_eprobe.c print_eprobe_event: "(SYSTEM.EVENT)" and the arguments
	binTracepoint // printed by its print fmt (printfmt*.go)
	binSysEnter   // syscalls:sys_enter_*: print_syscall_enter's "sys_NAME(arg: %lx, ...)"
	binSysExit    // syscalls:sys_exit_*: print_syscall_exit's "sys_NAME -> 0x%lx"
	binGraphEntry // ftrace:funcgraph_entry: a call of function_graph
	binGraphExit  // ftrace:funcgraph_exit: its return, with when it was called
)

type binEvent struct {
	kind   binKind
	format *tracefs.Format
	name   []byte
	ip     *tracefs.Field // function, print, kprobe
	parent *tracefs.Field // function: parent_ip; kretprobe: the return address
	buf    *tracefs.Field // print: buf; kernel_stack: caller
	args   []binArg
	pf     *printFmt  // tracepoints
	sys    []byte     // syscalls: "sys_NAME"
	loc    []byte     // eprobes: the attached event, "SYSTEM.EVENT"
	fields []binField // tracepoints, syscalls: how each field shows in JSON
	user   bool       // a uprobe or uretprobe: user addresses, printed "0x%lx"
	// funcgraph_entry and funcgraph_exit: depth; exit: calltime, rettime, overrun, retval
	// (retval only where the kernel records it: CONFIG_FUNCTION_GRAPH_RETVAL)
	depth, calltime, rettime, overrun, retval *tracefs.Field
}

// binField is how one of a tracepoint's fields shows in JSON (appendEventFields), decided
// when its format is loaded.
type binField struct {
	field   *tracefs.Field
	name    []byte
	kind    ValueKind // ValueString, ValueArray, ValueNumber, ValueOther (bytes in hex)
	dynamic bool      // __data_loc, __rel_loc
	elem    int       // ValueArray: the elements' size
}

// newBinFields decides how each field shows: char arrays and dynamic strings as strings,
// other arrays by element, integers as numbers, anything else as hex bytes.
func newBinFields(f *tracefs.Format) []binField {
	out := make([]binField, len(f.Fields))
	for i := range f.Fields {
		fl := &f.Fields[i]
		b := binField{field: fl, name: []byte(fl.Name)}
		b.dynamic = strings.HasPrefix(fl.Type, "__data_loc") || strings.HasPrefix(fl.Type, "__rel_loc")
		elem := strings.TrimSpace(strings.TrimSuffix(strings.TrimPrefix(strings.TrimPrefix(fl.Type, "__data_loc "), "__rel_loc "), "[]"))
		switch {
		case b.dynamic && fl.Size != 4:
			b.kind = ValueOther
		case (b.dynamic || fl.Array != 0) && elem == "char":
			b.kind = ValueString
		case b.dynamic || fl.Array != 0:
			b.kind, b.elem = ValueArray, 1
			if fl.Array > 0 {
				b.elem = fl.Size / fl.Array
			} else if t, ok := pfTypes[elem]; ok {
				b.elem = int(t.size)
			}
			if b.elem != 1 && b.elem != 2 && b.elem != 4 && b.elem != 8 {
				b.elem = 1
			}
		case fl.Size == 1 || fl.Size == 2 || fl.Size == 4 || fl.Size == 8:
			b.kind = ValueNumber
		default:
			b.kind = ValueOther
		}
		out[i] = b
	}
	return out
}

// binArg is one probe argument: its field and how the kernel prints it.
type binArg struct {
	field *tracefs.Field
	name  []byte
	print argPrint
	count int // array elements, 0 for a scalar
}

type argPrint uint8

const (
	argUnsigned argPrint = iota + 1
	argSigned
	argHex
	argChar
	argString
	argSymbol
)

// probeArgPrint maps the kernel's print_type_* formats (kernel/trace/trace_probe.c) to printers.
var probeArgPrint = map[string]argPrint{
	"%u": argUnsigned, "%Lu": argUnsigned, "%llu": argUnsigned,
	"%d": argSigned, "%Ld": argSigned, "%lld": argSigned,
	"0x%x": argHex, "0x%Lx": argHex, "0x%llx": argHex,
	"'%c'": argChar,
	`"%s"`: argString,
	"%pS":  argSymbol,
}

// Add registers an event type's format. It says why the event would not print as trace_pipe
// prints it (it then decodes it field by field), or nil.
func (d *BinaryDecoder) Add(f *tracefs.Format) error {
	if d.events == nil {
		d.events = map[int]*binEvent{}
	}
	name := tracefs.EventName{System: f.System, Event: f.Name}
	e, err := newBinEvent(f, d.HashPtr, d.Dynamic[name], d.Attached[name], d.Enum)
	d.events[f.ID] = e
	return err
}

// CheckFormat says why the binary reader would not print events of this format as the kernel
// prints them, nil when it would; hashPtr is the trace array's hash-ptr option, dynamic the
// event's kind in dynamic_events ("" for a tracepoint), enum what BinaryDecoder.Enum would be
// (nil: none).
func CheckFormat(f *tracefs.Format, hashPtr bool, dynamic string, enum func(string) (tracefs.EnumConst, bool)) error {
	_, err := newBinEvent(f, hashPtr, dynamic, "", enum)
	return err
}

// EnumResolver is a BinaryDecoder.Enum from the kernel's BTF, read on the first name asked
// (never, unless an event's print fmt names an enumerator the kernel left). Without BTF, no
// name has a value.
func EnumResolver(fs *tracefs.FS) func(string) (tracefs.EnumConst, bool) {
	b := fs.BTF()
	return func(name string) (tracefs.EnumConst, bool) {
		c, ok, err := b.Enum(name)
		return c, ok && err == nil
	}
}

// newBinEvent: attached is an eprobe's attached event as dynamic_events lists it, "" when
// unknown.
func newBinEvent(f *tracefs.Format, hashPtr bool, dynamic, attached string, enum func(string) (tracefs.EnumConst, bool)) (*binEvent, error) {
	e := &binEvent{format: f, name: []byte(f.Name)}
	field := func(names ...string) bool {
		for _, n := range names {
			if f.Field(n) == nil {
				return false
			}
		}
		return true
	}
	switch {
	case f.System == "ftrace" && f.Name == "function" && field("ip", "parent_ip"):
		e.kind, e.ip, e.parent = binFunction, f.Field("ip"), f.Field("parent_ip")
	case f.System == "ftrace" && f.Name == "print" && field("ip", "buf"):
		e.kind, e.ip, e.buf = binPrint, f.Field("ip"), f.Field("buf")
	case f.System == "ftrace" && f.Name == "kernel_stack" && field("caller"):
		e.kind, e.buf = binStack, f.Field("caller")
	case f.System == "ftrace" && f.Name == "funcgraph_entry" && field("func", "depth"):
		e.kind, e.ip, e.depth = binGraphEntry, f.Field("func"), f.Field("depth")
		return e, errors.New("function_graph's lines are formatted by the kernel only")
	case f.System == "ftrace" && f.Name == "funcgraph_exit" && field("func", "depth", "calltime", "rettime"):
		e.kind, e.ip, e.depth = binGraphExit, f.Field("func"), f.Field("depth")
		e.calltime, e.rettime, e.overrun, e.retval = f.Field("calltime"), f.Field("rettime"), f.Field("overrun"), f.Field("retval")
		// function_graph's lines are the kernel's own (a leaf's entry and exit on one line,
		// read ahead): the events decode, but do not print as trace_pipe prints them
		return e, errors.New("function_graph's lines are formatted by the kernel only")
	case field("__probe_ip"):
		e.kind, e.ip, e.user = binKprobe, f.Field("__probe_ip"), dynamic == "up"
		return e, e.probeArgs(f, 1)
	case field("__probe_func", "__probe_ret_ip"):
		e.kind, e.ip, e.parent, e.user = binKretprobe, f.Field("__probe_func"), f.Field("__probe_ret_ip"), dynamic == "ur"
		return e, e.probeArgs(f, 2)
	case f.System == "ftrace":
		return e, fmt.Errorf("ftrace event %s is not decoded", f.Name)
	case f.System == "syscalls" && strings.HasPrefix(f.Name, "sys_enter_") && syscallFields(f):
		e.kind, e.sys = binSysEnter, []byte("sys_"+strings.TrimPrefix(f.Name, "sys_enter_"))
	case f.System == "syscalls" && strings.HasPrefix(f.Name, "sys_exit_") && syscallFields(f) && len(f.Fields) == 2 && f.Fields[1].Name == "ret":
		e.kind, e.sys = binSysExit, []byte("sys_"+strings.TrimPrefix(f.Name, "sys_exit_"))
	case f.System == "synthetic" || f.System == "user_events" || dynamic == "s" || dynamic == "u":
		// printed by the kernel's own functions, not by their print fmt
		return e, fmt.Errorf("event %s:%s is a %s event, which ftctl does not decode", f.System, f.Name, f.System)
	case dynamic == "e" && attached != "" && !field("__probe_type"):
		// an eprobe (trace_eprobe.c): print_eprobe_event prints "(SYSTEM.EVENT)" and the
		// arguments as any probe's, not its print fmt (seen on 6.1 and 6.12)
		e.kind, e.loc = binEprobe, []byte(attached)
		return e, e.probeArgs(f, 0)
	case dynamic == "e" || field("__probe_type"):
		// an eprobe whose attached event is unknown, or of the layout before 5.18
		// (__probe_type)
		return e, fmt.Errorf("event %s:%s is an eprobe, which ftctl does not decode", f.System, f.Name)
	default:
		pf, err := parsePrintFmt(f, hashPtr, enum)
		if err != nil {
			return e, fmt.Errorf("event %s:%s %w", f.System, f.Name, err)
		}
		e.kind, e.pf = binTracepoint, pf
	}
	if e.kind == binTracepoint || e.kind == binSysEnter || e.kind == binSysExit {
		e.fields = newBinFields(f)
	}
	return e, nil
}

// syscallFields: __syscall_nr, then arguments of 8 bytes each (struct syscall_trace_enter's
// unsigned long args[], syscall_trace_exit's long ret).
func syscallFields(f *tracefs.Format) bool {
	if len(f.Fields) == 0 || f.Fields[0].Name != "__syscall_nr" {
		return false
	}
	for _, fl := range f.Fields[1:] {
		if fl.Size != 8 || fl.Array != 0 {
			return false
		}
	}
	return true
}

// probeArgs reads the arguments' printers from the print fmt the kernel wrote for the probe
// ("(%lx) a=%u b=0x%Lx s=\"%s\" f={%u,%u}"), in the order of the fields after the first skip.
func (e *binEvent) probeArgs(f *tracefs.Format, skip int) error {
	fmtArgs := f.PrintFmt
	if i := strings.IndexByte(fmtArgs, ')'); i >= 0 && skip > 0 { // an eprobe's has no "(%lx)"
		fmtArgs = fmtArgs[i+1:]
	}
	fields := f.Fields[min(skip, len(f.Fields)):]
	for i := range fields {
		fl := &fields[i]
		want := " " + fl.Name + "="
		if !strings.HasPrefix(fmtArgs, want) {
			e.kind = binGeneric
			return fmt.Errorf("probe %s: argument %s not where its print fmt has it", f.Name, fl.Name)
		}
		fmtArgs = fmtArgs[len(want):]
		end := len(fmtArgs)
		if i+1 < len(fields) {
			end = strings.Index(fmtArgs, " "+fields[i+1].Name+"=")
			if end < 0 {
				e.kind = binGeneric
				return fmt.Errorf("probe %s: argument %s not in its print fmt", f.Name, fields[i+1].Name)
			}
		}
		spec := fmtArgs[:end]
		fmtArgs = fmtArgs[end:]
		a := binArg{field: fl, name: []byte(fl.Name)}
		if strings.HasPrefix(spec, "{") && strings.HasSuffix(spec, "}") {
			elems := strings.Split(spec[1:len(spec)-1], ",")
			a.count = len(elems)
			spec = elems[0]
			if fl.Size%a.count != 0 {
				e.kind = binGeneric
				return fmt.Errorf("probe %s: array %s of %d bytes in %d elements", f.Name, fl.Name, fl.Size, a.count)
			}
		}
		p, ok := probeArgPrint[spec]
		if !ok || (p == argString && a.count > 0) {
			e.kind = binGeneric
			return fmt.Errorf("probe %s: argument %s prints as %q, which ftctl does not decode", f.Name, fl.Name, spec)
		}
		a.print = p
		e.args = append(e.args, a)
	}
	return nil
}

// Feed decodes a batch of pages and emits their events, the CPUs' merged in time order (each
// CPU's pages come in order; as trace_pipe does, an event read in a later batch may be older
// than one emitted before). A page's lost events come before its events, as a KindLost event.
func (d *BinaryDecoder) Feed(pages []CPUPage, emit Emit) error {
	cpus := 0
	for _, p := range pages {
		cpus = max(cpus, p.CPU+1)
	}
	cpus = max(cpus, d.heldCPUs())
	for len(d.recs) < cpus {
		d.recs = append(d.recs, nil)
	}
	for i := range d.recs {
		d.recs[i] = d.recs[i][:0]
	}
	d.takeHeld()
	for _, pg := range pages {
		p, err := ParsePage(d.Layout, pg.Data)
		if err != nil {
			return fmt.Errorf("cpu %d: %w", pg.CPU, err)
		}
		r := d.recs[pg.CPU]
		if p.Missed {
			r = append(r, rec{ts: p.TS, lost: p.Lost})
		}
		err = p.Events(func(ts uint64, data []byte) error {
			r = append(r, rec{ts: ts, data: data})
			return nil
		})
		d.recs[pg.CPU] = r
		if err != nil {
			return fmt.Errorf("cpu %d: %w", pg.CPU, err)
		}
	}
	d.heads = d.heads[:0]
	for range cpus {
		d.heads = append(d.heads, 0)
	}
	for {
		best := -1
		for c := range cpus {
			if d.heads[c] < len(d.recs[c]) && (best < 0 || d.recs[c][d.heads[c]].ts < d.recs[best][d.heads[best]].ts) {
				best = c
			}
		}
		if best < 0 {
			return nil
		}
		r := &d.recs[best][d.heads[best]]
		d.heads[best]++
		if err := d.emitRec(best, r, emit); err != nil {
			return err
		}
	}
}

func (d *BinaryDecoder) emitRec(cpu int, r *rec, emit Emit) error {
	ev := &d.ev
	if r.data == nil {
		ev.reset()
		ev.Kind, ev.CPU, ev.Lost = KindLost, cpu, r.lost
		return emit(ev)
	}
	if d.Skip != nil && len(r.data) >= 8 && d.Skip(int(int32(binary.LittleEndian.Uint32(r.data[4:])))) {
		return nil
	}
	if d.Lines != nil && len(r.data) >= 8 {
		return d.emitLine(cpu, r, emit, true)
	}
	d.Decode(ev, cpu, r.ts, r.data) // it resets ev
	return emit(ev)
}

// Decode fills ev with one event: its CPU, its time stamp in nanoseconds and its data (the
// trace entry). ev's slices point into d's buffer until the next call.
func (d *BinaryDecoder) Decode(ev *Event, cpu int, ts uint64, data []byte) {
	ev.reset()
	ev.CPU = cpu
	if len(data) < 8 {
		ev.Kind = KindRaw
		ev.Text = []byte("(an event shorter than its header)")
		return
	}
	d.buf = d.buf[:0]
	typ := int(binary.LittleEndian.Uint16(data))
	flags, pc := data[2], data[3]
	pid := int(int32(binary.LittleEndian.Uint32(data[4:])))

	ev.HasContext = true
	ev.PID = pid
	if d.TGID != nil {
		ev.TGID = d.TGID(pid)
		if ev.TGID == 0 {
			ev.TGID = -1 // "(-------)"
		}
	}
	start := len(d.buf)
	d.buf = d.appendComm(d.buf, pid)
	ev.Comm = d.buf[start:]
	start = len(d.buf)
	d.buf = appendLatFlags(d.buf, flags, pc)
	ev.Flags = d.buf[start:]
	start = len(d.buf)
	d.buf = appendMicros(d.buf, ts)
	ev.TS = d.buf[start:]

	e, known := d.events[typ]
	if !known && d.Unknown != nil {
		if f := d.Unknown(typ); f != nil {
			d.Add(f) // an error only means it decodes field by field
			e = d.events[typ]
		}
	}
	if e == nil {
		if d.events == nil {
			d.events = map[int]*binEvent{}
		}
		d.events[typ] = nil // Unknown is asked once
		ev.Kind = KindRaw
		start = len(d.buf)
		d.buf = append(d.buf, "event type "...)
		d.buf = strconv.AppendInt(d.buf, int64(typ), 10)
		d.buf = append(d.buf, " (no format known)"...)
		ev.Text = d.buf[start:]
		return
	}
	switch e.kind {
	case binFunction:
		ev.Kind = KindFunction
		d.sym(&ev.Func, fieldUint(e.ip, data))
		if parent := fieldUint(e.parent, data); d.PrintParent && parent != 0 {
			d.sym(&ev.Parent, parent)
		}
	case binPrint:
		start = len(d.buf)
		d.buf = d.appendIP(d.buf, fieldUint(e.ip, data), false)
		ev.Name = d.buf[start:]
		ev.Kind = KindPrint
		if bytes.Equal(ev.Name, markSym) {
			ev.Kind = KindMarker
		}
		text := cString(tail(data, e.buf.Offset))
		ev.Text = bytes.TrimSuffix(text, []byte{'\n'})
	case binStack:
		ev.Kind = KindStack
		b := tail(data, e.buf.Offset)
		for len(b) >= 8 {
			addr := binary.LittleEndian.Uint64(b)
			b = b[8:]
			if addr == ^uint64(0) {
				break
			}
			start = len(d.buf)
			if addr == ftraceTrampolineMarker {
				d.buf = append(d.buf, "[FTRACE TRAMPOLINE]"...)
			} else {
				d.buf = d.appendIP(d.buf, addr, d.SymOffset)
			}
			ev.Frames = append(ev.Frames, d.buf[start:])
		}
	case binGraphEntry, binGraphExit:
		ev.Kind = KindGraph
		g := &ev.Graph
		g.Type, g.Stamp = GraphEntry, ts
		g.Depth = int(int32(fieldUint(e.depth, data)))
		start = len(d.buf)
		d.buf = d.appendIP(d.buf, fieldUint(e.ip, data), false)
		g.Func = d.buf[start:]
		if e.kind == binGraphExit {
			g.Type = GraphExit
			g.CallTime, g.RetTime = fieldUint(e.calltime, data), fieldUint(e.rettime, data)
			if e.overrun != nil {
				g.Overrun = uint32(fieldUint(e.overrun, data))
			}
			if e.retval != nil {
				g.Retval, g.HasRetval = fieldUint(e.retval, data), true
			}
			start = len(d.buf)
			d.buf = appendGraphMicros(d.buf, g.RetTime-g.CallTime)
			g.Duration = d.buf[start:]
		}
	case binKprobe, binKretprobe:
		ev.Kind = KindProbe
		ev.Name = e.name
		start = len(d.buf)
		if e.user { // print_uprobe_event: "(0x%lx)", "(0x%lx <- 0x%lx)": the return address first
			if e.kind == binKretprobe {
				d.buf = strconv.AppendUint(append(d.buf, "0x"...), fieldUint(e.parent, data), 16)
				ev.Loc = d.buf[start:]
				start = len(d.buf)
			}
			d.buf = strconv.AppendUint(append(d.buf, "0x"...), fieldUint(e.ip, data), 16)
			if e.kind == binKretprobe {
				ev.RetFrom = d.buf[start:]
			} else {
				ev.Loc = d.buf[start:]
			}
		} else if e.kind == binKretprobe {
			d.buf = d.appendIP(d.buf, fieldUint(e.parent, data), true)
			ev.Loc = d.buf[start:]
			start = len(d.buf)
			d.buf = d.appendIP(d.buf, fieldUint(e.ip, data), false)
			ev.RetFrom = d.buf[start:]
		} else {
			d.buf = d.appendIP(d.buf, fieldUint(e.ip, data), true)
			ev.Loc = d.buf[start:]
		}
		ev.ArgsOK = true
		for i := range e.args {
			d.appendArg(ev, &e.args[i], data)
		}
	case binEprobe:
		ev.Kind = KindProbe
		ev.Name = e.name
		ev.Loc = e.loc
		ev.ArgsOK = true
		for i := range e.args {
			d.appendArg(ev, &e.args[i], data)
		}
	case binTracepoint, binSysEnter, binSysExit:
		// "name: text" as trace_raw_output_prep and the event's print fmt write it (syscalls:
		// their own lines), then read as the line parser reads trace_pipe's, so that both
		// readers make the same event of it
		start = len(d.buf)
		d.buf = d.appendTracepoint(d.buf, e, data)
		// a format ending in "\n" (6.1's exit_mmap) prints an empty line after the event
		d.buf = bytes.TrimSuffix(d.buf, []byte{'\n'})
		parseBody(ev, d.buf[start:])
		d.appendEventFields(ev, e.fields, data)
	default:
		ev.Kind = KindPrint
		ev.Name = e.name
		start = len(d.buf)
		d.buf = appendFields(d.buf, e.format, data)
		ev.Text = d.buf[start:]
	}
}

// appendTracepoint appends what the kernel prints after the context for a tracepoint.
func (d *BinaryDecoder) appendTracepoint(dst []byte, e *binEvent, data []byte) []byte {
	switch e.kind {
	case binSysEnter: // print_syscall_enter (kernel/trace/trace_syscalls.c)
		dst = append(dst, e.sys...)
		dst = append(dst, '(')
		for i, f := range e.format.Fields[1:] {
			if i > 0 {
				dst = append(dst, ", "...)
			}
			dst = append(dst, f.Name...)
			dst = append(dst, ": "...)
			dst = strconv.AppendUint(dst, fieldUint(&e.format.Fields[i+1], data), 16)
		}
		return append(dst, ')')
	case binSysExit: // print_syscall_exit
		dst = append(dst, e.sys...)
		dst = append(dst, " -> 0x"...)
		return strconv.AppendUint(dst, fieldUint(&e.format.Fields[1], data), 16)
	}
	dst = append(dst, e.name...)
	dst = append(dst, ": "...)
	d.pf.syms = d.Symbols
	return e.pf.appendPrint(dst, &d.pf, data)
}

// appendEventFields gives a tracepoint's own fields to ev (JSON "fields"), as newBinFields
// decided.
func (d *BinaryDecoder) appendEventFields(ev *Event, fields []binField, data []byte) {
	for i := range fields {
		bf := &fields[i]
		fl := bf.field
		a := Arg{Name: bf.name, Kind: bf.kind}
		start := len(d.buf)
		var raw []byte
		field, ok := fieldRaw(fl, data)
		switch {
		case !ok:
			a.Kind = ValueFault
		case bf.dynamic && fl.Size == 4:
			raw = dataLoc(fl, data)
		default:
			raw = field
		}
		switch a.Kind {
		case ValueString:
			d.buf = append(d.buf, cString(raw)...)
		case ValueArray:
			n := bf.elem
			for k := 0; k+n <= len(raw); k += n {
				if k > 0 {
					d.buf = append(d.buf, ',')
				}
				d.buf = strconv.AppendUint(d.buf, loadUint(raw[k:], n), 10)
			}
		case ValueNumber:
			v := loadUint(raw, fl.Size)
			if fl.Signed {
				d.buf = strconv.AppendInt(d.buf, signExtend(v, fl.Size), 10)
			} else {
				d.buf = strconv.AppendUint(d.buf, v, 10)
			}
		case ValueOther:
			d.buf = append(d.buf, "0x"...)
			for _, c := range raw {
				d.buf = appendHex(d.buf, uint64(c), 2)
			}
		}
		a.Value = d.buf[start:]
		ev.Fields = append(ev.Fields, a)
	}
}

// ftraceTrampolineMarker stands for an ftrace trampoline in a recorded stack (6.12;
// FTRACE_TRAMPOLINE_MARKER, INT_MAX): trace_stack_print prints "[FTRACE TRAMPOLINE]".
const ftraceTrampolineMarker = 1<<31 - 1

// appendComm appends a pid's comm as trace_pipe shows it (trace_find_cmdline): "<idle>" for
// pid 0, "<...>" when the kernel kept no comm for it.
func (d *BinaryDecoder) appendComm(dst []byte, pid int) []byte {
	if pid == 0 {
		return append(dst, "<idle>"...)
	}
	if d.Comm != nil {
		if c := d.Comm(pid); c != nil {
			return append(dst, c...)
		}
	}
	return append(dst, "<...>"...)
}

// appendIP prints an address as seq_print_ip_sym does (kernel/trace/trace_output.c): "0" for
// 0; with offset, as %pS ("name+0xoff/0xsize [module]", or "0x..." when no symbol holds it);
// without, the name alone or "0x%08lx".
func (d *BinaryDecoder) appendIP(dst []byte, ip uint64, offset bool) []byte {
	switch {
	case ip == 0:
		return append(dst, '0')
	case !offset:
		return d.Symbols.AppendName(dst, ip)
	case d.Symbols.Kretprobed(ip):
		return append(dst, kretprobedMsg...)
	}
	return d.Symbols.AppendSymOffset(dst, ip)
}

// sym fills a function event's Sym as the line parser would from what appendIP prints: with
// sym-offset, the name, "0xoff/0xsize" and the module apart. One symbol lookup, where
// appendIP makes up to three (two function addresses an event, under a hot filter).
func (d *BinaryDecoder) sym(sym *Sym, ip uint64) {
	start := len(d.buf)
	name, off, size, mod, ok := d.Symbols.Lookup(ip)
	found := ok && len(name) > 0
	kret := ok && off == 0 && kretprobeTrampoline(name)
	switch {
	case d.SymOffset && found && !kret:
		d.buf = append(d.buf, name...)
		sym.Name = d.buf[start:]
		start = len(d.buf)
		d.buf = appendOffsetSize(d.buf, off, size)
		sym.Offset = d.buf[start:]
		if mod != nil {
			sym.Module = mod
		}
		return
	case ip == 0:
		d.buf = append(d.buf, '0')
	case kret:
		d.buf = append(d.buf, kretprobedMsg...)
	case found:
		d.buf = append(d.buf, name...)
	case d.SymOffset:
		d.buf = appendHex(append(d.buf, "0x"...), ip, 1)
	default:
		d.buf = appendHex(append(d.buf, "0x"...), ip, 8)
	}
	sym.Name = d.buf[start:]
}

// appendArg adds one probe argument to ev, printed as trace_probe_print_args does.
func (d *BinaryDecoder) appendArg(ev *Event, a *binArg, data []byte) {
	f := a.field
	arg := Arg{Name: a.name}
	start := len(d.buf)
	switch {
	case a.count > 0:
		arg.Kind = ValueArray
		size := f.Size / a.count
		for i := range a.count {
			if i > 0 {
				d.buf = append(d.buf, ',')
			}
			d.buf, _ = d.appendValue(d.buf, a.print, data, f.Offset+i*size, size, f)
		}
	default:
		d.buf, arg.Kind = d.appendValue(d.buf, a.print, data, f.Offset, f.Size, f)
	}
	arg.Value = d.buf[start:]
	ev.Args = append(ev.Args, arg)
}

// appendValue prints one value as the kernel's print_type_* function does and says which kind
// of value the line parser would have seen.
func (d *BinaryDecoder) appendValue(dst []byte, p argPrint, data []byte, off, size int, f *tracefs.Field) ([]byte, ValueKind) {
	if off < 0 || size < 0 || off > len(data)-size {
		return append(dst, "(fault)"...), ValueFault
	}
	v := loadUint(data[off:off+size], size)
	switch p {
	case argUnsigned:
		return strconv.AppendUint(dst, v, 10), ValueNumber
	case argSigned:
		return strconv.AppendInt(dst, signExtend(v, size), 10), ValueNumber
	case argHex:
		return strconv.AppendUint(append(dst, "0x"...), v, 16), ValueOther
	case argChar:
		return append(dst, '\'', byte(v), '\''), ValueOther
	case argSymbol:
		return d.Symbols.AppendSymOffset(dst, v), ValueOther
	case argString:
		// __data_loc: offset (low 16 bits, from the entry's start) and length (high 16);
		// length 0 is the kernel's "(fault)".
		loc := uint32(v)
		n, at := int(loc>>16), int(loc&0xffff)
		if n == 0 || at+n > len(data) {
			return append(dst, "(fault)"...), ValueFault
		}
		return append(dst, cString(data[at:at+n])...), ValueString
	}
	return dst, ValueOther
}

// appendFields lists an event's fields as "name=value" for an event ftctl does not format as
// the kernel does: integers in decimal, strings quoted, other arrays in hex bytes.
func appendFields(dst []byte, f *tracefs.Format, data []byte) []byte {
	for i := range f.Fields {
		fl := &f.Fields[i]
		if i > 0 {
			dst = append(dst, ' ')
		}
		dst = append(dst, fl.Name...)
		dst = append(dst, '=')
		raw, ok := fieldRaw(fl, data)
		if !ok {
			dst = append(dst, "(fault)"...)
			continue
		}
		switch {
		case strings.HasPrefix(fl.Type, "__data_loc") && fl.Size == 4:
			loc := binary.LittleEndian.Uint32(raw)
			n, at := int(loc>>16), int(loc&0xffff)
			if at+n > len(data) {
				dst = append(dst, "(fault)"...)
				continue
			}
			dst = append(dst, '"')
			dst = append(dst, cString(data[at:at+n])...)
			dst = append(dst, '"')
		case fl.Array != 0 && (fl.Type == "char" || fl.Type == "unsigned char"):
			dst = append(dst, '"')
			dst = append(dst, cString(raw)...)
			dst = append(dst, '"')
		case fl.Array == 0 && (fl.Size == 1 || fl.Size == 2 || fl.Size == 4 || fl.Size == 8):
			v := loadUint(raw, fl.Size)
			if fl.Signed {
				dst = strconv.AppendInt(dst, signExtend(v, fl.Size), 10)
			} else {
				dst = strconv.AppendUint(dst, v, 10)
			}
		default:
			dst = append(dst, "0x"...)
			for _, c := range raw {
				dst = appendHex(dst, uint64(c), 2)
			}
		}
	}
	return dst
}

// appendLatFlags appends the irq-info flags as trace_print_lat_fmt prints them (kernel/trace/
// trace_output.c): irqs-off/BH-off, need-resched, hardirq/softirq/NMI, preempt depth, migrate
// disable.
func appendLatFlags(dst []byte, flags, pc byte) []byte {
	const (
		irqsOff       = 0x01
		irqsNoSupport = 0x02
		needResched   = 0x04
		hardirq       = 0x08
		softirq       = 0x10
		preemptResch  = 0x20
		nmi           = 0x40
		bhOff         = 0x80
	)
	var c byte
	switch {
	case flags&irqsOff != 0 && flags&bhOff != 0:
		c = 'D'
	case flags&irqsOff != 0:
		c = 'd'
	case flags&bhOff != 0:
		c = 'b'
	case flags&irqsNoSupport != 0:
		c = 'X'
	default:
		c = '.'
	}
	dst = append(dst, c)
	switch flags & (needResched | preemptResch) {
	case needResched | preemptResch:
		c = 'N'
	case needResched:
		c = 'n'
	case preemptResch:
		c = 'p'
	default:
		c = '.'
	}
	dst = append(dst, c)
	switch {
	case flags&nmi != 0 && flags&hardirq != 0:
		c = 'Z'
	case flags&nmi != 0:
		c = 'z'
	case flags&hardirq != 0 && flags&softirq != 0:
		c = 'H'
	case flags&hardirq != 0:
		c = 'h'
	case flags&softirq != 0:
		c = 's'
	default:
		c = '.'
	}
	dst = append(dst, c)
	const hex = "0123456789abcdef"
	if pc&0xf != 0 {
		dst = append(dst, hex[pc&0xf])
	} else {
		dst = append(dst, '.')
	}
	if pc&0xf0 != 0 {
		dst = append(dst, hex[pc>>4])
	} else {
		dst = append(dst, '.')
	}
	return dst
}

// appendMicros appends a time in nanoseconds as trace_pipe prints it: seconds, a dot and six
// digits of microseconds, rounded to the nearest (ns2usecs).
func appendMicros(dst []byte, ns uint64) []byte {
	us := (ns + 500) / 1000
	return appendSecMicros(dst, us/1_000_000, us%1_000_000)
}

// appendSecMicros appends seconds, a dot and six digits of microseconds.
func appendSecMicros(dst []byte, sec, frac uint64) []byte {
	dst = strconv.AppendUint(dst, sec, 10)
	var b [7]byte
	b[0] = '.'
	for i := 6; i >= 1; i-- {
		b[i] = byte('0' + frac%10)
		frac /= 10
	}
	return append(dst, b[:]...)
}

// appendGraphMicros appends a duration as function_graph prints it (print_graph_duration:
// "%ld.%03ld", microseconds and the nanoseconds' first three digits, truncated).
func appendGraphMicros(dst []byte, ns uint64) []byte {
	if int64(ns) < 0 { // a return stamped before its call (another CPU's clock)
		ns = 0
	}
	dst = strconv.AppendUint(dst, ns/1000, 10)
	frac := ns % 1000
	return append(dst, '.', byte('0'+frac/100), byte('0'+frac/10%10), byte('0'+frac%10))
}

// fieldUint reads an unsigned field of 1, 2, 4 or 8 bytes (0 when the data is short).
func fieldUint(f *tracefs.Field, data []byte) uint64 {
	raw, ok := fieldRaw(f, data)
	if !ok {
		return 0
	}
	return loadUint(raw, f.Size)
}

// fieldRaw is a field's bytes in a record; false when the record does not hold them. Every
// slicing of a record by a field goes through it: the offset and size come from a format,
// which tracefs.ParseFormat bounds, but a Format may be built by other hands too.
func fieldRaw(f *tracefs.Field, data []byte) ([]byte, bool) {
	if f.Offset < 0 || f.Size < 0 || f.Offset > len(data) || f.Size > len(data)-f.Offset {
		return nil, false
	}
	return data[f.Offset : f.Offset+f.Size], true
}

func loadUint(b []byte, size int) uint64 {
	switch size {
	case 1:
		return uint64(b[0])
	case 2:
		return uint64(binary.LittleEndian.Uint16(b))
	case 4:
		return uint64(binary.LittleEndian.Uint32(b))
	case 8:
		return binary.LittleEndian.Uint64(b)
	}
	return 0
}

func signExtend(v uint64, size int) int64 {
	shift := 64 - 8*uint(size)
	return int64(v<<shift) >> shift
}

// tail is data from off, or nothing.
func tail(data []byte, off int) []byte {
	if off < 0 || off > len(data) {
		return nil
	}
	return data[off:]
}

// cString is b up to its first NUL.
func cString(b []byte) []byte {
	if i := bytes.IndexByte(b, 0); i >= 0 {
		return b[:i]
	}
	return b
}
