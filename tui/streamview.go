package tui

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"charm.land/bubbles/v2/help"
	"charm.land/bubbles/v2/key"
	"charm.land/bubbles/v2/textinput"
	tea "charm.land/bubbletea/v2"
	"charm.land/lipgloss/v2"
	"github.com/charmbracelet/x/ansi"

	"github.com/ftctl/ftctl/stream"
)

// Column widths of the stream view (as in stream's text layout).
const (
	colTS    = 12
	colCPU   = 3
	colTask  = 22
	colEvent = 14
)

// promptKind says what the stream view's prompt is for.
type promptKind int

const (
	promptNone promptKind = iota
	promptSearch
	promptEvent
	promptComm
	promptPID
)

// StreamView shows the live events: a ring of the last N, followed (newest at the bottom) or
// paused and scrolled, narrowed by quick filters, searched with highlighting, with the rate and
// every loss counter always in its header.
type StreamView struct {
	env    *env
	keys   streamKeys
	pkeys  promptKeys
	ring   *Ring
	width  int
	height int

	reader string // the kernel file the events come from (Batch.Reader)

	filter   stream.Filter
	filtered bool
	matched  seqList // the Seqs the filter lets through (when filtered)

	follow   bool
	bottom   uint64 // Seq of the bottom row, when not following
	cursor   uint64 // Seq of the selected row, when not following
	newSince int64  // rows that arrived (and passed the filter) since following stopped

	query  string // the search, "" for none
	prompt textinput.Model
	pkind  promptKind

	// Counters.
	total         int64 // events received
	lostReported  int64 // sum of the kernel's LOST lines
	lostUncounted int64 // LOST lines without a number
	behind        int64 // rows the source dropped because the console fell behind
	rate          float64
	rateTotal     int64
	rateAt        time.Time
	baseOverrun   *int64 // the kernel's counters when the console started
	baseDropped   *int64
	overrun       int64 // their increase since
	dropped       int64
	ended         string // why the stream ended, "" while it runs

	// What the status bar says of the trace array, for the hint of an empty stream: the
	// tracer ("" until read) and tracing_on (nil until read, or unreadable).
	tracer    string
	tracingOn *bool
}

func newStreamView(e *env, ringSize int) *StreamView {
	p := newInput("", "", 256)
	return &StreamView{env: e, keys: newStreamKeys(), pkeys: newPromptKeys(), ring: NewRing(ringSize), follow: true, prompt: p}
}

// Keys implements the component contract.
func (v *StreamView) Keys() help.KeyMap { return v.keys }

// SetSize implements the component contract.
func (v *StreamView) SetSize(w, h int) {
	v.width, v.height = w, h
	v.prompt.SetWidth(max(w-20, 10))
}

// Typing says whether keys go to the prompt.
func (v *StreamView) Typing() bool { return v.pkind != promptNone }

// Init implements the component contract.
func (v *StreamView) Init() tea.Cmd { return nil }

// Add takes a batch into the ring (no rendering: the frame tick does that).
func (v *StreamView) Add(b Batch) {
	v.behind += b.Dropped
	if b.Reader != "" {
		v.reader = b.Reader
	}
	var ev stream.Event
	for i := range b.Rows {
		r := &b.Rows[i]
		v.total++
		if r.Kind == stream.KindLost {
			if r.Lost < 0 {
				v.lostUncounted++
			} else {
				v.lostReported += r.Lost
			}
		}
		seq := v.ring.Push(*r)
		pass := true
		if v.filtered {
			r.event(&ev)
			if pass = v.filter.Match(&ev); pass {
				v.matched.Append(seq)
			}
		}
		if pass && !v.follow {
			v.newSince++
		}
	}
	if v.filtered {
		v.matched.Trim(v.ring.Oldest())
	}
}

// Tick updates the rate (once a second).
func (v *StreamView) Tick(now time.Time) {
	if !v.rateAt.IsZero() {
		if dt := now.Sub(v.rateAt).Seconds(); dt > 0 {
			v.rate = float64(v.total-v.rateTotal) / dt
		}
	}
	v.rateAt, v.rateTotal = now, v.total
}

