package cmd

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/ftctl/ftctl/eventfilter"
	"github.com/ftctl/ftctl/probes"
	"github.com/ftctl/ftctl/session"
	"github.com/ftctl/ftctl/tracefs"
)

// NewCmdProbe builds `ftctl probe add|list|remove|enable|disable|format|args|fields`.
func NewCmdProbe(g *Globals) *cobra.Command {
	c := &cobra.Command{
		Use:     "probe",
		Aliases: []string{"probes", "kprobe"},
		Short:   "Define, list, enable and remove kprobes, uprobes, fprobes, tracepoint and event probes",
		Long: `kprobes trace any kernel function (or instruction) with the arguments you choose, through
kprobe_events; fprobes (a function's entry or exit, through ftrace), tracepoint probes (a
tracepoint's arguments as BTF types them) and event probes (another event's fields, filtered)
through dynamic_events, where this kernel's tracefs README announces them. ftctl checks a
definition against the grammar the README announces before anything is written, and against
kallsyms, the functions ftrace can trace, BTF and the attached event's format, with the
kernel's own wording and a caret under the offending text; what only the kernel can judge is
shown from the kernel's error_log, its caret moved under what you typed.

Definitions are kprobe_events / dynamic_events syntax:
  p[:[GROUP/]EVENT] [MOD:]SYM[+OFFS]|ADDR [ARGS]      a kprobe
  r[MAXACTIVE][:[GROUP/]EVENT] SYM [ARGS]             a kretprobe (or p ... SYM%return)
  p|r[:[GROUP/]EVENT] PATH:SYMBOL[+OFFS]|PATH:0xOFFSET [ARGS]
                                                      a uprobe or uretprobe (user space)
  f[MAXACTIVE][:[GROUP/]EVENT] SYM[%return] [ARGS]    an fprobe (SYM may be a glob; an
                                                      argument with $retval makes it an exit)
  t[:[GROUP/]EVENT] TRACEPOINT [ARGS]                 a tracepoint probe (BTF argument names)
  e[:[GROUP/]EVENT] SYSTEM.EVENT [ARGS] [if FILTER]   an event probe: ARGS fetch $FIELD
  ARG: [NAME=]FETCHARG[:TYPE]   FETCHARG: %REG $stackN $stack $retval $comm $argN @ADDR
       @SYM[+|-OFFS] +|-[u]OFFS(FETCHARG) \IMM \"STR" and, with BTF, parameter names,
       $arg* and ->fields (no %REG in f, t and e; $FIELD only in e)   TYPE: u8..u64
       s8..s64 x8..x64 char string ustring symstr symbol b<W>@<O>/<SIZE> %pd %pD TYPE[N]
Without a group, probes go to group "ftctl"; without an event name, the kernel names the event
and ftctl prints the name. Probes of other groups are listed but changed only when named with
their group, and an event that exists is never added to unless asked (probe add --append).
kprobe_events, uprobe_events and dynamic_events are only ever appended to (never truncated:
that deletes every probe on the system), and removal disables the event everywhere first.

Uprobes go to uprobe_events, which takes a file offset: ftctl resolves PATH:SYMBOL from the
ELF file's symbol tables (executables, PIEs, shared libraries, static and Go binaries: the
symbol's address mapped to its file offset through the PT_LOAD segment that holds it), writes
PATH:0xOFFSET with the path made absolute, and 'probe list' shows the symbol again. Their
arguments are registers, $stack, $stackN, $retval, $comm, memory (+OFFS(...), @ADDR,
@+FILE_OFFSET) and immediates: user space has no BTF, so no $argN or parameter names.
'ftctl probe syms PATH' lists the functions a uprobe can take. Return probes on Go binaries
are refused unless --force: the Go runtime moves goroutine stacks and finds the uretprobe's
return address there, which can crash the program.`,
		Args: args(cobra.NoArgs),
	}
	c.AddCommand(NewCmdProbeAdd(g, nil), NewCmdProbeList(g, nil), NewCmdProbeRemove(g, nil),
		NewCmdProbeEnable(g, true, nil), NewCmdProbeEnable(g, false, nil), NewCmdProbeFormat(g, nil),
		NewCmdProbeArgs(g, nil), NewCmdProbeFields(g, nil), NewCmdProbeSyms(g, nil))
	return c
}

