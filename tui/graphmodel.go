package tui

import (
	"slices"

	"github.com/ftctl/ftctl/stream"
)

// graphModel is the Graph view's state, pure (no IO, no styles): the last call trees received,
// each top-level call with what it called, folded or unfolded per call, sorted slowest first
// or newest first, narrowed to one task when it follows one, and the selection, which stays
// on its call (not its line) as trees come and go. Memory is bounded: the last maxTrees trees,
// holding maxCalls calls at most between them; older ones are dropped and counted.
type graphModel struct {
	trees    []*graphTree // oldest first
	maxTrees int
	maxCalls int
	calls    int    // calls held, every tree's
	seq      uint64 // trees received
	dropped  int64  // trees dropped: by the bounds here, and by the feed for a view behind
	lost     int64  // the kernel's lost records (the feed's count)

	open    map[*stream.Call]bool // the calls shown unfolded
	arrival bool                  // newest first (else slowest first)
	follow  *graphTask            // the task shown alone, nil for all

	lines []graphLine // what shows, in order (built when stale)
	stale bool
	sel   *stream.Call // the selected call (nil: the first line)
	at    int          // the selected line's index when last seen (for a call that went)
	top   int          // the first line shown
}

// graphTree is one top-level call as received.
type graphTree struct {
	root  *stream.Call
	seq   uint64 // its arrival: 1 for the first
	calls int    // the calls it holds, itself included
}

// graphTask is a task the view follows. The idle tasks (pid 0) are one per CPU.
type graphTask struct {
	pid, cpu int
	comm     string
}

func (t *graphTask) has(c *stream.Call) bool {
	return c.PID == t.pid && (t.pid != 0 || c.CPU == t.cpu)
}

// graphLine is one line of the view: a call at its level under its tree's root.
type graphLine struct {
	call   *stream.Call
	tree   *graphTree
	level  int // 0 for a top-level call
	parent int // the index of its caller's line, -1 for a top-level call
}

// The default bounds: 2,000 trees, 500,000 calls between them (the calls of one tree are
// never split: the newest tree stays whatever its size).
const (
	graphMaxTrees = 2000
	graphMaxCalls = 500_000
)

func newGraphModel(maxTrees, maxCalls int) *graphModel {
	return &graphModel{maxTrees: maxTrees, maxCalls: maxCalls, open: map[*stream.Call]bool{}}
}

// countCalls is how many calls c holds, itself included.
func countCalls(c *stream.Call) int {
	n := 1
	for _, k := range c.Calls {
		n += countCalls(k)
	}
	return n
}

// add takes trees, in the order they completed, and the feed's counts.
func (m *graphModel) add(trees []*stream.Call, dropped, lost int64) {
	m.dropped += dropped
	m.seq += uint64(dropped)
	if lost > m.lost {
		m.lost = lost
	}
	for _, c := range trees {
		m.seq++
		t := &graphTree{root: c, seq: m.seq, calls: countCalls(c)}
		m.trees = append(m.trees, t)
		m.calls += t.calls
	}
	n := 0
	for len(m.trees)-n > m.maxTrees || (m.calls > m.maxCalls && len(m.trees)-n > 1) {
		m.forget(m.trees[n].root)
		m.calls -= m.trees[n].calls
		n++
	}
	if n > 0 {
		clear(m.trees[:n])
		m.trees = m.trees[n:]
		m.dropped += int64(n)
	}
	if len(trees) > 0 || n > 0 {
		m.stale = true
	}
}

// forget drops the fold marks of a tree that goes.
func (m *graphModel) forget(c *stream.Call) {
	if len(m.open) == 0 {
		return
	}
	delete(m.open, c)
	for _, k := range c.Calls {
		m.forget(k)
	}
}

// reset forgets every tree (the counts of dropped and lost records too).
func (m *graphModel) reset() {
	*m = *newGraphModel(m.maxTrees, m.maxCalls)
	m.stale = true
}

// slower orders top-level calls slowest first: the calls that had not returned (no duration)
// after those that did, then the newest first.
func slower(a, b *graphTree) int {
	ua, ub := a.root.NoExit, b.root.NoExit
	switch {
	case ua != ub:
		if ua {
			return 1
		}
		return -1
	case !ua && a.root.Duration() != b.root.Duration():
		if a.root.Duration() > b.root.Duration() {
			return -1
		}
		return 1
	}
	return newer(a, b)
}

