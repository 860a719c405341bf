package tui

import (
	"context"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	tea "charm.land/bubbletea/v2"
	"charm.land/lipgloss/v2"
	"github.com/charmbracelet/x/ansi"

	"github.com/ftctl/ftctl/filters"
	"github.com/ftctl/ftctl/probes"
)

// env is the context the components share: the backend (only ever called from commands), the
// styles, the clock, and what the console works on.
type env struct {
	backend Backend
	styles  *Styles
	now     func() time.Time
	// instance is the trace array's name ("" top level); private: the console made it and
	// removes it on exit; group: where probes without a group go.
	instance string
	private  bool
	group    string
	ctx      context.Context
	// recording: the console shows a recording (--file), there is no kernel (Backend.Recording).
	recording bool
}

// instanceLabel names the trace array for people.
func (e *env) instanceLabel() string {
	if e.instance == "" {
		return "top level"
	}
	l := "instance " + safe(e.instance)
	if e.private {
		l += " (private)"
	}
	return l
}

// The typed messages between commands, components and the root model.
type (
	// frameTickMsg paces redraws: data marks the frame dirty, the tick redraws it.
	frameTickMsg struct{}
	// statusTickMsg asks for a status refresh (and the per-second rates).
	statusTickMsg time.Time
	statusMsg     struct {
		st  Status
		err error
	}
	indexMsg struct {
		ix  *filters.Index
		pv  *filters.Previewer // prepared in the command, off the event loop
		err error
	}
	listsMsg struct {
		l   Lists
		err error
	}
	// planMsg is the confirmation to show before applying marks.
	planMsg struct {
		lines   []planLine
		changes []filters.Change
		err     error
	}
	appliedMsg struct {
		res []filters.Result
		err error
	}
	probesMsg struct {
		list []probes.Probe
		err  error
	}
	// probeCompletionsMsg: the completions of a definition as typed (line).
	probeCompletionsMsg struct {
		line  string
		lines []string
	}
	probeAddedMsg struct {
		added *probes.Added
		err   error
	}
	// probeDoneMsg ends an enable, disable or removal.
	probeDoneMsg struct {
		what string
		err  error
	}
	tracerMsg struct {
		tracer string
		err    error
	}
	tracingMsg struct {
		on  bool
		err error
	}
	// noticeMsg puts a line in the message bar.
	noticeMsg struct {
		text  string
		isErr bool
	}
)

func notice(text string, isErr bool) tea.Cmd {
	return func() tea.Msg { return noticeMsg{text, isErr} }
}

// safe makes text from the kernel or from other users (names, definitions, error messages)
// harmless on a terminal: control characters and invalid UTF-8 are shown escaped.
func safe(s string) string {
	for i := 0; i < len(s); {
		c := s[i]
		if c < 0x20 || c == 0x7f {
			return quoteGraphic(s)
		}
		if c < utf8.RuneSelf {
			i++
			continue
		}
		r, n := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError || !strconv.IsGraphic(r) {
			return quoteGraphic(s)
		}
		i += n
	}
	return s
}

func quoteGraphic(s string) string {
	q := strconv.QuoteToGraphic(s)
	return q[1 : len(q)-1]
}

// fit cuts a (styled) line to width cells and pads it with spaces to exactly width.
func fit(s string, width int) string {
	if width <= 0 {
		return ""
	}
	s = ansi.Truncate(s, width, "…")
	if w := ansi.StringWidth(s); w < width {
		s += strings.Repeat(" ", width-w)
	}
	return s
}

// wrapLines breaks text into lines of width cells at most (indent included), each styled and
// started by indent: at spaces and after a '/' where it can, inside a word where it must. An
// error is shown whole this way, never cut at the screen's edge where its cause comes last. The
// text is escaped here (safe): it may come from the kernel.
func wrapLines(style lipgloss.Style, indent, text string, width int) []string {
	return wrapSpans(indent, width, span{text, style})
}

// atMost keeps the first most lines (one at least), the last ending in … when some are left out.
func atMost(lines []string, most, width int) []string {
	most = max(most, 1)
	if len(lines) <= most {
		return lines
	}
	lines = lines[:most]
	lines[most-1] = ansi.Truncate(lines[most-1], width-1, "") + "…"
	return lines
}

// span is text in one style.
type span struct {
	text  string
	style lipgloss.Style
}

// wrapSpans is wrapLines for text in several styles (a bold label, then the kernel's message):
// the text is wrapped as one, each piece keeps its style on whichever lines it lands.
func wrapSpans(indent string, width int, spans ...span) []string {
	var b strings.Builder
	ends := make([]int, len(spans)) // where each span ends in the text
	for i, sp := range spans {
		b.WriteString(safe(sp.text))
		ends[i] = b.Len()
	}
	text := b.String()
	var out []string
	off := 0
	for _, l := range strings.Split(ansi.Wrap(text, max(width-ansi.StringWidth(indent), 1), "/"), "\n") {
		// Wrapping only drops the spaces it breaks at: the line is the text's next piece.
		at := strings.Index(text[off:], l)
		if at < 0 {
			out = append(out, indent+spans[0].style.Render(l))
			continue
		}
		at += off
		var line strings.Builder
		line.WriteString(indent)
		start := 0
		for i, end := range ends {
			if lo, hi := max(start, at), min(end, at+len(l)); lo < hi {
				line.WriteString(spans[i].style.Render(text[lo:hi]))
			}
			start = end
		}
		out = append(out, line.String())
		off = at + len(l)
	}
	return out
}

// cut cuts a line to width cells without padding.
func cut(s string, width int) string {
	if width <= 0 {
		return ""
	}
	return ansi.Truncate(s, width, "…")
}

// padRight pads plain text to n cells.
func padRight(s string, n int) string {
	if w := ansi.StringWidth(s); w < n {
		return s + strings.Repeat(" ", n-w)
	}
	return s
}

// padLeft right-aligns plain text in n cells.
func padLeft(s string, n int) string {
	if w := ansi.StringWidth(s); w < n {
		return strings.Repeat(" ", n-w) + s
	}
	return s
}

// plural is "1 function", "3 functions".
func plural(n int, word string) string {
	if n == 1 {
		return "1 " + word
	}
	return itoa(int64(n)) + " " + word + "s"
}

// lines splits a block into exactly n lines (cut or padded), each fitted to width.
func block(text string, width, n int) []string {
	var out []string
	if text != "" {
		out = strings.Split(text, "\n")
	}
	if len(out) > n {
		out = out[:n]
	}
	for i := range out {
		out[i] = fit(out[i], width)
	}
	for len(out) < n {
		out = append(out, strings.Repeat(" ", max(width, 0)))
	}
	return out
}
