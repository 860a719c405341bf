package profile

import (
	"fmt"
	"slices"
	"strings"

	"github.com/ftctl/ftctl/filters"
	"github.com/ftctl/ftctl/session"
	"github.com/ftctl/ftctl/tracefs"
)

// Group is the probe group the profile owns (what ${group} stands for): ftctl_owned_NAME.
func (p *Profile) Group() string { return session.OwnerID(p.Metadata.Name).Group() }

// InstanceName is the instance the profile owns: ftctl-owned-NAME.
func (p *Profile) InstanceName() string { return session.OwnerID(p.Metadata.Name).Instance() }

// expand puts the profile's group in for ${group}.
func (p *Profile) expand(s string) string { return strings.ReplaceAll(s, GroupVar, p.Group()) }

// tracer is the tracer the profile runs: as written, else function when it filters
// functions, else nop.
func (p *Profile) tracer() string {
	switch {
	case p.Spec.Instance.Tracer != "":
		return p.Spec.Instance.Tracer
	case len(p.Spec.Graph.Roots) > 0:
		return "function_graph"
	case len(p.Spec.Functions.Filter) > 0:
		return "function"
	}
	return "nop"
}

// tracingOn is whether the profile's instance records (true unless it says not).
func (p *Profile) tracingOn() bool {
	return p.Spec.Instance.TracingOn == nil || *p.Spec.Instance.TracingOn
}

// patterns compiles a list of globs.
func patterns(field string, texts []string) ([]*filters.Pattern, error) {
	var out []*filters.Pattern
	for i, t := range texts {
		pt, err := filters.Compile(t)
		if err != nil {
			return nil, fmt.Errorf("%w: %s[%d]: %v", ErrInvalid, field, i, err)
		}
		out = append(out, pt)
	}
	return out, nil
}

// SessionSpec is the set-up the profile declares, as session's engine takes it (its group's
// names put in for ${group}). The kernel checks it when it is declared (session.Declare).
func (p *Profile) SessionSpec() (session.Spec, error) {
	sp := p.Spec
	spec := session.Spec{BufferKB: sp.Instance.BufferKB, Clock: sp.Instance.Clock, Tracer: p.tracer(), Probes: sp.Probes}
	var err error
	if spec.Filters, err = patterns("spec.functions.filter", sp.Functions.Filter); err != nil {
		return spec, err
	}
	if spec.Notrace, err = patterns("spec.functions.notrace", sp.Functions.Notrace); err != nil {
		return spec, err
	}
	if sp.Graph.set() {
		g := &session.GraphSpec{Depth: sp.Graph.Depth}
		if g.Roots, err = patterns("spec.graph.roots", sp.Graph.Roots); err != nil {
			return spec, err
		}
		if g.Notrace, err = patterns("spec.graph.notrace", sp.Graph.Notrace); err != nil {
			return spec, err
		}
		spec.Graph, spec.ClaimTop = g, sp.TopLevel.Claim
	}
	for _, name := range sortedKeys(sp.Instance.Options) {
		spec.Options = append(spec.Options, name+map[bool]string{true: "=1", false: "=0"}[sp.Instance.Options[name]])
	}
	for _, d := range sp.Probes {
		if n := probeName(d); n != "" && !p.enables(n) {
			spec.DefineOnly = append(spec.DefineOnly, n)
		}
	}
	for _, e := range sp.Events {
		name := p.expand(e.Name)
		if !strings.HasPrefix(name, p.Group()+":") {
			spec.Events = append(spec.Events, name)
		}
		if e.Filter != "" {
			if spec.EventFilters == nil {
				spec.EventFilters = map[string]string{}
			}
			spec.EventFilters[name] = e.Filter
		}
	}
	id := session.OwnerID(p.Metadata.Name)
	for _, s := range sp.Synthetic {
		spec.Dynamic = append(spec.Dynamic, session.Dynamic{Kind: 's', Event: id.Synthetic(s.Name), Place: s.Fields})
	}
	for _, t := range sp.Triggers {
		sys, ev, ok := strings.Cut(p.expand(t.Event), ":")
		if !ok {
			return spec, fmt.Errorf("%w: spec.triggers: event %q: want SYSTEM:EVENT", ErrInvalid, t.Event)
		}
		spec.Triggers = append(spec.Triggers, session.Trigger{System: sys, Event: ev, Text: p.expand(t.Trigger)})
	}
	return spec, nil
}

// enables says whether the profile enables its probe name (lists ${group}:NAME in Events).
func (p *Profile) enables(name string) bool {
	for _, e := range p.Spec.Events {
		if p.expand(e.Name) == p.Group()+":"+name {
			return true
		}
	}
	return false
}

// CheckRequires refuses a profile whose Requires names a feature the kernel lacks, naming it.
func (p *Profile) CheckRequires(ft tracefs.Features) error {
	have := map[string]bool{
		"function": ft.FunctionTracer, "function_graph": ft.FunctionGraph, "hist-triggers": ft.HistTriggers,
		"kprobes": ft.KprobeEvents, "kretprobes": ft.KprobeEvents, "uprobes": ft.UprobeEvents,
		"fprobes": ft.Probe.Fprobe, "synthetic-events": ft.SyntheticEvents, "btf": ft.Probe.BTFArgs,
	}
	var missing []string
	for _, r := range p.Spec.Requires {
		if !have[r] {
			missing = append(missing, r)
		}
	}
	if len(missing) > 0 {
		return &tracefs.Error{Op: "check", Path: "profile " + p.Metadata.Name, Class: tracefs.ErrUnavailable,
			Reason: "this kernel lacks what the profile requires: " + strings.Join(missing, ", ")}
	}
	return nil
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}
