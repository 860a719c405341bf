// Package session owns what ftctl owns in the kernel: the names it gives (names.go), how it proves
// an owner alive or gone, what is whose among the instances and probe groups found there, the
// private instances of `ftctl trace` and the console, and their set-up and teardown (a graph's
// from a GraphRequest, the one set-up of ftctl graph and the console's Graph view: graph.go).
//
// A session (ftctl trace, or the console in its private instance) lives in an instance
// ftctl-PID-NONCE with a probe group ftctl_PID_NONCE, so nothing of another user or session is
// touched, and the teardown removes both, step by step, each step idempotent and attempted even
// when an earlier one failed. While it runs, it holds a file of its instance open, so the
// kernel refuses to remove the instance (EBUSY): an rmdir that succeeds proves the owner gone,
// whatever pid namespace it ran in. Leftovers of sessions that are gone (SIGKILL, power loss)
// are found by their names and removed by `ftctl reset`, the instance first: only when the
// kernel lets it go is the rest torn down (leftovers.go).
package session

import (
	"context"
	"errors"
	"fmt"
	iofs "io/fs"
	"maps"
	"path"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/ftctl/ftctl/eventfilter"
	"github.com/ftctl/ftctl/filters"
	"github.com/ftctl/ftctl/probes"
	"github.com/ftctl/ftctl/tracefs"
)

// ErrInvalid marks a spec refused before anything was changed.
var ErrInvalid = errors.New("invalid session")

// Spec is what a session traces.
type Spec struct {
	Filters []*filters.Pattern // function filter (set_ftrace_filter of the instance)
	Notrace []*filters.Pattern // functions never traced (set_ftrace_notrace)
	Probes  []string           // probe definitions (any kind); their group is replaced by the session's
	// DefineOnly names events of Probes that are defined and not enabled: sources of
	// triggers, whose every hit would otherwise fill the ring (a trigger fires on an event
	// that is not enabled).
	DefineOnly []string
	// Force passes the probe definitions ftctl refuses as unsafe or misleading
	// (probes.Parser.Force); Session.Forced says which.
	Force  bool
	Events []string // SYSTEM or SYSTEM:EVENT to enable
	// Tracer: "function", "function_graph" or "nop"; "" means function when Filters are
	// given, else nop.
	Tracer string
	PIDs   []int // trace only these processes and their children (set_ftrace_pid, set_event_pid)
	// IncludeSelf records ftctl's own threads too (by default the kernel leaves them out).
	IncludeSelf bool
	// BufferKB sizes the instance's ring buffer per CPU (buffer_size_kb); 0 keeps the default.
	BufferKB int
	// Clock is the instance's trace_clock ("" keeps local).
	Clock string
	// Options set trace options of the instance: NAME or NAME=1 turns one on, noNAME or
	// NAME=0 off (trace-cmd -O).
	Options []string
	// EventFilter is a filter expression (events/SYSTEM/EVENT/filter, trace-cmd -f) set on
	// every event the session enables: each event of Events (a whole system's events one by
	// one) and each probe of Probes. It is checked against each event's fields before
	// anything is written; "" sets none.
	EventFilter string
	// EventFilters are filters of single events, SYSTEM:EVENT to the expression (a profile's
	// per-event filters): each an event the session enables (of Events, or a probe of Probes,
	// GROUP:EVENT with the session's group), checked against its fields like EventFilter,
	// written after it, before the event is enabled.
	EventFilters map[string]string
	// Source is what a declared owner was declared from (a profile), kept in its
	// declaration (Owner.Source) for the next apply to compare with; a session ignores it.
	Source []byte
	// InstanceOnly refuses to change anything outside the session's instance and group: an
	// option the kernel keeps for every trace array at once (see optionSetting.shared) is
	// then an error, the top level's put back, not a notice. A declared owner, which no
	// process holds to put the top level back at its end, sets it (Declare).
	InstanceOnly bool
	// Derived is what the declarer worked out from Source against the running kernel, kept
	// in the declaration (Owner.Derived) for the next apply or diff; a session ignores it.
	Derived []byte
	// Graph makes a function_graph session (ftctl graph, graph.go): Tracer is then
	// function_graph, and Filters may be empty (the graph's roots choose the calls).
	Graph *GraphSpec
	// ClaimTop lets a declared owner run a Graph (Declare): it claims the top level's files
	// the graph needs (set_graph_function, set_graph_notrace, max_graph_depth; where
	// instances cannot run function_graph, the whole top level), journaled in its
	// declaration (Owner.TopLevel) before each first write and put back by Undeclare.
	ClaimTop bool
	// Dynamic are events the session defines in its group for its triggers, in order, not
	// enabled: probes (kinds p, r, f) and synthetic events (kind s). Start writes them after
	// the tracer, and Teardown removes them after the triggers, newest first.
	Dynamic []Dynamic
	// Triggers are written into the session's instance after Dynamic, in order: a trigger
	// whose action names an event (onmatch(), trace()) comes after that event's definition.
	// Teardown removes them first, newest first.
	Triggers []Trigger

	options []optionSetting // Options, checked
}

// Dynamic is an event a session defines for its triggers (Spec.Dynamic).
type Dynamic struct {
	// Kind: 'p' (a kprobe), 'r' (a kretprobe), 'f' (an fprobe: Place "SYM" or "SYM%return",
	// where the tracefs README announces them) or 's' (a synthetic event).
	Kind byte
	// Event: a probe's name in the session's group; a synthetic event's whole name, which
	// must be the session's (ID.Synthetic).
	Event string
	// Place: where a probe attaches (SYM, MOD:SYM); a synthetic event's fields ("u64 lat").
	Place string
}

// Trigger is an event trigger a session writes (Spec.Triggers): Text ("hist:keys=...")
// into events/System/Event/trigger of its instance.
type Trigger struct{ System, Event, Text string }

// DynamicError is a refusal of one of Spec.Dynamic's definitions (the kernel's, a
// tracefs.ErrRejected, or a missing feature).
type DynamicError struct {
	Dynamic Dynamic
	Err     error
}

