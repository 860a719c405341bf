package tracefs

import (
	"sort"
	"strings"
)

// Features is what this kernel's tracing supports, detected from the tracefs README (the
// kernel's own mini-HOWTO, which lists the probe grammar it accepts) and from which files
// exist. Never from version numbers: distributions backport, and configs differ.
type Features struct {
	Instances     bool // instances/ (mkdir creates a trace array)
	ErrorLog      bool // error_log: the kernel explains rejected commands (5.2)
	KprobeEvents  bool // kprobe_events (CONFIG_KPROBE_EVENTS)
	UprobeEvents  bool // uprobe_events
	DynamicEvents bool // dynamic_events (5.0)
	DynamicFtrace bool // set_ftrace_filter exists (CONFIG_DYNAMIC_FTRACE)
	// IndexWrites: set_ftrace_filter accepts line numbers of available_filter_functions
	// (see FS.IndexWrites); without them the filter swap writes names.
	IndexWrites    bool
	FtracePid      bool // set_ftrace_pid
	FunctionFork   bool // options/function-fork (set_ftrace_pid follows children)
	RecordTgid     bool // options/record-tgid
	FunctionTracer bool // "function" in available_tracers
	FunctionGraph  bool // "function_graph" in available_tracers
	TracefsGid     bool // the README documents the gid= mount option (6.3)
	// HistTriggers: the README documents hist triggers (CONFIG_HIST_TRIGGERS); an event takes
	// one when its directory also has a hist file.
	HistTriggers bool
	// SyntheticEvents: synthetic_events exists (CONFIG_SYNTH_EVENTS).
	SyntheticEvents bool
	// FunctionProfiler: function_profile_enabled exists (CONFIG_FUNCTION_PROFILER; none of the
	// VM kernels has it).
	FunctionProfiler bool
	Probe            ProbeFeatures
	Hist             HistFeatures
}

// HistFeatures is the hist trigger grammar this kernel announces in its README.
type HistFeatures struct {
	// Modifiers of a key or value ("hex", "sym", ..., "buckets"; 6.12 adds "percent" and
	// "graph"): see HistModifiers.
	Modifiers []string
	// CommonStacktrace: the stack key is named common_stacktrace (6.5); before, only
	// "stacktrace" (seen: 6.1 refuses common_stacktrace; 6.12 takes both as one).
	CommonStacktrace bool
	// OnmaxTrace: the handlers and actions combine freely (5.1, "tracing: Generalize hist
	// trigger onmax and save action"): onmax(var) can trace(<synthetic_event>,...), which the
	// README announces as a handler and an action of their own (before, onmax only saved).
	OnmaxTrace bool
}

// ParseHistReadme reads the hist trigger grammar out of the tracefs README text; the zero value
// when the kernel has no hist triggers.
func ParseHistReadme(readme string) HistFeatures {
	return HistFeatures{
		Modifiers:        HistModifiers(readme),
		CommonStacktrace: strings.Contains(readme, "'common_stacktrace'"),
		OnmaxTrace:       strings.Contains(readme, "onmax(var) ") && strings.Contains(readme, "trace(<synthetic_event>,param list)"),
	}
}

// ProbeFeatures is the kprobe_events grammar this kernel accepts, read off the README's
// "kprobe_events" / "dynamic_events" section (kernel/trace/trace.c readme_msg).
type ProbeFeatures struct {
	Kprobe       bool // kprobes' place ([<module>:]<symbol>...): CONFIG_KPROBE_EVENTS
	MaxActive    bool // r[maxactive]
	ReturnSuffix bool // SYM%return for kretprobes (5.11)
	ArgN         bool // $arg<N> (CONFIG_HAVE_FUNCTION_ARG_ACCESS_API)
	BTFArgs      bool // bare parameter names (CONFIG_PROBE_EVENTS_BTF_ARGS)
	BTFFields    bool // <argname>->field
	RetArgs      bool // "kernel return probes support: $retval, $arg<N>, $comm"
	Comm         bool // $comm
	Imm          bool // \imm-value
	ImmString    bool // \"imm-string"
	Char         bool // char type
	Ustring      bool // ustring type
	Symstr       bool // symstr type (6.2)
	PdPD         bool // %pd/%pD types
	Bitfield     bool // b<bit-width>@<bit-offset>/<container-size>
	Array        bool // <type>[<array-size>]
	Fprobe       bool // f[:[<group>/][<event>]] (fprobe events)
	Tprobe       bool // t[:[<group>/][<event>]] (tracepoint probes)
	Eprobe       bool // e[:[<group>/][<event>]] (event probes)
}

// ParseReadme reads the probe grammar out of the tracefs README text, plus the few other
// things the README announces.
func ParseReadme(readme string) (ProbeFeatures, bool) {
	has := func(s string) bool { return strings.Contains(readme, s) }
	p := ProbeFeatures{
		Kprobe:       has("place: [<module>:]<symbol>"),
		MaxActive:    has("r[maxactive]"),
		ReturnSuffix: has("<symbol>[+<offset>]%return"),
		ArgN:         has("$arg<N>"),
		BTFArgs:      has("<argname>"),
		BTFFields:    has("<argname>[->field"),
		RetArgs:      has("return probes support: $retval, $arg<N>"),
		Comm:         has("$comm"),
		Imm:          has(`\imm-value`),
		ImmString:    has(`\"imm-string"`),
		Char:         has(" char, "),
		Ustring:      has("ustring"),
		Symstr:       has("symstr"),
		PdPD:         has("%pd/%pD"),
		Bitfield:     has("b<bit-width>@<bit-offset>/<container-size>"),
		Array:        has(`<type>\[<array-size>\]`),
		Fprobe:       has("f[:[<group>/][<event>]]"),
		Tprobe:       has("t[:[<group>/][<event>]]"),
		Eprobe:       has("e[:[<group>/][<event>]]"),
	}
	return p, has("gid=<gid>")
}

