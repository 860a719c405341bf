package tracefs

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"

	"golang.org/x/sys/unix"
)

// DefaultMountPoint is where tracefs lives since Linux 4.1 and where `ftctl mount` puts it.
const DefaultMountPoint = "/sys/kernel/tracing"

// MountInfoPath lists this process's mounts, where tracefs is looked for.
const MountInfoPath = "/proc/self/mountinfo"

// Mount says where tracefs is and how ftctl found it.
type Mount struct {
	Path    string `json:"path"`    // the tracing directory
	FSType  string `json:"fstype"`  // "tracefs", "debugfs" (legacy debugfs/tracing), or "" when given
	Found   string `json:"found"`   // "--tracefs", "FTCTL_TRACEFS", "mountinfo"
	Options string `json:"options"` // the mount's super options (gid=, mode=), when known
}

// mountEntry is one line of /proc/self/mountinfo that matters to us.
type mountEntry struct {
	MountPoint string
	FSType     string
	SuperOpts  string
}

// parseMountInfo reads /proc/self/mountinfo syntax (proc(5)): fields up to the " - "
// separator, the mount point in field 5 with octal escapes (\040 for space).
func parseMountInfo(r io.Reader) ([]mountEntry, error) {
	var out []mountEntry
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64*1024), 1024*1024)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		sep := -1
		for i, f := range fields {
			if f == "-" && i >= 6 {
				sep = i
				break
			}
		}
		if sep < 0 || len(fields) < sep+3 {
			return nil, fmt.Errorf("malformed mountinfo line %q", sc.Text())
		}
		e := mountEntry{MountPoint: unescapeOctal(fields[4]), FSType: fields[sep+1]}
		if len(fields) > sep+3 {
			e.SuperOpts = fields[sep+3]
		}
		out = append(out, e)
	}
	return out, sc.Err()
}

