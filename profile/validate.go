package profile

import (
	"errors"
	"fmt"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/ftctl/ftctl/eventfilter"
	"github.com/ftctl/ftctl/filters"
	"github.com/ftctl/ftctl/probes"
)

// Features are the names spec.requires takes.
var Features = []string{"function", "function_graph", "hist-triggers", "kprobes", "kretprobes", "uprobes", "fprobes", "synthetic-events", "btf"}

// Tracers are the tracers a profile may run ("" picks one: see Instance.Tracer).
var Tracers = []string{"function", "function_graph", "nop"}

// MaxBufferKB is the largest spec.instance.bufferKB taken: 4 GiB per CPU.
const MaxBufferKB = 4 << 20

var (
	nameRE   = regexp.MustCompile(`^[a-z0-9]{1,32}$`)
	clockRE  = regexp.MustCompile(`^[a-z0-9_-]+$`)
	optionRE = regexp.MustCompile(`^[A-Za-z0-9_-]+$`)
	identRE  = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)
	// partRE is a system's or an event's name: identifiers, and the few systems with '-' or
	// '.' (xhci-hcd).
	partRE = regexp.MustCompile(`^[A-Za-z0-9_.-]+$`)
)

// Validate checks the profile offline, without a kernel: the values Load decoded, each
// against its own rule and against each other (an event of the profile's probes names one
// of them, a filter needs a function tracer...). It returns every error found, joined, each
// an *Error on a line of its own with its path and, for a profile Load returned, its file,
// line and column. What depends on the running kernel (the functions a glob matches, the
// fields a filter names, a feature's presence) is left to the plan.
func (p *Profile) Validate() error {
	v := &validator{src: sourceOf(p)}
	v.check(p)
	// In the file's order, which is the order of the checks where the file is unknown.
	slices.SortStableFunc(v.errs, func(a, b error) int {
		ea, eb := a.(*Error), b.(*Error)
		if ea.Line == 0 || eb.Line == 0 {
			return 0
		}
		if ea.Line != eb.Line {
			return ea.Line - eb.Line
		}
		return ea.Column - eb.Column
	})
	return errors.Join(v.errs...)
}

type validator struct {
	src  *source
	errs []error // of *Error
}

// fail records an error at path's value.
func (v *validator) fail(path, format string, args ...any) {
	v.failAt(path, -1, fmt.Sprintf(format, args...))
}

// failAt records an error at byte off inside path's value (-1: at its start), pointing at
// that column when the value is written verbatim on one line.
func (v *validator) failAt(path string, off int, reason string) {
	e := &Error{File: v.src.file, Path: path, Reason: reason}
	if at, ok := v.src.at[path]; ok {
		e.Line, e.Column = at.line, at.col
		if off > 0 && at.verbatim {
			e.Column += off
		}
	}
	v.errs = append(v.errs, e)
}

// failIn records err, an error inside the string value s at path: a probe's, a filter's or
// a pattern's, placed at its caret when it has one.
func (v *validator) failIn(path, s string, err error) {
	off := -1
	var se *probes.SyntaxError
	var fe *eventfilter.Error
	switch {
	case errors.As(err, &se):
		off = se.Pos
	case errors.As(err, &fe):
		off = fe.Pos
	}
	reason := err.Error()
	if off < 0 || off > len(s) {
		v.failAt(path, -1, reason)
		return
	}
	if v.src.at[path].verbatim { // the column says where: "(at byte N)" would say it twice
		reason = strings.TrimSuffix(reason, fmt.Sprintf(" (at byte %d)", off+1))
	}
	v.failAt(path, utf8.RuneCountInString(s[:off]), reason) // columns count characters
}

