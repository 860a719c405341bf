//go:build vmtest

package vmtest

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ftctl/ftctl/tracefs"
)

// The reboot test runs in a boot of its own (vm/suite.sh, run.sh --reboot): the kernel booted
// with rebootParams, a disk mounted at /var/lib/ftctl that the reboot keeps, and vm/init's
// phase in FTCTL_VM_BOOT: 1 before `reboot -f` (TestFlightRebootBefore), 2 after it
// (TestFlightRebootAfter). The main boots skip both.
const (
	rebootName   = "boot"
	rebootParams = "nokaslr reserve_mem=16M:4096:boot trace_instance=ftctl-owned-boot@boot"
	rebootDir    = "/var/lib/ftctl"
	rebootCount  = 300
)

// persistentKernel: a kernel the tests expect to have the persistent ring buffer (6.12 on).
// By release on purpose: ftctl detects it from the kernel's files, and this checks that.
func persistentKernel() bool {
	var maj, min int
	fmt.Sscanf(tracefs.KernelRelease(), "%d.%d", &maj, &min)
	return maj > 6 || maj == 6 && min >= 12
}

func rebootPhase(t *testing.T, want string) {
	t.Helper()
	if os.Getenv("FTCTL_VM_BOOT") != want {
		t.Skipf("runs in phase %s of the reboot boot (vm/run.sh --reboot)", want)
	}
}

func rebootMarker(n int) string { return fmt.Sprintf("ftctl-reboot-marker-%04d", n) }

// boot-config prints the parameters and checks the running kernel's command line against them
// (these boots have none of them), saving the capture in --boot-dir; a kernel without the
// persistent ring buffer is exit 4, saying so, and so is last-boot there.
func TestFlightBootConfig(t *testing.T) {
	dir := t.TempDir()
	r := ftctlRun(t, "flight", "boot-config", "box2", "-e", "sched:sched_switch", "-e", "irq", "--boot-dir", dir)
	lb := ftctlRun(t, "flight", "last-boot", "box2", "-w", filepath.Join(dir, "x.dat"), "--boot-dir", dir)
	if !persistentKernel() {
		if r.code != 4 || !strings.Contains(r.stderr, "no persistent ring buffer") || r.stdout != "" {
			t.Errorf("boot-config on a kernel without the persistent ring buffer: %v", r)
		}
		if lb.code != 4 || !strings.Contains(lb.stderr, "no persistent ring buffer") {
			t.Errorf("last-boot on a kernel without the persistent ring buffer: %v", lb)
		}
		if _, err := os.Stat(filepath.Join(dir, "flight")); err == nil {
			t.Errorf("boot-config refused, but saved something")
		}
		return
	}
	want := "nokaslr reserve_mem=16M:4096:box2 trace_instance=ftctl-owned-box2@box2,sched:sched_switch,irq\n"
	if r.code != 0 || r.stdout != want || !strings.Contains(r.stderr, "not booted with: "+strings.TrimSpace(want)) {
		t.Errorf("boot-config: %v; want stdout %q", r, want)
	}
	if _, err := os.Stat(filepath.Join(dir, "flight/box2/boot.dat")); err != nil {
		t.Errorf("boot-config saved no capture: %v", err)
	}
	if rep := ftctlRun(t, "report", filepath.Join(dir, "flight/box2/boot.dat")); rep.code != 0 {
		t.Errorf("the capture is no trace.dat ftctl reads: %v", rep)
	}
	if lb.code != 4 || !strings.Contains(lb.stderr, "not a persistent ring") {
		t.Errorf("last-boot without the parameters: %v", lb)
	}
	for _, bad := range [][]string{{"box2", "-e", "nosuch:event"}, {"Box"}, {"abcdefghijklmnop"}, {"box2", "--size-mb", "0"}} {
		if r := ftctlRun(t, append([]string{"flight", "boot-config", "--boot-dir", dir}, bad...)...); r.code != 2 {
			t.Errorf("boot-config %q: %v; want exit 2", bad, r)
		}
	}
}

