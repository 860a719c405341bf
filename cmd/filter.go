package cmd

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/ftctl/ftctl/filters"
	"github.com/ftctl/ftctl/tracefs"
)

// PatternArgs are the ways to give patterns: arguments, --from-file, --regex.
type PatternArgs struct {
	Args     []string // the command's arguments
	FromFile string   // --from-file: one pattern per line, # comments ('-' for stdin)
	Regex    bool     // --regex: Go regular expressions, resolved by ftctl
}

func (pa *PatternArgs) register(c *cobra.Command) {
	c.Flags().StringVar(&pa.FromFile, "from-file", "", "read patterns from `FILE`, one per line, # comments ('-' for stdin)")
	c.Flags().BoolVar(&pa.Regex, "regex", false, "patterns are Go regular expressions matched against function names (resolved by ftctl)")
	registerFlagCompletion(c, "from-file", completeFiles)
}

// compile gathers and compiles the patterns of the arguments and --from-file. An invalid one
// is a filters.ErrPattern (exit 2).
func (pa *PatternArgs) compile(in io.Reader) ([]*filters.Pattern, error) {
	texts := append([]string{}, pa.Args...)
	if pa.FromFile != "" {
		more, err := readPatternFile(in, pa.FromFile)
		if err != nil {
			return nil, err
		}
		texts = append(texts, more...)
	}
	return compilePatterns(texts, pa.Regex)
}

// compilePatterns compiles kernel globs, or regular expressions when regex.
func compilePatterns(texts []string, regex bool) ([]*filters.Pattern, error) {
	var out []*filters.Pattern
	for _, t := range texts {
		compile := filters.Compile
		if regex {
			compile = filters.CompileRegex
		}
		p, err := compile(t)
		if err != nil {
			return nil, err
		}
		out = append(out, p)
	}
	return out, nil
}

func readPatternFile(in io.Reader, name string) ([]string, error) {
	r := in
	if name != "-" {
		f, err := os.Open(name)
		if err != nil {
			return nil, InvalidInput(fmt.Errorf("--from-file: %w", err))
		}
		defer f.Close()
		r = f
	}
	var out []string
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64*1024), 1024*1024)
	for sc.Scan() {
		line := sc.Text()
		if i := strings.IndexByte(line, '#'); i >= 0 {
			line = line[:i]
		}
		out = append(out, strings.Fields(line)...)
	}
	if err := sc.Err(); err != nil {
		return nil, InvalidInput(fmt.Errorf("--from-file %s: %w", name, err))
	}
	return out, nil
}

// patternHelp and swapProtocolHelp are paragraphs of `ftctl filter --help` that ftctl(1) also
// prints (see ManSections).
const (
	patternHelp = `Patterns have the kernel's exact semantics: * ? [...] [!...] and \ escapes, a name selects every
function of that name (static functions can share one), and PATTERN:mod:MODULE qualifies by
module (:mod:!MODULE excludes one; *:mod:!* is the core kernel only). ftctl resolves them against
available_filter_functions itself and writes the kernel the resulting line numbers, so what
'ftctl functions PATTERN' previews is exactly what is applied. A pattern that matches nothing is
an error (exit 2) with close names suggested, and nothing is written.`

	swapProtocolHelp = `Changes follow the swap protocol: one open without O_TRUNC per file, additions first, then
removals, the close as the single commit; then the list is read back and verified, retried once
from fresh indexes if a module came or went, else restored (exit 1). A process killed at any
moment leaves the list within old ∪ new, and a filter never becomes empty (= every function)
except through 'clear'. Writers hold the tracefs lock; --dry-run prints each write.`
)

// The JSON output of the list commands (filter and notrace alike).
const (
	listShowJSON = `One object:

  {"file": "set_ftrace_filter", "instance": "", "empty": false,
   "functions": [{"name": "vfs_read", "module": ""}],
   "commands": ["do_exit:traceoff:unlimited"],
   "pending_modules": ["*:mod:nfsd"]}

file is set_ftrace_filter or set_ftrace_notrace; instance "" is the top level; "empty": true on
a filter means every function is traced; commands are function commands (func:traceoff...);
pending_modules are :mod: patterns the kernel keeps until their module loads.`

	listChangeJSON = `An array with one object per list changed, in order:

  [{"file": "set_ftrace_filter", "instance": "", "op": "set",
    "before": 2, "after": 3, "added": 2, "removed": 1,
    "verified": true, "retried": false, "empty": false}]

before and after count function records; verified is false in a dry run; retried says the
indexes went stale once (a module came or went); "empty": true on a filter means every
function is traced.`
)

