package stream

import (
	"errors"
	"io"
	"strconv"
)

// Call trees from function_graph's records (`ftctl graph`). The kernel records an entry
// (funcgraph_entry: the function and its depth) when a traced function is called, and an exit
// (funcgraph_exit: the function, its depth, when it was called and when it returned) when it
// returns. Depth is the task's: each task has its own stack of calls, whichever CPU it runs on,
// so the records of one task are put together by pid (the idle tasks, pid 0, one per CPU, by
// CPU), whatever the interleaving of tasks and CPUs.
//
// Records can be missing: the session began inside a call (its exit comes without an entry), a
// page was overwritten or dropped (KindLost), tracing_thresh is set (the kernel then records only
// the exits of the calls that lasted that long, and no entry), or the session ended before a
// call returned. A call whose entry was not seen is still a call (its exit says when it was
// called and how long it took: NoEntry); one whose exit was not seen is NoExit and has no
// duration. Neither is dropped.

// Call is one call of a function_graph tree.
type Call struct {
	Func  string
	CPU   int    // where it was called (its exit's CPU when its entry was not seen)
	PID   int    // the task
	Comm  string // the task's name, as the kernel's saved_cmdlines had it ("<...>" when it had none)
	Depth int    // the kernel's depth of the call in the task's stack, within 0 to MaxGraphDepth
	// Start is when it was called, End when it returned (ns of the trace clock); End is 0
	// with NoExit.
	Start, End uint64
	Retval     uint64 // with HasRetval (funcgraph-retval kernels only)
	HasRetval  bool
	NoEntry    bool // its entry was not recorded (or was lost): Start comes from its exit
	NoExit     bool // it had not returned when the session ended (or its exit was lost)
	Calls      []*Call
}

// Duration is the call's duration in ns (0 with NoExit).
func (c *Call) Duration() uint64 {
	if c.NoExit || c.End < c.Start {
		return 0
	}
	return c.End - c.Start
}

// CallTree builds call trees from function_graph events (KindGraph, decoded from
// trace_pipe_raw: they carry the time stamps the tree needs) and hands each top-level call
// to Done once it returned.
type CallTree struct {
	Done  func(*Call) error
	tasks map[taskKey]*taskCalls
	// Lost counts the records the kernel said it lost (KindLost events).
	Lost int64
}

type taskKey struct{ pid, cpu int }

// taskCalls is one task's state: the calls entered and not yet returned (outermost first), and
// the calls whose exit came without an entry and that no call holds yet (their caller's exit,
// if it is recorded at all, comes later).
type taskCalls struct {
	stack   []*Call
	orphans []*Call
}

