// Package tracedat reads and writes trace-cmd's trace.dat files (file version 6, the one
// Debian's trace-cmd 3.1.6 writes by default and reads without a word), so that what ftctl
// records is read by trace-cmd report and KernelShark, and what trace-cmd records is read by
// ftctl report.
//
// It only moves bytes: the sections are the kernel's files as they were read (header_page,
// header_event, every event's format, /proc/kallsyms, printk_formats, saved_cmdlines) and the
// CPUs' data are trace_pipe_raw pages as the kernel gave them. tracefs/ reads the kernel;
// stream/ decodes the pages. The layout follows trace-cmd's Documentation/trace-cmd/
// trace-cmd.dat.v6.5.txt and lib/trace-cmd/trace-input.c (read, not copied).
//
// Version 7 (sections; zstd or zlib compression) is read too (v7.go); ftctl writes version 6.
package tracedat

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"strconv"
	"unsafe"
)

// Magic opens every trace.dat: 0x17 0x08 0x44 and "tracing".
var Magic = []byte{0x17, 0x08, 0x44, 't', 'r', 'a', 'c', 'i', 'n', 'g'}

// Option ids (trace-cmd-private.h, enum tracecmd_file_options), those ftctl writes or reads.
const (
	OptionDone       = 0
	OptionDate       = 1
	OptionCPUStat    = 2
	OptionBuffer     = 3
	OptionTraceClock = 4
	OptionUname      = 5
	OptionHook       = 6
	OptionOffset     = 7
	OptionCPUCount   = 8
	OptionVersion    = 9
	OptionProcMaps   = 10 // "PID NMAPS NAME\n" then NMAPS "START END LIB\n" lines (hex), NUL-terminated
)

// Errors of Read; a *FormatError wraps one of them.
var (
	// ErrNotTraceDat: the file does not start with trace.dat's magic.
	ErrNotTraceDat = errors.New("not a trace.dat file")
	// ErrVersion: a file version ftctl does not read (7: sections and compression).
	ErrVersion = errors.New("file version not read by ftctl")
	// ErrUnsupported: a valid file holding what ftctl does not read (big-endian, a latency
	// recording, only instances' buffers, an unknown compression).
	ErrUnsupported = errors.New("trace.dat content not read by ftctl")
	// ErrCorrupt: a section is cut short, a size runs past the end of the file, a marker
	// is missing.
	ErrCorrupt = errors.New("corrupt trace.dat")
	// ErrNoBuffer: File.Buffer was asked for a buffer the file does not hold.
	ErrNoBuffer = errors.New("no such buffer in the file")
	// ErrTooLarge: reading the file would take more memory than its size allows (MaxMemory):
	// its sections and buffers decompress, or its counts make structures, past that.
	ErrTooLarge = errors.New("trace.dat too large to read")
)

// FormatError says where in the file and in which section reading failed.
type FormatError struct {
	Section string
	Offset  int64
	Reason  string
	Err     error // ErrNotTraceDat, ErrVersion, ErrUnsupported or ErrCorrupt
}

func (e *FormatError) Error() string {
	return fmt.Sprintf("%s at byte %d (%s): %s", e.Err, e.Offset, e.Section, e.Reason)
}

func (e *FormatError) Unwrap() error { return e.Err }

// Option is one entry of the options section: its id and data as written.
type Option struct {
	ID   uint16
	Data []byte
}

// System is an event system's formats (events/SYSTEM/*/format), each as the kernel wrote it.
type System struct {
	Name    string
	Formats [][]byte
}

// Header is everything before the CPUs' data.
type Header struct {
	PageSize    int    // the ring buffer's page (sub-buffer) size
	LongSize    int    // userspace's long: 8 on x86-64
	HeaderPage  []byte // events/header_page
	HeaderEvent []byte // events/header_event
	Ftrace      [][]byte
	Systems     []System
	Kallsyms    []byte
	Printk      []byte // printk_formats
	Cmdlines    []byte // saved_cmdlines
	CPUs        int
	Options     []Option
}

