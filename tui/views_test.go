package tui

import (
	"fmt"
	"strings"
	"syscall"
	"testing"
	"time"
	"unicode/utf8"

	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/x/ansi"

	"github.com/ftctl/ftctl/filters"
	"github.com/ftctl/ftctl/probes"
	"github.com/ftctl/ftctl/stream"
	"github.com/ftctl/ftctl/tracefs"
)

// testTrace is a deterministic trace_pipe text: function calls of two processes, a marker and a
// comm written by an attacker, a kprobe, a stack trace and a LOST line.
var testTrace = func() string {
	var b strings.Builder
	line := func(comm string, pid, cpu int, ts, body string) {
		fmt.Fprintf(&b, "%16s-%-7d [%03d] .....  %s: %s\n", comm, pid, cpu, ts, body)
	}
	for i := 0; i < 30; i++ {
		ts := fmt.Sprintf("%5d.%06d", 100, i*10)
		switch i % 3 {
		case 0:
			line("bash", 1234, 1, ts, "vfs_read <-ksys_read")
		case 1:
			line("nginx", 4321, 0, ts, "vfs_write <-ksys_write")
		case 2:
			line("bash", 1234, 1, ts, "ksys_read <-do_syscall_64")
		}
	}
	line("evil\x1b[2J", 666, 0, "  100.000300", "tracing_mark_write: owned \x1b]0;title\x07 \x1b[31mred")
	line("cat", 777, 1, "  100.000310", "myopen: (do_sys_openat2+0x0/0xe0) dfd=-100 path=\"/etc/passwd\"")
	line("sh", 260, 1, "  100.000320", "<stack trace>")
	b.WriteString(" => bprm_execve\n => do_execveat_common.isra.0\n")
	b.WriteString("CPU:1 [LOST 42 EVENTS]\n")
	line("bash", 1234, 1, "  100.000330", "vfs_read <-ksys_read")
	return b.String()
}()

// feed puts the trace into a model's views without a program (Update directly).
func feed(m *Model, text string) {
	step(m, batchMsg{Rows: newIngester().feed([]byte(text))})
}

func press(s string) tea.KeyPressMsg {
	switch s {
	case "enter":
		return tea.KeyPressMsg{Code: tea.KeyEnter}
	case "esc":
		return tea.KeyPressMsg{Code: tea.KeyEscape}
	case "tab":
		return tea.KeyPressMsg{Code: tea.KeyTab}
	case "up":
		return tea.KeyPressMsg{Code: tea.KeyUp}
	case "down":
		return tea.KeyPressMsg{Code: tea.KeyDown}
	case "space":
		return tea.KeyPressMsg{Code: tea.KeySpace, Text: " "}
	case "ctrl+c":
		return tea.KeyPressMsg{Code: 'c', Mod: tea.ModCtrl}
	case "f2":
		return tea.KeyPressMsg{Code: tea.KeyF2}
	}
	r := []rune(s)
	if len(r) != 1 {
		panic("press: one key: " + s)
	}
	return tea.KeyPressMsg{Code: r[0], Text: s}
}

// step sends msg to the model and runs the commands it returns, feeding their messages back as
// the program would, except the ticks and the stream, which wait.
func step(m *Model, msg tea.Msg) {
	_, cmd := m.Update(msg)
	runCmd(m, cmd, 0)
}

func runCmd(m *Model, cmd tea.Cmd, depth int) {
	if cmd == nil || depth > 8 {
		return
	}
	ch := make(chan tea.Msg, 1)
	go func() { ch <- cmd() }()
	select {
	case msg := <-ch:
		switch msg := msg.(type) {
		case tea.BatchMsg:
			for _, c := range msg {
				runCmd(m, c, depth+1)
			}
		case nil, frameTickMsg, statusTickMsg, batchMsg, streamEndedMsg, tea.QuitMsg:
		default:
			_, c := m.Update(msg)
			runCmd(m, c, depth+1)
		}
	case <-time.After(50 * time.Millisecond):
	}
}

func typeText(m *Model, s string) {
	for _, r := range s {
		step(m, press(string(r)))
	}
}

// trimLines drops the padding at the end of each line.
func trimLines(s string) string {
	lines := strings.Split(s, "\n")
	for i := range lines {
		lines[i] = strings.TrimRight(lines[i], " ")
	}
	return strings.Join(lines, "\n")
}

