package cmd

import (
	"errors"
	"fmt"
	"io"
	"os"
	"syscall"
	"time"

	"github.com/spf13/cobra"
)

// readyLine is what --ready-fd's descriptor receives once tracing is on, before it is closed.
const readyLine = "ready\n"

// registerReadyFD gives a command that arms a session (trace, graph, record, count, latency,
// hist, flight arm) its --ready-fd. It is a flag of those commands, not a global one: a script that passes
// it to a command that arms nothing would wait for a line that never comes, where a flag the
// command does not know is refused at once (exit 2).
func registerReadyFD(c *cobra.Command, g *Globals) {
	c.Flags().IntVar(&g.ReadyFD, "ready-fd", 0, "once tracing is on (armed), write \"ready\" and a newline to file descriptor `N` (3 or more, opened by the caller: 3>FIFO) and close it; closed with nothing written when tracing never starts")
}

// openReadyFD checks the descriptor --ready-fd names (exit 2 when it is a standard stream or
// not open) and keeps it from the command ftctl starts (-- COMMAND), so that a reader waiting
// for its end sees it when ftctl closes it.
func openReadyFD(n int) (io.WriteCloser, error) {
	if n < 3 {
		return nil, InvalidInput(fmt.Errorf("--ready-fd %d: 0, 1 and 2 are ftctl's standard streams (stdout carries the output); give a descriptor of 3 or more that the caller opened (e.g. 3>FIFO)", n))
	}
	var st syscall.Stat_t
	if err := syscall.Fstat(n, &st); err != nil {
		// checked before os.NewFile: a File made for a closed descriptor would close, when
		// collected, whatever later got that number
		return nil, InvalidInput(fmt.Errorf("--ready-fd %d: not an open file descriptor (%v); open it for ftctl, e.g. 'ftctl ... --ready-fd 3 3>FIFO' (sudo closes descriptors above 2: open it under sudo, as in sudo sh -c 'exec ftctl ... 3>FIFO')", n, err))
	}
	syscall.CloseOnExec(n)
	return os.NewFile(uintptr(n), fmt.Sprintf("--ready-fd %d", n)), nil
}

// Armed says that tracing is on: a notice on stderr (unless -q) and, with --ready-fd, the ready
// line written to the descriptor, which is closed. Call it once the session traces and before
// the command of -- COMMAND is released, so that a script that starts its workload on the
// notice or the line misses none of it. Later calls do nothing more than the notice.
func (g *Globals) Armed(what string) {
	if g.start.IsZero() {
		g.Notice("armed: %s", what)
	} else {
		g.Notice("armed: %s (%.2fs after start)", what, time.Since(g.start).Seconds())
	}
	g.writeReady()
}

// writeReady writes the ready line to --ready-fd's descriptor, if any, and closes it (a command
// that says "armed" in words of its own: flight arm).
func (g *Globals) writeReady() {
	if g.ready == nil {
		return
	}
	_, err := io.WriteString(g.ready, readyLine)
	err = errors.Join(err, g.ready.Close())
	g.ready = nil
	if err != nil {
		g.Notice("--ready-fd %d: %v", g.ReadyFD, err)
	}
}

// closeReady closes --ready-fd's descriptor when tracing never started (a failure, a dry run),
// with nothing written: its reader sees the end of file, not the ready line.
func (g *Globals) closeReady() {
	if g.ready != nil {
		g.ready.Close()
		g.ready = nil
	}
}
