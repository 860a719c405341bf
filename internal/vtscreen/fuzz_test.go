package vtscreen

import "testing"

// FuzzWrite: any output, in any pieces, leaves a screen of the right size (no panic, no
// cursor out of bounds).
func FuzzWrite(f *testing.F) {
	f.Add([]byte("hello\r\n\x1b[2;3H\x1b[K\x1b[31mx\x1b[0m\x1b]0;t\x07"), 3)
	f.Add([]byte("\x1b[999;999H\x1b[999A\x1b[999D\x1b[J\x1b[?1049h\xe2\x80"), 1)
	f.Add([]byte("\x1b[2;3r\x1b[3S\x1b[9T\x1bM\x1bD\x1b[5L\x1b[9M\x1b[99@\x1b[99P\x1b[99X\x1b[4hab\x1b[4l\x1b[99bc\x1b[?7l\txyz\x1b[9Z\x1b[9I"), 5)
	f.Add([]byte("\x1bP+q\x1b\\\x1b_G\x1b\\\x1b[?1049h\x1b[?25l\x1b7\x1b[3;3H\x1b8\x1b[?1049l\x1bc\x1b(B\x1b[2 q"), 9)
	f.Fuzz(func(t *testing.T, b []byte, split int) {
		s := New(7, 3)
		if split < 0 {
			split = -split
		}
		split %= len(b) + 1
		s.Write(b[:split])
		s.Write(b[split:])
		lines := s.Lines()
		if len(lines) != 3 {
			t.Fatalf("%d lines", len(lines))
		}
		for _, l := range lines {
			if n := len([]rune(l)); n > 7 {
				t.Fatalf("a line of %d cells: %q", n, l)
			}
		}
	})
}
