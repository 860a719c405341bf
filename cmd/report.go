package cmd

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"github.com/ftctl/ftctl/stream"
	"github.com/ftctl/ftctl/tracedat"
	"github.com/ftctl/ftctl/tracefs"
)

// ReportOptions are the inputs of `ftctl report`.
type ReportOptions struct {
	G       *Globals
	File    string
	Recover bool // --recover: File is the FILE.tmp-PID directory record left
	Events  []string
	PID     int
	HasPID  bool
	Comm    string
	CPU     int
	HasCPU  bool
	// Buffers (--buffer): the buffers read, "" the top level's; none given: every buffer.
	Buffers []string
	// IncludeSelf: --include-self, show the events of the threads the file names as its
	// recorder's (ftctl record -B: the instance recorded ftctl's own events with the rest)
	IncludeSelf bool
}

// reportLong is the help text of `ftctl report`.
const reportLong = `Read a trace.dat written by 'ftctl record' or 'trace-cmd record' (file versions 6 and 7,
uncompressed or compressed with zstd, as Debian's trace-cmd writes by default) and print its
events as 'ftctl stream' prints them: the same decoder of the ring buffer's pages, the same
text, the same JSON with -o json. The CPUs' events are merged in time order; losses show where
the kernel marked them.
No kernel is needed: the file carries the event formats, kallsyms and the saved cmdlines.

--recover reads the directory FILE.tmp-PID that a killed 'ftctl record' left: header.dat and
each CPU's pages (cpuN.raw) as far as they were moved ('ftctl reset' names such directories).

An instance ftctl does not own (ftctl -B NAME record) records ftctl's own events with the rest
(its splices, if the instance traces what they run). The file names ftctl's threads, and report
leaves their events out, counted on stderr; --include-self shows them.

A file of 'trace-cmd record -B NAME' holds an instance's buffer beside the top level's: every
buffer is read, their events merged in time order; each text line then starts with its
buffer's name (blank for the top level), as trace-cmd report prints them, and each JSON object
with "buffer" ("" for the top level). --buffer NAME reads only that buffer (--buffer '' the top
level's); repeat it for several.

A trace.dat is anyone's file: every size, count, offset and depth in it is checked before use,
and a file of S bytes is read in at most max(64 MiB, 16 x S) of memory (S counting a compressed
file's data as decompressed). A file ftctl cannot read (not a trace.dat, cut short before its
data, another version, a latency-tracer recording, or holding what no kernel writes: CPUs
sharing their data, a header_page or a format whose offsets and sizes do not fit, a page whose
events run past it) is exit 2 with the byte and why, as is a --buffer the file does not hold;
the events before a fault in the data are printed first. A function_graph depth past 64 levels
(no kernel records one) is indented 64 levels and printed as a number.`

// reportExample lists the examples of `ftctl report`.
const reportExample = `  ftctl report trace.dat
  # the sched_switch events of CPU 1, as JSON
  ftctl report trace.dat --event sched_switch --cpu 1 -o json
  # of a trace-cmd record -B NAME file, only the top level's events (--buffer NAME: NAME's)
  ftctl report trace.dat --buffer ''`

// NewCmdReport builds `ftctl report`.
func NewCmdReport(g *Globals, runF func(context.Context, *ReportOptions) error) *cobra.Command {
	opts := &ReportOptions{G: g}
	c := &cobra.Command{
		Use:     "report [flags] FILE",
		Short:   "Print the events of a trace.dat (ftctl record's or trace-cmd record's)",
		Long:    reportLong,
		Example: reportExample,
		Args: func(c *cobra.Command, a []string) error {
			if len(a) != 1 {
				return InvalidInput(fmt.Errorf("ftctl report takes one FILE (%d given)", len(a)))
			}
			return nil
		},
		RunE: func(c *cobra.Command, a []string) error {
			opts.File = a[0]
			opts.HasPID = c.Flags().Changed("pid")
			opts.HasCPU = c.Flags().Changed("cpu")
			return runCmd(c, runF, reportRun, opts)
		},
	}
	f := c.Flags()
	f.StringArrayVar(&opts.Events, "event", nil, "show only events whose name matches `NAME|GLOB` (SYSTEM:NAME accepted, the system is not compared); repeatable")
	f.IntVar(&opts.PID, "pid", 0, "show only events of this `PID`")
	f.StringVar(&opts.Comm, "comm", "", "show only events of processes whose comm matches `NAME|GLOB`")
	f.IntVar(&opts.CPU, "cpu", 0, "show only the events of CPU `N`")
	f.StringArrayVar(&opts.Buffers, "buffer", nil, "read only the buffer `NAME` of a trace-cmd record -B file ('' for the top level's); repeatable")
	f.BoolVar(&opts.Recover, "recover", false, "FILE is the FILE.tmp-PID directory a killed 'ftctl record' left")
	f.BoolVar(&opts.IncludeSelf, "include-self", false, "also show the events of the threads the file names as ftctl record's own (left out by default)")
	c.ValidArgsFunction = func(*cobra.Command, []string, string) ([]cobra.Completion, cobra.ShellCompDirective) {
		return nil, cobra.ShellCompDirectiveDefault
	}
	return c
}

// ErrBadFile marks a file report cannot read: exit 2, nothing was done.
func badFile(name string, err error) error {
	return InvalidInput(fmt.Errorf("%s: %w", safe(name), err))
}

