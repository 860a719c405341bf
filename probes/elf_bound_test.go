package probes

import (
	"bytes"
	"compress/zlib"
	"encoding/binary"
	"errors"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/klauspost/compress/zstd"
)

// craftELF builds a 64-bit little-endian ET_EXEC with one PT_LOAD (r-x, vaddr 0x400000 at file
// offset 0) and three sections after the null one: .symtab (its bytes symtab, its flags
// symFlags), .strtab (strtab) and .shstrtab.
func craftELF(symtab []byte, symFlags uint64, strtab []byte) []byte {
	le := binary.LittleEndian
	shstr := []byte("\x00.symtab\x00.strtab\x00.shstrtab\x00")
	const ehdr, phdr = 64, 56
	var body []byte
	symOff := ehdr + phdr
	body = append(body, symtab...)
	strOff := symOff + len(body)
	body = append(body, strtab...)
	shstrOff := symOff + len(body)
	body = append(body, shstr...)
	for (symOff+len(body))%8 != 0 {
		body = append(body, 0)
	}
	shoff := symOff + len(body)
	b := make([]byte, ehdr+phdr)
	copy(b, "\x7fELF\x02\x01\x01")
	le.PutUint16(b[16:], 2)  // ET_EXEC
	le.PutUint16(b[18:], 62) // x86-64
	le.PutUint32(b[20:], 1)
	le.PutUint64(b[32:], ehdr) // phoff
	le.PutUint64(b[40:], uint64(shoff))
	le.PutUint16(b[52:], ehdr)
	le.PutUint16(b[54:], phdr)
	le.PutUint16(b[56:], 1)
	le.PutUint16(b[58:], 64)
	le.PutUint16(b[60:], 4)
	le.PutUint16(b[62:], 3)
	p := b[ehdr:]
	le.PutUint32(p[0:], 1)         // PT_LOAD
	le.PutUint32(p[4:], 5)         // r-x
	le.PutUint64(p[16:], 0x400000) // vaddr
	le.PutUint64(p[32:], 1<<20)    // filesz: covers the addresses the symbols name
	le.PutUint64(p[40:], 1<<20)
	b = append(b, body...)
	sh := func(name, typ uint32, flags uint64, off, size int, link uint32, entsize uint64) {
		s := make([]byte, 64)
		le.PutUint32(s[0:], name)
		le.PutUint32(s[4:], typ)
		le.PutUint64(s[8:], flags)
		le.PutUint64(s[24:], uint64(off))
		le.PutUint64(s[32:], uint64(size))
		le.PutUint32(s[40:], link)
		le.PutUint64(s[56:], entsize)
		b = append(b, s...)
	}
	sh(0, 0, 0, 0, 0, 0, 0)
	sh(1, 2, symFlags, symOff, len(symtab), 2, 24)
	sh(9, 3, 0, strOff, len(strtab), 0, 0)
	sh(17, 3, 0, shstrOff, len(shstr), 0, 0)
	return b
}

// sym64 is one Elf64_Sym: a function at vaddr, named at strtab offset name.
func sym64(name uint32, vaddr uint64) []byte {
	s := make([]byte, 24)
	binary.LittleEndian.PutUint32(s[0:], name)
	s[4] = 0x12 // STB_GLOBAL, STT_FUNC
	binary.LittleEndian.PutUint16(s[6:], 1)
	binary.LittleEndian.PutUint64(s[8:], vaddr)
	binary.LittleEndian.PutUint64(s[16:], 4)
	return s
}

// compressedSymtab is a SHF_COMPRESSED (zlib) .symtab of n copies of one function symbol (or
// of zeros), its Elf64_Chdr claiming claim bytes uncompressed.
func compressedSymtab(n int, claim uint64, funcs bool) []byte {
	var raw bytes.Buffer
	raw.Write(make([]byte, 24)) // the null symbol
	s := sym64(1, 0x401000)
	if !funcs {
		s = make([]byte, 24)
	}
	for range n {
		raw.Write(s)
	}
	var z bytes.Buffer
	w, _ := zlib.NewWriterLevel(&z, zlib.BestCompression)
	w.Write(raw.Bytes())
	w.Close()
	ch := make([]byte, 24)
	binary.LittleEndian.PutUint32(ch[0:], 1) // ELFCOMPRESS_ZLIB
	binary.LittleEndian.PutUint64(ch[8:], claim)
	binary.LittleEndian.PutUint64(ch[16:], 8)
	return append(ch, z.Bytes()...)
}

// allocDuring runs f and says how many bytes it allocated in all (more than it held at once).
func allocDuring(f func()) (total uint64, took time.Duration) {
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	base := ms.TotalAlloc
	start := time.Now()
	f()
	took = time.Since(start)
	runtime.ReadMemStats(&ms)
	return ms.TotalAlloc - base, took
}

// readBinaryUnderTest is the reader the bound tests run (a variable: the figures of
// debug/elf's reader were taken with it).
var readBinaryUnderTest = ReadBinary

