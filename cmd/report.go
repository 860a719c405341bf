package cmd

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"github.com/ftctl/ftctl/stream"
	"github.com/ftctl/ftctl/tracedat"
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
	// IncludeSelf: --include-self, show the events of the threads the file names as its
	// recorder's (ftctl record -B: the instance recorded ftctl's own events with the rest)
	IncludeSelf bool
}

// NewCmdReport builds `ftctl report`.
func NewCmdReport(g *Globals, runF func(context.Context, *ReportOptions) error) *cobra.Command {
	opts := &ReportOptions{G: g}
	c := &cobra.Command{
		Use:   "report [flags] FILE",
		Short: "Print the events of a trace.dat (ftctl record's or trace-cmd record's)",
		Long: `Read a trace.dat written by 'ftctl record' or 'trace-cmd record' (file versions 6 and 7,
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

A file ftctl cannot read (not a trace.dat, cut short before its data, another version, a
latency-tracer recording) is exit 2 with where and why. Of a file with several buffers
(trace-cmd record -B), the top-level buffer is read.`,
		Example: `  ftctl report trace.dat
  # the sched_switch events of CPU 1, as JSON
  ftctl report trace.dat --event sched_switch --cpu 1 -o json`,
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
	w := bufio.NewWriterSize(g.Out, 256<<10)
	text := stream.TextOptions{Color: colorFor(g.Out) && !g.JSON()}
	var buf []byte
	shown, lost := 0, int64(0)
	fo := stream.FileOptions{CPU: opts.CPU, HasCPU: opts.HasCPU}
	if !opts.IncludeSelf {
		fo.Skip = stream.SkipRecorder(file)
	}
	info, err := stream.ReadFile(file, fo, func(ev *stream.Event) error {
		if !filter.Match(ev) {
			return nil
		}
		if ev.Kind == stream.KindLost {
			lost += max(ev.Lost, 0)
		} else {
			shown++
		}
		if g.JSON() {
			buf = stream.AppendJSON(buf[:0], ev, false)
		} else {
			buf = stream.AppendText(buf[:0], ev, text)
		}
		if _, err := w.Write(buf); err != nil {
			return err
		}
		return ctx.Err()
	})
	if ferr := w.Flush(); err == nil {
		err = ferr
	}
	if errors.Is(err, stream.ErrFileCPU) {
		return InvalidInput(err)
	}
	if err != nil {
		if ctx.Err() != nil {
			return ErrInterrupted
		}
		return fmt.Errorf("%s: %w", safe(opts.File), err)
	}
	if b := file.Buffers(); len(b) > 0 {
		g.Notice("%s also holds the buffers of %s (trace-cmd record -B), which ftctl report does not read: only the top level's events are shown",
			safe(opts.File), safe(strings.Join(quoteAll(b), ", ")))
	}
	if info.Skipped > 0 {
		g.Notice("%s: left out %s of ftctl record's own threads (the file names them); --include-self shows them",
			safe(opts.File), plural(int(info.Skipped), "event"))
	}
	if info.Partial > 0 {
		g.Notice("%s: the data of %s ends inside a page (the file was cut short); that page is left out", safe(opts.File), plural(info.Partial, "CPU"))
	}
	if !g.Quiet {
		fmt.Fprintf(g.Err, "ftctl: report: %d events shown, %d lost as the kernel marked them, %d CPUs, trace clock %s\n",
			shown, lost, info.CPUs, safe(info.Clock))
	}
	return nil
}

// openRecording opens a trace.dat, or with recover the directory a killed record left.
func openRecording(name string, recover bool) (*tracedat.File, func(), error) {
	var files []*os.File
	closeAll := func() {
		for _, f := range files {
			f.Close()
		}
	}
	open := func(path string) (*os.File, int64, error) {
		f, err := os.Open(path)
		if err != nil {
			return nil, 0, badFile(path, errors.Unwrap(err))
		}
		files = append(files, f)
		st, err := f.Stat()
		if err != nil {
			return nil, 0, badFile(path, err)
		}
		if st.IsDir() {
			return nil, 0, badFile(path, errors.New("is a directory (--recover reads the directory a killed ftctl record left)"))
		}
		return f, st.Size(), nil
	}
	if !recover {
		f, size, err := open(name)
		if err != nil {
			closeAll()
			return nil, nil, err
		}
		file, err := tracedat.Read(f, size)
		if err != nil {
			closeAll()
			return nil, nil, badFile(name, err)
		}
		return file, closeAll, nil
	}
	hf, size, err := open(filepath.Join(name, stream.HeaderFile))
	if err != nil {
		closeAll()
		return nil, nil, err
	}
	header, err := tracedat.Read(hf, size)
	if err != nil {
		closeAll()
		return nil, nil, badFile(hf.Name(), err)
	}
	ents, err := os.ReadDir(name)
	if err != nil {
		closeAll()
		return nil, nil, badFile(name, err)
	}
	var readers []io.ReaderAt
	var sizes []int64
	for _, e := range ents {
		n, err := strconv.Atoi(strings.TrimSuffix(strings.TrimPrefix(e.Name(), "cpu"), ".raw"))
		if err != nil || e.Name() != stream.CPUFile(n) || n > 4096 {
			continue
		}
		f, size, err := open(filepath.Join(name, e.Name()))
		if err != nil {
			closeAll()
			return nil, nil, err
		}
		for len(readers) <= n {
			readers, sizes = append(readers, strings.NewReader("")), append(sizes, 0)
		}
		readers[n], sizes[n] = f, size
	}
	if len(readers) == 0 {
		closeAll()
		return nil, nil, badFile(name, errors.New("no cpuN.raw files: not what ftctl record leaves"))
	}
	return tracedat.WithCPUs(header, readers, sizes), closeAll, nil
}
