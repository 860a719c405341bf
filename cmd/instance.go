package cmd

import (
	"context"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/ftctl/ftctl/tracefs"
)

// NewCmdInstance builds `ftctl instance list|create|remove`.
func NewCmdInstance(g *Globals) *cobra.Command {
	c := &cobra.Command{
		Use:     "instance",
		Aliases: []string{"instances"},
		Short:   "List, create and remove trace instances",
		Long: `A trace instance is a separate trace array under instances/: its own tracer, buffer,
filters and events, so that one investigation does not disturb another (or the top level
that other tools use). Every ftctl command takes -B NAME to work in one. A command that writes
to a missing one refuses (exit 2) and names the existing instances close to it, so that a typo
does not set up tracing where nobody looks: create it here first, or give that command --create.
(trace, record, count, hist, latency, graph and the console make instances of their own.)`,
		Args: args(cobra.NoArgs),
	}
	c.AddCommand(NewCmdInstanceList(g, nil), NewCmdInstanceCreate(g, nil), NewCmdInstanceRemove(g, nil))
	return c
}

// InstanceListOptions are the inputs of `ftctl instance list`.
type InstanceListOptions struct {
	G *Globals
}

// NewCmdInstanceList builds `ftctl instance list`.
func NewCmdInstanceList(g *Globals, runF func(context.Context, *InstanceListOptions) error) *cobra.Command {
	opts := &InstanceListOptions{G: g}
	return &cobra.Command{
		Use:         "list",
		Short:       "List the trace instances",
		Args:        args(cobra.NoArgs),
		Annotations: map[string]string{AnnotationJSON: `An array of instance names, sorted: ["incident42", "mytrace"].`},
		RunE: func(c *cobra.Command, _ []string) error {
			return runCmd(c, runF, instanceListRun, opts)
		},
	}
}

func instanceListRun(_ context.Context, opts *InstanceListOptions) error {
	g := opts.G
	fs, err := g.FS()
	if err != nil {
		return err
	}
	names, err := fs.Instances()
	if err != nil {
		return err
	}
	if names == nil {
		names = []string{}
	}
	if ok, err := g.printDoc(instanceListFormat, names); ok {
		return err
	}
	for _, n := range names {
		fmt.Fprintln(g.Out, safe(n))
	}
	return nil
}

// InstanceCreateOptions are the inputs of `ftctl instance create`.
type InstanceCreateOptions struct {
	G     *Globals
	Names []string
}

// NewCmdInstanceCreate builds `ftctl instance create`.
func NewCmdInstanceCreate(g *Globals, runF func(context.Context, *InstanceCreateOptions) error) *cobra.Command {
	opts := &InstanceCreateOptions{G: g}
	return &cobra.Command{
		Use:   "create NAME...",
		Short: "Create trace instances (existing ones are left as they are)",
		Example: `  sudo ftctl instance create incident42
  sudo ftctl instance create a b --dry-run`,
		Args: args(cobra.MinimumNArgs(1)),
		Annotations: map[string]string{AnnotationJSON: `[{"name": "incident42", "created": true}]: one entry per NAME; ` +
			`created is false for an instance that already existed, and in a dry run.`},
		RunE: func(c *cobra.Command, names []string) error {
			opts.Names = names
			return runCmd(c, runF, instanceCreateRun, opts)
		},
	}
}

func instanceCreateRun(ctx context.Context, opts *InstanceCreateOptions) error {
	g := opts.G
	if err := validateInstanceNames(opts.Names); err != nil {
		return err
	}
	fs, lock, err := g.BeginWrite(ctx)
	if err != nil {
		return err
	}
	defer lock.Unlock()
	var done []instanceDone
	for _, n := range opts.Names {
		_, created, err := fs.Ensure(n)
		if err != nil {
			return err
		}
		switch {
		case !created:
			g.Notice("instance %q already exists", n)
		case !g.DryRun:
			g.Notice("created instance %q", n)
		}
		done = append(done, instanceDone{Name: n, Created: created && !g.DryRun})
	}
	_, err = g.printDoc(instanceCreateFormat, done)
	return err
}

// instanceDone is what `instance create` and `instance remove -o json` say of each NAME.
type instanceDone struct {
	Name    string `json:"name"`
	Created bool   `json:"created"`
}

// InstanceRemoveOptions are the inputs of `ftctl instance remove`.
type InstanceRemoveOptions struct {
	G     *Globals
	Names []string
}

// NewCmdInstanceRemove builds `ftctl instance remove`.
func NewCmdInstanceRemove(g *Globals, runF func(context.Context, *InstanceRemoveOptions) error) *cobra.Command {
	opts := &InstanceRemoveOptions{G: g}
	return &cobra.Command{
		Use:   "remove NAME...",
		Short: "Remove trace instances (missing ones are fine)",
		Long: `Remove trace instances with rmdir. The kernel refuses (exit 5) while a file of the
instance is open (someone reads its trace_pipe) or one of its events is referenced.`,
		Args:              args(cobra.MinimumNArgs(1)),
		ValidArgsFunction: exceptArgs(completeInstanceNames(g)),
		Annotations: map[string]string{AnnotationJSON: `[{"name": "incident42", "removed": true}]: one entry per NAME; ` +
			`removed is false for an instance that did not exist, and in a dry run.`},
		RunE: func(c *cobra.Command, names []string) error {
			opts.Names = names
			return runCmd(c, runF, instanceRemoveRun, opts)
		},
	}
}

func instanceRemoveRun(ctx context.Context, opts *InstanceRemoveOptions) error {
	if err := validateInstanceNames(opts.Names); err != nil {
		return err
	}
	g := opts.G
	fs, lock, err := g.BeginWrite(ctx)
	if err != nil {
		return err
	}
	defer lock.Unlock()
	done := []instanceRemoved{}
	for _, n := range opts.Names {
		existed := fs.HasInstance(n)
		if err := fs.Remove(n); err != nil {
			return err
		}
		done = append(done, instanceRemoved{Name: n, Removed: existed && !g.DryRun})
	}
	_, err = g.printDoc(instanceRemoveFormat, done)
	return err
}

// validateInstanceNames checks every name before anything is touched.
func validateInstanceNames(names []string) error {
	for _, n := range names {
		if err := tracefs.ValidateInstanceName(n); err != nil {
			return err
		}
	}
	return nil
}
