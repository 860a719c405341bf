package tracefs

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// parsePidLinesRef is ParsePidLines as it was first written (a copy of each value, strconv for
// each pid): the reference the fast one must agree with.
func parsePidLinesRef(b []byte) map[int][]byte {
	m := map[int][]byte{}
	for _, line := range bytes.Split(b, []byte{'\n'}) {
		sp := bytes.IndexByte(line, ' ')
		if sp <= 0 {
			continue
		}
		pid, err := strconv.Atoi(string(line[:sp]))
		if err != nil {
			continue
		}
		m[pid] = append([]byte(nil), line[sp+1:]...)
	}
	return m
}

// FuzzParsePidLines: whatever saved_cmdlines holds, ParsePidLines reads it as the reference
// does, and a value appended to does not overwrite the next.
func FuzzParsePidLines(f *testing.F) {
	f.Add([]byte("1 systemd\n154 my prog\nbad\n\n7 \n"))
	f.Add([]byte("+3 a\n-4 b\n0 c\n99999999999999999999 d\n123456789 e\n1234567890 f\n 5 g\n6  h\n7 x\n7 y"))
	f.Fuzz(func(t *testing.T, b []byte) {
		got, want := ParsePidLines(bytes.Clone(b)), parsePidLinesRef(b)
		if len(got) != len(want) {
			t.Fatalf("%d pids, want %d", len(got), len(want))
		}
		for pid, v := range want {
			if g, ok := got[pid]; !ok || !bytes.Equal(g, v) {
				t.Fatalf("pid %d: %q, want %q", pid, g, v)
			}
		}
		for pid, v := range got {
			v = append(v, 'x')
			if !bytes.Equal(v[:len(v)-1], want[pid]) {
				t.Fatalf("pid %d: appending changed it", pid)
			}
		}
		for pid := range want {
			if !bytes.Equal(got[pid], want[pid]) {
				t.Fatalf("pid %d: %q after appends to the others, want %q", pid, got[pid], want[pid])
			}
		}
	})
}

// BenchmarkParsePidLines: a saved_cmdlines as full as the VM's under a forking workload
// (6,552 entries, saved_cmdlines_size on Debian's kernels).
func BenchmarkParsePidLines(b *testing.B) {
	var text []byte
	for i := range 6552 {
		text = fmt.Appendf(text, "%d cat\n", 1000+i)
	}
	b.ReportAllocs()
	for b.Loop() {
		ParsePidLines(text)
	}
}

// Kallsyms reads the whole file, small or larger than the room first made for it, and stops
// when its context ends.
func TestKallsymsRead(t *testing.T) {
	dir := t.TempDir()
	for _, size := range []int{0, 100, kallsymsExpect - 1, kallsymsExpect, kallsymsExpect + procReadSize + 7} {
		var want bytes.Buffer
		for i := 0; want.Len() < size; i++ {
			fmt.Fprintf(&want, "ffffffff%08x T sym_%d\n", i, i)
		}
		name := filepath.Join(dir, "kallsyms")
		os.WriteFile(name, want.Bytes()[:size], 0o644)
		f := &FS{KallsymsFile: name}
		got, err := f.Kallsyms(context.Background())
		if err != nil || !bytes.Equal(got, want.Bytes()[:size]) {
			t.Errorf("%d bytes: read %d bytes, err %v", size, len(got), err)
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := (&FS{KallsymsFile: filepath.Join(dir, "kallsyms")}).Kallsyms(ctx); !errors.Is(err, context.Canceled) {
		t.Errorf("ended context: %v", err)
	}
	if _, err := (&FS{KallsymsFile: filepath.Join(dir, "none")}).Kallsyms(context.Background()); err == nil || !strings.Contains(err.Error(), "none") {
		t.Errorf("missing file: %v", err)
	}
}
