package stream

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ftctl/ftctl/internal/fixture"
	"github.com/ftctl/ftctl/tracefs"
)

// rawFS is fixture.RawTracefs as a tracefs.FS, its kallsyms injected.
func rawFS(t *testing.T, markers map[int][]string) *tracefs.FS {
	t.Helper()
	root, kallsyms := fixture.RawTracefs(t, markers)
	return &tracefs.FS{Mount: tracefs.Mount{Path: root}, KallsymsFile: kallsyms}
}

// collect runs a Source to its end and returns the texts of its events and the last error.
func collect(t *testing.T, src *Source) ([]string, error) {
	t.Helper()
	var got []string
	for {
		err := src.Next(func(ev *Event) error {
			got = append(got, string(ev.Comm)+":"+string(ev.Text))
			return nil
		})
		if err != nil {
			return got, err
		}
	}
}

func TestSourceBinary(t *testing.T) {
	fs := rawFS(t, map[int][]string{0: {"one", "three"}, 1: {"two"}})
	src, err := Open(context.Background(), fs.Top(), Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	if src.Reader() != "trace_pipe_raw" || src.ReaderWhy() != "" {
		t.Fatalf("reader %s (%s)", src.Reader(), src.ReaderWhy())
	}
	got, err := collect(t, src)
	if !errors.Is(err, io.EOF) {
		t.Fatalf("end: %v", err)
	}
	if want := "cat:one,e\x1bx y:three,cat:two"; strings.Join(got, ",") != want {
		t.Errorf("got %q, want %q", strings.Join(got, ","), want)
	}
}

// Events of ftctl's own threads are left out and counted; IncludeSelf keeps them. The binary
// reader leaves them out before it decodes them: under a hot function filter every read of
// the ring buffer records events of the reader (10-15 % of what it read in vm/bench-hot.sh),
// and formatting them only to drop them cost as much as formatting the others.
func TestSourceLeavesOutOwnThreads(t *testing.T) {
	fs := rawFS(t, map[int][]string{0: {"mine", "theirs", "mine again"}})
	for _, include := range []bool{false, true} {
		src, err := Open(context.Background(), fs.Top(), Options{IncludeSelf: include})
		if err != nil {
			t.Fatal(err)
		}
		looked := map[int]int{}
		src.self.ownThread = func(pid int) bool { looked[pid]++; return pid == 154 }
		decoded := map[int]int{}
		comm := src.bin.dec.Comm
		src.bin.dec.Comm = func(pid int) []byte { decoded[pid]++; return comm(pid) }
		got, _ := collect(t, src)
		if !include && decoded[154] != 0 {
			t.Errorf("the events of ftctl's own threads were decoded (%d), then left out", decoded[154])
		}
		src.Close()
		want, own := "e\x1bx y:theirs", int64(2)
		if include {
			want, own = "cat:mine,e\x1bx y:theirs,cat:mine again", 0
		}
		if strings.Join(got, ",") != want || src.Own() != own {
			t.Errorf("include %v: got %q (own %d), want %q (own %d)", include, got, src.Own(), want, own)
		}
		if !include && (looked[154] != 1 || looked[155] != 1) {
			t.Errorf("each pid is looked up once: %v", looked)
		}
	}
}

// The real lookup: this test's own threads are ftctl's (the test binary's); pid 1 and the idle
// task are not.
func TestOwnThreadLookup(t *testing.T) {
	var f selfFilter
	if !f.own(os.Getpid()) {
		t.Error("the process's main thread is not its own")
	}
	if f.own(0) || f.own(1) && os.Getpid() != 1 {
		t.Error("pid 0 or 1 taken for ours")
	}
	for _, tid := range tracefs.OwnThreads() {
		if !f.own(tid) {
			t.Errorf("thread %d not recognised", tid)
		}
	}
}

func TestSourceText(t *testing.T) {
	fs := rawFS(t, nil)
	os.WriteFile(fs.Path("trace_pipe"), []byte("             cat-154     [000] ..... 12.000001: tracing_mark_write: hello\n"), 0o644)
	for _, o := range []Options{{Reader: ReaderText}, {Lines: "--raw needs lines"}} {
		src, err := Open(context.Background(), fs.Top(), o)
		if err != nil {
			t.Fatal(err)
		}
		if src.Reader() != "trace_pipe" || (o.Lines != "" && src.ReaderWhy() != o.Lines) {
			t.Errorf("%+v: reader %s (%s)", o, src.Reader(), src.ReaderWhy())
		}
		got, err := collect(t, src)
		src.Close()
		if !errors.Is(err, io.EOF) || strings.Join(got, ",") != "cat:hello" {
			t.Errorf("%+v: %q, %v", o, got, err)
		}
	}
}

func TestSourceInvalidReader(t *testing.T) {
	fs := rawFS(t, nil)
	if _, err := Open(context.Background(), fs.Top(), Options{Reader: "bogus"}); !errors.Is(err, ErrReader) {
		t.Errorf("bogus: %v", err)
	}
	if _, err := Open(context.Background(), fs.Top(), Options{Reader: ReaderBinary, Lines: "--raw"}); !errors.Is(err, ErrReader) {
		t.Errorf("binary with lines: %v", err)
	}
}

// Close from another goroutine ends a Next waiting for data, at once, and every goroutine.
func TestSourceCloseUnblocksNext(t *testing.T) {
	fs := rawFS(t, nil)
	os.WriteFile(fs.Path("tracing_on"), []byte("1\n"), 0o644)
	os.MkdirAll(fs.Path("per_cpu/cpu0"), 0o755)
	// an empty regular file: reads return 0 (nothing) and tracing is on, so the reader waits
	os.WriteFile(fs.Path("per_cpu/cpu0/trace_pipe_raw"), nil, 0o644)
	src, err := Open(context.Background(), fs.Top(), Options{Reader: ReaderBinary})
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() {
		for {
			if err := src.Next(func(*Event) error { return nil }); err != nil {
				done <- err
				return
			}
		}
	}()
	time.Sleep(100 * time.Millisecond)
	start := time.Now()
	src.Close()
	select {
	case err := <-done:
		if !errors.Is(err, tracefs.ErrPipeClosed) {
			t.Errorf("Next after Close: %v", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Next still blocked 5 s after Close")
	}
	t.Logf("Next returned %v after Close", time.Since(start))
}

// Duration ends the stream with context.DeadlineExceeded; Copy calls that "duration".
func TestCopyDurationAndCount(t *testing.T) {
	fs := rawFS(t, map[int][]string{0: {"a", "b", "c"}})
	src, err := Open(context.Background(), fs.Top(), Options{})
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	sum, err := Copy(src, Output{W: &out, JSON: true, Count: 2})
	src.Close()
	if err != nil || sum.End != EndCount || strings.Count(out.String(), "\n") != 2 {
		t.Fatalf("count: %v %+v\n%s", err, sum, out.String())
	}

	os.WriteFile(fs.Path("tracing_on"), []byte("1\n"), 0o644)
	src, err = Open(context.Background(), fs.Top(), Options{Duration: 200 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	out.Reset()
	sum, err = Copy(src, Output{W: &out})
	src.Close()
	if err != nil || sum.End != EndDuration || sum.Events != 3 {
		t.Fatalf("duration: %v %+v", err, sum)
	}

	ctx, cancel := context.WithCancelCause(context.Background())
	src, err = Open(ctx, fs.Top(), Options{})
	if err != nil {
		t.Fatal(err)
	}
	cancel(EndCause("the command exited"))
	sum, err = Copy(src, Output{W: &out})
	src.Close()
	if err != nil || sum.End != "the command exited" {
		t.Fatalf("end cause: %v %+v", err, sum)
	}
	ctx, cancel2 := context.WithCancel(context.Background())
	src, _ = Open(ctx, fs.Top(), Options{})
	cancel2()
	sum, err = Copy(src, Output{W: &out})
	src.Close()
	if !errors.Is(err, context.Canceled) || sum == nil || sum.End != EndInterrupted {
		t.Fatalf("interrupted: %v %+v", err, sum)
	}
}

// chunkList is a chunkReader giving its chunks, one a Read, then io.EOF.
type chunkList struct {
	chunks [][]byte
	reads  atomic.Int32
}

func (c *chunkList) Read(b []byte) (int, error) {
	i := int(c.reads.Add(1)) - 1
	if i >= len(c.chunks) {
		return 0, io.EOF
	}
	return copy(b, c.chunks[i]), nil
}

func (c *chunkList) TryRead(b []byte) (int, error) { return c.Read(b) }

func (c *chunkList) Close() error { return nil }

// markerChunks makes n chunks as RawPipe.Read returns them, each one page of CPU 0 holding the
// marker "mI".
func markerChunks(n int) [][]byte {
	var out [][]byte
	for i := range n {
		page := fixture.MarkerPage(0, []string{"m" + strconv.Itoa(i+1)}, 154)
		c := binary.LittleEndian.AppendUint32(nil, 0)
		c = binary.LittleEndian.AppendUint32(c, uint32(len(page)))
		out = append(out, append(c, page...))
	}
	return out
}

// heldSymbols is a SymbolLoader whose load ends when the test says (release).
func heldSymbols(t *testing.T, fs *tracefs.FS) (l *SymbolLoader, release func()) {
	l = NewSymbolLoader(fs)
	l.once.Do(func() {}) // no load of its own
	return l, func() {
		syms, err := ParseKallsyms([]byte(fixture.Kallsyms))
		if err != nil {
			t.Fatal(err)
		}
		l.syms = syms
		close(l.done)
	}
}

// openChunks opens a binary Source whose reads give chunks, kallsyms held.
func openChunks(t *testing.T, ctx context.Context, chunks [][]byte) (src *Source, pipe *chunkList, release func()) {
	fs := rawFS(t, map[int][]string{0: {"unused"}})
	syms, release := heldSymbols(t, fs)
	src, err := Open(ctx, fs.Top(), Options{Reader: ReaderBinary, Symbols: syms})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { src.Close() })
	src.raw.Close()
	pipe = &chunkList{chunks: chunks}
	src.raw = pipe
	return src, pipe, release
}

// While kallsyms loads, each Next reads what the kernel has and decodes nothing; once it is
// loaded, each Next first reads what the kernel has now, then decodes one chunk (decoding all
// that waited in one Next held all its output before Copy wrote it).
func TestBinaryWaitsForSymbolsOneChunkANext(t *testing.T) {
	src, pipe, release := openChunks(t, context.Background(), markerChunks(6))
	var got []string
	next := func() (int, error) {
		n := 0
		err := src.Next(func(ev *Event) error { got = append(got, string(ev.Text)); n++; return nil })
		return n, err
	}
	for range 2 {
		if n, err := next(); n != 0 || err != nil || pipe.reads.Load() != 7 {
			t.Fatalf("while kallsyms loads: %d events, %v, %d reads (want none, and the 6 chunks and the end read)", n, err, pipe.reads.Load())
		}
	}
	release()
	n, err := next()
	if n != 1 || err != nil {
		t.Fatalf("the first Next after kallsyms: %d events, %v", n, err)
	}
	for calls := 0; err == nil && calls < 20; calls++ {
		if n, err = next(); n > 1 {
			t.Errorf("a Next decoded %d chunks (%q so far): one at a time", n, got)
		}
	}
	if !errors.Is(err, io.EOF) || strings.Join(got, ",") != "m1,m2,m3,m4,m5,m6" {
		t.Errorf("got %q, end %v; want m1 to m6, then io.EOF", got, err)
	}
}

// The backlog's buffers are reused once decoded: no allocation per chunk (new ones each time
// were garbage that kept the collector busy).
func TestBinaryBacklogReusesBuffers(t *testing.T) {
	fs := rawFS(t, map[int][]string{0: {"unused"}})
	s, err := newBinarySetup(fs.Top(), nil, Options{Notice: func(string, ...any) {}})
	if err != nil {
		t.Fatal(err)
	}
	defer s.close()
	<-s.loading()
	s.loaded()
	chunk := markerChunks(1)[0]
	n := 0
	emit := func(*Event) error { n++; return nil }
	allocs := testing.AllocsPerRun(50, func() {
		for range 2 {
			b := s.buffer()
			s.push(b[:copy(b, chunk)])
		}
		s.push(s.buffer()[:0]) // a read that brought nothing
		s.decodeNext(emit)
		s.decodeNext(emit)
	})
	if allocs != 0 || s.pending() != 0 || s.backlogBytes != 0 || n != 2*51 {
		t.Errorf("%.1f allocations a round, %d chunks pending (%d bytes), %d events", allocs, s.pending(), s.backlogBytes, n)
	}
}

// While kallsyms loads, Next returns after loadPoll, or at once when the context ends or on
// Close; what was read is then not decoded.
func TestBinaryWaitsForSymbols(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	src, _, _ := openChunks(t, ctx, markerChunks(1))
	var got []string
	emit := func(ev *Event) error { got = append(got, string(ev.Text)); return nil }
	start := time.Now()
	if err := src.Next(emit); err != nil || len(got) != 0 || time.Since(start) < loadPoll {
		t.Errorf("while kallsyms loads: %v, %q after %v", err, got, time.Since(start))
	}
	time.AfterFunc(50*time.Millisecond, cancel)
	for err := error(nil); !errors.Is(err, context.Canceled); {
		if err = src.Next(emit); err != nil && !errors.Is(err, context.Canceled) || time.Since(start) > 5*time.Second {
			t.Fatalf("the context ended while kallsyms loads: %v", err)
		}
	}
	src, _, _ = openChunks(t, context.Background(), markerChunks(1))
	time.AfterFunc(50*time.Millisecond, func() { src.Close() })
	for err := error(nil); !errors.Is(err, tracefs.ErrPipeClosed); {
		if err = src.Next(emit); err != nil && !errors.Is(err, tracefs.ErrPipeClosed) || time.Since(start) > 5*time.Second {
			t.Fatalf("Close while kallsyms loads: %v", err)
		}
	}
	if len(got) != 0 {
		t.Errorf("decoded %q", got)
	}
}

// saved_cmdlines is read again for a pid never seen after pidRefresh, for one known missing
// after pidRetry, and never for a pid found.
func TestPidTable(t *testing.T) {
	root := t.TempDir()
	file := filepath.Join(root, "saved_cmdlines")
	os.WriteFile(file, []byte("10 ten\n"), 0o644)
	c := &pidTable{read: (&tracefs.FS{Mount: tracefs.Mount{Path: root}}).SavedCmdlines}
	t0 := time.Unix(1000, 0)
	c.t = t0
	if string(c.lookup(10)) != "ten" || c.lookup(11) != nil {
		t.Fatal("first read")
	}
	os.WriteFile(file, []byte("10 TEN\n11 eleven\n12 twelve\n"), 0o644)
	check := func(at time.Duration, pid int, want string) {
		t.Helper()
		c.t = t0.Add(at)
		if got := string(c.lookup(pid)); got != want {
			t.Errorf("at %v, pid %d: %q, want %q", at, pid, got, want)
		}
	}
	early, later := pidRefresh/2, pidRefresh+pidRefresh/2
	check(early, 11, "")       // known missing, not retried yet
	check(early, 12, "")       // never seen, but read less than pidRefresh ago
	check(later, 11, "")       // known missing: waits pidRetry
	check(later, 13, "")       // never seen, past pidRefresh: read again (12 and 11 now there)
	check(later, 12, "twelve") // found by that read
	check(later, 10, "TEN")    // the new table
	os.WriteFile(file, []byte("13 thirteen\n"), 0o644)
	last := later + pidRetry + pidRefresh/2
	check(last, 10, "TEN")      // found: no read
	check(last, 13, "thirteen") // known missing, past pidRetry after the last read: read again
	check(last, 10, "")         // gone from the kernel's table too
}

// endlessChunks gives its chunks, one a read, then nothing (0 bytes, no error): tracing goes
// on, the kernel has nothing new.
type endlessChunks struct{ chunkList }

func (c *endlessChunks) Read(b []byte) (int, error) {
	if n, err := c.chunkList.Read(b); err == nil {
		return n, nil
	}
	return 0, nil
}

func (c *endlessChunks) TryRead(b []byte) (int, error) { return c.Read(b) }

// What the binary reader has read from the kernel when the stream is interrupted (or out of
// time) is decoded before Next returns the end: the kernel will not give it again. Before,
// the backlog was dropped unseen and uncounted (vm/bench-hot.sh: up to 43,000 events of a
// 5 s run read but never printed).
func TestBinaryInterruptDecodesBacklog(t *testing.T) {
	for _, budget := range []time.Duration{time.Minute, 0} {
		ctx, cancel := context.WithCancel(context.Background())
		src, _, release := openChunks(t, ctx, nil)
		src.raw = &endlessChunks{chunkList{chunks: markerChunks(6)}}
		release()
		old := drainBudget
		drainBudget = budget
		var got []string
		emit := func(ev *Event) error { got = append(got, string(ev.Text)); return nil }
		if err := src.Next(emit); err != nil || len(got) != 1 {
			t.Fatalf("the first Next: %v, %q (want m1)", err, got)
		}
		cancel()
		var err error
		for calls := 0; err == nil && calls < 20; calls++ {
			err = src.Next(emit)
		}
		drainBudget = old
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("budget %v: the stream ended with %v", budget, err)
		}
		sum := src.Summary()
		src.Finish(sum, EndInterrupted)
		switch budget {
		case time.Minute:
			if strings.Join(got, ",") != "m1,m2,m3,m4,m5,m6" || sum.Undecoded != 0 {
				t.Errorf("interrupted with 5 chunks read: decoded %q, %d counted undecoded; want m1 to m6, none", got, sum.Undecoded)
			}
		case 0:
			// no time to decode: what is left is counted, and said
			if len(got) != 1 || sum.Undecoded != 5 || !sum.Lost() || !strings.Contains(sum.String(), "5 read from the kernel but not decoded") {
				t.Errorf("no time left: decoded %q, %d undecoded, summary %q", got, sum.Undecoded, sum.String())
			}
		}
	}
}

// The text reader decodes the chunk it had read (and those waiting) when interrupted.
func TestTextInterruptDecodesReadAhead(t *testing.T) {
	fs := rawFS(t, nil)
	ctx, cancel := context.WithCancel(context.Background())
	src, err := Open(ctx, fs.Top(), Options{Reader: ReaderText})
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	src.ra.stop()
	lines := func(from, to int) []byte {
		var b []byte
		for i := from; i <= to; i++ {
			b = fmt.Appendf(b, "  cat-1  [000] ..... 10.%06d: tracing_mark_write: m%d\n", i, i)
		}
		return b
	}
	pipe := &endlessChunks{chunkList{chunks: [][]byte{lines(1, 3), lines(4, 6)}}}
	src.ra = startReadAhead(pipe)
	for pipe.reads.Load() < 3 { // both chunks read ahead, and the read of nothing after
		time.Sleep(time.Millisecond)
	}
	cancel()
	var got []string
	for {
		err = src.Next(func(ev *Event) error {
			f := strings.Fields(string(ev.Text))
			got = append(got, f[len(f)-1])
			return nil
		})
		if err != nil {
			break
		}
	}
	if !errors.Is(err, context.Canceled) || strings.Join(got, ",") != "m1,m2,m3,m4,m5,m6" {
		t.Errorf("interrupted: %q, %v; want m1 to m6 and the end", got, err)
	}
}

// A stream ended by its session (an EndCause: the traced command exited) decodes everything it
// read, waiting for kallsyms if it still loads: a short command's events came before the end,
// and they are what the user asked for (ftctl graph -- dd count=1 printed no tree in 1 of 3
// runs when the end came while kallsyms loaded).
func TestSessionEndDecodesBacklogAfterSymbols(t *testing.T) {
	ctx, cancel := context.WithCancelCause(context.Background())
	src, _, release := openChunks(t, ctx, nil)
	src.raw = &endlessChunks{chunkList{chunks: markerChunks(4)}}
	var got []string
	emit := func(ev *Event) error { got = append(got, string(ev.Text)); return nil }
	if err := src.Next(emit); err != nil || len(got) != 0 {
		t.Fatalf("while kallsyms loads: %v, %q", err, got)
	}
	cancel(EndCause("the command exited"))
	time.AfterFunc(100*time.Millisecond, release)
	var err error
	for calls := 0; err == nil && calls < 20; calls++ {
		err = src.Next(emit)
	}
	sum := src.Summary()
	src.Finish(sum, "the command exited")
	if !errors.Is(err, context.Canceled) || strings.Join(got, ",") != "m1,m2,m3,m4" || sum.Undecoded != 0 {
		t.Errorf("ended by the session while kallsyms loaded: %q, %v, %d undecoded; want m1 to m4, none undecoded", got, err, sum.Undecoded)
	}
}

// A stream ended by its Duration decodes everything it read, waiting for kallsyms if it still
// loads, as one ended by its session: the user asked for that window's events, and nobody
// waits at a keyboard (vmtest, 2026-11-27: `ftctl trace -f vfs_read --duration 1s` on a loaded
// host counted 1470 events read but not decoded, and printed none).
func TestDurationEndDecodesBacklogAfterSymbols(t *testing.T) {
	fs := rawFS(t, map[int][]string{0: {"unused"}})
	syms, release := heldSymbols(t, fs)
	src, err := Open(context.Background(), fs.Top(), Options{Reader: ReaderBinary, Symbols: syms, Duration: 500 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { src.Close() })
	src.raw.Close()
	src.raw = &endlessChunks{chunkList{chunks: markerChunks(4)}}
	var got []string
	emit := func(ev *Event) error { got = append(got, string(ev.Text)); return nil }
	if err := src.Next(emit); err != nil || len(got) != 0 {
		t.Fatalf("while kallsyms loads: %v, %q", err, got)
	}
	time.Sleep(600 * time.Millisecond) // out of time
	time.AfterFunc(drainBudget+100*time.Millisecond, release)
	for calls := 0; err == nil && calls < 20; calls++ {
		err = src.Next(emit)
	}
	sum := src.Summary()
	if !errors.Is(err, context.DeadlineExceeded) || strings.Join(got, ",") != "m1,m2,m3,m4" || sum.Undecoded != 0 {
		t.Errorf("out of time while kallsyms loaded: %q, %v, %d undecoded; want m1 to m4, none undecoded", got, err, sum.Undecoded)
	}
}
