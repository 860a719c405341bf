package stream

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
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

// Events of ftctl's own threads are left out and counted; IncludeSelf keeps them.
func TestSourceLeavesOutOwnThreads(t *testing.T) {
	fs := rawFS(t, map[int][]string{0: {"mine", "theirs", "mine again"}})
	for _, include := range []bool{false, true} {
		src, err := Open(context.Background(), fs.Top(), Options{IncludeSelf: include})
		if err != nil {
			t.Fatal(err)
		}
		looked := map[int]int{}
		src.self.ownThread = func(pid int) bool { looked[pid]++; return pid == 154 }
		got, _ := collect(t, src)
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

// While kallsyms loads, chunks wait in the backlog (copied: the reader reuses its buffers),
// then come out in order; at the end of the stream finish waits for kallsyms, or for the
// context.
func TestBinaryBacklog(t *testing.T) {
	fs := rawFS(t, map[int][]string{0: {"one", "two"}, 1: {"three"}})
	var chunks [][]byte
	for cpu := range 2 {
		page, err := os.ReadFile(fs.Path(filepath.Join("per_cpu", "cpu"+strconv.Itoa(cpu), "trace_pipe_raw")))
		if err != nil {
			t.Fatal(err)
		}
		c := binary.LittleEndian.AppendUint32(nil, uint32(cpu))
		c = binary.LittleEndian.AppendUint32(c, uint32(len(page)))
		chunks = append(chunks, append(c, page...))
	}
	s, err := newBinarySetup(fs.Top(), nil, Options{Notice: func(string, ...any) {}})
	if err != nil {
		t.Fatal(err)
	}
	defer s.close()
	real := s.waiting
	pending := make(chan struct{})
	s.waiting = pending // kallsyms "still loading"
	var got []string
	emit := func(ev *Event) error { got = append(got, string(ev.Text)); return nil }
	for _, c := range chunks {
		buf := bytes.Clone(c)
		if err := s.feed(buf, emit); err != nil {
			t.Fatal(err)
		}
		clear(buf) // the reader reuses its buffer
	}
	if len(got) != 0 || len(s.backlog) != 2 {
		t.Fatalf("decoded before kallsyms: %q, backlog %d", got, len(s.backlog))
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := s.finish(ctx, emit); !errors.Is(err, context.Canceled) {
		t.Fatalf("finish with the context ended: %v", err)
	}
	<-real
	close(pending)
	if err := s.finish(context.Background(), emit); err != nil {
		t.Fatal(err)
	}
	if strings.Join(got, ",") != "one,two,three" || s.loading() != nil || s.backlog != nil {
		t.Errorf("after kallsyms: %q", got)
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
	check(10*time.Millisecond, 11, "")       // known missing, not retried yet
	check(10*time.Millisecond, 12, "")       // never seen, but read 10 ms ago
	check(30*time.Millisecond, 11, "")       // known missing: waits pidRetry
	check(30*time.Millisecond, 13, "")       // never seen, 30 ms: read again (12 and 11 now there)
	check(30*time.Millisecond, 12, "twelve") // found by that read
	check(30*time.Millisecond, 10, "TEN")    // the new table
	os.WriteFile(file, []byte("13 thirteen\n"), 0o644)
	check(1100*time.Millisecond, 10, "TEN")      // found: no read
	check(1100*time.Millisecond, 13, "thirteen") // known missing, 1.07 s after the last read: read again
	check(1100*time.Millisecond, 10, "")         // gone from the kernel's table too
}
