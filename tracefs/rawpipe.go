package tracefs

import (
	"context"
	"encoding/binary"
	"io"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"golang.org/x/sys/unix"
)

// RawPipe reads an instance's ring buffer as the kernel keeps it: every CPU's
// per_cpu/cpuN/trace_pipe_raw, a consuming read of whole ring-buffer pages (the events in
// binary; stream.BinaryDecoder formats them). Like trace_pipe, what it reads is gone for every
// other reader.
//
// Read reads each CPU's pages (non-blocking) until the kernel has no more or returns a page
// less than half full: the reader has caught up with the writer there. Once every CPU was
// caught up, the next Read first waits in poll(2) on every CPU's file and on an eventfd that
// Close and the context signal. A CPU's trace_pipe_raw only polls readable once its buffer is
// buffer_percent full (50 by default), so the wait also ends every rawWait to collect what a
// slow trickle left; with buffer_percent 0 (readable whenever not empty) or without the file,
// only rawWait and the eventfd end it. Unlike trace_pipe, a trace_pipe_raw never ends; Read
// gives io.EOF as trace_pipe would: when every CPU is empty, something was read, and tracing
// is off.
//
// Why not read until the kernel has nothing: the reader is traced like anyone else. Under a
// hot function filter (_raw_spin_lock*: every read takes the CPU buffer's reader_lock) each
// read records an event on the CPU it runs on, so that CPU is never empty at the next read:
// read until EAGAIN, a reader spins on pages of its own events (seen in the VM, 6.1:
// BENCHMARKS.md, "Under a hot function filter"), taking the CPU the traced workload and the
// kernel's recording need, and making more events than it reads.
type RawPipe struct {
	dir      string
	fs       *FS
	pageSize int
	layout   PageLayout // to read a page's commit; CommitSize 0 when unknown
	pollCPUs bool       // poll waits for buffer_percent (not 0): the CPUs' files are polled
	pipeControl

	mu       sync.Mutex
	fds      []int
	cpus     []int
	pollFDs  []unix.PollFd
	readSome bool
	done     []bool    // per CPU, during a Read: caught up
	caughtUp time.Time // when every CPU was last found caught up: wait rawWait before reading again
	eof      bool
}

// rawWait is how long Read waits in poll before it looks at every CPU anyway.
const rawWait = 50 // milliseconds

// RawFrame is the header Read puts before each page: the CPU and the page's length, both
// little-endian uint32.
const RawFrame = 8