// screen is the frame without colours.
func screen(m *Model) string { return ansi.Strip(m.Render()) }

func TestStreamViewShowsEscapedColumns(t *testing.T) {
	m := testModel(t, newFakeBackend(t), "")
	m.SetSize(120, 40)
	feed(m, testTrace)
	s := screen(m)
	for _, want := range []string{
		`evil\x1b[2J-666`, `owned \x1b]0;title\x07 \x1b[31mred`, "LOST", "42 events lost on this CPU",
		`myopen`, `path="/etc/passwd"`, "<stack trace> => bprm_execve => do_execveat_common.isra.0",
		"● FOLLOWING", "35 events", "lost: 42 reported",
	} {
		if !strings.Contains(s, want) {
			t.Errorf("missing %q in\n%s", want, s)
		}
	}
	if strings.ContainsAny(m.Render(), "\x07") || strings.Contains(ansi.Strip(m.Render()), "\x1b") {
		t.Error("trace data drives the terminal")
	}
	for _, l := range strings.Split(m.Render(), "\n") {
		if w := ansi.StringWidth(l); w != 120 {
			t.Errorf("line of width %d: %q", w, ansi.Strip(l))
		}
	}
	if n := strings.Count(m.Render(), "\n") + 1; n != 40 {
		t.Errorf("%d lines", n)
	}
}

func TestStreamViewFiltersSearchAndPause(t *testing.T) {
	m := testModel(t, newFakeBackend(t), "")
	m.SetSize(120, 30)
	feed(m, testTrace)
	v := m.stream
	// Quick filter by comm: the prompt is prefilled from the selected (newest) row.
	step(m, press("c"))
	if !v.Typing() || v.prompt.Value() != "bash" {
		t.Fatalf("comm prompt %q", v.prompt.Value())
	}
	step(m, press("enter"))
	if v.count() != 22 { // 21 bash calls and the LOST line, which always passes
		t.Errorf("%d rows pass comm=bash", v.count())
	}
	if s := screen(m); strings.Contains(s, "nginx") || !strings.Contains(s, "filter: comm=bash · 22 match") {
		t.Errorf("filtered screen:\n%s", s)
	}
	// New rows are filtered as they come.
	feed(m, "           nginx-4321    [000] .....   101.000000: vfs_write <-ksys_write\n            bash-1234    [001] .....   101.000001: vfs_read <-ksys_read\n")
	if v.count() != 23 {
		t.Errorf("%d rows after more data", v.count())
	}
	// pid and event filters; a bad pid is refused.
	step(m, press("p"))
	v.prompt.SetValue("x1")
	step(m, press("enter"))
	if m.msg == "" || !m.msgErr || v.filter.HasPID {
		t.Errorf("bad pid accepted: %q", m.msg)
	}
	step(m, press("x"))
	step(m, press("e"))
	v.prompt.SetValue("sched:myopen")
	step(m, press("enter"))
	if v.count() != 2 { // myopen and LOST
		t.Errorf("event=myopen: %d rows", v.count())
	}
	step(m, press("x"))
	if v.filtered || v.count() != v.ring.Len() {
		t.Error("x must clear the filters")
	}
	// Pause freezes the view; new rows are counted, not shown.
	step(m, press("space"))
	feed(m, "            bash-1234    [001] .....   102.000000: vfs_read <-ksys_read\n")
	if s := screen(m); !strings.Contains(s, "PAUSED  +1 new") || strings.Contains(s, "102.000000") {
		t.Errorf("paused screen:\n%s", s)
	}
	step(m, press("f"))
	if s := screen(m); !strings.Contains(s, "102.000000") {
		t.Errorf("follow does not show the newest:\n%s", s)
	}
	// Search: jumps to the newest match and highlights it; n goes to older ones.
	step(m, press("/"))
	typeText(m, "MYOPEN")
	step(m, press("enter"))
	if r := v.selected(); r == nil || string(r.Name) != "myopen" {
		t.Fatalf("search did not select the myopen row: %+v", r)
	}
	step(m, press("n"))
	if !strings.Contains(m.msg, "no more matches above") {
		t.Errorf("n past the last match: %q", m.msg)
	}
	if !strings.Contains(m.Render(), "\x1b[7;1mmyopen\x1b[0m") && !strings.Contains(m.Render(), "myopen") {
		t.Error("no highlight")
	}
	// Scrolling up and down moves the selection.
	step(m, press("g"))
	if r := v.selected(); r == nil || r.Seq != v.ring.Oldest() {
		t.Errorf("g: %+v", r)
	}
	step(m, press("down"))
	if r := v.selected(); r == nil || r.Seq != v.ring.Oldest()+1 {
		t.Errorf("down: %+v", r)
	}
}

