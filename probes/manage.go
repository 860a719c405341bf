package probes

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"slices"
	"sort"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/ftctl/ftctl/eventfilter"
	"github.com/ftctl/ftctl/filters"
	"github.com/ftctl/ftctl/tracefs"
)

// DefaultGroup is the group of probes ftctl adds when the definition names none. Probes of
// other groups are listed but never changed unless named explicitly.
const DefaultGroup = "ftctl"

// ErrNoProbe: the named probe does not exist.
var ErrNoProbe = errors.New("no such probe")

// ErrAmbiguous: a bare event name matches probes of several groups, or only another group's.
var ErrAmbiguous = errors.New("probe name needs its group")

// ErrEventExists: a definition names an event that existed before it was written (an
// ExistsError says which). Since Linux 5.7 the kernel merges the probes of one event name, so
// writing it would have added a probe point to that event, another owner's maybe.
var ErrEventExists = errors.New("the event exists")

// ExistsError is a definition refused because its event exists and appending was not asked
// for (AddOptions.Append). Nothing was left written.
type ExistsError struct {
	Group, Event string
	Existing     []string // the event's probe points, as the kernel lists them
	// OtherKind: the event is a probe of another kind (a kprobe, an fprobe...): --append
	// cannot add to it either.
	OtherKind bool
}

// Error names the event and its points, their text escaped (it is the kernel's, and other
// users choose it): the message goes to terminals as it is.
func (e *ExistsError) Error() string {
	if e.OtherKind {
		return fmt.Sprintf("%s/%s already exists as another kind of probe (%s): one event cannot hold two kinds (the kernel refuses it); nothing was changed",
			printable(e.Group), printable(e.Event), printable(strings.Join(e.Existing, "; ")))
	}
	return fmt.Sprintf("%s/%s already exists (%s): the kernel would make this definition another probe point of it; nothing was changed",
		printable(e.Group), printable(e.Event), printable(strings.Join(e.Existing, "; ")))
}

// Is makes errors.Is(err, ErrEventExists) true.
func (e *ExistsError) Is(target error) bool { return target == ErrEventExists }

// printable escapes control characters and invalid UTF-8 (Go's quoting, without the quotes).
func printable(s string) string {
	for _, r := range s {
		if r == utf8.RuneError || !strconv.IsGraphic(r) {
			q := strconv.QuoteToGraphic(s)
			return q[1 : len(q)-1]
		}
	}
	return s
}

// Probe is one probe event as the kernel lists it, with what ftctl knows about it.
type Probe struct {
	Group string `json:"group"`
	Event string `json:"event"`
	// Type is the kind: "kprobe", "kretprobe", "uprobe", "uretprobe", "fprobe", "fexit",
	// "tprobe" or "eprobe" ("" when ftctl cannot parse the kernel's line).
	Type       string   `json:"type"`
	Definition string   `json:"definition"`
	Place      string   `json:"place"`
	Owner      string   `json:"owner"`      // "ftctl" or "other"
	EnabledIn  []string `json:"enabled_in"` // "" = top level, else instance names
	// Filter is an event probe's "if FILTER": from the kernel's listing (FilterFrom "kernel"),
	// or, where the kernel lists none, from ftctl's record of the probes it added
	// (filterrecord.go; FilterFrom "ftctl").
	Filter     string      `json:"filter,omitempty"`
	FilterFrom string      `json:"filter_from,omitempty"`
	Parsed     *Definition `json:"-"` // nil when ftctl cannot parse the kernel's line
	// File is where the kernel lists it: kprobe_events, uprobe_events, or dynamic_events for
	// the kinds only that file takes (fprobes, tracepoint probes, event probes).
	File string `json:"-"`

	// Uprobe: the file, offset and the symbol read back from the ELF file (uprobes only).
	Uprobe *UprobeListing `json:"uprobe,omitempty"`
}

// Name is GROUP/EVENT.
func (p Probe) Name() string { return p.Group + "/" + p.Event }

// Manager changes kprobe_events for ftctl's commands. Callers hold the tracefs lock around
// every method that writes.
type Manager struct {
	FS     *tracefs.FS
	Parser Parser
}

