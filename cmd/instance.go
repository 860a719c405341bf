package cmd

import (
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
that other tools use). Every ftctl command takes -B NAME to work in one; write commands create
it when missing and say so on stderr.`,
		Args: args(cobra.NoArgs),
	}
	c.AddCommand(newCmdInstanceList(g), newCmdInstanceCreate(g), newCmdInstanceRemove(g))
	return c
}

func newCmdInstanceList(g *Globals) *cobra.Command {
	return &cobra.Command{
		Use:         "list",
		Short:       "List the trace instances",
		Args:        args(cobra.NoArgs),
		Annotations: map[string]string{AnnotationJSON: `An array of instance names, sorted: ["incident42", "mytrace"].`},
		RunE: func(c *cobra.Command, _ []string) error {
			fs, err := g.FS()
			if err != nil {
				return err
			}
			names, err := fs.Instances()
			if err != nil {
				return err
			}
			if g.JSON() {
				if names == nil {
					names = []string{}
				}
				return writeJSON(g.Out, names)
			}
			for _, n := range names {
				fmt.Fprintln(g.Out, safe(n))
			}
			return nil
		},
	}
}

func newCmdInstanceCreate(g *Globals) *cobra.Command {
	return &cobra.Command{
		Use:   "create NAME...",
		Short: "Create trace instances (existing ones are left as they are)",
		Example: `  sudo ftctl instance create incident42
  sudo ftctl instance create a b --dry-run`,
		Args: args(cobra.MinimumNArgs(1)),
		RunE: func(c *cobra.Command, names []string) error {
			for _, n := range names { // validate all before touching anything
				if err := tracefs.ValidateInstanceName(n); err != nil {
					return err
				}
			}
			fs, lock, err := g.BeginWrite(c.Context())
			if err != nil {
				return err
			}
			defer lock.Unlock()
			for _, n := range names {
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
			}
			return nil
		},
	}
}

func newCmdInstanceRemove(g *Globals) *cobra.Command {
	return &cobra.Command{
		Use:   "remove NAME...",
		Short: "Remove trace instances (missing ones are fine)",
		Long: `Remove trace instances with rmdir. The kernel refuses (exit 5) while a file of the
instance is open (someone reads its trace_pipe) or one of its events is referenced.`,
		Args:              args(cobra.MinimumNArgs(1)),
		ValidArgsFunction: exceptArgs(completeInstanceNames(g)),
		RunE: func(c *cobra.Command, names []string) error {
			for _, n := range names {
				if err := tracefs.ValidateInstanceName(n); err != nil {
					return err
				}
			}
			fs, lock, err := g.BeginWrite(c.Context())
			if err != nil {
				return err
			}
			defer lock.Unlock()
			for _, n := range names {
				if err := fs.Remove(n); err != nil {
					return err
				}
			}
			return nil
		},
	}
}