func TestStreamViewRingBoundsMemory(t *testing.T) {
	m := New(Options{Backend: newFakeBackend(t), RingSize: 1000, Now: fixedNow})
	m.SetSize(100, 20)
	var b strings.Builder
	for i := 0; i < 5000; i++ {
		fmt.Fprintf(&b, "%16s-%-7d [000] .....  %5d.%06d: vfs_read <-ksys_read\n", "bash", 1, 1, i)
	}
	step(m, press("c"))
	m.stream.prompt.SetValue("bash")
	step(m, press("enter"))
	feed(m, b.String())
	if m.stream.ring.Len() != 1000 || m.stream.total != 5000 || m.stream.matched.Len() != 1000 {
		t.Errorf("ring %d total %d matched %d", m.stream.ring.Len(), m.stream.total, m.stream.matched.Len())
	}
	if s := screen(m); !strings.Contains(s, "5,000 events · 1,000 kept") {
		t.Errorf("%s", s)
	}
}

func TestRenderSegmentsHighlight(t *testing.T) {
	st := DefaultStyles()
	segs := []segment{{text: "abcFOOdef", plain: true}, {text: "foo", plain: true}}
	got := string(renderSegments(nil, segs, 100, "foo", st.Highlight))
	if ansi.Strip(got) != "abcFOOdeffoo" || strings.Count(got, "FOO") != 1 {
		t.Errorf("%q", got)
	}
	if got := ansi.Strip(string(renderSegments(nil, segs, 5, "", st.Highlight))); got != "abcFO" {
		t.Errorf("cut: %q", got)
	}
}

// functionsArrived is a console just switched to the Functions view, its index and lists read.
func functionsArrived(t *testing.T) (*Model, *fakeBackend) {
	fb := newFakeBackend(t)
	m := testModel(t, fb, "")
	m.SetSize(100, 30)
	step(m, indexMsg{ix: fb.ix})
	step(m, listsMsg{l: fb.lists})
	step(m, press("2"))
	return m, fb
}

// functionsModel is a console on the Functions view with the pattern field opened (/).
func functionsModel(t *testing.T) (*Model, *fakeBackend) {
	m, fb := functionsArrived(t)
	step(m, press("/"))
	return m, fb
}

// The pattern field takes the keys only after / (or i), and gives them back on enter and
// esc: on arrival in Functions, 4 goes to Top and T cycles the tracer (issue 33); in the field
// they are typed.
func TestFunctionsFieldTakesKeysOnlyAfterSlash(t *testing.T) {
	m, _ := functionsArrived(t)
	if m.funcs.Typing() {
		t.Fatal("the pattern field took the keys on arrival")
	}
	if s := screen(m); !strings.Contains(s, "/ types a pattern") {
		t.Errorf("no hint that / types a pattern:\n%s", s)
	}
	step(m, press("4"))
	if m.state != stateTop {
		t.Fatalf("4 in Functions: state %v, want Top", m.state)
	}
	step(m, press("2"))
	if _, cmd := m.Update(press("T")); cmd == nil || m.funcs.input.Value() != "" {
		t.Errorf("T in Functions: typed %q, no tracer change asked", m.funcs.input.Value())
	}
	step(m, press("/"))
	if !m.funcs.Typing() {
		t.Fatal("/ did not open the pattern field")
	}
	typeText(m, "T4")
	if v := m.funcs.input.Value(); v != "T4" || m.state != stateFunctions {
		t.Errorf("in the field: %q, state %v", v, m.state)
	}
	step(m, press("esc"))
	if m.funcs.Typing() {
		t.Fatal("esc kept the focus")
	}
	step(m, press("4"))
	if m.state != stateTop {
		t.Errorf("4 after esc: state %v", m.state)
	}
	step(m, press("2"))
	step(m, press("i"))
	m.funcs.input.SetValue("")
	typeText(m, "vfs_read")
	step(m, press("enter")) // marked: the keys are the view's again
	if m.funcs.Typing() || len(m.funcs.marks) != 1 {
		t.Fatalf("after enter: typing %v, marks %+v", m.funcs.Typing(), m.funcs.marks)
	}
	step(m, press("1"))
	if m.state != stateStream {
		t.Errorf("1 after marking: state %v", m.state)
	}
	// The help screen says how the field takes and gives back the keys.
	step(m, press("2"))
	step(m, press("?"))
	if s := screen(m); !shows(s, "/ or i") || !shows(s, "esc") || !shows(s, "takes the keys only once a key opens it") {
		t.Errorf("help:\n%s", s)
	}
}

