package profile

import (
	"fmt"
	"regexp"
	"slices"
	"strings"

	"github.com/ftctl/ftctl/tracefs"
)

// Use is a dynamic event the profile uses and does not own, named in spec.uses: another
// owner's probe or synthetic event, which the profile keeps busy while it holds it.
type Use struct {
	// Event is SYSTEM:EVENT (GROUP:EVENT for a probe, synthetic:NAME).
	Event string `json:"event"`
	// What it is: "probe (p)", "synthetic event"...
	What string `json:"what"`
	// By is where the profile uses it: "spec.events[2].name", "spec.triggers[0].trigger"...
	By string `json:"by"`
}

// reference is an event the profile names, and where.
type reference struct{ path, event string }

// Trigger texts name events in their actions: onmatch(SYS.EVENT), .trace(SYNTH, ...) and the
// older .SYNTH(...) form, enable_event:SYS:EVENT and its kin.
var (
	onmatchRE = regexp.MustCompile(`onmatch\(([^.()\s]+)\.([^()\s]+)\)`)
	traceRE   = regexp.MustCompile(`\.trace\(([^,()\s]+)`)
	callRE    = regexp.MustCompile(`\)\.([A-Za-z_][A-Za-z0-9_]*)\(`)
	enableRE  = regexp.MustCompile(`(?:enable|disable)_(?:event|hist):([^:\s]+):([^:\s]+)`)
)

// references are the events the profile names (its own names put in for ${group}): those it
// enables, those its triggers are on and name in their actions, and its eprobes' targets.
func (p *Profile) references() []reference {
	var out []reference
	for i, e := range p.Spec.Events {
		out = append(out, reference{fmt.Sprintf("spec.events[%d].name", i), p.expand(e.Name)})
	}
	for i, t := range p.Spec.Triggers {
		out = append(out, reference{fmt.Sprintf("spec.triggers[%d].event", i), p.expand(t.Event)})
		path, text := fmt.Sprintf("spec.triggers[%d].trigger", i), p.expand(t.Trigger)
		for _, m := range onmatchRE.FindAllStringSubmatch(text, -1) {
			out = append(out, reference{path, m[1] + ":" + m[2]})
		}
		for _, m := range enableRE.FindAllStringSubmatch(text, -1) {
			out = append(out, reference{path, m[1] + ":" + m[2]})
		}
		for _, m := range traceRE.FindAllStringSubmatch(text, -1) {
			out = append(out, reference{path, "synthetic:" + m[1]})
		}
		for _, m := range callRE.FindAllStringSubmatch(text, -1) {
			if !slices.Contains([]string{"trace", "save", "snapshot"}, m[1]) {
				out = append(out, reference{path, "synthetic:" + m[1]})
			}
		}
	}
	for i, d := range p.Spec.Probes {
		// an eprobe: e[:[GROUP/]NAME] SYSTEM/EVENT or SYSTEM.EVENT ...
		f := strings.Fields(d)
		if len(f) >= 2 && strings.HasPrefix(f[0], "e") {
			sys, ev, ok := strings.Cut(f[1], "/")
			if !ok {
				sys, ev, _ = strings.Cut(f[1], ".")
			}
			out = append(out, reference{fmt.Sprintf("spec.probes[%d]", i), sys + ":" + ev})
		}
	}
	return out
}

// dynamicEvents are the kernel's dynamic events: GROUP:EVENT (synthetic:NAME) to what each is.
func dynamicEvents(fs *tracefs.FS) map[string]string {
	out := map[string]string{}
	top := fs.Top()
	for _, f := range []string{"dynamic_events", "kprobe_events", "uprobe_events"} {
		b, err := top.ReadFile(f)
		if err != nil {
			continue
		}
		for _, e := range tracefs.ParseProbeList(string(b)) {
			if e.Type == "s" || e.Group == "synthetic" {
				out["synthetic:"+e.Event] = "synthetic event"
			} else {
				out[e.Group+":"+e.Event] = "probe (" + e.Type + ")"
			}
		}
		if f == "dynamic_events" {
			break // it lists every kind
		}
	}
	if b, err := top.ReadFile("synthetic_events"); err == nil {
		for _, line := range strings.Split(string(b), "\n") {
			if f := strings.Fields(line); len(f) > 0 {
				out["synthetic:"+f[0]] = "synthetic event"
			}
		}
	}
	return out
}

// checkUses refuses a profile that uses another owner's dynamic event it does not name in
// spec.uses, and lists those it names (Plan.Uses). A whole system among the events (a probe
// group) uses each of its events.
func (pl *Plan) checkUses(fs *tracefs.FS) error {
	p := pl.profile
	dyn := dynamicEvents(fs)
	mine := func(ev string) bool {
		return strings.HasPrefix(ev, p.Group()+":") || strings.HasPrefix(ev, "synthetic:"+p.Group()+"_")
	}
	var refused []string
	for _, r := range p.references() {
		events := []string{r.event}
		if !strings.Contains(r.event, ":") {
			events = events[:0]
			for _, k := range sortedKeys(dyn) {
				if strings.HasPrefix(k, r.event+":") {
					events = append(events, k)
				}
			}
		}
		for _, ev := range events {
			what, ok := dyn[ev]
			if !ok || mine(ev) {
				continue
			}
			if !slices.Contains(p.Spec.Uses, ev) {
				refused = append(refused, fmt.Sprintf("%s: %q is another owner's %s (the profile's own are %s): a profile uses what it does not own only where spec.uses names it",
					r.path, ev, what, p.Group()))
				continue
			}
			if !slices.ContainsFunc(pl.Uses, func(u Use) bool { return u.Event == ev && u.By == r.path }) {
				pl.Uses = append(pl.Uses, Use{Event: ev, What: what, By: r.path})
			}
		}
	}
	if len(refused) > 0 {
		return fmt.Errorf("%w: %s", ErrInvalid, strings.Join(slices.Compact(refused), "; "))
	}
	return nil
}
