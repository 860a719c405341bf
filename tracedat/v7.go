package tracedat

import (
	"bytes"
	"compress/zlib"
	"encoding/binary"
	"fmt"
	"io"
	"unsafe"

	"github.com/klauspost/compress/zstd"
)

// Version 7 (trace-cmd 3.0+, the default of Debian's 3.1.6 record): after the page size, the
// compression ("name\0version\0": "none", "zstd", "zlib") and the offset of the first options
// section; then sections, each behind a header (id u16, flags u16 — 1: compressed —, the id of
// its description string u32, size u64), found through the options: HEADER_INFO, FTRACE_EVENTS,
// EVENT_FORMATS, KALLSYMS, PRINTK, CMDLINES hold the offset of their section, BUFFER describes a
// buffer's CPUs. A compressed metadata section is one block (compressed size u32, size u32,
// data); a compressed buffer's CPU data are chunks (count u32; each: compressed size u32,
// size u32, data). (trace-cmd.dat.v7.5.txt; trace-input.c handle_options, handle_section,
// init_cpu_zpage.)

// Option ids of version 7's sections.
const (
	optionHeaderInfo   = 16
	optionFtraceEvents = 17
	optionEventFormats = 18
	optionKallsyms     = 19
	optionPrintk       = 20
	optionCmdlines     = 21
	optionBufferText   = 22
)

const sectionCompressed = 1

// maxBlock bounds what one compressed block may decompress to (trace-cmd's are a few pages of
// data, or one metadata section: kallsyms, the largest, is a few MiB); a block is never
// decompressed past the size it claims, and that size is charged to the file's budget first.
const maxBlock = 256 << 20

// maxOptionSections bounds the chain of options sections (trace-cmd writes one, then one after
// each buffer's data).
const maxOptionSections = 1000

// noData is the pages of a CPU with none.
var noData = bytes.NewReader(nil)

type v7 struct {
	r        *reader
	compress string
	zstd     *zstd.Decoder
	zlib     io.ReadCloser
	sections map[uint16]int64 // option id → section offset
	buffer   []byte           // the top buffer's BUFFER option
	bufferAt int64            // the options section holding it
}

// blockAt is a compressed block of a CPU's data: its compressed bytes' offset and size, and
// the size it decompresses to.
type blockAt struct {
	off, zsize, size int64
}

func readV7(r *reader, f *File) (*File, error) {
	f.Version = 7
	v := &v7{r: r, sections: map[uint16]int64{}}
	if err := readInitial(r, f); err != nil {
		return nil, err
	}
	r.section = "compression"
	name, err := r.cstring(64)
	if err != nil {
		return nil, err
	}
	if _, err := r.cstring(64); err != nil {
		return nil, err
	}
	v.compress, f.compress = name, name
	if err := v.open(); err != nil {
		return nil, err
	}
	defer v.close()
	r.section = "options offset"
	next, err := r.u64()
	if err != nil {
		return nil, err
	}
	for seen := 0; next != 0; seen++ {
		if seen >= maxOptionSections {
			return nil, r.fail("more than %d options sections", maxOptionSections)
		}
		if next, err = v.options(f, int64(next)); err != nil {
			return nil, err
		}
	}
	for _, s := range []struct {
		id   uint16
		name string
		read func(*reader) error
	}{
		{optionHeaderInfo, "header info", func(s *reader) error { return readHeaderInfo(s, f) }},
		{optionFtraceEvents, "ftrace event formats", func(s *reader) error { return readFtrace(s, f) }},
		{optionEventFormats, "event formats", func(s *reader) error { return readEventFormats(s, f) }},
		{optionKallsyms, "kallsyms", func(s *reader) (err error) { f.Kallsyms, err = s.sized(4); return }},
		{optionPrintk, "printk formats", func(s *reader) (err error) { f.Printk, err = s.sized(4); return }},
		{optionCmdlines, "saved cmdlines", func(s *reader) (err error) { f.Cmdlines, err = s.sized(8); return }},
	} {
		off, ok := v.sections[s.id]
		if !ok {
			if s.id == optionHeaderInfo {
				return nil, &FormatError{Section: s.name, Offset: r.off, Reason: "no header info section", Err: ErrCorrupt}
			}
			continue
		}
		r.section = s.name
		sec, err := v.section(off, s.id, s.name)
		if err != nil {
			return nil, err
		}
		if err := s.read(sec); err != nil {
			return nil, err
		}
	}
	// every buffer is found and charged now, so that a file too large is refused here; the
	// instances' compressed data are decompressed by File.Buffer
	f.views = &views{all: map[string]*File{}}
	for _, d := range f.bufs {
		if d.latency {
			continue
		}
		g := f.instance(d.name)
		if err := v.layout(g, d.opt, d.off); err != nil {
			return nil, err
		}
		if err := f.addView(r, g); err != nil {
			return nil, err
		}
	}
	if v.buffer == nil {
		if len(f.bufs) == 0 {
			return nil, &FormatError{Section: "buffer", Offset: r.off, Reason: "no buffer (no BUFFER option)", Err: ErrCorrupt}
		}
		// only instances' buffers: the top level has no data (trace-cmd always writes its
		// BUFFER option, with no CPU, but a file need not)
		return f, nil
	}
	if err := v.layout(f, v.buffer, v.bufferAt); err != nil {
		return nil, err
	}
	if err := v.inflate(f); err != nil {
		return nil, err
	}
	return f, nil
}