func TestFunctionsPreviewMarkApply(t *testing.T) {
	m, fb := functionsModel(t)
	typeText(m, "vfs_rea*")
	if s := screen(m); !strings.Contains(s, "3 functions match") || !strings.Contains(s, "13930  vfs_read") {
		t.Fatalf("preview:\n%s", s)
	}
	typeText(m, "x")
	if s := screen(m); !strings.Contains(s, "0 functions match") {
		t.Errorf("no match:\n%s", s)
	}
	step(m, press("enter"))
	if len(m.funcs.marks) != 0 || !m.msgErr {
		t.Error("a pattern matching nothing was marked")
	}
	m.funcs.input.SetValue("vfs_raed")
	runCmd(m, m.funcs.preview(), 0)
	if s := screen(m); !strings.Contains(s, "close: vfs_read") {
		t.Errorf("suggestions:\n%s", s)
	}
	m.funcs.input.SetValue("[")
	m.funcs.preview()
	m.funcs.input.SetValue("1abc")
	m.funcs.preview()
	if m.funcs.patErr == nil || !strings.Contains(screen(m), "starts with a digit") {
		t.Error("invalid pattern not explained")
	}
	m.funcs.input.SetValue("vfs_rea*")
	m.funcs.preview()
	step(m, press("enter")) // marked: the field gives the keys back to the marks
	if m.funcs.Typing() {
		t.Error("the field kept the focus after marking")
	}
	step(m, press("/")) // another pattern
	step(m, press("tab"))
	typeText(m, "vfs_readv")
	step(m, press("enter"))
	if len(m.funcs.marks) != 2 || m.funcs.marks[1].file != filters.NotraceFile {
		t.Fatalf("marks %+v", m.funcs.marks)
	}
	// enter on the marks: the plan, computed in a command.
	cmd := m.funcs.Update(press("enter"))
	msg := cmd().(planMsg)
	if msg.err != nil || len(msg.lines) != 2 || len(msg.changes) != 3 {
		t.Fatalf("plan %+v", msg)
	}
	step(m, msg)
	s := screen(m)
	if !strings.Contains(s, "set_ftrace_filter   empty (every function) → 3 functions   +3 −0") ||
		!strings.Contains(s, "set_ftrace_notrace  empty → 1 function   +1 −0") {
		t.Fatalf("confirmation:\n%s", s)
	}
	// y applies, in a command; the result comes back as a message.
	cmd = m.funcs.Update(press("y"))
	for _, c := range cmd().(tea.BatchMsg) {
		if r, ok := c().(appliedMsg); ok {
			step(m, r)
		}
	}
	if len(fb.applied) != 1 || fb.lists.Filter.Total() != 3 || fb.lists.Notrace.Total() != 1 {
		t.Fatalf("applied %v, filter %d", fb.applied, fb.lists.Filter.Total())
	}
	if !strings.Contains(m.msg, "applied, verified") || len(m.funcs.marks) != 0 {
		t.Errorf("after apply: %q", m.msg)
	}
}

func TestProbesInlineValidation(t *testing.T) {
	fb := newFakeBackend(t)
	m := testModel(t, fb, "")
	m.SetSize(100, 30)
	step(m, press("3"))
	step(m, press("a"))
	typeText(m, "p:myopen do_sys_openat2 dfd=%zz")
	s := screen(m)
	if !strings.Contains(trimLines(s), "\n  p:myopen do_sys_openat2 dfd=%zz\n"+strings.Repeat(" ", 30)+"^\n") ||
		!strings.Contains(s, "Invalid register name (found before anything reached the kernel)") {
		t.Fatalf("no caret:\n%s", s)
	}
	if cmd := m.probes.Update(press("enter")); cmd == nil || len(fb.added) != 0 {
		t.Fatal("an invalid definition must not be sent")
	}
	m.probes.input.SetValue("p:myopen do_sys_openat2 dfd=%di")
	m.probes.validate()
	if s := screen(m); !strings.Contains(s, "✓ kprobe on do_sys_openat2, 1 argument") {
		t.Errorf("valid:\n%s", s)
	}
	step(m, m.probes.Update(press("enter"))())
	if len(fb.added) != 1 || m.probes.adding {
		t.Fatalf("added %v", fb.added)
	}
}

