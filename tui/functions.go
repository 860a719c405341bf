package tui

import (
	"errors"
	"fmt"
	"strings"
	"sync/atomic"

	"charm.land/bubbles/v2/help"
	"charm.land/bubbles/v2/key"
	"charm.land/bubbles/v2/textinput"
	tea "charm.land/bubbletea/v2"

	"github.com/ftctl/ftctl/filters"
)

// mark is a pattern the user chose for a list.
type mark struct {
	text  string
	pat   *filters.Pattern
	file  string // filters.FilterFile or filters.NotraceFile
	count int    // functions it selected when marked
}

// planLine is one list's transition, for the confirmation.
type planLine struct {
	file                    string
	before, after           int
	added, removed          int
	beforeEmpty, afterEmpty bool
}

// FunctionsView previews patterns against available_filter_functions on every keystroke (the
// count and the first matches, with close names when nothing matches), collects marked
// patterns for the filter and the notrace list, and applies them with the swap protocol after
// a confirmation that shows what each list gains and loses.
type FunctionsView struct {
	env    *env
	keys   functionsKeys
	ckeys  confirmKeys
	width  int
	height int

	ix      *filters.Index
	pv      *filters.Previewer
	ixErr   error
	loading bool

	input  textinput.Model
	target string // where Enter puts the pattern

	// The preview of what is typed. The matches are resolved in a command (off the event loop);
	// while it runs, pending is set and no count is shown: the count on screen is always the
	// current text's. seq numbers the texts: a command whose text is no longer current gives up
	// between chunks, and a late answer is dropped.
	pat     *filters.Pattern
	patErr  error
	matches []int
	pending bool
	suggest []string
	seq     *atomic.Uint64
	cache   previewCache
	// stats counts how previews were answered (tests): from the cache; within earlier matches
	// or over the index; at once or in a command.
	stats struct{ cached, narrowedNow, narrowedLater, scannedNow, scannedLater int }
	// inlineMost is the most names or records a preview tests at once, on the event loop
	// (inlineWithin; tests lower it to exercise both ways).
	inlineMost int

	marks []mark
	sel   int

	lists    Lists
	listsSet bool

	confirm  *planMsg // the plan awaiting y/n
	applying bool
}

// newFunctionsView makes the view with the pattern field not focused: as the other views' fields
// (the Stream view's search, the Probes view's definition), it takes the keys only after / (or
// i) and gives them back on enter or esc, so that 1-5, T, O and q work on arrival.
func newFunctionsView(e *env) *FunctionsView {
	in := newInput("pattern> ", "a kernel glob: vfs_*, *sched*, tcp_v4_*:mod:!*, ext4_*:mod:ext4", 256)
	return &FunctionsView{env: e, keys: newFunctionsKeys(), ckeys: newConfirmKeys(), input: in,
		target: filters.FilterFile, loading: true, seq: new(atomic.Uint64), inlineMost: inlineWithin}
}

// Keys implements the component contract: the keys of the field while typing, else the marks'.
func (v *FunctionsView) Keys() help.KeyMap {
	if v.env.recording {
		return noKeys{}
	}
	if v.input.Focused() {
		return functionsFieldKeys{v.keys}
	}
	return v.keys
}

// SetSize implements the component contract.
func (v *FunctionsView) SetSize(w, h int) {
	v.width, v.height = w, h
	v.input.SetWidth(max(w-len(v.input.Prompt)-14, 10))
}

// Typing says whether keys go to the pattern field.
func (v *FunctionsView) Typing() bool { return v.input.Focused() && v.confirm == nil }

// Init loads the index and the lists (IO: in commands); over a recording, nothing: there is no
// kernel to read them from, and the view says so.
func (v *FunctionsView) Init() tea.Cmd {
	if v.env.recording {
		v.loading = false
		return nil
	}
	return tea.Batch(v.loadIndex(), v.loadLists())
}

