// Package cmd is ftctl's command tree (cobra): flags, output and exit codes only. The work is
// done below it: session/ (who owns what, set-up and teardown), filters/, probes/ and stream/,
// which alone reach the kernel through tracefs/; the console is tui/. See docs/ARCHITECTURE.md.
package cmd

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/ftctl/ftctl/filters"
	"github.com/ftctl/ftctl/session"
	"github.com/ftctl/ftctl/tracefs"
)

// Globals are the global flags and the process's IO, shared by every command. Tests build one
// with buffers and a fake tracefs directory.
type Globals struct {
	In       io.Reader
	Out, Err io.Writer

	TracefsDir  string        // --tracefs (else FTCTL_TRACEFS)
	Instance    string        // -B/--instance
	Output      string        // -o text|json
	DryRun      bool          // --dry-run
	ShowWrites  bool          // --show-writes
	Quiet       bool          // -q
	LockTimeout time.Duration // --lock-timeout
	Color       string        // --color auto|always|never (colorFor)
	ReadyFD     int           // --ready-fd of the commands that arm a session (registerReadyFD)

	fs    *tracefs.FS
	ready io.WriteCloser // --ready-fd's descriptor until Armed closes it
	start time.Time      // when Run began: Armed says how long arming took
}

// Notice prints an informational line on stderr unless -q.
func (g *Globals) Notice(format string, args ...any) {
	if !g.Quiet {
		fmt.Fprintf(g.Err, "ftctl: "+format+"\n", args...)
	}
}

// kernelFiles points fs at the copy of kallsyms the environment names (FTCTL_KALLSYMS), and
// lets cmd's own tests point it at their fixtures (testHooks).
func kernelFiles(fs *tracefs.FS) *tracefs.FS {
	fs.KallsymsFile = os.Getenv("FTCTL_KALLSYMS")
	if testHooks != nil {
		testHooks(fs)
	}
	return fs
}

// tracefsRoot is the tracing directory the user named, and how: --tracefs, else $FTCTL_TRACEFS;
// "" when neither (tracefs is then looked for in /proc/self/mountinfo).
func (g *Globals) tracefsRoot() (root, found string) {
	if g.TracefsDir != "" {
		return g.TracefsDir, "--tracefs"
	}
	if v := os.Getenv("FTCTL_TRACEFS"); v != "" {
		return v, "FTCTL_TRACEFS"
	}
	return "", ""
}

// testHooks, nil in the binary, is set by cmd's tests (hooks_test.go) to read their fixtures'
// directories from the environment: the state directory of the journals (which ftctl, as
// root, acts on) and BTF. The binary has no such door: a test hook honoured in production is
// a way to make root read journals from, and write them to, a directory of someone else's.
var testHooks func(*tracefs.FS)

// FS locates tracefs once per command. A missing tracefs is ErrNotMounted (exit 4) with the
// command that mounts it.
func (g *Globals) FS() (*tracefs.FS, error) {
	if g.fs != nil {
		return g.fs, nil
	}
	root, found := g.tracefsRoot()
	fs, err := tracefs.Open(root, found)
	if err != nil {
		return nil, err
	}
	kernelFiles(fs)
	if err := fs.CheckStateDir(); err != nil {
		return nil, err
	}
	if g.ShowWrites {
		fs.Log = g.Err
	}
	if g.DryRun {
		// The plan is the output of a dry run, except with -o json, where stdout is one JSON
		// document for scripts and the plan goes to stderr.
		fs.DryRun = g.Out
		if g.machine() {
			fs.DryRun = g.Err
		}
	}
	g.fs = fs
	return fs, nil
}

// BeginWrite opens tracefs and takes the control-plane lock for a command that changes
// tracing state, saying on stderr whom it waits for. Release the lock when done.
func (g *Globals) BeginWrite(ctx context.Context) (*tracefs.FS, *tracefs.Lock, error) {
	fs, err := g.FS()
	if err != nil {
		return nil, nil, err
	}
	lock, err := fs.Lock(ctx, g.LockTimeout, func(h tracefs.Holder) {
		g.Notice("waiting for the tracefs lock held by %s (up to %v while it stays in the same hands)", h, g.LockTimeout)
	})
	if err != nil {
		return nil, nil, err
	}
	return fs, lock, nil
}

