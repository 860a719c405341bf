package cmd

import (
	"bytes"
	"encoding/binary"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/ftctl/ftctl/internal/tracedattest"
	"github.com/ftctl/ftctl/tracedat"
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
		if !strings.HasPrefix(l, `{"schema":"ftctl/event/v1","buffer":"ftbuf",`) {
			t.Fatalf("--buffer ftbuf: %q", l)
		}
	}
	if len(js) != inst {
		t.Errorf("--buffer ftbuf: %d events, the text had %d", len(js), inst)
	}
	code, out, _ = run(t, "report", file, "--buffer", "", "-o", "json")
	if n := strings.Count(out, `{"schema":"ftctl/event/v1","buffer":"",`); code != 0 || n != len(lines)-inst || n != strings.Count(out, "\n") {
		t.Errorf("--buffer '': exit %d, %d top-level events of %d lines, want %d", code, n, strings.Count(out, "\n"), len(lines)-inst)
	}
	code, _, errs = run(t, "report", file, "--buffer", "nope")
	if code != ExitInvalid || !strings.Contains(errs, `--buffer "nope" (it holds the top level, "ftbuf")`) {
		t.Errorf("--buffer nope: exit %d, %q", code, errs)
	}
}

// A file holding what no kernel writes is exit 2 naming the file, the byte and why, after the
// events before the fault: CPUs sharing their data, a page whose event runs past it (before:
// exit 1 for the page, and the shared data read once per CPU).
func TestReportCorruptFile(t *testing.T) {
	src, err := os.ReadFile(filepath.Join("..", "stream", "testdata", "6.12", "tp.v7zstd.dat"))
	if err != nil {
		t.Fatal(err)
	}
	v6 := tracedattest.TraceCmd(t, src, 6, "", tracedattest.Buffer{Name: "", CPUs: []int{0, 1}})
	f, err := tracedat.Read(bytes.NewReader(v6), int64(len(v6)))
	if err != nil {
		t.Fatal(err)
	}
	table := bytes.Index(v6, []byte("flyrecord\x00")) + 10
	shared := bytes.Clone(v6)
	copy(shared[table+16:table+32], shared[table:table+16])
	page := bytes.Clone(v6)
	third := f.CPUData[0].Offset + 2*int64(f.PageSize)
	binary.LittleEndian.PutUint32(page[third+16:], 0)     // type_len 0: the length follows
	binary.LittleEndian.PutUint32(page[third+20:], 1<<20) // past the page
	dir := t.TempDir()
	for _, c := range []struct {
		name string
		b    []byte
		want string
		out  bool
	}{
		{"shared.dat", shared, "shared.dat: corrupt trace.dat at byte " + strconv.FormatInt(f.CPUData[0].Offset, 10) + " (CPU data): CPU 1's data", false},
		{"page.dat", page, "page.dat: corrupt trace.dat at byte " + strconv.FormatInt(third+16, 10) + " (CPU 0's data): ring-buffer page: event runs past the page", true},
	} {
		file := filepath.Join(dir, c.name)
		os.WriteFile(file, c.b, 0o644)
		code, out, errs := run(t, "report", file)
		if code != ExitInvalid || !strings.Contains(errs, c.want) || (out != "") != c.out {
			t.Errorf("%s: exit %d, %d bytes out, %q; want exit 2 and %q", c.name, code, len(out), errs, c.want)
		}
	}
}