func (e *DynamicError) Error() string { return e.Err.Error() }
func (e *DynamicError) Unwrap() error { return e.Err }

// TriggerError is a refusal of one of Spec.Triggers.
type TriggerError struct {
	Trigger Trigger
	Err     error
}

func (e *TriggerError) Error() string { return e.Err.Error() }
func (e *TriggerError) Unwrap() error { return e.Err }

// optionSetting is one -O, checked: options/Name gets On.
type optionSetting struct {
	Name string
	On   bool
	// shared: the write changed the top level's option too, which held topBefore: the kernel
	// keeps some options for every trace array at once (6.1 and 6.12: the function tracer's, such as
	// func_stack_trace, in one set of flags), and Teardown puts the top level's back.
	shared    bool
	topBefore string
}

// maxBufferKB bounds --buffer-kb: 4 GiB per CPU is beyond any sane session, and the kernel
// allocates it for every CPU at once.
const maxBufferKB = 4 << 20

// Session is a running session.
type Session struct {
	FS       *tracefs.FS
	ID       ID // names the instance and the group
	Instance *tracefs.Instance
	Group    string
	Notice   func(format string, args ...any)
	// Probes are the events the session defined in its group.
	Probes []string
	// SelfExcluded says the kernel leaves ftctl's own threads out of the instance
	// (set_ftrace_notrace_pid, set_event_notrace_pid: Linux 5.8).
	SelfExcluded bool

	spec Spec
	defs []*probes.Definition
	// filtered are the tracepoints (SYSTEM:EVENT) that get EventFilter, checked.
	filtered []string
	tracer   string
	hold     *tracefs.Hold
	// triggers are the event triggers the session wrote into its instance, oldest first:
	// Teardown removes each ("!" + its text), newest first, before anything else.
	triggers []trigger
	// dynamic are the dynamic events the session defined outside its probe group's kprobes
	// (fprobes, synthetic events), oldest first: removed newest first after the triggers.
	dynamic []dynamicEvent
	// graph is what a function_graph session (Spec.Graph) wrote outside its instance.
	graph *graphState
	// graphIndex is the function index New checked Spec.Graph's patterns against.
	graphIndex *filters.Index
	// topJournal, for a declared owner that claims the top level (Spec.ClaimTop), is the
	// journal its graph's top-level writes go to: kept in its declaration, not in a file of
	// its own (startGraph).
	topJournal *journal
	// late are events of Spec.Events the session defines itself (its synthetic events):
	// enabled, with their filters, once startDynamic has defined them.
	late []string
}

// definesSynthetic says whether e (SYSTEM:EVENT) is a synthetic event of Spec.Dynamic.
func (s *Session) definesSynthetic(e string) bool {
	name, ok := strings.CutPrefix(e, "synthetic:")
	return ok && slices.ContainsFunc(s.spec.Dynamic, func(d Dynamic) bool { return d.Kind == 's' && d.Event == name })
}

// dynamicEvent is a definition the session wrote and the line that removes it.
type dynamicEvent struct{ file, remove string }

// trigger is one trigger the session wrote: the event's directory and the text.
type trigger struct{ dir, text string }

