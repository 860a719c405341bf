package cmd

import (
	"fmt"
	"iter"
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"github.com/ftctl/ftctl/filters"
	"github.com/ftctl/ftctl/probes"
	"github.com/ftctl/ftctl/tracefs"
)

// Shell completion. The scripts cobra generates (completions/, `ftctl completion SHELL`) run
// `ftctl __complete ARGS...` on each TAB, and the functions here answer with what exists on
// the tracefs that the words typed so far select (--tracefs, FTCTL_TRACEFS, -B). They only read
// (directory listings, available_filter_functions, kprobe_events, a filter list), never create
// or write anything, and fail silently: without tracefs, or without the permission to read it,
// a completion is empty.
//
// Arguments and flag values complete no file names unless a command says otherwise (the root
// sets NoFileComp as the default directive): ftctl's arguments are patterns and names.

// maxCompletions caps the function names offered at once (a bare TAB would list ~70,000).
const maxCompletions = 200

// completionHelp is the SHELL COMPLETION section of ftctl(1).
var completionHelp = fmt.Sprintf(`%s puts completion scripts for bash, zsh and fish where those shells
look for them: share/bash-completion/completions/ftctl, share/zsh/site-functions/_ftctl and
share/fish/vendor_completions.d/ftctl.fish under its PREFIX. %s prints
them too.

Besides commands and flags they complete instance names (-B, instance remove), and function
names from available_filter_functions in patterns: after PATTERN: the :mod: qualifier and
module names, and for remove the functions that the list holds; probe definitions (probe add,
trace -p): the probed function, then the argument names the kernel's BTF gives (parameters,
members after -> and ., $retval) and fetch types after ':'. At most %d names are offered
at once. Completion only reads tracefs, and completes nothing where ftctl cannot read it
(without root, for instance).`, "`make install`", "`ftctl completion bash|zsh|fish`", maxCompletions)

const noFiles = cobra.ShellCompDirectiveNoFileComp

// completeFiles lets the shell complete file names (for --from-file and the like).
var completeFiles = cobra.FixedCompletions(nil, cobra.ShellCompDirectiveDefault)

// registerFlagCompletion attaches a completion function to a flag of c. Its only errors are
// programming errors (no such flag, registered twice), which every test that builds the
// command tree would hit.
func registerFlagCompletion(c *cobra.Command, flag string, f cobra.CompletionFunc) {
	if err := c.RegisterFlagCompletionFunc(flag, f); err != nil {
		panic(err)
	}
}

// exceptArgs wraps a completion function so that it does not offer what is already on the
// command line (`instance remove a b <TAB>` offers neither a nor b).
func exceptArgs(f cobra.CompletionFunc) cobra.CompletionFunc {
	return func(c *cobra.Command, args []string, toComplete string) ([]cobra.Completion, cobra.ShellCompDirective) {
		comps, dir := f(c, args, toComplete)
		return slices.DeleteFunc(comps, func(comp cobra.Completion) bool {
			choice, _, _ := strings.Cut(comp, "\t")
			return slices.Contains(args, choice)
		}), dir
	}
}

// completeInstanceNames completes the names of existing trace instances (-B, instance remove).
// Names that -B would refuse (control characters, made by other tools) are left out.
func completeInstanceNames(g *Globals) cobra.CompletionFunc {
	return func(_ *cobra.Command, _ []string, toComplete string) ([]cobra.Completion, cobra.ShellCompDirective) {
		fs, err := g.FS()
		if err != nil {
			return nil, noFiles
		}
		names, err := fs.Instances()
		if err != nil {
			return nil, noFiles
		}
		var out []cobra.Completion
		for _, n := range names {
			if strings.HasPrefix(n, toComplete) && tracefs.ValidateInstanceName(n) == nil {
				out = append(out, n)
			}
		}
		return out, noFiles
	}
}

// completeFunctionNames completes function names from available_filter_functions (filter
// set|add, notrace set|add, --except, functions).
func completeFunctionNames(g *Globals) cobra.CompletionFunc {
	return func(_ *cobra.Command, _ []string, toComplete string) ([]cobra.Completion, cobra.ShellCompDirective) {
		fs, err := g.FS()
		if err != nil {
			return nil, noFiles
		}
		ix, err := filters.LoadIndex(fs.Top())
		if err != nil {
			return nil, noFiles
		}
		return completePattern(indexKeys(ix), toComplete)
	}
}

