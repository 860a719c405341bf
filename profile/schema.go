package profile

import (
	_ "embed"
	"encoding/json"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"reflect"
	"strconv"
	"strings"

	"github.com/invopop/jsonschema"
)

// typesSource is the file declaring the profile's types: the schema's descriptions are its
// doc comments, read from the binary (invopop/jsonschema's AddGoComments reads source files
// at run time, which an installed ftctl does not have).
//
//go:embed profile.go
var typesSource string

// SchemaID names the schema (its $id).
const SchemaID = "https://ftctl.dev/schemas/tracingprofile-v1alpha1.json"

// Schema is the JSON Schema (draft 2020-12) of a profile, for editors and for checks outside
// ftctl: the Go types' fields by their json tags, their doc comments as descriptions, no
// property but theirs anywhere, and the enums and patterns of the rules Validate applies to
// single values. What relates values to each other (a filter needs a function tracer, an
// event of ${group} names a probe) and the grammars (filters, probes) are Validate's alone.
func Schema() ([]byte, error) {
	comments, err := docComments(typesSource)
	if err != nil {
		return nil, fmt.Errorf("reading the profile types' comments: %w", err)
	}
	r := &jsonschema.Reflector{
		LookupComment: func(t reflect.Type, field string) string {
			if field == "" {
				return comments[t.Name()]
			}
			return comments[t.Name()+"."+field]
		},
	}
	s := r.Reflect(new(Profile))
	s.ID = SchemaID
	s.Title = Kind + " " + APIVersion
	def := func(typ, prop string) *jsonschema.Schema {
		d, ok := s.Definitions[typ]
		if !ok {
			panic("profile: no schema definition " + typ) // a type renamed: TestSchema fails
		}
		p, ok := d.Properties.Get(prop)
		if !ok {
			panic("profile: no schema property " + typ + "." + prop)
		}
		return p
	}
	def("Profile", "apiVersion").Enum = []any{APIVersion}
	def("Profile", "kind").Enum = []any{Kind}
	def("Metadata", "name").Pattern = nameRE.String()
	def("Spec", "requires").Items.Enum = anys(Features)
	def("Instance", "tracer").Enum = append(anys(Tracers), "")
	def("Instance", "clock").Pattern = clockRE.String()
	def("Instance", "bufferKB").Minimum = "0"
	def("Instance", "bufferKB").Maximum = json.Number(strconv.Itoa(MaxBufferKB))
	def("Instance", "options").PropertyNames = &jsonschema.Schema{Pattern: optionRE.String()}
	def("Synthetic", "name").Pattern = identRE.String()
	def("Graph", "depth").Minimum = "0"
	def("Flight", "dir").Pattern = "^/"
	def("FlightTrigger", "latency").Pattern = latencyRE.String()
	def("Flight", "keep").Minimum = "0"
	def("Flight", "maxMB").Minimum = "0"
	def("Flight", "maxMB").Maximum = json.Number(strconv.Itoa(MaxFlightMB))
	return json.MarshalIndent(s, "", "  ")
}

func anys(ss []string) []any {
	out := make([]any, len(ss))
	for i, s := range ss {
		out[i] = s
	}
	return out
}

// docComments reads the doc comments of the types and fields declared in src, keyed TYPE and
// TYPE.FIELD, each made one paragraph.
func docComments(src string) (map[string]string, error) {
	f, err := parser.ParseFile(token.NewFileSet(), "profile.go", src, parser.ParseComments)
	if err != nil {
		return nil, err
	}
	text := func(g *ast.CommentGroup) string { return strings.Join(strings.Fields(g.Text()), " ") }
	m := map[string]string{}
	for _, d := range f.Decls {
		gd, ok := d.(*ast.GenDecl)
		if !ok || gd.Tok != token.TYPE {
			continue
		}
		for _, spec := range gd.Specs {
			ts := spec.(*ast.TypeSpec)
			doc := ts.Doc
			if doc == nil && len(gd.Specs) == 1 {
				doc = gd.Doc
			}
			m[ts.Name.Name] = text(doc)
			st, ok := ts.Type.(*ast.StructType)
			if !ok {
				continue
			}
			for _, fl := range st.Fields.List {
				for _, n := range fl.Names {
					m[ts.Name.Name+"."+n.Name] = text(fl.Doc)
				}
			}
		}
	}
	return m, nil
}
