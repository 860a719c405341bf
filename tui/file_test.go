package tui

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ftctl/ftctl/filters"
	"github.com/ftctl/ftctl/internal/tracedattest"
	"github.com/ftctl/ftctl/probes"
	"github.com/ftctl/ftctl/stream"
	"github.com/ftctl/ftctl/tracedat"
)

// openRecording opens a trace-cmd recording of 6.12 (version 7, zstd; stream/testdata).
func openRecording(t *testing.T) *tracedat.File {
	t.Helper()
	path := filepath.Join("..", "stream", "testdata", "6.12", "tp.v7zstd.dat")
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	st, err := f.Stat()
	if err != nil {
		t.Fatal(err)
	}
	file, err := tracedat.Read(f, st.Size())
	if err != nil {
		t.Fatal(err)
	}
	return file
}

// kernelAsked is a recording's backend that counts the calls that would read a kernel.
type kernelAsked struct {
	*FileBackend
	n atomic.Int64
}

func (k *kernelAsked) Index() (*filters.Index, error) { k.n.Add(1); return k.FileBackend.Index() }
func (k *kernelAsked) Lists() (Lists, error)          { k.n.Add(1); return k.FileBackend.Lists() }
func (k *kernelAsked) Probes() ([]probes.Probe, error) {
	k.n.Add(1)
	return k.FileBackend.Probes()
}

// The console over a recording: every event, in time order, then the end with the count; the
// Stream view's filters work on it; the views that need a kernel ask none and say calmly, in
// their own body, that there is none (issue 33: it opened with the error "reading
// available_filter_functions: … there is no kernel").
func TestFileConsole(t *testing.T) {
	file := openRecording(t)
	src := NewFileSource(context.Background(), file, 1000)
	fb := &kernelAsked{FileBackend: &FileBackend{Name: "tp.dat", File: file}}
	m := New(Options{Backend: fb, Source: src, Now: fixedNow,
		StatusEvery: time.Hour, RingSize: 1000})
	if s := screen(m); !strings.Contains(s, "reading the recording…") {
		t.Errorf("before the first events:\n%s", s)
	}
	defer src.Close()
	m.SetSize(160, 40)
	var rows, dropped int
	var end error
	for end == nil {
		select {
		case b, ok := <-src.Batches():
			if !ok {
				t.Fatal("the source closed without an end")
			}
			rows += len(b.Rows)
			dropped += int(b.Dropped)
			end = b.Err
			m.Update(batchMsg(b)) // not step: the command it returns would read the next batch
		case <-time.After(10 * time.Second):
			t.Fatalf("no end after 10 s: %d rows", rows)
		}
	}
	// 1,598 events and 2 lost-event rows (ftctl report of the same file); the ring keeps 1,000
	if !errors.Is(end, ErrEndOfRecording) || !strings.Contains(end.Error(), "1600 events") || rows+dropped != 1600 || dropped != 600 {
		t.Fatalf("end %v after %d rows, %d dropped", end, rows, dropped)
	}
	runCmd(m, m.readStatus(), 0) // what Init does besides reading the stream
	for _, v := range m.views {
		if v != m.stream && v != m.graph { // the graph reads the recording: TestGraphRecordingTrees
			runCmd(m, v.Init(), 0)
		}
	}
	s := screen(m)
	for _, want := range []string{"end of the recording: 1600 events", "file tp.dat", "recording, clock local"} {
		if !strings.Contains(s, want) {
			t.Errorf("no %q on the screen:\n%s", want, s)
		}
	}
	if m.msg != "" || m.msgErr {
		t.Errorf("a message at the start: %q", m.msg)
	}
	step(m, press("2"))
	if s := screen(m); !shows(s, "this is a recording (--file): there is no kernel, so no function list to preview, no filter to change") ||
		strings.Contains(s, "available_filter_functions") || strings.Contains(s, "pattern>") {
		t.Errorf("Functions view over a recording:\n%s", s)
	}
	for _, k := range []string{"/", "a", "r"} { // what would read or change one: said calmly
		step(m, press(k))
		if m.funcs.Typing() || m.msgErr || !strings.Contains(m.msg, "there is no kernel") {
			t.Errorf("%s in Functions over a recording: typing %v, message %q (error %v)", k, m.funcs.Typing(), m.msg, m.msgErr)
		}
	}
	step(m, press("3"))
	if s := screen(m); !shows(s, "there is no kernel, so no probes to list, define or enable") || strings.Contains(s, "kprobe_events") {
		t.Errorf("Probes view over a recording:\n%s", s)
	}
	step(m, press("r"))
	if n := fb.n.Load(); n != 0 {
		t.Errorf("%d calls for a kernel's function list, lists or probes", n)
	}
}

