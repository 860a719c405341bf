package cmd

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ftctl/ftctl/flight"
)

// flight arm -f PROFILE: the profile's spec.flight gives the directory, rotation, rate and
// triggers; the flags given override its values and add triggers; the flags left at their
// defaults do not override it.
func TestFlightArmConfigFromProfile(t *testing.T) {
	pdir, fdir := t.TempDir(), t.TempDir()
	file := filepath.Join(t.TempDir(), "box.yaml")
	prof := "apiVersion: ftctl.dev/v1alpha1\nkind: TracingProfile\nmetadata:\n  name: x\nspec:\n  flight:\n    dir: " + pdir +
		"\n    rate: 1m\n    keep: 3\n    maxMB: 5\n    triggers:\n      - {event: sched:sched_process_exit, filter: 'comm == \"nginx\"'}\n"
	if err := os.WriteFile(file, []byte(prof), 0o600); err != nil {
		t.Fatal(err)
	}
	parse := func(args ...string) *FlightArmOptions {
		g := &Globals{In: strings.NewReader(""), Out: new(bytes.Buffer), Err: new(bytes.Buffer)}
		var got *FlightArmOptions
		c := NewCmdFlightArm(g, func(_ context.Context, o *FlightArmOptions) error { got = o; return nil })
		c.SetArgs(args)
		if err := c.Execute(); err != nil {
			t.Fatal(err)
		}
		return got
	}
	specs := func(cfg flight.Config) (s []string) {
		for _, tr := range cfg.Triggers {
			s = append(s, tr.Spec)
		}
		return s
	}
	o := parse("box", "-f", file)
	p, err := o.profile()
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := o.config(p)
	if err != nil || cfg.Dir != pdir || cfg.Rate != time.Minute || cfg.Keep != 3 || cfg.MaxBytes != 5<<20 ||
		strings.Join(specs(cfg), "|") != `SIGUSR1|sched:sched_process_exit if comm == "nginx"` {
		t.Errorf("from the profile: %+v %v %v", cfg, specs(cfg), err)
	}
	o = parse("box", "-f", file, "-d", fdir, "--keep", "7", "--rate", "5s", "--on-warn", "--on", "oom:mark_victim")
	cfg, err = o.config(p)
	if err != nil || cfg.Dir != fdir || cfg.Rate != 5*time.Second || cfg.Keep != 7 || cfg.MaxBytes != 5<<20 ||
		strings.Join(specs(cfg), "|") != `SIGUSR1|sched:sched_process_exit if comm == "nginx"|oom:mark_victim|warn` {
		t.Errorf("flags over the profile: %+v %v %v", cfg, specs(cfg), err)
	}
	o = parse("box", "--on", "oom:mark_victim")
	if _, err := o.config(nil); err == nil || ExitCode(err) != 2 {
		t.Errorf("no -d and no profile: %v", err)
	}
}
