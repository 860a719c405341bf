package stream

import "bytes"

// Decoder turns the bytes read from trace_pipe into events: it splits lines (keeping a partial
// last line for the next Feed), parses each, and groups a "<stack trace>" line with the
// " => frame" lines after it into one event.
//
// The kernel prints an entry, a stack trace with all its frames included, in one read of
// trace_pipe, provided the read asks for more than the kernel's trace_seq holds (tracefs.Pipe
// does; asked for less, 6.12 cuts an entry between two reads). So a reader calls Flush after each read: it emits a stack trace whose frames may
// all have arrived. Feeding the same bytes in other pieces, with one Flush at the end, gives the
// same events.
type Decoder struct {
	partial []byte // a line without its newline yet
	ev      Event

	// A stack trace being gathered: its first line and frames, copied (a later Feed may reuse
	// the buffer they came in).
	stack    Event
	inStack  bool
	stackBuf []byte
	frameEnd []int // end offsets of the frames in stackBuf, after the first line

	// A probe line whose string argument did not close on its line: the kernel prints strings
	// raw, so a file name holding a newline continues on the next line (which may look like
	// any event). The lines after it are gathered, copied, until the string closes.
	probe    Event
	inProbe  bool
	probeBuf []byte
	probeEnd []int // end offsets of the lines in probeBuf
}

// Bounds on a probe string spread over lines: a string argument is at most PATH_MAX (4096)
// bytes as the kernel fetches it (MAX_STRING_SIZE).
const (
	maxProbeJoin  = 16 << 10
	maxProbeLines = 64
)

// Emit receives each event. The event and its slices are valid only during the call. An error
// stops the decoding and is returned by Feed or Flush.
type Emit func(*Event) error

var framePrefix = []byte(" => ")

// Feed decodes the complete lines of p.
func (d *Decoder) Feed(p []byte, emit Emit) error {
	if len(d.partial) > 0 {
		nl := bytes.IndexByte(p, '\n')
		if nl < 0 {
			d.partial = append(d.partial, p...)
			return nil
		}
		d.partial = append(d.partial, p[:nl]...)
		err := d.line(d.partial, emit)
		d.partial = d.partial[:0]
		if err != nil {
			return err
		}
		p = p[nl+1:]
	}
	for len(p) > 0 {
		nl := bytes.IndexByte(p, '\n')
		if nl < 0 {
			d.partial = append(d.partial, p...)
			return nil
		}
		if err := d.line(p[:nl], emit); err != nil {
			return err
		}
		p = p[nl+1:]
	}
	return nil
}

// Flush emits what is pending: a stack trace being gathered, and a last line that came without
// its newline (only at the very end of a stream: the kernel ends every line).
func (d *Decoder) Flush(emit Emit) error {
	if len(d.partial) > 0 {
		err := d.line(d.partial, emit)
		d.partial = d.partial[:0]
		if err != nil {
			return err
		}
	}
	if err := d.flushProbe(emit); err != nil {
		return err
	}
	return d.flushStack(emit)
}

func (d *Decoder) line(line []byte, emit Emit) error {
	if d.inProbe {
		return d.probeLine(line, emit)
	}
	if d.inStack && bytes.HasPrefix(line, framePrefix) {
		d.stackBuf = append(d.stackBuf, '\n')
		d.stackBuf = append(d.stackBuf, line...)
		d.frameEnd = append(d.frameEnd, len(d.stackBuf))
		return nil
	}
	if err := d.flushStack(emit); err != nil {
		return err
	}
	ParseLine(&d.ev, line)
	if d.ev.Kind == KindStack || d.ev.Kind == KindUserStack {
		d.inStack = true
		d.stackBuf = append(d.stackBuf[:0], line...)
		d.frameEnd = d.frameEnd[:0]
		return nil
	}
	if d.ev.Kind == KindProbe && !d.ev.ArgsOK && bytes.Contains(d.ev.Text, openString) {
		d.inProbe = true
		d.probeBuf = append(d.probeBuf[:0], line...)
		d.probeEnd = append(d.probeEnd[:0], len(d.probeBuf))
		return nil
	}
	return emit(&d.ev)
}

var openString = []byte(`="`)

// probeLine adds a line to a probe line whose string had not closed: once the arguments parse
// (the string closed), the lines are one event. When they never do (within the bounds, or by
// the end of the read: the kernel prints an entry within one read), the first line is emitted
// as it was and the others are taken as lines of their own.
func (d *Decoder) probeLine(line []byte, emit Emit) error {
	d.probeBuf = append(d.probeBuf, '\n')
	d.probeBuf = append(d.probeBuf, line...)
	d.probeEnd = append(d.probeEnd, len(d.probeBuf))
	ParseLine(&d.probe, d.probeBuf)
	if d.probe.Kind == KindProbe && d.probe.ArgsOK {
		d.inProbe = false
		return emit(&d.probe)
	}
	if len(d.probeBuf) > maxProbeJoin || len(d.probeEnd) > maxProbeLines {
		return d.flushProbe(emit)
	}
	return nil
}

// flushProbe gives up on a probe string that never closed: its first line is an event as
// printed, the lines after it are lines of their own.
func (d *Decoder) flushProbe(emit Emit) error {
	if !d.inProbe {
		return nil
	}
	d.inProbe = false
	// The replayed lines may start another gathering: it gets buffers of its own.
	buf, ends := d.probeBuf, d.probeEnd
	d.probeBuf, d.probeEnd = nil, nil
	ParseLine(&d.probe, buf[:ends[0]])
	if err := emit(&d.probe); err != nil {
		return err
	}
	for k := 1; k < len(ends); k++ {
		if err := d.line(buf[ends[k-1]+1:ends[k]], emit); err != nil {
			return err
		}
	}
	return d.flushProbe(emit) // a replayed line may have opened a string that never closes either
}

func (d *Decoder) flushStack(emit Emit) error {
	if !d.inStack {
		return nil
	}
	d.inStack = false
	// Re-parse the first line from the copy, so that every slice points into stackBuf.
	first := len(d.stackBuf)
	if len(d.frameEnd) > 0 {
		first = bytes.IndexByte(d.stackBuf, '\n')
	}
	ParseLine(&d.stack, d.stackBuf[:first])
	d.stack.Line = d.stackBuf
	start := first
	for _, end := range d.frameEnd {
		// "\n => frame"; the kernel prints user frames as " =>  <address>": trim the spaces.
		d.stack.Frames = append(d.stack.Frames, trimSpaces(d.stackBuf[start+1+len(framePrefix):end]))
		start = end
	}
	return emit(&d.stack)
}
