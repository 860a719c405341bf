package tui

import (
	"errors"
	"fmt"
	"strings"
	"unicode/utf8"

	"charm.land/bubbles/v2/help"
	"charm.land/bubbles/v2/key"
	"charm.land/bubbles/v2/textinput"
	tea "charm.land/bubbletea/v2"

	"github.com/ftctl/ftctl/probes"
	"github.com/ftctl/ftctl/tracefs"
)

// ProbesView lists kprobe_events and defines new probes: each keystroke parses the definition
// with this kernel's grammar, so a mistake shows with a caret under it before anything reaches
// the kernel; what only the kernel can judge comes back from its error_log, its caret moved
// under the text typed. Probes are enabled, disabled and removed from the list.
type ProbesView struct {
	env    *env
	keys   probesKeys
	ckeys  confirmKeys
	width  int
	height int

	list    []probes.Probe
	listErr error
	loaded  bool
	sel     int

	adding bool
	input  textinput.Model
	def    *probes.Definition // what is typed, when it parses
	synErr *probes.SyntaxError
	err    error // any other refusal of what is typed

	// The answer to the last definition sent: the kernel's refusal, or ftctl's own found
	// only when adding (a uprobe's ELF file read: no such file, no such symbol...), each
	// with a caret under the text sent.
	rejected    *probes.RejectedError
	refused     *probes.SyntaxError
	rejectedErr error
	sent        string

	remove *probes.Probe // awaiting confirmation
	busy   bool
}

func newProbesView(e *env) *ProbesView {
	in := newInput("probe> ", "p:myopen do_sys_openat2 dfd=%di   or   r:ret vfs_read ret=$retval", probes.MaxLineLen)
	in.ShowSuggestions = true
	return &ProbesView{env: e, keys: newProbesKeys(), ckeys: newConfirmKeys(), input: in}
}

// Keys implements the component contract.
func (v *ProbesView) Keys() help.KeyMap { return v.keys }

// SetSize implements the component contract.
func (v *ProbesView) SetSize(w, h int) {
	v.width, v.height = w, h
	v.input.SetWidth(max(w-len(v.input.Prompt)-2, 10))
}

// Typing says whether keys go to the definition field.
func (v *ProbesView) Typing() bool { return v.adding }

// Init lists the probes.
func (v *ProbesView) Init() tea.Cmd { return v.refresh() }

// refresh reads the probes (a command); over a recording, nothing: the view says why.
func (v *ProbesView) refresh() tea.Cmd {
	if v.env.recording {
		v.loaded = true
		return nil
	}
	b := v.env.backend
	return func() tea.Msg {
		l, err := b.Probes()
		return probesMsg{l, err}
	}
}

// validate parses what is typed (pure: the grammar, no kernel).
func (v *ProbesView) validate() {
	v.def, v.synErr, v.err = nil, nil, nil
	text := strings.TrimSpace(v.input.Value())
	if text == "" {
		return
	}
	d, err := v.env.backend.Parser().Parse(v.input.Value())
	var se *probes.SyntaxError
	switch {
	case errors.As(err, &se):
		v.synErr = se
	case err != nil:
		v.err = err
	case d.Kind == probes.Delete:
		v.err = errors.New("this removes a probe: select it in the list and press x")
	case len(d.Args) > probes.MaxArgs:
		v.err = fmt.Errorf("%d arguments: the kernel records at most %d", len(d.Args), probes.MaxArgs)
	default:
		v.def = d
	}
}

// Update handles the view's keys and the answers of its commands.
func (v *ProbesView) Update(msg tea.Msg) tea.Cmd {
	switch msg := msg.(type) {
	case probesMsg:
		v.loaded = true
		v.list, v.listErr = msg.list, msg.err
		v.sel = min(v.sel, max(len(v.list)-1, 0))
		return nil
	case probeAddedMsg:
		v.busy = false
		var re *probes.RejectedError
		var se *probes.SyntaxError
		v.rejected, v.refused, v.rejectedErr = nil, nil, nil
		switch {
		case errors.As(msg.err, &re):
			v.rejected = re
			return notice("the kernel rejected the definition (see below)", true)
		case errors.As(msg.err, &se):
			v.refused = se
			return notice("ftctl refused the definition (see below): nothing was written", true)
		case msg.err != nil:
			v.rejectedErr = msg.err
			return tea.Batch(v.refresh(), notice(describeErr("adding the probe", msg.err), true))
		}
		v.adding = false
		v.input.Blur()
		v.input.SetValue("")
		v.validate()
		name := msg.added.Group + "/" + msg.added.Event
		return tea.Batch(v.refresh(), notice(fmt.Sprintf("defined %s and enabled it in the %s", safe(name), v.env.instanceLabel()), false))
	case probeDoneMsg:
		v.busy = false
		if msg.err != nil {
			return tea.Batch(v.refresh(), notice(describeErr(msg.what, msg.err), true))
		}
		return tea.Batch(v.refresh(), notice(msg.what, false))
	case probeCompletionsMsg:
		if msg.line == v.input.Value() { // else a later keystroke asked again
			v.input.SetSuggestions(msg.lines)
		}
		return nil
	case tea.KeyPressMsg:
		return v.updateKey(msg)
	case tea.PasteMsg:
		if v.adding && v.remove == nil {
			return v.edit(msg)
		}
	}
	return nil
}

