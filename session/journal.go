package session

import (
	"encoding/json"
	"errors"
	"fmt"
	iofs "io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/ftctl/ftctl/tracefs"
)

// The journal of what a session writes outside its own instance. A graph session changes
// kernel-wide files (set_graph_function, set_graph_notrace, max_graph_depth, tracing_thresh;
// where instances cannot run function_graph, the top level's tracer, pid lists, function-fork
// and tracing_on), which the kernel does not undo when the session dies, and which outlive
// its instance: a SIGKILLed session leaves them as it set them. Before its first such write,
// the session records, for each file, what it held and what ftctl writes, fsynced, so that
// `ftctl reset` can put it back once the session is proven dead (its instance removed). A
// clean teardown removes the journal.
//
// Where: DefaultStateDir, /run/ftctl, a root-only directory (0700; tracefs writes need root
// anyway). /run is a tmpfs on systemd systems, emptied at boot as the kernel's tracing state
// is; the boot's id is in the journal all the same, so that a journal of an earlier boot (a
// /run that is not a tmpfs) is dropped without a write. It is not a kernel path: tracefs/
// stays the only package that names those. It is the mount namespace's: a reset run in a
// container whose /run is its own does not see the journals of the host's sessions (their
// instances, in the one tracefs, it sees and removes).

// DefaultStateDir is where journals live unless tracefs.FS.StateDir says otherwise.
const DefaultStateDir = tracefs.DefaultStateDir

// JournalEntry is one file a session wrote outside its instance: what it held before the
// first write and the last thing ftctl wrote (for a list, what the kernel read back).
type JournalEntry struct {
	File   string `json:"file"`
	List   bool   `json:"list,omitempty"` // a function or pid list: "" is empty, put back by O_TRUNC
	Before string `json:"before"`
	Wrote  string `json:"wrote"`
}

// journal is a session's journal: its entries in the order of their first write (put back
// newest first: the tracer before the lists and values, tracing_on last).
type journal struct {
	path    string
	Session ID             `json:"session"`
	Boot    string         `json:"boot,omitempty"`
	Entries []JournalEntry `json:"entries"`
	dry     bool           // --dry-run: nothing saved
	// saver, for a declared owner's claim of the top level, keeps the entries in its
	// declaration (Owner.TopLevel) instead of a file of the journal's own.
	saver func([]JournalEntry) error
	// claimed: the files are a declared owner's, which claimed them: putBack restores one
	// that holds something else too (a hand change is drift of the owner's, not another's).
	claimed bool
}

func stateDir(fs *tracefs.FS) string { return fs.StatePath() }

const journalSuffix = ".journal"

func newJournal(fs *tracefs.FS, id ID) *journal {
	return &journal{path: filepath.Join(stateDir(fs), id.Instance()+journalSuffix), Session: id,
		Boot: fs.BootID(), Entries: []JournalEntry{}, dry: fs.DryRun != nil}
}

// record notes, before ftctl writes wrote into file, what file holds now (the first time) and
// saves the journal. It is the step before the write: a failure stops the write.
func (j *journal) record(file string, list bool, before, wrote string) error {
	saved := slices.Clone(j.Entries)
	if e := j.entry(file); e != nil {
		e.Wrote = wrote
	} else {
		j.Entries = append(j.Entries, JournalEntry{File: file, List: list, Before: before, Wrote: wrote})
	}
	if err := j.save(); err != nil {
		j.Entries = saved // not written: nothing to put back
		return err
	}
	return nil
}

func (j *journal) entry(file string) *JournalEntry {
	for i := range j.Entries {
		if j.Entries[i].File == file {
			return &j.Entries[i]
		}
	}
	return nil
}

// save writes the journal durably: a temporary file fsynced, renamed over the journal, the
// directory fsynced. A journal with no entry is removed.
func (j *journal) save() error {
	if j.dry {
		return nil
	}
	if j.saver != nil {
		return j.saver(j.Entries)
	}
	if len(j.Entries) == 0 {
		return j.remove()
	}
	if err := saveState(j.path, j); err != nil {
		return fmt.Errorf("writing the journal %s: %w", j.path, err)
	}
	return nil
}

// saveState writes v as JSON to path, in a root-only directory of the state directory (made if
// missing, checked: made by someone else first?), durably: a temporary file fsynced, renamed
// over path, the directory fsynced.
func saveState(path string, v any) error {
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	if err := tracefs.CheckStateDir(dir); err != nil {
		return err
	}
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	tmp := path + ".tmp"
	err = writeSynced(tmp, append(b, '\n'))
	if err == nil {
		err = os.Rename(tmp, path)
	}
	if err == nil {
		err = syncDir(dir)
	}
	if err != nil {
		os.Remove(tmp)
	}
	return err
}

