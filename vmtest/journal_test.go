//go:build vmtest

package vmtest

import (
	"bytes"
	"fmt"
	"io"
	"slices"
	"strings"
	"syscall"
	"testing"

	"github.com/ftctl/ftctl/filters"
	"github.com/ftctl/ftctl/session"
)

// sortedLines is a list's lines, sorted (the kernel lists set_graph_function in hash order).
func sortedLines(s string) []string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if l = strings.TrimSpace(l); l != "" {
			out = append(out, l)
		}
	}
	slices.Sort(out)
	return out
}

// TestGraphListingIsTheKernels (issue 28 a): what a graph session journals before it writes
// set_graph_function or set_graph_notrace (session.GraphListing: the records its patterns
// select in available_filter_functions, named as that file names them) is what the kernel
// lists after the write: a glob, a '?' glob, a static name that occurs twice, a module's
// function where a module is loaded. So a SIGKILL between the write and ftctl's read-back
// leaves a journal the list matches, and reset puts it back.
func TestGraphListingIsTheKernels(t *testing.T) {
	fs := topFS(t)
	top := fs.Top()
	if !top.Has("set_graph_function") {
		t.Skip("no set_graph_function")
	}
	ix, err := filters.LoadIndex(top)
	if err != nil {
		t.Fatal(err)
	}
	dup, module := "", ""
	for i := 1; i <= ix.Len(); i++ {
		k := ix.Key(i)
		switch {
		case !ix.Valid(i):
		case k.Module != "" && module == "":
			module = k.Name
		case k.Module == "" && dup == "" && ix.Count(k) >= 2 && !strings.ContainsAny(k.Name, "*?[\\!."):
			dup = k.Name
		}
	}
	if dup == "" {
		t.Fatal("no name occurs twice in available_filter_functions")
	}
	roots := []string{"vfs_rea*", "ksys_rea?", dup, "vfs_read\nvfs_write"}
	if module != "" {
		roots = append(roots, module)
	} else {
		t.Logf("no module loaded: a module's function not tried")
	}
	for _, file := range []string{"set_graph_function", "set_graph_notrace"} {
		for _, r := range roots {
			var ps []*filters.Pattern
			for _, text := range strings.Split(r, "\n") {
				p, err := filters.Compile(text)
				if err != nil {
					t.Fatal(err)
				}
				ps = append(ps, p)
			}
			want, err := session.GraphListing(ix, ps)
			if err != nil {
				t.Fatal(err)
			}
			if err := top.Write(file, r+"\n"); err != nil {
				t.Fatalf("%s %q: %v", file, r, err)
			}
			got := read(t, file)
			truncate(t, file)
			if g, w := sortedLines(got), sortedLines(want); !slices.Equal(g, w) {
				t.Errorf("%s after %q lists\n%q\nGraphListing says\n%q", file, r, g, w)
			}
		}
	}
}

// TestGraphTeardownLeavesWhatAnotherChanged (issue 28 b): another actor sets max_graph_depth
// while a graph session runs; the session's teardown (SIGINT) leaves it as the other set it,
// says so, and puts back the rest.
func TestGraphTeardownLeavesWhatAnotherChanged(t *testing.T) {
	before := graphWorld(t)
	cmd, _, errb := startGraph(t, "-f", "ksys_read", "--depth", "5", "--duration", "120s", "-o", "json")
	write(t, "max_graph_depth", "7")
	t.Cleanup(func() { write(t, "max_graph_depth", "0") })
	endWith(t, cmd, syscall.SIGINT, errb)
	if got := strings.TrimSpace(read(t, "max_graph_depth")); got != "7" {
		t.Errorf("max_graph_depth is %s after the teardown, want the other actor's 7", got)
	}
	if e := errb.String(); !strings.Contains(e, "left max_graph_depth") || !strings.Contains(e, `holds "7"`) {
		t.Errorf("the teardown does not say it left max_graph_depth:\n%s", e)
	}
	write(t, "max_graph_depth", "0")
	if after := graphState(t); after != before {
		t.Errorf("the teardown left:\n%s\nwant:\n%s\nstderr:\n%s", after, before, errb)
	}
}

// TestGraphTeardownWithoutTheLock (issue 28 b): another ftctl holds the tracefs lock when a
// graph session ends: the teardown waits --lock-timeout saying for whom, then writes no
// kernel-wide file unlocked: it removes its instance, leaves the graph files with the journal
// and says 'ftctl reset' puts them back, which it does once the lock is free.
func TestGraphTeardownWithoutTheLock(t *testing.T) {
	before := graphWorld(t)
	cmd := ftctlCommand(t, "--lock-timeout", "300ms", "graph", "-f", "ksys_read", "--depth", "5", "--duration", "120s", "-o", "json")
	var errb bytes.Buffer
	cmd.Stdout = io.Discard
	cmd.Stderr = &errb
	startGraphCmd(t, cmd, &errb)
	holder, release := startLockHolder(t)
	endWith(t, cmd, syscall.SIGINT, &errb)
	e := errb.String()
	if !strings.Contains(e, fmt.Sprintf("waiting for the tracefs lock held by pid %d", holder.Process.Pid)) || !strings.Contains(e, "'ftctl reset' puts them back") {
		t.Errorf("the teardown does not say whom it waited for and what it left:\n%s", e)
	}
	if got := strings.TrimSpace(read(t, "max_graph_depth")); got != "5" {
		t.Errorf("max_graph_depth is %s: written without the lock", got)
	}
	if !sessionGone(cmd.Process.Pid) {
		t.Errorf("the session's instance is still there")
	}
	release()
	r := ftctlRun(t, "reset", "-o", "json")
	if r.code != 0 || resetFiles(t, r)["max_graph_depth"] != "restored" {
		t.Errorf("reset: %v", r)
	}
	if after := graphState(t); after != before {
		t.Errorf("reset left:\n%s\nwant:\n%s\n%v", after, before, r)
	}
}