// edit gives a key or a paste to the definition field and checks the text if it changed.
func (v *ProbesView) edit(msg tea.Msg) tea.Cmd {
	var cmd tea.Cmd
	old := v.input.Value()
	v.input, cmd = v.input.Update(msg)
	if v.input.Value() != old {
		v.validate()
		return tea.Batch(cmd, v.complete())
	}
	return cmd
}

// complete asks for the completions of the text typed, off the UI goroutine (BTF and the
// function list are read on first need); the answer is dropped if the text changed meanwhile.
// The field shows the first as ghost text: tab takes it, up and down go through the others.
func (v *ProbesView) complete() tea.Cmd {
	line, b := v.input.Value(), v.env.backend
	v.input.SetSuggestions(nil)
	return func() tea.Msg { return probeCompletionsMsg{line, b.ProbeCompletions(line)} }
}

func (v *ProbesView) updateKey(km tea.KeyPressMsg) tea.Cmd {
	k := v.keys
	if v.remove != nil {
		return v.confirmKey(km)
	}
	if v.adding {
		return v.addKey(km)
	}
	switch {
	case key.Matches(km, k.Add):
		v.adding = true
		v.validate()
		return v.input.Focus()
	case key.Matches(km, k.Up):
		v.sel = max(v.sel-1, 0)
	case key.Matches(km, k.Down):
		v.sel = min(v.sel+1, max(len(v.list)-1, 0))
	case key.Matches(km, k.Refresh):
		return v.refresh()
	case key.Matches(km, k.Toggle):
		return v.toggle()
	case key.Matches(km, k.Remove):
		if p := v.selected(); p != nil {
			q := *p
			v.remove = &q
		}
	}
	return nil
}

// confirmKey answers the question of removing a probe: y removes it, n keeps it.
func (v *ProbesView) confirmKey(km tea.KeyPressMsg) tea.Cmd {
	p := *v.remove
	switch {
	case key.Matches(km, v.ckeys.Yes):
		v.remove, v.busy = nil, true
		b, ctx := v.env.backend, v.env.ctx
		return func() tea.Msg {
			return probeDoneMsg{"removed " + safe(p.Name()), b.RemoveProbe(ctx, p.Group, p.Event)}
		}
	case key.Matches(km, v.ckeys.No):
		v.remove = nil
	}
	return nil
}

// addKey handles a key while a definition is typed: esc closes the prompt, enter adds the
// probe (once the definition parses), anything else edits.
func (v *ProbesView) addKey(km tea.KeyPressMsg) tea.Cmd {
	k := v.keys
	switch {
	case key.Matches(km, k.Cancel):
		v.adding = false
		v.input.Blur()
		return nil
	case key.Matches(km, k.Submit):
		if v.busy {
			return nil
		}
		if v.def == nil {
			if v.synErr == nil && v.err == nil {
				return nil
			}
			return notice("fix the definition first (nothing was sent to the kernel)", true)
		}
		if v.env.recording {
			return notice("the definition parses; "+recordingNote(noProbes), false)
		}
		v.busy, v.sent = true, v.input.Value()
		d, b, ctx := v.def, v.env.backend, v.env.ctx
		return func() tea.Msg {
			a, err := b.AddProbe(ctx, d)
			return probeAddedMsg{a, err}
		}
	}
	return v.edit(km)
}

// toggle enables the selected probe in the view's instance, or disables it.
func (v *ProbesView) toggle() tea.Cmd {
	p := v.selected()
	if p == nil || v.busy {
		return nil
	}
	on := !v.enabledHere(p)
	v.busy = true
	b := v.env.backend
	what := "enabled "
	if !on {
		what = "disabled "
	}
	what += safe(p.Name()) + " in the " + v.env.instanceLabel()
	g, e := p.Group, p.Event
	return func() tea.Msg { return probeDoneMsg{what, b.EnableProbe(g, e, on)} }
}

func (v *ProbesView) selected() *probes.Probe {
	if v.sel < 0 || v.sel >= len(v.list) {
		return nil
	}
	return &v.list[v.sel]
}

func (v *ProbesView) enabledHere(p *probes.Probe) bool {
	for _, w := range p.EnabledIn {
		if w == v.env.instance {
			return true
		}
	}
	return false
}