// Clock is the trace clock the TRACECLOCK option names ("local" when there is none, as
// trace-cmd assumes).
func (h *Header) Clock() string {
	for _, o := range h.Options {
		if o.ID != OptionTraceClock {
			continue
		}
		text := string(bytes.TrimRight(o.Data, "\x00\n"))
		if i := bytes.IndexByte(o.Data, '['); i >= 0 {
			if j := bytes.IndexByte(o.Data[i:], ']'); j > 0 {
				return string(o.Data[i+1 : i+j])
			}
		}
		if f := bytes.Fields([]byte(text)); len(f) > 0 {
			return string(f[0])
		}
	}
	return "local"
}

// Clock is the trace clock of the recording: the TRACECLOCK option's choice, else (version 7)
// the top buffer's clock, else "local", as trace-cmd assumes. An instance's buffer read from a
// version 7 file has its own (its BUFFER option names it); version 6 records only the file's.
func (f *File) Clock() string {
	if f.clock != "" && (f.BufferName != "" || !f.hasOption(OptionTraceClock)) {
		return f.clock
	}
	return f.Header.Clock()
}

// Buffers names the instances' buffers the file holds (trace-cmd record -B NAME), in the order
// of the file; File.Buffer reads one. File's own CPU data are the top level's.
func (f *File) Buffers() []string {
	var out []string
	for _, b := range f.bufs {
		out = append(out, b.name)
	}
	return out
}

// bufferDesc is where an instance's buffer is: version 6, its flyrecord (a BUFFER option's
// offset) and CPU count; version 7, its BUFFER option and the options section holding it.
type bufferDesc struct {
	name    string
	latency bool  // version 7's BUFFER_TEXT: a latency tracer's text, no pages
	off     int64 // version 6: the flyrecord's; version 7: the options section's
	cpus    int
	opt     []byte
}

// Buffer is the file as one of its buffers holds it ("" the top level, f itself; else an
// instance's, as Buffers names it): its CPUs' data, page size and clock, with the file's header
// (the formats, kallsyms and cmdlines are the same for every buffer). Read found and checked
// every buffer; version 7's compressed data are decompressed here, one buffer at a time, once:
// every call for a buffer returns the same File.
func (f *File) Buffer(name string) (*File, error) {
	if name == f.BufferName {
		return f, nil
	}
	if name == "" && f.top != nil {
		return f.top, nil
	}
	for _, d := range f.bufs {
		if d.name == name && d.latency {
			r := &reader{r: f.r, size: f.size, section: fmt.Sprintf("buffer %q", name)}
			return nil, r.unsupported("a latency-tracer recording (text, no pages), which ftctl does not read")
		}
	}
	var g *File
	if f.views != nil {
		f.views.mu.Lock()
		defer f.views.mu.Unlock()
		g = f.views.all[name]
	}
	if g == nil {
		names := "only the top level's"
		if len(f.bufs) > 0 {
			names = fmt.Sprintf("the top level's and %q", f.Buffers())
		}
		return nil, fmt.Errorf("%w: %q (it holds %s)", ErrNoBuffer, name, names)
	}
	if g.chunks != nil {
		r := &reader{r: f.r, size: f.size, section: fmt.Sprintf("buffer %q", name)}
		v := &v7{r: r, compress: f.compress}
		if err := v.open(); err != nil {
			return nil, err
		}
		defer v.close()
		if err := v.inflate(g); err != nil {
			return nil, err
		}
	}
	return g, nil
}

func (f *File) hasOption(id uint16) bool {
	for _, o := range f.Options {
		if o.ID == id {
			return true
		}
	}
	return false
}

// CPUData is where one CPU's pages are in the file.
type CPUData struct {
	Offset, Size int64
}

