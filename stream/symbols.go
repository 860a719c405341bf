package stream

import (
	"bytes"
	"errors"
	"slices"
	"strconv"
)

// Symbols is /proc/kallsyms, for printing code addresses the way the kernel does when it
// formats trace_pipe (kernel/kallsyms.c): the symbol is the one with the greatest address not
// above the address (the first listed, among aliases), its size runs to the next higher
// address listed, and a module's symbol is followed by " [module]" where the kernel prints one.
//
// The kernel's own symbols come first in the file, sorted by address (the kernel's lookup
// binary-searches the same table): they are searched in the text itself, with nothing parsed
// ahead, since parsing 100,000-170,000 lines costs more than the whole of a short stream under
// emulation. Modules' symbols, after them and in no order, are parsed and sorted. Lookups are
// cached by address.
type Symbols struct {
	// The kernel's own symbols are looked up only between _text and _end (is_ksym_addr), when
	// the table has them; 0 when not.
	coreLo, coreHi uint64

	text []byte // the file: names point into it
	core int    // text[:core] is the kernel's own symbols, sorted by address

	// modules' symbols (and ftrace's trampolines)
	addrs   []uint64 // sorted
	names   []uint64 // start<<32 | end of each name in text
	mods    []uint16 // index into modules
	modules [][]byte // modules[0] is nil

	cache [symCacheSize]symCached
}

const symCacheBits = 12

const symCacheSize = 1 << symCacheBits

// symCached is one cached lookup.
type symCached struct {
	addr, offset, size uint64
	name, module       []byte
	ok, valid          bool
}

// ParseKallsyms reads /proc/kallsyms ("ffffffff8f857340 T vfs_read", then "\t[module]" for a
// module's). It refuses a table whose addresses are all zero: the kernel hid them
// (kptr_restrict), and nothing could be looked up.
func ParseKallsyms(text []byte) (*Symbols, error) {
	s := &Symbols{text: text, core: moduleLines(text), modules: [][]byte{nil}}
	nonzero := s.parseModules(text[s.core:], s.core)
	if last := bytes.LastIndexByte(text[:max(s.core-1, 0)], '\n') + 1; s.core > 0 {
		// sorted: the last line of the kernel's own has the highest address
		if a, _, _, ok := s.coreLine(last); ok && a != 0 {
			nonzero = true
		}
	}
	if !nonzero {
		return nil, errors.New("kallsyms lists no addresses (kptr_restrict hides them)")
	}
	s.coreLo = s.coreAddrOf(" _text\n")
	s.coreHi = s.coreAddrOf(" _end\n")
	return s, nil
}

// moduleLines finds where the modules' lines (those with a tab) start: they all come after the
// kernel's own, so a binary search over the lines finds the first, without scanning the file.
func moduleLines(text []byte) int {
	lo, hi := 0, len(text) // the first module line starts in [lo, hi]
	for lo < hi {
		mid := max(bytes.LastIndexByte(text[:(lo+hi)/2], '\n')+1, lo)
		end := bytes.IndexByte(text[mid:], '\n')
		if end < 0 {
			end = len(text) - mid
		}
		if bytes.IndexByte(text[mid:mid+end], '\t') >= 0 {
			hi = mid
		} else {
			lo = mid + end + 1
		}
	}
	return min(lo, len(text))
}

// coreAddrOf finds the address of a kernel symbol by the end of its line, 0 when absent. _text
// comes among the first lines and _end among the last: those are looked at first.
func (s *Symbols) coreAddrOf(suffix string) uint64 {
	t := s.text[:s.core]
	const near = 64 << 10
	i := bytes.Index(t[:min(near, len(t))], []byte(suffix))
	if i < 0 && len(t) > near {
		if j := bytes.Index(t[len(t)-near:], []byte(suffix)); j >= 0 {
			i = len(t) - near + j
		} else {
			i = bytes.Index(t, []byte(suffix))
		}
	}
	if i < 0 {
		return 0
	}
	a, _, _, _ := s.coreLine(bytes.LastIndexByte(s.text[:i], '\n') + 1)
	return a
}

// coreLine parses the line at pos: its address, where its name starts and ends (the name
// runs to the end of the line), and where the next line starts.
func (s *Symbols) coreLine(pos int) (addr uint64, name [2]int, next int, ok bool) {
	t := s.text[:s.core]
	end := bytes.IndexByte(t[pos:], '\n')
	if end < 0 {
		end = len(t)
	} else {
		end += pos
	}
	next = end + 1
	line := t[pos:end]
	if len(line) < 20 || line[16] != ' ' || line[18] != ' ' {
		return 0, name, next, false
	}
	addr, ok = parseHex16(line[:16])
	return addr, [2]int{pos + 19, end}, next, ok
}

