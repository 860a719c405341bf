package tracefs

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"unicode/utf8"

	"golang.org/x/sys/unix"
)

// MaxInstanceName is the longest instance name ftctl accepts: one path component (NAME_MAX).
const MaxInstanceName = 255

// ValidateInstanceName checks a name given with -B before it goes anywhere near the kernel: a
// single, printable directory name under instances/.
func ValidateInstanceName(name string) error {
	bad := func(why string) error {
		return &Error{Path: "instance " + quoteData(name), Class: ErrBadInstance, Reason: why}
	}
	switch {
	case name == "":
		return bad("the name is empty")
	case len(name) > MaxInstanceName:
		return bad(fmt.Sprintf("the name is %d bytes long; the limit is %d", len(name), MaxInstanceName))
	case strings.Contains(name, "/"):
		return bad("the name contains '/': an instance is a single directory under instances/")
	case name == "." || strings.Contains(name, ".."):
		return bad("the name contains '..' or is '.'")
	case !utf8.ValidString(name):
		return bad("the name is not valid UTF-8")
	}
	for _, r := range name {
		if r < 0x20 || r == 0x7f || (r >= 0x80 && r < 0xa0) {
			return bad(fmt.Sprintf("the name contains the control character %q", r))
		}
	}
	return nil
}

// Instance returns the trace array called name ("" for the top level) after validating the
// name. It does not check that the instance exists: see Lookup and Ensure.
func (f *FS) Instance(name string) (*Instance, error) {
	if name == "" {
		return f.Top(), nil
	}
	if err := ValidateInstanceName(name); err != nil {
		return nil, err
	}
	return &Instance{fs: f, Name: name, dir: filepath.Join(f.Mount.Path, "instances", name)}, nil
}

// Lookup returns an existing instance, for read-only commands: a missing one is an error
// (ErrNoInstance), never created.
func (f *FS) Lookup(name string) (*Instance, error) {
	in, err := f.Instance(name)
	if err != nil || name == "" {
		return in, err
	}
	st, err := os.Stat(in.dir)
	switch {
	case err == nil && st.IsDir():
		return in, nil
	case err == nil, errors.Is(err, fs.ErrNotExist):
		if !f.Top().Has("instances") {
			return nil, &Error{Op: "open", Path: f.Path("instances"), Class: ErrUnavailable,
				Reason: "this kernel has no tracing instances"}
		}
		return nil, &Error{Op: "open", Path: in.dir, Class: ErrNoInstance,
			Reason: "read commands never create instances; `ftctl instance list` lists the existing ones"}
	default:
		return nil, f.opError("open", in.dir, "", err)
	}
}

// Ensure returns the instance, creating it when missing (write commands). created says whether
// this call made it; the caller tells the user. In dry-run mode the mkdir is only printed.
func (f *FS) Ensure(name string) (in *Instance, created bool, err error) {
	in, err = f.Instance(name)
	if err != nil || name == "" {
		return in, false, err
	}
	if st, err := os.Stat(in.dir); err == nil && st.IsDir() {
		return in, false, nil
	}
	if !f.Top().Has("instances") {
		return nil, false, &Error{Op: "mkdir", Path: f.Path("instances"), Class: ErrUnavailable,
			Reason: "this kernel has no tracing instances"}
	}
	if f.DryRun != nil {
		fmt.Fprintf(f.DryRun, "dry-run: mkdir %s\n", in.dir)
		in.planned = true
		return in, true, nil
	}
	if err := f.mkdir(in.dir); err != nil {
		if errors.Is(err, fs.ErrExist) { // made by someone else meanwhile: fine
			return in, false, nil
		}
		return nil, false, f.opError("mkdir", in.dir, "", err)
	}
	f.logged("mkdir " + in.dir)
	return in, true, nil
}

// HasInstance says whether the instance called name exists (a directory under instances/).
func (f *FS) HasInstance(name string) bool { return f.Top().Has("instances/" + name) }

// Remove deletes an instance (rmdir). A missing instance is not an error: removal is idempotent.
func (f *FS) Remove(name string) error {
	in, err := f.Instance(name)
	if err != nil {
		return err
	}
	return in.Remove()
}

