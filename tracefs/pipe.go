package tracefs

import (
	"context"
	"encoding/binary"
	"errors"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"unsafe"

	"golang.org/x/sys/unix"
)

// ErrPipeClosed is what Read returns once the Pipe was closed.
var ErrPipeClosed = errors.New("trace_pipe reader closed")

// Pipe reads an instance's trace_pipe: a consuming read (what it returns is gone from the
// ring buffer, for every other reader too) that blocks while the buffer is empty.
//
// It owns its lifecycle. Read blocks until there is something to read; Close, or the end of
// the context given to OpenPipe, makes a blocked Read return at once, from any goroutine. No
// goroutine or descriptor outlives Close. The descriptor is non-blocking and Read waits in
// poll(2) on it and on an eventfd that Close and the context signal: this does not depend on
// Go's netpoller accepting a tracefs file, nor on the kernel ever waking the reader.
//
// A blocking read of trace_pipe ends (returns 0) once tracing is off, the buffer is empty and
// the file has returned something (tracing_wait_pipe); a non-blocking one never does: it says
// EAGAIN first. Read gives the same end of file by reading tracing_on when trace_pipe is empty,
// and at least every eofCheck while it waits, since nothing wakes a poller when tracing stops.
type Pipe struct {
	path string
	fs   *FS
	pipeControl

	mu       sync.Mutex // held by Read while it uses fd; Close takes it before closing fd
	fd       int
	readSome bool // trace_pipe has returned something
	drained  bool // the last read returned less than half a page: the buffer was (nearly) empty
	eof      bool
}

// pipeControl is what Pipe and RawPipe share: the eventfd that Close and the end of the
// context signal to wake a Read waiting in poll, the closed flag, and the trace array's
// tracing_on (for the end of file).
type pipeControl struct {
	ctx  context.Context
	stop func() bool // stops the context's AfterFunc
	on   int         // tracing_on of the same trace array, -1 when it could not be opened

	wmu    sync.Mutex // guards wake against a signal racing with Close
	wake   int        // eventfd, -1 once closed
	closed bool
	once   sync.Once
}

// startControl makes the eventfd, opens tracing_on and ties the context to signal.
func (c *pipeControl) startControl(ctx context.Context, i *Instance, path string) error {
	wake, err := unix.Eventfd(0, unix.EFD_CLOEXEC|unix.EFD_NONBLOCK)
	if err != nil {
		return &Error{Op: "eventfd", Path: path, Class: ErrIO, Errno: err}
	}
	c.ctx, c.wake, c.on = ctx, wake, -1
	if on, err := unix.Open(i.Path("tracing_on"), unix.O_RDONLY|unix.O_CLOEXEC, 0); err == nil {
		c.on = on
	}
	c.stop = context.AfterFunc(ctx, c.signal)
	return nil
}

// signal wakes a Read blocked in poll; the eventfd stays readable, so every later poll
// returns at once too.
func (c *pipeControl) signal() {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	if c.wake >= 0 {
		var one [8]byte
		binary.NativeEndian.PutUint64(one[:], 1)
		unix.Write(c.wake, one[:])
	}
}

// stopped is the error a closed pipe or an ended context gives.
func (c *pipeControl) stopped() error {
	c.wmu.Lock()
	closed := c.closed
	c.wmu.Unlock()
	if closed {
		return ErrPipeClosed
	}
	return c.ctx.Err()
}

// tracingOff reads the trace array's tracing_on.
func (c *pipeControl) tracingOff() bool {
	if c.on < 0 {
		return false
	}
	var b [4]byte
	n, err := unix.Pread(c.on, b[:], 0)
	return err == nil && n > 0 && b[0] == '0'
}

// shut closes once: it marks the pipe closed and wakes a Read in progress, lets closeFDs
// (run under the reader's lock, so after that Read returned) close the reader's descriptors,
// then closes its own.
func (c *pipeControl) shut(mu *sync.Mutex, closeFDs func()) {
	c.once.Do(func() {
		c.stop()
		c.wmu.Lock()
		c.closed = true
		c.wmu.Unlock()
		c.signal()
		mu.Lock()
		closeFDs()
		if c.on >= 0 {
			unix.Close(c.on)
			c.on = -1
		}
		mu.Unlock()
		c.wmu.Lock()
		unix.Close(c.wake)
		c.wake = -1
		c.wmu.Unlock()
	})
}

// readUnit is the least each read(2) of trace_pipe asks for. The kernel formats whole entries
// into its trace_seq (a page on 6.1; TRACE_SEQ_BUFFER_SIZE, two pages, on 6.12) until what it
// holds reaches what was asked, then copies out at most what was asked: asked for less than the
// trace_seq holds, it returns part of an entry and keeps the rest for the next read (seen on
// 6.12, TestStreamDrainsBuffer: a marker cut in two). Asked for more, it stops at the
// trace_seq's size less one, which whole entries never pass: each read returns whole entries,
// so a Read ends at an entry's end and a stack trace is never cut. Give Read at least this.
const readUnit = 32 << 10

// shortRead is a read that returned less than half a page: trace_pipe was (nearly) empty.
const shortRead = 2048

// eofCheck is how often a waiting Read looks whether tracing was turned off.
const eofCheck = 250 // milliseconds