func (v *FunctionsView) loadIndex() tea.Cmd {
	b := v.env.backend
	return func() tea.Msg {
		ix, err := b.Index()
		if err != nil {
			return indexMsg{err: err}
		}
		return indexMsg{ix: ix, pv: filters.NewPreviewer(ix)}
	}
}

func (v *FunctionsView) loadLists() tea.Cmd {
	b := v.env.backend
	return func() tea.Msg {
		l, err := b.Lists()
		return listsMsg{l, err}
	}
}

// SetIndex takes the loaded index.
func (v *FunctionsView) SetIndex(m indexMsg) tea.Cmd {
	v.loading = false
	v.ix, v.pv, v.ixErr = m.ix, m.pv, m.err
	if v.ix != nil && (v.pv == nil || v.pv.Index() != v.ix) {
		v.pv = filters.NewPreviewer(v.ix)
	}
	v.cache = previewCache{}
	return v.preview()
}

// suggestMsg carries close names for a pattern that matched nothing.
type suggestMsg struct {
	seq   uint64
	names []string
}

// SetLists takes the lists read.
func (v *FunctionsView) SetLists(m listsMsg) {
	if m.err == nil {
		v.lists, v.listsSet = m.l, true
	}
}

// preview resolves what is typed. A text seen lately (a backspace) is answered from the cache at
// once. Otherwise it is resolved within the matches of a cached pattern it provably narrows
// (filters.Pattern.Narrows: "vfs_*" then "vfs_*x") or over the index: at once when that means
// testing a few thousand names or records at most, else in a command whose answer comes back as
// a previewMsg. Close names for a pattern that matches nothing (an edit
// distance to every name) come after the count, in another command.
func (v *FunctionsView) preview() tea.Cmd {
	seq := v.seq.Add(1)
	text := strings.TrimSpace(v.input.Value())
	v.pat, v.patErr, v.matches, v.suggest, v.pending = nil, nil, nil, nil, false
	if text == "" || v.pv == nil {
		return nil
	}
	p, err := filters.Compile(text)
	if err != nil {
		v.patErr = err
		return nil
	}
	v.pat = p
	if e := v.cache.get(text); e != nil {
		v.stats.cached++
		v.matches = e.matches
		return v.suggestions()
	}
	pv, cur, within := v.pv, v.seq, v.cache.within(p, v.ix.Len()/4)
	now := pv.Cost(p, within) <= v.inlineMost
	switch {
	case within != nil && now:
		v.stats.narrowedNow++
	case within != nil:
		v.stats.narrowedLater++
	case now:
		v.stats.scannedNow++
	default:
		v.stats.scannedLater++
	}
	if now {
		// A tenth of a millisecond at most (a lookup, names with a given start, a few earlier
		// matches): less than a trip through a command, which on a busy machine may wait for
		// a CPU.
		m, _ := pv.Resolve(p, within, nil)
		return v.setPreview(previewMsg{seq: seq, text: text, pat: p, matches: m})
	}
	v.pending = true
	return func() tea.Msg {
		m, ok := pv.Resolve(p, within, func() bool { return cur.Load() != seq })
		if !ok {
			return nil // the text changed: nobody waits for this answer
		}
		return previewMsg{seq: seq, text: text, pat: p, matches: m}
	}
}

// inlineWithin is the most names or records a preview tests on the event loop (filters.
// Previewer.Cost); more runs in a command.
const inlineWithin = 4096

// previewMsg is the answer of a preview command.
type previewMsg struct {
	seq     uint64
	text    string
	pat     *filters.Pattern
	matches []int
}

// setPreview takes a preview's answer if its text is still the current one.
func (v *FunctionsView) setPreview(m previewMsg) tea.Cmd {
	if m.seq != v.seq.Load() {
		return nil
	}
	if m.matches == nil {
		m.matches = []int{}
	}
	v.matches, v.pending = m.matches, false
	v.cache.put(previewEntry{text: m.text, pat: m.pat, matches: m.matches})
	return v.suggestions()
}