// unescapeOctal undoes the kernel's mangling of space, tab, newline and backslash (\ooo).
func unescapeOctal(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+3 < len(s) {
			if v, err := strconv.ParseUint(s[i+1:i+4], 8, 8); err == nil {
				b.WriteByte(byte(v))
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// findTracefs applies the documented search order to mount entries:
//  1. a tracefs mount at /sys/kernel/tracing;
//  2. any other tracefs mount (e.g. the automount under /sys/kernel/debug/tracing);
//  3. a debugfs mount whose tracing/ directory exists (pre-4.1 kernels, or tracefs not
//     mounted but debugfs is: looking at debugfs/tracing automounts tracefs there).
func findTracefs(entries []mountEntry, exists func(string) bool) (Mount, bool) {
	for _, e := range entries {
		if e.FSType == "tracefs" && e.MountPoint == DefaultMountPoint {
			return Mount{Path: e.MountPoint, FSType: "tracefs", Found: "mountinfo", Options: e.SuperOpts}, true
		}
	}
	for _, e := range entries {
		if e.FSType == "tracefs" {
			return Mount{Path: e.MountPoint, FSType: "tracefs", Found: "mountinfo", Options: e.SuperOpts}, true
		}
	}
	for _, e := range entries {
		if e.FSType == "debugfs" {
			p := filepath.Join(e.MountPoint, "tracing")
			if exists(filepath.Join(p, "trace")) {
				return Mount{Path: p, FSType: "debugfs", Found: "mountinfo", Options: e.SuperOpts}, true
			}
		}
	}
	return Mount{}, false
}

func fileExists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}

// discover finds tracefs once per process through /proc/self/mountinfo.
var discover = sync.OnceValues(func() (Mount, error) {
	return discoverIn(MountInfoPath)
})

func discoverIn(mountinfo string) (Mount, error) {
	f, err := os.Open(mountinfo)
	if err != nil {
		return Mount{}, &Error{Op: "read", Path: mountinfo, Class: ErrIO, Errno: err}
	}
	defer f.Close()
	entries, err := parseMountInfo(f)
	if err != nil {
		return Mount{}, &Error{Op: "read", Path: mountinfo, Class: ErrIO, Errno: err}
	}
	if m, ok := findTracefs(entries, fileExists); ok {
		return m, nil
	}
	return Mount{}, &Error{Class: ErrNotMounted,
		Reason: "neither tracefs nor debugfs/tracing is in /proc/self/mountinfo; mount it with " +
			"'sudo ftctl mount' or 'sudo mount -t tracefs nodev " + DefaultMountPoint + "'"}
}

// Locate returns where tracefs is. An explicit root (the --tracefs flag or FTCTL_TRACEFS; found
// names which) wins and must be a directory; otherwise /proc/self/mountinfo is searched.
func Locate(root, found string) (Mount, error) {
	if root == "" {
		return discover()
	}
	st, err := os.Stat(root)
	if err != nil {
		class, reason := ErrNotMounted, "given by "+found
		if errors.Is(err, os.ErrPermission) {
			class = ErrPermission
		}
		return Mount{}, &Error{Op: "stat", Path: root, Class: class, Errno: unwrapPath(err), Reason: reason}
	}
	if !st.IsDir() {
		return Mount{}, &Error{Op: "stat", Path: root, Class: ErrNotMounted, Reason: "not a directory (given by " + found + ")"}
	}
	// Resolved once here: the lock opens the root with O_NOFOLLOW, and every path joins it.
	path := filepath.Clean(root)
	if real, err := filepath.EvalSymlinks(path); err == nil {
		path = real
	}
	m := Mount{Path: path, Found: found}
	var sfs unix.Statfs_t
	if unix.Statfs(root, &sfs) == nil {
		switch sfs.Type {
		case unix.TRACEFS_MAGIC:
			m.FSType = "tracefs"
		case unix.DEBUGFS_MAGIC:
			m.FSType = "debugfs"
		}
	}
	return m, nil
}

func unwrapPath(err error) error {
	var pe *os.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}

// MountTracefs mounts tracefs at dir (creating nothing: dir must exist, as /sys/kernel/tracing
// does on every kernel with tracefs). It reports whether a mount was made; an existing tracefs
// mount there is left alone. With dryRun non-nil the mount is printed, not made.
func MountTracefs(dir string, dryRun io.Writer) (bool, error) {
	if abs, err := filepath.Abs(dir); err == nil {
		dir = abs
	}
	var sfs unix.Statfs_t
	if err := unix.Statfs(dir, &sfs); err != nil {
		if filepath.Clean(dir) == DefaultMountPoint { // made by the kernel when it has tracefs
			return false, &Error{Op: "mount", Path: dir, Class: ErrUnavailable, Errno: err,
				Reason: "the mount point is missing: this kernel has no tracefs (CONFIG_TRACING off?)"}
		}
		return false, &Error{Op: "mount", Path: dir, Class: ErrBadPath, Errno: err}
	}
	if sfs.Type == unix.TRACEFS_MAGIC {
		// Where tracefs is mounted, or a directory inside it (instances/...): only the first
		// is "already mounted".
		if at, real, ok := tracefsMountOf(dir); ok && at != real {
			return false, &Error{Op: "mount", Path: dir, Class: ErrBadPath,
				Reason: "it is a directory inside the tracefs mounted at " + at + ", not a mount point"}
		}
		return false, nil
	}
	if dryRun != nil {
		fmt.Fprintf(dryRun, "dry-run: mount -t tracefs nodev %s\n", dir)
		return true, nil
	}
	if err := unix.Mount("nodev", dir, "tracefs", 0, ""); err != nil {
		e := &Error{Op: "mount", Path: dir, Errno: err}
		switch {
		case errors.Is(err, unix.EPERM), errors.Is(err, unix.EACCES):
			e.Class, e.Reason = ErrPermission, "mounting needs root (CAP_SYS_ADMIN) in the initial mount namespace's owner"
		case errors.Is(err, unix.ENODEV):
			e.Class, e.Reason = ErrUnavailable, "this kernel has no tracefs (CONFIG_TRACING off)"
		case errors.Is(err, unix.EBUSY):
			e.Class = ErrBusy
		default:
			e.Class = ErrIO
		}
		return false, e
	}
	return true, nil
}

// tracefsMountOf finds the tracefs mount that holds dir (absolute): the mount point and dir,
// both with symlinks resolved.
func tracefsMountOf(dir string) (at, real string, ok bool) {
	real = dir
	if r, err := filepath.EvalSymlinks(dir); err == nil {
		real = r
	}
	f, err := os.Open(MountInfoPath)
	if err != nil {
		return "", real, false
	}
	defer f.Close()
	entries, err := parseMountInfo(f)
	if err != nil {
		return "", real, false
	}
	at, ok = mountOf(entries, "tracefs", real)
	return at, real, ok
}

// mountOf is the longest mount point of fstype that is dir or above it.
func mountOf(entries []mountEntry, fstype, dir string) (string, bool) {
	best, found := "", false
	for _, e := range entries {
		if e.FSType != fstype {
			continue
		}
		under := dir == e.MountPoint || strings.HasPrefix(dir, strings.TrimSuffix(e.MountPoint, "/")+"/")
		if under && (!found || len(e.MountPoint) > len(best)) {
			best, found = e.MountPoint, true
		}
	}
	return best, found
}
