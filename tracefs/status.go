package tracefs

import (
	"errors"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
)

// Status is a read-only snapshot of the tracing control plane: what `ftctl status` shows.
type Status struct {
	Tracefs   Mount            `json:"tracefs"`
	Kernel    string           `json:"kernel"`
	Lockdown  Lockdown         `json:"lockdown"`
	Features  []string         `json:"features"`
	Instances []InstanceStatus `json:"instances"`
	Kprobes   *KprobeStatus    `json:"kprobes"` // null when kprobe_events cannot be read
	// Dynamic counts dynamic_events by kind; null when it cannot be read.
	Dynamic     *DynamicStatus `json:"dynamic_events"`
	Unavailable []Unavailable  `json:"unavailable"`
}

// InstanceStatus is the state of one trace array. Fields the kernel would not show are null.
type InstanceStatus struct {
	Name          string        `json:"name"` // "" for the top level
	Tracer        string        `json:"tracer"`
	TracingOn     *bool         `json:"tracing_on"`
	BufferKB      *int          `json:"buffer_size_kb"`       // per CPU; null when CPUs differ
	BufferTotalKB *int          `json:"buffer_total_size_kb"` // all CPUs
	BufferAlloc   bool          `json:"buffer_allocated"`     // false: still the boot-time minimum
	Filter        *FunctionList `json:"filter"`               // null when unreadable
	Notrace       *FunctionList `json:"notrace"`
	Events        []string      `json:"events_enabled"`
	CPUs          []CPUStats    `json:"cpus"`
	Unavailable   []Unavailable `json:"unavailable"`
}

// KprobeStatus summarises kprobe_events.
type KprobeStatus struct {
	Count  int              `json:"count"`
	Owned  int              `json:"owned_by_ftctl"`
	Probes []KprobeListItem `json:"probes"`
}

// KprobeListItem is a probe with its owner.
type KprobeListItem struct {
	ProbeListEntry
	Owner string `json:"owner"` // "ftctl" or "other"
}

// Unavailable names a control file ftctl cannot use on this kernel, and why.
type Unavailable struct {
	File   string `json:"file"`   // relative to the tracing directory
	Class  string `json:"class"`  // "absent", "forbidden", "permission", "disabled", "error"
	Errno  string `json:"errno"`  // "EPERM", "ENOENT"... ("" when not from an errno)
	Reason string `json:"reason"` // in words
}

// why-absent hints for the control files ftctl relies on (kernel configs behind them).
var absentHints = map[string]string{
	"set_ftrace_filter":          "kernel built without CONFIG_DYNAMIC_FTRACE",
	"set_ftrace_notrace":         "kernel built without CONFIG_DYNAMIC_FTRACE",
	"available_filter_functions": "kernel built without CONFIG_DYNAMIC_FTRACE",
	"set_ftrace_pid":             "kernel built without CONFIG_FUNCTION_TRACER",
	"kprobe_events":              "kernel built without CONFIG_KPROBE_EVENTS",
	"dynamic_events":             "kernel built without CONFIG_DYNAMIC_EVENTS (or older than 5.0)",
	"uprobe_events":              "kernel built without CONFIG_UPROBE_EVENTS",
	"error_log":                  "kernel older than 5.2: rejected commands are not explained",
	"instances":                  "kernel without tracing instances",
	"trace_pipe":                 "kernel without the trace_pipe reader",
	"trace_marker":               "kernel without trace_marker",
}

// topControlFiles are probed once for the top level (those that exist only there) and
// instanceControlFiles for every trace array, besides the files status reads anyway
// (set_ftrace_filter, set_event...). Probing = open for read and close; files whose
// open has side effects (trace pauses tracing; trace_pipe claims the reader) are only stat'ed.
var (
	topControlFiles      = []string{"available_filter_functions", "kprobe_events", "dynamic_events", "uprobe_events", "error_log", "instances"}
	instanceControlFiles = []string{"set_ftrace_pid", "trace_pipe", "trace_marker"}
	statOnly             = map[string]bool{"trace_pipe": true, "trace_marker": true, "instances": true}
)

func unavailableFrom(file string, err error) Unavailable {
	u := Unavailable{File: file, Class: "error", Reason: err.Error()}
	var e *Error
	if errors.As(err, &e) {
		u.Reason = e.Reason
		if e.Errno != nil {
			if name := errnoName(e.Errno); name != "" {
				u.Errno = name
			}
		}
		switch e.Class {
		case ErrUnavailable:
			u.Class = "absent"
			if h, ok := absentHints[filepath.Base(file)]; ok {
				u.Reason = h
			}
		case ErrForbidden:
			u.Class = "forbidden"
		case ErrPermission:
			u.Class = "permission"
		case ErrDisabled:
			u.Class = "disabled"
		}
		if u.Reason == "" {
			u.Reason = errnoText(e.Errno)
		}
	}
	return u
}

