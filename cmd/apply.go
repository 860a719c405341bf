package cmd

import (
	"context"
	"errors"
	"fmt"
	"io"
	iofs "io/fs"
	"maps"
	"slices"

	"github.com/spf13/cobra"

	"github.com/ftctl/ftctl/profile"
	"github.com/ftctl/ftctl/session"
)

// ProfileOptions are the inputs of `ftctl plan|apply|diff|delete -f PROFILE`.
type ProfileOptions struct {
	G     *Globals
	File  string // -f: the profile, "-" for stdin
	Check bool   // apply --check
}

// loadProfile reads and checks the profile of -f for the commands that act on the kernel: a
// bad one is invalid input (exit 2), each mistake as FILE:LINE:COLUMN: PATH: REASON.
func loadProfile(g *Globals, file string) (*profile.Profile, error) {
	if file == "" {
		return nil, InvalidInput(errors.New("-f PROFILE is required (a YAML or JSON file, - for stdin)"))
	}
	_, p, err := readProfile(g, file)
	switch {
	case err == nil:
		return p, nil
	case profileErrors(err) != nil:
		for _, e := range profileErrors(err) {
			fmt.Fprintln(g.Err, lineSafe(e.Error()))
		}
		return nil, fmt.Errorf("%s: %w (%s)", safe(file), profile.ErrInvalid, plural(len(profileErrors(err)), "error"))
	case errors.Is(err, iofs.ErrNotExist):
		return nil, InvalidInput(fmt.Errorf("reading the profile: %w", err))
	}
	return nil, fmt.Errorf("reading the profile: %w", err)
}

// newProfileCmd builds one of the profile commands around run.
func newProfileCmd(opts *ProfileOptions, use, short, long, example, jsonDoc string, run func(context.Context, *ProfileOptions) error,
	runF func(context.Context, *ProfileOptions) error) *cobra.Command {
	c := &cobra.Command{
		Use: use, Short: short, Long: long, Example: example,
		Args:        args(cobra.NoArgs),
		Annotations: map[string]string{AnnotationJSON: jsonDoc},
		RunE: func(c *cobra.Command, _ []string) error {
			return runCmd(c, runF, run, opts)
		},
	}
	c.Flags().StringVarP(&opts.File, "file", "f", "", "the profile `FILE` (YAML or JSON; - reads stdin)")
	return c
}

const profileOwnership = `A profile owns what it creates, named after it: the instance ftctl-owned-NAME, the probe
group ftctl_owned_NAME and the synthetic events ftctl_owned_NAME_WHAT. No process holds them:
'ftctl reset' keeps them (and names them), 'ftctl delete -f' removes them. Nothing else is
written: not the top level, not another owner's instance or probes. A profile that uses
another owner's probe or synthetic event (enabled in its instance, a trigger on it or naming
it, an eprobe on it: its owner then cannot remove it) is refused unless spec.uses names it,
and plan shows each one named ("= uses"). An option this kernel keeps for every trace array at
once (func_stack_trace, on 6.1 and 6.12) is refused, exit 4, the top level's put back. The
profile's schema is in docs/profiles.md ('ftctl profile schema' prints it for editors).`

// NewCmdPlan builds `ftctl plan`.
func NewCmdPlan(g *Globals, runF func(context.Context, *ProfileOptions) error) *cobra.Command {
	return newProfileCmd(&ProfileOptions{G: g}, "plan -f PROFILE", "Show what 'apply' would change, per object, changing nothing",
		`Compare the profile with the kernel and list what apply would change: per object (a setting,
a function list, an event, a probe, a trigger), + added, - removed, ~ changed, and for a function
list the functions it gains and loses. Each glob of the profile is shown with what it selects
in the running kernel now. 'ftctl --dry-run apply -f' prints the writes themselves.

`+profileOwnership, `  sudo ftctl plan -f slowreads.yaml
  sudo ftctl plan -f slowreads.yaml -o json`,
		planJSON, planRun, runF)
}

const planJSON = `{"profile": "slowreads", "instance": "ftctl-owned-slowreads", "declared": true, ` +
	`"in_sync": false, "changes": [{"object": "event sched:sched_process_exit", "file": "events/sched/sched_process_exit/enable", ` +
	`"op": "+", "have": "0", "want": "1"}], "patterns": [{"file": "set_ftrace_filter", "pattern": "vfs_read*", "functions": 4, "exact": false}], ` +
	`"globsFrom": "declaration", "uses": [{"event": "theirs:open", "what": "probe (p)", "by": "spec.events[1].name"}]}: ` +
	`declared is false before the first apply; a change with "recreate": true is made by setting the owner up again; ` +
	`"added"/"removed" list a function list's functions; globsFrom says what the globs were resolved against ("index": ` +
	`available_filter_functions now; "declaration": the last apply's resolution, kept while the kernel's function records ` +
	`and lists are as they were); uses lists the objects of others spec.uses names.`

