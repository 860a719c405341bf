package probes

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/ftctl/ftctl/tracefs"
)

// String formats the definition in kprobe_events syntax. Parsing the result gives back an
// equal definition (the fuzz target checks it).
func (d *Definition) String() string {
	var b strings.Builder
	b.WriteString(d.headText(d.Group, d.Event))
	if d.Kind == Delete {
		return b.String()
	}
	b.WriteByte(' ')
	b.WriteString(d.Place())
	for _, a := range d.Args {
		b.WriteByte(' ')
		b.WriteString(a.String())
	}
	if d.Filter != "" {
		b.WriteString(" if " + d.Filter)
	}
	return b.String()
}

// headText is the first word with the given group and event.
func (d *Definition) headText(group, event string) string {
	var b strings.Builder
	b.WriteByte(byte(d.Kind))
	if d.MaxActive != 0 {
		b.WriteString(strconv.FormatUint(uint64(d.MaxActive), 10))
	}
	if group != "" || event != "" || d.Kind == Delete {
		b.WriteByte(':')
		if group != "" {
			b.WriteString(group)
			b.WriteByte('/')
		}
		b.WriteString(event)
	}
	return b.String()
}

// String formats the argument: [NAME=]FETCHARG[:TYPE[[N]]].
func (a Arg) String() string {
	s := fetchString(&a.Fetch)
	if a.Name != "" {
		s = a.Name + "=" + s
	}
	if a.Type != "" {
		s += ":" + a.Type
		if a.Count != 0 {
			s += "[" + strconv.FormatUint(uint64(a.Count), 10) + "]"
		}
	}
	return s
}

