//go:build vmtest

package vmtest

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/ftctl/ftctl/count"
)

// latencyState is tracingState with the files latency writes beyond kprobe_events.
func latencyState(t *testing.T) string {
	t.Helper()
	s := tracingState(t)
	for _, f := range []string{"dynamic_events", "synthetic_events"} {
		if _, err := os.Stat(filepath.Join(tracing, f)); err == nil {
			s += "== " + f + "\n" + read(t, f)
		}
	}
	return s + histTriggers(t)
}

type latencyOut struct {
	Func    string `json:"func"`
	Buckets []struct {
		LeUS  uint64 `json:"le_us"`
		Count uint64 `json:"count"`
	} `json:"buckets"`
	Count  uint64 `json:"count"`
	Groups []struct {
		Comm  string `json:"comm"`
		Count uint64 `json:"count"`
	} `json:"groups"`
}

func parseLatency(t *testing.T, out string) latencyOut {
	t.Helper()
	var l latencyOut
	if err := json.Unmarshal([]byte(out), &l); err != nil {
		t.Fatalf("%v: %q", err, out)
	}
	var sum uint64
	for i, b := range l.Buckets {
		sum += b.Count
		if i > 0 && b.LeUS <= l.Buckets[i-1].LeUS {
			t.Errorf("buckets out of order: %+v", l.Buckets)
		}
	}
	if sum != l.Count {
		t.Errorf("buckets sum to %d, count says %d", sum, l.Count)
	}
	return l
}