// Add takes one event; events other than function_graph's count losses or are ignored.
func (t *CallTree) Add(ev *Event) error {
	switch ev.Kind {
	case KindLost:
		if ev.Lost > 0 {
			t.Lost += ev.Lost
		}
		return nil
	case KindGraph:
	default:
		return nil
	}
	if t.tasks == nil {
		t.tasks = map[taskKey]*taskCalls{}
	}
	key := taskKey{pid: ev.PID}
	if ev.PID == 0 {
		key.cpu = ev.CPU
	}
	tc := t.tasks[key]
	if tc == nil {
		tc = &taskCalls{}
		t.tasks[key] = tc
	}
	g := ev.Graph // a copy: its depth bounded (MaxGraphDepth)
	g.Depth = min(max(g.Depth, 0), MaxGraphDepth)
	switch g.Type {
	case GraphEntry:
		// calls at this depth or deeper still open lost their exits
		if err := t.unwind(tc, g.Depth); err != nil {
			return err
		}
		if g.Depth == 0 {
			if err := t.flushOrphans(tc, g.Stamp); err != nil {
				return err
			}
		}
		c := &Call{Func: string(g.Func), CPU: ev.CPU, PID: ev.PID, Comm: string(ev.Comm), Depth: g.Depth, Start: g.Stamp}
		if n := len(tc.stack); n > 0 {
			tc.stack[n-1].Calls = append(tc.stack[n-1].Calls, c)
		}
		tc.stack = append(tc.stack, c)
		return nil
	case GraphExit:
	default:
		return nil
	}
	if err := t.unwind(tc, g.Depth+1); err != nil {
		return err
	}
	if n := len(tc.stack); n > 0 && tc.stack[n-1].Depth == g.Depth && tc.stack[n-1].Func == string(g.Func) {
		c := tc.stack[n-1]
		tc.stack = tc.stack[:n-1]
		c.End, c.Retval, c.HasRetval = g.RetTime, g.Retval, g.HasRetval
		if g.CallTime != 0 {
			c.Start = g.CallTime
		}
		c.Calls = append(adopt(tc, c), c.Calls...)
		if len(tc.stack) == 0 {
			return t.Done(c)
		}
		return nil
	}
	if n := len(tc.stack); n > 0 && tc.stack[n-1].Depth == g.Depth {
		// another function's exit at the depth of the open call: that call's exit was lost
		if err := t.unwind(tc, g.Depth); err != nil {
			return err
		}
	}
	c := &Call{Func: string(g.Func), CPU: ev.CPU, PID: ev.PID, Comm: string(ev.Comm), Depth: g.Depth,
		Start: g.CallTime, End: g.RetTime, Retval: g.Retval, HasRetval: g.HasRetval, NoEntry: true}
	c.Calls = adopt(tc, c)
	if n := len(tc.stack); n > 0 {
		tc.stack[n-1].Calls = append(tc.stack[n-1].Calls, c)
		return nil
	}
	if g.Depth == 0 {
		if err := t.flushOrphans(tc, c.Start); err != nil {
			return err
		}
		return t.Done(c)
	}
	tc.orphans = append(tc.orphans, c)
	if len(tc.orphans) > maxOrphans {
		return t.flushOrphans(tc, ^uint64(0))
	}
	return nil
}

// maxOrphans bounds the calls a task keeps waiting for a caller whose exit may never come.
const maxOrphans = 256

// adopt takes the task's orphans that ran inside c (deeper, and within its time) as c's
// callees, in order.
func adopt(tc *taskCalls, c *Call) []*Call {
	var kids []*Call
	keep := tc.orphans[:0]
	for _, o := range tc.orphans {
		if o.Depth > c.Depth && o.Start >= c.Start && (c.End == 0 || o.End <= c.End) {
			kids = append(kids, o)
			continue
		}
		keep = append(keep, o)
	}
	tc.orphans = keep
	// the deeper ones go under the shallower ones that hold them
	var out []*Call
	for _, k := range kids {
		placed := false
		for i := len(out) - 1; i >= 0 && !placed; i-- {
			placed = nest(out[i], k)
		}
		if !placed {
			out = append(out, k)
		}
	}
	// a later, shallower orphan holds the earlier, deeper ones (exits come callee first)
	for i := 0; i < len(out); i++ {
		for j := i + 1; j < len(out); j++ {
			if out[j].Depth < out[i].Depth && out[j].Start <= out[i].Start && out[i].End <= out[j].End {
				out[j].Calls = append([]*Call{out[i]}, out[j].Calls...)
				out = append(out[:i], out[i+1:]...)
				i--
				break
			}
		}
	}
	return out
}

// nest puts k under p (or under one of p's callees) when it ran inside it.
func nest(p, k *Call) bool {
	if k.Depth <= p.Depth || k.Start < p.Start || (p.End != 0 && k.End > p.End) {
		return false
	}
	for i := len(p.Calls) - 1; i >= 0; i-- {
		if nest(p.Calls[i], k) {
			return true
		}
	}
	p.Calls = append(p.Calls, k)
	return true
}

// unwind closes the task's open calls at depth or deeper: their exits were lost.
func (t *CallTree) unwind(tc *taskCalls, depth int) error {
	for n := len(tc.stack); n > 0 && tc.stack[n-1].Depth >= depth; n = len(tc.stack) {
		c := tc.stack[n-1]
		c.NoExit = true
		tc.stack = tc.stack[:n-1]
		if n == 1 && c.Depth > 0 {
			// its caller's entry was not seen either: the caller's exit may still come
			tc.orphans = append(tc.orphans, c)
		} else if n == 1 {
			if err := t.Done(c); err != nil {
				return err
			}
		}
	}
	return nil
}

