//go:build vmtest

package vmtest

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"
)

// Coexistence: ftctl never observes itself, never touches what it cannot prove it owns, and
// never reports what did not happen.

// workload starts a shell that opens and reads a file every 50 ms until the test ends: the
// events a user wants to see, of comm "sh" and a pid the test knows.
func workload(t *testing.T) int {
	t.Helper()
	cmd := exec.Command("/bin/sh", "-c", "while :; do read l < /proc/version; sleep 0.05; done")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	return cmd.Process.Pid
}

// whose counts the events of NDJSON output by comm, and those of pid.
func whose(t *testing.T, out string, pid int) (byComm map[string]int, ofPID int) {
	t.Helper()
	byComm = map[string]int{}
	for _, ev := range events(t, out) {
		if ev["event"] == "summary" {
			continue
		}
		c, _ := ev["comm"].(string)
		byComm[c]++
		if p, _ := ev["pid"].(float64); int(p) == pid {
			ofPID++
		}
	}
	return byComm, ofPID
}

// kprobeOnOpen defines a probe on do_sys_openat2 recording the file name, removed at the end.
func kprobeOnOpen(t *testing.T, group, event string) {
	t.Helper()
	write(t, "kprobe_events", "p:"+group+"/"+event+" do_sys_openat2 path=+0(%si):string\n")
	removeProbeLater(t, group, event)
}

// ftctl trace on a read path sees the workload, not its own reads of the ring buffer (before:
// 232,912 events in 3 s, every one ftctl's own, none of the workload's).
func TestSelfNotObservedTrace(t *testing.T) {
	pid := workload(t)
	for _, c := range []struct {
		name string
		args []string
	}{
		{"function filter", []string{"trace", "-f", "vfs_read", "--duration", "3s", "-o", "json"}},
		{"kprobe", []string{"trace", "-p", "p:open do_sys_openat2 path=+0(%si):string", "--duration", "3s", "-o", "json"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := ftctlRun(t, c.args...)
			if r.code != 0 {
				t.Fatalf("%v", r)
			}
			byComm, ofWorkload := whose(t, r.stdout, pid)
			if byComm["ftctl"] != 0 || ofWorkload < 10 {
				t.Errorf("%d events of ftctl, %d of the workload (pid %d): by comm %v; stderr:\n%s", byComm["ftctl"], ofWorkload, pid, byComm, r.stderr)
			}
			// --include-self shows them: the test can see ftctl's events when they are there.
			r = ftctlRun(t, append(c.args[:len(c.args)-4:len(c.args)-4], "--duration", "1s", "-o", "json", "--include-self")...)
			if byComm, _ := whose(t, r.stdout, pid); r.code != 0 || byComm["ftctl"] == 0 {
				t.Errorf("--include-self: no event of ftctl: %v; %v", byComm, r.stderr)
			}
		})
	}
}

// ftctl stream on an instance it does not own leaves its own events out as it decodes them,
// with both readers, and counts them in the summary.
func TestSelfNotObservedStream(t *testing.T) {
	pid := workload(t)
	inst := streamInstance(t, "self_fn")
	write(t, inst+"/set_ftrace_filter", "vfs_read\n")
	write(t, inst+"/current_tracer", "function\n")
	t.Cleanup(func() { write(t, inst+"/current_tracer", "nop\n") })
	for _, reader := range []string{"binary", "text"} {
		t.Run(reader, func(t *testing.T) {
			// What an earlier ftctl did after its last read is not this one's to leave out.
			truncate(t, inst+"/trace")
			r := ftctlRun(t, "-B", "self_fn", "stream", "-o", "json", "--summary", "--duration", "2s", "--reader", reader)
			if r.code != 0 {
				t.Fatalf("%v", r)
			}
			byComm, ofWorkload := whose(t, r.stdout, pid)
			evs := events(t, r.stdout)
			sum := evs[len(evs)-1]
			if byComm["ftctl"] != 0 || ofWorkload < 10 || sum["own"].(float64) == 0 {
				t.Errorf("%d events of ftctl, %d of the workload; own %v; by comm %v", byComm["ftctl"], ofWorkload, sum["own"], byComm)
			}
			truncate(t, inst+"/trace")
			r = ftctlRun(t, "-B", "self_fn", "stream", "-o", "json", "--duration", "1s", "--reader", reader, "--include-self")
			if byComm, _ := whose(t, r.stdout, pid); byComm["ftctl"] == 0 {
				t.Errorf("--include-self: no event of ftctl: %v", byComm)
			}
		})
	}
}

