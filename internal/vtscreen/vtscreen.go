// Package vtscreen is a small terminal emulator for tests: it applies what a program writes to
// a terminal to a grid of cells, so that a test can check what a person would see on the screen
// of `ftctl tui` run in a pseudo-terminal, not just bytes that went by.
//
// It knows what bubbletea v2's renderer writes to an xterm-like terminal: text with DEC autowrap
// (and autowrap turned off), CR, LF, BS, HT (a tab stop every 8 columns), absolute and relative
// cursor moves (CUP, HVP, CUU/CUD/CUF/CUB, CNL/CPL, CHA, HPA, VPA, CHT/CBT), erasing (EL, ED,
// ECH), inserting and deleting characters and lines (ICH, DCH, IL, DL, insert mode), repeating
// the last character (REP), scrolling within a scroll region (DECSTBM, SU, SD, IND, NEL, RI),
// saving the cursor, and the alternate screen (mode 1049: a screen of its own, blank when
// entered, the main screen back when left). SGR, OSC, DCS, APC and the other modes are consumed
// and have no effect on the text; the cursor's visibility (mode 25) is recorded.
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
	mu    sync.Mutex
	w, h  int
	cells [][]rune // the screen shown: main or alt
	main  [][]rune // the main screen while the alternate one is shown
	alt   [][]rune // the alternate screen (kept after it is left, for tests)
	x, y  int
	// wrapNext: the last column was written; the next printable wraps (DEC autowrap).
	wrapNext bool
	top, bot int  // the scroll region, rows [top, bot]
	noWrap   bool // DEC autowrap (mode 7) off
	insert   bool // insert mode (IRM, mode 4)
	hidden   bool // the cursor is hidden (mode 25 reset)
	last     rune // the last character printed (REP)
	saved    [2]int
	mainCur  [2]int // the main screen's cursor while the alternate one is shown
	// MapNewline makes LF also return the carriage (the tty's ONLCR, as in cooked mode);
	// a program in raw mode (bubbletea on a terminal) gets a bare LF.
	MapNewline bool
	pending    []byte // an incomplete escape sequence or UTF-8 character from the last Write
}

// New makes a blank screen of w columns and h rows.
func New(w, h int) *Screen {
	s := &Screen{w: w, h: h, bot: h - 1}
	s.cells = grid(w, h)
	return s
}

func grid(w, h int) [][]rune {
	g := make([][]rune, h)
	for i := range g {
		g[i] = blank(w)
	}
	return g
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
		case c == '\n', c == '\v', c == '\f':
			s.lineFeed()
			if s.MapNewline {
				s.x = 0
			}
			i++
		case c == '\b':
			s.x, s.wrapNext = max(s.x-1, 0), false
			i++
		case c == '\t':
			s.tab(1)
			i++
		case c < 0x20 || c == 0x7f:
			i++ // BEL and other controls: nothing to draw
		default:
			r, n := utf8.DecodeRune(b[i:])
			if r == utf8.RuneError && n == 1 && !utf8.FullRune(b[i:]) {
				s.pending = append([]byte(nil), b[i:]...)
				return len(p), nil
			}
			if r >= 0x80 && r < 0xa0 {
				i += n // C1 controls: nothing to draw (ftctl never writes them)
				continue
			}
			s.put(r)
			i += n
		}
	}
	return len(p), nil
}

// lineFeed moves down a row, scrolling the region when at its bottom.
func (s *Screen) lineFeed() {
	s.wrapNext = false
	switch {
	case s.y == s.bot:
		s.scrollUp(1)
	case s.y < s.h-1:
		s.y++
	}
}

// reverseIndex moves up a row, scrolling the region down when at its top.
func (s *Screen) reverseIndex() {
	s.wrapNext = false
	switch {
	case s.y == s.top:
		s.scrollDown(1)
	case s.y > 0:
		s.y--
	}
}

// scrollUp moves the rows of the scroll region up n, blank rows entering at its bottom.
func (s *Screen) scrollUp(n int) { s.deleteRows(s.top, n) }

// scrollDown moves the rows of the scroll region down n, blank rows entering at its top.
func (s *Screen) scrollDown(n int) { s.insertRows(s.top, n) }

