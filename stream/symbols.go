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
type Symbols struct {
	// The kernel's own symbols are looked up only between _text and _end (is_ksym_addr), when
	// the table has them; 0 when not.
	coreLo, coreHi uint64

	text    []byte   // the file: names point into it
	addrs   []uint64 // sorted
	names   []uint64 // start<<32 | end of each name in text
	mods    []uint16 // index into modules, 0 for the kernel itself
	modules [][]byte // modules[0] is nil
}

// ParseKallsyms reads /proc/kallsyms ("ffffffff8f857340 T vfs_read", then "\t[module]" for a
// module's). It refuses a table whose addresses are all zero: the kernel hid them
// (kptr_restrict), and nothing could be looked up.
func ParseKallsyms(text []byte) (*Symbols, error) {
	s := &Symbols{text: text, modules: [][]byte{nil}}
	n := bytes.Count(text, []byte{'\n'}) + 1
	s.addrs = make([]uint64, 0, n)
	s.names = make([]uint64, 0, n)
	s.mods = make([]uint16, 0, n)
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
		// "ADDR T NAME" or "ADDR t NAME\t[MOD]"
		if len(line) < 20 || line[16] != ' ' || line[18] != ' ' {
			continue
		}
		addr, ok := parseHex16(line[:16])
		if !ok {
			continue
		}
		nameStart := start + 19
		nameEnd := end
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
		} else {
			switch string(line[19:]) {
			case "_text":
				s.coreLo = addr
			case "_end":
				s.coreHi = addr
			}
		}
		if addr != 0 {
			nonzero = true
		}
		s.addrs = append(s.addrs, addr)
		s.names = append(s.names, uint64(nameStart)<<32|uint64(nameEnd))
		s.mods = append(s.mods, mod)
	}
	if !nonzero {
		return nil, errors.New("kallsyms lists no addresses (kptr_restrict hides them)")
	}
	if !slices.IsSorted(s.addrs) {
		s.sort()
	}
	return s, nil
}

// sort orders the table by address, keeping the listed order among equal addresses.
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
	// the first index whose address is above addr, less one, is the last at or below it
	i, _ := slices.BinarySearch(s.addrs, addr+1)
	if addr == ^uint64(0) {
		i = len(s.addrs)
	}
	i--
	if i < 0 {
		return nil, 0, 0, nil, false
	}
	start := s.addrs[i]
	for i > 0 && s.addrs[i-1] == start { // the first alias listed
		i--
	}
	switch mod := s.mods[i]; {
	case mod == noSymbol:
		return nil, 0, 0, nil, false
	case mod == 0 && s.coreLo != 0 && s.coreHi != 0 && (addr < s.coreLo || addr >= s.coreHi):
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
	return s.text[n>>32 : uint32(n)], addr - start, size, s.modules[s.mods[i]], true
}

// AppendName appends addr as the kernel's function tracer prints it (seq_print_sym without
// sym-offset): the symbol's name alone, or "0x%08lx" when there is none.
func (s *Symbols) AppendName(dst []byte, addr uint64) []byte {
	if name, off, _, _, ok := s.Lookup(addr); ok && len(name) > 0 {
		if off == 0 && (string(name) == "__kretprobe_trampoline" || string(name) == "arch_rethook_trampoline") {
			return append(dst, "[unknown/kretprobe'd]"...) // kretprobed(): a return diverted by a kretprobe
		}
		return append(dst, name...)
	}
	return appendHex(append(dst, "0x"...), addr, 8)
}

// AppendSymOffset appends addr as %pS prints it (sprint_symbol): "name+0xoff/0xsize", then
// " [module]" for a module's symbol; "0x..." when there is none.
func (s *Symbols) AppendSymOffset(dst []byte, addr uint64) []byte {
	name, off, size, mod, ok := s.Lookup(addr)
	if !ok || len(name) == 0 {
		return appendHex(append(dst, "0x"...), addr, 1)
	}
	dst = append(dst, name...)
	dst = append(dst, "+0x"...)
	dst = strconv.AppendUint(dst, off, 16)
	dst = append(dst, "/0x"...)
	dst = strconv.AppendUint(dst, size, 16)
	if mod != nil {
		dst = append(dst, " ["...)
		dst = append(dst, mod...)
		dst = append(dst, ']')
	}
	return dst
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
