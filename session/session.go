// Package session runs one-shot tracing sessions (ftctl trace) that leave the system exactly as
// they found it: everything lives in a private instance ftctl-PID and a private probe group
// ftctl_PID, so nothing of another user or session is touched, and the teardown removes both,
// step by step, each step idempotent and attempted even when an earlier one failed. Leftovers of
// sessions whose process is gone (SIGKILL, power loss) are found by those names and removed by
// `ftctl reset`.
package session

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/ftctl/ftctl/filters"
	"github.com/ftctl/ftctl/probes"
	"github.com/ftctl/ftctl/tracefs"
)

// InstanceName is the private instance of the session run by process pid.
func InstanceName(pid int) string { return "ftctl-" + strconv.Itoa(pid) }

// GroupName is the private probe group of the session run by process pid.
func GroupName(pid int) string { return "ftctl_" + strconv.Itoa(pid) }

// ErrInvalid marks a spec refused before anything was changed.
var ErrInvalid = errors.New("invalid session")

// Spec is what a session traces.
type Spec struct {
	Filters []*filters.Pattern // function filter (set_ftrace_filter of the instance)
	Notrace []*filters.Pattern // functions never traced (set_ftrace_notrace)
	Probes  []string           // kprobe definitions; their group is replaced by the session's
	Events  []string           // SYSTEM or SYSTEM:EVENT to enable
	// Tracer: "function", "function_graph" or "nop"; "" means function when Filters are
	// given, else nop.
	Tracer string
	PIDs   []int // trace only these processes and their children (set_ftrace_pid, set_event_pid)
}

// Session is a running session.
type Session struct {
	FS       *tracefs.FS
	PID      int // the owning process: names the instance and the group
	Instance *tracefs.Instance
	Group    string
	Notice   func(format string, args ...any)
	// Probes are the events the session defined in its group.
	Probes []string

	spec   Spec
	defs   []*probes.Definition
	tracer string
}

