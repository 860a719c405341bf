package session

import (
	"encoding/json"
	"errors"
	"fmt"
	iofs "io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"

	"github.com/ftctl/ftctl/internal/atdir"
	"github.com/ftctl/ftctl/tracefs"
)

// The journal of a recording's working directory. `ftctl record -w FILE` works in FILE.tmp-PID
// (a directory beside FILE) and renames the finished file; killed (SIGKILL), it leaves the
// directory: the pages recorded so far, which `ftctl report --recover` reads. That directory is
// evidence: nothing removes it unasked. Where it is, only the recording knew (FILE is wherever
// the user pointed -o), so before the first page is moved record writes a journal naming it in
// the state directory (journal.go: /run/ftctl, root only), record-PID-N.recording, fsynced,
// and holds an exclusive flock(2) on it while it runs: the lock, not the pid, says whether the
// recording is alive, in any pid namespace. A recording that ends (its file written, or
// nothing to keep) removes its journal. `ftctl reset` names each directory a dead recording
// left and how to read it, and removes it only when asked (--remove-recordings).

const recordingSuffix = ".recording"

// recordingName is what a recording journal is named: record-PID-N.recording.
var recordingName = regexp.MustCompile(`^record-[0-9]+-[0-9]+\.recording$`)

// Recording is a running recording's journal, held locked until Done.
type Recording struct {
	path string
	f    *os.File
}

// recordingJournal is what a recording journal holds.
type recordingJournal struct {
	Dir  string `json:"dir"`  // the working directory, absolute
	File string `json:"file"` // the file it was to become, absolute
	PID  int    `json:"pid"`  // the recording's pid, in its own namespace (for people)
}

// StartRecording journals the working directory dir of a recording into file, durably, and
// locks the journal until Done. With tracefs.FS.DryRun nothing is written.
func StartRecording(fs *tracefs.FS, dir, file string) (*Recording, error) {
	if fs.DryRun != nil {
		return &Recording{}, nil
	}
	absDir, err := filepath.Abs(dir)
	if err != nil {
		return nil, err
	}
	// named without a link on the way: reset reaches it without following one
	if parent, err := filepath.EvalSymlinks(filepath.Dir(absDir)); err == nil {
		absDir = filepath.Join(parent, filepath.Base(absDir))
	}
	absFile, err := filepath.Abs(file)
	if err != nil {
		return nil, err
	}
	state := stateDir(fs)
	if err := os.MkdirAll(state, 0o700); err != nil {
		return nil, fmt.Errorf("making the journal directory %s: %w", state, err)
	}
	b, err := json.MarshalIndent(recordingJournal{Dir: absDir, File: absFile, PID: os.Getpid()}, "", "  ")
	if err != nil {
		return nil, err
	}
	for n := 0; ; n++ {
		path := filepath.Join(state, "record-"+strconv.Itoa(os.Getpid())+"-"+strconv.Itoa(n)+recordingSuffix)
		f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o600)
		if errors.Is(err, iofs.ErrExist) && n < 100 {
			continue // a recording of an earlier process with this pid (another boot, namespace)
		}
		if err != nil {
			return nil, fmt.Errorf("writing the recording journal %s: %w", path, err)
		}
		if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
			f.Close()
			os.Remove(path)
			return nil, fmt.Errorf("locking the recording journal %s: %w", path, err)
		}
		_, err = f.Write(append(b, '\n'))
		if err == nil {
			err = f.Sync()
		}
		if err == nil {
			err = syncDir(state)
		}
		if err != nil {
			f.Close()
			os.Remove(path)
			return nil, fmt.Errorf("writing the recording journal %s: %w", path, err)
		}
		return &Recording{path: path, f: f}, nil
	}
}

// Done removes the journal: the recording left nothing to name (its file is written, or its
// directory removed). Calling it again does nothing.
func (r *Recording) Done() error {
	if r == nil || r.f == nil {
		return nil
	}
	err := os.Remove(r.path)
	r.f.Close()
	r.f = nil
	if err != nil && !errors.Is(err, iofs.ErrNotExist) {
		return fmt.Errorf("removing the recording journal %s: %w", r.path, err)
	}
	return syncDir(filepath.Dir(r.path))
}

// The states of a LeftRecording.
const (
	RecordingRunning = "running" // its journal is locked: the recording is alive
	RecordingLeft    = "left"    // its recording is dead; the directory is there
	RecordingRemoved = "removed" // removed, as asked
)

// LeftRecording is the working directory of a recording, found through its journal.
type LeftRecording struct {
	Dir   string `json:"dir"`
	File  string `json:"file"`
	PID   int    `json:"pid"`
	State string `json:"state"`
	// Files are what the directory holds (header.dat, cpuN.raw...), with their sizes.
	Files []RecordingFile `json:"files"`

	journal string
}

// RecordingFile is one file of a recording's directory.
type RecordingFile struct {
	Name string `json:"name"`
	Size int64  `json:"size"`
}

// recordingFile matches what a recording writes in its directory.
var recordingFile = regexp.MustCompile(`^(header\.dat|header\.dat\.tmp|trace\.dat|cpu[0-9]+\.raw)$`)

