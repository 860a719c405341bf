package profile

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/ftctl/ftctl/filters"
	"github.com/ftctl/ftctl/session"
	"github.com/ftctl/ftctl/tracefs"
)

// Change is one difference between a profile and the kernel, per object: what `ftctl plan`
// and `ftctl diff` show, and what apply changes.
type Change struct {
	// Object is what differs: "instance", "option func_stack_trace", "function filter",
	// "event sched:sched_switch", "probe myopen", "trigger on sched:sched_switch"...
	Object string `json:"object"`
	// File is the control file, relative to the instance (or to tracefs for definitions).
	File string `json:"file"`
	// Op: "+" (the profile adds it), "-" (the profile removes it), "~" (it changes).
	Op   string `json:"op"`
	Have string `json:"have,omitempty"`
	Want string `json:"want,omitempty"`
	// Added and Removed are the functions a function list gains and loses.
	Added   []string `json:"added,omitempty"`
	Removed []string `json:"removed,omitempty"`
	// Recreate: apply makes this change by setting the profile's owner up again (its
	// definitions: tracer's set-up, probes, synthetic events, triggers), losing what its
	// ring held; the other changes are written in place.
	Recreate bool `json:"recreate,omitempty"`

	write, undo func(*applyCtx) error
}

// PatternMatch is a glob of the profile and what it selects in the running kernel.
type PatternMatch struct {
	File      string `json:"file"`
	Pattern   string `json:"pattern"`
	Functions int    `json:"functions"`
	// Exact: the pattern names one function (no glob), which the text output counts
	// rather than lists.
	Exact bool `json:"exact"`
}

// Plan is what apply would change: the profile against the kernel.
type Plan struct {
	Profile  string `json:"profile"`
	Instance string `json:"instance"`
	// Declared: the profile's owner exists (it was applied); false, apply creates it.
	Declared bool           `json:"declared"`
	Changes  []Change       `json:"changes"`
	Patterns []PatternMatch `json:"patterns"`
	// GlobsFrom says what the globs were resolved against: "index" (available_filter_functions,
	// read now) or "declaration" (the resolution the last apply kept, which the kernel's
	// function records and lists still match: see resolution); "" with no globs.
	GlobsFrom string `json:"globsFrom,omitempty"`
	// Uses are the dynamic events of others the profile uses, as spec.uses names them.
	Uses []Use `json:"uses"`
	// TopLevel is what the profile claims of the top level (spec.topLevel.claim, for
	// spec.graph); absent, nothing.
	TopLevel *TopClaim `json:"topLevel,omitempty"`

	owner   *session.Owner
	want    state
	profile *Profile
	// cached: the declaration's resolution of the globs, which vouches for them (wanted);
	// fresh: the globs' resolution against the index now (want holds it), to keep in the
	// declaration.
	cached *resolution
	fresh  *resolution
}

// InSync says whether the kernel holds the profile.
func (pl *Plan) InSync() bool { return pl.Declared && len(pl.Changes) == 0 }

// Recreates says whether apply sets the owner up again.
func (pl *Plan) Recreates() bool {
	return slices.ContainsFunc(pl.Changes, func(c Change) bool { return c.Recreate })
}

// state is what a profile's instance holds, as far as the profile manages it.
type state struct {
	filter, notrace filters.Multiset
	// roots and graphNotrace: what set_graph_function and set_graph_notrace list (the top
	// level's), resolved from the index
	roots, graphNotrace filters.Multiset
	events              []string          // SYSTEM:EVENT enabled, sorted
	eventFilters        map[string]string // per enabled event ("" none)
}

