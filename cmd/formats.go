package cmd

import (
	"github.com/ftctl/ftctl/filters"
	"github.com/ftctl/ftctl/flight"
	"github.com/ftctl/ftctl/probes"
	"github.com/ftctl/ftctl/profile"
	"github.com/ftctl/ftctl/session"
	"github.com/ftctl/ftctl/stream"
	"github.com/ftctl/ftctl/tracefs"
)

// Every JSON format ftctl prints, with the Go type its documents or records have and the
// commands that print it: the one list that `go run ./internal/gendocs` turns into
// docs/json/NAME.schema.json, and that -o json is checked against (a command that prints none
// refuses -o json, exit 2). What each is for people is the command's AnnotationJSON, or, for a
// stream's records, the about text here.
var (
	statusFormat        = document[tracefs.Status]("status", "", "ftctl status")
	mountFormat         = document[mountDoc]("mount", "", "ftctl mount")
	listEventsFormat    = document[[]eventRow]("list-events", "", "ftctl list events")
	listTracersFormat   = document[[]tracerRow]("list-tracers", "", "ftctl list tracers")
	listOptionsFormat   = document[[]tracefs.Option]("list-options", "", "ftctl list options")
	functionsFormat     = document[[]functionDoc]("functions", "", "ftctl functions")
	functionCountFormat = document[functionCountDoc]("functions-count", "`ftctl functions --count`: {\"count\": 42}, the number of records the patterns select.", "ftctl functions")
	filterShowFormat    = document[filterShowDoc]("filter-show", "", "ftctl filter show", "ftctl notrace show")
	filterChangeFormat  = document[[]filters.Result]("filter-change", "",
		"ftctl filter add", "ftctl filter clear", "ftctl filter remove", "ftctl filter set",
		"ftctl notrace add", "ftctl notrace clear", "ftctl notrace remove", "ftctl notrace set")
	instanceListFormat   = document[[]string]("instance-list", "", "ftctl instance list")
	instanceCreateFormat = document[[]instanceDone]("instance-create", "", "ftctl instance create")
	instanceRemoveFormat = document[[]instanceRemoved]("instance-remove", "", "ftctl instance remove")
	probeAddFormat       = document[probeAddDoc]("probe-add", "", "ftctl probe add")
	probeListFormat      = document[[]probeListEntry]("probe-list", "", "ftctl probe list")
	probeRemoveFormat    = document[probeRemoveDoc]("probe-remove", "", "ftctl probe remove")
	probeFormatFormat    = document[probeFormatDoc]("probe-format", "", "ftctl probe format", "ftctl probe fields")
	probeArgsFormat      = document[probes.FuncInfo]("probe-args", "", "ftctl probe args")
	probeSymsFormat      = document[probeSymsDoc]("probe-syms", "", "ftctl probe syms")
	versionFormat        = document[VersionInfo]("version", "", "ftctl version")
	validateFormat       = document[profileReport]("profile-validate", "", "ftctl profile validate")
	planFormat           = document[planDoc]("plan", "", "ftctl plan", "ftctl diff")
	applyFormat          = document[profile.Result]("apply", "", "ftctl apply", "ftctl flight start")
	deleteFormat         = document[deleteDoc]("delete", "", "ftctl delete")
	flightStatusFormat   = document[[]flight.Status]("flight-status", "", "ftctl flight status")
	bootConfigFormat     = document[flight.BootConfig]("flight-boot-config", "", "ftctl flight boot-config")
	resetFormat          = document[resetDoc]("reset", "", "ftctl reset")
	latencyFormat        = document[latencyJSON]("latency", latencyAbout, "ftctl latency")
	histFormat           = document[histJSON]("hist", histAbout, "ftctl hist")

	eventFormat         = records[eventDoc]("event", eventAbout, "ftctl stream", "ftctl trace", "ftctl report")
	streamSummaryFormat = records[stream.Summary]("stream-summary", streamSummaryAbout, "ftctl stream")
	countFormat         = records[countJSON]("count", countAbout, "ftctl count")
	countSummaryFormat  = records[countSummaryJSON]("count-summary", countSummaryAbout, "ftctl count")
	graphFormat         = records[callDoc]("graph", graphAbout, "ftctl graph")
)

// Documents that carry their own version, printed as they are: a profile (apiVersion and kind)
// and the JSON Schema of profiles ($id).
var (
	exportFormat = untagged("profile", "ftctl export")
	_            = untagged("profile-schema", "ftctl profile schema")
)

// mountDoc is `ftctl mount -o json`.
type mountDoc struct {
	Path    string `json:"path"`    // where tracefs is mounted
	Mounted bool   `json:"mounted"` // true when this command mounted it, false when it was mounted already
}

