package stream

import (
	"errors"
	"fmt"
	"regexp"
)

// Filter chooses the events a reader shows. It only looks: the kernel still records (and
// trace_pipe still hands over) every event. LOST lines always pass: losing events is never
// something to hide. The zero Filter passes everything.
type Filter struct {
	Events []string // globs on the event name (Event.EventName); any may match
	PID    int      // with HasPID: the pid, or the tgid when the line has one
	HasPID bool     //
	Comm   string   // a glob on the comm ("" for any)
	// Grep is matched against the event as ftctl prints it in text (AppendText, without
	// colour: escaped, every frame of a stack trace on its own line), whichever reader read it.
	Grep *regexp.Regexp

	line []byte // Grep's rendering of the event
}

// ErrGlob says a glob is malformed (an unterminated '[' or a trailing '\').
var ErrGlob = errors.New("malformed glob")

// Validate checks the globs, so that a typo is found before streaming starts.
func (f *Filter) Validate() error {
	for _, g := range append([]string{f.Comm}, f.Events...) {
		if !validGlob(g) {
			return fmt.Errorf("%w %q", ErrGlob, g)
		}
	}
	return nil
}

// Match says whether ev is shown.
func (f *Filter) Match(ev *Event) bool {
	if ev.Kind == KindLost {
		return true
	}
	if len(f.Events) > 0 {
		name, any := ev.EventName(), false
		for _, g := range f.Events {
			if globMatch(g, name) {
				any = true
				break
			}
		}
		if !any {
			return false
		}
	}
	if f.HasPID && (ev.Comm == nil || (ev.PID != f.PID && ev.TGID != f.PID)) {
		return false
	}
	if f.Comm != "" {
		if ev.Comm == nil {
			return false
		}
		if !globMatch(f.Comm, ev.Comm) {
			return false
		}
	}
	if f.Grep != nil {
		f.line = AppendText(f.line[:0], ev, TextOptions{})
		if !f.Grep.Match(f.line[:len(f.line)-1]) { // without the newline
			return false
		}
	}
	return true
}

// validGlob: every '[' is closed and no '\' ends the pattern.
func validGlob(p string) bool {
	for i := 0; i < len(p); i++ {
		switch p[i] {
		case '\\':
			if i+1 == len(p) {
				return false
			}
			i++
		case '[':
			end := classEnd(p, i)
			if end < 0 {
				return false
			}
			i = end - 1
		}
	}
	return true
}

// globMatch matches name against a valid shell-style glob: * (any run, '/' included), ?
// (one byte), [abc], [a-z], [!a-z] or [^a-z] (a ']' first in a class is literal), and \
// quoting the next character. Bytes, not runes: comms are bytes.
func globMatch(p string, name []byte) bool {
	px, nx := 0, 0
	starPx, starNx := -1, 0
	for px < len(p) || nx < len(name) {
		if px < len(p) {
			switch c := p[px]; c {
			case '*':
				starPx, starNx = px, nx+1
				px++
				continue
			case '?':
				if nx < len(name) {
					px++
					nx++
					continue
				}
			case '[':
				if end := classEnd(p, px); end > 0 {
					if nx < len(name) && classMatch(p[px+1:end-1], name[nx]) {
						px, nx = end, nx+1
						continue
					}
					break
				}
				fallthrough // unterminated: a literal '[' (Validate refuses it first)
			default:
				width := 1
				if c == '\\' && px+1 < len(p) {
					c, width = p[px+1], 2
				}
				if nx < len(name) && name[nx] == c {
					px += width
					nx++
					continue
				}
			}
		}
		if starPx >= 0 && starNx <= len(name) {
			px, nx = starPx+1, starNx
			starNx++
			continue
		}
		return false
	}
	return true
}

// classEnd is the index after the ']' closing the class that starts at p[i], or -1.
func classEnd(p string, i int) int {
	i++
	if i < len(p) && (p[i] == '!' || p[i] == '^') {
		i++
	}
	if i < len(p) && p[i] == ']' {
		i++
	}
	for ; i < len(p); i++ {
		switch p[i] {
		case '\\':
			i++
		case ']':
			return i + 1
		}
	}
	return -1
}

// classMatch matches c against a class's inside ("a-z_", "!0-9").
func classMatch(class string, c byte) bool {
	negate := len(class) > 0 && (class[0] == '!' || class[0] == '^')
	if negate {
		class = class[1:]
	}
	for i := 0; i < len(class); i++ {
		lo := class[i]
		if lo == '\\' && i+1 < len(class) {
			i++
			lo = class[i]
		}
		hi := lo
		if i+2 < len(class) && class[i+1] == '-' {
			hi = class[i+2]
			if hi == '\\' && i+3 < len(class) {
				i++
				hi = class[i+2]
			}
			i += 2
		}
		if c >= lo && c <= hi {
			return !negate
		}
	}
	return negate
}
