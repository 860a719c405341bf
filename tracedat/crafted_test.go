package tracedat

import (
	"bytes"
	"compress/zlib"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"runtime"
	"runtime/metrics"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ftctl/ftctl/internal/fixture"
	"github.com/klauspost/compress/zstd"
)

// Hostile files (issue 28): a few KiB that, read as they claim, would take gigabytes or hours.
// Each is read in a child process of the test binary, watched: past the memory its size allows
// or past a time limit the child is stopped, and the test fails saying how far it got, instead
// of taking the machine with it.

// v7w writes a version 7 file piece by piece, as no writer would: sections anywhere, options
// pointing anywhere.
type v7w struct {
	comp      string
	b         []byte
	optionsAt int   // where the header's first options offset is
	next      int64 // what the first options section's DONE points to
}

func newV7(comp string) *v7w {
	w := &v7w{comp: comp}
	w.b = append(w.b, Magic...)
	w.b = append(w.b, "7\x00"...)
	w.b = append(w.b, 0, 8)
	w.u32(4096)
	w.b = append(w.b, comp...)
	w.b = append(w.b, 0, '1', 0)
	w.optionsAt = len(w.b)
	w.u64(0)
	return w
}

func (w *v7w) u16(v uint16) { w.b = binary.LittleEndian.AppendUint16(w.b, v) }
func (w *v7w) u32(v int)    { w.b = binary.LittleEndian.AppendUint32(w.b, uint32(v)) }
func (w *v7w) u64(v int64)  { w.b = binary.LittleEndian.AppendUint64(w.b, uint64(v)) }

func (w *v7w) flags() uint16 {
	if w.comp == "none" {
		return 0
	}
	return sectionCompressed
}

// section writes a section of id holding what body writes, and returns its offset.
func (w *v7w) section(id, flags uint16, body func()) int64 {
	at := len(w.b)
	w.u16(id)
	w.u16(flags)
	w.u32(0xffffffff)
	sizeAt := len(w.b)
	w.u64(0)
	body()
	binary.LittleEndian.PutUint64(w.b[sizeAt:], uint64(len(w.b)-sizeAt-8))
	return int64(at)
}

// block writes a compressed block: z, said to decompress to size bytes.
func (w *v7w) block(size int, z []byte) {
	w.u32(len(z))
	w.u32(size)
	w.b = append(w.b, z...)
}

// meta writes a metadata section holding data, compressed when the file is.
func (w *v7w) meta(id uint16, data []byte) int64 {
	return w.section(id, w.flags(), func() {
		if w.comp == "none" {
			w.b = append(w.b, data...)
			return
		}
		w.block(len(data), compressed(w.comp, data))
	})
}

// options writes an uncompressed options section; it returns its offset and where its DONE's
// next offset is.
func (w *v7w) options(opts []Option) (at int64, next int) {
	at = w.section(OptionDone, 0, func() {
		for _, o := range opts {
			w.u16(o.ID)
			w.u32(len(o.Data))
			w.b = append(w.b, o.Data...)
		}
		w.u16(OptionDone)
		w.u32(8)
		next = len(w.b)
		w.u64(0)
	})
	return at, next
}

type cpuRef struct {
	id        int
	off, size int64
}

// bufferOption is a BUFFER option: the buffer's section, its name, and its CPUs' data.
func bufferOption(section int64, name string, cpus []cpuRef) Option {
	b := binary.LittleEndian.AppendUint64(nil, uint64(section))
	b = append(b, name...)
	b = append(b, 0)
	b = append(b, "local\x00"...)
	b = binary.LittleEndian.AppendUint32(b, 4096)
	b = binary.LittleEndian.AppendUint32(b, uint32(len(cpus)))
	for _, c := range cpus {
		b = binary.LittleEndian.AppendUint32(b, uint32(c.id))
		b = binary.LittleEndian.AppendUint64(b, uint64(c.off))
		b = binary.LittleEndian.AppendUint64(b, uint64(c.size))
	}
	return Option{ID: OptionBuffer, Data: b}
}

