package tui

import "charm.land/bubbles/v2/key"

// The key maps: one per view plus the global one, each a struct of bindings so that the help
// screen is generated from what the code matches (ShortHelp/FullHelp), never written twice.

func bind(help, desc string, keys ...string) key.Binding {
	return key.NewBinding(key.WithKeys(keys...), key.WithHelp(help, desc))
}

// globalKeys work in every view, except while a text field has the focus (then only Abort
// and, to leave the field, esc).
type globalKeys struct {
	Stream, Functions, Probes, Top, Graph key.Binding
	Help, Quit, Abort                     key.Binding
	Tracer, Tracing                       key.Binding
}

func newGlobalKeys() globalKeys {
	return globalKeys{
		Stream:    bind("1/F1", "stream", "1", "f1"),
		Functions: bind("2/F2", "functions", "2", "f2"),
		Probes:    bind("3/F3", "probes", "3", "f3"),
		Top:       bind("4/F4", "top", "4", "f4"),
		Graph:     bind("5/F5", "graph", "5", "f5"),
		Help:      bind("?", "help", "?"),
		Quit:      bind("q", "quit (tears down)", "q"),
		Abort:     bind("ctrl+c", "abort (exit 130)", "ctrl+c"),
		Tracer:    bind("T", "cycle tracer nop/function/function_graph", "T"),
		Tracing:   bind("O", "tracing on/off", "O"),
	}
}

func (k globalKeys) ShortHelp() []key.Binding {
	return []key.Binding{k.Stream, k.Functions, k.Probes, k.Top, k.Graph, k.Help, k.Quit}
}

func (k globalKeys) FullHelp() [][]key.Binding {
	return [][]key.Binding{{k.Stream, k.Functions, k.Probes, k.Top, k.Graph}, {k.Tracer, k.Tracing, k.Help, k.Quit, k.Abort}}
}

// streamKeys are the Stream view's.
type streamKeys struct {
	Pause, Follow, Up, Down, PageUp, PageDown, Oldest key.Binding
	Search, Next, Prev                                key.Binding
	Event, Comm, PID, Clear                           key.Binding
}

func newStreamKeys() streamKeys {
	return streamKeys{
		Pause:    bind("space", "pause/resume", "space"),
		Follow:   bind("f/end", "follow the newest", "f", "end", "G"),
		Up:       bind("↑/k", "up", "up", "k"),
		Down:     bind("↓/j", "down", "down", "j"),
		PageUp:   bind("pgup", "page up", "pgup", "ctrl+u"),
		PageDown: bind("pgdn", "page down", "pgdown", "ctrl+d"),
		Oldest:   bind("home/g", "oldest", "home", "g"),
		Search:   bind("/", "search", "/"),
		Next:     bind("n", "next match (older)", "n"),
		Prev:     bind("N", "previous match (newer)", "N"),
		Event:    bind("e", "filter by event", "e"),
		Comm:     bind("c", "filter by comm", "c"),
		PID:      bind("p", "filter by pid", "p"),
		Clear:    bind("x", "clear filters and search", "x"),
	}
}

func (k streamKeys) ShortHelp() []key.Binding {
	return []key.Binding{k.Pause, k.Follow, k.Search, k.Event, k.Comm, k.PID, k.Clear}
}

func (k streamKeys) FullHelp() [][]key.Binding {
	return [][]key.Binding{{k.Pause, k.Follow, k.Up, k.Down, k.PageUp, k.PageDown, k.Oldest},
		{k.Search, k.Next, k.Prev, k.Event, k.Comm, k.PID, k.Clear}}
}

// functionsKeys are the Functions view's.
type functionsKeys struct {
	Edit, Mark, Target, Leave     key.Binding
	Up, Down, Unmark, Apply, Load key.Binding
}

func newFunctionsKeys() functionsKeys {
	return functionsKeys{
		Edit:   bind("/ or i", "type a pattern", "/", "i"),
		Mark:   bind("enter", "mark the pattern (empty: apply)", "enter"),
		Target: bind("tab", "filter ↔ notrace", "tab"),
		Leave:  bind("esc", "leave the pattern field", "esc"),
		Up:     bind("↑/k", "select mark", "up", "k"),
		Down:   bind("↓/j", "select mark", "down", "j"),
		Unmark: bind("d/del", "unmark", "d", "delete", "backspace"),
		Apply:  bind("a/enter", "apply the marks (confirm first)", "a", "enter"),
		Load:   bind("r", "re-read lists and functions", "r"),
	}
}

// ShortHelp: the keys of the marks (the field does not have the focus).
func (k functionsKeys) ShortHelp() []key.Binding {
	return []key.Binding{k.Apply, k.Edit, k.Target, k.Unmark, k.Load}
}

func (k functionsKeys) FullHelp() [][]key.Binding {
	return [][]key.Binding{{k.Edit, k.Mark, k.Target, k.Leave}, {k.Up, k.Down, k.Unmark, k.Apply, k.Load}}
}

// functionsFieldKeys are the Functions view's keys while the pattern field has the focus.
type functionsFieldKeys struct{ functionsKeys }

func (k functionsFieldKeys) ShortHelp() []key.Binding {
	return []key.Binding{k.Mark, k.Target, k.Leave}
}

// probesKeys are the Probes view's.
type probesKeys struct {
	Add, Submit, Cancel, Complete, Up, Down, Toggle, Remove, Refresh key.Binding
}

