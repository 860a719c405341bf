package tracedat

import (
	"bytes"
	"compress/gzip"
	"errors"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"runtime"
	"strings"
	"testing"
)

func sample() (*Header, [][]byte) {
	h := &Header{
		PageSize:    4096,
		LongSize:    8,
		HeaderPage:  []byte("\tfield: u64 timestamp;\toffset:0;\tsize:8;\tsigned:0;\n"),
		HeaderEvent: []byte("# compressed entry header\n"),
		Ftrace:      [][]byte{[]byte("name: function\nID: 1\n"), []byte("name: print\nID: 5\n")},
		Systems: []System{{Name: "sched", Formats: [][]byte{[]byte("name: sched_switch\nID: 316\n")}},
			{Name: "kprobes", Formats: [][]byte{[]byte("name: open\nID: 1500\n")}}},
		Kallsyms: []byte("ffffffff81000000 T _text\n"),
		Printk:   []byte("0xffffffff82000000 : \"hello\\n\"\n"),
		Cmdlines: []byte("1 init\n42 sh\n"),
		CPUs:     2,
		Options:  []Option{{ID: OptionTraceClock, Data: []byte("[local] global counter\n\x00")}},
	}
	cpu0 := bytes.Repeat([]byte{0xaa}, 2*4096)
	return h, [][]byte{cpu0, nil}
}

