package tracefs

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// Classes of failure. Every error this package returns wraps one of them (and, where the kernel
// returned an errno, the errno too, so errors.Is(err, fs.ErrExist) and friends keep working).
// The command layer maps these classes, and nothing else, to exit codes.
var (
	// ErrNotMounted: no tracefs (nor debugfs/tracing) mount was found.
	ErrNotMounted = errors.New("tracefs is not mounted")
	// ErrPermission: EACCES, the caller lacks the file's permission (not root, not in the group).
	ErrPermission = errors.New("permission denied")
	// ErrForbidden: EPERM, the kernel refuses whatever the permission bits say (lockdown or
	// another security policy).
	ErrForbidden = errors.New("forbidden by the kernel")
	// ErrDisabled: ENODEV, ftrace shut itself down (ftrace_disabled after an ftrace_bug()).
	ErrDisabled = errors.New("ftrace is disabled in this kernel")
	// ErrUnavailable: the control file does not exist in this kernel (ENOENT on open), or the
	// kernel lacks the feature behind it.
	ErrUnavailable = errors.New("not available in this kernel")
	// ErrBusy: EBUSY from the kernel, or another ftctl holds the control-plane lock.
	ErrBusy = errors.New("busy")
	// ErrRejected: the kernel refused what was written (EINVAL, EEXIST, ENOENT, E2BIG... on write).
	ErrRejected = errors.New("rejected by the kernel")
	// ErrBadInstance: an instance name that is not a valid single directory name.
	ErrBadInstance = errors.New("invalid instance name")
	// ErrNoInstance: the named instance does not exist (read commands never create one).
	ErrNoInstance = errors.New("no such instance")
	// ErrBadPath: a path the user gave is unfit for what was asked (missing, or not a mount
	// point), as opposed to a kernel that lacks something.
	ErrBadPath = errors.New("invalid path")
	// ErrReadOnly: EROFS, tracefs is mounted read-only here (a container's read-only bind mount,
	// most often): reading works, writing cannot.
	ErrReadOnly = errors.New("tracefs is mounted read-only")
	// ErrPlanned: a dry run asked what only the kernel can say once the plan is applied (a
	// file of an instance the plan makes: Instance.Planned).
	ErrPlanned = errors.New("not known before the plan is applied")
	// ErrIO: any other failure talking to the kernel.
	ErrIO = errors.New("i/o error")
)

// Error describes one failed operation on a tracefs file: what was being done, to which file,
// with what data, the errno, and a human explanation of why the kernel said no.
type Error struct {
	Op     string // "open", "read", "write", "mkdir", "rmdir", "mount", "lock"
	Path   string // absolute path of the file or directory
	Data   string // what was being written, when Op is "write"
	Class  error  // one of the Err* classes above
	Errno  error  // the kernel's errno (a unix.Errno) or another underlying error; may be nil
	Reason string // why, in words: lockdown level, the owning group, the error_log message...
	// KernelLog holds the error_log entries the kernel added for this failure (probe and
	// event-filter writes), oldest first.
	KernelLog []LogEntry
}

func (e *Error) Error() string {
	var b strings.Builder
	switch e.Op {
	case "write":
		fmt.Fprintf(&b, "writing %s to %s", quoteData(e.Data), e.Path)
	case "read":
		fmt.Fprintf(&b, "reading %s", e.Path)
	case "open":
		fmt.Fprintf(&b, "opening %s", e.Path)
	case "":
		b.WriteString(e.Path)
	default:
		fmt.Fprintf(&b, "%s %s", e.Op, e.Path)
	}
	if b.Len() > 0 {
		b.WriteString(": ")
	}
	switch {
	case e.Errno != nil:
		b.WriteString(errnoText(e.Errno))
	case e.Class != nil:
		b.WriteString(e.Class.Error())
	}
	if e.Reason != "" {
		b.WriteString(" (")
		b.WriteString(e.Reason)
		b.WriteString(")")
	}
	for _, le := range e.KernelLog {
		b.WriteString("\n")
		b.WriteString(le.Format("  "))
	}
	return b.String()
}

// Unwrap exposes both the class and the errno to errors.Is / errors.As.
func (e *Error) Unwrap() []error {
	errs := make([]error, 0, 2)
	if e.Class != nil {
		errs = append(errs, e.Class)
	}
	if e.Errno != nil {
		errs = append(errs, e.Errno)
	}
	return errs
}

// errnoText names an errno the way a sysadmin knows it: "invalid argument (EINVAL)".
func errnoText(err error) string {
	var errno unix.Errno
	if errors.As(err, &errno) {
		if name := unix.ErrnoName(errno); name != "" {
			return errno.Error() + " (" + name + ")"
		}
	}
	return err.Error()
}

// quoteData shows written data compactly: quoted, control characters escaped, long data cut.
func quoteData(s string) string {
	const max = 200
	if len(s) > max {
		return strconv.Quote(s[:max]) + fmt.Sprintf("... (%d bytes)", len(s))
	}
	return strconv.Quote(s)
}

