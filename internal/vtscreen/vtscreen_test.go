package vtscreen

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	tea "charm.land/bubbletea/v2"
)

func TestSequences(t *testing.T) {
	s := New(10, 3)
	s.Write([]byte("hello\r\nworld\x1b[1;3Hxy\x1b[2;1H\x1b[K\x1b[31mred\x1b[0m"))
	if got := s.String(); got != "hexyo\nred\n" {
		t.Errorf("%q", got)
	}
	s.Write([]byte("\x1b[H\x1b[2J0123456789ab\x1b]0;title\x07"))
	if got := s.String(); got != "0123456789\nab\n" {
		t.Errorf("autowrap: %q", got)
	}
	// A sequence split across writes, and a UTF-8 character too.
	s.Write([]byte("\x1b[3;1H\x1b["))
	s.Write([]byte("2Ké\xe2\x80"))
	s.Write([]byte("\xa6"))
	if got := s.Lines()[2]; got != "é…" {
		t.Errorf("split: %q", got)
	}
}

// Each sequence bubbletea v2's renderer may write, on a screen holding "abcdefghij" in each
// of 4 rows (row n starting with its number).
func TestRendererSequences(t *testing.T) {
	const start = "0bcdefghij\r\n1bcdefghij\r\n2bcdefghij\r\n3bcdefghij\x1b[H"
	for _, c := range []struct{ name, in, want string }{
		{"VPA and HPA", "\x1b[3d\x1b[5`X", "0bcdefghij|1bcdefghij|2bcdXfghij|3bcdefghij"},
		{"CHA, CUF, CUB", "\x1b[2;1H\x1b[9GX\x1b[3DY\x1b[2CZ", "0bcdefghij|1bcdefYhXZ|2bcdefghij|3bcdefghij"},
		{"ECH", "\x1b[2;3H\x1b[4X", "0bcdefghij|1b    ghij|2bcdefghij|3bcdefghij"},
		{"ICH", "\x1b[2;3H\x1b[2@XY", "0bcdefghij|1bXYcdefgh|2bcdefghij|3bcdefghij"},
		{"DCH", "\x1b[2;3H\x1b[3P", "0bcdefghij|1bfghij|2bcdefghij|3bcdefghij"},
		{"insert mode", "\x1b[2;3H\x1b[4hXY\x1b[4lZ", "0bcdefghij|1bXYZdefgh|2bcdefghij|3bcdefghij"},
		{"IL", "\x1b[2;5H\x1b[LX", "0bcdefghij|X|1bcdefghij|2bcdefghij"},
		{"DL", "\x1b[2;5H\x1b[2MX", "0bcdefghij|Xbcdefghij||"},
		{"SU in a region", "\x1b[2;3r\x1b[S", "0bcdefghij|2bcdefghij||3bcdefghij"},
		{"SD in a region", "\x1b[2;3r\x1b[T", "0bcdefghij||1bcdefghij|3bcdefghij"},
		{"LF at the region's bottom", "\x1b[1;2r\x1b[2;1H\nX", "1bcdefghij|X|2bcdefghij|3bcdefghij"},
		{"RI at the top", "\x1bMX", "X|0bcdefghij|1bcdefghij|2bcdefghij"},
		{"RI below the top", "\x1b[3;2H\x1bMX", "0bcdefghij|1Xcdefghij|2bcdefghij|3bcdefghij"},
		{"REP", "\x1b[2;2HX\x1b[3b", "0bcdefghij|1XXXXfghij|2bcdefghij|3bcdefghij"},
		{"HT and CBT", "\x1b[2;2H\tX\x1b[ZY\tZ\x1b[2ZW\x1b[IV", "0bcdefghij|WbcdefghVZ|2bcdefghij|3bcdefghij"},
		{"BS", "\x1b[2;4H\b\bX", "0bcdefghij|1Xcdefghij|2bcdefghij|3bcdefghij"},
		{"autowrap off", "\x1b[?7l\x1b[4;9HXYZ\x1b[?7h", "0bcdefghij|1bcdefghij|2bcdefghij|3bcdefghXZ"},
		{"the last cell, no scroll", "\x1b[4;10HX", "0bcdefghij|1bcdefghij|2bcdefghij|3bcdefghiX"},
		{"CNL and CPL", "\x1b[2EX\x1b[FY", "0bcdefghij|Ybcdefghij|Xbcdefghij|3bcdefghij"},
		{"save and restore", "\x1b[2;2H\x1b7\x1b[4;4H\x1b8X\x1b[3;3H\x1b[s\x1b[H\x1b[uY", "0bcdefghij|1Xcdefghij|2bYdefghij|3bcdefghij"},
		{"strings and private sequences", "\x1bP+q544e\x1b\\\x1b_Gi=1\x1b\\\x1b[>4;2m\x1b[=1;1u\x1b[?u\x1b[?2026$p\x1b[2 q\x1b(BX", "Xbcdefghij|1bcdefghij|2bcdefghij|3bcdefghij"},
		{"ED below", "\x1b[2;5H\x1b[J", "0bcdefghij|1bcd||"},
	} {
		t.Run(c.name, func(t *testing.T) {
			s := New(10, 4)
			s.Write([]byte(start + c.in))
			want := strings.ReplaceAll(c.want, "|", "\n")
			if got := s.String(); got != want {
				t.Errorf("\n%s\nwant\n%s", got, want)
			}
		})
	}
}