// Status gathers the snapshot. only, when not empty, restricts the instances to that one
// (which must exist). Failures to read individual files are reported in Unavailable, not
// returned: a restricted kernel gets an accurate description, not an error.
func (f *FS) Status(only string) (*Status, error) {
	st := &Status{
		Tracefs:     f.Mount,
		Kernel:      KernelRelease(),
		Lockdown:    ReadLockdown(),
		Features:    f.DetectFeatures().Names(),
		Instances:   []InstanceStatus{},
		Unavailable: []Unavailable{},
	}
	if st.Features == nil {
		st.Features = []string{}
	}
	top := f.Top()
	// Without even read access to the top level's tracer there is nothing to describe: that is
	// "not root" (EACCES), an error. EPERM (lockdown, policy) is described below instead.
	if err := top.Probe("current_tracer"); errors.Is(err, ErrPermission) {
		return nil, err
	}
	for _, file := range topControlFiles {
		var err error
		if statOnly[file] {
			_, err = top.Stat(file)
		} else {
			err = top.Probe(file)
		}
		if err != nil {
			st.Unavailable = append(st.Unavailable, unavailableFrom(file, err))
		}
	}

	var names []string
	if only != "" {
		if _, err := f.Lookup(only); err != nil {
			return nil, err
		}
		names = []string{only}
	} else {
		inst, err := f.Instances()
		if err != nil {
			st.Unavailable = append(st.Unavailable, unavailableFrom("instances", err))
		}
		names = append([]string{""}, inst...)
	}
	for _, name := range names {
		in, err := f.Instance(name)
		if err != nil {
			// A directory under instances/ that ftctl would not accept as a name
			// (control characters...): report it rather than touch it.
			st.Unavailable = append(st.Unavailable, Unavailable{File: "instances/" + escapeControl(name), Class: "error", Reason: "instance name ftctl does not handle"})
			continue
		}
		st.Instances = append(st.Instances, in.status())
	}

	if b, err := top.ReadFile("kprobe_events"); err == nil {
		ks := &KprobeStatus{Probes: []KprobeListItem{}}
		for _, p := range ParseProbeList(string(b)) {
			it := KprobeListItem{ProbeListEntry: p, Owner: "other"}
			if OwnedGroup(p.Group) {
				it.Owner = "ftctl"
				ks.Owned++
			}
			ks.Probes = append(ks.Probes, it)
		}
		ks.Count = len(ks.Probes)
		st.Kprobes = ks
	}
	if b, err := top.ReadFile("dynamic_events"); err == nil {
		st.Dynamic = CountDynamicEvents(string(b))
	}
	return st, nil
}

func (in *Instance) status() InstanceStatus {
	s := InstanceStatus{Name: in.Name, Events: []string{}, CPUs: []CPUStats{}, Unavailable: []Unavailable{}}
	fail := func(file string, err error) {
		s.Unavailable = append(s.Unavailable, unavailableFrom(in.Rel(file), err))
	}
	read := func(file string) (string, bool) {
		b, err := in.ReadFile(file)
		if err != nil {
			fail(file, err)
			return "", false
		}
		return string(b), true
	}
	if v, ok := read("current_tracer"); ok {
		s.Tracer = strings.TrimSpace(v)
	}
	if v, ok := read("tracing_on"); ok {
		on := strings.TrimSpace(v) == "1"
		s.TracingOn = &on
	}
	if v, ok := read("buffer_size_kb"); ok {
		if kb, alloc, ok := BufferSize(v); ok {
			s.BufferKB, s.BufferAlloc = &kb, alloc
		}
	}
	if v, ok := read("buffer_total_size_kb"); ok {
		if kb, _, ok := BufferSize(v); ok {
			s.BufferTotalKB = &kb
		}
	}
	if v, ok := read("set_ftrace_filter"); ok {
		l := ParseFunctionList(v)
		s.Filter = &l
	}
	if v, ok := read("set_ftrace_notrace"); ok {
		l := ParseFunctionList(v)
		s.Notrace = &l
	}
	if v, ok := read("set_event"); ok {
		for _, line := range strings.Split(v, "\n") {
			if line = strings.TrimSpace(line); line != "" {
				s.Events = append(s.Events, line)
			}
		}
		sort.Strings(s.Events)
	}
	for _, file := range instanceControlFiles {
		var err error
		if statOnly[file] {
			_, err = in.Stat(file)
		} else {
			err = in.Probe(file)
		}
		if err != nil {
			fail(file, err)
		}
	}
	cpus, _ := os.ReadDir(in.Path("per_cpu"))
	for _, c := range cpus {
		n, err := strconv.Atoi(strings.TrimPrefix(c.Name(), "cpu"))
		if err != nil || !strings.HasPrefix(c.Name(), "cpu") {
			continue
		}
		b, err := in.ReadFile(filepath.Join("per_cpu", c.Name(), "stats"))
		if err != nil {
			continue
		}
		s.CPUs = append(s.CPUs, ParseCPUStats(n, string(b)))
	}
	sort.Slice(s.CPUs, func(a, b int) bool { return s.CPUs[a].CPU < s.CPUs[b].CPU })
	return s
}