func writeSynced(path string, b []byte) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_TRUNC|syscall.O_NOFOLLOW, 0o600)
	if err != nil {
		return err
	}
	_, err = f.Write(b)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}

// remove deletes the journal (gone already is done).
func (j *journal) remove() error {
	if j.dry {
		return nil
	}
	if err := os.Remove(j.path); err != nil && !errors.Is(err, iofs.ErrNotExist) {
		return fmt.Errorf("removing the journal %s: %w", j.path, err)
	}
	return syncDir(filepath.Dir(j.path))
}

// stateFiles lists the regular files of the state directory whose names end in suffix (none
// when the directory does not exist).
func stateFiles(fs *tracefs.FS, suffix string) ([]string, error) {
	dir := stateDir(fs)
	if err := tracefs.CheckStateDir(dir); err != nil {
		return nil, err
	}
	ents, err := os.ReadDir(dir)
	if errors.Is(err, iofs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("reading the journal directory %s: %w", dir, err)
	}
	var paths []string
	for _, e := range ents {
		if strings.HasSuffix(e.Name(), suffix) && e.Type().IsRegular() {
			paths = append(paths, filepath.Join(dir, e.Name()))
		}
	}
	return paths, nil
}

// badJournal is a file of the state directory that does not parse as the journal of the
// session it is named after (or is not named after one: session false).
type badJournal struct {
	path    string
	session bool
	err     error // ErrJournal, naming the path and why
}

// readJournals reads the journals of the state directory. A file that does not parse as a
// journal named after a session is left, in bad, with the reason: what it describes cannot
// be told, so nothing it names is put back. The journals that do parse are returned all the
// same: one bad file does not stop the others' reset. err is for the directory alone.
func readJournals(fs *tracefs.FS) (out []*journal, bad []badJournal, err error) {
	paths, err := stateFiles(fs, journalSuffix)
	if err != nil {
		return nil, nil, err
	}
	for _, path := range paths {
		id, ok := InstanceID(strings.TrimSuffix(filepath.Base(path), journalSuffix))
		if !ok {
			bad = append(bad, badJournal{path, false, fmt.Errorf("%w: %s: not named after a session (ftctl-PID-ID%s); left as found", ErrJournal, path, journalSuffix)})
			continue
		}
		b, err := os.ReadFile(path)
		if err == nil {
			var j *journal
			if j, err = parseJournal(b); err == nil && j.Session != id {
				err = fmt.Errorf("holds the journal of session %s", strconv.Quote(j.Session.String()))
			}
			if err == nil {
				j.path, j.dry = path, fs.DryRun != nil
				out = append(out, j)
				continue
			}
		}
		bad = append(bad, badJournal{path, true, fmt.Errorf("%w: %s: %w; left as found, and the files it may name: cannot tell", ErrJournal, path, err)})
	}
	return out, bad, nil
}

// badJournalsError joins the reasons of bad journals (nil for none).
func badJournalsError(bad []badJournal) error {
	var errs []error
	for _, b := range bad {
		errs = append(errs, b.err)
	}
	return errors.Join(errs...)
}

// journalFiles are the files a journal may name: what graph sessions write. A journal is a
// root-owned file, but what reset writes is bounded all the same.
var journalFiles = map[string]bool{
	"tracing_on": true, "current_tracer": true, "options/function-fork": true,
	"set_ftrace_pid": true, "set_ftrace_notrace_pid": true,
	graphFunctionFile: true, graphNotraceFile: true, graphDepthFile: true, threshFile: true,
}