func (v *validator) check(p *Profile) {
	if p.APIVersion != APIVersion {
		v.fail("apiVersion", "%q is not a version this ftctl reads; it reads %s", p.APIVersion, APIVersion)
	}
	if p.Kind != Kind {
		v.fail("kind", "%q is not a kind this ftctl reads; it reads %s", p.Kind, Kind)
	}
	if !nameRE.MatchString(p.Metadata.Name) {
		v.fail("metadata.name", "%q: a profile's name is 1 to 32 lower-case letters and digits (its instance is ftctl-owned-NAME)", p.Metadata.Name)
	}
	s := &p.Spec
	for i, f := range s.Requires {
		path := fmt.Sprintf("spec.requires[%d]", i)
		switch {
		case !slices.Contains(Features, f):
			v.fail(path, "%q is not a feature ftctl knows%s; it knows %s", f, didYouMean(f, Features), strings.Join(Features, ", "))
		case slices.Index(s.Requires, f) < i:
			v.fail(path, "%q is already required at spec.requires[%d]", f, slices.Index(s.Requires, f))
		}
	}
	v.instance(s)
	v.functions(s)
	v.graph(s)
	probeNames := v.probes(s)
	synth := v.synthetic(p)
	v.events(s, probeNames, synth)
	v.triggers(s, probeNames, synth)
	v.flight(s)
	for i, u := range s.Uses {
		path := fmt.Sprintf("spec.uses[%d]", i)
		if strings.Contains(u, GroupVar) {
			v.fail(path, "%q: the profile's own events are not listed in uses", u)
			continue
		}
		v.eventName(path, u, false, probeNames, synth)
		if j := slices.Index(s.Uses, u); j < i {
			v.fail(path, "%q is already listed at spec.uses[%d]", u, j)
		}
	}
}

func (v *validator) instance(s *Spec) {
	in := &s.Instance
	if in.BufferKB < 0 || in.BufferKB > MaxBufferKB {
		v.fail("spec.instance.bufferKB", "%d: the buffer is 1 to %d KiB per CPU (0 or none: the kernel's size)", in.BufferKB, MaxBufferKB)
	}
	if in.Clock != "" && !clockRE.MatchString(in.Clock) {
		v.fail("spec.instance.clock", "%q: a clock is a plain word (local, global, mono, boot...)", in.Clock)
	}
	if in.Tracer != "" && !slices.Contains(Tracers, in.Tracer) {
		v.fail("spec.instance.tracer", "%q: a profile's tracer is function, function_graph or nop%s", in.Tracer, didYouMean(in.Tracer, Tracers))
	}
	for _, name := range sortedKeys(in.Options) {
		if !optionRE.MatchString(name) {
			v.fail(mapPath("spec.instance.options", name), "%q: an option's name is a plain word (letters, digits, _ and -), as under options/", name)
		}
	}
}

func (v *validator) functions(s *Spec) {
	for _, list := range []struct {
		name     string
		patterns []string
	}{{"filter", s.Functions.Filter}, {"notrace", s.Functions.Notrace}} {
		for i, pat := range list.patterns {
			path := fmt.Sprintf("spec.functions.%s[%d]", list.name, i)
			if strings.Contains(pat, GroupVar) {
				v.failAt(path, strings.Index(pat, GroupVar), groupPlaces)
				continue
			}
			if strings.HasPrefix(pat, "!") {
				v.fail(path, "%q: a leading '!' removes functions; write %q under spec.functions.notrace", pat, pat[1:])
				continue
			}
			if _, err := filters.Compile(pat); err != nil {
				v.fail(path, "%s", strings.TrimPrefix(err.Error(), filters.ErrPattern.Error()+" "))
			}
		}
	}
	switch tracer := s.Instance.Tracer; {
	case tracer == "function_graph" && len(s.Functions.Filter) == 0 && len(s.Graph.Roots) == 0:
		v.fail("spec.instance.tracer", "function_graph with no spec.functions.filter and no spec.graph.roots would trace every function; name the functions to trace")
	case tracer == "function" && len(s.Functions.Filter) == 0:
		v.fail("spec.instance.tracer", "%s with no spec.functions.filter would trace every function; name the functions to trace", tracer)
	case tracer == "nop" && len(s.Functions.Filter) > 0:
		v.fail("spec.functions.filter", "given with tracer nop, which traces no function; set spec.instance.tracer to function or function_graph, or leave it out")
	}
}

