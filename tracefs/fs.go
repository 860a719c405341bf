package tracefs

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// FS is a located tracefs. It is the only door to kernel files in ftctl: every read and write
// goes through it, so that errors are translated in one place and --dry-run is honoured by
// construction.
type FS struct {
	Mount Mount
	// DryRun, when set, receives a line for each write, mkdir or rmdir that would happen, in
	// order, and the operation is not performed. Reads still happen.
	DryRun io.Writer
	// Placeholders, when set, rewrites the data of DryRun's lines: a value the plan cannot know
	// (the pid of a command a dry run does not start) is written as a stand-in, shown by name.
	Placeholders *strings.Replacer
	// Log, when set, receives a line for each write, mkdir and rmdir made, once made, as DryRun
	// would have printed it with "+ " for "dry-run: " (--show-writes).
	Log io.Writer
	// KallsymsFile replaces /proc/kallsyms for Kallsyms: a fixture in tests.
	KallsymsFile string
	// BTFDir replaces /sys/kernel/btf for BTF: fixtures in tests.
	BTFDir string
	// BootIDFile replaces /proc/sys/kernel/random/boot_id for BootID: a fixture in tests.
	BootIDFile string
	// StateDir is where ftctl keeps what must outlive its process and is not the kernel's: the
	// journals of the kernel-wide files sessions change (session/journal.go), the filters of
	// the event probes ftctl added (probes/filterrecord.go). "" is DefaultStateDir; tests give
	// a temporary directory (cmd's tests through FTCTL_STATE_DIR, which the binary ignores).
	// CheckStateDir says whether it is safe to use.
	StateDir string
	// Dirs makes and removes instance directories; nil for the kernel's mkdir(2) and rmdir(2).
	// The kernel fills a new instance with its files, empties it on rmdir, and refuses the
	// rmdir (EBUSY) while one of them is open: on a plain directory the unit tests of the
	// packages above give a fake that does the same (internal/fixture.Tracefs).
	Dirs DirOps
}

// DirOps are the two operations on instance directories that a plain directory cannot do as
// tracefs does: see FS.Dirs.
type DirOps interface {
	Mkdir(path string) error
	Rmdir(path string) error
}

func (f *FS) mkdir(path string) error {
	if f.Dirs != nil {
		return f.Dirs.Mkdir(path)
	}
	return os.Mkdir(path, 0o750)
}

func (f *FS) rmdir(path string) error {
	if f.Dirs != nil {
		return f.Dirs.Rmdir(path)
	}
	return os.Remove(path)
}

// Open locates tracefs (see Locate) and returns an FS for it.
func Open(root, found string) (*FS, error) {
	m, err := Locate(root, found)
	if err != nil {
		return nil, err
	}
	return &FS{Mount: m}, nil
}

// Root is the tracing directory.
func (f *FS) Root() string { return f.Mount.Path }

// Path joins a path relative to the tracing directory.
func (f *FS) Path(rel string) string { return filepath.Join(f.Mount.Path, rel) }

// Top is the top-level trace array. Top-level-only files (kprobe_events,
// available_filter_functions...) are always read through it.
func (f *FS) Top() *Instance { return &Instance{fs: f, dir: f.Mount.Path} }

// Instance is a trace array: the top level (Name "") or instances/Name.
type Instance struct {
	fs   *FS
	Name string
	dir  string
	// planned: a dry run's Ensure "made" it; the directory does not exist (see Planned).
	planned bool
}

// Planned says whether the instance exists only in a dry run's plan: Ensure would have made
// it. The kernel fills a new instance with the files of a trace array, empty, so a plan reads
// it as such: Has answers from the top level (its per-array files are an instance's too);
// ReadFile gives a new instance's empty lists (the function and pid filters, an event's filter)
// and an event's format (formats are the kernel's, not an array's); anything else cannot be
// known before the instance exists, and is ErrPlanned: a plan says it is checked when applied.
func (i *Instance) Planned() bool { return i.planned }