// parseModules parses the modules' lines (text starts at byte base of the file), sorted by
// address, keeping the listed order among equal addresses. It says whether any address was
// not zero.
func (s *Symbols) parseModules(text []byte, base int) bool {
	modIndex := map[string]uint16{}
	nonzero := false
	for pos := 0; pos < len(text); {
		end := bytes.IndexByte(text[pos:], '\n')
		if end < 0 {
			end = len(text)
		} else {
			end += pos
		}
		line := text[pos:end]
		start := pos
		pos = end + 1
		// "ADDR t NAME\t[MOD]"
		if len(line) < 20 || line[16] != ' ' || line[18] != ' ' {
			continue
		}
		addr, ok := parseHex16(line[:16])
		if !ok {
			continue
		}
		nameStart := base + start + 19
		nameEnd := base + end
		var mod uint16
		if tab := bytes.IndexByte(line[19:], '\t'); tab >= 0 {
			nameEnd = nameStart + tab
			m := bytes.Trim(line[19+tab+1:], "[]")
			switch {
			case string(m) == "__builtin__ftrace":
				// ftrace's trampolines: listed, but the kernel's lookup does not find
				// them (it prints their addresses); they end the symbol before them
				mod = noSymbol
			case len(m) > 0 && string(m) != "bpf":
				idx, ok := modIndex[string(m)]
				if !ok {
					idx = uint16(len(s.modules))
					s.modules = append(s.modules, m)
					modIndex[string(m)] = idx
				}
				mod = idx
			}
		}
		if addr != 0 {
			nonzero = true
		}
		s.addrs = append(s.addrs, addr)
		s.names = append(s.names, uint64(nameStart)<<32|uint64(nameEnd))
		s.mods = append(s.mods, mod)
	}
	if !slices.IsSorted(s.addrs) {
		s.sort()
	}
	return nonzero
}

// sort orders the modules' table by address, keeping the listed order among equal addresses.
func (s *Symbols) sort() {
	idx := make([]int, len(s.addrs))
	for i := range idx {
		idx[i] = i
	}
	slices.SortStableFunc(idx, func(a, b int) int {
		switch {
		case s.addrs[a] < s.addrs[b]:
			return -1
		case s.addrs[a] > s.addrs[b]:
			return 1
		}
		return 0
	})
	addrs := make([]uint64, len(idx))
	names := make([]uint64, len(idx))
	mods := make([]uint16, len(idx))
	for i, j := range idx {
		addrs[i], names[i], mods[i] = s.addrs[j], s.names[j], s.mods[j]
	}
	s.addrs, s.names, s.mods = addrs, names, mods
}

// noSymbol marks a table entry the kernel's lookup does not find.
const noSymbol = ^uint16(0)

// Lookup finds the symbol holding addr: its name, addr's offset in it, its size (to the next
// higher address; 0 for the last symbol) and its module (nil for the kernel's own).
func (s *Symbols) Lookup(addr uint64) (name []byte, offset, size uint64, module []byte, ok bool) {
	if s == nil {
		return nil, 0, 0, nil, false
	}
	c := &s.cache[(addr*0x9e3779b97f4a7c15)>>(64-symCacheBits)]
	if !c.valid || c.addr != addr {
		*c = symCached{addr: addr, valid: true}
		c.name, c.offset, c.size, c.module, c.ok = s.lookup(addr)
	}
	return c.name, c.offset, c.size, c.module, c.ok
}

func (s *Symbols) lookup(addr uint64) (name []byte, offset, size uint64, module []byte, ok bool) {
	cname, cstart, csize, cok := s.lookupCore(addr)
	mname, mstart, msize, mod, mok := s.lookupModules(addr)
	switch {
	case mok && (!cok || mstart > cstart):
		return mname, addr - mstart, msize, mod, true
	case cok:
		return cname, addr - cstart, csize, nil, true
	}
	return nil, 0, 0, nil, false
}

// lookupCore binary-searches the kernel's own symbols, in the text.
func (s *Symbols) lookupCore(addr uint64) (name []byte, start, size uint64, ok bool) {
	if s.coreLo != 0 && s.coreHi != 0 && (addr < s.coreLo || addr >= s.coreHi) {
		return nil, 0, 0, false
	}
	best := -1
	for lo, hi := 0, s.core; lo < hi; {
		mid := max(bytes.LastIndexByte(s.text[:(lo+hi)/2], '\n')+1, lo)
		a, _, next, ok := s.coreLine(mid)
		if ok && a <= addr {
			best, lo = mid, next
		} else {
			hi = mid
		}
	}
	if best < 0 {
		return nil, 0, 0, false
	}
	start, nm, next, _ := s.coreLine(best)
	for best > 0 { // the first alias listed
		prev := bytes.LastIndexByte(s.text[:best-1], '\n') + 1
		a, pnm, _, ok := s.coreLine(prev)
		if !ok || a != start {
			break
		}
		best, nm = prev, pnm
	}
	for next < s.core { // the next higher address
		a, _, n, ok := s.coreLine(next)
		if ok && a > start {
			size = a - start
			break
		}
		next = n
	}
	return s.text[nm[0]:nm[1]], start, size, true
}