func TestAltScreenAndCursor(t *testing.T) {
	s := New(10, 3)
	s.Write([]byte("main\r\n"))
	s.Write([]byte("\x1b[?1049h\x1b[?25lalt"))
	if !s.AltScreen() || !s.CursorHidden() || s.String() != "alt\n\n" {
		t.Fatalf("alt %v hidden %v %q", s.AltScreen(), s.CursorHidden(), s.String())
	}
	s.Write([]byte("\x1b[?1049l\x1b[?25hX"))
	if s.AltScreen() || s.CursorHidden() || s.String() != "main\nX\n" || strings.Join(s.AltLines(), "|") != "alt||" {
		t.Fatalf("after: alt %v hidden %v %q, alt screen %q", s.AltScreen(), s.CursorHidden(), s.String(), s.AltLines())
	}
}

// counter is a model whose view changes line by line, as bubbletea's renderer redraws it.
type counter struct{ n int }

func (c counter) Init() tea.Cmd { return nil }
func (c counter) Update(msg tea.Msg) (tea.Model, tea.Cmd) {
	if _, ok := msg.(tea.KeyPressMsg); ok {
		c.n++
		if c.n == 5 {
			return c, tea.Quit
		}
	}
	return c, nil
}
func (c counter) View() tea.View {
	var lines []string
	for i := 0; i < 6; i++ {
		if i%2 == 0 {
			lines = append(lines, fmt.Sprintf("row %d: \x1b[1m%d\x1b[0m", i, c.n*i))
		} else {
			lines = append(lines, "unchanged "+strings.Repeat("x", i))
		}
	}
	v := tea.NewView(strings.Join(lines, "\n"))
	v.AltScreen = true
	return v
}

