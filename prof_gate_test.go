package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"
)

// A profiling build's gate (`ftctl __exec`, the process that becomes a traced command) must not
// start a CPU profile of its own: the profile's interval timer survives the exec, and the
// command, whose SIGPROF is the default action, dies of the first tick (exit 155 from the
// shell, what `ftctl trace -- COMMAND` of such a build reported).
func TestProfileBuildGateKeepsNoTimer(t *testing.T) {
	if testing.Short() {
		t.Skip("builds ftctl with the profile tag")
	}
	dir := t.TempDir()
	bin := filepath.Join(dir, "ftctl")
	build := exec.Command("go", "build", "-tags", "profile", "-o", bin, ".")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build -tags profile: %v\n%s", err, out)
	}
	sh, err := exec.LookPath("sh")
	if err != nil {
		t.Skip("no sh")
	}
	// the command burns about a second of CPU: ITIMER_PROF ticks every 10 ms of it
	cmd := exec.Command(bin, "__exec", "--", sh, "-c", "i=0; while [ $i -lt 300000 ]; do i=$((i+1)); done")
	cmd.Env = append(os.Environ(), "FTCTL_CPUPROFILE="+filepath.Join(dir, "cpu.prof"))
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.ExtraFiles = []*os.File{r}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	r.Close()
	w.Write([]byte{1})
	w.Close()
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err = <-done:
	case <-time.After(60 * time.Second):
		cmd.Process.Kill()
		t.Fatal("the command did not end in 60 s")
	}
	if err != nil {
		t.Fatalf("the command under a profiling build's gate: %v (SIGPROF is signal 27)", err)
	}
	if _, err := os.Stat(filepath.Join(dir, "cpu.prof")); err == nil {
		t.Error("the gate wrote a CPU profile (it would overwrite the traced run's)")
	}
}
