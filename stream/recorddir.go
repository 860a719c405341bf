package stream

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"

	"github.com/ftctl/ftctl/internal/atdir"
	"github.com/ftctl/ftctl/tracedat"
)

// ErrRecordDir: the directory of a recording's file cannot be used (missing, not a directory,
// or one another user can write: atdir.ErrShared).
var ErrRecordDir = errors.New("cannot record there")

// RecordDir is a recording's working directory, FILE.tmp-PID beside FILE, held with FILE's
// directory by their descriptors: every file of the recording is made, renamed and removed
// relative to them (openat, renameat, unlinkat, O_NOFOLLOW), never by a path another user could
// redirect between two calls, and FILE's directory is one no other user can write (or a sticky
// one of ours, as /tmp for root). What a recording writes holds kallsyms and raw kernel
// pointers: every file is 0600, FILE too unless Mode widens it.
type RecordDir struct {
	parent *atdir.Dir // FILE's directory
	dir    *atdir.Dir // FILE.tmp-PID
	name   string     // FILE.tmp-PID's name in parent
	file   string     // FILE's name in parent
	// Path is FILE.tmp-PID as the user named FILE's directory (messages, the journal).
	Path string
	// Mode is FILE's permissions when Assemble writes it: 0600 unless the caller widens it.
	Mode os.FileMode

	closed bool
}

// MakeRecordDir makes FILE.tmp-PID (0700) beside file and holds both directories. file's
// directory must exist and be private (atdir.CheckPrivate): root's, the effective user's or one
// of owners' (the user who ran sudo: with every file reached through a descriptor, the owner of
// the directory can move entries, as they could anyway, but not redirect what is written or
// read), and writable by no one else unless sticky; file must not be a directory. The errors
// are ErrRecordDir, naming the directory.
func MakeRecordDir(file string, pid int, owners ...int) (*RecordDir, error) {
	parentPath, base := filepath.Split(file)
	if parentPath == "" {
		parentPath = "."
	}
	parentPath = filepath.Clean(parentPath)
	if base == "" || base == "." || base == ".." {
		return nil, fmt.Errorf("%w: %s: not a file name", ErrRecordDir, strconv.Quote(file))
	}
	parent, err := atdir.Open(parentPath)
	if errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ENOTDIR) {
		return nil, fmt.Errorf("%w: directory %s does not exist", ErrRecordDir, parentPath)
	}
	if err != nil {
		return nil, fmt.Errorf("%w: directory %s: %w", ErrRecordDir, parentPath, errors.Unwrap(err))
	}
	if err := parent.CheckPrivate(append(owners, os.Geteuid())...); err != nil {
		parent.Close()
		return nil, fmt.Errorf("%w: %w", ErrRecordDir, err)
	}
	if fi, err := parent.Lstat(base); err == nil && fi.IsDir() {
		parent.Close()
		return nil, fmt.Errorf("%w: %s is a directory", ErrRecordDir, file)
	}
	name := base + ".tmp-" + strconv.Itoa(pid)
	if err := parent.Mkdir(name, 0o700); err != nil {
		parent.Close()
		return nil, fmt.Errorf("%w: %w", ErrRecordDir, err)
	}
	dir, err := parent.Sub(name)
	if err != nil {
		parent.RemoveDir(name)
		parent.Close()
		return nil, fmt.Errorf("%w: %w", ErrRecordDir, err)
	}
	return &RecordDir{parent: parent, dir: dir, name: name, file: base, Path: filepath.Join(parentPath, name), Mode: 0o600}, nil
}

// recordDirFile matches what a recording writes in its working directory.
var recordDirFile = regexp.MustCompile(`^(header\.dat|header\.dat\.tmp|trace\.dat|cpu[0-9]+\.raw)$`)

// Remove removes the files a recording writes in the working directory (never through a link:
// a link is removed itself), then the directory, and closes both directories. Anything else in
// it is an error naming it, and the directory stays.
func (d *RecordDir) Remove() error {
	if d.closed {
		return nil
	}
	defer d.Close()
	names, err := d.dir.Names()
	if err != nil {
		return err
	}
	for _, n := range names {
		if !recordDirFile.MatchString(n) {
			return fmt.Errorf("%s holds %s, which ftctl record does not write: left as it is", d.Path, strconv.Quote(n))
		}
	}
	for _, n := range names {
		if err := d.dir.Remove(n); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return err
		}
	}
	// the name in FILE's directory is removed only while it is still this directory
	if here, err := d.dir.Stat(); err == nil {
		if there, err := d.parent.Lstat(d.name); err != nil || !os.SameFile(here, there) {
			return fmt.Errorf("%s was moved or replaced while recording: the directory named so now is not the recording's, and is left", d.Path)
		}
	}
	if err := d.parent.RemoveDir(d.name); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	return d.parent.Sync()
}

