package probes

import (
	"strconv"
)

// The Manager's uprobe side: the symbol resolved before writing, read back for listing.

// resolveUprobe resolves a uprobe symbol the parser left unresolved (the console parses
// without IO), with the Parser's UserSpace when it has one (its --force), else a fresh one.
func (m *Manager) resolveUprobe(d *Definition) error {
	if d.Uprobe == nil {
		return nil
	}
	u := m.Parser.User
	if u == nil {
		u = NewUserSpace()
	}
	return d.ResolveUprobe(u)
}

// UprobeListing is a uprobe as `probe list` shows it: the kernel lists PATH:0xOFFSET; ftctl
// reads the symbol back from the ELF file.
type UprobeListing struct {
	Path   string `json:"path"`
	Offset uint64 `json:"offset"`
	// Symbol and SymOffset: the function holding Offset, and Offset's distance from its start
	// ("" when the file is gone, not ELF, or has no symbol there).
	Symbol    string `json:"symbol"`
	SymOffset uint64 `json:"symbol_offset"`
	Segment   string `json:"segment"` // the PT_LOAD segment, "" when unknown
	// Place is PATH:SYMBOL[+OFFS] when the symbol is known, else PATH:0xOFFSET.
	Place string `json:"-"`
}

func listUprobe(u *UprobePlace, files *UserSpace) *UprobeListing {
	l := &UprobeListing{Path: u.Path, Offset: u.Offset, Place: u.String()}
	b, err := files.Binary(u.Path)
	if err != nil {
		return l
	}
	if s, ok := b.SegmentAt(u.Offset); ok {
		l.Segment = s.String()
	}
	if f, delta, ok := b.SymbolAt(u.Offset); ok {
		l.Symbol, l.SymOffset = f.Name, delta
		l.Place = u.Path + ":" + f.Name
		if delta != 0 {
			l.Place += "+" + strconv.FormatUint(delta, 10)
		}
		l.Place += u.suffix()
	}
	return l
}
