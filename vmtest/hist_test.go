//go:build vmtest

package vmtest

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

const histEvent = "events/syscalls/sys_enter_read"

// histWorld is sessionWorld plus another owner's hist triggers on the event ftctl hist uses,
// at the top level and in another instance, with the same keys as the tests' own.
func histWorld(t *testing.T) string {
	t.Helper()
	sessionWorld(t)
	for _, dir := range []string{"", "instances/keepme/"} {
		trig := dir + histEvent + "/trigger"
		write(t, trig, "hist:keys=common_pid\n")
		t.Cleanup(func() { os.WriteFile(filepath.Join(tracing, trig), []byte("!hist:keys=common_pid\n"), 0) })
	}
	return tracingState(t) + histTriggers(t)
}

func histTriggers(t *testing.T) string {
	return "== triggers\n" + read(t, histEvent+"/trigger") + read(t, "instances/keepme/"+histEvent+"/trigger")
}

func checkHistWorld(t *testing.T, before string) {
	t.Helper()
	if after := tracingState(t) + histTriggers(t); after != before {
		t.Errorf("tracing state changed:\nbefore:\n%s\nafter:\n%s", before, after)
	}
}

// readLoop is a process doing n reads of one byte of a file (busybox dd reads with read(2)).
func readLoop(t *testing.T, n int) *exec.Cmd {
	t.Helper()
	f := "/tmp/ftctl-hist-reads"
	os.WriteFile(f, bytes.Repeat([]byte("x"), n+10), 0o644)
	return exec.Command("/bin/dd", "if="+f, "of=/dev/null", "bs=1", "count="+strconv.Itoa(n))
}

