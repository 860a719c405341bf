package cmd

import (
	"context"
	"fmt"
	"io"
	"sort"
	"strings"

	"github.com/spf13/cobra"

	"github.com/ftctl/ftctl/tracefs"
)

// StatusOptions are the inputs of `ftctl status`.
type StatusOptions struct {
	G *Globals
}

// NewCmdStatus builds `ftctl status`. runF replaces the run function in tests.
func NewCmdStatus(g *Globals, runF func(context.Context, *StatusOptions) error) *cobra.Command {
	opts := &StatusOptions{G: g}
	return &cobra.Command{
		Use:   "status",
		Short: "Show the state of the tracing control plane",
		Long: `Show where tracefs is and how it was found, the kernel and its lockdown state, what the
kernel's tracing supports, and for each trace array (the top level and every instance, or just
the one named with -B): the tracer, whether tracing is on, the buffer size, the function filter
and notrace list (or "all functions"), enabled events and per-CPU overruns; then the kprobes
(which of them are ftctl's) and which control files this kernel does not let ftctl use, and why.

status only reads. It exits 0 on a restricted kernel too, describing what is missing; it exits 4
when tracefs is not mounted (mount it with 'ftctl mount').`,
		Example: `  sudo ftctl status
  sudo ftctl status -B mytrace
  sudo ftctl status -o json | jq '.instances[0].filter'`,
		Args:        args(cobra.NoArgs),
		Annotations: map[string]string{AnnotationJSON: statusJSON},
		RunE: func(c *cobra.Command, _ []string) error {
			return runCmd(c, runF, statusRun, opts)
		},
	}
}

// statusJSON documents `ftctl status -o json` (tracefs.Status).
const statusJSON = `One object (fields shown with example values):

  {"tracefs": {"path": "/sys/kernel/tracing", "fstype": "tracefs",
               "found": "mountinfo", "options": "rw,nosuid,nodev,noexec,relatime",
               "super_options": "rw", "read_only": false},
   "kernel": "6.12.117+deb12-amd64",
   "lockdown": {"current": "none",
                "levels": ["none", "integrity", "confidentiality"]},
   "features": ["dynamic-events", "error-log", "filter-index-writes"],
   "instances": [
     {"name": "", "tracer": "nop", "tracing_on": true,
      "buffer_size_kb": 1408, "buffer_total_size_kb": 2816,
      "buffer_allocated": false,
      "filter": {"empty": true, "functions": 0, "commands": [],
                 "pending_modules": []},
      "notrace": {"empty": true, "functions": 0, "commands": [],
                  "pending_modules": []},
      "events_enabled": ["sched:sched_switch"],
      "cpus": [{"cpu": 0, "entries": 0, "overrun": 0,
                "commit_overrun": 0, "dropped_events": 0,
                "read_events": 0, "bytes": 0}],
      "unavailable": []}],
   "kprobes": {"count": 1, "owned_by_ftctl": 1,
               "probes": [{"type": "p", "group": "ftctl",
                           "event": "myopen", "owner": "ftctl",
                           "definition": "p:ftctl/myopen do_sys_openat2"}]},
   "dynamic_events": {"count": 3, "owned_by_ftctl": 1,
                      "by_kind": {"kprobe": 1, "kretprobe": 1, "eprobe": 1}},
   "unavailable": [{"file": "kprobe_events", "class": "absent",
                    "errno": "ENOENT",
                    "reason": "kernel built without CONFIG_KPROBE_EVENTS"}]}

tracefs.options are the mount's own options and super_options the file system's (absent when
tracefs was given by --tracefs); read_only is true when writes fail with EROFS (a container's
read-only bind mount), found from the mount's flags. lockdown.current is "" when the state cannot be read, with a note saying why (and no
levels). An instance named "" is the top level. tracing_on is null when unreadable; buffer_size_kb is
per CPU, null when CPUs differ; buffer_allocated false means the buffer is still the boot-time
minimum until tracing first starts. filter and notrace are null when the file cannot be read;
"empty": true on a filter means every function is traced; pending_modules are :mod: patterns
the kernel keeps until their module loads. kprobes is null when kprobe_events cannot be read;
probes in the groups ftctl and ftctl_PID_ID are ftctl's (owner "ftctl", else "other").
dynamic_events counts every dynamic event once (null when dynamic_events cannot be read), by
kind: kprobe, kretprobe, uprobe, uretprobe, fprobe, fexit, tprobe, eprobe, synthetic, user. class is
one of absent, forbidden (EPERM), permission (EACCES), disabled (ENODEV) or error.`

func statusRun(_ context.Context, opts *StatusOptions) error {
	g := opts.G
	fs, err := g.FS()
	if err != nil {
		return err
	}
	st, err := fs.Status(g.Instance)
	if err != nil {
		return err
	}
	if ok, err := g.printDoc(statusFormat, st); ok {
		return err
	}
	return printStatus(g.Out, st)
}

func printStatus(w io.Writer, st *tracefs.Status) error {
	k := kv{w: w, width: 11}
	printSystem(k, st)
	unavailable := append([]tracefs.Unavailable{}, st.Unavailable...)
	for _, in := range st.Instances {
		fmt.Fprintln(w)
		if in.Name == "" {
			fmt.Fprintln(w, "top level")
		} else {
			fmt.Fprintf(w, "instance %s\n", safe(in.Name))
		}
		printInstance(kv{w: w, indent: "  ", width: 10}, in)
		unavailable = append(unavailable, in.Unavailable...)
	}

	fmt.Fprintln(w)
	printProbeCounts(k, st)
	printUnavailable(w, unavailable)
	return nil
}