func fetchString(f *Fetch) string {
	switch f.Kind {
	case FetchReg:
		return "%" + f.Text
	case FetchStackPtr:
		return "$stack"
	case FetchStack:
		return "$stack" + f.Text
	case FetchRetval:
		return "$retval" + f.Text
	case FetchComm:
		return "$" + f.Text
	case FetchArgN:
		return "$arg" + f.Text
	case FetchArgs:
		return "$arg*"
	case FetchAddr, FetchSymbol:
		return "@" + f.Text
	case FetchDeref:
		var b strings.Builder
		off := f.Offset
		if off < 0 {
			b.WriteByte('-')
		} else {
			b.WriteByte('+')
		}
		if f.User {
			b.WriteByte('u')
		}
		if off < 0 {
			b.WriteString(strconv.FormatUint(uint64(-off), 10))
		} else {
			b.WriteString(strconv.FormatInt(off, 10))
		}
		b.WriteByte('(')
		b.WriteString(fetchString(f.Inner))
		b.WriteByte(')')
		return b.String()
	case FetchImm:
		return `\` + f.Text
	case FetchImmString:
		return `\"` + f.Text + `"`
	case FetchBTF:
		return f.Text
	case FetchFileOffset:
		return "@+" + f.Text
	case FetchField:
		return "$" + f.Text
	}
	return ""
}

// Line is what ftctl writes to kprobe_events for this definition: the user's own words
// (arguments exactly as typed, so the kernel sees what the user wrote), with the group and
// event put in the head. An empty event asks the kernel to name it ("GROUP/" form).
func (d *Definition) Line(group, event string) *Written {
	w := &Written{def: d}
	w.head = d.headText(group, event)
	parts := []string{w.head}
	for i := 1; i < len(d.tokens); i++ {
		t := d.tokens[i]
		if i == 1 && d.Uprobe != nil {
			parts = append(parts, d.Uprobe.kernelText()) // PATH:0xOFFSET, the symbol resolved
			continue
		}
		parts = append(parts, d.src[t.start:t.end])
	}
	w.Text = strings.Join(parts, " ")
	w.group, w.event = group, event
	return w
}

// WriteLine is Line, refused (a SyntaxError under the user's text) when the line would be
// longer than the kernel takes: the group and event ftctl puts in the head lengthen what was
// typed, which the parser measured as typed.
func (d *Definition) WriteLine(group, event string) (*Written, error) {
	w := d.Line(group, event)
	if len(w.Text) > MaxLineLen {
		return nil, &SyntaxError{Source: d.src, Pos: w.UserPos(MaxLineLen),
			Msg:  fmt.Sprintf("line is too long: the kernel takes at most %d bytes; written with its group and event (%s) it has %d", MaxLineLen, w.head, len(w.Text)),
			Hint: "shorten the definition"}
	}
	return w, nil
}

// Written is a definition as written to the kernel, remembering how its words map back to
// the user's text so that the kernel's caret can be moved under what the user typed.
type Written struct {
	Text         string
	def          *Definition
	head         string
	group, event string
}

// UserPos maps a byte position in the kernel's re-joined command (error_log "Command:", the
// written words joined by single spaces) to a position in the user's text.
func (w *Written) UserPos(pos int) int {
	d := w.def
	words := strings.Split(w.Text, " ")
	start := 0
	for i, word := range words {
		end := start + len(word)
		if pos < end || (pos == end && i == len(words)-1) {
			off := pos - start
			if i == 0 {
				return w.userHeadPos(off)
			}
			if i < len(d.tokens) {
				t := d.tokens[i]
				if t.start+off > t.end {
					return t.end
				}
				return t.start + off
			}
			return len(d.src)
		}
		if pos == end { // the space after word i: before word i+1
			if i+1 < len(d.tokens) {
				return d.tokens[i+1].start
			}
			return len(d.src)
		}
		start = end + 1
	}
	// Past the end: the kernel points one past the last word when an argument is missing.
	if n := len(d.tokens); n > 0 {
		return d.tokens[n-1].end + 1
	}
	return len(d.src)
}

// userHeadPos maps an offset in the written head "K[:GROUP/EVENT]" to the user's head: the
// kind part maps onto itself; the group and event onto the user's group and event if the
// user wrote them, else onto the end of the user's head.
func (w *Written) userHeadPos(off int) int {
	d := w.def
	h := d.head
	kindLen := h.kind.end - h.kind.start
	headEnd := d.tokens[0].end
	if off < kindLen {
		return h.kind.start + off
	}
	// Written: kind ':' group '/' event
	gStart := kindLen + 1
	if w.group != "" {
		if off >= gStart && off < gStart+len(w.group) {
			if h.group.end > h.group.start {
				return min(h.group.start+off-gStart, h.group.end)
			}
			return headEnd
		}
		gStart += len(w.group) + 1
	}
	if off >= gStart {
		if h.event.end > h.event.start {
			return min(h.event.start+off-gStart, h.event.end)
		}
		return headEnd
	}
	return headEnd
}

// Diagnose picks the entry about this write among error_log entries (the last one whose
// command is ours) and realigns its caret.
func (w *Written) Diagnose(entries []tracefs.LogEntry) (tracefs.KernelDiagnosis, bool) {
	for i := len(entries) - 1; i >= 0; i-- {
		e := entries[i]
		if e.Command != w.Text {
			continue
		}
		kd := tracefs.KernelDiagnosis{Message: e.Message, Source: w.def.src, Pos: -1, Command: e.Command}
		if e.Pos >= 0 {
			kd.Pos = w.UserPos(e.Pos)
		}
		return kd, true
	}
	return tracefs.KernelDiagnosis{}, false
}

// Caret renders text and a caret under byte pos, each line prefixed by indent. Control
// characters in text are shown as '?' so the caret stays aligned on a terminal.
func Caret(indent, text string, pos int) string {
	var b strings.Builder
	b.WriteString(indent)
	col := 0
	for i := 0; i < len(text); i++ {
		c := text[i]
		if c < 0x20 || c == 0x7f {
			c = '?'
		}
		b.WriteByte(c)
		if i < pos && c&0xC0 != 0x80 { // count characters, not UTF-8 continuation bytes
			col++
		}
	}
	if pos > len(text) {
		col += pos - len(text)
	}
	b.WriteString("\n")
	b.WriteString(indent)
	b.WriteString(strings.Repeat(" ", col))
	b.WriteString("^")
	return b.String()
}
