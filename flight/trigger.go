package flight

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/ftctl/ftctl/count"
	"github.com/ftctl/ftctl/session"
	"github.com/ftctl/ftctl/tracefs"
)

// ErrTrigger marks a trigger refused before anything was changed.
var ErrTrigger = errors.New("invalid trigger")

// Trigger kinds. Every kind but KindSignal is an event the kernel matches against a filter in
// the arming process's own instance: the process sleeps in poll(2) on that instance's
// trace_pipe, and the kernel wakes it only when a matching event was recorded.
const (
	KindSignal  = "signal"  // SIGUSR1
	KindEvent   = "event"   // SYSTEM:EVENT [if FILTER]
	KindLatency = "latency" // FUNC>DURATION or FUNC>max: a function's duration, measured by hist triggers
	KindWarn    = "warn"    // a kernel WARN, seen in its printk:console line
)

// warnFilter matches the line a kernel WARN prints ("WARNING: CPU: 0 PID: 1 at ..." from
// __warn in kernel/panic.c), as printk:console records it: the console tracepoint fires from
// printk_sprint for every message stored (5.19+, not only those a console prints), with the
// text, the level prefix and the trailing newline stripped. No tracepoint fires on a WARN
// itself (the error_report events are KASAN's and KFENCE's), and traceoff_on_warning only turns
// the top level's tracing off, which nothing can wait for. A root process writing such a line
// to /dev/kmsg is taken for a WARN as well.
const warnFilter = `msg ~ "WARNING: CPU: *"`

// Trigger is one condition that makes an armed recorder dump, and what it did.
type Trigger struct {
	Kind string `json:"kind"`
	// Spec is the trigger as given: "SIGUSR1", `sched:sched_process_exit if comm == "nginx"`,
	// "vfs_read>10ms", "warn".
	Spec string `json:"spec"`
	// Event is what the arming instance records (SYSTEM:EVENT), Filter its filter.
	Event  string `json:"event,omitempty"`
	Filter string `json:"filter,omitempty"`
	// Rate is its own rate limit, as the profile gave it, in place of the arming's (absent:
	// the arming's)
	Rate string `json:"rate,omitempty"`
	// Fired counts the times it fired; Dumps the dumps it made (fires read together make one;
	// a fire within the rate limit of its last dump makes none, nor does a dump that failed).
	Fired     int       `json:"fired"`
	Dumps     int       `json:"dumps"`
	LastFired time.Time `json:"last_fired,omitzero"`
	LastDump  time.Time `json:"last_dump,omitzero"`

	rate      time.Duration // Rate, parsed (0: the arming's)
	fn        string        // a latency's function
	threshold time.Duration // a latency's threshold
	max       bool          // a latency's: on each new maximum (FUNC>max), not a threshold
}

// SignalTrigger is the trigger of SIGUSR1.
func SignalTrigger() *Trigger { return &Trigger{Kind: KindSignal, Spec: "SIGUSR1"} }

// WarnTrigger is the trigger of a kernel WARN (warnFilter).
func WarnTrigger() *Trigger {
	return &Trigger{Kind: KindWarn, Spec: "warn", Event: "printk:console", Filter: warnFilter}
}

// ParseEventTrigger reads "SYSTEM:EVENT [if FILTER]". The filter is checked against the
// event's format when the trigger is armed.
func ParseEventTrigger(s string) (*Trigger, error) {
	ev, filter, _ := strings.Cut(strings.TrimSpace(s), " if ")
	ev, filter = strings.TrimSpace(ev), strings.TrimSpace(filter)
	sys, name, ok := strings.Cut(ev, ":")
	if !ok || !eventWord(sys) || !eventWord(name) {
		return nil, fmt.Errorf("%w: --on %s: want SYSTEM:EVENT [if FILTER] (one event, no wildcard)", ErrTrigger, strconv.Quote(s))
	}
	return &Trigger{Kind: KindEvent, Spec: s, Event: ev, Filter: filter}, nil
}

