package stream

import (
	"fmt"
	"sort"
	"strings"

	"github.com/ftctl/ftctl/tracefs"
)

// Loss accounting. Two sources, reported side by side because they overlap without being the
// same: the "CPU:N [LOST M EVENTS]" lines trace_pipe prints when the reader finds a page whose
// older events were overwritten (they may date from before the stream started), and the
// kernel's per-CPU counters (per_cpu/cpuN/stats), read before and after: "overrun" counts
// events overwritten in the ring buffer (overwrite mode, the default), "dropped events" those
// refused when the buffer was full (overwrite off).

// CPULoss is one CPU's share of the loss.
type CPULoss struct {
	CPU      int   `json:"cpu"`
	Overrun  int64 `json:"overrun"`  // increase of the "overrun" counter during the stream
	Dropped  int64 `json:"dropped"`  // increase of "dropped events"
	Reported int64 `json:"reported"` // the sum of this CPU's LOST lines
}

// Summary is what a stream did, printed when it ends (on stderr, or as the last JSON object
// with --summary).
type Summary struct {
	Event  string `json:"event"`  // always "summary", for NDJSON readers
	Lines  int64  `json:"lines"`  // lines read from trace_pipe (trace_pipe_raw: that it would have printed)
	Events int64  `json:"events"` // events they made (a stack trace is one event)
	Shown  int64  `json:"shown"`  // events that passed the filters
	Raw    int64  `json:"raw"`    // lines not understood (kept and shown raw)
	// Own counts the events of ftctl's own threads that were left out (not in Events).
	Own int64 `json:"own"`
	// Undecoded counts the events read from the kernel but not decoded when the stream ended:
	// interrupted (or out of time) with more waiting than drainBudget allowed, or before
	// kallsyms was loaded. The kernel will not give them again: they are lost, as overruns are.
	Undecoded int64   `json:"undecoded"`
	Seconds   float64 `json:"seconds"` // how long the stream ran
	End       string  `json:"end"`     // why it ended: count, duration, interrupted, eof, closed
	// Reader is what was read: "trace_pipe" (lines the kernel formatted) or "trace_pipe_raw"
	// (ring-buffer pages ftctl formatted); ReaderWhy says why trace_pipe when auto chose it.
	Reader    string `json:"reader"`
	ReaderWhy string `json:"reader_why,omitempty"`

	// LostReported sums the LOST lines; LostUncounted counts those that gave no number.
	LostReported  int64 `json:"lost_reported"`
	LostUncounted int64 `json:"lost_uncounted"`
	// Overrun and Dropped are the increases of the kernel's counters over the whole stream, or
	// null when per_cpu/*/stats could not be read.
	Overrun *int64    `json:"overrun"`
	Dropped *int64    `json:"dropped"`
	CPUs    []CPULoss `json:"cpus"`

	before map[int]tracefs.CPUStats
	byCPU  map[int]int64
}

// NewSummary starts the accounting from the per-CPU counters read before streaming (nil when
// they could not be read).
func NewSummary(before []tracefs.CPUStats) *Summary {
	s := &Summary{Event: "summary", CPUs: []CPULoss{}, byCPU: map[int]int64{}}
	if before != nil {
		s.before = map[int]tracefs.CPUStats{}
		for _, st := range before {
			s.before[st.CPU] = st
		}
	}
	return s
}

// Count accounts for one decoded event; shown says whether the filters let it through.
func (s *Summary) Count(ev *Event, shown bool) {
	s.Events++
	s.Lines++
	if ev.Kind == KindStack || ev.Kind == KindUserStack {
		if ev.Line != nil {
			s.Lines += int64(countLines(ev.Line)) - 1
		} else { // decoded from the ring buffer: a line per frame, as trace_pipe prints it
			s.Lines += int64(len(ev.Frames))
		}
	}
	if shown {
		s.Shown++
	}
	switch ev.Kind {
	case KindRaw:
		s.Raw++
	case KindLost:
		if ev.Lost < 0 {
			s.LostUncounted++
		} else {
			s.LostReported += ev.Lost
			s.byCPU[ev.CPU] += ev.Lost
		}
	}
}

