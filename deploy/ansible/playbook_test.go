// Package ansible holds an example playbook (ftctl-profile.yml); its test has Ansible check it.
package ansible

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// Debian's ansible-playbook checks the playbook's syntax (.ci/run installs ansible-core and
// sets FTCTL_REQUIRE_ANSIBLE).
func TestPlaybookSyntax(t *testing.T) {
	bin, err := exec.LookPath("ansible-playbook")
	if err != nil {
		if os.Getenv("FTCTL_REQUIRE_ANSIBLE") != "" {
			t.Fatal("ansible-playbook is required (FTCTL_REQUIRE_ANSIBLE) and not found: apt-get install ansible-core")
		}
		t.Skip("ansible-playbook not found (apt-get install ansible-core)")
	}
	home := t.TempDir()
	if err := os.WriteFile(filepath.Join(home, "slowreads.yaml"), []byte("{}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, "--syntax-check", "-i", "localhost,", "ftctl-profile.yml")
	cmd.Env = append(os.Environ(), "HOME="+home, "ANSIBLE_LOCAL_TEMP="+filepath.Join(home, "tmp"), "ANSIBLE_NOCOLOR=1")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Errorf("ansible-playbook --syntax-check: %v\n%s", err, out)
	}
}
