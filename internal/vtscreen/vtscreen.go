// Package vtscreen is a small terminal emulator for tests: it applies what a program writes to
// a terminal (text, CR, LF, BS, and the CSI sequences bubbletea's renderer uses: cursor moves
// and positioning, erasing lines and the screen; SGR and private modes are accepted and
// ignored) to a grid of cells, so that a test can check what a person would see on the screen
// of `ftctl tui` run in a pseudo-terminal, not just bytes that went by.
package vtscreen

import (
	"strconv"
	"strings"
	"sync"
	"unicode/utf8"
)

// Screen is a grid of runes with a cursor. It is safe for concurrent use: a reader goroutine
// writes, the test reads.
type Screen struct {
	mu       sync.Mutex
	w, h     int
	cells    [][]rune
	x, y     int
	wrapNext bool   // the last column was written: the next printable wraps (DEC autowrap)
	pending  []byte // an incomplete escape sequence or UTF-8 character from the last Write
}

// New makes a blank screen of w columns and h rows.
func New(w, h int) *Screen {
	s := &Screen{w: w, h: h}
	s.cells = make([][]rune, h)
	for i := range s.cells {
		s.cells[i] = blank(w)
	}
	return s
}

func blank(w int) []rune {
	r := make([]rune, w)
	for i := range r {
		r[i] = ' '
	}
	return r
}

// Write applies terminal output. It never fails.
func (s *Screen) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	b := append(s.pending, p...)
	s.pending = nil
	for i := 0; i < len(b); {
		c := b[i]
		switch {
		case c == 0x1b:
			n, ok := s.escape(b[i:])
			if !ok {
				s.pending = append([]byte(nil), b[i:]...)
				return len(p), nil
			}
			i += n
		case c == '\r':
			s.x, s.wrapNext = 0, false
			i++
		case c == '\n':
			s.lineFeed()
			i++
		case c == '\b':
			s.x, s.wrapNext = max(s.x-1, 0), false
			i++
		case c < 0x20 || c == 0x7f:
			i++ // BEL and other controls: nothing to draw
		default:
			r, n := utf8.DecodeRune(b[i:])
			if r == utf8.RuneError && n == 1 && !utf8.FullRune(b[i:]) {
				s.pending = append([]byte(nil), b[i:]...)
				return len(p), nil
			}
			s.put(r)
			i += n
		}
	}
	return len(p), nil
}

func (s *Screen) lineFeed() {
	s.wrapNext = false
	if s.y < s.h-1 {
		s.y++
		return
	}
	copy(s.cells, s.cells[1:])
	s.cells[s.h-1] = blank(s.w)
}

func (s *Screen) put(r rune) {
	if s.wrapNext {
		s.x = 0
		s.lineFeed()
	}
	s.cells[s.y][s.x] = r
	if s.x == s.w-1 {
		s.wrapNext = true
	} else {
		s.x++
	}
}

// escape applies the sequence at the start of b and returns its length; false when b ends
// before the sequence does.
func (s *Screen) escape(b []byte) (int, bool) {
	if len(b) < 2 {
		return 0, false
	}
	switch b[1] {
	case '[':
		for j := 2; j < len(b); j++ {
			if b[j] >= 0x40 && b[j] <= 0x7e {
				s.csi(string(b[2:j]), b[j])
				return j + 1, true
			}
		}
		return 0, false
	case ']': // OSC (window title...): up to BEL or ST
		for j := 2; j < len(b); j++ {
			if b[j] == 0x07 {
				return j + 1, true
			}
			if b[j] == 0x1b && j+1 < len(b) && b[j+1] == '\\' {
				return j + 2, true
			}
		}
		return 0, false
	}
	return 2, true // ESC 7, ESC 8, ESC =...: nothing the tests look at
}

func (s *Screen) csi(params string, final byte) {
	if strings.HasPrefix(params, "?") || strings.HasPrefix(params, ">") {
		if final == 'h' && params == "?1049" { // the alternate screen starts blank
			s.clear(0, 0, s.w, s.h)
			s.x, s.y = 0, 0
		}
		return
	}
	var ps []int
	for _, f := range strings.Split(params, ";") {
		n, _ := strconv.Atoi(f)
		ps = append(ps, n)
	}
	arg := func(i, def int) int {
		if i < len(ps) && ps[i] > 0 {
			return ps[i]
		}
		return def
	}
	s.wrapNext = false
	switch final {
	case 'A':
		s.y = max(s.y-arg(0, 1), 0)
	case 'B':
		s.y = min(s.y+arg(0, 1), s.h-1)
	case 'C':
		s.x = min(s.x+arg(0, 1), s.w-1)
	case 'D':
		s.x = max(s.x-arg(0, 1), 0)
	case 'G':
		s.x = min(arg(0, 1)-1, s.w-1)
	case 'H', 'f':
		s.y, s.x = min(arg(0, 1)-1, s.h-1), min(arg(1, 1)-1, s.w-1)
	case 'K':
		switch arg(0, 0) {
		case 0:
			s.clear(s.x, s.y, s.w, s.y+1)
		case 1:
			s.clear(0, s.y, s.x+1, s.y+1)
		case 2:
			s.clear(0, s.y, s.w, s.y+1)
		}
	case 'J':
		switch arg(0, 0) {
		case 0:
			s.clear(s.x, s.y, s.w, s.y+1)
			s.clear(0, s.y+1, s.w, s.h)
		case 1:
			s.clear(0, 0, s.w, s.y)
			s.clear(0, s.y, s.x+1, s.y+1)
		case 2, 3:
			s.clear(0, 0, s.w, s.h)
		}
	}
	// 'm' (SGR) and the rest: no effect on the text.
}

// clear blanks columns [x0, x1) of rows [y0, y1).
func (s *Screen) clear(x0, y0, x1, y1 int) {
	for y := max(y0, 0); y < min(y1, s.h); y++ {
		for x := max(x0, 0); x < min(x1, s.w); x++ {
			s.cells[y][x] = ' '
		}
	}
}

// Lines returns the rows, trailing spaces removed.
func (s *Screen) Lines() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]string, s.h)
	for i, row := range s.cells {
		out[i] = strings.TrimRight(string(row), " ")
	}
	return out
}

// String is the screen, one row per line.
func (s *Screen) String() string { return strings.Join(s.Lines(), "\n") }

// Contains says whether any row contains text.
func (s *Screen) Contains(text string) bool {
	for _, l := range s.Lines() {
		if strings.Contains(l, text) {
			return true
		}
	}
	return false
}