// NewManager reads the running kernel's probe features.
func NewManager(f *tracefs.FS) *Manager {
	return &Manager{FS: f, Parser: Parser{Features: f.DetectFeatures().Probe}}
}

// List reads kprobe_events, uprobe_events, the fprobes, tracepoint probes and event probes
// of dynamic_events, and where each event is enabled.
func (m *Manager) List() ([]Probe, error) {
	entries, err := m.entries()
	if err != nil {
		return nil, err
	}
	instances, _ := m.FS.Instances()
	all := Parser{Features: AllFeatures, Force: true} // whatever the kernel lists
	var out []Probe
	seen := map[string]int{}
	elf := NewUserSpace()
	var records map[string]string // the kernel's line → the filter ftctl wrote (read on need)
	for _, e := range entries {
		p := Probe{Group: e.Group, Event: e.Event, Definition: e.Definition, Owner: "other", EnabledIn: []string{}, File: e.File}
		if tracefs.OwnedGroup(e.Group) {
			p.Owner = "ftctl"
		}
		if d, err := all.Parse(e.Definition); err == nil {
			p.Parsed = d
			p.Place = d.Place()
			p.Type = d.KindName()
			if d.Uprobe != nil {
				p.Uprobe = listUprobe(d.Uprobe, elf)
				p.Place = p.Uprobe.Place
			}
			if d.Kind == Eprobe && d.Filter != "" {
				p.Filter, p.FilterFrom = d.Filter, "kernel"
			} else if d.Kind == Eprobe {
				if records == nil {
					records = map[string]string{}
					for _, r := range m.filterRecords() {
						records[r.Definition] = r.Filter
					}
				}
				if f, ok := records[e.Definition]; ok {
					p.Filter, p.FilterFrom = f, "ftctl"
				}
			}
		}
		// A multi-probe event is listed once per probe point: one entry per line, the
		// enablement is the event's.
		if k, ok := seen[p.Name()]; ok {
			p.EnabledIn = out[k].EnabledIn
		} else {
			p.EnabledIn = m.enabledIn(e.Group, e.Event, instances)
			seen[p.Name()] = len(out)
		}
		out = append(out, p)
	}
	return out, nil
}

// The files probes are written to and listed in (kernel/trace/trace_kprobe.c,
// trace_uprobe.c, trace_dynevent.c).
const (
	kprobeEvents  = "kprobe_events"
	uprobeEvents  = "uprobe_events"
	dynamicEvents = "dynamic_events"
)

// EventsFile is where the definition is written: kprobes to kprobe_events as they always have
// been, uprobes to uprobe_events, and the kinds only dynamic_events takes (fprobes,
// tracepoint probes, event probes) there.
func (d *Definition) EventsFile() string {
	switch {
	case d.Uprobe != nil:
		return uprobeEvents
	case d.Kind.dynamicOnly():
		return dynamicEvents
	}
	return kprobeEvents
}

// CheckFile says whether this kernel takes the definition: the file it is written to
// (EventsFile) exists. Otherwise ErrUnavailable, naming the file and the kernel option behind
// it.
func (m *Manager) CheckFile(d *Definition) error {
	file := d.EventsFile()
	if m.FS.Top().Has(file) {
		return nil
	}
	reason := "this kernel has no kprobe events (CONFIG_KPROBE_EVENTS)"
	switch {
	case d.IsUprobe():
		reason = "this kernel has no uprobe events (CONFIG_UPROBE_EVENTS)"
	case file == dynamicEvents:
		reason = "this kernel has no dynamic_events (CONFIG_DYNAMIC_EVENTS, 5.0)"
	}
	return &tracefs.Error{Op: "open", Path: m.FS.Path(file), Class: tracefs.ErrUnavailable, Reason: reason}
}