// Close lets both directories go (the working directory stays where it is).
func (d *RecordDir) Close() {
	if d == nil || d.closed {
		return
	}
	d.closed = true
	d.dir.Close()
	d.parent.Close()
}

// What a recording's reader (ftctl report, the console's --file) opens: a trace.dat, or the
// working directory a killed recorder left, read here beside the code that writes it (Recorder:
// HeaderFile, then CPUFile(N) for each CPU's pages).

// ErrNotRecordDir: the directory named holds no cpuN.raw, so it is not what a recorder
// leaves.
var ErrNotRecordDir = errors.New("no cpuN.raw files: not what ftctl record leaves")

// ErrIsDir: a directory was named where a trace.dat was expected.
var ErrIsDir = errors.New("is a directory")

// OpenError says which file of a recording could not be opened or read, and why (Err: the
// errno, or tracedat's error for a file it refuses).
type OpenError struct {
	Path string
	Err  error
}

func (e *OpenError) Error() string { return e.Path + ": " + e.Err.Error() }

// Unwrap gives the reason.
func (e *OpenError) Unwrap() error { return e.Err }

// Recording is a recording open for reading: File reads from the files it holds open until
// Close.
type Recording struct {
	File  *tracedat.File
	files []*os.File
}

// Close closes the recording's files.
func (r *Recording) Close() {
	for _, f := range r.files {
		f.Close()
	}
	r.files = nil
}

// OpenRecording opens the trace.dat path and reads its header (tracedat.Read: within its
// memory budget; the CPUs' data are read as Next reaches them). Errors are *OpenError.
func OpenRecording(path string) (*Recording, error) {
	r := &Recording{}
	f, size, err := r.open(path)
	if err == nil {
		r.File, err = tracedat.Read(f, size)
		if err != nil {
			err = &OpenError{Path: path, Err: err}
		}
	}
	if err != nil {
		r.Close()
		return nil, err
	}
	return r, nil
}

// OpenRecordDir opens the working directory a killed recorder left (FILE.tmp-PID): its
// HeaderFile and the pages of each CPU in CPUFile(N), as far as they were moved. Errors are
// *OpenError.
func OpenRecordDir(dir string) (*Recording, error) {
	r := &Recording{}
	if err := r.readDir(dir); err != nil {
		r.Close()
		return nil, err
	}
	return r, nil
}

// maxRecordCPU bounds the CPU numbers of the cpuN.raw files taken (the kernel's NR_CPUS limit
// is far below): a name is anyone's.
const maxRecordCPU = 4096

func (r *Recording) readDir(dir string) error {
	hf, size, err := r.open(filepath.Join(dir, HeaderFile))
	if err != nil {
		return err
	}
	header, err := tracedat.Read(hf, size)
	if err != nil {
		return &OpenError{Path: hf.Name(), Err: err}
	}
	ents, err := os.ReadDir(dir)
	if err != nil {
		return &OpenError{Path: dir, Err: err}
	}
	var readers []io.ReaderAt
	var sizes []int64
	for _, e := range ents {
		n, err := strconv.Atoi(strings.TrimSuffix(strings.TrimPrefix(e.Name(), "cpu"), ".raw"))
		if err != nil || e.Name() != CPUFile(n) || n > maxRecordCPU {
			continue
		}
		f, size, err := r.open(filepath.Join(dir, e.Name()))
		if err != nil {
			return err
		}
		for len(readers) <= n {
			readers, sizes = append(readers, strings.NewReader("")), append(sizes, 0)
		}
		readers[n], sizes[n] = f, size
	}
	if len(readers) == 0 {
		return &OpenError{Path: dir, Err: ErrNotRecordDir}
	}
	r.File = tracedat.WithCPUs(header, readers, sizes)
	return nil
}

// open opens the file path of a recording, kept for Close, and returns its size; a directory
// is refused (ErrIsDir).
func (r *Recording) open(path string) (*os.File, int64, error) {
	f, err := os.Open(path)
	if err != nil {
		if u := errors.Unwrap(err); u != nil {
			err = u // the errno: the path is said once, by OpenError
		}
		return nil, 0, &OpenError{Path: path, Err: err}
	}
	r.files = append(r.files, f)
	st, err := f.Stat()
	if err != nil {
		return nil, 0, &OpenError{Path: path, Err: err}
	}
	if st.IsDir() {
		return nil, 0, &OpenError{Path: path, Err: ErrIsDir}
	}
	return f, st.Size(), nil
}
