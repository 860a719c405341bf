//go:build vmtest

package vmtest

import (
	"slices"
	"strings"
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