// CheckKernel says whether this kernel has probes at all: kprobe_events or uprobe_events.
// Otherwise ErrUnavailable, naming kprobe_events.
func (m *Manager) CheckKernel() error {
	top := m.FS.Top()
	if top.Has(kprobeEvents) || top.Has(uprobeEvents) {
		return nil
	}
	return &tracefs.Error{Op: "open", Path: m.FS.Path(kprobeEvents), Class: tracefs.ErrUnavailable,
		Reason: "this kernel has no kprobe or uprobe events (CONFIG_KPROBE_EVENTS, CONFIG_UPROBE_EVENTS)"}
}

// dynamicOnly: the kinds that exist only in dynamic_events.
func (k Kind) dynamicOnly() bool { return k == Fprobe || k == Tprobe || k == Eprobe }

// listed is a probe line with the file that lists it.
type listed struct {
	tracefs.ProbeListEntry
	File string
}

// entries are the probe lines of kprobe_events and uprobe_events, and the other kinds' lines
// of dynamic_events (which lists kprobes and uprobes too, both as p: and r:: they are taken
// from their own files alone, so that no probe is listed twice). A kernel may lack any of
// the files (the development machines' has uprobe_events and no kprobe_events); only when
// none can be read is it an error, the error of the first file.
func (m *Manager) entries() ([]listed, error) {
	top := m.FS.Top()
	var out []listed
	var firstErr error
	read := 0
	for _, file := range []string{kprobeEvents, uprobeEvents, dynamicEvents} {
		if file != kprobeEvents && !top.Has(file) {
			continue
		}
		b, err := top.ReadFile(file)
		if err != nil {
			if firstErr == nil {
				firstErr = err
			}
			continue
		}
		read++
		for _, e := range tracefs.ParseProbeList(string(b)) {
			if file == dynamicEvents && (e.Type == "" || !Kind(e.Type[0]).dynamicOnly()) {
				continue
			}
			out = append(out, listed{e, file})
		}
	}
	if read == 0 {
		return nil, firstErr
	}
	return out, nil
}

func (m *Manager) enabledIn(group, event string, instances []string) []string {
	where := []string{}
	file := "events/" + group + "/" + event + "/enable"
	check := func(in *tracefs.Instance, label string) {
		b, err := in.ReadFile(file)
		if err == nil && strings.TrimSpace(string(b)) != "0" {
			where = append(where, label)
		}
	}
	check(m.FS.Top(), "")
	for _, n := range instances {
		if in, err := m.FS.Instance(n); err == nil {
			check(in, n)
		}
	}
	return where
}

// Resolve finds the probe a user named: GROUP/EVENT (or GROUP.EVENT), or a bare EVENT, which
// means ftctl's group first; a bare name that only another group has must be written with its
// group (ErrAmbiguous), so that nothing of another user's is touched by accident.
func Resolve(list []Probe, name string) (group, event string, err error) {
	if g, e, ok := splitName(name); ok {
		for _, p := range list {
			if p.Group == g && p.Event == e {
				return g, e, nil
			}
		}
		return g, e, fmt.Errorf("%w %s/%s (ftctl probe list shows the probes)", ErrNoProbe, g, e)
	}
	var groups []string
	for _, p := range list {
		if p.Event == name {
			if p.Group == DefaultGroup {
				return DefaultGroup, name, nil
			}
			groups = append(groups, p.Group)
		}
	}
	groups = uniq(groups)
	switch len(groups) {
	case 0:
		return DefaultGroup, name, fmt.Errorf("%w %s/%s (ftctl probe list shows the probes)", ErrNoProbe, DefaultGroup, name)
	default:
		var names []string
		for _, g := range groups {
			names = append(names, g+"/"+name)
		}
		return "", "", fmt.Errorf("%w: %q is not ftctl's; name it as %s", ErrAmbiguous, name, strings.Join(names, " or "))
	}
}

func splitName(name string) (group, event string, ok bool) {
	if g, e, ok := strings.Cut(name, "/"); ok {
		return g, e, true
	}
	if g, e, ok := strings.Cut(name, "."); ok {
		return g, e, true
	}
	return "", "", false
}

func uniq(s []string) []string {
	sort.Strings(s)
	out := s[:0]
	for i, v := range s {
		if i == 0 || v != s[i-1] {
			out = append(out, v)
		}
	}
	return out
}