// A recording of trace-cmd record -B: the console shows every buffer's events, those of an
// instance's buffer with its name before what they say.
func TestFileConsoleBuffers(t *testing.T) {
	src, err := os.ReadFile(filepath.Join("..", "stream", "testdata", "6.12", "tp.v7zstd.dat"))
	if err != nil {
		t.Fatal(err)
	}
	b := tracedattest.TraceCmd(t, src, 7, "zstd", tracedattest.Buffer{Name: "", CPUs: []int{0, 1}},
		tracedattest.Buffer{Name: "ftbuf", CPUs: []int{1}})
	file, err := tracedat.Read(bytes.NewReader(b), int64(len(b)))
	if err != nil {
		t.Fatal(err)
	}
	fs := NewFileSource(context.Background(), file, 10000)
	defer fs.Close()
	inst, all := 0, 0
	for end := error(nil); end == nil; {
		select {
		case batch := <-fs.Batches():
			for _, r := range batch.Rows {
				all++
				if strings.HasPrefix(r.Detail(), "ftbuf: ") {
					inst++
				}
			}
			end = batch.Err
		case <-time.After(10 * time.Second):
			t.Fatalf("no end after 10 s: %d rows", all)
		}
	}
	// 1,600 rows of the top level (TestFileConsole), and CPU 1's once more in ftbuf
	if inst == 0 || all != 1600+inst {
		t.Errorf("%d rows, %d of them ftbuf's", all, inst)
	}
}

// A recording the reader refuses, or whose reading panics, ends the Stream view and the Graph
// view with the reason on the screen; the console goes on (the panic is caught in the reading
// goroutine, which bubbletea does not watch: it ended the program with the terminal raw).
func TestFileReadFailureShown(t *testing.T) {
	// header_page's timestamp at 5000 of a 4096-byte page: a panic in the page parser before
	hp := "\tfield: u64 timestamp;\toffset:5000;\tsize:8;\tsigned:0;\n\tfield: local_t commit;\toffset:8;\tsize:8;\tsigned:1;\n\tfield: char data;\toffset:16;\tsize:4080;\tsigned:0;\n"
	var b bytes.Buffer
	h := &tracedat.Header{PageSize: 4096, LongSize: 8, HeaderPage: []byte(hp), CPUs: 1}
	if err := tracedat.Write(&b, h, []tracedat.CPUSource{{R: bytes.NewReader(make([]byte, 4096)), Size: 4096}}); err != nil {
		t.Fatal(err)
	}
	corrupt, err := tracedat.Read(bytes.NewReader(b.Bytes()), int64(b.Len()))
	if err != nil {
		t.Fatal(err)
	}
	real := openFile
	panicking := func(ctx context.Context, f *tracedat.File, o stream.FileOptions) (recordingEvents, error) {
		src, err := real(ctx, f, o)
		return panicEvents{src}, err
	}
	for _, c := range []struct {
		name string
		file *tracedat.File
		open func(context.Context, *tracedat.File, stream.FileOptions) (recordingEvents, error)
		want string
	}{
		{"corrupt header_page", corrupt, real, "corrupt trace.dat (header_page): the timestamp at offset 5000"},
		{"a panic", openRecording(t), panicking, "a bug of ftctl's"},
	} {
		t.Run(c.name, func(t *testing.T) {
			openFile = c.open
			defer func() { openFile = real }()
			src := NewFileSource(context.Background(), c.file, 1000)
			defer src.Close()
			m := New(Options{Backend: &FileBackend{Name: "x.dat", File: c.file}, Source: src, Now: fixedNow,
				StatusEvery: time.Hour, RingSize: 1000})
			m.SetSize(160, 40)
			var end error
			for end == nil {
				select {
				case b, ok := <-src.Batches():
					if !ok {
						t.Fatal("the source closed without an end")
					}
					end = b.Err
					m.Update(batchMsg(b))
				case <-time.After(10 * time.Second):
					t.Fatal("no end after 10 s")
				}
			}
			if s := screen(m); !strings.Contains(s, "the stream ended") || !strings.Contains(strings.Join(strings.Fields(s), " "), c.want) {
				t.Errorf("end %v; no %q on the screen:\n%s", end, c.want, s)
			}
			_, feed, err := (&FileBackend{Name: "x.dat", File: c.file}).StartGraph(context.Background(), GraphRequest{})
			if err != nil {
				t.Fatal(err)
			}
			defer feed.Close()
			deadline := time.After(10 * time.Second)
			for {
				bt, ok := feed.Next()
				if !ok || bt.Err != nil {
					if bt.Err == nil || !strings.Contains(bt.Err.Error(), strings.SplitN(c.want, ":", 2)[0]) {
						t.Errorf("graph: %v, want %q", bt.Err, c.want)
					}
					break
				}
				select {
				case <-deadline:
					t.Fatal("graph: no end after 10 s")
				default:
				}
			}
		})
	}
}

// panicEvents is a recording whose reading panics (as a bug of ftctl's would) at its first
// chunk.
type panicEvents struct{ recordingEvents }

func (p panicEvents) Next(stream.Emit) error {
	var none []int
	return fmt.Errorf("%d", none[3])
}