// flushOrphans hands over, as top-level calls, the orphans that returned before now: no
// call of the task still to come can hold them.
func (t *CallTree) flushOrphans(tc *taskCalls, now uint64) error {
	keep := tc.orphans[:0]
	var done []*Call
	for _, o := range tc.orphans {
		if o.End < now {
			done = append(done, o)
		} else {
			keep = append(keep, o)
		}
	}
	tc.orphans = keep
	for _, o := range adoptAll(done) {
		if err := t.Done(o); err != nil {
			return err
		}
	}
	return nil
}

// adoptAll nests a list of orphans among themselves.
func adoptAll(list []*Call) []*Call {
	if len(list) == 0 {
		return nil
	}
	tc := &taskCalls{orphans: list}
	root := &Call{Depth: -1}
	return adopt(tc, root)
}

// End hands over every call still open or waiting, as the session ends: open calls are NoExit.
func (t *CallTree) End() error {
	for _, tc := range t.tasks {
		if err := t.unwind(tc, -1); err != nil {
			return err
		}
		if err := t.flushOrphans(tc, ^uint64(0)); err != nil {
			return err
		}
	}
	t.tasks = nil
	return nil
}

// graphMark is the kernel's mark of a slow call (trace_find_mark, kernel/trace/trace_output.c):
// '$' over 1 s, '@' over 100 ms, '*' over 10 ms, '#' over 1 ms, '!' over 100 µs, '+' over
// 10 µs, ' ' otherwise.
func graphMark(ns uint64) byte {
	for _, m := range []struct {
		ns   uint64
		mark byte
	}{{1e9, '$'}, {1e8, '@'}, {1e7, '*'}, {1e6, '#'}, {1e5, '!'}, {1e4, '+'}} {
		if ns > m.ns {
			return m.mark
		}
	}
	return ' '
}

// AppendCallText appends a call tree as function_graph prints it with funcgraph-proc: one
// line per call, "CPU) comm-pid | mark duration | indented call", a call with callees opened
// with "func() {" and closed by "} /* func */" with its duration, a leaf on one line. A call
// whose entry was not seen says so; one that had not returned has no duration. Names and
// comms are escaped.
func AppendCallText(dst []byte, c *Call) []byte {
	task := append(AppendEscaped(nil, []byte(c.Comm)), '-')
	task = strconv.AppendInt(task, int64(c.PID), 10)
	return appendCallLines(dst, c, task, 0)
}

func appendCallLines(dst []byte, c *Call, task []byte, level int) []byte {
	prefix := func(dst []byte, cpu int, dur []byte, mark byte) []byte {
		dst = appendPadLeft(dst, strconv.AppendInt(nil, int64(cpu), 10), 3)
		dst = append(dst, ") "...)
		dst = appendPadLeft(dst, task, 16)
		dst = append(dst, " | "...)
		if dur == nil {
			dst = append(dst, "              "...)
		} else {
			dst = append(dst, mark, ' ')
			dst = append(dst, dur...)
			dst = append(dst, " us"...)
			dst = appendSpaces(dst, 9-len(dur))
		}
		dst = append(dst, " |  "...)
		return appendGraphIndent(dst, level, c.Depth)
	}
	var dur []byte
	var mark byte = ' '
	if !c.NoExit {
		dur = appendGraphMicros(nil, c.Duration())
		mark = graphMark(c.Duration())
	}
	note := func(dst []byte) []byte {
		switch {
		case c.NoEntry && c.NoExit:
			return dst
		case c.NoEntry:
			dst = append(dst, " /* entry not seen */"...)
		case c.NoExit:
			dst = append(dst, " /* not returned */"...)
		}
		return dst
	}
	retval := func(dst []byte) []byte {
		if c.HasRetval {
			dst = append(dst, " /* = 0x"...)
			dst = strconv.AppendUint(dst, c.Retval, 16)
			dst = append(dst, " */"...)
		}
		return dst
	}
	name := AppendEscaped(nil, []byte(c.Func))
	if len(c.Calls) == 0 {
		dst = prefix(dst, c.CPU, dur, mark)
		dst = append(dst, name...)
		dst = append(dst, "();"...)
		dst = retval(note(dst))
		return append(dst, '\n')
	}
	dst = prefix(dst, c.CPU, nil, ' ')
	dst = append(dst, name...)
	dst = append(dst, "() {"...)
	if c.NoEntry {
		dst = note(dst)
	}
	dst = append(dst, '\n')
	for _, k := range c.Calls {
		dst = appendCallLines(dst, k, task, level+1)
	}
	dst = prefix(dst, c.CPU, dur, mark)
	dst = append(dst, "} /* "...)
	dst = append(dst, name...)
	dst = append(dst, " */"...)
	if c.NoExit {
		dst = note(dst)
	}
	dst = retval(dst)
	return append(dst, '\n')
}