// resolution is what a plan resolved the profile's function globs to, kept in the owner's
// declaration (session.Owner.Derived) with the fingerprint of the function records it was
// resolved against (tracefs.FunctionsFingerprint). A later plan whose globs are the same,
// under the same fingerprint, selects the same functions, and reads the index (more than
// half a no-op apply's time under emulation, BENCHMARKS.md) only when the kernel's lists
// differ from what was kept: what it shows as a difference is always resolved afresh.
type resolution struct {
	Fingerprint string   `json:"fingerprint"`
	Filter      []string `json:"filter,omitempty"`
	Notrace     []string `json:"notrace,omitempty"`
	// FilterSum and NotraceSum are digests of the lists the globs select (multisetSum).
	FilterSum  string         `json:"filterSum"`
	NotraceSum string         `json:"notraceSum"`
	Patterns   []PatternMatch `json:"patterns"`
	// Roots and GraphNotrace are spec.graph's globs, RootsSum and GraphNotraceSum digests of
	// what they select (the top level's set_graph_function and set_graph_notrace).
	Roots           []string `json:"roots,omitempty"`
	GraphNotrace    []string `json:"graphNotrace,omitempty"`
	RootsSum        string   `json:"rootsSum,omitempty"`
	GraphNotraceSum string   `json:"graphNotraceSum,omitempty"`
}

// multisetSum is a digest of a function list: its keys and counts, sorted.
func multisetSum(m filters.Multiset) string {
	lines := make([]string, 0, len(m))
	for k, n := range m {
		if n > 0 {
			lines = append(lines, fmt.Sprintf("%s\x00%s\x00%d\n", k.Name, k.Module, n))
		}
	}
	slices.Sort(lines)
	h := sha256.New()
	for _, l := range lines {
		h.Write([]byte(l))
	}
	return hex.EncodeToString(h.Sum(nil))
}

// kept is the resolution the declaration holds, when it still vouches for the profile's
// globs: the same globs, the same fingerprint now.
func (pl *Plan) kept(fs *tracefs.FS) *resolution {
	if pl.owner == nil || len(pl.owner.Derived) == 0 {
		return nil
	}
	var r resolution
	if json.Unmarshal(pl.owner.Derived, &r) != nil || r.Fingerprint == "" {
		return nil
	}
	fn, g := pl.profile.Spec.Functions, pl.profile.Spec.Graph
	if !slices.Equal(r.Filter, fn.Filter) || !slices.Equal(r.Notrace, fn.Notrace) || !slices.Equal(r.Roots, g.Roots) || !slices.Equal(r.GraphNotrace, g.Notrace) {
		return nil
	}
	if fp, ok := fs.FunctionsFingerprint(); !ok || fp != r.Fingerprint {
		return nil
	}
	return &r
}

// wanted resolves the profile's globs and event systems against the running kernel. The
// globs' resolution kept in the declaration is used instead of the index while it vouches
// for them (kept); compareFunctions resolves afresh when the kernel's lists differ from it.
func (pl *Plan) wanted(fs *tracefs.FS, spec session.Spec) error {
	p := pl.profile
	if len(spec.Filters)+len(spec.Notrace)+len(p.Spec.Graph.Roots)+len(p.Spec.Graph.Notrace) > 0 {
		if pl.cached = pl.kept(fs); pl.cached != nil {
			pl.Patterns, pl.GlobsFrom = append(pl.Patterns, pl.cached.Patterns...), "declaration"
		} else if err := pl.resolve(fs, spec); err != nil {
			return err
		}
	}
	pl.want.eventFilters = map[string]string{}
	add := func(e string) {
		if !slices.Contains(pl.want.events, e) {
			pl.want.events = append(pl.want.events, e)
			pl.want.eventFilters[e] = ""
		}
	}
	for _, e := range spec.Events {
		sys, ev, one := strings.Cut(e, ":")
		if one {
			add(sys + ":" + ev)
			continue
		}
		names, err := fs.Events(sys)
		if err != nil {
			return err
		}
		for _, n := range names {
			add(sys + ":" + n)
		}
	}
	for _, d := range p.Spec.Probes {
		if name := probeName(d); name != "" && p.enables(name) {
			add(p.Group() + ":" + name)
		}
	}
	for e, f := range spec.EventFilters {
		if _, ok := pl.want.eventFilters[e]; ok {
			pl.want.eventFilters[e] = f
			continue
		}
		// a filter on a whole system: each of its events
		if names, err := fs.Events(e); err == nil {
			for _, n := range names {
				pl.want.eventFilters[e+":"+n] = f
			}
		}
	}
	slices.Sort(pl.want.events)
	return nil
}

