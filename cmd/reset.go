package cmd

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/ftctl/ftctl/flight"
	"github.com/ftctl/ftctl/session"
	"github.com/ftctl/ftctl/tracefs"
)

const resetJSON = `Without --all, one object: "removed", an array with one object per session whose leftovers
were removed (with --dry-run: would be tried), and "left", one per session whose instance the
kernel would not let go (it is in use: the session may be running, in this or another pid
namespace). Each object has "session" ({"pid", "id"}: the pid of the process that ran it and its
random id; "id" is absent for sessions of earlier versions), "instance" (ftctl-PID-ID) and
"group" (ftctl_PID_ID) when they existed, "probes" (the group's event names), "state" ("dead",
"in use", or "cannot tell" with --dry-run) and "removed" (what was removed, in order: "instance
NAME", "probe GROUP/EVENT"). A session that changed kernel-wide files (ftctl graph: the graph
lists, max_graph_depth, tracing_thresh; where instances cannot run function_graph, the top
level's tracer, pid lists, function-fork and tracing_on) has "journal": true and "files", one
object per file, newest first: "file", "state" ("restored": it held what the session wrote and
now holds "before" again; "as before": it already held "before"; "changed": it holds neither,
another actor's value, left alone; "failed"), "holds" (what it held when reset looked),
"before", "wrote" (lists one name per line). "recordings" lists the working directories of
'ftctl record's (FILE.tmp-PID) named in /run/ftctl: "dir", "file" (what it was to become),
"pid", "state" ("running": the recording is alive; "left": its recorder was killed, and the
directory holds its pages so far, for 'ftctl report --recover'; "removed", with
--remove-recordings) and "files" ({"name", "size"}). "owners" lists the declared owners, which
live with no process until they are deleted and which reset keeps (reset --all removes them):
"name", "instance" (ftctl-owned-NAME), "group", "state" ("applied", or "applying" when their
set-up was interrupted), "since", and what they set up ("dynamic", "triggers", "events",
"probes", "filters").`

