//go:build vmtest

package vmtest

import (
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// recorderProfile is a recorder of process exits named name whose spec.flight dumps into dir,
// the section's other lines (rate, keep, triggers) given as flight, indented for it.
func recorderProfile(name, dir, flight string) string {
	return fmt.Sprintf(`apiVersion: ftctl.dev/v1alpha1
kind: TracingProfile
metadata:
  name: %s
spec:
  instance:
    bufferKB: 1024
  events:
    - name: sched:sched_process_exit
  flight:
    dir: %s
%s`, name, dir, flight)
}

// agentFlightProfile is a recorder of process exits whose spec.flight dumps into dir when a
// process named comm exits.
func agentFlightProfile(dir, comm string) string {
	return recorderProfile("agentfl", dir, fmt.Sprintf(`    rate: 2s
    keep: 0
    triggers:
      - event: sched:sched_process_exit
        filter: comm == "%s"
`, comm))
}

// namedTrue is a copy of true named name: one thread, one exit, its comm the name.
func namedTrue(t *testing.T, name string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	bb, _ := exec.LookPath("true")
	if b, err := os.ReadFile(bb); err != nil || os.WriteFile(p, b, 0o755) != nil {
		t.Fatal(err)
	}
	return p
}

// TestAgentFlight: the agent runs its profile's flight recorder and triggers. The exit of a
// process named as the trigger's filter says dumps the ring into spec.flight.dir, with the
// markers written before it, which ftctl report reads; the metrics count the fire and the dump;
// SIGUSR1 dumps too; a new profile file re-arms the new trigger in place of the old. SIGKILL of
// the agent leaves the recorder recording, reset leaves it alone (and removes the dead agent's
// arming instance), flight stop removes everything.
func TestAgentFlight(t *testing.T) {
	dir := t.TempDir()
	file := profileFile(t, "agentfl.yaml", agentFlightProfile(dir, "fagentproc"))
	warmProfile(t, file) // the rings expanded first: before is after that
	before := controlState(t)
	t.Cleanup(func() { ftctlRun(t, "flight", "stop", "agentfl") })
	proc, proc2 := namedTrue(t, "fagentproc"), namedTrue(t, "fagentproc2")
	sock := filepath.Join(t.TempDir(), "notify")
	conn, err := net.ListenUnixgram("unixgram", &net.UnixAddr{Name: sock, Net: "unixgram"})
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	next := func(want string) {
		t.Helper()
		buf := make([]byte, 256)
		conn.SetReadDeadline(time.Now().Add(30 * time.Second))
		n, err := conn.Read(buf)
		if err != nil || string(buf[:n]) != want {
			t.Fatalf("sd_notify: %q %v, want %q", buf[:n], err, want)
		}
	}
	env := []string{"NOTIFY_SOCKET=" + sock}
	a := startAgentEnv(t, env, file)
	next("READY=1")
	defer func() {
		if a.cmd.ProcessState == nil {
			a.cmd.Process.Kill()
			a.cmd.Wait()
		}
	}()
	if !strings.Contains(a.errb.String(), "flight agentfl armed") {
		t.Fatalf("not armed:\n%s", a.errb)
	}
	const inst = "ftctl-owned-agentfl"
	trig := `sched:sched_process_exit if comm == "fagentproc"`
	bigMarkers(t, inst, "agfl-marker", 50)
	exec.Command("true").Run() // another exit: no dump
	exec.Command(proc).Run()
	a.waitMetric(t, 30*time.Second, "ftctl_flight_dumps_total", func(v float64) bool { return v >= 1 })
	files, _ := filepath.Glob(filepath.Join(dir, "agentfl-*.dat"))
	if len(files) != 1 {
		t.Fatalf("dumps in %s: %v\n%s", dir, files, a.errb)
	}
	rep := ftctlRun(t, "report", files[0])
	if rep.code != 0 || !strings.Contains(rep.stdout, "agfl-marker-0 ") || !strings.Contains(rep.stdout, "agfl-marker-49 ") {
		t.Errorf("the dump lacks the markers written before its trigger: %v", rep)
	}
	mfs := a.metrics(t)
	for _, c := range []struct {
		name   string
		labels []string
		ok     func(float64) bool
	}{
		{"ftctl_flight_triggers_fired_total", []string{"trigger", trig}, func(v float64) bool { return v == 1 }},
		{"ftctl_flight_triggers_fired_total", []string{"trigger", "SIGUSR1"}, func(v float64) bool { return v == 0 }},
		{"ftctl_flight_dumps_total", nil, func(v float64) bool { return v == 1 }},
		{"ftctl_flight_dump_failures_total", nil, func(v float64) bool { return v == 0 }},
		{"ftctl_flight_armed", nil, func(v float64) bool { return v == 1 }},
		{"ftctl_flight_ring_fill_ratio", []string{"trace_instance", inst}, func(v float64) bool { return v > 0 && v <= 1 }},
	} {
		if v, ok := metricValue(mfs, c.name, c.labels...); !ok || !c.ok(v) {
			t.Errorf("%s%v = %v (present %v)", c.name, c.labels, v, ok)
		}
	}
	if code, body := a.get(t, "/readyz"); code != 200 {
		t.Errorf("/readyz: %d %s", code, body)
	}

	a.cmd.Process.Signal(syscall.SIGUSR1)
	a.waitMetric(t, 30*time.Second, "ftctl_flight_dumps_total", func(v float64) bool { return v >= 2 })
	a.waitMetric(t, 5*time.Second, "ftctl_flight_triggers_fired_total", func(v float64) bool { return v == 1 }, "trigger", "SIGUSR1")

	// a new file: its trigger armed in place of the old one
	if err := os.WriteFile(file, []byte(agentFlightProfile(dir, "fagentproc2")), 0o600); err != nil {
		t.Fatal(err)
	}
	trig2 := `sched:sched_process_exit if comm == "fagentproc2"`
	next("RELOADING=1")
	next("READY=1")
	a.waitMetric(t, 30*time.Second, "ftctl_flight_triggers_fired_total", func(v float64) bool { return v == 0 }, "trigger", trig2)
	time.Sleep(2100 * time.Millisecond) // past the rate limit of the last dump
	exec.Command(proc).Run()            // the old trigger's: disarmed
	exec.Command(proc2).Run()
	a.waitMetric(t, 30*time.Second, "ftctl_flight_triggers_fired_total", func(v float64) bool { return v == 1 }, "trigger", trig2)
	a.waitMetric(t, 30*time.Second, "ftctl_flight_dumps_total", func(v float64) bool { return v == 3 })
	if v, _ := metricValue(a.metrics(t), "ftctl_flight_triggers_fired_total", "trigger", trig); v != 1 {
		t.Errorf("the replaced trigger fired after the reload: %v", v)
	}
	st := statusOf(t, "agentfl")
	if st.Arm == nil || !st.Arm.Alive || len(st.Arm.Triggers) != 2 || st.Arm.Triggers[1].Fired != 1 {
		t.Fatalf("flight status while the agent arms it: %+v", st.Arm)
	}

	armInstance := st.Arm.Instance
	a.cmd.Process.Kill()
	a.cmd.Wait()
	markers(t, inst, 777, 777)
	if r := ftctlRun(t, "reset"); r.code != 0 || !strings.Contains(r.stdout, "kept declared owner agentfl") {
		t.Errorf("reset after SIGKILL of the agent: %v", r)
	}
	if _, err := os.Stat(filepath.Join(tracing, "instances", armInstance)); err == nil {
		t.Errorf("reset left the dead agent's arming instance %s", armInstance)
	}
	out := filepath.Join(dir, "after.dat")
	if r := ftctlRun(t, "flight", "dump", "agentfl", "-w", out); r.code != 0 || !strings.Contains(ftctlRun(t, "report", out).stdout, "flight-marker-777\n") {
		t.Errorf("the ring does not record after the agent was killed: %v", r)
	}

	// a new agent adopts the recorder without setting it up again; SIGTERM disarms, and the
	// recorder goes on
	a = startAgentEnv(t, env, file)
	next("READY=1")
	if !strings.Contains(a.errb.String(), "agent: profile agentfl in sync") || !strings.Contains(a.errb.String(), "flight agentfl armed") {
		t.Errorf("the restarted agent:\n%s", a.errb)
	}
	a.stop(t)
	next("STOPPING=1")
	if st := statusOf(t, "agentfl"); st.Arm != nil || len(st.Events) != 1 {
		t.Errorf("flight status after the agent stopped: %+v %+v", st, st.Arm)
	}
	markers(t, inst, 888, 888)
	out = filepath.Join(dir, "after2.dat")
	if r := ftctlRun(t, "flight", "dump", "agentfl", "-w", out); r.code != 0 || !strings.Contains(ftctlRun(t, "report", out).stdout, "flight-marker-888\n") {
		t.Errorf("the ring does not record after the agent stopped: %v", r)
	}
	if r := ftctlRun(t, "flight", "stop", "agentfl"); r.code != 0 {
		t.Fatalf("flight stop: %v", r)
	}
	if after := controlState(t); after != before {
		t.Errorf("state after flight stop:\n%s", lineDiff(before, after))
	}
}

// TestFlightArmProfileTriggers: flight arm -f takes the triggers, the directory and the rate
// limit from the profile's spec.flight, adds the flags' triggers to them, and SIGHUP re-arms a
// changed section: the new trigger fires, the old one no longer does.
func TestFlightArmProfileTriggers(t *testing.T) {
	dir := t.TempDir()
	file := profileFile(t, "armfl.yaml", strings.Replace(agentFlightProfile(dir, "farmproc"), "name: agentfl", "name: armfl", 1))
	t.Cleanup(func() { ftctlRun(t, "flight", "stop", "armfl") })
	proc, proc2 := namedTrue(t, "farmproc"), namedTrue(t, "farmproc2")
	cmd, errb, wait := armed(t, nil, "armfl", "-f", file, "--stop-at-exit", "--on-warn")
	wait("armed: SIGUSR1", 1)
	if !strings.Contains(errb.String(), `"sched:sched_process_exit if comm == \"farmproc\"", "warn" dumps into `+dir) {
		t.Errorf("armed from the profile and the flags:\n%s", errb)
	}
	st := statusOf(t, "armfl")
	if st.Arm == nil || len(st.Arm.Triggers) != 3 || st.Arm.Triggers[1].Kind != "event" || st.Arm.Triggers[2].Kind != "warn" {
		t.Fatalf("status: %+v", st.Arm)
	}
	exec.Command(proc).Run()
	wait("armfl: dumped", 1)
	if files, _ := filepath.Glob(filepath.Join(dir, "armfl-*.dat")); len(files) != 1 {
		t.Errorf("dumps in the profile's dir: %v", files)
	}
	if err := os.WriteFile(file, []byte(strings.Replace(agentFlightProfile(dir, "farmproc2"), "name: agentfl", "name: armfl", 1)), 0o600); err != nil {
		t.Fatal(err)
	}
	cmd.Process.Signal(syscall.SIGHUP)
	wait("armfl re-armed", 1)
	time.Sleep(2100 * time.Millisecond) // the profile's rate: 2s
	exec.Command(proc).Run()
	exec.Command(proc2).Run()
	wait("armfl: dumped", 2)
	time.Sleep(500 * time.Millisecond)
	if n := strings.Count(errb.String(), "armfl: dumped"); n != 2 || !strings.Contains(errb.String(), `(sched:sched_process_exit if comm == "farmproc2")`) {
		t.Errorf("%d dumps after the re-arm:\n%s", n, errb)
	}
	cmd.Process.Signal(syscall.SIGTERM)
	if cmd.Wait(); cmd.ProcessState.ExitCode() != 143 {
		t.Errorf("arm after SIGTERM: %d\n%s", cmd.ProcessState.ExitCode(), errb)
	}
}