// New validates spec against the running kernel and returns a session ready to Start. Nothing
// is changed: a refused spec (ErrInvalid, filters.ErrPattern, probe syntax errors, an event
// filter's *eventfilter.Error) leaves the system as it was.
func New(fs *tracefs.FS, id ID, spec Spec) (*Session, error) {
	s := &Session{FS: fs, ID: id, Group: id.Group(), spec: spec, Notice: func(string, ...any) {}}
	top := fs.Top()
	if !top.Has("instances") {
		return nil, &tracefs.Error{Op: "open", Path: fs.Path("instances"), Class: tracefs.ErrUnavailable,
			Reason: "this kernel has no tracing instances, which ftctl trace runs in"}
	}
	ft := fs.DetectFeatures()
	s.tracer = spec.Tracer
	if spec.Graph != nil {
		if s.tracer != "" && s.tracer != "function_graph" {
			return nil, fmt.Errorf("%w: a graph session runs function_graph, not %s", ErrInvalid, s.tracer)
		}
		s.tracer = "function_graph"
	}
	if s.tracer == "" {
		s.tracer = "nop"
		if len(spec.Filters) > 0 {
			s.tracer = "function"
		}
	}
	switch s.tracer {
	case "nop":
	case "function":
		if !ft.FunctionTracer {
			return nil, &tracefs.Error{Op: "open", Path: fs.Path("available_tracers"), Class: tracefs.ErrUnavailable, Reason: "this kernel has no function tracer"}
		}
	case "function_graph":
		if !ft.FunctionGraph {
			return nil, &tracefs.Error{Op: "open", Path: fs.Path("available_tracers"), Class: tracefs.ErrUnavailable, Reason: "this kernel has no function_graph tracer"}
		}
	default:
		return nil, fieldErr(FieldTracer, s.tracer, "want function, function_graph or nop")
	}
	if s.tracer != "nop" && len(spec.Filters) == 0 && spec.Graph == nil {
		return nil, fmt.Errorf("%w: the %s tracer needs at least one -f PATTERN: tracing every function would swamp the system", ErrInvalid, s.tracer)
	}
	if s.tracer == "nop" && (len(spec.Filters) > 0 || len(spec.Notrace) > 0) {
		return nil, fieldErr(FieldFunctions, "", "select functions for the function tracers, not for the nop tracer")
	}
	if spec.Graph != nil {
		ix, err := filters.LoadIndex(top)
		if err != nil {
			return nil, err
		}
		if err := s.checkGraph(ix); err != nil {
			return nil, err
		}
		s.graphIndex = ix
	}
	if len(spec.Filters)+len(spec.Notrace) > 0 {
		ix, err := filters.LoadIndex(top)
		if err != nil {
			return nil, err
		}
		if _, err := ix.ResolveAll(spec.Filters); err != nil {
			return nil, err
		}
		if _, err := ix.ResolveAll(spec.Notrace); err != nil {
			return nil, err
		}
	}
	if len(spec.Probes) > 0 {
		p := probes.Parser{Features: ft.Probe, Kernel: probes.NewKernel(fs), User: probes.NewUserSpace(), Force: spec.Force}
		seen := map[string]bool{}
		for _, text := range spec.Probes {
			d, err := p.Parse(text)
			if err != nil {
				return nil, err
			}
			if d.Kind == probes.Delete {
				return nil, fieldErr(FieldProbe, text, "removes a probe; a session's probes define them")
			}
			if g, _, ok := d.KernelName(); ok { // passed by Force alone
				return nil, fieldErr(FieldProbe, text, "the kernel ignores r<N> on a uprobe and the name after it, and would put the event in group %s, outside the session's group, where the session could not remove it: write r:EVENT", g)
			}
			if file := d.EventsFile(); !top.Has(file) {
				return nil, &tracefs.Error{Op: "open", Path: fs.Path(file), Class: tracefs.ErrUnavailable, Reason: "this kernel has no " + strings.TrimSuffix(file, "_events") + " events"}
			}
			if d.Event != "" {
				if seen[d.Event] {
					return nil, fmt.Errorf("%w: two probes named %q", ErrInvalid, d.Event)
				}
				seen[d.Event] = true
			}
			s.defs = append(s.defs, d)
		}
	}
	s.spec.Dynamic, s.spec.Triggers = nil, nil
	if err := s.Extend(spec.Dynamic, spec.Triggers); err != nil {
		return nil, err
	}
	var events []string
	for _, e := range spec.Events {
		if _, err := eventDir(e); err != nil {
			return nil, err
		}
		if s.definesSynthetic(e) {
			s.late = append(s.late, e) // enabled once defined (startDynamic)
			continue
		}
		if strings.ContainsAny(e, "*?[") {
			matched, err := expandEvents(fs, e)
			if err != nil {
				return nil, err
			}
			events = append(events, matched...)
			continue
		}
		if dir, _ := eventDir(e); !top.Has(dir) {
			return nil, fieldErr(FieldEvent, e, "no such event (events/%s does not exist; 'ftctl list events' lists them)", dir[len("events/"):])
		}
		events = append(events, e)
	}
	s.spec.Events = events
	if err := s.checkEventFilter(); err != nil {
		return nil, err
	}
	if err := s.checkEventFilters(); err != nil {
		return nil, err
	}
	if err := s.checkBufferClockOptions(); err != nil {
		return nil, err
	}
	if len(spec.PIDs) > 0 && !ft.FtracePid && s.tracer != "nop" {
		return nil, &tracefs.Error{Op: "open", Path: fs.Path("set_ftrace_pid"), Class: tracefs.ErrUnavailable, Reason: "this kernel cannot filter functions by pid"}
	}
	return s, nil
}

// Extend adds events the session defines and triggers it writes (Spec.Dynamic and
// Spec.Triggers) before Start, once what they depend on is known (the pid of a command started
// after New). They are checked as New checks the spec; nothing is written.
func (s *Session) Extend(dynamic []Dynamic, triggers []Trigger) error {
	top := s.FS.Top()
	for _, d := range dynamic {
		file, ok := map[byte]string{'p': "kprobe_events", 'r': "kprobe_events", 'f': "dynamic_events", 's': "synthetic_events"}[d.Kind]
		name := d.Event
		if d.Kind == 's' {
			name, ok = strings.CutPrefix(name, s.Group+"_")
			ok = ok && name != ""
		}
		if !ok || !validEventName(name) || !validEventName(d.Event) || d.Place == "" || strings.ContainsAny(d.Place, "\n\x00") ||
			(d.Kind != 's' && strings.ContainsAny(d.Place, " \t")) {
			return fmt.Errorf("%w: dynamic event %c %q %q (a probe of the session's group, or a synthetic event %s_NAME)", ErrInvalid, d.Kind, d.Event, d.Place, s.Group)
		}
		if !top.Has(file) {
			return &DynamicError{d, &tracefs.Error{Op: "open", Path: s.FS.Path(file), Class: tracefs.ErrUnavailable, Reason: "this kernel has no " + file}}
		}
	}
	for _, t := range triggers {
		if _, err := eventDir(t.System + ":" + t.Event); err != nil || t.Text == "" || strings.ContainsAny(t.Text, "\n\x00") {
			return fmt.Errorf("%w: trigger %q on %s:%s", ErrInvalid, t.Text, t.System, t.Event)
		}
	}
	s.spec.Dynamic = append(s.spec.Dynamic, dynamic...)
	s.spec.Triggers = append(s.spec.Triggers, triggers...)
	return nil
}

// checkEventFilter checks --filter against the fields of every tracepoint the session enables
// (the probes' fields are known once the kernel has defined them: Start checks those).
func (s *Session) checkEventFilter() error {
	expr := s.spec.EventFilter
	if expr == "" {
		return nil
	}
	if len(s.spec.Events) == 0 && len(s.spec.Probes) == 0 {
		return fieldErr(FieldEventFilter, "", "applies to the session's events and probes, and it enables none")
	}
	if _, err := eventfilter.Parse(expr); err != nil {
		return err
	}
	top := s.FS.Top()
	seen := map[string]bool{}
	for _, e := range s.spec.Events {
		sys, ev, one := strings.Cut(e, ":")
		names := []string{ev}
		if !one {
			var err error
			if names, err = s.FS.Events(sys); err != nil {
				return err
			}
		}
		for _, ev := range names {
			if seen[sys+":"+ev] {
				continue
			}
			seen[sys+":"+ev] = true
			f, err := top.EventFormat(sys, ev)
			if err != nil {
				return err
			}
			if _, err := eventfilter.Check(expr, eventfilter.FieldsOf(f)); err != nil {
				return err
			}
			s.filtered = append(s.filtered, sys+":"+ev)
		}
	}
	return nil
}

