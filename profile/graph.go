package profile

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/ftctl/ftctl/filters"
	"github.com/ftctl/ftctl/session"
	"github.com/ftctl/ftctl/tracefs"
)

// A profile's graph (spec.graph) lives in files the kernel keeps at the top level alone
// (set_graph_function, set_graph_notrace, max_graph_depth: no instance has them, seen on 6.1
// and 6.12), which every function_graph of the system follows. A profile writes them only
// under an explicit claim (spec.topLevel.claim), which its owner's declaration records
// (session.Owner.TopLevel) with what each file held, before the first write: delete puts
// exactly that back. Where the instances cannot run function_graph (6.1's offer "function
// nop"), the graph runs at the top level, which the owner then holds whole (its tracer and
// tracing_on too), and the profile's function lists, the instance's, would not apply to it.

// Graph files, as the top level names them.
const (
	graphRootsFile   = "set_graph_function"
	graphNotraceFile = "set_graph_notrace"
	graphDepthFile   = "max_graph_depth"
)

// TopClaim is what a plan claims of the top level.
type TopClaim struct {
	// Files are the top-level files the profile writes.
	Files []string `json:"files"`
	// Whole: function_graph runs at the top level (the instances cannot run it), whose
	// tracer and tracing_on the profile then holds too.
	Whole bool `json:"whole"`
	// Known: an instance said whether instances run function_graph; false before the
	// profile's instance or any other exists (the apply tells, and says so in its claim).
	Known bool `json:"known"`
	// Held: the profile's owner holds the claim now (it was applied with it).
	Held bool `json:"held"`
}

// Text says the claim in a line, as plan shows it.
func (c *TopClaim) Text() string {
	s := "takes the top level: " + strings.Join(c.Files, ", ")
	switch {
	case c.Whole:
		s += "; and the whole top level (current_tracer function_graph, tracing_on): this kernel's instances cannot run function_graph"
	case !c.Known:
		s += "; and the whole top level where the kernel's instances cannot run function_graph (known once an instance exists)"
	}
	return s
}

// errorAt is an error at path of the profile's file (FILE:LINE:COLUMN when it was loaded
// from one).
func (p *Profile) errorAt(path, reason string) error {
	src := sourceOf(p)
	e := &Error{File: src.file, Path: path, Reason: reason}
	if at, ok := src.at[path]; ok {
		e.Line, e.Column = at.line, at.col
	}
	return e
}

// instancesRunGraph says whether the kernel's instances run function_graph, from an
// instance's available_tracers (the profile's own, else any): known false when none exists.
func instancesRunGraph(fs *tracefs.FS, own string) (run, known bool) {
	names, _ := fs.Instances()
	if slices.Contains(names, own) {
		names = append([]string{own}, slices.DeleteFunc(names, func(n string) bool { return n == own })...)
	}
	for _, n := range names {
		in, err := fs.Existing(n)
		if err != nil {
			continue
		}
		if avail, _, err := in.Tracers(); err == nil {
			return slices.Contains(avail, "function_graph"), true
		}
	}
	return false, false
}

// claimTop works out what the profile's graph takes of the top level, following the files:
// each graph file the instance lacks and the top level has is the top level's. A profile that
// needs the top level and does not claim it is refused at spec.graph; one whose graph runs
// at the top level refuses function lists (its instance's, which the graph would not follow).
func (pl *Plan) claimTop(fs *tracefs.FS) error {
	p := pl.profile
	g := p.Spec.Graph
	if !g.set() {
		return nil
	}
	top := fs.Top()
	own, _ := fs.Existing(pl.Instance)
	c := &TopClaim{}
	for _, f := range []struct {
		file string
		used bool
	}{{graphRootsFile, len(g.Roots) > 0}, {graphNotraceFile, len(g.Notrace) > 0}, {graphDepthFile, g.Depth > 0}} {
		switch {
		case !f.used:
		case !top.Has(f.file):
			return &tracefs.Error{Op: "open", Path: fs.Path(f.file), Class: tracefs.ErrUnavailable, Reason: "this kernel has no " + f.file + " (spec.graph)"}
		case own == nil || !own.Has(f.file):
			c.Files = append(c.Files, f.file)
		}
	}
	runs, known := instancesRunGraph(fs, pl.Instance)
	c.Known, c.Whole = known, known && !runs
	if len(c.Files) == 0 && !c.Whole {
		return nil
	}
	if !p.Spec.TopLevel.Claim {
		return p.errorAt("spec.graph", "the kernel keeps "+strings.Join(c.Files, ", ")+" at the top level alone (every function_graph of the system follows them), "+
			"which a profile takes only where it says so: add spec.topLevel.claim: true")
	}
	if fn := p.Spec.Functions; c.Whole && len(fn.Filter)+len(fn.Notrace) > 0 {
		return p.errorAt("spec.functions", "this kernel's instances cannot run function_graph, which runs at the top level, whose function lists the profile does not set: "+
			"choose the graph's functions with spec.graph.roots and spec.graph.notrace")
	}
	if c.Whole && !p.tracingOn() {
		// the set-up turns the top level's tracing on (session.Begin) with its graph
		return p.errorAt("spec.instance.tracingOn", "this kernel's instances cannot run function_graph, which runs at the top level: a profile's graph there records (leave tracingOn out)")
	}
	if err := session.TopClaimedBy(fs, p.Metadata.Name); err != nil {
		return err
	}
	if pl.owner != nil && pl.owner.TopLevel != nil {
		c.Held = true
		c.Whole, c.Known = c.Whole || pl.owner.TopLevel.Whole, true
	}
	pl.TopLevel = c
	return nil
}

