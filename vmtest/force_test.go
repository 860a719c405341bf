//go:build vmtest

package vmtest

import (
	"fmt"
	"strings"
	"testing"
)

// TestTraceForce: trace -p takes --force as probe add does. Each definition ftctl refuses on
// purpose is refused without it (exit 2) and, with it, ends as the kernel decides: the
// session runs (exit 0, a warning on stderr, the probe's events), or the kernel's refusal
// (exit 3), or exit 2 where ftctl knows this kernel refuses it ($retval->a without ->field in
// the README). r<N> stays refused: the kernel would put the event outside the session's group.
func TestTraceForce(t *testing.T) {
	add := fmt.Sprintf("0x%x", upOffset(t, upTarget, "ftctl_add"))
	for _, c := range []struct{ def, raw string }{
		{"r:tret " + upTarget + ":ftctl_add x=$retval->a", "r:ftforce/tret " + upTarget + ":" + add + " x=$retval->a"},
		{"p:tsym " + upTarget + ":ftctl_add x=%ip:symbol", "p:ftforce/tsym " + upTarget + ":" + add + " x=%ip:symbol"},
	} {
		kok, kmsg := uprobeAccepts(t, c.raw)
		p := topFS(t).DetectFeatures().Probe
		// Without a command, so that the exit code is the table's (with one, every failure of
		// ftctl's own is 125).
		r := ftctlRun(t, "trace", "-p", c.def, "--duration", "1s")
		if r.code != 2 {
			t.Errorf("without --force %q: %v", c.def, r)
		}
		r = ftctlRun(t, "trace", "--force", "-p", c.def, "--duration", "1s")
		want := 0
		switch {
		case strings.Contains(c.def, "->a") && !p.BTFFields:
			want = 2
		case !kok:
			want = 3
		}
		t.Logf("%s: the kernel accepts: %v %s; trace --force: exit %d\n%s", c.def, kok, kmsg, r.code, r.stderr)
		if r.code != want {
			t.Errorf("trace --force -p %q: want exit %d\n%v", c.def, want, r)
			continue
		}
		if want == 0 {
			r = ftctlRun(t, "trace", "--force", "-o", "json", "-p", c.def, "--", upTarget, "3", "100", "1")
			ev := strings.Fields(c.def)[0][2:]
			var jsonLines []string
			for _, l := range strings.SplitAfter(r.stdout, "\n") {
				if strings.HasPrefix(l, "{") { // the command's own output shares stdout
					jsonLines = append(jsonLines, l)
				}
			}
			n := 0
			for _, e := range events(t, strings.Join(jsonLines, "")) {
				if e["event"] == ev {
					n++
				}
			}
			if n == 0 || !strings.Contains(r.stderr, "ftctl: --force: ") {
				t.Errorf("trace --force -p %q: %d events of %s, or no warning\n%v", c.def, n, ev, r)
			}
		}
	}
	r := ftctlRun(t, "trace", "--force", "-p", "r4:tr4 "+upTarget+":ftctl_add", "--duration", "1s")
	if r.code != 2 || !strings.Contains(r.stderr, "outside the session's group") {
		t.Errorf("r4 in a session: %v", r)
	}
	if left := read(t, "uprobe_events"); strings.Contains(left, "tret") || strings.Contains(left, "tsym") || strings.Contains(left, "p_uprobetarget_") {
		t.Errorf("left behind:\n%s", left)
	}
}

// TestProbeArgsTracepoint: probe args t:SYSTEM:EVENT lists what a tracepoint probe can fetch
// (the BTF of __probestub_EVENT), and each name listed works in a tracepoint probe the kernel
// takes; where the README announces no t: (6.1), exit 4 saying so.
func TestProbeArgsTracepoint(t *testing.T) {
	r := ftctlRun(t, "probe", "args", "t:sched:sched_switch")
	if !topFS(t).DetectFeatures().Probe.Tprobe {
		if r.code != 4 || !strings.Contains(r.stderr, "does not announce tracepoint probes") {
			t.Errorf("no t: announced: %v", r)
		}
		return
	}
	if r.code != 0 || !strings.HasPrefix(r.stdout, "tracepoint sched:sched_switch (t:sched_switch)\n") ||
		!strings.Contains(r.stdout, "    struct task_struct *prev\n") || !strings.Contains(r.stdout, "    struct task_struct *next\n") {
		t.Fatalf("probe args t:sched:sched_switch: %v", r)
	}
	var names []string
	for _, l := range strings.Split(strings.TrimSpace(r.stdout), "\n")[1:] {
		f := strings.Fields(strings.ReplaceAll(l, "*", " "))
		names = append(names, f[len(f)-1])
	}
	removeEventLater(t, "dynamic_events", "ftctl", "tpargs")
	a := ftctlRun(t, "probe", "add", "t:ftctl/tpargs sched_switch "+strings.Join(names, " "))
	if a.code != 0 {
		t.Errorf("a tracepoint probe with every argument listed (%v): %v", names, a)
	} else if rm := ftctlRun(t, "probe", "remove", "ftctl/tpargs"); rm.code != 0 {
		t.Errorf("remove: %v", rm)
	}
	if r := ftctlRun(t, "probe", "args", "t:sched:no_such_tp"); r.code != 2 || !strings.Contains(r.stderr, "no such tracepoint") {
		t.Errorf("no such tracepoint: %v", r)
	}
}

// TestCompletePlaces: shell completion (cobra's __complete, what the bash, zsh and fish
// scripts call) offers tracepoints after t: where the README announces t:, and events as
// SYSTEM.EVENT after e:, for probe add and trace -p.
func TestCompletePlaces(t *testing.T) {
	complete := func(args ...string) []string {
		t.Helper()
		r := ftctlRun(t, append([]string{"__complete"}, args...)...)
		if r.code != 0 {
			t.Fatalf("__complete %q: %v", args, r)
		}
		var out []string
		for _, l := range strings.Split(strings.TrimSpace(r.stdout), "\n") {
			if l != "" && !strings.HasPrefix(l, ":") {
				out = append(out, l)
			}
		}
		return out
	}
	tp := topFS(t).DetectFeatures().Probe.Tprobe
	got := complete("probe", "add", "t:sw", "sched_swi")
	if want := []string{"sched_switch"}; tp && strings.Join(got, ",") != strings.Join(want, ",") || !tp && len(got) != 0 {
		t.Errorf("t: place (t: announced: %v): %q", tp, got)
	}
	got = complete("trace", "-p", "t:sw sched_swi")
	if tp && strings.Join(got, ",") != "t:sw sched_switch" || !tp && len(got) != 0 {
		t.Errorf("trace -p t: place (t: announced: %v): %q", tp, got)
	}
	got = complete("probe", "add", "e:es", "sched.sched_swi")
	if strings.Join(got, ",") != "sched.sched_switch" {
		t.Errorf("e: place: %q", got)
	}
	got = complete("probe", "add", "e:es", "sched.")
	if len(got) < 5 || !strings.HasPrefix(got[0], "sched.") {
		t.Errorf("e: sched.: %q", got)
	}
}
