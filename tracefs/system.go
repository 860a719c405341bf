package tracefs

import (
	"errors"
	"io/fs"
	"os"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"
)

// KernelRelease is uname -r.
func KernelRelease() string {
	if _, _, release, _, ok := Uname(); ok {
		return release
	}
	return "unknown"
}

// Uname is uname(2)'s system, node, release and machine names; ok false when it fails.
func Uname() (sysname, nodename, release, machine string, ok bool) {
	var u unix.Utsname
	if err := unix.Uname(&u); err != nil {
		return "", "", "", "", false
	}
	s := unix.ByteSliceToString
	return s(u.Sysname[:]), s(u.Nodename[:]), s(u.Release[:]), s(u.Machine[:]), true
}

// BootIDPath holds a random UUID the kernel draws at each boot (drivers/char/random.c).
const BootIDPath = "/proc/sys/kernel/random/boot_id"

// BootID is this boot's identity, or "" when it cannot be read.
func (f *FS) BootID() string {
	path := BootIDPath
	if f.BootIDFile != "" {
		path = f.BootIDFile
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(b))
}

// LockdownPath is the lockdown LSM's control file (security/lockdown/lockdown.c, Linux 5.4).
const LockdownPath = "/sys/kernel/security/lockdown"

// Lockdown is the kernel lockdown state. At "confidentiality" the kernel refuses tracefs
// (LOCKDOWN_TRACEFS) and kprobes (LOCKDOWN_KPROBES) with EPERM; "integrity" does not affect
// tracing.
type Lockdown struct {
	Current   string   `json:"current"`          // "none", "integrity", "confidentiality", or "" when unknown
	Available []string `json:"levels,omitempty"` // the levels the kernel offers
	Note      string   `json:"note,omitempty"`   // why the state is unknown
}

// ReadLockdown reads the lockdown state; when it cannot be read, Note says why.
func ReadLockdown() Lockdown {
	b, err := os.ReadFile(LockdownPath)
	if err != nil {
		switch {
		case errors.Is(err, fs.ErrNotExist):
			if _, serr := os.Stat("/sys/kernel/security/lsm"); serr == nil {
				return Lockdown{Note: "the lockdown LSM is not active in this kernel"}
			}
			return Lockdown{Note: "securityfs is not mounted at /sys/kernel/security"}
		default:
			return Lockdown{Note: "cannot read " + LockdownPath + ": " + errnoText(unwrapPath(err))}
		}
	}
	return ParseLockdown(string(b))
}

// ParseLockdown parses "[none] integrity confidentiality" (the current level in brackets).
func ParseLockdown(s string) Lockdown {
	var ld Lockdown
	for _, f := range strings.Fields(s) {
		if strings.HasPrefix(f, "[") && strings.HasSuffix(f, "]") {
			f = strings.Trim(f, "[]")
			ld.Current = f
		}
		ld.Available = append(ld.Available, f)
	}
	if ld.Current == "" {
		ld.Note = "unrecognised lockdown file: " + strings.TrimSpace(s)
	}
	return ld
}

// ModulesFingerprint identifies the set of loaded modules and where they sit (/proc/modules:
// name, size and load address per line). Unloading a module shifts the index of every
// available_filter_functions record after its own, so the filter swap compares this before
// writing indexes with what it was when it read the index. "" when /proc/modules is absent
// (CONFIG_MODULES off: nothing can shift).
func ModulesFingerprint() string {
	b, err := os.ReadFile("/proc/modules")
	if err != nil {
		return ""
	}
	var out strings.Builder
	for _, line := range strings.Split(string(b), "\n") {
		f := strings.Fields(line)
		if len(f) >= 6 {
			out.WriteString(f[0] + " " + f[5] + "\n") // name and address; refcounts change freely
		}
	}
	return out.String()
}

// ProcessAlive reports whether a process with this pid exists (/proc/PID). A pid reused by
// another process counts as alive: callers use it to leave a possibly live session alone.
func ProcessAlive(pid string) bool {
	if pid == "" || strings.Trim(pid, "0123456789") != "" {
		return false
	}
	_, err := os.Stat("/proc/" + pid)
	return err == nil
}

// Task is what /proc/PID/status says of a running task: its process (Tgid: itself for a
// process, the process for a thread) and its parent process (PPid). ok is false for a pid no
// task has, or a zombie (exited, not yet reaped: the kernel ran its exit).
func Task(pid int) (tgid, ppid int, ok bool) {
	if pid <= 0 {
		return 0, 0, false
	}
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		return 0, 0, false
	}
	state, tgid, ppid, ok := ParseStatus(b)
	return tgid, ppid, ok && state != 'Z' && state != 'X'
}

// ParseStatus reads the state ("State:\tS (sleeping)"), Tgid and PPid of /proc/PID/status's
// text (the Name line comes first and is not read: a comm may hold anything).
func ParseStatus(b []byte) (state byte, tgid, ppid int, ok bool) {
	seen := 0
	for _, l := range strings.Split(string(b), "\n") {
		k, v, found := strings.Cut(l, ":")
		if !found {
			continue
		}
		v = strings.TrimSpace(v)
		switch k {
		case "State":
			if v == "" {
				return 0, 0, 0, false
			}
			state = v[0]
			seen |= 1
		case "Tgid", "PPid":
			n, err := strconv.Atoi(v)
			if err != nil || n < 0 {
				return 0, 0, 0, false
			}
			if k == "Tgid" {
				tgid, seen = n, seen|2
			} else {
				ppid, seen = n, seen|4
			}
		}
	}
	return state, tgid, ppid, seen == 7
}

// IsTerminal reports whether f is a terminal.
func IsTerminal(f *os.File) bool {
	_, err := unix.IoctlGetTermios(int(f.Fd()), unix.TCGETS)
	return err == nil
}

// ProcessCPU is the CPU time this process used so far, user and system, all threads
// (getrusage(2)); 0 when it fails.
func ProcessCPU() time.Duration {
	var ru unix.Rusage
	if unix.Getrusage(unix.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// MapFile maps size bytes of f from off (a multiple of the page size) read only, populated at
// once: what a reader looks at in place, where a read would copy it. Populated, the whole
// range is read in and mapped before it returns: callers map a bounded window at a time.
// unmap releases the mapping.
func MapFile(f *os.File, off int64, size int) (b []byte, unmap func(), err error) {
	b, err = unix.Mmap(int(f.Fd()), off, size, unix.PROT_READ, unix.MAP_SHARED|unix.MAP_POPULATE)
	if err != nil {
		return nil, nil, err
	}
	return b, func() { unix.Munmap(b) }, nil
}
