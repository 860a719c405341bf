package stream

import (
	"encoding/binary"
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// The binary side of the stream: what per_cpu/cpuN/trace_pipe_raw returns is ring-buffer pages,
// each a header (events/header_page) then events, each behind a compressed 32-bit header
// (events/header_event; kernel/trace/ring_buffer.c):
//
//	type_len:5 time_delta:27 [array[0]:32] data...
//
// type_len 1..28: the data is type_len*4 bytes, right after the header; 0: array[0] holds the
// data's length plus its own 4 bytes and the data follows it; 29 padding (time_delta 0: the rest
// of the page is empty; otherwise a discarded event of array[0]+4 bytes); 30 a time extend
// (a delta too wide for 27 bits: array[0]<<27 + time_delta); 31 an absolute time stamp.

// Ring-buffer event types (include/linux/ring_buffer.h).
const (
	rbTypePadding    = 29
	rbTypeTimeExtend = 30
	rbTypeTimeStamp  = 31
	rbTSShift        = 27
	// rbMissedEvents and rbMissedStored are flags in the page header's commit word: events
	// were lost before this page, and their count is stored after the page's data.
	rbMissedEvents = 1 << 31
	rbMissedStored = 1 << 30
	// rbTSMSB: an absolute time stamp keeps 59 bits; the top ones come from the time before.
	rbTSMSBShift = 59
)

// PageLayout is where a ring-buffer page keeps its header fields (events/header_page).
type PageLayout struct {
	TSOffset, CommitOffset, CommitSize, DataOffset int
}

// DefaultPageLayout is the 64-bit layout both VM kernels report: timestamp u64 at 0, commit
// (a local_t) at 8, data from 16.
var DefaultPageLayout = PageLayout{TSOffset: 0, CommitOffset: 8, CommitSize: 8, DataOffset: 16}

// ParsePageLayout reads events/header_page.
func ParsePageLayout(text string) (PageLayout, error) {
	l := PageLayout{TSOffset: -1, CommitOffset: -1, DataOffset: -1}
	for _, line := range strings.Split(text, "\n") {
		f, err := parseFieldLine(line)
		if err != nil {
			continue
		}
		switch f.Name {
		case "timestamp":
			l.TSOffset = f.Offset
		case "commit":
			l.CommitOffset, l.CommitSize = f.Offset, f.Size
		case "data":
			l.DataOffset = f.Offset
		}
	}
	if l.TSOffset < 0 || l.CommitOffset < 0 || l.DataOffset < 0 || (l.CommitSize != 4 && l.CommitSize != 8) {
		return l, errors.New("header_page: no timestamp, commit or data field")
	}
	return l, nil
}

// Page is one decoded ring-buffer page header.
type Page struct {
	TS     uint64 // the time stamp the page's first delta counts from
	Data   []byte // the events, up to the commit
	Missed bool   // events were lost (overwritten) before this page
	Lost   int64  // how many, or -1 when the kernel did not store the count
}

// ParsePage reads a page's header: its time stamp, its data, and whether (and how many)
// events were lost before it.
func (l PageLayout) ParsePage(b []byte) (Page, error) {
	var p Page
	if len(b) < l.DataOffset || len(b) < l.CommitOffset+l.CommitSize {
		return p, fmt.Errorf("ring-buffer page of %d bytes: shorter than its header", len(b))
	}
	p.TS = binary.LittleEndian.Uint64(b[l.TSOffset:])
	var commit uint64
	if l.CommitSize == 8 {
		commit = binary.LittleEndian.Uint64(b[l.CommitOffset:])
	} else {
		commit = uint64(binary.LittleEndian.Uint32(b[l.CommitOffset:]))
	}
	// The flags are bits of the low 32: 6.1 adds 1<<31 as an int to the (64-bit) local_t,
	// which sign-extends it into the high half (libtraceevent's kbuffer reads 32 bits too).
	commit = uint64(uint32(commit))
	size := int(commit &^ (rbMissedEvents | rbMissedStored))
	data := b[l.DataOffset:]
	if size > len(data) {
		return p, fmt.Errorf("ring-buffer page: commit %d past the %d bytes read", size, len(data))
	}
	p.Data = data[:size]
	p.Lost = 0
	if commit&rbMissedEvents != 0 {
		p.Missed, p.Lost = true, -1
		if commit&rbMissedStored != 0 && size+8 <= len(data) {
			p.Lost = int64(binary.LittleEndian.Uint64(data[size:]))
		}
	}
	return p, nil
}

// PageEvents calls f for each event of the page's data, with its time stamp (in the trace
// clock's units) and its data (the trace entry: common fields first). It stops at the first
// error f returns, and says if the data is malformed (an event running past the page).
func (p Page) Events(f func(ts uint64, data []byte) error) error {
	ts := p.TS
	b := p.Data
	for len(b) >= 4 {
		h := binary.LittleEndian.Uint32(b)
		typeLen, delta := h&0x1f, uint64(h>>5)
		var array uint32
		if len(b) >= 8 {
			array = binary.LittleEndian.Uint32(b[4:])
		}
		switch {
		case typeLen == rbTypePadding:
			if delta == 0 {
				return nil // the rest of the page is empty
			}
			n := 4 + int(array)
			if len(b) < 8 || n > len(b) || n < 8 {
				return errors.New("ring-buffer page: padding runs past the page")
			}
			b = b[n:]
		case typeLen == rbTypeTimeExtend:
			if len(b) < 8 {
				return errors.New("ring-buffer page: time extend cut short")
			}
			ts += uint64(array)<<rbTSShift + delta
			b = b[8:]
		case typeLen == rbTypeTimeStamp:
			if len(b) < 8 {
				return errors.New("ring-buffer page: time stamp cut short")
			}
			abs := uint64(array)<<rbTSShift + delta
			// rb_fix_abs_ts: the stamp keeps 59 bits, the top ones are the last time's.
			if msb := ts & (0xf << rbTSMSBShift); msb != 0 {
				abs |= msb
				if abs < ts {
					abs += 1 << rbTSMSBShift
				}
			}
			ts = abs
			b = b[8:]
		case typeLen == 0:
			n := 4 + int(array)
			if len(b) < 8 || n > len(b) || n < 8 {
				return errors.New("ring-buffer page: event runs past the page")
			}
			ts += delta
			if err := f(ts, b[8:n]); err != nil {
				return err
			}
			b = b[n:]
		default:
			n := 4 + int(typeLen)*4
			if n > len(b) {
				return errors.New("ring-buffer page: event runs past the page")
			}
			ts += delta
			if err := f(ts, b[4:n]); err != nil {
				return err
			}
			b = b[n:]
		}
	}
	return nil
}

// Field is one field of an event's format (events/SYSTEM/EVENT/format).
type Field struct {
	Type   string // "unsigned long", "u32", "__data_loc char[]", "char buf[]"'s "char"...
	Name   string // without any [N]
	Array  int    // N of "name[N]", -1 for "name[]", 0 when not an array
	Offset int
	Size   int
	Signed bool
}

// Format is an event's format file, parsed.
type Format struct {
	System, Name string
	ID           int
	Fields       []Field // the event's own fields (the common_ ones are left out)
	PrintFmt     string  // the format string of "print fmt", unquoted
}

// Field finds a field by name.
func (f *Format) Field(name string) *Field {
	for i := range f.Fields {
		if f.Fields[i].Name == name {
			return &f.Fields[i]
		}
	}
	return nil
}

// ParseFormat parses an event's format file; system is the directory it came from.
func ParseFormat(system, text string) (*Format, error) {
	f := &Format{System: system, ID: -1}
	for _, line := range strings.Split(text, "\n") {
		switch {
		case strings.HasPrefix(line, "name: "):
			f.Name = strings.TrimSpace(line[len("name: "):])
		case strings.HasPrefix(line, "ID: "):
			id, err := strconv.Atoi(strings.TrimSpace(line[len("ID: "):]))
			if err != nil {
				return nil, fmt.Errorf("format of %s/%s: bad ID line %q", system, f.Name, line)
			}
			f.ID = id
		case strings.HasPrefix(line, "print fmt: "):
			f.PrintFmt = unquoteFmt(line[len("print fmt: "):])
		case strings.Contains(line, "field:"):
			fl, err := parseFieldLine(line)
			if err != nil {
				return nil, fmt.Errorf("format of %s/%s: %w", system, f.Name, err)
			}
			if !strings.HasPrefix(fl.Name, "common_") {
				f.Fields = append(f.Fields, fl)
			}
		}
	}
	if f.Name == "" || f.ID < 0 {
		return nil, fmt.Errorf("format of %s: no name or ID", system)
	}
	return f, nil
}

// parseFieldLine parses "\tfield:unsigned long ip;\toffset:8;\tsize:8;\tsigned:0;" (and the
// header files' "field: u64 timestamp;").
func parseFieldLine(line string) (Field, error) {
	var f Field
	_, rest, ok := strings.Cut(line, "field:")
	if !ok {
		return f, fmt.Errorf("no field in %q", line)
	}
	decl, rest, ok := strings.Cut(rest, ";")
	if !ok {
		return f, fmt.Errorf("no ';' in %q", line)
	}
	decl = strings.TrimSpace(decl)
	sp := strings.LastIndexByte(decl, ' ')
	if sp < 0 {
		return f, fmt.Errorf("no type in %q", line)
	}
	f.Type, f.Name = strings.TrimSpace(decl[:sp]), decl[sp+1:]
	if i := strings.IndexByte(f.Name, '['); i >= 0 {
		n := strings.TrimSuffix(f.Name[i+1:], "]")
		f.Name = f.Name[:i]
		f.Array = -1
		if v, err := strconv.Atoi(n); err == nil {
			f.Array = v
		}
	}
	seen := 0
	for _, kv := range strings.Split(rest, ";") {
		k, v, ok := strings.Cut(strings.TrimSpace(kv), ":")
		if !ok {
			continue
		}
		n, err := strconv.Atoi(v)
		if err != nil {
			return f, fmt.Errorf("bad %s in %q", k, line)
		}
		switch k {
		case "offset":
			f.Offset, seen = n, seen|1
		case "size":
			f.Size, seen = n, seen|2
		case "signed":
			f.Signed = n != 0
		}
	}
	if seen != 3 {
		return f, fmt.Errorf("no offset or size in %q", line)
	}
	return f, nil
}

// unquoteFmt takes the format string out of a print fmt line: `"a=%u b=\"%s\"", REC->a, ...`
// gives `a=%u b="%s"`. Adjacent strings are joined.
func unquoteFmt(s string) string {
	var b strings.Builder
	for {
		s = strings.TrimLeft(s, " ")
		if len(s) == 0 || s[0] != '"' {
			return b.String()
		}
		i := 1
		for ; i < len(s) && s[i] != '"'; i++ {
			if s[i] == '\\' && i+1 < len(s) {
				i++
				switch s[i] {
				case 'n':
					b.WriteByte('\n')
				case 't':
					b.WriteByte('\t')
				default:
					b.WriteByte(s[i])
				}
				continue
			}
			b.WriteByte(s[i])
		}
		s = s[min(i+1, len(s)):]
	}
}
