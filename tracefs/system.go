package tracefs

import (
	"errors"
	"fmt"
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

// FunctionsFingerprint identifies what available_filter_functions lists, so that what was
// resolved against it can be kept and trusted while the fingerprint holds (a profile's globs:
// reading and parsing the list costs more than half a second under emulation). The list is
// the core kernel's ftrace records, fixed once the boot's init memory is freed, and each
// loaded module's, added when it loads (ftrace_module_init) and removed when it goes
// (ftrace_release_mod), its init functions when its init has run (ftrace_free_mem). So the
// fingerprint is the boot id and, per module /proc/modules lists, its name, size, state and
// load address and the inode number of its /sys/module/NAME directory: sysfs makes that
// directory when the module loads and removes it when it goes, and kernfs never gives a
// number twice in a boot (64-bit ids from a cyclic allocator with a generation, since Linux
// 5.5), so a module unloaded and loaded again (even another build, at the same address)
// changes it.
//
// ok is false when the fingerprint cannot vouch for the list: the boot id or a module's
// directory cannot be read, or a module is loading or going (its init functions are listed
// until its init has run). What it cannot see: a module so early in its load that
// /proc/modules does not list it yet (the kernel's MODULE_STATE_UNFORMED, milliseconds), whose
// records may already be listed; a caller compares what it kept with the kernel and reads the
// list again on any difference.
func (f *FS) FunctionsFingerprint() (fp string, ok bool) {
	boot := f.BootID()
	if boot == "" {
		return "", false
	}
	var b strings.Builder
	b.WriteString("boot " + boot + "\n")
	text, err := os.ReadFile("/proc/modules")
	if errors.Is(err, fs.ErrNotExist) {
		return b.String(), true // CONFIG_MODULES off: the core kernel's records alone
	}
	if err != nil {
		return "", false
	}
	mods, ok := ParseModules(string(text))
	if !ok {
		return "", false
	}
	for _, m := range mods {
		var st unix.Stat_t
		if err := unix.Stat("/sys/module/"+m.Name, &st); err != nil {
			return "", false
		}
		fmt.Fprintf(&b, "%s %d %s %d\n", m.Name, m.Size, m.Address, st.Ino)
	}
	return b.String(), true
}

// Module is a loaded module as /proc/modules lists it.
type Module struct {
	Name    string
	Size    int64
	State   string // Live, Loading, Unloading
	Address string // its load address, 0x0000000000000000 to a reader without CAP_SYSLOG
}

// ParseModules parses /proc/modules ("name size refcount deps state address [taints]").
// ok is false when a line does not parse or a module is not Live (loading or going).
func ParseModules(text string) (mods []Module, ok bool) {
	for _, line := range strings.Split(text, "\n") {
		f := strings.Fields(line)
		if len(f) == 0 {
			continue
		}
		if len(f) < 6 || !validModuleName(f[0]) {
			return nil, false
		}
		size, err := strconv.ParseInt(f[1], 10, 64)
		if err != nil || size < 0 {
			return nil, false
		}
		m := Module{Name: f[0], Size: size, State: f[4], Address: f[5]}
		if m.State != "Live" {
			return nil, false
		}
		mods = append(mods, m)
	}
	return mods, true
}

// validModuleName: a module's name as the kernel allows it (no '/', not "." or ".."), so that
// /sys/module/NAME names its directory.
func validModuleName(s string) bool {
	return s != "" && s != "." && s != ".." && !strings.ContainsAny(s, "/\x00")
}
