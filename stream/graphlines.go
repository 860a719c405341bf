package stream

import (
	"encoding/binary"
	"strconv"
)

// function_graph's lines made from its records, for ftctl stream and trace: the binary reader
// prints them as the kernel's text does (kernel/trace/trace_functions_graph.c, print_graph_*,
// Linux 6.1 and 6.12), so that both readers make the same events of them.
//
//   - A call whose return is the next record of its CPU, of the same task and function, is a
//     leaf: one line, "func();" with its duration (get_return_for_leaf). trace_pipe peeks at
//     the next record of the CPU; the decoder holds an entry that is the last record of its
//     CPU in what was read until the next read says (Source flushes what it holds before it
//     waits for the kernel: trace_pipe, finding nothing there, prints the entry as "func() {").
//   - Any other entry is "func() {"; a return is "}", named ("} /* func */") when the entry the
//     CPU printed last at its depth was another function's (or none: tracing_thresh records
//     returns alone), or always with funcgraph-tail.
//   - When a CPU's records change task, a banner says so (verif_pid), as four lines.
//   - A function of the interrupt entry text (__irqentry_text_start to _end) is marked with
//     "==========>" before its entry and "<==========" after its return (print_graph_irq).
//   - Durations are printed as trace_print_graph_duration prints them: at most 7 digits.
//
// Events of other kinds (markers, tracepoints) keep their own shape: the kernel prints them
// as comments inside the graph ("/* ... */"), which the line parser leaves raw.

// GraphLines says which of function_graph's columns the kernel prints: the funcgraph-*
// options the binary reader follows. Set on a BinaryDecoder, it makes function_graph's lines
// of the records; nil, the records come one by one (entries and exits, with their times), as
// call trees need them.
type GraphLines struct {
	CPU     bool // funcgraph-cpu (on by default): the "N)" column
	Proc    bool // funcgraph-proc: the "comm-pid" column
	AbsTime bool // funcgraph-abstime: the time column
	Tail    bool // funcgraph-tail: every return names its function
	// MaxCPU is the highest CPU number: print_graph_cpu pads CPU numbers to its width.
	MaxCPU int
}

// graphRetFuncDepth is FTRACE_RETFUNC_DEPTH, the depths the kernel keeps the printed entries
// of (enter_funcs).
const graphRetFuncDepth = 50

// graphCPU is what the kernel's printer keeps per CPU (struct fgraph_cpu_data), and the entry
// the decoder holds.
type graphCPU struct {
	lastPid int                       // -1: none yet
	enter   [graphRetFuncDepth]uint64 // the function whose entry was printed last at each depth
	held    []byte                    // an entry whose next record is not read yet (nil: none)
	heldTS  uint64
}

const graphBannerRule = " ------------------------------------------"

func (d *BinaryDecoder) graphCPU(cpu int) *graphCPU {
	for len(d.gcpu) <= cpu {
		d.gcpu = append(d.gcpu, graphCPU{lastPid: -1})
	}
	return &d.gcpu[cpu]
}

// Held says whether an entry waits for its CPU's next record (FlushHeld prints it).
func (d *BinaryDecoder) Held() bool {
	for i := range d.gcpu {
		if d.gcpu[i].held != nil {
			return true
		}
	}
	return false
}

// FlushHeld prints the entries held for want of their CPU's next record as entries with
// callees ("func() {"), oldest first: what trace_pipe prints when it finds nothing after them.
func (d *BinaryDecoder) FlushHeld(emit Emit) error {
	for {
		best := -1
		for c := range d.gcpu {
			if d.gcpu[c].held != nil && (best < 0 || d.gcpu[c].heldTS < d.gcpu[best].heldTS) {
				best = c
			}
		}
		if best < 0 {
			return nil
		}
		g := &d.gcpu[best]
		r := rec{ts: g.heldTS, data: g.held}
		g.held = nil
		if err := d.emitLine(best, &r, emit, false); err != nil {
			return err
		}
	}
}

// takeHeld puts each CPU's held entry before the records of the pages being fed.
func (d *BinaryDecoder) takeHeld() {
	for c := range d.gcpu {
		if g := &d.gcpu[c]; g.held != nil {
			d.recs[c] = append(d.recs[c], rec{ts: g.heldTS, data: g.held})
			g.held = nil
		}
	}
}

// heldCPUs is how many CPUs hold an entry, counted from 1 (0: none).
func (d *BinaryDecoder) heldCPUs() int {
	n := 0
	for c := range d.gcpu {
		if d.gcpu[c].held != nil {
			n = c + 1
		}
	}
	return n
}

