package outputcheck

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

const mountSchema = `{"$schema": "https://json-schema.org/draft/2020-12/schema", "type": "object",
 "properties": {"schema": {"const": "ftctl/mount/v1"}, "path": {"type": "string"}},
 "required": ["schema", "path"], "additionalProperties": false}`

func TestCheck(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "mount.schema.json"), []byte(mountSchema), 0o644); err != nil {
		t.Fatal(err)
	}
	c := New(dir)
	for _, tc := range []struct {
		out  string
		n    int
		fail string
	}{
		{"", 0, ""},
		{"{\n  \"schema\": \"ftctl/mount/v1\",\n  \"path\": \"/t\"\n}\n", 1, ""},
		{`{"schema":"ftctl/mount/v1","path":"/a"}` + "\n" + `{"schema":"ftctl/mount/v1","path":"/b"}` + "\n", 2, ""},
		{`{"schema":"ftctl/mount/v1","path":"/a","extra":1}`, 0, "mount.schema.json"},
		{`{"schema":"ftctl/mount/v1"}`, 0, "mount.schema.json"},
		{`{"schema":"ftctl/nosuch/v1"}`, 0, "no schema"},
		{`{"schema":"mount"}`, 0, "not ftctl/NAME/vN"},
		{`{"path":"/a"}`, 0, `no "schema"`},
		{`["a"]`, 0, "not an object"},
		{"tracing off\n", 0, "not JSON"},
	} {
		n, err := c.Check([]byte(tc.out))
		switch {
		case tc.fail == "" && err != nil:
			t.Errorf("%q: %v", tc.out, err)
		case tc.fail != "" && (err == nil || !strings.Contains(err.Error(), tc.fail)):
			t.Errorf("%q: %v, want an error with %q", tc.out, err, tc.fail)
		case tc.fail == "" && n != tc.n:
			t.Errorf("%q: %d values checked, want %d", tc.out, n, tc.n)
		}
	}
}

func TestAsksJSON(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want bool
	}{
		{[]string{"status", "-o", "json"}, true},
		{[]string{"-o", "json", "status"}, true},
		{[]string{"--output=json", "status"}, true},
		{[]string{"status"}, false},
		{[]string{"record", "-w", "out.dat"}, false},
		{[]string{"trace", "--", "prog", "-o", "json"}, false},
	} {
		if got := AsksJSON(tc.args); got != tc.want {
			t.Errorf("%q: %v", tc.args, got)
		}
	}
}

// The schemas docs/json holds all compile (each reference resolves).
func TestDocsSchemasCompile(t *testing.T) {
	if err := New("../../docs/json").CheckAll(); err != nil {
		t.Fatal(err)
	}
}

// A traced command's output on the same stdout is left out, ftctl's records kept.
func TestRecords(t *testing.T) {
	out := "Linux version 6.12\nLinux ver{\"schema\":\"ftctl/event/v1\",\"event\":\"x\"}\n3\n{\"schema\":\"ftctl/event/v1\",\"event\":\"y\"}\n"
	want := "{\"schema\":\"ftctl/event/v1\",\"event\":\"x\"}\n{\"schema\":\"ftctl/event/v1\",\"event\":\"y\"}\n"
	if got := string(Records([]byte(out))); got != want {
		t.Errorf("got %q", got)
	}
}

// A call tree validates down its calls, and a stray member deep in it fails (the recursive
// definition resolves).
func TestGraphSchemaNested(t *testing.T) {
	c := New("../../docs/json")
	out := `{"schema":"ftctl/graph/v1","func":"a","duration_us":1.5,"cpu":0,"pid":1,"comm":"x","calls":[{"func":"b","duration_us":0.5,"calls":[{"func":"c","unfinished":true,"calls":[]}]}]}` + "\n"
	if _, err := c.Check([]byte(out)); err != nil {
		t.Fatal(err)
	}
	bad := `{"schema":"ftctl/graph/v1","func":"a","cpu":0,"pid":1,"comm":"x","calls":[{"func":"b","bogus":1,"calls":[]}]}` + "\n"
	if _, err := c.Check([]byte(bad)); err == nil {
		t.Fatal("bogus nested member passed")
	}
}