// graph checks spec.graph and spec.topLevel: globs as set_graph_function takes them, a depth,
// roots for whatever else is given, the function_graph tracer, and a claim only with
// something to claim. Whether the kernel keeps the graph's files at the top level (and so
// needs the claim) is the plan's to say.
func (v *validator) graph(s *Spec) {
	g := s.Graph
	for _, list := range []struct {
		name     string
		patterns []string
	}{{"roots", g.Roots}, {"notrace", g.Notrace}} {
		for i, pat := range list.patterns {
			path := fmt.Sprintf("spec.graph.%s[%d]", list.name, i)
			switch {
			case strings.Contains(pat, GroupVar):
				v.failAt(path, strings.Index(pat, GroupVar), groupPlaces)
			case strings.HasPrefix(pat, "!"):
				v.fail(path, "%q: a leading '!' removes functions; write %q under spec.graph.notrace", pat, pat[1:])
			case strings.Contains(pat, ":mod:"):
				v.failAt(path, strings.Index(pat, ":mod:"), "set_graph_function and set_graph_notrace take function names and globs (no :mod: part)")
			default:
				if _, err := filters.Compile(pat); err != nil {
					v.fail(path, "%s", strings.TrimPrefix(err.Error(), filters.ErrPattern.Error()+" "))
				}
			}
		}
	}
	if g.Depth < 0 {
		v.fail("spec.graph.depth", "%d: a depth is 1 or more (0 or none: no limit)", g.Depth)
	}
	if g.set() && len(g.Roots) == 0 {
		v.fail("spec.graph", "no roots: name the functions whose calls are graphed (spec.graph.roots); graphing every function would swamp the system")
	}
	if g.set() && s.Instance.Tracer != "" && s.Instance.Tracer != "function_graph" {
		v.fail("spec.instance.tracer", "%q: spec.graph is function_graph's; set the tracer to function_graph, or leave it out", s.Instance.Tracer)
	}
	if s.TopLevel.Claim && !g.set() {
		v.fail("spec.topLevel.claim", "the profile sets nothing at the top level (only spec.graph does): leave the claim out")
	}
}

// probes checks the probe definitions and returns their event names.
func (v *validator) probes(s *Spec) []string {
	var names []string
	first := map[string]int{}
	parser := probes.Parser{Features: probes.AllFeatures}
	for i, def := range s.Probes {
		path := fmt.Sprintf("spec.probes[%d]", i)
		switch {
		case strings.TrimSpace(def) == "":
			v.fail(path, "empty: write a definition such as \"p:myopen do_sys_openat2\"")
			continue
		case strings.ContainsAny(def, "\n\r"):
			v.fail(path, "a definition is one line")
			continue
		case strings.Contains(def, GroupVar):
			v.failAt(path, strings.Index(def, GroupVar), GroupVar+" is not taken in a probe definition: the profile's probes are always in its group")
			continue
		}
		// The grammar only: without a Kernel, the parser checks no symbol, BTF or ELF file.
		d, err := parser.Parse(def)
		if err != nil {
			v.failIn(path, def, err)
			continue
		}
		switch {
		case d.Kind == probes.Delete:
			v.fail(path, "%q removes a probe: a profile's probes are removed with it", def)
			continue
		case d.Event == "":
			v.fail(path, "%q has no name: a profile's probe is named (%c:NAME ...), for its events and triggers", def, d.Kind)
			continue
		}
		if j, dup := first[d.Event]; dup {
			v.fail(path, "a second probe named %q (the first is spec.probes[%d])", d.Event, j)
			continue
		}
		first[d.Event] = i
		names = append(names, d.Event)
	}
	return names
}