// eventRow is one event of `ftctl list events -o json`.
type eventRow struct {
	System string `json:"system"` // the event's system (sched, syscalls, a probe's group)
	Event  string `json:"event"`  // its name
}

// tracerRow is one tracer of `ftctl list tracers -o json`.
type tracerRow struct {
	Name    string `json:"name"`    // a tracer this kernel has
	Current bool   `json:"current"` // the trace array's current tracer
}

// functionDoc is one record of `ftctl functions -o json`.
type functionDoc struct {
	Name   string `json:"name"`
	Module string `json:"module"`
	Index  int    `json:"index"`
}

// functionCountDoc is `ftctl functions --count -o json`.
type functionCountDoc struct {
	Count int `json:"count"`
}

// filterShowDoc is `ftctl filter show -o json`.
type filterShowDoc struct {
	File           string        `json:"file"`
	Instance       string        `json:"instance"`
	Empty          bool          `json:"empty"`
	Functions      []filters.Key `json:"functions"`
	Commands       []string      `json:"commands"`
	PendingModules []string      `json:"pending_modules"`
}

// instanceRemoved is what `instance remove -o json` says of each NAME.
type instanceRemoved struct {
	Name    string `json:"name"`
	Removed bool   `json:"removed"`
}

// probeAddDoc is `ftctl probe add -o json`.
type probeAddDoc struct {
	Group       string     `json:"group"`
	Event       string     `json:"event"`
	Name        string     `json:"name"`
	Written     string     `json:"written"`
	Definitions []string   `json:"definitions"`
	Appended    bool       `json:"appended"`
	Enabled     bool       `json:"enabled"`
	Instance    string     `json:"instance"`
	Filter      string     `json:"filter"`
	Uprobe      *uprobeDoc `json:"uprobe,omitempty"`
}

// uprobeDoc is a uprobe's place in probe add's JSON.
type uprobeDoc struct {
	Path         string `json:"path"`
	Offset       uint64 `json:"offset"`
	Symbol       string `json:"symbol"`
	SymbolOffset uint64 `json:"symbol_offset"`
	Segment      string `json:"segment"`
	Go           bool   `json:"go"`
}

// probeListEntry is one probe of `ftctl probe list -o json`.
type probeListEntry struct {
	Name string `json:"name"`
	probes.Probe
}

// probeRemoveDoc is `ftctl probe remove -o json`.
type probeRemoveDoc struct {
	Removed []string `json:"removed"`
}

// probeFormatDoc is `ftctl probe format|fields -o json`.
type probeFormatDoc struct {
	Name   string        `json:"name"`
	ID     int           `json:"id"`
	Fields []formatField `json:"fields"`
	Print  string        `json:"print_fmt"`
}

// probeSymsDoc is `ftctl probe syms -o json`.
type probeSymsDoc struct {
	Path      string           `json:"path"`
	Type      string           `json:"type"`
	Go        bool             `json:"go"`
	GoVersion string           `json:"go_version"`
	Segments  []probes.Segment `json:"segments"`
	Functions []probes.ELFFunc `json:"functions"`
}

// deleteDoc is `ftctl delete -o json`.
type deleteDoc struct {
	Profile  string `json:"profile"`
	Instance string `json:"instance"`
	Deleted  bool   `json:"deleted"`
}

// resetDoc is `ftctl reset -o json`.
type resetDoc struct {
	Removed    []*session.Leftover      `json:"removed"`
	Left       []*session.Leftover      `json:"left"`
	Recordings []*session.LeftRecording `json:"recordings"`
	Owners     []*session.Owner         `json:"owners"`
}

