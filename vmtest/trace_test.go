//go:build vmtest

package vmtest

import (
	"bufio"
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// tracingState is what a session must leave as it found: the top level's settings, the
// kprobes and the instances.
func tracingState(t *testing.T) string {
	t.Helper()
	var b strings.Builder
	for _, f := range []string{"current_tracer", "tracing_on", "set_ftrace_filter", "set_ftrace_notrace",
		"set_ftrace_pid", "set_event", "set_event_pid", "kprobe_events", "options/function-fork", "options/event-fork"} {
		if _, err := os.Stat(filepath.Join(tracing, f)); err != nil {
			continue
		}
		b.WriteString("== " + f + "\n" + read(t, f))
	}
	names := instanceNames(t)
	sort.Strings(names)
	b.WriteString("== instances\n" + strings.Join(names, "\n") + "\n")
	return b.String()
}

// sessionWorld sets up what every trace test checks survives: another group's probe, another
// instance, a top-level filter.
func sessionWorld(t *testing.T) string {
	t.Helper()
	otherProbe(t)
	if err := os.Mkdir(filepath.Join(tracing, "instances", "keepme"), 0o755); err != nil && !os.IsExist(err) {
		t.Fatal(err)
	}
	removeInstanceLater(t, "keepme")
	write(t, "set_ftrace_filter", "vfs_read\n")
	t.Cleanup(func() { truncate(t, "set_ftrace_filter") })
	return tracingState(t)
}

func checkWorld(t *testing.T, before string) {
	t.Helper()
	if after := tracingState(t); after != before {
		t.Errorf("tracing state changed:\nbefore:\n%s\nafter:\n%s", before, after)
	}
}

var sessionArgs = []string{"trace", "-f", "vfs_*", "-p", "p:open do_sys_openat2 path=+0(%si):string", "-e", "sched:sched_switch"}

// startTrace starts ftctl trace and waits until its session is tracing.
func startTrace(t *testing.T, extra ...string) (*exec.Cmd, *bytes.Buffer, *bytes.Buffer) {
	t.Helper()
	cmd := ftctlCommand(t, append(append([]string{}, sessionArgs...), extra...)...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	cmd.Env = []string{"PATH=/bin"}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	waitSession(t, cmd.Process.Pid, &errb)
	return cmd, &out, &errb
}

// waitSession waits until the session's probe is enabled and then tracing is on: a new
// instance starts with tracing_on 1, which the session turns off until it is set up, so
// tracing_on alone could be seen before the setup.
func waitSession(t *testing.T, pid int, errb *bytes.Buffer) {
	t.Helper()
	instance, group := sessionOf(t, pid)
	dir := filepath.Join(tracing, "instances", instance)
	enabled := filepath.Join(dir, "events", group, "open", "enable")
	deadline := time.Now().Add(30 * time.Second)
	probeOn := false
	for time.Now().Before(deadline) {
		if !probeOn {
			b, err := os.ReadFile(enabled)
			probeOn = err == nil && strings.TrimSpace(string(b)) == "1"
		} else if b, err := os.ReadFile(filepath.Join(dir, "tracing_on")); err == nil && strings.TrimSpace(string(b)) == "1" {
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatalf("session of pid %d never started tracing; stderr:\n%s", pid, errb)
}

func exitCode(err error) int {
	if ee, ok := err.(*exec.ExitError); ok {
		return ee.ExitCode()
	}
	if err != nil {
		return -1
	}
	return 0
}

func TestTraceEndsCleanly(t *testing.T) {
	before := sessionWorld(t)
	t.Run("duration", func(t *testing.T) {
		r := ftctlRun(t, append(append([]string{}, sessionArgs...), "--duration", "2s")...)
		if r.code != 0 || !strings.Contains(r.stdout, "sched_switch") {
			t.Errorf("%v", r)
		}
		checkWorld(t, before)
	})
	t.Run("count", func(t *testing.T) {
		r := ftctlRun(t, append(append([]string{}, sessionArgs...), "--count", "3")...)
		if r.code != 0 || strings.Count(r.stdout, "\n") != 3 {
			t.Errorf("%v", r)
		}
		checkWorld(t, before)
	})
	for _, sig := range []syscall.Signal{syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP} {
		t.Run(sig.String(), func(t *testing.T) {
			cmd, _, errb := startTrace(t)
			time.Sleep(300 * time.Millisecond)
			start := time.Now()
			cmd.Process.Signal(sig)
			err := cmd.Wait()
			if code := exitCode(err); code != 128+int(sig) { // 130, 143, 129, as shells say
				t.Errorf("exit %d after %v, want %d; stderr:\n%s", code, sig, 128+int(sig), errb)
			}
			t.Logf("%v: ended (teardown included) in %v", sig, time.Since(start))
			checkWorld(t, before)
		})
	}
	t.Run("closed stdout", func(t *testing.T) {
		cmd := ftctlCommand(t, sessionArgs...)
		cmd.Env = []string{"PATH=/bin"}
		var errb bytes.Buffer
		cmd.Stderr = &errb
		pipe, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		line, err := bufio.NewReader(pipe).ReadString('\n')
		if err != nil {
			t.Fatalf("no line: %v\n%s", err, errb.String())
		}
		pipe.Close() // like | head -1
		if code := exitCode(cmd.Wait()); code != 0 {
			t.Errorf("exit %d after stdout closed (first line %q); stderr:\n%s", code, line, errb.String())
		}
		checkWorld(t, before)
	})
}

// -- COMMAND: the command's own calls are traced, its exit status returned.
func TestTraceCommand(t *testing.T) {
	before := sessionWorld(t)
	marker := "/tmp/ftctl-trace-command-marker"
	os.WriteFile(marker, []byte("x\n"), 0o644)
	r := ftctlRun(t, "trace", "-f", "vfs_read", "-p", "p:open do_sys_openat2 path=+0(%si):string",
		"--", "/bin/sh", "-c", "head -n1 "+marker+" >/dev/null; exit 3")
	if r.code != 3 {
		t.Errorf("exit %d, want the command's 3: %v", r.code, r)
	}
	if !strings.Contains(r.stdout, "vfs_read") || !strings.Contains(r.stdout, `path="`+marker+`"`) {
		t.Errorf("the command's calls are not in the output:\n%s", r.stdout)
	}
	for _, line := range strings.Split(r.stdout, "\n") {
		// The command runs as sh and head (busybox cat would use sendfile, not vfs_read);
		// before its exec, the gate (comm ftctl) reading its go-ahead is the same pid.
		if line != "" && !strings.Contains(line, "sh-") && !strings.Contains(line, "head-") && !strings.Contains(line, "ftctl-") && !strings.Contains(line, "<...>-") {
			t.Errorf("a line of another process: %q", line)
		}
	}
	checkWorld(t, before)
	// A command quick enough never to be switched out: the gate must exec from its main thread
	// (its pid) or the per-CPU pid filter, decided by another thread's pid, drops every event.
	// Before the fix, about half of such runs had no event.
	for i := 0; i < 6; i++ {
		r := ftctlRun(t, "trace", "-p", "p:open do_sys_openat2 path=+0(%si):string", "-o", "json", "--", "/bin/cat", "/proc/version")
		if r.code != 0 || !strings.Contains(r.stdout, `"path":"/proc/version"`) {
			t.Errorf("run %d: the quick command's open is missing: %v", i, r)
		}
	}
	checkWorld(t, before)
	if r := ftctlRun(t, "trace", "--", "/bin/sh", "-c", "exit 0"); r.code != 0 {
		t.Errorf("exit 0 command: %v", r)
	}
	// env(1)'s convention: 127 not found, 126 cannot run, 125 ftctl failed; else the
	// command's status, 128+N for a signal that killed it.
	os.WriteFile("/tmp/ftctl-noexec", []byte("#!/bin/sh\n"), 0o644)
	for _, c := range []struct {
		args []string
		code int
	}{
		{[]string{"--", "/no/such/command"}, 127},
		{[]string{"--", "/tmp/ftctl-noexec"}, 126},
		{[]string{"-p", "p:x no_such_symbol_ftctl", "--", "/bin/true"}, 125},
		{[]string{"-f", "no_such_function_ftctl", "--", "/bin/true"}, 125},
		{[]string{"--", "/bin/sh", "-c", "exit 125"}, 125},
		{[]string{"--", "/bin/sh", "-c", "kill -9 $$"}, 137},
	} {
		if r := ftctlRun(t, append([]string{"trace"}, c.args...)...); r.code != c.code {
			t.Errorf("trace %q: exit %d, want %d: %v", c.args, r.code, c.code, r)
		}
	}
	checkWorld(t, before)
}

// SIGKILL leaves the session's instance and probes; the next trace warns; reset removes them.
func TestTraceKilledThenReset(t *testing.T) {
	before := sessionWorld(t)
	cmd, _, _ := startTrace(t)
	instance, group := sessionOf(t, cmd.Process.Pid)
	cmd.Process.Kill()
	cmd.Wait()
	if !strings.Contains(read(t, "kprobe_events"), group+"/open") {
		t.Fatalf("no leftover probe after SIGKILL:\n%s", read(t, "kprobe_events"))
	}
	r := ftctlRun(t, "trace", "-e", "sched:sched_switch", "--count", "1")
	if r.code != 0 || !strings.Contains(r.stderr, "ftctl reset") || !strings.Contains(r.stderr, instance) {
		t.Errorf("no leftover warning: %v", r)
	}
	r = ftctlRun(t, "reset", "--dry-run")
	if r.code != 0 || !strings.Contains(r.stdout, "would remove") || tracingState(t) == before {
		t.Errorf("dry run: %v", r)
	}
	r = ftctlRun(t, "reset")
	if r.code != 0 || !strings.Contains(r.stdout, "removed session") || !strings.Contains(r.stdout, instance) {
		t.Errorf("reset: %v", r)
	}
	checkWorld(t, before)
	r = ftctlRun(t, "reset")
	if r.code != 0 || !strings.Contains(r.stderr, "no leftovers") {
		t.Errorf("second reset: %v", r)
	}
}

// Bad input changes nothing.
func TestTraceInvalid(t *testing.T) {
	before := sessionWorld(t)
	for _, args := range [][]string{
		{"trace", "-f", "no_such_function_ftctl"},
		{"trace", "-p", "p:x vfs_read %zz"},
		{"trace", "-e", "nosuchsys:nosuchevent"},
		{"trace", "--tracer", "function"},
		{"trace", "-f", "vfs_read", "-p", "p:ok vfs_read", "-p", "p:bad nosuch_symbol_ftctl"},
		// The second names the event the kernel gave the first: it would become a second
		// probe point of that event (issue 14 item 3).
		{"trace", "-p", "p vfs_read", "-p", "p:p_vfs_read_0 vfs_write", "--duration", "1s"},
	} {
		r := ftctlRun(t, args...) // an unknown symbol too: kallsyms tells before any set-up
		if r.code != 2 {
			t.Errorf("%q: exit %d, want 2: %v", args, r.code, r)
		}
		checkWorld(t, before)
	}
}

// reset --all returns everything to boot defaults, other users' state included.
func TestResetAll(t *testing.T) {
	otherProbe(t)
	os.Mkdir(filepath.Join(tracing, "instances", "resetme"), 0o755)
	write(t, "instances/resetme/events/sched/sched_switch/enable", "1")
	write(t, "set_ftrace_filter", "vfs_read\n")
	write(t, "events/sched/sched_switch/filter", "prev_pid == 1")
	write(t, "events/sched/sched_switch/enable", "1")
	// Triggers as other tools leave them. The kernel lists a hist trigger with its filter and
	// a key's modifier in sort= ("sort=bytes_req.log2"), and matches a removal ("!" + the
	// trigger) on the filter too; it refuses the listed sort form and takes a removal that
	// matches nothing without a word (seen on 6.1 and 6.12).
	triggers := []string{
		"hist:keys=common_pid:vals=bytes_req if bytes_req > 100",
		"hist:keys=bytes_req.log2:vals=hitcount:sort=bytes_req",
		"traceon:3 if bytes_req > 10",
		"stacktrace",
	}
	for _, trig := range triggers {
		write(t, "events/kmem/kmalloc/trigger", trig)
	}
	write(t, "events/sched/sched_switch/trigger", "hist:keys=next_pid:sort=next_pid.descending if prev_pid > 0")
	if r := ftctlRun(t, "reset", "--all"); r.code != 2 {
		t.Errorf("reset --all without --yes and without a terminal: %v", r)
	}
	r := ftctlRun(t, "reset", "--all", "--yes")
	if r.code != 0 {
		t.Fatalf("%v", r)
	}
	if got := strings.TrimSpace(read(t, "kprobe_events")); got != "" {
		t.Errorf("kprobes left: %q", got)
	}
	if names := instanceNames(t); len(names) != 0 {
		t.Errorf("instances left: %v", names)
	}
	if f := read(t, "set_ftrace_filter"); !strings.Contains(f, "all functions enabled") {
		t.Errorf("filter: %q", f)
	}
	if f := strings.TrimSpace(read(t, "events/sched/sched_switch/filter")); f != "none" {
		t.Errorf("event filter: %q", f)
	}
	if e := strings.TrimSpace(read(t, "set_event")); e != "" {
		t.Errorf("events: %q", e)
	}
	for _, ev := range []string{"kmem/kmalloc", "sched/sched_switch"} {
		for _, line := range strings.Split(read(t, "events/"+ev+"/trigger"), "\n") {
			if line != "" && !strings.HasPrefix(line, "#") {
				t.Errorf("%s: trigger left: %q (reset said: %s)", ev, line, r.stderr)
			}
		}
	}
}

// -e takes globs (trace-cmd's -e 'sched:*'); a session that would trace nothing says so.
func TestTraceEventGlobs(t *testing.T) {
	before := sessionWorld(t)
	r := ftctlRun(t, "trace", "-e", "sched:sched_swi*", "--count", "2", "-o", "json")
	if r.code != 0 || strings.Count(r.stdout, `"event":"sched_switch"`) != 2 {
		t.Errorf("-e sched:sched_swi*: %v", r)
	}
	r = ftctlRun(t, "trace", "-e", "sched:*", "--count", "1")
	if r.code != 0 || !strings.Contains(r.stdout, "sched_") {
		t.Errorf("-e sched:*: %v", r)
	}
	r = ftctlRun(t, "trace", "-e", "sched:no_such_*", "--count", "1")
	if r.code != 2 || !strings.Contains(r.stderr, "matches no event") {
		t.Errorf("-e sched:no_such_*: %v", r)
	}
	r = ftctlRun(t, "trace", "--duration", "100ms")
	if r.code != 0 || !strings.Contains(r.stderr, "traces nothing") {
		t.Errorf("an empty session: %v", r)
	}
	checkWorld(t, before)
}

// --buffer-kb, --clock and -O (trace-cmd's -b, -C, -O) are set in the session's instance and
// gone with it; the top level is not touched; a bad value changes nothing (exit 2).
func TestTraceBufferClockOptions(t *testing.T) {
	before := sessionWorld(t)
	// The top level's default clock is local, or global where the kernel found sched_clock
	// unstable (6.1 under emulation: "Unstable clock detected, switching default tracing clock").
	topClock := read(t, "trace_clock")
	cmd := ftctlCommand(t, "trace", "-e", "sched:sched_switch", "-b", "1234", "-C", "mono", "-O", "sym-offset", "-O", "print-parent=0", "--duration", "20s")
	var errb bytes.Buffer
	cmd.Stderr = &errb
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	instance, _ := sessionOf(t, cmd.Process.Pid)
	deadline := time.Now().Add(20 * time.Second)
	for !strings.Contains(readIfExists("instances/"+instance+"/trace_clock"), "[mono]") && time.Now().Before(deadline) {
		time.Sleep(50 * time.Millisecond)
	}
	time.Sleep(300 * time.Millisecond)
	if got := readIfExists("instances/" + instance + "/trace_clock"); !strings.Contains(got, "[mono]") {
		t.Fatalf("trace_clock %q; stderr: %s", got, errb.String())
	}
	if got, _ := strconv.Atoi(strings.TrimSpace(read(t, "instances/"+instance+"/buffer_size_kb"))); got < 1234 || got > 1234+8 {
		t.Errorf("buffer_size_kb %d", got) // the kernel rounds up to whole pages
	}
	if got := strings.TrimSpace(read(t, "instances/"+instance+"/options/sym-offset")); got != "1" {
		t.Errorf("sym-offset %q", got)
	}
	if got := strings.TrimSpace(read(t, "instances/"+instance+"/options/print-parent")); got != "0" {
		t.Errorf("print-parent %q", got)
	}
	if top := read(t, "trace_clock"); top != topClock {
		t.Errorf("the top level's clock changed: %q, was %q", top, topClock)
	}
	cmd.Process.Signal(os.Interrupt)
	cmd.Wait()
	checkWorld(t, before)
	for _, bad := range [][]string{{"-C", "sundial"}, {"-O", "no_such_option"}, {"-b", "-5"}, {"-O", "nofunction-fork"}, {"-O", "norecord-cmd"}} {
		r := ftctlRun(t, append([]string{"trace", "-e", "sched:sched_switch", "--count", "1"}, bad...)...)
		if r.code != 2 {
			t.Errorf("%q: %v", bad, r)
		}
	}
	checkWorld(t, before)
}

// readIfExists reads a tracefs file, "" when it is not there (yet, or any more).
func readIfExists(rel string) string {
	b, _ := os.ReadFile(filepath.Join(tracing, rel))
	return string(b)
}
