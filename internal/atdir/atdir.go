// Package atdir holds a directory open by its descriptor and makes, opens, renames and removes
// the files in it relative to that descriptor (openat, mkdirat, renameat, unlinkat), never
// through a symbolic link (O_NOFOLLOW). A root process that writes into a directory by its
// path can be led elsewhere by whoever renames a component of that path or plants a link in
// it between two calls; a descriptor stays on the directory it opened (ftctl record's working
// directory, reset --remove-recordings).
//
// It makes its system calls through the standard library's syscall package: these are the
// user's files, not the kernel's (tracefs/ alone imports golang.org/x/sys/unix).
package atdir

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"unsafe"
)

// ErrLink: a name that was to be a file or a directory is a symbolic link.
var ErrLink = errors.New("is a symbolic link")

// ErrShared: a directory another user can write (the error wrapping it says who, and how).
var ErrShared = errors.New("not a private directory")

// Dir is a directory held open.
type Dir struct {
	f    *os.File
	name string // as opened: for messages
}

const dirFlags = syscall.O_RDONLY | syscall.O_DIRECTORY | syscall.O_CLOEXEC

// Open opens the directory at path (symbolic links in path followed: the user's name for it).
func Open(path string) (*Dir, error) {
	fd, err := syscall.Open(path, dirFlags, 0)
	if err != nil {
		return nil, &fs.PathError{Op: "open", Path: path, Err: err}
	}
	return &Dir{f: os.NewFile(uintptr(fd), path), name: path}, nil
}

// OpenNoLinks opens the directory at the absolute path, each component from / opened relative
// to the one before with O_NOFOLLOW: a path through a symbolic link anywhere is ErrLink, naming
// the link.
func OpenNoLinks(path string) (*Dir, error) {
	if !filepath.IsAbs(path) {
		return nil, fmt.Errorf("%s: not an absolute path", strconv.Quote(path))
	}
	clean := filepath.Clean(path)
	d, err := Open("/")
	if err != nil {
		return nil, err
	}
	cur := "/"
	for _, c := range strings.Split(clean, "/") {
		if c == "" {
			continue
		}
		sub, err := d.Sub(c)
		d.Close()
		if err != nil {
			return nil, err
		}
		cur = filepath.Join(cur, c)
		sub.name = cur
		d = sub
	}
	return d, nil
}

// Name is the directory's name as it was opened.
func (d *Dir) Name() string { return d.name }

// Close closes the descriptor.
func (d *Dir) Close() error {
	if d == nil || d.f == nil {
		return nil
	}
	return d.f.Close()
}

func (d *Dir) fd() int { return int(d.f.Fd()) }

func (d *Dir) path(name string) string { return filepath.Join(d.name, name) }

// linkErr makes the errno of an O_NOFOLLOW open on a link (ELOOP; ENOTDIR with O_DIRECTORY on
// a link to a directory... is also a link) into ErrLink, when name is one.
func (d *Dir) linkErr(op, name string, err error) error {
	if err == syscall.ELOOP || err == syscall.ENOTDIR {
		if fi, lerr := d.Lstat(name); lerr == nil && fi.Mode()&fs.ModeSymlink != 0 {
			return &fs.PathError{Op: op, Path: d.path(name), Err: ErrLink}
		}
	}
	return &fs.PathError{Op: op, Path: d.path(name), Err: err}
}

// Stat is fstat of the directory itself.
func (d *Dir) Stat() (fs.FileInfo, error) { return d.f.Stat() }

// Sub opens the directory name in d; a link is ErrLink.
func (d *Dir) Sub(name string) (*Dir, error) {
	fd, err := syscall.Openat(d.fd(), name, dirFlags|syscall.O_NOFOLLOW, 0)
	if err != nil {
		return nil, d.linkErr("open", name, err)
	}
	return &Dir{f: os.NewFile(uintptr(fd), d.path(name)), name: d.path(name)}, nil
}

// Mkdir makes the directory name in d with mode perm (narrowed by the umask).
func (d *Dir) Mkdir(name string, perm os.FileMode) error {
	if err := syscall.Mkdirat(d.fd(), name, uint32(perm.Perm())); err != nil {
		return &fs.PathError{Op: "mkdir", Path: d.path(name), Err: err}
	}
	return nil
}