// New validates spec against the running kernel and returns a session ready to Start. Nothing
// is changed: a refused spec (ErrInvalid, filters.ErrPattern, probe syntax errors) leaves the
// system as it was.
func New(fs *tracefs.FS, pid int, spec Spec) (*Session, error) {
	s := &Session{FS: fs, PID: pid, Group: GroupName(pid), spec: spec, Notice: func(string, ...any) {}}
	top := fs.Top()
	if !top.Has("instances") {
		return nil, &tracefs.Error{Op: "open", Path: fs.Path("instances"), Class: tracefs.ErrUnavailable,
			Reason: "this kernel has no tracing instances, which ftctl trace runs in"}
	}
	ft := fs.DetectFeatures()
	s.tracer = spec.Tracer
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
		return nil, fmt.Errorf("%w: --tracer must be function, function_graph or nop, not %q", ErrInvalid, s.tracer)
	}
	if s.tracer != "nop" && len(spec.Filters) == 0 {
		return nil, fmt.Errorf("%w: the %s tracer needs at least one -f PATTERN: tracing every function would swamp the system", ErrInvalid, s.tracer)
	}
	if s.tracer == "nop" && (len(spec.Filters) > 0 || len(spec.Notrace) > 0) {
		return nil, fmt.Errorf("%w: -f/-n select functions for the function tracers, not for --tracer nop", ErrInvalid)
	}
	if len(spec.Filters)+len(spec.Notrace) > 0 {
		ap := &filters.Applier{Top: top}
		ix, err := ap.Index()
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
		if !ft.KprobeEvents {
			return nil, &tracefs.Error{Op: "open", Path: fs.Path("kprobe_events"), Class: tracefs.ErrUnavailable, Reason: "this kernel has no kprobe events"}
		}
		p := probes.Parser{Features: ft.Probe}
		seen := map[string]bool{}
		for _, text := range spec.Probes {
			d, err := p.Parse(text)
			if err != nil {
				return nil, err
			}
			if d.Kind == probes.Delete {
				return nil, fmt.Errorf("%w: -p %q removes a probe; -p defines them", ErrInvalid, text)
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
	for _, e := range spec.Events {
		dir, err := eventDir(e)
		if err != nil {
			return nil, err
		}
		if !top.Has(dir) {
			return nil, fmt.Errorf("%w: no event %q (events/%s does not exist; ftctl status lists what is enabled, ls %s shows all)", ErrInvalid, e, dir[len("events/"):], fs.Path("events"))
		}
	}
	if len(spec.PIDs) > 0 && !ft.FtracePid && s.tracer != "nop" {
		return nil, &tracefs.Error{Op: "open", Path: fs.Path("set_ftrace_pid"), Class: tracefs.ErrUnavailable, Reason: "this kernel cannot filter functions by pid"}
	}
	return s, nil
}

// eventDir turns SYSTEM or SYSTEM:EVENT into events/SYSTEM[/EVENT].
func eventDir(e string) (string, error) {
	sys, ev, _ := strings.Cut(e, ":")
	bad := func(s string) bool { return s == "" || strings.ContainsAny(s, "/\x00") || s == "." || s == ".." }
	if bad(sys) || (strings.Contains(e, ":") && bad(ev)) {
		return "", fmt.Errorf("%w: -e %q: want SYSTEM or SYSTEM:EVENT (e.g. sched:sched_switch)", ErrInvalid, e)
	}
	if ev == "" {
		return "events/" + sys, nil
	}
	return "events/" + sys + "/" + ev, nil
}

// Tracer is the tracer the session runs.
func (s *Session) Tracer() string { return s.tracer }

// Start sets the session up: instance, probes, filters (the swap protocol), pid filters,
// events, tracer. On failure everything done so far is torn down and the error returned.
// The caller holds the tracefs lock.
func (s *Session) Start(ctx context.Context) (err error) {
	defer func() {
		if err != nil {
			for _, e := range s.Teardown() {
				s.Notice("cleaning up after the failed start: %v", e)
			}
		}
	}()
	in, created, err := s.FS.Ensure(InstanceName(s.PID))
	if err != nil {
		return err
	}
	if !created {
		return fmt.Errorf("instance %s already exists: another session of this pid? (ftctl reset removes leftovers)", InstanceName(s.PID))
	}
	s.Instance = in
	if s.tracer != "nop" {
		// An instance lists only the tracers it can run: function_graph in instances came
		// with Linux 6.11 (seen: 6.1 lists "function nop" there, and refuses with EINVAL).
		b, err := in.ReadFile("available_tracers")
		if err != nil {
			return err
		}
		if !slices.Contains(strings.Fields(string(b)), s.tracer) {
			return &tracefs.Error{Op: "write", Path: in.Path("current_tracer"), Data: s.tracer, Class: tracefs.ErrUnavailable,
				Reason: fmt.Sprintf("this kernel cannot run the %s tracer in an instance (its instances offer: %s)", s.tracer, strings.TrimSpace(string(b)))}
		}
	}
	// The instance starts with tracing on and the nop tracer; keep it off until ready.
	if err := in.Write("tracing_on", "0"); err != nil {
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
		if err := s.SetPIDs(s.spec.PIDs); err != nil {
			return err
		}
	}
	for _, ev := range s.Probes {
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
	if s.tracer != "nop" {
		if err := in.Write("current_tracer", s.tracer); err != nil {
			return err
		}
	}
	return nil
}

// SetPIDs restricts functions and events to the processes and, through function-fork and
// event-fork, their future children.
func (s *Session) SetPIDs(pids []int) error {
	in := s.Instance
	var b strings.Builder
	for _, p := range pids {
		b.WriteString(strconv.Itoa(p) + "\n")
	}
	if in.Has("set_ftrace_pid") {
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

// Begin turns tracing on.
func (s *Session) Begin() error { return s.Instance.Write("tracing_on", "1") }

// Teardown undoes the session: tracing off, tracer nop, events disabled, the session's probes
// removed, the instance removed. Every step runs even when an earlier one failed; each is
// idempotent, so a second teardown (or `ftctl reset`) finishes what the first could not. The
// instance's trace_pipe must be closed first (an open file keeps the instance busy).
func (s *Session) Teardown() []error {
	return teardown(s.FS, InstanceName(s.PID), s.Group)
}

func teardown(fs *tracefs.FS, instance, group string) []error {
	var errs []error
	step := func(what string, err error) {
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", what, err))
		}
	}
	in, err := fs.Instance(instance)
	exists := err == nil && in.Has("tracing_on")
	if exists {
		step("stopping tracing", in.Write("tracing_on", "0"))
		step("setting the tracer to nop", in.Write("current_tracer", "nop"))
		if in.Has("events/enable") {
			step("disabling the instance's events", in.Write("events/enable", "0"))
		}
	}
	step("removing the session's probes", removeGroup(fs, group))
	if exists {
		// rmdir is EBUSY while a reader still holds trace_pipe; give a closing reader a moment.
		var err error
		for i := 0; i < 20; i++ {
			if err = fs.Remove(instance); err == nil || !errors.Is(err, tracefs.ErrBusy) {
				break
			}
			time.Sleep(50 * time.Millisecond)
		}
		step("removing instance "+instance, err)
	}
	return errs
}

// removeGroup removes every probe of a group (disabled everywhere first).
func removeGroup(fs *tracefs.FS, group string) error {
	if !fs.Top().Has("kprobe_events") {
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

// Leftover is what a dead session left behind.
type Leftover struct {
	PID      int      `json:"pid"`
	Instance string   `json:"instance,omitempty"` // "" when the instance is gone
	Group    string   `json:"group,omitempty"`    // "" when it has no probes left
	Probes   []string `json:"probes"`
}

// Leftovers finds instances ftctl-PID and probe groups ftctl_PID of processes that are gone.
// Sessions still running are not leftovers.
func Leftovers(fs *tracefs.FS) ([]Leftover, error) {
	by := map[int]*Leftover{}
	get := func(pid int) *Leftover {
		if by[pid] == nil {
			by[pid] = &Leftover{PID: pid, Probes: []string{}}
		}
		return by[pid]
	}
	names, err := fs.Instances()
	if err != nil && !errors.Is(err, tracefs.ErrUnavailable) {
		return nil, err
	}
	for _, n := range names {
		pid, ok := pidOf(n, "ftctl-")
		if ok && !tracefs.ProcessAlive(strconv.Itoa(pid)) {
			get(pid).Instance = n
		}
	}
	if fs.Top().Has("kprobe_events") {
		list, err := (&probes.Manager{FS: fs}).List()
		if err != nil {
			return nil, err
		}
		for _, p := range list {
			pid, ok := pidOf(p.Group, "ftctl_")
			if ok && !tracefs.ProcessAlive(strconv.Itoa(pid)) {
				l := get(pid)
				l.Group = p.Group
				if len(l.Probes) == 0 || l.Probes[len(l.Probes)-1] != p.Event {
					l.Probes = append(l.Probes, p.Event)
				}
			}
		}
	}
	var out []Leftover
	for _, l := range by {
		out = append(out, *l)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].PID < out[j].PID })
	return out, nil
}

func pidOf(name, prefix string) (int, bool) {
	rest, ok := strings.CutPrefix(name, prefix)
	if !ok || rest == "" || strings.Trim(rest, "0123456789") != "" {
		return 0, false
	}
	pid, err := strconv.Atoi(rest)
	return pid, err == nil && pid > 0
}

// RemoveLeftover tears down what a dead session left.
func RemoveLeftover(fs *tracefs.FS, l Leftover) []error {
	return teardown(fs, InstanceName(l.PID), GroupName(l.PID))
}