// WriteInstance is the instance a write command works on (-B). A missing one is refused (exit
// 2) with the existing names close to it and how to create it, unless create (the command's
// --create): a mistyped -B would otherwise set up tracing in a new instance nobody reads. With
// create it is made (in a dry run, the mkdir is printed) and said so on stderr.
func (g *Globals) WriteInstance(fs *tracefs.FS, create bool) (*tracefs.Instance, error) {
	if !create {
		in, err := fs.Lookup(g.Instance)
		if errors.Is(err, tracefs.ErrNoInstance) {
			return nil, missingInstance(fs, g.Instance)
		}
		return in, err
	}
	in, created, err := fs.Ensure(g.Instance)
	if err != nil {
		return nil, err
	}
	if created {
		if g.DryRun {
			g.Notice("instance %q does not exist; it would be created", g.Instance)
		} else {
			g.Notice("created instance %q", g.Instance)
		}
	}
	return in, nil
}

// registerCreate gives a command that writes to the -B instance its --create.
func registerCreate(c *cobra.Command, create *bool) {
	c.Flags().BoolVar(create, "create", false, "with -B, create the instance when it does not exist (else a missing one is refused, exit 2)")
}

// missingInstance is the refusal of a write to an instance that does not exist: the name, the
// existing instances close to it, and the two ways to create it.
func missingInstance(fs *tracefs.FS, name string) error {
	msg := closeInstances(fs, name, fmt.Sprintf("no instance %s: a write does not create one", safe(strconv.Quote(name))))
	msg += "\nto create it, add --create, or run first: ftctl instance create " + safe(shellWord(name))
	return InvalidInput(errors.New(msg))
}

// noInstance is the refusal of a command that reads (or disables in) an instance that does not
// exist: the name and the existing instances close to it.
func noInstance(fs *tracefs.FS, name string) error {
	return InvalidInput(errors.New(closeInstances(fs, name, fmt.Sprintf("no instance %s", safe(strconv.Quote(name))))))
}

// closeInstances is msg followed by the existing instances close to name ("did you mean"), or
// where to find them.
func closeInstances(fs *tracefs.FS, name, msg string) string {
	names, _ := fs.Instances() // the suggestion is a help: a failure to list leaves it out
	if s := filters.Suggest(name, names, 3); len(s) > 0 {
		for i := range s {
			s[i] = safe(s[i])
		}
		msg += "; did you mean " + strings.Join(s, " or ") + "?"
	} else if len(names) > 0 {
		msg += "; 'ftctl instance list' lists the existing ones"
	}
	return msg
}