// AddOptions are what `probe add` does besides defining the probe.
type AddOptions struct {
	Instance *tracefs.Instance // where --filter and --enable apply
	Filter   string            // event filter expression, "" for none
	Enable   bool
	// Append allows adding a probe point to an event that exists (the kernel merges the
	// probes of one event name, 5.7+). Without it such a definition is an ExistsError.
	Append bool
}

// Added is a probe ftctl defined.
type Added struct {
	Group, Event string
	Lines        []string // the kernel's listing of what was added
	Written      string   // what ftctl wrote
	Appended     bool     // the event existed: a probe point was added to it
	// Warning: what went wrong after the probe was added, which leaves it in place (ftctl's
	// record of an event probe's filter could not be written); "" for none.
	Warning string
}

// RejectedError is the kernel refusing a definition, with its own diagnosis under the user's
// text, what already exists (EEXIST), and close symbol names (unknown symbol).
type RejectedError struct {
	Def         *Definition
	Written     string
	Diagnosis   *tracefs.KernelDiagnosis
	Existing    []string // definitions of the probe that already exists (EEXIST)
	Suggestions []string // close symbol names (unknown symbol)
	// NotTraceable: the kernel could not register the probe and ftrace cannot trace the
	// symbol (it is not in available_filter_functions): kprobe events refuse such code
	// unless the kernel is built with CONFIG_KPROBE_EVENTS_ON_NOTRACE (trace_kprobe.c
	// within_notrace_func; seen on both Debian kernels).
	NotTraceable bool
	Err          error // the tracefs error
}

func (e *RejectedError) Error() string {
	msg := "the kernel rejected the probe definition"
	if e.Diagnosis != nil {
		msg += ": " + e.Diagnosis.Message
	} else if e.Err != nil {
		msg += ": " + e.Err.Error()
	}
	return msg
}

func (e *RejectedError) Unwrap() error { return e.Err }

// Add defines a probe: the group defaults to ftctl's; the event, when not named, is named by
// the kernel ("GROUP/" form) and read back. error_log is cleared first so that the kernel's
// diagnosis of this write is the one shown.
//
// An event that exists is refused (ExistsError) unless opt.Append: checked before writing
// when the definition names its event, and after, from what the kernel lists, when the kernel
// named it (the point is then taken back). When the filter or the enabling fails, what was
// added is taken back: the probe point alone (never the whole event, which may hold another
// owner's points), and the event's previous filter when it was an existing event's. A failed
// add changes nothing.
func (m *Manager) Add(ctx context.Context, d *Definition, opt AddOptions) (*Added, error) {
	if d.Kind == Delete {
		return nil, fmt.Errorf("%q removes a probe: use ftctl probe remove", d.Source())
	}
	group := d.Group
	if group == "" {
		group = DefaultGroup
	}
	if err := m.resolveUprobe(d); err != nil {
		return nil, err
	}
	file := d.EventsFile()
	w, err := d.WriteLine(group, d.Event)
	if err != nil {
		return nil, err
	}
	event := d.Event
	if g, e, ok := d.KernelName(); ok { // written as given; the kernel names it itself
		group, event = g, e
	}
	top := m.FS.Top()
	before, err := top.ReadFile(file)
	if err != nil {
		return nil, err
	}
	old := tracefs.ParseProbeList(string(before))
	if event != "" {
		// an event of another kind (listed in another file, or another kind in dynamic_events)
		if f, pts, err := m.pointsIn(group, event); err == nil && len(pts) > 0 && probeKindKey(f, pts[0]) != probeKindKey(file, w.Text) {
			return nil, &ExistsError{Group: group, Event: event, Existing: pts, OtherKind: true}
		}
	}
	if ex := pointsOf(old, group, event); event != "" && len(ex) > 0 && !opt.Append {
		return nil, &ExistsError{Group: group, Event: event, Existing: ex}
	}
	if top.Has("error_log") {
		if err := top.Truncate("error_log"); err != nil {
			return nil, err
		}
	}
	if err := top.Write(file, w.Text+"\n"); err != nil {
		return nil, m.rejected(d, w, before, err)
	}
	a := &Added{Group: group, Event: event, Written: w.Text}
	if m.FS.DryRun != nil {
		if a.Event == "" {
			a.Event = "(named by the kernel)"
		}
		a.Appended = event != "" && len(pointsOf(old, group, event)) > 0
		return a, nil
	}
	after, err := top.ReadFile(file)
	if err != nil {
		return nil, err
	}
	was := map[string]bool{}
	for _, e := range old {
		was[e.Definition] = true
	}
	for _, e := range tracefs.ParseProbeList(string(after)) {
		if e.Group == group && !was[e.Definition] && (event == "" || e.Event == event) {
			a.Event = e.Event
			a.Lines = append(a.Lines, e.Definition)
		}
	}
	if a.Event == "" {
		return a, fmt.Errorf("the kernel took %q but %s lists no new probe of group %s", w.Text, file, group)
	}
	if ex := pointsOf(old, group, a.Event); len(ex) > 0 {
		a.Appended = true
		if !opt.Append {
			// The kernel named the event after one that exists, or it was defined meanwhile.
			exists := &ExistsError{Group: group, Event: a.Event, Existing: ex}
			if rerr := m.takeBack(ctx, a); rerr != nil {
				return a, fmt.Errorf("%w (and taking the probe point back failed: %v)", exists, rerr)
			}
			return nil, exists
		}
	}
	if opt.Filter != "" || opt.Enable {
		if err := m.configure(ctx, a, opt); err != nil {
			return nil, err
		}
	}
	if d.Kind == Eprobe && d.Filter != "" {
		if err := m.recordFilters(a.Lines, d.Filter, ""); err != nil {
			a.Warning = fmt.Sprintf("%v: probe list will not show the filter of %s/%s (the kernel does not list it)", err, a.Group, a.Event)
		}
	}
	return a, nil
}

