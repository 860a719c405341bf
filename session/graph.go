package session

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/ftctl/ftctl/filters"
	"github.com/ftctl/ftctl/stream"
	"github.com/ftctl/ftctl/tracefs"
)

// A function_graph session (`ftctl graph`). What it sets is mostly the kernel's, not an
// instance's: set_graph_function, set_graph_notrace, max_graph_depth and tracing_thresh exist
// at the top level only, and every function_graph tracer of the system (the top level's, any
// instance's) follows them. The session therefore takes them only when no other trace array
// runs function_graph and they hold the kernel's defaults (empty lists, 0), sets them under the
// tracefs lock, and puts the defaults back at the end.
//
// function_graph runs in an instance from Linux 6.11 (seen: 6.1's instances offer "function
// nop"; 6.12's offer function_graph), which the instance's available_tracers says. Elsewhere
// the session runs it at the top level, only when the top level is free: the nop tracer, no
// event enabled, empty function and pid lists, the graph files at their defaults. Every top-level
// file it writes is put back as it was found, the tracer last but one and tracing_on last.
// The session's own instance is made all the same: it is the proof, for `ftctl reset`, that the
// session is alive.

// GraphSpec is what a function_graph session traces.
type GraphSpec struct {
	Roots   []*filters.Pattern // set_graph_function: the functions whose calls are graphed
	Notrace []*filters.Pattern // set_graph_notrace: functions left out, with their callees
	// Depth limits the depth of the graph (max_graph_depth; 0: no limit).
	Depth int
	// Threshold records only the calls that last at least this long (tracing_thresh, in
	// microseconds; 0: every call). The kernel then records their returns alone.
	Threshold time.Duration
}

// GraphRequest is a graph as the front ends take it (ftctl graph's flags, the console's Graph
// prompt): the roots (set_graph_function) and the functions left out with their callees
// (set_graph_notrace) as typed, the depth (max_graph_depth), the threshold (tracing_thresh) and
// a process with its children.
type GraphRequest struct {
	Roots     []string
	Notrace   []string
	Depth     int
	Threshold time.Duration
	PID       int
}

// Spec checks the request without the kernel (the limits, CheckGraphLimits; the patterns, the
// kernel's glob with no :mod: part) and makes the session's Spec: the one set-up of a graph,
// ftctl graph's and the console's. New checks it against the kernel.
func (r GraphRequest) Spec() (Spec, error) {
	if err := CheckGraphLimits(r.Depth, r.Threshold, r.PID); err != nil {
		return Spec{}, err
	}
	g := &GraphSpec{Depth: r.Depth, Threshold: r.Threshold}
	var err error
	if g.Roots, err = compileGraphPatterns(r.Roots); err != nil {
		return Spec{}, err
	}
	if g.Notrace, err = compileGraphPatterns(r.Notrace); err != nil {
		return Spec{}, err
	}
	spec := Spec{Graph: g}
	if r.PID > 0 {
		spec.PIDs = []int{r.PID}
	}
	return spec, nil
}

// compileGraphPatterns compiles the roots (or notrace patterns) of a graph.
func compileGraphPatterns(texts []string) ([]*filters.Pattern, error) {
	var ps []*filters.Pattern
	for _, t := range texts {
		if strings.Contains(t, ":mod:") {
			return nil, fmt.Errorf("%q: set_graph_function and set_graph_notrace take function names and globs (no :mod: part)", t)
		}
		p, err := filters.Compile(t)
		if err != nil {
			return nil, err
		}
		ps = append(ps, p)
	}
	return ps, nil
}

// OpenGraph opens the stream of the graph's trace array (GraphInstance) after Begin:
// function_graph's records decoded from the ring buffer's pages (stream.ReaderBinary), whose
// entry and return times make the call trees (trace_pipe's lines are the kernel's formatting of
// them). ftctl graph and the console's Graph view read it.
func (s *Session) OpenGraph(ctx context.Context, o stream.Options) (*stream.Source, error) {
	o.Reader = stream.ReaderBinary
	return stream.Open(ctx, s.GraphInstance(), o)
}

// The top-level files of function_graph, and their defaults.
const (
	graphFunctionFile = "set_graph_function"
	graphNotraceFile  = "set_graph_notrace"
	graphDepthFile    = "max_graph_depth"
	threshFile        = "tracing_thresh"
)

