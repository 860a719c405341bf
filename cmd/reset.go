package cmd

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/ftctl/ftctl/session"
)

const resetJSON = `Without --all, one object: "removed", an array with one object per session whose leftovers
were removed (with --dry-run: would be tried), and "left", one per session whose instance the
kernel would not let go (it is in use: the session may be running, in this or another pid
namespace). Each object has "session" ({"pid", "id"}: the pid of the process that ran it and its
random id; "id" is absent for sessions of earlier versions), "instance" (ftctl-PID-ID) and
"group" (ftctl_PID_ID) when they existed, "probes" (the group's event names), "state" ("dead",
"in use", or "cannot tell" with --dry-run) and "removed" (what was removed, in order: "instance
NAME", "probe GROUP/EVENT").`

// ResetOptions are the inputs of `ftctl reset`.
type ResetOptions struct {
	G   *Globals
	All bool // --all: every user's tracing state back to boot defaults
	Yes bool // --yes: no confirmation for --all
}

// NewCmdReset builds `ftctl reset`.
func NewCmdReset(g *Globals, runF func(context.Context, *ResetOptions) error) *cobra.Command {
	opts := &ResetOptions{G: g}
	c := &cobra.Command{
		Use:   "reset",
		Short: "Remove what dead ftctl sessions left behind (--all: everything, to boot defaults)",
		Long: `Without --all, remove only the leftovers of ftctl sessions that are gone (an ftctl trace
killed with SIGKILL, a console left with --keep): their instances ftctl-PID-ID and probe groups
ftctl_PID_ID. A running session holds a file of its instance open, so the kernel refuses to
remove that instance: reset removes each session's instance first, and its probes only when the
kernel let the instance go. A session whose instance is in use is left alone and listed, since
it may be running in another pid namespace (a container) where its pid means nothing here.
Other users' probes and instances and the top level are never touched. 'trace-cmd reset' by
contrast wipes every kprobe on the system.

With --all, return the whole tracing state to boot defaults: every instance removed, every
kprobe and uprobe removed (each disabled first), the top-level tracer, function filters,
notrace/graph/pid lists, events, event filters and triggers cleared, the buffer emptied,
tracing on. It asks for confirmation on a terminal; scripts pass --yes.

Every removal reset reports, it made; what it could not remove is named and the exit status is
1. --dry-run prints what either would try.`,
		Example: `  sudo ftctl reset
  sudo ftctl reset --dry-run
  sudo ftctl reset --all --yes`,
		Args:        args(cobra.NoArgs),
		Annotations: map[string]string{AnnotationJSON: resetJSON},
		RunE: func(c *cobra.Command, _ []string) error {
			return runCmd(c, runF, resetRun, opts)
		},
	}
	c.Flags().BoolVar(&opts.All, "all", false, "return ALL tracing state to boot defaults (every user's)")
	c.Flags().BoolVar(&opts.Yes, "yes", false, "do not ask for confirmation (--all)")
	return c
}

func resetRun(ctx context.Context, opts *ResetOptions) error {
	g := opts.G
	if opts.All {
		return resetAll(ctx, opts)
	}
	fs, lock, err := g.BeginWrite(ctx)
	if err != nil {
		return err
	}
	defer lock.Unlock()
	left, err := session.Leftovers(fs, session.ID{})
	if err != nil {
		return err
	}
	removed, kept := []*session.Leftover{}, []*session.Leftover{}
	var errs []error
	for _, l := range left {
		if err := l.Remove(fs); err != nil {
			errs = append(errs, err)
		}
		if l.State == session.StateInUse {
			kept = append(kept, l)
		} else {
			removed = append(removed, l)
		}
		if !g.JSON() {
			printLeftover(g, l)
		}
	}
	if g.JSON() {
		if err := writeJSON(g.Out, map[string]any{"removed": removed, "left": kept}); err != nil {
			return err
		}
	} else if len(left) == 0 {
		g.Notice("no leftovers of ftctl sessions")
	}
	if len(errs) > 0 {
		return fmt.Errorf("reset: %w", errors.Join(errs...))
	}
	return nil
}

// printLeftover says what reset did with one session's leftovers: only what it observed.
func printLeftover(g *Globals, l *session.Leftover) {
	var what []string
	if l.Instance != "" {
		what = append(what, "instance "+l.Instance)
	}
	if l.Group != "" {
		what = append(what, "probes "+l.Group+"/{"+strings.Join(l.Probes, ",")+"}")
	}
	id := safe(l.ID.String())
	switch {
	case g.DryRun:
		fmt.Fprintf(g.Out, "would remove session %s's %s, the instance first (only if no process holds it)\n", id, safe(strings.Join(what, ", ")))
	case l.State == session.StateInUse:
		fmt.Fprintf(g.Out, "left session %s: its instance %s is in use (the session may be running, in this or another pid namespace)\n", id, safe(l.Instance))
	case len(l.Removed) > 0:
		fmt.Fprintf(g.Out, "removed session %s's %s\n", id, safe(strings.Join(l.Removed, ", ")))
	}
}

func resetAll(ctx context.Context, opts *ResetOptions) error {
	g := opts.G
	if !opts.Yes && !g.DryRun {
		if !isTerminal(g.In) {
			return InvalidInput(errors.New("reset --all changes the whole tracing state: confirm with --yes"))
		}
		fmt.Fprint(g.Err, "Return ALL tracing state to boot defaults (every instance, kprobe, filter and event of every user)? [y/N] ")
		var answer string
		fmt.Fscanln(g.In, &answer)
		if a := strings.ToLower(strings.TrimSpace(answer)); a != "y" && a != "yes" {
			return InvalidInput(errors.New("not confirmed; nothing changed"))
		}
	}
	fs, lock, err := g.BeginWrite(ctx)
	if err != nil {
		return err
	}
	defer lock.Unlock()
	if errs := session.ResetAll(fs, g.Notice); len(errs) > 0 {
		return fmt.Errorf("reset --all: %w", errors.Join(errs...))
	}
	return nil
}
