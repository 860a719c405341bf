package tracefs

import (
	"bytes"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// Splicer moves an instance's ring-buffer pages into files without looking at them: for each
// CPU, splice(2) from per_cpu/cpuN/trace_pipe_raw into a pipe, and from the pipe into that
// CPU's file, so the pages never cross into ftctl's memory (what trace-cmd record does).
// Like RawPipe it consumes what it moves.
//
// splice gives only whole pages the kernel's writer has left (ring_buffer_read_page with
// full set): the page being written stays in the ring buffer until Flush reads it with
// read(2), which hands over a partial page too. Every page written is PageSize bytes.
type Splicer struct {
	dir      string
	fs       *FS
	pageSize int
	cpus     []int
	fds      []int    // trace_pipe_raw, O_NONBLOCK
	pipes    [][2]int // read end, write end
	pollFDs  []unix.PollFd
	paths    []string // trace_pipe_raw's, for errors
	chunk    []int    // what one splice asks of CPU k: its pipe's room, whole pages
	buf      []byte
	pollCPUs bool  // buffer_percent is not 0: poll waits for a CPU that far full
	bufBytes int64 // a CPU's ring buffer (buffer_size_kb), 0 when unknown
	// ep is an epoll instance of the CPUs' trace_pipe_raw, itself waited on by Go's poller
	// (nil: Wait calls poll(2)); events is its EpollWait's room.
	ep     *os.File
	epConn syscall.RawConn
	events []unix.EpollEvent
	// interrupted (Interrupt) ends every Wait at once; interrupt closes with it
	interrupted   atomic.Bool
	interrupt     chan struct{}
	interruptOnce sync.Once
}

// spliceChunk is how many pages one splice asks for: 256 (1 MiB of 4 KiB pages, the default
// pipe-max-size), the pipe sized to hold them. Fewer, larger splices: the recorder wakes a few
// times a second and moves what gathered in as few calls as it can.
const spliceChunk = 256

// OpenSplicer opens every CPU's trace_pipe_raw of the instance and a pipe for each. Close it
// when done.
func (i *Instance) OpenSplicer() (*Splicer, error) { return i.openSplicer("trace_pipe_raw") }

// openSplicer is OpenSplicer of every CPU's file named file (trace_pipe_raw, snapshot_raw).
func (i *Instance) openSplicer(file string) (*Splicer, error) {
	dir, cpus, err := i.perCPU()
	if err != nil {
		return nil, err
	}
	s := &Splicer{dir: dir, fs: i.fs, pageSize: i.subbufSize(), interrupt: make(chan struct{})}
	// buffer_percent: 5.1+; 0, or without the file, poll says readable whenever a CPU's
	// buffer is not empty, which is always under a hot filter (the reader's own events)
	if b, err := i.ReadFile("buffer_percent"); err == nil {
		if pc, err := strconv.Atoi(strings.TrimSpace(string(b))); err == nil && pc > 0 {
			s.pollCPUs = true
		}
	}
	if b, err := i.ReadFile("buffer_size_kb"); err == nil {
		if kb, _, ok := BufferSize(string(b)); ok {
			s.bufBytes = int64(kb) << 10
		}
	}
	if len(cpus) == 0 {
		return nil, &Error{Op: "open", Path: dir, Class: ErrUnavailable, Errno: unix.ENOENT}
	}
	for _, c := range cpus {
		path := filepath.Join(dir, "cpu"+strconv.Itoa(c), file)
		fd, err := unix.Open(path, unix.O_RDONLY|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
		if err != nil {
			s.Close()
			return nil, i.fs.opError("open", path, "", err)
		}
		s.fds = append(s.fds, fd)
		s.cpus = append(s.cpus, c)
		var p [2]int
		if err := unix.Pipe2(p[:], unix.O_CLOEXEC); err != nil {
			s.Close()
			return nil, &Error{Op: "pipe", Path: path, Class: ErrIO, Errno: err}
		}
		s.pipes = append(s.pipes, p)
		s.paths = append(s.paths, path)
		// room for a whole chunk; a smaller pipe (pipe-max-size refused more) means shorter
		// splices, each asking only what the pipe holds (asked more, a splice stops at the
		// pipe's room, and Move would take the short count for an emptied CPU)
		room, err := unix.FcntlInt(uintptr(p[1]), unix.F_SETPIPE_SZ, spliceChunk*s.pageSize)
		if err != nil {
			room, err = unix.FcntlInt(uintptr(p[1]), unix.F_GETPIPE_SZ, 0)
		}
		if err != nil || room < s.pageSize {
			room = s.pageSize
		}
		s.chunk = append(s.chunk, min(room, spliceChunk*s.pageSize)/s.pageSize*s.pageSize)
		s.pollFDs = append(s.pollFDs, unix.PollFd{Fd: int32(fd), Events: unix.POLLIN})
	}
	if s.pollCPUs {
		s.openEpoll()
	}
	return s, nil
}

// openEpoll makes the epoll instance Wait waits on through Go's poller: the goroutine then
// waits parked, its P idle, rather than in poll(2). A P in a long system call keeps Go's
// sysmon thread out of its deep sleep and wakes it to 20 µs polling each time the call
// returns: under emulation, with a hot filter tracing the locks its wake-ups take, that alone
// cost the recorder more CPU than its splicing (BENCHMARKS.md, "Record's fixed costs cut").
// Without it (an error), Wait polls.
func (s *Splicer) openEpoll() {
	ep, err := unix.EpollCreate1(unix.EPOLL_CLOEXEC)
	if err != nil {
		return
	}
	for _, fd := range s.fds {
		if unix.EpollCtl(ep, unix.EPOLL_CTL_ADD, fd, &unix.EpollEvent{Events: unix.EPOLLIN, Fd: int32(fd)}) != nil {
			unix.Close(ep)
			return
		}
	}
	if unix.SetNonblock(ep, true) != nil {
		unix.Close(ep)
		return
	}
	f := os.NewFile(uintptr(ep), "epoll")
	conn, err := f.SyscallConn()
	// a file Go's poller does not take refuses deadlines
	if err != nil || f.SetReadDeadline(time.Time{}) != nil {
		f.Close()
		return
	}
	s.ep, s.epConn, s.events = f, conn, make([]unix.EpollEvent, len(s.fds))
}

// perCPU lists the instance's per_cpu/cpuN directories: the directory and the CPUs, sorted.
func (i *Instance) perCPU() (string, []int, error) {
	dir := i.Path("per_cpu")
	entries, err := os.ReadDir(dir)
	if err != nil {
		return dir, nil, i.fs.opError("open", dir, "", unwrapPath(err))
	}
	var cpus []int
	for _, e := range entries {
		n, err := strconv.Atoi(strings.TrimPrefix(e.Name(), "cpu"))
		if err == nil && strings.HasPrefix(e.Name(), "cpu") {
			cpus = append(cpus, n)
		}
	}
	sort.Ints(cpus)
	return dir, cpus, nil
}

// subbufSize is the size of the ring buffer's pages: buffer_subbuf_size_kb (6.8+: sub-buffers
// may be larger than a page), else the page size.
func (i *Instance) subbufSize() int {
	if b, err := i.ReadFile("buffer_subbuf_size_kb"); err == nil {
		if kb, err := strconv.Atoi(strings.TrimSpace(string(b))); err == nil && kb > 0 {
			return kb << 10
		}
	}
	return os.Getpagesize()
}

// PageSize is the size of the instance's ring-buffer pages (sub-buffers): the size of every
// page a Splicer or a RawPipe of it writes.
func (i *Instance) PageSize() int { return i.subbufSize() }

// CPUs are the CPUs' numbers, in the order Move and Flush take them (k).
func (s *Splicer) CPUs() []int { return s.cpus }

// PageSize is the size of every page written.
func (s *Splicer) PageSize() int { return s.pageSize }

// Move splices the whole pages CPU k has now into dst, at its file offset, and says how many
// bytes it moved (0 when the CPU has no full page). Each splice asks for as many pages as the
// pipe holds; a shorter answer means the CPU has no more full pages.
func (s *Splicer) Move(k int, dst *os.File) (int64, error) {
	var moved int64
	out := int(dst.Fd())
	for {
		n, err := rawSplice(s.fds[k], s.pipes[k][1], s.chunk[k], unix.SPLICE_F_MOVE|unix.SPLICE_F_NONBLOCK)
		if err == unix.EINTR {
			continue
		}
		if err == unix.EAGAIN || (err == nil && n == 0) {
			return moved, nil
		}
		if err != nil {
			return moved, s.fs.opError("splice", s.paths[k], "", err)
		}
		for left := n; left > 0; {
			m, err := rawSplice(s.pipes[k][0], out, int(left), unix.SPLICE_F_MOVE)
			if err == unix.EINTR {
				continue
			}
			if err != nil {
				return moved, &Error{Op: "splice", Path: dst.Name(), Class: ErrIO, Errno: err}
			}
			left -= m
			moved += m
		}
		if n < int64(s.chunk[k]) {
			return moved, nil
		}
	}
}

// Flush reads what CPU k has left, partial pages too, with read(2) (splice never gives the
// page the kernel is writing), and appends it to dst page by page, at most maxPages pages
// when maxPages > 0 (tracing still on: a busy CPU would never be empty). It says how many bytes.
func (s *Splicer) Flush(k int, dst *os.File, maxPages int) (int64, error) {
	if s.buf == nil {
		s.buf = make([]byte, s.pageSize)
	}
	var moved int64
	for pages := 0; maxPages <= 0 || pages < maxPages; pages++ {
		clear(s.buf)
		n, err := rawRead(s.fds[k], s.buf)
		if err == unix.EINTR {
			continue
		}
		if err == unix.EAGAIN || (err == nil && n == 0) {
			return moved, nil
		}
		if err != nil {
			return moved, s.fs.opError("read", s.paths[k], "", err)
		}
		// a page is written whole (zeros after what the kernel copied): readers step by pages
		if _, err := dst.Write(s.buf); err != nil {
			return moved, err
		}
		moved += int64(len(s.buf))
	}
	return moved, nil
}

// rawSplice is splice(2) as a raw system call, as rawRead is read(2): a system call made the
// usual way, when every P was idle, wakes Go's sysmon thread from its deep sleep into 20 µs
// polling (runtime.entersyscall), and under emulation, with a hot filter tracing the locks its
// every wake-up takes, the recorder's few splices a wake cost it more than the splicing did
// (BENCHMARKS.md). Out of trace_pipe_raw the call does not block (SPLICE_F_NONBLOCK); into the
// CPU's file it writes the page cache, which blocks only while the kernel throttles dirty
// pages, and only this goroutine waits then.
func rawSplice(in, out, n, flags int) (int64, error) {
	r, _, errno := unix.RawSyscall6(unix.SYS_SPLICE, uintptr(in), 0, uintptr(out), 0, uintptr(n), uintptr(flags))
	if errno != 0 {
		return 0, errno
	}
	return int64(r), nil
}

// rawEpollWait is epoll_wait(2) with no timeout (epoll_pwait with no signal mask: arm64 has
// no epoll_wait), as a raw system call (see rawSplice).
func rawEpollWait(ep int, events []unix.EpollEvent) (int, error) {
	r, _, errno := unix.RawSyscall6(unix.SYS_EPOLL_PWAIT, uintptr(ep), uintptr(unsafe.Pointer(&events[0])), uintptr(len(events)), 0, 0, 0)
	if errno != 0 {
		return 0, errno
	}
	return int(r), nil
}

// WakesEarly says whether Wait ends early when a CPU's buffer passes buffer_percent.
func (s *Splicer) WakesEarly() bool { return s.pollCPUs }

// BufferBytes is the size of a CPU's ring buffer (buffer_size_kb when the recording began), 0
// when the CPUs' sizes differ or it could not be read.
func (s *Splicer) BufferBytes() int64 { return s.bufBytes }

// Wait blocks until some CPU's buffer is past buffer_percent, d passes, or Interrupt is
// called. With buffer_percent 0 (or no such file) it sleeps d: poll would return at once.
func (s *Splicer) Wait(d time.Duration) {
	if !s.pollCPUs {
		t := time.NewTimer(d)
		defer t.Stop()
		select {
		case <-t.C:
		case <-s.interrupt:
		}
		return
	}
	if s.ep != nil {
		// Interrupt moves the deadline into the past after it marks the Splicer: one that came
		// before the deadline below is seen by the look at the mark after it
		if s.ep.SetReadDeadline(time.Now().Add(d)) == nil {
			if s.interrupted.Load() {
				return
			}
			// ready when a CPU is; a deadline passed ends the read with an error
			s.epConn.Read(func(fd uintptr) bool {
				n, err := rawEpollWait(int(fd), s.events)
				return n > 0 || (err != nil && err != unix.EINTR)
			})
			return
		}
	}
	// no epoll instance: poll(2) in slices of 100 ms at most, looking at the mark between them
	for end := time.Now().Add(d); !s.interrupted.Load(); {
		left := time.Until(end)
		if left <= 0 {
			return
		}
		n, err := unix.Poll(s.pollFDs, max(1, int(min(left, 100*time.Millisecond)/time.Millisecond)))
		if n > 0 || (err != nil && err != unix.EINTR) {
			return
		}
	}
}

// Interrupt ends the Wait under way, and every later one, at once: the recording is over. It
// may be called from any goroutine, more than once.
func (s *Splicer) Interrupt() {
	s.interruptOnce.Do(func() {
		s.interrupted.Store(true)
		close(s.interrupt)
		if s.ep != nil {
			s.ep.SetReadDeadline(time.Unix(1, 0))
		}
	})
}

// Close closes the files and pipes. Calling it again does nothing.
func (s *Splicer) Close() error {
	for _, fd := range s.fds {
		unix.Close(fd)
	}
	for _, p := range s.pipes {
		unix.Close(p[0])
		unix.Close(p[1])
	}
	if s.ep != nil {
		s.ep.Close()
	}
	s.fds, s.pipes, s.ep = nil, nil, nil
	return nil
}

// EventIDs reads the id file of every event: each event's name by its type id. It is how a
// recorder finds an event that left records but is no longer enabled; 2,000 small files cost a
// fraction of their formats.
func (f *FS) EventIDs() (map[int]EventName, error) {
	systems, err := f.EventSystems()
	if err != nil {
		return nil, err
	}
	out := map[int]EventName{}
	top := f.Top()
	for _, s := range systems {
		events, err := f.Events(s)
		if err != nil {
			continue
		}
		for _, e := range events {
			b, err := top.ReadFile(filepath.Join("events", s, e, "id"))
			if err != nil {
				continue
			}
			if id, err := strconv.Atoi(strings.TrimSpace(string(b))); err == nil {
				out[id] = EventName{s, e}
			}
		}
	}
	return out, nil
}

// FormatID is the type id a format file's text gives ("ID: 316"), -1 when it has none.
func FormatID(text []byte) int {
	for len(text) > 0 {
		line, rest, _ := bytes.Cut(text, []byte("\n"))
		if v, ok := bytes.CutPrefix(line, []byte("ID: ")); ok {
			if id, err := strconv.Atoi(string(bytes.TrimSpace(v))); err == nil {
				return id
			}
			return -1
		}
		if bytes.HasPrefix(line, []byte("format:")) {
			break
		}
		text = rest
	}
	return -1
}