// deleteRows removes n rows at row y of the scroll region; blank rows enter at its bottom.
func (s *Screen) deleteRows(y, n int) {
	n = min(n, s.bot-y+1)
	if n <= 0 {
		return
	}
	copy(s.cells[y:s.bot+1], s.cells[y+n:s.bot+1])
	for i := s.bot - n + 1; i <= s.bot; i++ {
		s.cells[i] = blank(s.w)
	}
}

// insertRows puts n blank rows at row y of the scroll region; rows leave at its bottom.
func (s *Screen) insertRows(y, n int) {
	n = min(n, s.bot-y+1)
	if n <= 0 {
		return
	}
	copy(s.cells[y+n:s.bot+1], s.cells[y:s.bot+1-n])
	for i := y; i < y+n; i++ {
		s.cells[i] = blank(s.w)
	}
}

// tab moves to the n-th next tab stop (every 8 columns), the last column at most.
func (s *Screen) tab(n int) {
	s.wrapNext = false
	for ; n > 0 && s.x < s.w-1; n-- {
		s.x = min((s.x/8+1)*8, s.w-1)
	}
}

// backTab moves to the n-th previous tab stop.
func (s *Screen) backTab(n int) {
	s.wrapNext = false
	for ; n > 0 && s.x > 0; n-- {
		s.x = (s.x - 1) / 8 * 8
	}
}

func (s *Screen) put(r rune) {
	if s.wrapNext {
		s.x = 0
		s.lineFeed()
	}
	row := s.cells[s.y]
	if s.insert {
		copy(row[s.x+1:], row[s.x:s.w-1])
	}
	row[s.x] = r
	s.last = r
	if s.x == s.w-1 {
		s.wrapNext = !s.noWrap
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
	case ']', 'P', '_', '^', 'X': // OSC (window title...), DCS, APC, PM, SOS: up to BEL or ST
		for j := 2; j < len(b); j++ {
			if b[j] == 0x07 && b[1] == ']' {
				return j + 1, true
			}
			if b[j] == 0x1b {
				if j+1 == len(b) {
					return 0, false
				}
				if b[j+1] == '\\' {
					return j + 2, true
				}
			}
		}
		return 0, false
	case '7':
		s.saved = [2]int{s.x, s.y}
	case '8':
		s.x, s.y, s.wrapNext = s.saved[0], s.saved[1], false
	case 'D':
		s.lineFeed()
	case 'E':
		s.lineFeed()
		s.x = 0
	case 'M':
		s.reverseIndex()
	case 'c': // RIS: everything back to the start
		s.cells, s.main, s.alt = grid(s.w, s.h), nil, nil
		s.x, s.y, s.wrapNext, s.top, s.bot = 0, 0, false, 0, s.h-1
		s.noWrap, s.insert, s.hidden, s.last = false, false, false, 0
	}
	if b[1] >= 0x20 && b[1] <= 0x2f { // ESC ( B and other designations: intermediates, a final
		for j := 2; j < len(b); j++ {
			if b[j] >= 0x30 && b[j] <= 0x7e {
				return j + 1, true
			}
		}
		return 0, false
	}
	return 2, true // ESC =, ESC >...: nothing the tests look at
}

