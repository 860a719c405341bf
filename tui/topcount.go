package tui

import (
	"fmt"
	"strings"

	"charm.land/bubbles/v2/key"
	"charm.land/bubbles/v2/textinput"
	tea "charm.land/bubbletea/v2"

	"github.com/ftctl/ftctl/count"
	"github.com/ftctl/ftctl/filters"
)

// topCount is the Top view's count: the calls of the functions the typed patterns select,
// counted by the kernel (ftctl count, in a session of its own, through the Backend), the table
// read again at every status tick (once a second).
type topCount struct {
	prompting bool
	hist      bool // the prompt asks for an event and keys (h), not patterns (c)
	input     textinput.Model
	patErr    error // what is typed does not read (checked at each key: pure)

	busy     bool // a start or a stop in flight
	running  bool
	info     CountInfo
	cur      count.Counts
	rate     map[string]uint64 // the calls between the last two readings
	readErr  error
	readings int
}

func newTopCount() topCount {
	return topCount{input: newInput("count> ", "", 4096)}
}

// ask opens the prompt: patterns (ftctl count) or, with hist, an event and its keys.
func (c *topCount) ask(hist bool) tea.Cmd {
	c.prompting, c.hist = true, hist
	if hist {
		c.input.Prompt, c.input.Placeholder = "hist> ", "SYSTEM:EVENT FIELD[.MOD][,FIELD]   e.g. syscalls:sys_enter_read common_pid.execname"
	} else {
		c.input.Prompt, c.input.Placeholder = "count> ", "vfs_* ksys_read   (kernel globs, as ftctl count takes them)"
	}
	c.input.SetValue("")
	_, c.patErr = c.request()
	return c.input.Focus()
}

// request reads what is typed (pure: patterns compiled, an event's name and keys split; the
// keys are checked against the event's format by the backend); the zero request and no error
// when nothing is typed.
func (c *topCount) request() (CountRequest, error) {
	fields := strings.Fields(c.input.Value())
	if len(fields) == 0 {
		return CountRequest{}, nil
	}
	if c.hist {
		sys, ev, ok := strings.Cut(fields[0], ":")
		switch {
		case !ok || sys == "" || ev == "" || strings.ContainsAny(fields[0], "/ "):
			return CountRequest{}, fmt.Errorf("%q: want SYSTEM:EVENT first (e.g. syscalls:sys_enter_read)", fields[0])
		case len(fields) == 1:
			return CountRequest{}, fmt.Errorf("then one or more keys: FIELD[.MOD] (e.g. common_pid.execname)")
		}
		return CountRequest{Event: fields[0], Keys: fields[1:]}, nil
	}
	for _, f := range fields {
		if _, err := filters.Compile(f); err != nil {
			return CountRequest{}, err
		}
	}
	return CountRequest{Patterns: fields}, nil
}

// countTick reads the count's table (from the status tick): nil when no count runs.
func (v *TopView) countTick() tea.Cmd {
	if !v.kcount.running || v.kcount.busy {
		return nil
	}
	b := v.env.backend
	return func() tea.Msg {
		c, err := b.ReadCount()
		return countReadMsg{c, err}
	}
}

// updateCount handles the count's messages and, while the count's prompt or table shows, its
// keys; handled is false for a key the rest of the view takes.
func (v *TopView) updateCount(msg tea.Msg) (cmd tea.Cmd, handled bool) {
	c := &v.kcount
	switch msg := msg.(type) {
	case countStartedMsg:
		c.busy = false
		if msg.err != nil {
			return notice(describeErr("starting the count", msg.err), true), true
		}
		c.prompting, c.running, c.info = false, true, msg.info
		c.cur, c.rate, c.readErr, c.readings = nil, nil, nil, 0
		c.input.Blur()
		v.offset = 0
		what := fmt.Sprintf("%d functions", msg.info.Funcs)
		if msg.info.Request.Event != "" {
			what = safe(msg.info.Request.Event) + " per key"
		}
		text := fmt.Sprintf("counting %s by %s in instance %s", what, msg.info.Method, safe(msg.info.Session))
		if msg.info.Why != "" { // why this method (the kernel refused a probe: the stream counts)
			text += ": " + safe(msg.info.Why)
		}
		return tea.Batch(v.countTick(), notice(text, false)), true
	case countReadMsg:
		if !c.running {
			return nil, true
		}
		c.readErr = msg.err
		if msg.err == nil {
			c.rate = map[string]uint64{}
			if c.readings > 0 {
				for _, r := range count.Delta(c.cur, msg.counts, 0) {
					c.rate[r.Func] = r.Count
				}
			}
			c.cur = msg.counts
			c.readings++
		}
		return nil, true
	case countStoppedMsg:
		c.busy = false
		if msg.err != nil {
			return notice(describeErr("removing the count", msg.err), true), true
		}
		return notice("count stopped: its session removed", false), true
	case tea.PasteMsg:
		if c.prompting {
			return c.edit(msg), true
		}
		return nil, false
	case tea.KeyPressMsg:
		return v.countKey(msg)
	}
	return nil, false
}