// File is a trace.dat that was read: its header, and where each CPU's pages are (the top
// level's buffer, or with Buffer an instance's).
type File struct {
	Header
	Version int
	CPUData []CPUData
	// BufferName is the buffer whose CPU data these are: "" for the top level's.
	BufferName string
	r          io.ReaderAt
	size       int64
	clock      string        // version 7: the buffer's clock
	compress   string        // version 7: the compression
	bufs       []bufferDesc  // the instances' buffers
	cpuR       []io.ReaderAt // WithCPUs, and version 7's compressed data: each CPU's pages in a reader of its own
	chunks     [][]blockAt   // version 7: each CPU's compressed blocks, until File.Buffer decompresses them
	views      *views        // the instances' buffers, read
	top        *File         // an instance's buffer: the file (its top level's buffer)
}

// WithCPUs is the file h (a header, whatever CPU data it has) with each CPU's pages read from a
// reader of its own, of the size given: a recording ftctl did not get to assemble (cpuN.raw
// files beside header.dat).
func WithCPUs(h *File, cpus []io.ReaderAt, sizes []int64) *File {
	f := *h
	f.CPUs = len(cpus)
	f.cpuR = cpus
	f.CPUData, f.chunks = nil, nil
	for _, n := range sizes {
		f.CPUData = append(f.CPUData, CPUData{Size: n})
	}
	return &f
}

// Pages gives CPU cpu's data: whole pages of Header.PageSize bytes (a last partial page, in a
// file cut short, is left out by the caller).
func (f *File) Pages(cpu int) *io.SectionReader {
	d := f.CPUData[cpu]
	if f.cpuR != nil {
		return io.NewSectionReader(f.cpuR[cpu], 0, d.Size)
	}
	return io.NewSectionReader(f.r, d.Offset, d.Size)
}

// reader reads the little-endian fields of a file, or of a section in memory, each bounded by
// the size, so that a corrupt size never makes it allocate more than the file holds.
type reader struct {
	r    io.ReaderAt
	data []byte // a section in memory (r reads it too): its fields are slices of it, not copies
	size int64
	off  int64
	// section names what is being read; in memory, at is where the section is in the file
	section string
	at      int64
	b       *budget // what reading the file may still take (nil: a BUFFER option's fields)
	scratch [8]byte
}

// sub is a reader of data, the content of the section at off of the file r reads.
func (r *reader) sub(data []byte, off int64, section string) *reader {
	return &reader{r: bytes.NewReader(data), data: data, size: int64(len(data)), section: section, at: off, b: r.b}
}

// errorf is a FormatError of sentinel err at the reader's offset: the file's, or in a
// section in memory, the section's in the file and the byte's in the section.
func (r *reader) errorf(err error, reason string, args ...any) error {
	fe := &FormatError{Section: r.section, Offset: r.off, Reason: fmt.Sprintf(reason, args...), Err: err}
	if r.data != nil {
		fe.Offset = r.at
		fe.Reason += fmt.Sprintf(" (at byte %d of the section's %d)", r.off, r.size)
	}
	return fe
}

func (r *reader) unsupported(reason string, args ...any) error {
	return r.errorf(ErrUnsupported, reason, args...)
}

func (r *reader) fail(reason string, args ...any) error {
	return r.errorf(ErrCorrupt, reason, args...)
}

// bytes reads n bytes: in memory, a slice of the section (capped, so that appending to it
// copies); from the file, a copy, which the caller charges.
func (r *reader) bytes(n int64) ([]byte, error) {
	if n < 0 || n > r.size-r.off {
		return nil, r.fail("%d bytes wanted, %d left in the %s", n, max(0, r.size-r.off), r.where())
	}
	if r.data != nil {
		b := r.data[r.off : r.off+n : r.off+n]
		r.off += n
		return b, nil
	}
	b := make([]byte, n)
	if err := r.readAt(b); err != nil {
		return nil, err
	}
	r.off += n
	return b, nil
}

func (r *reader) where() string {
	if r.data != nil {
		return "section"
	}
	return "file"
}