// resolve reads the index and resolves the profile's globs, each of which must select a
// function; the resolution is kept for the declaration (pl.fresh) when the fingerprint
// vouched for the index before and after it was read.
func (pl *Plan) resolve(fs *tracefs.FS, spec session.Spec) error {
	fp, ok := fs.FunctionsFingerprint()
	ix, err := filters.LoadIndex(fs.Top())
	if err != nil {
		return err
	}
	pl.Patterns, pl.cached = pl.Patterns[:0], nil
	var patterns []PatternMatch
	one := func(file string, ps []*filters.Pattern) (filters.Multiset, error) {
		var recs []int
		for _, pt := range ps {
			r := ix.Resolve(pt)
			if len(r) == 0 {
				return nil, &filters.NoMatchError{Pattern: pt.Text, Suggestions: ix.Suggest(pt.Literal(), 3)}
			}
			_, exact := pt.ExactName()
			patterns = append(patterns, PatternMatch{file, pt.Text, len(r), exact})
			recs = append(recs, r...)
		}
		slices.Sort(recs)
		return ix.SetOf(slices.Compact(recs)), nil
	}
	if pl.want.notrace, err = one(filters.NotraceFile, spec.Notrace); err != nil {
		return err
	}
	if pl.want.filter, err = one(filters.FilterFile, spec.Filters); err != nil {
		return err
	}
	roots, gnotrace, err := pl.profile.graphPatterns()
	if err != nil {
		return err
	}
	if pl.want.graphNotrace, err = one(graphNotraceFile, gnotrace); err != nil {
		return err
	}
	if pl.want.roots, err = one(graphRootsFile, roots); err != nil {
		return err
	}
	pl.Patterns, pl.GlobsFrom = append(pl.Patterns, patterns...), "index"
	if after, ok2 := fs.FunctionsFingerprint(); ok && ok2 && after == fp {
		fn, g := pl.profile.Spec.Functions, pl.profile.Spec.Graph
		pl.fresh = &resolution{Fingerprint: fp, Filter: fn.Filter, Notrace: fn.Notrace, Patterns: patterns,
			FilterSum: multisetSum(pl.want.filter), NotraceSum: multisetSum(pl.want.notrace),
			Roots: g.Roots, GraphNotrace: g.Notrace, RootsSum: multisetSum(pl.want.roots), GraphNotraceSum: multisetSum(pl.want.graphNotrace)}
	}
	return nil
}

// derived is what the declaration keeps of this plan: the fresh resolution, else the one it
// kept and still vouches for, else nothing.
func (pl *Plan) derived() []byte {
	r := pl.fresh
	if r == nil {
		r = pl.cached
	}
	if r == nil {
		return nil
	}
	b, err := json.Marshal(r)
	if err != nil {
		return nil
	}
	return b
}

// probeName is the event name a probe definition gives: "p:NAME SYM" and "p:GROUP/NAME SYM"
// name NAME; "" when it names none.
func probeName(def string) string {
	head, _, _ := strings.Cut(strings.TrimSpace(def), " ")
	_, name, ok := strings.Cut(head, ":")
	if !ok {
		return ""
	}
	if _, n, ok := strings.Cut(name, "/"); ok {
		name = n
	}
	return name
}

