package profile

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/ftctl/ftctl/internal/fixture"
	"github.com/ftctl/ftctl/tracefs"
)

// graphFS is a fake tracefs whose top level has function_graph's files (no instance has them,
// as on 6.1 and 6.12) and whose instances offer instanceTracers once one exists.
func graphFS(t *testing.T) *tracefs.FS {
	t.Helper()
	root, dirs := fixture.Tracefs(t, "6.12", map[string]string{
		"set_graph_function": "#### all functions enabled ####\n",
		"set_graph_notrace":  "#### no functions disabled ####\n",
		"max_graph_depth":    "0\n",
		"available_tracers":  "function_graph function nop\n",
	})
	return &tracefs.FS{Mount: tracefs.Mount{Path: root, Found: "test"}, Dirs: dirs,
		KallsymsFile: filepath.Join(root, "no-kallsyms"), BTFDir: filepath.Join(root, "no-btf"),
		StateDir: filepath.Join(t.TempDir(), "run"), BootIDFile: filepath.Join(root, "no-boot-id")}
}

const graphProfile = `apiVersion: ftctl.dev/v1alpha1
kind: TracingProfile
metadata:
  name: gr
spec:
  graph:
    roots: ["vfs_*"]
    depth: 3
`

func mustLoad(t *testing.T, text string) *Profile {
	t.Helper()
	p, err := Load("gr.yaml", []byte(text))
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Validate(); err != nil {
		t.Fatal(err)
	}
	return p
}

// A graph needs the top level's files: a profile that does not claim it is refused at
// spec.graph's line and column, one that does shows the claim and what its globs select.
func TestGraphClaim(t *testing.T) {
	fs := graphFS(t)
	_, err := Compute(fs, mustLoad(t, graphProfile))
	want := "gr.yaml:7:5: spec.graph: the kernel keeps set_graph_function, max_graph_depth at the top level alone"
	if !errors.Is(err, ErrInvalid) || err == nil || !strings.HasPrefix(err.Error(), want) || !strings.Contains(err.Error(), "add spec.topLevel.claim: true") {
		t.Fatalf("without the claim: %v\nwant %s...", err, want)
	}
	claimed := graphProfile + "  topLevel: {claim: true}\n"
	pl, err := Compute(fs, mustLoad(t, claimed))
	if err != nil {
		t.Fatal(err)
	}
	c := pl.TopLevel
	if c == nil || !slices.Equal(c.Files, []string{"set_graph_function", "max_graph_depth"}) || c.Whole || c.Known || c.Held {
		t.Fatalf("claim before any instance exists: %+v", c)
	}
	if got := c.Text(); got != "takes the top level: set_graph_function, max_graph_depth; and the whole top level where the kernel's instances cannot run function_graph (known once an instance exists)" {
		t.Errorf("claim's text: %s", got)
	}
	if len(pl.Patterns) != 1 || pl.Patterns[0] != (PatternMatch{File: "set_graph_function", Pattern: "vfs_*", Functions: 2}) || pl.GlobsFrom != "index" {
		t.Errorf("the roots and what they select: %+v (%s)", pl.Patterns, pl.GlobsFrom)
	}
	if pl.profile.tracer() != "function_graph" || pl.instanceTracer() != "function_graph" {
		t.Errorf("tracer: %s, instance's %s", pl.profile.tracer(), pl.instanceTracer())
	}
	if pl.want.roots.Total() != 2 || pl.want.graphNotrace.Total() != 0 {
		t.Errorf("what set_graph_function and set_graph_notrace will list: %v %v", pl.want.roots, pl.want.graphNotrace)
	}
}