// On a kprobe on do_sys_openat2, `stream --count 3` ends with three of the workload's opens,
// not ftctl's own (of kallsyms, saved_cmdlines, per_cpu/...).
func TestSelfNotObservedKprobeCount(t *testing.T) {
	pid := workload(t)
	inst := streamInstance(t, "self_kp")
	kprobeOnOpen(t, "selftest", "open")
	write(t, inst+"/events/selftest/open/enable", "1\n")
	t.Cleanup(func() { write(t, inst+"/events/selftest/open/enable", "0\n") })
	for _, reader := range []string{"binary", "text"} {
		truncate(t, inst+"/trace") // an earlier ftctl's opens after its last read are not this one's
		r := ftctlRun(t, "-B", "self_kp", "stream", "-o", "json", "--event", "open", "--count", "3", "--reader", reader)
		if r.code != 0 {
			t.Fatalf("%s: %v", reader, r)
		}
		// The three events are the workload's, or the harness's own (exec.Cmd opens /dev/null
		// as ftctl's stdin after the truncate): none is ftctl's.
		byComm, ofWorkload := whose(t, r.stdout, pid)
		ofHarness := byComm[filepath.Base(os.Args[0])] // by comm: it may be any of its threads
		if byComm["ftctl"] != 0 || ofWorkload+ofHarness != 3 || ofWorkload < 2 {
			t.Errorf("%s: %d of 3 events the workload's, %d the harness's, %d ftctl's: %v\n%s", reader, ofWorkload, ofHarness, byComm["ftctl"], byComm, r.stdout)
		}
	}
}

// The console, in its private instance (the kernel leaves ftctl out) and attached with -B to an
// instance already tracing vfs_read (the reader leaves ftctl out), shows the workload's reads
// and none of its own.
func TestTUIDoesNotSeeItself(t *testing.T) {
	pid := workload(t)
	ownRow := regexp.MustCompile(`ftctl-[0-9]+ `)
	workRow := fmt.Sprintf("sh-%d", pid)
	check := func(r *tuiRun) {
		t.Helper()
		r.waitFor(workRow)
		time.Sleep(time.Second)
		if ownRow.MatchString(r.screen.String()) {
			t.Errorf("the console shows its own events:\n%s", r.screen)
		}
		r.keys("q")
		if code := r.wait(); code != 0 {
			t.Errorf("exit %d", code)
		}
	}
	t.Run("private", func(t *testing.T) {
		r := startTUI(t, "tui")
		r.applyPattern("vfs_read")
		r.keys("\x1b")
		r.keys("T")
		r.waitFor("tracer function")
		r.keys("1")
		check(r)
	})
	t.Run("attached", func(t *testing.T) {
		inst := streamInstance(t, "self_tui")
		write(t, inst+"/set_ftrace_filter", "vfs_read\n")
		write(t, inst+"/current_tracer", "function\n")
		truncate(t, inst+"/trace")
		t.Cleanup(func() { write(t, inst+"/current_tracer", "nop\n") })
		check(startTUI(t, "-B", "self_tui", "tui"))
	})
}