// graphState is what the session wrote outside its instance, in order: Teardown undoes it
// newest first. The journal (journal.go) holds it on disk too, written before each write, so
// that `ftctl reset` can undo it after a SIGKILL.
type graphState struct {
	top     bool              // function_graph runs at the top level
	journal *journal          // what was written, and what each file held before
	in      *tracefs.Instance // where function_graph runs
	index   *filters.Index    // available_filter_functions, as New checked the patterns
}

// CheckGraphLimits checks a graph's depth, threshold and process as ftctl graph's --depth,
// --threshold and --pid (and the console's Graph prompt) take them, before anything is
// written.
func CheckGraphLimits(depth int, threshold time.Duration, pid int) error {
	switch {
	case depth < 0:
		return errors.New("--depth must not be negative")
	case threshold < 0 || (threshold > 0 && threshold < time.Microsecond):
		return fmt.Errorf("--threshold %v: want 1us or more (tracing_thresh counts microseconds)", threshold)
	case pid < 0:
		return errors.New("--pid takes a process id")
	}
	return nil
}

// checkGraph checks a graph spec against the kernel before anything is written: the files
// exist, every pattern selects a function.
func (s *Session) checkGraph(ix *filters.Index) error {
	g := s.spec.Graph
	top := s.FS.Top()
	if !top.Has(graphFunctionFile) {
		return &tracefs.Error{Op: "open", Path: s.FS.Path(graphFunctionFile), Class: tracefs.ErrUnavailable, Reason: "this kernel has no function_graph filters"}
	}
	if len(g.Roots) == 0 {
		return fmt.Errorf("%w: ftctl graph needs at least one -f ROOT: graphing every function would swamp the system", ErrInvalid)
	}
	for _, p := range append(slices.Clone(g.Roots), g.Notrace...) {
		if strings.Contains(p.Text, ":mod:") {
			return fmt.Errorf("%w: %q: set_graph_function and set_graph_notrace take function names and globs (no :mod: part)", ErrInvalid, p.Text)
		}
	}
	if _, err := ix.ResolveAll(g.Roots); err != nil {
		return err
	}
	if _, err := ix.ResolveAll(g.Notrace); err != nil {
		return err
	}
	if g.Depth < 0 {
		return fmt.Errorf("%w: --depth %d: want a depth of 1 or more", ErrInvalid, g.Depth)
	}
	if g.Depth > 0 && !top.Has(graphDepthFile) {
		return &tracefs.Error{Op: "open", Path: s.FS.Path(graphDepthFile), Class: tracefs.ErrUnavailable, Reason: "this kernel cannot limit the graph's depth"}
	}
	if g.Threshold < 0 || (g.Threshold > 0 && g.Threshold < time.Microsecond) {
		return fmt.Errorf("%w: --threshold %v: want 1us or more", ErrInvalid, g.Threshold)
	}
	if g.Threshold > 0 && !top.Has(threshFile) {
		return &tracefs.Error{Op: "open", Path: s.FS.Path(threshFile), Class: tracefs.ErrUnavailable, Reason: "this kernel has no tracing_thresh"}
	}
	return nil
}

// GraphInstance is the trace array function_graph runs in: the session's instance, or the
// top level where instances cannot run it. Nil before Start.
func (s *Session) GraphInstance() *tracefs.Instance {
	if s.graph == nil {
		return s.Instance
	}
	return s.graph.in
}

// GraphAtTop says whether function_graph runs at the top level (instances cannot run it).
func (s *Session) GraphAtTop() bool { return s.graph != nil && s.graph.top }

// emptyList: what a tracefs function or pid list reads as when it is empty.
func emptyList(b []byte) bool {
	t := strings.TrimSpace(string(b))
	return t == "" || strings.HasPrefix(t, "#### all functions enabled") || strings.HasPrefix(t, "#### no functions disabled") || t == "no pid"
}

