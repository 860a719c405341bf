//go:build vmtest

package vmtest

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// agentRetryProfile is a recorder named name whose trigger is the event kprobes' ftctl group
// has only once the test defines it.
func agentRetryProfile(name, dir string) string {
	return recorderProfile(name, dir, `    rate: 2s
    triggers:
      - event: ftctl:agretry
`)
}

// TestAgentFlightRetry: a reload to a recorder whose trigger's event the kernel does not have
// yet applies the profile and cannot arm it (/readyz 503, the failure counted); once the event
// exists (a probe defined by hand), the agent arms the triggers at a later check by itself,
// /readyz is 200 again and SIGUSR1 dumps. Before, nothing but a reload or a restart armed them.
func TestAgentFlightRetry(t *testing.T) {
	dir := t.TempDir()
	file := profileFile(t, "agretry.yaml", agentProfile(1024))
	t.Cleanup(func() {
		ftctlRun(t, "flight", "stop", "agretry")
		ftctlRun(t, "delete", "-f", profileFile(t, "agentvm.yaml", agentProfile(1024)))
	})
	a := startAgent(t, file)
	defer func() {
		if a.cmd.ProcessState == nil {
			a.cmd.Process.Kill()
			a.cmd.Wait()
		}
	}()
	if err := os.WriteFile(file, []byte(agentRetryProfile("agretry", dir)), 0o600); err != nil {
		t.Fatal(err)
	}
	a.waitMetric(t, 60*time.Second, "ftctl_agent_failures_total", func(v float64) bool { return v >= 1 }, "stage", "flight")
	// not armed: ftctl_flight_armed is 0 (it was absent, so an alert on it saw nothing)
	a.waitMetric(t, 10*time.Second, "ftctl_flight_armed", func(v float64) bool { return v == 0 })
	if code, body := a.get(t, "/readyz"); code != 503 || !strings.Contains(body, "flight") {
		t.Fatalf("/readyz with the triggers not armed: %d %s", code, body)
	}
	if _, err := os.Stat(filepath.Join(tracing, "instances", "ftctl-owned-agretry")); err != nil {
		t.Fatalf("the recorder was not applied: %v\n%s", err, a.errb)
	}
	failed := a.errb.String()

	removeDynLater(t, "ftctl", "agretry")
	if r := ftctlRun(t, "probe", "add", "p:agretry vfs_read"); r.code != 0 {
		t.Fatalf("probe add: %v", r)
	}
	a.waitMetric(t, 60*time.Second, "ftctl_flight_armed", func(v float64) bool { return v == 1 })
	if code, body := a.get(t, "/readyz"); code != 200 {
		t.Errorf("/readyz once armed again: %d %s\n%s", code, body, a.errb)
	}
	if !strings.Contains(strings.TrimPrefix(a.errb.String(), failed), "flight agretry armed") {
		t.Errorf("no notice of the arming:\n%s", a.errb)
	}
	a.cmd.Process.Signal(syscall.SIGUSR1)
	a.waitMetric(t, 30*time.Second, "ftctl_flight_dumps_total", func(v float64) bool { return v >= 1 })
	if files, _ := filepath.Glob(filepath.Join(dir, "agretry-*.dat")); len(files) == 0 {
		t.Errorf("no dump in %s after SIGUSR1", dir)
	}
	a.stop(t)
	if r := ftctlRun(t, "flight", "stop", "agretry"); r.code != 0 {
		t.Errorf("flight stop: %v", r)
	}
}
