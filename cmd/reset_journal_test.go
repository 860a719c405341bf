package cmd

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Issue 28 (c): `ftctl reset` with one journal it cannot read goes on with the others: the
// dead session's files put back and said so, the bad journal named with why and left, exit 1.
func TestResetGoesOnPastABadJournal(t *testing.T) {
	root := fakeRoot(t)
	os.WriteFile(filepath.Join(root, "max_graph_depth"), []byte("5\n"), 0o644)
	state := t.TempDir()
	t.Setenv("FTCTL_STATE_DIR", state)
	good := `{"session":{"pid":77,"id":"0123abcd"},"entries":[{"file":"max_graph_depth","before":"0","wrote":"5"}]}`
	bad := filepath.Join(state, "ftctl-8-0123abcd.journal")
	os.WriteFile(filepath.Join(state, "ftctl-77-0123abcd.journal"), []byte(good), 0o600)
	os.WriteFile(bad, []byte("not json"), 0o600)
	code, out, errs := run(t, "--tracefs", root, "reset")
	if code != ExitFailure {
		t.Errorf("exit %d, want %d (a journal left)\n%s\n%s", code, ExitFailure, out, errs)
	}
	if !strings.Contains(out, `put back max_graph_depth to "0"`) {
		t.Errorf("the good journal's file is not said put back:\n%s", out)
	}
	if b, _ := os.ReadFile(filepath.Join(root, "max_graph_depth")); strings.TrimSpace(string(b)) != "0" {
		t.Errorf("max_graph_depth %q, want 0", b)
	}
	if !strings.Contains(errs, bad) || !strings.Contains(errs, "not a journal") {
		t.Errorf("the bad journal is not named with why:\n%s", errs)
	}
	if _, err := os.Stat(bad); err != nil {
		t.Errorf("the bad journal: %v", err)
	}
}