// setEventFilter writes --filter into the filter file of every event the session enables,
// before any is enabled; the probes' fields are checked first, now that the kernel has
// defined them. A refusal of the kernel's comes with its error_log entry.
func (s *Session) setEventFilter(in *tracefs.Instance) error {
	expr := s.spec.EventFilter
	if expr == "" {
		return nil
	}
	type target struct{ dir, name string }
	var targets []target
	for _, t := range s.filtered {
		sys, ev, _ := strings.Cut(t, ":")
		targets = append(targets, target{"events/" + sys + "/" + ev, t})
	}
	for _, ev := range s.Probes {
		f, err := in.EventFormat(s.Group, ev)
		if errors.Is(err, tracefs.ErrPlanned) {
			// a dry run defines no probe: its fields are checked when the run has defined it
			targets = append(targets, target{"events/" + s.Group + "/" + ev, "probe " + s.Group + "/" + ev})
			continue
		}
		if err != nil {
			return err
		}
		ff := eventfilter.FieldsOf(f)
		ff.Event = "probe " + s.Group + "/" + ev
		if _, err := eventfilter.Check(expr, ff); err != nil {
			return err
		}
		targets = append(targets, target{"events/" + s.Group + "/" + ev, ff.Event})
	}
	for _, t := range targets {
		if err := in.Write(t.dir+"/filter", expr+"\n"); err != nil {
			return eventfilter.Rejected(t.name, expr, err)
		}
	}
	return nil
}

// checkEventFilters checks Spec.EventFilters: each names an event the session enables, and a
// tracepoint's filter is checked against its fields (a probe's once the kernel has defined it).
func (s *Session) checkEventFilters() error {
	top := s.FS.Top()
	for _, key := range slices.Sorted(maps.Keys(s.spec.EventFilters)) {
		expr := s.spec.EventFilters[key]
		sys, ev, ok := strings.Cut(key, ":")
		if !ok || expr == "" {
			return fmt.Errorf("%w: event filter %q on %q: want SYSTEM:EVENT and an expression", ErrInvalid, expr, key)
		}
		if _, err := eventfilter.Parse(expr); err != nil {
			return err
		}
		if slices.Contains(s.late, key) {
			continue // checked once defined
		}
		if sys == s.Group {
			if !slices.ContainsFunc(s.defs, func(d *probes.Definition) bool { return d.Event == ev }) {
				return fmt.Errorf("%w: event filter on %s: the session defines no probe %s", ErrInvalid, key, ev)
			}
			continue
		}
		if !slices.Contains(s.spec.Events, key) && !slices.Contains(s.spec.Events, sys) {
			return fmt.Errorf("%w: event filter on %s: the session does not enable that event", ErrInvalid, key)
		}
		f, err := top.EventFormat(sys, ev)
		if err != nil {
			return err
		}
		if _, err := eventfilter.Check(expr, eventfilter.FieldsOf(f)); err != nil {
			return err
		}
	}
	return nil
}

// setEventFilters writes Spec.EventFilters, a probe's checked against its fields first.
func (s *Session) setEventFilters(in *tracefs.Instance) error {
	for _, key := range slices.Sorted(maps.Keys(s.spec.EventFilters)) {
		if slices.Contains(s.late, key) {
			continue // set once defined
		}
		if err := s.setEventFilterOf(in, key); err != nil {
			return err
		}
	}
	return nil
}

// setEventFilterOf writes the filter of Spec.EventFilters for the event key, checked against
// the fields of an event the session defined (a probe, a synthetic event) first.
func (s *Session) setEventFilterOf(in *tracefs.Instance, key string) error {
	expr := s.spec.EventFilters[key]
	sys, ev, _ := strings.Cut(key, ":")
	if sys == s.Group || slices.Contains(s.late, key) {
		f, err := in.EventFormat(sys, ev)
		switch {
		case errors.Is(err, tracefs.ErrPlanned): // a dry run defines nothing
		case err != nil:
			return err
		default:
			ff := eventfilter.FieldsOf(f)
			ff.Event = map[bool]string{true: "probe ", false: "synthetic event "}[sys == s.Group] + sys + "/" + ev
			if _, err := eventfilter.Check(expr, ff); err != nil {
				return err
			}
		}
	}
	if err := in.Write("events/"+sys+"/"+ev+"/filter", expr+"\n"); err != nil {
		return eventfilter.Rejected(key, expr, err)
	}
	return nil
}

// checkBufferClockOptions validates --buffer-kb, --clock and -O against the kernel's files.
func (s *Session) checkBufferClockOptions() error {
	top := s.FS.Top()
	if s.spec.BufferKB < 0 || s.spec.BufferKB > maxBufferKB {
		return fieldErr(FieldBufferKB, strconv.Itoa(s.spec.BufferKB), "between 1 and %d KiB per CPU", maxBufferKB)
	}
	if s.spec.Clock != "" {
		b, err := top.ReadFile("trace_clock")
		if err != nil {
			return err
		}
		clocks := strings.Fields(strings.NewReplacer("[", "", "]", "").Replace(string(b)))
		if !slices.Contains(clocks, s.spec.Clock) {
			return fieldErr(FieldClock, s.spec.Clock, "this kernel's clocks are %s", strings.Join(clocks, ", "))
		}
	}
	for _, o := range s.spec.Options {
		name, on := o, true
		if n, v, ok := strings.Cut(o, "="); ok {
			switch v {
			case "1":
			case "0":
				on = false
			default:
				return fieldErr(FieldOption, o, "want OPTION, OPTION=1, OPTION=0 or noOPTION")
			}
			name = n
		} else if n, ok := strings.CutPrefix(o, "no"); ok && !top.Has("options/"+o) {
			name, on = n, false
		}
		if name == "" || strings.ContainsAny(name, "/\x00") || name == "." || name == ".." || !top.Has("options/"+name) {
			return fieldErr(FieldOption, o, "no such trace option ('ftctl list options' lists them)")
		}
		if name == "function-fork" || name == "event-fork" {
			return fieldErr(FieldOption, o, "ftctl sets %s itself (to follow the traced processes' children and keep its own threads out)", name)
		}
		s.spec.options = append(s.spec.options, optionSetting{Name: name, On: on})
	}
	return nil
}

