package session

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/ftctl/ftctl/filters"
	"github.com/ftctl/ftctl/tracefs"
)

// A declared owner runs a graph only under a claim of the top level. Its declaration records
// each top-level file before its first write; while it holds them a graph session is refused
// them (naming the owner); Undeclare puts back each as it was, a file changed by hand too (the
// claim made it the owner's), and nothing else.
func TestDeclaredOwnerClaimsTop(t *testing.T) {
	fs, _ := fakeFS(t, graphFiles)
	before := snapshot(t, fs.Root())
	root, err := filters.Compile("ksys_read")
	if err != nil {
		t.Fatal(err)
	}
	spec := Spec{Graph: &GraphSpec{Roots: []*filters.Pattern{root}, Depth: 3}}
	if _, err := Declare(fs, "gr", spec); !errors.Is(err, ErrInvalid) {
		t.Fatalf("a graph without the claim: %v", err)
	}
	spec.ClaimTop = true
	o, err := Declare(fs, "gr", spec)
	if err != nil {
		t.Fatal(err)
	}
	if o.TopLevel == nil || !o.TopLevel.Whole ||
		!slices.Equal(o.TopLevel.Files(), []string{"tracing_on", "set_graph_function", "max_graph_depth", "current_tracer"}) {
		t.Fatalf("the claim (the fake's instances offer function nop: the whole top level): %+v", o.TopLevel)
	}
	read, err := ReadOwner(fs, "gr")
	if err != nil || read.TopLevel == nil || len(read.TopLevel.Entries) != 4 || read.TopLevel.Entries[2] != (JournalEntry{File: "max_graph_depth", Before: "0", Wrote: "3"}) {
		t.Fatalf("the declaration's claim: %+v %v", read, err)
	}
	if topFile(t, fs, "max_graph_depth") != "3" || !strings.HasPrefix(topFile(t, fs, "current_tracer"), "function_graph") {
		t.Errorf("the top level: depth %q tracer %q", topFile(t, fs, "max_graph_depth"), topFile(t, fs, "current_tracer"))
	}
	s, err := New(fs, ID{PID: 77, Nonce: "0123abcd"}, Spec{Graph: &GraphSpec{Roots: []*filters.Pattern{root}}})
	if err != nil {
		t.Fatal(err)
	}
	err = s.Start(t.Context())
	if !errors.Is(err, tracefs.ErrBusy) || !strings.Contains(err.Error(), "the declared owner gr claims the top level's function_graph files") {
		t.Errorf("a graph session while the owner holds the claim: %v", err)
	}
	if err := TopClaimedBy(fs, "gr"); err != nil {
		t.Errorf("the owner's own claim: %v", err)
	}
	// drift by hand (the fake writes over a file's start: "9" over "3")
	os.WriteFile(filepath.Join(fs.Root(), "max_graph_depth"), []byte("9\n"), 0o644)
	if _, err := Undeclare(fs, "gr"); err != nil {
		t.Fatal(err)
	}
	after := snapshot(t, fs.Root())
	for _, f := range []string{"max_graph_depth", "set_graph_function", "tracing_on"} {
		if strings.TrimSpace(after[f]) != strings.TrimSpace(before[f]) {
			t.Errorf("%s: %q, before %q", f, after[f], before[f])
		}
	}
	if !strings.HasPrefix(after["current_tracer"], "nop") {
		t.Errorf("current_tracer %q", after["current_tracer"])
	}
	if _, err := ReadOwner(fs, "gr"); !errors.Is(err, ErrNoOwner) {
		t.Errorf("the declaration after Undeclare: %v", err)
	}
}
