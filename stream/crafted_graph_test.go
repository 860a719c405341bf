package stream

import (
	"bytes"
	"strings"
	"testing"

	"github.com/ftctl/ftctl/tracedat"
)

// A function_graph depth read from the file indented the line by twice its value: depth 2^26
// made a line of 134 MB. The indentation stops at graphIndentMax levels and the depth shows
// as a number past it; a call tree nests no deeper either (a file of 5,000 calls each deeper
// than the last made 100 MB of text).
func TestCraftedGraphDepth(t *testing.T) {
	var entryF, exitF string
	for name, body := range gzTar(t, "testdata/6.12/formats.tar.gz") {
		switch name {
		case "events/ftrace/funcgraph_entry/format":
			entryF = body
		case "events/ftrace/funcgraph_exit/format":
			exitF = body
		}
	}
	gentry := func(depth int32) []byte {
		return rbEvent(1, entry(11, 0, 0, 154, u64(0xffffffff81200010), u32(uint32(depth)), u32(0)))
	}
	gexit := func(depth int32, call, ret uint64) []byte {
		return rbEvent(1, entry(10, 0, 0, 154, u64(0xffffffff81200010), u32(uint32(depth)), u32(0), u64(call), u64(ret)))
	}
	t.Run("one deep line", func(t *testing.T) {
		b := craft{pageSize: 4096, ftrace: []string{entryF, exitF},
			cpus: [][]byte{sizedPage(4096, 1000, gentry(1<<26), gexit(1<<26, 1000, 2000), gentry(-5), gentry(1<<31-1))}}.bytes(t)
		var n int
		var err error
		alloc, took := measure(func() { n, err = readAll(t, b) })
		t.Logf("depth 2^26: %d bytes rendered, %d KiB allocated in %v", n, alloc>>10, took)
		if err != nil {
			t.Fatal(err)
		}
		if n > 64<<10 || alloc > 16<<20 {
			t.Errorf("%d bytes rendered, %d allocated, of a file of %d bytes", n, alloc, len(b))
		}
		f, _ := tracedat.Read(bytes.NewReader(b), int64(len(b)))
		var lines []string
		ReadFile(f, FileOptions{}, func(ev *Event) error {
			lines = append(lines, string(AppendText(nil, ev, TextOptions{})))
			return nil
		})
		if len(lines) == 0 || !strings.Contains(lines[0], "67108864") {
			t.Errorf("the depth is not shown: %q", lines)
		}
	})
	t.Run("nested calls", func(t *testing.T) {
		var pages [][]byte
		var evs [][]byte
		flush := func() {
			pages = append(pages, sizedPage(4096, 1000, evs...))
			evs = nil
		}
		size := 16
		for d := range int32(5000) {
			e := gentry(d)
			if size+len(e) > 4096 {
				flush()
				size = 16
			}
			evs = append(evs, e)
			size += len(e)
		}
		flush()
		b := craft{pageSize: 4096, ftrace: []string{entryF, exitF}, cpus: [][]byte{bytes.Join(pages, nil)}}.bytes(t)
		var n int
		var err error
		alloc, took := measure(func() { n, err = readAll(t, b) })
		t.Logf("5,000 nested calls (%d bytes): %d bytes rendered, %d KiB allocated in %v", len(b), n, alloc>>10, took)
		if err != nil {
			t.Fatal(err)
		}
		if n > 64*len(b) {
			t.Errorf("%d bytes rendered of a file of %d bytes", n, len(b))
		}
	})
}