func TestTopCountsAndOrder(t *testing.T) {
	m := testModel(t, newFakeBackend(t), "")
	m.SetSize(100, 20)
	feed(m, testTrace)
	step(m, press("4"))
	best := m.top.Best(3)
	if len(best) != 3 || best[0].key != "vfs_read" || best[0].n != 11 || best[1].key != "ksys_read" || best[2].key != "vfs_write" {
		for _, e := range best {
			t.Logf("%s %d", e.key, e.n)
		}
		t.Fatal("order")
	}
	step(m, press("m"))
	if b := m.top.Best(1); b[0].key != "function" || b[0].n != 31 {
		t.Errorf("by event: %+v", b[0])
	}
	step(m, press("m"))
	if b := m.top.Best(1); b[0].key != "bash" {
		t.Errorf("by comm: %+v", b[0])
	}
	m.top.Tick()
	if s := screen(m); !strings.Contains(s, `evil\x1b[2J`) || !strings.Contains(s, "34 events since start") {
		t.Errorf("%s", s)
	}
	step(m, press("r"))
	if m.top.total != 0 {
		t.Error("reset")
	}
}

func TestQuitAndAbort(t *testing.T) {
	m := testModel(t, newFakeBackend(t), "")
	if _, cmd := m.Update(press("q")); cmd == nil || !m.Quit {
		t.Error("q must quit")
	}
	m = testModel(t, newFakeBackend(t), "")
	step(m, press("2"))
	step(m, press("/")) // typing in the pattern field: q is a letter, ctrl+c still aborts
	step(m, press("q"))
	if m.Quit {
		t.Error("q in a text field quit")
	}
	if _, cmd := m.Update(press("ctrl+c")); cmd == nil || !m.Aborted {
		t.Error("ctrl+c must abort")
	}
}

func TestTracerRefusedOverEmptyFilter(t *testing.T) {
	fb := newFakeBackend(t)
	m := testModel(t, fb, "")
	step(m, statusMsg{st: func() Status { s, _ := fb.Status(); return s }()})
	_, cmd := m.Update(press("T"))
	step(m, cmd())
	if fb.tracer != "nop" {
		t.Fatal("function tracer set over an empty filter")
	}
	if !m.msgErr || !strings.Contains(m.msg, "every function") {
		t.Errorf("%q", m.msg)
	}
}

func TestResizeAndTinyTerminal(t *testing.T) {
	m := testModel(t, newFakeBackend(t), "")
	feed(m, testTrace)
	for _, sz := range [][2]int{{60, 12}, {200, 60}, {80, 24}} {
		step(m, tea.WindowSizeMsg{Width: sz[0], Height: sz[1]})
		for _, st := range []string{"1", "2"} {
			if st == "2" {
				step(m, press("esc"))
			}
			step(m, press(st))
			lines := strings.Split(m.View().Content, "\n")
			if len(lines) != sz[1] {
				t.Errorf("%v view %s: %d lines", sz, st, len(lines))
			}
			for _, l := range lines {
				if w := ansi.StringWidth(l); w != sz[0] {
					t.Errorf("%v: width %d: %q", sz, w, ansi.Strip(l))
					break
				}
			}
		}
		step(m, press("esc"))
	}
	step(m, tea.WindowSizeMsg{Width: 30, Height: 5})
	if !strings.Contains(m.View().Content, "too small") {
		t.Error(m.View().Content)
	}
}

// IO never runs in Update: every backend call happens inside a command.
func TestNoIOInUpdate(t *testing.T) {
	fb := &countingBackend{Backend: newFakeBackend(t)}
	m := New(Options{Backend: fb, Source: NewTextSource(testTrace), Now: fixedNow, StatusEvery: 1 << 40})
	cmds := []tea.Cmd{m.Init()}
	for _, k := range []string{"2", "/", "v", "f", "s", "_", "*", "enter", "enter", "y", "esc", "3", "a", "p", " ", "x", "esc", "T", "O", "1", "/", "x", "enter", "4", "m"} {
		_, c := m.Update(press(k))
		cmds = append(cmds, c)
	}
	if n := fb.n.Load(); n != 0 {
		t.Errorf("%d backend calls from Update", n)
	}
	_ = cmds
}