// setBufferClockOptions writes what checkBufferClockOptions checked into the instance.
func (s *Session) setBufferClockOptions(in *tracefs.Instance) error {
	if s.spec.BufferKB > 0 {
		if err := in.Write("buffer_size_kb", strconv.Itoa(s.spec.BufferKB)); err != nil {
			return err
		}
	}
	if s.spec.Clock != "" {
		if err := in.Write("trace_clock", s.spec.Clock); err != nil {
			return err
		}
	}
	for k, o := range s.spec.options {
		if !in.Has("options/" + o.Name) {
			// Some options are the top level's alone (record-cmd, printk, markers...: the
			// kernel's TOP_LEVEL_TRACE_FLAGS); an instance lacks their files.
			return fieldErr(FieldOption, o.Name, "instances have no such option (it is the top level's alone)")
		}
		v := "0"
		if o.On {
			v = "1"
		}
		before, berr := s.FS.Top().ReadFile("options/" + o.Name)
		if err := in.Write("options/"+o.Name, v); err != nil {
			return err
		}
		if in.Planned() || berr != nil {
			continue
		}
		if after, err := s.FS.Top().ReadFile("options/" + o.Name); err == nil && strings.TrimSpace(string(after)) == v && strings.TrimSpace(string(before)) != v {
			s.spec.options[k].shared, s.spec.options[k].topBefore = true, strings.TrimSpace(string(before))
			if s.spec.InstanceOnly { // Start's teardown puts the top level's back
				return SharedOptionError(in, o.Name)
			}
			s.Notice("-O %s: this kernel keeps the option for every trace array at once (the top level's changed too); it is put back at the end", o.Name)
		}
	}
	return nil
}

// SharedOptionError is the refusal of an option the kernel keeps for every trace array at
// once (the function tracer's flags, func_stack_trace..., seen on 6.1 and 6.12) where nothing outside the
// instance may change (Spec.InstanceOnly: a declared owner, a profile): the kernel cannot
// set it in this instance alone.
func SharedOptionError(in *tracefs.Instance, name string) error {
	return &tracefs.Error{Op: "write", Path: in.Path("options/" + name), Class: tracefs.ErrUnavailable,
		Reason: "this kernel keeps the option " + name + " for every trace array at once: setting it changed the top level's too, " +
			"which a declared owner (a profile) does not own; it was put back"}
}

// restoreSharedOptions puts back the top level's value of each -O option the kernel keeps for
// every trace array at once, where it still holds what the session wrote.
func (s *Session) restoreSharedOptions() []error {
	var errs []error
	for _, o := range s.spec.options {
		if !o.shared {
			continue
		}
		v := map[bool]string{true: "1", false: "0"}[o.On]
		now, err := s.FS.Top().ReadFile("options/" + o.Name)
		if err == nil && strings.TrimSpace(string(now)) == v {
			err = s.FS.Top().Write("options/"+o.Name, o.topBefore)
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("putting back options/%s of the top level: %w", o.Name, err))
		}
	}
	return errs
}

// expandEvents resolves -e's globs as trace-cmd does: SYSTEM:* (or a system glob alone) is
// each matching system whole; SYSTEM:GLOB the events it matches. Matching nothing is invalid.
func expandEvents(fs *tracefs.FS, e string) ([]string, error) {
	sysGlob, evGlob, hasEvent := strings.Cut(e, ":")
	if _, err := path.Match(sysGlob, ""); err != nil {
		return nil, fieldErr(FieldEvent, e, "%v", err)
	}
	if _, err := path.Match(evGlob, ""); err != nil {
		return nil, fieldErr(FieldEvent, e, "%v", err)
	}
	systems, err := fs.EventSystems()
	if err != nil {
		return nil, err
	}
	var out []string
	for _, sys := range systems {
		if ok, _ := path.Match(sysGlob, sys); !ok {
			continue
		}
		if !hasEvent || evGlob == "*" {
			out = append(out, sys)
			continue
		}
		names, err := fs.Events(sys)
		if err != nil {
			return nil, err
		}
		for _, ev := range names {
			if ok, _ := path.Match(evGlob, ev); ok {
				out = append(out, sys+":"+ev)
			}
		}
	}
	if len(out) == 0 {
		return nil, fieldErr(FieldEvent, e, "matches no event ('ftctl list events' lists them)")
	}
	return out, nil
}

// eventDir turns SYSTEM or SYSTEM:EVENT into events/SYSTEM[/EVENT].
func eventDir(e string) (string, error) {
	sys, ev, _ := strings.Cut(e, ":")
	bad := func(s string) bool { return s == "" || strings.ContainsAny(s, "/\x00") || s == "." || s == ".." }
	if bad(sys) || (strings.Contains(e, ":") && bad(ev)) {
		return "", fieldErr(FieldEvent, e, "want SYSTEM or SYSTEM:EVENT (e.g. sched:sched_switch)")
	}
	if ev == "" {
		return "events/" + sys, nil
	}
	return "events/" + sys + "/" + ev, nil
}

// Forced says what Spec.Force let through in the session's probe definitions (a warning
// each).
func (s *Session) Forced() []string {
	var out []string
	for _, d := range s.defs {
		out = append(out, d.Forced...)
	}
	return out
}

// TraceCommand adds the pid of the command the session traces (held at its gate) to Spec.PIDs:
// call it before Start.
func (s *Session) TraceCommand(pid int) { s.spec.PIDs = append(s.spec.PIDs, pid) }

// Tracer is the tracer the session runs.
func (s *Session) Tracer() string { return s.tracer }