func u64Data(v int64) []byte { return binary.LittleEndian.AppendUint64(nil, uint64(v)) }

// craft is a version 7 file: a header info section, what attack writes (the options it returns
// join the first options section), and a top-level buffer with no CPU unless attack gave one.
func craft(comp string, attack func(w *v7w) []Option) []byte {
	w := newV7(comp)
	info := append([]byte("header_page\x00"), binary.LittleEndian.AppendUint64(nil, 4)...)
	info = append(info, "page"...)
	info = append(info, "header_event\x00"...)
	info = binary.LittleEndian.AppendUint64(info, 5)
	info = append(info, "event"...)
	opts := []Option{{ID: optionHeaderInfo, Data: u64Data(w.meta(optionHeaderInfo, info))}}
	extra := attack(w)
	top := false
	for _, o := range extra {
		top = top || (o.ID == OptionBuffer && len(o.Data) > 8 && o.Data[8] == 0)
	}
	if !top {
		at := w.section(OptionBuffer, w.flags(), func() {})
		extra = append(extra, bufferOption(at, "", nil))
	}
	at, next := w.options(append(opts, extra...))
	binary.LittleEndian.PutUint64(w.b[next:], uint64(w.next))
	binary.LittleEndian.PutUint64(w.b[w.optionsAt:], uint64(at))
	return w.b
}

var zstdEncoder = sync.OnceValue(func() *zstd.Encoder {
	e, err := zstd.NewWriter(nil, zstd.WithEncoderConcurrency(1), zstd.WithEncoderLevel(zstd.SpeedFastest))
	if err != nil {
		panic(err)
	}
	return e
})

func compressed(comp string, data []byte) []byte {
	z, _ := repeated(comp, data, nil, 0, nil)
	return z
}

// repeated compresses head, n times pattern, then tail, without holding them in memory: zstd
// as a frame per 128 KiB, zlib as one stream. It returns the compressed bytes and their size.
func repeated(comp string, head, pattern []byte, n int, tail []byte) ([]byte, int) {
	size := len(head) + n*len(pattern) + len(tail)
	per := 1
	if len(pattern) > 0 {
		per = max(1, (128<<10)/len(pattern))
	}
	chunk := bytes.Repeat(pattern, per)
	switch comp {
	case "zstd":
		e := zstdEncoder()
		var z []byte
		if len(head) > 0 {
			z = e.EncodeAll(head, z)
		}
		for left := n; left > 0; left -= per {
			z = e.EncodeAll(chunk[:min(left, per)*len(pattern)], z)
		}
		if len(tail) > 0 {
			z = e.EncodeAll(tail, z)
		}
		return z, size
	case "zlib":
		var out bytes.Buffer
		zw, _ := zlib.NewWriterLevel(&out, zlib.BestSpeed)
		zw.Write(head)
		for left := n; left > 0; left -= per {
			zw.Write(chunk[:min(left, per)*len(pattern)])
		}
		zw.Write(tail)
		zw.Close()
		return out.Bytes(), size
	}
	panic("compression " + comp)
}

// An attack is a crafted file and the error reading it must end in (nil: it reads).
type attack struct {
	name  string
	build func() []byte
	want  error
	text  string // in the error
}