// AppendCallJSON appends a call tree as one JSON object: "schema" (GraphSchema), "func", "duration_us" (absent when
// the call had not returned), "cpu", "pid" and "comm" (at the top level: the callees are the
// same task's), "retval" where the kernel records it, "entry_lost" or "unfinished" when a
// record is missing, and "calls", the callees in order.
func AppendCallJSON(dst []byte, c *Call) []byte {
	return appendCallJSON(dst, c, true)
}

func appendCallJSON(dst []byte, c *Call, top bool) []byte {
	if top {
		dst = append(dst, `{"schema":"`+GraphSchema+`","func":`...)
	} else {
		dst = append(dst, `{"func":`...)
	}
	dst = AppendJSONString(dst, []byte(c.Func))
	if !c.NoExit {
		dst = append(dst, `,"duration_us":`...)
		dst = appendGraphMicros(dst, c.Duration())
	}
	if top {
		dst = append(dst, `,"cpu":`...)
		dst = strconv.AppendInt(dst, int64(c.CPU), 10)
		dst = append(dst, `,"pid":`...)
		dst = strconv.AppendInt(dst, int64(c.PID), 10)
		dst = append(dst, `,"comm":`...)
		dst = AppendJSONString(dst, []byte(c.Comm))
	}
	if c.HasRetval {
		dst = append(dst, `,"retval":`...)
		dst = strconv.AppendInt(dst, int64(c.Retval), 10)
	}
	if c.NoEntry {
		dst = append(dst, `,"entry_lost":true`...)
	}
	if c.NoExit {
		dst = append(dst, `,"unfinished":true`...)
	}
	dst = append(dst, `,"calls":[`...)
	for i, k := range c.Calls {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = appendCallJSON(dst, k, false)
	}
	return append(dst, "]}"...)
}

// GraphOutput says where CopyGraph writes the call trees.
type GraphOutput struct {
	W     io.Writer
	JSON  bool // one JSON object per top-level call and line (AppendCallJSON), else text
	Count int  // stop after this many top-level calls (0: no limit)
}

// CopyGraph builds src's function_graph events into call trees and writes each top-level
// call once it returned, until GraphOutput.Count calls, Options.Duration, the kernel's end of
// the stream or the end of Open's context (as Copy); then, unless the count ended it, the calls
// still open (NoExit) and those waiting for a caller. It returns the loss summary, and the
// number of top-level calls written.
func CopyGraph(src *Source, out GraphOutput) (*Summary, int, error) {
	sum := src.Summary()
	shown := 0
	var buf *[]byte
	tree := &CallTree{Done: func(c *Call) error {
		if out.Count > 0 && shown >= out.Count {
			return errCountReached
		}
		if out.JSON {
			*buf = append(AppendCallJSON(*buf, c), '\n')
		} else {
			*buf = AppendCallText(*buf, c)
		}
		shown++
		if out.Count > 0 && shown >= out.Count {
			return errCountReached
		}
		return nil
	}}
	emit := func(b *[]byte, ev *Event) error {
		buf = b
		sum.Count(ev, true)
		return tree.Add(ev)
	}
	ended := func(b *[]byte) error {
		buf = b
		if err := tree.End(); err != nil && !errors.Is(err, errCountReached) {
			return err
		}
		return nil
	}
	s, err := src.copy(sum, out.W, emit, ended)
	return s, shown, err
}