// pointsOf lists the probe points of one event, as the kernel lists them.
func pointsOf(list []tracefs.ProbeListEntry, group, event string) []string {
	var out []string
	for _, e := range list {
		if e.Group == group && e.Event == event {
			out = append(out, e.Definition)
		}
	}
	return out
}

// configure sets the filter and enables the event; on failure it takes back what Add added
// and, on an event that existed, restores the filter it replaced (the kernel drops an event's
// filter when a new one fails to parse: trace_events_filter.c apply_event_filter).
func (m *Manager) configure(ctx context.Context, a *Added, opt AddOptions) error {
	dir := "events/" + a.Group + "/" + a.Event + "/"
	in := opt.Instance
	if in == nil {
		in = m.FS.Top()
	}
	name := a.Group + "/" + a.Event
	restore := "" // the filter to write back on failure; "" when there is nothing to restore
	fail := func(doing string, err error) error {
		if restore != "" {
			if rerr := in.Write(dir+"filter", restore+"\n"); rerr != nil {
				err = fmt.Errorf("%w (and restoring its filter %q failed: %v)", err, restore, rerr)
			}
		}
		what := "the probe was removed again"
		if a.Appended {
			what = "the probe point was removed again, the event's other points left as they were"
		}
		if rerr := m.takeBack(ctx, a); rerr != nil {
			what = "and taking the probe back failed: " + rerr.Error()
		}
		return fmt.Errorf("%s %s (%s): %w", doing, name, what, err)
	}
	if opt.Filter != "" {
		// The event's fields are known now that the kernel has defined it: the filter is
		// checked against them before it is written, in ftctl's words with a caret.
		f, err := in.EventFormat(a.Group, a.Event)
		if err != nil {
			return fail("reading the format of", err)
		}
		ff := eventfilter.FieldsOf(f)
		ff.Event = "probe " + name
		if _, err := eventfilter.Check(opt.Filter, ff); err != nil {
			return fail("checking the filter of", err)
		}
		if a.Appended {
			b, err := in.ReadFile(dir + "filter")
			if err != nil {
				return fail("reading the filter of", err)
			}
			restore = previousFilter(string(b))
		}
		if err := in.Write(dir+"filter", opt.Filter+"\n"); err != nil {
			return fail("setting the filter of", err)
		}
	}
	if opt.Enable {
		if err := in.Write(dir+"enable", "1"); err != nil {
			return fail("enabling", err)
		}
	}
	return nil
}

