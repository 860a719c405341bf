package tui

import (
	"strings"
	"testing"

	"github.com/charmbracelet/x/ansi"
)

// FuzzRowRendering: whatever bytes trace_pipe hands over (comms, markers and probed strings
// are chosen by whoever is traced), the stream view's rows and the top view carry no control
// character of their own: only the SGR sequences of ftctl's colours reach the terminal, and
// every line keeps the screen's width.
func FuzzRowRendering(f *testing.F) {
	f.Add(testTrace)
	f.Add("   evil\x1b[2J-1 [000] .....   1.000000: tracing_mark_write: \x1b]0;t\x07\x9b2J\xff\u202e\n")
	f.Add("CPU:0 [LOST 3 EVENTS]\n")
	f.Add("              sh-1       [001] .....     1.000000: <stack trace>\n => \x1b[31m\n")
	fb := &fakeBackend{ix: nil, tracer: "nop"}
	f.Fuzz(func(t *testing.T, text string) {
		m := New(Options{Backend: fb, RingSize: 1000, Now: fixedNow})
		m.SetSize(100, 20)
		m.Update(batchMsg{Rows: newIngester().feed([]byte(text))})
		m.stream.query = "a" // highlighting splits the styled pieces too
		for _, view := range []string{"1", "4"} {
			m.Update(press(view))
			checkFrame(t, m.Render(), 100)
		}
	})
}

// checkFrame fails unless a frame carries only SGR sequences (ftctl's colours), no control
// character of its own, and every line is width cells wide.
func checkFrame(t *testing.T, frame string, width int) {
	t.Helper()
	for _, seq := range strings.SplitAfter(frame, "\x1b[")[1:] {
		end := strings.IndexFunc(seq, func(r rune) bool { return r >= 0x40 && r <= 0x7e })
		if end < 0 || seq[end] != 'm' {
			t.Fatalf("a non-SGR sequence %q in\n%q", seq[:min(len(seq), 12)], frame)
		}
	}
	plain := ansi.Strip(frame)
	for _, r := range plain {
		if (r < 0x20 && r != '\n') || r == 0x7f || (r >= 0x80 && r < 0xa0) {
			t.Fatalf("control character %U on the screen:\n%q", r, plain)
		}
	}
	for _, l := range strings.Split(frame, "\n") {
		if w := ansi.StringWidth(l); w != width {
			t.Fatalf("a line %d wide: %q", w, ansi.Strip(l))
		}
	}
}
