package tui

import (
	"bytes"
	"io"
	"strings"
	"testing"
	"time"

	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/colorprofile"
	"github.com/charmbracelet/x/ansi"
	"github.com/charmbracelet/x/exp/teatest/v2"

	"github.com/ftctl/ftctl/internal/vtscreen"
)

// The flows run the whole program (teatest): a fixed terminal size and type, a fixed colour
// profile, the fake backend, a fixed clock and trace. What the program writes goes through a
// terminal emulator: a flow waits for text to show on the screen, as a person would (bubbletea
// v2 redraws only the cells that change, so the bytes written need not hold the text whole).
// Each ends with the final frame compared with a golden file under testdata/ (go test ./tui -run
// Flow -update rewrites them).

// flow is a program under test and the screen it draws on.
type flow struct {
	t      *testing.T
	tm     *teatest.TestModel
	screen *vtscreen.Screen
}

// newFlow runs m on a w×h xterm, without colours unless profile says otherwise.
func newFlow(t *testing.T, m *Model, w, h int, profile ...colorprofile.Profile) *flow {
	p := colorprofile.NoTTY
	if len(profile) > 0 {
		p = profile[0]
	}
	tm := teatest.NewTestModel(t, m, teatest.WithInitialTermSize(w, h), teatest.WithProgramOptions(
		tea.WithColorProfile(p), tea.WithEnvironment([]string{"TERM=xterm-256color"})))
	s := vtscreen.New(w, h)
	s.MapNewline = true // no terminal on the program's input: bubbletea takes it to be in cooked mode
	return &flow{t: t, tm: tm, screen: s}
}

func (f *flow) Send(msg tea.Msg) { f.tm.Send(msg) }
func (f *flow) Type(s string)    { f.tm.Type(s) }