// completeListedFunctions completes the functions listed in file (set_ftrace_filter or
// set_ftrace_notrace) of the -B trace array: what `remove` can take away. A missing instance
// completes nothing (and is not created).
func completeListedFunctions(g *Globals, file string) cobra.CompletionFunc {
	return func(_ *cobra.Command, _ []string, toComplete string) ([]cobra.Completion, cobra.ShellCompDirective) {
		in, err := g.OpenInstance()
		if err != nil {
			return nil, noFiles
		}
		b, err := in.ReadFile(file)
		if err != nil {
			return nil, noFiles
		}
		names := tracefs.ParseFunctionList(string(b)).Names
		return completePattern(func(yield func(filters.Key) bool) {
			for _, n := range names {
				if !yield(filters.ParseKey(n)) {
					return
				}
			}
		}, toComplete)
	}
}

// indexKeys yields the records of the index the kernel can match by name.
func indexKeys(ix *filters.Index) iter.Seq[filters.Key] {
	return func(yield func(filters.Key) bool) {
		for i := 1; i <= ix.Len(); i++ {
			if ix.Valid(i) && !yield(ix.Key(i)) {
				return
			}
		}
	}
}

// completePattern completes a function pattern being typed, over the functions keys yields.
// The word so far, with '*' appended, is compiled by the pattern engine with the kernel's
// semantics, so that completion offers exactly the names that a pattern starting with the word
// can select; a word the engine refuses (a leading '!' or digit) completes nothing. Each name
// is offered once, described by its module when all its functions are in one.
//
// After "PATTERN:" it completes the qualifier: "PATTERN:mod:", then the modules (loaded, with
// functions that PATTERN selects) as "PATTERN:mod:MODULE" or "PATTERN:mod:!MODULE".
//
// Past maxCompletions names, the first maxCompletions-1 in sorted order and the last are
// offered, with a note (cobra's ActiveHelp). Keeping the last keeps the longest common prefix
// of the choices that of all the matching names (for sorted strings it is the common prefix of
// the first and the last), so a shell that inserts it never narrows the word wrongly. The
// first names are kept in a sorted window as the keys go by, so that a bare TAB over 70,000
// functions neither builds a set of every name nor sorts them.
func completePattern(keys iter.Seq[filters.Key], toComplete string) ([]cobra.Completion, cobra.ShellCompDirective) {
	if fn, qual, ok := strings.Cut(toComplete, ":"); ok {
		return completeModuleQualifier(keys, fn, qual)
	}
	p, err := filters.Compile(toComplete + "*")
	if err != nil {
		return nil, noFiles
	}
	names, matched, capped := matchedNames(keys, p)
	if matched == 0 {
		return nil, noFiles
	}
	modules := nameModules(keys, names)
	out := make([]cobra.Completion, 0, len(names)+1)
	for _, n := range names {
		if m := modules[n]; m != "" {
			out = append(out, cobra.CompletionWithDesc(n, "["+m+"]"))
		} else {
			out = append(out, n)
		}
	}
	if capped {
		out = cobra.AppendActiveHelp(out, fmt.Sprintf("%d names shown; %d functions match: type more of the name", len(names), matched))
	}
	return out, noFiles
}

// matchedNames are the names of keys p matches that completion offers: the smallest distinct
// ones (maxCompletions-1 of them), sorted, and the largest; matched counts the functions
// (records) that match, and capped says that some name between was left out.
func matchedNames(keys iter.Seq[filters.Key], p *filters.Pattern) (names []string, matched int, capped bool) {
	const keep = maxCompletions - 1
	var (
		first      = make([]string, 0, keep) // the smallest distinct names, sorted
		last       string                    // the largest name
		minDropped string                    // the smallest name not kept in first
		dropped    bool
	)
	drop := func(n string) {
		if !dropped || n < minDropped {
			minDropped, dropped = n, true
		}
	}
	for k := range keys {
		if !p.Match(k.Name, k.Module) {
			continue
		}
		matched++
		n := k.Name
		if matched == 1 || n > last {
			last = n
		}
		if len(first) == keep && n > first[keep-1] {
			drop(n)
			continue
		}
		i, found := slices.BinarySearch(first, n)
		if found {
			continue
		}
		if len(first) == keep {
			drop(first[keep-1])
			first = first[:keep-1]
		}
		first = slices.Insert(first, i, n)
	}
	if matched == 0 {
		return nil, 0, false
	}
	names = first
	if !slices.Contains(first, last) {
		names = append(names, last)
	}
	// More names than offered: some name was dropped that is not the last.
	return names, matched, dropped && minDropped < last
}