// startGraph chooses where function_graph runs, checks that what it needs is free, writes the
// graph's files and starts the tracer. The caller holds the tracefs lock; on failure Start's
// Teardown puts back what was written.
func (s *Session) startGraph() error {
	in := s.Instance
	top := s.FS.Top()
	st := &graphState{in: in, journal: s.topJournal, index: s.graphIndex}
	if st.journal == nil {
		st.journal = newJournal(s.FS, s.ID)
	}
	s.graph = st
	avail, err := in.ReadFile("available_tracers")
	switch {
	case errors.Is(err, tracefs.ErrPlanned):
		s.Notice("dry run: no instance exists to say whether instances run function_graph; the plan assumes they do (where they do not, as on 6.1, the run graphs at the top level, and grows the top level's ring where it holds less than a new ring, put back at the end)")
		avail = []byte("function_graph")
	case err != nil:
		return err
	}
	if !slices.Contains(strings.Fields(string(avail)), "function_graph") {
		// 6.1: instances run "function nop" only
		st.top, st.in = true, top
	}
	if err := s.graphFree(); err != nil {
		return err
	}
	if st.top && s.spec.ClaimTop && len(s.spec.Filters)+len(s.spec.Notrace) > 0 {
		// a declared owner's function lists are its instance's, which the graph does not
		// run in here
		return fieldErr(FieldFunctions, "", "this kernel's instances cannot run function_graph, which runs at the top level: choose the graph's functions with its roots and notrace")
	}
	g := s.spec.Graph
	if st.top {
		on, err := top.ReadFile("tracing_on")
		if err != nil {
			return err
		}
		if err := st.set(top, "tracing_on", "0", strings.TrimSpace(string(on))); err != nil {
			return err
		}
		if err := s.topPIDs(); err != nil {
			return err
		}
		if err := s.sizeTopRing(); err != nil {
			return err
		}
	}
	if err := st.setList(top, graphNotraceFile, g.Notrace); err != nil {
		return err
	}
	if err := st.setList(top, graphFunctionFile, g.Roots); err != nil {
		return err
	}
	if g.Depth > 0 {
		if err := st.set(top, graphDepthFile, strconv.Itoa(g.Depth), "0"); err != nil {
			return err
		}
	}
	if g.Threshold > 0 {
		if err := st.set(top, threshFile, strconv.FormatInt(g.Threshold.Microseconds(), 10), "0"); err != nil {
			return err
		}
	}
	if st.top {
		// the tracer's init empties the top level's ring buffer; nop's, at the end, again
		return st.set(top, "current_tracer", "function_graph", "nop")
	}
	return in.Write("current_tracer", "function_graph")
}

// sizeTopRing gives the top level's ring, where function_graph runs there, the size the
// session's Spec asks or, at least, the size the kernel gives a new ring: the
// session's own instance's. The top level may hold less than a first use expands it to: on
// 6.1 a write to any instance's buffer_size_kb marks every ring expanded without growing the
// top level's, which then keeps its boot size (7 KiB per CPU), and a graph there loses nearly
// every event (seen in the VM suite, 2026-11-28). Journaled: the size is put back at the end.
func (s *Session) sizeTopRing() error {
	top, st := s.FS.Top(), s.graph
	b, err := top.ReadFile("buffer_size_kb")
	if err != nil {
		return err
	}
	old := strings.TrimSpace(string(b))
	have, allocated, ok := tracefs.BufferSize(old)
	if !ok || !allocated {
		return nil // "7 (expanded: N)": the tracer's change expands it as a first use does
	}
	want := s.spec.BufferKB
	if want == 0 {
		ib, err := s.Instance.ReadFile("buffer_size_kb")
		if err != nil {
			return nil // a dry run's planned instance: nothing to compare with
		}
		if want, _, ok = tracefs.BufferSize(string(ib)); !ok || want <= have {
			return nil
		}
		s.Notice("the top level's ring holds %d KiB per CPU, less than a new ring's %d: sized to %d for the graph, put back at the end", have, want, want)
	}
	if want == have {
		return nil
	}
	return st.set(top, "buffer_size_kb", strconv.Itoa(want), old)
}