// OpenRawPipe opens every CPU's trace_pipe_raw of the instance. Close it when done.
func (i *Instance) OpenRawPipe(ctx context.Context) (*RawPipe, error) {
	dir, cpus, err := i.perCPU()
	if err != nil {
		return nil, err
	}
	p := &RawPipe{dir: dir, fs: i.fs, pageSize: i.subbufSize()}
	if l, err := i.PageLayout(); err == nil {
		p.layout = l
	}
	// buffer_percent: 5.1+; without it poll says readable whenever the buffer is not empty
	if b, err := i.ReadFile("buffer_percent"); err == nil {
		if pc, err := strconv.Atoi(strings.TrimSpace(string(b))); err == nil && pc > 0 {
			p.pollCPUs = true
		}
	}
	for _, c := range cpus {
		path := filepath.Join(dir, "cpu"+strconv.Itoa(c), "trace_pipe_raw")
		fd, err := unix.Open(path, unix.O_RDONLY|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
		if err != nil {
			p.closeFDs()
			return nil, i.fs.opError("open", path, "", err)
		}
		p.fds = append(p.fds, fd)
		p.cpus = append(p.cpus, c)
	}
	p.done = make([]bool, len(p.fds))
	if len(p.fds) == 0 {
		return nil, &Error{Op: "open", Path: dir, Class: ErrUnavailable, Errno: unix.ENOENT}
	}
	if err := p.startControl(ctx, i, dir); err != nil {
		p.closeFDs()
		return nil, err
	}
	return p, nil
}

// PageSize is the size of the pages Read returns (a sub-buffer of the ring buffer).
func (p *RawPipe) PageSize() int { return p.pageSize }

func (p *RawPipe) closeFDs() {
	for _, fd := range p.fds {
		unix.Close(fd)
	}
	p.fds = nil
}

// Read fills b with pages, each behind a RawFrame header, blocking until some CPU has one:
// every CPU is read until it has no more, it returned a page less than half full, or b has no
// room for another page (see RawPipe). It returns io.EOF once tracing is off and everything
// was read, ctx.Err() when the context ended, ErrPipeClosed after Close. RawPages walks what it
// returned.
func (p *RawPipe) Read(b []byte) (int, error) { return p.read(b, true) }

// TryRead is Read without the waits: what the CPUs have now, 0 (and no error) when they have
// nothing, or when every CPU was caught up less than rawWait ago (see RawPipe: read again at
// once, a reader reads its own events).
func (p *RawPipe) TryRead(b []byte) (int, error) { return p.read(b, false) }

func (p *RawPipe) read(b []byte, block bool) (int, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	unit := RawFrame + p.pageSize
	for {
		if err := p.stopped(); err != nil {
			return 0, err
		}
		if p.eof {
			return 0, io.EOF
		}
		if len(b) < unit {
			return 0, io.ErrShortBuffer
		}
		if !p.caughtUp.IsZero() {
			left := rawWait*time.Millisecond - time.Since(p.caughtUp)
			if left > 0 && !block {
				return 0, nil
			}
			p.caughtUp = time.Time{}
			if left > 0 {
				if err := p.wait(left); err != nil {
					return 0, err
				}
				continue
			}
		}
		n := 0
		// Two passes: first at most a fair share of b for each CPU, so that a busy CPU
		// does not keep the others' older events waiting for the next Read; then the rest.
		share := max(1, len(b)/unit/len(p.fds))
		caughtUp := 0
		for pass := range 2 {
			for k, fd := range p.fds {
				if p.done[k] {
					continue
				}
				done, err := p.readCPU(k, fd, b, &n, unit, pass == 0, share)
				if err != nil {
					return n, err
				}
				if done {
					p.done[k] = true
					caughtUp++
				}
			}
		}
		clear(p.done)
		if caughtUp == len(p.fds) {
			p.caughtUp = time.Now()
		}
		if n > 0 {
			return n, nil
		}
		if p.readSome && p.tracingOff() {
			p.eof = true
			continue
		}
		if !block {
			return 0, nil
		}
	}
}

// readCPU reads CPU k's pages into b from *n on, each behind its frame, until b has no room
// (or, capped, share pages were read), or the reader caught up with the kernel there (it
// has none, or gave a page less than half full): done.
func (p *RawPipe) readCPU(k, fd int, b []byte, n *int, unit int, capped bool, share int) (done bool, err error) {
	for read := 0; len(b)-*n >= unit && (!capped || read < share); read++ {
		m, err := rawRead(fd, b[*n+RawFrame:*n+unit])
		if err == unix.EINTR {
			read--
			continue
		}
		if err == unix.EAGAIN || (err == nil && m == 0) {
			return true, nil
		}
		if err != nil {
			return false, p.fs.opError("read", filepath.Join(p.dir, "cpu"+strconv.Itoa(p.cpus[k]), "trace_pipe_raw"), "", err)
		}
		page := b[*n+RawFrame : *n+RawFrame+m]
		binary.LittleEndian.PutUint32(b[*n:], uint32(p.cpus[k]))
		binary.LittleEndian.PutUint32(b[*n+4:], uint32(m))
		*n += RawFrame + m
		p.readSome = true
		if p.partial(page) {
			return true, nil
		}
	}
	return false, nil
}

// partial says whether a page holds less than half a page of events: the kernel copied what
// its writer had committed so far (ring_buffer_read_page, the reader on the writer's page), so
// the CPU has nothing more for now. A page swapped out whole is full but for the room its
// next event did not fit in.
func (p *RawPipe) partial(page []byte) bool {
	l := p.layout
	if l.CommitSize == 0 || len(page) < l.CommitOffset+l.CommitSize {
		return false
	}
	// the low 32 bits hold the length; bits 30 and 31 are flags (events missed before it)
	commit := int(binary.LittleEndian.Uint32(page[l.CommitOffset:]) &^ (3 << 30))
	return commit < (p.pageSize-l.DataOffset)/2
}

// RawPages calls f for each page of what RawPipe.Read returned.
func RawPages(b []byte, f func(cpu int, page []byte)) {
	for len(b) >= RawFrame {
		cpu := int(binary.LittleEndian.Uint32(b))
		n := int(binary.LittleEndian.Uint32(b[4:]))
		if RawFrame+n > len(b) {
			return
		}
		f(cpu, b[RawFrame:RawFrame+n])
		b = b[RawFrame+n:]
	}
}

// wait blocks until a CPU's buffer is past buffer_percent, the pipe is signalled, or d.
func (p *RawPipe) wait(d time.Duration) error {
	if p.pollFDs == nil { // every CPU's file (unless buffer_percent is 0) and the eventfd, made once
		for _, fd := range p.fds {
			if p.pollCPUs {
				p.pollFDs = append(p.pollFDs, unix.PollFd{Fd: int32(fd), Events: unix.POLLIN})
			}
		}
		p.pollFDs = append(p.pollFDs, unix.PollFd{Fd: int32(p.wake), Events: unix.POLLIN})
	}
	for {
		_, err := unix.Poll(p.pollFDs, max(1, int(d/time.Millisecond)))
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return &Error{Op: "poll", Path: p.dir, Class: ErrIO, Errno: err}
		}
		return nil
	}
}

// Close stops the reader (a Read blocked in another goroutine returns ErrPipeClosed) and
// closes the descriptors. Calling it again does nothing.
func (p *RawPipe) Close() error {
	p.shut(&p.mu, p.closeFDs)
	return nil
}