// DetectFeatures inspects the tracefs: README, file presence, available_tracers. It reads
// only; missing or unreadable files simply mean the feature is absent.
func (f *FS) DetectFeatures() Features {
	top := f.Top()
	ft := Features{
		Instances:     top.Has("instances"),
		ErrorLog:      top.Has("error_log"),
		KprobeEvents:  top.Has("kprobe_events"),
		UprobeEvents:  top.Has("uprobe_events"),
		DynamicEvents: top.Has("dynamic_events"),
		DynamicFtrace: top.Has("set_ftrace_filter"),
		FtracePid:     top.Has("set_ftrace_pid"),
		FunctionFork:  top.Has("options/function-fork"),
		RecordTgid:    top.Has("options/record-tgid"),

		SyntheticEvents:  top.Has("synthetic_events"),
		FunctionProfiler: top.Has("function_profile_enabled"),
	}
	ft.IndexWrites = f.IndexWrites()
	if b, err := top.ReadFile("README"); err == nil {
		readme := string(b)
		ft.Probe, ft.TracefsGid = ParseReadme(readme)
		ft.HistTriggers = strings.Contains(readme, "hist trigger")
		ft.Hist = ParseHistReadme(readme)
	}
	if b, err := top.ReadFile("available_tracers"); err == nil {
		for _, t := range strings.Fields(string(b)) {
			switch t {
			case "function":
				ft.FunctionTracer = true
			case "function_graph":
				ft.FunctionGraph = true
			}
		}
	}
	return ft
}

// IndexWrites is Features.IndexWrites without reading the README: set_ftrace_filter takes line
// numbers of available_filter_functions (5.1). Nothing announces it; error_log arrived one release
// later (5.2), so both files present imply it. The filter commands ask this on every run.
func (f *FS) IndexWrites() bool {
	top := f.Top()
	return top.Has("set_ftrace_filter") && top.Has("error_log")
}

// Names lists the present features as stable identifiers (for `ftctl status` and -o json).
func (ft Features) Names() []string {
	var out []string
	add := func(ok bool, name string) {
		if ok {
			out = append(out, name)
		}
	}
	add(ft.Instances, "instances")
	add(ft.ErrorLog, "error-log")
	add(ft.KprobeEvents, "kprobe-events")
	add(ft.UprobeEvents, "uprobe-events")
	add(ft.DynamicEvents, "dynamic-events")
	add(ft.DynamicFtrace, "dynamic-ftrace")
	add(ft.IndexWrites, "filter-index-writes")
	add(ft.FtracePid, "ftrace-pid")
	add(ft.FunctionFork, "function-fork")
	add(ft.RecordTgid, "record-tgid")
	add(ft.FunctionTracer, "function-tracer")
	add(ft.FunctionGraph, "function-graph-tracer")
	add(ft.TracefsGid, "tracefs-gid-option")
	add(ft.HistTriggers, "hist-triggers")
	add(ft.SyntheticEvents, "synthetic-events")
	add(ft.FunctionProfiler, "function-profiler")
	add(ft.Hist.OnmaxTrace, "hist-onmax-trace")
	p := ft.Probe
	if ft.KprobeEvents || ft.DynamicEvents {
		add(p.MaxActive, "probe-maxactive")
		add(p.ReturnSuffix, "probe-%return")
		add(p.ArgN, "probe-$argN")
		add(p.BTFArgs, "probe-btf-args")
		add(p.BTFFields, "probe-btf-fields")
		add(p.RetArgs, "probe-return-args")
		add(p.Comm, "probe-$comm")
		add(p.Imm, "probe-imm")
		add(p.ImmString, "probe-imm-string")
		add(p.Char, "probe-type-char")
		add(p.Ustring, "probe-type-ustring")
		add(p.Symstr, "probe-type-symstr")
		add(p.PdPD, "probe-type-%pd")
		add(p.Bitfield, "probe-bitfields")
		add(p.Array, "probe-arrays")
		add(p.Fprobe, "fprobe-events")
		add(p.Tprobe, "tprobe-events")
		add(p.Eprobe, "eprobe-events")
	}
	sort.Strings(out)
	return out
}

// HistModifiers lists the field modifiers of hist triggers the README announces ("hex", "sym",
// "sym-offset", "execname", "syscall", "log2", "buckets", "usecs"; 6.12 adds "percent" and
// "graph"), read off the list that follows "modifiers to the field name" in the hist trigger
// section (kernel/trace/trace.c readme_msg, CONFIG_HIST_TRIGGERS). None when the kernel has no
// hist triggers.
func HistModifiers(readme string) []string {
	_, rest, ok := strings.Cut(readme, "to the field name, as applicable:")
	if !ok {
		return nil
	}
	var out []string
	started := false
	for _, line := range strings.Split(rest, "\n") {
		line = strings.TrimSpace(line)
		if line == "" {
			if started {
				break
			}
			continue
		}
		if !strings.HasPrefix(line, ".") {
			break
		}
		started = true
		name := strings.Fields(line[1:])[0]
		name, _, _ = strings.Cut(name, "=")
		out = append(out, name)
	}
	return out
}
