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
	Dynamic       []session.Dynamic
	Triggers      []session.Trigger
	Group         string // the session's group
}

// LatencySetup is the set-up measuring FUNC's durations in the session id: the calls of task
// pid only when pid > 0; by "pid" or "comm" one histogram per task or program name, else one.
// The order of Dynamic and Triggers is the order they are written in (an onmatch() names
// events defined before it); the session removes them in the reverse order.
func LatencySetup(id session.ID, fn string, fprobe bool, pid int, by string) Latency {
	l := Latency{Kind: 'p', Entry: "lat_entry", Return: "lat_return", Synthetic: id.Synthetic("lat"), Group: id.Group()}
	entPlace, retKind, retPlace := fn, byte('r'), fn
	if fprobe {
		l.Kind, retKind, retPlace = 'f', 'f', fn+"%return"
	}
	entTrig := "hist:keys=common_pid:ts0=common_timestamp.usecs"
	if pid > 0 {
		entTrig += " if common_pid == " + strconv.Itoa(pid)
	}
	retTrig := "hist:keys=common_pid:lat=common_timestamp.usecs-$ts0:onmatch(" + l.Group + "." + l.Entry + ").trace(" + l.Synthetic + ",$lat)"
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
