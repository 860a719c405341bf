package vtscreen

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	tea "github.com/charmbracelet/bubbletea"
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

// counter is a model whose view changes line by line, as bubbletea's renderer redraws it.
type counter struct{ n int }

func (c counter) Init() tea.Cmd { return nil }
func (c counter) Update(msg tea.Msg) (tea.Model, tea.Cmd) {
	if _, ok := msg.(tea.KeyMsg); ok {
		c.n++
		if c.n == 5 {
			return c, tea.Quit
		}
	}
	return c, nil
}
func (c counter) View() string {
	var lines []string
	for i := 0; i < 6; i++ {
		if i%2 == 0 {
			lines = append(lines, fmt.Sprintf("row %d: \x1b[1m%d\x1b[0m", i, c.n*i))
		} else {
			lines = append(lines, "unchanged "+strings.Repeat("x", i))
		}
	}
	return strings.Join(lines, "\n")
}

// The screen matches the model's view after bubbletea's incremental redraws.
func TestBubbleteaRenderer(t *testing.T) {
	s := New(40, 8)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	p := tea.NewProgram(counter{}, tea.WithContext(ctx), tea.WithInput(nil), tea.WithOutput(s), tea.WithAltScreen(), tea.WithoutSignalHandler())
	go func() {
		p.Send(tea.WindowSizeMsg{Width: 40, Height: 8})
		for i := 0; i < 4; i++ {
			time.Sleep(40 * time.Millisecond)
			p.Send(tea.KeyMsg{Type: tea.KeyRunes, Runes: []rune{'k'}})
		}
	}()
	go func() {
		time.Sleep(300 * time.Millisecond)
		p.Send(tea.KeyMsg{Type: tea.KeyRunes, Runes: []rune{'k'}})
	}()
	if _, err := p.Run(); err != nil {
		t.Fatal(err)
	}
	// The last frame (n = 5), redrawn line by line over the earlier ones; bubbletea erases the
	// line under the cursor (the last) when it stops.
	want := "row 0: 0\nunchanged x\nrow 2: 10\nunchanged xxx\nrow 4: 20\n"
	if !strings.HasPrefix(s.String(), want) {
		t.Errorf("screen:\n%s\nwant:\n%s", s, want)
	}
}
