//go:build vmtest

package vmtest

import (
	"bufio"
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/ftctl/ftctl/internal/fixture"
	"github.com/ftctl/ftctl/tracefs"
)

// startReady starts ftctl with --ready-fd 3 (a pipe) and waits for its ready line, without
// looking at tracefs: what a script does. It returns the time from the start to the line, and
// checks that the session traces by then (its instance's tracing_on, a hist trigger's "hist:").
func startReady(t *testing.T, args ...string) (*exec.Cmd, *bytes.Buffer, *fixture.SyncBuffer, time.Duration) {
	t.Helper()
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	// the flag goes before any -- COMMAND, after the words of a subcommand
	at := slices.Index(args, "--")
	if at < 0 {
		at = len(args)
	}
	cmd := ftctlCommand(t, slices.Concat(args[:at], []string{"--ready-fd", "3"}, args[at:])...)
	var out bytes.Buffer
	errb := &fixture.SyncBuffer{}
	cmd.Stdout, cmd.Stderr = &out, errb
	cmd.Env = []string{"PATH=/bin"}
	cmd.ExtraFiles = []*os.File{w}
	start := time.Now()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	w.Close()
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	line := make(chan string, 1)
	go func() {
		l, _ := bufio.NewReader(r).ReadString('\n')
		line <- l
	}()
	select {
	case l := <-line:
		armed := time.Since(start)
		if l != "ready\n" {
			cmd.Process.Kill()
			cmd.Wait()
			t.Fatalf("fd 3 got %q, want \"ready\\n\"; stderr:\n%s", l, errb.String())
		}
		checkArmed(t, cmd.Process.Pid, args[0])
		return cmd, &out, errb, armed
	case <-time.After(60 * time.Second):
		t.Fatalf("no ready line in 60 s; stderr:\n%s", errb.String())
	}
	return nil, nil, nil, 0
}

// checkArmed: when the ready line came, the session's instance traces (and for count by hist,
// its trigger is in place).
func checkArmed(t *testing.T, pid int, command string) {
	t.Helper()
	instance, group := sessionOf(t, pid)
	dir := filepath.Join(tracing, "instances", instance)
	if on, _ := os.ReadFile(filepath.Join(dir, "tracing_on")); strings.TrimSpace(string(on)) != "1" {
		t.Errorf("ready, but tracing_on of %s is %q", instance, on)
	}
	if command == "count" {
		b, _ := os.ReadFile(filepath.Join(dir, "events", group, "count", "trigger"))
		c, _ := os.ReadFile(filepath.Join(dir, "current_tracer"))
		if !strings.Contains(string(b), "hist:") && strings.TrimSpace(string(c)) != "function" {
			t.Errorf("ready, but neither a hist trigger (%q) nor the function tracer (%q)", b, c)
		}
	}
}

// TestReadyFD: a script that waits for --ready-fd's line and then runs its workload sees every
// call of it counted and measured, by count (both methods) and latency; the time from the start
// to the line is logged (BENCHMARKS.md's arming times).
func TestReadyFD(t *testing.T) {
	const n = 200
	file := "/tmp/ftctl-ready-reads"
	os.WriteFile(file, []byte(strings.Repeat("x", n+10)), 0o644)
	dd := "exec /bin/dd if=" + file + " of=/dev/null bs=1 count=" + strconv.Itoa(n)
	gate := "/tmp/ftctl-ready-go"
	for _, c := range []struct {
		name string
		args []string
	}{
		{"count/hist", []string{"count", "vfs_read", "--method", "hist", "-o", "json", "--duration", "60s"}},
		{"count/stream", []string{"count", "vfs_read", "--method", "stream", "-o", "json", "--duration", "60s"}},
		{"latency", []string{"latency", "vfs_read", "-o", "json", "--duration", "60s"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			var times []string
			for range 3 {
				os.Remove(gate)
				// the task that reads is the shell that waits, exec'd into dd: its pid is known first
				loop := exec.Command("/bin/sh", "-c", "while [ ! -e "+gate+" ]; do sleep 0.05; done; "+dd)
				if err := loop.Start(); err != nil {
					t.Fatal(err)
				}
				cmd, out, errb, armed := startReady(t, append(c.args, "--pid", strconv.Itoa(loop.Process.Pid))...)
				times = append(times, armed.Round(10*time.Millisecond).String())
				os.WriteFile(gate, nil, 0o644)
				if err := loop.Wait(); err != nil {
					t.Fatal(err)
				}
				endWith(t, cmd, syscall.SIGINT, errb)
				if !strings.Contains(errb.String(), "ftctl: armed: ") {
					t.Errorf("no armed notice on stderr:\n%s", errb)
				}
				var got uint64
				if c.args[0] == "latency" {
					got = parseLatency(t, out.String()).Count
				} else {
					got = callsOf(countRows(t, out.String(), c.args[3]), "vfs_read")
				}
				if got < n {
					t.Errorf("%d calls of vfs_read, want at least %d:\n%s\n%s", got, n, out, errb)
				}
			}
			t.Logf("arming (start to the ready line), kernel %s, %s: %s", tracefs.KernelRelease(), c.name, strings.Join(times, " "))
		})
	}
}