// The screen matches the model's view after bubbletea's incremental redraws, and quitting
// leaves the alternate screen with the cursor shown.
func TestBubbleteaRenderer(t *testing.T) {
	s := New(40, 8)
	s.MapNewline = true // no terminal on the program's input: bubbletea takes it to be in cooked mode
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	p := tea.NewProgram(counter{}, tea.WithContext(ctx), tea.WithInput(nil), tea.WithOutput(s),
		tea.WithoutSignalHandler(), tea.WithWindowSize(40, 8), tea.WithEnvironment([]string{"TERM=xterm-256color"}))
	go func() {
		for i := 0; i < 4; i++ {
			time.Sleep(40 * time.Millisecond)
			p.Send(tea.KeyPressMsg{Code: 'k', Text: "k"})
		}
		time.Sleep(300 * time.Millisecond)
		p.Send(tea.KeyPressMsg{Code: 'k', Text: "k"})
	}()
	if _, err := p.Run(); err != nil {
		t.Fatal(err)
	}
	// The last frame (n = 5), redrawn over the earlier ones.
	want := "row 0: 0\nunchanged x\nrow 2: 10\nunchanged xxx\nrow 4: 20\nunchanged xxxxx\n\n"
	if got := strings.Join(s.AltLines(), "\n"); got != want {
		t.Errorf("screen:\n%s\nwant:\n%s", got, want)
	}
	if s.AltScreen() || s.CursorHidden() {
		t.Errorf("after quitting: alternate screen %v, cursor hidden %v", s.AltScreen(), s.CursorHidden())
	}
}

// frames is a model that shows the frames it is sent.
type frames struct{ content string }

type frameMsg string

func (f *frames) Init() tea.Cmd { return nil }
func (f *frames) Update(msg tea.Msg) (tea.Model, tea.Cmd) {
	if m, ok := msg.(frameMsg); ok {
		f.content = string(m)
	}
	return f, nil
}
func (f *frames) View() tea.View {
	v := tea.NewView(f.content)
	v.AltScreen = true
	return v
}

// nextFrame changes a frame the ways a console's frames change, each of which the renderer
// draws with its own sequences: the lines scroll up or down (DECSTBM, SU, SD, IL, DL, RI), a
// few cells change in the middle of a line (cursor moves, tabs, backspaces), text is inserted
// or deleted in a line (ICH, DCH), runs of a character (REP, ECH), lines emptied or filled to
// the last column (autowrap), the frame gets shorter (ED), styles come and go.
func nextFrame(r *rand.Rand, lines []string, w, h int) []string {
	word := func() string {
		ws := []string{"vfs_read", "ksys_write", "bash-1234", "[001]", "·", "●", "…", "      ", "xxxxxxxxxxxx", "a", "-----", "\x1b[1;31mred\x1b[0m", "\x1b[7m rev \x1b[m"}
		return ws[r.IntN(len(ws))]
	}
	line := func() string {
		var b strings.Builder
		for n := r.IntN(10); n > 0; n-- {
			b.WriteString(word())
			b.WriteString(strings.Repeat(" ", r.IntN(3)))
		}
		return b.String()
	}
	cut := func(l string) string { // the width of the screen at most, counting what shows
		var b strings.Builder
		n := 0
		for i := 0; i < len(l); {
			if l[i] == 0x1b {
				j := strings.IndexByte(l[i:], 'm')
				b.WriteString(l[i : i+j+1])
				i += j + 1
				continue
			}
			if n == w {
				i++
				continue
			}
			c, sz := rune(l[i]), 1
			if c >= 0x80 {
				for _, r := range l[i:] {
					c = r
					break
				}
				sz = len(string(c))
			}
			b.WriteRune(c)
			n++
			i += sz
		}
		return b.String() + "\x1b[m"
	}
	out := append([]string(nil), lines...)
	for len(out) < h {
		out = append(out, "")
	}
	switch r.IntN(9) {
	case 0, 1: // scroll up by k, new lines at the bottom (the stream following)
		k := 1 + r.IntN(4)
		out = out[k:]
		for len(out) < h {
			out = append(out, line())
		}
	case 2: // scroll down by k inside the frame, a header kept
		k := 1 + r.IntN(3)
		head := out[:2]
		body := append(make([]string, k), out[2:len(out)-k]...)
		for i := range k {
			body[i] = line()
		}
		out = append(append([]string(nil), head...), body...)
	case 3: // a few cells change
		for n := 1 + r.IntN(3); n > 0; n-- {
			i := r.IntN(h)
			rs := []rune(plainLines(out[i:i+1], 1) + strings.Repeat(" ", w))
			rs[r.IntN(w)] = rune('A' + r.IntN(26))
			out[i] = string(rs)
		}
	case 4: // text inserted or deleted at the start of a line
		i := r.IntN(h)
		if r.IntN(2) == 0 {
			out[i] = word() + out[i]
		} else if len(out[i]) > 3 && !strings.Contains(out[i], "\x1b") {
			out[i] = string([]rune(out[i])[min(3, len([]rune(out[i]))):])
		}
	case 5: // runs of a character, full lines, to the last column
		i := r.IntN(h)
		out[i] = strings.Repeat(string(rune('a'+r.IntN(26))), w-r.IntN(3))
	case 6: // lines emptied
		for n := 1 + r.IntN(3); n > 0; n-- {
			out[r.IntN(h)] = ""
		}
	case 7: // everything new
		for i := range out {
			out[i] = line()
		}
	case 8: // shorter
		out = out[:r.IntN(h)+1]
	}
	for i := range out {
		out[i] = cut(out[i])
	}
	return out
}