func (r *reader) readAt(b []byte) error {
	if n, err := r.r.ReadAt(b, r.off); n < len(b) {
		if err == nil || err == io.EOF {
			return r.fail("%d bytes read of %d: the file is shorter than it was said to be (%d bytes)", n, len(b), r.size)
		}
		return r.fail("reading: %v", err)
	}
	return nil
}

// fixed reads a field of n (at most 8) bytes, into the reader's scratch space.
func (r *reader) fixed(n int64) ([]byte, error) {
	if n > r.size-r.off {
		return nil, r.fail("%d bytes wanted, %d left in the %s", n, max(0, r.size-r.off), r.where())
	}
	b := r.scratch[:n]
	if r.data != nil {
		b = r.data[r.off : r.off+n]
	} else if err := r.readAt(b); err != nil {
		return nil, err
	}
	r.off += n
	return b, nil
}

func (r *reader) u16() (uint16, error) {
	b, err := r.fixed(2)
	if err != nil {
		return 0, err
	}
	return binary.LittleEndian.Uint16(b), nil
}

func (r *reader) u32() (uint32, error) {
	b, err := r.fixed(4)
	if err != nil {
		return 0, err
	}
	return binary.LittleEndian.Uint32(b), nil
}

func (r *reader) u64() (uint64, error) {
	b, err := r.fixed(8)
	if err != nil {
		return 0, err
	}
	return binary.LittleEndian.Uint64(b), nil
}

// sized reads a size of 4 or 8 bytes and then that many bytes.
func (r *reader) sized(width int) ([]byte, error) {
	var n uint64
	var err error
	if width == 4 {
		var v uint32
		v, err = r.u32()
		n = uint64(v)
	} else {
		n, err = r.u64()
	}
	if err != nil {
		return nil, err
	}
	if n > uint64(r.size-r.off) {
		return nil, r.fail("size %d is past the end of the %s (%d bytes left)", n, r.where(), r.size-r.off)
	}
	if r.data == nil {
		if err := r.charge(int64(n), fmt.Sprintf("%d bytes", n)); err != nil {
			return nil, err
		}
	}
	return r.bytes(int64(n))
}

// cstring reads a NUL-terminated string of at most limit bytes.
func (r *reader) cstring(limit int) (string, error) {
	start := r.off
	if r.data != nil {
		end := min(r.size, r.off+int64(limit)+1)
		i := bytes.IndexByte(r.data[r.off:end], 0)
		if i < 0 {
			if end == r.size && end-r.off <= int64(limit) {
				r.off = r.size
				return "", r.fail("a string runs past the end of the section")
			}
			return "", r.fail("a string longer than %d bytes", limit)
		}
		if err := r.charge(int64(i), "a string"); err != nil {
			return "", err
		}
		r.off += int64(i) + 1
		return string(r.data[start : start+int64(i)]), nil
	}
	// from the file: in pieces growing from 64 bytes, so that a short string costs a read
	var out []byte
	for n := int64(64); ; n = min(2*n, int64(limit)+1) {
		want := min(n, r.size-r.off)
		if want <= 0 {
			return "", r.fail("a string runs past the end of the file")
		}
		buf := make([]byte, want)
		if err := r.readAt(buf); err != nil {
			return "", err
		}
		if i := bytes.IndexByte(buf, 0); i >= 0 && len(out)+i <= limit {
			if err := r.charge(int64(len(out)+i), "a string"); err != nil {
				return "", err
			}
			out = append(out, buf[:i]...)
			r.off += int64(i) + 1
			return string(out), nil
		}
		out = append(out, buf...)
		r.off += want
		if len(out) > limit {
			r.off = start
			return "", r.fail("a string longer than %d bytes", limit)
		}
	}
}

func (r *reader) expect(marker string) error {
	b, err := r.bytes(int64(len(marker)))
	if err != nil {
		return err
	}
	if string(b) != marker {
		return r.fail("%q expected, found %q", marker, b)
	}
	return nil
}