// Start sets the session up: instance, probes, filters (the swap protocol), pid filters,
// event filters, events, tracer. On failure everything done so far is torn down and the error
// returned: a probe's fields refusing the event filter (*eventfilter.Error), the kernel
// refusing it (*eventfilter.RejectedError), among others.
// The caller holds the tracefs lock.
func (s *Session) Start(ctx context.Context) (err error) {
	defer func() {
		// Only what this session made is undone: an instance it did not create (a name taken
		// meanwhile) is someone else's.
		if err != nil && s.Instance != nil {
			for _, e := range s.Teardown() {
				s.Notice("cleaning up after the failed start: %v", e)
			}
		}
	}()
	name := s.ID.Instance()
	in, created, err := s.FS.Ensure(name)
	if err != nil {
		return err
	}
	if !created {
		return fmt.Errorf("instance %s already exists: a session of the same pid and random id?", name)
	}
	s.Instance = in
	if s.hold, err = in.Hold(); err != nil {
		return err
	}
	if s.tracer != "nop" && s.spec.Graph == nil {
		// An instance lists only the tracers it can run: function_graph in instances came
		// with Linux 6.11 (seen: 6.1 lists "function nop" there, and refuses with EINVAL).
		b, err := in.ReadFile("available_tracers")
		switch {
		case errors.Is(err, tracefs.ErrPlanned):
			s.Notice("dry run: whether instances offer the %s tracer is known once one exists; the run checks it before writing", s.tracer)
		case err != nil:
			return err
		case !slices.Contains(strings.Fields(string(b)), s.tracer):
			return &tracefs.Error{Op: "write", Path: in.Path("current_tracer"), Data: s.tracer, Class: tracefs.ErrUnavailable,
				Reason: fmt.Sprintf("this kernel cannot run the %s tracer in an instance (its instances offer: %s)", s.tracer, strings.TrimSpace(string(b)))}
		}
	}
	// The instance starts with tracing on and the nop tracer; keep it off until ready.
	if err := in.Write("tracing_on", "0"); err != nil {
		return err
	}
	if err := s.setBufferClockOptions(in); err != nil {
		return err
	}
	if err := s.excludeSelf(); err != nil {
		return err
	}
	m := probes.NewManager(s.FS)
	for _, d := range s.defs {
		a, err := m.Add(ctx, d.WithGroup(s.Group), probes.AddOptions{})
		if err != nil {
			return err
		}
		s.Probes = append(s.Probes, a.Event)
	}
	var changes []filters.Change
	if len(s.spec.Notrace) > 0 {
		changes = append(changes, filters.Change{File: filters.NotraceFile, Op: filters.OpSet, Patterns: s.spec.Notrace})
	}
	if len(s.spec.Filters) > 0 {
		changes = append(changes, filters.Change{File: filters.FilterFile, Op: filters.OpSet, Patterns: s.spec.Filters})
	}
	if len(changes) > 0 {
		ap := &filters.Applier{In: in, Top: s.FS.Top(), Notice: s.Notice, ByName: !s.FS.IndexWrites()}
		if _, err := ap.Apply(ctx, changes); err != nil {
			return err
		}
	}
	if len(s.spec.PIDs) > 0 {
		if err := s.setPIDs(s.spec.PIDs); err != nil {
			return err
		}
	}
	if err := s.setEventFilter(in); err != nil {
		return err
	}
	if err := s.setEventFilters(in); err != nil {
		return err
	}
	for _, ev := range s.Probes {
		if slices.Contains(s.spec.DefineOnly, ev) {
			continue
		}
		if err := in.Write("events/"+s.Group+"/"+ev+"/enable", "1"); err != nil {
			return err
		}
	}
	for _, e := range s.spec.Events {
		dir, _ := eventDir(e)
		if err := in.Write(dir+"/enable", "1"); err != nil {
			return err
		}
	}
	if s.spec.Graph != nil {
		if err := s.startGraph(); err != nil {
			return err
		}
	} else if s.tracer != "nop" {
		if err := in.Write("current_tracer", s.tracer); err != nil {
			return err
		}
	}
	return s.startDynamic()
}

// startDynamic defines Spec.Dynamic's events and writes Spec.Triggers, in order.
func (s *Session) startDynamic() error {
	for _, d := range s.spec.Dynamic {
		var err error
		if d.Kind == 's' {
			err = s.AddSynthetic(d.Event, d.Place)
		} else {
			err = s.AddProbe(d.Kind, d.Event, d.Place)
		}
		if err != nil {
			return &DynamicError{d, err}
		}
	}
	for _, t := range s.spec.Triggers {
		if err := s.AddTrigger(t.System, t.Event, t.Text); err != nil {
			return &TriggerError{t, err}
		}
	}
	for _, e := range s.late {
		if _, ok := s.spec.EventFilters[e]; ok {
			if err := s.setEventFilterOf(s.Instance, e); err != nil {
				return err
			}
		}
		dir, _ := eventDir(e)
		if err := s.Instance.Write(dir+"/enable", "1"); err != nil {
			return err
		}
	}
	return nil
}

// setPIDs restricts functions and events to the processes and, through function-fork and
// event-fork, their future children. set_ftrace_pid is written only for a function tracer: an
// events-only session needs none (and a locked-down kernel refuses it with EPERM).
func (s *Session) setPIDs(pids []int) error {
	in := s.Instance
	var b strings.Builder
	for _, p := range pids {
		b.WriteString(strconv.Itoa(p) + "\n")
	}
	if s.tracer != "nop" && in.Has("set_ftrace_pid") {
		if err := in.Write("set_ftrace_pid", b.String()); err != nil {
			return err
		}
		if in.Has("options/function-fork") {
			if err := in.Write("options/function-fork", "1"); err != nil {
				return err
			}
		}
	}
	if in.Has("set_event_pid") {
		if err := in.Write("set_event_pid", b.String()); err != nil {
			return err
		}
		if in.Has("options/event-fork") {
			if err := in.Write("options/event-fork", "1"); err != nil {
				return err
			}
		}
	}
	return nil
}

