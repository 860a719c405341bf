package tracefs

import "strings"

// DynamicStatus counts the events of dynamic_events by kind: every kind of probe and the
// synthetic and user events, as `ftctl status` shows them.
type DynamicStatus struct {
	Count  int            `json:"count"`
	Owned  int            `json:"owned_by_ftctl"`
	ByKind map[string]int `json:"by_kind"`
}

// CountDynamicEvents counts dynamic_events text by kind, one per event (an event with several
// probe points is listed once per point: counted once). The kinds: kprobe, kretprobe, uprobe,
// uretprobe, fprobe, fexit, tprobe, eprobe, synthetic, user.
func CountDynamicEvents(text string) *DynamicStatus {
	ds := &DynamicStatus{ByKind: map[string]int{}}
	seen := map[string]bool{}
	for _, e := range ParseProbeList(text) {
		name := e.Group + "/" + e.Event
		if seen[name] || e.Type == "" {
			continue
		}
		seen[name] = true
		ds.Count++
		if OwnedGroup(e.Group) || (e.Group == "synthetic" && ownedSynthetic(e.Event)) {
			ds.Owned++
		}
		ds.ByKind[DynamicKind(e)]++
	}
	return ds
}

// ownedSynthetic: a synthetic event named after a session's group (GROUP_WHAT).
func ownedSynthetic(event string) bool {
	i := strings.LastIndexByte(event, '_')
	return i > 0 && OwnedGroup(event[:i])
}

// DynamicKind names an entry of dynamic_events (or kprobe_events, uprobe_events) by kind.
func DynamicKind(e ProbeListEntry) string {
	words := strings.Fields(e.Definition)
	place := ""
	if len(words) > 1 {
		place = words[1]
	}
	ret := strings.HasSuffix(place, "%return")
	switch e.Type[0] {
	case 'p', 'r':
		if strings.Contains(place, "/") && strings.Contains(place, ":") { // PATH:OFFSET
			if e.Type[0] == 'r' {
				return "uretprobe"
			}
			return "uprobe"
		}
		if e.Type[0] == 'r' || ret {
			return "kretprobe"
		}
		return "kprobe"
	case 'f':
		if ret {
			return "fexit"
		}
		return "fprobe"
	case 't':
		return "tprobe"
	case 'e':
		return "eprobe"
	case 's':
		return "synthetic"
	case 'u':
		return "user"
	}
	return e.Type
}

// EprobeAttachments reads dynamic_events: each event probe's attached event as the kernel
// lists it ("sched.sched_switch"), by the probe's name; empty without the file.
func (f *FS) EprobeAttachments() map[EventName]string {
	m := map[EventName]string{}
	b, err := f.Top().ReadFile("dynamic_events")
	if err != nil {
		return m
	}
	return ParseEprobeAttachments(string(b))
}

// ParseEprobeAttachments is EprobeAttachments on dynamic_events text.
func ParseEprobeAttachments(text string) map[EventName]string {
	m := map[EventName]string{}
	for _, p := range ParseProbeList(text) {
		if words := strings.Fields(p.Definition); p.Type != "" && p.Type[0] == 'e' && len(words) > 1 {
			m[EventName{p.Group, p.Event}] = words[1]
		}
	}
	return m
}
