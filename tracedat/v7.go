package tracedat

import (
	"bytes"
	"compress/zlib"
	"encoding/binary"
	"fmt"
	"io"

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
// decompressed past the size it claims.
const maxBlock = 256 << 20

type v7 struct {
	r        *reader
	compress string
	zstd     *zstd.Decoder
	sections map[uint16]int64 // option id → section offset
	buffer   []byte           // the top buffer's BUFFER option
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
		if seen > 1000 {
			return nil, r.fail("more than 1000 options sections")
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
		sec, err := v.section(off, s.id)
		if err != nil {
			return nil, err
		}
		sec.section = s.name
		if err := s.read(sec); err != nil {
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
	if err := v.cpus(f, v.buffer); err != nil {
		return nil, err
	}
	return f, nil
}

// open makes the decompressor of the file's compression.
func (v *v7) open() (err error) {
	switch v.compress {
	case "none", "zlib":
	case "zstd":
		v.zstd, err = zstd.NewReader(nil, zstd.WithDecoderConcurrency(1), zstd.WithDecoderMaxMemory(1<<30))
	default:
		return v.r.unsupported("compression %q, which ftctl does not read (zstd, zlib or none)", v.compress)
	}
	return err
}

func (v *v7) close() {
	if v.zstd != nil {
		v.zstd.Close()
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

// section reads the section at off (of id want), decompressed: a reader of its content.
func (v *v7) section(off int64, want uint16) (*reader, error) {
	id, flags, size, err := v.header(off)
	if err != nil {
		return nil, err
	}
	if id != want {
		return nil, v.r.fail("section id %d where the options point to section %d", id, want)
	}
	if size > uint64(v.r.size) {
		return nil, v.r.fail("section of %d bytes, past the end of the file", size)
	}
	var data []byte
	if flags&sectionCompressed != 0 {
		data, err = v.block()
	} else {
		data, err = v.r.bytes(int64(size))
	}
	if err != nil {
		return nil, err
	}
	return &reader{r: bytes.NewReader(data), size: int64(len(data))}, nil
}

// block reads one compressed block at the reader's offset and decompresses it.
func (v *v7) block() ([]byte, error) {
	r := v.r
	zsize, err := r.u32()
	if err != nil {
		return nil, err
	}
	size, err := r.u32()
	if err != nil {
		return nil, err
	}
	z, err := r.bytes(int64(zsize))
	if err != nil {
		return nil, err
	}
	return v.decompress(z, int64(size))
}

func (v *v7) decompress(z []byte, size int64) ([]byte, error) {
	r := v.r
	if size > maxBlock {
		return nil, r.fail("a compressed block of %d bytes (at most %d)", size, maxBlock)
	}
	var out []byte
	var err error
	switch v.compress {
	case "zstd":
		if err = v.zstd.Reset(bytes.NewReader(z)); err == nil {
			out, err = io.ReadAll(io.LimitReader(v.zstd, size+1))
		}
	case "zlib":
		var zr io.ReadCloser
		if zr, err = zlib.NewReader(bytes.NewReader(z)); err == nil {
			out, err = io.ReadAll(io.LimitReader(zr, size+1))
			zr.Close()
		}
	default:
		return nil, r.fail("a compressed section in a file that says it is not compressed")
	}
	if err != nil {
		return nil, r.fail("decompressing (%s): %v", v.compress, err)
	}
	if int64(len(out)) != size {
		return nil, r.fail("a block of %d bytes decompressed to %d", size, len(out))
	}
	return out, nil
}

// options reads the options section at off and returns the offset of the next (0: none).
func (v *v7) options(f *File, off int64) (uint64, error) {
	r := v.r
	r.section = "options"
	sec, err := v.section(off, OptionDone)
	if err != nil {
		return 0, err
	}
	sec.section = "options"
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
				v.buffer = data
			} else if len(data) > 8 {
				f.bufs = append(f.bufs, bufferDesc{name: string(cString(data[8:])), opt: data})
			}
		case optionBufferText:
			if len(data) > 8 && data[8] == 0 {
				return 0, sec.unsupported("a latency-tracer recording (text, no pages), which ftctl does not read")
			} else if len(data) > 8 {
				f.bufs = append(f.bufs, bufferDesc{name: string(cString(data[8:])), latency: true})
			}
		default:
			f.Options = append(f.Options, Option{ID: id, Data: data})
		}
	}
}

// cpus reads a buffer's BUFFER option (offset u64, name, clock, page size u32, CPU count u32;
// per CPU: id u32, offset u64, size u64) into f, and its CPU data.
func (v *v7) cpus(f *File, opt []byte) error {
	b := &reader{r: bytes.NewReader(opt), size: int64(len(opt)), section: "buffer option"}
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
	f.clock = clock
	ps, err := b.u32()
	if err != nil {
		return err
	}
	if ps < 64 || ps > 1<<20 {
		return b.fail("page size %d", ps)
	}
	f.PageSize = int(ps)
	n, err := b.u32()
	if err != nil {
		return err
	}
	if n > 1<<16 || int64(n)*20 > b.size {
		return b.fail("%d CPUs", n)
	}
	type cpuData struct{ id, off, size uint64 }
	var list []cpuData
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
	v.r.section = "buffer"
	if f.BufferName != "" {
		v.r.section = fmt.Sprintf("buffer %q", f.BufferName)
	}
	_, flags, _, err := v.header(int64(off))
	if err != nil {
		return err
	}
	f.CPUs = maxCPU + 1
	f.CPUData = make([]CPUData, f.CPUs)
	compressed := flags&sectionCompressed != 0
	if compressed {
		f.cpuR = make([]io.ReaderAt, f.CPUs)
		for i := range f.cpuR {
			f.cpuR[i] = bytes.NewReader(nil)
		}
	}
	for _, c := range list {
		if c.size > 0 && (c.off > uint64(v.r.size) || c.size > uint64(v.r.size)-c.off) {
			return v.r.fail("CPU %d's data (%d bytes at %d) runs past the end of the file (%d bytes): the file was cut short", c.id, c.size, c.off, v.r.size)
		}
		if f.CPUData[c.id].Size != 0 {
			return v.r.fail("CPU %d's data given twice", c.id)
		}
		if !compressed {
			f.CPUData[c.id] = CPUData{Offset: int64(c.off), Size: int64(c.size)}
			continue
		}
		if c.size == 0 {
			continue
		}
		v.r.section = fmt.Sprintf("CPU %d's data", c.id)
		data, err := v.chunks(int64(c.off))
		if err != nil {
			return err
		}
		f.cpuR[c.id] = bytes.NewReader(data)
		f.CPUData[c.id] = CPUData{Size: int64(len(data))}
	}
	return nil
}

// chunks decompresses a CPU's chunks at off.
func (v *v7) chunks(off int64) ([]byte, error) {
	r := v.r
	r.off = off
	n, err := r.u32()
	if err != nil {
		return nil, err
	}
	var out []byte
	for range n {
		b, err := v.block()
		if err != nil {
			return nil, err
		}
		out = append(out, b...)
	}
	return out, nil
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
	for range n {
		fm, err := r.sized(8)
		if err != nil {
			return err
		}
		f.Ftrace = append(f.Ftrace, fm)
	}
	return nil
}

func readEventFormats(r *reader, f *File) error {
	n, err := r.u32()
	if err != nil {
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
