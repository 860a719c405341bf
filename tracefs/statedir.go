package tracefs

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"golang.org/x/sys/unix"
)

// CheckStateDir checks the state directory (StateDir, else DefaultStateDir) as CheckStateDir
// does. Commands check it before anything else; what writes there checks it again after
// making it.
func (f *FS) CheckStateDir() error { return CheckStateDir(f.StatePath()) }

// CheckStateDir refuses a state directory someone other than ftctl's user (or root) could
// change the contents of: ftctl, as root, acts on what it finds there (`ftctl reset` writes
// the kernel-wide files a journal names; the event probes' filter record is written back), and
// writes files there. The directory must be a directory, not a symbolic link, owned by the
// effective uid or by root, and writable by neither group nor others; every directory above
// it must be owned by the effective uid or root and either not writable by group or others or
// sticky (/tmp: others may add names, but not rename or remove this one). A directory that
// does not exist yet is checked through its parents: ftctl makes it 0700, and checks it again
// then (someone may have made it first under a sticky parent). OpenSSH's StrictModes checks
// the same of ~/.ssh.
func CheckStateDir(dir string) error {
	refuse := func(path, why string) error {
		return &Error{Op: "check", Path: path, Class: ErrPermission,
			Reason: "ftctl keeps there the journals it acts on as root: " + why + "; fix it or remove it"}
	}
	if !filepath.IsAbs(dir) {
		return refuse(dir, "the state directory is not absolute")
	}
	dir = filepath.Clean(dir)
	euid := uint32(os.Geteuid())
	own := func(st *unix.Stat_t) bool { return st.Uid == euid || st.Uid == 0 }
	var st unix.Stat_t
	err := unix.Lstat(dir, &st)
	switch {
	case errors.Is(err, unix.ENOENT):
	case err != nil:
		return &Error{Op: "check", Path: dir, Class: ErrIO, Errno: err}
	case st.Mode&unix.S_IFMT == unix.S_IFLNK:
		return refuse(dir, "the state directory is a symbolic link")
	case st.Mode&unix.S_IFMT != unix.S_IFDIR:
		return refuse(dir, "the state directory is not a directory")
	case !own(&st):
		return refuse(dir, fmt.Sprintf("the state directory is owned by uid %d, neither root nor uid %d", st.Uid, euid))
	case st.Mode&0o022 != 0:
		return refuse(dir, fmt.Sprintf("the state directory is writable by group or others (mode %04o)", st.Mode&0o7777))
	}
	for p := filepath.Dir(dir); ; p = filepath.Dir(p) {
		if err := unix.Stat(p, &st); err != nil {
			if errors.Is(err, unix.ENOENT) {
				if p == "/" {
					break
				}
				continue
			}
			return &Error{Op: "check", Path: p, Class: ErrIO, Errno: err}
		}
		switch {
		case !own(&st):
			return refuse(p, fmt.Sprintf("a directory above the state directory, %s, is owned by uid %d, neither root nor uid %d", p, st.Uid, euid))
		case st.Mode&0o022 != 0 && st.Mode&unix.S_ISVTX == 0:
			return refuse(p, fmt.Sprintf("a directory above the state directory, %s, is writable by group or others (mode %04o) and not sticky", p, st.Mode&0o7777))
		}
		if p == "/" {
			break
		}
	}
	return nil
}
