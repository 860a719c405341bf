package stream

import (
	"errors"
	"io"
)

// Events yields events a chunk at a time, from the kernel's ring buffer (Source, from Open) or
// from a recording (FileSource, from OpenFile): the one shape every reader of events takes,
// so that ftctl stream and ftctl report, the console's live stream and its --file, and the
// call trees of a live graph and of a recording's run the same loops (Copy and CopyFile, the
// console's PipeSource and FileSource, its graph's trees).
type Events interface {
	// Next emits the events of the next chunk, in order. It returns nil while more may come,
	// io.EOF at the end (the kernel ended the stream; the recording was read), or what ended
	// it otherwise (emit's error among them).
	Next(emit Emit) error
	// Close makes a Next in progress, and every later one, return. Any goroutine may call it.
	Close() error
}

// Each emits every event of src until its end: nil at io.EOF, else what ended it.
func Each(src Events, emit Emit) error {
	for {
		if err := src.Next(emit); errors.Is(err, io.EOF) {
			return nil
		} else if err != nil {
			return err
		}
	}
}

var (
	_ Events = (*Source)(nil)
	_ Events = (*FileSource)(nil)
)