// open makes the decompressor of the file's compression. zstd's decodes a block into memory
// the block's claimed size took (WithDecodeAllCapLimit): never a window the frame asks for.
func (v *v7) open() (err error) {
	switch v.compress {
	case "none", "zlib":
	case "zstd":
		v.zstd, err = zstd.NewReader(nil, zstd.WithDecoderConcurrency(1), zstd.WithDecoderMaxMemory(maxBlock),
			zstd.WithDecodeAllCapLimit(true))
	default:
		return v.r.unsupported("compression %q, which ftctl does not read (zstd, zlib or none)", v.compress)
	}
	return err
}

func (v *v7) close() {
	if v.zstd != nil {
		v.zstd.Close()
	}
	if v.zlib != nil {
		v.zlib.Close()
	}
}

// readInitial reads the endianness, long size and page size after the version.
func readInitial(r *reader, f *File) error {
	r.section = "endianness"
	b, err := r.bytes(2)
	if err != nil {
		return err
	}
	if b[0] != 0 {
		return r.unsupported("a big-endian file, which ftctl does not read")
	}
	f.LongSize = int(b[1])
	r.section = "page size"
	ps, err := r.u32()
	if err != nil {
		return err
	}
	if ps < 64 || ps > 1<<20 {
		return r.fail("page size %d", ps)
	}
	f.PageSize = int(ps)
	return nil
}

// header reads a section header at off: its id, flags and size.
func (v *v7) header(off int64) (id, flags uint16, size uint64, err error) {
	r := v.r
	if off < 0 || off > r.size {
		return 0, 0, 0, r.fail("a section at %d, past the end of the file", off)
	}
	r.off = off
	if id, err = r.u16(); err != nil {
		return
	}
	if flags, err = r.u16(); err != nil {
		return
	}
	if _, err = r.u32(); err != nil {
		return
	}
	size, err = r.u64()
	return
}

// section reads the section at off (of id want, name for messages), decompressed: a reader of
// its content. The section is handed out once, and its content charged before it is read.
func (v *v7) section(off int64, want uint16, name string) (*reader, error) {
	r := v.r
	id, flags, size, err := v.header(off)
	if err != nil {
		return nil, err
	}
	if id != want {
		return nil, r.fail("section id %d where the options point to section %d", id, want)
	}
	if size > uint64(r.size-r.off) {
		return nil, r.fail("section of %d bytes, past the end of the file (%d bytes left)", size, r.size-r.off)
	}
	if err := r.claim(off, 16+int64(size), part{name: name, cpu: -1}); err != nil {
		return nil, err
	}
	var data []byte
	if flags&sectionCompressed != 0 {
		data, err = v.block(int64(size), name)
	} else if err = r.charge(int64(size), fmt.Sprintf("the %s section's %d bytes", name, size)); err == nil {
		data, err = r.bytes(int64(size))
	}
	if err != nil {
		return nil, err
	}
	return r.sub(data, off, name), nil
}