// startSession starts ftctl with args and waits until its session's instance has a hist
// trigger in the file its path matches (glob, relative to the instance) and tracing is on.
func startSession(t *testing.T, glob string, args ...string) (*exec.Cmd, *bytes.Buffer, *bytes.Buffer) {
	t.Helper()
	cmd := ftctlCommand(t, args...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	cmd.Env = []string{"PATH=/bin"}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	instance, _ := sessionOf(t, cmd.Process.Pid)
	deadline := time.Now().Add(30 * time.Second)
	for {
		m, _ := filepath.Glob(filepath.Join(tracing, "instances", instance, glob))
		if len(m) == 1 {
			b, _ := os.ReadFile(m[0])
			if strings.Contains(string(b), "hist:") && strings.Contains(read(t, filepath.Join("instances", instance, "tracing_on")), "1") {
				return cmd, &out, &errb
			}
		}
		if time.Now().After(deadline) {
			cmd.Process.Kill()
			cmd.Wait()
			t.Fatalf("no hist trigger in %s of %s; stderr:\n%s", glob, instance, errb.String())
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// endWith ends cmd with sig (0: waits for it to end by itself) and checks its exit status:
// 0, or 128+N for signal N.
func endWith(t *testing.T, cmd *exec.Cmd, sig syscall.Signal, errb fmt.Stringer) {
	t.Helper()
	want := 0
	if sig != 0 {
		cmd.Process.Signal(sig)
		want = 128 + int(sig)
	}
	if code := exitCode(cmd.Wait()); code != want {
		t.Errorf("exit %d, want %d; stderr:\n%s", code, want, errb)
	}
}

type histOut struct {
	Rows []struct {
		Keys []struct {
			Name string  `json:"name"`
			Num  *uint64 `json:"num"`
		} `json:"keys"`
		Values map[string]float64 `json:"values"`
	} `json:"rows"`
	Hits uint64 `json:"hits"`
}

func hitsOf(t *testing.T, stdout string, pid int) float64 {
	t.Helper()
	var h histOut
	if err := json.Unmarshal([]byte(stdout), &h); err != nil {
		t.Fatalf("%v: %q", err, stdout)
	}
	for _, r := range h.Rows {
		if len(r.Keys) > 0 && r.Keys[0].Num != nil && int(*r.Keys[0].Num) == pid {
			return r.Values["hitcount"]
		}
	}
	return 0
}

// TestHist: a loop of N reads shows at least N hits for its pid, whatever ends the session,
// and every exit leaves the tracing state, other owners' triggers included, as it was.
func TestHist(t *testing.T) {
	before := histWorld(t)
	const n = 300
	args := []string{"hist", "syscalls:sys_enter_read", "--key", "common_pid", "--value", "count", "--sort", "hitcount.descending", "-o", "json"}
	for _, sig := range []syscall.Signal{0, syscall.SIGINT, syscall.SIGTERM} {
		name := "duration"
		if sig != 0 {
			name = sig.String()
		}
		t.Run(name, func(t *testing.T) {
			extra := []string{"--duration", "60s"}
			if sig == 0 {
				extra = []string{"--duration", "4s"}
			}
			cmd, out, errb := startSession(t, histEvent+"/trigger", append(args, extra...)...)
			loop := readLoop(t, n)
			if err := loop.Run(); err != nil {
				t.Fatal(err)
			}
			endWith(t, cmd, sig, errb)
			if got := hitsOf(t, out.String(), loop.Process.Pid); got < n {
				t.Errorf("%v hits for the loop's pid %d, want at least %d:\n%s", got, loop.Process.Pid, n, out)
			}
			checkHistWorld(t, before)
		})
	}
	t.Run("text", func(t *testing.T) {
		r := ftctlRun(t, "hist", "syscalls:sys_enter_read", "--key", "common_pid.execname", "--duration", "1s")
		// the columns are as wide as their widest cell: a key wider than the header widens it
		if r.code != 0 || !regexp.MustCompile(`^COMMON_PID {2,}HITCOUNT\n`).MatchString(r.stdout) || !strings.Contains(r.stdout, "syscalls:sys_enter_read: ") {
			t.Errorf("%v", r)
		}
		checkHistWorld(t, before)
	})
	t.Run("kprobe filter", func(t *testing.T) {
		// a probe of another owner's, a hist keyed by two fields, with a filter on the pid
		write(t, "kprobe_events", "p:histgrp/vr vfs_read\n")
		removeProbeLater(t, "histgrp", "vr")
		pre := tracingState(t) + histTriggers(t)
		cmd, out, errb := startSession(t, "events/histgrp/vr/trigger", "hist", "histgrp:vr", "--key", "common_pid,__probe_ip.sym", "--duration", "60s", "-o", "json",
			"--filter", "common_pid != 1")
		loop := readLoop(t, n)
		if err := loop.Run(); err != nil {
			t.Fatal(err)
		}
		cmd.Process.Signal(syscall.SIGINT)
		if code := exitCode(cmd.Wait()); code != 130 {
			t.Errorf("exit %d; stderr:\n%s", code, errb)
		}
		if got := hitsOf(t, out.String(), loop.Process.Pid); got < n {
			t.Errorf("%v hits for pid %d, want at least %d:\n%s", got, loop.Process.Pid, n, out)
		}
		if !strings.Contains(out.String(), `"text": "vfs_read"`) {
			t.Errorf("no vfs_read symbol key:\n%s", out)
		}
		if after := tracingState(t) + histTriggers(t); after != pre {
			t.Errorf("state changed:\n%s\n%s", pre, after)
		}
	})
}

// TestHistInvalid: mistakes are refused with exit 2 before anything is written.
func TestHistInvalid(t *testing.T) {
	before := histWorld(t)
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"syscalls:sys_enter_read", "--key", "nosuch"}, "has no field nosuch"},
		{[]string{"syscalls:sys_enter_read", "--key", "count.nosuchmod"}, "unknown modifier"},
		{[]string{"syscalls:sys_enter_read", "--key", "fd.execname"}, "common_pid only"},
		{[]string{"syscalls:sys_enter_read", "--key", "fd", "--value", "count.log2"}, "value cannot take it"},
		{[]string{"syscalls:sys_enter_read", "--key", "fd", "--sort", "count"}, "neither a key nor a value"},
		{[]string{"syscalls:sys_enter_read", "--key", "fd", "--filter", "nosuch > 1"}, "nosuch"},
		{[]string{"syscalls:sys_enter_read", "--key", "fd", "--filter", "fd >"}, "invalid --filter"},
		{[]string{"syscalls:nosuch_event", "--key", "fd"}, "no event"},
		{[]string{"sys_enter_read", "--key", "fd"}, "SYSTEM:EVENT"},
		{[]string{"syscalls:sys_enter_read"}, "at least one key"},
	} {
		r := ftctlRun(t, append([]string{"hist"}, c.args...)...)
		if r.code != 2 || !strings.Contains(r.stderr, c.want) {
			t.Errorf("hist %q: want exit 2 and %q: %v", c.args, c.want, r)
		}
	}
	checkHistWorld(t, before)
}