// Compute plans the profile against the kernel: nothing is written. The caller holds the
// tracefs lock when it goes on to apply the plan.
func Compute(fs *tracefs.FS, p *Profile) (*Plan, error) {
	if err := p.CheckRequires(fs.DetectFeatures()); err != nil {
		return nil, err
	}
	spec, err := p.SessionSpec()
	if err != nil {
		return nil, err
	}
	pl := &Plan{Profile: p.Metadata.Name, Instance: p.InstanceName(), Changes: []Change{}, Patterns: []PatternMatch{}, Uses: []Use{}, profile: p}
	if err := pl.checkUses(fs); err != nil {
		return nil, err
	}
	o, err := session.ReadOwner(fs, p.Metadata.Name)
	switch {
	case errors.Is(err, session.ErrNoOwner):
	case err != nil:
		return nil, err
	default:
		pl.Declared, pl.owner = true, o
	}
	if err := pl.claimTop(fs); err != nil {
		return nil, err
	}
	if err := pl.wanted(fs, spec); err != nil {
		return nil, err
	}
	if !pl.Declared {
		pl.Changes = append(pl.Changes, Change{Object: "owner " + p.Metadata.Name, File: "instances/" + pl.Instance, Op: "+",
			Want: pl.summary(), Recreate: true})
		return pl, nil
	}
	in, err := fs.Existing(pl.Instance)
	if err != nil {
		return nil, err
	}
	if !in.Has("tracing_on") {
		pl.Changes = append(pl.Changes, Change{Object: "instance", File: "instances/" + pl.Instance, Op: "+", Have: "missing", Want: pl.Instance, Recreate: true})
		return pl, nil
	}
	if err := pl.compareDefinitions(fs, in); err != nil {
		return nil, err
	}
	if pl.Recreates() {
		// set up again whole: the rest follows the profile (and what the kernel lacks, a
		// probe's directory, cannot be compared)
		return pl, nil
	}
	if err := pl.compareSettings(in); err != nil {
		return nil, err
	}
	if err := pl.compareFunctions(in, spec); err != nil {
		return nil, err
	}
	if err := pl.compareGraph(fs, spec); err != nil {
		return nil, err
	}
	if pl.Recreates() {
		return pl, nil
	}
	if err := pl.compareEvents(in); err != nil {
		return nil, err
	}
	pl.compareTail(in)
	return pl, nil
}

// instanceTracer is the tracer the profile's instance runs: nop where its graph runs at the
// top level (compareGraph compares the top level's).
func (pl *Plan) instanceTracer() string {
	if pl.TopLevel != nil && pl.TopLevel.Whole {
		return "nop"
	}
	return pl.profile.tracer()
}

// summary says in a line what a new owner would hold.
func (pl *Plan) summary() string {
	sp := pl.profile.Spec
	return fmt.Sprintf("instance %s (tracer %s), %d function pattern(s), %d event(s), %d probe(s), %d synthetic event(s), %d trigger(s)",
		pl.Instance, pl.profile.tracer(), len(sp.Functions.Filter), len(pl.want.events), len(sp.Probes), len(sp.Synthetic), len(sp.Triggers))
}

// declared is the profile the owner was last applied from (nil when it cannot be read).
func (pl *Plan) declared() *Profile {
	if pl.owner == nil || len(pl.owner.Source) == 0 {
		return nil
	}
	var old Profile
	if json.Unmarshal(pl.owner.Source, &old) != nil {
		return nil
	}
	return &old
}

