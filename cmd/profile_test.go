package cmd

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/ftctl/ftctl/profile"
)

const (
	fullProfile   = "../profile/testdata/full.yaml"
	brokenProfile = "../profile/testdata/broken.yaml"
)

// `profile validate` needs no tracefs: none is given, and FTCTL_TRACEFS points nowhere.
func offline(t *testing.T) {
	t.Setenv("FTCTL_TRACEFS", "/nonexistent/tracefs")
}

func TestProfileValidateFlags(t *testing.T) {
	var got *ProfileValidateOptions
	c := NewCmdProfileValidate(&Globals{}, func(_ context.Context, o *ProfileValidateOptions) error {
		got = o
		return nil
	})
	c.SetArgs([]string{"-f", "x.yaml"})
	if err := c.Execute(); err != nil || got == nil || got.File != "x.yaml" {
		t.Fatalf("%v %+v", err, got)
	}
}

func TestProfileValidate(t *testing.T) {
	offline(t)
	code, out, errs := run(t, "profile", "validate", "-f", fullProfile)
	if code != 0 || errs != "" || out != fullProfile+": valid profile slowopen (4 function patterns, 4 events, 2 probes, 1 synthetic event, 3 triggers)\n" {
		t.Errorf("exit %d: %q %q", code, out, errs)
	}

	code, out, errs = run(t, "profile", "validate", "-f", brokenProfile)
	lines := strings.Split(strings.TrimSuffix(errs, "\n"), "\n")
	if code != ExitInvalid || out != "" || len(lines) != 37 {
		t.Fatalf("exit %d: %q\n%s", code, out, errs)
	}
	if want := brokenProfile + `:3:13: apiVersion: "ftctl.dev/v2" is not a version this ftctl reads; it reads ftctl.dev/v1alpha1`; lines[0] != want {
		t.Errorf("first line %q, want %q", lines[0], want)
	}
	if want := "ftctl: " + brokenProfile + ": invalid profile (36 errors)"; lines[36] != want {
		t.Errorf("last line %q, want %q", lines[36], want)
	}

	code, out, errs = run(t, "profile", "validate", "-f", "/nonexistent/p.yaml")
	if code != ExitInvalid || out != "" || !strings.Contains(errs, "no such file") {
		t.Errorf("missing file: exit %d: %q %q", code, out, errs)
	}
	code, _, errs = run(t, "profile", "validate")
	if code != ExitInvalid || !strings.Contains(errs, "-f FILE is required") {
		t.Errorf("no -f: exit %d: %q", code, errs)
	}
}

func TestProfileValidateJSON(t *testing.T) {
	offline(t)
	code, out, _ := run(t, "-o", "json", "profile", "validate", "-f", brokenProfile)
	var r profileReport
	if err := json.Unmarshal([]byte(out), &r); err != nil || code != ExitInvalid {
		t.Fatalf("exit %d, %v: %s", code, err, out)
	}
	want := profileError{Line: 12, Column: 13, Path: "spec.instance.tracer",
		Reason: `"functon": a profile's tracer is function, function_graph or nop (did you mean "function"?)`}
	if r.File != brokenProfile || r.Name != "Slow_Open" || r.Valid || len(r.Errors) != 36 || r.Errors[7] != want {
		t.Errorf("%+v", r)
	}

	code, out, _ = run(t, "-o", "json", "profile", "validate", "-f", fullProfile)
	if code != 0 || !strings.Contains(out, `"valid": true`) || !strings.Contains(out, `"errors": []`) {
		t.Errorf("exit %d: %s", code, out)
	}
}

// -f - reads stdin; a load error is one line, as FILE:LINE:COLUMN with <stdin> for FILE.
func TestProfileValidateStdin(t *testing.T) {
	offline(t)
	for _, c := range []struct {
		in        string
		code      int
		out, errs string
	}{
		{"{apiVersion: ftctl.dev/v1alpha1, kind: TracingProfile, metadata: {name: s}, spec: {events: [{name: sched}]}}",
			0, "<stdin>: valid profile s (0 function patterns, 1 event, 0 probes, 0 synthetic events, 0 triggers)\n", ""},
		{"apiVersion: ftctl.dev/v1alpha1\nkind: TracingProfile\nmetadata:\n  name: s\nspec:\n  instance:\n    tracr: nop\n",
			2, "", "<stdin>:7:5: spec.instance: unknown field \"tracr\" (did you mean \"tracer\"?)\nftctl: <stdin>: invalid profile (1 error)\n"},
		{"\x1b[31m: 1\n", 2, "", "<stdin>:1:1: unknown field \"\\x1b[31m\"; known here: apiVersion, kind, metadata, spec\nftctl: <stdin>: invalid profile (1 error)\n"},
	} {
		var out, errs bytes.Buffer
		code := Run(context.Background(), []string{"profile", "validate", "-f", "-"}, strings.NewReader(c.in), &out, &errs)
		if code != c.code || out.String() != c.out || errs.String() != c.errs {
			t.Errorf("%q: exit %d: %q %q", c.in, code, out.String(), errs.String())
		}
	}
}

func TestProfileSchema(t *testing.T) {
	offline(t)
	code, out, errs := run(t, "profile", "schema")
	var s map[string]any
	if err := json.Unmarshal([]byte(out), &s); code != 0 || err != nil || errs != "" {
		t.Fatalf("exit %d, %v: %q", code, err, errs)
	}
	if s["$id"] != profile.SchemaID {
		t.Errorf("$id %v", s["$id"])
	}
}

func TestProfileExitCode(t *testing.T) {
	for _, err := range []error{
		&profile.Error{File: "p.yaml", Line: 1, Column: 1, Reason: "x"},
		errors.Join(&profile.Error{Reason: "a"}, &profile.Error{Reason: "b"}),
		fmt.Errorf("p.yaml: %w (2 errors)", profile.ErrInvalid),
	} {
		if got := ExitCode(err); got != ExitInvalid {
			t.Errorf("ExitCode(%v) = %d", err, got)
		}
	}
}
