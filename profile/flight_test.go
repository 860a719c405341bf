package profile

import (
	"errors"
	"strings"
	"testing"
	"time"
)

// TestFlightSection: a profile's flight section loads, validates and gives its defaults.
func TestFlightSection(t *testing.T) {
	p, err := LoadFile("testdata/flight.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Validate(); err != nil {
		t.Fatal(err)
	}
	f := p.Spec.Flight
	if f == nil || f.Dir != "/var/lib/ftctl/flight/box" || f.RateLimit() != time.Minute || f.KeepCount() != 5 || f.MaxMB != 512 || len(f.Triggers) != 3 {
		t.Fatalf("flight = %+v", f)
	}
	want := []FlightTrigger{{Event: "sched:sched_process_exit", Filter: `comm == "nginx"`}, {Latency: "vfs_read>10ms"}, {Warn: true, Rate: "1h"}}
	for i, tr := range f.Triggers {
		if tr != want[i] {
			t.Errorf("trigger %d = %+v, want %+v", i, tr, want[i])
		}
	}
	d := &Flight{Dir: "/x"}
	if d.RateLimit() != DefaultFlightRate || d.KeepCount() != DefaultFlightKeep {
		t.Errorf("defaults: %v %d", d.RateLimit(), d.KeepCount())
	}
	if zero := 0; (&Flight{Keep: &zero}).KeepCount() != 0 {
		t.Error("keep: 0 is no limit, not the default")
	}
}

// TestFlightBroken: each mistake of a flight section, at its line and column.
func TestFlightBroken(t *testing.T) {
	p, err := LoadFile("testdata/flight-broken.yaml")
	if err != nil {
		t.Fatal(err)
	}
	err = p.Validate()
	if !errors.Is(err, ErrInvalid) {
		t.Fatalf("%v is not ErrInvalid", err)
	}
	want := []string{
		`7:10: spec.flight.dir: "dumps": an absolute path (an agent's working directory is not the file's)`,
		`8:11: spec.flight.rate: "soon": a duration of 0 or more, such as 30s or 5m`,
		`9:11: spec.flight.keep: -1: 0 (no limit by count) or more`,
		`10:12: spec.flight.maxMB: -2: 0 (no limit by size) to 1048576 MiB`,
		`13:22: spec.flight.triggers[0].filter: invalid event filter: Invalid operator`,
		`14:16: spec.flight.triggers[1].event: "sched": one event, SYSTEM:EVENT (sched:sched_process_exit), no glob`,
		`15:18: spec.flight.triggers[2].latency: "vfs_read": want FUNC>DURATION, a function and a duration of 1us or more (vfs_read>10ms), or FUNC>max (a new maximum)`,
		`16:9: spec.flight.triggers[3]: a trigger is one of event (with an optional filter), latency or warn: 2 given`,
		`18:9: spec.flight.triggers[4]: a trigger is one of event (with an optional filter), latency or warn: 0 given`,
		`19:9: spec.flight.triggers[5]: a trigger is one of event (with an optional filter), latency or warn: 0 given`,
		`20:16: spec.flight.triggers[6].event: "${group}:open": a trigger's event is the kernel's (SYSTEM:EVENT), recorded in the arming process's instance, not the profile's`,
		`22:9: spec.flight.triggers[8]: the same trigger as spec.flight.triggers[7]`,
		`25:15: spec.flight.triggers[9].rate: "later": a duration of 0 or more, such as 30s or 5m`,
	}
	got := strings.Split(err.Error(), "\n")
	for i := range max(len(got), len(want)) {
		var g, w string
		if i < len(got) {
			g = strings.TrimPrefix(got[i], "testdata/flight-broken.yaml:")
		}
		if i < len(want) {
			w = want[i]
		}
		if g != w {
			t.Errorf("line %d:\ngot  %s\nwant %s", i+1, g, w)
		}
	}
}

// TestFlightLoadErrors: what Load refuses in a flight section, at its position.
func TestFlightLoadErrors(t *testing.T) {
	const head = "apiVersion: ftctl.dev/v1alpha1\nkind: TracingProfile\nmetadata:\n  name: x\nspec:\n  flight:\n"
	for _, c := range []struct{ src, want string }{
		{head + "    dir: /d\n    keep: many\n", `p.yaml:8:11: spec.flight.keep: want a whole number, not "many"`},
		{head + "    dir: /d\n    triggers:\n      - evnt: a:b\n", `p.yaml:9:9: spec.flight.triggers[0]: unknown field "evnt" (did you mean "event"?)`},
		{head + "    dir: /d\n    triggers:\n      - warn: yes\n", `p.yaml:9:15: spec.flight.triggers[0].warn: want true or false, not "yes"`},
	} {
		_, err := Load("p.yaml", []byte(c.src))
		if err == nil || err.Error() != c.want {
			t.Errorf("got  %v\nwant %s", err, c.want)
		}
	}
}

// CheckLatency takes FUNC>DURATION of 1us or more and FUNC>max, and the schema's pattern is the
// same form.
func TestCheckLatency(t *testing.T) {
	for s, ok := range map[string]bool{
		"vfs_read>10ms": true, " vfs_read > 1.5s ": true, "vfs_read>1h30m": true, "vfs_read>max": true,
		"vfs_read > max": true, "vfs_read>1us": true, "vfs_read>999ns": false, "vfs_read>0": false,
		"vfs_read>MAX": false, "vfs_read>maximum": false, "vfs_read>max5ms": false, "vfs_read": false,
		">max": false, "vfs_*>max": false, "sched:x>max": false, "vfs_read>10": false, "vfs_read>>1ms": false,
	} {
		if err := CheckLatency(s); (err == nil) != ok {
			t.Errorf("CheckLatency(%q) = %v, want ok %v", s, err, ok)
		}
	}
}