// Read reads a trace.dat of the given size: its header, where each CPU's data is (the data is
// read later, through File.Pages), and where its instances' buffers are. It reads the file in
// at most MaxMemory(size) of memory, File.Buffer's decompression included, or refuses it
// (ErrTooLarge), and refuses a file whose sections or CPU data overlap or are given twice
// (ErrCorrupt): every error is a *FormatError naming the section and the offset.
func Read(ra io.ReaderAt, size int64) (*File, error) {
	r := &reader{r: ra, size: size, section: "magic", b: newBudget(size)}
	b, err := r.bytes(int64(len(Magic)))
	if err != nil || !bytes.Equal(b, Magic) {
		return nil, &FormatError{Section: "magic", Reason: "the first 10 bytes are not 0x17 0x08 0x44 \"tracing\"", Err: ErrNotTraceDat}
	}
	r.section = "version"
	v, err := r.cstring(16)
	if err != nil {
		return nil, err
	}
	f := &File{r: ra, size: size}
	switch v {
	case "6":
		f.Version = 6
	case "7":
		return readV7(r, f)
	default:
		return nil, &FormatError{Section: "version", Offset: r.off, Reason: fmt.Sprintf("version %q (ftctl reads versions 6 and 7)", v), Err: ErrVersion}
	}
	if err := readInitial(r, f); err != nil {
		return nil, err
	}
	r.section = "header_page"
	if err := readHeaderInfo(r, f); err != nil {
		return nil, err
	}
	r.section = "ftrace event formats"
	if err := readFtrace(r, f); err != nil {
		return nil, err
	}
	r.section = "event formats"
	if err := readEventFormats(r, f); err != nil {
		return nil, err
	}
	r.section = "kallsyms"
	if f.Kallsyms, err = r.sized(4); err != nil {
		return nil, err
	}
	r.section = "printk formats"
	if f.Printk, err = r.sized(4); err != nil {
		return nil, err
	}
	r.section = "saved cmdlines"
	if f.Cmdlines, err = r.sized(8); err != nil {
		return nil, err
	}
	r.section = "CPU count"
	cpus, err := r.u32()
	if err != nil {
		return nil, err
	}
	if int64(cpus) > size/16 || cpus > 1<<16 {
		return nil, r.fail("%d CPUs", cpus)
	}
	f.CPUs = int(cpus)
	r.section = "options"
	kind, err := r.bytes(10)
	if err != nil {
		return nil, err
	}
	if string(kind) == "options  \x00" {
		for {
			id, err := r.u16()
			if err != nil {
				return nil, err
			}
			if id == OptionDone { // version 6: no size after the last option
				break
			}
			data, err := r.sized(4)
			if err != nil {
				return nil, err
			}
			if f.Options, err = grow(r, f.Options, Option{ID: id, Data: data}, "the options"); err != nil {
				return nil, err
			}
		}
		if kind, err = r.bytes(10); err != nil {
			return nil, err
		}
	}
	r.section = "CPU data"
	if err := flyrecord(r, kind); err != nil {
		return nil, err
	}
	if err := readCPUData(r, f, f.CPUs); err != nil {
		return nil, err
	}
	if f.bufs, err = buffersV6(r, f.Options, f.CPUs); err != nil {
		return nil, err
	}
	f.views = &views{all: map[string]*File{}}
	for _, d := range f.bufs {
		g := f.instance(d.name)
		r.section = fmt.Sprintf("buffer %q", d.name)
		if d.off <= 0 || d.off >= f.size {
			return nil, r.fail("its flyrecord at %d, outside the file (%d bytes)", d.off, f.size)
		}
		r.off = d.off
		if err := r.claim(d.off, min(10+16*int64(d.cpus), size-d.off), part{name: "flyrecord of buffer " + strconv.Quote(d.name), cpu: -1}); err != nil {
			return nil, err
		}
		kind, err := r.bytes(10)
		if err != nil {
			return nil, err
		}
		if err := flyrecord(r, kind); err != nil {
			return nil, err
		}
		if err := readCPUData(r, g, d.cpus); err != nil {
			return nil, err
		}
		if err := f.addView(r, g); err != nil {
			return nil, err
		}
	}
	return f, nil
}

