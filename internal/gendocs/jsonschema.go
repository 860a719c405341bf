package main

import (
	"encoding/json"
	"fmt"
	"path"
	"reflect"
	"slices"
	"strings"

	"github.com/invopop/jsonschema"
	"github.com/spf13/cobra"

	"github.com/ftctl/ftctl/cmd"
	"github.com/ftctl/ftctl/profile"
)

// jsonDir holds the JSON Schemas of ftctl's JSON output, one file per format.
const jsonDir = "docs/json"

// schemaBase is where the schemas say they live (their $id).
const schemaBase = "https://ftctl.dev/schemas/json/"

// jsonSchemaFiles are the JSON Schemas (draft 2020-12) of every JSON format ftctl prints
// (cmd.JSONFormats), generated from the Go types: docs/json/NAME.schema.json. A document's or
// record's first member is "schema", the format's tag; a document that is a list is the "items"
// of an object. No member but the type's is allowed anywhere, so that an output that drifts from
// its type fails the VM suite's validation. A format that carries its own version (an exported
// profile) gets the schema of that (profile.Schema).
// Each member's description is its Go field's comment (comments, from fieldComments).
func jsonSchemaFiles(root *cobra.Command, comments map[string]string) (map[string][]byte, error) {
	out := map[string][]byte{}
	for _, f := range cmd.JSONFormats() {
		var b []byte
		var err error
		switch {
		case f.Type != nil:
			b, err = formatSchema(f, about(root, f), comments)
		case f.Name == "profile":
			b, err = profile.Schema()
		default:
			continue // a JSON Schema's own: no schema of ours
		}
		if err != nil {
			return nil, fmt.Errorf("the JSON Schema of %s: %w", f.Name, err)
		}
		out[jsonDir+"/"+f.Name+".schema.json"] = b
	}
	return out, nil
}

// about is what a format is for people: its own text, else its first command's AnnotationJSON.
func about(root *cobra.Command, f cmd.JSONFormat) string {
	if f.About != "" {
		return f.About
	}
	for _, p := range f.Commands {
		if c, _, err := root.Find(strings.Fields(p)[1:]); err == nil && c.Annotations[cmd.AnnotationJSON] != "" {
			return c.Annotations[cmd.AnnotationJSON]
		}
	}
	return ""
}

// formatSchema is the JSON Schema of one tagged format.
func formatSchema(f cmd.JSONFormat, about string, comments map[string]string) ([]byte, error) {
	r := &jsonschema.Reflector{
		Anonymous:      true,
		ExpandedStruct: true,
		Namer:          typeName,
		// a member's description is its field's comment; a type's is not taken: a format's
		// is its about text, and the Go types' doc comments are for Go readers
		LookupComment: func(t reflect.Type, field string) string {
			if field == "" || t.Name() == "" {
				return ""
			}
			return comments[t.PkgPath()+"."+t.Name()+"."+field]
		},
	}
	s := r.ReflectFromType(f.Type)
	nullables(s, f.Type, map[reflect.Type]bool{})
	selfRef(s, f.Type)
	tag := &jsonschema.Schema{Type: "string", Const: f.Tag, Description: "the format and its version"}
	root := s
	if s.Type == "array" {
		root = &jsonschema.Schema{Type: "object", Properties: jsonschema.NewProperties(),
			AdditionalProperties: jsonschema.FalseSchema, Definitions: s.Definitions}
		s.Definitions = nil
		root.Properties.Set("items", s)
		root.Required = []string{"items"}
	}
	props := jsonschema.NewProperties()
	props.Set("schema", tag)
	for p := root.Properties.Oldest(); p != nil; p = p.Next() {
		props.Set(p.Key, p.Value)
	}
	root.Properties = props
	root.Required = append([]string{"schema"}, root.Required...)
	root.Version = "https://json-schema.org/draft/2020-12/schema"
	root.ID = jsonschema.ID(schemaBase + f.Name + ".schema.json")
	root.Title = f.Tag
	root.Description = about
	b, err := json.MarshalIndent(root, "", "  ")
	if err != nil {
		return nil, err
	}
	return append(b, '\n'), nil
}

// typeName names a definition after its package and type (tracefs.Status, flight.Status).
func typeName(t reflect.Type) string {
	if t.Name() == "" {
		return "" // unnamed (a slice, a map): inline
	}
	return path.Base(t.PkgPath()) + "." + t.Name()
}

// nullables marks as nullable each member that encoding/json writes as null when its Go value
// is nil (a pointer, slice, map or interface without omitempty), in s (the schema of t) and in
// the definitions below it.
func nullables(s *jsonschema.Schema, t reflect.Type, seen map[reflect.Type]bool) {
	defs := s.Definitions
	var walk func(t reflect.Type, obj *jsonschema.Schema)
	walk = func(t reflect.Type, obj *jsonschema.Schema) {
		for t.Kind() == reflect.Pointer || t.Kind() == reflect.Slice || t.Kind() == reflect.Array || t.Kind() == reflect.Map {
			t = t.Elem()
		}
		if t.Kind() != reflect.Struct || t.PkgPath() == "time" {
			return
		}
		if obj == nil {
			if seen[t] {
				return
			}
			seen[t] = true
			obj = defs[typeName(t)]
			if obj == nil {
				return
			}
		}
		for i := range t.NumField() {
			fd := t.Field(i)
			if !fd.IsExported() {
				continue
			}
			name, opts, _ := strings.Cut(fd.Tag.Get("json"), ",")
			if name == "-" {
				continue
			}
			if name == "" && fd.Anonymous { // embedded: its members are the parent's
				walk(fd.Type, obj)
				continue
			}
			if name == "" {
				name = fd.Name
			}
			walk(fd.Type, nil)
			p, ok := obj.Properties.Get(name)
			if !ok || strings.Contains(opts, "omitempty") {
				continue
			}
			switch fd.Type.Kind() {
			case reflect.Pointer, reflect.Slice, reflect.Map, reflect.Interface:
				if p.Type != "" || p.Ref != "" {
					// the member's description goes with the member, not with one of its forms
					d := p.Description
					p.Description = ""
					obj.Properties.Set(name, &jsonschema.Schema{AnyOf: []*jsonschema.Schema{p, {Type: "null"}}, Description: d})
				}
			}
		}
	}
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t.Kind() == reflect.Struct {
		walk(t, s) // the root, expanded
	} else {
		walk(t, nil)
	}
}

// selfRef gives a recursive root type (a call and its calls) the definition its members refer
// to: the root is expanded inline (to carry the "schema" tag), which leaves no definition of
// its own type behind.
func selfRef(s *jsonschema.Schema, t reflect.Type) {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t.Kind() != reflect.Struct || s.Definitions[typeName(t)] != nil {
		return
	}
	b, err := json.Marshal(s)
	if err != nil || !strings.Contains(string(b), `"#/$defs/`+typeName(t)+`"`) {
		return
	}
	def := *s
	def.Definitions, def.Version, def.ID = nil, "", ""
	props := jsonschema.NewProperties()
	for p := s.Properties.Oldest(); p != nil; p = p.Next() {
		props.Set(p.Key, p.Value)
	}
	def.Properties, def.Required = props, slices.Clone(s.Required)
	if s.Definitions == nil {
		s.Definitions = jsonschema.Definitions{}
	}
	s.Definitions[typeName(t)] = &def
}
