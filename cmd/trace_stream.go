package cmd

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"syscall"
	"time"

	"github.com/ftctl/ftctl/session"
)

// streamSession prints the session's trace_pipe until ctx ends or count lines were printed.
// INTERIM: raw escaped lines, polled; replaced by the stream package's reader and renderers.
func streamSession(ctx context.Context, g *Globals, s *session.Session, count int) error {
	f, err := os.OpenFile(s.Instance.Path("trace_pipe"), os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return err
	}
	defer f.Close()
	w := bufio.NewWriter(g.Out)
	defer w.Flush()
	buf := make([]byte, 256<<10)
	var pending []byte
	n := 0
	for ctx.Err() == nil {
		// trace_pipe is pollable: Go parks a read in the netpoller, so a deadline is what
		// lets the loop see ctx.
		f.SetReadDeadline(time.Now().Add(100 * time.Millisecond))
		k, err := f.Read(buf)
		if k > 0 {
			pending = append(pending, buf[:k]...)
			for {
				i := indexByte(pending, '\n')
				if i < 0 {
					break
				}
				if _, err := fmt.Fprintln(w, safe(string(pending[:i]))); err != nil {
					return err
				}
				pending = pending[i+1:]
				n++
				if count > 0 && n >= count {
					return w.Flush()
				}
			}
			if err := w.Flush(); err != nil {
				return err
			}
			continue
		}
		if err != nil && !errors.Is(err, syscall.EAGAIN) && !errors.Is(err, os.ErrDeadlineExceeded) {
			return err
		}
	}
	return ctx.Err()
}

func indexByte(b []byte, c byte) int {
	for i, x := range b {
		if x == c {
			return i
		}
	}
	return -1
}