// NewCmdFilter builds `ftctl filter` (set_ftrace_filter) or `ftctl notrace` (set_ftrace_notrace).
func NewCmdFilter(g *Globals, file string) *cobra.Command {
	name, what := "filter", "the function filter (set_ftrace_filter): the functions the function tracers trace"
	if file == filters.NotraceFile {
		name, what = "notrace", "the notrace list (set_ftrace_notrace): functions never traced, whatever the filter"
	}
	c := &cobra.Command{
		Use:   name,
		Short: "Show or change " + strings.SplitN(what, ":", 2)[0],
		Long:  "Show or change " + what + ".\n\n" + patternHelp + "\n\n" + swapProtocolHelp,
		Args:  args(cobra.NoArgs),
	}
	c.AddCommand(NewCmdListShow(g, file, nil))
	for _, op := range []filters.Op{filters.OpSet, filters.OpAdd, filters.OpRemove} {
		c.AddCommand(NewCmdListChange(g, file, op, nil))
	}
	c.AddCommand(NewCmdListClear(g, file, nil))
	return c
}

// ListShowOptions are the inputs of `ftctl filter show` and `ftctl notrace show`.
type ListShowOptions struct {
	G    *Globals
	File string // filters.FilterFile or filters.NotraceFile
}

// NewCmdListShow builds `ftctl filter show` (file set_ftrace_filter) or `ftctl notrace show`.
func NewCmdListShow(g *Globals, file string, runF func(context.Context, *ListShowOptions) error) *cobra.Command {
	opts := &ListShowOptions{G: g, File: file}
	return &cobra.Command{
		Use:         "show",
		Short:       "List the functions in " + file,
		Args:        args(cobra.NoArgs),
		Annotations: map[string]string{AnnotationJSON: listShowJSON},
		RunE: func(c *cobra.Command, _ []string) error {
			return runCmd(c, runF, listShowRun, opts)
		},
	}
}

func listShowRun(_ context.Context, opts *ListShowOptions) error {
	g, file := opts.G, opts.File
	in, err := g.OpenInstance()
	if err != nil {
		return err
	}
	b, err := in.ReadFile(file)
	if err != nil {
		return err
	}
	l := tracefs.ParseFunctionList(string(b))
	keys := make([]filters.Key, 0, len(l.Names))
	for _, n := range l.Names {
		keys = append(keys, filters.ParseKey(n))
	}
	doc := filterShowDoc{File: file, Instance: in.Name, Empty: l.Empty, Functions: keys, Commands: l.Commands, PendingModules: l.PendingModules}
	if ok, err := g.printDoc(filterShowFormat, doc); ok {
		return err
	}
	w := bufio.NewWriter(g.Out)
	defer w.Flush()
	if l.Empty && file == filters.FilterFile {
		g.Notice("%s is empty: every function is traced", file)
	}
	for _, k := range keys {
		fmt.Fprintln(w, safe(k.String()))
	}
	for _, cmd := range l.Commands {
		fmt.Fprintln(w, safe(cmd))
	}
	for _, p := range l.PendingModules {
		fmt.Fprintf(w, "%s\t(waiting for the module to load)\n", safe(p))
	}
	return nil
}

// ListChangeOptions are the inputs of `ftctl filter|notrace set|add|remove`.
type ListChangeOptions struct {
	G        *Globals
	File     string // filters.FilterFile or filters.NotraceFile
	Op       filters.Op
	Patterns PatternArgs
	Except   []string // filter set --except: the notrace list's new patterns
	Create   bool     // --create: make a missing -B instance
}

// listChangeExamples are each list command's own examples, by file and op (notrace has no
// --except: its examples must not show one).
var listChangeExamples = map[string]map[filters.Op]string{
	filters.FilterFile: {
		filters.OpSet:    "  sudo ftctl filter set 'vfs_*' do_sys_openat2\n  sudo ftctl filter set 'tcp_*' --except 'tcp_v6_*'\n  sudo ftctl -B mytrace filter set --from-file funcs.txt\n  sudo ftctl filter set 'ext4_*:mod:ext4' --dry-run",
		filters.OpAdd:    "  sudo ftctl filter add vfs_read\n  sudo ftctl -B mytrace filter add 'ksys_*' --dry-run",
		filters.OpRemove: "  sudo ftctl filter remove 'vfs_write*'",
	},
	filters.NotraceFile: {
		filters.OpSet:    "  sudo ftctl notrace set '*spin_lock*' '*rcu*'\n  sudo ftctl -B mytrace notrace set --from-file noisy.txt",
		filters.OpAdd:    "  sudo ftctl notrace add '*spin_lock*'\n  sudo ftctl -B mytrace notrace add 'rcu_*' --dry-run",
		filters.OpRemove: "  sudo ftctl notrace remove '*spin_lock*'",
	},
}