// suggestions computes close names when the current pattern matches nothing.
func (v *FunctionsView) suggestions() tea.Cmd {
	if len(v.matches) > 0 || v.pat == nil {
		return nil
	}
	seq, cur, pv, lit := v.seq.Load(), v.seq, v.pv, v.pat.Literal()
	return func() tea.Msg {
		names, ok := pv.Suggest(lit, 5, func() bool { return cur.Load() != seq })
		if !ok {
			return nil
		}
		return suggestMsg{seq, names}
	}
}

// resolveNow finishes a pending preview on the event loop, for a key that needs the matches at
// once (enter marks the pattern): a few milliseconds at most, once.
func (v *FunctionsView) resolveNow() {
	if !v.pending || v.pat == nil {
		return
	}
	m, _ := v.pv.Resolve(v.pat, v.cache.within(v.pat, v.ix.Len()/4), nil)
	v.setPreview(previewMsg{seq: v.seq.Load(), text: v.pat.Text, pat: v.pat, matches: m})
}

// Update handles the view's keys and the answers of its commands.
func (v *FunctionsView) Update(msg tea.Msg) tea.Cmd {
	switch msg := msg.(type) {
	case indexMsg:
		cmd := v.SetIndex(msg)
		if msg.err != nil {
			return notice(describeErr("reading "+filters.IndexFile, msg.err), true)
		}
		return cmd
	case previewMsg:
		return v.setPreview(msg)
	case suggestMsg:
		if msg.seq == v.seq.Load() {
			v.suggest = msg.names
		}
		return nil
	case listsMsg:
		v.SetLists(msg)
		return nil
	case planMsg:
		if msg.err != nil {
			return notice(describeErr("planning", msg.err), true)
		}
		m := msg
		v.confirm = &m
		return nil
	case appliedMsg:
		v.applying = false
		if msg.err != nil {
			return tea.Batch(v.loadLists(), notice(describeErr("applying", msg.err), true))
		}
		v.marks, v.sel = nil, 0
		var parts []string
		for _, r := range msg.res {
			parts = append(parts, fmt.Sprintf("%s: %s (+%d −%d)", r.File, plural(r.After, "function"), r.Added, r.Removed))
		}
		return tea.Batch(v.loadLists(), notice("applied, verified: "+strings.Join(parts, "; "), false))
	case tea.KeyPressMsg:
		return v.updateKey(msg)
	case tea.PasteMsg:
		if v.Typing() {
			return v.edit(msg)
		}
	}
	return nil
}

// edit gives a key or a paste to the pattern field and previews the text if it changed.
func (v *FunctionsView) edit(msg tea.Msg) tea.Cmd {
	var cmd tea.Cmd
	old := v.input.Value()
	v.input, cmd = v.input.Update(msg)
	if v.input.Value() != old {
		return tea.Batch(cmd, v.preview())
	}
	return cmd
}

func (v *FunctionsView) updateKey(km tea.KeyPressMsg) tea.Cmd {
	k := v.keys
	if v.confirm != nil {
		return v.confirmKey(km)
	}
	if v.env.recording {
		switch {
		case key.Matches(km, k.Edit), key.Matches(km, k.Apply), key.Matches(km, k.Load):
			return notice(recordingNote(noFunctions), false)
		}
		return nil
	}
	if v.input.Focused() {
		return v.typingKey(km)
	}
	switch {
	case key.Matches(km, k.Edit):
		return v.input.Focus()
	case key.Matches(km, k.Target):
		if v.sel < len(v.marks) {
			m := &v.marks[v.sel]
			m.file = other(m.file)
		} else {
			v.toggleTarget()
		}
	case key.Matches(km, k.Up):
		v.sel = max(v.sel-1, 0)
	case key.Matches(km, k.Down):
		v.sel = min(v.sel+1, max(len(v.marks)-1, 0))
	case key.Matches(km, k.Unmark):
		if v.sel < len(v.marks) {
			v.marks = append(v.marks[:v.sel], v.marks[v.sel+1:]...)
			v.sel = min(v.sel, max(len(v.marks)-1, 0))
		}
	case key.Matches(km, k.Apply):
		return v.plan()
	case key.Matches(km, k.Load):
		v.loading = true
		return tea.Batch(v.loadIndex(), v.loadLists())
	}
	return nil
}

