package tui

import (
	"errors"
	"fmt"
	"strconv"
	"strings"

	"charm.land/bubbles/v2/help"
	"charm.land/bubbles/v2/key"
	"charm.land/bubbles/v2/textinput"
	tea "charm.land/bubbletea/v2"

	"github.com/ftctl/ftctl/stream"
)

// GraphView shows live call trees (ftctl graph in the console): g asks for roots and starts a
// function_graph session of its own through the Backend (x removes it, and so does leaving the
// console), whose top-level calls show as they return, with their duration, each folded or
// unfolded down to its callees, slowest first or newest first, for every task or one. Over a
// recording (--file) it shows the recording's function_graph calls from the start.
type GraphView struct {
	env    *env
	keys   graphKeys
	width  int
	height int

	prompting bool
	input     textinput.Model
	patErr    error

	busy    bool   // a start or a stop in flight
	doing   string // which: "starting…", "removing…"
	running bool   // a graph runs: x stops it
	info    GraphInfo
	feed    *GraphFeed
	gen     int    // the graph's number: batches of an earlier one are dropped
	ended   string // why the graph's stream ended, "" while it runs

	model  *graphModel
	pinTop bool // the selection stays on the first line as trees come (home puts it there)
}

// The Graph view's messages.
type (
	graphStartedMsg struct {
		info GraphInfo
		feed *GraphFeed
		err  error
	}
	graphBatchMsg struct {
		gen   int
		batch GraphBatch
		ok    bool // false: the feed was closed
	}
	graphStoppedMsg struct{ err error }
)

func newGraphView(e *env) *GraphView {
	return &GraphView{env: e, keys: newGraphKeys(), pinTop: true,
		input: newInput("graph> ", "vfs_read ksys_* [-n NOTRACE] [--depth N] [--threshold D] [--pid PID]   (as ftctl graph takes them)", 4096),
		model: newGraphModel(graphMaxTrees, graphMaxCalls)}
}

// Keys implements the component contract.
func (v *GraphView) Keys() help.KeyMap { return v.keys }

// SetSize implements the component contract.
func (v *GraphView) SetSize(w, h int) { v.width, v.height = w, h }

// Typing: keys go to the roots' prompt while it shows.
func (v *GraphView) Typing() bool { return v.prompting }

// Init shows a recording's call trees from the start; on a kernel, nothing runs until g.
func (v *GraphView) Init() tea.Cmd {
	if !v.env.recording {
		return nil
	}
	v.busy, v.doing = true, "reading…"
	return v.start(GraphRequest{})
}

func (v *GraphView) start(req GraphRequest) tea.Cmd {
	b, ctx := v.env.backend, v.env.ctx
	return func() tea.Msg {
		info, feed, err := b.StartGraph(ctx, req)
		return graphStartedMsg{info, feed, err}
	}
}

// waitGraph is the graph's re-arming command: one batch from the feed per call.
func waitGraph(feed *GraphFeed, gen int) tea.Cmd {
	return func() tea.Msg {
		b, ok := feed.Next()
		return graphBatchMsg{gen: gen, batch: b, ok: ok}
	}
}

// request reads the prompt (pure): roots and ftctl graph's flags; no roots and no error when
// nothing is typed.
func (v *GraphView) request() (GraphRequest, error) {
	return ParseGraphRequest(v.input.Value())
}

// Update handles the graph's messages and the view's keys.
func (v *GraphView) Update(msg tea.Msg) tea.Cmd {
	switch msg := msg.(type) {
	case graphStartedMsg:
		v.busy = false
		if msg.err != nil {
			what := "starting the graph (nothing is left changed)"
			if v.running { // the backend removed the running graph first
				v.running, v.feed = false, nil
				v.gen++
				what = "starting the graph (the previous graph was removed; nothing else is left changed)"
			}
			return notice(describeErr(what, msg.err), true)
		}
		v.gen++
		v.prompting, v.running, v.info, v.feed, v.ended = false, true, msg.info, msg.feed, ""
		v.input.Blur()
		v.model.reset()
		v.pinTop = true
		cmds := []tea.Cmd{waitGraph(msg.feed, v.gen)}
		if !msg.info.Recording {
			cmds = append(cmds, notice("graphing "+safe(msg.info.Request.Text())+": "+msg.info.Where(), false))
		}
		return tea.Batch(cmds...)
	case graphBatchMsg:
		if msg.gen != v.gen || !msg.ok {
			return nil
		}
		v.model.add(msg.batch.Trees, msg.batch.Dropped, msg.batch.Lost)
		if v.pinTop {
			v.model.selectLine(0)
		}
		if msg.batch.Err != nil {
			v.ended = msg.batch.Err.Error()
			if v.info.Recording {
				v.running = false
			}
			return nil
		}
		return waitGraph(v.feed, v.gen)
	case graphStoppedMsg:
		v.busy = false
		if msg.err != nil && !errors.Is(msg.err, ErrNoGraph) {
			return notice(describeErr("removing the graph", msg.err), true)
		}
		return notice("graph stopped: its session removed (the trees stay: r forgets them)", false)
	case tea.PasteMsg:
		if v.prompting {
			return v.edit(msg)
		}
		return nil
	case tea.KeyPressMsg:
		return v.key(msg)
	}
	return nil
}