// Create makes the regular file name in d, which must not exist (O_EXCL: a link there is not
// followed), open for reading and writing, with mode perm (narrowed by the umask; File.Chmod
// sets it exactly).
func (d *Dir) Create(name string, perm os.FileMode) (*os.File, error) {
	fd, err := syscall.Openat(d.fd(), name, syscall.O_RDWR|syscall.O_CREAT|syscall.O_EXCL|syscall.O_NOFOLLOW|syscall.O_CLOEXEC, uint32(perm.Perm()))
	if err != nil {
		return nil, &fs.PathError{Op: "create", Path: d.path(name), Err: err}
	}
	return os.NewFile(uintptr(fd), d.path(name)), nil
}

// Open opens the file name in d for reading; a link is ErrLink. O_NONBLOCK: a FIFO planted
// there does not block the open.
func (d *Dir) Open(name string) (*os.File, error) {
	fd, err := syscall.Openat(d.fd(), name, syscall.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_CLOEXEC|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, d.linkErr("open", name, err)
	}
	return os.NewFile(uintptr(fd), d.path(name)), nil
}

// Lstat describes name in d itself (a link as a link).
func (d *Dir) Lstat(name string) (fs.FileInfo, error) {
	fd, err := syscall.Openat(d.fd(), name, oPath|syscall.O_NOFOLLOW|syscall.O_CLOEXEC, 0)
	if err != nil {
		return nil, &fs.PathError{Op: "lstat", Path: d.path(name), Err: err}
	}
	f := os.NewFile(uintptr(fd), d.path(name))
	defer f.Close()
	return f.Stat()
}

// Names lists the names in d (all of them, unsorted).
func (d *Dir) Names() ([]string, error) {
	if _, err := d.f.Seek(0, 0); err != nil {
		return nil, err
	}
	return d.f.Readdirnames(-1)
}

// Rename renames name in d to toName in to (renameat: the two directories are the ones held,
// wherever they are now).
func (d *Dir) Rename(name string, to *Dir, toName string) error {
	if err := syscall.Renameat(d.fd(), name, to.fd(), toName); err != nil {
		return &os.LinkError{Op: "rename", Old: d.path(name), New: to.path(toName), Err: err}
	}
	return nil
}

// Remove removes the file (or link: never its target) name in d.
func (d *Dir) Remove(name string) error {
	if err := syscall.Unlinkat(d.fd(), name); err != nil {
		return &fs.PathError{Op: "remove", Path: d.path(name), Err: err}
	}
	return nil
}

// oPath is O_PATH (include/uapi/asm-generic/fcntl.h: amd64, arm64, riscv64...), which package
// syscall does not name.
const oPath = 0o10000000

// atRemoveDir is AT_REMOVEDIR (include/uapi/linux/fcntl.h), which package syscall does not name.
const atRemoveDir = 0x200

// RemoveDir removes the empty directory name in d (a link there is not a directory: ENOTDIR).
func (d *Dir) RemoveDir(name string) error {
	p, err := syscall.BytePtrFromString(name)
	if err != nil {
		return err
	}
	if _, _, errno := syscall.Syscall(syscall.SYS_UNLINKAT, uintptr(d.fd()), uintptr(unsafe.Pointer(p)), atRemoveDir); errno != 0 {
		return &fs.PathError{Op: "rmdir", Path: d.path(name), Err: errno}
	}
	return nil
}

// Sync makes d's entries durable (fsync of the directory).
func (d *Dir) Sync() error { return d.f.Sync() }

// CheckPrivate refuses a directory another user could rename or replace entries of: owned by
// someone other than root or one of owners, or writable by its group or by others, unless it is
// sticky (as /tmp: then an entry is renamed or removed only by its owner, the directory's, or
// root) and owned by root or one of owners. The error names the directory, is ErrShared, and
// says why.
func (d *Dir) CheckPrivate(owners ...int) error {
	fi, err := d.Stat()
	if err != nil {
		return err
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return fmt.Errorf("%s: cannot tell its owner", d.name)
	}
	return checkPrivate(d.name, int(st.Uid), fi.Mode(), owners)
}

func checkPrivate(name string, owner int, mode fs.FileMode, owners []int) error {
	ours := owner == 0 || slices.Contains(owners, owner)
	switch {
	case !ours:
		return fmt.Errorf("%s: %w: it belongs to uid %d, who can rename what ftctl writes there", name, ErrShared, owner)
	case mode&0o022 != 0 && mode&fs.ModeSticky == 0:
		who := "every user"
		if mode&0o002 == 0 {
			who = "its group"
		}
		return fmt.Errorf("%s: %w: %s can write in it (mode %04o, not sticky), and could rename what ftctl writes there or plant a link", name, ErrShared, who, mode.Perm())
	}
	return nil
}