// plannedLists are the files of a new instance a plan may read, and what the kernel lists
// in them then (seen on 6.1 and 6.12; internal/fixture's fresh instance holds the same).
var plannedLists = map[string]string{
	"set_ftrace_filter":      "#### all functions enabled ####\n",
	"set_ftrace_notrace":     "",
	"set_graph_function":     "#### all functions enabled ####\n",
	"set_graph_notrace":      "",
	"set_ftrace_pid":         "no pid\n",
	"set_event_pid":          "",
	"set_ftrace_notrace_pid": "no pid\n",
	"set_event_notrace_pid":  "",
	"set_event":              "",
}

// Dir is the instance's directory.
func (i *Instance) Dir() string { return i.dir }

// Path of a file of this instance.
func (i *Instance) Path(file string) string { return filepath.Join(i.dir, file) }

// Rel is a file of the trace array as people read its name: relative to the tracing
// directory (file at the top level, instances/NAME/file in an instance).
func (i *Instance) Rel(file string) string {
	if i.Name == "" {
		return file
	}
	return "instances/" + i.Name + "/" + file
}

// Label names the instance for people: "top level" or "instance NAME".
func (i *Instance) Label() string {
	if i.Name == "" {
		return "top level"
	}
	return fmt.Sprintf("instance %q", i.Name)
}

// FS returns the tracefs the instance belongs to.
func (i *Instance) FS() *FS { return i.fs }

// ReadFile reads a whole control file. Never use it on trace_pipe (it blocks) or trace
// (reading it pauses tracing while open).
func (i *Instance) ReadFile(file string) ([]byte, error) {
	if i.planned {
		return i.plannedRead(file)
	}
	return i.fs.readFile(i.Path(file))
}

// plannedRead is ReadFile of a Planned instance.
func (i *Instance) plannedRead(file string) ([]byte, error) {
	if text, ok := plannedLists[file]; ok {
		return []byte(text), nil
	}
	if file == "available_tracers" {
		// The kernel offers the same tracers in every instance (those it allows there): an
		// existing instance says which.
		if names, err := i.fs.Instances(); err == nil {
			for _, n := range names {
				if other, err := i.fs.Existing(n); err == nil && other.Has(file) {
					return other.ReadFile(file)
				}
			}
		}
		return nil, &Error{Op: "open", Path: i.Path(file), Class: ErrPlanned, Reason: "no instance exists to say which tracers instances offer"}
	}
	if strings.HasPrefix(file, "events/") && (strings.HasSuffix(file, "/format") || strings.HasSuffix(file, "/filter")) {
		if !i.fs.Top().Has(file) {
			return nil, &Error{Op: "open", Path: i.Path(file), Class: ErrPlanned, Reason: "the event does not exist yet"}
		}
		if strings.HasSuffix(file, "/filter") {
			return []byte("none\n"), nil
		}
		return i.fs.readFile(i.fs.Path(file))
	}
	return nil, &Error{Op: "open", Path: i.Path(file), Class: ErrPlanned, Reason: "the instance does not exist yet"}
}

func (f *FS) readFile(path string) ([]byte, error) {
	fd, err := os.Open(path)
	if err != nil {
		return nil, f.opError("open", path, "", err)
	}
	defer fd.Close()
	// Control files report size 0: read until EOF.
	b, err := io.ReadAll(fd)
	if err != nil {
		return nil, f.opError("read", path, "", err)
	}
	return b, nil
}

// Probe opens a file for reading and closes it at once: the cheapest way to learn whether the
// kernel lets us at it. Opening for read changes no state for the control files ftctl knows
// (set_ftrace_filter commits only writers on close).
func (i *Instance) Probe(file string) error {
	path := i.Path(file)
	fd, err := os.Open(path)
	if err != nil {
		return i.fs.opError("open", path, "", err)
	}
	return fd.Close()
}

// Stat returns the file's information, with errors translated.
func (i *Instance) Stat(file string) (os.FileInfo, error) {
	st, err := os.Stat(i.Path(file))
	if err != nil {
		return nil, i.fs.opError("stat", i.Path(file), "", err)
	}
	return st, nil
}

// Has reports whether the file exists (whatever its permissions).
func (i *Instance) Has(file string) bool {
	if i.planned {
		return i.fs.Top().Has(file)
	}
	_, err := os.Lstat(i.Path(file))
	return err == nil
}

