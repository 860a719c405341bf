package cmd

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"reflect"
	"slices"
	"strings"

	"github.com/spf13/cobra"
)

// The output seam. Text (-o text) is for people and each command renders it itself; every other
// format is a machine format, printed here alone from the command's value: one document
// (printDoc) or a stream of records, one a line (printRecord; the events of stream/ and the call
// trees of graph are encoded by stream/ as JSON lines, asked for by machine()). Commands ask
// machine() only to decide what text to leave out (notices, progress) or where a dry run's plan
// goes; none names a format (internal/archtest and TestOnlyTheSeamNamesFormats say so). A new
// machine format (yaml) is one more case in formats and in encode.

// Format is an output format, the value of -o.
type Format string

// The output formats.
const (
	FormatText Format = "text"
	FormatJSON Format = "json"
)

// formats are the values of -o, in the order help lists them.
var formats = []Format{FormatText, FormatJSON}

// outputFlag declares -o, every command's output format. The commands that write a file
// (record, flight dump, flight last-boot) name it with -w/--write (registerWriteFlag).
func (g *Globals) outputFlag(root *cobra.Command) {
	names := make([]string, len(formats))
	for i, f := range formats {
		names[i] = string(f)
	}
	root.PersistentFlags().StringVarP(&g.Output, "output", "o", string(FormatText), "output `FORMAT`: "+strings.Join(names, " or "))
	registerFlagCompletion(root, "output", cobra.FixedCompletions(names, cobra.ShellCompDirectiveNoFileComp))
}

// checkOutput refuses a value of -o that is no format, and a machine format for a command
// that prints none (exit 2): a script asking for JSON would otherwise parse text. c writes a
// file (-w) when it has such a flag: a file name given to -o (trace-cmd's and perf's habit,
// and ftctl's own before -w came) is then refused with the spelling that writes it.
func (g *Globals) checkOutput(c *cobra.Command) error {
	path := c.CommandPath()
	if !slices.Contains(formats, Format(g.Output)) {
		if c.Flags().Lookup("write") != nil {
			return InvalidInput(fmt.Errorf("-o %s: -o is the output format (text or json) in every ftctl command; %s writes its file with -w/--write FILE (trace-cmd record's -o FILE): %s -w %s",
				safe(g.Output), path, path, safe(shellWord(g.Output))))
		}
		return InvalidInput(fmt.Errorf("-o/--output must be text or json, not %q", g.Output))
	}
	if !g.machine() || printsJSON(path) {
		return nil
	}
	return InvalidInput(fmt.Errorf("%s has no -o %s: it prints no JSON", path, g.Output))
}

// machine reports whether stdout is in a machine format: it holds the command's document or
// records alone (no text for people, no dry-run plan, no colour).
func (g *Globals) machine() bool { return Format(g.Output) != FormatText }

// printDoc prints v, the command's one document of the JSON format f, and reports true, in a
// machine format; with text it prints nothing and reports false: the command renders its text.
// The document carries f's schema tag as its first member ("schema"); a slice is the document's
// "items".
func (g *Globals) printDoc(f *jsonFormat, v any) (bool, error) {
	if !g.machine() {
		return false, nil
	}
	return true, encode(g.Out, f, v, "  ")
}

// printRecord prints v as one record (one line) of the stream of f in a machine format, and
// reports true; with text, nothing and false.
func (g *Globals) printRecord(f *jsonFormat, v any) (bool, error) {
	if !g.machine() {
		return false, nil
	}
	return true, encode(g.Out, f, v, "")
}

// encode writes v tagged with f's schema: indented by indent (a document), or on one line.
func encode(w io.Writer, f *jsonFormat, v any, indent string) error {
	b, err := tagged(f, v)
	if err != nil {
		return err
	}
	if indent != "" {
		var out bytes.Buffer
		if err := json.Indent(&out, b, "", indent); err != nil {
			return err
		}
		b = out.Bytes()
	}
	_, err = w.Write(append(b, '\n'))
	return err
}

