package probes

import (
	"debug/buildinfo"
	"debug/elf"
	"errors"
	"fmt"
	"io"
	"os"
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
	b, err := ReadBinary(f)
	if err != nil {
		return nil, err
	}
	b.Path = path
	return b, nil
}

// ReadBinary reads an ELF image. Malformed input is an error wrapping ErrNotELF, never a
// panic: debug/elf has panicked on crafted files before (a recover turns any that is left
// into an error; FuzzReadBinary feeds it arbitrary bytes).
func ReadBinary(r io.ReaderAt) (b *Binary, err error) {
	defer func() {
		if p := recover(); p != nil {
			b, err = nil, fmt.Errorf("%w: malformed (%v)", ErrNotELF, p)
		}
	}()
	var magic [4]byte
	if _, err := r.ReadAt(magic[:], 0); err != nil || string(magic[:]) != elf.ELFMAG {
		return nil, fmt.Errorf("%w (it does not start with \\x7fELF)", ErrNotELF)
	}
	f, err := elf.NewFile(r)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrNotELF, err)
	}
	defer f.Close()
	b = &Binary{}
	switch f.Type {
	case elf.ET_EXEC:
		b.Type = "EXEC"
	case elf.ET_DYN:
		b.Type = "DYN"
	default:
		return nil, fmt.Errorf("%w: type %v is not an executable or a shared library", ErrNotELF, f.Type)
	}
	for i, p := range f.Progs {
		if p.Type != elf.PT_LOAD {
			continue
		}
		flags := []byte("---")
		if p.Flags&elf.PF_R != 0 {
			flags[0] = 'r'
		}
		if p.Flags&elf.PF_W != 0 {
			flags[1] = 'w'
		}
		if p.Flags&elf.PF_X != 0 {
			flags[2] = 'x'
		}
		b.Segments = append(b.Segments, Segment{Index: i, Vaddr: p.Vaddr, Offset: p.Off, Filesz: p.Filesz, Flags: string(flags)})
	}
	seen := map[string]int{} // NAME@VADDR: index in Funcs
	add := func(syms []elf.Symbol, dynamic bool) {
		for _, s := range syms {
			if elf.ST_TYPE(s.Info) != elf.STT_FUNC || s.Section == elf.SHN_UNDEF || s.Value == 0 || s.Name == "" {
				continue
			}
			key := fmt.Sprintf("%s@%x", s.Name, s.Value)
			if i, ok := seen[key]; ok {
				b.Funcs[i].Dynamic = b.Funcs[i].Dynamic || dynamic
				continue
			}
			off, seg, ok := b.fileOffset(s.Value)
			if !ok {
				continue // not in the file (e.g. a section the loader does not map)
			}
			seen[key] = len(b.Funcs)
			b.Funcs = append(b.Funcs, ELFFunc{Name: s.Name, Vaddr: s.Value, Size: s.Size, Offset: off, Segment: seg, Dynamic: dynamic})
		}
		if name := "runtime.buildVersion"; !b.Go {
			for _, s := range syms {
				if s.Name == name {
					b.Go = true
					break
				}
			}
		}
	}
	if syms, err := f.Symbols(); err == nil {
		add(syms, false)
	}
	if syms, err := f.DynamicSymbols(); err == nil {
		add(syms, true)
	}
	sort.Slice(b.Funcs, func(i, j int) bool {
		if b.Funcs[i].Offset != b.Funcs[j].Offset {
			return b.Funcs[i].Offset < b.Funcs[j].Offset
		}
		return b.Funcs[i].Name < b.Funcs[j].Name
	})
	if f.Section(".go.buildinfo") != nil {
		b.Go = true
	}
	if b.Go {
		if bi, err := buildinfo.Read(r); err == nil {
			b.GoVersion = bi.GoVersion
		}
	}
	return b, nil
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
	seen := map[string]bool{}
	var out []string
	for _, f := range b.Funcs {
		if !seen[f.Name] {
			seen[f.Name] = true
			out = append(out, f.Name)
		}
	}
	sort.Strings(out)
	return out
}
