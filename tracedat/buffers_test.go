package tracedat

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"reflect"
	"testing"

	"github.com/ftctl/ftctl/internal/fixture"
)

// traceCmdFile is h with the buffers given written as trace-cmd record writes them (file
// version 6, or 7 compressed with comp), by internal/fixture's writer.
func traceCmdFile(t testing.TB, h *Header, version int, comp string, bufs ...fixture.TraceDatBuffer) []byte {
	t.Helper()
	d := fixture.TraceDat{Version: version, Compression: comp, PageSize: h.PageSize, HeaderPage: h.HeaderPage,
		HeaderEvent: h.HeaderEvent, Ftrace: h.Ftrace, Kallsyms: h.Kallsyms, Printk: h.Printk, Cmdlines: h.Cmdlines,
		Buffers: bufs}
	for _, s := range h.Systems {
		d.Systems = append(d.Systems, fixture.TraceDatSystem{Name: s.Name, Formats: s.Formats})
	}
	for _, o := range h.Options {
		d.Options = append(d.Options, fixture.TraceDatOption{ID: o.ID, Data: o.Data})
	}
	b, err := d.Bytes()
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// pages fills n pages of 4096 bytes with a byte of its own each.
func pages(n int, fill byte) []byte { return pagesOf(4096, n, fill) }

func pagesOf(size, n int, fill byte) []byte {
	b := make([]byte, n*size)
	for i := range b {
		b[i] = fill + byte(i/size)
	}
	return b
}

// instanceBuffers: a top level with data on CPU 0, "ftbuf" on CPU 1 only, "two" on both CPUs,
// 12 pages on CPU 1 (two compressed chunks of trace-cmd's 10 pages).
func instanceBuffers() []fixture.TraceDatBuffer { return instanceBuffersOf(4096) }

// instanceBuffersOf: instanceBuffers in pages of size bytes (the fuzz seeds' are small: the
// fuzzer minimizes each new input, in time that grows with its size).
func instanceBuffersOf(size int) []fixture.TraceDatBuffer {
	return []fixture.TraceDatBuffer{
		{Name: "", CPUs: [][]byte{pagesOf(size, 2, 0x10), nil}},
		{Name: "ftbuf", Clock: "global", CPUs: [][]byte{nil, pagesOf(size, 1, 0x40)}},
		{Name: "two", CPUs: [][]byte{pagesOf(size, 3, 0x60), pagesOf(size, 12, 0x80)}},
	}
}

func readAll(t *testing.T, f *File, cpu int) []byte {
	t.Helper()
	b, err := io.ReadAll(f.Pages(cpu))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// trace-cmd record -B NAME: every buffer of the file is read, in version 6 (BUFFER options
// pointing at each instance's flyrecord) and 7 (a BUFFER option and section per buffer), with
// each compression trace-cmd has.
func TestInstanceBuffers(t *testing.T) {
	h, _ := sample()
	for _, c := range []struct {
		version int
		comp    string
	}{{6, ""}, {7, "none"}, {7, "zstd"}, {7, "zlib"}} {
		t.Run(fmt.Sprintf("v%d%s", c.version, c.comp), func(t *testing.T) {
			bufs := instanceBuffers()
			b := traceCmdFile(t, h, c.version, c.comp, bufs...)
			f, err := Read(bytes.NewReader(b), int64(len(b)))
			if err != nil {
				t.Fatal(err)
			}
			if got := f.Buffers(); !reflect.DeepEqual(got, []string{"ftbuf", "two"}) {
				t.Errorf("buffers %q", got)
			}
			if f.Kallsyms == nil || !bytes.Equal(f.Kallsyms, h.Kallsyms) || !bytes.Equal(f.Cmdlines, h.Cmdlines) || len(f.Systems) != len(h.Systems) {
				t.Errorf("header sections not read back: %+v", f.Header)
			}
			for _, want := range bufs {
				g, err := f.Buffer(want.Name)
				if err != nil {
					t.Fatalf("buffer %q: %v", want.Name, err)
				}
				// version 7 lists the CPUs with data: the last of them is the last CPU read
				if g.CPUs > len(want.CPUs) {
					t.Errorf("buffer %q: %d CPUs, want at most %d", want.Name, g.CPUs, len(want.CPUs))
				}
				for cpu, data := range want.CPUs {
					if cpu >= g.CPUs {
						if len(data) > 0 {
							t.Errorf("buffer %q: cpu %d not read", want.Name, cpu)
						}
						continue
					}
					if got := readAll(t, g, cpu); !bytes.Equal(got, data) {
						t.Errorf("buffer %q cpu %d: %d bytes read back, want %d", want.Name, cpu, len(got), len(data))
					}
				}
				if g.BufferName != want.Name {
					t.Errorf("buffer %q calls itself %q", want.Name, g.BufferName)
				}
			}
			// version 7 says each buffer's clock; version 6 only the file's (trace-cmd report
			// reads an instance with the top level's)
			g, _ := f.Buffer("ftbuf")
			if wantClock := map[int]string{6: "local", 7: "global"}[c.version]; g.Clock() != wantClock {
				t.Errorf("ftbuf's clock %q, want %q", g.Clock(), wantClock)
			}
			if _, err := f.Buffer("nope"); !errors.Is(err, ErrNoBuffer) || !bytes.Contains([]byte(err.Error()), []byte(`"ftbuf"`)) {
				t.Errorf("an unknown buffer: %v", err)
			}
		})
	}
}

// trace-cmd record -B NAME without the top level: the top level's buffer is there, empty.
func TestOnlyInstanceBuffer(t *testing.T) {
	h, _ := sample()
	for _, version := range []int{6, 7} {
		t.Run(fmt.Sprint(version), func(t *testing.T) {
			b := traceCmdFile(t, h, version, "zstd", fixture.TraceDatBuffer{CPUs: [][]byte{nil, nil}},
				fixture.TraceDatBuffer{Name: "only", CPUs: [][]byte{pages(1, 1), pages(1, 2)}})
			f, err := Read(bytes.NewReader(b), int64(len(b)))
			if err != nil {
				t.Fatal(err)
			}
			for cpu := range f.CPUData {
				if n := len(readAll(t, f, cpu)); n != 0 {
					t.Errorf("top level cpu %d: %d bytes", cpu, n)
				}
			}
			g, err := f.Buffer("only")
			if err != nil {
				t.Fatal(err)
			}
			if got := readAll(t, g, 1); !bytes.Equal(got, pages(1, 2)) {
				t.Errorf("cpu 1: %d bytes", len(got))
			}
		})
	}
}

// Every cut of a file with instances short of its end is an error naming a section, or a file
// whose buffers read as far as they are there, never a panic.
func TestTruncatedBuffers(t *testing.T) {
	h, _ := sample()
	for _, version := range []int{6, 7} {
		b := traceCmdFile(t, h, version, "zlib", instanceBuffers()...)
		for n := 0; n < len(b); n += 13 {
			f, err := Read(bytes.NewReader(b[:n]), int64(n))
			var fe *FormatError
			if err != nil {
				if !errors.As(err, &fe) {
					t.Fatalf("v%d cut at %d: %T %v", version, n, err, err)
				}
				continue
			}
			for _, name := range f.Buffers() {
				g, err := f.Buffer(name)
				if err != nil {
					if !errors.As(err, &fe) {
						t.Fatalf("v%d cut at %d, buffer %q: %T %v", version, n, name, err, err)
					}
					continue
				}
				for cpu := range g.CPUData {
					io.Copy(io.Discard, g.Pages(cpu))
				}
			}
		}
	}
}

// A CPU id past any machine's in a version 7 BUFFER option is refused: it sizes the CPU table
// (FuzzRead stalled on such a file, every CPU of millions read in turn).
func TestCPUIDBounded(t *testing.T) {
	h, _ := sample()
	b := traceCmdFile(t, h, 7, "none", fixture.TraceDatBuffer{CPUs: [][]byte{pages(1, 1)}})
	// the top buffer's option: ... "local\0", page size 4096, 1 CPU, CPU id 0
	at := bytes.Index(b, []byte("\x00local\x00\x00\x10\x00\x00\x01\x00\x00\x00\x00\x00\x00\x00"))
	if at < 0 {
		t.Fatal("no BUFFER option found")
	}
	copy(b[at+15:], []byte{0, 0, 0x10, 0}) // CPU 1048576
	f, err := Read(bytes.NewReader(b), int64(len(b)))
	if err == nil {
		t.Fatalf("read, with %d CPUs", f.CPUs)
	}
	if !errors.Is(err, ErrCorrupt) || !bytes.Contains([]byte(err.Error()), []byte("1048576")) {
		t.Errorf("%v", err)
	}
}
