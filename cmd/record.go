package cmd

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/spf13/cobra"

	"github.com/ftctl/ftctl/session"
	"github.com/ftctl/ftctl/stream"
	"github.com/ftctl/ftctl/tracefs"
)

// RecordOptions are the inputs of `ftctl record`: trace's session, and the file.
type RecordOptions struct {
	TraceOptions
	File string // -w/--write
	Mode string // --mode: the file's permissions, octal (0600 unless widened)
}

// recordLong is the help text of `ftctl record`.
const recordLong = `Set a session up as 'ftctl trace' does (its own instance and probe group, removed at the end
on every exit path; -f, -n, -p, -e, --filter, --tracer, --pid, --buffer-kb, --clock and -O as
trace takes them), or read an existing instance with -B (its settings are left alone; what is
recorded is consumed from its buffer), and record the ring buffer into FILE (-w FILE, default
trace.dat) in trace-cmd's format (file version 6), which 'trace-cmd report', KernelShark and
'ftctl report' read. trace-cmd and perf name the file with record -o; in ftctl -o is the
output format in every command, so the file is -w/--write (record -o FILE is refused, exit 2).

Each CPU's pages are moved from per_cpu/cpuN/trace_pipe_raw into a file of its own with
splice(2): nothing is decoded while recording. The pages come first: in a session of its own,
ftctl reads the formats of the ftrace system and of the enabled events, and kallsyms, before
tracing starts; with -B (the instance traces already) it starts moving pages at once and reads
them beside. It wakes paced so that the busiest CPU's buffer is about a quarter full at each
wake, at least once a second (ten times a second where buffer_percent is 0), and sooner when a
CPU passes buffer_percent, and moves what gathered in a few large splices. At the end tracing
is stopped (in its own instance), the pages the kernel was still writing are read, and FILE is
written: the page and event headers, the formats of the events recorded (those read at the
start, and any other event whose records the pages hold, found by type id: one enabled and
disabled while -B recorded, or written by a trigger), kallsyms, printk formats, the saved
cmdlines, the trace clock (trace-cmd's TRACECLOCK option: --clock's), uname (UNAME, as
trace-cmd writes it), the CPU count and each CPU's statistics, then the pages. trace-cmd's
format has no place for trace options: -O changes what is recorded, and is not written in the
file. Losses are in the pages as the kernel marks them (trace-cmd report prints them as dropped
events). Progress goes to stderr every second and at the end: events handed over by the kernel,
bytes and events lost, per CPU.
--count stops once the kernel handed over N events: the file holds whole pages, so it may hold
a few more.

ftctl's own threads are kept out of a session's instance (--include-self keeps them in). An
instance of -B records them with the rest if it traces what they do (their splices take the
ring buffer's locks, and make system calls): record cannot drop them without decoding, so the
file names ftctl's threads (trace-cmd's PROCMAPS option, one per thread, with no mappings,
which trace-cmd reads without a word), and 'ftctl report' leaves their events out unless
--include-self; 'trace-cmd report' shows them. record --include-self does not name them.

FILE appears only complete: ftctl works in FILE.tmp-PID (a directory beside it, 0700) and
renames the finished file. Every file is made relative to descriptors of these two directories,
never through a symbolic link, and FILE's directory must be root's or the user's who runs
ftctl (sudo's SUDO_UID too) and writable by no one else, unless sticky (as /tmp): another user
could otherwise rename the working directory and plant links in it (exit 2 naming it). A
recording holds kallsyms and raw kernel pointers: FILE is 0600 unless --mode widens it (e.g.
--mode 0644), and its files in FILE.tmp-PID are 0600. If ftctl is killed (SIGKILL), FILE is
not there; FILE.tmp-PID holds header.dat and each CPU's pages so far (cpuN.raw), which 'ftctl
report --recover FILE.tmp-PID' reads. The directory is named in /run/ftctl while ftctl
records: 'ftctl reset' removes the session a killed record left, names the directory and how
to read it, and removes it only with --remove-recordings.`

// recordExample lists the examples of `ftctl record`.
const recordExample = `  # functions of ext4 for 2 seconds (read them back with: ftctl report ext4.dat)
  sudo ftctl record -f 'ext4_*' --duration 2s -w ext4.dat
  # a kprobe with a string argument and sched tracepoints, for one command
  sudo ftctl record -p 'p:open do_sys_openat2 path=+0(%si):string' -e sched:sched_switch -- ls /tmp
  trace-cmd report trace.dat`