func reportRun(ctx context.Context, opts *ReportOptions) error {
	g := opts.G
	so := &StreamOptions{Events: opts.Events, PID: opts.PID, HasPID: opts.HasPID, Comm: opts.Comm, Reader: stream.ReaderAuto}
	filter, err := so.filter()
	if err != nil {
		return err
	}
	if opts.HasCPU && opts.CPU < 0 {
		return InvalidInput(errors.New("--cpu must not be negative"))
	}
	file, closeAll, err := openRecording(opts.File, opts.Recover)
	if err != nil {
		return err
	}
	defer closeAll()
	buffers, err := chooseBuffers(file, opts.Buffers)
	if err != nil {
		return InvalidInput(fmt.Errorf("%s: %w", safe(opts.File), err))
	}
	// a file of this kernel: the enumerators its formats left take their values from its BTF
	fo := stream.FileOptions{CPU: opts.CPU, HasCPU: opts.HasCPU, Buffers: buffers, Enum: stream.EnumResolver(&tracefs.FS{})}
	if !opts.IncludeSelf {
		fo.Skip = stream.SkipRecorder(file)
	}
	info, shown, lost, err := printRecording(ctx, g, file, fo, &filter)
	if errors.Is(err, stream.ErrFileCPU) {
		return InvalidInput(err)
	}
	if err != nil {
		if ctx.Err() != nil {
			return ErrInterrupted
		}
		if badContent(err) {
			// what was printed stands (the events before the fault); exit 2, where and why
			return badFile(opts.File, err)
		}
		return fmt.Errorf("%s: %w", safe(opts.File), err)
	}
	reportNotices(g, opts.File, info, shown, lost)
	return nil
}

// printRecording prints the events of file that filter passes through the stream engine's
// copy of a recording (stream.CopyFile, as stream prints the kernel's), and counts them: shown,
// and lost as the kernel marked them.
func printRecording(ctx context.Context, g *Globals, file *tracedat.File, fo stream.FileOptions, filter *stream.Filter) (info *stream.FileInfo, shown int, lost int64, err error) {
	src, err := stream.OpenFile(ctx, file, fo)
	if err != nil {
		return nil, 0, 0, err
	}
	defer src.Close()
	out := stream.Output{W: g.Out, JSON: g.machine(), Text: stream.TextOptions{Color: g.colorFor(g.Out) && !g.machine()}, Filter: *filter}
	if b := file.Buffers(); len(b) > 0 {
		out.Text.BufferWidth = stream.BufferWidth(b)
	}
	shown, lost, err = stream.CopyFile(src, out)
	return src.Info(), shown, lost, err
}

// reportNotices says on stderr what the report left out, and (unless --quiet) what it read.
func reportNotices(g *Globals, name string, info *stream.FileInfo, shown int, lost int64) {
	if info.Skipped > 0 {
		g.Notice("%s: left out %s of ftctl record's own threads (the file names them); --include-self shows them",
			safe(name), plural(int(info.Skipped), "event"))
	}
	if info.Partial > 0 {
		g.Notice("%s: the data of %s ends inside a page (the file was cut short); that page is left out", safe(name), plural(info.Partial, "CPU"))
	}
	if !g.Quiet {
		read := ""
		if len(info.Buffers) > 0 {
			read = ", buffers " + safe(strings.Join(bufferNames(info.Buffers), ", "))
		}
		fmt.Fprintf(g.Err, "ftctl: report: %d events shown, %d lost as the kernel marked them, %d CPUs, trace clock %s%s\n",
			shown, lost, info.CPUs, safe(info.Clock), read)
	}
}

// badContent says whether err is the file's content's fault (a *stream.FileError, or
// tracedat's of a buffer read on the way): exit 2, as for a file tracedat.Read refuses.
func badContent(err error) bool {
	return errors.Is(err, tracedat.ErrCorrupt) || errors.Is(err, tracedat.ErrUnsupported) || errors.Is(err, tracedat.ErrVersion)
}

// chooseBuffers checks --buffer against the buffers the file holds: nil (every buffer) when none
// was given, else the names given, each once.
func chooseBuffers(file *tracedat.File, want []string) ([]string, error) {
	if len(want) == 0 {
		return nil, nil
	}
	have := map[string]bool{"": true}
	for _, b := range file.Buffers() {
		have[b] = true
	}
	var out []string
	seen := map[string]bool{}
	for _, name := range want {
		if !have[name] {
			return nil, fmt.Errorf("%w: --buffer %q (it holds %s)", tracedat.ErrNoBuffer, name, strings.Join(bufferNames(append([]string{""}, file.Buffers()...)), ", "))
		}
		if !seen[name] {
			seen[name] = true
			out = append(out, name)
		}
	}
	return out, nil
}

// bufferNames quotes buffer names, the top level's "" as "the top level".
func bufferNames(names []string) []string {
	var out []string
	for _, n := range names {
		if n == "" {
			out = append(out, "the top level")
		} else {
			out = append(out, strconv.Quote(n))
		}
	}
	return out
}

// openRecording opens a trace.dat, or with recover the directory a killed record left
// (stream.OpenRecordDir); a file that cannot be opened or read is exit 2.
func openRecording(name string, recover bool) (*tracedat.File, func(), error) {
	open := stream.OpenRecording
	if recover {
		open = stream.OpenRecordDir
	}
	r, err := open(name)
	if err != nil {
		return nil, nil, recordingError(err)
	}
	return r.File, r.Close, nil
}

// recordingError is exit 2 naming the file of the recording and why, in the command's words.
func recordingError(err error) error {
	var oe *stream.OpenError
	if !errors.As(err, &oe) {
		return InvalidInput(err)
	}
	if errors.Is(oe.Err, stream.ErrIsDir) {
		return badFile(oe.Path, errors.New("is a directory (--recover reads the directory a killed ftctl record left)"))
	}
	return badFile(oe.Path, oe.Err)
}