// block reads the compressed block at the reader's offset, of at most limit bytes with its
// sizes, and decompresses it.
func (v *v7) block(limit int64, name string) ([]byte, error) {
	r := v.r
	zsize, err := r.u32()
	if err != nil {
		return nil, err
	}
	size, err := r.u32()
	if err != nil {
		return nil, err
	}
	if 8+int64(zsize) > limit {
		return nil, r.fail("a compressed block of %d bytes in a section of %d", zsize, limit)
	}
	if size > maxBlock {
		return nil, r.fail("a compressed block of %d bytes (at most %d)", size, maxBlock)
	}
	if err := r.charge(int64(size), fmt.Sprintf("the %s section's %d bytes decompressed", name, size)); err != nil {
		return nil, err
	}
	z, err := r.bytes(int64(zsize))
	if err != nil {
		return nil, err
	}
	return v.decompress(make([]byte, 0, size), z, int64(size))
}

// decompress appends z decompressed to dst, which has room for the size bytes it must
// decompress to: not one more.
func (v *v7) decompress(dst, z []byte, size int64) ([]byte, error) {
	r := v.r
	n := len(dst)
	if size > maxBlock || int64(cap(dst)-n) < size {
		return nil, r.fail("a compressed block of %d bytes (at most %d)", size, min(maxBlock, int64(cap(dst)-n)))
	}
	out := dst[n : n+int(size) : n+int(size)]
	got := 0
	var err error
	switch v.compress {
	case "zstd":
		var b []byte
		if b, err = v.zstd.DecodeAll(z, out[:0]); err == nil {
			got = copy(out, b) // b is out, unless the decoder had to move it
			if len(b) != len(out) {
				got = len(b)
			}
		}
	case "zlib":
		if v.zlib == nil {
			v.zlib, err = zlib.NewReader(bytes.NewReader(z))
		} else {
			err = v.zlib.(zlib.Resetter).Reset(bytes.NewReader(z), nil)
		}
		if err == nil {
			got, err = io.ReadFull(v.zlib, out)
			if err == io.ErrUnexpectedEOF || err == io.EOF {
				err = nil
			} else if err == nil {
				var one [1]byte
				if k, _ := v.zlib.Read(one[:]); k > 0 {
					got++
				}
			}
		}
	default:
		return nil, r.fail("a compressed section in a file that says it is not compressed")
	}
	if err != nil {
		return nil, r.fail("decompressing (%s): %v", v.compress, err)
	}
	if int64(got) != size {
		return nil, r.fail("a block of %d bytes decompressed to %d", size, got)
	}
	return dst[:n+int(size)], nil
}

// options reads the options section at off and returns the offset of the next (0: none).
func (v *v7) options(f *File, off int64) (uint64, error) {
	r := v.r
	r.section = "options"
	sec, err := v.section(off, OptionDone, "options")
	if err != nil {
		return 0, err
	}
	for {
		id, err := sec.u16()
		if err != nil {
			return 0, err
		}
		data, err := sec.sized(4)
		if err != nil {
			return 0, err
		}
		switch id {
		case OptionDone:
			if len(data) < 8 {
				return 0, sec.fail("the last option (DONE) has %d bytes, not 8", len(data))
			}
			return binary.LittleEndian.Uint64(data), nil
		case optionHeaderInfo, optionFtraceEvents, optionEventFormats, optionKallsyms, optionPrintk, optionCmdlines:
			if len(data) < 8 {
				return 0, sec.fail("option %d has %d bytes, not 8", id, len(data))
			}
			v.sections[id] = int64(binary.LittleEndian.Uint64(data))
		case OptionBuffer:
			// the top-level buffer has an empty name; an instance's is read by File.Buffer
			if len(data) > 8 && data[8] == 0 {
				v.buffer, v.bufferAt = data, off
			} else if len(data) > 8 {
				if f.bufs, err = grow(sec, f.bufs, bufferDesc{name: string(cString(data[8:])), opt: data, off: off}, "the buffers"); err != nil {
					return 0, err
				}
			}
		case optionBufferText:
			if len(data) > 8 && data[8] == 0 {
				return 0, sec.unsupported("a latency-tracer recording (text, no pages), which ftctl does not read")
			} else if len(data) > 8 {
				if f.bufs, err = grow(sec, f.bufs, bufferDesc{name: string(cString(data[8:])), latency: true}, "the buffers"); err != nil {
					return 0, err
				}
			}
		default:
			if f.Options, err = grow(sec, f.Options, Option{ID: id, Data: data}, "the options"); err != nil {
				return 0, err
			}
		}
	}
}

