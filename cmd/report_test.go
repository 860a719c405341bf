package cmd

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ftctl/ftctl/internal/tracedattest"
)

// ftctl report of a trace-cmd record -B file: every buffer's events, each line starting with
// its buffer as trace-cmd report prints it, "buffer" in JSON; --buffer chooses; an unknown
// --buffer is exit 2 naming the buffers the file holds.
func TestReportBuffers(t *testing.T) {
	src, err := os.ReadFile(filepath.Join("..", "stream", "testdata", "6.12", "tp.v7zstd.dat"))
	if err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(t.TempDir(), "b.dat")
	os.WriteFile(file, tracedattest.TraceCmd(t, src, 6, "", tracedattest.Buffer{Name: "", CPUs: []int{0}},
		tracedattest.Buffer{Name: "ftbuf", CPUs: []int{1}}), 0o644)
	code, out, errs := run(t, "report", file)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
	inst := 0
	for _, l := range lines {
		switch {
		case strings.HasPrefix(l, "ftbuf: "):
			inst++
		case !strings.HasPrefix(l, "       "): // the top level's: blank where the name goes
			t.Fatalf("a line without its buffer: %q", l)
		}
	}
	if inst == 0 || inst == len(lines) {
		t.Errorf("%d lines, %d of ftbuf", len(lines), inst)
	}
	if !strings.Contains(errs, `buffers the top level, "ftbuf"`) {
		t.Errorf("summary: %q", errs)
	}
	code, out, errs = run(t, "report", file, "--buffer", "ftbuf", "-o", "json")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	js := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
	for _, l := range js {
		if !strings.HasPrefix(l, `{"buffer":"ftbuf",`) {
			t.Fatalf("--buffer ftbuf: %q", l)
		}
	}
	if len(js) != inst {
		t.Errorf("--buffer ftbuf: %d events, the text had %d", len(js), inst)
	}
	code, out, _ = run(t, "report", file, "--buffer", "", "-o", "json")
	if n := strings.Count(out, `{"buffer":"",`); code != 0 || n != len(lines)-inst || n != strings.Count(out, "\n") {
		t.Errorf("--buffer '': exit %d, %d top-level events of %d lines, want %d", code, n, strings.Count(out, "\n"), len(lines)-inst)
	}
	code, _, errs = run(t, "report", file, "--buffer", "nope")
	if code != ExitInvalid || !strings.Contains(errs, `--buffer "nope" (it holds the top level, "ftbuf")`) {
		t.Errorf("--buffer nope: exit %d, %q", code, errs)
	}
}