// recEvent is the decoder's knowledge of a record's type, nil when it has none yet.
func (d *BinaryDecoder) recEvent(data []byte) *binEvent {
	if len(data) < 8 {
		return nil
	}
	return d.events[int(binary.LittleEndian.Uint16(data))]
}

func recPID(data []byte) int { return int(int32(binary.LittleEndian.Uint32(data[4:]))) }

// emitLine emits a record of CPU cpu as the kernel's function_graph printer prints it (the
// task's banner first when the CPU changed task). peek: the CPU's next records are in
// d.recs[cpu] from d.heads[cpu], and an entry that is the last of them is held.
func (d *BinaryDecoder) emitLine(cpu int, r *rec, emit Emit, peek bool) error {
	g := d.graphCPU(cpu)
	e := d.recEvent(r.data)
	var ret []byte // a leaf's return record
	if e != nil && e.kind == binGraphEntry && peek {
		if d.heads[cpu] == len(d.recs[cpu]) {
			g.held, g.heldTS = append([]byte(nil), r.data...), r.ts
			return nil
		}
		if n := &d.recs[cpu][d.heads[cpu]]; len(n.data) >= 8 {
			if ne := d.recEvent(n.data); ne != nil && ne.kind == binGraphExit && recPID(n.data) == recPID(r.data) &&
				fieldUint(ne.ip, n.data) == fieldUint(e.ip, r.data) {
				ret = n.data
				d.heads[cpu]++
			}
		}
	}
	pid := recPID(r.data)
	if g.lastPid != pid {
		prev := g.lastPid
		g.lastPid = pid
		if prev != -1 {
			if err := d.emitBanner(cpu, prev, pid, emit); err != nil {
				return err
			}
		}
	}
	ev := &d.ev
	if e == nil || (e.kind != binGraphEntry && e.kind != binGraphExit) {
		d.Decode(ev, cpu, r.ts, r.data)
		return emit(ev)
	}
	fn := fieldUint(e.ip, r.data)
	irq := d.irqEntry(fn)
	if irq && e.kind == binGraphEntry && ret == nil {
		if err := d.emitIRQ(cpu, pid, r.ts, "==========>", emit); err != nil {
			return err
		}
	}
	d.Decode(ev, cpu, r.ts, r.data)
	gr := &ev.Graph
	depth := gr.Depth
	start := len(d.buf)
	d.buf = d.Symbols.AppendNoOffset(d.buf, fn) // %ps
	gr.Func = d.buf[start:]
	switch {
	case ret != nil:
		re := d.recEvent(ret)
		gr.Type = GraphCall
		gr.CallTime, gr.RetTime = fieldUint(re.calltime, ret), fieldUint(re.rettime, ret)
		if re.retval != nil {
			gr.Retval, gr.HasRetval = fieldUint(re.retval, ret), true
		}
		start = len(d.buf)
		d.buf = appendGraphDuration(d.buf, gr.RetTime-gr.CallTime)
		gr.Duration = d.buf[start:]
		if depth >= 0 && depth < graphRetFuncDepth {
			g.enter[depth] = 0
		}
	case e.kind == binGraphEntry:
		if depth >= 0 && depth < graphRetFuncDepth {
			g.enter[depth] = fn
		}
	default:
		match := true
		if depth >= 0 && depth < graphRetFuncDepth {
			match = g.enter[depth] == fn
			g.enter[depth] = 0
		}
		if match && !d.Lines.Tail {
			gr.Func = nil
		}
		start = len(d.buf)
		d.buf = appendGraphDuration(d.buf, gr.RetTime-gr.CallTime)
		gr.Duration = d.buf[start:]
	}
	d.graphContext(ev, pid, r.ts)
	if err := emit(ev); err != nil {
		return err
	}
	if irq && (ret != nil || e.kind == binGraphExit) {
		return d.emitIRQ(cpu, pid, r.ts, "<==========", emit)
	}
	return nil
}

// graphContext leaves on a function_graph event the columns the kernel prints: the CPU, and
// with funcgraph-proc the comm (its first 7 bytes: print_graph_proc) and pid, with
// funcgraph-abstime the time stamp.
func (d *BinaryDecoder) graphContext(ev *Event, pid int, ts uint64) {
	o := d.Lines
	ev.HasContext, ev.Flags, ev.TGID = false, nil, 0
	if !o.CPU {
		ev.CPU = -1
	}
	if o.Proc {
		if len(ev.Comm) > 7 {
			ev.Comm = ev.Comm[:7]
		}
	} else {
		ev.Comm, ev.PID = nil, 0
	}
	ev.TS = nil
	if o.AbsTime {
		start := len(d.buf)
		d.buf = appendAbsTime(d.buf, ts)
		ev.TS = d.buf[start:]
	}
}