// caretLines renders text with a caret under byte pos.
func (v *ProbesView) caretLines(indent, text string, pos int) []string {
	text, pos = caretWindow(text, pos, v.width-len(indent))
	lines := strings.SplitN(probes.Caret(indent, text, pos), "\n", 2)
	if len(lines) == 2 {
		lines[1] = v.env.styles.Caret.Render(lines[1])
	}
	return lines
}

// caretWindow fits a definition wider than room columns around the caret at byte pos: the
// part of the text the caret is in, "…" where text was cut, the caret moved with it (else
// the caret of a long definition fell past the screen's edge). Definitions are text ftctl's
// grammar reads byte by byte; a cut never splits a UTF-8 sequence.
func caretWindow(text string, pos, room int) (string, int) {
	if room < 8 || utf8.RuneCountInString(text) < room {
		return text, pos
	}
	start := 0
	if pos > room/2 {
		start = pos - room/2
		for start < len(text) && !utf8.RuneStart(text[start]) {
			start++
		}
	}
	out, p := text[start:], pos-start
	if start > 0 {
		out, p = "…"+out, p+len("…")
	}
	if n := utf8.RuneCountInString(out); n >= room {
		end, runes := 0, 0
		for end < len(out) && runes < room-1 {
			_, size := utf8.DecodeRuneInString(out[end:])
			end += size
			runes++
		}
		out = out[:end] + "…"
	}
	return out, p
}

// noProbes is what the Probes view lacks over a recording.
const noProbes = "no probes to list, define or enable"

// View renders the view in exactly height lines.
func (v *ProbesView) View() string {
	s := v.env.styles
	var head, foot []string
	group := v.env.group
	head = append(head, s.Dim.Render(fmt.Sprintf("new probes without a group go to %s%s · enabled in the %s",
		safe(group), map[bool]string{true: " (removed on exit)", false: ""}[v.env.private], v.env.instanceLabel())))
	head = append(head, s.Header.Render(fmt.Sprintf(" %-28s %-9s %-5s %-4s %s", "NAME", "TYPE", "OWNER", "HERE", "DEFINITION")))
	if v.adding {
		foot = append(foot, v.addView()...)
	} else if v.remove != nil {
		foot = append(foot, v.removeView()...)
	}
	var body []string
	switch {
	case v.env.recording:
		body = append(body, wrapLines(s.Dim, " ", recordingNote(noProbes)+" · a checks a definition's syntax all the same", v.width)...)
	case v.listErr != nil && errors.Is(v.listErr, tracefs.ErrUnavailable):
		body = append(body, wrapLines(s.Err, " ", v.listErr.Error(), v.width)...)
	case v.listErr != nil:
		body = append(body, wrapLines(s.Err, " ", describeErr("reading kprobe_events", v.listErr), v.width)...)
	case !v.loaded:
		body = append(body, s.Dim.Render(" reading kprobe_events…"))
	case len(v.list) == 0:
		body = append(body, s.Dim.Render(" no probes · a adds one"))
	}
	room := max(v.height-len(head)-len(foot), 0)
	first := 0
	if v.sel >= room {
		first = v.sel - room + 1
	}
	for i := first; i < len(v.list) && len(body) < room; i++ {
		body = append(body, v.probeLine(i))
	}
	for len(body) < room {
		body = append(body, "")
	}
	out := append(append(head, body...), foot...)
	return strings.Join(block(strings.Join(out, "\n"), v.width, v.height), "\n")
}

// removeView asks whether to remove the probe chosen, saying when it is not ftctl's.
func (v *ProbesView) removeView() []string {
	s := v.env.styles
	p := v.remove
	msg := fmt.Sprintf("remove %s? it is disabled everywhere first", safe(p.Name()))
	if p.Owner != "ftctl" {
		msg += s.Warn.Render(" (it is not ftctl's: group " + safe(p.Group) + ")")
	}
	return []string{s.Warn.Render(msg), s.Key.Render("y/enter") + " remove   " + s.Key.Render("n/esc") + " keep"}
}

// probeLine is the list's line of probe i.
func (v *ProbesView) probeLine(i int) string {
	s := v.env.styles
	p := &v.list[i]
	here := "-"
	if v.enabledHere(p) {
		here = "on"
	}
	typ := p.Type
	if typ == "" {
		typ = "?"
	}
	cur := " "
	if i == v.sel && !v.adding {
		cur = ">"
	}
	def := p.Definition
	if p.FilterFrom == "ftctl" {
		def += "  # if " + p.Filter + " (ftctl's record)"
	}
	line := fmt.Sprintf("%s%-28s %-9s %-5s %-4s %s", cur, safe(p.Name()), typ, p.Owner, here, safe(def))
	if i == v.sel && !v.adding {
		line = s.Selected.Render(line)
	}
	return line
}