// previousFilter is what to write back to a filter file to restore what it showed: "0" (no
// filter) for "none", else the expression.
func previousFilter(shown string) string {
	f := strings.TrimSpace(shown)
	if f == "" || f == "none" {
		return "0"
	}
	return f
}

// rejected explains a failed definition write.
func (m *Manager) rejected(d *Definition, w *Written, before []byte, err error) error {
	var te *tracefs.Error
	if !errors.As(err, &te) || !errors.Is(err, tracefs.ErrRejected) {
		return err
	}
	re := &RejectedError{Def: d, Written: w.Text, Err: err}
	if kd, ok := w.Diagnose(te.KernelLog); ok {
		re.Diagnosis = &kd
	}
	if errors.Is(err, fs.ErrExist) {
		for _, e := range tracefs.ParseProbeList(string(before)) {
			if e.Group == w.group && e.Event == w.event {
				re.Existing = append(re.Existing, e.Definition)
			}
		}
	}
	if re.Diagnosis != nil && re.Diagnosis.Message == "Invalid probed address or symbol" && !d.IsAddr && d.Uprobe == nil {
		re.Suggestions = m.suggest(d.Symbol)
	}
	if re.Diagnosis != nil && re.Diagnosis.Message == "Failed to register probe event" && !d.IsAddr && d.EventsFile() == kprobeEvents {
		if b, err := m.FS.Top().ReadFile("available_filter_functions"); err == nil {
			list := "\n" + string(b) // lines "NAME" or "NAME [MODULE]"
			re.NotTraceable = !strings.Contains(list, "\n"+d.Symbol+"\n") && !strings.Contains(list, "\n"+d.Symbol+" [")
		}
	}
	return re
}

// Enable enables or disables the event in an instance.
func (m *Manager) Enable(in *tracefs.Instance, group, event string, on bool) error {
	v := "0"
	if on {
		v = "1"
	}
	return in.Write("events/"+group+"/"+event+"/enable", v)
}

// Remove deletes a probe: first disabled in every trace array where it is enabled (a probe
// enabled anywhere cannot be deleted: EBUSY), then "-:GROUP/EVENT" (always with its group: a
// bare name deletes that event in every group), which deletes every probe point of the event.
// A probe already gone is done, not an error.
func (m *Manager) Remove(ctx context.Context, group, event string) error {
	return m.remove(ctx, group, event, "")
}

// takeBack removes the probe points Add added, and only those.
func (m *Manager) takeBack(ctx context.Context, a *Added) error {
	var errs []error
	for _, def := range a.Lines {
		errs = append(errs, m.remove(ctx, a.Group, a.Event, def))
	}
	return errors.Join(errs...)
}

// pointDeletion is the command that deletes one probe point, given as kprobe_events lists it:
// "-:GROUP/EVENT PLACE ARGS". The kernel deletes the points whose place and leading arguments
// match the words after the event (trace_kprobe.c trace_kprobe_match_command_head, comparing
// them with the point as kprobe_events prints it: "NAME=FETCHARG[:TYPE]", BTF names as
// "count=count"), where "-:GROUP/EVENT" alone deletes every point of the event.
//
// An fprobe's point is matched on its symbol without "%return" (trace_fprobe.c
// trace_fprobe_match_command_head compares trace_fprobe_symbol()).
func pointDeletion(def string) string {
	head, rest, _ := strings.Cut(strings.TrimSpace(def), " ")
	kind, name, _ := strings.Cut(head, ":")
	words := strings.Fields(rest)
	if strings.HasPrefix(kind, "f") && len(words) > 0 {
		words[0] = strings.TrimSuffix(words[0], "%return")
	}
	return strings.TrimSpace("-:" + name + " " + strings.Join(words, " "))
}