// confirmKey answers the question of applying the plan: y applies it, n drops it.
func (v *FunctionsView) confirmKey(km tea.KeyPressMsg) tea.Cmd {
	switch {
	case key.Matches(km, v.ckeys.Yes):
		changes := v.confirm.changes
		v.confirm, v.applying = nil, true
		b, ctx := v.env.backend, v.env.ctx
		return tea.Batch(notice("applying…", false), func() tea.Msg {
			res, err := b.Apply(ctx, changes)
			return appliedMsg{res, err}
		})
	case key.Matches(km, v.ckeys.No):
		v.confirm = nil
		return notice("nothing applied", false)
	}
	return nil
}

// typingKey handles a key while a pattern is typed: enter marks it (on an empty pattern,
// plans the marks), tab switches the list, esc leaves the field, anything else edits.
func (v *FunctionsView) typingKey(km tea.KeyPressMsg) tea.Cmd {
	k := v.keys
	switch {
	case key.Matches(km, k.Leave):
		v.input.Blur()
		return nil
	case key.Matches(km, k.Target):
		v.toggleTarget()
		return nil
	case key.Matches(km, k.Mark):
		if strings.TrimSpace(v.input.Value()) == "" {
			return v.plan()
		}
		return v.mark()
	}
	return v.edit(km)
}

func other(file string) string {
	if file == filters.FilterFile {
		return filters.NotraceFile
	}
	return filters.FilterFile
}

func (v *FunctionsView) toggleTarget() { v.target = other(v.target) }

// mark adds what is typed to the marks, if it selects something, and leaves the field.
func (v *FunctionsView) mark() tea.Cmd {
	text := strings.TrimSpace(v.input.Value())
	v.resolveNow()
	switch {
	case v.ix == nil:
		return notice("the function list is not loaded yet", true)
	case v.patErr != nil:
		return notice(safe(v.patErr.Error()), true)
	case len(v.matches) == 0:
		msg := fmt.Sprintf("%q matches no traceable function", safe(text))
		if len(v.suggest) > 0 {
			msg += "; close: " + safe(strings.Join(v.suggest, ", "))
		}
		return notice(msg, true)
	}
	// Marked (or marked already): the field empties and gives the keys back to the marks, so
	// that a applies them, as the hint says; / or i types another pattern.
	defer v.input.Blur()
	for i, m := range v.marks {
		if m.text == text && m.file == v.target {
			v.sel = i
			v.input.SetValue("")
			return v.preview()
		}
	}
	v.marks = append(v.marks, mark{text: text, pat: v.pat, file: v.target, count: len(v.matches)})
	v.sel = len(v.marks) - 1
	v.input.SetValue("")
	return v.preview()
}

// changes turns the marks into list changes: the marks are what each list becomes. With both
// lists: notrace := N ∪ N', then filter := F', then notrace := N' (as `ftctl filter set F
// --except N`), so that no intermediate state traces a function neither configuration traces.
func (v *FunctionsView) changes() []filters.Change {
	var f, n []*filters.Pattern
	for _, m := range v.marks {
		if m.file == filters.FilterFile {
			f = append(f, m.pat)
		} else {
			n = append(n, m.pat)
		}
	}
	switch {
	case len(f) > 0 && len(n) > 0:
		return []filters.Change{
			{File: filters.NotraceFile, Op: filters.OpAdd, Patterns: n},
			{File: filters.FilterFile, Op: filters.OpSet, Patterns: f},
			{File: filters.NotraceFile, Op: filters.OpSet, Patterns: n},
		}
	case len(f) > 0:
		return []filters.Change{{File: filters.FilterFile, Op: filters.OpSet, Patterns: f}}
	case len(n) > 0:
		return []filters.Change{{File: filters.NotraceFile, Op: filters.OpSet, Patterns: n}}
	}
	return nil
}

