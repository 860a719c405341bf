package cmd

import (
	"maps"
	"strings"
	"testing"
)

// plan, apply, diff and delete refuse a missing -f and an invalid profile with exit 2, each
// mistake on its own FILE:LINE:COLUMN line, before tracefs is touched.
func TestProfileCommandsRefuseBadProfiles(t *testing.T) {
	root := fakeRoot(t)
	t.Setenv("FTCTL_TRACEFS", root)
	before := snapshot(t, root)
	for _, verb := range []string{"plan", "apply", "diff", "delete"} {
		code, out, errs := run(t, verb)
		if code != ExitInvalid || out != "" || !strings.Contains(errs, "-f PROFILE is required") {
			t.Errorf("%s without -f: exit %d %q %q", verb, code, out, errs)
		}
		code, out, errs = run(t, verb, "-f", brokenProfile)
		lines := strings.Split(strings.TrimSuffix(errs, "\n"), "\n")
		if code != ExitInvalid || out != "" || len(lines) != 37 || !strings.HasPrefix(lines[0], brokenProfile+":3:13: apiVersion: ") ||
			lines[36] != "ftctl: "+brokenProfile+": invalid profile (36 errors)" {
			t.Errorf("%s of the broken profile: exit %d %q\n%s", verb, code, out, errs)
		}
		code, _, errs = run(t, verb, "-f", "/nonexistent/p.yaml")
		if code != ExitInvalid || !strings.Contains(errs, "no such file") {
			t.Errorf("%s of a missing file: exit %d %q", verb, code, errs)
		}
	}
	if after := snapshot(t, root); !maps.Equal(before, after) {
		t.Errorf("a refused profile changed the tracing directory")
	}
}

// export refuses a name no owner can have.
func TestExportName(t *testing.T) {
	t.Setenv("FTCTL_TRACEFS", fakeRoot(t))
	code, _, errs := run(t, "export", "--name", "Bad-Name")
	if code != ExitInvalid || !strings.Contains(errs, "--name") {
		t.Errorf("export --name Bad-Name: exit %d %q", code, errs)
	}
}