// instance is a copy of f, the top level's buffer, for the instance's buffer name: no CPU yet.
func (f *File) instance(name string) *File {
	g := *f
	g.BufferName, g.clock, g.CPUs, g.CPUData, g.cpuR, g.chunks, g.top = name, "", 0, nil, nil, nil, f
	return &g
}

// addView keeps g, an instance's buffer, for File.Buffer; a name given twice is refused.
func (f *File) addView(r *reader, g *File) error {
	if _, ok := f.views.all[g.BufferName]; ok {
		return r.fail("a second buffer named %q", g.BufferName)
	}
	if err := r.charge(partCost+int64(unsafe.Sizeof(*g)), "the buffer "+strconv.Quote(g.BufferName)); err != nil {
		return err
	}
	f.views.all[g.BufferName] = g
	return nil
}

// flyrecord checks the 10 bytes before a version 6 buffer's CPU data: "flyrecord" (pages), not
// "latency" (a latency tracer's text).
func flyrecord(r *reader, kind []byte) error {
	switch string(kind) {
	case "flyrecord\x00":
		return nil
	case "latency  \x00":
		return r.unsupported("a latency-tracer recording (text, no pages), which ftctl does not read")
	}
	return r.fail("\"flyrecord\" expected, found %q", kind)
}

// readCPUData reads a version 6 flyrecord's offset and size of each of cpus CPUs into f, each
// CPU's data handed out once.
func readCPUData(r *reader, f *File, cpus int) error {
	if int64(cpus) > (r.size-r.off)/16 || cpus > 1<<16 {
		return r.fail("%d CPUs", cpus)
	}
	if err := r.charge(int64(cpus)*int64(unsafe.Sizeof(CPUData{})), fmt.Sprintf("a table of %d CPUs", cpus)); err != nil {
		return err
	}
	f.CPUs = cpus
	f.CPUData = make([]CPUData, 0, cpus)
	for cpu := range cpus {
		off, err := r.u64()
		if err != nil {
			return err
		}
		sz, err := r.u64()
		if err != nil {
			return err
		}
		if sz > 0 && (off > uint64(r.size) || sz > uint64(r.size)-off) {
			return r.fail("CPU %d's data (%d bytes at %d) runs past the end of the file (%d bytes): the file was cut short", cpu, sz, off, r.size)
		}
		if sz > 0 {
			if err := r.claim(int64(off), int64(sz), part{name: f.BufferName, cpu: cpu}); err != nil {
				return err
			}
		}
		f.CPUData = append(f.CPUData, CPUData{Offset: int64(off), Size: int64(sz)})
	}
	return nil
}

// buffersV6 finds the instances' buffers of a version 6 file in its options: a BUFFER option
// (the offset of the buffer's flyrecord u64, its name) each, followed by a CPUCOUNT option when
// the instance had another CPU count than the file's (trace-cmd's add_buffer_option_v6).
func buffersV6(r *reader, opts []Option, cpus int) ([]bufferDesc, error) {
	var out []bufferDesc
	var err error
	for i, o := range opts {
		if o.ID != OptionBuffer || len(o.Data) <= 8 {
			continue
		}
		d := bufferDesc{name: string(cString(o.Data[8:])), off: int64(binary.LittleEndian.Uint64(o.Data)), cpus: cpus}
		if i+1 < len(opts) && opts[i+1].ID == OptionCPUCount && len(opts[i+1].Data) == 4 {
			d.cpus = int(binary.LittleEndian.Uint32(opts[i+1].Data))
		}
		if d.name != "" {
			if out, err = grow(r, out, d, "the buffers"); err != nil {
				return nil, err
			}
		}
	}
	return out, nil
}
