package tui

import (
	"container/heap"
	"fmt"
	"strings"

	"charm.land/bubbles/v2/help"
	"charm.land/bubbles/v2/key"
	tea "charm.land/bubbletea/v2"

	"github.com/ftctl/ftctl/stream"
)

// topMode is what the Top view counts by.
type topMode int

const (
	topByKey   topMode = iota // the function for function events, else the event name
	topByEvent                // the event name
	topByComm                 // the process name
	topModes
)

var topModeNames = [topModes]string{"function/event", "event", "comm"}

// topMaxKeys bounds each table: past it, new keys are counted under "(other)".
const topMaxKeys = 100_000

type topEntry struct {
	key           string // raw bytes of the trace (escaped when shown)
	n, prev, rate int64
	other         bool
}

// TopView counts the stream's events per function or event (or comm), sorted, live: like perf
// top, over everything received since the start (or the last reset), whatever the stream
// view's filters.
type TopView struct {
	env    *env
	keys   topKeys
	width  int
	height int

	mode   topMode
	counts [topModes]map[string]*topEntry
	total  int64
	offset int

	kcount topCount // the kernel's count of functions' calls (c), shown instead while it runs
}

func newTopView(e *env) *TopView {
	v := &TopView{env: e, keys: newTopKeys(), kcount: newTopCount()}
	v.reset()
	return v
}

func (v *TopView) reset() {
	for i := range v.counts {
		v.counts[i] = make(map[string]*topEntry)
	}
	v.total, v.offset = 0, 0
}

// Keys implements the component contract.
func (v *TopView) Keys() help.KeyMap { return v.keys }

// SetSize implements the component contract.
func (v *TopView) SetSize(w, h int) { v.width, v.height = w, h }

// Typing: keys go to the count's prompt while it shows.
func (v *TopView) Typing() bool { return v.kcount.prompting }

// Init implements the component contract.
func (v *TopView) Init() tea.Cmd { return nil }

// Add counts a batch.
func (v *TopView) Add(rows []Row) {
	for i := range rows {
		r := &rows[i]
		if r.Kind == stream.KindLost {
			continue
		}
		v.total++
		v.count(topByKey, r.TopKey())
		v.count(topByEvent, r.EventName())
		comm := r.Comm
		if comm == nil {
			comm = []byte("(no task)")
		}
		v.count(topByComm, comm)
	}
}

func (v *TopView) count(mode topMode, k []byte) {
	m := v.counts[mode]
	e := m[string(k)]
	if e == nil {
		if len(m) >= topMaxKeys {
			e = m["\x00other"]
			if e == nil {
				e = &topEntry{key: "(other)", other: true}
				m["\x00other"] = e
			}
		} else {
			e = &topEntry{key: string(k)}
			m[e.key] = e
		}
	}
	e.n++
}

// Tick computes the per-second rates (once a second), and reads the count's table again when
// one runs.
func (v *TopView) Tick() tea.Cmd {
	for _, m := range v.counts {
		for _, e := range m {
			e.rate, e.prev = e.n-e.prev, e.n
		}
	}
	return v.countTick()
}

// Update handles the view's keys, and the count's.
func (v *TopView) Update(msg tea.Msg) tea.Cmd {
	if cmd, handled := v.updateCount(msg); handled {
		return cmd
	}
	km, ok := msg.(tea.KeyPressMsg)
	if !ok {
		return nil
	}
	k := v.keys
	rows := v.rows()
	n := len(v.counts[v.mode])
	if v.kcount.running {
		n = v.countLen()
	}
	switch {
	case key.Matches(km, k.Mode):
		v.mode = (v.mode + 1) % topModes
		v.offset = 0
	case key.Matches(km, k.Reset):
		v.reset()
		return notice("top: counts reset", false)
	case key.Matches(km, k.Up):
		v.offset = max(v.offset-1, 0)
	case key.Matches(km, k.Down):
		v.offset = min(v.offset+1, max(n-rows, 0))
	case key.Matches(km, k.PageUp):
		v.offset = max(v.offset-rows, 0)
	case key.Matches(km, k.PageDown):
		v.offset = min(v.offset+rows, max(n-rows, 0))
	}
	return nil
}

func (v *TopView) rows() int { return max(v.height-2, 1) }

// less orders entries: most counted first, then by key.
func topLess(a, b *topEntry) bool {
	if a.n != b.n {
		return a.n > b.n
	}
	return a.key < b.key
}

// topHeap is a min-heap (by topLess reversed) keeping the k best entries.
type topHeap []*topEntry

func (h topHeap) Len() int           { return len(h) }
func (h topHeap) Less(i, j int) bool { return topLess(h[j], h[i]) }
func (h topHeap) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *topHeap) Push(x any)        { *h = append(*h, x.(*topEntry)) }
func (h *topHeap) Pop() any {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
}

// Best returns the k entries counted most, in order: a bounded heap, O(n log k), so that a
// frame costs little even over tens of thousands of functions.
func (v *TopView) Best(k int) []*topEntry {
	h := make(topHeap, 0, k+1)
	for _, e := range v.counts[v.mode] {
		if len(h) < k {
			heap.Push(&h, e)
		} else if k > 0 && topLess(e, h[0]) {
			h[0] = e
			heap.Fix(&h, 0)
		}
	}
	out := make([]*topEntry, len(h))
	for i := len(h) - 1; i >= 0; i-- {
		out[i] = heap.Pop(&h).(*topEntry)
	}
	return out
}

// View renders the view in exactly height lines.
func (v *TopView) View() string {
	s := v.env.styles
	lines := v.countView()
	if v.kcount.running {
		return strings.Join(block(strings.Join(lines, "\n"), v.width, v.height), "\n")
	}
	var modes []string
	for i, n := range topModeNames {
		if topMode(i) == v.mode {
			modes = append(modes, s.Bold.Render("["+n+"]"))
		} else {
			modes = append(modes, s.Dim.Render(n))
		}
	}
	lines = append(lines, fmt.Sprintf("top by %s · %s events since start or reset · %s keys · m mode · r reset · c/h count",
		strings.Join(modes, " "), itoa(v.total), itoa(int64(len(v.counts[v.mode])))))
	lines = append(lines, s.Header.Render(fmt.Sprintf(" %12s %7s %9s  %s", "COUNT", "%", "/s", strings.ToUpper(topModeNames[v.mode]))))
	rows := v.rows()
	best := v.Best(v.offset + rows)
	if v.offset < len(best) {
		best = best[v.offset:]
	} else {
		best = nil
	}
	for _, e := range best {
		pct := 0.0
		if v.total > 0 {
			pct = 100 * float64(e.n) / float64(v.total)
		}
		name := e.key
		if !e.other {
			name = string(stream.AppendEscaped(nil, []byte(e.key)))
		}
		lines = append(lines, fmt.Sprintf(" %12s %6.1f%% %9s  %s", itoa(e.n), pct, itoa(e.rate), name))
	}
	if v.total == 0 {
		lines = append(lines, s.Dim.Render(" waiting for events…"))
	}
	return strings.Join(block(strings.Join(lines, "\n"), v.width, v.height), "\n")
}
