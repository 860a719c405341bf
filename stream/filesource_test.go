package stream

import (
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ftctl/ftctl/tracedat"
)

// A recording read a chunk at a time (FileSource.Next, as the console and report read it)
// gives ReadFile's events, in its order, at most fileChunk a call; then io.EOF again and again.
func TestFileSourceChunks(t *testing.T) {
	b := fixtureTraceDat(t, "6.12", false)
	want := fileEvents(t, b)
	f, err := tracedat.Read(bytes.NewReader(b), int64(len(b)))
	if err != nil {
		t.Fatal(err)
	}
	src, err := OpenFile(context.Background(), f, FileOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	calls := 0
	for {
		n := 0
		err := src.Next(func(ev *Event) error {
			got = append(got, string(AppendJSON(nil, ev, false)))
			n++
			return nil
		})
		calls++
		if n > fileChunk {
			t.Fatalf("%d events in one Next", n)
		}
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	if strings.Join(got, "") != strings.Join(want, "") {
		t.Fatalf("%d events chunked, %d from ReadFile, or in another order", len(got), len(want))
	}
	if err := src.Next(func(*Event) error { t.Fatal("an event after the end"); return nil }); !errors.Is(err, io.EOF) {
		t.Errorf("after the end: %v", err)
	}
	if src.Info().Pages == 0 || calls < 1 {
		t.Errorf("info %+v, %d calls", src.Info(), calls)
	}
}

// Close ends a FileSource at the next event (ErrFileClosed), and its context's end at the next
// chunk.
func TestFileSourceCloseAndCancel(t *testing.T) {
	b := fixtureTraceDat(t, "6.1", false)
	f, err := tracedat.Read(bytes.NewReader(b), int64(len(b)))
	if err != nil {
		t.Fatal(err)
	}
	src, err := OpenFile(context.Background(), f, FileOptions{})
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	err = src.Next(func(*Event) error {
		if n++; n == 3 {
			src.Close()
		}
		return nil
	})
	if !errors.Is(err, ErrFileClosed) || n != 3 {
		t.Errorf("closed at the 3rd event: %v after %d events", err, n)
	}
	ctx, cancel := context.WithCancel(context.Background())
	src, err = OpenFile(ctx, f, FileOptions{})
	if err != nil {
		t.Fatal(err)
	}
	cancel()
	if err := src.Next(func(*Event) error { t.Fatal("an event after the cancel"); return nil }); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled: %v", err)
	}
}

// CopyFile writes what Copy's renderers make of every event the filter passes, counts the
// shown and the lost, and stops at Output.Count.
func TestCopyFile(t *testing.T) {
	b := fixtureTraceDat(t, "6.12", false)
	want := fileEvents(t, b)
	f, err := tracedat.Read(bytes.NewReader(b), int64(len(b)))
	if err != nil {
		t.Fatal(err)
	}
	events, losses, lostSum := 0, 0, int64(0)
	ReadFile(f, FileOptions{}, func(ev *Event) error {
		if ev.Kind == KindLost {
			losses++
			lostSum += max(ev.Lost, 0)
		} else {
			events++
		}
		return nil
	})
	if losses == 0 || events+losses != len(want) {
		t.Fatalf("%d events and %d losses of %d", events, losses, len(want))
	}
	var out bytes.Buffer
	src, err := OpenFile(context.Background(), f, FileOptions{})
	if err != nil {
		t.Fatal(err)
	}
	shown, lost, err := CopyFile(src, Output{W: &out, JSON: true})
	if err != nil || out.String() != strings.Join(want, "") || shown != events || lost != lostSum {
		t.Fatalf("CopyFile: %v, %d shown (want %d), %d lost (want %d); same output: %v", err, shown, events, lost, lostSum, out.String() == strings.Join(want, ""))
	}
	out.Reset()
	src, _ = OpenFile(context.Background(), f, FileOptions{})
	shown, _, err = CopyFile(src, Output{W: &out, JSON: true, Count: 5})
	if err != nil || shown != 5 || !strings.HasPrefix(strings.Join(want, ""), out.String()) || strings.Count(out.String(), "\n") < 5 {
		t.Errorf("--count 5: %v, %d shown:\n%s", err, shown, out.String())
	}
}

// OpenRecordDir reads what a recorder leaves when killed: header.dat and cpuN.raw, the CPUs'
// pages in files of their own; a directory without cpuN.raw, or a trace.dat named as one, is
// refused naming the file.
func TestOpenRecordDir(t *testing.T) {
	b := fixtureTraceDat(t, "6.12", false)
	whole, err := tracedat.Read(bytes.NewReader(b), int64(len(b)))
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	var header bytes.Buffer
	h := &tracedat.Header{PageSize: whole.PageSize, LongSize: whole.LongSize, HeaderPage: whole.HeaderPage,
		HeaderEvent: whole.HeaderEvent, Ftrace: whole.Ftrace, Systems: whole.Systems, Kallsyms: whole.Kallsyms,
		Cmdlines: whole.Cmdlines}
	if err := tracedat.Write(&header, h, nil); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(dir, HeaderFile), header.Bytes(), 0o600)
	if _, err := OpenRecordDir(dir); !errors.Is(err, ErrNotRecordDir) {
		t.Errorf("no cpuN.raw: %v", err)
	}
	for cpu := range whole.CPUs {
		data, err := io.ReadAll(whole.Pages(cpu))
		if err != nil {
			t.Fatal(err)
		}
		os.WriteFile(filepath.Join(dir, CPUFile(cpu)), data, 0o600)
	}
	r, err := OpenRecordDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	var got []string
	if _, err := ReadFile(r.File, FileOptions{}, func(ev *Event) error {
		got = append(got, string(AppendJSON(nil, ev, false)))
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if want := fileEvents(t, b); strings.Join(got, "") != strings.Join(want, "") {
		t.Errorf("%d events from the directory, %d from the file", len(got), len(want))
	}
	var oe *OpenError
	if _, err := OpenRecording(dir); !errors.As(err, &oe) || !errors.Is(err, ErrIsDir) || oe.Path != dir {
		t.Errorf("a directory as a trace.dat: %v", err)
	}
	if _, err := OpenRecordDir(filepath.Join(dir, "none")); !errors.As(err, &oe) || oe.Path != filepath.Join(dir, "none", HeaderFile) {
		t.Errorf("no header.dat: %v", err)
	}
}