// emptyLines say why no row shows, and while the stream waits, how to get events: what the
// trace array's state (the status bar's) leaves out, and the keys that change it. Each line
// fits 80 columns.
func (v *StreamView) emptyLines() []string {
	const waiting = "waiting for events…"
	switch {
	case v.total > 0:
		return []string{"no event matches the filter · x clears it"}
	case v.ended != "":
		return nil // the header says why
	case v.env.recording:
		return []string{"reading the recording…"}
	case v.tracingOn != nil && !*v.tracingOn:
		return []string{waiting, "tracing is off in the " + v.env.instanceLabel() + ": O turns it on"}
	case v.tracer == "nop":
		return []string{waiting,
			"the tracer is nop: only enabled events show here",
			"· functions: mark them in 2 (Functions), then T starts the function tracer",
			"· a probe: 3 (Probes), a adds one, enabled here"}
	case v.tracer != "":
		return []string{waiting,
			"the " + safe(v.tracer) + " tracer runs, but nothing it traces ran yet",
			"· 2 (Functions) changes the functions it traces · 3 (Probes) adds a probe"}
	}
	return []string{waiting}
}

// SetStatus takes the kernel's loss counters (the first reading is the baseline), and the
// tracer and tracing_on for the hint of an empty stream.
func (v *StreamView) SetStatus(st Status) {
	v.tracer, v.tracingOn = st.Tracer, st.TracingOn
	if st.Overrun != nil {
		if v.baseOverrun == nil {
			o := *st.Overrun
			v.baseOverrun = &o
		}
		v.overrun = *st.Overrun - *v.baseOverrun
	}
	if st.Dropped != nil {
		if v.baseDropped == nil {
			d := *st.Dropped
			v.baseDropped = &d
		}
		v.dropped = *st.Dropped - *v.baseDropped
	}
}

// The visible list: every row of the ring, or the filtered ones.

func (v *StreamView) count() int {
	if v.filtered {
		return v.matched.Len()
	}
	return v.ring.Len()
}

func (v *StreamView) seqAt(i int) uint64 {
	if v.filtered {
		return v.matched.At(i)
	}
	return v.ring.Oldest() + uint64(i)
}

// indexOf is the position of the last visible row whose Seq <= seq, -1 when none.
func (v *StreamView) indexOf(seq uint64) int {
	if v.filtered {
		return v.matched.Index(seq)
	}
	if seq < v.ring.Oldest() {
		return -1
	}
	return min(int(seq-v.ring.Oldest()), v.ring.Len()-1)
}

// rowsHeight is how many event rows fit.
func (v *StreamView) rowsHeight() int {
	h := v.height - 3 - len(v.endedLines())
	if v.pkind != promptNone {
		h--
	}
	return max(h, 1)
}

// endedLines say why the stream ended, whole, under the filter line.
func (v *StreamView) endedLines() []string {
	if v.ended == "" {
		return nil
	}
	return atMost(wrapLines(v.env.styles.Err, "", v.ended, v.width), v.height/2, v.width)
}

// window returns the positions of the top and bottom rows shown and of the selected one.
func (v *StreamView) window() (top, bottom, cur int) {
	n, rows := v.count(), v.rowsHeight()
	if n == 0 {
		return 0, -1, -1
	}
	if v.follow {
		bottom = n - 1
		cur = -1
	} else {
		bottom = v.indexOf(v.bottom)
		if bottom < 0 { // evicted: stay at the oldest page
			bottom = min(rows-1, n-1)
		}
		cur = v.indexOf(v.cursor)
	}
	top = max(0, bottom-rows+1)
	if bottom-top+1 < rows { // a short list: fill downwards
		bottom = min(n-1, top+rows-1)
	}
	if !v.follow {
		cur = min(max(cur, top), bottom)
	}
	return top, bottom, cur
}

// stopFollowing freezes the view where it is.
func (v *StreamView) stopFollowing() {
	if !v.follow {
		return
	}
	v.follow = false
	v.newSince = 0
	if n := v.count(); n > 0 {
		v.bottom = v.seqAt(n - 1)
		v.cursor = v.bottom
	}
}