// Write writes data to a control file in one open and one write call, WITHOUT O_TRUNC: for
// set_ftrace_filter and friends an O_TRUNC open empties the list (all functions traced) and for
// kprobe_events it deletes every probe on the system. The close is the kernel's commit point
// for filter files; its error, if any, is reported.
//
// When the kernel refuses the write and the file is one whose errors it logs (probe
// definitions, event filters and triggers), the new error_log entries are attached; one about
// the written text makes the error ErrRejected whatever the errno.
func (i *Instance) Write(file, data string) error {
	return i.write(file, data, 0)
}

// Truncate opens a file with O_TRUNC and writes nothing: the explicit way to clear a list
// (error_log, trace, set_event...). Never used to swap filters.
func (i *Instance) Truncate(file string) error {
	return i.write(file, "", unix.O_TRUNC)
}

// logged prints line to Log, if set: a write, mkdir or rmdir made.
func (f *FS) logged(line string) {
	if f.Log != nil {
		fmt.Fprintf(f.Log, "+ %s\n", line)
	}
}

func (i *Instance) write(file, data string, extra int) (err error) {
	path := i.Path(file)
	f := i.fs
	line := "truncate " + path
	if extra&unix.O_TRUNC == 0 {
		line = "write " + path + " " + strconv.Quote(data)
	}
	if f.DryRun != nil {
		if extra&unix.O_TRUNC == 0 && f.Placeholders != nil {
			line = "write " + path + " " + f.Placeholders.Replace(strconv.Quote(data))
		}
		fmt.Fprintf(f.DryRun, "dry-run: %s\n", line)
		return nil
	}
	defer func() {
		if err == nil {
			f.logged(line)
		}
	}()
	var logs []*Instance
	var before []uint64
	if logsErrors(file) {
		logs = i.errorLogs(file)
		for _, l := range logs {
			before = append(before, l.lastLogStamp())
		}
	}
	fd, err := os.OpenFile(path, os.O_WRONLY|extra|unix.O_CLOEXEC, 0)
	if err != nil {
		return f.opError("open", path, data, err)
	}
	if data != "" {
		if _, err = io.WriteString(fd, data); err != nil {
			fd.Close()
			werr := f.opError("write", path, data, err)
			var e *Error
			if errors.As(werr, &e) {
				for k, l := range logs {
					e.KernelLog = append(e.KernelLog, l.logSince(before[k])...)
				}
				// The kernel explained the refusal of the text: whatever errno it chose
				// (the event filter parser returns EPERM, ENOENT or ESRCH for some
				// mistakes: trace_events_filter.c predicate_parse, calc_stack), it is a
				// rejection, not a permission or security policy.
				if e.Class != ErrRejected && explains(e.KernelLog, data) {
					e.Class, e.Reason = ErrRejected, ""
				}
			}
			return werr
		}
	}
	if err := fd.Close(); err != nil {
		return f.opError("write", path, data, err)
	}
	return nil
}

// explains says whether one of the entries is about data (its command is data, words
// re-joined by single spaces as the probe parsers do), not another writer's.
func explains(entries []LogEntry, data string) bool {
	want := strings.Join(strings.Fields(data), " ")
	for _, e := range entries {
		if strings.Join(strings.Fields(e.Command), " ") == want {
			return true
		}
	}
	return false
}

// logsErrors: files whose rejected writes the kernel explains in error_log (trace.c
// tracing_log_err callers: probe parsers, event filters, triggers, hist).
func logsErrors(file string) bool {
	switch file {
	case "kprobe_events", "uprobe_events", "dynamic_events", "synthetic_events":
		return true
	}
	return strings.HasPrefix(file, "events/") &&
		(strings.HasSuffix(file, "/filter") || strings.HasSuffix(file, "/trigger"))
}

// errorLogs: where the kernel may log a failure of a write to file. Probe errors always go to
// the top-level log; event filter and trigger errors to the instance's own.
func (i *Instance) errorLogs(file string) []*Instance {
	top := i.fs.Top()
	if strings.HasSuffix(file, "_events") || i.Name == "" {
		return []*Instance{top}
	}
	return []*Instance{i, top}
}

