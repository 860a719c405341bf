//go:build linux

package vtscreen

import (
	"fmt"
	"os"
	"strconv"
	"syscall"
	"unsafe"
)

// OpenPTY makes a pseudo-terminal pair of cols×rows without cgo: posix_openpt is
// open("/dev/ptmx"), unlockpt, ptsname and the window size are ioctls. The tests run a program
// on slave (its stdin, stdout, stderr) and read what it writes to the terminal from master.
func OpenPTY(cols, rows int) (master, slave *os.File, err error) {
	m, err := os.OpenFile("/dev/ptmx", os.O_RDWR|syscall.O_NOCTTY, 0)
	if err != nil {
		return nil, nil, err
	}
	fail := func(what string, err error) (*os.File, *os.File, error) {
		m.Close()
		return nil, nil, fmt.Errorf("%s: %w", what, err)
	}
	var unlock int32
	if err := ioctl(m, syscall.TIOCSPTLCK, unsafe.Pointer(&unlock)); err != nil {
		return fail("unlockpt", err)
	}
	var n uint32
	if err := ioctl(m, syscall.TIOCGPTN, unsafe.Pointer(&n)); err != nil {
		return fail("ptsname", err)
	}
	s, err := os.OpenFile("/dev/pts/"+strconv.Itoa(int(n)), os.O_RDWR|syscall.O_NOCTTY, 0)
	if err != nil {
		return fail("opening the slave", err)
	}
	ws := struct{ row, col, x, y uint16 }{uint16(rows), uint16(cols), 0, 0}
	if err := ioctl(s, syscall.TIOCSWINSZ, unsafe.Pointer(&ws)); err != nil {
		s.Close()
		return fail("TIOCSWINSZ", err)
	}
	return m, s, nil
}

// ioctl runs on the file's descriptor without File.Fd, which would make it blocking (a read
// of the master would then not end when it is closed).
func ioctl(f *os.File, req uintptr, arg unsafe.Pointer) error {
	c, err := f.SyscallConn()
	if err != nil {
		return err
	}
	var e syscall.Errno
	if err := c.Control(func(fd uintptr) {
		_, _, e = syscall.Syscall(syscall.SYS_IOCTL, fd, req, uintptr(arg))
	}); err != nil {
		return err
	}
	if e != 0 {
		return e
	}
	return nil
}
