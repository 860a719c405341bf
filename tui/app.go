package tui

import (
	"context"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	"charm.land/bubbles/v2/help"
	"charm.land/bubbles/v2/key"
	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/colorprofile"
	"github.com/charmbracelet/x/ansi"
)

// state is the view on screen.
type state int

const (
	stateStream state = iota
	stateFunctions
	stateProbes
	stateTop
	stateGraph
	stateCount
)

var stateNames = [stateCount]string{"Stream", "Functions", "Probes", "Top", "Graph"}

// Options configure the console.
type Options struct {
	Backend Backend
	Source  Source // the events (a PipeSource over the stream engine, or a test's)
	// Instance is the trace array's name ("" top level); Private: the console created it and
	// removes it on exit; Group: where probes without a group go.
	Instance string
	Private  bool
	Group    string
	RingSize int // events kept (DefaultRingSize when 0)
	// FrameEvery paces redraws while data flows (default 1/30 s: at most 30 frames a second);
	// key presses redraw at once. StatusEvery paces the status refresh and the rates (1 s).
	FrameEvery, StatusEvery time.Duration
	Now                     func() time.Time // the clock (time.Now)
	Styles                  *Styles
	// Plain draws text only, without colours or attributes (ftctl's colour rule: --color never,
	// or auto with NO_COLOR set or TERM=dumb). Otherwise the palette is drawn as the environment
	// says the terminal allows (TERM, COLORTERM); nothing asks the terminal itself. ForceColor
	// (--color always) draws colours despite NO_COLOR and TERM=dumb: at least the 16 ANSI ones.
	Plain, ForceColor bool
	// Context ends the console (SIGTERM, SIGHUP, SIGINT) and the kernel writes in flight (an
	// apply puts the lists back when it ends).
	Context context.Context
	// QuitWait bounds quitting while a kernel write runs (10 s by default): q waits that long for
	// it to finish, then cancels it (an apply is rolled back) and waits that long again; ctrl+c
	// and the end of Context cancel it at once. After that the console quits anyway and says so
	// (Model.Unfinished).
	QuitWait time.Duration
}

// DefaultQuitWait is Options.QuitWait unless set.
const DefaultQuitWait = 10 * time.Second

// suspender is a source that can let go of the ring buffer's pipes while f runs (PipeSource).
type suspender interface {
	Suspend(f func() error) error
}

// component is the contract of every view: the Charm shape, with SetSize and a way to say
// that keys go to a text field.
type component interface {
	Init() tea.Cmd
	Update(tea.Msg) tea.Cmd
	View() string
	SetSize(w, h int)
	Typing() bool
	Keys() help.KeyMap // for the key line and the help screen
}

// Model is the root model: the state enum, the shared context, the five views, the status bar
// and help. It keeps its last frame: data marks it dirty and the frame tick redraws, so that
// a flood of events costs at most FrameEvery's rate of renders.
type Model struct {
	env     *env
	opts    Options
	keys    globalKeys
	help    help.Model
	state   state
	stream  *StreamView
	funcs   *FunctionsView
	probes  *ProbesView
	top     *TopView
	graph   *GraphView
	views   [stateCount]component
	status  Status
	statErr error

	width, height int
	viewHeight    int // the views' height: the screen less the tabs, the message lines, the bar
	showHelp      bool
	msg           string
	msgErr        bool

	frame      string
	dirty      bool
	renderedAt time.Time    // wall clock: paces frames, whatever Options.Now says
	frames     atomic.Int64 // frames rendered (for the benchmarks)

	// Quitting with kernel writes in flight: every write the backend does goes through writes;
	// cancelWrites ends the context of those that take one (an apply rolls back). waitRound
	// numbers the waits, so that the timeout of an earlier one is not taken for the current.
	writes       *writeTracker
	cancelWrites context.CancelFunc
	quitting     bool
	cancelled    bool
	waitRound    int
	done         chan struct{} // closed when Run ends: the context watcher stops

	// Aborted says the user pressed ctrl+c or Context ended (exit 130); Quit that they pressed q.
	Aborted, Quit bool
	// Unfinished names the kernel write still running when the console gave up waiting for it
	// ("the apply"): its lists may be left half changed.
	Unfinished string
}