func newer(a, b *graphTree) int {
	switch {
	case a.seq > b.seq:
		return -1
	case a.seq < b.seq:
		return 1
	}
	return 0
}

// build makes the lines again when something changed, and finds the selection in them.
func (m *graphModel) build() {
	if !m.stale && m.lines != nil {
		return
	}
	m.stale = false
	trees := make([]*graphTree, 0, len(m.trees))
	for _, t := range m.trees {
		if m.follow == nil || m.follow.has(t.root) {
			trees = append(trees, t)
		}
	}
	if m.arrival {
		slices.SortFunc(trees, newer)
	} else {
		slices.SortFunc(trees, slower)
	}
	m.lines = m.lines[:0]
	for _, t := range trees {
		m.addLines(t, t.root, 0, -1)
	}
	m.locate()
}

func (m *graphModel) addLines(t *graphTree, c *stream.Call, level, parent int) {
	at := len(m.lines)
	m.lines = append(m.lines, graphLine{call: c, tree: t, level: level, parent: parent})
	if m.open[c] {
		for _, k := range c.Calls {
			m.addLines(t, k, level+1, at)
		}
	}
}

// locate sets at to the selected call's line; when it went, the line now where it was.
func (m *graphModel) locate() {
	if m.sel != nil {
		for i := range m.lines {
			if m.lines[i].call == m.sel {
				m.at = i
				return
			}
		}
	}
	m.at = max(min(m.at, len(m.lines)-1), 0)
	m.sel = nil
	if len(m.lines) > 0 {
		m.sel = m.lines[m.at].call
	}
}

// selected is the selected line, nil when there is none.
func (m *graphModel) selected() *graphLine {
	m.build()
	if len(m.lines) == 0 {
		return nil
	}
	return &m.lines[m.at]
}

func (m *graphModel) selectLine(i int) {
	m.build()
	if len(m.lines) == 0 {
		return
	}
	m.at = max(min(i, len(m.lines)-1), 0)
	m.sel = m.lines[m.at].call
}

// move moves the selection by d lines.
func (m *graphModel) move(d int) {
	m.build()
	m.selectLine(m.at + d)
}

// toggle folds or unfolds the selected call (a call without callees has nothing to unfold).
func (m *graphModel) toggle() {
	if l := m.selected(); l != nil && len(l.call.Calls) > 0 {
		m.setOpen(l.call, !m.open[l.call])
	}
}

func (m *graphModel) setOpen(c *stream.Call, open bool) {
	if open {
		m.open[c] = true
	} else {
		delete(m.open, c)
	}
	m.stale = true
}

// unfold opens the selected call; an open one's first callee is selected.
func (m *graphModel) unfold() {
	l := m.selected()
	switch {
	case l == nil || len(l.call.Calls) == 0:
	case !m.open[l.call]:
		m.setOpen(l.call, true)
	default:
		m.move(1)
	}
}

// fold closes the selected call; a closed one's caller is selected.
func (m *graphModel) fold() {
	l := m.selected()
	switch {
	case l == nil:
	case m.open[l.call]:
		m.setOpen(l.call, false)
	case l.parent >= 0:
		m.selectLine(l.parent)
	}
}

// toggleSort switches slowest first ↔ newest first.
func (m *graphModel) toggleSort() {
	m.arrival = !m.arrival
	m.stale = true
}

// toggleFollow shows only the selected call's task, or every task again.
func (m *graphModel) toggleFollow() *graphTask {
	if m.follow != nil {
		m.follow = nil
	} else if l := m.selected(); l != nil {
		r := l.tree.root
		m.follow = &graphTask{pid: r.PID, cpu: r.CPU, comm: r.Comm}
	}
	m.stale = true
	return m.follow
}

// window is the lines to show in h rows, the selection in view, and the selected line's index
// among them (-1 when none).
func (m *graphModel) window(h int) ([]graphLine, int) {
	m.build()
	h = max(h, 1)
	if m.at < m.top {
		m.top = m.at
	}
	if m.at >= m.top+h {
		m.top = m.at - h + 1
	}
	m.top = max(min(m.top, len(m.lines)-h), 0)
	end := min(m.top+h, len(m.lines))
	if len(m.lines) == 0 {
		return nil, -1
	}
	return m.lines[m.top:end], m.at - m.top
}