// pointsIn finds the event's probe points in whichever file lists them, and that file, where
// its removal is written (kprobe_events when none lists it: removing what is gone is done).
func (m *Manager) pointsIn(group, event string) (file string, points []string, err error) {
	entries, err := m.entries()
	if err != nil {
		return "", nil, err
	}
	file = kprobeEvents
	for _, e := range entries {
		if e.Group == group && e.Event == event {
			points = append(points, e.Definition)
			file = e.File
		}
	}
	return file, points, nil
}

// remove deletes the event, or only its probe point def (as the kernel lists it) when def is
// not "". The event is disabled everywhere first when the deletion takes its last point (the
// kernel refuses to delete an enabled event, but takes a point from an event that keeps
// others, enabled or not: trace_kprobe.c unregister_trace_kprobe). What is left is read back.
func (m *Manager) remove(ctx context.Context, group, event, def string) error {
	top := m.FS.Top()
	file, points, err := m.pointsIn(group, event)
	if err != nil {
		return err
	}
	if len(points) == 0 || (def != "" && !slices.Contains(points, def)) {
		return nil
	}
	// The point's own deletion only where the event keeps other points (5.7+ kernels); the
	// last point goes with its event, in the form every kernel takes.
	cmd := "-:" + group + "/" + event
	if def != "" && len(points) > 1 {
		cmd = pointDeletion(def)
	}
	if def == "" || len(points) == 1 {
		instances, _ := m.FS.Instances()
		for _, where := range m.enabledIn(group, event, instances) {
			in, err := m.FS.Instance(where)
			if err != nil {
				return err
			}
			if err := m.Enable(in, group, event, false); err != nil {
				return fmt.Errorf("disabling %s/%s in the %s before removing it: %w", group, event, in.Label(), err)
			}
		}
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	err = top.Write(file, cmd+"\n")
	switch {
	case err == nil:
	case errors.Is(err, fs.ErrNotExist): // removed by someone else meanwhile: done
		return nil
	case errors.Is(err, tracefs.ErrBusy):
		return fmt.Errorf("%s/%s is still in use after disabling it in every trace array (perf, BPF, or another event's enable_event trigger holds it): %w", group, event, err)
	default:
		return err
	}
	if m.FS.DryRun == nil && file == dynamicEvents {
		// ftctl's record of event probe filters: best effort (a record is shown only for
		// the very line the kernel lists).
		if def == "" {
			_ = m.recordFilters(nil, "", group+"/"+event)
		} else {
			_ = m.recordFilters([]string{def}, "", "")
		}
	}
	if def == "" || m.FS.DryRun != nil {
		return nil
	}
	_, left, err := m.pointsIn(group, event)
	if err != nil {
		return err
	}
	if slices.Contains(left, def) || len(left) != len(points)-1 {
		return fmt.Errorf("writing %q to %s: %s/%s held %d probe points, now %d (%s)", cmd, file, group, event, len(points), len(left), strings.Join(left, "; "))
	}
	return nil
}

// suggest lists function names close to sym (from available_filter_functions).
func (m *Manager) suggest(sym string) []string {
	b, err := m.FS.Top().ReadFile("available_filter_functions")
	if err != nil {
		return nil
	}
	return closeNames(string(b), sym, 5)
}

// ReadFormat reads events/GROUP/EVENT/format (tracefs.ParseFormat: the one parser of format
// files, which the stream's binary decoder uses too).
func (m *Manager) ReadFormat(group, event string) (*tracefs.Format, error) {
	return m.FS.Top().EventFormat(group, event)
}

// closeNames: function names close to sym, through the filter index's suggestions.
func closeNames(available, sym string, n int) []string {
	ix, err := filters.ParseIndex(available)
	if err != nil {
		return nil
	}
	return ix.Suggest(sym, n)
}

// probeKindKey tells the kinds of probe apart for one event name: the file a definition goes
// to and its kind letter, a return probe counted with its entry kind ("r" with "p"; fexit is
// "f" with its %return).
func probeKindKey(file, line string) string {
	if line == "" {
		return file
	}
	c := line[0]
	if c == 'r' {
		c = 'p'
	}
	return file + ":" + string(c)
}