func (v *GraphView) edit(msg tea.Msg) tea.Cmd {
	var cmd tea.Cmd
	v.input, cmd = v.input.Update(msg)
	_, v.patErr = v.request()
	return cmd
}

func (v *GraphView) key(km tea.KeyPressMsg) tea.Cmd {
	k := v.keys
	if v.prompting {
		return v.promptKey(km)
	}
	m := v.model
	pin := false
	switch {
	case key.Matches(km, k.Start):
		return v.openPrompt()
	case key.Matches(km, k.Stop):
		return v.stop()
	case key.Matches(km, k.Toggle):
		m.toggle()
	case key.Matches(km, k.Unfold):
		m.unfold()
	case key.Matches(km, k.Fold):
		m.fold()
	case key.Matches(km, k.Sort):
		m.toggleSort()
		pin = v.pinTop
	case key.Matches(km, k.Follow):
		t := m.toggleFollow()
		pin = v.pinTop
		if t != nil {
			return notice("following "+taskLabel(t.comm, t.pid, t.cpu)+": f shows every task again", false)
		}
	case key.Matches(km, k.Reset):
		m.reset()
		pin = true
	case key.Matches(km, k.Up):
		m.move(-1)
	case key.Matches(km, k.Down):
		m.move(1)
	case key.Matches(km, k.PageUp):
		m.move(-v.rows())
	case key.Matches(km, k.PageDown):
		m.move(v.rows())
	case key.Matches(km, k.Home):
		pin = true
	case key.Matches(km, k.End):
		m.selectLine(len(m.lines))
	default:
		return nil
	}
	v.pinTop = pin
	if pin {
		m.selectLine(0)
	}
	return nil
}

// promptKey handles a key while the roots are typed: esc closes the prompt, enter starts the
// graph (once the roots parse), anything else edits.
func (v *GraphView) promptKey(km tea.KeyPressMsg) tea.Cmd {
	k := v.keys
	switch {
	case key.Matches(km, k.Cancel):
		v.prompting = false
		v.input.Blur()
	case key.Matches(km, k.Submit):
		req, err := v.request()
		switch {
		case v.busy:
		case err != nil:
			return notice(describeErr("fix it first (nothing was written)", err), true)
		case len(req.Roots) == 0:
			return notice("type the functions to graph first (names or globs)", true)
		default:
			v.busy, v.doing = true, "starting "+safe(req.Text())+"…"
			return v.start(req)
		}
	default:
		return v.edit(km)
	}
	return nil
}

// openPrompt opens the prompt of the roots, with the running graph's.
func (v *GraphView) openPrompt() tea.Cmd {
	if v.info.Recording {
		return notice("a recording: its function_graph calls show as recorded", false)
	}
	v.prompting = true
	v.input.SetValue(v.info.Request.Text())
	v.input.CursorEnd()
	_, v.patErr = v.request()
	return v.input.Focus()
}

// stop removes the running graph (a recording has none), unless a start or stop is under way.
func (v *GraphView) stop() tea.Cmd {
	if !v.running || v.info.Recording {
		return nil
	}
	if v.busy {
		return nil
	}
	v.running, v.busy, v.feed, v.doing = false, true, nil, "removing the graph…"
	v.gen++ // what the feed still delivers is dropped
	b := v.env.backend
	return func() tea.Msg { return graphStoppedMsg{b.StopGraph()} }
}

// rows is how many tree lines fit.
func (v *GraphView) rows() int { return max(v.height-v.headLines(), 1) }

func (v *GraphView) headLines() int {
	n := 2 // the summary, the columns
	if v.prompting {
		n += 2
	}
	return n
}

// taskLabel is "comm-pid" (escaped), the CPU for an idle task.
func taskLabel(comm string, pid, cpu int) string {
	l := safe(comm) + "-" + strconv.Itoa(pid)
	if pid == 0 {
		l += " cpu" + strconv.Itoa(cpu)
	}
	return l
}

// graphDuration is a duration as function_graph prints it ("12.345 us").
func graphDuration(ns uint64) string {
	return fmt.Sprintf("%d.%03d us", ns/1000, ns%1000)
}

