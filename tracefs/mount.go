package tracefs

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"

	"github.com/moby/sys/mountinfo"
	"golang.org/x/sys/unix"
)

// DefaultMountPoint is where tracefs lives since Linux 4.1 and where `ftctl mount` puts it.
const DefaultMountPoint = "/sys/kernel/tracing"

// MountInfoPath lists this process's mounts, where tracefs is looked for.
const MountInfoPath = "/proc/self/mountinfo"

// Mount says where tracefs is and how ftctl found it.
type Mount struct {
	Path   string `json:"path"`   // the tracing directory
	FSType string `json:"fstype"` // "tracefs", "debugfs" (legacy debugfs/tracing), or "" when given
	Found  string `json:"found"`  // "--tracefs", "FTCTL_TRACEFS", "mountinfo"
	// Options are the mount's own options (ro or rw, nosuid...): a container's read-only bind
	// mount of a read-write tracefs says ro here, not in SuperOptions.
	Options string `json:"options"`
	// SuperOptions are the file system's (gid=, mode=), shared by every mount of it.
	SuperOptions string `json:"super_options"`
	// ReadOnly: writes fail with EROFS (the mount, or the file system, is read-only). Reading
	// commands still work.
	ReadOnly bool `json:"read_only"`
}

// mountEntry is one line of /proc/self/mountinfo that matters to us.
type mountEntry struct {
	MountPoint string
	FSType     string
	SuperOpts  string
	MountOpts  string
}

// parseMountInfo reads /proc/self/mountinfo syntax (proc(5)) through moby's parser, which
// undoes the kernel's octal escapes (\040 for a space) and keeps both option sets.
func parseMountInfo(r io.Reader) ([]mountEntry, error) {
	infos, err := mountinfo.GetMountsFromReader(r, nil)
	if err != nil {
		return nil, err
	}
	out := make([]mountEntry, 0, len(infos))
	for _, in := range infos {
		out = append(out, mountEntry{MountPoint: in.Mountpoint, FSType: in.FSType, SuperOpts: in.VFSOptions, MountOpts: in.Options})
	}
	return out, nil
}

// hasOption says whether a comma-separated option list holds opt.
func hasOption(list, opt string) bool {
	for _, o := range strings.Split(list, ",") {
		if o == opt {
			return true
		}
	}
	return false
}

func (e mountEntry) mount(path, fstype string) Mount {
	return Mount{Path: path, FSType: fstype, Found: "mountinfo", Options: e.MountOpts, SuperOptions: e.SuperOpts,
		ReadOnly: hasOption(e.MountOpts, "ro") || hasOption(e.SuperOpts, "ro")}
}

