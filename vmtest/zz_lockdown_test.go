//go:build vmtest

package vmtest

// This file sorts last on purpose: go test runs tests in source order, files by name, and
// raising lockdown is one-way for the rest of the boot. Keep it the last test of the binary.

import (
	"encoding/json"
	"errors"
	"os"
	"strings"
	"testing"

	"github.com/ftctl/ftctl/cmd"
	"github.com/ftctl/ftctl/tracefs"
)

// EPERM from kernel lockdown: status describes the forbidden files and names the lockdown
// level (exit 0); a write fails with exit 4 and says why.
func TestZZLockdownConfidentiality(t *testing.T) {
	if err := os.WriteFile(tracefs.LockdownPath, []byte("confidentiality"), 0); err != nil {
		t.Skipf("cannot raise lockdown on this kernel: %v", err)
	}
	r := ftctlRun(t, "status", "-o", "json")
	if r.code != 0 {
		t.Fatalf("status under lockdown: %+v", r)
	}
	var st tracefs.Status
	if err := json.Unmarshal([]byte(r.stdout), &st); err != nil {
		t.Fatal(err)
	}
	if st.Lockdown.Current != "confidentiality" {
		t.Errorf("lockdown %+v", st.Lockdown)
	}
	forbidden := 0
	for _, u := range append(st.Unavailable, st.Instances[0].Unavailable...) {
		if u.Class == "forbidden" && u.Errno == "EPERM" && strings.Contains(u.Reason, "confidentiality") {
			forbidden++
		}
	}
	if forbidden < 3 {
		t.Errorf("expected the control files reported forbidden by lockdown: %+v %+v", st.Unavailable, st.Instances[0].Unavailable)
	}
	err := topFS(t).Top().Write("current_tracer", "nop\n")
	if !errors.Is(err, tracefs.ErrForbidden) || cmd.ExitCode(err) != 4 || !strings.Contains(err.Error(), "confidentiality") {
		t.Errorf("write under lockdown: %v", err)
	}
	if r := ftctlRun(t, "status"); r.code != 0 || !strings.Contains(r.stdout, "lockdown    confidentiality") {
		t.Errorf("text status under lockdown: %+v", r)
	}
}