func write(t testing.TB, h *Header, data [][]byte) []byte {
	var srcs []CPUSource
	for _, d := range data {
		srcs = append(srcs, CPUSource{R: bytes.NewReader(d), Size: int64(len(d))})
	}
	var b bytes.Buffer
	if err := Write(&b, h, srcs); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

func TestRoundTrip(t *testing.T) {
	h, data := sample()
	b := write(t, h, data)
	f, err := Read(bytes.NewReader(b), int64(len(b)))
	if err != nil {
		t.Fatal(err)
	}
	if f.Version != 6 {
		t.Errorf("version %d", f.Version)
	}
	if !reflect.DeepEqual(f.Header, *h) {
		t.Errorf("header read back differs:\n got %+v\nwant %+v", f.Header, *h)
	}
	if f.Clock() != "local" {
		t.Errorf("clock %q", f.Clock())
	}
	for cpu, want := range data {
		d := f.CPUData[cpu]
		if d.Size > 0 && d.Offset%4096 != 0 {
			t.Errorf("cpu %d at %d: not page-aligned", cpu, d.Offset)
		}
		got := make([]byte, d.Size)
		if _, err := f.Pages(cpu).Read(got); err != nil && len(want) > 0 {
			t.Fatal(err)
		}
		if !bytes.Equal(got, want) {
			t.Errorf("cpu %d: %d bytes read back, want %d", cpu, len(got), len(want))
		}
	}
}

// Every cut of the file short of its end is an error naming a section, never a panic; the
// cut in the CPU data says the file was cut short.
func TestTruncated(t *testing.T) {
	h, data := sample()
	b := write(t, h, data)
	for n := 0; n < len(b); n += 7 {
		_, err := Read(bytes.NewReader(b[:n]), int64(n))
		if err == nil {
			t.Fatalf("cut at %d of %d: read without an error", n, len(b))
		}
		var fe *FormatError
		if !errors.As(err, &fe) {
			t.Fatalf("cut at %d: %T %v", n, err, err)
		}
	}
	_, err := Read(bytes.NewReader(b[:len(b)-1]), int64(len(b)-1))
	if err == nil || !strings.Contains(err.Error(), "cut short") {
		t.Errorf("a file missing its last byte: %v", err)
	}
}

func TestRefusals(t *testing.T) {
	h, data := sample()
	b := write(t, h, data)
	v8 := bytes.Replace(bytes.Clone(b), []byte("tracing6\x00"), []byte("tracing8\x00"), 1)
	for _, c := range []struct {
		name string
		b    []byte
		want error
		text string
	}{
		{"empty", nil, ErrNotTraceDat, "magic"},
		{"text", []byte("hello world, this is not a trace"), ErrNotTraceDat, "magic"},
		{"version 8", v8, ErrVersion, `version "8"`},
	} {
		_, err := Read(bytes.NewReader(c.b), int64(len(c.b)))
		if !errors.Is(err, c.want) || !strings.Contains(err.Error(), c.text) {
			t.Errorf("%s: %v, want %v mentioning %q", c.name, err, c.want, c.text)
		}
	}
}

// FuzzRead: every section of the reader on arbitrary bytes b (seeded with whole files), and
// on files written as trace-cmd writes them around the fuzzer's header_page and event format
// (version and compression as how says: 6, 7 uncompressed, zstd, zlib; with how&4, b written
// over the file at at), so that the fuzzer reaches inside compressed sections too: an error
// naming where, or a file whose CPU data lies inside it, read in the memory its size allows;
// a file as trace-cmd writes it reads back as written. Never a panic.
func FuzzRead(f *testing.F) {
	h, data := sample()
	page, format := h.HeaderPage, h.Systems[0].Formats[0]
	add := func(b []byte, how uint8) { f.Add(b, page, format, how, uint32(0)) }
	add(write(f, h, data), 0)
	h.Options = nil
	add(write(f, h, [][]byte{nil, nil}), 1)
	// version 7, uncompressed and zstd (stream's fixtures: what trace-cmd convert wrote), and
	// the header_page and a format of the 6.12 kernel they hold
	if b, err := os.ReadFile(filepath.Join("..", "stream", "testdata", "6.12", "tp.v7zstd.dat")); err == nil {
		add(b, 2)
		if g, err := Read(bytes.NewReader(b), int64(len(b))); err == nil && len(g.Systems) > 0 && len(g.Systems[0].Formats) > 0 {
			f.Add(b, g.HeaderPage, g.Systems[0].Formats[0], uint8(2), uint32(0))
			f.Add(b[:64], g.HeaderPage, g.Systems[len(g.Systems)-1].Formats[0], uint8(3), uint32(0))
		}
	}
	if z, err := os.ReadFile(filepath.Join("..", "stream", "testdata", "6.12", "tp.v7.dat.gz")); err == nil {
		if r, err := gzip.NewReader(bytes.NewReader(z)); err == nil {
			if b, err := io.ReadAll(r); err == nil {
				add(b, 1)
			}
		}
	}
	// instances' buffers (trace-cmd record -B), version 6 and 7 in each compression, in pages
	// of 64 bytes and without kallsyms (small inputs minimize fast)
	h, _ = sample()
	h.PageSize, h.Kallsyms = 64, nil
	add(traceCmdFile(f, h, 6, "", instanceBuffersOf(64)...), 0)
	for i, comp := range []string{"none", "zstd", "zlib"} {
		add(traceCmdFile(f, h, 7, comp, instanceBuffersOf(64)...), uint8(1+i))
	}
	// the small crafted files of TestCrafted: an options chain looping, a zstd window of 256 MiB
	for _, a := range attacks() {
		if a.name == "options-loop" || a.name == "zstd-window" {
			add(a.build(), 2)
		}
	}
	// a patch: a section size of the zstd file, made large
	f.Add([]byte{0xff, 0xff, 0xff, 0x7f}, page, format, uint8(6), uint32(200))
	f.Fuzz(func(t *testing.T, b, headerPage, format []byte, how uint8, at uint32) {
		readChecked(t, b)
		h, _ := sample()
		h.PageSize, h.Kallsyms = 64, nil
		h.HeaderPage = headerPage
		h.Systems[0].Formats[0] = format
		version, comp := 7, []string{"", "none", "zstd", "zlib"}[how&3]
		if how&3 == 0 {
			version = 6
		}
		file := traceCmdFile(t, h, version, comp, instanceBuffersOf(64)...)
		patched := how&4 != 0 && len(b) > 0
		if patched {
			copy(file[int(at%uint32(len(file))):], b[:min(len(b), 64)])
		}
		g := readChecked(t, file)
		if patched {
			return
		}
		if g == nil {
			t.Fatalf("version %d %s: a file as trace-cmd writes it refused", version, comp)
		}
		if !bytes.Equal(g.HeaderPage, headerPage) || !bytes.Equal(g.Systems[0].Formats[0], format) {
			t.Fatalf("version %d %s: header_page %q and format %q read back as %q and %q", version, comp,
				headerPage, format, g.HeaderPage, g.Systems[0].Formats[0])
		}
	})
}

// readChecked reads b as ftctl report does (the file, every buffer, every CPU's pages) and
// checks what it got: nil and an error naming where, or the file, whose CPU data lie inside
// it and add up to no more than it holds, read in the memory MaxMemory allows (with the
// compressed block being decompressed and the decompressor's state).
func readChecked(t *testing.T, b []byte) *File {
	t.Helper()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	file, err := Read(bytes.NewReader(b), int64(len(b)))
	if err != nil {
		if fe := (*FormatError)(nil); !errors.As(err, &fe) {
			t.Fatalf("%T %v", err, err)
		}
		return nil
	}
	var inFile, inMemory int64
	check := func(g *File) {
		for cpu, d := range g.CPUData {
			if g.cpuR == nil {
				if d.Size > 0 && d.Offset+d.Size > int64(len(b)) {
					t.Fatalf("buffer %q: cpu %d's data past the end", g.BufferName, cpu)
				}
				inFile += d.Size
			} else {
				inMemory += d.Size
			}
		}
		g.Clock()
		for cpu := range g.CPUData {
			io.Copy(io.Discard, g.Pages(cpu))
		}
	}
	check(file)
	for _, name := range file.Buffers() {
		if g, err := file.Buffer(name); err == nil {
			check(g)
		} else if fe := (*FormatError)(nil); !errors.As(err, &fe) {
			t.Fatalf("buffer %q: %T %v", name, err, err)
		}
	}
	runtime.ReadMemStats(&after)
	if inFile > int64(len(b)) {
		t.Fatalf("the CPUs' data in the file add up to %d bytes, in a file of %d", inFile, len(b))
	}
	if inMemory > MaxMemory(int64(len(b))) {
		t.Fatalf("the CPUs' data decompressed add up to %d bytes, for a file of %d", inMemory, len(b))
	}
	if alloc := after.TotalAlloc - before.TotalAlloc; alloc > uint64(MaxMemory(int64(len(b)))+int64(len(b))+16<<20) {
		t.Fatalf("%d bytes allocated to read a file of %d", alloc, len(b))
	}
	return file
}

// Written to a file from files (the recorder's way: each CPU's pages copied in the kernel by
// the file's ReadFrom), the trace.dat is byte for byte the one written to memory; a CPU's file
// shorter than its size is an error naming the CPU.
func TestWriteFileToFile(t *testing.T) {
	h, data := sample()
	h.CPUs = 3
	data = append(data, bytes.Repeat([]byte{0x55}, 3*4096))
	want := write(t, h, data)
	dir := t.TempDir()
	var srcs []CPUSource
	for i, d := range data {
		p := filepath.Join(dir, "cpu"+string(rune('0'+i)))
		if err := os.WriteFile(p, d, 0o600); err != nil {
			t.Fatal(err)
		}
		f, err := os.Open(p)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		srcs = append(srcs, CPUSource{R: f, Size: int64(len(d))})
	}
	out, err := os.Create(filepath.Join(dir, "out.dat"))
	if err != nil {
		t.Fatal(err)
	}
	defer out.Close()
	if err := Write(out, h, srcs); err != nil {
		t.Fatal(err)
	}
	got, _ := os.ReadFile(out.Name())
	if !bytes.Equal(got, want) {
		t.Errorf("the file (%d bytes) differs from the trace.dat written to memory (%d bytes)", len(got), len(want))
	}
	for i, d := range data {
		srcs[i] = CPUSource{R: bytes.NewReader(d), Size: int64(len(d))}
	}
	srcs[2].R = bytes.NewReader(data[2][:4096])
	if err := Write(io.Discard, h, srcs); err == nil || !strings.Contains(err.Error(), "CPU 2") {
		t.Errorf("a CPU's data cut short: %v", err)
	}
}
