package stream

import (
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/ftctl/ftctl/tracefs"
)

// The binary side of the stream: what per_cpu/cpuN/trace_pipe_raw returns is ring-buffer pages,
// each a header (events/header_page) then events, each behind a compressed 32-bit header
// (events/header_event; kernel/trace/ring_buffer.c):
//
//	type_len:5 time_delta:27 [array[0]:32] data...
//
// type_len 1..28: the data is type_len*4 bytes, right after the header; 0: array[0] holds the
// data's length plus its own 4 bytes and the data follows it; 29 padding (time_delta 0: the rest
// of the page is empty; otherwise a discarded event of array[0]+4 bytes); 30 a time extend
// (a delta too wide for 27 bits: array[0]<<27 + time_delta); 31 an absolute time stamp.

// Ring-buffer event types (include/linux/ring_buffer.h).
const (
	rbTypePadding    = 29
	rbTypeTimeExtend = 30
	rbTypeTimeStamp  = 31
	rbTSShift        = 27
	// rbMissedEvents and rbMissedStored are flags in the page header's commit word: events
	// were lost before this page, and their count is stored after the page's data.
	rbMissedEvents = 1 << 31
	rbMissedStored = 1 << 30
	// rbTSMSB: an absolute time stamp keeps 59 bits; the top ones come from the time before.
	rbTSMSBShift = 59
)

// Page is one decoded ring-buffer page header.
type Page struct {
	TS     uint64 // the time stamp the page's first delta counts from
	Data   []byte // the events, up to the commit
	Missed bool   // events were lost (overwritten) before this page
	Lost   int64  // how many, or -1 when the kernel did not store the count
}

// ParsePage reads a page's header: its time stamp, its data, and whether (and how many)
// events were lost before it.
func ParsePage(l tracefs.PageLayout, b []byte) (Page, error) {
	var p Page
	// the layout is the kernel's, or a file's checked by ParsePageLayout; these bounds keep a
	// layout of any other origin from slicing past the page
	if l.TSOffset < 0 || l.CommitOffset < 0 || l.DataOffset < 0 ||
		len(b) < l.DataOffset || len(b)-l.CommitSize < l.CommitOffset || len(b)-8 < l.TSOffset {
		return p, fmt.Errorf("ring-buffer page of %d bytes: shorter than its header", len(b))
	}
	p.TS = binary.LittleEndian.Uint64(b[l.TSOffset:])
	var commit uint64
	if l.CommitSize == 8 {
		commit = binary.LittleEndian.Uint64(b[l.CommitOffset:])
	} else {
		commit = uint64(binary.LittleEndian.Uint32(b[l.CommitOffset:]))
	}
	// The flags are bits of the low 32: 6.1 adds 1<<31 as an int to the (64-bit) local_t,
	// which sign-extends it into the high half (libtraceevent's kbuffer reads 32 bits too).
	commit = uint64(uint32(commit))
	size := int(commit &^ (rbMissedEvents | rbMissedStored))
	data := b[l.DataOffset:]
	if size > len(data) {
		return p, fmt.Errorf("ring-buffer page: commit %d past the %d bytes read", size, len(data))
	}
	p.Data = data[:size]
	p.Lost = 0
	if commit&rbMissedEvents != 0 {
		p.Missed, p.Lost = true, -1
		if commit&rbMissedStored != 0 && size+8 <= len(data) {
			p.Lost = int64(binary.LittleEndian.Uint64(data[size:]))
		}
	}
	return p, nil
}

// Events calls f for each event of the page's data, with its time stamp (in the trace
// clock's units) and its data (the trace entry: common fields first). It stops at the first
// error f returns, and says if the data is malformed (an event running past the page).
func (p Page) Events(f func(ts uint64, data []byte) error) error {
	c := p.Cursor()
	for {
		ts, data, err := c.Next()
		if err != nil || data == nil {
			return err
		}
		if err := f(ts, data); err != nil {
			return err
		}
	}
}

// PageCursor walks a page's events one at a time (Page.Events, as a FileSource needs them: one
// pending event per CPU, none kept in a list).
type PageCursor struct {
	ts  uint64
	b   []byte
	off int // of b in the page's data, for errors
}

// Cursor is a cursor at the page's first event.
func (p Page) Cursor() PageCursor { return PageCursor{ts: p.TS, b: p.Data} }

// Offset is where the cursor is in the page's data (the next event's header).
func (c *PageCursor) Offset() int { return c.off }

// Next gives the next event's time stamp and data; data nil at the end of the page.
func (c *PageCursor) Next() (ts uint64, data []byte, err error) {
	for len(c.b) >= 4 {
		b := c.b
		h := binary.LittleEndian.Uint32(b)
		typeLen, delta := h&0x1f, uint64(h>>5)
		var array uint32
		if len(b) >= 8 {
			array = binary.LittleEndian.Uint32(b[4:])
		}
		n := 0
		switch {
		case typeLen == rbTypePadding:
			if delta == 0 {
				c.b = nil // the rest of the page is empty
				return 0, nil, nil
			}
			n = 4 + int(array)
			if len(b) < 8 || n > len(b) || n < 8 {
				return 0, nil, errors.New("ring-buffer page: padding runs past the page")
			}
		case typeLen == rbTypeTimeExtend:
			if len(b) < 8 {
				return 0, nil, errors.New("ring-buffer page: time extend cut short")
			}
			c.ts += uint64(array)<<rbTSShift + delta
			n = 8
		case typeLen == rbTypeTimeStamp:
			if len(b) < 8 {
				return 0, nil, errors.New("ring-buffer page: time stamp cut short")
			}
			abs := uint64(array)<<rbTSShift + delta
			// rb_fix_abs_ts: the stamp keeps 59 bits, the top ones are the last time's.
			if msb := c.ts & (0xf << rbTSMSBShift); msb != 0 {
				abs |= msb
				if abs < c.ts {
					abs += 1 << rbTSMSBShift
				}
			}
			c.ts = abs
			n = 8
		case typeLen == 0:
			n = 4 + int(array)
			if len(b) < 8 || n > len(b) || n < 8 {
				return 0, nil, errors.New("ring-buffer page: event runs past the page")
			}
			c.ts += delta
			data = b[8:n]
		default:
			n = 4 + int(typeLen)*4
			if n > len(b) {
				return 0, nil, errors.New("ring-buffer page: event runs past the page")
			}
			c.ts += delta
			data = b[4:n]
		}
		c.b, c.off = b[n:], c.off+n
		if data != nil {
			return c.ts, data, nil
		}
	}
	return 0, nil, nil
}
