package probes

import (
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"sort"
	"strings"
)

// ErrNotELF: a uprobe's file is not an ELF file ftctl can read.
var ErrNotELF = errors.New("not an ELF file")

// Binary is an ELF file read for uprobes: its loadable segments, its function symbols with
// their file offsets, and whether Go built it. The kernel places a uprobe at a file offset
// (uprobe_events takes PATH:0xOFFSET); symbols are virtual addresses, mapped to file offsets
// through the PT_LOAD segment that holds them, as the dynamic loader maps the file.
type Binary struct {
	Path     string
	Type     string    // "EXEC" (fixed addresses), "DYN" (PIE or shared library)
	Segments []Segment // PT_LOAD, in program-header order
	Funcs    []ELFFunc // function symbols, by file offset then name
	// Go: the file has a .go.buildinfo section or a runtime.buildVersion symbol; GoVersion is
	// what debug/buildinfo reads ("" when it cannot).
	Go        bool
	GoVersion string
}

// Segment is one PT_LOAD program header.
type Segment struct {
	Index  int    `json:"index"` // in the program headers
	Vaddr  uint64 `json:"vaddr"`
	Offset uint64 `json:"offset"` // in the file
	Filesz uint64 `json:"filesz"`
	Flags  string `json:"flags"` // "r-x"
}

// Executable: the loader maps it with PROT_EXEC (a uprobe elsewhere never fires).
func (s Segment) Executable() bool { return strings.Contains(s.Flags, "x") }

// String names the segment as verbose output shows it.
func (s Segment) String() string {
	return fmt.Sprintf("PT_LOAD[%d] %s vaddr 0x%x offset 0x%x", s.Index, s.Flags, s.Vaddr, s.Offset)
}

// ELFFunc is one function symbol.
type ELFFunc struct {
	Name    string `json:"name"`
	Vaddr   uint64 `json:"vaddr"`
	Size    uint64 `json:"size"`
	Offset  uint64 `json:"offset"`  // file offset of its first byte
	Segment int    `json:"segment"` // index into the program headers
	Dynamic bool   `json:"dynamic"` // from .dynsym (exported), else .symtab
}

// OpenBinary reads an ELF file. The file is the user's, not a kernel file: it is read here,
// where it is resolved, and never written.
func OpenBinary(path string) (*Binary, error) {
	// A FIFO or a device would block or never end: only a regular file is opened (the kernel
	// probes nothing else).
	if fi, err := os.Stat(path); err != nil {
		return nil, err
	} else if !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("%w: %s is not a regular file", ErrNotELF, path)
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	b, err := readBinary(f, fi.Size())
	if err != nil {
		return nil, err
	}
	b.Path = path
	return b, nil
}

// ReadBinary reads an ELF image (elfread.go). Malformed input is an error wrapping ErrNotELF
// that names the offset and what is wrong, never a panic; memory and time are bounded by the
// image's size (elfBudget), a compressed section's claimed size checked before it is inflated.
func ReadBinary(r io.ReaderAt) (*Binary, error) {
	size, err := readerSize(r)
	if err != nil {
		return nil, err
	}
	return readBinary(r, size)
}

// fileOffset maps a virtual address to its file offset through the PT_LOAD segment holding it
// (file-backed bytes only: an address in a segment's .bss has no file offset).
func (b *Binary) fileOffset(vaddr uint64) (off uint64, seg int, ok bool) {
	for _, s := range b.Segments {
		if vaddr >= s.Vaddr && vaddr-s.Vaddr < s.Filesz {
			return vaddr - s.Vaddr + s.Offset, s.Index, true
		}
	}
	return 0, -1, false
}

// Segment is the PT_LOAD segment of program header index i.
func (b *Binary) Segment(i int) (Segment, bool) {
	for _, s := range b.Segments {
		if s.Index == i {
			return s, true
		}
	}
	return Segment{}, false
}

// SegmentAt is the PT_LOAD segment whose file bytes hold file offset off.
func (b *Binary) SegmentAt(off uint64) (Segment, bool) {
	for _, s := range b.Segments {
		if off >= s.Offset && off-s.Offset < s.Filesz {
			return s, true
		}
	}
	return Segment{}, false
}

// Lookup lists the function symbols called name (a static function can have namesakes at
// different addresses; one symbol exported and local is listed once).
func (b *Binary) Lookup(name string) []ELFFunc {
	var out []ELFFunc
	for _, f := range b.Funcs {
		if f.Name == name && !containsOffset(out, f.Offset) {
			out = append(out, f)
		}
	}
	return out
}

func containsOffset(fs []ELFFunc, off uint64) bool {
	for _, f := range fs {
		if f.Offset == off {
			return true
		}
	}
	return false
}

// SymbolAt is the function holding file offset off, and off's distance from its start: what
// `probe list` shows for a uprobe the kernel lists as PATH:0xOFFSET. A function of size 0
// holds only its first byte.
func (b *Binary) SymbolAt(off uint64) (ELFFunc, uint64, bool) {
	i := sort.Search(len(b.Funcs), func(i int) bool { return b.Funcs[i].Offset > off })
	for j := i - 1; j >= 0; j-- {
		f := b.Funcs[j]
		if d := off - f.Offset; d == 0 || d < f.Size {
			return f, d, true
		}
		if f.Offset < off && j < i-8 { // past the namesakes at nearby offsets: no function holds it
			break
		}
	}
	return ELFFunc{}, 0, false
}

// Names lists the distinct function names, for close-name suggestions.
func (b *Binary) Names() []string {
	out := make([]string, 0, len(b.Funcs))
	for _, f := range b.Funcs {
		out = append(out, f.Name)
	}
	sort.Strings(out)
	return slices.Compact(out)
}
