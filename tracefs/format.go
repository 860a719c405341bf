package tracefs

import (
	"errors"
	"fmt"
	"path"
	"strconv"
	"strings"
)

// The format files of events (events/SYSTEM/EVENT/format) and of the ring buffer's pages
// (events/header_page): kernel/trace/trace_events.c f_show and ring_buffer.c
// ring_buffer_print_page_header. One parser serves the stream's binary decoder and `ftctl
// probe format`.

// Field is one field of an event's format.
type Field struct {
	Name   string `json:"name"` // without any [N]
	Type   string `json:"type"` // as declared, without the name's [N]: "unsigned long", "u32", "__data_loc char[]", "char" (of "char buf[]")
	Array  int    `json:"-"`    // N of "name[N]", -1 for "name[]", 0 when not an array
	Offset int    `json:"offset"`
	Size   int    `json:"size"`
	Signed bool   `json:"signed"`
}

// Decl is the field's type as a C declaration would give it, with the array's brackets:
// "u8[4]", "char[]", "unsigned long".
func (f Field) Decl() string {
	switch {
	case f.Array > 0:
		return f.Type + "[" + strconv.Itoa(f.Array) + "]"
	case f.Array < 0:
		return f.Type + "[]"
	}
	return f.Type
}

// Format is an event's format file, parsed.
type Format struct {
	System, Name string
	ID           int
	Common       []Field // the common_* fields every event starts with
	Fields       []Field // the event's own fields
	PrintFmt     string  // the format string of "print fmt", unquoted
	Print        string  // the whole "print fmt" line after its label, as the kernel wrote it
}

// Field finds one of the event's own fields by name.
func (f *Format) Field(name string) *Field {
	for i := range f.Fields {
		if f.Fields[i].Name == name {
			return &f.Fields[i]
		}
	}
	return nil
}

// EventFormat reads events/SYSTEM/EVENT/format of the trace array.
func (i *Instance) EventFormat(system, event string) (*Format, error) {
	b, err := i.ReadFile(path.Join("events", system, event, "format"))
	if err != nil {
		return nil, err
	}
	return ParseFormat(system, string(b))
}

// ParseFormat parses an event's format file; system is the directory it came from:
//
//	name: myopen
//	ID: 1834
//	format:
//		field:unsigned short common_type;	offset:0;	size:2;	signed:0;
//		...
//		field:__data_loc char[] path;	offset:24;	size:4;	signed:1;
//
//	print fmt: "(%lx) path=\"%s\"", REC->__probe_ip, __get_str(path)
func ParseFormat(system, text string) (*Format, error) {
	f := &Format{System: system, ID: -1}
	// The print fmt is the file's last item and may span lines: a TP_printk format holding
	// "\n" is written with a real newline (6.1's mmap:exit_mmap, ras:aer_event).
	if i := strings.Index(text, "\nprint fmt: "); i >= 0 {
		f.Print = strings.TrimSpace(text[i+len("\nprint fmt: "):])
		f.PrintFmt = unquoteFmt(f.Print)
		text = text[:i]
	}
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
		case strings.Contains(line, "field:"):
			fl, err := parseFieldLine(line)
			if err != nil {
				return nil, fmt.Errorf("format of %s/%s: %w", system, f.Name, err)
			}
			if len(f.Common)+len(f.Fields) == MaxFormatFields {
				return nil, fmt.Errorf("format of %s/%s: more than %d fields", system, f.Name, MaxFormatFields)
			}
			if strings.HasPrefix(fl.Name, "common_") {
				f.Common = append(f.Common, fl)
			} else {
				f.Fields = append(f.Fields, fl)
			}
		}
	}
	if f.Name == "" || f.ID < 0 {
		return nil, fmt.Errorf("format of %s: no name or ID", system)
	}
	return f, nil
}

// MaxRecordSize bounds a field's offset and size (and a page's header fields): a record lies
// in one ring-buffer sub-buffer, at most 128 pages (buffer_subbuf_size_kb, 6.8+: 512 KiB of 4 KiB
// pages), and a trace.dat's page size is refused past 1 MiB.
const MaxRecordSize = 1 << 20