// plainLines is what a frame shows: no styles, trailing blanks dropped, h rows.
func plainLines(lines []string, h int) string {
	out := make([]string, h)
	for i := range min(len(lines), h) {
		var b strings.Builder
		l := lines[i]
		for j := 0; j < len(l); j++ {
			if l[j] == 0x1b {
				j += strings.IndexByte(l[j:], 'm')
				continue
			}
			b.WriteByte(l[j])
		}
		out[i] = strings.TrimRight(b.String(), " ")
	}
	return strings.Join(out, "\n")
}

// TestRendererAgrees: bubbletea v2's renderer draws a few hundred changing frames, and after
// each the screen shows exactly the frame: every sequence it wrote was applied as a terminal
// would. On each terminal type (the renderer picks its sequences by TERM) and with a terminal
// on the program's input (then it also moves with tabs and backspaces, and LF is a bare LF).
func TestRendererAgrees(t *testing.T) {
	const w, h = 60, 12
	for _, c := range []struct {
		term string
		tty  bool
	}{{"xterm-256color", false}, {"xterm-256color", true}, {"tmux-256color", true}, {"linux", true}, {"alacritty", false}} {
		t.Run(fmt.Sprintf("%s,tty=%v", c.term, c.tty), func(t *testing.T) {
			s := New(w, h)
			opts := []tea.ProgramOption{tea.WithOutput(s), tea.WithoutSignalHandler(), tea.WithWindowSize(w, h),
				tea.WithEnvironment([]string{"TERM=" + c.term}), tea.WithFPS(120)}
			if c.tty {
				master, slave, err := OpenPTY(w, h)
				if err != nil {
					t.Skipf("no pseudo-terminal: %v", err)
				}
				defer master.Close()
				defer slave.Close()
				opts = append(opts, tea.WithInput(slave))
			} else {
				s.MapNewline = true // bubbletea takes a program without a terminal to be in cooked mode
				opts = append(opts, tea.WithInput(nil))
			}
			p := tea.NewProgram(&frames{}, opts...)
			done := make(chan error, 1)
			go func() { _, err := p.Run(); done <- err }()
			r := rand.New(rand.NewPCG(1, uint64(len(c.term))))
			var lines []string
			for i := 0; i < 300; i++ {
				lines = nextFrame(r, lines, w, h)
				p.Send(frameMsg(strings.Join(lines, "\n")))
				want := plainLines(lines, h)
				deadline := time.Now().Add(2 * time.Second)
				for s.String() != want {
					if time.Now().After(deadline) {
						t.Fatalf("frame %d: the screen shows\n%s\nwant\n%s", i, s, want)
					}
					time.Sleep(2 * time.Millisecond)
				}
			}
			p.Quit()
			if err := <-done; err != nil {
				t.Fatal(err)
			}
			if s.AltScreen() || s.CursorHidden() {
				t.Errorf("after quitting: alternate screen %v, cursor hidden %v", s.AltScreen(), s.CursorHidden())
			}
		})
	}
}