// lookupModules searches the modules' table.
func (s *Symbols) lookupModules(addr uint64) (name []byte, start, size uint64, module []byte, ok bool) {
	// the first index whose address is above addr, less one, is the last at or below it
	i, _ := slices.BinarySearch(s.addrs, addr+1)
	if addr == ^uint64(0) {
		i = len(s.addrs)
	}
	i--
	if i < 0 {
		return nil, 0, 0, nil, false
	}
	start = s.addrs[i]
	for i > 0 && s.addrs[i-1] == start { // the first alias listed
		i--
	}
	if s.mods[i] == noSymbol {
		return nil, 0, 0, nil, false
	}
	j := i + 1
	for j < len(s.addrs) && s.addrs[j] == start {
		j++
	}
	if j < len(s.addrs) {
		size = s.addrs[j] - start
	}
	n := s.names[i]
	return s.text[n>>32 : uint32(n)], start, size, s.modules[s.mods[i]], true
}

// kretprobedMsg is what the kernel prints for a return address a kretprobe diverted
// (kretprobed() in kernel/trace/trace_output.c).
const kretprobedMsg = "[unknown/kretprobe'd]"

// Kretprobed says whether addr is the kretprobe (rethook) trampoline's.
func (s *Symbols) Kretprobed(addr uint64) bool {
	name, off, _, _, ok := s.Lookup(addr)
	return ok && off == 0 && kretprobeTrampoline(name)
}

// kretprobeTrampoline says whether a symbol is the kretprobe (rethook) trampoline.
func kretprobeTrampoline(name []byte) bool {
	return string(name) == "__kretprobe_trampoline" || string(name) == "arch_rethook_trampoline"
}

// AppendName appends addr as the kernel's function tracer prints it (seq_print_sym without
// sym-offset): the symbol's name alone, or "0x%08lx" when there is none.
func (s *Symbols) AppendName(dst []byte, addr uint64) []byte {
	if s.Kretprobed(addr) {
		return append(dst, kretprobedMsg...)
	}
	if name, _, _, _, ok := s.Lookup(addr); ok && len(name) > 0 {
		return append(dst, name...)
	}
	return appendHex(append(dst, "0x"...), addr, 8)
}

// AppendNoOffset appends addr as %ps prints it (sprint_symbol_no_offset): the name,
// " [module]" for a module's, or "0x..." when no symbol holds it.
func (s *Symbols) AppendNoOffset(dst []byte, addr uint64) []byte {
	name, _, _, mod, ok := s.Lookup(addr)
	if !ok || len(name) == 0 {
		return appendHex(append(dst, "0x"...), addr, 1)
	}
	dst = append(dst, name...)
	if mod != nil {
		dst = append(dst, " ["...)
		dst = append(dst, mod...)
		dst = append(dst, ']')
	}
	return dst
}

// AppendSymOffset appends addr as %pS prints it (sprint_symbol): "name+0xoff/0xsize", then
// " [module]" for a module's symbol; "0x..." when there is none.
func (s *Symbols) AppendSymOffset(dst []byte, addr uint64) []byte {
	name, off, size, mod, ok := s.Lookup(addr)
	if !ok || len(name) == 0 {
		return appendHex(append(dst, "0x"...), addr, 1)
	}
	dst = append(dst, name...)
	dst = append(dst, '+')
	dst = appendOffsetSize(dst, off, size)
	if mod != nil {
		dst = append(dst, " ["...)
		dst = append(dst, mod...)
		dst = append(dst, ']')
	}
	return dst
}

// appendOffsetSize appends "0xoff/0xsize".
func appendOffsetSize(dst []byte, off, size uint64) []byte {
	dst = append(dst, "0x"...)
	dst = strconv.AppendUint(dst, off, 16)
	dst = append(dst, "/0x"...)
	return strconv.AppendUint(dst, size, 16)
}

// appendHex appends v in lower-case hex, zero-padded to at least width digits.
func appendHex(dst []byte, v uint64, width int) []byte {
	var b [16]byte
	h := strconv.AppendUint(b[:0], v, 16)
	for i := len(h); i < width; i++ {
		dst = append(dst, '0')
	}
	return append(dst, h...)
}

// parseHex16 parses 16 hex digits (kallsyms' address column) without allocating.
func parseHex16(b []byte) (uint64, bool) {
	var v uint64
	for _, c := range b {
		switch {
		case c >= '0' && c <= '9':
			c -= '0'
		case c >= 'a' && c <= 'f':
			c -= 'a' - 10
		case c >= 'A' && c <= 'F':
			c -= 'A' - 10
		default:
			return 0, false
		}
		v = v<<4 | uint64(c)
	}
	return v, true
}