// Issue 18 item 7: after marking a pattern, a applies (as the hint says): the marks go to the
// backend after the confirmation, and the a is not typed into the pattern.
func TestFunctionsMarkThenApply(t *testing.T) {
	m, fb := functionsModel(t)
	typeText(m, "vfs_read")
	step(m, press("enter")) // mark
	if len(m.funcs.marks) != 1 {
		t.Fatalf("marks %+v", m.funcs.marks)
	}
	if s := screen(m); !strings.Contains(s, "a apply") && !strings.Contains(s, "a or enter applies") {
		t.Errorf("no hint that a applies:\n%s", s)
	}
	step(m, press("a"))
	if v := m.funcs.input.Value(); v != "" {
		t.Errorf("a was typed into the pattern: %q", v)
	}
	if s := screen(m); !strings.Contains(s, "swap protocol?") {
		t.Fatalf("a did not ask for the confirmation:\n%s", s)
	}
	step(m, press("y"))
	if len(fb.applied) != 1 || fb.lists.Filter.Total() != 1 {
		t.Fatalf("applied %v, filter %d", fb.applied, fb.lists.Filter.Total())
	}
	// Another pattern: / (or i) goes back to the field.
	step(m, press("/"))
	typeText(m, "vfs_write")
	if v := m.funcs.input.Value(); v != "vfs_write" || !m.funcs.Typing() {
		t.Errorf("after /: field %q, typing %v", v, m.funcs.Typing())
	}
}

// lockdownErr is an error whose cause comes at the end of a line longer than a terminal.
var lockdownErr = &tracefs.Error{Op: "read", Path: "/sys/kernel/tracing/available_filter_functions", Errno: syscall.EPERM,
	Reason: "kernel lockdown (confidentiality mode): boot with lockdown=integrity to trace"}

// shows says whether the screen holds text whole, however it is wrapped: every character in
// order, the spaces and line breaks aside.
func shows(screen, text string) bool {
	squeeze := func(s string) string { return strings.Join(strings.Fields(s), "") }
	return strings.Contains(squeeze(screen), squeeze(text))
}

// Issue 18 item 7: error lines longer than the terminal are wrapped, not cut: the cause shows
// in full, in every view, on an 80-column terminal; every line keeps the screen's width.
func TestErrorLinesWrap(t *testing.T) {
	cause := lockdownErr.Error()
	for _, c := range []struct {
		name string
		view string
		msgs []tea.Msg
		want string
		own  bool // the view's own line: the message line (which may say it too) is emptied
	}{
		{"the message line in Stream", "1", []tea.Msg{noticeMsg{describeErr("setting the tracer to function", lockdownErr), true}}, cause, false},
		{"the message line in Top", "4", []tea.Msg{noticeMsg{describeErr("writing tracing_on", lockdownErr), true}}, cause, false},
		{"the status line in Stream", "1", []tea.Msg{statusMsg{err: lockdownErr}}, cause, false},
		{"the status line in Functions", "2", []tea.Msg{statusMsg{err: lockdownErr}}, cause, false},
		{"the status line in Probes", "3", []tea.Msg{statusMsg{err: lockdownErr}}, cause, false},
		{"the status line in Top", "4", []tea.Msg{statusMsg{err: lockdownErr}}, cause, false},
		{"the index in Functions", "2", []tea.Msg{indexMsg{err: lockdownErr}}, cause, true},
		{"the pattern in Functions", "2", []tea.Msg{indexMsg{ix: fixtureIndex(t)}, press("/"), press("1"), press("a"), press("b"), press("c")}, "", true},
		{"the list in Probes", "3", []tea.Msg{probesMsg{err: lockdownErr}}, cause, true},
		{"adding a probe", "3", []tea.Msg{press("a"), probeAddedMsg{err: lockdownErr}}, cause, true},
		{"the stream's end", "1", []tea.Msg{batchMsg{Err: lockdownErr}}, cause, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			m := testModel(t, newFakeBackend(t), "")
			m.SetSize(80, 24)
			step(m, press(c.view))
			for _, msg := range c.msgs {
				step(m, msg)
			}
			if c.own {
				m.msg = ""
			}
			want := c.want
			if want == "" { // the pattern's own error
				if m.funcs.patErr == nil {
					t.Fatal("no pattern error")
				}
				want = m.funcs.patErr.Error()
			}
			s := screen(m)
			if !shows(s, want) {
				t.Errorf("%q is cut:\n%s", want, s)
			}
			lines := strings.Split(m.Render(), "\n")
			if len(lines) != 24 {
				t.Errorf("%d lines", len(lines))
			}
			for _, l := range lines {
				if w := ansi.StringWidth(l); w != 80 {
					t.Errorf("a line %d wide: %q", w, ansi.Strip(l))
				}
			}
		})
	}
}

