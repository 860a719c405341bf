package probes

import (
	"bufio"
	"bytes"
	"compress/zlib"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/klauspost/compress/zstd"
)

// The ELF reader of uprobes. debug/elf is not used: it inflates a compressed section to
// whatever size its header claims (a 53 KiB file took 1.6 GB, an 852 KiB one ran out of
// memory, which recover() cannot catch), and copies a symbol's name out of the string table for
// every symbol (many symbols naming one long string: quadratic in time and memory). This one
// reads what a uprobe needs (the ELF header, the program headers, the section headers, the
// first SHT_SYMTAB and SHT_DYNSYM with their string tables, .go.buildinfo) and holds, all told,
// at most elfBudget(size) bytes: string tables whole (the names point into them), symbol
// tables streamed, a compressed section's claimed size checked against what is left before a
// byte is inflated, and inflated to exactly that size. Every offset and size is checked
// against the file's; a failure names the offset and what is wrong there.

// elfBudget is the most a file of size bytes may cost: 64 MiB, or four times its size.
func elfBudget(size int64) int64 { return max(64<<20, 4*size) }

// ELF constants (include/uapi/linux/elf.h).
const (
	etExec         = 2
	etDyn          = 3
	ptLoad         = 1
	shtSymtab      = 2
	shtStrtab      = 3
	shtNobits      = 8
	shtDynsym      = 11
	shfAlloc       = 0x2
	shfCompressed  = 0x800
	sttFunc        = 2
	compressZlib   = 1
	compressZstd   = 2
	pnXnum         = 0xffff
	shnXindex      = 0xffff
	elfFuncSize    = 56 // an ELFFunc's bytes
	elfSectionSize = 64 // what an elfSection costs
)

type elfSection struct {
	hdr     int64 // its header's offset in the file
	name    uint32
	typ     uint32
	flags   uint64
	off     uint64
	size    uint64
	link    uint32
	entsize uint64
}

type elfReader struct {
	r      io.ReaderAt
	size   int64
	is64   bool
	bo     binary.ByteOrder
	left   int64 // bytes of the budget left
	secs   []elfSection
	shstr  string // the section names ("" when the file has none readable)
	budget int64
}

// elfErr is a malformed-file error at offset off.
func elfErr(off int64, format string, a ...any) error {
	return fmt.Errorf("%w: at offset %#x: %s", ErrNotELF, off, fmt.Sprintf(format, a...))
}

// readerSize is the size of what r reads: Size() where it has one, else found by bisection.
func readerSize(r io.ReaderAt) (int64, error) {
	if s, ok := r.(interface{ Size() int64 }); ok {
		return s.Size(), nil
	}
	var b [1]byte
	lo, hi := int64(0), int64(1)
	for {
		if n, _ := r.ReadAt(b[:], hi-1); n == 0 {
			break
		}
		lo, hi = hi, hi*2
		if hi > 1<<50 {
			return 0, fmt.Errorf("%w: cannot tell its size", ErrNotELF)
		}
	}
	for lo < hi { // lo bytes readable, hi not
		mid := lo + (hi-lo+1)/2
		if n, _ := r.ReadAt(b[:], mid-1); n == 1 {
			lo = mid
		} else {
			hi = mid - 1
		}
	}
	return lo, nil
}

// charge takes n bytes of the budget, or says what at off would cost too much.
func (e *elfReader) charge(off int64, n int64, what string) error {
	if n < 0 || n > e.left {
		return elfErr(off, "%s would take %d bytes: more than the %d ftctl reads of a file of %d bytes", what, n, e.budget, e.size)
	}
	e.left -= n
	return nil
}

// read reads n bytes at off, which must lie in the file.
func (e *elfReader) read(off, n uint64, what string) ([]byte, error) {
	if off > uint64(e.size) || n > uint64(e.size)-off {
		return nil, elfErr(int64(min(off, uint64(e.size))), "%s (%d bytes at %#x) runs past the end of the file (%d bytes)", what, n, off, e.size)
	}
	b := make([]byte, n)
	if _, err := e.r.ReadAt(b, int64(off)); err != nil && !(errors.Is(err, io.EOF) && len(b) == int(n)) {
		return nil, elfErr(int64(off), "reading %s: %v", what, err)
	}
	return b, nil
}

func (e *elfReader) word(b []byte, off int) uint64 { // an address or offset: 4 or 8 bytes
	if e.is64 {
		return e.bo.Uint64(b[off:])
	}
	return uint64(e.bo.Uint32(b[off:]))
}