// irqEntry says whether fn is in the interrupt entry text (print_graph_irq).
func (d *BinaryDecoder) irqEntry(fn uint64) bool {
	if d.Symbols == nil {
		return false
	}
	if d.irqSyms != d.Symbols {
		d.irqSyms = d.Symbols
		d.irqStart, d.irqEnd = d.Symbols.coreAddrOf(" __irqentry_text_start\n"), d.Symbols.coreAddrOf(" __irqentry_text_end\n")
	}
	return d.irqStart != 0 && fn >= d.irqStart && fn < d.irqEnd
}

// emitIRQ emits print_graph_irq's line: the columns, then "  ==========> |" or
// "  <========== |". The line parser leaves it raw.
func (d *BinaryDecoder) emitIRQ(cpu, pid int, ts uint64, mark string, emit Emit) error {
	b := d.lbuf[:0]
	o := d.Lines
	if o.AbsTime {
		b = appendAbsTime(b, ts)
		b = append(b, " |  "...)
	}
	if o.CPU {
		b = d.appendGraphCPU(b, cpu)
	}
	if o.Proc {
		b = d.appendGraphProc(b, pid)
		b = append(b, " | "...)
	}
	b = append(b, "  "...)
	b = append(b, mark...)
	b = append(b, " |"...)
	d.lbuf = b
	return d.emitRaw(b, emit)
}

// emitBanner emits verif_pid's banner of a task switch on a CPU, as its four lines.
func (d *BinaryDecoder) emitBanner(cpu, prev, pid int, emit Emit) error {
	b := d.appendGraphCPU(d.lbuf[:0], cpu)
	b = d.appendGraphProc(b, prev)
	b = append(b, " => "...)
	b = d.appendGraphProc(b, pid)
	d.lbuf = b
	for _, l := range [][]byte{[]byte(graphBannerRule), b, []byte(graphBannerRule), {}} {
		if err := d.emitRaw(l, emit); err != nil {
			return err
		}
	}
	return nil
}

func (d *BinaryDecoder) emitRaw(text []byte, emit Emit) error {
	ev := &d.lev
	ev.reset()
	ev.Kind, ev.Text = KindRaw, text
	return emit(ev)
}

// appendGraphCPU appends print_graph_cpu's " %*d) ", the width that of the highest CPU.
func (d *BinaryDecoder) appendGraphCPU(dst []byte, cpu int) []byte {
	dst = append(dst, ' ')
	n := strconv.AppendInt(nil, int64(cpu), 10)
	w := len(strconv.Itoa(max(d.Lines.MaxCPU, 0)))
	dst = appendSpaces(dst, w-len(n))
	dst = append(dst, n...)
	return append(dst, ") "...)
}

// appendGraphProc appends print_graph_proc's "comm-pid", the comm cut to 7 bytes, centred in
// 14 columns (TRACE_GRAPH_PROCINFO_LENGTH).
func (d *BinaryDecoder) appendGraphProc(dst []byte, pid int) []byte {
	comm := d.appendComm(nil, pid)
	if len(comm) > 7 {
		comm = comm[:7]
	}
	p := strconv.AppendInt(nil, int64(pid), 10)
	spaces := max(14-(len(comm)+len(p)+1), 0)
	dst = appendSpaces(dst, spaces/2)
	dst = append(dst, comm...) // raw, as the kernel's: the renderers escape it
	dst = append(dst, '-')
	dst = append(dst, p...)
	return appendSpaces(dst, spaces-spaces/2)
}

// appendAbsTime appends a time stamp as print_graph_abs_time prints it: seconds and
// microseconds, truncated ("%5lu.%06lu", the seconds' padding left out as the line parser
// does).
func appendAbsTime(dst []byte, ns uint64) []byte {
	return appendSecMicros(dst, ns/1_000_000_000, ns%1_000_000_000/1000)
}

// appendGraphDuration appends a duration as trace_print_graph_duration prints it: the
// microseconds, then a dot and the nanoseconds' first digits while the number has fewer than
// 7 digits ("1.382", "12345.67", "1234567").
func appendGraphDuration(dst []byte, ns uint64) []byte {
	if int64(ns) < 0 { // a return stamped before its call (another CPU's clock)
		ns = 0
	}
	us := strconv.AppendUint(nil, ns/1000, 10)
	dst = append(dst, us...)
	if len(us) < 7 {
		frac := ns % 1000
		digits := []byte{byte('0' + frac/100), byte('0' + frac/10%10), byte('0' + frac%10)}
		dst = append(dst, '.')
		dst = append(dst, digits[:min(3, 7-len(us))]...)
	}
	return dst
}
