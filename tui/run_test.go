package tui

import (
	"context"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/charmbracelet/x/term"

	"github.com/ftctl/ftctl/internal/fixture"
	"github.com/ftctl/ftctl/internal/vtscreen"
)

// The console on a real terminal that never answers anything (a serial or IPMI console): its
// first screen comes at once, whatever it asked (never the background colour nor the cursor
// position, which v1 waited 5 s for); q gives the terminal back as it was: the main
// screen, the cursor shown, the tty's modes (echo, canonical input) restored.
func TestRunOnSilentTerminal(t *testing.T) {
	master, slave, err := vtscreen.OpenPTY(100, 30)
	if err != nil {
		t.Skipf("no pseudo-terminal: %v", err)
	}
	defer master.Close()
	defer slave.Close()
	before, err := term.GetState(slave.Fd())
	if err != nil {
		t.Fatal(err)
	}
	screen := vtscreen.New(100, 30)
	var raw fixture.SyncBuffer
	go io.Copy(io.MultiWriter(screen, &raw), master) // only reads: never answers
	t.Setenv("TERM", "xterm-256color")
	m := New(Options{Backend: newFakeBackend(t), Source: NewTextSource(testTrace), Instance: "ftctl-4242", Private: true,
		Group: "ftctl_4242", Now: fixedNow, StatusEvery: time.Hour, RingSize: 1000})
	start := time.Now()
	done := make(chan error, 1)
	go func() {
		_, err := Run(context.Background(), m, slave, slave)
		done <- err
	}()
	for !screen.Contains("35 events") {
		select {
		case err := <-done:
			t.Fatalf("the console ended (%v) before its first screen:\n%s", err, screen)
		case <-time.After(10 * time.Millisecond):
		}
		if time.Since(start) > 5*time.Second {
			t.Fatalf("no first screen after 5 s:\n%s", screen)
		}
	}
	// Generous for a loaded machine: a query waited for would cost seconds (v1 waited 5 s).
	if d := time.Since(start); d > time.Second {
		t.Errorf("the first screen took %v", d)
	}
	if !screen.AltScreen() || !screen.CursorHidden() {
		t.Errorf("while running: alternate screen %v, cursor hidden %v", screen.AltScreen(), screen.CursorHidden())
	}
	// It may ask (bubbletea asks which modes the terminal has), but waits for no answer; and it
	// does not ask what v1 stalled on: the background colour, the cursor position.
	q := queries(raw.String())
	t.Logf("first screen after %v; the queries written: %q", time.Since(start), q)
	for _, x := range q {
		if strings.HasPrefix(x, "ESC]11;?") || strings.HasPrefix(x, "ESC[6n") {
			t.Errorf("the console asked %q", x)
		}
	}
	master.Write([]byte("q"))
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("q did not end the console")
	}
	for deadline := time.Now().Add(2 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		if !screen.AltScreen() && !screen.CursorHidden() {
			break // the last bytes came through the pty
		}
	}
	if screen.AltScreen() || screen.CursorHidden() {
		t.Errorf("after q: alternate screen %v, cursor hidden %v", screen.AltScreen(), screen.CursorHidden())
	}
	after, err := term.GetState(slave.Fd())
	if err != nil {
		t.Fatal(err)
	}
	if *after != *before {
		t.Errorf("the tty's modes are not restored:\n%+v\nwere\n%+v", after, before)
	}
}

// queries are the requests for an answer in what a program wrote: device status and attribute
// reports, mode reports, colour and keyboard protocol queries.
func queries(out string) []string {
	var q []string
	for _, seq := range strings.SplitAfter(out, "\x1b")[1:] {
		switch {
		case strings.HasPrefix(seq, "[6n"), strings.HasPrefix(seq, "[c"), strings.HasPrefix(seq, "[>c"),
			strings.HasPrefix(seq, "[?u"), strings.HasPrefix(seq, "[>q"),
			strings.HasPrefix(seq, "[?") && strings.Contains(seq[:min(len(seq), 12)], "$p"),
			strings.HasPrefix(seq, "]10;?"), strings.HasPrefix(seq, "]11;?"), strings.HasPrefix(seq, "]12;?"):
			q = append(q, "ESC"+seq[:min(len(seq), 12)])
		}
	}
	return q
}