// move moves the selection by d rows (negative: older), scrolling as needed.
func (v *StreamView) move(d int) {
	v.stopFollowing()
	n := v.count()
	if n == 0 {
		return
	}
	top, bottom, cur := v.window()
	cur = min(max(cur+d, 0), n-1)
	rows := v.rowsHeight()
	if cur < top {
		bottom = cur + rows - 1
	} else if cur > bottom {
		bottom = cur
	}
	bottom = min(max(bottom, 0), n-1)
	v.cursor, v.bottom = v.seqAt(cur), v.seqAt(bottom)
}

// jump selects position i, scrolling so that it shows.
func (v *StreamView) jump(i int) {
	v.stopFollowing()
	top, bottom, _ := v.window()
	if i < top || i > bottom {
		bottom = min(i+v.rowsHeight()/2, v.count()-1)
	}
	v.cursor, v.bottom = v.seqAt(i), v.seqAt(bottom)
}

// selected is the selected row (the newest when following), nil when empty.
func (v *StreamView) selected() *Row {
	_, bottom, cur := v.window()
	if bottom < 0 {
		return nil
	}
	if cur < 0 {
		cur = bottom
	}
	return v.ring.At(v.seqAt(cur))
}

// setFilter applies a new filter and rebuilds the list of what passes.
func (v *StreamView) setFilter(f stream.Filter) error {
	if err := f.Validate(); err != nil {
		return err
	}
	keep := v.selected()
	v.filter = f
	v.filtered = len(f.Events) > 0 || f.HasPID || f.Comm != ""
	v.matched.Reset()
	if v.filtered {
		var ev stream.Event
		for seq := v.ring.Oldest(); seq <= v.ring.Newest(); seq++ {
			r := v.ring.At(seq)
			r.event(&ev)
			if v.filter.Match(&ev) {
				v.matched.Append(seq)
			}
		}
	}
	if !v.follow && keep != nil {
		v.cursor, v.bottom = keep.Seq, keep.Seq
	}
	return nil
}

// rowText is what search looks at: the task, event and detail columns as shown.
func rowText(dst []byte, r *Row) []byte {
	dst = appendTask(dst, r)
	dst = append(dst, ' ')
	dst = stream.AppendEscaped(dst, r.EventName())
	dst = append(dst, ' ')
	return append(dst, r.Detail()...)
}

// find looks for the query from position from, towards older rows (dir -1) or newer (+1).
func (v *StreamView) find(from, dir int) int {
	if v.query == "" {
		return -1
	}
	q := lowerASCII(v.query)
	var buf []byte
	for i := from; i >= 0 && i < v.count(); i += dir {
		buf = rowText(buf[:0], v.ring.At(v.seqAt(i)))
		if strings.Contains(lowerASCII(string(buf)), q) {
			return i
		}
	}
	return -1
}

func lowerASCII(s string) string {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c >= 'A' && c <= 'Z' {
			b := []byte(s)
			for j := i; j < len(b); j++ {
				if b[j] >= 'A' && b[j] <= 'Z' {
					b[j] += 'a' - 'A'
				}
			}
			return string(b)
		}
	}
	return s
}

// searchAgain moves to the next match of the search, upwards (dir -1: older) or downwards.
func (v *StreamView) searchAgain(dir int) tea.Cmd {
	if v.query == "" {
		return notice("no search: / starts one", true)
	}
	_, bottom, cur := v.window()
	if cur < 0 {
		cur = bottom
		if dir < 0 {
			cur++ // following: the newest row is a candidate too
		}
	}
	i := v.find(cur+dir, dir)
	if i < 0 {
		return notice(fmt.Sprintf("%q: no more matches %s", v.query, map[int]string{-1: "above", 1: "below"}[dir]), false)
	}
	v.jump(i)
	return nil
}