// The definition field completes the probed function, then argument names from BTF (the
// fixture's): the candidates are listed under the field, tab takes the first, down the next.
func TestProbesCompletion(t *testing.T) {
	m := testModel(t, newFakeBackend(t), "")
	m.SetSize(100, 30)
	step(m, press("3"))
	step(m, press("a"))
	typeText(m, "p:x vfs_re")
	if s := screen(m); !strings.Contains(s, "tab completes: vfs_read · vfs_readv") {
		t.Fatalf("function names:\n%s", s)
	}
	step(m, press("tab"))
	typeText(m, " fi")
	step(m, press("tab"))
	typeText(m, "->f_p")
	if s := screen(m); !strings.Contains(s, "tab completes: file->f_path · file->f_pos") {
		t.Fatalf("members:\n%s", s)
	}
	step(m, press("down"))
	step(m, press("tab"))
	if got := m.probes.input.Value(); got != "p:x vfs_read file->f_pos" {
		t.Errorf("value %q", got)
	}
	if s := screen(m); !strings.Contains(s, "✓ kprobe on vfs_read, 1 argument") {
		t.Errorf("the completed definition:\n%s", s)
	}
}

// A definition wider than the screen keeps its caret on the screen, under the right character.
func TestCaretWindow(t *testing.T) {
	text := "p:myopen do_sys_openat2 " + strings.Repeat("a=%di ", 20) + "bad=%zz " + strings.Repeat("b=%si ", 5)
	pos := strings.Index(text, "%zz")
	for _, room := range []int{40, 60, 200} {
		out, p := caretWindow(text, pos, room)
		if n := utf8.RuneCountInString(out); n > room {
			t.Errorf("room %d: %d characters: %q", room, n, out)
		}
		if !strings.HasPrefix(out[p:], "%zz") {
			t.Errorf("room %d: the caret at %d is under %q", room, p, out[p:])
		}
		lines := strings.Split(probes.Caret("  ", out, p), "\n")
		if col := strings.Index(lines[1], "^"); col > room+2 || []rune(lines[0])[col] != '%' {
			t.Errorf("room %d: caret column %d:\n%s", room, col, strings.Join(lines, "\n"))
		}
	}
}

// TestProbesEveryKind: the console's probe editor parses fprobes, tracepoint probes and event
// probes with the same parser as probe add (grammar only: no kernel reads inside Update), says
// which kind it is, and sends it.
func TestProbesEveryKind(t *testing.T) {
	fb := newFakeBackend(t)
	m := testModel(t, fb, "")
	m.SetSize(140, 30)
	step(m, press("3"))
	step(m, press("a"))
	for _, c := range []struct{ def, want string }{
		{"f:fr vfs_read%return ret=$retval", "✓ fexit on vfs_read%return, 1 argument"},
		{"f:fe vfs_read count pos", "✓ fprobe on vfs_read, 2 arguments"},
		{"t:sw sched_switch prev->pid", "✓ tprobe on sched_switch, 1 argument"},
		{"e:es sched.sched_switch p=$prev_pid if prev_pid > 0", "✓ eprobe on sched.sched_switch, 1 argument"},
		{"e:es sched.sched_switch r=%di", "Invalid fetch argument (found before anything reached the kernel)"},
		{"t:sw sched_switch%return", "Invalid probed address suffix (found before anything reached the kernel)"},
	} {
		m.probes.input.SetValue(c.def)
		m.probes.validate()
		if s := screen(m); !strings.Contains(s, c.want) {
			t.Errorf("%q: want %q:\n%s", c.def, c.want, s)
		}
	}
	m.probes.input.SetValue("e:es sched.sched_switch p=$prev_pid if prev_pid > 0")
	m.probes.validate()
	step(m, m.probes.Update(press("enter"))())
	if len(fb.added) != 1 || !strings.HasPrefix(fb.added[0], "e:") {
		t.Fatalf("added %v", fb.added)
	}
}