// waitFor waits until the screen shows what.
func (f *flow) waitFor(what string) {
	f.t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		io.Copy(f.screen, f.tm.Output())
		if f.screen.Contains(what) {
			return
		}
		if time.Now().After(deadline) {
			f.t.Fatalf("the screen never showed %q:\n%s", what, f.screen)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// finish aborts the console (ctrl+c) and returns its final model.
func (f *flow) finish() *Model {
	f.t.Helper()
	f.tm.Send(press("ctrl+c"))
	return f.final()
}

func (f *flow) final() *Model {
	f.t.Helper()
	return f.tm.FinalModel(f.t, teatest.WithFinalTimeout(5*time.Second)).(*Model)
}

// golden compares the final frame, as a terminal without colours shows it, with the golden file.
func golden(t *testing.T, m *Model) {
	t.Helper()
	teatest.RequireEqualOutput(t, []byte(ansi.Strip(m.Render())+"\n"))
}

func TestFlowFunctionsApply(t *testing.T) {
	fb := newFakeBackend(t)
	tm := newFlow(t, testModel(t, fb, testTrace), 100, 30)
	tm.Send(press("2"))
	tm.waitFor("/ types a pattern")
	tm.Type("/vfs_rea*")
	tm.waitFor("3 functions match")
	tm.Send(press("enter")) // marked; the keys go to the marks
	tm.Type("/")            // another pattern
	tm.Send(press("tab"))
	tm.Type("vfs_readv")
	tm.waitFor("1 function match")
	tm.Send(press("enter"))
	tm.Type("/")
	tm.Send(press("enter")) // empty field: the plan
	tm.waitFor("swap protocol?")
	tm.Type("y")
	tm.waitFor("applied, verified")
	m := tm.finish()
	golden(t, m)
	if len(fb.applied) != 1 || fb.lists.Filter.Total() != 3 || fb.lists.Notrace.Total() != 1 {
		t.Errorf("applied %v", fb.applied)
	}
	if !m.Aborted {
		t.Error("ctrl+c is an abort")
	}
}

func TestFlowFunctionsConfirmation(t *testing.T) {
	tm := newFlow(t, testModel(t, newFakeBackend(t), testTrace), 100, 24)
	tm.Send(press("2"))
	tm.waitFor("/ types a pattern")
	tm.Type("/tcp_v4_*")
	tm.waitFor("functions match")
	tm.Send(press("enter"))
	tm.Type("/")
	tm.Send(press("tab"))
	tm.Type("tcp_v4_do_rcv")
	tm.waitFor("1 function match")
	tm.Send(press("enter"))
	tm.waitFor("a or enter applies")
	tm.Type("a") // right after marking: applies (issue 18 item 7)
	tm.waitFor("swap protocol?")
	golden(t, tm.finish())
}

func TestFlowProbeRejected(t *testing.T) {
	tm := newFlow(t, testModel(t, newFakeBackend(t), testTrace), 100, 24)
	tm.Send(press("3"))
	tm.waitFor("no probes")
	tm.Type("a")
	tm.Type("p:op vfs_raed n=%ax")
	tm.waitFor("1 argument")
	tm.Send(press("enter"))
	tm.waitFor("kernel error_log")
	golden(t, tm.finish())
}

func TestFlowProbeSyntaxError(t *testing.T) {
	fb := newFakeBackend(t)
	tm := newFlow(t, testModel(t, fb, testTrace), 100, 24)
	tm.Send(press("3"))
	tm.waitFor("no probes")
	tm.Type("a")
	tm.Type("r:ret vfs_read ret=$retval:u33")
	tm.waitFor("found before")
	tm.Send(press("enter"))
	tm.waitFor("fix the definition first")
	golden(t, tm.finish())
	if len(fb.added) != 0 {
		t.Error("sent to the kernel")
	}
}

func TestFlowStreamColours(t *testing.T) {
	m := testModel(t, newFakeBackend(t), testTrace)
	tm := newFlow(t, m, 110, 30, colorprofile.ANSI)
	tm.waitFor("35 events")
	tm.Type("/")
	tm.Type("passwd")
	tm.Send(press("enter"))
	tm.waitFor("search: passwd")
	out := tm.finish()
	// The frame as a 16-colour terminal gets it.
	var b bytes.Buffer
	w := &colorprofile.Writer{Forward: &b, Profile: colorprofile.ANSI}
	if _, err := w.WriteString(out.Render() + "\n"); err != nil {
		t.Fatal(err)
	}
	teatest.RequireEqualOutput(t, b.Bytes())
	// Only SGR sequences reach the terminal: trace data cannot clear it, retitle it, ring it.
	frame := out.Render()
	for i := 0; i < len(frame); i++ {
		if frame[i] == 0x1b && (i+1 >= len(frame) || frame[i+1] != '[') || frame[i] == 0x07 {
			t.Fatalf("control byte at %d: %q", i, frame[max(0, i-20):min(len(frame), i+20)])
		}
	}
	for _, seq := range strings.SplitAfter(frame, "\x1b[")[1:] {
		end := strings.IndexFunc(seq, func(r rune) bool { return r >= 0x40 && r <= 0x7e })
		if end < 0 || seq[end] != 'm' {
			t.Fatalf("a non-SGR sequence: %q", seq[:min(len(seq), 10)])
		}
	}
}

func TestFlowStreamFilteredPaused(t *testing.T) {
	tm := newFlow(t, testModel(t, newFakeBackend(t), testTrace), 100, 24)
	tm.waitFor("35 events")
	tm.Type("c")
	tm.Send(press("enter")) // prefilled with the newest row's comm: bash
	tm.waitFor("comm=bash")
	tm.Send(press("space"))
	tm.Send(press("up"))
	tm.Send(press("up"))
	tm.waitFor("PAUSED")
	golden(t, tm.finish())
}

func TestFlowTop(t *testing.T) {
	tm := newFlow(t, testModel(t, newFakeBackend(t), testTrace), 90, 16)
	tm.waitFor("35 events")
	tm.Type("4")
	tm.waitFor("since start")
	golden(t, tm.finish())
}

func TestFlowHelp(t *testing.T) {
	tm := newFlow(t, testModel(t, newFakeBackend(t), testTrace), 100, 30)
	tm.Type("?")
	tm.waitFor("everywhere")
	golden(t, tm.finish())
}

func TestFlowQuit(t *testing.T) {
	tm := newFlow(t, testModel(t, newFakeBackend(t), testTrace), 80, 24)
	tm.waitFor("35 events")
	tm.Type("q")
	m := tm.final()
	if !m.Quit || m.Aborted {
		t.Errorf("quit %v aborted %v", m.Quit, m.Aborted)
	}
}

var _ tea.Model = (*Model)(nil)