// View renders the view in exactly height lines.
func (v *GraphView) View() string {
	s := v.env.styles
	m := v.model
	var lines []string
	if v.prompting {
		lines = append(lines, v.input.View())
		if v.patErr != nil {
			lines = append(lines, s.Err.Render(" "+safe(v.patErr.Error())))
		} else {
			lines = append(lines, s.Dim.Render(" enter graphs these functions' calls in a function_graph session of its own · esc cancels"))
		}
	}
	lines = append(lines, v.summary())
	lines = append(lines, s.Header.Render(fmt.Sprintf(" %13s %4s  %-20s %s", "DURATION", "CPU", "TASK", "CALL")))
	shown, sel := m.window(v.rows())
	for i, l := range shown {
		line := v.line(l)
		if i == sel {
			line = s.Selected.Render(padRight(line, v.width))
		}
		lines = append(lines, line)
	}
	if len(shown) == 0 {
		lines = append(lines, s.Dim.Render(" "+v.empty()))
	}
	return strings.Join(block(strings.Join(lines, "\n"), v.width, v.height), "\n")
}

// summary is the line above the trees: what is graphed, where, how many trees, what was lost.
func (v *GraphView) summary() string {
	m := v.model
	var parts []string
	switch {
	case v.info.Recording:
		parts = append(parts, "graph of the recording")
	case v.running:
		parts = append(parts, "graph "+safe(v.info.Request.Text()))
		if v.info.AtTop {
			parts = append(parts, "at the top level")
		} else {
			parts = append(parts, "in "+safe(v.info.Session))
		}
	case v.info.Session != "":
		parts = append(parts, "graph "+safe(v.info.Request.Text())+" (stopped)")
	default:
		parts = append(parts, "no graph")
	}
	trees := plural(len(m.trees), "tree")
	if m.dropped > 0 {
		trees += fmt.Sprintf(" (%s older dropped)", itoa(m.dropped))
	}
	parts = append(parts, trees)
	parts = append(parts, "lost "+itoa(m.lost))
	if m.arrival {
		parts = append(parts, "newest first")
	} else {
		parts = append(parts, "slowest first")
	}
	if f := m.follow; f != nil {
		parts = append(parts, "following "+taskLabel(f.comm, f.pid, f.cpu))
	}
	if v.ended != "" {
		parts = append(parts, safe(v.ended))
	}
	if v.busy {
		parts = append(parts, v.doing)
	}
	line := strings.Join(parts, " · ")
	if m.lost > 0 {
		return v.env.styles.Warn.Render(line)
	}
	return line
}

func (v *GraphView) empty() string {
	switch {
	case v.busy && !v.running:
		return "starting…"
	case v.info.Recording && v.ended != "":
		return safe(v.ended)
	case v.info.Recording:
		return "reading the recording…"
	case v.running && v.model.follow != nil:
		return "no call of this task yet (f shows every task)"
	case v.running:
		return "waiting for calls to return…"
	}
	return "g graphs the calls of kernel functions (ftctl graph -f ROOT): type their names or globs, and ftctl graph's -n, --depth, --threshold, --pid if you want them"
}

// line renders one call: its duration (or that it had not returned), the task for a
// top-level call, the call indented by its level, ▸ folded or ▾ unfolded when it has callees.
func (v *GraphView) line(l graphLine) string {
	c := l.call
	dur := "unfinished"
	if !c.NoExit {
		dur = graphDuration(c.Duration())
	}
	cpu, task := "", ""
	if l.level == 0 {
		cpu, task = strconv.Itoa(c.CPU), taskLabel(c.Comm, c.PID, c.CPU)
	}
	var b strings.Builder
	fmt.Fprintf(&b, " %13s %4s  %s ", dur, cpu, padRight(task, 20))
	// indented as ftctl graph indents (stream.GraphIndentMax levels at most, then the depth)
	b.WriteString(strings.Repeat("  ", min(l.level, stream.GraphIndentMax)))
	if l.level > stream.GraphIndentMax {
		fmt.Fprintf(&b, "/* depth %d */ ", c.Depth)
	}
	switch {
	case len(c.Calls) == 0:
		b.WriteString("  ")
	case v.model.open[c]:
		b.WriteString("▾ ")
	default:
		b.WriteString("▸ ")
	}
	b.WriteString(safe(c.Func))
	b.WriteString("()")
	if len(c.Calls) > 0 && !v.model.open[c] {
		b.WriteString(" … " + plural(len(c.Calls), "call"))
	}
	switch {
	case c.NoEntry && c.NoExit:
	case c.NoEntry:
		b.WriteString(" (entry not seen)")
	case c.NoExit:
		b.WriteString(" (not returned)")
	}
	return b.String()
}