// MaxFormatFields bounds a format's fields: the decoders walk them for every record, and a
// trace.dat's formats are anyone's. The kernels' own have at most 32 (6.12's cxl_dram).
const MaxFormatFields = 1024

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
	sp := strings.LastIndexAny(decl, " \t")
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
	if f.Array < -1 {
		return f, fmt.Errorf("array of %d elements in %q", f.Array, line)
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
		case "offset", "size":
			// checked here, so that no reader of a record sums or slices by them unchecked (a
			// trace.dat's formats are anyone's: a negative size panicked in the decoder)
			if n < 0 || n > MaxRecordSize {
				return f, fmt.Errorf("%s %d in %q (a record's fields lie within %d bytes)", k, n, line, MaxRecordSize)
			}
			if k == "offset" {
				f.Offset, seen = n, seen|1
			} else {
				f.Size, seen = n, seen|2
			}
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

// PageLayout is where a ring-buffer page keeps its header fields (events/header_page).
type PageLayout struct {
	TSOffset, CommitOffset, CommitSize, DataOffset int
}

// DefaultPageLayout is the 64-bit layout both VM kernels report: timestamp u64 at 0, commit
// (a local_t) at 8, data from 16.
var DefaultPageLayout = PageLayout{TSOffset: 0, CommitOffset: 8, CommitSize: 8, DataOffset: 16}

// PageLayout reads events/header_page of the trace array.
func (i *Instance) PageLayout() (PageLayout, error) {
	b, err := i.ReadFile("events/header_page")
	if err != nil {
		return PageLayout{}, err
	}
	return ParsePageLayout(string(b))
}

// ParsePageLayout parses events/header_page: the timestamp (8 bytes) and the commit (a local_t:
// 4 or 8 bytes) apart, both before the data. Check says whether it fits a page of a given size.
func ParsePageLayout(text string) (PageLayout, error) {
	l := PageLayout{TSOffset: -1, CommitOffset: -1, DataOffset: -1}
	tsSize := 0
	for _, line := range strings.Split(text, "\n") {
		if !strings.Contains(line, "field:") {
			continue
		}
		f, err := parseFieldLine(line)
		if err != nil {
			return l, fmt.Errorf("header_page: %w", err)
		}
		switch f.Name {
		case "timestamp":
			l.TSOffset, tsSize = f.Offset, f.Size
		case "commit":
			l.CommitOffset, l.CommitSize = f.Offset, f.Size
		case "data":
			l.DataOffset = f.Offset
		}
	}
	switch {
	case l.TSOffset < 0 || l.CommitOffset < 0 || l.DataOffset < 0:
		return l, errors.New("header_page: no timestamp, commit or data field")
	case tsSize != 8:
		return l, fmt.Errorf("header_page: a timestamp of %d bytes (a u64: 8)", tsSize)
	case l.CommitSize != 4 && l.CommitSize != 8:
		return l, fmt.Errorf("header_page: a commit of %d bytes (a local_t: 4 or 8)", l.CommitSize)
	case l.TSOffset+8 > l.DataOffset:
		return l, fmt.Errorf("header_page: the timestamp at offset %d runs into the data at %d", l.TSOffset, l.DataOffset)
	case l.CommitOffset+l.CommitSize > l.DataOffset:
		return l, fmt.Errorf("header_page: the commit at offset %d runs into the data at %d", l.CommitOffset, l.DataOffset)
	case l.TSOffset < l.CommitOffset+l.CommitSize && l.CommitOffset < l.TSOffset+8:
		return l, fmt.Errorf("header_page: the timestamp at offset %d and the commit at %d overlap", l.TSOffset, l.CommitOffset)
	}
	return l, nil
}

// Check says whether the layout fits pages of pageSize bytes (a trace.dat's page size, from
// another part of the file than its header_page): the header before the page's end.
func (l PageLayout) Check(pageSize int) error {
	if l.DataOffset >= pageSize {
		return fmt.Errorf("header_page: the data at offset %d, past a page of %d bytes", l.DataOffset, pageSize)
	}
	return nil
}