func attacks() []attack {
	var all []attack
	// an options section whose DONE points back at itself
	all = append(all, attack{"options-loop", func() []byte {
		return craft("none", func(w *v7w) []Option {
			w.next = int64(len(w.b))
			w.section(OptionDone, 0, func() {
				w.u16(0x7fff)
				w.u32(0)
				w.u16(OptionDone)
				w.u32(8)
				w.u64(w.next)
			})
			return nil
		})
	}, ErrCorrupt, "a loop"})
	for _, comp := range []string{"zstd", "zlib"} {
		// the same loop, the section a block of millions of empty options: each visit
		// decompressed and appended anew
		size := map[string]int{"zstd": 240 << 20, "zlib": 60 << 20}[comp]
		all = append(all, attack{"options-loop-" + comp, func() []byte {
			return craft(comp, func(w *v7w) []Option {
				w.next = int64(len(w.b))
				w.section(OptionDone, sectionCompressed, func() {
					done := append([]byte{0, 0, 8, 0, 0, 0}, u64Data(w.next)...)
					z, n := repeated(comp, nil, []byte{0xff, 0x7f, 0, 0, 0, 0}, size/6, done)
					w.block(n, z)
				})
				return nil
			})
		}, ErrTooLarge, "options"})

		// 4096 CPUs of the top buffer, every one given the same chunk list of 16 MiB
		all = append(all, attack{"shared-chunks-" + comp, func() []byte {
			return craft(comp, func(w *v7w) []Option {
				var list, end int64
				at := w.section(OptionBuffer, sectionCompressed, func() {
					list = int64(len(w.b))
					w.u32(1)
					z, n := repeated(comp, nil, make([]byte, 4096), 4096, nil)
					w.block(n, z)
					end = int64(len(w.b))
				})
				var cpus []cpuRef
				for cpu := range 4096 {
					cpus = append(cpus, cpuRef{cpu, list, end - list})
				}
				return []Option{bufferOption(at, "", cpus)}
			})
		}, ErrCorrupt, "CPU 1"})

		// an event formats section of hundreds of MiB holding tens of millions of empty
		// systems (5 bytes each: the name's NUL, no format), or 60 MiB holding 12 million,
		// whose structures are 8 times the bytes
		all = append(all, attack{"systems-" + comp, func() []byte {
			size := map[string]int{"zstd": 255 << 20, "zlib": 60 << 20}[comp]
			return craft(comp, func(w *v7w) []Option {
				n := size / 5
				at := w.section(optionEventFormats, sectionCompressed, func() {
					z, sz := repeated(comp, binary.LittleEndian.AppendUint32(nil, uint32(n)), make([]byte, 5), n, nil)
					w.block(sz, z)
				})
				return []Option{{ID: optionEventFormats, Data: u64Data(at)}}
			})
		}, ErrTooLarge, "event formats"})

		// kallsyms, printk formats and saved cmdlines of 40 MiB each: each block within
		// its limit, the three past what the file's size allows
		all = append(all, attack{"total-" + comp, func() []byte {
			return craft(comp, func(w *v7w) []Option {
				var opts []Option
				for _, id := range []uint16{optionKallsyms, optionPrintk, optionCmdlines} {
					const n = (40 << 20) / 25
					head := binary.LittleEndian.AppendUint32(nil, n*25)
					if id == optionCmdlines {
						head = binary.LittleEndian.AppendUint64(nil, n*25)
					}
					at := w.section(id, sectionCompressed, func() {
						z, size := repeated(comp, head, []byte("ffffffff81000000 T _text\n"), n, nil)
						w.block(size, z)
					})
					opts = append(opts, Option{ID: id, Data: u64Data(at)})
				}
				return opts
			})
		}, ErrTooLarge, "more than"})
	}
	// 512 instances' buffers, each one CPU given the same chunk list of 16 MiB
	all = append(all, attack{"shared-instances-zstd", func() []byte {
		return craft("zstd", func(w *v7w) []Option {
			var list, end int64
			at := w.section(OptionBuffer, sectionCompressed, func() {
				list = int64(len(w.b))
				w.u32(1)
				z, n := repeated("zstd", nil, make([]byte, 4096), 4096, nil)
				w.block(n, z)
				end = int64(len(w.b))
			})
			var opts []Option
			for i := range 512 {
				opts = append(opts, bufferOption(at, fmt.Sprint("i", i), []cpuRef{{0, list, end - list}}))
			}
			return opts
		})
	}, ErrCorrupt, "CPU 0"})
	// a zstd frame that asks for a window of 256 MiB to decompress 29 bytes of kallsyms
	all = append(all, attack{"zstd-window", func() []byte {
		return craft("zstd", func(w *v7w) []Option {
			data := append(binary.LittleEndian.AppendUint32(nil, 25), "ffffffff81000000 T _text\n"...)
			frame := []byte{0x28, 0xb5, 0x2f, 0xfd, 0x00, 18 << 3} // no content size; window 2^(10+18)
			frame = append(frame, byte(len(data)<<3|1), 0, 0)      // the last block, raw
			frame = append(frame, data...)
			at := w.section(optionKallsyms, sectionCompressed, func() { w.block(len(data), frame) })
			return []Option{{ID: optionKallsyms, Data: u64Data(at)}}
		})
	}, nil, ""})
	// a zstd frame of 29 bytes, its block said to hold 10 (no content size to refuse it early)
	all = append(all, attack{"zstd-lying", func() []byte {
		return craft("zstd", func(w *v7w) []Option {
			data := append(binary.LittleEndian.AppendUint32(nil, 25), "ffffffff81000000 T _text\n"...)
			frame := []byte{0x28, 0xb5, 0x2f, 0xfd, 0x00, 10 << 3}
			frame = append(frame, byte(len(data)<<3|1), 0, 0)
			frame = append(frame, data...)
			at := w.section(optionKallsyms, sectionCompressed, func() { w.block(10, frame) })
			return []Option{{ID: optionKallsyms, Data: u64Data(at)}}
		})
	}, ErrCorrupt, "decompressing"})
	// 2000 instances' buffers, each with data on CPU 65535 only: a table of 65536 CPUs each
	all = append(all, attack{"cpu-tables-zstd", func() []byte {
		return craft("zstd", func(w *v7w) []Option {
			z := compressed("zstd", make([]byte, 64))
			var opts []Option
			for i := range 2000 {
				var list, end int64
				at := w.section(OptionBuffer, sectionCompressed, func() {
					list = int64(len(w.b))
					w.u32(1)
					w.block(64, z)
					end = int64(len(w.b))
				})
				opts = append(opts, bufferOption(at, fmt.Sprint("i", i), []cpuRef{{65535, list, end - list}}))
			}
			return opts
		})
	}, ErrTooLarge, "CPU"})
	// version 6: 65536 CPUs, every one given the same 8 MiB of pages (half a TiB to read)
	all = append(all, attack{"cpu-overlap-v6", func() []byte {
		h, _ := sample()
		h.CPUs = 1 << 16
		srcs := make([]CPUSource, h.CPUs)
		for i := range srcs {
			srcs[i] = CPUSource{R: bytes.NewReader(nil)}
		}
		srcs[0] = CPUSource{R: bytes.NewReader(make([]byte, 8<<20)), Size: 8 << 20}
		var b bytes.Buffer
		if err := Write(&b, h, srcs); err != nil {
			panic(err)
		}
		raw := b.Bytes()
		at := bytes.Index(raw, []byte("flyrecord\x00")) + 10
		for cpu := 1; cpu < h.CPUs; cpu++ {
			copy(raw[at+16*cpu:], raw[at:at+16])
		}
		return raw
	}, ErrCorrupt, "CPU"})
	return all
}