// TestLatency: a loop of N reads shows at least N vfs_read durations, whatever ends the session
// (COMMAND's exit, --duration, SIGINT, SIGTERM), and each leaves the tracing state as it was.
func TestLatency(t *testing.T) {
	histWorld(t)
	before := latencyState(t)
	const n = 200
	file := "/tmp/ftctl-latency-reads"
	os.WriteFile(file, []byte(strings.Repeat("x", n+10)), 0o644)
	dd := []string{"/bin/dd", "if=" + file, "of=/dev/null", "bs=1", "count=" + strconv.Itoa(n)}
	t.Run("command", func(t *testing.T) {
		r := ftctlRun(t, append([]string{"latency", "vfs_read", "-o", "json", "--"}, dd...)...)
		if r.code != 0 {
			t.Fatalf("%v", r)
		}
		want := "kprobe and kretprobe" // fprobes only on a kernel without kprobe events
		if count.LatencyFprobes(topFS(t).DetectFeatures()) {
			want = "fprobes"
		}
		if !strings.Contains(r.stderr, "vfs_read: "+want+" ftctl_") {
			t.Errorf("want %s: %v", want, r)
		}
		if l := parseLatency(t, r.stdout); l.Count < n || l.Func != "vfs_read" {
			t.Errorf("%d calls, want at least %d: %v", l.Count, n, r)
		}
		if after := latencyState(t); after != before {
			t.Errorf("state changed:\n%s\n%s", before, after)
		}
		if r := ftctlRun(t, "latency", "vfs_read", "--", "/bin/sh", "-c", "exit 3"); r.code != 3 {
			t.Errorf("the command's status: %v", r)
		}
	})
	for _, sig := range []syscall.Signal{0, syscall.SIGINT, syscall.SIGTERM} {
		name := "duration"
		if sig != 0 {
			name = sig.String()
		}
		t.Run(name, func(t *testing.T) {
			gate := "/tmp/ftctl-latency-go"
			os.Remove(gate)
			// the task that reads is the shell that waits, exec'd into dd: its pid is known first
			loop := exec.Command("/bin/sh", "-c", "while [ ! -e "+gate+" ]; do sleep 0.05; done; exec "+strings.Join(dd, " "))
			if err := loop.Start(); err != nil {
				t.Fatal(err)
			}
			dur := "60s"
			if sig == 0 {
				dur = "6s"
			}
			cmd, out, errb := startSession(t, "events/synthetic/ftctl_*_lat/trigger", "latency", "vfs_read", "--pid", strconv.Itoa(loop.Process.Pid), "--by", "comm", "-o", "json", "--duration", dur)
			os.WriteFile(gate, nil, 0o644)
			if err := loop.Wait(); err != nil {
				t.Fatal(err)
			}
			endWith(t, cmd, sig, errb)
			l := parseLatency(t, out.String())
			if l.Count < n || len(l.Groups) != 1 || l.Groups[0].Comm != "dd" {
				t.Errorf("%d calls (want at least %d), groups %+v:\n%s", l.Count, n, l.Groups, out)
			}
			if after := latencyState(t); after != before {
				t.Errorf("state changed:\n%s\n%s", before, after)
			}
		})
	}
	t.Run("text", func(t *testing.T) {
		r := ftctlRun(t, append([]string{"latency", "vfs_read", "--"}, dd...)...)
		t.Logf("%s", r.stdout)
		if r.code != 0 || !strings.Contains(r.stdout, "distribution") || !strings.Contains(r.stdout, "|*") || !strings.Contains(r.stdout, "vfs_read: ") {
			t.Errorf("%v", r)
		}
	})
	t.Run("invalid", func(t *testing.T) {
		for _, args := range [][]string{
			{"no_such_function_ftctl"}, {"vfs_*"}, {"vfs_read", "--by", "cpu"}, {"vfs_read", "--pid", "-3"},
			{"no_such_function_ftctl", "--dry-run"},
		} {
			r := ftctlRun(t, append([]string{"latency"}, args...)...)
			if r.code != 2 {
				t.Errorf("latency %q: want exit 2: %v", args, r)
			}
			if args[0] == "no_such_function_ftctl" && !strings.Contains(r.stderr, "is not a traceable function") {
				t.Errorf("latency %q: want 'is not a traceable function': %v", args, r)
			}
		}
		// a symbol ftrace cannot trace (neither Debian kernel lists it in
		// available_filter_functions): fprobes refuse it, and the index then says why (exit 2);
		// a kprobe pair takes it (kprobes need no ftrace record), and measures it
		r := ftctlRun(t, "latency", "__x64_sys_getppid", "--duration", "1s")
		if fp := count.LatencyFprobes(topFS(t).DetectFeatures()); fp && (r.code != 2 || !strings.Contains(r.stderr, "is not a traceable function")) || !fp && r.code != 0 {
			t.Errorf("latency __x64_sys_getppid (fprobes %v): %v", fp, r)
		}
		if after := latencyState(t); after != before {
			t.Errorf("state changed:\n%s\n%s", before, after)
		}
	})
}

// TestLatencyKilledThenReset: a SIGKILLed latency leaves an instance the kernel keeps busy (its
// triggers with variables hold a reference), its probes and its synthetic event; `ftctl reset`
// proves the owner gone (the flock of its hold is free), removes the triggers, the instance,
// the synthetic event and the probes. Before the flock, reset called it "in use" and left it all.
func TestLatencyKilledThenReset(t *testing.T) {
	histWorld(t)
	before := latencyState(t)
	cmd, _, _ := startSession(t, "events/synthetic/ftctl_*_lat/trigger", "latency", "vfs_read", "--duration", "60s")
	cmd.Process.Kill()
	cmd.Wait()
	if after := latencyState(t); after == before {
		t.Fatal("nothing left after SIGKILL")
	}
	r := ftctlRun(t, "reset")
	if r.code != 0 {
		t.Errorf("%v", r)
	}
	if after := latencyState(t); after != before {
		t.Errorf("reset left:\n%s\nwant:\n%s\n%v", after, before, r)
	}
}

// latencyCorrected is latency's JSON with the correction it made.
type latencyCorrected struct {
	latencyOut
	Correction *struct {
		BiasUS   uint64  `json:"bias_us"`
		Func     string  `json:"func"`
		Probes   string  `json:"probes"`
		Calls    uint64  `json:"calls"`
		Measured string  `json:"measured"`
		Below    *uint64 `json:"below"`
	} `json:"correction"`
}