// opError builds the Error for a failed operation on path, translating the errno into a class
// and an explanation. It is the one place where errnos become meaning.
func (f *FS) opError(op, path, data string, err error) error {
	if err == nil {
		return nil
	}
	var pe *fs.PathError
	if errors.As(err, &pe) {
		err = pe.Err
	}
	e := &Error{Op: op, Path: path, Data: data, Errno: err}
	var errno unix.Errno
	if !errors.As(err, &errno) {
		e.Class = ErrIO
		return e
	}
	switch errno {
	case unix.EACCES:
		e.Class = ErrPermission
		e.Reason = permissionReason(path)
	case unix.EPERM:
		e.Class = ErrForbidden
		e.Reason = f.forbiddenReason()
	case unix.ENODEV:
		e.Class = ErrDisabled
		e.Reason = "ftrace shut itself down after an internal error; see dmesg for the ftrace bug report"
	case unix.EBUSY:
		e.Class = ErrBusy
		e.Reason = busyReason(path)
	case unix.EROFS:
		e.Class = ErrReadOnly
		e.Reason = "tracefs at " + f.Mount.Path + " is mounted read-only, as in a container given it with :ro; " +
			"reading commands work, changes need a read-write mount"
	case unix.ENOENT:
		if op == "open" || op == "read" || op == "stat" {
			e.Reason, e.Class = f.missingReason(path)
		} else {
			e.Class = ErrRejected
		}
	case unix.EINVAL, unix.EEXIST, unix.E2BIG, unix.ENOSPC, unix.ENOMEM, unix.ENAMETOOLONG, unix.ERANGE,
		unix.EILSEQ, unix.EADDRNOTAVAIL, unix.EOPNOTSUPP:
		// EILSEQ: a kprobe offset not on an instruction boundary; EADDRNOTAVAIL: a symbol
		// that is not unique (6.6+); EOPNOTSUPP: BTF arguments without BTF.
		e.Class = ErrRejected
	default:
		e.Class = ErrIO
	}
	return e
}

// missingReason says what is missing when path does not exist: an instance that does not
// exist (its directory is gone), a directory of the tree, or the file itself, which this kernel
// does not provide.
func (f *FS) missingReason(path string) (reason string, class error) {
	root := f.Mount.Path
	rel, err := filepath.Rel(root, path)
	if root == "" || err != nil || strings.HasPrefix(rel, "..") {
		return "it does not exist", ErrUnavailable
	}
	parts := strings.Split(rel, string(filepath.Separator))
	if len(parts) >= 2 && parts[0] == "instances" && !fileExists(filepath.Join(root, "instances", parts[1])) {
		// ErrUnavailable still: callers that walk instances take a vanished one as absent.
		return "there is no instance " + strconv.Quote(parts[1]) + " ('ftctl instance list' lists them)", ErrUnavailable
	}
	for i := len(parts) - 1; i >= 1; i-- {
		dir := filepath.Join(append([]string{root}, parts[:i]...)...)
		if fileExists(dir) {
			if i < len(parts)-1 {
				return filepath.Join(parts[:i+1]...) + " does not exist here", ErrUnavailable
			}
			break
		}
	}
	return "this kernel does not provide it", ErrUnavailable
}

// permissionReason says who may open path: root, or the group tracefs was mounted with.
func permissionReason(path string) string {
	reason := "ftctl needs root"
	if os.Geteuid() == 0 {
		return "root was refused: the mount's mode forbids this access"
	}
	var st unix.Stat_t
	if unix.Stat(path, &st) == nil && st.Gid != 0 && st.Mode&0o060 != 0 {
		group := strconv.Itoa(int(st.Gid))
		if g, err := user.LookupGroupId(group); err == nil {
			group = g.Name
		}
		reason += fmt.Sprintf(", or membership in group %q, which tracefs was mounted with", group)
	}
	return reason + "; try sudo"
}

// forbiddenReason explains an EPERM: kernel lockdown when it is active, else another policy.
func (f *FS) forbiddenReason() string {
	ld := ReadLockdown()
	switch {
	case ld.Current == "confidentiality":
		return "kernel lockdown is at level 'confidentiality', which forbids tracefs and kprobes"
	case ld.Current == "integrity":
		return "kernel lockdown is at level 'integrity'; this kernel also refuses the operation"
	case ld.Current == "none":
		return "kernel lockdown is off, so another security policy of this kernel forbids it"
	default:
		return "the kernel refuses it whatever the file permissions say; lockdown state unknown: " + ld.Note
	}
}

func busyReason(path string) string {
	switch {
	case strings.HasSuffix(path, "/kprobe_events"), strings.HasSuffix(path, "/dynamic_events"):
		return "a probe being removed or redefined is enabled in some instance"
	case strings.Contains(path, "/instances/"):
		return "the instance is in use: a file in it is open or one of its events is referenced"
	}
	return "the kernel object is in use"
}

// errnoName is "EPERM" for unix.EPERM, "" for anything that is not an errno.
func errnoName(err error) string {
	var errno unix.Errno
	if errors.As(err, &errno) {
		return unix.ErrnoName(errno)
	}
	return ""
}