// compareDefinitions: the probes, synthetic events and triggers as declared against the
// profile's, and whether the kernel still holds them.
func (pl *Plan) compareDefinitions(fs *tracefs.FS, in *tracefs.Instance) error {
	p, old := pl.profile, pl.declared()
	recreate := func(object, file, have, want string) {
		pl.Changes = append(pl.Changes, Change{Object: object, File: file, Op: "~", Have: have, Want: want, Recreate: true})
	}
	if old == nil {
		recreate("owner "+p.Metadata.Name, "declaration", "unreadable declaration", "the profile")
		return nil
	}
	if pl.owner.State != "applied" {
		// an apply was killed midway: what it left is set up again from the start
		recreate("owner "+p.Metadata.Name, "declaration", pl.owner.State+" (interrupted)", "applied")
		return nil
	}
	if !slices.Equal(old.Spec.Probes, p.Spec.Probes) {
		recreate("probes", "kprobe_events", strings.Join(old.Spec.Probes, "; "), strings.Join(p.Spec.Probes, "; "))
	}
	if !slices.Equal(old.Spec.Synthetic, p.Spec.Synthetic) {
		recreate("synthetic events", "synthetic_events", fmt.Sprint(old.Spec.Synthetic), fmt.Sprint(p.Spec.Synthetic))
	}
	if !slices.Equal(old.Spec.Triggers, p.Spec.Triggers) {
		recreate("triggers", "trigger", fmt.Sprint(old.Spec.Triggers), fmt.Sprint(p.Spec.Triggers))
	}
	if !slices.Equal(old.Spec.Graph.Roots, p.Spec.Graph.Roots) || !slices.Equal(old.Spec.Graph.Notrace, p.Spec.Graph.Notrace) ||
		old.Spec.Graph.Depth != p.Spec.Graph.Depth || old.Spec.TopLevel != p.Spec.TopLevel {
		recreate("graph", "set_graph_function", fmt.Sprint(old.Spec.Graph, old.Spec.TopLevel), fmt.Sprint(p.Spec.Graph, p.Spec.TopLevel))
	}
	if old.tracer() != p.tracer() {
		recreate("tracer", "current_tracer", old.tracer(), p.tracer())
	}
	// what the kernel holds of them
	have, _ := fs.Events(p.Group())
	for _, d := range p.Spec.Probes {
		if n := probeName(d); n != "" && !slices.Contains(have, n) {
			recreate("probe "+n, "events/"+p.Group()+"/"+n, "missing", d)
		}
	}
	for _, n := range have {
		if !slices.ContainsFunc(p.Spec.Probes, func(d string) bool { return probeName(d) == n }) {
			recreate("probe "+n, "events/"+p.Group()+"/"+n, "defined", "not in the profile")
		}
	}
	id := session.OwnerID(p.Metadata.Name)
	for _, s := range p.Spec.Synthetic {
		if !fs.Top().HasEvent("synthetic", id.Synthetic(s.Name)) {
			recreate("synthetic event "+id.Synthetic(s.Name), "synthetic_events", "missing", s.Fields)
		}
	}
	counts := map[string]int{}
	for _, t := range p.Spec.Triggers {
		counts[p.expand(t.Event)]++
	}
	for _, e := range sortedKeys(counts) {
		sys, ev, _ := strings.Cut(e, ":")
		b, err := in.ReadFile("events/" + sys + "/" + ev + "/trigger")
		if err != nil && !errors.Is(err, tracefs.ErrPlanned) {
			recreate("triggers on "+e, "events/"+sys+"/"+ev+"/trigger", "unreadable", strconv.Itoa(counts[e]))
			continue
		}
		if n := len(triggerLines(string(b))); n != counts[e] {
			recreate("triggers on "+e, "events/"+sys+"/"+ev+"/trigger", strconv.Itoa(n)+" trigger(s)", strconv.Itoa(counts[e])+" trigger(s)")
		}
	}
	return nil
}

// triggerLines are the triggers a trigger file lists (its comment lines left out).
func triggerLines(text string) []string {
	var out []string
	for _, l := range strings.Split(text, "\n") {
		if l = strings.TrimSpace(l); l != "" && !strings.HasPrefix(l, "#") {
			out = append(out, l)
		}
	}
	return out
}

// inPlace adds a change apply writes in place: the file gets want, and back have on undo.
func (pl *Plan) inPlace(object, file, have, want string) {
	w := func(v string) func(*applyCtx) error {
		return func(a *applyCtx) error { return a.in.Write(file, v) }
	}
	pl.Changes = append(pl.Changes, Change{Object: object, File: file, Op: "~", Have: have, Want: want, write: w(want), undo: w(have)})
}

func readTrim(in *tracefs.Instance, file string) (string, error) {
	b, err := in.ReadFile(file)
	return strings.TrimSpace(string(b)), err
}