// Existing is the instance called name as the kernel listed it (Instances): any name the
// kernel accepted is handled, control characters and ".." inside included (ValidateInstanceName
// is for names ftctl is asked to create). Only what is not a single directory name is refused.
func (f *FS) Existing(name string) (*Instance, error) {
	if name == "" || name == "." || name == ".." || strings.ContainsAny(name, "/\x00") {
		return nil, &Error{Path: "instance " + quoteData(name), Class: ErrBadInstance, Reason: "not a directory name under instances/"}
	}
	return &Instance{fs: f, Name: name, dir: filepath.Join(f.Mount.Path, "instances", name)}, nil
}

// Remove deletes the instance (rmdir). A missing instance is not an error: removal is
// idempotent. The kernel refuses (ErrBusy) while a file of the instance is open (Hold).
func (i *Instance) Remove() error {
	f := i.fs
	if i.Name == "" {
		return &Error{Op: "rmdir", Path: f.Root(), Class: ErrBadInstance, Reason: "the top level cannot be removed"}
	}
	if f.DryRun != nil {
		fmt.Fprintf(f.DryRun, "dry-run: rmdir %s\n", i.dir)
		return nil
	}
	switch err := f.rmdir(i.dir); {
	case err == nil:
		f.logged("rmdir " + i.dir)
	case !errors.Is(err, fs.ErrNotExist):
		return f.opError("rmdir", i.dir, "", err)
	}
	return nil
}

// Gone says whether the instance is known to be absent: only the kernel's "no such file" proves
// it. Any other failure to look (the error: permission, a loop of links...) proves nothing either
// way, and a caller deciding whether an owner is alive must take it as "may be".
func (i *Instance) Gone() (bool, error) {
	_, err := os.Stat(i.dir)
	switch {
	case err == nil:
		return false, nil
	case errors.Is(err, fs.ErrNotExist):
		return true, nil
	}
	return false, i.fs.opError("stat", i.dir, "", err)
}

// Hold keeps a file of the instance open (tracing_on: its open takes a reference on the trace
// array, kernel/trace/trace.c tracing_open_generic_tr) until Close: meanwhile the kernel refuses
// to remove the instance (rmdir: EBUSY, __remove_instance checks tr->ref). A live owner holds
// its instance, so that an rmdir that succeeds proves the owner gone, in whatever pid namespace
// it ran.
type Hold struct {
	f    *os.File
	once sync.Once
}

// Hold opens the instance's tracing_on and keeps it open. In dry-run mode nothing is held.
func (i *Instance) Hold() (*Hold, error) {
	if i.fs.DryRun != nil {
		return &Hold{}, nil
	}
	p := i.Path("tracing_on")
	f, err := os.OpenFile(p, os.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, i.fs.opError("open", p, "", err)
	}
	// A shared flock on the open file too: the kernel drops it when the holder dies, whatever
	// else keeps the instance busy (Unheld).
	if err := unix.Flock(int(f.Fd()), unix.LOCK_SH); err != nil {
		f.Close()
		return nil, &Error{Op: "lock", Path: p, Class: ErrIO, Errno: err}
	}
	return &Hold{f: f}, nil
}

// Unheld says whether no live process holds the instance (Hold's flock on tracing_on is free):
// the proof that its owner is gone when the kernel keeps the instance busy for another reason
// (a hist trigger with variables takes a reference on its trace array until it is removed:
// kernel/trace/trace_events_hist.c save_hist_vars; seen on 6.1 and 6.12 after a SIGKILL). A
// holder of an ftctl older than the flock (November 2026) is not seen by it.
func (i *Instance) Unheld() (bool, error) {
	p := i.Path("tracing_on")
	f, err := os.OpenFile(p, os.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return false, i.fs.opError("open", p, "", err)
	}
	defer f.Close()
	switch err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB); err {
	case nil:
		return true, nil
	case unix.EWOULDBLOCK:
		return false, nil
	default:
		return false, &Error{Op: "lock", Path: p, Class: ErrIO, Errno: err}
	}
}

// Close lets go of the instance. Calling it again does nothing.
func (h *Hold) Close() error {
	var err error
	h.once.Do(func() {
		if h.f != nil {
			err = h.f.Close()
		}
	})
	return err
}

// Instances lists the names of the existing instances, sorted; nil when the kernel has none.
func (f *FS) Instances() ([]string, error) {
	ents, err := os.ReadDir(f.Path("instances"))
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, nil
		}
		return nil, f.opError("read", f.Path("instances"), "", err)
	}
	var names []string
	for _, e := range ents {
		if e.IsDir() {
			names = append(names, e.Name())
		}
	}
	sort.Strings(names)
	return names, nil
}