// addView is the definition field with its live validation and the kernel's last answer.
func (v *ProbesView) addView() []string {
	s, w := v.env.styles, v.width
	out := []string{v.input.View()}
	switch {
	case v.synErr != nil:
		out = append(out, v.caretLines("  ", v.synErr.Source, v.synErr.Pos)...)
		out = append(out, wrapSpans("  ", w, span{v.synErr.Msg, s.Err}, span{" (found before anything reached the kernel)", s.Dim})...)
		if v.synErr.Hint != "" {
			out = append(out, wrapLines(s.Dim, "  ", v.synErr.Hint, w)...)
		}
	case v.err != nil:
		out = append(out, wrapLines(s.Err, "  ", v.err.Error(), w)...)
	case v.def != nil:
		out = append(out, s.OK.Render(fmt.Sprintf("  ✓ %s on %s, %s", v.def.KindName(), safe(v.def.Place()), plural(len(v.def.Args), "argument")))+
			s.Dim.Render(" · enter defines it · esc cancels"))
		for _, why := range v.def.Forced {
			out = append(out, wrapLines(s.Warn, "  ", "--force: "+why, w)...)
		}
	default:
		out = append(out, s.Dim.Render("  p[:[GROUP/]EVENT] [MOD:]SYM[+OFFS]|ADDR [ARGS] · r[N][:[GROUP/]EVENT] SYM [ARGS]"))
		out = append(out, s.Dim.Render("  f[:[GROUP/]EVENT] SYM[%return] [ARGS] · t[:[GROUP/]EVENT] TRACEPOINT [ARGS] · e[:[GROUP/]EVENT] SYSTEM.EVENT [ARGS] [if FILTER]"))
	}
	out = append(out, v.suggestionsView()...)
	if v.busy {
		out = append(out, s.Dim.Render("  sending to the kernel…"))
	}
	return append(out, v.refusalView()...)
}

// suggestionsView lists the completions of the word typed (8 of them, and how many more).
func (v *ProbesView) suggestionsView() []string {
	m := v.input.MatchedSuggestions()
	if len(m) == 0 || v.input.Value() == "" {
		return nil
	}
	head := len(v.input.Value()[:strings.LastIndexAny(v.input.Value(), " \t")+1])
	var words []string
	for i, sug := range m {
		if i == 8 {
			words = append(words, fmt.Sprintf("… %d more", len(m)-i))
			break
		}
		words = append(words, safe(sug[min(head, len(sug)):]))
	}
	return wrapLines(v.env.styles.Dim, "  ", "tab completes: "+strings.Join(words, " · ")+" (↑/↓: the others)", v.width)
}

// refusalView says why the last definition sent was not added: the kernel rejected it (with its
// error_log), ftctl refused it, or adding it failed.
func (v *ProbesView) refusalView() []string {
	s, w := v.env.styles, v.width
	var out []string
	if re := v.rejected; re != nil {
		head := "the kernel rejected " + fmt.Sprintf("%q", safe(v.sent))
		var te *tracefs.Error
		if errors.As(re.Err, &te) && te.Errno != nil {
			head += fmt.Sprintf(" (%v)", te.Errno)
		}
		out = append(out, wrapLines(s.Err, "  ", head, w)...)
		if d := re.Diagnosis; d != nil {
			out = append(out, wrapSpans("  ", w, span{"kernel error_log: ", s.Bold}, span{d.Message, plain})...)
			if d.Pos >= 0 {
				out = append(out, v.caretLines("    ", d.Source, d.Pos)...)
			}
		} else if re.Err != nil {
			out = append(out, wrapLines(plain, "  ", re.Err.Error(), w)...)
		}
		if len(re.Existing) > 0 {
			out = append(out, wrapLines(plain, "  ", "a probe of that name exists: "+strings.Join(re.Existing, " | "), w)...)
		}
		if len(re.Suggestions) > 0 {
			out = append(out, wrapLines(plain, "  ", "no such symbol; close function names: "+strings.Join(re.Suggestions, ", "), w)...)
		}
	} else if se := v.refused; se != nil {
		out = append(out, wrapLines(s.Err, "  ", "ftctl refused "+fmt.Sprintf("%q", safe(v.sent))+" when adding it (nothing was written)", w)...)
		out = append(out, v.caretLines("    ", se.Source, se.Pos)...)
		out = append(out, wrapLines(plain, "  ", se.Msg, w)...)
		if se.Hint != "" {
			out = append(out, wrapLines(s.Dim, "  ", se.Hint, w)...)
		}
	} else if v.rejectedErr != nil {
		out = append(out, wrapLines(s.Err, "  ", describeErr("adding the probe", v.rejectedErr), w)...)
	}
	return out
}