// layout reads a buffer's BUFFER option (offset u64, name, clock, page size u32, CPU count u32;
// per CPU: id u32, offset u64, size u64), found in the options section at at, into g: its
// CPUs' data, handed out and charged; compressed, the blocks of each, which inflate
// decompresses.
func (v *v7) layout(g *File, opt []byte, at int64) error {
	section := "buffer"
	if g.BufferName != "" {
		section = fmt.Sprintf("buffer %q", g.BufferName)
	}
	b := v.r.sub(opt, at, section+" option")
	off, err := b.u64()
	if err != nil {
		return err
	}
	if _, err := b.cstring(4096); err != nil { // the name
		return err
	}
	clock, err := b.cstring(64)
	if err != nil {
		return err
	}
	g.clock = clock
	ps, err := b.u32()
	if err != nil {
		return err
	}
	if ps < 64 || ps > 1<<20 {
		return b.fail("page size %d", ps)
	}
	g.PageSize = int(ps)
	n, err := b.u32()
	if err != nil {
		return err
	}
	if n > 1<<16 || int64(n)*20 > b.size-b.off {
		return b.fail("%d CPUs", n)
	}
	type cpuData struct{ id, off, size uint64 }
	list, err := makeCharged[cpuData](b, uint64(n), 20, "CPUs")
	if err != nil {
		return err
	}
	maxCPU := -1
	for range n {
		id, err := b.u32()
		if err != nil {
			return err
		}
		o, err := b.u64()
		if err != nil {
			return err
		}
		s, err := b.u64()
		if err != nil {
			return err
		}
		if id >= 1<<16 { // the CPU table is as large as the highest id
			return b.fail("CPU %d", id)
		}
		list = append(list, cpuData{uint64(id), o, s})
		maxCPU = max(maxCPU, int(id))
	}
	r := v.r
	r.section = section
	_, flags, _, err := v.header(int64(off))
	if err != nil {
		return err
	}
	compressed := flags&sectionCompressed != 0
	// the tables: each CPU's data, and compressed, its reader and its blocks
	perCPU := unsafe.Sizeof(CPUData{})
	if compressed {
		perCPU += unsafe.Sizeof(io.ReaderAt(nil)) + unsafe.Sizeof([]blockAt(nil))
	}
	if err := r.charge(int64(maxCPU+1)*int64(perCPU), fmt.Sprintf("a table of %d CPUs", maxCPU+1)); err != nil {
		return err
	}
	g.CPUs = maxCPU + 1
	g.CPUData = make([]CPUData, g.CPUs)
	if compressed {
		g.chunks = make([][]blockAt, g.CPUs)
	}
	for _, c := range list {
		if c.size > 0 && (c.off > uint64(r.size) || c.size > uint64(r.size)-c.off) {
			return r.fail("CPU %d's data (%d bytes at %d) runs past the end of the file (%d bytes): the file was cut short", c.id, c.size, c.off, r.size)
		}
		if g.CPUData[c.id].Size != 0 || (compressed && g.chunks[c.id] != nil) {
			return r.fail("CPU %d's data given twice", c.id)
		}
		if c.size == 0 {
			continue
		}
		r.section = fmt.Sprintf("%s CPU %d's data", section, c.id)
		if err := r.claim(int64(c.off), int64(c.size), part{name: g.BufferName, cpu: int(c.id)}); err != nil {
			return err
		}
		if !compressed {
			g.CPUData[c.id] = CPUData{Offset: int64(c.off), Size: int64(c.size)}
			continue
		}
		blocks, total, err := v.blocks(int64(c.off), int64(c.size))
		if err != nil {
			return err
		}
		if err := r.charge(total+int64(unsafe.Sizeof(bytes.Reader{})), fmt.Sprintf("CPU %d's data decompressed (%d bytes)", c.id, total)); err != nil {
			return err
		}
		g.chunks[c.id] = blocks
		g.CPUData[c.id] = CPUData{Size: total}
	}
	return nil
}