// synthetic checks the synthetic events and returns their names.
func (v *validator) synthetic(p *Profile) []string {
	var names []string
	first := map[string]int{}
	// The kernel's limit on an event's name (MAX_EVENT_NAME_LEN, NUL included), for
	// ftctl_owned_NAME_WHAT.
	room := probes.MaxEventNameLen - 1 - len("ftctl_owned_"+p.Metadata.Name+"_")
	for i, sy := range p.Spec.Synthetic {
		path := fmt.Sprintf("spec.synthetic[%d]", i)
		switch {
		case strings.Contains(sy.Name, GroupVar):
			v.fail(path+".name", "%q: the name is the event's own part; it becomes %s_NAME", sy.Name, GroupVar)
		case !identRE.MatchString(sy.Name):
			v.fail(path+".name", "%q: a synthetic event's name is a C identifier (letters, digits and _)", sy.Name)
		case len(sy.Name) > room:
			v.fail(path+".name", "%q is too long: ftctl_owned_%s_%s is over the kernel's %d characters", sy.Name, p.Metadata.Name, sy.Name, probes.MaxEventNameLen-1)
		default:
			if j, dup := first[sy.Name]; dup {
				v.fail(path+".name", "a second synthetic event named %q (the first is spec.synthetic[%d])", sy.Name, j)
			} else {
				first[sy.Name] = i
				names = append(names, sy.Name)
			}
		}
		switch {
		case strings.TrimSpace(sy.Fields) == "":
			v.fail(path+".fields", "empty: a synthetic event has fields, such as \"u64 lat; pid_t pid\"")
		case strings.ContainsAny(sy.Fields, "\n\r"):
			v.fail(path+".fields", "the fields are one line, separated by ';'")
		case strings.Contains(sy.Fields, GroupVar):
			v.failAt(path+".fields", strings.Index(sy.Fields, GroupVar), groupPlaces)
		}
	}
	return names
}

// groupPlaces says where ${group} is taken.
const groupPlaces = GroupVar + " is taken only at the start of an event's name (" + GroupVar + ":EVENT, synthetic:" + GroupVar + "_NAME) and in trigger texts"

// eventName checks an event's name (SYSTEM:EVENT, or SYSTEM when system is true) and the
// profile's own events it names. It reports at most one error.
func (v *validator) eventName(path, name string, system bool, probeNames, synth []string) {
	if name == "" {
		v.fail(path, "empty: write SYSTEM:EVENT (sched:sched_switch)")
		return
	}
	sys, ev, hasEvent := strings.Cut(name, ":")
	switch {
	case sys == GroupVar:
		if !hasEvent || ev == "" {
			v.fail(path, "%q: name one of the profile's probes, %s:NAME", name, GroupVar)
		} else if !slices.Contains(probeNames, ev) {
			v.fail(path, "%q: the profile has no probe named %q%s", name, ev, didYouMean(ev, probeNames))
		}
		return
	case sys == "synthetic" && strings.HasPrefix(ev, GroupVar):
		own, ok := strings.CutPrefix(strings.TrimPrefix(ev, GroupVar), "_")
		switch {
		case !ok:
			v.fail(path, "%q: the profile's synthetic events are synthetic:%s_NAME", name, GroupVar)
		case !slices.Contains(synth, own):
			v.fail(path, "%q: the profile has no synthetic event named %q%s", name, own, didYouMean(own, synth))
		}
		return
	case strings.Contains(name, GroupVar):
		v.failAt(path, strings.Index(name, GroupVar), groupPlaces)
		return
	case strings.ContainsAny(name, "*?[]"):
		v.fail(path, "%q: an event is named in full; globs are not taken", name)
		return
	case strings.Contains(name, "/"):
		v.fail(path, "%q: an event is SYSTEM:EVENT, with ':'", name)
		return
	case !hasEvent && !system:
		v.fail(path, "%q: a trigger is on one event, SYSTEM:EVENT", name)
		return
	}
	for _, part := range []string{sys, ev} {
		if hasEvent && part == "" {
			v.fail(path, "%q: an event is SYSTEM:EVENT, neither empty", name)
			return
		}
		if part != "" && !partRE.MatchString(part) {
			v.fail(path, "%q: %q is not a system's or event's name (letters, digits, _, - and .)", name, part)
			return
		}
	}
}

func (v *validator) events(s *Spec, probeNames, synth []string) {
	first := map[string]int{}
	for i, e := range s.Events {
		path := fmt.Sprintf("spec.events[%d]", i)
		v.eventName(path+".name", e.Name, true, probeNames, synth)
		if j, dup := first[e.Name]; dup && e.Name != "" {
			v.fail(path+".name", "%q is already enabled at spec.events[%d]", e.Name, j)
		} else {
			first[e.Name] = i
		}
		if e.Filter == "" {
			continue
		}
		switch {
		case strings.ContainsAny(e.Filter, "\n\r"):
			v.fail(path+".filter", "a filter is one line")
		case strings.Contains(e.Filter, GroupVar):
			v.failAt(path+".filter", strings.Index(e.Filter, GroupVar), groupPlaces)
		default:
			if _, err := eventfilter.Parse(e.Filter); err != nil {
				v.failIn(path+".filter", e.Filter, err)
			}
		}
	}
}