// medianLe is the le_us of the bucket holding the median call.
func medianLe(l latencyOut) uint64 {
	var seen uint64
	for _, b := range l.Buckets {
		seen += b.Count
		if 2*seen >= l.Count {
			return b.LeUS
		}
	}
	return 0
}

// TestLatencyCorrected: latency takes the probes' own cost off each duration, measured once
// per boot on __task_pid_nr_ns (kept: a second run says the same measure) and said so (JSON
// "correction", text "corrected:"); --no-correct leaves it in. On the near-zero function
// itself, 2,000 getppid(2) calls of this test's thread: every call counted either way, and the
// corrected median bucket lower than the raw one. Nothing is left behind.
func TestLatencyCorrected(t *testing.T) {
	histWorld(t)
	before := latencyState(t)
	first := ftctlRun(t, "latency", "vfs_read", "-o", "json", "--duration", "1s")
	var a latencyCorrected
	if err := json.Unmarshal([]byte(first.stdout), &a); first.code != 0 || err != nil || a.Correction == nil {
		t.Fatalf("%v: %v", err, first)
	}
	c := a.Correction
	if c.BiasUS == 0 || c.Func != "__task_pid_nr_ns" || c.Calls < 1000 || (c.Probes != "fprobe" && c.Probes != "kprobe") {
		t.Errorf("correction %+v", c)
	}
	t.Logf("bias: %+v", *c)
	text := ftctlRun(t, "latency", "vfs_read", "--duration", "1s")
	if text.code != 0 || !strings.Contains(text.stdout, "corrected: "+strconv.FormatUint(c.BiasUS, 10)+" µs taken off each duration") {
		t.Errorf("text: %v", text)
	}
	// the near-zero function, raw and corrected, on calls of this test's own thread
	measure := func(args ...string) latencyCorrected {
		t.Helper()
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		tid := syscall.Gettid()
		cmd, out, errb := startSession(t, "events/synthetic/ftctl_*_lat/trigger",
			append([]string{"latency", "__task_pid_nr_ns", "--pid", strconv.Itoa(tid), "-o", "json", "--duration", "4s"}, args...)...)
		for range 2000 {
			syscall.Getppid()
		}
		endWith(t, cmd, 0, errb)
		var l latencyCorrected
		if err := json.Unmarshal(out.Bytes(), &l); err != nil {
			t.Fatalf("%v: %s", err, out)
		}
		return l
	}
	// The host's load moves a whole run's durations by 2-4 µs at times (seen on 6.12 while
	// other VMs ran: medians of 5-7 µs among rounds of 3), as much as the kprobes' correction
	// (3-5 µs): up to three pairs of runs, the first whose corrected median is lower decides.
	var raw, corr latencyCorrected
	for range 3 {
		raw, corr = measure("--no-correct"), measure()
		t.Logf("raw %+v\ncorrected %+v", raw.Buckets, corr.Buckets)
		if medianLe(corr.latencyOut) < medianLe(raw.latencyOut) {
			break
		}
	}
	switch {
	case raw.Correction != nil:
		t.Errorf("--no-correct corrected: %+v", raw.Correction)
	case corr.Correction == nil || corr.Correction.Measured != c.Measured:
		t.Errorf("not the measure kept for the boot: %+v, first %+v", corr.Correction, c)
	case raw.Count < 2000 || corr.Count < 2000:
		t.Errorf("calls: raw %d, corrected %d, want at least 2000 each", raw.Count, corr.Count)
	case corr.Correction.Below == nil || *corr.Correction.Below > corr.Count:
		t.Errorf("below the correction: %v of %d calls", corr.Correction.Below, corr.Count)
	case medianLe(corr.latencyOut) >= medianLe(raw.latencyOut):
		t.Errorf("median bucket: corrected %d µs, raw %d µs", medianLe(corr.latencyOut), medianLe(raw.latencyOut))
	}
	if after := latencyState(t); after != before {
		t.Errorf("state changed:\n%s\n%s", before, after)
	}
}
