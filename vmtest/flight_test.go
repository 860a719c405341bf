//go:build vmtest

package vmtest

import (
	"encoding/json"
	"errors"
	"fmt"
	iofs "io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/ftctl/ftctl/internal/fixture"
)

// markers writes numbered markers from..to into an instance's trace_marker.
func markers(t *testing.T, inst string, from, to int) {
	t.Helper()
	for i := from; i <= to; i++ {
		write(t, "instances/"+inst+"/trace_marker", fmt.Sprintf("flight-marker-%d\n", i))
	}
}

// A flight recorder records with no process: started, it survives `ftctl reset`; a dump holds
// the markers written before it and leaves the recorder recording (the next dump holds what came
// after, not what the first took); `ftctl report` and trace-cmd read the dumps; stop removes
// everything start made.
func TestFlightRecorder(t *testing.T) {
	warmProfile(t, profileFile(t, "vmprof.json", vmprof(t, false)))
	before := controlState(t)
	t.Cleanup(func() { ftctlRun(t, "flight", "stop", "box") })
	r := ftctlRun(t, "flight", "start", "box", "-e", "sched:sched_process_exit", "--buffer-kb", "256")
	if r.code != 0 {
		t.Fatalf("flight start: %v", r)
	}
	if r := ftctlRun(t, "reset"); r.code != 0 || !strings.Contains(r.stdout, "kept declared owner box") {
		t.Fatalf("reset: %v", r)
	}
	markers(t, "ftctl-owned-box", 1, 50)
	dir := t.TempDir()
	first := filepath.Join(dir, "first.dat")
	if r := ftctlRun(t, "flight", "dump", "box", "-w", first); r.code != 0 {
		t.Fatalf("flight dump: %v", r)
	}
	markers(t, "ftctl-owned-box", 51, 51)
	second := filepath.Join(dir, "second.dat")
	if r := ftctlRun(t, "flight", "dump", "box", "-w", second); r.code != 0 {
		t.Fatalf("second flight dump: %v", r)
	}
	rep := ftctlRun(t, "report", first)
	for _, n := range []int{1, 25, 50} {
		if !strings.Contains(rep.stdout, fmt.Sprintf("flight-marker-%d\n", n)) {
			t.Errorf("the first dump lacks marker %d: %v", n, rep)
		}
	}
	if strings.Contains(rep.stdout, "flight-marker-51\n") {
		t.Errorf("the first dump holds a marker written after it")
	}
	rep2 := ftctlRun(t, "report", second)
	if !strings.Contains(rep2.stdout, "flight-marker-51\n") || strings.Contains(rep2.stdout, "flight-marker-50\n") {
		t.Errorf("the second dump holds what came after the first, and only that: %v", rep2)
	}
	needTraceCmd(t)
	out, _ := runTraceCmd(t, "report", first)
	if !strings.Contains(out, "flight-marker-50") {
		t.Errorf("trace-cmd report of the dump lacks the markers:\n%s", out)
	}
	r = ftctlRun(t, "flight", "status", "box", "-o", "json")
	var st []struct {
		Name      string `json:"name"`
		BufferKB  int    `json:"buffer_kb"`
		TracingOn bool   `json:"tracing_on"`
		Snapshot  bool   `json:"snapshot"`
	}
	if r.code != 0 || json.Unmarshal(items(r.stdout), &st) != nil || len(st) != 1 || st[0].Name != "box" || !st[0].TracingOn || st[0].BufferKB < 256 {
		t.Errorf("flight status: %+v %v", st, r)
	}
	if r := ftctlRun(t, "flight", "stop", "box"); r.code != 0 {
		t.Fatalf("flight stop: %v", r)
	}
	if after := controlState(t); after != before {
		t.Errorf("state after flight stop:\n%s", lineDiff(before, after))
	}
	if r := ftctlRun(t, "flight", "stop", "box"); r.code != 2 {
		t.Errorf("a second stop: %v", r)
	}
}