// TestProbesELFErrorHasCaret: what ftctl finds only when adding a uprobe (the ELF file read:
// here a function the file does not have) shows with a caret under the text sent, like every
// other refusal of a definition, and says nothing was written.
func TestProbesELFErrorHasCaret(t *testing.T) {
	fb := newFakeBackend(t)
	m := testModel(t, fb, "")
	m.SetSize(120, 30)
	step(m, press("3"))
	step(m, press("a"))
	def := "p:up ../probes/testdata/elf/exec.elf:ftctl_ad a=%di"
	m.probes.input.SetValue(def)
	m.probes.validate()
	if s := screen(m); !strings.Contains(s, "✓ uprobe on") {
		t.Fatalf("the grammar alone passes it:\n%s", s)
	}
	step(m, m.probes.Update(press("enter"))())
	s := trimLines(screen(m))
	caret := "\n    " + def + "\n" + strings.Repeat(" ", 4+strings.Index(def, "ftctl_ad")) + "^\n"
	if !strings.Contains(s, caret) || !strings.Contains(s, "No such function symbol in the file") ||
		!strings.Contains(s, "did you mean ftctl_add?") || !strings.Contains(s, "nothing was written") {
		t.Fatalf("no caret under the symbol:\n%s", s)
	}
	if len(fb.added) != 0 {
		t.Errorf("added %v", fb.added)
	}
}

// TestProbesForced: with --force the probe field passes a Go binary's return probe and the
// uprobe types ftctl otherwise refuses, each with the warning probe add prints.
func TestProbesForced(t *testing.T) {
	fb := newFakeBackend(t)
	m := testModel(t, fb, "")
	m.SetSize(160, 30)
	step(m, press("3"))
	step(m, press("a"))
	def := "p:up ../probes/testdata/elf/exec.elf:0x100c x=%ip:symbol"
	m.probes.input.SetValue(def)
	m.probes.validate()
	if s := screen(m); !strings.Contains(s, "Unknown type is specified") || !strings.Contains(s, "--force passes it") {
		t.Fatalf("without --force:\n%s", s)
	}
	fb.force = true
	m.probes.validate()
	if s := screen(m); !strings.Contains(s, "✓ uprobe on") || !strings.Contains(s, "--force: the symbol type of a uprobe") {
		t.Errorf("--force, no warning:\n%s", s)
	}
}

// An empty stream says how to get events, from the trace array's state (issue 33: "waiting for
// events…" alone left a first user with nothing to do): tracing off, the nop tracer, a
// function tracer whose functions did not run; and a filter that hides every event.
func TestStreamSaysHowToGetEvents(t *testing.T) {
	on, off := true, false
	for _, c := range []struct {
		name string
		st   Status
		want []string
	}{
		{"status unknown", Status{}, []string{"waiting for events…"}},
		{"tracing off", Status{Tracer: "function", TracingOn: &off}, []string{"waiting for events…",
			"tracing is off in the instance ftctl-4242 (private): O turns it on"}},
		{"nop", Status{Tracer: "nop", TracingOn: &on}, []string{"waiting for events…",
			"the tracer is nop: only enabled events show here", "mark them in 2 (Functions), then T starts the function tracer",
			"3 (Probes), a adds one, enabled here"}},
		{"function", Status{Tracer: "function", TracingOn: &on}, []string{"waiting for events…",
			"the function tracer runs, but nothing it traces ran yet", "2 (Functions) changes the functions it traces"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			m := testModel(t, newFakeBackend(t), "")
			m.SetSize(80, 24)
			step(m, statusMsg{st: c.st})
			s := screen(m)
			for _, w := range c.want {
				if !strings.Contains(s, w) {
					t.Errorf("no %q on the screen:\n%s", w, s)
				}
			}
		})
	}
	m := testModel(t, newFakeBackend(t), "")
	m.SetSize(80, 24)
	feed(m, "            bash-1234    [001] .....   100.000010: vfs_read <-ksys_read\n")
	m.stream.setFilter(stream.Filter{Comm: "no-such-comm"})
	if s := screen(m); !strings.Contains(s, "no event matches the filter · x clears it") || strings.Contains(s, "waiting for events") {
		t.Errorf("every event filtered out:\n%s", s)
	}
}