// NewCmdRecord builds `ftctl record`.
func NewCmdRecord(g *Globals, runF func(context.Context, *RecordOptions) error) *cobra.Command {
	opts := &RecordOptions{TraceOptions: TraceOptions{G: g}}
	c := &cobra.Command{
		Use:     "record [flags] [-- COMMAND ARGS...]",
		Short:   "Record a session into a trace.dat that trace-cmd and KernelShark read",
		Long:    recordLong,
		Example: recordExample,
		Args: func(c *cobra.Command, a []string) error {
			if c.ArgsLenAtDash() < 0 && len(a) > 0 {
				return InvalidInput(fmt.Errorf("unexpected argument %q: a command to record goes after --", a[0]))
			}
			if c.ArgsLenAtDash() > 0 {
				return InvalidInput(fmt.Errorf("unexpected argument %q before --", a[0]))
			}
			return nil
		},
		RunE: func(c *cobra.Command, a []string) error {
			opts.Command = a
			return runCmd(c, runF, recordRun, opts)
		},
	}
	f := c.Flags()
	opts.addSessionFlags(c, "the recording")
	f.DurationVar(&opts.Duration, "duration", 0, "end the recording after `D` (e.g. 30s)")
	f.IntVar(&opts.Count, "count", 0, "end the recording once the kernel handed over `N` events")
	f.BoolVar(&opts.IncludeSelf, "include-self", false, "keep ftctl's own threads in the session's instance; with -B, do not name them in the file (report shows their events)")
	registerWriteFlag(c, &opts.File, "trace.dat", "write the recording to `FILE`")
	f.StringVar(&opts.Mode, "mode", "0600", "give FILE the permissions `MODE` (octal, read and write bits only, at least 0600): it holds kernel addresses")
	return c
}

// errRecordInstance: -B is read only: a session's settings go with a session's own instance.
var errRecordInstance = errors.New("with -B, ftctl record reads the instance as it is set up: -f, -n, -p, -e, --filter, --tracer, --pid, --buffer-kb, --clock, -O and -- COMMAND set up a session of its own; leave -B out for them")

func recordRun(ctx context.Context, opts *RecordOptions) error {
	g := opts.G
	spec, argv0, err := opts.recordSpec()
	if err != nil {
		return err
	}
	mode, err := recordMode(opts.Mode)
	if err != nil {
		return err
	}
	if g.DryRun {
		return recordDryRun(ctx, g, opts, spec, argv0)
	}
	rd, err := recordDir(opts.File)
	if err != nil {
		return err
	}
	rd.Mode = mode
	defer stream.RecorderGC()() // the collector only past a bound: stream.RecorderGC says why
	keepDir := true
	var journal *session.Recording
	defer func() {
		if !keepDir {
			rd.Remove()
			journal.Done() // nothing left to name
		}
		rd.Close()
	}()
	fs, err := g.FS()
	if err != nil {
		keepDir = false
		return err
	}
	// the directory is named in /run/ftctl before a page is moved: killed, ftctl leaves it,
	// and 'ftctl reset' says where it is and how to read it
	if journal, err = session.StartRecording(fs, rd.Path, opts.File); err != nil {
		keepDir = false
		return err
	}
	if g.Instance != "" {
		return recordInstance(ctx, opts, fs, rd, &keepDir)
	}
	return recordSession(ctx, opts, fs, rd, spec, argv0, &keepDir)
}

// recordSpec checks the options (exit 2 for a mistake) and returns the session's spec and the
// command's resolved path; with -B, which records an instance as it is, none.
func (opts *RecordOptions) recordSpec() (spec session.Spec, argv0 string, err error) {
	if opts.Duration < 0 || opts.Count < 0 {
		return spec, "", InvalidInput(errors.New("--duration and --count must not be negative"))
	}
	if opts.G.Instance == "" {
		return opts.spec()
	}
	if len(opts.Functions)+len(opts.Notrace)+len(opts.Probes)+len(opts.Events)+len(opts.PID)+len(opts.Command)+
		len(opts.EventFilter)+len(opts.Options) > 0 || opts.Tracer != "" || opts.BufferKB != 0 || opts.Clock != "" {
		return spec, "", InvalidInput(errRecordInstance)
	}
	return spec, "", nil
}

// recordInstance records the instance -B names, as it is set up, into rd. keepDir is cleared
// once nothing is left in rd worth keeping.
func recordInstance(ctx context.Context, opts *RecordOptions, fs *tracefs.FS, rd *stream.RecordDir, keepDir *bool) error {
	g := opts.G
	in, err := g.ReadInstance(fs)
	if err != nil {
		*keepDir = false
		return err
	}
	// the instance is tracing already: the pages come first, the formats and kallsyms
	// are read beside them (Run)
	rec, err := stream.NewRecorder(in, rd)
	if err != nil {
		*keepDir = false
		return err
	}
	rec.NameSelf = !opts.IncludeSelf
	defer rec.Close()
	warnIfIdle(g, in)
	g.Armed("recording the " + in.Label())
	return recordTo(ctx, g, opts, rec, nil, nil, keepDir)
}