// compareSettings: buffer size, clock and options, where the profile sets them.
func (pl *Plan) compareSettings(in *tracefs.Instance) error {
	inst := pl.profile.Spec.Instance
	if inst.BufferKB > 0 {
		if kb, _, ok := in.BufferSizeKB(); !ok || !bufferHolds(kb, inst.BufferKB) {
			pl.inPlace("buffer size", "buffer_size_kb", strconv.Itoa(kb), strconv.Itoa(inst.BufferKB))
		}
	}
	if inst.Clock != "" {
		cur, err := in.TraceClock()
		if err != nil {
			return err
		}
		if cur != inst.Clock {
			pl.inPlace("clock", "trace_clock", cur, inst.Clock)
		}
	}
	for _, name := range sortedKeys(inst.Options) {
		want := map[bool]string{true: "1", false: "0"}[inst.Options[name]]
		have, err := readTrim(in, "options/"+name)
		if err != nil {
			return err
		}
		if have != want {
			pl.inPlace("option "+name, "options/"+name, have, want)
			pl.Changes[len(pl.Changes)-1].write = optionWrite(name, have, want)
		}
	}
	return nil
}

// optionWrite sets an option of the instance, which held have, and refuses it, both put
// back, where the kernel keeps it for every trace array at once: the top level's changed too
// (the function tracer's flags, seen on 6.1 and 6.12), and a profile does not own the top
// level.
func optionWrite(name, have, want string) func(*applyCtx) error {
	file := "options/" + name
	return func(a *applyCtx) error {
		top := a.fs.Top()
		before, berr := readTrim(top, file)
		if err := a.in.Write(file, want); err != nil {
			return err
		}
		if a.fs.DryRun != nil || berr != nil || before == want {
			return nil
		}
		if after, err := readTrim(top, file); err != nil || after != want {
			return err
		}
		errs := []error{session.SharedOptionError(a.in, name)}
		if err := top.Write(file, before); err != nil {
			errs = append(errs, fmt.Errorf("putting the top level's %s back: %w", file, err))
		}
		if err := a.in.Write(file, have); err != nil {
			errs = append(errs, fmt.Errorf("putting %s back: %w", file, err))
		}
		return errors.Join(errs...)
	}
}

// bufferHolds says whether a ring of have KiB per CPU is what writing want gave: the kernel
// rounds up to whole pages of 4080 bytes of data each (kernel/trace/ring_buffer.c
// BUF_PAGE_SIZE), and lists the result ("513" after writing 512, seen on 6.12).
func bufferHolds(have, want int) bool {
	pages := (want*1024 + 4079) / 4080
	return have == want || have == pages*4080/1024
}

// compareFunctions: the function lists, as multisets of records. Against the declaration's
// resolution (cached) a list is in sync when its digest is the one kept; any difference is
// resolved afresh from the index and compared again, so what a plan shows is never a stale
// resolution's.
func (pl *Plan) compareFunctions(in *tracefs.Instance, spec session.Spec) error {
	if pl.cached != nil {
		same, err := pl.sameAsKept(in)
		if err != nil || same {
			return err
		}
		if err := pl.resolve(in.FS(), spec); err != nil {
			return err
		}
	}
	for _, l := range []struct {
		file, object string
		want         filters.Multiset
		patterns     []*filters.Pattern
	}{{filters.NotraceFile, "function notrace", pl.want.notrace, spec.Notrace}, {filters.FilterFile, "function filter", pl.want.filter, spec.Filters}} {
		if !in.Has(l.file) {
			if len(l.patterns) > 0 {
				return &tracefs.Error{Op: "open", Path: in.Path(l.file), Class: tracefs.ErrUnavailable, Reason: "this kernel cannot filter functions"}
			}
			continue
		}
		ap := &filters.Applier{In: in, Top: in.FS().Top(), ByName: !in.FS().IndexWrites()}
		have, _, err := ap.Current(l.file)
		if err != nil {
			return err
		}
		want := l.want
		if want == nil {
			want = filters.Multiset{}
		}
		if have.Equal(want) {
			continue
		}
		c := Change{Object: l.object, File: l.file, Op: "~", Have: fmt.Sprintf("%d function(s)", have.Total()), Want: fmt.Sprintf("%d function(s)", want.Total())}
		c.Added, c.Removed = multisetDiff(have, want)
		file, patterns := l.file, l.patterns
		c.write = func(a *applyCtx) error {
			ch := filters.Change{File: file, Op: filters.OpSet, Patterns: patterns}
			if len(patterns) == 0 {
				ch.Op = filters.OpClear
			}
			_, err := a.applier().Apply(a.ctx, []filters.Change{ch})
			return err
		}
		c.undo = func(a *applyCtx) error { return a.applier().Restore(a.ctx, file, have) }
		pl.Changes = append(pl.Changes, c)
	}
	return nil
}