// readEverything reads b as ftctl report does: the file, every buffer (each kept, as
// stream.ReadFile keeps them), every CPU's pages.
func readEverything(b []byte) error {
	f, err := Read(bytes.NewReader(b), int64(len(b)))
	if err != nil {
		return err
	}
	views := []*File{f}
	for _, name := range f.Buffers() {
		g, err := f.Buffer(name)
		if err != nil {
			return err
		}
		views = append(views, g)
	}
	for _, g := range views {
		for cpu := range g.CPUData {
			io.Copy(io.Discard, g.Pages(cpu))
		}
	}
	runtime.KeepAlive(views)
	return nil
}

// craftedBound is what a file of size bytes may take: the budget, the compressed blocks read
// on the way (at most the file), and the decompressor's own state.
func craftedBound(size int64) int64 { return max(64<<20, 16*size) + size + 16<<20 }

// craftedResult is what the child says of its reading.
type craftedResult struct {
	Size    int64  // the file's
	Alloc   uint64 // bytes allocated while reading (TotalAlloc)
	Peak    uint64 // the most heap in use seen, past what it was before (sampled every millisecond)
	Nanos   int64
	Err     string
	Is      string // which sentinel the error is
	Killed  string // why the watchdog stopped the child
	Section string
	Offset  int64
}

