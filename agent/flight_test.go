package agent

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/common/expfmt"

	"github.com/ftctl/ftctl/flight"
	"github.com/ftctl/ftctl/internal/fixture"
	"github.com/ftctl/ftctl/tracefs"
)

// flightOnly collects flightMetrics alone, for a recorder's instance and given counters.
type flightOnly struct {
	in *tracefs.Instance
	st FlightStats
}

func (c flightOnly) Describe(chan<- *prometheus.Desc)    {}
func (c flightOnly) Collect(ch chan<- prometheus.Metric) { flightMetrics(ch, c.in, c.st) }

// The flight families: fired per trigger (an armed trigger that never fired at 0, a trigger
// re-armed away kept, since counters do not go back), dumps and failures, the ring's fill as a
// ratio; promtool finds them valid.
func TestFlightMetrics(t *testing.T) {
	root, dirs := fixture.Tracefs(t, "6.12", nil)
	inDir := filepath.Join(root, "instances", "ftctl-owned-box")
	if err := dirs.Mkdir(inDir); err != nil {
		t.Fatal(err)
	}
	for name, body := range map[string]string{
		"buffer_size_kb":     "4\n",
		"per_cpu/cpu0/stats": "entries: 10\noverrun: 3\ncommit overrun: 0\nbytes: 1024\noldest event ts: 1.0\nnow ts: 2.0\ndropped events: 0\nread events: 0\n",
	} {
		p := filepath.Join(inDir, name)
		os.MkdirAll(filepath.Dir(p), 0o755)
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	fs := &tracefs.FS{Mount: tracefs.Mount{Path: root, Found: "test"}, Dirs: dirs}
	in, err := fs.Existing("ftctl-owned-box")
	if err != nil {
		t.Fatal(err)
	}
	st := FlightStats{RunnerStats: flight.RunnerStats{Fired: map[string]uint64{`sched:sched_process_exit if comm == "nginx"`: 2, "old:gone": 1}, Dumps: 2, DumpFailures: 1},
		Armed: true, Triggers: []string{"SIGUSR1", `sched:sched_process_exit if comm == "nginx"`}}
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(flightOnly{in, st})
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	for _, mf := range mfs {
		if _, err := expfmt.MetricFamilyToText(&buf, mf); err != nil {
			t.Fatal(err)
		}
	}
	body := buf.String()
	for _, want := range []string{
		`ftctl_flight_triggers_fired_total{trigger="SIGUSR1"} 0`,
		`ftctl_flight_triggers_fired_total{trigger="sched:sched_process_exit if comm == \"nginx\""} 2`,
		`ftctl_flight_triggers_fired_total{trigger="old:gone"} 1`,
		"ftctl_flight_dumps_total 2", "ftctl_flight_dump_failures_total 1", "ftctl_flight_armed 1",
		`ftctl_flight_ring_fill_ratio{trace_instance="ftctl-owned-box"} 0.25`,
	} {
		if !strings.Contains(body, want) {
			t.Errorf("no %s in:\n%s", want, body)
		}
	}
	promtool, err := exec.LookPath("promtool")
	if err != nil {
		if os.Getenv("FTCTL_REQUIRE_PROMTOOL") != "" {
			t.Fatal("promtool is required (FTCTL_REQUIRE_PROMTOOL) and not found: apt-get install prometheus")
		}
		t.Skip("promtool not found")
	}
	cmd := exec.Command(promtool, "check", "metrics")
	cmd.Stdin = strings.NewReader(body)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Errorf("promtool check metrics: %v\n%s", err, out)
	}
}

// A profile whose spec.flight.dir is not a directory is refused before anything is applied.
func TestFlightDirRefusedFirst(t *testing.T) {
	root, dirs := fixture.Tracefs(t, "6.12", nil)
	file := filepath.Join(t.TempDir(), "box.yaml")
	prof := "apiVersion: ftctl.dev/v1alpha1\nkind: TracingProfile\nmetadata:\n  name: box\nspec:\n  flight:\n    dir: " + filepath.Join(t.TempDir(), "none") + "\n"
	if err := os.WriteFile(file, []byte(prof), 0o600); err != nil {
		t.Fatal(err)
	}
	fs := &tracefs.FS{Mount: tracefs.Mount{Path: root, Found: "test"}, Dirs: dirs, StateDir: filepath.Join(t.TempDir(), "run")}
	a := New(fs, Options{File: file})
	if _, err := a.Start(t.Context()); !errors.Is(err, flight.ErrTrigger) || !strings.Contains(err.Error(), "not a directory") {
		t.Fatalf("Start: %v", err)
	}
	if _, err := os.Stat(filepath.Join(root, "instances", "ftctl-owned-box")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the instance was made: %v", err)
	}
}

// The counters of a stopped runner are added to the next one's: a re-arming never makes a
// counter go back.
func TestAddStats(t *testing.T) {
	a := flight.RunnerStats{Fired: map[string]uint64{"SIGUSR1": 2, "warn": 1}, Dumps: 3, DumpFailures: 1}
	b := flight.RunnerStats{Fired: map[string]uint64{"SIGUSR1": 1, "ftctl:x": 4}, Dumps: 5}
	sum := addStats(a, b)
	if sum.Dumps != 8 || sum.DumpFailures != 1 || sum.Fired["SIGUSR1"] != 3 || sum.Fired["warn"] != 1 || sum.Fired["ftctl:x"] != 4 || len(sum.Fired) != 3 {
		t.Errorf("%+v", sum)
	}
	if a.Fired["SIGUSR1"] != 2 || len(a.Fired) != 2 {
		t.Errorf("the first changed: %+v", a)
	}
	if z := addStats(flight.RunnerStats{}, flight.RunnerStats{}); z.Fired == nil || z.Dumps != 0 {
		t.Errorf("zero: %+v", z)
	}
}
