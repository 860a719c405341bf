// Package outputcheck validates what ftctl printed with -o json against the JSON Schemas of
// docs/json (generated from the Go types by internal/gendocs): each document or record names
// its schema in its "schema" member ("ftctl/NAME/vN" is NAME.schema.json); an exported profile,
// which carries its own apiVersion, is checked against profile.schema.json. It is for tests
// (cmd's and the VM suite's): the binary does not import it.
package outputcheck

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"

	"github.com/santhosh-tekuri/jsonschema/v6"
)

// Checker validates outputs against the schemas of one directory, each compiled once.
type Checker struct {
	dir string

	mu       sync.Mutex
	compiled map[string]*jsonschema.Schema
}

// New is a Checker of the schemas in dir (docs/json).
func New(dir string) *Checker {
	return &Checker{dir: dir, compiled: map[string]*jsonschema.Schema{}}
}

// AsksJSON says whether ftctl's arguments ask for -o json.
func AsksJSON(args []string) bool {
	for i, a := range args {
		switch {
		case a == "--":
			return false
		case a == "-o" || a == "--output":
			if i+1 < len(args) && args[i+1] == "json" {
				return true
			}
		case a == "-ojson" || a == "--output=json" || a == "-o=json":
			return true
		}
	}
	return false
}

// Records is what stdout holds of ftctl's own records when a traced command (-- COMMAND) wrote
// to the same stdout: each line's text from its first `{"schema":"ftctl/` on (the command may
// have left a line unfinished before it), lines without one left out.
func Records(stdout []byte) []byte {
	var out []byte
	for line := range bytes.Lines(stdout) {
		if i := bytes.Index(line, []byte(`{"schema":"ftctl/`)); i >= 0 {
			out = append(out, line[i:]...)
		}
	}
	return out
}

// Traced says whether ftctl's arguments run a command (-- COMMAND) whose output shares stdout.
func Traced(args []string) bool {
	return slices.Contains(args, "--")
}

// CheckAll compiles every schema of the directory (NAME.schema.json), so that a schema that
// does not compile (a reference to nothing) fails before any output meets it.
func (c *Checker) CheckAll() error {
	files, err := filepath.Glob(filepath.Join(c.dir, "*.schema.json"))
	if err != nil {
		return err
	}
	if len(files) == 0 {
		return fmt.Errorf("no schemas in %s", c.dir)
	}
	for _, f := range files {
		if _, err := c.schema(strings.TrimSuffix(filepath.Base(f), ".schema.json")); err != nil {
			return err
		}
	}
	return nil
}

// Check validates every JSON value of out, one document or a stream of records (NDJSON),
// against the schema it names. It returns how many values it checked; out holding no JSON
// value is no error (a command may print nothing), text that is not JSON is.
func (c *Checker) Check(out []byte) (int, error) {
	dec := json.NewDecoder(bytes.NewReader(out))
	dec.UseNumber()
	n := 0
	for {
		var v any
		err := dec.Decode(&v)
		if errors.Is(err, io.EOF) {
			return n, nil
		}
		if err != nil {
			return n, fmt.Errorf("value %d: not JSON: %w", n+1, err)
		}
		if err := c.checkValue(v); err != nil {
			return n, fmt.Errorf("value %d: %w", n+1, err)
		}
		n++
	}
}

func (c *Checker) checkValue(v any) error {
	obj, ok := v.(map[string]any)
	if !ok {
		return fmt.Errorf("a %T, not an object", v)
	}
	if _, ok := obj["$schema"]; ok {
		return nil // a JSON Schema (ftctl profile schema): profile's tests check it
	}
	name := "profile"
	if tag, ok := obj["schema"].(string); ok {
		rest, found := strings.CutPrefix(tag, "ftctl/")
		format, _, versioned := strings.Cut(rest, "/")
		if !found || !versioned || format == "" {
			return fmt.Errorf("schema %q is not ftctl/NAME/vN", tag)
		}
		name = format
	} else if _, ok := obj["apiVersion"]; !ok {
		return errors.New(`no "schema" member`)
	}
	s, err := c.schema(name)
	if err != nil {
		return err
	}
	if err := s.Validate(v); err != nil {
		return fmt.Errorf("%s.schema.json: %w", name, err)
	}
	return nil
}

// schema compiles dir/NAME.schema.json once.
func (c *Checker) schema(name string) (*jsonschema.Schema, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if s, ok := c.compiled[name]; ok {
		return s, nil
	}
	file := filepath.Join(c.dir, name+".schema.json")
	raw, err := os.ReadFile(file)
	if err != nil {
		return nil, fmt.Errorf("no schema for %q: %w", name, err)
	}
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(raw))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", file, err)
	}
	comp := jsonschema.NewCompiler()
	comp.DefaultDraft(jsonschema.Draft2020)
	if err := comp.AddResource(file, doc); err != nil {
		return nil, err
	}
	s, err := comp.Compile(file)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", file, err)
	}
	c.compiled[name] = s
	return s, nil
}