const (
	probeAddJSON = `One object: "name" (GROUP/EVENT), "group", "event", "written" (the line ftctl wrote
to kprobe_events, or dynamic_events for f, t and e), "definitions" (how the kernel lists what was added), "appended" (true when
--append added a probe point to an event that existed), "enabled" (--enable), "instance" (-B,
"" for the top level) and "filter" (--filter). A uprobe adds "uprobe": {"path" (absolute),
"offset" (the file offset written), "symbol" and "symbol_offset" ("" and 0 when the place was
an offset that starts no function), "segment" (the PT_LOAD segment holding the offset, e.g.
"PT_LOAD[1] r-x vaddr 0x401000 offset 0x1000"), "go" (a Go binary)}.`

	probeListJSON = `An array, one object per line of kprobe_events and per fprobe, tracepoint probe and
event probe of dynamic_events:

  [{"name": "ftctl/myopen", "group": "ftctl", "event": "myopen", "type": "kprobe",
    "definition": "p:ftctl/myopen do_sys_openat2 dfd=%di", "place": "do_sys_openat2",
    "owner": "ftctl", "enabled_in": ["", "incident"]}]

type is kprobe, kretprobe, uprobe, uretprobe, fprobe, fexit (an fprobe on a function's
return), tprobe or eprobe ("" when ftctl cannot parse the kernel's line); a uprobe's "place"
is PATH:SYMBOL[+OFFS] read back from the ELF file (PATH:0xOFFSET when the file is gone or has
no symbol there) and it has "uprobe": {"path", "offset", "symbol", "symbol_offset",
"segment"}; an event probe's "filter" is its "if FILTER", with "filter_from": "kernel" when
the kernel lists it, "ftctl" when the kernel does not (6.12) and it comes from ftctl's record
of the event probes it added (/run/ftctl); owner is ftctl for
the groups ftctl uses (ftctl, ftctl_PID), else other; enabled_in lists the trace arrays where
the event is enabled ("" is the top level).`

	probeRemoveJSON = `One object, "removed": the GROUP/EVENT names removed (a probe already gone is not listed).`

	probeArgsJSON = `One object: "kind" ("function", or "tracepoint" for t:), "func" (the function or
tracepoint), "system" (a tracepoint's, when given), "module" ("" for the kernel itself),
"params" (each with "name" and "type", the C type) and "return" (the C type, "void" when none
and for a tracepoint):

  {"kind": "function", "func": "vfs_read", "module": "", "params": [{"name": "file",
    "type": "struct file *"}, {"name": "buf", "type": "char *"}, {"name": "count", "type":
    "size_t"}, {"name": "pos", "type": "loff_t *"}], "return": "ssize_t"}`

	probeFormatJSON = `One object: "name", "id", "fields" (each with "name", "type", "offset", "size",
"signed", and "common" for the common_* fields every event has) and "print_fmt".`
)

// ProbeAddOptions are the inputs of `ftctl probe add`.
type ProbeAddOptions struct {
	G          *Globals
	Definition string // the words of the definition, joined by spaces
	Filter     string
	Enable     bool
	Append     bool
	Force      bool // pass what ftctl refuses as unsafe or misleading (probes.Parser.Force)
	Create     bool // --create: make a missing -B instance (for --enable and --filter)
}

// NewCmdProbeAdd builds `ftctl probe add`.
func NewCmdProbeAdd(g *Globals, runF func(context.Context, *ProbeAddOptions) error) *cobra.Command {
	opts := &ProbeAddOptions{G: g}
	c := &cobra.Command{
		Use:   "add DEFINITION",
		Short: "Define a kprobe, kretprobe, uprobe, uretprobe, fprobe, tracepoint probe or event probe",
		Long: `Define a probe. The definition is checked against this kernel's probe grammar first: a
mistake exits 2 with a caret under it and nothing written. The kernel can still refuse (an
unknown symbol, an argument BTF does not know, a probe that exists): ftctl then shows the
kernel's own error_log message under your text, names the existing probe or close symbol
names, and exits 3. With --filter or --enable, a failure of either removes the probe again.

An event that exists already is refused (exit 2, naming it): since Linux 5.7 the kernel would
make the definition another probe point of that event, which may be someone else's. --append
does that on purpose; the event's filter and enablement are then the whole event's, and when
--filter or --enable fails, only the probe point added is removed and the event's previous
filter restored.

A uprobe's PATH:SYMBOL is resolved from the ELF file first (exit 2 naming the file and the
reason: no such file, not ELF, no such function, several, an offset past its end); a notice
on stderr says which file offset and PT_LOAD segment it became.

--force passes what ftctl refuses although the kernel may take it, each with a warning on
stderr: a return probe on a Go binary (unsafe: the Go runtime moves stacks); on a uprobe,
r<N> (the kernel ignores N and the name after it and names the event itself, in group
uprobes), the symbol and symstr types (a kernel symbol lookup of a user address: the kernel
prints the bare address, or refuses the type), and $retval->FIELD (user space has no BTF: the
kernel records $retval itself, on kernels that take it at all). What the kernel refuses
stays refused.

The definition may be given as one quoted argument or as several words.`,
		Example: `  sudo ftctl probe add 'p:myopen do_sys_openat2 dfd=%di filename=+0(%si):string'
  sudo ftctl probe add 'r:myret vfs_read ret=$retval' --enable
  sudo ftctl probe add 'p vfs_read count pos'             # BTF names (6.5+ kernels built with BTF)
  sudo ftctl probe add 'r4:ftctl/ret vfs_write%return ret=$retval:s64' -B incident
  sudo ftctl probe add 'p:opens do_sys_openat2 f=+0(%si):string' --filter 'f ~ "/etc/*"' --enable
  sudo ftctl probe add --append 'p:ftctl/myopen do_sys_open dfd=%di filename=+0(%si):string'
  sudo ftctl probe add 'p:rl /bin/bash:readline prompt=+0(%di):string'     # a uprobe
  sudo ftctl probe add 'r:rlret /bin/bash:readline line=+0($retval):string'
  sudo ftctl probe add 'p:m /usr/lib/x86_64-linux-gnu/libc.so.6:malloc size=%di'
  sudo ftctl probe add 'f:reads vfs_read count file->f_flags'      # fprobe (README: f[:...])
  sudo ftctl probe add 'f:readret vfs_read%return ret=$retval'
  sudo ftctl probe add 't:sw sched_switch prev->pid next->comm:string'   # tracepoint probe
  sudo ftctl probe add 'e:openat syscalls.sys_enter_openat fn=+0($filename):ustring if flags != 0'`,
		Args:              args(cobra.MinimumNArgs(1)),
		Annotations:       map[string]string{AnnotationJSON: probeAddJSON},
		ValidArgsFunction: completeProbeDefinition(g, false),
		RunE: func(c *cobra.Command, words []string) error {
			opts.Definition = strings.Join(words, " ")
			return runCmd(c, runF, probeAddRun, opts)
		},
	}
	c.Flags().StringVar(&opts.Filter, "filter", "", "event filter `EXPR` for the new event (events/GROUP/EVENT/filter)")
	c.Flags().BoolVar(&opts.Enable, "enable", false, "enable the event (in the -B instance, else the top level)")
	c.Flags().BoolVar(&opts.Append, "append", false, "add the probe point to the event when it exists (the kernel merges probes of one event name)")
	c.Flags().BoolVar(&opts.Force, "force", false, forceUsage)
	registerCreate(c, &opts.Create)
	return c
}

