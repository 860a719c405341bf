package stream

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"syscall"

	"github.com/ftctl/ftctl/internal/atdir"
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