func (s *Screen) csi(params string, final byte) {
	if strings.IndexFunc(params, func(r rune) bool { return r >= 0x20 && r <= 0x2f }) >= 0 {
		return // intermediates (DECSCUSR "CSI 2 SP q", DECRQM "CSI ? 2026 $ p"): not about text
	}
	if strings.HasPrefix(params, "?") {
		if final == 'h' || final == 'l' {
			for _, f := range strings.Split(params[1:], ";") {
				s.privateMode(f, final == 'h')
			}
		}
		return
	}
	if params != "" && strings.ContainsAny(params[:1], "<=>") {
		return // kitty keyboard, modifyOtherKeys, XTVERSION...
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
	case 'B', 'e':
		s.y = min(s.y+arg(0, 1), s.h-1)
	case 'C', 'a':
		s.x = min(s.x+arg(0, 1), s.w-1)
	case 'D':
		s.x = max(s.x-arg(0, 1), 0)
	case 'E':
		s.x, s.y = 0, min(s.y+arg(0, 1), s.h-1)
	case 'F':
		s.x, s.y = 0, max(s.y-arg(0, 1), 0)
	case 'G', '`':
		s.x = min(arg(0, 1)-1, s.w-1)
	case 'd':
		s.y = min(arg(0, 1)-1, s.h-1)
	case 'H', 'f':
		s.y, s.x = min(arg(0, 1)-1, s.h-1), min(arg(1, 1)-1, s.w-1)
	case 'I':
		s.tab(arg(0, 1))
	case 'Z':
		s.backTab(arg(0, 1))
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
	case 'X':
		s.clear(s.x, s.y, s.x+arg(0, 1), s.y+1)
	case '@':
		row, n := s.cells[s.y], min(arg(0, 1), s.w-s.x)
		copy(row[s.x+n:], row[s.x:s.w-n])
		s.clear(s.x, s.y, s.x+n, s.y+1)
	case 'P':
		row, n := s.cells[s.y], min(arg(0, 1), s.w-s.x)
		copy(row[s.x:], row[s.x+n:])
		s.clear(s.w-n, s.y, s.w, s.y+1)
	case 'L':
		if s.y >= s.top && s.y <= s.bot {
			s.insertRows(s.y, arg(0, 1))
			s.x = 0
		}
	case 'M':
		if s.y >= s.top && s.y <= s.bot {
			s.deleteRows(s.y, arg(0, 1))
			s.x = 0
		}
	case 'S':
		s.scrollUp(arg(0, 1))
	case 'T':
		if len(ps) <= 1 { // with more parameters: mouse highlight tracking
			s.scrollDown(arg(0, 1))
		}
	case 'b':
		for n := arg(0, 1); n > 0 && s.last != 0; n-- {
			s.put(s.last)
		}
	case 'r':
		top, bot := arg(0, 1)-1, arg(1, s.h)-1
		if top < bot && bot < s.h {
			s.top, s.bot = top, bot
			s.x, s.y = 0, 0
		}
	case 's':
		if params == "" {
			s.saved = [2]int{s.x, s.y}
		}
	case 'u':
		if params == "" {
			s.x, s.y = s.saved[0], s.saved[1]
		}
	case 'h', 'l':
		for _, p := range ps {
			if p == 4 {
				s.insert = final == 'h'
			}
		}
	}
	// 'm' (SGR) and the rest: no effect on the text.
}

// privateMode applies a DEC private mode the tests care about.
func (s *Screen) privateMode(mode string, set bool) {
	switch mode {
	case "7":
		s.noWrap = !set
		if !set {
			s.wrapNext = false
		}
	case "25":
		s.hidden = !set
	case "47", "1047", "1049":
		if set == (s.main != nil) {
			return // already there
		}
		if set {
			// The alternate screen starts blank; 1049 saves the cursor.
			s.main, s.mainCur = s.cells, [2]int{s.x, s.y}
			s.alt = grid(s.w, s.h)
			s.cells = s.alt
			if mode == "1049" {
				s.x, s.y = 0, 0
			}
		} else {
			s.cells, s.main = s.main, nil
			if mode == "1049" {
				s.x, s.y = s.mainCur[0], s.mainCur[1]
			}
		}
		s.wrapNext = false
	}
}

// clear blanks columns [x0, x1) of rows [y0, y1).
func (s *Screen) clear(x0, y0, x1, y1 int) {
	for y := max(y0, 0); y < min(y1, s.h); y++ {
		for x := max(x0, 0); x < min(x1, s.w); x++ {
			s.cells[y][x] = ' '
		}
	}
}

func trimmed(g [][]rune) []string {
	out := make([]string, len(g))
	for i, row := range g {
		out[i] = strings.TrimRight(string(row), " ")
	}
	return out
}

// Lines returns the rows shown, trailing spaces removed.
func (s *Screen) Lines() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return trimmed(s.cells)
}

// AltLines returns the rows of the alternate screen (what it showed when it was left, if it
// was), nil if it was never entered.
func (s *Screen) AltLines() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.alt == nil {
		return nil
	}
	return trimmed(s.alt)
}

// AltScreen says whether the alternate screen is shown.
func (s *Screen) AltScreen() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.main != nil
}

// CursorHidden says whether the program hid the cursor (and did not show it again).
func (s *Screen) CursorHidden() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.hidden
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