// graphPatterns are the profile's graph globs, compiled.
func (p *Profile) graphPatterns() (roots, notrace []*filters.Pattern, err error) {
	if roots, err = patterns("spec.graph.roots", p.Spec.Graph.Roots); err != nil {
		return nil, nil, err
	}
	notrace, err = patterns("spec.graph.notrace", p.Spec.Graph.Notrace)
	return roots, notrace, err
}

// compareGraph: the top level's graph files (and, held whole, its tracer and tracing_on)
// against the profile. A difference is set up again (Recreate): the owner's teardown puts
// the top level back as it was before the profile, and the set-up takes it again, journaled.
// Against the declaration's resolution, the lists are compared by digest; any difference is
// resolved afresh from the index, as the function lists are.
func (pl *Plan) compareGraph(fs *tracefs.FS, spec session.Spec) error {
	c := pl.TopLevel
	if c == nil || !c.Held {
		return nil
	}
	top := fs.Top()
	ap := &filters.Applier{In: top, Top: top}
	lists := []struct {
		file, object, sum string
		want              *filters.Multiset
	}{{graphNotraceFile, "graph notrace", "", &pl.want.graphNotrace}, {graphRootsFile, "graph roots", "", &pl.want.roots}}
	if pl.cached != nil {
		lists[0].sum, lists[1].sum = pl.cached.GraphNotraceSum, pl.cached.RootsSum
	}
	for i, l := range lists {
		if !slices.Contains(c.Files, l.file) {
			continue // a list the profile does not set is not its
		}
		have, _, err := ap.Current(l.file)
		if err != nil {
			return err
		}
		if pl.cached != nil {
			if multisetSum(have) == l.sum {
				continue
			}
			// resolved afresh: what the plan shows is the index's
			if err := pl.resolve(fs, spec); err != nil {
				return err
			}
			return pl.compareGraph(fs, spec)
		}
		want := *lists[i].want
		if want == nil {
			want = filters.Multiset{}
		}
		if have.Equal(want) {
			continue
		}
		ch := Change{Object: "top level: " + l.object, File: l.file, Op: "~", Recreate: true,
			Have: fmt.Sprintf("%d function(s)", have.Total()), Want: fmt.Sprintf("%d function(s)", want.Total())}
		ch.Added, ch.Removed = multisetDiff(have, want)
		pl.Changes = append(pl.Changes, ch)
	}
	values := []struct{ object, file, want string }{{"top level: graph depth", graphDepthFile, strconv.Itoa(pl.profile.Spec.Graph.Depth)}}
	if c.Whole {
		values = append(values, struct{ object, file, want string }{"top level: tracer", "current_tracer", "function_graph"},
			struct{ object, file, want string }{"top level: tracing", "tracing_on", map[bool]string{true: "1", false: "0"}[pl.profile.tracingOn()]})
	}
	for _, v := range values {
		if !top.Has(v.file) || v.file == graphDepthFile && !slices.Contains(c.Files, graphDepthFile) {
			continue // a depth the profile does not set is not its
		}
		have, err := readTrim(top, v.file)
		if err != nil {
			return err
		}
		if have != v.want {
			pl.Changes = append(pl.Changes, Change{Object: v.object, File: v.file, Op: "~", Have: have, Want: v.want, Recreate: true})
		}
	}
	return nil
}

// multisetDiff lists the functions want has more of than have (added) and fewer (removed),
// sorted.
func multisetDiff(have, want filters.Multiset) (added, removed []string) { return want.Delta(have) }