// nameModules is the module of each of names: "" for the core kernel or several modules.
func nameModules(keys iter.Seq[filters.Key], names []string) map[string]string {
	modules := make(map[string]string, len(names))
	seen := make(map[string]bool, len(names))
	for _, n := range names {
		modules[n] = ""
	}
	for k := range keys {
		if m, ok := modules[k.Name]; ok {
			if !seen[k.Name] {
				modules[k.Name], seen[k.Name] = k.Module, true
			} else if m != k.Module {
				modules[k.Name] = ""
			}
		}
	}
	return modules
}

// completeModuleQualifier completes the part after "FN:" of a pattern: ":mod:", then module names.
func completeModuleQualifier(keys iter.Seq[filters.Key], fn, qual string) ([]cobra.Completion, cobra.ShellCompDirective) {
	const mod = "mod:"
	if !strings.HasPrefix(qual, mod) {
		if strings.HasPrefix(mod, qual) {
			return []cobra.Completion{fn + ":" + mod}, noFiles | cobra.ShellCompDirectiveNoSpace
		}
		return nil, noFiles // a function command (func:traceoff): not ftctl's to take
	}
	modPrefix := qual[len(mod):]
	exclude := strings.HasPrefix(modPrefix, "!")
	modPrefix = strings.TrimPrefix(modPrefix, "!")
	var p *filters.Pattern // nil: a blank function half selects every function of the module
	if fn != "" {
		var err error
		if p, err = filters.Compile(fn); err != nil {
			return nil, noFiles
		}
	}
	seen := map[string]bool{}
	for k := range keys {
		if k.Module == "" || seen[k.Module] || !strings.HasPrefix(k.Module, modPrefix) {
			continue
		}
		// Excluding a module is meaningful whatever FN selects in it.
		if exclude || p == nil || p.Match(k.Name, k.Module) {
			seen[k.Module] = true
		}
	}
	head := fn + ":" + mod
	if exclude {
		head += "!"
	}
	var out []cobra.Completion
	for m := range seen {
		out = append(out, head+m)
	}
	slices.Sort(out)
	return out, noFiles
}

// completeEventNames completes trace event names as SYSTEM:EVENT (the set_event syntax): first
// the systems, as "SYSTEM:" with no space after it, then the events of the system typed. For
// the commands that take events (stream, trace).
func completeEventNames(g *Globals) cobra.CompletionFunc {
	return func(_ *cobra.Command, _ []string, toComplete string) ([]cobra.Completion, cobra.ShellCompDirective) {
		fs, err := g.FS()
		if err != nil {
			return nil, noFiles
		}
		var out []cobra.Completion
		system, event, ok := strings.Cut(toComplete, ":")
		if !ok {
			systems, err := fs.EventSystems()
			if err != nil {
				return nil, noFiles
			}
			for _, s := range systems {
				if strings.HasPrefix(s, system) {
					out = append(out, s+":")
				}
			}
			return out, noFiles | cobra.ShellCompDirectiveNoSpace
		}
		events, err := fs.Events(system)
		if err != nil {
			return nil, noFiles
		}
		for _, e := range events {
			if strings.HasPrefix(e, event) {
				out = append(out, system+":"+e)
			}
		}
		return out, noFiles
	}
}

// completeProbeNames completes the probes defined in kprobe_events and uprobe_events as GROUP/EVENT, each
// described by its definition, for the probe commands that name existing probes. Probes whose
// names could not be typed back (control characters) are left out.
func completeProbeNames(g *Globals) cobra.CompletionFunc {
	return func(_ *cobra.Command, _ []string, toComplete string) ([]cobra.Completion, cobra.ShellCompDirective) {
		fs, err := g.FS()
		if err != nil {
			return nil, noFiles
		}
		listed, err := fs.KprobesAndUprobes()
		if err != nil {
			return nil, noFiles
		}
		var out []cobra.Completion
		for _, p := range listed {
			name := p.Group + "/" + p.Event
			if strings.HasPrefix(name, toComplete) && safe(name) == name {
				out = append(out, cobra.CompletionWithDesc(name, safe(p.Definition)))
			}
		}
		return out, noFiles
	}
}