func readBinary(r io.ReaderAt, size int64) (b *Binary, err error) {
	defer func() { // none known: the reader checks before it indexes; a bug is still an error
		if p := recover(); p != nil {
			b, err = nil, fmt.Errorf("%w: malformed (%v)", ErrNotELF, p)
		}
	}()
	e := &elfReader{r: r, size: size, budget: elfBudget(size)}
	e.left = e.budget
	var ident [16]byte
	if n, _ := r.ReadAt(ident[:], 0); n < 4 || string(ident[:4]) != "\x7fELF" {
		return nil, fmt.Errorf("%w (it does not start with \\x7fELF)", ErrNotELF)
	} else if n < 16 {
		return nil, elfErr(int64(n), "the file ends inside the ELF identification")
	}
	switch ident[4] {
	case 1:
	case 2:
		e.is64 = true
	default:
		return nil, elfErr(4, "unknown class %d", ident[4])
	}
	switch ident[5] {
	case 1:
		e.bo = binary.LittleEndian
	case 2:
		e.bo = binary.BigEndian
	default:
		return nil, elfErr(5, "unknown data encoding %d", ident[5])
	}
	if ident[6] != 1 {
		return nil, elfErr(6, "unknown ELF version %d", ident[6])
	}
	ehsize := uint64(52)
	if e.is64 {
		ehsize = 64
	}
	h, err := e.read(0, ehsize, "the ELF header")
	if err != nil {
		return nil, err
	}
	b = &Binary{}
	switch e.bo.Uint16(h[16:]) {
	case etExec:
		b.Type = "EXEC"
	case etDyn:
		b.Type = "DYN"
	default:
		return nil, elfErr(16, "type %d is not an executable (2) or a shared library (3)", e.bo.Uint16(h[16:]))
	}
	// e_phoff, e_shoff, then e_phentsize, e_phnum, e_shentsize, e_shnum, e_shstrndx
	phoff, shoff := e.word(h, 28), e.word(h, 32)
	rest := 42
	if e.is64 {
		phoff, shoff, rest = e.word(h, 32), e.word(h, 40), 54
	}
	phentsize, phnum := uint64(e.bo.Uint16(h[rest:])), uint64(e.bo.Uint16(h[rest+2:]))
	shentsize, shnum, shstrndx := uint64(e.bo.Uint16(h[rest+4:])), uint64(e.bo.Uint16(h[rest+6:])), uint64(e.bo.Uint16(h[rest+8:]))
	if err := e.readSections(shoff, shentsize, shnum, shstrndx, int64(rest)); err != nil {
		return nil, err
	}
	if phnum == pnXnum && len(e.secs) > 0 { // the count in section 0's sh_info
		info, err := e.read(uint64(e.secs[0].hdr)+28+uint64(boolInt(e.is64))*16, 4, "section 0's sh_info")
		if err != nil {
			return nil, err
		}
		phnum = uint64(e.bo.Uint32(info))
	}
	if err := e.readSegments(b, phoff, phentsize, phnum, int64(rest)); err != nil {
		return nil, err
	}
	// .symtab first (its sizes), then .dynsym (what is exported): one function listed once
	for _, typ := range []uint32{shtSymtab, shtDynsym} {
		for i := range e.secs {
			if e.secs[i].typ == typ {
				if err := e.readSymbols(b, &e.secs[i], typ == shtDynsym); err != nil {
					return nil, err
				}
				break
			}
		}
	}
	// sorted, then one entry per name and address (Dynamic when either table has it)
	slices.SortStableFunc(b.Funcs, func(x, y ELFFunc) int {
		switch {
		case x.Offset != y.Offset:
			return cmpU64(x.Offset, y.Offset)
		case x.Name != y.Name:
			return strings.Compare(x.Name, y.Name)
		}
		return cmpU64(x.Vaddr, y.Vaddr)
	})
	k := 0
	for i, f := range b.Funcs {
		if k > 0 && b.Funcs[k-1].Name == f.Name && b.Funcs[k-1].Vaddr == f.Vaddr {
			b.Funcs[k-1].Dynamic = b.Funcs[k-1].Dynamic || f.Dynamic
			continue
		}
		b.Funcs[k] = b.Funcs[i]
		k++
	}
	b.Funcs = slices.Clip(b.Funcs[:k])
	e.goVersion(b)
	return b, nil
}

