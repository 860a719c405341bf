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
		if out.JSON {
			*buf = AppendJSON(*buf, ev, out.Text.Raw)
		} else {
			*buf = AppendText(*buf, ev, out.Text)
		}
		if ev.Kind != KindLost {
			shown++
			if out.Count > 0 && shown >= out.Count {
				return errCountReached
			}
		}
		return nil
	}
	return src.copy(sum, out.W, emit, nil)
}

// copy runs src to its end, emit rendering each event into the buffer (its errCountReached
// ends the stream), the buffer written after each chunk; ended, when set, renders what is
// left once the stream ended otherwise than by a write error or errCountReached.
func (src *Source) copy(sum *Summary, w io.Writer, emit func(buf *[]byte, ev *Event) error, ended func(buf *[]byte) error) (*Summary, error) {
	buf := make([]byte, 0, 256<<10)
	each := func(ev *Event) error { return emit(&buf, ev) }
	end := ""
	for end == "" {
		err := src.Next(each)
		if len(buf) > 0 {
			if _, werr := w.Write(buf); werr != nil {
				return nil, werr
			}
			buf = buf[:0]
		}
		if stopped, _ := src.Interrupted(); stopped && err != nil && !errors.Is(err, errCountReached) {
			end = EndInterrupted
			break
		}
		switch {
		case err == nil:
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