// graphFree says why function_graph's global files (and, at the top level, the top level's
// own) are not the session's to take, or nil. A trace array running function_graph, a graph
// file off its default, at the top level a tracer, an event or a function or pid list
// someone set: each is another user's, whom the session's settings would change.
func (s *Session) graphFree() error {
	top := s.FS.Top()
	st := s.graph
	if err := topClaimed(s.FS, s.ID); err != nil {
		return err
	}
	class := tracefs.ErrBusy
	if st.top {
		class = tracefs.ErrUnavailable
	}
	busy := func(file, what string) error {
		reason := what
		if st.top {
			reason = "this kernel runs function_graph only at the top level (its instances offer " +
				"\"function nop\"), which is not free: " + what
		}
		return &tracefs.Error{Op: "read", Path: s.FS.Path(file), Class: class, Reason: reason}
	}
	names, err := s.FS.Instances()
	if err != nil {
		return err
	}
	arrays := []*tracefs.Instance{top}
	for _, n := range names {
		if n == s.Instance.Name {
			continue
		}
		if in, err := s.FS.Instance(n); err == nil {
			arrays = append(arrays, in)
		}
	}
	for _, a := range arrays {
		if t, err := a.Tracer(); err == nil && t == "function_graph" {
			return busy(a.Label()+"/current_tracer", a.Label()+" runs function_graph, whose filters and depth are the whole kernel's")
		}
	}
	for _, f := range []string{graphFunctionFile, graphNotraceFile} {
		b, err := top.ReadFile(f)
		if err != nil {
			return err
		}
		if !emptyList(b) {
			return busy(f, fmt.Sprintf("%s lists %s (another user's, for every function_graph of the system)", f, firstLine(b)))
		}
	}
	for _, f := range []string{graphDepthFile, threshFile} {
		if !top.Has(f) {
			continue
		}
		b, err := top.ReadFile(f)
		if err != nil {
			return err
		}
		if v := strings.TrimSpace(string(b)); v != "0" {
			return busy(f, fmt.Sprintf("%s is %s (another user's; ftctl sets it only from 0)", f, v))
		}
	}
	if !st.top {
		return nil
	}
	if t, err := top.Tracer(); err != nil {
		return err
	} else if t != "nop" {
		return busy("current_tracer", "the top level runs the "+t+" tracer")
	}
	for _, f := range []string{"set_event", "set_ftrace_filter", "set_ftrace_notrace", "set_ftrace_pid", "set_ftrace_notrace_pid"} {
		if !top.Has(f) {
			continue
		}
		b, err := top.ReadFile(f)
		if err != nil {
			return err
		}
		if !emptyList(b) {
			return busy(f, fmt.Sprintf("the top level's %s lists %s", f, firstLine(b)))
		}
	}
	return nil
}

func firstLine(b []byte) string {
	l, _, more := strings.Cut(strings.TrimSpace(string(b)), "\n")
	if more {
		l += " ..."
	}
	return strconv.Quote(l)
}

// topPIDs writes, at the top level, what the instance has for the session's processes:
// set_ftrace_pid (--pid, the command) and ftctl's own threads in set_ftrace_notrace_pid, with
// function-fork so that children follow.
func (s *Session) topPIDs() error {
	top := s.FS.Top()
	st := s.graph
	var self []int
	if !s.spec.IncludeSelf && top.Has("set_ftrace_notrace_pid") {
		self = tracefs.OwnThreads()
	}
	if len(s.spec.PIDs) == 0 && len(self) == 0 {
		return nil
	}
	if top.Has("options/function-fork") {
		b, err := top.ReadFile("options/function-fork")
		if err != nil {
			return err
		}
		if err := st.set(top, "options/function-fork", "1", strings.TrimSpace(string(b))); err != nil {
			return err
		}
	}
	pids := func(file string, list []int) error {
		if len(list) == 0 {
			return nil
		}
		var b strings.Builder
		for _, p := range list {
			b.WriteString(strconv.Itoa(p) + "\n")
		}
		return st.writeList(top, file, b.String(), b.String())
	}
	if err := pids("set_ftrace_notrace_pid", self); err != nil {
		return err
	}
	if len(self) > 0 {
		s.SelfExcluded = true
	}
	return pids("set_ftrace_pid", s.spec.PIDs)
}

// set writes value into file, which held old: journaled first.
func (st *graphState) set(in *tracefs.Instance, file, value, old string) error {
	if err := st.journal.record(file, false, old, value); err != nil {
		return err
	}
	return in.Write(file, value)
}

// setList writes the patterns into an empty list, one token each. The journal holds, before
// the write, what the kernel will list after it: a SIGKILL between the write and the
// read-back must not leave reset a journal the list cannot match (a glob, where the kernel
// lists the functions it selected).
func (st *graphState) setList(in *tracefs.Instance, file string, ps []*filters.Pattern) error {
	if len(ps) == 0 {
		return nil
	}
	var b strings.Builder
	for _, p := range ps {
		b.WriteString(p.Text + "\n")
	}
	expect, err := st.listed(in, ps)
	if err != nil {
		return err
	}
	return st.writeList(in, file, b.String(), expect)
}