// excludeSelf keeps ftctl's own threads out of the instance in the kernel: their pids in
// set_ftrace_notrace_pid and set_event_notrace_pid, with function-fork and event-fork so that
// the threads started later (Go starts them as it needs) are added by the kernel as they are
// created. A command ftctl starts must be started before (its pid would be added too). Kernels
// before 5.8 lack the files: the stream then drops ftctl's events as it decodes them, as it
// does anyway for the threads it starts between the listing and the writes.
func (s *Session) excludeSelf() error {
	in := s.Instance
	if s.spec.IncludeSelf || !in.Has("set_ftrace_notrace_pid") || !in.Has("set_event_notrace_pid") {
		return nil
	}
	var b strings.Builder
	for _, tid := range tracefs.OwnThreads() {
		b.WriteString(strconv.Itoa(tid) + "\n")
	}
	for _, f := range []string{"options/function-fork", "options/event-fork"} {
		if in.Has(f) {
			if err := in.Write(f, "1"); err != nil {
				return err
			}
		}
	}
	for _, f := range []string{"set_ftrace_notrace_pid", "set_event_notrace_pid"} {
		if err := in.Write(f, b.String()); err != nil {
			return err
		}
	}
	s.SelfExcluded = true
	return nil
}

// Begin turns tracing on (and, for function_graph at the top level, the top level's).
func (s *Session) Begin() error {
	if err := s.Instance.Write("tracing_on", "1"); err != nil || !s.GraphAtTop() {
		return err
	}
	if err := s.graph.journal.record("tracing_on", false, "", "1"); err != nil {
		return err
	}
	return s.FS.Top().Write("tracing_on", "1")
}

// StopTracing turns tracing off in the trace array the session traces (GraphInstance: its
// instance, or the top level where a graph runs there), as when the traced command exits.
// At the top level the write is journaled first: tracing_on is then the session's "0", which
// the teardown and `ftctl reset` put back, not another actor's.
func (s *Session) StopTracing() error {
	if s.GraphAtTop() {
		if err := s.graph.journal.record("tracing_on", false, "", "0"); err != nil {
			return err
		}
	}
	return s.GraphInstance().Write("tracing_on", "0")
}

// Teardown undoes the session: its triggers removed (newest first), tracing off, tracer nop, events disabled, the session's probes
// removed, the hold on the instance let go, the instance removed. Every step runs even when an
// earlier one failed; each is idempotent, so a second teardown (or `ftctl reset`) finishes what
// the first could not. The instance's pipes must be closed first (an open file keeps the
// instance busy).
func (s *Session) Teardown() []error {
	in, err := s.FS.Instance(s.ID.Instance())
	if err != nil {
		return []error{err}
	}
	var errs []error
	if s.Instance != nil && in.Has("tracing_on") {
		errs = s.removeTriggers()
	}
	for _, e := range s.late {
		// an event the session defined and enabled (a synthetic event of Spec.Events) cannot
		// be removed while enabled (EBUSY)
		if dir, _ := eventDir(e); in.Has(dir + "/enable") {
			if err := in.Write(dir+"/enable", "0"); err != nil {
				errs = append(errs, fmt.Errorf("disabling %s: %w", e, err))
			}
		}
	}
	if len(s.triggers) == 0 { // a trigger left would keep its events busy
		errs = append(errs, s.removeDynamic()...)
	}
	errs = append(errs, s.restoreSharedOptions()...)
	if s.graph != nil {
		if !s.graph.top && in.Has("current_tracer") {
			// the graph stops before its global filters go: emptied under a running
			// function_graph, they would graph every function
			if err := in.Write("tracing_on", "0"); err != nil {
				errs = append(errs, fmt.Errorf("stopping tracing: %w", err))
			}
			if err := in.Write("current_tracer", "nop"); err != nil {
				errs = append(errs, fmt.Errorf("setting the tracer to nop: %w", err))
			}
		}
		errs = append(errs, s.restoreGraph()...)
	}
	return append(errs, teardown(s.FS, in, s.Group, s.hold)...)
}

// AddTrigger writes a trigger (a hist trigger, "hist:keys=...") into the trigger file of
// SYSTEM:EVENT in the session's instance, and owns it: Teardown removes it by writing
// "!"+text, the one form the kernel matches it by (the kernel cannot parse the listing's form
// back: "sort=lat.log2" is EINVAL, seen on 6.1 and 6.12), newest first and before the
// instance is removed. The caller holds the tracefs lock. The kernel's refusal comes back as
// tracefs reports it (with its error_log entries).
func (s *Session) AddTrigger(system, event, text string) error {
	dir := "events/" + system + "/" + event
	if _, err := eventDir(system + ":" + event); err != nil {
		return err
	}
	if !s.Instance.Has(dir+"/trigger") && !(s.Instance.Planned() && s.defines(system, event)) {
		return fmt.Errorf("%w: no event %s:%s in this kernel", ErrInvalid, system, event)
	}
	if err := s.Instance.Write(dir+"/trigger", text+"\n"); err != nil {
		return err
	}
	s.triggers = append(s.triggers, trigger{dir, text})
	return nil
}

// defines says whether SYSTEM:EVENT is an event the session defined (a probe of its group, a
// synthetic event of its): a dry run's plan has them, the kernel does not.
func (s *Session) defines(system, event string) bool {
	if system == s.Group {
		return slices.Contains(s.Probes, event)
	}
	return system == "synthetic" && slices.ContainsFunc(s.dynamic, func(d dynamicEvent) bool {
		return d.file == "synthetic_events" && d.remove == "!"+event+"\n"
	})
}

// Synthetic is the name of the session's synthetic event called what: the group's name and
// what, so that `ftctl reset` and people see whose it is (synthetic events have one
// namespace, the system "synthetic", shared by every instance).
func (s *Session) Synthetic(what string) string { return s.ID.Synthetic(what) }

