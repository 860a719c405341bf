package profile

import (
	"bytes"
	"encoding/json"
	"os"
	"strings"
	"testing"

	"github.com/goccy/go-yaml"
	"github.com/santhosh-tekuri/jsonschema/v6"
)

// compiled is the generated schema, compiled by an independent implementation.
func compiled(t *testing.T) *jsonschema.Schema {
	t.Helper()
	raw, err := Schema()
	if err != nil {
		t.Fatal(err)
	}
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(raw))
	if err != nil {
		t.Fatal(err)
	}
	c := jsonschema.NewCompiler()
	c.DefaultDraft(jsonschema.Draft2020)
	if err := c.AddResource(SchemaID, doc); err != nil {
		t.Fatal(err)
	}
	s, err := c.Compile(SchemaID)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// instance is a YAML document as the JSON value a schema validates.
func instance(t *testing.T, src string) any {
	t.Helper()
	var v any
	if err := yaml.Unmarshal([]byte(src), &v); err != nil {
		t.Fatal(err)
	}
	j, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	inst, err := jsonschema.UnmarshalJSON(bytes.NewReader(j))
	if err != nil {
		t.Fatal(err)
	}
	return inst
}

func TestSchema(t *testing.T) {
	s := compiled(t)
	for _, f := range []string{"testdata/minimal.yaml", "testdata/full.yaml", "testdata/flight.yaml"} {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if err := s.Validate(instance(t, string(data))); err != nil {
			t.Errorf("%s: the schema refuses a valid example: %v", f, err)
		}
	}
	min, err := os.ReadFile("testdata/minimal.yaml")
	if err != nil {
		t.Fatal(err)
	}
	refused := []struct{ name, src string }{
		{"unknown top-level field", string(min) + "extra: 1\n"},
		{"unknown field in metadata", strings.Replace(string(min), "  name: minimal\n", "  name: minimal\n  labels: {}\n", 1)},
		{"unknown field in an event", string(min) + "      fliter: pid == 1\n"},
		{"unknown field in the instance", string(min) + "  instance:\n    tracr: nop\n"},
		{"other version", strings.Replace(string(min), "v1alpha1", "v2", 1)},
		{"other kind", strings.Replace(string(min), "TracingProfile", "Profile", 1)},
		{"unknown tracer", string(min) + "  instance:\n    tracer: blk\n"},
		{"unknown feature", string(min) + "  requires: [kprobe]\n"},
		{"bad name", strings.Replace(string(min), "name: minimal", "name: Minimal", 1)},
		{"no name", strings.Replace(string(min), "  name: minimal\n", "  description: x\n", 1)},
		{"buffer too large", string(min) + "  instance:\n    bufferKB: 5000000\n"},
		{"string for a number", string(min) + "  instance:\n    bufferKB: big\n"},
		{"option with a slash", string(min) + "  instance:\n    options: {a/b: true}\n"},
		{"flight without dir", string(min) + "  flight: {rate: 1s}\n"},
		{"flight relative dir", string(min) + "  flight: {dir: dumps}\n"},
		{"flight negative keep", string(min) + "  flight: {dir: /d, keep: -1}\n"},
		{"flight unknown trigger field", string(min) + "  flight:\n    dir: /d\n    triggers: [{evnt: a:b}]\n"},
	}
	for _, c := range refused {
		if err := s.Validate(instance(t, c.src)); err == nil {
			t.Errorf("%s: the schema takes it", c.name)
		}
		// Load or Validate refuses each of them as well.
		if p, err := Load("x.yaml", []byte(c.src)); err == nil && p.Validate() == nil {
			t.Errorf("%s: ftctl takes what the schema refuses", c.name)
		}
	}
	broken, err := os.ReadFile("testdata/broken.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Validate(instance(t, string(broken))); err == nil {
		t.Errorf("testdata/broken.yaml: the schema takes it")
	}
}

// TestSchemaDescriptions: the descriptions are the types' doc comments, and every object
// refuses other properties.
func TestSchemaDescriptions(t *testing.T) {
	raw, err := Schema()
	if err != nil {
		t.Fatal(err)
	}
	var s struct {
		Schema string `json:"$schema"`
		Defs   map[string]struct {
			Description          string
			AdditionalProperties *bool `json:"additionalProperties"`
			Properties           map[string]struct{ Description string }
		} `json:"$defs"`
	}
	if err := json.Unmarshal(raw, &s); err != nil {
		t.Fatal(err)
	}
	if s.Schema != "https://json-schema.org/draft/2020-12/schema" {
		t.Errorf("$schema %q", s.Schema)
	}
	for _, name := range []string{"Profile", "Metadata", "Spec", "Instance", "Functions", "Event", "Synthetic", "Trigger"} {
		d, ok := s.Defs[name]
		if !ok {
			t.Errorf("no $defs.%s", name)
			continue
		}
		if d.AdditionalProperties == nil || *d.AdditionalProperties {
			t.Errorf("$defs.%s takes other properties", name)
		}
		if d.Description == "" {
			t.Errorf("$defs.%s has no description", name)
		}
	}
	if got := s.Defs["Instance"].Properties["bufferKB"].Description; got != "BufferKB is the ring buffer's size per CPU, in KiB (buffer_size_kb)." {
		t.Errorf("bufferKB's description: %q", got)
	}
}
