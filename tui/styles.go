package tui

import (
	"image/color"

	"charm.land/bubbles/v2/help"
	"charm.land/bubbles/v2/textinput"
	"charm.land/lipgloss/v2"

	"github.com/ftctl/ftctl/stream"
)

// Styles are the console's colours. Trace data is escaped before any style wraps it: a style
// adds SGR sequences around text that has none of its own.
type Styles struct {
	Tab, ActiveTab, Bar         lipgloss.Style
	Header, Dim, Bold           lipgloss.Style
	TS, CPU, Task               lipgloss.Style
	Kind                        [stream.KindLost + 1]lipgloss.Style
	Highlight, Selected         lipgloss.Style
	OK, Warn, Err               lipgloss.Style
	Caret, Box, Key, Paused     lipgloss.Style
	FilterMark, NotraceMark     lipgloss.Style
	StatusKey, StatusValue, Sep lipgloss.Style
}

// DefaultStyles is the palette (ANSI 16 colours: what every terminal has). It is fixed: nothing
// in it depends on asking the terminal (its background colour, say), which a serial console
// never answers.
func DefaultStyles() *Styles {
	c := func(n string) color.Color { return lipgloss.Color(n) }
	s := &Styles{
		Tab:         lipgloss.NewStyle().Padding(0, 1),
		ActiveTab:   lipgloss.NewStyle().Padding(0, 1).Bold(true).Reverse(true),
		Bar:         lipgloss.NewStyle().Reverse(true),
		Header:      lipgloss.NewStyle().Bold(true),
		Dim:         lipgloss.NewStyle().Faint(true),
		Bold:        lipgloss.NewStyle().Bold(true),
		TS:          lipgloss.NewStyle().Faint(true),
		CPU:         lipgloss.NewStyle().Foreground(c("4")),
		Task:        lipgloss.NewStyle().Foreground(c("3")),
		Highlight:   lipgloss.NewStyle().Reverse(true).Bold(true),
		Selected:    lipgloss.NewStyle().Bold(true),
		OK:          lipgloss.NewStyle().Foreground(c("2")),
		Warn:        lipgloss.NewStyle().Foreground(c("3")).Bold(true),
		Err:         lipgloss.NewStyle().Foreground(c("1")).Bold(true),
		Caret:       lipgloss.NewStyle().Foreground(c("1")).Bold(true),
		Box:         lipgloss.NewStyle().Border(lipgloss.RoundedBorder()).Padding(0, 1),
		Key:         lipgloss.NewStyle().Bold(true),
		Paused:      lipgloss.NewStyle().Foreground(c("3")).Bold(true).Reverse(true),
		FilterMark:  lipgloss.NewStyle().Foreground(c("2")).Bold(true),
		NotraceMark: lipgloss.NewStyle().Foreground(c("5")).Bold(true),
		StatusKey:   lipgloss.NewStyle().Reverse(true).Faint(true),
		StatusValue: lipgloss.NewStyle().Reverse(true).Bold(true),
		Sep:         lipgloss.NewStyle().Reverse(true),
	}
	s.Kind = [stream.KindLost + 1]lipgloss.Style{
		stream.KindRaw:       lipgloss.NewStyle(),
		stream.KindFunction:  lipgloss.NewStyle().Foreground(c("6")),
		stream.KindProbe:     lipgloss.NewStyle().Foreground(c("2")),
		stream.KindMarker:    lipgloss.NewStyle().Foreground(c("3")),
		stream.KindPrint:     lipgloss.NewStyle().Foreground(c("4")),
		stream.KindStack:     lipgloss.NewStyle().Foreground(c("5")),
		stream.KindUserStack: lipgloss.NewStyle().Foreground(c("5")),
		stream.KindGraph:     lipgloss.NewStyle().Foreground(c("6")),
		stream.KindLost:      lipgloss.NewStyle().Foreground(c("1")).Bold(true),
	}
	return s
}

// plain is text without a style.
var plain = lipgloss.NewStyle()

// newInput is a one-line text field: the prompt and the text unstyled, a grey placeholder, a
// reversed cursor that does not blink (no timer redraws the screen for it).
func newInput(prompt, placeholder string, limit int) textinput.Model {
	in := textinput.New()
	st := in.Styles()
	for _, s := range []*textinput.StyleState{&st.Focused, &st.Blurred} {
		s.Prompt, s.Text = lipgloss.NewStyle(), lipgloss.NewStyle()
		s.Placeholder = lipgloss.NewStyle().Foreground(lipgloss.Color("240"))
	}
	st.Cursor.Color, st.Cursor.Blink = nil, false
	in.SetStyles(st)
	in.Prompt, in.Placeholder, in.CharLimit = prompt, placeholder, limit
	return in
}

// newHelp is the key help, in the colours bubbles' help shows on a dark background (light
// enough to read on a light one): a fixed choice, as the palette is.
func newHelp() help.Model {
	h := help.New()
	h.Styles = help.DefaultDarkStyles()
	return h
}