// NewCmdListChange builds `ftctl filter|notrace set|add|remove` (by file and op).
func NewCmdListChange(g *Globals, file string, op filters.Op, runF func(context.Context, *ListChangeOptions) error) *cobra.Command {
	opts := &ListChangeOptions{G: g, File: file, Op: op}
	short := map[filters.Op]string{
		filters.OpSet:    "Replace the list with the functions the patterns select",
		filters.OpAdd:    "Add the functions the patterns select",
		filters.OpRemove: "Remove the functions the patterns select",
	}[op]
	complete := completeFunctionNames(g)
	if op == filters.OpRemove {
		complete = completeListedFunctions(g, file) // what can be removed is what the list holds
	}
	c := &cobra.Command{
		Use:               op.String() + " PATTERN...",
		Short:             short,
		Example:           listChangeExamples[file][op],
		Annotations:       map[string]string{AnnotationJSON: listChangeJSON},
		ValidArgsFunction: complete,
		RunE: func(c *cobra.Command, a []string) error {
			opts.Patterns.Args = a
			return runCmd(c, runF, listChangeRun, opts)
		},
	}
	opts.Patterns.register(c)
	registerCreate(c, &opts.Create)
	if op == filters.OpSet && file == filters.FilterFile {
		c.Flags().StringArrayVar(&opts.Except, "except", nil, "also set the notrace list to `PATTERN`, in one safe transition (repeatable)")
		registerFlagCompletion(c, "except", completeFunctionNames(g))
	}
	return c
}

func listChangeRun(ctx context.Context, opts *ListChangeOptions) error {
	g := opts.G
	pats, err := opts.Patterns.compile(g.In)
	if err != nil {
		return err
	}
	if len(pats) == 0 {
		return InvalidInput(fmt.Errorf("no patterns given (arguments or --from-file)"))
	}
	changes := []filters.Change{{File: opts.File, Op: opts.Op, Patterns: pats}}
	if len(opts.Except) > 0 {
		ex, err := compilePatterns(opts.Except, opts.Patterns.Regex)
		if err != nil {
			return err
		}
		// notrace := N ∪ N', then filter := F', then notrace := N': no intermediate state
		// traces a function that neither the old nor the new configuration does.
		changes = []filters.Change{
			{File: filters.NotraceFile, Op: filters.OpAdd, Patterns: ex},
			changes[0],
			{File: filters.NotraceFile, Op: filters.OpSet, Patterns: ex},
		}
	}
	return applyChanges(ctx, g, changes, opts.Create, nil)
}

// ListClearOptions are the inputs of `ftctl filter|notrace clear`.
type ListClearOptions struct {
	G      *Globals
	File   string // filters.FilterFile or filters.NotraceFile
	Force  bool   // clear the filter even while a function tracer runs
	Create bool   // --create: make a missing -B instance
}

// clearHelp says what clearing each list does.
var clearHelp = map[string]string{
	filters.FilterFile: `Empty set_ftrace_filter. An empty filter means every function is traced, so clearing the
filter is refused while the function or function_graph tracer runs in that trace array, unless
--force. Function commands (func:traceoff...) are kept.`,
	filters.NotraceFile: `Empty set_ftrace_notrace: no function is excluded any more (the filter alone decides what
the function tracers trace).`,
}

// NewCmdListClear builds `ftctl filter clear` or `ftctl notrace clear`.
func NewCmdListClear(g *Globals, file string, runF func(context.Context, *ListClearOptions) error) *cobra.Command {
	opts := &ListClearOptions{G: g, File: file}
	c := &cobra.Command{
		Use:         "clear",
		Short:       "Empty the list",
		Long:        clearHelp[file],
		Example:     "  sudo ftctl " + map[string]string{filters.FilterFile: "filter", filters.NotraceFile: "notrace"}[file] + " clear --dry-run",
		Args:        args(cobra.NoArgs),
		Annotations: map[string]string{AnnotationJSON: listChangeJSON},
		RunE: func(c *cobra.Command, _ []string) error {
			return runCmd(c, runF, listClearRun, opts)
		},
	}
	registerCreate(c, &opts.Create)
	if file == filters.FilterFile {
		c.Flags().BoolVar(&opts.Force, "force", false, "clear even while a function tracer is active (it then traces every function)")
	}
	return c
}