// prefill is what a filter's prompt starts with: the filter as it is, else the selected row's.
func (v *StreamView) prefill(kind promptKind) string {
	r := v.selected()
	switch kind {
	case promptEvent:
		val := strings.Join(v.filter.Events, " ")
		if val == "" && r != nil {
			val = string(stream.AppendEscaped(nil, r.EventName()))
		}
		return val
	case promptComm:
		val := v.filter.Comm
		if val == "" && r != nil && r.Comm != nil {
			val = string(stream.AppendEscaped(nil, r.Comm))
		}
		return val
	case promptPID:
		if v.filter.HasPID {
			return strconv.Itoa(v.filter.PID)
		} else if r != nil && r.Comm != nil {
			return strconv.Itoa(int(r.PID))
		}
	}
	return ""
}

// Update handles the view's keys.
func (v *StreamView) Update(msg tea.Msg) tea.Cmd {
	if p, ok := msg.(tea.PasteMsg); ok && v.pkind != promptNone {
		var cmd tea.Cmd
		v.prompt, cmd = v.prompt.Update(p)
		return cmd
	}
	km, ok := msg.(tea.KeyPressMsg)
	if !ok {
		return nil
	}
	if v.pkind != promptNone {
		return v.updatePrompt(km)
	}
	k := v.keys
	switch {
	case key.Matches(km, k.Pause):
		if v.follow {
			v.stopFollowing()
		} else {
			v.follow = true
		}
	case key.Matches(km, k.Follow):
		v.follow = true
	case key.Matches(km, k.Up):
		v.move(-1)
	case key.Matches(km, k.Down):
		v.move(1)
	case key.Matches(km, k.PageUp):
		v.move(-v.rowsHeight())
	case key.Matches(km, k.PageDown):
		v.move(v.rowsHeight())
	case key.Matches(km, k.Oldest):
		if v.count() > 0 {
			v.jump(0)
		}
	case key.Matches(km, k.Search):
		return v.openPrompt(promptSearch, "search: ", v.query)
	case key.Matches(km, k.Next), key.Matches(km, k.Prev):
		dir := -1
		if key.Matches(km, k.Prev) {
			dir = 1
		}
		return v.searchAgain(dir)
	case key.Matches(km, k.Event):
		return v.openPrompt(promptEvent, "event (glob, empty: any): ", v.prefill(promptEvent))
	case key.Matches(km, k.Comm):
		return v.openPrompt(promptComm, "comm (glob, empty: any): ", v.prefill(promptComm))
	case key.Matches(km, k.PID):
		return v.openPrompt(promptPID, "pid (empty: any): ", v.prefill(promptPID))
	case key.Matches(km, k.Clear):
		v.query = ""
		if err := v.setFilter(stream.Filter{}); err != nil {
			return notice(err.Error(), true)
		}
		return notice("filters and search cleared", false)
	}
	return nil
}

func (v *StreamView) openPrompt(kind promptKind, label, value string) tea.Cmd {
	v.pkind = kind
	v.prompt.Prompt = label
	v.prompt.SetValue(value)
	v.prompt.CursorEnd()
	return v.prompt.Focus()
}

func (v *StreamView) updatePrompt(km tea.KeyPressMsg) tea.Cmd {
	switch {
	case key.Matches(km, v.pkeys.Cancel):
		v.pkind = promptNone
		v.prompt.Blur()
		return nil
	case key.Matches(km, v.pkeys.Accept):
		kind, val := v.pkind, strings.TrimSpace(v.prompt.Value())
		v.pkind = promptNone
		v.prompt.Blur()
		return v.accept(kind, val)
	}
	var cmd tea.Cmd
	v.prompt, cmd = v.prompt.Update(km)
	return cmd
}