// findTracefs applies the documented search order to mount entries:
//  1. a tracefs mount at /sys/kernel/tracing;
//  2. any other tracefs mount (e.g. the automount under /sys/kernel/debug/tracing);
//  3. a debugfs mount whose tracing/ directory exists (pre-4.1 kernels, or tracefs not
//     mounted but debugfs is: looking at debugfs/tracing automounts tracefs there).
func findTracefs(entries []mountEntry, exists func(string) bool) (Mount, bool) {
	for _, e := range entries {
		if e.FSType == "tracefs" && e.MountPoint == DefaultMountPoint {
			return e.mount(e.MountPoint, "tracefs"), true
		}
	}
	for _, e := range entries {
		if e.FSType == "tracefs" {
			return e.mount(e.MountPoint, "tracefs"), true
		}
	}
	for _, e := range entries {
		if e.FSType == "debugfs" {
			p := filepath.Join(e.MountPoint, "tracing")
			if exists(filepath.Join(p, "trace")) {
				return e.mount(p, "debugfs"), true
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

// readMountInfo reads and parses a mountinfo file: the one door to it for discovery and mount.
func readMountInfo(path string) ([]mountEntry, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return parseMountInfo(f)
}

func discoverIn(mountinfo string) (Mount, error) {
	entries, err := readMountInfo(mountinfo)
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
		return Mount{}, &Error{Op: "stat", Path: root, Class: ErrBadPath, Reason: "not a directory (given by " + found + "); tracefs is a directory such as " + DefaultMountPoint}
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
		// statfs reports the mount's flags (ST_RDONLY for a read-only bind of a read-write
		// tracefs too), so a given root needs no mountinfo lookup.
		m.ReadOnly = sfs.Flags&unix.ST_RDONLY != 0
	}
	if err := checkLayout(m, found); err != nil {
		return Mount{}, err
	}
	return m, nil
}

// layoutFiles are files every tracing directory has (kernel/trace/trace.c
// init_tracer_tracefs): a directory given as tracefs that holds none of them is a mistake, such
// as --tracefs /sys/kernel/debug for /sys/kernel/debug/tracing.
var layoutFiles = []string{"trace", "tracing_on", "current_tracer", "available_tracers", "README", "trace_pipe",
	"set_ftrace_filter", "available_filter_functions", "kprobe_events", "dynamic_events", "events", "instances", "per_cpu"}

// checkLayout refuses a given root that is neither a tracefs nor laid out as one (the unit
// tests' fakes are plain directories with tracefs's files): ErrNotMounted, since the usual
// case is the empty mount point of an unmounted tracefs.
func checkLayout(m Mount, found string) error {
	if m.FSType == "tracefs" {
		return nil
	}
	for _, f := range layoutFiles {
		if fileExists(filepath.Join(m.Path, f)) {
			return nil
		}
	}
	reason := "no tracefs is mounted here and it holds none of tracefs's files (trace, tracing_on, README...); given by " + found
	switch {
	case fileExists(filepath.Join(m.Path, "tracing", "trace")):
		reason += "; did you mean " + filepath.Join(m.Path, "tracing") + "?"
	case m.FSType == "debugfs":
		reason += "; debugfs holds tracefs in its tracing directory"
	default:
		reason += "; to mount it here: sudo ftctl mount " + m.Path
	}
	return &Error{Op: "stat", Path: m.Path, Class: ErrNotMounted, Reason: reason}
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
// mount there is left alone, and so is a tracefs mounted somewhere else: elsewhere names it
// (then nothing is mounted). With dryRun non-nil the mount is printed, not made.
func MountTracefs(dir string, dryRun io.Writer) (made bool, elsewhere string, err error) {
	if abs, err := filepath.Abs(dir); err == nil {
		dir = abs
	}
	var sfs unix.Statfs_t
	if err := unix.Statfs(dir, &sfs); err != nil {
		if filepath.Clean(dir) == DefaultMountPoint { // made by the kernel when it has tracefs
			return false, "", &Error{Op: "mount", Path: dir, Class: ErrUnavailable, Errno: err,
				Reason: "the mount point is missing: this kernel has no tracefs (CONFIG_TRACING off?)"}
		}
		return false, "", &Error{Op: "mount", Path: dir, Class: ErrBadPath, Errno: err}
	}
	if sfs.Type == unix.TRACEFS_MAGIC {
		// Where tracefs is mounted, or a directory inside it (instances/...): only the first
		// is "already mounted".
		if at, real, ok := tracefsMountOf(dir); ok && at != real {
			return false, "", &Error{Op: "mount", Path: dir, Class: ErrBadPath,
				Reason: "it is a directory inside the tracefs mounted at " + at + ", not a mount point"}
		}
		return false, "", nil
	}
	if at := MountedElsewhere(dir); at != "" {
		return false, at, nil
	}
	if dryRun != nil {
		fmt.Fprintf(dryRun, "dry-run: mount -t tracefs nodev %s\n", dir)
		return true, "", nil
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
		return false, "", e
	}
	return true, "", nil
}

// MountedElsewhere names where tracefs is mounted already, other than at dir (absolute) and
// the directories above it: a second mount is the same file system seen twice, and ftctl finds
// the first one anyway. "" when tracefs is mounted nowhere else (or mountinfo cannot be read).
func MountedElsewhere(dir string) string {
	if abs, err := filepath.Abs(dir); err == nil {
		dir = abs
	}
	if real, err := filepath.EvalSymlinks(dir); err == nil {
		dir = real
	}
	entries, err := readMountInfo(MountInfoPath)
	if err != nil {
		return ""
	}
	if m, ok := findTracefs(entries, fileExists); ok && m.FSType == "tracefs" && m.Path != dir {
		return m.Path
	}
	return ""
}

// tracefsMountOf finds the tracefs mount that holds dir (absolute): the mount point and dir,
// both with symlinks resolved.
func tracefsMountOf(dir string) (at, real string, ok bool) {
	real = dir
	if r, err := filepath.EvalSymlinks(dir); err == nil {
		real = r
	}
	entries, err := readMountInfo(MountInfoPath)
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

// StillMounted checks that the tracing directory is still what Locate found: a tracefs (or,
// for a fake, laid out as one). A long-running process (ftctl agent) asks before each round of
// reads and writes, so that an unmounted tracefs is an error (ErrNotMounted) and not an empty
// directory it would plan a whole set-up into.
func (f *FS) StillMounted() error {
	m := Mount{Path: f.Mount.Path, Found: f.Mount.Found}
	var sfs unix.Statfs_t
	if err := unix.Statfs(m.Path, &sfs); err != nil {
		return &Error{Op: "statfs", Path: m.Path, Class: ErrNotMounted, Errno: err}
	}
	if sfs.Type == unix.TRACEFS_MAGIC {
		return nil
	}
	if f.Mount.FSType == "tracefs" {
		return &Error{Op: "statfs", Path: m.Path, Class: ErrNotMounted, Reason: "tracefs is no longer mounted here"}
	}
	return checkLayout(m, m.Found)
}