// planDoc is a plan as -o json shows it.
type planDoc struct {
	*profile.Plan
	InSync bool `json:"in_sync"`
}

func planRun(ctx context.Context, opts *ProfileOptions) error {
	pl, err := computePlan(opts)
	if err != nil {
		return err
	}
	return showPlan(opts.G, pl)
}

func computePlan(opts *ProfileOptions) (*profile.Plan, error) {
	p, err := loadProfile(opts.G, opts.File)
	if err != nil {
		return nil, err
	}
	fs, err := opts.G.FS()
	if err != nil {
		return nil, err
	}
	return profile.Compute(fs, p)
}

func showPlan(g *Globals, pl *profile.Plan) error {
	if ok, err := g.printDoc(planFormat, planDoc{pl, pl.InSync()}); ok {
		return err
	}
	w := g.Out
	switch {
	case pl.InSync():
		fmt.Fprintf(w, "profile %s: in sync (instance %s)\n", pl.Profile, pl.Instance)
	case !pl.Declared:
		fmt.Fprintf(w, "profile %s: not applied; apply creates:\n", pl.Profile)
	default:
		fmt.Fprintf(w, "profile %s: %s differ (instance %s):\n", pl.Profile, plural(len(pl.Changes), "object"), pl.Instance)
	}
	for _, c := range pl.Changes {
		fmt.Fprintf(w, "  %s %s (%s)", c.Op, safe(c.Object), safe(c.File))
		switch {
		case c.Have != "" || c.Op == "~":
			fmt.Fprintf(w, ": %s -> %s", quoteEmpty(c.Have), quoteEmpty(c.Want))
		case c.Want != "":
			fmt.Fprintf(w, ": %s", safe(c.Want))
		}
		fmt.Fprintln(w)
		for _, f := range c.Added {
			fmt.Fprintf(w, "      + %s\n", safe(f))
		}
		for _, f := range c.Removed {
			fmt.Fprintf(w, "      - %s\n", safe(f))
		}
	}
	showUses(w, pl.Uses)
	if pl.TopLevel != nil {
		fmt.Fprintf(w, "  = %s (spec.topLevel.claim)\n", pl.TopLevel.Text())
	}
	exact := map[string]int{}
	for k, m := range pl.Patterns {
		if m.Exact {
			exact[m.File]++
			continue
		}
		if k == 0 || !slices.ContainsFunc(pl.Patterns[:k], func(p profile.PatternMatch) bool { return !p.Exact }) {
			fmt.Fprintln(w, "globs, and what they select now:")
		}
		fmt.Fprintf(w, "  %-18s %-30s %s\n", m.File, safe(m.Pattern), plural(m.Functions, "function"))
	}
	for _, file := range slices.Sorted(maps.Keys(exact)) {
		fmt.Fprintf(w, "%s: %s named exactly, each found\n", file, plural(exact[file], "function"))
	}
	if pl.Declared && pl.Recreates() {
		fmt.Fprintln(w, "apply sets the owner up again (a definition changed): what its ring holds is lost")
	}
	return nil
}

// showUses lists the objects of others the profile uses, as spec.uses names them.
func showUses(w io.Writer, uses []profile.Use) {
	for _, u := range uses {
		fmt.Fprintf(w, "  = uses %s, not the profile's: another owner's %s, kept busy while applied (%s)\n", safe(u.Event), safe(u.What), u.By)
	}
}

func quoteEmpty(s string) string {
	if s == "" {
		return `""`
	}
	return safe(s)
}

// NewCmdDiff builds `ftctl diff`.
func NewCmdDiff(g *Globals, runF func(context.Context, *ProfileOptions) error) *cobra.Command {
	return newProfileCmd(&ProfileOptions{G: g}, "diff -f PROFILE", "Say whether the kernel drifted from a profile (exit 0 in sync, 1 drifted)",
		`Compare the profile with the kernel, as plan does, and exit 0 when the kernel holds it, 1
when it drifted (or was never applied), 2 and above for errors as in the exit-code table: the
convention of diff(1) and 'kubectl diff'. The differences are shown per object: which function
was added to which list, which event was disabled, which probe is missing or changed.

`+profileOwnership, `  sudo ftctl diff -f slowreads.yaml   # exit 1: drifted
  sudo ftctl diff -f slowreads.yaml -o json -q`,
		planJSON+` The exit status says the same as in_sync.`, diffRun, runF)
}

