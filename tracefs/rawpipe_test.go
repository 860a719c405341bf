package tracefs

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// rawInstance makes a directory whose CPUs' trace_pipe_raw are regular files of pages (page i
// of CPU c filled with the byte 'a'+c, its first bytes naming it), and tracing_on 0: read to
// their end they are an emptied buffer with tracing off.
func rawInstance(t *testing.T, pages map[int]int) *Instance {
	t.Helper()
	dir := t.TempDir()
	for cpu, n := range pages {
		var b []byte
		for i := range n {
			pg := bytes.Repeat([]byte{byte('a' + cpu)}, os.Getpagesize())
			copy(pg, fmt.Sprintf("cpu%d page%d", cpu, i))
			b = append(b, pg...)
		}
		p := filepath.Join(dir, "per_cpu", fmt.Sprintf("cpu%d", cpu), "trace_pipe_raw")
		os.MkdirAll(filepath.Dir(p), 0o755)
		if err := os.WriteFile(p, b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	os.WriteFile(filepath.Join(dir, "tracing_on"), []byte("0\n"), 0o644)
	fs := &FS{Mount: Mount{Path: dir}}
	return fs.Top()
}

// Each Read gives every CPU a fair share of the buffer first, then fills the rest; once all is
// read and tracing is off, io.EOF.
func TestRawPipeFairShares(t *testing.T) {
	in := rawInstance(t, map[int]int{0: 5, 1: 2, 2: 0})
	p, err := in.OpenRawPipe(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	unit := RawFrame + p.PageSize()
	b := make([]byte, 4*unit+10)
	var reads []string
	for {
		n, err := p.Read(b)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		RawPages(b[:n], func(cpu int, page []byte) {
			if len(page) != p.PageSize() || page[len(page)-1] != byte('a'+cpu) {
				t.Errorf("cpu %d: a page of %d bytes ending %q", cpu, len(page), page[len(page)-1])
			}
			got = append(got, string(page[:len("cpu0 page0")]))
		})
		reads = append(reads, strings.Join(got, ","))
	}
	// 4 pages of room, 3 CPUs: a share of one page each, then the rest in CPU order
	want := "cpu0 page0,cpu1 page0,cpu0 page1,cpu0 page2|cpu0 page3,cpu1 page1,cpu0 page4"
	if s := strings.Join(reads, "|"); s != want {
		t.Errorf("reads\n%s\nwant\n%s", s, want)
	}
	if _, err := p.Read(make([]byte, 10)); !errors.Is(err, io.EOF) {
		t.Errorf("after EOF: %v", err)
	}
}

// A Read waiting on CPUs with nothing to read returns at once on Close or when the context
// ends; no descriptor outlives Close.
func TestRawPipeCloseAndCancel(t *testing.T) {
	in := rawInstance(t, map[int]int{0: 0, 1: 0})
	os.WriteFile(in.Path("tracing_on"), []byte("1\n"), 0o644) // tracing on: nothing ends it
	before := openFDs(t)
	ctx, cancel := context.WithCancel(context.Background())
	p, err := in.OpenRawPipe(ctx)
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { _, err := p.Read(make([]byte, 1<<16)); done <- err }()
	time.Sleep(120 * time.Millisecond) // past a few rawWait rounds
	start := time.Now()
	cancel()
	select {
	case err := <-done:
		if !errors.Is(err, context.Canceled) {
			t.Errorf("cancelled Read: %v", err)
		}
	case <-time.After(2 * time.Second):
		t.Fatal("Read did not return after the context ended")
	}
	if d := time.Since(start); d > 200*time.Millisecond {
		t.Errorf("Read took %v to see the cancellation", d)
	}
	p.Close()
	p.Close()
	if _, err := p.Read(make([]byte, 1<<16)); !errors.Is(err, ErrPipeClosed) {
		t.Errorf("Read after Close: %v", err)
	}
	if after := openFDs(t); after != before {
		t.Errorf("%d descriptors open before, %d after Close", before, after)
	}
	if _, err := rawInstance(t, map[int]int{}).OpenRawPipe(context.Background()); err == nil {
		t.Error("no CPUs: no error")
	}
}
