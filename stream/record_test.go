package stream

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ftctl/ftctl/tracedat"
)

// The recorder end to end on the fake tracefs (its trace_pipe_raw are regular files, which
// splice(2) moves as it moves the kernel's): the CPUs' pages into per-CPU files, then a
// trace.dat under its final name only, which ReadFile reads back into the markers written, in
// time order (CPU 0's page starts at 1 s, CPU 1's at 2 s).
func TestRecorderWritesTraceDat(t *testing.T) {
	fs := rawFS(t, map[int][]string{0: {"one", "three"}, 1: {"two", "four"}})
	dir := t.TempDir()
	work := filepath.Join(dir, "out.dat.tmp-1")
	if err := os.Mkdir(work, 0o700); err != nil {
		t.Fatal(err)
	}
	rec, err := NewRecorder(fs.Top(), work)
	if err != nil {
		t.Fatal(err)
	}
	defer rec.Close()
	if _, err := os.Stat(filepath.Join(work, HeaderFile)); err != nil {
		t.Fatalf("no header.dat before recording: %v", err)
	}
	if err := rec.Run(context.Background(), RecordOptions{Duration: 200 * time.Millisecond}); err != nil {
		t.Fatal(err)
	}
	if err := rec.Flush(true); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "out.dat")
	if err := rec.Assemble(out); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(work); !os.IsNotExist(err) {
		t.Errorf("the working directory is left: %v", err)
	}
	if _, _, b := rec.Stats.Totals(); b != 2*4096 {
		t.Errorf("%d bytes moved, want two pages", b)
	}
	b, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	f, err := tracedat.Read(strings.NewReader(string(b)), int64(len(b)))
	if err != nil {
		t.Fatal(err)
	}
	if f.CPUs != 2 || f.Clock() != "local" || len(f.Kallsyms) == 0 || len(f.Cmdlines) == 0 || len(f.Ftrace) != 1 {
		t.Errorf("header: %d CPUs, clock %q, %d bytes of kallsyms, %d of cmdlines, %d ftrace formats", f.CPUs, f.Clock(), len(f.Kallsyms), len(f.Cmdlines), len(f.Ftrace))
	}
	var got []string
	if _, err := ReadFile(f, FileOptions{}, func(ev *Event) error {
		got = append(got, string(ev.Comm)+":"+string(ev.Text))
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if want := "cat:one e\x1bx y:three cat:two e\x1bx y:four"; strings.Join(got, " ") != want {
		t.Errorf("events %q, want %q", strings.Join(got, " "), want)
	}
}