// Where the instances cannot run function_graph (6.1's offer "function nop"), the claim is
// the whole top level, and function lists (the instance's, which that graph does not follow)
// are refused at spec.functions.
func TestGraphClaimWhole(t *testing.T) {
	fs := graphFS(t)
	if _, _, err := fs.Ensure("other"); err != nil { // the fake's instances offer "function nop"
		t.Fatal(err)
	}
	claimed := graphProfile + "  topLevel: {claim: true}\n"
	pl, err := Compute(fs, mustLoad(t, claimed))
	if err != nil {
		t.Fatal(err)
	}
	if c := pl.TopLevel; c == nil || !c.Whole || !c.Known || !strings.Contains(c.Text(), "and the whole top level (current_tracer function_graph, tracing_on)") {
		t.Fatalf("claim where instances cannot run function_graph: %+v", c)
	}
	if pl.instanceTracer() != "nop" {
		t.Errorf("the instance's tracer, the graph running at the top level: %s", pl.instanceTracer())
	}
	withFunctions := claimed + "  functions:\n    filter: [vfs_read]\n"
	_, err = Compute(fs, mustLoad(t, withFunctions))
	if !errors.Is(err, ErrInvalid) || !strings.HasPrefix(err.Error(), "gr.yaml:11:5: spec.functions: this kernel's instances cannot run function_graph") {
		t.Errorf("function lists with the graph at the top level: %v", err)
	}
	_, err = Compute(fs, mustLoad(t, claimed+"  instance: {tracingOn: false}\n"))
	if !errors.Is(err, ErrInvalid) || !strings.HasPrefix(err.Error(), "gr.yaml:10:25: spec.instance.tracingOn: this kernel's instances cannot run function_graph") {
		t.Errorf("tracing off with the graph at the top level: %v", err)
	}
}

// Another owner's claim makes the top level busy.
func TestGraphClaimedByAnother(t *testing.T) {
	fs := graphFS(t)
	dir := filepath.Join(fs.StatePath(), "owners")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	decl := `{"name":"other","instance":"ftctl-owned-other","group":"ftctl_owned_other","state":"applied",
"topLevel":{"whole":false,"entries":[{"file":"set_graph_function","list":true,"before":"","wrote":"vfs_read\n"}]}}`
	if err := os.WriteFile(filepath.Join(dir, "other.json"), []byte(decl), 0o600); err != nil {
		t.Fatal(err)
	}
	_, err := Compute(fs, mustLoad(t, graphProfile+"  topLevel: {claim: true}\n"))
	if !errors.Is(err, tracefs.ErrBusy) || !strings.Contains(err.Error(), "the declared owner other claims the top level's function_graph files (set_graph_function)") {
		t.Errorf("claimed by another owner: %v", err)
	}
}

// Offline: a graph's globs as set_graph_function takes them, roots for a graph, the
// function_graph tracer, and a claim only with a graph.
func TestValidateGraph(t *testing.T) {
	for _, c := range []struct{ spec, want string }{
		{"  graph: {roots: [\"vfs_*:mod:ext4\"]}\n", "gr.yaml:5:25: spec.graph.roots[0]: set_graph_function and set_graph_notrace take function names and globs (no :mod: part)"},
		{"  graph: {roots: [\"!vfs_read\"]}\n", "gr.yaml:5:20: spec.graph.roots[0]: \"!vfs_read\": a leading '!' removes functions; write \"vfs_read\" under spec.graph.notrace"},
		{"  graph: {depth: 2}\n", "gr.yaml:5:10: spec.graph: no roots"},
		{"  graph: {roots: [vfs_read], depth: -1}\n", "gr.yaml:5:37: spec.graph.depth: -1: a depth is 1 or more"},
		{"  instance: {tracer: function}\n  graph: {roots: [vfs_read]}\n", "gr.yaml:5:22: spec.instance.tracer: \"function\": spec.graph is function_graph's"},
		{"  topLevel: {claim: true}\n", "gr.yaml:5:21: spec.topLevel.claim: the profile sets nothing at the top level"},
	} {
		p, err := Load("gr.yaml", []byte("apiVersion: ftctl.dev/v1alpha1\nkind: TracingProfile\nmetadata: {name: gr}\nspec:\n"+c.spec))
		if err != nil {
			t.Fatalf("%q: %v", c.spec, err)
		}
		if err := p.Validate(); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%q:\n got %v\nwant %s...", c.spec, err, c.want)
		}
	}
}