// printSystem prints what holds for every trace array: tracefs, the kernel, its lockdown and
// features.
func printSystem(k kv, st *tracefs.Status) {
	how := st.Tracefs.Found
	if how == "mountinfo" {
		how = "found in /proc/self/mountinfo"
	} else {
		how = "given by " + how
	}
	fstype := st.Tracefs.FSType
	if fstype == "" {
		fstype = "unknown filesystem"
	}
	k.line("tracefs", "%s (%s, %s)", safe(st.Tracefs.Path), fstype, how)
	if st.Tracefs.ReadOnly {
		k.line("", "mounted read-only (%s): reading works, every change will fail (exit 4)", safe(st.Tracefs.Options))
	}
	k.line("kernel", "%s", safe(st.Kernel))
	if st.Lockdown.Current != "" {
		k.line("lockdown", "%s", st.Lockdown.Current)
	} else {
		k.line("lockdown", "unknown: %s", st.Lockdown.Note)
	}
	if len(st.Features) == 0 {
		k.line("features", "none detected")
	} else {
		k.line("features", "%s", wrapWords(st.Features, 66, strings.Repeat(" ", 12)))
	}
}

// printProbeCounts prints the kprobes, each with its owner, and the dynamic events by kind.
func printProbeCounts(k kv, st *tracefs.Status) {
	switch ks := st.Kprobes; {
	case ks == nil:
		k.line("kprobes", "unavailable (see below)")
	case ks.Count == 0:
		k.line("kprobes", "none")
	default:
		k.line("kprobes", "%d defined, %d of them ftctl's", ks.Count, ks.Owned)
		for _, p := range ks.Probes {
			fmt.Fprintf(k.w, "  %-6s %s/%s\n", p.Owner, safe(p.Group), safe(p.Event))
		}
	}

	if ds := st.Dynamic; ds != nil && ds.Count > 0 {
		kinds := make([]string, 0, len(ds.ByKind))
		for k := range ds.ByKind {
			kinds = append(kinds, k)
		}
		sort.Strings(kinds)
		var parts []string
		for _, kind := range kinds {
			parts = append(parts, fmt.Sprintf("%d %s", ds.ByKind[kind], kind))
		}
		k.line("dynamic", "%d defined, %d of them ftctl's: %s", ds.Count, ds.Owned, strings.Join(parts, ", "))
	}
}

// printUnavailable lists the control files that could not be read, and why.
func printUnavailable(w io.Writer, unavailable []tracefs.Unavailable) {
	if len(unavailable) == 0 {
		return
	}
	fmt.Fprintln(w)
	fmt.Fprintln(w, "unavailable control files")
	width := 0
	for _, u := range unavailable {
		width = max(width, len(safe(u.File)))
	}
	for _, u := range unavailable {
		what := u.Class
		if u.Errno != "" {
			what += " (" + u.Errno + ")"
		}
		fmt.Fprintf(w, "  %-*s  %s: %s\n", width, safe(u.File), what, u.Reason)
	}
}

func printInstance(k kv, in tracefs.InstanceStatus) {
	state := "unknown"
	if in.TracingOn != nil {
		state = map[bool]string{true: "tracing on", false: "tracing off"}[*in.TracingOn]
	}
	tracer := in.Tracer
	if tracer == "" {
		tracer = "unknown"
	}
	k.line("tracer", "%s, %s", safe(tracer), state)

	var buf string
	switch {
	case in.BufferKB != nil:
		buf = fmt.Sprintf("%d KiB per CPU", *in.BufferKB)
	default:
		buf = "per-CPU sizes differ"
	}
	if in.BufferTotalKB != nil {
		buf += fmt.Sprintf(", %d KiB total", *in.BufferTotalKB)
	}
	if !in.BufferAlloc && in.BufferKB != nil {
		buf += " (allocated when tracing first starts)"
	}
	k.line("buffer", "%s", buf)
	k.line("filter", "%s", describeList(in.Filter, "all functions"))
	k.line("notrace", "%s", describeList(in.Notrace, "none"))

	switch n := len(in.Events); {
	case n == 0:
		k.line("events", "none enabled")
	case n <= 4:
		k.line("events", "%s", safe(strings.Join(in.Events, " ")))
	default:
		k.line("events", "%d enabled: %s ...", n, safe(strings.Join(in.Events[:4], " ")))
	}

	var over, dropped int64
	var busy []string
	for _, c := range in.CPUs {
		over += c.Overrun
		dropped += c.DroppedEvents
		if c.Overrun > 0 {
			busy = append(busy, fmt.Sprintf("cpu%d:%d", c.CPU, c.Overrun))
		}
	}
	line := fmt.Sprintf("%d lost to overruns, %d dropped, over %s", over, dropped, plural(len(in.CPUs), "CPU"))
	if len(busy) > 0 {
		line += " (" + strings.Join(busy, " ") + ")"
	}
	k.line("overruns", "%s", line)
}

func describeList(l *tracefs.FunctionList, empty string) string {
	if l == nil {
		return "unavailable (see below)"
	}
	var parts []string
	if l.Empty {
		parts = append(parts, empty)
	} else if l.Functions > 0 {
		parts = append(parts, fmt.Sprintf("%d functions", l.Functions))
	}
	if n := len(l.PendingModules); n > 0 {
		parts = append(parts, fmt.Sprintf("%d :mod: patterns waiting for their module", n))
	}
	if n := len(l.Commands); n > 0 {
		parts = append(parts, fmt.Sprintf("%d function commands", n))
	}
	return strings.Join(parts, ", ")
}