func listClearRun(ctx context.Context, opts *ListClearOptions) error {
	file := opts.File
	refuseWhileTracing := func(in *tracefs.Instance) error {
		if file != filters.FilterFile || opts.Force {
			return nil
		}
		t, err := in.Tracer()
		if err != nil {
			return err
		}
		if t == "function" || t == "function_graph" {
			return InvalidInput(fmt.Errorf("refusing to clear %s while the %s tracer is active in the %s: "+
				"an empty filter traces every function; set the tracer to nop first, or use --force", file, t, in.Label()))
		}
		return nil
	}
	return applyChanges(ctx, opts.G, []filters.Change{{File: file, Op: filters.OpClear}}, opts.Create, refuseWhileTracing)
}

// applyChanges carries the changes out with the swap protocol. The slow part, reading the
// function index and resolving every pattern, comes first and without the lock (a pattern that
// selects nothing fails here, exit 2, without waiting for anyone). Then it takes the lock,
// finds the instance (a missing one is refused, or made with create), runs check (if any),
// and the Applier checks everything again under the lock before the first write: the index is
// read again if a module came or went, and each list is read and planned now, so that another
// writer's change in the meantime is kept.
func applyChanges(ctx context.Context, g *Globals, changes []filters.Change, create bool, check func(*tracefs.Instance) error) error {
	timing := phaseTimer(g)
	fs, err := g.FS()
	if err != nil {
		return err
	}
	resolved, err := resolveChanges(fs, changes, timing)
	if err != nil {
		return err
	}

	waitStart := time.Now()
	fs, lock, err := g.BeginWrite(ctx)
	if err != nil {
		return err
	}
	timing("lock wait", time.Since(waitStart))
	lockedAt := time.Now()
	defer func() {
		lock.Unlock()
		timing("locked", time.Since(lockedAt))
	}()
	in, err := g.WriteInstance(fs, create)
	if err != nil {
		return err
	}
	if check != nil {
		if err := check(in); err != nil {
			return err
		}
	}
	ap := &filters.Applier{In: in, Top: fs.Top(), Notice: g.Notice, ByName: !fs.IndexWrites()}
	if os.Getenv("FTCTL_TIMING") != "" {
		ap.Timing = timing
	}
	if ap.ByName {
		g.Notice("this kernel does not take index writes: writing function names (slow)")
	}
	results, err := ap.ApplyResolved(ctx, resolved)
	if err != nil {
		return err
	}
	if ok, err := g.printDoc(filterChangeFormat, results); ok {
		return err
	}
	printApplied(g, in, results)
	return nil
}

// resolveChanges reads the function index and resolves changes against it, each phase timed.
func resolveChanges(fs *tracefs.FS, changes []filters.Change, timing func(phase string, d time.Duration)) (*filters.Resolved, error) {
	timed := func(phase string, f func() error) error {
		start := time.Now()
		err := f()
		timing(phase, time.Since(start))
		return err
	}
	var ix *filters.Index
	if err := timed("read index", func() (err error) { ix, err = filters.LoadIndex(fs.Top()); return }); err != nil {
		return nil, err
	}
	var resolved *filters.Resolved
	if err := timed("resolve", func() (err error) { resolved, err = filters.Resolve(ix, changes); return }); err != nil {
		return nil, err
	}
	return resolved, nil
}

// printApplied says, per list written, what it holds now and how much changed.
func printApplied(g *Globals, in *tracefs.Instance, results []filters.Result) {
	for _, r := range results {
		state := "verified"
		if !r.Verified {
			state = "dry run: nothing written"
		}
		if r.Retried {
			state += " after a retry"
		}
		after := plural(r.After, "function")
		if r.Empty && r.File == filters.FilterFile {
			after = "empty: every function is traced"
		} else if r.Empty {
			after = "empty"
		}
		fmt.Fprintf(g.Out, "%s: %s (+%d -%d), %s\n", safe(in.Rel(r.File)), after, r.Added, r.Removed, state)
	}
}

// phaseTimer prints how long a phase took when FTCTL_TIMING is set (for benchmarks), and does
// nothing otherwise.
func phaseTimer(g *Globals) func(phase string, d time.Duration) {
	if os.Getenv("FTCTL_TIMING") == "" {
		return func(string, time.Duration) {}
	}
	return func(phase string, d time.Duration) {
		fmt.Fprintf(g.Err, "ftctl: timing: %s %.6f\n", phase, d.Seconds())
	}
}