func (v *StreamView) accept(kind promptKind, val string) tea.Cmd {
	f := v.filter
	switch kind {
	case promptSearch:
		v.query = val
		if val == "" {
			return nil
		}
		_, bottom, cur := v.window()
		if cur < 0 {
			cur = bottom
		}
		if i := v.find(cur, -1); i >= 0 {
			v.jump(i)
		} else if i := v.find(cur+1, 1); i >= 0 {
			v.jump(i)
		} else {
			return notice(fmt.Sprintf("%q: not found in the %s events kept", val, itoa(int64(v.count()))), false)
		}
		return nil
	case promptEvent:
		f.Events = nil
		for _, e := range strings.Fields(val) {
			if _, name, ok := strings.Cut(e, ":"); ok {
				e = name // trace_pipe names the event, not its system
			}
			f.Events = append(f.Events, e)
		}
	case promptComm:
		f.Comm = val
	case promptPID:
		f.HasPID, f.PID = false, 0
		if val != "" {
			pid, err := strconv.Atoi(val)
			if err != nil || pid < 0 {
				return notice(fmt.Sprintf("pid %q: not a process id", safe(val)), true)
			}
			f.HasPID, f.PID = true, pid
		}
	}
	if err := v.setFilter(f); err != nil {
		return notice(safe(err.Error()), true)
	}
	return nil
}

// filterText describes the quick filters.
func (v *StreamView) filterText() string {
	if !v.filtered {
		return ""
	}
	var parts []string
	if len(v.filter.Events) > 0 {
		parts = append(parts, "event="+safe(strings.Join(v.filter.Events, ",")))
	}
	if v.filter.Comm != "" {
		parts = append(parts, "comm="+safe(v.filter.Comm))
	}
	if v.filter.HasPID {
		parts = append(parts, "pid="+strconv.Itoa(v.filter.PID))
	}
	return strings.Join(parts, " ")
}

// View renders the view in exactly height lines of width cells.
func (v *StreamView) View() string {
	s := v.env.styles
	// 1: state and counters, always visible; 2: filters and search.
	lines := []string{fit(v.counters(), v.width), fit(v.filterLine(), v.width)}
	for _, l := range v.endedLines() {
		lines = append(lines, fit(l, v.width))
	}
	// 3: column headers.
	hdr := " " + padLeft("TIME", colTS) + " " + padLeft("CPU", colCPU) + " " + padRight("TASK", colTask) + " " +
		padRight("EVENT", colEvent) + " DETAIL"
	lines = append(lines, fit(s.Header.Render(cut(hdr, v.width)), v.width))
	// rows
	head, rows := len(lines), v.rowsHeight()
	top, bottom, cur := v.window()
	q := lowerASCII(v.query)
	var buf []byte
	for i := top; i <= bottom && i >= 0; i++ {
		r := v.ring.At(v.seqAt(i))
		if r == nil {
			continue
		}
		buf = v.renderRow(buf[:0], r, i == cur, q)
		lines = append(lines, fit(string(buf), v.width))
	}
	if v.count() == 0 {
		for _, msg := range v.emptyLines() {
			if len(lines) < head+rows {
				lines = append(lines, fit(s.Dim.Render(" "+msg), v.width))
			}
		}
	}
	for len(lines) < head+rows {
		lines = append(lines, strings.Repeat(" ", v.width))
	}
	if v.pkind != promptNone {
		lines = append(lines, fit(v.prompt.View(), v.width))
	}
	return strings.Join(lines, "\n")
}

// counters is the top line: following, paused or ended, the rate, the counts and the losses.
func (v *StreamView) counters() string {
	s := v.env.styles
	var state string
	switch {
	case v.ended != "":
		state = s.Err.Render("■ ENDED")
	case v.follow:
		state = s.OK.Render("● FOLLOWING")
	default:
		state = s.Paused.Render(" PAUSED ") + " +" + itoa(v.newSince) + " new"
	}
	lost := fmt.Sprintf("lost: %s reported · %s overrun · %s dropped", itoa(v.lostReported), itoa(v.overrun), itoa(v.dropped))
	if v.lostUncounted > 0 {
		lost += fmt.Sprintf(" (+%s LOST lines uncounted)", itoa(v.lostUncounted))
	}
	if v.behind > 0 {
		lost += " · " + itoa(v.behind) + " behind (not shown)"
	}
	lostStyle := s.Dim
	if v.lostReported+v.lostUncounted+v.overrun+v.dropped+v.behind > 0 {
		lostStyle = s.Err
	}
	return fmt.Sprintf("%s  %s ev/s · %s events · %s kept  %s", state,
		itoa(int64(v.rate+0.5)), itoa(v.total), itoa(int64(v.ring.Len())), lostStyle.Render(lost))
}