// eventWord says whether s can be an event's or a system's name.
func eventWord(s string) bool {
	return s != "" && strings.Trim(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_.-") == ""
}

// ParseLatencyTrigger reads "FUNC>DURATION" (vfs_read>10ms): a call of FUNC that takes
// DURATION or longer fires it; or "FUNC>max": a call of FUNC that takes longer than every call
// before it since arming (the first call included). The kernel measures every call (an entry
// and a return probe, hist triggers computing the time between them into a synthetic event, as
// `ftctl latency` does); the synthetic event's filter compares it to DURATION, or its hist
// trigger's onmax() sends each new maximum to a second synthetic event: only a slow call, or
// a new maximum, wakes the arming process.
func ParseLatencyTrigger(s string) (*Trigger, error) {
	fn, d, ok := strings.Cut(s, ">")
	fn, d = strings.TrimSpace(fn), strings.TrimSpace(d)
	if ok && d == MaxLatency && fn != "" && eventWord(fn) && !strings.ContainsAny(fn, ".-") {
		return &Trigger{Kind: KindLatency, Spec: s, fn: fn, max: true}, nil
	}
	th, err := time.ParseDuration(d)
	if !ok || fn == "" || !eventWord(fn) || strings.ContainsAny(fn, ".-") || err != nil || th < time.Microsecond {
		return nil, fmt.Errorf("%w: --on-latency %s: want FUNC>DURATION, a function and a duration of 1us or more (vfs_read>10ms), or FUNC>max (a new maximum)", ErrTrigger, strconv.Quote(s))
	}
	return &Trigger{Kind: KindLatency, Spec: s, fn: fn, threshold: th}, nil
}

// MaxLatency is the duration of a latency trigger that fires on each new maximum (FUNC>max).
const MaxLatency = "max"

// ArmState is what an arming process says of itself, in the recorder's state directory
// (arm.json), for `ftctl flight status`.
type ArmState struct {
	PID      int        `json:"pid"`
	Instance string     `json:"instance"` // the arming process's own instance (ftctl-PID-ID)
	Since    time.Time  `json:"since"`
	Dir      string     `json:"dir"` // where the dumps go
	Rate     string     `json:"rate"`
	Keep     int        `json:"keep"`
	MaxBytes int64      `json:"max_bytes"`
	Triggers []*Trigger `json:"triggers"`
	// Alive: the process and its instance are there (status fills it in).
	Alive bool `json:"alive"`
}

const armFile = "arm.json"

// Armed is an arming process's session: its own instance, in which the triggers' events are
// enabled with their filters, and the trace_pipe it sleeps on.
type Armed struct {
	Name    string
	Session *session.Session
	State   ArmState
	fs      *tracefs.FS
	pipe    *tracefs.Pipe
	buf     []byte
	partial []byte // a line's start, its end not read yet
}

// Arm sets the arming session of recorder name up (id names it; triggers are all of the
// process's, the signal's included) and records its state for status. Nothing is left on
// failure. The caller holds the tracefs lock; Begin starts the triggers' recording.
func Arm(ctx context.Context, fs *tracefs.FS, id session.ID, name string, st ArmState, notice func(string, ...any)) (*Armed, error) {
	if _, err := recorder(fs, name); err != nil {
		return nil, err
	}
	spec := session.Spec{EventFilters: map[string]string{}}
	for _, t := range st.Triggers {
		switch t.Kind {
		case KindLatency:
			if spec.Dynamic != nil {
				return nil, fmt.Errorf("%w: one --on-latency per arming process", ErrTrigger)
			}
			l, err := latencySetup(fs, id, t)
			if err != nil {
				return nil, err
			}
			spec.Dynamic, spec.Triggers = l.Dynamic, l.Triggers
		case KindSignal:
			continue
		}
		spec.Events = append(spec.Events, t.Event)
		if t.Filter != "" {
			spec.EventFilters[t.Event] = t.Filter
		}
	}
	a := &Armed{Name: name, fs: fs, State: st, buf: make([]byte, 64<<10)}
	if len(spec.Events) == 0 {
		return a, a.save()
	}
	s, err := session.New(fs, id, spec)
	if err != nil {
		return nil, err
	}
	s.Notice = notice
	if err := s.Start(ctx); err != nil { // (undone by Start on failure)
		return nil, latencyRefused(fs, st.Triggers, err)
	}
	a.Session, a.State.Instance = s, s.Instance.Name
	return a, a.save()
}

// latencySetup is the set-up of latency trigger t in session id, and sets t's event and filter:
// the synthetic event of each call's duration (in µs) filtered by the threshold, and no table;
// or (FUNC>max) the synthetic event of each new maximum, which the kernel must be able to send
// (tracefs.HistFeatures.OnmaxTrace). The probes are those of `ftctl latency` on this kernel.
func latencySetup(fs *tracefs.FS, id session.ID, t *Trigger) (count.Latency, error) {
	ft := fs.DetectFeatures()
	fprobes := count.LatencyFprobes(ft)
	if !t.max {
		l := count.LatencySetup(id, t.fn, fprobes, 0, "")
		l.Triggers = l.Triggers[:2] // the duration into the synthetic event; no table
		t.Event = "synthetic:" + l.Synthetic
		t.Filter = "lat >= " + strconv.FormatInt(t.threshold.Microseconds(), 10)
		return l, nil
	}
	if !ft.Hist.OnmaxTrace {
		return count.Latency{}, &tracefs.Error{Op: "read", Path: fs.Path("README"), Class: tracefs.ErrUnavailable,
			Reason: "this kernel's hist triggers cannot send a new maximum to a synthetic event (onmax(var).trace(), 5.1), which --on-latency FUNC>max needs"}
	}
	l := count.LatencyMaxSetup(id, t.fn, fprobes)
	t.Event = "synthetic:" + l.Max
	return l, nil
}

// latencyRefused is err, the arming session's failure, as ErrTrigger when the kernel refused a
// latency trigger's probe because its function is not one it can trace (as `ftctl latency`
// says it: the index of traceable functions read only then).
func latencyRefused(fs *tracefs.FS, ts []*Trigger, err error) error {
	for _, t := range ts {
		if t.Kind != KindLatency {
			continue
		}
		if lerr := count.LatencyFuncRefused(fs.Top(), t.fn, err); errors.Is(lerr, count.ErrLatencyFunc) {
			return fmt.Errorf("%w: --on-latency %s: %w", ErrTrigger, strconv.Quote(t.Spec), lerr)
		}
	}
	return err
}

// Begin turns the arming instance's recording on and opens the pipe Next sleeps on.
func (a *Armed) Begin(ctx context.Context) error {
	if a.Session == nil {
		return nil
	}
	if err := a.Session.Begin(); err != nil {
		return err
	}
	p, err := a.Session.Instance.OpenPipe(ctx)
	if err != nil {
		return err
	}
	p.NoEOF() // tracing is on until Disarm: no end of file to look for, no timeout in poll
	a.pipe = p
	return nil
}

// Next sleeps until the kernel records a trigger's event (in poll(2): no CPU is used while
// nothing comes), then returns the triggers whose events were read, one per event, in order.
// It returns ctx.Err() when ctx ends, closing the pipe (a session whose wait ended is not
// waited on again: it is disarmed, or replaced and disarmed). Without event triggers it only
// waits for ctx.
func (a *Armed) Next(ctx context.Context) ([]*Trigger, error) {
	if a.pipe == nil {
		<-ctx.Done()
		return nil, ctx.Err()
	}
	// The pipe was opened with the session's context (Begin), not ctx: Close is what unblocks
	// its Read for ctx.
	stop := context.AfterFunc(ctx, func() { a.pipe.Close() })
	defer stop()
	for {
		n, err := a.pipe.Read(a.buf)
		if err != nil {
			if ctx.Err() != nil {
				return nil, ctx.Err()
			}
			return nil, err
		}
		data := append(a.partial, a.buf[:n]...)
		var fired []*Trigger
		for {
			line, rest, ok := bytes.Cut(data, []byte("\n"))
			if !ok {
				break
			}
			data = rest
			if t := a.match(line); t != nil {
				fired = append(fired, t)
			}
		}
		if len(data) > 4096 { // no event line is that long: drop it rather than grow
			data = nil
		}
		a.partial = append([]byte(nil), data...)
		if len(fired) > 0 {
			return fired, nil
		}
	}
}

// lineEvent matches a trace_pipe line up to its event's name (trace_output.c: "%16s-%-7d " the
// comm, of at most 15 bytes, and the pid; the tgid with record-tgid; "[%03d] " the CPU; the
// irq-info flags; the time stamp): the name is taken where the kernel put it, never from text
// further on (a message, a comm) that looks like one.
var lineEvent = regexp.MustCompile(`^.{1,16}?-\d+ +(?:\( *[\d-]+\) +)?\[\d+\] +(?:\S+ +)?\d+\.\d+: ([A-Za-z0-9_.]+):`)

// eventOf is the event's name in a trace_pipe line, "" when it shows none.
func eventOf(line []byte) string {
	m := lineEvent.FindSubmatch(line)
	if m == nil {
		return ""
	}
	return string(m[1])
}

// match is the trigger whose event a trace_pipe line shows.
func (a *Armed) match(line []byte) *Trigger {
	ev := eventOf(line)
	for _, t := range a.State.Triggers {
		if _, name, _ := strings.Cut(t.Event, ":"); ev != "" && name == ev {
			return t
		}
	}
	return nil
}

// Fire records that t fired at now, and says whether it dumps: not within rate of t's last dump.
func (a *Armed) Fire(t *Trigger, now time.Time, rate time.Duration) bool {
	t.Fired++
	t.LastFired = now
	if !t.LastDump.IsZero() && now.Sub(t.LastDump) < rate {
		return false
	}
	t.LastDump = now
	return true
}

// Dumped records a dump t made, and saves the state.
func (a *Armed) Dumped(t *Trigger) error {
	t.Dumps++
	return a.save()
}

// save writes the state for status, whole (a temporary file renamed).
func (a *Armed) save() error {
	b, err := json.MarshalIndent(a.State, "", "  ")
	if err != nil {
		return err
	}
	f, err := os.CreateTemp(dir(a.fs, a.Name), armFile+".tmp-*")
	if err != nil {
		return err
	}
	_, werr := f.Write(append(b, '\n'))
	if err := errors.Join(werr, f.Close()); err != nil {
		os.Remove(f.Name())
		return err
	}
	return os.Rename(f.Name(), filepath.Join(dir(a.fs, a.Name), armFile))
}

// Disarm tears the arming session down and removes the state. The caller holds the tracefs lock.
func (a *Armed) Disarm() []error { return a.disarm(true) }

// disarm tears the arming session down, and removes the state file when state says so (a
// session replaced by another leaves the file, which the new one writes).
func (a *Armed) disarm(state bool) []error {
	var errs []error
	if a.pipe != nil {
		a.pipe.Close()
	}
	if a.Session != nil {
		errs = a.Session.Teardown()
	}
	if !state || a.fs == nil {
		return errs
	}
	if err := os.Remove(filepath.Join(dir(a.fs, a.Name), armFile)); err != nil && !errors.Is(err, os.ErrNotExist) {
		errs = append(errs, err)
	}
	return errs
}

// readArm reads recorder name's arming state, nil when none.
func readArm(fs *tracefs.FS, name string) *ArmState {
	b, err := os.ReadFile(filepath.Join(dir(fs, name), armFile))
	if err != nil || len(b) > 1<<20 {
		return nil
	}
	var st ArmState
	if json.Unmarshal(b, &st) != nil {
		return nil
	}
	st.Alive = tracefs.ProcessAlive(strconv.Itoa(st.PID)) && (st.Instance == "" || fs.HasInstance(st.Instance))
	return &st
}