// tagged is v's JSON with f's tag as its first member; an array becomes the "items" of an
// object. HTML characters are left unescaped: scripts read it, not browsers.
func tagged(f *jsonFormat, v any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	raw := bytes.TrimSpace(buf.Bytes())
	if f.typ == nil {
		return raw, nil // untagged: it carries its own version
	}
	head := `{"schema":` + jsonString(f.Tag())
	switch {
	case len(raw) > 0 && raw[0] == '[':
		return slices.Concat([]byte(head+`,"items":`), raw, []byte("}")), nil
	case bytes.Equal(raw, []byte("{}")):
		return []byte(head + "}"), nil
	case len(raw) > 0 && raw[0] == '{':
		return slices.Concat([]byte(head+","), raw[1:]), nil
	}
	return nil, fmt.Errorf("%s: a JSON document is an object or an array, not %.20s", f.name, raw)
}

// jsonString encodes s as a JSON string.
func jsonString(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

// A jsonFormat is one JSON format ftctl prints: a document (one a command) or a stream's
// record (one a line). Its schema tag, "ftctl/NAME/vN", is the first member of each, and its
// JSON Schema, generated from typ, is docs/json/NAME.schema.json. Adding a member keeps the
// version; removing, renaming or changing the meaning of one takes a new version.
type jsonFormat struct {
	name     string
	version  int
	typ      reflect.Type // the Go type of a document or record (nil: untagged)
	records  bool         // a stream's records (NDJSON), not one document
	about    string       // what it is for people, when the commands' AnnotationJSON does not say
	commands []string     // the commands that print it, by path
}

// Tag is the value of the format's "schema" member.
func (f *jsonFormat) Tag() string { return fmt.Sprintf("ftctl/%s/v%d", f.name, f.version) }

// jsonFormats are every JSON format, in the order declared (formats.go).
var jsonFormats []*jsonFormat

// document declares the JSON format name, version 1, whose documents are T, printed by commands.
func document[T any](name, about string, commands ...string) *jsonFormat {
	return declareFormat(&jsonFormat{name: name, version: 1, typ: reflect.TypeFor[T](), about: about, commands: commands})
}

// records declares the JSON format name, version 1, of a stream whose records are T.
func records[T any](name, about string, commands ...string) *jsonFormat {
	return declareFormat(&jsonFormat{name: name, version: 1, typ: reflect.TypeFor[T](), records: true, about: about, commands: commands})
}

// untagged declares the commands that print a JSON document carrying its own version (a
// profile's apiVersion, a JSON Schema's $id), printed as it is, with no schema of its own here.
func untagged(name string, commands ...string) *jsonFormat {
	return declareFormat(&jsonFormat{name: name, commands: commands})
}

func declareFormat(f *jsonFormat) *jsonFormat {
	for _, o := range jsonFormats {
		if o.name == f.name || strings.ContainsAny(f.name, "/ ") {
			panic("cmd: JSON format declared twice or badly named: " + f.name)
		}
	}
	jsonFormats = append(jsonFormats, f)
	return f
}

// printsJSON says whether the command at path prints JSON with -o json.
func printsJSON(path string) bool {
	for _, f := range jsonFormats {
		if slices.Contains(f.commands, path) {
			return true
		}
	}
	return false
}

// JSONFormat describes one JSON format ftctl prints, for internal/gendocs, which writes its
// JSON Schema to docs/json/NAME.schema.json and its entry in the reference.
type JSONFormat struct {
	Name     string
	Tag      string       // the value of its "schema" member; "" when untagged
	Type     reflect.Type // a document's or a record's Go type; nil when untagged
	Records  bool         // a stream's records, one a line, rather than one document
	About    string       // what it is for people, when its commands' AnnotationJSON does not say
	Commands []string     // the commands that print it, by path
}

// JSONFormats are every JSON format, in the order declared.
func JSONFormats() []JSONFormat {
	out := make([]JSONFormat, 0, len(jsonFormats))
	for _, f := range jsonFormats {
		j := JSONFormat{Name: f.name, Type: f.typ, Records: f.records, About: f.about, Commands: slices.Clone(f.commands)}
		if f.typ != nil {
			j.Tag = f.Tag()
		}
		out = append(out, j)
	}
	return out
}