// forceUsage is the --force of probe add, trace and the console.
// (the cases: probes.Parser.Force, and probe add's help).
const forceUsage = "define probes ftctl refuses as unsafe or misleading anyway"

// noticeForced warns on stderr of each refusal --force overrode.
func noticeForced(g *Globals, d *probes.Definition) {
	for _, why := range d.Forced {
		g.Notice("--force: %s", safe(why))
	}
}

func probeAddRun(ctx context.Context, opts *ProbeAddOptions) error {
	g := opts.G
	fs, err := g.FS()
	if err != nil {
		return err
	}
	m, d, err := parseProbeAdd(g, fs, opts)
	if err != nil {
		return err
	}
	fs, lock, err := g.BeginWrite(ctx)
	if err != nil {
		return err
	}
	defer lock.Unlock()
	aopt := probes.AddOptions{Filter: opts.Filter, Enable: opts.Enable, Append: opts.Append}
	if opts.Filter != "" || opts.Enable {
		if aopt.Instance, err = g.WriteInstance(fs, opts.Create); err != nil {
			return err
		}
	}
	a, err := m.Add(ctx, d, aopt)
	if err != nil {
		return probeAddError(err)
	}
	return printProbeAdded(g, opts, d, a)
}

// parseProbeAdd parses and checks the definition (exit 2 for a mistake, with the close names
// of a symbol that does not exist) and the filter's syntax, before anything is written.
func parseProbeAdd(g *Globals, fs *tracefs.FS, opts *ProbeAddOptions) (*probes.Manager, *probes.Definition, error) {
	m := probes.NewManager(fs)
	m.Parser.Kernel = probes.NewKernel(fs) // kallsyms and BTF, read when a definition needs them
	m.Parser.User = probes.NewUserSpace()  // ELF files, read when a uprobe names one
	m.Parser.Force = opts.Force
	d, err := m.Parser.Parse(opts.Definition)
	var se *probes.SyntaxError
	if errors.As(err, &se) && se.Symbol != "" {
		if names := m.Parser.Kernel.Suggest(se.Symbol); len(names) > 0 {
			se.Hint = "no such symbol; did you mean " + strings.Join(names, ", ") + "?"
		}
	}
	if err != nil {
		return nil, nil, syntaxError(err)
	}
	if d.Kind == probes.Delete {
		return nil, nil, InvalidInput(fmt.Errorf("%q removes a probe: use ftctl probe remove", opts.Definition))
	}
	noticeForced(g, d)
	if err := m.CheckFile(d); err != nil {
		return nil, nil, err
	}
	if opts.Filter != "" { // its syntax before anything is written; its fields once the event exists
		if _, err := eventfilter.Parse(opts.Filter); err != nil {
			return nil, nil, InvalidInput(filterError(err))
		}
	}
	return m, d, nil
}