func (v *validator) triggers(s *Spec, probeNames, synth []string) {
	for i, t := range s.Triggers {
		path := fmt.Sprintf("spec.triggers[%d]", i)
		v.eventName(path+".event", t.Event, false, probeNames, synth)
		switch {
		case strings.TrimSpace(t.Trigger) == "":
			v.fail(path+".trigger", "empty: write the trigger as the event's trigger file takes it (hist:keys=pid, traceoff...)")
		case strings.ContainsAny(t.Trigger, "\n\r"):
			v.fail(path+".trigger", "a trigger is one line")
		}
	}
}

// didYouMean is " (did you mean X?)" for the name closest to s, "" when none is close.
func didYouMean(s string, names []string) string {
	if c := closest(s, names); c != "" {
		return fmt.Sprintf(" (did you mean %q?)", c)
	}
	return ""
}

// closest is the name in names nearest s: the same but for case, two neighbours swapped
// ("nmae"), or within one edit (two from 6 characters on). "" when none is.
func closest(s string, names []string) string {
	for _, n := range names {
		if strings.EqualFold(n, s) || swapped(n, s) {
			return n
		}
	}
	maxd := 1
	if len(s) >= 6 {
		maxd = 2
	}
	best, bestd := "", maxd+1
	for _, n := range names {
		if d := filters.EditDistance(s, n, maxd); d < bestd {
			best, bestd = n, d
		}
	}
	return best
}

// swapped says whether a and b differ by two neighbouring bytes swapped.
func swapped(a, b string) bool {
	if len(a) != len(b) {
		return false
	}
	i := 0
	for i < len(a) && a[i] == b[i] {
		i++
	}
	return i+1 < len(a) && a[i] == b[i+1] && a[i+1] == b[i] && a[i+2:] == b[i+2:]
}

// Summary counts what the profile sets up, for people: "3 function patterns, 4 events, 2
// probes, 1 synthetic event, 0 triggers", and ", 2 flight triggers" with a flight section.
func (p *Profile) Summary() string {
	s := &p.Spec
	var parts []string
	if s.Graph.set() {
		parts = append(parts, plural(len(s.Graph.Roots)+len(s.Graph.Notrace), "graph pattern")+" (the top level's)")
	}
	parts = append(parts,
		plural(len(s.Functions.Filter)+len(s.Functions.Notrace), "function pattern"),
		plural(len(s.Events), "event"),
		plural(len(s.Probes), "probe"),
		plural(len(s.Synthetic), "synthetic event"),
		plural(len(s.Triggers), "trigger"),
	)
	if s.Flight != nil {
		parts = append(parts, plural(len(s.Flight.Triggers), "flight trigger"))
	}
	return strings.Join(parts, ", ")
}

func plural(n int, what string) string {
	if n == 1 {
		return "1 " + what
	}
	return fmt.Sprintf("%d %ss", n, what)
}

// DefaultFlightRate and DefaultFlightKeep are spec.flight's rate and keep when left out.
const (
	DefaultFlightRate = 10 * time.Second
	DefaultFlightKeep = 10
)

// MaxFlightMB is the largest spec.flight.maxMB taken: 1 TiB.
const MaxFlightMB = 1 << 20

