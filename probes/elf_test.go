package probes

import (
	"bytes"
	"os"
	"testing"
)

// The fixtures (testdata/elf/gen.sh): symbols are virtual addresses, mapped to file offsets
// through the PT_LOAD segment that holds them (readelf -lW, nm).
func TestReadBinary(t *testing.T) {
	for _, tc := range []struct {
		file, typ string
		name      string
		vaddr     uint64
		offset    uint64
		segment   int
	}{
		{"exec.elf", "EXEC", "ftctl_add", 0x40100c, 0x100c, 1},
		{"exec.elf", "EXEC", "helper", 0x401000, 0x1000, 1}, // a local (static) function
		{"pie.elf", "DYN", "twice", 0, 0, -1},
		{"lib.so", "DYN", "ftctl_add", 0x103f, 0x103f, 1},
	} {
		b, err := OpenBinary("testdata/elf/" + tc.file)
		if err != nil {
			t.Fatal(err)
		}
		if b.Type != tc.typ || b.Go {
			t.Errorf("%s: type %s go %v", tc.file, b.Type, b.Go)
		}
		fns := b.Lookup(tc.name)
		if len(fns) != 1 {
			t.Fatalf("%s: Lookup(%s) = %v", tc.file, tc.name, fns)
		}
		f := fns[0]
		if tc.vaddr != 0 && (f.Vaddr != tc.vaddr || f.Offset != tc.offset || f.Segment != tc.segment) {
			t.Errorf("%s: %s = %+v, want vaddr %#x offset %#x segment %d", tc.file, tc.name, f, tc.vaddr, tc.offset, tc.segment)
		}
		seg, ok := b.Segment(f.Segment)
		if !ok || !seg.Executable() || f.Offset-seg.Offset != f.Vaddr-seg.Vaddr {
			t.Errorf("%s: %s in %+v", tc.file, tc.name, seg)
		}
		// And back: the offset names the function, an offset inside it the function + delta.
		if g, d, ok := b.SymbolAt(f.Offset); !ok || g.Name != tc.name || d != 0 {
			t.Errorf("%s: SymbolAt(%#x) = %v %d %v", tc.file, f.Offset, g.Name, d, ok)
		}
		if g, d, ok := b.SymbolAt(f.Offset + 2); !ok || g.Name != tc.name || d != 2 {
			t.Errorf("%s: SymbolAt(%#x+2) = %v %d %v", tc.file, f.Offset, g.Name, d, ok)
		}
	}
	// lib.so exports ftctl_add in .dynsym: a stripped library still resolves it.
	b, _ := OpenBinary("testdata/elf/lib.so")
	dyn := false
	for _, f := range b.Funcs {
		dyn = dyn || f.Name == "ftctl_add" && f.Dynamic
	}
	if !dyn {
		t.Errorf("lib.so: ftctl_add not from .dynsym: %+v", b.Funcs)
	}
	if _, _, ok := b.SymbolAt(0); ok {
		t.Errorf("SymbolAt(0) found a function in the ELF header")
	}
}

// This test binary is a Go program: detected by its .go.buildinfo section (go test links it
// without .symtab, -s, so runtime.buildVersion is not there to see).
func TestReadBinaryGo(t *testing.T) {
	exe, err := os.Executable()
	if err != nil {
		t.Skip(err)
	}
	b, err := OpenBinary(exe)
	if err != nil {
		t.Fatal(err)
	}
	if !b.Go || b.GoVersion == "" {
		t.Fatalf("go %v version %q", b.Go, b.GoVersion)
	}
}

func TestReadBinaryNotELF(t *testing.T) {
	for _, in := range [][]byte{nil, []byte("#!/bin/sh\n"), []byte("\x7fELF\x02\x01\x01")} {
		if _, err := ReadBinary(bytes.NewReader(in)); err == nil {
			t.Errorf("ReadBinary(%q) took it", in)
		}
	}
}

// FuzzReadBinary: any bytes, an error or a Binary whose lookups do not panic and whose
// functions lie in the file's PT_LOAD segments.
func FuzzReadBinary(f *testing.F) {
	for _, name := range []string{"exec.elf", "pie.elf", "lib.so"} {
		b, err := os.ReadFile("testdata/elf/" + name)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		b, err := ReadBinary(bytes.NewReader(data))
		if err != nil {
			return
		}
		for _, fn := range b.Funcs {
			seg, ok := b.Segment(fn.Segment)
			if !ok || fn.Offset < seg.Offset || fn.Offset-seg.Offset >= seg.Filesz {
				t.Fatalf("%+v outside its segment %+v", fn, seg)
			}
			if g, _, ok := b.SymbolAt(fn.Offset); !ok || g.Offset != fn.Offset {
				t.Fatalf("SymbolAt(%#x) = %+v %v", fn.Offset, g, ok)
			}
			b.Lookup(fn.Name)
		}
		b.Names()
		b.SymbolAt(^uint64(0))
	})
}
