package tui

import (
	"bytes"
	"os"
	"strings"
	"testing"
	"time"

	tea "github.com/charmbracelet/bubbletea"
	"github.com/charmbracelet/lipgloss"
	"github.com/charmbracelet/x/exp/teatest"
	"github.com/muesli/termenv"
)

// The flows run the whole program (teatest): a fixed terminal size, a fixed colour profile,
// the fake backend, a fixed clock and trace. Each ends with the final frame compared with a
// golden file under testdata/ (go test ./tui -run Flow -update rewrites them).

func TestMain(m *testing.M) {
	lipgloss.SetColorProfile(termenv.Ascii)
	os.Exit(m.Run())
}

func waitFor(t *testing.T, tm *teatest.TestModel, what string) {
	t.Helper()
	teatest.WaitFor(t, tm.Output(), func(b []byte) bool { return bytes.Contains(b, []byte(what)) },
		teatest.WithDuration(5*time.Second), teatest.WithCheckInterval(10*time.Millisecond))
}

func finish(t *testing.T, tm *teatest.TestModel) *Model {
	t.Helper()
	tm.Send(press("ctrl+c"))
	return tm.FinalModel(t, teatest.WithFinalTimeout(5*time.Second)).(*Model)
}

func golden(t *testing.T, m *Model) {
	t.Helper()
	teatest.RequireEqualOutput(t, []byte(m.Render()+"\n"))
}

func TestFlowFunctionsApply(t *testing.T) {
	fb := newFakeBackend(t)
	tm := teatest.NewTestModel(t, testModel(t, fb, testTrace), teatest.WithInitialTermSize(100, 30))
	tm.Send(press("2"))
	waitFor(t, tm, "traceable functions")
	tm.Type("vfs_rea*")
	waitFor(t, tm, "3 functions match")
	tm.Send(press("enter"))
	tm.Send(press("tab"))
	tm.Type("vfs_readv")
	waitFor(t, tm, "1 function match")
	tm.Send(press("enter"))
	tm.Send(press("enter")) // empty field: the plan
	waitFor(t, tm, "swap protocol?")
	tm.Type("y")
	waitFor(t, tm, "applied, verified")
	m := finish(t, tm)
	golden(t, m)
	if len(fb.applied) != 1 || fb.lists.Filter.Total() != 3 || fb.lists.Notrace.Total() != 1 {
		t.Errorf("applied %v", fb.applied)
	}
	if !m.Aborted {
		t.Error("ctrl+c is an abort")
	}
}

func TestFlowFunctionsConfirmation(t *testing.T) {
	tm := teatest.NewTestModel(t, testModel(t, newFakeBackend(t), testTrace), teatest.WithInitialTermSize(100, 24))
	tm.Send(press("2"))
	waitFor(t, tm, "traceable functions")
	tm.Type("tcp_v4_*")
	waitFor(t, tm, "functions match")
	tm.Send(press("enter"))
	tm.Send(press("tab"))
	tm.Type("tcp_v4_do_rcv")
	waitFor(t, tm, "1 function match")
	tm.Send(press("enter"))
	tm.Send(press("esc"))
	tm.Type("a")
	waitFor(t, tm, "swap protocol?")
	golden(t, finish(t, tm))
}

func TestFlowProbeRejected(t *testing.T) {
	tm := teatest.NewTestModel(t, testModel(t, newFakeBackend(t), testTrace), teatest.WithInitialTermSize(100, 24))
	tm.Send(press("3"))
	waitFor(t, tm, "no kprobes")
	tm.Type("a")
	tm.Type("p:op vfs_raed n=%ax")
	waitFor(t, tm, "1 argument")
	tm.Send(press("enter"))
	waitFor(t, tm, "kernel error_log")
	golden(t, finish(t, tm))
}

func TestFlowProbeSyntaxError(t *testing.T) {
	fb := newFakeBackend(t)
	tm := teatest.NewTestModel(t, testModel(t, fb, testTrace), teatest.WithInitialTermSize(100, 24))
	tm.Send(press("3"))
	waitFor(t, tm, "no kprobes")
	tm.Type("a")
	tm.Type("r:ret vfs_read ret=$retval:u33")
	waitFor(t, tm, "found before")
	tm.Send(press("enter"))
	waitFor(t, tm, "fix the definition first")
	golden(t, finish(t, tm))
	if len(fb.added) != 0 {
		t.Error("sent to the kernel")
	}
}

func TestFlowStreamColours(t *testing.T) {
	lipgloss.SetColorProfile(termenv.ANSI)
	defer lipgloss.SetColorProfile(termenv.Ascii)
	m := testModel(t, newFakeBackend(t), testTrace)
	m.env.styles = DefaultStyles()
	tm := teatest.NewTestModel(t, m, teatest.WithInitialTermSize(110, 30))
	waitFor(t, tm, "35 events")
	tm.Type("/")
	tm.Type("passwd")
	tm.Send(press("enter"))
	waitFor(t, tm, "search: passwd")
	out := finish(t, tm)
	golden(t, out)
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
	tm := teatest.NewTestModel(t, testModel(t, newFakeBackend(t), testTrace), teatest.WithInitialTermSize(100, 24))
	waitFor(t, tm, "35 events")
	tm.Type("c")
	tm.Send(press("enter")) // prefilled with the newest row's comm: bash
	waitFor(t, tm, "comm=bash")
	tm.Send(press("space"))
	tm.Send(press("up"))
	tm.Send(press("up"))
	waitFor(t, tm, "PAUSED")
	golden(t, finish(t, tm))
}

func TestFlowTop(t *testing.T) {
	tm := teatest.NewTestModel(t, testModel(t, newFakeBackend(t), testTrace), teatest.WithInitialTermSize(90, 16))
	waitFor(t, tm, "35 events")
	tm.Type("4")
	waitFor(t, tm, "since start")
	golden(t, finish(t, tm))
}

func TestFlowHelp(t *testing.T) {
	tm := teatest.NewTestModel(t, testModel(t, newFakeBackend(t), testTrace), teatest.WithInitialTermSize(100, 30))
	tm.Type("?")
	waitFor(t, tm, "everywhere")
	golden(t, finish(t, tm))
}

func TestFlowQuit(t *testing.T) {
	tm := teatest.NewTestModel(t, testModel(t, newFakeBackend(t), testTrace), teatest.WithInitialTermSize(80, 24))
	waitFor(t, tm, "35 events")
	tm.Type("q")
	m := tm.FinalModel(t, teatest.WithFinalTimeout(5*time.Second)).(*Model)
	if !m.Quit || m.Aborted {
		t.Errorf("quit %v aborted %v", m.Quit, m.Aborted)
	}
}

var _ tea.Model = (*Model)(nil)