// LeftRecordings lists the recordings the journals name: running ones (their journal is
// locked) and the directories dead ones left. A journal whose directory is gone names nothing
// any more: it is removed (unless dry is set). A journal that cannot be read is an error naming
// it, and is left.
func LeftRecordings(fs *tracefs.FS) ([]*LeftRecording, error) {
	paths, err := stateFiles(fs, recordingSuffix)
	if err != nil {
		return nil, err
	}
	var out []*LeftRecording
	var errs []error
	for _, path := range paths {
		if !recordingName.MatchString(filepath.Base(path)) {
			errs = append(errs, fmt.Errorf("%w: %s: not named as ftctl names a recording's journal (record-PID-N%s)", ErrJournal, path, recordingSuffix))
			continue
		}
		l, err := readRecording(path)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if l == nil { // the directory is gone: nothing to name
			if fs.DryRun == nil {
				os.Remove(path)
			}
			continue
		}
		out = append(out, l)
	}
	slices.SortFunc(out, func(a, b *LeftRecording) int { return strings.Compare(a.Dir, b.Dir) })
	return out, errors.Join(errs...)
}

// readRecording reads one journal: nil when its recording is dead and its directory gone.
func readRecording(path string) (*LeftRecording, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("reading the recording journal %s: %w", path, err)
	}
	defer f.Close()
	var j recordingJournal
	dec := json.NewDecoder(f)
	dec.DisallowUnknownFields()
	if err := dec.Decode(&j); err != nil {
		return nil, fmt.Errorf("%w: %s: not a recording journal: %w", ErrJournal, path, err)
	}
	if !filepath.IsAbs(j.Dir) || !strings.Contains(filepath.Base(j.Dir), ".tmp-") {
		return nil, fmt.Errorf("%w: %s: names %s, not a recording's directory (FILE.tmp-PID)", ErrJournal, path, strconv.Quote(j.Dir))
	}
	l := &LeftRecording{Dir: j.Dir, File: j.File, PID: j.PID, State: RecordingLeft, Files: []RecordingFile{}, journal: path}
	// the recording holds an exclusive lock while it runs; a shared one, taken and let go
	// with the file, does not get in its way
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_SH|syscall.LOCK_NB); errors.Is(err, syscall.EWOULDBLOCK) {
		l.State = RecordingRunning
	} else if err != nil {
		return nil, fmt.Errorf("locking the recording journal %s: %w", path, err)
	}
	d, err := atdir.OpenNoLinks(j.Dir)
	if errors.Is(err, iofs.ErrNotExist) {
		if l.State == RecordingRunning {
			return l, nil
		}
		return nil, nil
	}
	if err != nil {
		// a link on the way (atdir.ErrLink) is named, and never followed
		return nil, fmt.Errorf("reading %s (named by %s): %w", j.Dir, path, err)
	}
	defer d.Close()
	names, err := d.Names()
	if err != nil {
		return nil, fmt.Errorf("reading %s (named by %s): %w", j.Dir, path, err)
	}
	slices.Sort(names)
	for _, n := range names {
		rf := RecordingFile{Name: n}
		if info, err := d.Lstat(n); err == nil {
			rf.Size = info.Size()
		}
		l.Files = append(l.Files, rf)
	}
	return l, nil
}

// Remove removes a dead recording's directory and its journal: only the files a recording
// writes there; any other file is an error naming it, and the directory is left.
func (l *LeftRecording) Remove(fs *tracefs.FS) error {
	if l.State != RecordingLeft {
		return fmt.Errorf("%s: the recording is %s", l.Dir, l.State)
	}
	for _, f := range l.Files {
		if !recordingFile.MatchString(f.Name) {
			return fmt.Errorf("%s holds %s, which ftctl record does not write: left as it is", l.Dir, strconv.Quote(f.Name))
		}
	}
	if fs.DryRun != nil {
		return nil
	}
	// every step relative to descriptors of directories opened without following a link
	// (from / down): a link put in the place of the directory, or of one on its way, is an
	// error naming it, and nothing where it points is touched
	parent, err := atdir.OpenNoLinks(filepath.Dir(l.Dir))
	if err != nil {
		return fmt.Errorf("removing %s: %w", l.Dir, err)
	}
	defer parent.Close()
	d, err := parent.Sub(filepath.Base(l.Dir))
	if err != nil {
		return fmt.Errorf("removing %s: %w", l.Dir, err)
	}
	defer d.Close()
	for _, f := range l.Files {
		if err := d.Remove(f.Name); err != nil && !errors.Is(err, iofs.ErrNotExist) {
			return err
		}
	}
	if err := parent.RemoveDir(filepath.Base(l.Dir)); err != nil && !errors.Is(err, iofs.ErrNotExist) {
		return err
	}
	l.State = RecordingRemoved
	if err := os.Remove(l.journal); err != nil && !errors.Is(err, iofs.ErrNotExist) {
		return fmt.Errorf("removing the recording journal %s: %w", l.journal, err)
	}
	return nil
}