// probeAddError maps the errors of Manager.Add to the exit table, with what to do about them.
func probeAddError(err error) error {
	var re *probes.RejectedError
	var ee *probes.ExistsError
	var fe *eventfilter.Error
	switch {
	case errors.Is(err, probes.ErrSyntax): // the line as written, with its group, is too long
		return syntaxError(err)
	case errors.As(err, &fe): // checked against the new event's fields; the probe was taken back
		return InvalidInput(fmt.Errorf("%w\n  %s", filterError(err), safe(strings.TrimSuffix(err.Error(), ": "+fe.Error()))))
	case errors.As(err, &re):
		return rejectedError(re)
	case errors.As(err, &ee):
		return &explained{msg: safe(err.Error()) + "\n  --append adds the probe point to that event on purpose", err: err}
	}
	return err
}

// printProbeAdded says what was added: with -o json an object; else the event's name on stdout
// and what the kernel did beyond the asked on stderr (nothing in a dry run, which printed its
// writes).
func printProbeAdded(g *Globals, opts *ProbeAddOptions, d *probes.Definition, a *probes.Added) error {
	out := probeAddDoc{
		Group: a.Group, Event: a.Event, Name: a.Group + "/" + a.Event,
		Written: a.Written, Definitions: nonNil(a.Lines), Appended: a.Appended,
		Enabled: opts.Enable, Instance: g.Instance, Filter: opts.Filter,
	}
	if d.IsUprobe() {
		out.Uprobe = uprobeJSON(d.Uprobe)
	}
	if ok, err := g.printDoc(probeAddFormat, out); ok {
		return err
	}
	if g.DryRun {
		return nil
	}
	fmt.Fprintf(g.Out, "%s/%s\n", safe(a.Group), safe(a.Event))
	if d.IsUprobe() {
		noticeUprobe(g, d.Uprobe)
	}
	if _, _, renamed := d.KernelName(); d.Event == "" || renamed {
		g.Notice("the kernel named the event %s/%s", safe(a.Group), safe(a.Event))
	}
	if a.Appended {
		g.Notice("added a probe point to %s/%s, which existed already", safe(a.Group), safe(a.Event))
	}
	if a.Warning != "" {
		g.Notice("%s", safe(a.Warning))
	}
	if opts.Enable {
		g.Notice("enabled %s/%s in the %s", safe(a.Group), safe(a.Event), labelOf(g.Instance))
	}
	return nil
}

