package cmd

import (
	"context"
	"errors"
	"fmt"
	"path"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"github.com/ftctl/ftctl/filters"
	"github.com/ftctl/ftctl/tracefs"
)

// NewCmdList builds `ftctl list`: what the kernel offers (trace-cmd list -e/-t/-o, bpftrace -l).
func NewCmdList(g *Globals) *cobra.Command {
	c := &cobra.Command{
		Use:   "list",
		Short: "List the events, tracers or options this kernel offers",
		Long: `List what the kernel offers the top level or the -B instance: the events it can record
(available_events), the tracers it can run (available_tracers, the current one marked) and
its trace options (options/, on or off). An optional GLOB (* ? [...], as in a shell) keeps the
names it matches: SYSTEM:EVENT for events. list only reads.`,
	}
	c.AddCommand(NewCmdListEvents(g, nil), NewCmdListTracers(g, nil), NewCmdListOptions(g, nil))
	return c
}

// ListOptions are the inputs of `ftctl list events|tracers|options`.
type ListOptions struct {
	G    *Globals
	Glob string // "" for every name
}

// match says whether name is listed; the glob was checked by listArgs.
func (o *ListOptions) match(name string) bool {
	if o.Glob == "" {
		return true
	}
	ok, _ := path.Match(o.Glob, name)
	return ok
}

// nothingMatched is ftctl's one answer to a pattern that selects nothing (functions, events,
// a file's symbols, help topics): exit 2, naming it, with the closest names.
func nothingMatched(what, pattern string, names []string) error {
	lit := strings.Map(func(r rune) rune {
		if strings.ContainsRune("*?[]!", r) {
			return -1
		}
		return r
	}, pattern)
	msg := fmt.Sprintf("no %s matches %s", what, strconv.Quote(pattern))
	if s := filters.Suggest(lit, names, 5); len(s) > 0 {
		msg += "; did you mean " + strings.Join(s, ", ") + "?"
	}
	return InvalidInput(errors.New(msg))
}

// listArgs takes the optional GLOB, refusing a malformed one (exit 2).
func listArgs(opts *ListOptions, a []string) error {
	if len(a) == 1 {
		if _, err := path.Match(a[0], ""); err != nil {
			return InvalidInput(fmt.Errorf("GLOB %q: %w", a[0], err))
		}
		opts.Glob = a[0]
	}
	return nil
}

// NewCmdListEvents builds `ftctl list events`.
func NewCmdListEvents(g *Globals, runF func(context.Context, *ListOptions) error) *cobra.Command {
	opts := &ListOptions{G: g}
	return &cobra.Command{
		Use:   "events [GLOB]",
		Short: "List the events the kernel can record (SYSTEM:EVENT)",
		Long: `List the events the kernel can record, as SYSTEM:EVENT, sorted; GLOB selects them
(shell glob: 'sched:*', '*:*open*'). A GLOB that selects nothing is exit 2, with the closest
names, as for 'ftctl functions'.`,
		Example: `  ftctl list events 'sched:*'
  ftctl list events '*:*open*' -o json`,
		Args:              args(cobra.MaximumNArgs(1)),
		Annotations:       map[string]string{AnnotationJSON: `An array, sorted: [{"system": "sched", "event": "sched_switch"}].`},
		ValidArgsFunction: completeEventNames(g),
		RunE: func(c *cobra.Command, a []string) error {
			if err := listArgs(opts, a); err != nil {
				return err
			}
			return runCmd(c, runF, listEventsRun, opts)
		},
	}
}

func listEventsRun(_ context.Context, opts *ListOptions) error {
	g := opts.G
	in, err := g.OpenInstance()
	if err != nil {
		return err
	}
	events, err := in.AvailableEvents()
	if err != nil {
		return err
	}
	rows := []eventRow{}
	var names []string
	for _, e := range events {
		names = append(names, e.System+":"+e.Event)
		if opts.match(e.System + ":" + e.Event) {
			rows = append(rows, eventRow{e.System, e.Event})
		}
	}
	if len(rows) == 0 && opts.Glob != "" {
		return nothingMatched("event", opts.Glob, names)
	}
	if ok, err := g.printDoc(listEventsFormat, rows); ok {
		return err
	}
	for _, r := range rows {
		fmt.Fprintf(g.Out, "%s:%s\n", safe(r.System), safe(r.Event))
	}
	return nil
}

// NewCmdListTracers builds `ftctl list tracers`.
func NewCmdListTracers(g *Globals, runF func(context.Context, *ListOptions) error) *cobra.Command {
	opts := &ListOptions{G: g}
	return &cobra.Command{
		Use:   "tracers [GLOB]",
		Short: "List the tracers the trace array can run; the current one is marked",
		Example: `  ftctl list tracers
  ftctl -B mytrace list tracers -o json`,
		Args:              args(cobra.MaximumNArgs(1)),
		Annotations:       map[string]string{AnnotationJSON: `An array in the kernel's order: [{"name": "function", "current": false}].`},
		ValidArgsFunction: completeTracers(g),
		RunE: func(c *cobra.Command, a []string) error {
			if err := listArgs(opts, a); err != nil {
				return err
			}
			return runCmd(c, runF, listTracersRun, opts)
		},
	}
}

func listTracersRun(_ context.Context, opts *ListOptions) error {
	g := opts.G
	in, err := g.OpenInstance()
	if err != nil {
		return err
	}
	available, current, err := in.Tracers()
	if err != nil {
		return err
	}
	rows := []tracerRow{}
	for _, t := range available {
		if opts.match(t) {
			rows = append(rows, tracerRow{t, t == current})
		}
	}
	if ok, err := g.printDoc(listTracersFormat, rows); ok {
		return err
	}
	for _, r := range rows {
		mark := ""
		if r.Current {
			mark = " (current)"
		}
		fmt.Fprintf(g.Out, "%s%s\n", safe(r.Name), mark)
	}
	return nil
}

// NewCmdListOptions builds `ftctl list options`.
func NewCmdListOptions(g *Globals, runF func(context.Context, *ListOptions) error) *cobra.Command {
	opts := &ListOptions{G: g}
	return &cobra.Command{
		Use:   "options [GLOB]",
		Short: "List the trace array's options, on or off",
		Long: `List the trace array's options (the files of options/), each on or off. A tracer's own
options (funcgraph-*, for function_graph) are listed only while that tracer is current.`,
		Example: `  ftctl list options
  ftctl -B mytrace list options 'func*' -o json`,
		Args:        args(cobra.MaximumNArgs(1)),
		Annotations: map[string]string{AnnotationJSON: `An array, sorted: [{"name": "record-tgid", "enabled": false}].`},
		RunE: func(c *cobra.Command, a []string) error {
			if err := listArgs(opts, a); err != nil {
				return err
			}
			return runCmd(c, runF, listOptionsRun, opts)
		},
	}
}

func listOptionsRun(_ context.Context, opts *ListOptions) error {
	g := opts.G
	in, err := g.OpenInstance()
	if err != nil {
		return err
	}
	all, err := in.Options()
	if err != nil {
		return err
	}
	rows := []tracefs.Option{}
	for _, o := range all {
		if opts.match(o.Name) {
			rows = append(rows, o)
		}
	}
	if ok, err := g.printDoc(listOptionsFormat, rows); ok {
		return err
	}
	for _, o := range rows {
		state := "off"
		if o.Enabled {
			state = "on"
		}
		fmt.Fprintf(g.Out, "%-24s %s\n", safe(o.Name), state)
	}
	return nil
}