// filterLine is the second line: the filters, the search and the reader.
func (v *StreamView) filterLine() string {
	s := v.env.styles
	var fl string
	if ft := v.filterText(); ft != "" {
		fl = s.Warn.Render("filter: "+ft) + fmt.Sprintf(" · %s match", itoa(int64(v.count())))
	} else {
		fl = s.Dim.Render("no filter (e event · c comm · p pid)")
	}
	if v.query != "" {
		fl += "  " + s.Highlight.Render("search: "+v.query) + s.Dim.Render(" n/N")
	} else {
		fl += s.Dim.Render(" · / search")
	}
	if v.reader != "" {
		fl += s.Dim.Render(" · reading " + safe(v.reader))
	}
	return fl
}

// segment is a piece of a row with its style.
type segment struct {
	text  string
	style lipgloss.Style
	plain bool // no style: the text as it is
}

// renderRow lays a row out in columns, each with its colour, the search matches highlighted.
// Every piece of trace data in it is escaped already (the ingester did it, or appendTask and
// AppendEscaped here).
func (v *StreamView) renderRow(dst []byte, r *Row, selected bool, q string) []byte {
	s := v.env.styles
	mark := " "
	if selected {
		mark = ">"
	}
	cpu := ""
	if r.CPU >= 0 && r.Comm != nil {
		cpu = strconv.Itoa(int(r.CPU))
	}
	var task []byte
	task = appendTask(task, r)
	var name string
	if r.Kind == stream.KindLost {
		name = "LOST"
		cpu = strconv.Itoa(int(r.CPU))
	} else {
		name = string(stream.AppendEscaped(nil, r.EventName()))
	}
	segs := []segment{
		{text: mark, style: s.Selected},
		{text: padLeft(r.TS(), colTS), style: s.TS},
		{text: " " + padLeft(cpu, colCPU) + " ", style: s.CPU},
		{text: padRight(string(task), colTask), style: s.Task},
		{text: " ", plain: true},
		{text: padRight(name, colEvent), style: s.Kind[r.Kind]},
		{text: " " + r.Detail(), plain: !selected},
	}
	if selected {
		for i := range segs {
			segs[i].style = segs[i].style.Bold(true)
		}
	}
	return renderSegments(dst, segs, v.width, q, s.Highlight)
}

// renderSegments styles the segments, cut to width cells, with every occurrence of q (lower
// case ASCII; "" for none) in the plain text highlighted.
func renderSegments(dst []byte, segs []segment, width int, q string, hl lipgloss.Style) []byte {
	var plain strings.Builder
	for _, sg := range segs {
		plain.WriteString(sg.text)
	}
	line := ansi.Truncate(plain.String(), width, "") // a prefix: the text has no escape sequences
	// Highlight ranges, in bytes of line.
	var hls [][2]int
	if q != "" {
		low := lowerASCII(line)
		for at := 0; ; {
			i := strings.Index(low[at:], q)
			if i < 0 {
				break
			}
			hls = append(hls, [2]int{at + i, at + i + len(q)})
			at += i + len(q)
		}
	}
	pos := 0
	for _, sg := range segs {
		if pos >= len(line) {
			break
		}
		end := min(pos+len(sg.text), len(line))
		for pos < end {
			// the next boundary: a highlight start or end, or the segment's end
			next, inHL := end, false
			for _, h := range hls {
				if h[0] <= pos && pos < h[1] {
					next, inHL = min(end, h[1]), true
					break
				}
				if h[0] > pos && h[0] < next {
					next = h[0]
				}
			}
			piece := line[pos:next]
			switch {
			case inHL:
				dst = append(dst, hl.Render(piece)...)
			case sg.plain:
				dst = append(dst, piece...)
			default:
				dst = append(dst, sg.style.Render(piece)...)
			}
			pos = next
		}
	}
	return dst
}