// Before the reboot: boot-config finds the kernel booted with its parameters and the instance a
// persistent ring, and saves the capture on the disk; numbered markers go into the ring.
// vm/init reboots (reboot -f) once this boot's tests passed.
func TestFlightRebootBefore(t *testing.T) {
	rebootPhase(t, "1")
	r := ftctlRun(t, "flight", "boot-config", rebootName, "--boot-dir", rebootDir, "-o", "json")
	var bc struct {
		Params  []string `json:"params"`
		Missing []string `json:"missing"`
		Active  bool     `json:"active"`
		Saved   string   `json:"saved"`
	}
	if r.code != 0 || json.Unmarshal([]byte(r.stdout), &bc) != nil {
		t.Fatalf("boot-config: %v", r)
	}
	if strings.Join(bc.Params, " ") != rebootParams || len(bc.Missing) != 0 || !bc.Active || bc.Saved != rebootDir+"/flight/boot/boot.dat" {
		t.Fatalf("boot-config in a boot with its parameters: %+v", bc)
	}
	if info := read(t, "instances/ftctl-owned-boot/last_boot_info"); !strings.Contains(info, "delta") && !strings.Contains(info, "[kernel]") {
		t.Errorf("last_boot_info: %q", info)
	}
	for i := 1; i <= rebootCount; i++ {
		write(t, "instances/ftctl-owned-boot/trace_marker", rebootMarker(i)+"\n")
	}
	t.Logf("%d markers written; last_boot_info %q", rebootCount, read(t, "instances/ftctl-owned-boot/last_boot_info"))
}

// After the reboot: last-boot writes the markers of the boot before into a trace.dat that
// `ftctl report` and trace-cmd read, every one, in order.
func TestFlightRebootAfter(t *testing.T) {
	rebootPhase(t, "2")
	idFile := rebootDir + "/flight/boot/boot.boot_id"
	id, _ := os.ReadFile("/proc/sys/kernel/random/boot_id")
	thisBoot := strings.TrimSpace(string(id))
	// boot-config before last-boot keeps the previous boot's capture, which reads the ring
	capture := rebootDir + "/flight/boot/boot.dat"
	st0, err := os.Stat(capture)
	if err != nil {
		t.Fatal(err)
	}
	var bc struct {
		Kept bool `json:"kept"`
	}
	if r := ftctlRun(t, "flight", "boot-config", rebootName, "--boot-dir", rebootDir, "-o", "json"); r.code != 0 || json.Unmarshal([]byte(r.stdout), &bc) != nil || !bc.Kept {
		t.Errorf("boot-config in the boot after: want the earlier capture kept: %v", r)
	}
	if st1, err := os.Stat(capture); err != nil || !os.SameFile(st0, st1) || !st1.ModTime().Equal(st0.ModTime()) {
		t.Errorf("boot-config replaced the previous boot's capture %s (%v)", capture, err)
	}
	if before, err := os.ReadFile(idFile); err != nil || strings.TrimSpace(string(before)) == thisBoot {
		t.Errorf("the capture's boot id %q (%v): want the boot before this one's", before, err)
	}
	out := filepath.Join(t.TempDir(), "last.dat")
	r := ftctlRun(t, "flight", "last-boot", rebootName, "-w", out, "--boot-dir", rebootDir)
	if r.code != 0 {
		t.Fatalf("last-boot: %v", r)
	}
	t.Logf("last-boot: %s", strings.TrimSpace(r.stderr))
	rep := ftctlRun(t, "report", out)
	if rep.code != 0 {
		t.Fatalf("report: %v", rep)
	}
	checkMarkers(t, "ftctl report", rep.stdout)
	if _, err := os.Stat(traceCmd); err == nil {
		tc, _ := runTraceCmd(t, "report", out)
		checkMarkers(t, "trace-cmd report", tc)
	} else {
		t.Logf("no trace-cmd in this VM: %v", err)
	}
	if now, _ := os.ReadFile(idFile); strings.TrimSpace(string(now)) != thisBoot {
		t.Errorf("last-boot did not save this boot's capture (boot id %q, this boot %q)", now, thisBoot)
	}
	// read, the ring is empty: a second last-boot has nothing of the previous boot
	again := ftctlRun(t, "flight", "last-boot", rebootName, "-w", out+"2", "--boot-dir", rebootDir)
	if rep := ftctlRun(t, "report", out+"2"); again.code != 0 || strings.Contains(rep.stdout, rebootMarker(1)) {
		t.Errorf("a second last-boot: %v; report %v", again, rep)
	}
}

// checkMarkers: every marker of the boot before, once each, in order.
func checkMarkers(t *testing.T, who, text string) {
	t.Helper()
	last := -1
	for i := 1; i <= rebootCount; i++ {
		m := rebootMarker(i)
		at := strings.Index(text, m)
		if at < 0 || strings.Count(text, m) != 1 || at < last {
			t.Errorf("%s: marker %d missing, repeated or out of order (at %d, the one before at %d)", who, i, at, last)
			if len(text) > 3000 {
				text = text[:3000]
			}
			t.Fatalf("%s:\n%s", who, text)
		}
		last = at
	}
}
