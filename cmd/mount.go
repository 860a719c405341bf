package cmd

import (
	"context"
	"io"

	"github.com/spf13/cobra"

	"github.com/ftctl/ftctl/tracefs"
)

// MountOptions are the inputs of `ftctl mount`.
type MountOptions struct {
	G   *Globals
	Dir string
}

// NewCmdMount builds `ftctl mount`.
func NewCmdMount(g *Globals, runF func(context.Context, *MountOptions) error) *cobra.Command {
	opts := &MountOptions{G: g}
	return &cobra.Command{
		Use:   "mount [DIR]",
		Short: "Mount tracefs if it is not mounted",
		Long: `Mount tracefs at DIR (default /sys/kernel/tracing) when no tracefs is mounted yet, the
equivalent of 'mount -t tracefs nodev /sys/kernel/tracing'. When tracefs is already mounted
there, say so and change nothing. Needs root.`,
		Example: `  sudo ftctl mount
  sudo ftctl mount --dry-run`,
		Args: args(cobra.MaximumNArgs(1)),
		Annotations: map[string]string{AnnotationJSON: `{"path": "/sys/kernel/tracing", "mounted": true}: mounted is false when ` +
			`tracefs was already mounted there, and in a dry run.`},
		ValidArgsFunction: cobra.FixedCompletions(nil, cobra.ShellCompDirectiveFilterDirs),
		RunE: func(c *cobra.Command, a []string) error {
			opts.Dir = tracefs.DefaultMountPoint
			if len(a) == 1 {
				opts.Dir = a[0]
			}
			return runCmd(c, runF, mountRun, opts)
		},
	}
}

func mountRun(_ context.Context, opts *MountOptions) error {
	g := opts.G
	var dry io.Writer
	if g.DryRun {
		dry = g.Out
	}
	made, err := tracefs.MountTracefs(opts.Dir, dry)
	if err != nil {
		return err
	}
	switch {
	case !made:
		g.Notice("tracefs is already mounted at %s", opts.Dir)
	case !g.DryRun:
		g.Notice("mounted tracefs at %s", opts.Dir)
	}
	if g.JSON() {
		return writeJSON(g.Out, map[string]any{"path": opts.Dir, "mounted": made && !g.DryRun})
	}
	return nil
}
