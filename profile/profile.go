// Package profile is a tracing setup declared in a file: read and checked offline (load.go,
// validate.go, schema.go), then planned against the running kernel, applied, compared for
// drift, exported and deleted by the engine (engine.go) through session's declared owners.
//
// A profile owns what it creates, named after it: the instance ftctl-owned-NAME, the probe
// group ftctl_owned_NAME and the synthetic events ftctl_owned_NAME_WHAT. `ftctl reset` never
// removes them; `ftctl delete -f` does. In a profile, ${group} stands for the profile's probe
// group (an event of its own probes is ${group}:EVENT, a synthetic event of its
// synthetic:${group}_WHAT), so that the file does not depend on how ftctl names things.
package profile

// APIVersion and Kind head every profile: a later, incompatible schema gets another version.
const (
	APIVersion = "ftctl.dev/v1alpha1"
	Kind       = "TracingProfile"
)

// GroupVar stands for the profile's probe group in event names, trigger texts and synthetic
// event names.
const GroupVar = "${group}"

// Profile is one declared tracing setup.
type Profile struct {
	// APIVersion is the schema's version: ftctl.dev/v1alpha1.
	APIVersion string `json:"apiVersion"`
	// Kind is TracingProfile.
	Kind     string   `json:"kind"`
	Metadata Metadata `json:"metadata"`
	Spec     Spec     `json:"spec"`
}

// Metadata names the profile.
type Metadata struct {
	// Name is the profile's owner name (1 to 32 lower-case letters and digits): its instance
	// is ftctl-owned-NAME, its probe group ftctl_owned_NAME.
	Name string `json:"name"`
	// Description is for people.
	Description string `json:"description,omitempty"`
}

// Spec is what the profile sets up, in its own instance.
type Spec struct {
	// Requires names kernel features the profile needs, refused up front when the kernel
	// lacks one: function, function_graph, hist-triggers, kprobes, kretprobes, uprobes,
	// fprobes, synthetic-events, btf.
	Requires []string `json:"requires,omitempty"`
	// Instance holds the instance's settings.
	Instance Instance `json:"instance,omitempty"`
	// Functions selects the functions the function tracers trace, as globs kept as written
	// and resolved against the running kernel when the profile is planned.
	Functions Functions `json:"functions,omitempty"`
	// Graph is function_graph's roots, the functions it leaves out and its depth: files the
	// kernel keeps at the top level alone (set_graph_function, set_graph_notrace,
	// max_graph_depth), for every function_graph of the system, so that a profile holding
	// them claims the top level (TopLevel).
	Graph Graph `json:"graph,omitempty"`
	// TopLevel is what the profile claims of the top level, which a profile never writes
	// otherwise.
	TopLevel TopLevel `json:"topLevel,omitempty"`
	// Events are the events enabled in the instance, each with an optional filter.
	Events []Event `json:"events,omitempty"`
	// Probes are dynamic events defined in the profile's group, written as for `ftctl probe add` ("p:NAME SYMBOL ARGS", "r:NAME SYMBOL", "f:NAME
	// SYMBOL", "p:NAME /bin/FILE:SYMBOL"...); a group written in a definition is replaced by
	// the profile's. A probe is enabled in the instance when Events names it (${group}:NAME);
	// otherwise it is only defined, as the source of triggers (a trigger fires on an event that
	// is not enabled, and nothing fills the ring).
	Probes []string `json:"probes,omitempty"`
	// Synthetic are synthetic events the profile defines, for its triggers.
	Synthetic []Synthetic `json:"synthetic,omitempty"`
	// Triggers are event triggers written into the instance, in order (a trigger whose action
	// names a synthetic event comes after the one that feeds it).
	Triggers []Trigger `json:"triggers,omitempty"`
	// Uses names dynamic events the profile does not own but uses, as SYSTEM:EVENT: another
	// owner's probe or synthetic event enabled in the profile's instance, a trigger on it or
	// naming it, an eprobe on it. Using one keeps it busy (its owner cannot remove it while
	// the profile holds it), so a profile that uses one without naming it here is refused,
	// and plan shows each one named.
	Uses []string `json:"uses,omitempty"`
	// Flight makes the profile a flight recorder's (docs/guide.md, "Flight recorder"): its
	// instance's ring (of Instance.BufferKB per CPU) is dumped into Flight.Dir when a trigger
	// fires. `ftctl agent` and `ftctl flight arm -f` arm these triggers; `ftctl apply`
	// ignores the section.
	Flight *Flight `json:"flight,omitempty"`
}

// Flight is what dumps a flight recorder's ring, and where the dumps go. The recorder is the
// profile's instance (ftctl-owned-NAME); SIGUSR1 to the arming process always dumps it.
type Flight struct {
	// Dir is the directory the dumps go into, an absolute path (root's or the user's, not
	// writable by others): NAME-TIME.dat, one per dump.
	Dir string `json:"dir"`
	// Rate is the rate limit, a duration ("30s", "5m"): each trigger dumps at most once per
	// Rate, and one that fires sooner makes none (10s when left out).
	Rate string `json:"rate,omitempty"`
	// Keep is how many dumps of the recorder are kept in Dir, the oldest removed first (10
	// when left out; 0: no limit by count).
	Keep *int `json:"keep,omitempty"`
	// MaxMB caps the recorder's dumps in Dir together, in MiB, the oldest removed first (0 or
	// left out: no limit by size). The newest dump is always kept.
	MaxMB int `json:"maxMB,omitempty"`
	// Triggers are what dumps the ring besides SIGUSR1, each one of event, latency or warn.
	Triggers []FlightTrigger `json:"triggers,omitempty"`
}