func diffRun(ctx context.Context, opts *ProfileOptions) error {
	pl, err := computePlan(opts)
	if err != nil {
		return err
	}
	if err := showPlan(opts.G, pl); err != nil {
		return err
	}
	if !pl.InSync() {
		return &CommandExit{Code: ExitFailure}
	}
	return nil
}

// NewCmdApply builds `ftctl apply`.
func NewCmdApply(g *Globals, runF func(context.Context, *ProfileOptions) error) *cobra.Command {
	opts := &ProfileOptions{G: g}
	c := newProfileCmd(opts, "apply -f PROFILE [--check]", "Bring the kernel to a profile: create, repair, or write nothing",
		`Bring the kernel to the profile. The first apply declares the profile's owner (its
declaration is written before anything else) and sets it up in the kernel's safe order, as
trace does, and tears all of it down if the kernel refuses any step. A later apply compares
the profile with the kernel (as plan shows) and writes only what differs, in place (settings,
function lists by the filter swap, event filters, events, tracer, tracing_on), undoing what it
wrote when a write fails; a profile whose definitions (probes, synthetic events, triggers,
tracer) changed is set up again, and the previous set-up is put back if that fails. An applied
profile in sync writes nothing. A second writer waits for the lock.

On failure the state before the apply is restored, and the message says so; the exit status
is that of the failure (3 when the kernel refused).

--check is config management's check mode: apply computes what it would do, prints it as plan
does (-o json: the same document as apply's, "changed" saying whether anything would be
written) and writes nothing; the exit status is diff's: 0 when nothing would change, 1 when
something would.

`+profileOwnership, `  sudo ftctl apply -f slowreads.yaml
  sudo ftctl --dry-run apply -f slowreads.yaml
  sudo ftctl apply -f slowreads.yaml -o json   # "changed" for config management
  sudo ftctl apply -f slowreads.yaml --check -o json   # exit 0 in sync, 1 would change`,
		`{"profile": "slowreads", "instance": "ftctl-owned-slowreads", "action": "created", "changed": true, "changes": [...], "restored": false}: `+
			`action is none (nothing written), created, updated (written in place) or recreated; changes as in plan's JSON; `+
			`on failure the error goes to stderr and restored says whether the state before was put back.`,
		applyRun, runF)
	c.Flags().BoolVar(&opts.Check, "check", false, "write nothing: say what apply would do, and exit 0 when nothing would change, 1 when something would")
	return c
}

func applyRun(ctx context.Context, opts *ProfileOptions) error {
	g := opts.G
	if opts.Check {
		return applyCheck(opts)
	}
	p, err := loadProfile(g, opts.File)
	if err != nil {
		return err
	}
	fs, lock, err := g.BeginWrite(ctx)
	if err != nil {
		return err
	}
	defer lock.Unlock()
	pl, err := profile.Compute(fs, p)
	if err != nil {
		return err
	}
	res, err := pl.Apply(ctx, fs, g.Notice)
	if res != nil && (err == nil || res.Restored) {
		if _, jerr := g.printDoc(applyFormat, res); jerr != nil {
			return jerr
		}
	}
	if err != nil {
		return err
	}
	switch {
	case g.DryRun:
	case res.Action == "none":
		g.Notice("profile %s: in sync, nothing written", res.Profile)
	default:
		g.Notice("profile %s: %s (%s, instance %s)", res.Profile, res.Action, plural(len(res.Changes), "change"), res.Instance)
	}
	return nil
}

// applyCheck is apply --check: what apply would do, as config management's check mode
// expects it: nothing written, exit 0 when nothing would change, 1 when something would (diff's
// codes), and -o json's "changed" saying the same.
func applyCheck(opts *ProfileOptions) error {
	g := opts.G
	pl, err := computePlan(opts)
	if err != nil {
		return err
	}
	if g.machine() {
		res := profile.Result{Profile: pl.Profile, Instance: pl.Instance, Action: "none", Changed: !pl.InSync(), Changes: pl.Changes}
		switch {
		case !pl.Declared:
			res.Action = "created"
		case pl.Recreates():
			res.Action = "recreated"
		case !pl.InSync():
			res.Action = "updated"
		}
		if _, err := g.printDoc(applyFormat, res); err != nil {
			return err
		}
	} else if err := showPlan(g, pl); err != nil {
		return err
	}
	if !pl.InSync() {
		return &CommandExit{Code: ExitFailure}
	}
	return nil
}