// blocks finds the compressed blocks of a CPU's data at off (chunk count u32; each chunk:
// compressed size u32, size u32, data), size bytes of chunks, and the size they decompress to.
// trace-cmd's size counts the chunks, not the count before them (6.12's tp.v7zstd.dat: CPU 0's
// 8450 bytes are one chunk of 8442 after the count); ftctl's fixtures count both.
func (v *v7) blocks(off, size int64) ([]blockAt, int64, error) {
	r := v.r
	r.off = off
	end := min(off+4+size, r.size)
	n, err := r.u32()
	if err != nil {
		return nil, 0, err
	}
	if int64(n) > (end-r.off)/8 {
		return nil, 0, r.fail("%d chunks in %d bytes", n, end-r.off)
	}
	blocks := make([]blockAt, 0, n)
	if err := r.charge(int64(n)*int64(unsafe.Sizeof(blockAt{})), fmt.Sprintf("%d chunks", n)); err != nil {
		return nil, 0, err
	}
	var total int64
	for i := range n {
		zsize, err := r.u32()
		if err != nil {
			return nil, 0, err
		}
		bsize, err := r.u32()
		if err != nil {
			return nil, 0, err
		}
		if bsize > maxBlock {
			return nil, 0, r.fail("chunk %d: a compressed block of %d bytes (at most %d)", i, bsize, maxBlock)
		}
		if int64(zsize) > end-r.off {
			return nil, 0, r.fail("chunk %d (%d bytes) runs past the CPU's data (%d bytes at %d)", i, zsize, size, off)
		}
		blocks = append(blocks, blockAt{r.off, int64(zsize), int64(bsize)})
		r.off += int64(zsize)
		total += int64(bsize)
	}
	return blocks, total, nil
}

// inflate decompresses the blocks layout found of each of g's CPUs: the memory they take was
// charged then.
func (v *v7) inflate(g *File) error {
	if g.chunks == nil {
		return nil
	}
	r := v.r
	cpuR := make([]io.ReaderAt, g.CPUs)
	for cpu, blocks := range g.chunks {
		cpuR[cpu] = noData
		if len(blocks) == 0 {
			continue
		}
		r.section = fmt.Sprintf("CPU %d's data", cpu)
		if g.BufferName != "" {
			r.section = fmt.Sprintf("buffer %q CPU %d's data", g.BufferName, cpu)
		}
		out := make([]byte, 0, g.CPUData[cpu].Size)
		for _, b := range blocks {
			r.off = b.off
			z, err := r.bytes(b.zsize)
			if err != nil {
				return err
			}
			if out, err = v.decompress(out, z, b.size); err != nil {
				return err
			}
		}
		cpuR[cpu] = bytes.NewReader(out)
	}
	g.cpuR, g.chunks = cpuR, nil
	return nil
}

func readHeaderInfo(r *reader, f *File) (err error) {
	if err = r.expect("header_page\x00"); err != nil {
		return err
	}
	if f.HeaderPage, err = r.sized(8); err != nil {
		return err
	}
	if err = r.expect("header_event\x00"); err != nil {
		return err
	}
	f.HeaderEvent, err = r.sized(8)
	return err
}

func readFtrace(r *reader, f *File) error {
	n, err := r.u32()
	if err != nil {
		return err
	}
	if f.Ftrace, err = makeCharged[[]byte](r, uint64(n), 8, "ftrace formats"); err != nil {
		return err
	}
	for range n {
		fm, err := r.sized(8)
		if err != nil {
			return err
		}
		f.Ftrace = append(f.Ftrace, fm)
	}
	return nil
}

// readEventFormats reads the event systems: a count u32; each, its name, a count u32 and its
// formats (size u64, text).
func readEventFormats(r *reader, f *File) error {
	n, err := r.u32()
	if err != nil {
		return err
	}
	if f.Systems, err = makeCharged[System](r, uint64(n), 5, "event systems"); err != nil {
		return err
	}
	for range n {
		var s System
		if s.Name, err = r.cstring(4096); err != nil {
			return err
		}
		m, err := r.u32()
		if err != nil {
			return err
		}
		if m > 0 {
			if s.Formats, err = makeCharged[[]byte](r, uint64(m), 8, fmt.Sprintf("formats of system %q", s.Name)); err != nil {
				return err
			}
		}
		for range m {
			fm, err := r.sized(8)
			if err != nil {
				return err
			}
			s.Formats = append(s.Formats, fm)
		}
		f.Systems = append(f.Systems, s)
	}
	return nil
}

func cString(b []byte) []byte {
	if i := bytes.IndexByte(b, 0); i >= 0 {
		return b[:i]
	}
	return b
}
