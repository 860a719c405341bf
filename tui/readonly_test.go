package tui

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/ftctl/ftctl/probes"
	"github.com/ftctl/ftctl/tracefs"
)

// Over a read-only tracefs the console reads (the status, the lists) and refuses every change
// before the kernel is asked, with the reason on screen; the status bar says read-only.
func TestReadOnlyConsole(t *testing.T) {
	fb := newFakeBackend(t)
	ro := &ReadOnlyBackend{Backend: fb, Why: "tracefs is mounted read-only (ro,nosuid)"}
	m := testModel(t, ro, "")
	m.SetSize(120, 30)
	step(m, statusMsg{st: func() Status { s, _ := ro.Status(); return s }()})
	if s := screen(m); !strings.Contains(s, "(read-only)") {
		t.Errorf("the status bar does not say read-only:\n%s", s)
	}
	for _, k := range []string{"O", "T"} { // tracing_on, the tracer
		_, cmd := m.Update(press(k))
		step(m, cmd())
		if !m.msgErr || !strings.Contains(m.msg, "the console is read-only") || !strings.Contains(m.msg, "(ro,nosuid)") {
			t.Errorf("%s: message %q", k, m.msg)
		}
		if s := screen(m); !shows(s, "the console is read-only") {
			t.Errorf("%s: the refusal is not on screen:\n%s", k, s)
		}
	}
	if !fb.on || fb.tracer != "nop" {
		t.Errorf("a refused change reached the backend: tracing %v, tracer %s", fb.on, fb.tracer)
	}

	m, _ = functionsModel(t)
	m.env.backend = ro
	m.funcs.env.backend = ro
	typeText(m, "vfs_read")
	step(m, press("enter"))
	step(m, press("a"))
	step(m, press("y"))
	if len(fb.applied) != 0 {
		t.Errorf("applied %v over a read-only tracefs", fb.applied)
	}
	if s := screen(m); !shows(s, "the console is read-only") {
		t.Errorf("the refused apply does not say why:\n%s", s)
	}

	ctx := context.Background()
	def := &probes.Definition{}
	for name, err := range map[string]error{
		"add probe":    func() error { _, err := ro.AddProbe(ctx, def); return err }(),
		"enable probe": ro.EnableProbe("g", "e", true),
		"remove probe": ro.RemoveProbe(ctx, "g", "e"),
		"count":        func() error { _, err := ro.StartCount(ctx, CountRequest{}); return err }(),
		"graph":        func() error { _, _, err := ro.StartGraph(ctx, GraphRequest{}); return err }(),
	} {
		if !errors.Is(err, tracefs.ErrReadOnly) {
			t.Errorf("%s: %v, want tracefs.ErrReadOnly", name, err)
		}
	}
	if len(fb.added) != 0 || len(fb.counting) != 0 {
		t.Errorf("a refused change reached the backend: probes %v, counts %v", fb.added, fb.counting)
	}
}