// lastLogStamp is the timestamp (µs) of the newest error_log entry, 0 when empty or absent.
func (i *Instance) lastLogStamp() uint64 {
	b, err := i.ReadFile("error_log")
	if err != nil {
		return 0
	}
	entries := ParseErrorLog(string(b))
	if len(entries) == 0 {
		return 0
	}
	return entries[len(entries)-1].Micros
}

// logSince returns error_log entries newer than stamp.
func (i *Instance) logSince(stamp uint64) []LogEntry {
	b, err := i.ReadFile("error_log")
	if err != nil {
		return nil
	}
	var out []LogEntry
	for _, e := range ParseErrorLog(string(b)) {
		if e.Micros > stamp {
			out = append(out, e)
		}
	}
	return out
}

// Token is one newline-terminated word written to a list file (set_ftrace_filter...), with a
// note for people (the function an index stands for) shown by --dry-run.
type Token struct {
	Text string
	Note string
}

// TokenError says which token of a WriteTokens call the kernel rejected. The tokens before it
// were applied, and the file was closed (for filter files: committed).
type TokenError struct {
	Index int // 0-based position of the rejected token
	Err   error
}

func (e *TokenError) Error() string { return fmt.Sprintf("token %d: %v", e.Index+1, e.Err) }
func (e *TokenError) Unwrap() error { return e.Err }

// WriteTokens writes tokens to a list file in ONE open without O_TRUNC, each token
// newline-terminated in its own write(2) (the kernel parses one token per write call, so a
// rejection names its token exactly), then closes. For set_ftrace_filter and set_ftrace_notrace
// the close is the single commit: a process killed midway commits the tokens written so far,
// which is why callers order additions before removals. A write is never split across tokens
// and a token is never left unterminated (the kernel would parse it at close and ignore its error).
//
// A cancelled ctx stops the writing between tokens (the file is still closed, committing what
// was written) and returns ctx.Err().
func (i *Instance) WriteTokens(ctx context.Context, file string, toks []Token) (err error) {
	path := i.Path(file)
	f := i.fs
	if f.DryRun != nil {
		fmt.Fprintf(f.DryRun, "dry-run: open %s for writing (no O_TRUNC; the close commits)\n", path)
		for _, t := range toks {
			if t.Note != "" {
				fmt.Fprintf(f.DryRun, "dry-run:   write %-12s # %s\n", strconv.Quote(t.Text+"\n"), escapeControl(t.Note))
			} else {
				fmt.Fprintf(f.DryRun, "dry-run:   write %s\n", strconv.Quote(t.Text+"\n"))
			}
		}
		fmt.Fprintf(f.DryRun, "dry-run: close %s\n", path)
		return nil
	}
	if f.Log != nil {
		defer func() {
			if err == nil {
				f.logged("open " + path + " for writing (no O_TRUNC; the close commits)")
				for _, t := range toks {
					f.logged("  write " + strconv.Quote(t.Text+"\n"))
				}
				f.logged("close " + path)
			}
		}()
	}
	fd, err := os.OpenFile(path, os.O_WRONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return f.opError("open", path, "", err)
	}
	buf := make([]byte, 0, 256)
	for k, t := range toks {
		if k&63 == 0 && ctx.Err() != nil {
			fd.Close()
			return ctx.Err()
		}
		buf = append(append(buf[:0], t.Text...), '\n')
		if _, err := fd.Write(buf); err != nil {
			fd.Close()
			return &TokenError{Index: k, Err: f.opError("write", path, t.Text+"\n", err)}
		}
	}
	if err := fd.Close(); err != nil {
		return f.opError("write", path, "", err)
	}
	return nil
}

// DefaultStateDir is FS.StateDir's default: a root-only directory (tracefs writes need root
// anyway) under /run, a tmpfs on systemd systems, emptied at boot as the kernel's tracing
// state is. It is ftctl's own, not a kernel path.
const DefaultStateDir = "/run/ftctl"

// StatePath is where ftctl's own state lives (StateDir, else DefaultStateDir).
func (f *FS) StatePath() string {
	if f.StateDir != "" {
		return f.StateDir
	}
	return DefaultStateDir
}