// parseJournal parses a journal's text: every file one ftctl writes, every value one line.
func parseJournal(b []byte) (*journal, error) {
	var j journal
	dec := json.NewDecoder(strings.NewReader(string(b)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&j); err != nil {
		return nil, fmt.Errorf("not a journal: %w", err)
	}
	seen := map[string]bool{}
	for _, e := range j.Entries {
		if !journalFiles[e.File] {
			return nil, fmt.Errorf("not a journal: names %s, not a file ftctl writes outside its instances", strconv.Quote(e.File))
		}
		if seen[e.File] {
			return nil, fmt.Errorf("not a journal: names %s twice", e.File)
		}
		seen[e.File] = true
		if !e.List && (strings.ContainsAny(e.Before, "\n\x00") || strings.ContainsAny(e.Wrote, "\n\x00")) {
			return nil, fmt.Errorf("not a journal: the value of %s spans lines", e.File)
		}
		if e.List && e.Before != "" {
			return nil, fmt.Errorf("not a journal: %s was not empty before (ftctl takes only empty lists)", e.File)
		}
	}
	return &j, nil
}

// The outcomes of a journaled file at reset.
const (
	FileRestored = "restored"  // it held what the session wrote: the value before is back
	FileAsBefore = "as before" // it holds what it held before the session (nothing written)
	FileChanged  = "changed"   // it holds something else: another actor's, left alone
	FileFailed   = "failed"    // putting it back failed
)

// FileOutcome is what reset did with one journaled file.
type FileOutcome struct {
	File   string `json:"file"`
	State  string `json:"state"`
	Holds  string `json:"holds"`  // what it held when reset looked
	Before string `json:"before"` // what it held before the session
	Wrote  string `json:"wrote"`  // what the session wrote
}

// normal is a file's content as compared: a value trimmed, a list's lines sorted, an empty
// list's banner ("#### all functions enabled ####", "no pid") "".
func normal(b []byte, list bool) string {
	if !list {
		return strings.TrimSpace(string(b))
	}
	if emptyList(b) {
		return ""
	}
	var lines []string
	for _, l := range strings.Split(string(b), "\n") {
		if l = strings.TrimSpace(l); l != "" {
			lines = append(lines, l)
		}
	}
	slices.Sort(lines)
	return strings.Join(lines, "\n")
}

// undo is reset's putBack: a journal of another boot is removed without a write (the kernel
// started again from its defaults).
func (j *journal) undo(fs *tracefs.FS) ([]FileOutcome, error) {
	if j.Boot != "" && fs.BootID() != "" && j.Boot != fs.BootID() {
		return nil, j.remove()
	}
	return j.putBack(fs, fs.Top())
}

// putBack puts back, newest first, each file that still holds what the session wrote; a
// file that holds something else is left and said so (FileChanged); a file already as
// before is not written. It is both a teardown's and reset's: a file is the session's to
// write only while it holds what the session wrote. The journal keeps the files that failed
// (for a second try), and is removed when none did. The caller holds the tracefs lock.
//
// graphIn is the trace array the session's function_graph ran in (the top level for reset:
// the session's instance is gone). A graph list is not emptied while a function_graph still
// runs there (the session's tracer could not be stopped: an instance's current_tracer is EBUSY
// while its trace_pipe is open; or another's at the top level): emptied, the list would graph
// every function. It is left, failed, for a second try.
func (j *journal) putBack(fs *tracefs.FS, graphIn *tracefs.Instance) ([]FileOutcome, error) {
	top := fs.Top()
	var out []FileOutcome
	var errs []error
	var failed []JournalEntry
	for i := len(j.Entries) - 1; i >= 0; i-- {
		e := j.Entries[i]
		o := FileOutcome{File: e.File, Before: e.Before, Wrote: e.Wrote}
		b, err := top.ReadFile(e.File)
		if errors.Is(err, iofs.ErrNotExist) {
			continue
		}
		if err != nil {
			o.State = FileFailed
			errs = append(errs, fmt.Errorf("reading the top level's %s: %w", e.File, err))
			out = append(out, o)
			failed = append([]JournalEntry{e}, failed...)
			continue
		}
		o.Holds = normal(b, e.List)
		switch o.Holds {
		case normal([]byte(e.Wrote), e.List):
			if err = j.graphStopped(fs, graphIn, e.File); err == nil {
				err = j.restore(top, e)
			}
			o.State = FileRestored
		case normal([]byte(e.Before), e.List):
			o.State = FileAsBefore
			if e.List && strings.TrimSpace(string(b)) == "" {
				// A pid list whose pids all exited reads "" where a list never written
				// reads "no pid" (seen on 6.1: function-fork drops a pid at its exit,
				// and the kernel keeps the emptied list): truncation frees it.
				if err = top.Truncate(e.File); err == nil {
					o.State = FileRestored
				}
			}
		default:
			o.State = FileChanged
			if j.claimed {
				// the owner's claimed file, changed by hand: the owner's to put back
				if err = j.graphStopped(fs, graphIn, e.File); err == nil {
					err = j.restore(top, e)
				}
				o.State = FileRestored
				break
			}
			reread := func() (string, error) {
				b, err := top.ReadFile(e.File)
				return normal(b, true), err
			}
			if pidLists[e.File] && settledForkedFrom(&o.Holds, reread, normal([]byte(e.Wrote), true), task) {
				// the session's pids as function-fork left them: theirs to put back
				o.State = FileRestored
				err = top.Truncate(e.File)
			}
		}
		if err != nil {
			o.State = FileFailed
			errs = append(errs, fmt.Errorf("putting back the top level's %s: %w", e.File, err))
			failed = append([]JournalEntry{e}, failed...)
		}
		out = append(out, o)
	}
	j.Entries = failed
	if err := j.save(); err != nil {
		errs = append(errs, err)
	}
	return out, errors.Join(errs...)
}

// graphStopped refuses to empty a graph list while a function_graph runs in graphIn: emptied,
// the list would graph every function (see putBack).
func (j *journal) graphStopped(fs *tracefs.FS, graphIn *tracefs.Instance, file string) error {
	if !graphLists[file] || fs.DryRun != nil {
		return nil
	}
	t, err := graphIn.Tracer()
	switch {
	case err != nil:
		return fmt.Errorf("cannot tell whether %s still runs function_graph, under which %s emptied would graph every function: %w", graphIn.Label(), file, err)
	case t == "function_graph":
		return fmt.Errorf("%s runs function_graph still: emptied, %s would graph every function", graphIn.Label(), file)
	}
	return nil
}

// restore writes back what e's file held before: a list emptied, a value written.
func (j *journal) restore(top *tracefs.Instance, e JournalEntry) error {
	if e.List {
		return top.Truncate(e.File)
	}
	return top.Write(e.File, e.Before)
}

// graphLists are the journaled function_graph filters: empty, function_graph graphs every
// function.
var graphLists = map[string]bool{graphFunctionFile: true, graphNotraceFile: true}

// pidLists are the journaled files that are pid lists: with function-fork (which a session
// sets with them) the kernel changes them itself.
var pidLists = map[string]bool{"set_ftrace_pid": true, "set_ftrace_notrace_pid": true}

// task is tracefs.Task (tests replace it): a running task's process and parent process.
var task = tracefs.Task

// forkedFrom says whether a pid list holding holds (normal's lines) is what the kernel alone
// made of wrote, the list a session wrote, with function-fork on. The kernel adds a task to the
// list when a listed task forks it (a process or a thread), and drops a task from it when the
// task exits (ftrace_pid_follow_sched_process_fork and _exit, kernel/trace/ftrace.c), nothing
// else: so every pid held and not written is a running task one of whose ancestors (its
// process, that process's parent...) was written, and every pid written and no longer held has
// exited. Another writer's pids fail that: a pid that runs and descends from none of the
// session's, or no longer runs (the kernel would have dropped it); a written pid still running
// but gone from the list (only a write takes it out). A child whose parent exited (adopted by
// init) cannot be told from another writer's pid: the list is then left, and said changed.
func forkedFrom(holds, wrote string, task func(int) (tgid, ppid int, ok bool)) bool {
	pids := func(s string) (map[int]bool, bool) {
		m := map[int]bool{}
		for _, l := range strings.Split(s, "\n") {
			if l == "" {
				continue
			}
			n, err := strconv.Atoi(l)
			if err != nil || n <= 0 {
				return nil, false
			}
			m[n] = true
		}
		return m, true
	}
	h, ok1 := pids(holds)
	w, ok2 := pids(wrote)
	if !ok1 || !ok2 || len(w) == 0 {
		return false
	}
	for p := range w {
		if _, _, running := task(p); running && !h[p] {
			return false
		}
	}
	for p := range h {
		if !w[p] && !descends(p, w, task) {
			return false
		}
	}
	return true
}

// pidSettleTries bounds how often settledForkedFrom reads a pid list again, pidSettlePause
// apart.
const (
	pidSettleTries = 5
	pidSettlePause = 20 * time.Millisecond
)

// settledForkedFrom is forkedFrom, asked again of the list as the kernel holds it a moment
// later when the answer is no: function-fork changes the list while undo looks at it. A child
// that exits between the list's read and the look at its ancestry runs no more, and the
// kernel drops it from the list (seen on 6.1: a command forking `sleep 0.2` in a loop left
// set_ftrace_pid "changed"); a child forked meanwhile runs, and descends from the session's.
// Another writer's pid stays in the list, and fails every look. holds is updated to the list
// last read.
func settledForkedFrom(holds *string, reread func() (string, error), wrote string, task func(int) (tgid, ppid int, ok bool)) bool {
	for i := range pidSettleTries {
		if i > 0 {
			time.Sleep(pidSettlePause)
			h, err := reread()
			if err != nil {
				return false
			}
			*holds = h
		}
		if forkedFrom(*holds, wrote, task) {
			return true
		}
	}
	return false
}

// descends says whether running task p has an ancestor in w: its process, then each parent
// process (at most 64 generations), every one running.
func descends(p int, w map[int]bool, task func(int) (tgid, ppid int, ok bool)) bool {
	for range 64 {
		tgid, ppid, running := task(p)
		switch {
		case !running:
			return false
		case tgid != p && tgid > 0:
			p = tgid // a thread: its process forked it (or is it)
		case ppid <= 1:
			return false
		default:
			p = ppid
		}
		if w[p] {
			return true
		}
	}
	return false
}