// A file name holding a newline and a line shaped like the kernel's cannot forge an event: one
// event, the whole name in its arguments, no event of the fake comm, in every reader and mode.
func TestProbeStringCannotForgeEvents(t *testing.T) {
	inst := streamInstance(t, "forge")
	kprobeOnOpen(t, "forgetest", "open")
	write(t, inst+"/events/forgetest/open/enable", "1\n")
	t.Cleanup(func() { write(t, inst+"/events/forgetest/open/enable", "0\n") })
	name := "/tmp/x\n  sshd-4242 [000] ..... 12345.678901: tracing_mark_write: forged"
	for _, mode := range [][]string{
		{"-o", "json"}, {"-o", "json", "--reader", "text"}, {"-o", "json", "--grep", "forged"},
		{"-o", "json", "--raw"}, {}, {"--reader", "text"}, {"--raw"},
	} {
		t.Run(strings.Join(mode, " "), func(t *testing.T) {
			write(t, inst+"/tracing_on", "1\n")
			p := startStream(t, nil, append([]string{"-B", "forge", "stream", "--event", "open"}, mode...)...)
			os.Open(name) // fails (no such file); the probe records the name all the same
			time.Sleep(300 * time.Millisecond)
			if code := endStream(t, inst, p); code != 0 {
				t.Fatalf("exit %d: %s", code, p.errb)
			}
			out := p.out.String()
			if len(mode) > 0 && mode[0] == "-o" {
				n := 0
				for _, ev := range events(t, out) {
					if ev["comm"] == "sshd" || ev["pid"] == float64(4242) {
						t.Errorf("a forged event: %v", ev)
					}
					if args, _ := ev["args"].(map[string]any); args != nil && args["path"] == name {
						n++
					}
				}
				if n != 1 {
					t.Errorf("%d events with the whole name:\n%s", n, out)
				}
				return
			}
			// text: one line holds the name, escaped; none starts with the fake context
			n := 0
			for _, line := range strings.Split(out, "\n") {
				if strings.Contains(line, "sshd-4242") {
					n++
					if !strings.Contains(line, `/tmp/x\n  sshd-4242`) {
						t.Errorf("the name is not whole on its line: %q", line)
					}
				}
			}
			if n != 1 {
				t.Errorf("%d lines mention sshd-4242:\n%s", n, out)
			}
		})
	}
}

// The command ftctl trace runs starts with default signal dispositions and an empty mask
// (before: SIGPIPE ignored, inherited from ftctl, and `yes | head -1` said "Broken pipe").
func TestTraceCommandStartsClean(t *testing.T) {
	r := ftctlRun(t, "trace", "-e", "sched:sched_process_exec", "--", "/bin/sh", "-c", "grep -E '^Sig(Blk|Ign)' /proc/self/status; yes | head -n 1")
	if r.code != 0 {
		t.Fatalf("%v", r)
	}
	for _, want := range []string{"SigBlk:\t0000000000000000", "SigIgn:\t0000000000000000"} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("the command's status lacks %q:\n%s", want, r.stdout)
		}
	}
	if strings.Contains(r.stderr, "Broken pipe") {
		t.Errorf("yes | head: %s", r.stderr)
	}
}

// A signal during the setup ends the session with the command never run.
func TestTraceSignalDuringSetupHoldsCommand(t *testing.T) {
	before := tracingState(t)
	marker := "/tmp/ftctl-setup-signal-marker"
	os.Remove(marker)
	cmd := ftctlCommand(t, "trace", "-f", "vfs_*", "-f", "ksys_*", "-p", "p:open do_sys_openat2", "--", "/bin/touch", marker)
	var errb bytes.Buffer
	cmd.Stderr = &errb
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	sessionOf(t, cmd.Process.Pid) // the instance is made: the setup is under way
	cmd.Process.Signal(syscall.SIGTERM)
	err := cmd.Wait()
	if code := exitCode(err); code != 130 && code != 143 {
		t.Errorf("exit %d: %s", code, errb.String())
	}
	time.Sleep(200 * time.Millisecond)
	if _, err := os.Stat(marker); err == nil {
		t.Error("the command ran after a signal during the setup")
	}
	checkWorld(t, before)
}