// completeTracers completes the tracers the trace array (-B, else the top level) can run, from
// available_tracers: for trace --tracer, which runs in its own instance (6.1's instances offer
// fewer tracers than the top level), and list tracers.
func completeTracers(g *Globals) cobra.CompletionFunc {
	return func(_ *cobra.Command, _ []string, toComplete string) ([]cobra.Completion, cobra.ShellCompDirective) {
		in, err := g.OpenInstance()
		if err != nil {
			return nil, noFiles
		}
		available, _, err := in.Tracers()
		if err != nil {
			return nil, noFiles
		}
		var out []cobra.Completion
		for _, t := range available {
			if strings.HasPrefix(t, toComplete) {
				out = append(out, t)
			}
		}
		return out, noFiles
	}
}

// completeClocks completes the kernel's trace clocks (trace_clock).
func completeClocks(g *Globals) cobra.CompletionFunc {
	return func(_ *cobra.Command, _ []string, toComplete string) ([]cobra.Completion, cobra.ShellCompDirective) {
		in, err := g.OpenInstance()
		if err != nil {
			return nil, noFiles
		}
		clocks, err := in.Clocks()
		if err != nil {
			return nil, noFiles
		}
		var out []cobra.Completion
		for _, c := range clocks {
			if strings.HasPrefix(c, toComplete) {
				out = append(out, c)
			}
		}
		return out, noFiles
	}
}

// completeOptions completes trace option names (and their no- forms once "no" is typed).
func completeOptions(g *Globals) cobra.CompletionFunc {
	return func(_ *cobra.Command, _ []string, toComplete string) ([]cobra.Completion, cobra.ShellCompDirective) {
		in, err := g.OpenInstance()
		if err != nil {
			return nil, noFiles
		}
		opts, err := in.Options()
		if err != nil {
			return nil, noFiles
		}
		var out []cobra.Completion
		for _, o := range opts {
			for _, name := range []string{o.Name, "no" + o.Name} {
				if strings.HasPrefix(name, toComplete) && (name == o.Name || strings.HasPrefix(toComplete, "no")) {
					out = append(out, name)
				}
			}
		}
		return out, noFiles
	}
}

// completeProbeDefinition completes a probe definition being typed, given as several words
// (`probe add`) or one quoted word (`trace -p`; with flag true, only the word being typed is
// the definition): the probed function from available_filter_functions, then the argument
// names the kernel's BTF gives (probes.Kernel.Complete: parameters, members along "->" and
// ".", $retval; BTF is readable without root on most systems), and fetch types after ':'.
func completeProbeDefinition(g *Globals, flag bool) cobra.CompletionFunc {
	return func(c *cobra.Command, args []string, toComplete string) ([]cobra.Completion, cobra.ShellCompDirective) {
		before := "" // what a quoted word holds before the word being completed
		if i := strings.LastIndexAny(toComplete, " \t"); i >= 0 {
			before = toComplete[:i+1]
		}
		line := toComplete
		if !flag && len(args) > 0 {
			line = strings.Join(args, " ") + " " + toComplete
		}
		fs, err := g.FS()
		if err != nil {
			fs = kernelFiles(&tracefs.FS{})
		}
		funcs := func(prefix string) []string {
			comps, _ := completeFunctionNames(g)(c, nil, prefix)
			names := make([]string, 0, len(comps))
			for _, comp := range comps {
				name, _, _ := strings.Cut(comp, "\t")
				names = append(names, name)
			}
			return names
		}
		p := probes.NewManager(fs).Parser // the grammar the tracefs README announces
		p.Kernel = probes.NewKernel(fs)
		cands := p.Complete(line, funcs)
		out := make([]cobra.Completion, len(cands))
		for i, cand := range cands {
			out[i] = before + cand
		}
		return out, noFiles
	}
}