// FlightTrigger is one condition that dumps the ring: the kernel matches it in the arming
// process's own instance, which sleeps until it does.
type FlightTrigger struct {
	// Event is SYSTEM:EVENT (sched:sched_process_exit, oom:mark_victim): its recording, when it
	// passes Filter, fires the trigger.
	Event string `json:"event,omitempty"`
	// Filter is Event's filter, as for spec.events (comm == "nginx").
	Filter string `json:"filter,omitempty"`
	// Latency is FUNC>DURATION (vfs_read>10ms): a call of FUNC that takes DURATION or longer
	// fires the trigger (entry and return probes, measured in the kernel as ftctl latency
	// does); or FUNC>max (vfs_read>max): a call that takes longer than every call of FUNC
	// since arming (the first call included), which the kernel's hist onmax() tells.
	Latency string `json:"latency,omitempty"`
	// Warn: a kernel WARN fires the trigger (its "WARNING: CPU:" line, seen through the
	// printk:console event).
	Warn bool `json:"warn,omitempty"`
	// Rate is this trigger's rate limit, a duration ("1h"), in place of spec.flight.rate: a
	// trigger that fires often (an event) can dump less often than a rare one (a WARN).
	Rate string `json:"rate,omitempty"`
}

// Instance is the profile's instance's settings. A setting left out is not managed, except
// Tracer and TracingOn, which have defaults.
type Instance struct {
	// BufferKB is the ring buffer's size per CPU, in KiB (buffer_size_kb).
	BufferKB int `json:"bufferKB,omitempty"`
	// Clock is the trace clock (trace_clock): local, global, mono, boot...
	Clock string `json:"clock,omitempty"`
	// Tracer is function, function_graph or nop; by default function when Functions.Filter
	// is given, else nop.
	Tracer string `json:"tracer,omitempty"`
	// TracingOn is whether the instance records (tracing_on); true by default.
	TracingOn *bool `json:"tracingOn,omitempty"`
	// Options are trace options (options/NAME) turned on (true) or off (false); the ones not
	// named are not managed.
	Options map[string]bool `json:"options,omitempty"`
}

// Functions are the function filters of the instance, as kernel globs (set_ftrace_filter
// syntax: "vfs_*", "*:mod:ext4", "!name" is not taken here: use Notrace).
type Functions struct {
	// Filter: the functions traced. Never empty while a function tracer runs.
	Filter []string `json:"filter,omitempty"`
	// Notrace: the functions never traced.
	Notrace []string `json:"notrace,omitempty"`
}

// Event is an event enabled in the instance.
type Event struct {
	// Name is SYSTEM:EVENT, or SYSTEM for all its events; ${group}:EVENT is one of the
	// profile's own probes, synthetic:${group}_NAME one of its synthetic events (enabled
	// once defined).
	Name string `json:"name"`
	// Filter is the event's filter (events/SYSTEM/EVENT/filter), checked against its fields.
	Filter string `json:"filter,omitempty"`
}

// Synthetic is a synthetic event the profile defines: its name is ${group}_Name.
type Synthetic struct {
	// Name: the event's own part of the name (a C identifier); the event is
	// synthetic:${group}_NAME.
	Name string `json:"name"`
	// Fields, as synthetic_events takes them: "u64 lat; pid_t pid".
	Fields string `json:"fields"`
}

// Trigger is an event trigger.
type Trigger struct {
	// Event is SYSTEM:EVENT the trigger is on (${group}:EVENT for the profile's probes,
	// synthetic:${group}_NAME for its synthetic events).
	Event string `json:"event"`
	// Trigger is the trigger's text as the event's trigger file takes it: hist:...,
	// snapshot, traceon, traceoff, stacktrace, enable_event:..., with an optional "if FILTER".
	Trigger string `json:"trigger"`
}

// Graph is what function_graph graphs: its roots and the functions left out, as kernel globs
// kept as written and resolved at plan time (as Functions), and its depth. The tracer is
// function_graph by default when Roots are given.
type Graph struct {
	// Roots: the functions whose calls are graphed, with their callees (set_graph_function).
	Roots []string `json:"roots,omitempty"`
	// Notrace: functions left out of the graph with their callees (set_graph_notrace).
	Notrace []string `json:"notrace,omitempty"`
	// Depth limits the graph's depth (max_graph_depth); 0 or none: no limit.
	Depth int `json:"depth,omitempty"`
}

// set says whether the profile holds a graph.
func (g Graph) set() bool { return len(g.Roots)+len(g.Notrace) > 0 || g.Depth != 0 }

// TopLevel is the profile's claim of the top level.
type TopLevel struct {
	// Claim takes the top level's files the profile's graph needs: set_graph_function,
	// set_graph_notrace, max_graph_depth (the kernel has them at the top level alone), and,
	// where the kernel's instances cannot run function_graph (6.1's), the whole top level
	// (its tracer and tracing_on). What each held is kept before the first write, and put
	// back by delete; while the profile holds them, no `ftctl graph` and no other profile
	// takes them.
	Claim bool `json:"claim,omitempty"`
}