func (c *topCount) edit(msg tea.Msg) tea.Cmd {
	var cmd tea.Cmd
	c.input, cmd = c.input.Update(msg)
	_, c.patErr = c.request()
	return cmd
}

func (v *TopView) countKey(km tea.KeyPressMsg) (tea.Cmd, bool) {
	c, k := &v.kcount, v.keys
	if c.prompting {
		switch {
		case key.Matches(km, k.Cancel):
			c.prompting = false
			c.input.Blur()
		case key.Matches(km, k.Submit):
			req, err := c.request()
			switch {
			case c.busy:
			case err != nil:
				return notice(describeErr("fix it first (nothing was written)", err), true), true
			case req.Event == "" && len(req.Patterns) == 0:
				return notice("type what to count first", true), true
			default:
				c.busy = true
				b, ctx := v.env.backend, v.env.ctx
				return func() tea.Msg {
					info, err := b.StartCount(ctx, req)
					return countStartedMsg{info, err}
				}, true
			}
		default:
			return c.edit(km), true
		}
		return nil, true
	}
	switch {
	case key.Matches(km, k.Count):
		return c.ask(false), true
	case key.Matches(km, k.Hist):
		return c.ask(true), true
	case key.Matches(km, k.Stop) && c.running:
		if c.busy {
			return nil, true
		}
		c.running, c.busy, c.cur, c.rate = false, true, nil, nil
		v.offset = 0
		b := v.env.backend
		return func() tea.Msg { return countStoppedMsg{b.StopCount()} }, true
	case c.running && (key.Matches(km, k.Mode) || key.Matches(km, k.Reset)):
		return notice("the count's table shows: x stops it (m and r are for the stream's counts)", false), true
	}
	return nil, false
}

// countLen is how many rows the count's table has.
func (v *TopView) countLen() int { return len(v.kcount.cur) }

// countView renders the count's prompt and table (the view's lines before they are fitted).
func (v *TopView) countView() []string {
	s, c := v.env.styles, &v.kcount
	var lines []string
	if c.prompting {
		lines = append(lines, c.input.View())
		if c.patErr != nil {
			lines = append(lines, s.Err.Render(" "+safe(c.patErr.Error())))
		} else {
			what := "these functions' calls"
			if c.hist {
				what = "the event's hits per key"
			}
			lines = append(lines, s.Dim.Render(" enter counts "+what+" in the kernel · esc cancels"))
		}
		if !c.running {
			return lines
		}
	}
	if !c.running {
		return nil
	}
	rows := count.Delta(nil, c.cur, 0)
	var total uint64
	for _, r := range rows {
		total += r.Count
	}
	calls, column := "CALLS", "FUNCTION"
	if c.info.Request.Event != "" {
		calls, column = "HITS", "KEY"
		lines = append(lines, fmt.Sprintf("hist %s · %d keys · %s hits · x stop · c/h another",
			safe(c.info.Request.Text()), len(rows), itoa(int64(total))))
	} else {
		lines = append(lines, fmt.Sprintf("count %s · by %s · %d functions · %s calls · x stop · c/h another",
			safe(c.info.Request.Text()), c.info.Method, c.info.Funcs, itoa(int64(total))))
	}
	lines = append(lines, s.Header.Render(fmt.Sprintf(" %12s %9s  %s", calls, "/s", column)))
	if c.readErr != nil {
		lines = append(lines, s.Err.Render(" "+safe(describeErr("reading the count", c.readErr))))
	}
	if c.readings == 0 {
		return append(lines, s.Dim.Render(" reading the kernel's table…"))
	}
	if len(rows) == 0 {
		return append(lines, s.Dim.Render(" nothing counted yet"))
	}
	n := max(v.rows()-len(lines)+2, 1)
	start := min(v.offset, max(len(rows)-1, 0))
	for _, r := range rows[start:min(start+n, len(rows))] {
		lines = append(lines, fmt.Sprintf(" %12s %9s  %s", itoa(int64(r.Count)), itoa(int64(c.rate[r.Func])), safe(r.Func)))
	}
	return lines
}
