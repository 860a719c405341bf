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
	// Explicit: DIR was named (an argument, --tracefs or FTCTL_TRACEFS), so a tracefs mounted
	// elsewhere is a refusal, not "already mounted".
	Explicit bool
}

// NewCmdMount builds `ftctl mount`.
func NewCmdMount(g *Globals, runF func(context.Context, *MountOptions) error) *cobra.Command {
	opts := &MountOptions{G: g}
	return &cobra.Command{
		Use:   "mount [DIR]",
		Short: "Mount tracefs if it is not mounted",
		Long: `Mount tracefs at DIR (default: --tracefs or $FTCTL_TRACEFS when given, else
/sys/kernel/tracing) when no tracefs is mounted yet, the equivalent of
'mount -t tracefs nodev /sys/kernel/tracing'. When tracefs is already mounted there, say so
and change nothing. When it is mounted somewhere else, ftctl finds it there: without DIR that
is said and nothing changes; with DIR named, mount refuses (exit 2) and names where it is.
Needs root.`,
		Example: `  sudo ftctl mount
  sudo ftctl mount --dry-run`,
		Args: args(cobra.MaximumNArgs(1)),
		Annotations: map[string]string{AnnotationJSON: `{"path": "/sys/kernel/tracing", "mounted": true}: mounted is false when ` +
			`tracefs was already mounted there, and in a dry run.`},
		ValidArgsFunction: cobra.FixedCompletions(nil, cobra.ShellCompDirectiveFilterDirs),
		RunE: func(c *cobra.Command, a []string) error {
			opts.Dir = tracefs.DefaultMountPoint
			if root, _ := g.tracefsRoot(); root != "" {
				opts.Dir, opts.Explicit = root, true
			}
			if len(a) == 1 {
				opts.Dir, opts.Explicit = a[0], true
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
	made, at, err := tracefs.MountTracefs(opts.Dir, dry)
	if err != nil {
		return err
	}
	path := opts.Dir
	if at != "" {
		if opts.Explicit {
			return &tracefs.Error{Op: "mount", Path: opts.Dir, Class: tracefs.ErrBadPath,
				Reason: "tracefs is already mounted at " + at + ", where ftctl finds it; a second mount would show the same files twice (mount -t tracefs nodev DIR makes one if that is what you want)"}
		}
		path = at
	}
	switch {
	case !made:
		g.Notice("tracefs is already mounted at %s", path)
	case !g.DryRun:
		g.Notice("mounted tracefs at %s", path)
	}
	if ok, err := g.printDoc(mountFormat, mountDoc{Path: path, Mounted: made && !g.DryRun}); ok {
		return err
	}
	return nil
}