// recordSession records a session of its own (spec, with -- COMMAND argv0) into rd. keepDir is
// cleared once nothing is left in rd worth keeping.
func recordSession(ctx context.Context, opts *RecordOptions, fs *tracefs.FS, rd *stream.RecordDir, spec session.Spec,
	argv0 string, keepDir *bool) error {
	g := opts.G
	s, err := newSession(g, fs, spec)
	if err != nil {
		*keepDir = false
		return err
	}
	var rec *stream.Recorder
	recorder := func() (func(), error) {
		var err error
		if rec, err = stream.NewRecorder(s.Instance, rd); err != nil {
			return nil, err
		}
		// tracing is not on yet: the formats and kallsyms are read now, so that nothing
		// slow sits between Begin and the first splice
		if err = rec.ReadHeader(); err != nil {
			rec.Close()
			return nil, err
		}
		// ftctl's threads are not named: the instance keeps their events out already, and
		// what it keeps (a sched_switch into or out of the traced command) belongs there
		return func() { rec.Close() }, nil
	}
	recording := false
	err = runSession(ctx, g, fs, s, argv0, opts.Command, recorder, func(command *session.Command) error {
		recording = true
		return recordTo(ctx, g, opts, rec, s.Instance, command, keepDir)
	})
	if !recording { // nothing was recorded: the working directory goes
		*keepDir = false
	}
	return err
}

// recordDryRun prints what record would write to tracefs, and creates no file: not FILE, not
// its working directory (whose checks, made as it is created, the run makes).
func recordDryRun(ctx context.Context, g *Globals, opts *RecordOptions, spec session.Spec, argv0 string) error {
	if err := checkRecordName(opts.File); err != nil {
		return err
	}
	fs, err := g.FS()
	if err != nil {
		return err
	}
	if g.Instance != "" {
		in, err := g.ReadInstance(fs)
		if err != nil {
			return err
		}
		g.Notice("dry run: record -B writes nothing to tracefs; it would record %s, as it is set up, into %s", in.Label(), safe(opts.File))
		return nil
	}
	s, err := newSession(g, fs, spec)
	if err != nil {
		return err
	}
	g.Notice("dry run: the recording would go to %s", safe(opts.File))
	return runSession(ctx, g, fs, s, argv0, opts.Command, nil, nil)
}

// recordDir makes FILE.tmp-PID beside FILE, after checking that FILE can be written there: a
// directory that does not exist or that another user can write, a FILE that is a directory,
// are exit 2 before anything is set up.
// fileOwners are the users who may own the directory a recording is written into: the real
// user, and the one sudo names.
func fileOwners() []int {
	owners := []int{os.Getuid()}
	if u, err := strconv.Atoi(os.Getenv("SUDO_UID")); err == nil && u > 0 {
		owners = append(owners, u)
	}
	return owners
}

func recordDir(file string) (*stream.RecordDir, error) {
	if err := checkRecordName(file); err != nil {
		return nil, err
	}
	rd, err := stream.MakeRecordDir(file, os.Getpid(), fileOwners()...)
	if err != nil {
		return nil, InvalidInput(fmt.Errorf("-w %s: %s", safe(file), safe(err.Error())))
	}
	return rd, nil
}

// checkRecordName refuses a -w that names no file.
func checkRecordName(file string) error {
	if file == "" {
		return InvalidInput(errors.New("-w/--write: a file name is needed (-w FILE)"))
	}
	return nil
}

// registerWriteFlag gives a command that writes a trace.dat its -w/--write FILE. trace-cmd
// record and perf record name their file with -o; in ftctl -o is the output format in every
// command, so that it means one thing (checkOutput points a file given to -o here).
func registerWriteFlag(c *cobra.Command, file *string, def, usage string) {
	c.Flags().StringVarP(file, "write", "w", def, usage+" (trace-cmd's and perf's record -o FILE; -o is the output format)")
	registerFlagCompletion(c, "write", cobra.FixedCompletions(nil, cobra.ShellCompDirectiveDefault))
}

// recordMode parses --mode: octal, read and write bits only (a recording is not a program),
// and at least the owner's read and write.
func recordMode(s string) (os.FileMode, error) {
	m, err := strconv.ParseUint(s, 8, 32)
	if err != nil || m&^0o666 != 0 || m&0o600 != 0o600 {
		return 0, InvalidInput(fmt.Errorf("--mode %s: want octal permissions of read and write bits, with the owner's read and write (0600, 0640, 0644...)", safe(s)))
	}
	return os.FileMode(m), nil
}

