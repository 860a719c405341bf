package cmd

import (
	"bytes"
	"encoding/json"
	"maps"
	"slices"
	"strings"
	"testing"

	"github.com/spf13/cobra"

	"github.com/ftctl/ftctl/internal/fixture"
)

// jsonKeys collects every object key in a JSON document, at any depth.
func jsonKeys(t *testing.T, what string, doc []byte) map[string]bool {
	t.Helper()
	var v any
	if err := json.Unmarshal(doc, &v); err != nil {
		t.Fatalf("%s: %v\n%s", what, err, doc)
	}
	keys := map[string]bool{}
	var walk func(v any)
	walk = func(v any) {
		switch v := v.(type) {
		case map[string]any:
			for k, e := range v {
				keys[k] = true
				walk(e)
			}
		case []any:
			for _, e := range v {
				walk(e)
			}
		}
	}
	walk(v)
	return keys
}

// documentedExample is the JSON example of an AnnotationJSON text: its indented lines.
func documentedExample(doc string) []byte {
	var b bytes.Buffer
	for _, l := range strings.Split(doc, "\n") {
		if strings.HasPrefix(l, " ") {
			b.WriteString(l + "\n")
		}
	}
	return b.Bytes()
}

// TestJSONFormatsAreDocumentedAsPrinted runs each command whose documented JSON format (for its
// man page and ftctl(1)) has an example, and compares the field names of the example with those
// of the real output: a field added, renamed or dropped on either side fails.
func TestJSONFormatsAreDocumentedAsPrinted(t *testing.T) {
	// How to make each such command print JSON on a fake tracing directory (changes in dry runs).
	runs := map[string][]string{
		"ftctl status":          {"status"},
		"ftctl functions":       {"functions", "vfs_read"},
		"ftctl filter show":     {"filter", "show"},
		"ftctl notrace show":    {"notrace", "show"},
		"ftctl filter set":      {"--dry-run", "filter", "set", "vfs_read"},
		"ftctl filter add":      {"--dry-run", "filter", "add", "vfs_readv"},
		"ftctl filter remove":   {"--dry-run", "filter", "remove", "vfs_read"},
		"ftctl filter clear":    {"--dry-run", "filter", "clear", "--force"},
		"ftctl notrace set":     {"--dry-run", "notrace", "set", "vfs_read"},
		"ftctl notrace add":     {"--dry-run", "notrace", "add", "vfs_read"},
		"ftctl notrace remove":  {"--dry-run", "notrace", "remove", "vfs_read"},
		"ftctl notrace clear":   {"--dry-run", "notrace", "clear"},
		"ftctl probe list":      {"probe", "list"},
		"ftctl instance create": {"--dry-run", "instance", "create", "x"},
		"ftctl instance remove": {"--dry-run", "instance", "remove", "x"},
		"ftctl probe args":      {"probe", "args", "vfs_read"}, // FTCTL_BTF: the fixture, below
		"ftctl probe syms":      {"probe", "syms", "../probes/testdata/elf/exec.elf"},
		// (invalid, for its errors' fields: exit 2)
		"ftctl profile validate": {"profile", "validate", "-f", "../profile/testdata/broken.yaml"},
	}
	exits := map[string]int{"ftctl profile validate": ExitInvalid}
	// Fields that only appear in some states (omitempty): lockdown levels, or why it is unknown.
	optional := map[string]bool{"levels": true, "note": true}

	root := completionRoot(t)
	t.Setenv("FTCTL_BTF", fixture.BTFDir(t))
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		for _, s := range c.Commands() {
			walk(s)
		}
		doc := c.Annotations[AnnotationJSON]
		if doc == "" {
			return
		}
		path := c.CommandPath()
		example := documentedExample(doc)
		if len(example) == 0 {
			return // described in words only (instance list, mount)
		}
		args, ok := runs[path]
		if !ok {
			t.Errorf("%s documents a JSON example: add to this test how to run it", path)
			return
		}
		code, out, errs := run(t, append([]string{"--tracefs", root, "-o", "json"}, args...)...)
		if code != exits[path] {
			t.Errorf("%s: exit %d: %s", path, code, errs)
			return
		}
		// With -o json, a dry run's plan goes to stderr: stdout is the document alone.
		if !strings.HasPrefix(out, "[") && !strings.HasPrefix(out, "{") {
			t.Errorf("%s: stdout is not one JSON document: %q", path, out)
		}
		documented := jsonKeys(t, path+" (documented)", example)
		printed := jsonKeys(t, path+" (printed)", []byte(documentPayload(t, out)))
		maps.DeleteFunc(printed, func(k string, _ bool) bool { return optional[k] })
		maps.DeleteFunc(documented, func(k string, _ bool) bool { return optional[k] })
		for k := range printed {
			if !documented[k] {
				t.Errorf("%s prints %q, which its documented JSON format lacks", path, k)
			}
		}
		for _, k := range slices.Sorted(maps.Keys(documented)) {
			if !printed[k] {
				t.Errorf("%s documents %q, which it does not print", path, k)
			}
		}
	}
	walk(NewRootCmd(&Globals{}))
}

// documentPayload is a document as its command's AnnotationJSON shows it: without the seam's
// "schema", and an array's "items" as the array.
func documentPayload(t *testing.T, out string) string {
	t.Helper()
	var doc map[string]json.RawMessage
	if err := json.Unmarshal([]byte(out), &doc); err != nil || doc["schema"] == nil {
		t.Fatalf("not a tagged document (%v): %s", err, out)
	}
	if items, ok := doc["items"]; ok && len(doc) == 2 {
		return string(items)
	}
	delete(doc, "schema")
	b, _ := json.Marshal(doc)
	return string(b)
}