// OpenPipe opens the instance's trace_pipe for reading. When ctx ends, a blocked or later Read
// returns ctx.Err(). Close it when done.
func (i *Instance) OpenPipe(ctx context.Context) (*Pipe, error) {
	path := i.Path("trace_pipe")
	fd, err := unix.Open(path, unix.O_RDONLY|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, i.fs.opError("open", path, "", err)
	}
	p := &Pipe{path: path, fs: i.fs, fd: fd}
	if err := p.startControl(ctx, i, path); err != nil {
		unix.Close(fd)
		return nil, err
	}
	return p, nil
}

// Read reads what trace_pipe has, blocking until it has something: several reads of up to a
// trace_seq each, until the kernel has no more right now or b has less than readUnit left. It returns
// io.EOF when the kernel ends the file (it does once tracing is turned off after something was
// read), ctx.Err() when the context ended, ErrPipeClosed after Close.
func (p *Pipe) Read(b []byte) (int, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	n := 0
	for {
		if err := p.stopped(); err != nil {
			return n, err
		}
		if p.eof {
			if n > 0 {
				return n, nil
			}
			return 0, io.EOF
		}
		if len(b)-n < readUnit && n > 0 {
			return n, nil
		}
		if n == len(b) {
			return n, nil
		}
		if p.drained {
			// The last read returned little: trace_pipe was (nearly) empty. Rather than read
			// it again only to be told EAGAIN, return what was read, or wait until it is
			// readable: two system calls fewer for each batch a reader that keeps up gets.
			if n > 0 {
				return n, nil
			}
			p.drained = false
			if !p.tracingOff() { // tracing off: read on, to the kernel's end of file
				if err := p.wait(); err != nil {
					return 0, err
				}
			}
			continue
		}
		k, err := rawRead(p.fd, b[n:])
		switch {
		case err == nil && k > 0:
			n += k
			p.readSome = true
			p.drained = k < shortRead
		case err == nil:
			p.eof = true
		case err == unix.EINTR:
		case err == unix.EAGAIN:
			if n > 0 {
				return n, nil
			}
			if p.readSome && p.tracingOff() {
				p.eof = true
				continue
			}
			if err := p.wait(); err != nil {
				return 0, err
			}
		default:
			return n, p.fs.opError("read", p.path, "", err)
		}
	}
}

// rawRead is read(2) as a raw system call, without telling the Go scheduler: the descriptor is
// non-blocking, so the call returns at once, with at most a page of lines the kernel formats
// on the way. Handing the processor to another thread around each call, as unix.Read does,
// cost more than the call itself under emulation (measured in the VM: BENCHMARKS.md).
func rawRead(fd int, b []byte) (int, error) {
	if len(b) == 0 {
		return 0, nil
	}
	n, _, errno := unix.RawSyscall(unix.SYS_READ, uintptr(fd), uintptr(unsafe.Pointer(&b[0])), uintptr(len(b)))
	if errno != 0 {
		return 0, errno
	}
	return int(n), nil
}

// wait blocks until trace_pipe is readable or the pipe is signalled, or for eofCheck once the
// pipe has returned something (tracing may have been turned off meanwhile).
func (p *Pipe) wait() error {
	fds := []unix.PollFd{{Fd: int32(p.fd), Events: unix.POLLIN}, {Fd: int32(p.wake), Events: unix.POLLIN}}
	timeout := -1
	if p.readSome && p.on >= 0 {
		timeout = eofCheck
	}
	for {
		_, err := unix.Poll(fds, timeout)
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return &Error{Op: "poll", Path: p.path, Class: ErrIO, Errno: err}
		}
		return nil // readable, or signalled: Read's loop sees which
	}
}

// NoEOF makes Read wait in poll(2) with no timeout, for a reader that turns tracing off only
// after it stopped reading (an armed flight recorder's trigger): the end of file that tracing
// turned off gives is not looked for, so a reader waiting on an idle buffer takes no CPU (a
// Read otherwise reads tracing_on every eofCheck once it has returned something).
func (p *Pipe) NoEOF() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.on >= 0 {
		unix.Close(p.on)
		p.on = -1
	}
}

// Close stops the reader: a Read blocked in another goroutine returns ErrPipeClosed, then the
// descriptors are closed. Calling it again does nothing.
func (p *Pipe) Close() error {
	var err error
	p.shut(&p.mu, func() {
		if err = unix.Close(p.fd); err != nil {
			err = p.fs.opError("close", p.path, "", err)
		}
		p.fd = -1
	})
	return err
}

// CPUStats reads every per_cpu/cpuN/stats of the instance, in CPU order: the overrun and
// dropped-event counters that loss accounting compares before and after.
func (i *Instance) CPUStats() ([]CPUStats, error) {
	dir := i.Path("per_cpu")
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, i.fs.opError("open", dir, "", unwrapPath(err))
	}
	var out []CPUStats
	for _, e := range entries {
		name := e.Name()
		n, err := strconv.Atoi(strings.TrimPrefix(name, "cpu"))
		if err != nil || !strings.HasPrefix(name, "cpu") {
			continue
		}
		b, err := i.ReadFile(filepath.Join("per_cpu", name, "stats"))
		if err != nil {
			return nil, err
		}
		out = append(out, ParseCPUStats(n, string(b)))
	}
	sort.Slice(out, func(a, b int) bool { return out[a].CPU < out[b].CPU })
	return out, nil
}
