package main

import (
	"go/parser"
	"go/token"
	"maps"
	"testing"
)

// A field's doc comment, else its line comment, on one line, keyed by package, type and field;
// unexported types too; a field named by its Go name becomes its JSON name, capitals aside.
func TestStructComments(t *testing.T) {
	src := `package p

type countDoc struct {
	// Func is the function; Count its calls
	// on each CPU.
	Func  string ` + "`json:\"func\"`" + `
	Count uint64 ` + "`json:\"count\"`" + ` // calls of the PID
	PID   int
	Skip  int ` + "`json:\"-\"`" + ` // Skip is not in JSON
	Bare  int
}
`
	f, err := parser.ParseFile(token.NewFileSet(), "p.go", src, parser.ParseComments)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	structComments(f, "example.com/p", got)
	want := map[string]string{
		"example.com/p.countDoc.Func":  "func is the function; count its calls on each CPU.",
		"example.com/p.countDoc.Count": "calls of the PID",
		"example.com/p.countDoc.Skip":  "Skip is not in JSON",
	}
	if !maps.Equal(got, want) {
		t.Errorf("got %q\nwant %q", got, want)
	}
}