// plan reads the lists (a command) and computes each one's transition for the confirmation.
func (v *FunctionsView) plan() tea.Cmd {
	if len(v.marks) == 0 {
		return notice("nothing marked: / types a pattern, enter marks it", true)
	}
	if v.applying {
		return nil
	}
	changes, ix, b := v.changes(), v.ix, v.env.backend
	return func() tea.Msg {
		l, err := b.Lists()
		if err != nil {
			return planMsg{err: err}
		}
		lines, err := planLines(ix, l, changes)
		return planMsg{lines: lines, changes: changes, err: err}
	}
}

// planLines is the net effect of changes on each list (pure).
func planLines(ix *filters.Index, l Lists, changes []filters.Change) ([]planLine, error) {
	final := map[string]filters.Change{}
	var order []string
	for _, ch := range changes {
		if _, ok := final[ch.File]; !ok {
			order = append(order, ch.File)
		}
		final[ch.File] = ch
	}
	var out []planLine
	for _, file := range order {
		before, err := l.Filter, l.FilterErr
		if file == filters.NotraceFile {
			before, err = l.Notrace, l.NotraceErr
		}
		if err != nil {
			return nil, err
		}
		st, err := filters.PlanStep(ix, before, final[file])
		if err != nil {
			return nil, err
		}
		pl := planLine{file: file, before: st.Before.Total(), after: st.Expect.Total(),
			beforeEmpty: len(st.Before) == 0, afterEmpty: len(st.Expect) == 0}
		for k, c := range st.Expect {
			pl.added += max(c-st.Before[k], 0)
		}
		for k, c := range st.Before {
			pl.removed += max(c-st.Expect[k], 0)
		}
		out = append(out, pl)
	}
	if len(out) == 0 {
		return nil, errors.New("nothing to change")
	}
	return out, nil
}

func listText(file string, n int, empty bool) string {
	if empty {
		if file == filters.FilterFile {
			return "empty (every function)"
		}
		return "empty"
	}
	return plural(n, "function")
}

// noFunctions is what the Functions view lacks over a recording.
const noFunctions = "no function list to preview, no filter to change"

// View renders the view in exactly height lines.
func (v *FunctionsView) View() string {
	s := v.env.styles
	w := v.width
	if v.env.recording {
		return strings.Join(block(strings.Join(wrapLines(s.Dim, "", recordingNote(noFunctions), w), "\n"), w, v.height), "\n")
	}
	tgt := s.FilterMark.Render("[filter]")
	if v.target == filters.NotraceFile {
		tgt = s.NotraceMark.Render("[notrace]")
	}
	top := append([]string{tgt + " " + v.input.View()}, v.previewView()...)
	var bottom []string
	if v.confirm != nil {
		bottom = v.confirmView()
	} else {
		bottom = v.marksView()
	}
	// The matches fill what is left.
	out := append(top, v.matchesView(v.height-len(top)-len(bottom))...)
	for len(out) < v.height-len(bottom) {
		out = append(out, "")
	}
	out = append(out, bottom...)
	return strings.Join(block(strings.Join(out, "\n"), w, v.height), "\n")
}

// previewView is the line under the pattern: what the pattern matches, or why nothing yet.
func (v *FunctionsView) previewView() []string {
	s := v.env.styles
	switch {
	case v.loading && v.ix == nil:
		return []string{s.Dim.Render("reading " + filters.IndexFile + "…")}
	case v.ixErr != nil:
		return wrapLines(s.Err, "", describeErr(filters.IndexFile, v.ixErr), v.width)
	case v.patErr != nil:
		return wrapLines(s.Err, "", v.patErr.Error(), v.width)
	case v.pending:
		return []string{s.Dim.Render("counting…")}
	case v.pat == nil:
		what := "/ types a pattern"
		if v.input.Focused() {
			what = "type a pattern"
		}
		return []string{s.Dim.Render(fmt.Sprintf("%s traceable functions · %s: the count and the matches follow each key",
			itoa(int64(v.ix.Len()-v.ix.Invalid)), what))}
	case len(v.matches) == 0:
		msg := s.Err.Render("0 functions match")
		if len(v.suggest) > 0 {
			msg += " · close: " + safe(strings.Join(v.suggest, ", "))
		}
		return []string{msg}
	}
	return []string{s.OK.Render(plural(len(v.matches), "function")+" match") +
		s.Dim.Render(" · enter marks it for "+strings.TrimPrefix(v.target, "set_ftrace_")+" · tab switches")}
}

