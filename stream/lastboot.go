package stream

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strconv"

	"github.com/ftctl/ftctl/tracefs"
)

// A persistent ring buffer (Linux 6.12: `reserve_mem=` and `trace_instance=NAME@LABEL`) keeps
// its pages across a warm reboot: after it, the instance's ring holds the previous boot's
// events, whose addresses are the previous boot's (KASLR moves the kernel at each boot), and
// whose event ids are the previous kernel's. DumpLastBoot writes that ring into a trace.dat
// with the formats and symbols SaveHeaderEvents saved in an earlier boot (the new kernel's may
// differ), the symbols moved to where the previous boot had them: by last_boot_info's deltas
// (current minus previous) and by how far the kernel moved between the boot that saved them and
// this one (their _text).

// AddressShift moves a saved capture's kernel addresses to the boot that recorded a ring: Text
// is added to the kernel's own symbols (kallsyms lines without a [module]), Data to the
// printk formats' addresses. A module's symbols are left: modules load where they can.
type AddressShift struct {
	Text, Data int64
	// Known: the shift could be computed (false: this kernel's kallsyms hide their addresses,
	// or a saved capture has none; the capture's addresses are taken as they are).
	Known bool
}

// Kallsyms is the kallsyms text b with the kernel's own symbols moved by Text.
func (s AddressShift) Kallsyms(b []byte) []byte {
	if s.Text == 0 {
		return b
	}
	return shiftLines(b, s.Text, func(line []byte) ([]byte, []byte, bool) {
		i := bytes.IndexByte(line, ' ')
		if i <= 0 || bytes.IndexByte(line, '[') >= 0 { // a module's: "ADDR t NAME\t[MOD]"
			return nil, nil, false
		}
		return line[:i], line[i:], true
	})
}

// Printk is printk_formats' text b ("0xADDR : \"FMT\"") with its addresses moved by Data.
func (s AddressShift) Printk(b []byte) []byte {
	if s.Data == 0 {
		return b
	}
	return shiftLines(b, s.Data, func(line []byte) ([]byte, []byte, bool) {
		i := bytes.IndexByte(line, ' ')
		if i <= 2 || !bytes.HasPrefix(line, []byte("0x")) {
			return nil, nil, false
		}
		return line[2:i], line[i:], true
	})
}

// shiftLines adds delta to the hexadecimal address split finds at the start of each line; a
// line split refuses, or whose address does not parse, is kept as it is.
func shiftLines(b []byte, delta int64, split func([]byte) (addr, rest []byte, ok bool)) []byte {
	out := make([]byte, 0, len(b))
	for len(b) > 0 {
		line := b
		if i := bytes.IndexByte(b, '\n'); i >= 0 {
			line, b = b[:i+1], b[i+1:]
		} else {
			b = nil
		}
		addr, rest, ok := split(line)
		v, err := strconv.ParseUint(string(addr), 16, 64)
		if !ok || err != nil {
			out = append(out, line...)
			continue
		}
		prefix := ""
		if bytes.HasPrefix(line, []byte("0x")) {
			prefix = "0x"
		}
		out = append(out, fmt.Sprintf("%s%0*x", prefix, len(addr), v+uint64(delta))...)
		out = append(out, rest...)
	}
	return out
}

// symbolAddr is the address of the first symbol name in kallsyms' text (0 when it is not there
// or hidden).
func symbolAddr(kallsyms []byte, name string) uint64 {
	want := []byte(" " + name)
	for len(kallsyms) > 0 {
		line := kallsyms
		if i := bytes.IndexByte(kallsyms, '\n'); i >= 0 {
			line, kallsyms = kallsyms[:i], kallsyms[i+1:]
		} else {
			kallsyms = nil
		}
		// "ADDR T NAME": the name after the type letter
		if i := bytes.IndexByte(line, ' '); i > 0 && bytes.HasSuffix(line, want) && len(line) == i+2+len(want) {
			v, _ := strconv.ParseUint(string(line[:i]), 16, 64)
			return v
		}
	}
	return 0
}

// startKernelX86_64 is __START_KERNEL on x86-64 (arch/x86/include/asm/page_64_types.h, with
// the default CONFIG_PHYSICAL_START): _text without KASLR, from which kaslr_offset() counts.
const startKernelX86_64 = 0xffffffff81000000

// LastBootShift is the shift from a capture saved in some boot (its kallsyms saved) to the
// previous boot, whose ring lb describes, given this boot's kallsyms now. 6.12's deltas are
// now minus previous: previous = now - delta, and saved → previous is (now - saved) - delta.
// A "[kernel]" base (later kernels) is the previous boot's kaslr_offset(), from x86-64's
// __START_KERNEL. Data moves with _sdata where both have it, else with the text.
func LastBootShift(saved, now []byte, lb tracefs.LastBoot) AddressShift {
	savedText, nowText := symbolAddr(saved, "_text"), symbolAddr(now, "_text")
	if savedText == 0 {
		return AddressShift{}
	}
	var s AddressShift
	switch {
	case lb.HasBase && runtime.GOARCH == "amd64":
		s.Text = int64(startKernelX86_64 + lb.KASLR - savedText)
		s.Data, s.Known = s.Text, true
	case lb.HasBase || nowText == 0:
		return AddressShift{}
	default:
		s.Text = int64(nowText-savedText) - lb.Text
		s.Data, s.Known = s.Text, true
		if sd, nd := symbolAddr(saved, "_sdata"), symbolAddr(now, "_sdata"); sd != 0 && nd != 0 {
			s.Data = int64(nd-sd) - lb.Data
		}
	}
	return s
}

// DumpLastBoot writes the previous boot's events in in's persistent ring into the trace.dat
// out, with header's formats and symbols (SaveHeaderEvents's file, from an earlier boot) moved
// by LastBootShift. It reads the ring through trace_pipe_raw, which empties it. out is written
// as Dump's. The shift applied is returned with the stats.
func DumpLastBoot(ctx context.Context, in *tracefs.Instance, header, out string, owners ...int) (*DumpStats, AddressShift, error) {
	lb, err := in.LastBootInfo()
	if err != nil {
		return nil, AddressShift{}, err
	}
	saved, closeSaved, err := readSavedHeader(header)
	if err != nil {
		return nil, AddressShift{}, err
	}
	now, _ := in.FS().Kallsyms(ctx)
	shift := LastBootShift(saved.Kallsyms, now, lb)
	closeSaved()
	st, err := dump(ctx, in, header, out, &shift, owners)
	return st, shift, err
}

// SaveHeaderEvents is SaveHeader with the formats of events too (SYSTEM:EVENT, or SYSTEM:""
// for a whole system), whether or not they are enabled now: a persistent ring's events, which
// the kernel enables at boot. path's directory is made (0700) if missing.
func SaveHeaderEvents(in *tracefs.Instance, path string, events []tracefs.EventName, owners ...int) error {
	h, err := readPageHeader(in)
	if err != nil {
		return err
	}
	h.PageSize = in.PageSize()
	kfs := in.FS()
	var formats formatSet
	for _, e := range events {
		if e.Event != "" {
			formats.add(kfs, e)
			continue
		}
		names, _ := kfs.Events(e.System)
		for _, n := range names {
			formats.add(kfs, tracefs.EventName{System: e.System, Event: n})
		}
	}
	if err := readDescriptions(in, h, &formats, true, nil); err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return err
	}
	return writeFileAtomic(path, owners, func(f *os.File) error { return writeSync(f, h, nil) })
}