// AddSynthetic defines the synthetic event name (made by Synthetic) with fields ("u64 lat;
// int pid") in synthetic_events, and owns it: Teardown removes it ("!name") after the
// triggers that use it. The caller holds the tracefs lock.
func (s *Session) AddSynthetic(name, fields string) error {
	if !strings.HasPrefix(name, s.Group+"_") {
		return fmt.Errorf("%w: synthetic event %q is not the session's (want %s_...)", ErrInvalid, name, s.Group)
	}
	if err := s.FS.Top().Write("synthetic_events", name+" "+fields+"\n"); err != nil {
		return err
	}
	s.dynamic = append(s.dynamic, dynamicEvent{"synthetic_events", "!" + name + "\n"})
	return nil
}

// AddProbe defines an event of the session's group from text ("p:EVENT SYM", "r:EVENT SYM",
// or, where the README announces fprobes, "f:EVENT SYM" and "f:EVENT SYM%return"): the group
// is the session's, put in here. kprobes go to kprobe_events, fprobes to dynamic_events
// (the only file that takes them). Teardown removes it ("-:GROUP/EVENT") after the triggers.
// The caller holds the tracefs lock.
func (s *Session) AddProbe(kind byte, event, place string) error {
	if !validEventName(event) || strings.ContainsAny(place, " \n\t\x00") || place == "" {
		return fmt.Errorf("%w: probe %c:%s %q", ErrInvalid, kind, event, place)
	}
	file := "kprobe_events"
	switch kind {
	case 'p', 'r':
	case 'f':
		file = "dynamic_events"
	default:
		return fmt.Errorf("%w: probe kind %c", ErrInvalid, kind)
	}
	def := fmt.Sprintf("%c:%s/%s %s\n", kind, s.Group, event, place)
	if err := s.FS.Top().Write(file, def); err != nil {
		return err
	}
	s.dynamic = append(s.dynamic, dynamicEvent{file, "-:" + s.Group + "/" + event + "\n"})
	s.Probes = append(s.Probes, event)
	return nil
}

// validEventName: a C identifier of at most 63 bytes, as the kernel takes event names.
func validEventName(s string) bool {
	if s == "" || len(s) > 63 || s[0] >= '0' && s[0] <= '9' {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9') {
			return false
		}
	}
	return true
}

// removeDynamic removes the session's fprobes, kprobes and synthetic events, newest first.
// One already gone (ENOENT) is done.
func (s *Session) removeDynamic() []error {
	var errs []error
	for i := len(s.dynamic) - 1; i >= 0; i-- {
		d := s.dynamic[i]
		err := s.FS.Top().Write(d.file, d.remove)
		if err != nil && !errors.Is(err, iofs.ErrNotExist) {
			errs = append(errs, fmt.Errorf("removing %s from %s: %w", strings.TrimSpace(d.remove), d.file, err))
			continue
		}
		s.dynamic = s.dynamic[:i]
	}
	return errs
}

// removeTriggers removes the session's triggers, newest first (a trigger an onmatch() action
// of a later one names must outlive it). An instance's rmdir would drop them too, but not
// the references a hist trigger takes on a synthetic event (seen on 6.1 and 6.12: after
// rmdir, removing the synthetic event is EBUSY until reboot): they are removed one by one.
func (s *Session) removeTriggers() []error {
	var errs []error
	for i := len(s.triggers) - 1; i >= 0; i-- {
		t := s.triggers[i]
		err := s.Instance.Write(t.dir+"/trigger", "!"+t.text+"\n")
		if err != nil && !errors.Is(err, iofs.ErrNotExist) && s.noTriggers(t.dir) {
			// never written (a set-up killed before it): the kernel parses the removal before
			// it looks for the trigger, and one naming a variable of a trigger not written
			// either is EINVAL ("Couldn't find variable", seen on 6.12), not ENOENT
			err = nil
		}
		if err != nil && !errors.Is(err, iofs.ErrNotExist) {
			errs = append(errs, fmt.Errorf("removing the trigger %s of %s: %w", t.text, t.dir, err))
			continue
		}
		s.triggers = s.triggers[:i]
	}
	return errs
}

// noTriggers says whether the event directory dir of the instance lists no trigger at all.
func (s *Session) noTriggers(dir string) bool {
	b, err := s.Instance.ReadFile(dir + "/trigger")
	if err != nil {
		return false
	}
	for _, l := range strings.Split(string(b), "\n") {
		if l = strings.TrimSpace(l); l != "" && !strings.HasPrefix(l, "#") {
			return false
		}
	}
	return true
}

// Release lets go of the instance without tearing it down (the console's --keep): it is then
// a leftover, which `ftctl reset` removes.
func (s *Session) Release() {
	if s.hold != nil {
		s.hold.Close()
	}
}

func teardown(fs *tracefs.FS, in *tracefs.Instance, group string, hold *tracefs.Hold) []error {
	var errs []error
	step := func(what string, err error) {
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", what, err))
		}
	}
	exists := in.Has("tracing_on")
	if exists {
		step("stopping tracing", in.Write("tracing_on", "0"))
		step("setting the tracer to nop", in.Write("current_tracer", "nop"))
		if in.Has("events/enable") {
			step("disabling the instance's events", in.Write("events/enable", "0"))
		}
	}
	step("removing the session's probes", removeGroup(fs, group))
	if hold != nil {
		hold.Close()
	}
	if exists {
		// rmdir is EBUSY while a reader still holds trace_pipe; give a closing reader a moment.
		var err error
		for i := 0; i < 20; i++ {
			if err = in.Remove(); err == nil || !errors.Is(err, tracefs.ErrBusy) {
				break
			}
			time.Sleep(50 * time.Millisecond)
		}
		step("removing instance "+in.Name, err)
	}
	return errs
}

// removeGroup removes every probe of a group (disabled everywhere first).
func removeGroup(fs *tracefs.FS, group string) error {
	if !fs.Top().Has("kprobe_events") && !fs.Top().Has("uprobe_events") {
		return nil
	}
	m := &probes.Manager{FS: fs}
	list, err := m.List()
	if err != nil {
		return err
	}
	done := map[string]bool{}
	var errs []error
	for _, p := range list {
		if p.Group != group || done[p.Event] {
			continue
		}
		done[p.Event] = true
		if err := m.Remove(context.Background(), p.Group, p.Event); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}