// recordTo records until the end (--duration, --count, the command's exit, a signal), stops
// tracing in the session's instance (own, nil with -B), moves the rest and writes the file.
func recordTo(ctx context.Context, g *Globals, opts *RecordOptions, rec *stream.Recorder, own *tracefs.Instance,
	command *session.Command, keepDir *bool) error {
	ro := stream.RecordOptions{Duration: opts.Duration, Count: int64(opts.Count)}
	if !g.Quiet {
		ro.Progress = func(st *stream.RecordStats) { fmt.Fprintf(g.Err, "ftctl: record: %s\n", st) }
	}
	var commandErr error
	commandEnded := false
	if command != nil {
		command.Release()
		done := make(chan struct{})
		ro.Done = done
		go func() {
			commandErr = <-command.Done()
			close(done)
		}()
	}
	rec.Phase = recordTimer(g)
	rec.Phase("start")
	runErr := rec.Run(ctx, ro)
	rec.Phase("run")
	if command != nil {
		select {
		case <-ro.Done:
			commandEnded = true
		default:
		}
	}
	stopped := stopRecordedTracing(g, own)
	if runErr != nil && !errors.Is(runErr, context.Canceled) && ctx.Err() == nil {
		return runErr // the pages so far stay in the directory
	}
	if command != nil && !commandEnded {
		cerr := command.Stop(2 * time.Second)
		<-ro.Done
		if cerr != nil && commandErr == nil {
			commandErr = cerr
		}
	}
	if err := rec.Flush(stopped); err != nil {
		return err
	}
	rec.Phase("flush")
	if err := rec.Assemble(); err != nil {
		return fmt.Errorf("writing %s: %w", safe(opts.File), err)
	}
	rec.Phase("removed")
	*keepDir = false
	recordSummary(g, opts.File, &rec.Stats)
	if ctx.Err() != nil {
		return ErrInterrupted
	}
	return commandStatus(command, commandErr)
}

// stopRecordedTracing turns tracing off in the session's instance own (nothing with -B, own
// nil), and says whether it is off.
func stopRecordedTracing(g *Globals, own *tracefs.Instance) bool {
	if own == nil {
		return false
	}
	// Flush reads everything the CPUs hold only once tracing is off; otherwise (the write
	// failed) no more than their buffers held: a kernel still writing would feed it forever
	if err := own.SetTracingOn(false); err != nil {
		fmt.Fprintf(g.Err, "ftctl: record: stopping tracing: %s; the pages are read up to what the buffers held\n", safe(err.Error()))
		return false
	}
	return true
}

// recordSummary says on stderr what the written file holds: the events without a format, and
// the totals (with --quiet, only when events were lost).
func recordSummary(g *Globals, file string, st *stream.RecordStats) {
	if ids := st.NoFormat; len(ids) > 0 {
		fmt.Fprintf(g.Err, "ftctl: record: %s: the pages hold events of type %s, which no event has any more (removed while recording): the file has no format for them, and reports show them as \"no format known\"\n",
			safe(file), joinInts(ids))
	}
	ev, lost, b := st.Totals()
	if !g.Quiet || lost > 0 {
		fmt.Fprintf(g.Err, "ftctl: record: %s: %d events, %d bytes, %d lost in %.1f s (%s)\n", safe(file), ev, b, lost, st.Seconds, st.String())
	}
}

// recordTimer is a Recorder.Phase that prints, when FTCTL_TIMING is set, the wall time and the
// process's CPU time (user + system, all threads) since the previous phase: the figures of a
// recording's fixed costs in BENCHMARKS.md.
func recordTimer(g *Globals) func(string) {
	if os.Getenv("FTCTL_TIMING") == "" {
		return func(string) {}
	}
	var mu sync.Mutex
	lastWall, lastCPU := processStart, time.Duration(0) // "start": from the process's start
	return func(phase string) {
		mu.Lock()
		defer mu.Unlock()
		now, cpu := time.Now(), tracefs.ProcessCPU()
		fmt.Fprintf(g.Err, "ftctl: timing: %s %.6f cpu %.6f\n", phase, now.Sub(lastWall).Seconds(), (cpu - lastCPU).Seconds())
		lastWall, lastCPU = now, cpu
	}
}

// processStart is about when the process started (the package's initialisation).
var processStart = time.Now()

// joinInts is "1, 2, 3".
func joinInts(v []int) string {
	s := make([]string, len(v))
	for i, n := range v {
		s[i] = strconv.Itoa(n)
	}
	return strings.Join(s, ", ")
}
