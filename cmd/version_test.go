package cmd

import (
	"encoding/json"
	"runtime"
	"strings"
	"testing"
)

// `ftctl version` and `--version` say the version, commit, build date and Go; -v is not
// version (it means verbose everywhere else), and -o json gives the same as an object.
func TestVersion(t *testing.T) {
	old := buildVersion
	buildVersion = "1.2.3"
	defer func() { buildVersion = old }()
	for _, args := range [][]string{{"version"}, {"--version"}} {
		code, out, errs := run(t, args...)
		if code != 0 || !strings.HasPrefix(out, "ftctl 1.2.3\n") || !strings.Contains(out, runtime.Version()) ||
			!strings.Contains(out, "commit") || !strings.Contains(out, "built") {
			t.Errorf("%q: exit %d: %q %q", args, code, out, errs)
		}
	}
	code, out, _ := run(t, "version", "-o", "json")
	var v VersionInfo
	if err := json.Unmarshal([]byte(out), &v); code != 0 || err != nil || v.Version != "1.2.3" || v.Go != runtime.Version() || v.Platform != runtime.GOOS+"/"+runtime.GOARCH {
		t.Errorf("json: exit %d %v: %q", code, err, out)
	}
	if code, _, errs := run(t, "-v"); code != 2 || !strings.Contains(errs, "unknown shorthand flag: 'v'") {
		t.Errorf("-v: exit %d: %s", code, errs)
	}
}