// marksView is the bottom part when nothing waits for a confirmation: the marked patterns, then
// the lists as they are now.
func (v *FunctionsView) marksView() []string {
	s := v.env.styles
	hint := " (the lists become these; a or enter applies them · / types another pattern)"
	if v.input.Focused() {
		hint = " (the lists become these; enter on an empty pattern applies them)"
	}
	bottom := []string{s.Header.Render("marked") + s.Dim.Render(hint)}
	if len(v.marks) == 0 {
		bottom = append(bottom, s.Dim.Render("  none yet"))
	}
	for i, m := range v.marks {
		lbl := s.FilterMark.Render("filter ")
		if m.file == filters.NotraceFile {
			lbl = s.NotraceMark.Render("notrace")
		}
		cur := "  "
		if i == v.sel && !v.input.Focused() {
			cur = "> "
		}
		bottom = append(bottom, fmt.Sprintf("%s%s %s  %s", cur, lbl, safe(m.text), s.Dim.Render("("+plural(m.count, "function")+")")))
	}
	return append(bottom, s.Dim.Render(v.listsNow()))
}

// listsNow says what set_ftrace_filter and set_ftrace_notrace hold now ("…" until read).
func (v *FunctionsView) listsNow() string {
	now := "now in the " + v.env.instanceLabel() + ": "
	if !v.listsSet {
		return now + "…"
	}
	f := listText(filters.FilterFile, v.lists.Filter.Total(), len(v.lists.Filter) == 0)
	if v.lists.FilterErr != nil {
		f = "unreadable"
	}
	n := listText(filters.NotraceFile, v.lists.Notrace.Total(), len(v.lists.Notrace) == 0)
	if v.lists.NotraceErr != nil {
		n = "unreadable"
	}
	return now + "filter " + f + " · notrace " + n
}

// matchesView lists the matches in room lines at most, the last one saying how many more.
func (v *FunctionsView) matchesView(room int) []string {
	if room <= 0 || len(v.matches) == 0 {
		return nil
	}
	var mid []string
	show := v.matches
	more := 0
	if len(show) > room {
		show, more = show[:room-1], len(show)-(room-1)
	}
	for _, i := range show {
		k := v.ix.Key(i)
		line := fmt.Sprintf("  %7d  %s", i, safe(k.Name))
		if k.Module != "" {
			line += " [" + safe(k.Module) + "]"
		}
		mid = append(mid, line)
	}
	if more > 0 {
		mid = append(mid, v.env.styles.Dim.Render(fmt.Sprintf("  … and %s more", itoa(int64(more)))))
	}
	return mid
}

func (v *FunctionsView) confirmView() []string {
	s := v.env.styles
	out := []string{s.Warn.Render("apply to the " + v.env.instanceLabel() + " with the swap protocol?")}
	for _, l := range v.confirm.lines {
		out = append(out, fmt.Sprintf("  %-19s %s → %s   %s %s", l.file,
			listText(l.file, l.before, l.beforeEmpty), listText(l.file, l.after, l.afterEmpty),
			s.OK.Render(fmt.Sprintf("+%d", l.added)), s.Err.Render(fmt.Sprintf("−%d", l.removed))))
	}
	if len(v.confirm.changes) > 1 {
		out = append(out, s.Dim.Render("  order: notrace ∪ new, then filter, then notrace: nothing outside old ∪ new is ever traced"))
	}
	out = append(out, s.Dim.Render("  one open per list, additions first, read back and verified"))
	out = append(out, s.Key.Render("  y/enter")+" apply   "+s.Key.Render("n/esc")+" cancel")
	return out
}