const craftedChild = "FTCTL_TRACEDAT_CRAFTED"

// TestCrafted: every crafted file is read within craftedBound of its size and in seconds, or
// refused with the error the attack names, saying where.
func TestCrafted(t *testing.T) {
	for _, a := range attacks() {
		t.Run(a.name, func(t *testing.T) {
			if os.Getenv(craftedChild) != "" {
				craftedRun(a)
				return
			}
			cmd := exec.Command(os.Args[0], "-test.run=^TestCrafted$/^"+a.name+"$", "-test.v")
			cmd.Env = append(os.Environ(), craftedChild+"=1")
			out, _ := cmd.CombinedOutput()
			var res craftedResult
			i := bytes.Index(out, []byte("crafted: "))
			if i < 0 {
				t.Fatalf("the child said nothing:\n%s", out)
			}
			line, _, _ := bytes.Cut(out[i+len("crafted: "):], []byte("\n"))
			if err := json.Unmarshal(line, &res); err != nil {
				t.Fatalf("%v: %s", err, line)
			}
			t.Logf("%d bytes: %.1f MiB allocated, %.1f MiB peak heap, %v: %s %s", res.Size, float64(res.Alloc)/(1<<20),
				float64(res.Peak)/(1<<20), time.Duration(res.Nanos).Round(time.Millisecond), res.Err, res.Killed)
			if res.Killed != "" {
				t.Fatalf("stopped: %s", res.Killed)
			}
			if bound := craftedBound(res.Size); res.Alloc > uint64(bound) {
				t.Errorf("%d bytes allocated for a file of %d bytes (at most %d)", res.Alloc, res.Size, bound)
			}
			switch {
			case a.want == nil && res.Err != "":
				t.Errorf("refused: %s", res.Err)
			case a.want != nil && (res.Is != a.want.Error() || !strings.Contains(res.Err, a.text)):
				t.Errorf("error %q (%s), want %v mentioning %q", res.Err, res.Is, a.want, a.text)
			case a.want != nil && (res.Section == "" || res.Offset <= 0):
				t.Errorf("the error names no section or offset: %q", res.Err)
			}
		})
	}
}