// TestReadyFDCommand: with -- COMMAND the notice and the line come before the command starts;
// a run that never arms closes the descriptor with nothing written; 0-2 are refused.
func TestReadyFDCommand(t *testing.T) {
	cmd, out, errb, _ := startReady(t, "trace", "-e", "sched:sched_process_exec", "--", "/bin/sh", "-c", "echo WORKLOAD >&2")
	if err := cmd.Wait(); err != nil {
		t.Fatalf("%v: %s", err, errb)
	}
	armed, work := strings.Index(errb.String(), "ftctl: armed: tracing is on in the instance"), strings.Index(errb.String(), "WORKLOAD")
	if armed < 0 || work < armed {
		t.Errorf("want the armed notice before the command's output:\n%s", errb)
	}
	if !strings.Contains(out.String(), "sched_process_exec") {
		t.Errorf("the command's exec was not traced:\n%s", out)
	}

	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	c := ftctlCommand(t, "count", "no_such_function_xyz", "--ready-fd", "3")
	c.ExtraFiles = []*os.File{w}
	var e bytes.Buffer
	c.Stderr = &e
	code := exitCode(c.Run())
	w.Close()
	got, _ := bufio.NewReader(r).ReadString('\n')
	r.Close()
	if code != 2 || got != "" {
		t.Errorf("a count of nothing: exit %d, fd 3 got %q; stderr:\n%s", code, got, e.String())
	}
	if r := ftctlRun(t, "latency", "vfs_read", "--ready-fd", "1"); r.code != 2 || !strings.Contains(r.stderr, "standard streams") {
		t.Errorf("--ready-fd 1: %v", r)
	}
}

// TestReadyFDFlightArm: flight arm writes its ready line once its triggers are awaited (its
// arming instance records): the trigger's event right after the line makes a dump.
func TestReadyFDFlightArm(t *testing.T) {
	t.Cleanup(func() { ftctlRun(t, "flight", "stop", "rdy") })
	if r := ftctlRun(t, "flight", "start", "rdy", "-e", "sched:sched_process_exit", "--buffer-kb", "1024"); r.code != 0 {
		t.Fatalf("flight start: %v", r)
	}
	proc, dir := namedTrue(t, "frdyproc"), t.TempDir()
	cmd, _, errb, armed := startReady(t, "flight", "arm", "rdy", "-d", dir, "--on", `sched:sched_process_exit if comm == "frdyproc"`)
	t.Logf("flight arm: start to the ready line %v", armed.Round(10*time.Millisecond))
	exec.Command(proc).Run() // busybox lacks the applet frdyproc: it says so, exits 127
	deadline := time.Now().Add(30 * time.Second)
	for !strings.Contains(errb.String(), "rdy: dumped") && time.Now().Before(deadline) {
		time.Sleep(100 * time.Millisecond)
	}
	endWith(t, cmd, syscall.SIGINT, errb)
	if files, _ := filepath.Glob(filepath.Join(dir, "rdy-*.dat")); len(files) != 1 {
		t.Errorf("dumps after the event that followed the ready line: %v\n%s", files, errb)
	}
}
