package stream

import (
	"context"
	"errors"
	"io"
)

// Output says where Copy writes the events and which.
type Output struct {
	W      io.Writer
	JSON   bool        // NDJSON (AppendJSON), else text (AppendText)
	Text   TextOptions // the text rendering; Raw also adds "raw" to JSON
	Filter Filter      // what is shown
	Count  int         // stop after this many events shown (0: no limit)
}

// ErrCountReached ends the decoding once Output.Count events were shown.
var errCountReached = errors.New("count reached")

// Why a stream ended (Summary.End).
const (
	EndCount       = "count"
	EndDuration    = "duration"
	EndEOF         = "eof"
	EndInterrupted = "interrupted"
)

// EndCause, as the cause of Open's cancelled context (context.WithCancelCause), ends a stream
// normally and names why (Summary.End); any other cancellation is an interruption.
type EndCause string

func (e EndCause) Error() string { return string(e) }

// Copy writes src's events to out until Output.Count, Options.Duration, the kernel's end of the
// stream or the end of Open's context, and returns the loss summary. The events of each chunk
// read are written together, in one Write. A write error (EPIPE under | head) is returned as is,
// with no summary. An interruption returns the summary and the context's error; an EndCause,
// the summary and nil.
func Copy(src *Source, out Output) (*Summary, error) {
	sum := src.Summary()
	shown := 0
	emit := func(buf *[]byte, ev *Event) error {
		ok := out.Filter.Match(ev)
		sum.Count(ev, ok)
		if !ok {
			return nil
		}
		return out.append(buf, ev, &shown)
	}
	return src.copy(sum, out.W, emit, nil)
}

// CopyFile writes a recording's events to out as Copy writes the kernel's (the same filter,
// renderers and writes, a chunk at a time) until Output.Count or the recording's end. It
// returns the events shown, and the events lost as the kernel marked them (in the losses
// shown). A write error is returned as is; a fault in the file (a *FileError) after the
// events before it were written.
func CopyFile(src *FileSource, out Output) (shown int, lost int64, err error) {
	emit := func(buf *[]byte, ev *Event) error {
		if !out.Filter.Match(ev) {
			return nil
		}
		if ev.Kind == KindLost {
			lost += max(ev.Lost, 0)
		}
		return out.append(buf, ev, &shown)
	}
	buf := make([]byte, 0, 256<<10)
	werr, err := copyChunks(src, out.W, &buf, emit)
	switch {
	case werr != nil:
		return shown, lost, werr
	case errors.Is(err, io.EOF), errors.Is(err, errCountReached):
		return shown, lost, nil
	}
	return shown, lost, err
}

// append renders ev into buf as out says and counts it in shown (losses apart):
// errCountReached once Output.Count events were shown.
func (out *Output) append(buf *[]byte, ev *Event, shown *int) error {
	if out.JSON {
		*buf = AppendJSON(*buf, ev, out.Text.Raw)
	} else {
		*buf = AppendText(*buf, ev, out.Text)
	}
	if ev.Kind != KindLost {
		*shown++
		if out.Count > 0 && *shown >= out.Count {
			return errCountReached
		}
	}
	return nil
}

// copyChunks is the loop of every copy, live or recorded: each chunk's events rendered by emit
// into buf, buf written after each chunk (what was rendered before an error too), until Next
// returns an error, which it returns as err; werr is a write's error, which ends it at once.
func copyChunks(src Events, w io.Writer, buf *[]byte, emit func(buf *[]byte, ev *Event) error) (werr, err error) {
	each := func(ev *Event) error { return emit(buf, ev) }
	for err == nil {
		err = src.Next(each)
		if len(*buf) > 0 {
			if _, werr := w.Write(*buf); werr != nil {
				return werr, nil
			}
			*buf = (*buf)[:0]
		}
	}
	return nil, err
}

// copy runs src to its end, emit rendering each event into the buffer (its errCountReached
// ends the stream), the buffer written after each chunk; ended, when set, renders what is
// left once the stream ended otherwise than by a write error or errCountReached.
func (src *Source) copy(sum *Summary, w io.Writer, emit func(buf *[]byte, ev *Event) error, ended func(buf *[]byte) error) (*Summary, error) {
	buf := make([]byte, 0, 256<<10)
	werr, err := copyChunks(src, w, &buf, emit)
	if werr != nil {
		return nil, werr
	}
	end := ""
	if stopped, _ := src.Interrupted(); stopped && !errors.Is(err, errCountReached) {
		end = EndInterrupted
	} else {
		switch {
		case errors.Is(err, errCountReached):
			end = EndCount
		case errors.Is(err, io.EOF):
			end = EndEOF
		case errors.Is(err, context.DeadlineExceeded):
			end = EndDuration
		default:
			return nil, err
		}
	}
	src.stopReading() // what is read from now on is not the stream's
	if ended != nil && end != EndCount {
		if err := ended(&buf); err != nil {
			return nil, err
		}
		if _, werr := w.Write(buf); werr != nil {
			return nil, werr
		}
	}
	_, cause := src.Interrupted()
	var ec EndCause
	switch {
	case end == EndInterrupted && errors.As(cause, &ec):
		end = string(ec)
	case end == EndInterrupted:
		src.Finish(sum, end)
		return sum, src.parent.Err()
	}
	src.Finish(sum, end)
	return sum, nil
}