// craftedRun is the child: it reads the attack's file under a watchdog and prints what it took.
func craftedRun(a attack) {
	b := a.build()
	res := craftedResult{Size: int64(len(b))}
	limit := craftedBound(res.Size)
	if v, err := strconv.ParseInt(os.Getenv(craftedChild+"_LIMIT"), 10, 64); err == nil {
		limit = v // to measure how far an unbounded reader goes
	}
	report := func(r craftedResult) {
		j, _ := json.Marshal(r)
		fmt.Printf("\ncrafted: %s\n", j)
	}
	runtime.GC()
	samples := []metrics.Sample{{Name: "/gc/heap/allocs:bytes"}, {Name: "/memory/classes/heap/objects:bytes"}}
	metrics.Read(samples)
	base, baseHeap := samples[0].Value.Uint64(), samples[1].Value.Uint64()
	var mu sync.Mutex
	start := time.Now()
	done := make(chan struct{})
	go func() {
		tick := time.NewTicker(time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-done:
				return
			case <-tick.C:
			}
			metrics.Read(samples)
			mu.Lock()
			res.Alloc = samples[0].Value.Uint64() - base
			res.Peak = max(res.Peak, samples[1].Value.Uint64()-min(baseHeap, samples[1].Value.Uint64()))
			res.Nanos = int64(time.Since(start))
			r := res
			mu.Unlock()
			switch {
			case r.Alloc > uint64(limit):
				r.Killed = fmt.Sprintf("%d bytes allocated after %v, past %d", r.Alloc, time.Since(start).Round(time.Millisecond), limit)
			case time.Since(start) > 20*time.Second:
				r.Killed = fmt.Sprintf("still reading after %v", time.Since(start).Round(time.Millisecond))
			default:
				continue
			}
			report(r)
			os.Exit(3)
		}
	}()
	err := readEverything(b)
	close(done)
	metrics.Read(samples)
	mu.Lock()
	defer mu.Unlock()
	res.Alloc = samples[0].Value.Uint64() - base
	res.Peak = max(res.Peak, samples[1].Value.Uint64()-min(baseHeap, samples[1].Value.Uint64()))
	res.Nanos = int64(time.Since(start))
	if err != nil {
		res.Err = err.Error()
		for _, s := range []error{ErrCorrupt, ErrTooLarge, ErrUnsupported, ErrVersion, ErrNotTraceDat} {
			if errors.Is(err, s) {
				res.Is = s.Error()
				break
			}
		}
		var fe *FormatError
		if errors.As(err, &fe) {
			res.Section, res.Offset = fe.Section, fe.Offset
		}
	}
	report(res)
}

// Parts of a file that overlap without sharing an offset are refused too: their sizes add up
// to more than the file holds. A chunk list running past its CPU's data is refused.
func TestOverlapsRefused(t *testing.T) {
	h, _ := sample()
	h.CPUs = 2
	var b bytes.Buffer
	if err := Write(&b, h, []CPUSource{{R: bytes.NewReader(pages(4, 1)), Size: 4 * 4096}, {R: bytes.NewReader(pages(4, 9)), Size: 4 * 4096}}); err != nil {
		t.Fatal(err)
	}
	v6 := b.Bytes()
	at := bytes.Index(v6, []byte("flyrecord\x00")) + 10
	off := binary.LittleEndian.Uint64(v6[at:])
	binary.LittleEndian.PutUint64(v6[at+16:], off+4096) // CPU 1: from CPU 0's second page
	binary.LittleEndian.PutUint64(v6[at+24:], uint64(len(v6))-off-4096)

	v7 := traceCmdFile(t, h, 7, "zstd", fixture.TraceDatBuffer{CPUs: [][]byte{pages(30, 1)}})
	if _, err := Read(bytes.NewReader(v7), int64(len(v7))); err != nil {
		t.Fatal(err)
	}
	// the top buffer's option: ... "local\0", page size, 1 CPU, CPU 0 at OFF, SIZE: SIZE made
	// one chunk short
	opt := bytes.Index(v7, []byte("\x00local\x00\x00\x10\x00\x00\x01\x00\x00\x00\x00\x00\x00\x00"))
	size := binary.LittleEndian.Uint64(v7[opt+27:])
	first := binary.LittleEndian.Uint32(v7[binary.LittleEndian.Uint64(v7[opt+19:])+4:])
	binary.LittleEndian.PutUint64(v7[opt+27:], size-uint64(first))
	for _, c := range []struct {
		name string
		b    []byte
		text string
	}{
		{"v6 CPUs overlapping", v6, "overlap"},
		{"v7 chunks past their CPU's data", v7, "runs past the CPU's data"},
	} {
		_, err := Read(bytes.NewReader(c.b), int64(len(c.b)))
		var fe *FormatError
		if !errors.Is(err, ErrCorrupt) || !errors.As(err, &fe) || fe.Offset <= 0 || !strings.Contains(err.Error(), c.text) {
			t.Errorf("%s: %v, want %v mentioning %q at an offset", c.name, err, ErrCorrupt, c.text)
		}
	}
}
