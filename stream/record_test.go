package stream

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/ftctl/ftctl/tracedat"
	"github.com/ftctl/ftctl/tracefs"
)

// The recorder end to end on the fake tracefs (its trace_pipe_raw are regular files, which
// splice(2) moves as it moves the kernel's): the CPUs' pages into per-CPU files, then a
// trace.dat under its final name only, which ReadFile reads back into the markers written, in
// time order (CPU 0's page starts at 1 s, CPU 1's at 2 s).
func TestRecorderWritesTraceDat(t *testing.T) {
	fs := rawFS(t, map[int][]string{0: {"one", "three"}, 1: {"two", "four"}})
	rec, dir, work := testRecorder(t, fs)
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
	if err := rec.Assemble(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(work); !os.IsNotExist(err) {
		t.Errorf("the working directory is left: %v", err)
	}
	if _, _, b := rec.Stats.Totals(); b != 2*4096 {
		t.Errorf("%d bytes moved, want two pages", b)
	}
	f := readDat(t, out)
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

// The pages come first: NewRecorder's header.dat holds the page header and the clock only; the
// formats and kallsyms are read beside the moving of pages (Run), or before it (ReadHeader),
// and header.dat is then whole. A recording names the recorder's threads when asked
// (NameSelf), trace-cmd's way (PROCMAPS, no mappings), and ReadFile leaves out what Skip
// says, counted.
func TestRecorderHeaderBesideAndSelf(t *testing.T) {
	for _, early := range []bool{false, true} {
		fs := rawFS(t, map[int][]string{0: {"one"}, 1: {"two"}})
		rec, dir, work := testRecorder(t, fs)
		header := func() *tracedat.File { return readDat(t, filepath.Join(work, HeaderFile)) }
		if h := header(); len(h.HeaderPage) == 0 || h.Clock() != "local" || len(h.Ftrace) != 0 || len(h.Kallsyms) != 0 {
			t.Errorf("first header.dat: %d bytes of header_page, clock %q, %d ftrace formats, %d bytes of kallsyms",
				len(h.HeaderPage), h.Clock(), len(h.Ftrace), len(h.Kallsyms))
		}
		if early {
			if err := rec.ReadHeader(); err != nil {
				t.Fatal(err)
			}
			if h := header(); len(h.Ftrace) != 1 || len(h.Kallsyms) == 0 {
				t.Errorf("header.dat after ReadHeader: %d ftrace formats, %d bytes of kallsyms", len(h.Ftrace), len(h.Kallsyms))
			}
		}
		rec.NameSelf = early
		f := recordBriefly(t, rec, dir)
		if len(f.Ftrace) != 1 || len(f.Kallsyms) == 0 {
			t.Errorf("early %v: %d ftrace formats, %d bytes of kallsyms", early, len(f.Ftrace), len(f.Kallsyms))
		}
		self := RecorderThreads(f)
		if early != self[os.Getpid()] || (!early && len(self) > 0) {
			t.Errorf("NameSelf %v: the file names %v (pid %d)", early, self, os.Getpid())
		}
		var pids []int
		info, err := ReadFile(f, FileOptions{Skip: func(pid int) bool { pids = append(pids, pid); return true }}, func(ev *Event) error {
			t.Errorf("an event Skip left out: %s", ev.Text)
			return nil
		})
		if err != nil || info.Skipped != 2 || len(pids) != 2 {
			t.Errorf("skipped %d (pids %v): %v", info.Skipped, pids, err)
		}
	}
	// what RecorderThreads takes: only ftctl's own entries
	for _, c := range []struct {
		data string
		want int
	}{
		{"2a 0 ftctl-record\n\x00", 42},
		{"2a 0 ftctl-record", 42},
		{"2a 1 ftctl-record\n7f00 7f10 /lib/x.so\n\x00", 0}, // a process's maps (trace-cmd --proc-map)
		{"2a 0 bash\n\x00", 0},
		{"zz 0 ftctl-record\n\x00", 0},
		{"-5 0 ftctl-record\n\x00", 0},
		{"", 0},
	} {
		f := &tracedat.File{}
		f.Options = []tracedat.Option{{ID: tracedat.OptionProcMaps, Data: []byte(c.data)}}
		got := RecorderThreads(f)
		if (c.want == 0 && len(got) != 0) || (c.want != 0 && (len(got) != 1 || !got[c.want])) {
			t.Errorf("%q: %v, want %d", c.data, got, c.want)
		}
	}
}

// A recording holds the formats of what it recorded, not of every event the kernel has: the
// ftrace system's (always, as trace-cmd writes them), the events enabled in the trace array, and
// any other event whose records are in the pages (enabled and disabled while recording, or
// written by a trigger), found by its id. An id no event has any more is counted, not guessed.
func TestRecorderFormatsOfWhatIsRecorded(t *testing.T) {
	t.Run("mapped", testRecorderFormats)
	t.Run("read", func(t *testing.T) { // where the files cannot be mapped
		mapFile = func(*os.File, int64, int) ([]byte, func(), error) { return nil, nil, errors.ErrUnsupported }
		defer func() { mapFile = tracefs.MapFile }()
		testRecorderFormats(t)
	})
}

func testRecorderFormats(t *testing.T) {
	fs := rawFS(t, map[int][]string{0: {"one"}})
	root := fs.Mount.Path
	format := func(name string, id int) string {
		return "name: " + name + "\nID: " + strconv.Itoa(id) + "\nformat:\n\tfield:unsigned short common_type;\toffset:0;\tsize:2;\tsigned:0;\n" +
			"\tfield:unsigned char common_flags;\toffset:2;\tsize:1;\tsigned:0;\n\tfield:unsigned char common_preempt_count;\toffset:3;\tsize:1;\tsigned:0;\n" +
			"\tfield:int common_pid;\toffset:4;\tsize:4;\tsigned:1;\n\n\tfield:int x;\toffset:8;\tsize:4;\tsigned:1;\n\nprint fmt: \"x=%d\", REC->x\n"
	}
	for _, e := range []struct {
		path string
		id   int
	}{{"ftrace/function", 1}, {"sched/sched_switch", 300}, {"sched/sched_wakeup", 301}, {"irq/irq_handler_entry", 302}} {
		name := filepath.Base(e.path)
		os.MkdirAll(filepath.Join(root, "events", e.path), 0o755)
		os.WriteFile(filepath.Join(root, "events", e.path, "format"), []byte(format(name, e.id)), 0o644)
		os.WriteFile(filepath.Join(root, "events", e.path, "id"), []byte(strconv.Itoa(e.id)+"\n"), 0o644)
	}
	os.WriteFile(filepath.Join(root, "events/ftrace/print/id"), []byte("5\n"), 0o644)
	os.WriteFile(filepath.Join(root, "set_event"), []byte("sched:sched_switch\n"), 0o644)
	// CPU 1: sched_switch (enabled), irq_handler_entry (not enabled: a straggler), and an id no
	// event has (999)
	var data []byte
	for _, id := range []uint16{300, 302, 300, 999} {
		e := binary.LittleEndian.AppendUint16(nil, id)
		e = append(e, 0, 0)
		e = binary.LittleEndian.AppendUint32(e, 154)
		e = binary.LittleEndian.AppendUint32(e, 7)
		data = binary.LittleEndian.AppendUint32(data, 3<<0|1000<<5) // type_len 3: 12 bytes
		data = append(data, e...)
	}
	page := binary.LittleEndian.AppendUint64(nil, 2_000_000_000)
	page = binary.LittleEndian.AppendUint64(page, uint64(len(data)))
	page = append(page, data...)
	page = append(page, make([]byte, 4096-len(page))...)
	os.MkdirAll(filepath.Join(root, "per_cpu/cpu1"), 0o755)
	os.WriteFile(filepath.Join(root, "per_cpu/cpu1/trace_pipe_raw"), page, 0o644)
	os.WriteFile(filepath.Join(root, "per_cpu/cpu1/stats"), []byte("overrun: 0\n"), 0o644)

	rec, dir, work := testRecorder(t, fs)
	if err := rec.ReadHeader(); err != nil {
		t.Fatal(err)
	}
	names := func(h *tracedat.Header) string {
		var out []string
		for _, f := range h.Ftrace {
			out = append(out, "ftrace/"+strings.TrimPrefix(strings.SplitN(string(f), "\n", 2)[0], "name: "))
		}
		for _, s := range h.Systems {
			for _, f := range s.Formats {
				out = append(out, s.Name+"/"+strings.TrimPrefix(strings.SplitN(string(f), "\n", 2)[0], "name: "))
			}
		}
		return strings.Join(out, " ")
	}
	h := readDat(t, filepath.Join(work, HeaderFile))
	if got, want := names(&h.Header), "ftrace/function ftrace/print sched/sched_switch"; got != want {
		t.Errorf("header.dat's formats before the recording: %q, want %q", got, want)
	}
	f := recordBriefly(t, rec, dir)
	if got, want := names(&f.Header), "ftrace/function ftrace/print irq/irq_handler_entry sched/sched_switch"; got != want {
		t.Errorf("the trace.dat's formats: %q, want %q", got, want)
	}
	if fmt.Sprint(rec.Stats.NoFormat) != "[999]" {
		t.Errorf("ids without a format: %v, want [999]", rec.Stats.NoFormat)
	}
}

// FormatID, the recorder's quick look at a format's type id, reads every format file of the VM
// kernels as their parser does.
func TestFormatIDOfKernelFormats(t *testing.T) {
	for _, k := range []string{"6.1", "6.12"} {
		n := 0
		for name, text := range gzTar(t, filepath.Join("testdata", k, "formats.tar.gz")) {
			if !strings.HasSuffix(name, "/format") {
				continue
			}
			f, err := tracefs.ParseFormat("s", text)
			if err != nil {
				continue
			}
			n++
			if id := tracefs.FormatID([]byte(text)); id != f.ID {
				t.Errorf("%s %s: FormatID %d, ParseFormat %d", k, name, id, f.ID)
			}
		}
		if n < 1000 {
			t.Errorf("%s: %d formats", k, n)
		}
	}
}

// testRecorder makes a recording's working directory (out.dat.tmp-1 in a temporary directory
// dir) and a Recorder of fs's top level writing into it.
func testRecorder(t *testing.T, fs *tracefs.FS) (rec *Recorder, dir, work string) {
	t.Helper()
	dir = t.TempDir()
	rd, err := MakeRecordDir(filepath.Join(dir, "out.dat"), 1)
	if err != nil {
		t.Fatal(err)
	}
	work = filepath.Join(dir, "out.dat.tmp-1")
	if rd.Path != work {
		t.Fatalf("working directory %s, want %s", rd.Path, work)
	}
	rec, err = NewRecorder(fs.Top(), rd)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(rec.Close)
	t.Cleanup(rd.Close)
	return rec, dir, work
}

// readDat reads the trace.dat (or header.dat) at path.
func readDat(t *testing.T, path string) *tracedat.File {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	f, err := tracedat.Read(strings.NewReader(string(b)), int64(len(b)))
	if err != nil {
		t.Fatal(err)
	}
	return f
}

// recordBriefly records for 100 ms, assembles dir/out.dat and reads it back.
func recordBriefly(t *testing.T, rec *Recorder, dir string) *tracedat.File {
	t.Helper()
	if err := rec.Run(context.Background(), RecordOptions{Duration: 100 * time.Millisecond}); err != nil {
		t.Fatal(err)
	}
	rec.Flush(true)
	out := filepath.Join(dir, "out.dat")
	if err := rec.Assemble(); err != nil {
		t.Fatal(err)
	}
	return readDat(t, out)
}

// idleRecorder is a recorder of one CPU with nothing to read; early: its trace_pipe_raw a FIFO
// and buffer_percent 50, so that a CPU past it would end a wait (Splicer.WakesEarly).
func idleRecorder(t *testing.T, early bool) *Recorder {
	t.Helper()
	fs := rawFS(t, map[int][]string{0: {"one"}})
	root := fs.Mount.Path
	if early {
		p := filepath.Join(root, "per_cpu/cpu0/trace_pipe_raw")
		os.Remove(p)
		if err := unix.Mkfifo(p, 0o600); err != nil {
			t.Fatal(err)
		}
		os.WriteFile(filepath.Join(root, "buffer_percent"), []byte("50\n"), 0o644)
	}
	rec, _, _ := testRecorder(t, fs)
	return rec
}

// An idle recording waits up to a second between moves where a CPU past buffer_percent ends
// the wait early (an epoll of the CPUs' files: FIFOs here), and up to 100 ms where nothing
// would (buffer_percent 0, or regular files).
func TestRecorderPaceIdle(t *testing.T) {
	for _, early := range []bool{true, false} {
		rec := idleRecorder(t, early)
		if got := rec.sp.WakesEarly(); got != early {
			t.Fatalf("early %v: WakesEarly %v", early, got)
		}
		if err := rec.Run(context.Background(), RecordOptions{Duration: 1500 * time.Millisecond}); err != nil {
			t.Fatal(err)
		}
		if w := rec.Stats.Waits; (early && w > 3) || (!early && w < 8) {
			t.Errorf("early %v: %d waits in 1.5 s", early, w)
		}
	}
}

// An idle recording ends when it is told to (its duration, an interruption, Done), not at the
// end of its wait: up to a second where buffer_percent wakes it early.
func TestRecorderEndsPromptly(t *testing.T) {
	const after, slack = 300 * time.Millisecond, 200 * time.Millisecond
	for _, early := range []bool{true, false} {
		for _, how := range []string{"duration", "interrupt", "done"} {
			rec := idleRecorder(t, early)
			ctx, cancel := context.WithCancel(context.Background())
			done := make(chan struct{})
			o := RecordOptions{Done: done}
			switch how {
			case "duration":
				o.Duration = after
			case "interrupt":
				time.AfterFunc(after, cancel)
			case "done":
				time.AfterFunc(after, func() { close(done) })
			}
			start := time.Now()
			rec.Run(ctx, o)
			cancel()
			if took := time.Since(start); took > after+slack {
				t.Errorf("early %v, %s after %v: Run returned after %v", early, how, after, took.Round(time.Millisecond))
			}
		}
	}
}

// The working directory is held by its descriptor: renamed away in the middle of a recording
// and replaced by one whose cpu0.raw is a link to a secret, the recording still writes its own
// pages, never the link's target.
func TestRecorderDirSwapped(t *testing.T) {
	fs := rawFS(t, map[int][]string{0: {"one"}, 1: {"two"}})
	rec, dir, work := testRecorder(t, fs)
	if err := rec.Run(context.Background(), RecordOptions{Duration: 100 * time.Millisecond}); err != nil {
		t.Fatal(err)
	}
	rec.Flush(true)
	secret := filepath.Join(dir, "secret")
	os.WriteFile(secret, []byte(strings.Repeat("SECRET-ROOT-ONLY", 1024)), 0o600) // longer than a CPU's pages
	if err := os.Rename(work, work+".moved"); err != nil {
		t.Fatal(err)
	}
	os.Mkdir(work, 0o700)
	for _, name := range []string{"cpu0.raw", "cpu1.raw", HeaderFile} {
		os.Symlink(secret, filepath.Join(work, name))
	}
	out := filepath.Join(dir, "out.dat")
	err := rec.Assemble()
	b, _ := os.ReadFile(out)
	if strings.Contains(string(b), "SECRET-ROOT-ONLY") {
		t.Fatalf("the recording holds the planted link's target (Assemble: %v)", err)
	}
	// the file is written from the recording's own descriptors; the directory planted under
	// the working directory's name is not the recording's, and stays
	if err == nil || !strings.Contains(err.Error(), "moved or replaced") {
		t.Fatalf("Assemble: %v", err)
	}
	if _, err := os.Lstat(filepath.Join(work, "cpu0.raw")); err != nil {
		t.Errorf("the planted directory was emptied: %v", err)
	}
	f := readDat(t, out)
	var got []string
	ReadFile(f, FileOptions{}, func(ev *Event) error { got = append(got, string(ev.Text)); return nil })
	if strings.Join(got, " ") != "one two" {
		t.Errorf("events %q", got)
	}
}

// A recording holds kallsyms and raw kernel pointers: every file it makes is 0600, the
// finished file too unless RecordDir.Mode widens it (set exactly: the umask does not narrow it).
func TestRecorderModes(t *testing.T) {
	old := unix.Umask(0o077)
	defer unix.Umask(old)
	for _, mode := range []os.FileMode{0o600, 0o644, 0o660} {
		fs := rawFS(t, map[int][]string{0: {"one"}})
		rec, dir, work := testRecorder(t, fs)
		rec.dir.Mode = mode
		for _, name := range []string{HeaderFile, "cpu0.raw", "."} {
			want := os.FileMode(0o600)
			if name == "." {
				want = 0o700
			}
			if fi, err := os.Stat(filepath.Join(work, name)); err != nil || fi.Mode().Perm() != want {
				t.Errorf("%s: %v %v, want %v", name, fi.Mode(), err, want)
			}
		}
		recordBriefly(t, rec, dir)
		if fi, err := os.Stat(filepath.Join(dir, "out.dat")); err != nil || fi.Mode().Perm() != mode {
			t.Errorf("Mode %v: the file is %v (%v)", mode, fi.Mode(), err)
		}
	}
}

// FILE's directory must be one no other user can write, unless sticky and ours: refused, naming
// it, before anything is made there.
func TestMakeRecordDirRefusesShared(t *testing.T) {
	for _, c := range []struct {
		mode os.FileMode
		ok   bool
	}{{0o700, true}, {0o755, true}, {0o777, false}, {0o770, false}, {0o1777, true}} {
		dir := filepath.Join(t.TempDir(), "d")
		os.Mkdir(dir, 0o700)
		os.Chmod(dir, c.mode|os.ModeDir)
		if c.mode&0o1000 != 0 {
			os.Chmod(dir, os.ModeSticky|c.mode.Perm())
		}
		rd, err := MakeRecordDir(filepath.Join(dir, "x.dat"), 7)
		if (err == nil) != c.ok {
			t.Errorf("mode %04o: %v", c.mode, err)
		}
		if err != nil {
			if !errors.Is(err, ErrRecordDir) || !strings.Contains(err.Error(), dir) {
				t.Errorf("mode %04o: %v", c.mode, err)
			}
			if ents, _ := os.ReadDir(dir); len(ents) != 0 {
				t.Errorf("mode %04o: refused, but made %v", c.mode, ents)
			}
			continue
		}
		if err := rd.Remove(); err != nil {
			t.Error(err)
		}
	}
	if _, err := MakeRecordDir(filepath.Join(t.TempDir(), "missing", "x.dat"), 7); !errors.Is(err, ErrRecordDir) {
		t.Errorf("a missing directory: %v", err)
	}
}

// Flush after tracing_on=0 reads what the CPUs hold, partial pages too, until they are empty;
// with tracing still on (the write of tracing_on failed, or someone turned it on again), a CPU
// the kernel keeps writing never empties: a recorder traced itself reads, with every page, the
// events its last read made. endlessCPUs models that: every read has a page, forever. Flush
// reads at most what a buffer holds, plus two pages, either way.
func TestRecorderFlushEnds(t *testing.T) {
	for _, off := range []bool{true, false} {
		rec := idleRecorder(t, false)
		e := &endlessCPUs{splicer: rec.sp}
		rec.sp = e
		if err := rec.Flush(off); err != nil {
			t.Fatalf("tracing off %v: %v", off, err)
		}
		if e.maxPages <= 0 || e.maxPages > 1<<16+2 {
			t.Errorf("tracing off %v: Flush read up to %d pages of a CPU that never empties (0: forever)", off, e.maxPages)
		}
	}
	// the bounds: the buffer's size, else twice the bytes held, else 64Ki pages; with
	// tracing on, the bytes held
	st := []tracefs.CPUStats{{CPU: 0, BytesInBuffer: 40960}}
	for _, c := range []struct {
		off   bool
		stats []tracefs.CPUStats
		buf   int64
		want  int
	}{
		{true, st, 1 << 20, 256 + 2},
		{true, st, 0, 20 + 2},
		{true, nil, 0, 1<<16 + 2},
		{false, st, 1 << 20, 10 + 2},
		{false, nil, 1 << 20, 2},
	} {
		if got := flushLimit(c.off, 0, c.stats, c.buf, 4096); got != c.want {
			t.Errorf("flushLimit(%v, %v, %d) = %d, want %d", c.off, c.stats, c.buf, got, c.want)
		}
	}
}

// endlessCPUs is a Splicer whose CPUs always have a page to read.
type endlessCPUs struct {
	splicer
	maxPages int
}

func (e *endlessCPUs) Flush(k int, dst *os.File, maxPages int) (int64, error) {
	e.maxPages = maxPages
	if maxPages <= 0 {
		return 0, nil // forever: said by maxPages
	}
	return int64(maxPages) * 4096, nil
}

// A CPU's file is mapped a window at a time (populated, a mapping is read in whole before it
// returns: a multi-gigabyte file at once would be), and every page is scanned.
func TestScanMappedWindows(t *testing.T) {
	const ps = 4096
	f, err := os.Create(filepath.Join(t.TempDir(), "cpu0.raw"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	for i := range 5 {
		f.Write(bytes.Repeat([]byte{byte('a' + i)}, ps))
	}
	defer func(w int64) { mapWindow = w; mapFile = tracefs.MapFile }(mapWindow)
	mapWindow = 2 * ps
	var calls []string
	mapFile = func(f *os.File, off int64, size int) ([]byte, func(), error) {
		calls = append(calls, fmt.Sprintf("%d+%d", off/ps, size/ps))
		return tracefs.MapFile(f, off, size)
	}
	var seen []byte
	if !scanMapped(f, 5*ps, ps, func(b []byte) {
		for p := 0; p < len(b); p += ps {
			seen = append(seen, b[p])
		}
	}) {
		t.Fatal("not mapped")
	}
	if got := strings.Join(calls, " "); got != "0+2 2+2 4+1" {
		t.Errorf("windows (page+pages) %s, want 0+2 2+2 4+1", got)
	}
	if string(seen) != "abcde" {
		t.Errorf("pages scanned %q", seen)
	}
}
