package tui

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sync"

	"github.com/ftctl/ftctl/count"
	"github.com/ftctl/ftctl/filters"
	"github.com/ftctl/ftctl/probes"
	"github.com/ftctl/ftctl/stream"
	"github.com/ftctl/ftctl/tracedat"
	"github.com/ftctl/ftctl/tracefs"
)

// A recording in the console (ftctl tui --file): the Stream and Top views over a trace.dat's
// events, decoded by the stream engine as `ftctl report` decodes them (stream.OpenFile), with
// the Stream view's search and filters. No kernel is read or changed: the other views say so.

// ErrRecording is what the views that change a kernel get when the console shows a recording.
var ErrRecording = errors.New("the console shows a recording (--file): there is no kernel to read or change")

// recordingNote is what a view that needs a kernel shows over a recording, in its own body and
// calmly: a file having no kernel is no failure (the views that read one do not ask it).
func recordingNote(lacks string) string {
	return "this is a recording (--file): there is no kernel, so " + lacks +
		" · the Stream, Top and Graph views show the recording; ftctl tui without --file drives a kernel"
}

// ErrEndOfRecording ends a recording's stream once every event was read.
var ErrEndOfRecording = errors.New("end of the recording")

// FileBackend is the Backend of a recording: it changes nothing and reads no kernel.
type FileBackend struct {
	Name  string // the file, as given
	File  *tracedat.File
	graph graphHolder // the Graph view's reading (StartGraph)
}

// Status implements Backend: the file, and what the recording says of itself.
func (b *FileBackend) Status() (Status, error) {
	return Status{Tracefs: "file " + b.Name, Tracer: "recording, clock " + b.File.Clock()}, nil
}

// Index implements Backend.
func (b *FileBackend) Index() (*filters.Index, error) { return nil, ErrRecording }

// Lists implements Backend.
func (b *FileBackend) Lists() (Lists, error) { return Lists{}, ErrRecording }

// Apply implements Backend.
func (b *FileBackend) Apply(context.Context, []filters.Change) ([]filters.Result, error) {
	return nil, ErrRecording
}

// SetTracer implements Backend.
func (b *FileBackend) SetTracer(string) error { return ErrRecording }

// SetTracing implements Backend.
func (b *FileBackend) SetTracing(bool) error { return ErrRecording }

// Parser implements Backend: the whole grammar (a definition typed here is never sent).
func (b *FileBackend) Parser() probes.Parser { return probes.Parser{Features: probes.AllFeatures} }

// Probes implements Backend.
func (b *FileBackend) Probes() ([]probes.Probe, error) { return nil, ErrRecording }

// AddProbe implements Backend.
func (b *FileBackend) AddProbe(context.Context, *probes.Definition) (*probes.Added, error) {
	return nil, ErrRecording
}

// EnableProbe implements Backend.
func (b *FileBackend) EnableProbe(string, string, bool) error { return ErrRecording }

// RemoveProbe implements Backend.
func (b *FileBackend) RemoveProbe(context.Context, string, string) error { return ErrRecording }

// ProbeCompletions implements Backend: none.
func (b *FileBackend) ProbeCompletions(string) []string { return nil }

// StartCount implements Backend.
func (b *FileBackend) StartCount(context.Context, CountRequest) (CountInfo, error) {
	return CountInfo{}, ErrRecording
}

// ReadCount implements Backend.
func (b *FileBackend) ReadCount() (count.Counts, error) { return count.Counts{}, ErrRecording }

// StopCount implements Backend: nothing runs.
func (b *FileBackend) StopCount() error { return nil }

// recordingEvents is what the console reads a recording through: a stream.FileSource.
type recordingEvents interface {
	stream.Events
	Info() *stream.FileInfo
}

// openFile is stream.OpenFile; a test makes the reading panic.
var openFile = func(ctx context.Context, f *tracedat.File, o stream.FileOptions) (recordingEvents, error) {
	return stream.OpenFile(ctx, f, o)
}

// ErrReadPanic ends a recording's reading that panicked: a bug of ftctl's (every size, offset
// and count of a file is checked), caught in the reading goroutine, which bubbletea does not
// watch: uncaught, it ended the program with the terminal left raw. The console shows it.
var ErrReadPanic = errors.New("reading the recording failed on a bug of ftctl's (please report it, with the file if it can be shared)")

// recoverRead turns a panic of the goroutine reading a recording into an error for end.
func recoverRead(end func(error)) {
	if p := recover(); p != nil {
		end(fmt.Errorf("%w: %v", ErrReadPanic, p))
	}
}

// FileSource delivers a recording's events: a goroutine decodes the file (stream.OpenFile: the
// CPUs merged in time order) and hands the rows to the collector through the loop the kernel's
// stream takes (pump), then ends the stream with ErrEndOfRecording and the count. As for the
// kernel's, the console keeps the last max events: a larger recording's first events are
// counted as dropped.
type FileSource struct {
	c    *collector
	stop context.CancelFunc
	wg   sync.WaitGroup
}

// NewFileSource starts reading the recording.
func NewFileSource(ctx context.Context, f *tracedat.File, max int) *FileSource {
	ctx, cancel := context.WithCancel(ctx)
	s := &FileSource{c: newCollector(max), stop: cancel}
	s.c.setReader("a recording, clock " + f.Clock())
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		defer recoverRead(s.c.fail)
		src, err := openFile(ctx, f, stream.FileOptions{Skip: stream.SkipRecorder(f), Enum: stream.EnumResolver(&tracefs.FS{})})
		if err != nil {
			s.c.fail(err)
			return
		}
		defer src.Close()
		n, stopped, err := pump(src, newIngester(), s.c)
		if stopped || ctx.Err() != nil {
			return
		}
		if errors.Is(err, io.EOF) {
			info := src.Info()
			err = fmt.Errorf("%w: %d events from %d pages", ErrEndOfRecording, n, info.Pages)
			if info.Partial > 0 {
				err = fmt.Errorf("%w; the data of %d CPUs ends inside a page (a file cut short)", err, info.Partial)
			}
		}
		s.c.fail(err)
	}()
	return s
}

// Batches implements Source.
func (s *FileSource) Batches() <-chan Batch { return s.c.out }

// Close stops reading and waits for the goroutine.
func (s *FileSource) Close() error {
	s.stop()
	s.c.close()
	s.wg.Wait()
	return nil
}