// eventDoc is one event record of `ftctl stream|trace|report -o json`, for its JSON Schema:
// stream.AppendJSON encodes the records by hand (once per event), in this order, each member
// only when the line had it.
type eventDoc struct {
	Buffer       *string        `json:"buffer,omitempty"`        // ftctl report of a file holding instances' buffers (trace-cmd record -B NAME): the buffer the event was recorded in, "" for the top level
	TS           *float64       `json:"ts,omitempty"`            // the timestamp: seconds for the time clocks, the raw count for counter, uptime and x86-tsc, as the kernel printed it
	CPU          *int           `json:"cpu,omitempty"`           // the CPU the event was recorded on
	Comm         *string        `json:"comm,omitempty"`          // the task's name as the kernel saved it (<...> when it had none)
	PID          *int           `json:"pid,omitempty"`           // the task
	TGID         *int           `json:"tgid,omitempty"`          // its thread group, with the record-tgid option when the kernel knew it
	Flags        *string        `json:"flags,omitempty"`         // the irq-info flags (d..2.), absent with irq-info off
	Event        string         `json:"event"`                   // function, the probe's or tracepoint's own name, marker, stack, user_stack, graph, lost or raw
	Func         *string        `json:"func,omitempty"`          // a function event's function (function_graph: the function entered or left)
	FuncOffset   *string        `json:"func_offset,omitempty"`   // its offset, with sym-offset
	FuncModule   *string        `json:"func_module,omitempty"`   // its module, when printed
	FuncAddr     *string        `json:"func_addr,omitempty"`     // its address, with sym-addr
	Parent       *string        `json:"parent,omitempty"`        // a function event's caller
	ParentOffset *string        `json:"parent_offset,omitempty"` // the caller's offset, with sym-offset
	ParentModule *string        `json:"parent_module,omitempty"` // the caller's module, when printed
	ParentAddr   *string        `json:"parent_addr,omitempty"`   // the caller's address, with sym-addr
	Repeats      *int64         `json:"repeats,omitempty"`       // with func-no-repeats: how many times the call repeated
	LastTS       *float64       `json:"last_ts,omitempty"`       // with func-no-repeats: the last repeat's timestamp
	Probe        *string        `json:"probe,omitempty"`         // a probe's location as printed; for a return probe, the probed function
	ReturnTo     *string        `json:"return_to,omitempty"`     // a return probe's caller
	Args         map[string]any `json:"args,omitempty"`          // a probe's fields: numbers as numbers, strings as strings, (fault) as null, arrays as arrays, anything else as the string printed
	Text         *string        `json:"text,omitempty"`          // the arguments when they cannot be split; the text of markers, tracepoints and raw lines
	Fields       map[string]any `json:"fields,omitempty"`        // a tracepoint read from trace_pipe_raw: its own fields as recorded, in format order
	Stack        []string       `json:"stack,omitempty"`         // a stack event's frames, innermost first
	// function_graph: entry, exit or call (a leaf, entry and exit in one)
	Type       *string  `json:"type,omitempty" jsonschema:"enum=entry,enum=exit,enum=call"`
	Depth      *int     `json:"depth,omitempty"`                                     // function_graph: the call depth
	DurationUS *float64 `json:"duration_us,omitempty"`                               // function_graph: the call's duration in µs, at its exit or call
	Comment    *string  `json:"comment,omitempty"`                                   // function_graph: a comment line (a marker or event inside the graph)
	Lost       *int64   `json:"lost,omitempty" jsonschema:"oneof_type=integer;null"` // a lost record: the events lost on its CPU, null when the kernel did not count
	Raw        *string  `json:"raw,omitempty"`                                       // with --raw, the line as read
}

// callDoc is one call of `ftctl graph -o json`, for its JSON Schema (stream.AppendCallJSON
// encodes them by hand); cpu, pid and comm are the top-level call's.
type callDoc struct {
	Func       string    `json:"func"`                  // the function called
	DurationUS *float64  `json:"duration_us,omitempty"` // how long the call took, in µs (none when unfinished)
	CPU        *int      `json:"cpu,omitempty"`         // the top-level call's CPU
	PID        *int      `json:"pid,omitempty"`         // the top-level call's task
	Comm       *string   `json:"comm,omitempty"`        // the top-level call's program name
	Retval     *int64    `json:"retval,omitempty"`      // the return value, where the kernel records it (CONFIG_FUNCTION_GRAPH_RETVAL)
	EntryLost  bool      `json:"entry_lost,omitempty"`  // its entry was not recorded: it began before the session, its record was lost, or --threshold
	Unfinished bool      `json:"unfinished,omitempty"`  // still running when the session ended
	Calls      []callDoc `json:"calls"`                 // what it called, in order
}