// shellWord is s as one word a shell reads back as s: as it is when it holds only characters
// no shell treats specially, else in single quotes.
func shellWord(s string) string {
	if s != "" && strings.Trim(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_.,:+@%=/-") == "" {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// ReadInstance is the instance a read command works on (-B), or one that only takes away
// (probe disable); a missing one is refused (exit 2) with the existing names close to it.
func (g *Globals) ReadInstance(fs *tracefs.FS) (*tracefs.Instance, error) {
	in, err := fs.Lookup(g.Instance)
	if errors.Is(err, tracefs.ErrNoInstance) {
		return nil, noInstance(fs, g.Instance)
	}
	return in, err
}

// OpenInstance finds tracefs and the trace array -B names, for a command that only reads it.
func (g *Globals) OpenInstance() (*tracefs.Instance, error) {
	fs, err := g.FS()
	if err != nil {
		return nil, err
	}
	return g.ReadInstance(fs)
}

// rootLong is the help text of `ftctl` itself.
const rootLong = `ftctl drives Linux ftrace (the files under /sys/kernel/tracing) safely: function filters
that swap atomically and never widen by accident, kprobes validated before they reach the
kernel, and a typed live event stream.

tracefs is found through /proc/self/mountinfo (tracefs, else debugfs/tracing), or given with
--tracefs or FTCTL_TRACEFS. Commands that change tracing state take a lock so that concurrent
ftctl writers never lose an update, and --dry-run prints each write instead of making it.
-B NAME works in the instance NAME; a command that writes to it refuses a missing one (exit 2,
with the close names) unless given --create, so that a typo sets nothing up where nobody looks.

Colour (the stream's columns, the console): --color auto, the default, colours only a terminal,
and not when NO_COLOR is set to anything but "" (no-color.org) or TERM is dumb; --color always
colours even then, and into a pipe; --color never does not.`

// rootExample lists the examples of `ftctl` itself.
const rootExample = `  sudo ftctl status                                  # what this kernel offers, what is set up
  sudo ftctl trace -f 'vfs_*' -- ls -l /etc           # the functions one command calls
  sudo ftctl latency vfs_read --duration 2s           # how long a function takes
  sudo ftctl count 'vfs_*' --duration 2s              # calls per function
  sudo ftctl --dry-run trace -f vfs_read --duration 1s    # the writes, made by none`

// NewRootCmd builds the command tree.
func NewRootCmd(g *Globals) *cobra.Command {
	root := &cobra.Command{
		Use:           "ftctl",
		Short:         "A safe control plane for Linux ftrace",
		Long:          rootLong,
		Example:       rootExample,
		SilenceErrors: true,
		SilenceUsage:  true,
		// Runnable with NoArgs so that an unknown command is invalid input (exit 2).
		Args:              args(cobra.NoArgs),
		RunE:              func(c *cobra.Command, _ []string) error { return c.Help() },
		Version:           Version().Version,
		PersistentPreRunE: func(c *cobra.Command, _ []string) error { return checkGlobals(c, g) },
	}
	root.SetIn(g.In)
	root.SetOut(g.Out)
	root.SetErr(g.Err)
	// Flag descriptions wrapped to fit 100 columns, as the rest of the help is.
	root.SetUsageTemplate(strings.ReplaceAll(root.UsageTemplate(), ".FlagUsages ", ".FlagUsagesWrapped 100 "))
	// --version without cobra's -v shorthand (-v means verbose everywhere else), and the same
	// text as `ftctl version`.
	root.Flags().Bool("version", false, "show ftctl's version, commit, build date and Go release")
	root.SetVersionTemplate(Version().String())
	root.SetFlagErrorFunc(func(c *cobra.Command, err error) error {
		return InvalidInput(fmt.Errorf("%s%s\nsee '%s --help'", flagErrorText(err), peerHint(c, err), c.CommandPath()))
	})
	root.SetHelpCommand(newCmdHelp())

	rootFlags(root, g)

	root.AddCommand(subcommands(g)...)
	groupsRefuseTypos(root)
	groupCommands(root)
	return root
}

// checkGlobals checks the global flags before any command runs (exit 2 for a mistake).
func checkGlobals(c *cobra.Command, g *Globals) error {
	if err := g.checkOutput(c); err != nil {
		return err
	}
	if g.Instance != "" || c.Flags().Changed("instance") {
		if err := tracefs.ValidateInstanceName(g.Instance); err != nil {
			return err
		}
	}
	if !slices.Contains(colorModes, g.Color) {
		return InvalidInput(fmt.Errorf("--color must be auto, always or never, not %q", g.Color))
	}
	if g.LockTimeout < 0 {
		return InvalidInput(fmt.Errorf("--lock-timeout must not be negative"))
	}
	if f := c.Flags().Lookup("ready-fd"); f != nil && f.Changed {
		w, err := openReadyFD(g.ReadyFD)
		if err != nil {
			return err
		}
		g.ready = w
	}
	return nil
}

// rootFlags declares the global flags, every command's, and their completions (and that no
// argument completes as a file unless a command says so).
func rootFlags(root *cobra.Command, g *Globals) {
	pf := root.PersistentFlags()
	pf.StringVar(&g.TracefsDir, "tracefs", "", "use the tracing directory `DIR` (default: $FTCTL_TRACEFS, else found in /proc/self/mountinfo)")
	pf.StringVarP(&g.Instance, "instance", "B", "", "trace instance `NAME` (default: the top-level trace array)")
	g.outputFlag(root)
	pf.BoolVar(&g.DryRun, "dry-run", false, "print each write that would happen, in order, and change nothing")
	pf.BoolVar(&g.ShowWrites, "show-writes", false, "print each write, mkdir and rmdir on stderr as it is made, as --dry-run prints them (with \"+ \")")
	pf.BoolVarP(&g.Quiet, "quiet", "q", false, "print no notices on stderr (errors still are)")
	pf.DurationVar(&g.LockTimeout, "lock-timeout", 5*time.Second, "give up (exit 5) after `D` waiting for another ftctl's lock without it changing hands")
	pf.StringVar(&g.Color, "color", "auto", "colour output `WHEN`: auto (a terminal, NO_COLOR unset, TERM not dumb), always or never")
	registerFlagCompletion(root, "tracefs", cobra.FixedCompletions(nil, cobra.ShellCompDirectiveFilterDirs))
	registerFlagCompletion(root, "instance", completeInstanceNames(g))
	registerFlagCompletion(root, "color", cobra.FixedCompletions(colorModes, noFiles))
	root.CompletionOptions.SetDefaultShellCompDirective(noFiles) // see complete.go
}

// commandGroups sort the root's help by job, the main ones first.
var commandGroups = []struct {
	id, title string
	commands  []string
}{
	{"trace", "Trace and measure (each in a session of its own, torn down at the end):",
		[]string{"trace", "record", "report", "count", "latency", "hist", "graph", "stream", "tui"}},
	{"keep", "Declare a setup and keep it (profiles, flight recorders: no process needed):",
		[]string{"apply", "plan", "diff", "export", "delete", "profile", "flight", "agent"}},
	{"setup", "Set tracing up by hand:", []string{"filter", "notrace", "probe", "instance", "functions", "list"}},
	{"inspect", "See and clean up:", []string{"status", "reset", "mount", "version", "completion", "help"}},
}

// subcommands are the root's commands.
func subcommands(g *Globals) []*cobra.Command {
	return []*cobra.Command{
		NewCmdStatus(g, nil), NewCmdMount(g, nil), NewCmdInstance(g), NewCmdFunctions(g, nil),
		NewCmdFilter(g, filters.FilterFile), NewCmdFilter(g, filters.NotraceFile), NewCmdStream(g, nil),
		NewCmdProbe(g), NewCmdTrace(g, nil), NewCmdRecord(g, nil), NewCmdReport(g, nil), NewCmdHist(g, nil),
		NewCmdLatency(g, nil), NewCmdCount(g, nil), NewCmdGraph(g, nil), NewCmdTUI(g, nil), NewCmdReset(g, nil),
		NewCmdExport(g, nil), NewCmdPlan(g, nil), NewCmdApply(g, nil), NewCmdDiff(g, nil), NewCmdDelete(g, nil),
		NewCmdFlight(g), NewCmdAgent(g, nil), NewCmdList(g), NewCmdProfile(g), NewCmdVersion(g, nil),
	}
}

// groupCommands puts each of the root's commands in its group (commandGroups).
func groupCommands(root *cobra.Command) {
	of := map[string]string{}
	for _, g := range commandGroups {
		root.AddGroup(&cobra.Group{ID: g.id, Title: g.title})
		for _, c := range g.commands {
			of[c] = g.id
		}
	}
	root.SetHelpCommandGroupID("inspect")
	root.SetCompletionCommandGroupID("inspect")
	for _, c := range root.Commands() {
		c.GroupID = of[c.Name()]
	}
}

// aliases are the names people type for the commands every group shares.
var aliases = map[string][]string{"list": {"ls"}, "show": {"ls", "list"}, "remove": {"rm"}}

// groupsRefuseTypos makes every command group (filter, probe, instance...) refuse an unknown
// subcommand as invalid input (exit 2) with close names, as cobra does only for the root (a
// group would print its help and exit 0: a typo in a script would succeed), and gives list and
// remove their usual aliases. A group named alone prints its help.
func groupsRefuseTypos(c *cobra.Command) {
	for _, sub := range c.Commands() {
		if extra, ok := aliases[sub.Name()]; ok {
			sub.Aliases = append(sub.Aliases, extra...)
		}
		groupsRefuseTypos(sub)
	}
	if !c.HasSubCommands() {
		return
	}
	c.SuggestionsMinimumDistance = 2
	c.Args = func(c *cobra.Command, a []string) error {
		if len(a) == 0 {
			return nil
		}
		msg := fmt.Sprintf("unknown command %q for %q", a[0], c.CommandPath())
		if s := c.SuggestionsFor(a[0]); len(s) > 0 {
			msg += "; did you mean " + strings.Join(s, " or ") + "?"
		}
		return InvalidInput(fmt.Errorf("%s\nsee '%s --help'", msg, c.CommandPath()))
	}
	if c.RunE == nil && c.Run == nil {
		c.RunE = func(c *cobra.Command, _ []string) error { return c.Help() }
	}
}

// Main runs ftctl with the process's arguments and returns its exit code.
func Main() int {
	if len(os.Args) > 1 && os.Args[1] == session.GateArg { // ftctl trace -- COMMAND's gate
		return session.Gate(os.Args[2:])
	}
	return Run(context.Background(), os.Args[1:], os.Stdin, os.Stdout, os.Stderr)
}

// Run runs ftctl with args and IO streams. SIGINT, SIGTERM and SIGHUP cancel the command's
// context with the signal as its cause, and a command they end exits 128+N (130, 143, 129).
func Run(ctx context.Context, args []string, in io.Reader, out, errw io.Writer) int {
	// A closed stdout (| head) makes writes fail with EPIPE instead of killing ftctl: the
	// command ends quietly with exit 0 (see below).
	signal.Ignore(syscall.SIGPIPE)
	ctx, stop := withSignals(ctx)
	defer stop()
	g := &Globals{In: in, Out: out, Err: errw, start: time.Now()}
	defer g.closeReady()
	root := NewRootCmd(g)
	root.SetArgs(args)
	err := unknownWithHelp(args)
	if err == nil {
		err = root.ExecuteContext(ctx)
	}
	if err == nil {
		return ExitOK
	}
	if ctx.Err() != nil && (errors.Is(err, context.Canceled) || errors.Is(err, ErrInterrupted)) {
		var se *SignalError
		if errors.As(context.Cause(ctx), &se) {
			err = se
		} else {
			err = ErrInterrupted
		}
	}
	code := ExitCode(err)
	if withCommand(root, args) {
		code = ExitCodeWithCommand(err)
	}
	if errors.Is(err, syscall.EPIPE) { // stdout closed under us (| head): quietly done
		return ExitOK
	}
	if errors.As(err, new(*CommandExit)) { // ftctl trace -- COMMAND: its status, no message
		return code
	}
	msg := session.Reword(err, flagWords).Error()
	if !strings.HasSuffix(msg, "\n") {
		msg += "\n"
	}
	fmt.Fprint(errw, "ftctl: "+msg)
	return code
}

// flagWords are the flags that set a session's fields, for the engine's errors (session.Reword).
var flagWords = map[session.Field]string{
	session.FieldTracer: "--tracer", session.FieldFunctions: "-f/-n", session.FieldProbe: "-p", session.FieldEvent: "-e",
	session.FieldEventFilter: "--filter", session.FieldBufferKB: "--buffer-kb", session.FieldClock: "--clock", session.FieldOption: "-O",
}

// withSignals is signal.NotifyContext that keeps the signal: the context is cancelled with a
// *SignalError as its cause, so that the exit status can say which signal it was.
func withSignals(parent context.Context) (context.Context, func()) {
	ctx, cancel := context.WithCancelCause(parent)
	ch := make(chan os.Signal, 1)
	signal.Notify(ch, os.Interrupt, syscall.SIGTERM, syscall.SIGHUP)
	done := make(chan struct{})
	go func() {
		for {
			select {
			case sig := <-ch:
				if h := hupClaim.Load(); sig == syscall.SIGHUP && h != nil {
					select {
					case *h <- struct{}{}:
					default: // one reload pending is enough
					}
					continue
				}
				cancel(&SignalError{Signal: sig.(syscall.Signal)})
				return
			case <-done:
				return
			}
		}
	}()
	return ctx, func() {
		signal.Stop(ch)
		close(done)
		cancel(nil)
	}
}

// hupClaim, when set, receives SIGHUP instead of it ending the command: a daemon's "read your
// configuration again" (claimSIGHUP).
var hupClaim atomic.Pointer[chan struct{}]

// claimSIGHUP makes SIGHUP a reload for a daemon command (agent, flight arm -f): the returned channel receives
// it, until release.
func claimSIGHUP() (<-chan struct{}, func()) {
	ch := make(chan struct{}, 1)
	hupClaim.Store(&ch)
	return ch, func() { hupClaim.Store(nil) }
}

// pflagShorthand matches pflag's message for a short flag the command lacks.
var pflagShorthand = regexp.MustCompile(`^unknown shorthand flag: '(.)' in `)

// peerFlags are the short flags of trace-cmd and perf that people type by habit, and the ftctl
// flag that does the same (when the command has it): trace-cmd record -l FUNC, -F, -P PID,
// -c, -g FUNC, -p TRACER; perf's -a and -C CPU.
var peerFlags = map[string]struct{ flag, hint string }{
	"l": {"function", "trace-cmd's -l FUNC is -f FUNC here"},
	"F": {"pid", "trace-cmd's -F is ftctl's default for a command after --: only it and its children are traced"},
	"P": {"pid", "trace-cmd's -P PID is --pid PID here"},
	"c": {"pid", "ftctl follows the children of --pid and of a command after -- always (trace-cmd's -c)"},
	"g": {"function", "trace-cmd's -g FUNC is 'ftctl graph FUNC' (or --tracer function_graph -f FUNC)"},
	"a": {"", "ftctl traces every CPU by default (perf's -a)"},
}

// peerHint answers a peer's short flag with ftctl's spelling: "" when the flag is not one of
// theirs, or the command has no equivalent.
func peerHint(c *cobra.Command, err error) string {
	m := pflagShorthand.FindStringSubmatch(err.Error())
	if m == nil {
		return ""
	}
	p, ok := peerFlags[m[1]]
	if !ok || (p.flag != "" && c.Flags().Lookup(p.flag) == nil) {
		return ""
	}
	return "; " + p.hint
}

// withCommand says whether args run `ftctl trace ... -- COMMAND`, whose exit status follows
// the env(1) convention (ExitCodeWithCommand), for flag errors too.
func withCommand(root *cobra.Command, args []string) bool {
	dash := slices.Index(args, "--")
	if dash < 0 || dash == len(args)-1 {
		return false
	}
	c, _, err := root.Find(args[:dash])
	return err == nil && (c.Name() == "trace" || c.Name() == "latency" || c.Name() == "count" || c.Name() == "record" || c.Name() == "graph") && c.Parent() == root
}

// pflagNumber matches pflag's message for a number that does not parse: `invalid argument "abc"
// for "--pid" flag: strconv.ParseInt: parsing "abc": invalid syntax`.
var pflagNumber = regexp.MustCompile(`^invalid argument (".*") for "(-[^"]*)" flag: strconv\.\w+: parsing ".*": (invalid syntax|value out of range)$`)

// pflagDuration matches pflag's message for a duration without a unit: `invalid argument "5"
// for "--duration" flag: time: missing unit in duration "5"`.
var pflagDuration = regexp.MustCompile(`^invalid argument "(.*)" for "(-[^"]*)" flag: time: missing unit in duration ".*"$`)

// flagErrorText says what is wrong with a flag's value in a user's words, without Go's
// parser names.
func flagErrorText(err error) string {
	if m := pflagDuration.FindStringSubmatch(err.Error()); m != nil {
		name, _, _ := strings.Cut(m[2], ",")
		return fmt.Sprintf("%s %s: a duration needs a unit (ms, s, m, h): %ss?", name, strconv.Quote(m[1]), m[1])
	}
	m := pflagNumber.FindStringSubmatch(err.Error())
	if m == nil {
		return err.Error()
	}
	what := "not a whole number"
	if m[3] == "value out of range" {
		what = "out of range"
	}
	// "--pid, -p" style names: keep the long one.
	name, _, _ := strings.Cut(m[2], ",")
	return fmt.Sprintf("%s %s: %s", name, m[1], what)
}