func boolInt(v bool) int {
	if v {
		return 1
	}
	return 0
}

func cmpU64(a, b uint64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// readSections reads the section headers and the section names' string table.
func (e *elfReader) readSections(shoff, shentsize, shnum, shstrndx uint64, at int64) error {
	if shoff == 0 {
		return nil // no section headers: a stripped-to-the-bone file, symbols none
	}
	want := uint64(40)
	if e.is64 {
		want = 64
	}
	if shentsize < want {
		return elfErr(at+4, "section header size %d, less than %d", shentsize, want)
	}
	first, err := e.read(shoff, want, "section header 0")
	if err != nil {
		return err
	}
	f := e.parseSection(first, int64(shoff))
	if shnum == 0 { // more than 0xff00 sections: the count in section 0's sh_size
		shnum = f.size
	}
	if shstrndx == shnXindex {
		shstrndx = uint64(f.link)
	}
	if shnum > uint64(e.size)/shentsize {
		return elfErr(at+6, "%d section headers of %d bytes do not fit in a file of %d bytes", shnum, shentsize, e.size)
	}
	if err := e.charge(at+6, int64(shnum)*elfSectionSize, "the section headers"); err != nil {
		return err
	}
	hdrs, err := e.read(shoff, shnum*shentsize, "the section headers")
	if err != nil {
		return err
	}
	e.secs = make([]elfSection, shnum)
	for i := range e.secs {
		e.secs[i] = e.parseSection(hdrs[uint64(i)*shentsize:], int64(shoff+uint64(i)*shentsize))
	}
	if shstrndx != 0 && shstrndx < shnum && e.secs[shstrndx].typ == shtStrtab && e.secs[shstrndx].flags&shfCompressed == 0 {
		s := &e.secs[shstrndx]
		if err := e.charge(s.hdr, int64(min(s.size, uint64(e.size))), "the section names"); err != nil {
			return err
		}
		b, err := e.read(s.off, s.size, "the section names")
		if err != nil {
			return err
		}
		e.shstr = string(b)
	}
	return nil
}

func (e *elfReader) parseSection(h []byte, at int64) elfSection {
	s := elfSection{hdr: at, name: e.bo.Uint32(h[0:]), typ: e.bo.Uint32(h[4:])}
	if e.is64 {
		s.flags, s.off, s.size = e.bo.Uint64(h[8:]), e.bo.Uint64(h[24:]), e.bo.Uint64(h[32:])
		s.link, s.entsize = e.bo.Uint32(h[40:]), e.bo.Uint64(h[56:])
	} else {
		s.flags, s.off, s.size = uint64(e.bo.Uint32(h[8:])), uint64(e.bo.Uint32(h[16:])), uint64(e.bo.Uint32(h[20:]))
		s.link, s.entsize = e.bo.Uint32(h[24:]), uint64(e.bo.Uint32(h[36:]))
	}
	return s
}

// sectionName is s's name, "" when unknown; named is whether it is name (no allocation).
func (e *elfReader) named(s *elfSection, name string) bool {
	o := uint64(s.name)
	return o < uint64(len(e.shstr)) && strings.HasPrefix(e.shstr[o:], name+"\x00")
}

func (e *elfReader) sectionName(s *elfSection) string {
	o := uint64(s.name)
	if o >= uint64(len(e.shstr)) {
		return fmt.Sprintf("section at %#x", s.hdr)
	}
	n := e.shstr[o:]
	if i := strings.IndexByte(n, 0); i >= 0 {
		n = n[:i]
	}
	if len(n) > 64 {
		n = n[:64] + "..."
	}
	return fmt.Sprintf("%q", n)
}

// readSegments reads the PT_LOAD program headers.
func (e *elfReader) readSegments(b *Binary, phoff, phentsize, phnum uint64, at int64) error {
	if phnum == 0 {
		return nil
	}
	want := uint64(32)
	if e.is64 {
		want = 56
	}
	if phentsize < want {
		return elfErr(at, "program header size %d, less than %d", phentsize, want)
	}
	if phnum > uint64(e.size)/phentsize {
		return elfErr(at+2, "%d program headers of %d bytes do not fit in a file of %d bytes", phnum, phentsize, e.size)
	}
	hdrs, err := e.read(phoff, phnum*phentsize, "the program headers")
	if err != nil {
		return err
	}
	for i := uint64(0); i < phnum; i++ {
		p := hdrs[i*phentsize:]
		if e.bo.Uint32(p) != ptLoad {
			continue
		}
		var flags uint32
		var seg Segment
		if e.is64 {
			flags = e.bo.Uint32(p[4:])
			seg = Segment{Offset: e.bo.Uint64(p[8:]), Vaddr: e.bo.Uint64(p[16:]), Filesz: e.bo.Uint64(p[32:])}
		} else {
			seg = Segment{Offset: uint64(e.bo.Uint32(p[4:])), Vaddr: uint64(e.bo.Uint32(p[8:])), Filesz: uint64(e.bo.Uint32(p[16:]))}
			flags = e.bo.Uint32(p[24:])
		}
		seg.Index = int(i)
		fl := []byte("---")
		if flags&4 != 0 {
			fl[0] = 'r'
		}
		if flags&2 != 0 {
			fl[1] = 'w'
		}
		if flags&1 != 0 {
			fl[2] = 'x'
		}
		seg.Flags = string(fl)
		if err := e.charge(int64(phoff+i*phentsize), 64, "the program headers"); err != nil {
			return err
		}
		b.Segments = append(b.Segments, seg)
	}
	return nil
}

// open is a reader of s's bytes as a program sees them: inflated when SHF_COMPRESSED, after
// its claimed size was checked against the budget (and charged when hold); the size it has.
func (e *elfReader) open(s *elfSection, hold bool) (io.Reader, uint64, error) {
	what := "section " + e.sectionName(s)
	if s.typ == shtNobits {
		return nil, 0, elfErr(s.hdr, "%s has no bytes in the file (SHT_NOBITS)", what)
	}
	if s.off > uint64(e.size) || s.size > uint64(e.size)-s.off {
		return nil, 0, elfErr(s.hdr, "%s (%d bytes at %#x) runs past the end of the file (%d bytes)", what, s.size, s.off, e.size)
	}
	raw := io.NewSectionReader(e.r, int64(s.off), int64(s.size))
	if s.flags&shfCompressed == 0 {
		if hold {
			if err := e.charge(s.hdr, int64(s.size), what); err != nil {
				return nil, 0, err
			}
		}
		return raw, s.size, nil
	}
	if s.flags&shfAlloc != 0 {
		return nil, 0, elfErr(s.hdr, "%s is compressed and allocated (SHF_COMPRESSED applies only to sections the loader does not map)", what)
	}
	chsize := uint64(12)
	if e.is64 {
		chsize = 24
	}
	ch, err := e.read(s.off, min(chsize, s.size), what+"'s compression header")
	if err != nil {
		return nil, 0, err
	}
	if uint64(len(ch)) < chsize {
		return nil, 0, elfErr(int64(s.off), "%s is compressed but too short for its compression header", what)
	}
	typ := e.bo.Uint32(ch)
	claim := uint64(e.bo.Uint32(ch[4:]))
	if e.is64 {
		claim = e.bo.Uint64(ch[8:])
	}
	// the claim checked before a byte is inflated
	if claim > uint64(e.left) {
		return nil, 0, elfErr(int64(s.off), "%s claims %d bytes uncompressed: more than the %d ftctl reads of a file of %d bytes", what, claim, e.budget, e.size)
	}
	if hold {
		e.left -= int64(claim)
	}
	body := io.NewSectionReader(e.r, int64(s.off+chsize), int64(s.size-chsize))
	var z io.Reader
	switch typ {
	case compressZlib:
		zr, err := zlib.NewReader(body)
		if err != nil {
			return nil, 0, elfErr(int64(s.off+chsize), "%s: zlib: %v", what, err)
		}
		z = zr
	case compressZstd:
		// the window bounded too (a frame may ask for gigabytes of it): never more than
		// what it inflates to
		window := min(max(claim, 1<<10), 64<<20)
		zr, err := zstd.NewReader(body, zstd.WithDecoderConcurrency(1), zstd.WithDecoderMaxWindow(window),
			zstd.WithDecoderMaxMemory(max(claim, 1<<10)))
		if err != nil {
			return nil, 0, elfErr(int64(s.off+chsize), "%s: zstd: %v", what, err)
		}
		z = zr.IOReadCloser()
	default:
		return nil, 0, elfErr(int64(s.off), "%s: unknown compression type %d", what, typ)
	}
	return &exactReader{r: io.LimitReader(z, int64(claim)), z: z, left: claim, claim: claim, at: int64(s.off), what: what}, claim, nil
}

// exactReader inflates exactly the claimed size: fewer bytes, or more behind them, is an error.
type exactReader struct {
	r, z  io.Reader
	left  uint64
	claim uint64
	at    int64
	what  string
}

func (x *exactReader) Read(p []byte) (int, error) {
	n, err := x.r.Read(p)
	x.left -= uint64(n)
	if err == io.EOF {
		if x.left != 0 {
			return n, elfErr(x.at, "%s inflates to %d bytes, not the %d its header claims", x.what, x.claim-x.left, x.claim)
		}
		var one [1]byte
		if m, _ := io.ReadFull(x.z, one[:]); m > 0 {
			return n, elfErr(x.at, "%s inflates past the %d bytes its header claims", x.what, x.claim)
		}
		return n, io.EOF
	}
	if err != nil && !errors.Is(err, ErrNotELF) {
		err = elfErr(x.at, "%s: inflating: %v", x.what, err)
	}
	return n, err
}

// strtab is a string table held whole; a name is a substring of it (no copy). next[i] is the
// first NUL at or after byte i*64: a name is found in at most 64 steps, however long.
type strtab struct {
	s    string
	next []uint32
}

func (e *elfReader) readStrtab(s *elfSection) (*strtab, error) {
	r, size, err := e.open(s, true)
	if err != nil {
		return nil, err
	}
	if size > 1<<32-1 {
		return nil, elfErr(s.hdr, "section %s: a string table of %d bytes", e.sectionName(s), size)
	}
	if err := e.charge(s.hdr, int64(size/64+1)*4, "the index of section "+e.sectionName(s)); err != nil {
		return nil, err
	}
	var sb strings.Builder
	sb.Grow(int(size))
	if _, err := io.CopyN(&sb, r, int64(size)); err != nil {
		if !errors.Is(err, ErrNotELF) {
			err = elfErr(int64(s.off), "reading section %s: %v", e.sectionName(s), err)
		}
		return nil, err
	}
	if r, ok := r.(*exactReader); ok { // the end checked: not more than claimed
		if _, err := r.Read(nil); err != nil && err != io.EOF {
			return nil, err
		}
	}
	t := &strtab{s: sb.String()}
	t.next = make([]uint32, len(t.s)/64+1)
	nul := uint32(len(t.s))
	for i := len(t.s) - 1; i >= 0; i-- {
		if t.s[i] == 0 {
			nul = uint32(i)
		}
		if i%64 == 0 {
			t.next[i/64] = nul
		}
	}
	if len(t.s)%64 == 0 {
		t.next[len(t.s)/64] = uint32(len(t.s))
	}
	return t, nil
}

// at is the NUL-terminated name at off; false past the table or without its NUL.
func (t *strtab) at(off uint32) (string, bool) {
	if uint64(off) >= uint64(len(t.s)) {
		return "", false
	}
	end := uint64(len(t.s))
	block := (uint64(off) + 63) / 64 * 64
	if i := strings.IndexByte(t.s[off:min(block, end)], 0); i >= 0 {
		return t.s[off : uint64(off)+uint64(i)], true
	}
	if block >= end {
		return "", false
	}
	n := uint64(t.next[block/64])
	if n >= end {
		return "", false
	}
	return t.s[off:n], true
}

// readSymbols adds the function symbols of s that lie in a PT_LOAD segment's file bytes.
func (e *elfReader) readSymbols(b *Binary, s *elfSection, dynamic bool) error {
	what := "section " + e.sectionName(s)
	if int(s.link) >= len(e.secs) || s.link == 0 || e.secs[s.link].typ != shtStrtab {
		return elfErr(s.hdr, "%s: its string table (section %d) is not one", what, s.link)
	}
	names, err := e.readStrtab(&e.secs[s.link])
	if err != nil {
		return err
	}
	r, size, err := e.open(s, false) // streamed: not held
	if err != nil {
		return err
	}
	entsize := uint64(16)
	if e.is64 {
		entsize = 24
	}
	if size%entsize != 0 {
		return elfErr(s.hdr, "%s: %d bytes are not a whole number of %d-byte symbols", what, size, entsize)
	}
	br := bufio.NewReaderSize(r, 64<<10)
	sym := make([]byte, entsize)
	for i := uint64(0); i < size/entsize; i++ {
		if _, err := io.ReadFull(br, sym); err != nil {
			if !errors.Is(err, ErrNotELF) {
				err = elfErr(int64(s.off+i*entsize), "%s: symbol %d: %v", what, i, err)
			}
			return err
		}
		if i == 0 {
			continue // the null symbol
		}
		var name uint32
		var info uint8
		var shndx uint16
		var value, fsize uint64
		name = e.bo.Uint32(sym)
		if e.is64 {
			info, shndx, value, fsize = sym[4], e.bo.Uint16(sym[6:]), e.bo.Uint64(sym[8:]), e.bo.Uint64(sym[16:])
		} else {
			value, fsize, info, shndx = uint64(e.bo.Uint32(sym[4:])), uint64(e.bo.Uint32(sym[8:])), sym[12], e.bo.Uint16(sym[14:])
		}
		if !b.Go && uint64(name) < uint64(len(names.s)) && strings.HasPrefix(names.s[name:], "runtime.buildVersion\x00") {
			b.Go = true
		}
		if info&0xf != sttFunc || shndx == 0 || value == 0 {
			continue
		}
		n, ok := names.at(name)
		if !ok || n == "" {
			continue
		}
		off, seg, ok := b.fileOffset(value)
		if !ok {
			continue // not in the file (e.g. a section the loader does not map)
		}
		if len(b.Funcs) == cap(b.Funcs) {
			// grown by doubling, each array charged whole (the old ones too: all told, the
			// arrays are at most twice the last)
			n := max(2*cap(b.Funcs), 1024)
			if err := e.charge(int64(s.off+i*entsize), int64(n)*elfFuncSize, fmt.Sprintf("%d function symbols of %s", n, what)); err != nil {
				return err
			}
			b.Funcs = slices.Grow(b.Funcs, n-len(b.Funcs))
		}
		b.Funcs = append(b.Funcs, ELFFunc{Name: n, Vaddr: value, Size: fsize, Offset: off, Segment: seg, Dynamic: dynamic})
	}
	if x, ok := r.(*exactReader); ok { // nothing inflated past the claim
		if _, err := x.Read(nil); err != nil && err != io.EOF {
			return err
		}
	}
	return nil
}

// goVersion: a Go binary has .go.buildinfo (or, with its section headers stripped, the same
// bytes at the start of its first writable segment); the version is read from there
// (Go 1.18+: inline; older: through two pointers), at most 64 KiB looked at.
func (e *elfReader) goVersion(b *Binary) {
	var data []byte
	for i := range e.secs {
		s := &e.secs[i]
		if e.named(s, ".go.buildinfo") {
			b.Go = true
			if s.typ != shtNobits && s.flags&shfCompressed == 0 {
				data, _ = e.read(s.off, min(s.size, 64<<10), ".go.buildinfo")
			}
			break
		}
	}
	if data == nil && b.Go {
		for _, seg := range b.Segments {
			if seg.Flags[1] == 'w' {
				data, _ = e.read(seg.Offset, min(seg.Filesz, 64<<10), "the data segment")
				break
			}
		}
	}
	const magic = "\xff Go buildinf:"
	for i := 0; i+32 <= len(data); i += 16 {
		if string(data[i:i+len(magic)]) != magic {
			continue
		}
		b.Go = true
		d := data[i:]
		ptr, flags := int(d[14]), d[15]
		if flags&2 != 0 { // inline: a varint length, then the version
			n, k := binary.Uvarint(d[32:])
			if k > 0 && n < 1024 && uint64(32+k)+n <= uint64(len(d)) {
				b.GoVersion = string(d[32+k : 32+k+int(n)])
			}
			return
		}
		if ptr != 4 && ptr != 8 || 16+ptr > len(d) {
			return
		}
		bo := binary.ByteOrder(binary.LittleEndian)
		if flags&1 != 0 {
			bo = binary.BigEndian
		}
		readPtr := func(p []byte) uint64 {
			if ptr == 4 {
				return uint64(bo.Uint32(p))
			}
			return bo.Uint64(p)
		}
		// a pointer to a string header (data pointer, length)
		hdrOff, _, ok := b.fileOffset(readPtr(d[16:]))
		if !ok {
			return
		}
		hdr, err := e.read(hdrOff, uint64(2*ptr), "the Go version's string header")
		if err != nil {
			return
		}
		sOff, _, ok := b.fileOffset(readPtr(hdr))
		if n := readPtr(hdr[ptr:]); ok && n < 1024 {
			if v, err := e.read(sOff, n, "the Go version"); err == nil && bytes.HasPrefix(v, []byte("go")) {
				b.GoVersion = string(v)
			}
		}
		return
	}
}