// New makes the console.
func New(o Options) *Model {
	if o.FrameEvery <= 0 {
		o.FrameEvery = time.Second / 30
	}
	if o.StatusEvery <= 0 {
		o.StatusEvery = time.Second
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Styles == nil {
		o.Styles = DefaultStyles()
	}
	if o.Context == nil {
		o.Context = context.Background()
	}
	if o.QuitWait <= 0 {
		o.QuitWait = DefaultQuitWait
	}
	writes := newWriteTracker(o.Backend)
	wctx, cancel := context.WithCancel(o.Context)
	e := &env{backend: writes, styles: o.Styles, now: o.Now, instance: o.Instance, private: o.Private,
		group: o.Group, ctx: wctx, recording: o.Backend != nil && o.Backend.Recording()}
	m := &Model{env: e, opts: o, keys: newGlobalKeys(), help: newHelp(), writes: writes, cancelWrites: cancel,
		done: make(chan struct{})}
	m.stream = newStreamView(e, o.RingSize)
	m.funcs = newFunctionsView(e)
	m.probes = newProbesView(e)
	m.top = newTopView(e)
	m.graph = newGraphView(e)
	m.views = [stateCount]component{m.stream, m.funcs, m.probes, m.top, m.graph}
	m.status = Status{Instance: o.Instance}
	m.SetSize(80, 24)
	return m
}

// SetSize lays the views out: tabs, the view, the message lines, the status bar.
func (m *Model) SetSize(w, h int) {
	m.width, m.height = w, h
	m.help.SetWidth(w)
	m.render()
}

// layout gives the views the height the message lines leave (render calls it: a long message
// takes more lines while it shows).
func (m *Model) layout(messageLines int) {
	m.viewHeight = max(m.height-2-messageLines, 1)
	for _, v := range m.views {
		v.SetSize(m.width, m.viewHeight)
	}
}

func (m *Model) frameTick() tea.Cmd {
	return tea.Tick(m.opts.FrameEvery, func(time.Time) tea.Msg { return frameTickMsg{} })
}

func (m *Model) statusTick() tea.Cmd {
	return tea.Tick(m.opts.StatusEvery, func(t time.Time) tea.Msg { return statusTickMsg(t) })
}

func (m *Model) readStatus() tea.Cmd {
	b := m.env.backend
	return func() tea.Msg {
		st, err := b.Status()
		return statusMsg{st, err}
	}
}

// Init starts the stream, the ticks, and the first reads of every view.
func (m *Model) Init() tea.Cmd {
	cmds := []tea.Cmd{waitBatch(m.opts.Source), m.frameTick(), m.statusTick(), m.readStatus(), m.watchContext()}
	for _, v := range m.views {
		cmds = append(cmds, v.Init())
	}
	return tea.Batch(cmds...)
}

// Update routes messages: global keys first (unless a field has the focus), then the view on
// screen; the answers of commands go to the view that asked.
func (m *Model) Update(msg tea.Msg) (tea.Model, tea.Cmd) {
	cmd := m.update(msg)
	switch msg.(type) {
	case tea.KeyPressMsg, tea.PasteMsg, tea.WindowSizeMsg, previewMsg:
		// At once: what the user does (and the count a key asked for) shows in the next frame
		// the renderer writes.
		m.render()
	case frameTickMsg:
	default:
		m.dirty = true // data and answers: redrawn by the next frame tick
	}
	return m, cmd
}

func (m *Model) update(msg tea.Msg) tea.Cmd {
	switch msg := msg.(type) {
	case tea.WindowSizeMsg:
		m.SetSize(msg.Width, msg.Height)
		return nil
	case frameTickMsg:
		// Redraw when something changed, but not right after a key press redrew: at most
		// one render per tick period.
		if m.dirty && time.Since(m.renderedAt) >= m.opts.FrameEvery*3/4 {
			m.render()
		}
		return m.frameTick()
	case batchMsg:
		return m.addBatch(msg)
	case streamEndedMsg:
		if m.stream.ended == "" {
			m.stream.ended = "the stream ended"
		}
		return nil
	case statusTickMsg:
		now := m.env.now()
		m.stream.Tick(now)
		return tea.Batch(m.readStatus(), m.statusTick(), m.top.Tick())
	case statusMsg:
		m.setStatus(msg)
		return nil
	case noticeMsg:
		if !m.quitting { // the wait's own line stays
			m.msg, m.msgErr = msg.text, msg.isErr
		}
		return nil
	case interruptMsg:
		return m.quit(true)
	case writesDoneMsg:
		return m.writesDone(msg)
	case tracerMsg, tracingMsg:
		return m.controlDone(msg)
	case indexMsg, listsMsg, planMsg, appliedMsg, suggestMsg, previewMsg:
		return m.funcs.Update(msg)
	case probesMsg, probeAddedMsg, probeDoneMsg:
		return m.probes.Update(msg)
	case countStartedMsg, countReadMsg, countStoppedMsg:
		return m.top.Update(msg)
	case graphStartedMsg, graphBatchMsg, graphStoppedMsg:
		return m.graph.Update(msg)
	case tea.KeyPressMsg:
		return m.updateKey(msg)
	case tea.PasteMsg:
		// Pasted text goes to the field that has the focus, if one has; it is never taken for
		// keys.
		if v := m.views[m.state]; v.Typing() && !m.quitting && !m.showHelp {
			return v.Update(msg)
		}
		return nil
	}
	return m.views[m.state].Update(msg)
}

// addBatch adds a batch of the stream to the views that show it, and reads the next one
// (none once the stream failed).
func (m *Model) addBatch(msg batchMsg) tea.Cmd {
	m.stream.Add(Batch(msg))
	m.top.Add(msg.Rows)
	if msg.Err != nil {
		m.stream.ended = describeErr("the stream ended", msg.Err)
		return nil
	}
	return waitBatch(m.opts.Source)
}

// setStatus keeps the instance's status just read (the last one on an error).
func (m *Model) setStatus(msg statusMsg) {
	m.statErr = msg.err
	if msg.err == nil {
		m.status = msg.st
		m.stream.SetStatus(msg.st)
	}
}

// controlDone says how setting the tracer or tracing_on went, and reads the status again.
func (m *Model) controlDone(msg tea.Msg) tea.Cmd {
	switch msg := msg.(type) {
	case tracerMsg:
		if msg.err != nil {
			return tea.Batch(m.readStatus(), notice(describeErr("setting the tracer to "+msg.tracer, msg.err), true))
		}
		return tea.Batch(m.readStatus(), notice("tracer: "+msg.tracer, false))
	case tracingMsg:
		if msg.err != nil {
			return tea.Batch(m.readStatus(), notice(describeErr("writing tracing_on", msg.err), true))
		}
		return tea.Batch(m.readStatus(), notice(map[bool]string{true: "tracing on", false: "tracing off"}[msg.on], false))
	}
	return nil
}

func (m *Model) updateKey(km tea.KeyPressMsg) tea.Cmd {
	k := m.keys
	if key.Matches(km, k.Abort) {
		return m.quit(true)
	}
	if m.quitting {
		return nil // nothing new starts while quitting
	}
	if m.showHelp {
		m.showHelp = false
		return nil
	}
	view := m.views[m.state]
	if view.Typing() {
		// Function keys switch views even from a text field: they type nothing.
		switch km.String() {
		case "f1", "f2", "f3", "f4", "f5":
			m.state = state(km.String()[1] - '1')
			return nil
		}
		return view.Update(km)
	}
	switch {
	case key.Matches(km, k.Quit):
		return m.quit(false)
	case key.Matches(km, k.Help):
		m.showHelp = true
	case key.Matches(km, k.Stream):
		m.state = stateStream
	case key.Matches(km, k.Functions):
		m.state = stateFunctions
	case key.Matches(km, k.Probes):
		m.state = stateProbes
	case key.Matches(km, k.Top):
		m.state = stateTop
	case key.Matches(km, k.Graph):
		m.state = stateGraph
	case key.Matches(km, k.Tracer):
		next := map[string]string{"nop": "function", "function": "function_graph"}[m.status.Tracer]
		if next == "" {
			next = "nop"
		}
		b, src := m.env.backend, m.opts.Source
		return func() tea.Msg {
			set := func() error { return b.SetTracer(next) }
			if s, ok := src.(suspender); ok { // the pipes must be closed for the change
				return tracerMsg{next, s.Suspend(set)}
			}
			return tracerMsg{next, set()}
		}
	case key.Matches(km, k.Tracing):
		on := m.status.TracingOn == nil || !*m.status.TracingOn
		b := m.env.backend
		return func() tea.Msg { return tracingMsg{on, b.SetTracing(on)} }
	default:
		return view.Update(km)
	}
	return nil
}

type (
	// interruptMsg: Context ended (SIGTERM, SIGHUP, SIGINT).
	interruptMsg struct{}
	// writesDoneMsg ends a wait for the kernel writes in flight: they ended, or QuitWait passed.
	writesDoneMsg struct {
		round int
		ended bool
	}
)

// watchContext turns the end of Context into a message, so that a signal quits the way ctrl+c
// does (the writes in flight rolled back and waited for, the wait on screen).
func (m *Model) watchContext() tea.Cmd {
	ctx, done := m.opts.Context, m.done
	if ctx.Done() == nil {
		return nil
	}
	return func() tea.Msg {
		select {
		case <-ctx.Done():
			return interruptMsg{}
		case <-done:
			return nil
		}
	}
}

// quit ends the console once no kernel write runs. q lets a write in flight finish (the user
// confirmed it); ctrl+c and signals (abort) cancel it first: an apply puts the lists back as they
// were, as ftctl filter does when interrupted. Either way the wait shows on the message line and
// is bounded (Options.QuitWait); no new write starts meanwhile.
func (m *Model) quit(abort bool) tea.Cmd {
	if abort {
		m.Aborted = true
		if !m.cancelled {
			m.cancelled = true
			m.cancelWrites()
		}
	} else {
		m.Quit = true
	}
	what, idle := m.writes.closeIfIdle()
	if idle {
		return tea.Quit
	}
	if m.quitting && !abort {
		return nil
	}
	m.quitting = true
	if m.cancelled {
		m.msg, m.msgErr = "rolling "+what+" back, then quitting…", true
	} else {
		m.msg, m.msgErr = "waiting for "+what+" to finish, then quitting… (ctrl+c rolls it back)", true
	}
	return m.waitWrites()
}

func (m *Model) waitWrites() tea.Cmd {
	m.waitRound++
	w, d, round := m.writes, m.opts.QuitWait, m.waitRound
	return func() tea.Msg { return writesDoneMsg{round: round, ended: w.wait(d)} }
}

// writesDone: quit when the writes ended; after a wait that timed out, cancel them (once) and
// wait again, then give up.
func (m *Model) writesDone(msg writesDoneMsg) tea.Cmd {
	switch {
	case msg.ended:
		return tea.Quit
	case msg.round != m.waitRound:
		return nil // an earlier wait: a later one runs
	case !m.cancelled:
		m.cancelled = true
		m.cancelWrites()
		what := m.writes.running()
		m.msg, m.msgErr = fmt.Sprintf("%s did not finish in %v: rolling it back, then quitting…", what, m.opts.QuitWait), true
		return m.waitWrites()
	}
	m.Unfinished = m.writes.running()
	m.writes.shut()
	return tea.Quit
}

// Frames is how many frames the model rendered (safe to call while the program runs).
func (m *Model) Frames() int64 { return m.frames.Load() }

// View returns the last frame rendered, on the alternate screen.
func (m *Model) View() tea.View {
	v := tea.NewView(m.frame)
	v.AltScreen = true
	return v
}

// Render draws the frame now (tests and the final screen).
func (m *Model) Render() string {
	m.render()
	return m.frame
}

func (m *Model) render() {
	m.dirty = false
	m.frames.Add(1)
	m.renderedAt = time.Now()
	if m.width < 40 || m.height < 8 {
		m.frame = fit("too small: 40×8 at least", m.width)
		return
	}
	msg := m.messageLines()
	m.layout(len(msg))
	var b strings.Builder
	b.WriteString(m.tabs())
	b.WriteByte('\n')
	if m.showHelp {
		b.WriteString(strings.Join(block(m.helpView(), m.width, m.viewHeight), "\n"))
	} else {
		b.WriteString(m.views[m.state].View())
	}
	for _, l := range msg {
		b.WriteByte('\n')
		b.WriteString(fit(l, m.width))
	}
	b.WriteByte('\n')
	b.WriteString(m.statusBar())
	m.frame = b.String()
}

func (m *Model) tabs() string {
	s := m.env.styles
	var parts []string
	parts = append(parts, s.Bold.Render("ftctl"))
	for i, n := range stateNames {
		t := fmt.Sprintf("%d %s", i+1, n)
		if state(i) == m.state {
			parts = append(parts, s.ActiveTab.Render(t))
		} else {
			parts = append(parts, s.Tab.Render(t))
		}
	}
	parts = append(parts, s.Dim.Render("? help · q quit"))
	return fit(strings.Join(parts, " "), m.width)
}

// messageLines are the lines above the status bar: the last message (or the view's keys), then
// the status read's error, if any; each wrapped, not cut, to the screen's width. They take half
// the screen at most (the view keeps the rest), the last line cut if they need more.
func (m *Model) messageLines() []string {
	s := m.env.styles
	var out []string
	switch {
	case m.msg == "":
		out = append(out, m.help.ShortHelpView(m.views[m.state].Keys().ShortHelp()))
	case m.msgErr:
		out = wrapLines(s.Err, "", m.msg, m.width)
	default:
		out = wrapLines(s.OK, "", m.msg, m.width)
	}
	if m.statErr != nil {
		out = append(out, wrapLines(s.Err, "", describeErr("reading the status", m.statErr), m.width)...)
	}
	return atMost(out, (m.height-3)/2, m.width)
}

func (m *Model) statusBar() string {
	s := m.env.styles
	st := m.status
	item := func(k, v string) string { return s.StatusKey.Render(" "+k+" ") + s.StatusValue.Render(v) }
	var parts []string
	parts = append(parts, item("tracefs", safe(orDash(st.Tracefs))))
	parts = append(parts, item("", m.env.instanceLabel()))
	parts = append(parts, item("tracer", safe(orDash(st.Tracer))))
	on := "?"
	if st.TracingOn != nil {
		on = map[bool]string{true: "on", false: "off"}[*st.TracingOn]
	}
	parts = append(parts, item("tracing", on))
	buf := "?"
	if st.BufferKB != nil {
		buf = itoa(int64(*st.BufferKB)) + " KiB/cpu"
	}
	parts = append(parts, item("buffer", buf))
	over := "?"
	if st.Overrun != nil {
		over = itoa(*st.Overrun)
		if st.Dropped != nil && *st.Dropped > 0 {
			over += " +" + itoa(*st.Dropped) + " dropped"
		}
	}
	parts = append(parts, item("overruns", over))
	line := cut(strings.Join(parts, s.Sep.Render(" ")), m.width)
	if w := ansi.StringWidth(line); w < m.width {
		line += s.Bar.Render(strings.Repeat(" ", m.width-w))
	}
	return line
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func (m *Model) helpView() string {
	s := m.env.styles
	views := m.views[m.state].Keys().FullHelp()
	var b strings.Builder
	b.WriteString(s.Header.Render("ftctl tui: "+stateNames[m.state]) + "\n\n")
	b.WriteString(m.help.FullHelpView(views) + "\n\n")
	b.WriteString(s.Header.Render("everywhere") + "\n\n")
	b.WriteString(m.help.FullHelpView(m.keys.FullHelp()) + "\n\n")
	b.WriteString(s.Dim.Render(strings.Join([]string{
		"A text field takes the keys only once a key opens it (Functions: / or i); enter, esc give them back.",
		"Trace data is shown escaped (control characters as \\xNN). Writes take the ftctl lock;",
		"function lists change through the swap protocol, after a confirmation.",
		"Quitting (q, ctrl+c, SIGTERM, SIGHUP) tears the private instance down unless --keep, and",
		"the sessions of the Top view's count and the Graph view's graph (the top level's files put back).",
		"Quitting never leaves a change half done: q waits for an apply (or a probe) in flight to",
		"finish; ctrl+c, SIGTERM and SIGHUP roll an apply back to the lists as they were. Each waits",
		"10 s at most: then q rolls back too, and after 10 s more the console quits and says so.",
		"Any key closes this help.",
	}, "\n")))
	return b.String()
}

// Run runs the console on a terminal until the user quits, ctx ends (SIGTERM, SIGHUP), or the
// program fails; the source is closed before it returns. A kernel write in flight is waited for
// (see Model.quit) before it returns: the caller's teardown never races it. It reports whether
// the user aborted (ctrl+c) and whether ctx ended it.
func Run(ctx context.Context, m *Model, in io.Reader, out io.Writer, extra ...tea.ProgramOption) (aborted bool, err error) {
	defer func() {
		if m.opts.Source != nil {
			m.opts.Source.Close()
		}
	}()
	// ctx ends the console through the model (interruptMsg), which waits for the writes in
	// flight; the program is killed only if that takes longer than the model's own bound.
	kctx, kill := context.WithCancel(context.Background())
	defer kill()
	stop := context.AfterFunc(ctx, func() { time.AfterFunc(2*m.opts.QuitWait+time.Second, kill) })
	defer stop()
	opts := []tea.ProgramOption{tea.WithContext(kctx), tea.WithInput(in), tea.WithOutput(out), tea.WithFPS(30),
		// ftctl's own handling: SIGINT, SIGTERM and SIGHUP end ctx (exit 130); bubbletea's
		// would make SIGTERM a normal quit.
		tea.WithoutSignalHandler()}
	opts = append(opts, tea.WithColorProfile(colorProfile(m.opts, os.Environ())))
	opts = append(opts, extra...)
	p := tea.NewProgram(m, opts...)
	final, err := p.Run()
	close(m.done)
	if fm, ok := final.(*Model); ok && fm != nil {
		m = fm
	}
	// However the program ended (an error, killed), no write outlives Run.
	m.cancelWrites()
	if !m.writes.wait(m.opts.QuitWait) && m.Unfinished == "" {
		m.Unfinished = m.writes.running()
		m.writes.shut()
	}
	if ctx.Err() != nil {
		return true, ctx.Err()
	}
	return m.Aborted, err
}

// colorProfile is the colours the console draws with: those the terminal type allows, from the
// environment only (no terminal query, no terminfo file, no `tmux info`: bubbletea's own
// detection reads both). Plain: text only, no colour, no bold or reverse either. ForceColor:
// NO_COLOR ignored, and at least the 16 ANSI colours whatever TERM says.
func colorProfile(o Options, environ []string) colorprofile.Profile {
	switch {
	case o.Plain:
		return colorprofile.NoTTY
	case o.ForceColor:
		environ = slices.DeleteFunc(slices.Clone(environ), func(kv string) bool { return strings.HasPrefix(kv, "NO_COLOR=") })
		return max(colorprofile.Env(environ), colorprofile.ANSI)
	}
	return colorprofile.Env(environ)
}