// NewCmdDelete builds `ftctl delete`.
func NewCmdDelete(g *Globals, runF func(context.Context, *ProfileOptions) error) *cobra.Command {
	return newProfileCmd(&ProfileOptions{G: g}, "delete -f PROFILE", "Remove what a profile owns, newest first, and nothing else",
		`Tear down what the profile's owner set up, from its declaration: its triggers newest first,
its synthetic events and probes, its instance; then the declaration. Nothing the profile does
not own is touched. Each step is attempted even when an earlier one failed, and a second delete
finishes what the first could not. A profile that is not applied is not an error (exit 0, said
on stderr; "deleted": false).

`+profileOwnership, `  sudo ftctl delete -f slowreads.yaml`,
		`{"profile": "slowreads", "instance": "ftctl-owned-slowreads", "deleted": true}`, deleteRun, runF)
}

func deleteRun(ctx context.Context, opts *ProfileOptions) error {
	g := opts.G
	p, err := loadProfile(g, opts.File)
	if err != nil {
		return err
	}
	fs, lock, err := g.BeginWrite(ctx)
	if err != nil {
		return err
	}
	defer lock.Unlock()
	_, err = profile.Delete(fs, p)
	deleted := err == nil
	if errors.Is(err, session.ErrNoOwner) {
		g.Notice("profile %s is not applied: nothing to delete", p.Metadata.Name)
		err = nil
	}
	if err != nil {
		return err
	}
	if deleted && !g.DryRun {
		g.Notice("profile %s deleted (instance %s)", p.Metadata.Name, p.InstanceName())
	}
	_, err = g.printDoc(deleteFormat, deleteDoc{Profile: p.Metadata.Name, Instance: p.InstanceName(), Deleted: deleted && !g.DryRun})
	return err
}

// ExportOptions are the inputs of `ftctl export`.
type ExportOptions struct {
	G    *Globals
	Name string // --name: the profile's name
}

// NewCmdExport builds `ftctl export`.
func NewCmdExport(g *Globals, runF func(context.Context, *ExportOptions) error) *cobra.Command {
	opts := &ExportOptions{G: g}
	c := &cobra.Command{
		Use:   "export [-B NAME] [--name PROFILE]",
		Short: "Print the state of an instance as a profile (YAML; -o json for JSON)",
		Long: `Read the state of an instance (-B) or of the top level and print it as a profile that
'ftctl apply -f' sets up again in the profile's own instance: the tracer, tracing_on, buffer
size, clock, the options that differ from the top level's (what a new instance starts with),
the function lists as the functions they hold now (the kernel expands a glob when it is
written: what was written is lost, as bootconfig's ftrace2bconf.sh also says), the enabled
events with their filters, the probes enabled there, and, for a profile's own instance, its
probes, synthetic events and triggers. Nothing is written.

A hist trigger is listed by the kernel in a form it does not always take back: each sort=
key with the key's modifiers (lat.log2, pid.buckets=1000), where it takes only NAME and
.descending or .ascending. The export writes sort= as the kernel takes it (the order is kept;
the modifiers stay on keys=).`,
		Example: `  sudo ftctl export -B ftctl-owned-slowreads > slowreads.yaml
  sudo ftctl export -B incident42 --name incident42 -o json`,
		Args:        args(cobra.NoArgs),
		Annotations: map[string]string{AnnotationJSON: `the profile as JSON: {"apiVersion": "ftctl.dev/v1alpha1", "kind": "TracingProfile", "metadata": {"name": "slowreads"}, "spec": {...}}`},
		RunE: func(c *cobra.Command, _ []string) error {
			return runCmd(c, runF, exportRun, opts)
		},
	}
	c.Flags().StringVar(&opts.Name, "name", "", "the profile's `NAME` (default: the owner's name for ftctl-owned-NAME, else the instance's letters and digits, \"top\" for the top level)")
	return c
}

func exportRun(ctx context.Context, opts *ExportOptions) error {
	g := opts.G
	fs, err := g.FS()
	if err != nil {
		return err
	}
	name := opts.Name
	if name == "" {
		name = profile.ExportName(g.Instance)
	}
	if err := session.CheckOwnerName(name); err != nil {
		return InvalidInput(fmt.Errorf("--name: %w", err))
	}
	p, err := profile.Export(fs, g.Instance, name)
	if err != nil {
		return err
	}
	if ok, err := g.printDoc(exportFormat, p); ok {
		return err
	}
	b, err := profile.Marshal(p)
	if err != nil {
		return err
	}
	_, err = g.Out.Write(b)
	return err
}
