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
func Write(w io.Writer, h *Header, cpus []CPUSource) error {
	if h.CPUs != len(cpus) {
		return fmt.Errorf("trace.dat: %d CPUs in the header, %d given", h.CPUs, len(cpus))
	}
	if h.PageSize <= 0 {
		return fmt.Errorf("trace.dat: page size %d", h.PageSize)
	}
	var b []byte
	b = append(b, Magic...)
	b = append(b, "6\x00"...)
	long := h.LongSize
	if long == 0 {
		long = 8
	}
	b = append(b, 0, byte(long)) // little endian
	b = binary.LittleEndian.AppendUint32(b, uint32(h.PageSize))
	b = append(b, "header_page\x00"...)
	b = sized8(b, h.HeaderPage)
	b = append(b, "header_event\x00"...)
	b = sized8(b, h.HeaderEvent)
	b = binary.LittleEndian.AppendUint32(b, uint32(len(h.Ftrace)))
	for _, f := range h.Ftrace {
		b = sized8(b, f)
	}
	b = binary.LittleEndian.AppendUint32(b, uint32(len(h.Systems)))
	for _, s := range h.Systems {
		b = append(b, s.Name...)
		b = append(b, 0)
		b = binary.LittleEndian.AppendUint32(b, uint32(len(s.Formats)))
		for _, f := range s.Formats {
			b = sized8(b, f)
		}
	}
	b = binary.LittleEndian.AppendUint32(b, uint32(len(h.Kallsyms)))
	b = append(b, h.Kallsyms...)
	b = binary.LittleEndian.AppendUint32(b, uint32(len(h.Printk)))
	b = append(b, h.Printk...)
	b = sized8(b, h.Cmdlines)
	b = binary.LittleEndian.AppendUint32(b, uint32(h.CPUs))
	if len(h.Options) > 0 {
		b = append(b, "options  \x00"...)
		for _, o := range h.Options {
			b = binary.LittleEndian.AppendUint16(b, o.ID)
			b = binary.LittleEndian.AppendUint32(b, uint32(len(o.Data)))
			b = append(b, o.Data...)
		}
		b = binary.LittleEndian.AppendUint16(b, OptionDone)
	}
	b = append(b, "flyrecord\x00"...)
	off := int64(len(b) + 16*len(cpus))
	ps := int64(h.PageSize)
	off = (off + ps - 1) / ps * ps
	for _, c := range cpus {
		b = binary.LittleEndian.AppendUint64(b, uint64(off))
		b = binary.LittleEndian.AppendUint64(b, uint64(c.Size))
		off += (c.Size + ps - 1) / ps * ps
	}
	bw := bufio.NewWriterSize(w, 1<<20)
	if _, err := bw.Write(b); err != nil {
		return err
	}
	written := int64(len(b))
	pad := func() error {
		n := (written+ps-1)/ps*ps - written
		if _, err := bw.Write(make([]byte, n)); err != nil {
			return err
		}
		written += n
		return nil
	}
	for cpu, c := range cpus {
		if err := pad(); err != nil {
			return err
		}
		n, err := io.CopyN(bw, c.R, c.Size)
		written += n
		if err != nil {
			return fmt.Errorf("trace.dat: CPU %d's data: %w", cpu, err)
		}
	}
	return bw.Flush()
}

func sized8(b, data []byte) []byte {
	b = binary.LittleEndian.AppendUint64(b, uint64(len(data)))
	return append(b, data...)
}
