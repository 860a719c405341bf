package cmd

import (
	"encoding/json"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/spf13/cobra"

	"github.com/ftctl/ftctl/stream"
)

// payload is a JSON document's payload (documentPayload), its tag checked to be the one of the
// format named.
func payload(t *testing.T, name, out string) string {
	t.Helper()
	var doc map[string]json.RawMessage
	if err := json.Unmarshal([]byte(out), &doc); err != nil {
		t.Fatalf("%s: not a JSON object: %v\n%s", name, err, out)
	}
	var tag string
	json.Unmarshal(doc["schema"], &tag)
	if want := "ftctl/" + name + "/v1"; tag != want {
		t.Fatalf("schema %q, want %q\n%s", tag, want, out)
	}
	return documentPayload(t, out)
}

func TestTagged(t *testing.T) {
	f := &jsonFormat{name: "x", version: 2, typ: nil}
	for _, c := range []struct {
		v    any
		want string
	}{
		{map[string]int{"a": 1}, `{"schema":"ftctl/x/v2","a":1}`},
		{[]string{"<a>"}, `{"schema":"ftctl/x/v2","items":["<a>"]}`},
		{struct{}{}, `{"schema":"ftctl/x/v2"}`},
	} {
		f.typ = reflect.TypeOf(c.v)
		b, err := tagged(f, c.v)
		if err != nil || string(b) != c.want {
			t.Errorf("%v: %s %v, want %s", c.v, b, err, c.want)
		}
	}
	if _, err := tagged(f, 3); err == nil {
		t.Error("a number became a document")
	}
	f.typ = nil // untagged: as it is
	if b, _ := tagged(f, map[string]int{"a": 1}); string(b) != `{"a":1}` {
		t.Errorf("untagged: %s", b)
	}
}

// Every leaf command either prints JSON (a format of formats.go names it) or refuses -o json
// with exit 2: none ignores it.
func TestEveryCommandHonoursOrRefusesJSON(t *testing.T) {
	root := completionRoot(t)
	paths := map[string]bool{}
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		for _, s := range c.Commands() {
			walk(s)
		}
		if c.Runnable() && !c.HasSubCommands() && !c.Hidden && c.Name() != "help" {
			paths[c.CommandPath()] = true
		}
	}
	walk(NewRootCmd(&Globals{}))
	for _, f := range jsonFormats {
		for _, p := range f.commands {
			if !paths[p] {
				t.Errorf("format %s names %q, which is no command", f.name, p)
			}
		}
	}
	for p := range paths {
		if printsJSON(p) {
			continue
		}
		c, _, _ := NewRootCmd(&Globals{}).Find(strings.Fields(p)[1:])
		if c.LocalNonPersistentFlags().Lookup("output") != nil {
			continue // its -o is a file (record, flight dump)
		}
		args := strings.Fields(p)[1:]
		if c.ValidateArgs([]string{"x"}) == nil {
			args = append(args, "x")
		}
		code, out, errs := run(t, append(args, "-o", "json", "--tracefs", root)...)
		if code != ExitInvalid || out != "" || !strings.Contains(errs, "no -o json") {
			t.Errorf("%s -o json: exit %d, %q, %q", p, code, out, errs)
		}
	}
}

// Only the seam (format.go) names an output format or encodes JSON for stdout: a command asks
// printDoc, printRecord or machine(). A new branch on -o, writeJSON or encoder elsewhere fails.
func TestOnlyTheSeamNamesFormats(t *testing.T) {
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") || name == "format.go" {
			continue
		}
		src, err := os.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		f, err := parser.ParseFile(token.NewFileSet(), name, src, parser.ImportsOnly)
		if err != nil {
			t.Fatal(err)
		}
		for _, imp := range f.Imports {
			if imp.Path.Value == `"encoding/json"` {
				t.Errorf("%s imports encoding/json: print through the seam (printDoc, printRecord)", name)
			}
		}
		fset := token.NewFileSet()
		full, err := parser.ParseFile(fset, name, src, 0)
		if err != nil {
			t.Fatal(err)
		}
		ast.Inspect(full, func(n ast.Node) bool {
			switch n := n.(type) {
			case *ast.SelectorExpr: // g.Output (the flag's value); stream.Output is a type
				if x, ok := n.X.(*ast.Ident); n.Sel.Name == "Output" && !(ok && x.Name == "stream") {
					t.Errorf("%s: reads -o (.Output): ask the seam (machine, printDoc, printRecord)", fset.Position(n.Pos()))
				}
			case *ast.CallExpr: // g.JSON(), as before the seam
				if s, ok := n.Fun.(*ast.SelectorExpr); ok && s.Sel.Name == "JSON" {
					t.Errorf("%s: .JSON(): ask the seam (machine, printDoc, printRecord)", fset.Position(n.Pos()))
				}
			case *ast.Ident:
				if n.Name == "FormatJSON" || n.Name == "FormatText" {
					t.Errorf("%s: %s: only format.go names a format", fset.Position(n.Pos()), n.Name)
				}
			}
			return true
		})
	}
}

// stream/ encodes events and call trees by hand, with its own tags: they are the formats'.
func TestStreamTagsAreTheFormats(t *testing.T) {
	if eventFormat.Tag() != stream.EventSchema || graphFormat.Tag() != stream.GraphSchema {
		t.Errorf("stream's tags %s, %s; the formats' %s, %s", stream.EventSchema, stream.GraphSchema, eventFormat.Tag(), graphFormat.Tag())
	}
	if eventFormat.typ != reflect.TypeFor[eventDoc]() || graphFormat.typ != reflect.TypeFor[callDoc]() || eventAbout == "" || graphAbout == "" {
		t.Error("the event and graph formats lost their types or texts")
	}
}