// listed is GraphListing against the index New checked the patterns with, read again if a
// module came or went since.
func (st *graphState) listed(in *tracefs.Instance, ps []*filters.Pattern) (string, error) {
	if st.index == nil || st.index.Stale() {
		ix, err := filters.LoadIndex(in.FS().Top())
		if err != nil {
			return "", err
		}
		st.index = ix
	}
	return GraphListing(st.index, ps)
}

// GraphListing is what set_graph_function or set_graph_notrace lists once ps are written into
// it empty: a line per function record a pattern selects, as available_filter_functions names
// it ("name", "name [module]"; a static name twice, twice), in the index's order.
// ftrace_graph_set_hash (kernel/trace/ftrace.c) adds each record ftrace_match_record matches,
// skipping the invalid-address ones, and g_show prints each record's "%ps", as t_show does
// for available_filter_functions (seen on 6.1 and 6.12: vmtest TestGraphListingIsTheKernels).
func GraphListing(ix *filters.Index, ps []*filters.Pattern) (string, error) {
	recs, err := ix.ResolveAll(ps)
	if err != nil {
		return "", err
	}
	var b strings.Builder
	for _, i := range recs {
		b.WriteString(ix.Key(i).String() + "\n")
	}
	return b.String(), nil
}

// writeList writes text into an empty list. The journal holds first expect, what the kernel
// will list after the write, then what it read back, which reset compares the list with.
func (st *graphState) writeList(in *tracefs.Instance, file, text, expect string) error {
	if err := st.journal.record(file, true, "", expect); err != nil {
		return err
	}
	if err := in.Write(file, text); err != nil {
		return err
	}
	if afterListWrite != nil {
		afterListWrite(file)
	}
	if in.FS().DryRun != nil {
		return nil
	}
	b, err := in.ReadFile(file)
	if err != nil {
		return err
	}
	return st.journal.record(file, true, "", string(b))
}

// afterListWrite, when tests set it, runs between a list's write and its read-back: where a
// SIGKILL leaves the journal as the write left it.
var afterListWrite func(file string)

// restoreGraph puts back what startGraph wrote, newest first, each file only if it still
// holds what the session wrote (journal.putBack: one another actor changed is left, an
// ErrLeft error says so). A step that succeeded is not done again by a second Teardown. When
// all is back the journal is removed; otherwise it keeps what is left, for a second Teardown
// or `ftctl reset`.
//
// It writes only under the tracefs lock: the caller's (FS.Locked), else its own if it can be
// had at once. Otherwise (another ftctl holds it, and the caller's wait ran out) nothing is
// written: the files and the journal are left for `ftctl reset`, which takes the lock, and an
// error wrapping tracefs.ErrBusy says so. The session's instance goes all the same: its
// removal is what tells reset the session is gone.
func (s *Session) restoreGraph() []error {
	st := s.graph
	if st == nil || len(st.journal.Entries) == 0 {
		return nil
	}
	if !s.FS.Locked() {
		l, err := s.FS.Lock(context.Background(), 0, nil)
		if err != nil {
			var files []string
			for i := len(st.journal.Entries) - 1; i >= 0; i-- {
				files = append(files, st.journal.Entries[i].File)
			}
			return []error{fmt.Errorf("%w: the tracefs lock is held by %s: left %s as the session set them, journaled in %s; 'ftctl reset' puts them back once the lock is free",
				tracefs.ErrBusy, s.FS.LockHolder(), strings.Join(files, ", "), st.journal.path)}
		}
		defer l.Unlock()
	}
	outcomes, err := st.journal.putBack(s.FS, st.in)
	var errs []error
	for _, o := range outcomes {
		if o.State == FileChanged {
			errs = append(errs, fmt.Errorf("%w: left %s: it holds %s, not what the session wrote (%s); it held %s before",
				ErrLeft, o.File, strconv.Quote(o.Holds), strconv.Quote(o.Wrote), strconv.Quote(o.Before)))
		}
	}
	if err != nil {
		errs = append(errs, err)
	}
	return errs
}
