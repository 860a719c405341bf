package count

import (
	"strconv"

	"github.com/ftctl/ftctl/session"
)

// Latency is the set-up of `ftctl latency FUNC`, measured in the kernel: an entry and a
// return probe of FUNC (fprobes where the kernel has them, else a kprobe and a kretprobe), a
// hist trigger on the entry saving each task's timestamp, one on the return computing the
// duration and sending it to a synthetic event by onmatch().trace(), and a .log2 hist trigger
// on the synthetic event: the table read at the end. Nothing is streamed.
type Latency struct {
	Kind          byte   // 'f' (fprobes) or 'p' (kprobe and kretprobe)
	Entry, Return string // the probes' events, in the session's group
	Synthetic     string // the synthetic event (in system "synthetic")
	Max           string // LatencyMaxSetup's synthetic event of each new maximum, else ""
	Dynamic       []session.Dynamic
	Triggers      []session.Trigger
	Group         string // the session's group
	BiasUS        uint64 // subtracted from every duration (LatencySetupCorrected), µs
}

// LatencySetup is the set-up measuring FUNC's durations in the session id: the calls of task
// pid only when pid > 0; by "pid" or "comm" one histogram per task or program name, else one.
// The order of Dynamic and Triggers is the order they are written in (an onmatch() names
// events defined before it); the session removes them in the reverse order.
func LatencySetup(id session.ID, fn string, fprobe bool, pid int, by string) Latency {
	return LatencySetupCorrected(id, fn, fprobe, pid, by, 0)
}

// LatencySetupCorrected is LatencySetup with biasUS µs (the probes' own cost, MeasureBias)
// taken off every duration: the entry saves its timestamp plus the bias, so that the return's
// delta is the duration less the bias. A call shorter than the bias wraps below zero (a u64):
// its .log2 bucket is not a duration, and the reader folds it into the first (LatencyBucket).
func LatencySetupCorrected(id session.ID, fn string, fprobe bool, pid int, by string, biasUS uint64) Latency {
	l := Latency{Kind: 'p', Entry: "lat_entry", Return: "lat_return", Synthetic: id.Synthetic("lat"), Group: id.Group(), BiasUS: biasUS}
	entPlace, retKind, retPlace := fn, byte('r'), fn
	if fprobe {
		l.Kind, retKind, retPlace = 'f', 'f', fn+"%return"
	}
	// µs: common_timestamp.usecs, or with a bias the same from nanoseconds: a constant beside a
	// .usecs timestamp is refused (seen on 6.1 and 6.12; kernel/trace/trace_events_hist.c
	// check_expr_operands wants both operands' usecs flags equal, and a constant has none)
	ts, entTrig := "common_timestamp.usecs", "hist:keys=common_pid:ts0=common_timestamp.usecs"
	if biasUS > 0 {
		ts = "common_timestamp/1000"
		entTrig = "hist:keys=common_pid:ts0=" + ts + "+" + strconv.FormatUint(biasUS, 10)
	}
	if pid > 0 {
		entTrig += " if common_pid == " + strconv.Itoa(pid)
	}
	retTrig := "hist:keys=common_pid:lat=" + ts + "-$ts0:onmatch(" + l.Group + "." + l.Entry + ").trace(" + l.Synthetic + ",$lat)"
	synthTrig := "hist:keys=lat.log2:sort=lat"
	switch by {
	case "pid":
		synthTrig = "hist:keys=common_pid,lat.log2:sort=common_pid,lat"
	case "comm":
		synthTrig = "hist:keys=common_pid.execname,lat.log2:sort=common_pid,lat"
	}
	l.Dynamic = []session.Dynamic{
		{Kind: l.Kind, Event: l.Entry, Place: entPlace},
		{Kind: retKind, Event: l.Return, Place: retPlace},
		{Kind: 's', Event: l.Synthetic, Place: "u64 lat"},
	}
	l.Triggers = []session.Trigger{
		{System: l.Group, Event: l.Entry, Text: entTrig},
		{System: l.Group, Event: l.Return, Text: retTrig},
		{System: "synthetic", Event: l.Synthetic, Text: synthTrig},
	}
	return l
}

// LatencyMaxSetup is FUNC's durations measured as LatencySetup's are, where instead of a table
// the synthetic event's hist trigger sends each new maximum since it was set up (the first call
// included) to a second synthetic event, l.Max, by onmax().trace() (5.1's generalized handlers:
// tracefs.HistFeatures.OnmaxTrace). onmax() keeps a maximum per hist entry, that is per key: the
// key is common_type, which has one value on one event, so that the maximum is every call's
// (keyed on common_pid, each new task's first call would be a maximum). Seen on 6.1 and 6.12.
func LatencyMaxSetup(id session.ID, fn string, fprobe bool) Latency {
	l := LatencySetup(id, fn, fprobe, 0, "")
	l.Max = id.Synthetic("max")
	l.Dynamic = append(l.Dynamic, session.Dynamic{Kind: 's', Event: l.Max, Place: "u64 lat"})
	l.Triggers[2].Text = "hist:keys=common_type:m=lat:onmax($m).trace(" + l.Max + ",$m)"
	return l
}

// LatencyBucket is the upper bound, in µs, of the .log2 bucket the kernel lists as 2^log2 for a
// set-up corrected by a bias: a duration below the bias wrapped to nearly 2^64, which the
// kernel lists as 2^64 (or, its roundup_pow_of_two overflowing, 2^0); either is a duration at
// or below zero once corrected, and is put in the first bucket, (0, 1] µs.
func LatencyBucket(log2 uint64, corrected bool) uint64 {
	if corrected && log2 >= 63 {
		return 1
	}
	return 1 << min(log2, 63)
}