// flight arm: SIGUSR1 dumps (the markers before it in the dump), a second signal within
// --rate makes none, the dumps are rotated to --keep, SIGTERM ends it with 143 and the
// recorder goes on recording.
func TestFlightArm(t *testing.T) {
	t.Cleanup(func() { ftctlRun(t, "flight", "stop", "armed") })
	if r := ftctlRun(t, "flight", "start", "armed", "-e", "sched:sched_process_exit", "--buffer-kb", "128"); r.code != 0 {
		t.Fatalf("flight start: %v", r)
	}
	dir := t.TempDir()
	cmd := ftctlCommand(t, "flight", "arm", "armed", "-d", dir, "--keep", "2", "--rate", "2s")
	var errb fixture.SyncBuffer
	cmd.Stderr = &errb
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	waitFor := func(what string, n int) {
		t.Helper()
		for i := 0; i < 300 && strings.Count(errb.String(), what) < n; i++ {
			time.Sleep(100 * time.Millisecond)
		}
		if strings.Count(errb.String(), what) < n {
			t.Fatalf("no %d× %q:\n%s", n, what, errb.String())
		}
	}
	waitFor("armed: SIGUSR1", 1)
	for k := 1; k <= 3; k++ {
		markers(t, "ftctl-owned-armed", k*10, k*10)
		cmd.Process.Signal(syscall.SIGUSR1)
		waitFor("armed: dumped", k)
		if k == 1 {
			cmd.Process.Signal(syscall.SIGUSR1) // within --rate
			waitFor("within the rate limit", 1)
		}
		time.Sleep(2100 * time.Millisecond) // past --rate
	}
	files, _ := filepath.Glob(filepath.Join(dir, "armed-*.dat"))
	if len(files) != 2 || !strings.Contains(errb.String(), "removed the old dump") {
		t.Fatalf("dumps after rotation to 2: %v\n%s", files, errb.String())
	}
	rep := ftctlRun(t, "report", files[1])
	if !strings.Contains(rep.stdout, "flight-marker-30\n") || strings.Contains(rep.stdout, "flight-marker-20\n") {
		t.Errorf("the newest dump holds the marker before its signal, and not the last dump's: %v", rep)
	}
	cmd.Process.Signal(syscall.SIGTERM)
	if err := cmd.Wait(); cmd.ProcessState.ExitCode() != 143 {
		t.Errorf("flight arm after SIGTERM: %v %d", err, cmd.ProcessState.ExitCode())
	}
	markers(t, "ftctl-owned-armed", 99, 99)
	out := filepath.Join(dir, "after.dat")
	if r := ftctlRun(t, "flight", "dump", "armed", "-w", out); r.code != 0 || !strings.Contains(ftctlRun(t, "report", out).stdout, "flight-marker-99\n") {
		t.Errorf("the recorder does not record after arm ended: %v", r)
	}
}

// reset --all removes a flight recorder's instance (its owner), and with it the recorder's
// state in /run/ftctl/flight: nothing names a recorder that is gone. Its dry run lists that
// state (it did not, before: no owner was deleted in the dry run, so none was gone).
func TestFlightResetAll(t *testing.T) {
	t.Cleanup(func() { ftctlRun(t, "flight", "stop", "gone") })
	if r := ftctlRun(t, "flight", "start", "gone", "-e", "sched:sched_process_exit", "--buffer-kb", "64"); r.code != 0 {
		t.Fatalf("flight start: %v", r)
	}
	// the dry run lists the recorder's state among what it would remove, and removes nothing
	if r := ftctlRun(t, "--dry-run", "reset", "--all"); r.code != 0 || !strings.Contains(r.stderr, "would remove flight recorder gone's state") {
		t.Errorf("reset --all --dry-run does not list the recorder's state: %v", r)
	}
	if _, err := os.Stat("/run/ftctl/flight/gone"); err != nil {
		t.Errorf("the dry run removed /run/ftctl/flight/gone: %v", err)
	}
	if r := ftctlRun(t, "reset", "--all", "--yes"); r.code != 0 {
		t.Fatalf("reset --all: %v", r)
	}
	if _, err := os.Stat("/run/ftctl/flight/gone"); !errors.Is(err, iofs.ErrNotExist) {
		t.Errorf("reset --all left /run/ftctl/flight/gone: %v", err)
	}
	if r := ftctlRun(t, "flight", "status"); r.code != 0 || strings.Contains(r.stdout, "gone") {
		t.Errorf("flight status after reset --all: %v", r)
	}
}