// What the formats of the session commands are, for people (their commands have no AnnotationJSON).
const (
	eventAbout = `One object per event and line, its members in this order and only when the line had them:
"buffer" (ftctl report of a file holding instances' buffers, trace-cmd record -B NAME: the buffer
the event was recorded in, "" for the top level); "ts" (the timestamp as a number: seconds for the
time clocks, the raw count for counter, uptime and x86-tsc, as the kernel printed it); "cpu",
"comm" (the kernel's saved name, <...> when it had none), "pid"; "tgid" (with the record-tgid
option, when the kernel knew it); "flags" (the irq-info flags, d..2., absent with irq-info off);
"event" (function, the probe's or tracepoint's own name, marker, stack, user_stack, graph, lost or
raw). Then, by kind: "func" and "parent" for function events, each with "_offset" (sym-offset),
"_module" and "_addr" (sym-addr) when printed, and "repeats" and "last_ts" with func-no-repeats;
"probe" (the location as printed; for a return probe the probed function, with "return_to" the
caller) and "args" (the probe's fields: numbers as numbers, strings as strings, (fault) as null,
arrays as arrays, anything else as the string printed), or "text" when the arguments cannot be
split; "stack" (the frames, innermost first); "type" (entry, exit or call), "func", "depth",
"duration_us" and "comment" for function_graph; "text" for markers, tracepoints and raw lines,
and "fields" for a tracepoint read from trace_pipe_raw (its own fields as recorded, in format
order); "raw", with --raw, the line as read. A lost record is {"event": "lost", "cpu": 1, "lost":
1849} ("lost" null when the kernel did not count). Strings are valid UTF-8 (invalid bytes become
U+FFFD) with every control character escaped.`

	streamSummaryAbout = `With --summary, the last record of ftctl stream: {"event": "summary", "lines": N, "events": N,
"shown": N, "raw": N, "own": N, "undecoded": N, "seconds": 2.0, "end": "eof", "reader":
"trace_pipe_raw", "lost_reported": N, "lost_uncounted": N, "overrun": N, "dropped": N, "cpus":
[{"cpu": 0, "overrun": N, "dropped": N, "reported": N}]}: "end" is count, duration, interrupted
or eof; "lines" counts the lines trace_pipe gave (or, read from trace_pipe_raw, would have given);
"reader" is trace_pipe or trace_pipe_raw ("reader_why" says why auto did not take
trace_pipe_raw); "overrun" and "dropped" are the increases of the kernel's counters while
streaming (null when per_cpu stats could not be read); "lost_reported" the sum of the LOST lines;
"own" the events of ftctl's own threads left out (--include-self keeps them); "undecoded" the
events read from the kernel but not decoded when the stream ended (interrupted with more read
than 0.3 s decodes: lost, as overruns are).`

	countAbout = `One object per line, per function and interval, in the order printed (most called first):
{"interval": 1, "time": "2026-11-25T15:23:31.49554842Z", "seconds": 1.012, "func": "vfs_read",
"count": 409, "method": "hist"}. interval counts from 1 (1 without --interval), time is
when the interval ended, seconds its length, method hist or stream (with the stream
method and lost events, the counts are lower bounds, said on stderr). A function that a pattern
names exactly (no wildcard) has its object in every interval, "count": 0 included, --top or
not; a glob gives only the functions it selected that were called. Once the count ended (its
--duration, the command's exit, a signal), a last object sums it up:
{"summary": true, "intervals": 1, "time": "2026-11-25T15:23:31.49554842Z", "seconds": 1.012,
"functions": 2, "called": 1, "calls": 409, "method": "hist", "lower_bound": false}: seconds
the whole count's, functions how many the patterns selected, called how many of them were
called, calls every call (--top aside), lower_bound true when the stream lost events. A
script tells "0 calls" (a summary, and a 0 for each function it named) from "did not run" (no
summary).`

	histAbout = `{"event": "syscalls:sys_enter_read", "trigger": "hist:keys=common_pid.execname:vals=hitcount,count:...",
"rows": [{"keys": [{"name": "common_pid", "text": "head", "num": 160}], "values": {"hitcount": 50,
"count": 204800}}], "hits": 54, "entries": 2, "dropped": 0}: trigger as the kernel lists it;
each row's keys in the order given, text as the kernel printed it (a program name, a symbol, a
syscall, 2^5 for a .log2 bucket) and num its number when it has one; values by name
(hitcount always); hits, entries and dropped the kernel's totals. With --interval, one
object per line, with "interval" (from 1) and "time" first.`

	latencyAbout = `{"func": "vfs_read", "buckets": [{"le_us": 4, "count": 168}, {"le_us": 8, "count": 29}],
"count": 198, "dropped": 0}: a bucket holds the durations above half its le_us and up to it
(µs); dropped counts what the kernel's table could not hold. With --by comm or --by pid,
"groups" adds one histogram per program name or task: [{"comm": "dd", "buckets": [...],
"count": 198}] (or "pid"). "correction", unless --no-correct: the probes' own cost taken off
each duration, {"bias_us": 9, "func": "__task_pid_nr_ns", "probes": "fprobe", "calls": 2000,
"measured": "...", "below": 12} (the median of calls of a function that does next to nothing,
measured once per boot); a call at or below it is in the first bucket, and "below" counts the
calls shorter than it (more than half: the correction is too large for the host now).`

	graphAbout = `One object per line and top-level call, once it returned: {"func": "ksys_read",
"duration_us": 758.775, "cpu": 1, "pid": 161, "comm": "dd", "calls": [{"func": "fdget_pos",
"duration_us": 53.550, "calls": []}, {"func": "vfs_read", "duration_us": 90.446, "calls": []}]},
with "retval" where the kernel records return values (CONFIG_FUNCTION_GRAPH_RETVAL; not
Debian's), "entry_lost": true for a call whose entry was not recorded (it began before the
session, its record was lost, or --threshold) and "unfinished": true, without a duration, for
one still running when the session ended.`

	countSummaryAbout = `The last record of ftctl count -o json, once the count ended: see the count format.`
)