// A reset in another pid namespace, where the session's pid is not visible, leaves a running
// session alone (before: on 6.1 it removed the live session's instance, on 6.12 the session
// died), and says so.
func TestResetFromAnotherPIDNamespace(t *testing.T) {
	before := sessionWorld(t)
	cmd, out, errb := startTrace(t)
	instance, group := sessionOf(t, cmd.Process.Pid)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	res, err := exec.CommandContext(ctx, "/bin/unshare", "-p", "-f", "--mount-proc", ftctl, "reset").CombinedOutput()
	if err != nil {
		t.Errorf("reset in a new pid namespace: %v\n%s", err, res)
	}
	if !strings.Contains(string(res), "left session") || !strings.Contains(string(res), "in use") {
		t.Errorf("reset does not say it left the running session:\n%s", res)
	}
	if _, err := os.Stat(filepath.Join(tracing, "instances", instance)); err != nil {
		t.Errorf("the running session's instance is gone: %v", err)
	}
	if !strings.Contains(read(t, "kprobe_events"), group+"/open") {
		t.Errorf("the running session's probe is gone:\n%s", read(t, "kprobe_events"))
	}
	if cmd.ProcessState != nil {
		t.Fatal("the session died")
	}
	cmd.Process.Signal(os.Interrupt)
	if code := exitCode(cmd.Wait()); code != 130 {
		t.Errorf("the session ended with %d; stdout %s; stderr:\n%s", code, out, errb)
	}
	checkWorld(t, before)
}

// Two sessions run as pid 1 of two pid namespaces (two containers) get names of their own
// (before: both were ftctl-1, and the second failed).
func TestSessionsOfSamePIDInTwoNamespaces(t *testing.T) {
	before := tracingState(t)
	var cmds []*exec.Cmd
	for range 2 {
		c := exec.Command("/bin/unshare", "-p", "-f", "--mount-proc", ftctl, "trace", "-e", "sched:sched_switch", "--duration", "3s", "-o", "json")
		var errb bytes.Buffer
		c.Stderr = &errb
		c.Stdout = new(bytes.Buffer)
		if err := c.Start(); err != nil {
			t.Fatal(err)
		}
		cmds = append(cmds, c)
		t.Cleanup(func() {
			if t.Failed() {
				t.Logf("stderr: %s", errb.String())
			}
		})
	}
	deadline := time.Now().Add(20 * time.Second)
	for {
		m, _ := filepath.Glob(filepath.Join(tracing, "instances", "ftctl-1-*"))
		if len(m) == 2 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("instances of pid 1: %v", m)
		}
		time.Sleep(20 * time.Millisecond)
	}
	for _, c := range cmds {
		if err := c.Wait(); err != nil {
			t.Errorf("a session: %v", err)
		}
		checkJSON(t, c.Args[4:], c.Stdout.(*bytes.Buffer).String()) // ftctl's, through unshare
	}
	checkWorld(t, before)
}

// reset --all removes instances whose names ftctl would not create (the kernel accepts them),
// escapes them in what it prints, and claims only what it did.
func TestResetAllOddInstanceNames(t *testing.T) {
	odd := []string{"a..b", "osc\x1b]0;owned\x07"}
	for _, n := range odd {
		if err := os.Mkdir(filepath.Join(tracing, "instances", n), 0o755); err != nil {
			t.Fatal(err)
		}
		removeInstanceLater(t, n)
	}
	r := ftctlRun(t, "reset", "--all", "--yes")
	if r.code != 0 {
		t.Errorf("%v", r)
	}
	if strings.ContainsRune(r.stdout+r.stderr, 0x1b) {
		t.Errorf("an escape sequence from an instance name reached the output: %q", r.stderr)
	}
	for _, n := range odd {
		if _, err := os.Stat(filepath.Join(tracing, "instances", n)); err == nil {
			t.Errorf("instance %q still there", n)
		}
	}
}

// --tracefs given as a symlink works for writers (the lock opens the root with O_NOFOLLOW).
func TestTracefsSymlink(t *testing.T) {
	link := "/tmp/tracing-link"
	os.Remove(link)
	if err := os.Symlink(tracing, link); err != nil {
		t.Fatal(err)
	}
	defer os.Remove(link)
	newInstance(t, "symlinked")
	r := ftctlRun(t, "--tracefs", link, "-B", "symlinked", "filter", "set", "vfs_read")
	if r.code != 0 {
		t.Errorf("%v", r)
	}
	var st struct {
		Tracefs struct{ Path string }
	}
	json.Unmarshal([]byte(ftctlRun(t, "--tracefs", link, "status", "-o", "json").stdout), &st)
	if st.Tracefs.Path != tracing {
		t.Errorf("status path %q, want the resolved %q", st.Tracefs.Path, tracing)
	}
}