// ResetOptions are the inputs of `ftctl reset`.
type ResetOptions struct {
	G   *Globals
	All bool // --all: every user's tracing state back to boot defaults
	Yes bool // --yes: no confirmation for --all
	// RemoveRecordings: --remove-recordings, remove the directories killed recordings left
	RemoveRecordings bool
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
Other users' probes and instances are never touched. A dead ftctl graph session's kernel-wide
files (set_graph_function, set_graph_notrace, max_graph_depth, tracing_thresh and, where
instances cannot run function_graph, the top level's tracer, pid lists and tracing_on) are put
back from the journal it kept in /run/ftctl, each only if it still holds what the session wrote:
a file another actor changed since is left as it is and named. The rest of the top level is
never touched. 'trace-cmd reset' by contrast wipes every kprobe on the system.

A killed 'ftctl record' leaves FILE.tmp-PID beside the file it was writing: the pages recorded
so far, evidence. reset names each such directory (from the journal record keeps in
/run/ftctl) and how to read it ('ftctl report --recover DIR'), and leaves it; with
--remove-recordings it removes it (only the files record writes there; anything else is named
and the directory left), never through a symbolic link: the directory is reached from / without
following one, and a link on the way is named and left. A recording still running is left alone.

With --all, return the whole tracing state to boot defaults: every instance removed, every
kprobe and uprobe removed (each disabled first), the top-level tracer, function filters,
notrace/graph/pid lists, events, event filters and triggers cleared, max_graph_depth and
tracing_thresh 0, every session's journal removed, the buffer emptied, tracing on. It asks
for confirmation on a terminal; scripts pass --yes.

Every removal reset reports, it made; what it could not remove is named and the exit status is
1. --dry-run prints what either would try.`,
		Example: `  sudo ftctl reset
  sudo ftctl reset --dry-run
  # also remove what killed recordings left (read it first: ftctl report --recover DIR)
  sudo ftctl reset --remove-recordings
  sudo ftctl reset --all --yes`,
		Args:        args(cobra.NoArgs),
		Annotations: map[string]string{AnnotationJSON: resetJSON},
		RunE: func(c *cobra.Command, _ []string) error {
			return runCmd(c, runF, resetRun, opts)
		},
	}
	c.Flags().BoolVar(&opts.All, "all", false, "return ALL tracing state to boot defaults (every user's)")
	c.Flags().BoolVar(&opts.Yes, "yes", false, "do not ask for confirmation (--all)")
	c.Flags().BoolVar(&opts.RemoveRecordings, "remove-recordings", false, "also remove the FILE.tmp-PID directories killed 'ftctl record's left (named otherwise)")
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
	var errs []error
	if errors.Is(err, session.ErrJournal) {
		errs = append(errs, err) // named, left, and the others reset all the same
	} else if err != nil {
		return err
	}
	removed, kept, rerrs := removeLeftovers(g, fs, left)
	errs = append(errs, rerrs...)
	recs, err := recordings(g, fs, opts.RemoveRecordings)
	if err != nil {
		errs = append(errs, err)
	}
	// declared owners live until deleted: named, never removed here
	owners, err := session.Owners(fs)
	if err != nil {
		errs = append(errs, err)
	}
	if owners == nil {
		owners = []*session.Owner{}
	}
	if ok, err := g.printDoc(resetFormat, resetDoc{Removed: removed, Left: kept, Recordings: recs, Owners: owners}); ok {
		if err != nil {
			return err
		}
	} else {
		if len(left) == 0 {
			g.Notice("no leftovers of ftctl sessions")
		}
		for _, o := range owners {
			top := ""
			if o.TopLevel != nil {
				top = " and the top level's " + strings.Join(o.TopLevel.Files(), ", ")
			}
			fmt.Fprintf(g.Out, "kept declared owner %s: instance %s%s, %s since %s; it lives until it is deleted (reset --all removes it)\n",
				safe(o.Name), safe(o.Instance), top, safe(o.State), o.Since.Format(time.RFC3339))
		}
	}
	if len(errs) > 0 {
		return fmt.Errorf("reset: %w", errors.Join(errs...))
	}
	return nil
}

// removeLeftovers removes what the sessions of left leave, but for those still in use, each
// named (on stdout, without -o json) as it is handled.
func removeLeftovers(g *Globals, fs *tracefs.FS, left []*session.Leftover) (removed, kept []*session.Leftover, errs []error) {
	removed, kept = []*session.Leftover{}, []*session.Leftover{}
	for _, l := range left {
		if err := l.Remove(fs); err != nil {
			errs = append(errs, err)
		}
		if l.State == session.StateInUse {
			kept = append(kept, l)
		} else {
			removed = append(removed, l)
		}
		if !g.machine() {
			printLeftover(g, l)
		}
	}
	return removed, kept, errs
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
	if l.State == session.StateInUse {
		return
	}
	if l.Journal && g.DryRun {
		fmt.Fprintf(g.Out, "would put back the kernel-wide files session %s changed, each only if it still holds what the session wrote\n", id)
	}
	for _, f := range l.Files {
		if g.DryRun {
			continue
		}
		switch f.State {
		case session.FileRestored:
			fmt.Fprintf(g.Out, "put back %s to %s (session %s had written %s)\n", f.File, quoteValue(f.Before), id, quoteValue(f.Wrote))
		case session.FileChanged:
			fmt.Fprintf(g.Out, "left %s: it holds %s, not what session %s wrote (%s); it held %s before the session\n",
				f.File, quoteValue(f.Holds), id, quoteValue(f.Wrote), quoteValue(f.Before))
		case session.FileFailed:
			fmt.Fprintf(g.Out, "could not put back %s: it holds %s; it held %s before session %s\n", f.File, quoteValue(f.Holds), quoteValue(f.Before), id)
		}
	}
}

// quoteValue shows a file's value (a list one line) quoted and escaped.
func quoteValue(v string) string {
	return safe(strconv.Quote(strings.ReplaceAll(v, "\n", " ")))
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
	errs := session.ResetAll(fs, g.Notice)
	pruned, err := flight.Prune(fs) // their owners went with the rest
	if err != nil {
		errs = append(errs, fmt.Errorf("removing the flight recorders' state: %w", err))
	}
	for _, n := range pruned {
		g.Notice("%s flight recorder %s's state (its instance is gone)", map[bool]string{true: "would remove", false: "removed"}[g.DryRun], n)
	}
	if _, err := recordings(g, fs, opts.RemoveRecordings); err != nil {
		errs = append(errs, err)
	}
	if len(errs) > 0 {
		return fmt.Errorf("reset --all: %w", errors.Join(errs...))
	}
	return nil
}

// recordings names the directories killed recordings left (their pages so far: evidence) and
// how to read them, and removes them only when asked (remove). With -o json nothing is
// printed: the caller writes them.
func recordings(g *Globals, fs *tracefs.FS, remove bool) ([]*session.LeftRecording, error) {
	recs, err := session.LeftRecordings(fs)
	errs := []error{err}
	if recs == nil {
		recs = []*session.LeftRecording{} // "recordings": [] in JSON
	}
	for _, l := range recs {
		if remove && l.State == session.RecordingLeft {
			if err := l.Remove(fs); err != nil {
				errs = append(errs, err)
			}
		}
		if g.machine() {
			continue
		}
		dir := safe(l.Dir)
		switch {
		case l.State == session.RecordingRunning:
			fmt.Fprintf(g.Out, "recording in progress in %s (ftctl record, pid %d): left alone\n", dir, l.PID)
		case l.State == session.RecordingRemoved:
			fmt.Fprintf(g.Out, "removed %s, the pages of a killed ftctl record of %s\n", dir, safe(l.File))
		case remove && g.DryRun:
			fmt.Fprintf(g.Out, "would remove %s, the pages of a killed ftctl record of %s\n", dir, safe(l.File))
		default:
			var size int64
			for _, f := range l.Files {
				size += f.Size
			}
			fmt.Fprintf(g.Out, "left %s: the pages (%d bytes) of a killed ftctl record of %s (pid %d); read them with 'ftctl report --recover %s'; 'ftctl reset --remove-recordings' removes them\n",
				dir, size, safe(l.File), l.PID, dir)
		}
	}
	return recs, errors.Join(errs...)
}