func countLines(b []byte) int {
	n := 1
	for _, c := range b {
		if c == '\n' {
			n++
		}
	}
	return n
}

// Finish closes the accounting with the counters read after streaming (nil when unreadable).
func (s *Summary) Finish(after []tracefs.CPUStats, seconds float64, end string) {
	s.Seconds, s.End = seconds, end
	cpus := map[int]*CPULoss{}
	get := func(cpu int) *CPULoss {
		if cpus[cpu] == nil {
			cpus[cpu] = &CPULoss{CPU: cpu}
		}
		return cpus[cpu]
	}
	if s.before != nil && after != nil {
		var over, drop int64
		for _, a := range after {
			b, ok := s.before[a.CPU]
			if !ok {
				continue
			}
			c := get(a.CPU)
			c.Overrun = max(0, a.Overrun-b.Overrun)
			c.Dropped = max(0, a.DroppedEvents-b.DroppedEvents)
			over += c.Overrun
			drop += c.Dropped
		}
		s.Overrun, s.Dropped = &over, &drop
	}
	for cpu, n := range s.byCPU {
		get(cpu).Reported = n
	}
	s.CPUs = s.CPUs[:0]
	for _, c := range cpus {
		s.CPUs = append(s.CPUs, *c)
	}
	sort.Slice(s.CPUs, func(i, j int) bool { return s.CPUs[i].CPU < s.CPUs[j].CPU })
}

// Lost says whether anything was lost, by either measure.
func (s *Summary) Lost() bool {
	return s.LostReported > 0 || s.LostUncounted > 0 || s.Undecoded > 0 ||
		(s.Overrun != nil && *s.Overrun > 0) || (s.Dropped != nil && *s.Dropped > 0)
}

// String is the summary for people, one line (two when events were lost).
func (s *Summary) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%d events (%d shown) from %d lines in %.1fs", s.Events, s.Shown, s.Lines, s.Seconds)
	if s.Reader != "" {
		fmt.Fprintf(&b, " (%s)", s.Reader)
	}
	if s.Raw > 0 {
		fmt.Fprintf(&b, ", %d not understood (shown raw)", s.Raw)
	}
	if s.Own > 0 {
		fmt.Fprintf(&b, ", %d of ftctl's own left out", s.Own)
	}
	switch {
	case s.Overrun == nil:
		b.WriteString("; overruns unknown (per_cpu stats unreadable)")
		if s.LostReported > 0 || s.LostUncounted > 0 {
			fmt.Fprintf(&b, "; LOST lines: %s", s.reportedText())
		}
	case !s.Lost():
		b.WriteString("; nothing lost")
	default:
		fmt.Fprintf(&b, "\nLOST: %d overwritten (overrun) and %d dropped by the kernel while streaming; LOST lines reported %s",
			*s.Overrun, *s.Dropped, s.reportedText())
		var per []string
		for _, c := range s.CPUs {
			if c.Overrun+c.Dropped+c.Reported > 0 {
				per = append(per, fmt.Sprintf("cpu%d %d/%d/%d", c.CPU, c.Overrun, c.Dropped, c.Reported))
			}
		}
		if len(per) > 0 {
			fmt.Fprintf(&b, " (overrun/dropped/reported: %s)", strings.Join(per, ", "))
		}
		if s.Undecoded > 0 {
			fmt.Fprintf(&b, "; %d read from the kernel but not decoded before the end", s.Undecoded)
		}
		b.WriteString("; a larger buffer_size_kb, a narrower filter or a faster reader (-o json > file) helps")
	}
	return b.String()
}

func (s *Summary) reportedText() string {
	t := fmt.Sprintf("%d", s.LostReported)
	if s.LostUncounted > 0 {
		t += fmt.Sprintf(" (+%d uncounted)", s.LostUncounted)
	}
	return t
}