func labelOf(instance string) string {
	if instance == "" {
		return "top level"
	}
	return fmt.Sprintf("instance %q", instance)
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

// syntaxError renders a refused definition: the message, the definition with a caret under
// the offending text, and a hint. It stays a probes.ErrSyntax (exit 2, by the table).
func syntaxError(err error) error {
	var se *probes.SyntaxError
	if !errors.As(err, &se) {
		return err
	}
	msg := "invalid probe definition: " + se.Msg + "\n" + probes.Caret("  ", safeKeepWidth(se.Source), se.Pos)
	if se.Hint != "" {
		msg += "\n" + se.Hint
	}
	return &explained{msg: msg, err: err}
}

// safeKeepWidth replaces control characters one for one, so that a caret stays under its
// character.
func safeKeepWidth(s string) string {
	return strings.Map(func(r rune) rune {
		if r < 0x20 || r == 0x7f || (r >= 0x80 && r < 0xa0) {
			return '?'
		}
		return r
	}, s)
}

// explained is an error shown as msg, its exit code still that of err (a probe syntax error:
// 2; the kernel's refusal: 3).
type explained struct {
	msg string
	err error
}

func (e *explained) Error() string { return e.msg }
func (e *explained) Unwrap() error { return e.err }

// writeKernelRefusal writes what the kernel refused: the headline with the errno, and its
// error_log entry with the caret moved under the user's text.
func writeKernelRefusal(b *strings.Builder, headline string, err error, d *tracefs.KernelDiagnosis) {
	b.WriteString(headline)
	var te *tracefs.Error
	if errors.As(err, &te) && te.Errno != nil {
		fmt.Fprintf(b, " (%v)", te.Errno)
	}
	if d != nil {
		b.WriteString("\n  kernel error_log: " + safe(d.Message))
		if d.Pos >= 0 {
			b.WriteString("\n" + probes.Caret("    ", safeKeepWidth(d.Source), d.Pos))
		}
	}
}

func rejectedError(re *probes.RejectedError) error {
	var b strings.Builder
	writeKernelRefusal(&b, "the kernel rejected the probe definition", re.Err, re.Diagnosis)
	if len(re.Existing) > 0 {
		b.WriteString("\n  a probe of that name already exists:")
		for _, l := range re.Existing {
			b.WriteString("\n    " + safe(l))
		}
		b.WriteString("\n  remove it first (ftctl probe remove NAME) or choose another event name")
	}
	if len(re.Suggestions) > 0 {
		b.WriteString("\n  no such symbol; close function names: " + safe(strings.Join(re.Suggestions, ", ")))
	}
	if re.NotTraceable {
		b.WriteString("\n  ftrace cannot trace " + safe(re.Def.Symbol) + " (it is not in available_filter_functions): kprobe events refuse such code unless the kernel is built with CONFIG_KPROBE_EVENTS_ON_NOTRACE")
	}
	if re.Diagnosis == nil && len(re.Existing) == 0 {
		b.WriteString("\n  " + safe(re.Err.Error()))
	}
	b.WriteString("\n  ftctl wrote: " + safe(re.Written))
	return &explained{msg: b.String(), err: re.Err}
}

// ProbeListOptions are the inputs of `ftctl probe list`.
type ProbeListOptions struct {
	G *Globals
}

// NewCmdProbeList builds `ftctl probe list`.
func NewCmdProbeList(g *Globals, runF func(context.Context, *ProbeListOptions) error) *cobra.Command {
	opts := &ProbeListOptions{G: g}
	return &cobra.Command{
		Use:   "list",
		Short: "List every probe: its kind, definition, owner and where it is enabled",
		Long: `List every probe of the system: the kprobes of kprobe_events, the uprobes of uprobe_events
and the fprobes, tracepoint probes and event probes of dynamic_events, with the kind, the
owner: "ftctl" for the groups ftctl uses (ftctl, and ftctl_PID_ID for trace sessions),
"other" for everything else, and the trace arrays it is enabled in. A uprobe's place is shown
as PATH:SYMBOL[+OFFS], the symbol read back from the ELF file (the kernel lists a file
offset). Read only.`,
		Example: `  sudo ftctl probe list
  sudo ftctl probe list -o json | jq -r '.items[] | select(.owner == "ftctl") | .name'`,
		Args:        args(cobra.NoArgs),
		Annotations: map[string]string{AnnotationJSON: probeListJSON},
		RunE: func(c *cobra.Command, _ []string) error {
			return runCmd(c, runF, probeListRun, opts)
		},
	}
}

func probeListRun(_ context.Context, opts *ProbeListOptions) error {
	g := opts.G
	fs, err := g.FS()
	if err != nil {
		return err
	}
	list, err := probes.NewManager(fs).List()
	if err != nil {
		return err
	}
	out := []probeListEntry{}
	for _, p := range list {
		out = append(out, probeListEntry{p.Name(), p})
	}
	if ok, err := g.printDoc(probeListFormat, out); ok {
		return err
	}
	if len(list) == 0 {
		g.Notice("no probes")
		return nil
	}
	tw := tabwriter.NewWriter(g.Out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "NAME\tTYPE\tOWNER\tENABLED IN\tDEFINITION")
	for _, p := range list {
		var where []string
		for _, w := range p.EnabledIn {
			if w == "" {
				w = "(top)"
			}
			where = append(where, w)
		}
		en := strings.Join(where, ",")
		if en == "" {
			en = "-"
		}
		typ := p.Type
		if typ == "" {
			typ = "?"
		}
		def := p.Definition
		if p.Uprobe != nil && p.Uprobe.Symbol != "" {
			def += "  # " + p.Place
		}
		if p.FilterFrom == "ftctl" {
			def += "  # if " + p.Filter + " (ftctl's record: the kernel does not list it)"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", safe(p.Name()), typ, p.Owner, safe(en), safe(def))
	}
	return tw.Flush()
}

// ProbeRemoveOptions are the inputs of `ftctl probe remove`.
type ProbeRemoveOptions struct {
	G        *Globals
	Names    []string
	AllOwned bool
}

// NewCmdProbeRemove builds `ftctl probe remove`.
func NewCmdProbeRemove(g *Globals, runF func(context.Context, *ProbeRemoveOptions) error) *cobra.Command {
	opts := &ProbeRemoveOptions{G: g}
	c := &cobra.Command{
		Use:   "remove NAME... | --all-owned",
		Short: "Remove probes of any kind (disabled everywhere first; already gone is fine)",
		Long: `Remove probes: kprobes, uprobes, fprobes, tracepoint probes, event probes. NAME is
GROUP/EVENT, or EVENT for ftctl's group; a probe of another group must be named with its
group. Each probe is first disabled in every trace array where it is enabled (the kernel
refuses to delete an enabled probe), then deleted with "-:GROUP/EVENT" from the file that
lists it (kprobe_events, uprobe_events, or dynamic_events for the other kinds).
A probe that does not exist (any more) is reported and counts as removed.

--all-owned removes the probes of group ftctl and those of ftctl sessions that are gone (groups
ftctl_PID_ID whose instance ftctl-PID-ID is gone); a session whose instance exists may be
running, so its probes are left to it ('ftctl reset' tells, and removes both when it is not).`,
		Example: `  sudo ftctl probe remove myopen
  sudo ftctl probe remove kprobes/theirs      # another group: only when named
  sudo ftctl probe remove --all-owned`,
		Annotations:       map[string]string{AnnotationJSON: probeRemoveJSON},
		ValidArgsFunction: completeProbeNames(g),
		RunE: func(c *cobra.Command, names []string) error {
			opts.Names = names
			return runCmd(c, runF, probeRemoveRun, opts)
		},
	}
	c.Flags().BoolVar(&opts.AllOwned, "all-owned", false, "remove every probe of ftctl's groups (not those of running trace sessions)")
	return c
}

func probeRemoveRun(ctx context.Context, opts *ProbeRemoveOptions) error {
	g := opts.G
	if opts.AllOwned == (len(opts.Names) > 0) {
		return InvalidInput(errors.New("give probe names or --all-owned (not both)"))
	}
	m, list, unlock, err := lockedProbes(ctx, g)
	if err != nil {
		return err
	}
	defer unlock()
	var targets []probeTarget
	if opts.AllOwned {
		seen := map[string]bool{}
		for _, p := range list {
			if seen[p.Name()] || !session.OwnedGroup(p.Group) {
				continue
			}
			seen[p.Name()] = true
			if session.GroupAlive(m.FS, p.Group) {
				g.Notice("leaving %s: its session's instance exists, so the session may be running ('ftctl reset' removes both if it is not)", safe(p.Name()))
				continue
			}
			targets = append(targets, probeTarget{p.Group, p.Event})
		}
	} else {
		for _, n := range opts.Names { // resolve all before removing any
			grp, ev, err := probes.Resolve(list, n)
			switch {
			case errors.Is(err, probes.ErrNoProbe):
				g.Notice("%s: no such probe (already removed)", safe(grp+"/"+ev))
				continue
			case err != nil:
				return InvalidInput(err)
			}
			targets = append(targets, probeTarget{grp, ev})
		}
	}
	removed := []string{}
	for _, t := range targets {
		if err := m.Remove(ctx, t.group, t.event); err != nil {
			return err
		}
		removed = append(removed, t.group+"/"+t.event)
		if !g.machine() && !g.DryRun {
			fmt.Fprintf(g.Out, "removed %s\n", safe(t.group+"/"+t.event))
		}
	}
	_, err = g.printDoc(probeRemoveFormat, probeRemoveDoc{removed})
	return err
}

// ProbeEnableOptions are the inputs of `ftctl probe enable` and `ftctl probe disable`.
type ProbeEnableOptions struct {
	G      *Globals
	Names  []string
	On     bool // enable, else disable
	Create bool // enable --create: make a missing -B instance
}

// NewCmdProbeEnable builds `ftctl probe enable` (on) or `ftctl probe disable`.
func NewCmdProbeEnable(g *Globals, on bool, runF func(context.Context, *ProbeEnableOptions) error) *cobra.Command {
	opts := &ProbeEnableOptions{G: g, On: on}
	verb, short := "enable", "Enable a probe's event in the top level or the -B instance"
	if !on {
		verb, short = "disable", "Disable a probe's event in the top level or the -B instance"
	}
	c := &cobra.Command{
		Use:               verb + " NAME...",
		Short:             short,
		Example:           fmt.Sprintf("  sudo ftctl probe %s myopen\n  sudo ftctl probe %s ftctl/myopen -B incident", verb, verb),
		Args:              args(cobra.MinimumNArgs(1)),
		ValidArgsFunction: completeProbeNames(g),
		RunE: func(c *cobra.Command, names []string) error {
			opts.Names = names
			return runCmd(c, runF, probeEnableRun, opts)
		},
	}
	if on { // disable never creates: a missing instance has nothing enabled
		registerCreate(c, &opts.Create)
	}
	return c
}

func probeEnableRun(ctx context.Context, opts *ProbeEnableOptions) error {
	g := opts.G
	m, list, unlock, err := lockedProbes(ctx, g)
	if err != nil {
		return err
	}
	defer unlock()
	fs := m.FS
	var targets []probeTarget
	for _, n := range opts.Names {
		grp, ev, err := probes.Resolve(list, n)
		if err != nil {
			return InvalidInput(err)
		}
		targets = append(targets, probeTarget{grp, ev})
	}
	var in *tracefs.Instance
	if opts.On {
		in, err = g.WriteInstance(fs, opts.Create)
	} else {
		in, err = g.ReadInstance(fs)
	}
	if err != nil {
		return err
	}
	verb := "enable"
	if !opts.On {
		verb = "disable"
	}
	for _, t := range targets {
		if err := m.Enable(in, t.group, t.event, opts.On); err != nil {
			return err
		}
		if !g.DryRun {
			g.Notice("%sd %s in the %s", verb, safe(t.group+"/"+t.event), in.Label())
		}
	}
	return nil
}

// ProbeFormatOptions are the inputs of `ftctl probe format`.
type ProbeFormatOptions struct {
	G    *Globals
	Name string
}

// NewCmdProbeFormat builds `ftctl probe format`.
func NewCmdProbeFormat(g *Globals, runF func(context.Context, *ProbeFormatOptions) error) *cobra.Command {
	opts := &ProbeFormatOptions{G: g}
	return &cobra.Command{
		Use:   "format NAME",
		Short: "Show a probe event's fields (its format file)",
		Long: `Show the fields the kernel records for a probe event, from events/GROUP/EVENT/format: the
names to use in --filter expressions and what ftctl stream shows. SYSTEM:EVENT shows any
event's (sched:sched_switch). Common fields (common_*) are listed in JSON only.`,
		Example: `  sudo ftctl probe format myopen
  sudo ftctl probe format kprobes/theirs -o json
  sudo ftctl probe format sched:sched_switch`,
		Args:              args(cobra.ExactArgs(1)),
		Annotations:       map[string]string{AnnotationJSON: probeFormatJSON},
		ValidArgsFunction: completeProbeNames(g),
		RunE: func(c *cobra.Command, names []string) error {
			opts.Name = names[0]
			return runCmd(c, runF, probeFormatRun, opts)
		},
	}
}

// formatField is one field of probe format's JSON.
type formatField struct {
	Name   string `json:"name"`
	Type   string `json:"type"` // with the array's brackets: "u8[4]"
	Offset int    `json:"offset"`
	Size   int    `json:"size"`
	Signed bool   `json:"signed"`
	Common bool   `json:"common"` // common_* fields every event has
}

func probeFormatRun(_ context.Context, opts *ProbeFormatOptions) error {
	g := opts.G
	fs, err := g.FS()
	if err != nil {
		return err
	}
	m := probes.NewManager(fs)
	list, err := m.List()
	if err != nil {
		return err
	}
	grp, ev, err := probes.Resolve(list, opts.Name)
	if err != nil {
		// SYSTEM:EVENT names a tracepoint (any event): its format is shown as a probe's is. It
		// said "no such probe ftctl/sched:sched_switch".
		if system, event, ok := strings.Cut(opts.Name, ":"); ok && !strings.ContainsAny(opts.Name, "/ ") && system != "" && event != "" {
			f, ferr := fs.Top().EventFormat(system, event)
			if ferr == nil {
				return writeFormat(g, system, f)
			}
			return InvalidInput(fmt.Errorf("no probe or event %s ('ftctl probe list' and 'ftctl list events' list them)", safe(opts.Name)))
		}
		return InvalidInput(err)
	}
	f, err := m.ReadFormat(grp, ev)
	if err != nil {
		return err
	}
	return writeFormat(g, grp, f)
}

// writeFormat prints an event's format: its fields (the common ones in JSON only) and print
// fmt, or the JSON object of probeFormatJSON.
func writeFormat(g *Globals, system string, f *tracefs.Format) error {
	fields := []formatField{}
	for _, set := range []struct {
		fields []tracefs.Field
		common bool
	}{{f.Common, true}, {f.Fields, false}} {
		for _, fd := range set.fields {
			fields = append(fields, formatField{fd.Name, fd.Decl(), fd.Offset, fd.Size, fd.Signed, set.common})
		}
	}
	if ok, err := g.printDoc(probeFormatFormat, probeFormatDoc{f.Name, f.ID, fields, f.Print}); ok {
		return err
	}
	fmt.Fprintf(g.Out, "%s/%s (id %d)\n", safe(system), safe(f.Name), f.ID)
	tw := tabwriter.NewWriter(g.Out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "FIELD\tTYPE\tOFFSET\tSIZE\tSIGNED")
	for _, fd := range fields {
		if fd.Common {
			continue
		}
		fmt.Fprintf(tw, "%s\t%s\t%d\t%d\t%v\n", safe(fd.Name), safe(fd.Type), fd.Offset, fd.Size, fd.Signed)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	fmt.Fprintf(g.Out, "print fmt: %s\n", safe(f.Print))
	return nil
}

type probeTarget struct{ group, event string }

// lockedProbes takes the tracefs lock and lists the kprobes, for commands that change them.
func lockedProbes(ctx context.Context, g *Globals) (*probes.Manager, []probes.Probe, func(), error) {
	fs, lock, err := g.BeginWrite(ctx)
	if err != nil {
		return nil, nil, nil, err
	}
	m := probes.NewManager(fs)
	list, err := m.List()
	if err != nil {
		lock.Unlock()
		return nil, nil, nil, err
	}
	return m, list, func() { lock.Unlock() }, nil
}

// ProbeArgsOptions are the inputs of `ftctl probe args`.
type ProbeArgsOptions struct {
	G    *Globals
	Func string // FUNC or MODULE:FUNC
}

// NewCmdProbeArgs builds `ftctl probe args`.
func NewCmdProbeArgs(g *Globals, runF func(context.Context, *ProbeArgsOptions) error) *cobra.Command {
	opts := &ProbeArgsOptions{G: g}
	return &cobra.Command{
		Use:   "args FUNC | MODULE:FUNC | t:[SYSTEM:]TRACEPOINT",
		Short: "List a kernel function's parameters, or a tracepoint's arguments, from BTF",
		Long: `List a function's parameters with their C types and its return type, as the kernel's BTF
describes them (/sys/kernel/btf/vmlinux, and /sys/kernel/btf/MODULE for a loaded module's
functions): the names a probe definition can use on kernels that take BTF arguments (6.x built
with CONFIG_PROBE_EVENTS_BTF_ARGS), e.g. 'p vfs_read count pos' or 'file->f_path.dentry'.

t:TRACEPOINT (or t:SYSTEM:TRACEPOINT, or a bare name that is a tracepoint and no function)
lists what a tracepoint probe (t:) can fetch: the arguments the tracepoint passes, from the
BTF of its stub __probestub_TRACEPOINT, as 'bpftrace -lv tracepoint:...' lists them; e.g.
't sched_switch prev->pid next->comm:string'. Where the tracefs README announces no
tracepoint probes (6.1), it says so: exit 4.

A function or tracepoint BTF does not describe is exit 2, with close names; a kernel (or
module) without BTF is exit 4. Read only.`,
		Example: `  sudo ftctl probe args vfs_read
  sudo ftctl probe args ext4:ext4_file_open
  sudo ftctl probe args do_sys_openat2 -o json
  sudo ftctl probe args t:sched:sched_switch          # a tracepoint probe's arguments`,
		Args:              args(cobra.ExactArgs(1)),
		Annotations:       map[string]string{AnnotationJSON: probeArgsJSON},
		ValidArgsFunction: completeFunctionNames(g),
		RunE: func(c *cobra.Command, a []string) error {
			opts.Func = a[0]
			return runCmd(c, runF, probeArgsRun, opts)
		},
	}
}

func probeArgsRun(_ context.Context, opts *ProbeArgsOptions) error {
	g := opts.G
	fs, err := g.FS()
	if err != nil { // BTF does not need tracefs: without it, no close names
		fs = kernelFiles(&tracefs.FS{})
	}
	k := probes.NewKernel(fs)
	tprobes := fs.Mount.Path != "" && fs.DetectFeatures().Probe.Tprobe
	var info *probes.FuncInfo
	if rest, ok := strings.CutPrefix(opts.Func, "t:"); ok {
		if !tprobes {
			return probes.ErrNoTprobes
		}
		system, name, ok := strings.Cut(rest, ":")
		if !ok {
			system, name, ok = strings.Cut(rest, "/")
		}
		if !ok {
			system, name = "", rest
		}
		if name == "" || strings.ContainsAny(name, ":/") {
			return InvalidInput(fmt.Errorf("%q: a tracepoint is t:TRACEPOINT or t:SYSTEM:TRACEPOINT", opts.Func))
		}
		info, err = k.TracepointArgs(system, name)
	} else {
		info, err = k.FuncArgs(opts.Func)
		if errors.Is(err, probes.ErrNoFunc) && !strings.Contains(opts.Func, ":") && k.IsTracepoint(opts.Func) {
			// not a function: a tracepoint's name
			if !tprobes {
				return fmt.Errorf("%s is a tracepoint, not a function: %w", safe(opts.Func), probes.ErrNoTprobes)
			}
			info, err = k.TracepointArgs("", opts.Func)
		}
	}
	if errors.Is(err, probes.ErrNoFunc) {
		return InvalidInput(err)
	}
	if err != nil {
		return err
	}
	if ok, err := g.printDoc(probeArgsFormat, info); ok {
		return err
	}
	writeFuncInfo(g.Out, info)
	return nil
}

// writeFuncInfo prints a function's or tracepoint's arguments as C declarations, one a line.
func writeFuncInfo(w io.Writer, info *probes.FuncInfo) {
	name := info.Func
	if info.Kind == "tracepoint" {
		name = "tracepoint " + name + " (t:" + name + ")"
		if info.System != "" {
			name = "tracepoint " + info.System + ":" + info.Func + " (t:" + info.Func + ")"
		}
	}
	if info.Module != "" {
		name += " [" + info.Module + "]"
	}
	fmt.Fprintln(w, safe(name))
	for _, p := range info.Params {
		fmt.Fprintf(w, "    %s\n", safe(declare(p.Type, p.Name)))
	}
	if info.Kind != "tracepoint" {
		fmt.Fprintf(w, "    returns %s\n", safe(info.Return))
	}
}

// declare writes a C declaration: "struct file *file", "size_t count".
func declare(typ, name string) string {
	if name == "" {
		return typ
	}
	if strings.HasSuffix(typ, "*") {
		return typ + name
	}
	return typ + " " + name
}