// sameAsKept says whether the instance's function lists are what the declaration's
// resolution selects.
func (pl *Plan) sameAsKept(in *tracefs.Instance) (bool, error) {
	ap := &filters.Applier{In: in, Top: in.FS().Top(), ByName: !in.FS().IndexWrites()}
	for _, l := range []struct{ file, sum string }{{filters.NotraceFile, pl.cached.NotraceSum}, {filters.FilterFile, pl.cached.FilterSum}} {
		if !in.Has(l.file) {
			return false, nil
		}
		have, _, err := ap.Current(l.file)
		if err != nil {
			return false, err
		}
		if multisetSum(have) != l.sum {
			return false, nil
		}
	}
	return true, nil
}

// compareEvents: the events enabled and their filters.
func (pl *Plan) compareEvents(in *tracefs.Instance) error {
	listed, err := in.EnabledEvents()
	if err != nil {
		return err
	}
	var have []string
	for _, e := range listed {
		// set_event lists an event a trigger enabled "softly" too: its enable file says
		// which (0* soft-disabled)
		v, err := readTrim(in, "events/"+e.System+"/"+e.Event+"/enable")
		if err == nil && strings.HasPrefix(v, "1") {
			have = append(have, e.System+":"+e.Event)
		}
	}
	for _, e := range pl.want.events {
		sys, ev, _ := strings.Cut(e, ":")
		file := "events/" + sys + "/" + ev
		cur, err := readTrim(in, file+"/filter")
		if err != nil {
			return err
		}
		if cur == "none" {
			cur = ""
		}
		if want := pl.want.eventFilters[e]; cur != want {
			pl.inPlace("filter of event "+e, file+"/filter", cur, want)
			c := &pl.Changes[len(pl.Changes)-1]
			c.write, c.undo = filterWrite(file, want), filterWrite(file, cur)
		}
		if !slices.Contains(have, e) {
			pl.inPlace("event "+e, file+"/enable", "0", "1")
			pl.Changes[len(pl.Changes)-1].Op = "+"
		}
	}
	for _, e := range have {
		if !slices.Contains(pl.want.events, e) {
			sys, ev, _ := strings.Cut(e, ":")
			pl.inPlace("event "+e, "events/"+sys+"/"+ev+"/enable", "1", "0")
			pl.Changes[len(pl.Changes)-1].Op = "-"
		}
	}
	return nil
}

// filterWrite sets an event's filter ("" clears it: the kernel's "0").
func filterWrite(dir, expr string) func(*applyCtx) error {
	return func(a *applyCtx) error {
		if expr == "" {
			return a.in.Write(dir+"/filter", "0")
		}
		return a.in.Write(dir+"/filter", expr+"\n")
	}
}

// compareTail: the tracer (when the declaration agrees and only the kernel differs) and
// tracing_on, written last.
func (pl *Plan) compareTail(in *tracefs.Instance) {
	if cur, err := in.Tracer(); err == nil && cur != pl.instanceTracer() && !pl.Recreates() {
		pl.inPlace("tracer", "current_tracer", cur, pl.instanceTracer())
	}
	want := map[bool]string{true: "1", false: "0"}[pl.profile.tracingOn()]
	if cur, err := readTrim(in, "tracing_on"); err == nil && cur != want {
		pl.inPlace("tracing", "tracing_on", cur, want)
	}
}