// A compressed .symtab is decompressed only up to what the file may cost: a claim past
// max(64 MiB, 4 × the file's size) is refused before a byte is inflated, naming the offset;
// what is inflated must be exactly the claim; a table within the claim is streamed, not held,
// and its function symbols are counted against the budget; an honest compressed table is read.
func TestReadBinaryCompressedSymtab(t *testing.T) {
	strtab := []byte("\x00main\x00")
	b, err := readBinaryUnderTest(bytes.NewReader(craftELF(compressedSymtab(1000, 24*1001, true), 0x800, strtab)))
	if err != nil {
		t.Fatal(err)
	}
	if fns := b.Lookup("main"); len(fns) != 1 || fns[0].Vaddr != 0x401000 {
		t.Errorf("Lookup(main) = %v", fns)
	}
	for _, c := range []struct {
		n     int
		claim uint64
		funcs bool
		want  string
		alloc uint64 // bytes it may allocate in all
	}{
		{1000, 1_500_000_000, true, "claims 1500000000 bytes uncompressed: more than the 67108864 ftctl reads", 1 << 20},
		{1000, 24*1001 + 24, true, "inflates to 24024 bytes, not the 24048 its header claims", 1 << 20},
		{1000, 24 * 500, true, "inflates past the 12000 bytes its header claims", 1 << 20},
		// 48 MB of symbols that are not functions, from about 50 KB: streamed, nothing held
		{2_000_000, 24 * 2_000_001, false, "", 8 << 20},
		// 2 million functions from about 50 KB: more than the budget holds
		{2_000_000, 24 * 2_000_001, true, "function symbols of section \".symtab\" would take", 80 << 20},
	} {
		file := craftELF(compressedSymtab(c.n, c.claim, c.funcs), 0x800, strtab)
		var b *Binary
		var err error
		alloc, took := allocDuring(func() { b, err = readBinaryUnderTest(bytes.NewReader(file)) })
		t.Logf("%d symbols (functions %v), %d bytes claimed, in a %d-byte file: %d MiB allocated, %v: %v",
			c.n, c.funcs, c.claim, len(file), alloc>>20, took.Round(time.Millisecond), err)
		switch {
		case c.want == "" && (err != nil || len(b.Funcs) != 0):
			t.Errorf("%d symbols: %v", c.n, err)
		case c.want != "" && (!errors.Is(err, ErrNotELF) || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), "at offset 0x")):
			t.Errorf("claim %d: %v; want ErrNotELF at an offset saying %q", c.claim, err, c.want)
		}
		if alloc > c.alloc || took > 10*time.Second {
			t.Errorf("claim %d: %d MiB allocated (at most %d), %v", c.claim, alloc>>20, c.alloc>>20, took)
		}
	}
	// zstd (ELFCOMPRESS_ZSTD): the same claims
	for _, c := range []struct {
		claim uint64
		want  string
	}{{24 * 1001, ""}, {1 << 40, "claims 1099511627776 bytes"}, {24 * 1002, "inflates to 24024 bytes"}} {
		sec := compressedSymtab(1000, c.claim, true)
		var raw bytes.Buffer
		zr, _ := zlib.NewReader(bytes.NewReader(sec[24:]))
		raw.ReadFrom(zr)
		enc, _ := zstd.NewWriter(nil)
		sec = append(sec[:24:24], enc.EncodeAll(raw.Bytes(), nil)...)
		binary.LittleEndian.PutUint32(sec, 2)
		b, err := readBinaryUnderTest(bytes.NewReader(craftELF(sec, 0x800, strtab)))
		if c.want == "" && (err != nil || len(b.Lookup("main")) != 1) || c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)) {
			t.Errorf("zstd, claim %d: %v", c.claim, err)
		}
	}
	// compressed and allocated: not an ELF the loader could map
	if _, err := readBinaryUnderTest(bytes.NewReader(craftELF(compressedSymtab(10, 24*11, true), 0x800|0x2, strtab))); !errors.Is(err, ErrNotELF) {
		t.Errorf("SHF_COMPRESSED|SHF_ALLOC: %v", err)
	}
}

// Names are shared with the string table, not copied per symbol: many symbols naming one long
// string cost a symbol each, not the string each time (debug/elf copied it: quadratic).
func TestReadBinaryLongSharedName(t *testing.T) {
	long := strings.Repeat("f", 1<<20)
	strtab := []byte("\x00" + long + "\x00")
	var symtab bytes.Buffer
	symtab.Write(make([]byte, 24))
	for i := range 20000 {
		// each at its own address, named from a different place in the long string
		symtab.Write(sym64(uint32(1+i%1000), 0x401000+uint64(i)*16))
	}
	file := craftELF(symtab.Bytes(), 0, strtab)
	var b *Binary
	var err error
	grew, took := allocDuring(func() { b, err = readBinaryUnderTest(bytes.NewReader(file)) })
	if err != nil {
		t.Fatal(err)
	}
	if len(b.Funcs) != 20000 {
		t.Errorf("%d functions", len(b.Funcs))
	}
	t.Logf("20000 symbols naming one 1 MiB string, a %d KiB file: %d MiB allocated, %v", len(file)>>10, grew>>20, took.Round(time.Millisecond))
	if limit := uint64(8 * len(file)); grew > limit || took > 5*time.Second {
		t.Errorf("a %d KiB file: %d MiB allocated (more than 8 × its size), %v", len(file)>>10, grew>>20, took)
	}
}