func newProbesKeys() probesKeys {
	return probesKeys{
		Add:    bind("a", "add a probe", "a"),
		Submit: bind("enter", "define it", "enter"),
		Cancel: bind("esc", "cancel", "esc"),
		// the field's own (bubbles textinput's AcceptSuggestion), listed for the help screen
		Complete: bind("tab", "complete the word (function, BTF argument names)", "tab"),
		Up:       bind("↑/k", "up", "up", "k"),
		Down:     bind("↓/j", "down", "down", "j"),
		Toggle:   bind("e/space", "enable/disable here", "e", "space"),
		Remove:   bind("x/del", "remove (confirm first)", "x", "delete"),
		Refresh:  bind("r", "refresh", "r"),
	}
}

func (k probesKeys) ShortHelp() []key.Binding {
	return []key.Binding{k.Add, k.Toggle, k.Remove, k.Refresh}
}

func (k probesKeys) FullHelp() [][]key.Binding {
	return [][]key.Binding{{k.Add, k.Submit, k.Cancel, k.Complete}, {k.Up, k.Down, k.Toggle, k.Remove, k.Refresh}}
}

// topKeys are the Top view's.
type topKeys struct {
	Mode, Reset, Up, Down, PageUp, PageDown key.Binding
	Count, Hist, Stop, Submit, Cancel       key.Binding
}

func newTopKeys() topKeys {
	return topKeys{
		Mode:     bind("m", "count by function/event, event, comm", "m"),
		Reset:    bind("r", "reset the counts", "r"),
		Count:    bind("c", "count functions' calls in the kernel (ftctl count)", "c"),
		Hist:     bind("h", "count an event's hits per key in the kernel (ftctl hist)", "h"),
		Stop:     bind("x", "stop the count (its session removed)", "x"),
		Submit:   bind("enter", "start the count", "enter"),
		Cancel:   bind("esc", "cancel", "esc"),
		Up:       bind("↑/k", "up", "up", "k"),
		Down:     bind("↓/j", "down", "down", "j"),
		PageUp:   bind("pgup", "page up", "pgup"),
		PageDown: bind("pgdn", "page down", "pgdown"),
	}
}

func (k topKeys) ShortHelp() []key.Binding {
	return []key.Binding{k.Mode, k.Reset, k.Count, k.Hist, k.Stop}
}

func (k topKeys) FullHelp() [][]key.Binding {
	return [][]key.Binding{{k.Mode, k.Reset, k.Count, k.Hist, k.Stop}, {k.Up, k.Down, k.PageUp, k.PageDown}}
}

// graphKeys are the Graph view's.
type graphKeys struct {
	Start, Stop, Submit, Cancel             key.Binding
	Toggle, Unfold, Fold, Sort, Follow      key.Binding
	Reset, Up, Down, PageUp, PageDown, Home key.Binding
	End                                     key.Binding
}

func newGraphKeys() graphKeys {
	return graphKeys{
		Start:    bind("g", "graph functions' calls (ftctl graph -f ROOT...)", "g"),
		Stop:     bind("x", "stop the graph (its session removed)", "x"),
		Submit:   bind("enter", "start the graph", "enter"),
		Cancel:   bind("esc", "cancel", "esc"),
		Toggle:   bind("enter/space", "fold/unfold", "enter", "space"),
		Unfold:   bind("→/l", "unfold (then: first callee)", "right", "l"),
		Fold:     bind("←/h", "fold (then: the caller)", "left", "h"),
		Sort:     bind("s", "slowest first ↔ newest first", "s"),
		Follow:   bind("f", "follow the selected call's task (again: every task)", "f"),
		Reset:    bind("r", "forget the trees", "r"),
		Up:       bind("↑/k", "up", "up", "k"),
		Down:     bind("↓/j", "down", "down", "j"),
		PageUp:   bind("pgup", "page up", "pgup"),
		PageDown: bind("pgdn", "page down", "pgdown"),
		Home:     bind("home", "the first line, kept there as trees come", "home"),
		End:      bind("end", "the last line", "end"),
	}
}

func (k graphKeys) ShortHelp() []key.Binding {
	return []key.Binding{k.Start, k.Stop, k.Toggle, k.Sort, k.Follow}
}

func (k graphKeys) FullHelp() [][]key.Binding {
	return [][]key.Binding{{k.Start, k.Stop, k.Toggle, k.Unfold, k.Fold, k.Sort, k.Follow, k.Reset},
		{k.Up, k.Down, k.PageUp, k.PageDown, k.Home, k.End}}
}

// noKeys is the key map of a view that has none to offer (Functions over a recording).
type noKeys struct{}

func (noKeys) ShortHelp() []key.Binding  { return nil }
func (noKeys) FullHelp() [][]key.Binding { return nil }

// confirmKeys answer a confirmation.
type confirmKeys struct{ Yes, No key.Binding }

func newConfirmKeys() confirmKeys {
	return confirmKeys{Yes: bind("y/enter", "yes", "y", "enter"), No: bind("n/esc", "no", "n", "esc")}
}

// promptKeys drive a one-line prompt.
type promptKeys struct{ Accept, Cancel key.Binding }

func newPromptKeys() promptKeys {
	return promptKeys{Accept: bind("enter", "accept", "enter"), Cancel: bind("esc", "cancel", "esc")}
}