func (v *validator) flight(s *Spec) {
	f := s.Flight
	if f == nil {
		return
	}
	switch {
	case f.Dir == "":
		v.fail("spec.flight.dir", "required: the directory the dumps go into, an absolute path")
	case !filepath.IsAbs(f.Dir):
		v.fail("spec.flight.dir", "%q: an absolute path (an agent's working directory is not the file's)", f.Dir)
	case strings.ContainsAny(f.Dir, "\x00\n\r"):
		v.fail("spec.flight.dir", "%q: a path of one line", f.Dir)
	}
	if f.Rate != "" {
		if d, err := time.ParseDuration(f.Rate); err != nil || d < 0 {
			v.fail("spec.flight.rate", "%q: a duration of 0 or more, such as 30s or 5m", f.Rate)
		}
	}
	if f.Keep != nil && *f.Keep < 0 {
		v.fail("spec.flight.keep", "%d: 0 (no limit by count) or more", *f.Keep)
	}
	if f.MaxMB < 0 || f.MaxMB > MaxFlightMB {
		v.fail("spec.flight.maxMB", "%d: 0 (no limit by size) to %d MiB", f.MaxMB, MaxFlightMB)
	}
	seen := map[FlightTrigger]int{}
	for i, t := range f.Triggers {
		path := fmt.Sprintf("spec.flight.triggers[%d]", i)
		kinds := 0
		for _, set := range []bool{t.Event != "", t.Latency != "", t.Warn} {
			if set {
				kinds++
			}
		}
		if kinds != 1 {
			v.fail(path, "a trigger is one of event (with an optional filter), latency or warn: %d given", kinds)
			continue
		}
		key := t
		key.Rate = "" // one condition with two rate limits is still one trigger
		if j, dup := seen[key]; dup {
			v.fail(path, "the same trigger as spec.flight.triggers[%d]", j)
			continue
		}
		seen[key] = i
		if t.Rate != "" {
			if d, err := time.ParseDuration(t.Rate); err != nil || d < 0 {
				v.fail(path+".rate", "%q: a duration of 0 or more, such as 30s or 5m", t.Rate)
			}
		}
		switch {
		case t.Event != "":
			v.flightEvent(path, t)
		case t.Latency != "":
			if err := CheckLatency(t.Latency); err != nil {
				v.fail(path+".latency", "%v", err)
			}
		}
		if t.Filter != "" && t.Event == "" {
			v.fail(path+".filter", "a filter is an event's: give event too")
		}
	}
}

// flightEvent checks an event trigger: one event of the kernel's, its filter's syntax.
func (v *validator) flightEvent(path string, t FlightTrigger) {
	sys, ev, ok := strings.Cut(t.Event, ":")
	switch {
	case strings.Contains(t.Event, GroupVar):
		v.fail(path+".event", "%q: a trigger's event is the kernel's (SYSTEM:EVENT), recorded in the arming process's instance, not the profile's", t.Event)
	case !ok || !partRE.MatchString(sys) || !partRE.MatchString(ev):
		v.fail(path+".event", "%q: one event, SYSTEM:EVENT (sched:sched_process_exit), no glob", t.Event)
	}
	switch {
	case t.Filter == "":
	case strings.ContainsAny(t.Filter, "\n\r"):
		v.fail(path+".filter", "a filter is one line")
	default:
		if _, err := eventfilter.Parse(t.Filter); err != nil {
			v.failIn(path+".filter", t.Filter, err)
		}
	}
}

// latencyRE is a latency trigger's form, FUNC>DURATION or FUNC>max (the schema's pattern).
var latencyRE = regexp.MustCompile(`^\s*[A-Za-z_][A-Za-z0-9_]*\s*>\s*(max|(([0-9]+\.?[0-9]*|\.[0-9]+)(ns|us|µs|μs|ms|s|m|h))+)\s*$`)

// CheckLatency checks a latency trigger's text: FUNC>DURATION, a function's name and a
// duration of 1us or more, or FUNC>max (each new maximum of FUNC's durations).
func CheckLatency(s string) error {
	_, d, _ := strings.Cut(s, ">")
	d = strings.TrimSpace(d)
	th, err := time.ParseDuration(d)
	if !latencyRE.MatchString(s) || d != "max" && (err != nil || th < time.Microsecond) {
		return fmt.Errorf("%q: want FUNC>DURATION, a function and a duration of 1us or more (vfs_read>10ms), or FUNC>max (a new maximum)", s)
	}
	return nil
}

// RateLimit is the section's rate limit (DefaultFlightRate when left out); the section is
// valid.
func (f *Flight) RateLimit() time.Duration {
	if f.Rate == "" {
		return DefaultFlightRate
	}
	d, _ := time.ParseDuration(f.Rate)
	return d
}

// KeepCount is the section's keep (DefaultFlightKeep when left out).
func (f *Flight) KeepCount() int {
	if f.Keep == nil {
		return DefaultFlightKeep
	}
	return *f.Keep
}
