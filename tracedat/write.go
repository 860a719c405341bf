package tracedat

import (
	"bufio"
	"encoding/binary"
	"fmt"
	"io"
)

// CPUSource is one CPU's pages for Write: Size bytes (whole pages) read from R.
type CPUSource struct {
	R    io.Reader
	Size int64
}

// Write writes a version 6 trace.dat: h, then each CPU's pages at a page-aligned offset, as
// trace-cmd record writes them. h.CPUs must be len(cpus).
//
// The header is written piece by piece, never assembled in memory (kallsyms alone is megabytes:
// a copy of it costs the recorder a garbage collection), and each CPU's pages are copied with
// w's ReadFrom when it has one (an *os.File from an *os.File: copy_file_range(2), in the kernel).
func Write(w io.Writer, h *Header, cpus []CPUSource) error {
	if h.CPUs != len(cpus) {
		return fmt.Errorf("trace.dat: %d CPUs in the header, %d given", h.CPUs, len(cpus))
	}
	if h.PageSize <= 0 {
		return fmt.Errorf("trace.dat: page size %d", h.PageSize)
	}
	var size counter
	writeHeader(&size, h, cpus, 0) // the offsets' values do not change the header's length
	ps := int64(h.PageSize)
	first := (int64(size) + ps - 1) / ps * ps
	bw := bufio.NewWriterSize(w, 256<<10)
	writeHeader(bw, h, cpus, first)
	written := int64(size)
	for cpu, c := range cpus {
		if pad := (written+ps-1)/ps*ps - written; pad > 0 {
			bw.Write(make([]byte, pad))
			written += pad
		}
		if err := bw.Flush(); err != nil {
			return err
		}
		n, err := io.CopyN(w, c.R, c.Size)
		written += n
		if err != nil {
			return fmt.Errorf("trace.dat: CPU %d's data: %w", cpu, err)
		}
	}
	return bw.Flush()
}

// counter is an io.Writer that counts the bytes written to it.
type counter int64

func (c *counter) Write(p []byte) (int, error) {
	*c += counter(len(p))
	return len(p), nil
}

// writeHeader writes everything before the first CPU's pages (and their padding), the CPUs'
// pages placed from first on. Errors are w's to keep (a bufio.Writer's Flush returns them).
func writeHeader(w io.Writer, h *Header, cpus []CPUSource, first int64) {
	var b []byte // the small pieces, written as they fill
	put := func(data []byte) {
		w.Write(b)
		b = b[:0]
		w.Write(data)
	}
	u32 := func(v int) { b = binary.LittleEndian.AppendUint32(b, uint32(v)) }
	sized8 := func(data []byte) {
		b = binary.LittleEndian.AppendUint64(b, uint64(len(data)))
		put(data)
	}
	b = append(b, Magic...)
	b = append(b, "6\x00"...)
	long := h.LongSize
	if long == 0 {
		long = 8
	}
	b = append(b, 0, byte(long)) // little endian
	u32(h.PageSize)
	b = append(b, "header_page\x00"...)
	sized8(h.HeaderPage)
	b = append(b, "header_event\x00"...)
	sized8(h.HeaderEvent)
	u32(len(h.Ftrace))
	for _, f := range h.Ftrace {
		sized8(f)
	}
	u32(len(h.Systems))
	for _, s := range h.Systems {
		b = append(b, s.Name...)
		b = append(b, 0)
		u32(len(s.Formats))
		for _, f := range s.Formats {
			sized8(f)
		}
	}
	u32(len(h.Kallsyms))
	put(h.Kallsyms)
	u32(len(h.Printk))
	put(h.Printk)
	sized8(h.Cmdlines)
	u32(h.CPUs)
	if len(h.Options) > 0 {
		b = append(b, "options  \x00"...)
		for _, o := range h.Options {
			b = binary.LittleEndian.AppendUint16(b, o.ID)
			u32(len(o.Data))
			put(o.Data)
		}
		b = binary.LittleEndian.AppendUint16(b, OptionDone)
	}
	b = append(b, "flyrecord\x00"...)
	off, ps := first, int64(h.PageSize)
	for _, c := range cpus {
		b = binary.LittleEndian.AppendUint64(b, uint64(off))
		b = binary.LittleEndian.AppendUint64(b, uint64(c.Size))
		off += (c.Size + ps - 1) / ps * ps
	}
	w.Write(b)
}
