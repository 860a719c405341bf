package probes

import (
	"strconv"

	"github.com/ftctl/ftctl/tracefs"
)

// The Manager's uprobe side: uprobes live in uprobe_events, kprobes in kprobe_events; both
// files take the same commands (p, r, -:GROUP/EVENT) and list the same way.

const (
	kprobeEvents = "kprobe_events"
	uprobeEvents = "uprobe_events"
)

// EventsFile is where the definition is written: uprobe_events or kprobe_events.
func (d *Definition) EventsFile() string {
	if d.Uprobe != nil {
		return uprobeEvents
	}
	return kprobeEvents
}

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

// listEntries reads kprobe_events and uprobe_events: a kernel may have either (the
// development machines' has uprobe_events and no kprobe_events); neither is the error of
// reading kprobe_events.
func (m *Manager) listEntries() ([]tracefs.ProbeListEntry, error) {
	top := m.FS.Top()
	var out []tracefs.ProbeListEntry
	var firstErr error
	read := 0
	for _, file := range []string{kprobeEvents, uprobeEvents} {
		if file == uprobeEvents && !top.Has(file) {
			continue
		}
		b, err := top.ReadFile(file)
		if err != nil {
			if firstErr == nil {
				firstErr = err
			}
			continue
		}
		read++
		out = append(out, tracefs.ParseProbeList(string(b))...)
	}
	if read == 0 {
		return nil, firstErr
	}
	return out, nil
}

// fileOf is the file that lists GROUP/EVENT, with its text (kprobe_events when neither does:
// removing what is gone is done).
func (m *Manager) fileOf(group, event string) (string, []byte, error) {
	top := m.FS.Top()
	var first []byte
	var firstErr error
	for i, file := range []string{kprobeEvents, uprobeEvents} {
		if !top.Has(file) {
			continue
		}
		b, err := top.ReadFile(file)
		if err != nil {
			if i == 0 {
				firstErr = err
			}
			continue
		}
		if i == 0 {
			first = b
		}
		if len(pointsOf(tracefs.ParseProbeList(string(b)), group, event)) > 0 {
			return file, b, nil
		}
	}
	return kprobeEvents, first, firstErr
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
