//go:build vmtest

package vmtest

import (
	"bytes"
	_ "embed"
	"errors"
	"fmt"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/ftctl/ftctl/eventfilter"
	"github.com/ftctl/ftctl/tracefs"
)

//go:embed testdata/filter-corpus.txt
var filterCorpus string

// TestEventFilterCorpus: every filter of the corpus through ftctl's checker (with the event's
// live format) and through the kernel (the filter file of an event in a scratch instance).
// The kernel accepting what ftctl refuses fails the test, and so does a refusal of both in
// other words or at another place than the kernel's; ftctl passing on what only the kernel
// can judge is reported.
func TestEventFilterCorpus(t *testing.T) {
	fs := topFS(t)
	top := fs.Top()
	for _, def := range []string{"p:ftc/fo do_sys_openat2 dfd=%di path=+0(%si):string", "r:ftc/ro do_sys_openat2 ret=$retval"} {
		if err := top.Write("kprobe_events", def+"\n"); err != nil {
			t.Fatal(err)
		}
	}
	removeProbeLater(t, "ftc", "fo")
	removeProbeLater(t, "ftc", "ro")
	in, _, err := fs.Ensure("filtcorpus")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { in.Remove() })
	var both, neither, kernelOnly, localOnly int
	var table strings.Builder
	for _, line := range strings.Split(filterCorpus, "\n") {
		if strings.TrimSpace(line) == "" || strings.HasPrefix(line, "#") {
			continue
		}
		strict, newer := false, false
		if rest, ok := strings.CutPrefix(line, "strict "); ok {
			line, strict = rest, true
		}
		if rest, ok := strings.CutPrefix(line, "new "); ok {
			line, newer = rest, true
		}
		event, filter, _ := strings.Cut(line, " ")
		sys, ev, _ := strings.Cut(event, "/")
		if !in.Has("events/" + event + "/filter") {
			t.Logf("%s: not on this kernel", event)
			continue
		}
		format, err := in.EventFormat(sys, ev)
		if err != nil {
			t.Fatal(err)
		}
		_, lerr := eventfilter.Check(filter, eventfilter.FieldsOf(format))
		kerr := in.Write("events/"+event+"/filter", filter+"\n")
		if err := in.Write("events/"+event+"/filter", "0\n"); err != nil {
			t.Fatal(err)
		}
		kmsg, kpos := "", -1
		if kerr != nil {
			kmsg = kerr.Error()
			var te *tracefs.Error
			if errors.As(kerr, &te) && len(te.KernelLog) > 0 {
				le := te.KernelLog[len(te.KernelLog)-1]
				kmsg, kpos = le.Message, le.Pos
			}
		}
		var fe *eventfilter.Error
		if lerr != nil && !errors.As(lerr, &fe) {
			t.Fatalf("%q: %v", line, lerr)
		}
		verdict := ""
		switch {
		case kerr == nil && lerr == nil:
			both++
			verdict = "accept/accept"
		case kerr != nil && lerr != nil:
			neither++
			verdict = "reject/reject"
			unknown := kmsg == "Invalid operator" || kmsg == "Invalid value (did you forget quotes)?"
			switch {
			case fe.Msg == kmsg && fe.KernelPos == kpos:
			case newer && unknown:
				verdict = "reject/reject (syntax unknown to this kernel)"
			default:
				verdict = "REJECT/REJECT-DIFFER"
				t.Errorf("%s %q: the kernel says %q at %d, ftctl %q at %d", event, filter, kmsg, kpos, fe.Msg, fe.KernelPos)
			}
		case kerr == nil && strict:
			kernelOnly++
			verdict = "kernel-accepts/ftctl-strict"
		case kerr == nil:
			kernelOnly++
			verdict = "KERNEL-ACCEPTS/ftctl-rejects"
			t.Errorf("the kernel accepts %s %q but ftctl refuses it: %v", event, filter, lerr)
		default:
			localOnly++
			verdict = "kernel-rejects/ftctl-accepts"
		}
		if strict && lerr == nil {
			t.Errorf("%s %q is marked strict, and ftctl accepts it", event, filter)
		}
		lmsg := ""
		if fe != nil {
			lmsg = fmt.Sprintf("%s@%d", fe.Msg, fe.KernelPos)
		}
		short := filter
		if len(short) > 60 {
			short = short[:57] + "..."
		}
		fmt.Fprintf(&table, "%-30s %-30s %-62q kernel=%q@%d ftctl=%q\n", verdict, event, short, kmsg, kpos, lmsg)
	}
	t.Logf("event filter corpus on %s: both accept %d, both reject %d, kernel rejects what ftctl accepts %d, kernel accepts what ftctl rejects %d\n%s",
		tracefs.KernelRelease(), both, neither, localOnly, kernelOnly, table.String())
	if both < 30 || neither < 40 {
		t.Errorf("corpus too one-sided: %d accepted, %d rejected by both", both, neither)
	}
}

var switchPids = regexp.MustCompile(`prev_pid=(\d+) .* next_pid=(\d+) `)

// trace --filter keeps only the events it selects: a sched_switch filter on one process's pid
// lets through its switches and nobody else's; the filter is in the session's instance only
// and gone with it.
func TestTraceEventFilter(t *testing.T) {
	before := sessionWorld(t)
	busy := exec.Command("/bin/sh", "-c", "while :; do usleep 20000; done")
	if err := busy.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { busy.Process.Kill(); busy.Wait() }()
	pid := busy.Process.Pid
	filter := fmt.Sprintf("prev_pid == %d || next_pid == %d", pid, pid)
	cmd := ftctlCommand(t, "trace", "-e", "sched:sched_switch", "--filter", filter, "--duration", "4s", "-o", "json")
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	instance, _ := sessionOf(t, cmd.Process.Pid)
	file := "instances/" + instance + "/events/sched/sched_switch/filter"
	deadline := time.Now().Add(20 * time.Second)
	for strings.TrimSpace(readIfExists(file)) != filter && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	if got := strings.TrimSpace(readIfExists(file)); got != filter {
		t.Errorf("the session's sched_switch filter: %q, want %q", got, filter)
	}
	if got := strings.TrimSpace(read(t, "events/sched/sched_switch/filter")); got != "none" {
		t.Errorf("the top level's filter changed: %q", got)
	}
	if err := cmd.Wait(); err != nil {
		t.Fatalf("%v: %s", err, errb.String())
	}
	n := 0
	for _, l := range strings.Split(strings.TrimSpace(out.String()), "\n") {
		if !strings.Contains(l, `"event":"sched_switch"`) {
			continue
		}
		m := switchPids.FindStringSubmatch(l)
		if m == nil {
			t.Fatalf("no pids in %s", l)
		}
		if m[1] != strconv.Itoa(pid) && m[2] != strconv.Itoa(pid) {
			t.Errorf("an event of neither pid %d: %s", pid, l)
		}
		n++
	}
	if n == 0 {
		t.Errorf("no sched_switch of pid %d in 4 s: %s", pid, errb.String())
	}
	t.Logf("%d sched_switch events, every one into or out of pid %d", n, pid)
	checkWorld(t, before)

	// A probe's filter: of the command's opens, those under /etc only; the probe (filtered
	// in the session's instance) is removed with the session.
	r := ftctlRun(t, "trace", "-p", "p:fo do_sys_openat2 path=+0(%si):string", "--filter", `path ~ "/etc/*"`, "-o", "json",
		"--", "/bin/cat", "/etc/ftctl-README.md", "/proc/version")
	if r.code != 0 {
		t.Fatalf("%v", r)
	}
	opens := 0
	for _, l := range strings.Split(r.stdout, "\n") {
		if !strings.Contains(l, `"event":"fo"`) {
			continue
		}
		opens++
		if !strings.Contains(l, `"path":"/etc/`) {
			t.Errorf("an open outside /etc: %s", l)
		}
	}
	if opens == 0 || !strings.Contains(r.stdout, "/etc/ftctl-README.md") {
		t.Errorf("no open of /etc/ftctl-README.md: %v", r)
	}
	checkWorld(t, before)
}

// A filter's mistakes: one ftctl sees is exit 2 with nothing written (no instance, no
// error_log entry); one only the kernel sees is exit 3 with its error_log entry under the
// text, and the session (its probe too) is removed; --filter PATTERN, the function filter it
// was, points at -f.
func TestTraceEventFilterInvalid(t *testing.T) {
	before := sessionWorld(t)
	truncate(t, "error_log")
	for _, c := range []struct {
		args []string
		code int
		want []string
	}{
		{[]string{"-e", "sched:sched_switch", "--filter", "prev_pidd == 1"}, 2,
			[]string{"Field not found", "prev_pidd == 1\n  ^", "did you mean prev_pid?"}},
		{[]string{"-e", "sched", "--filter", "prev_pid == 1"}, 2, []string{"Field not found: no field \"prev_pid\""}},
		{[]string{"-e", "sched:sched_switch", "--filter", "prev_comm == 1"}, 2, []string{"Expecting string field"}},
		{[]string{"--filter", "vfs_read"}, 2, []string{"did you mean -f/--function vfs_read?"}},
		{[]string{"--filter", "ext4_*", "-e", "sched:sched_switch"}, 2, []string{"did you mean -f/--function ext4_*?"}},
	} {
		r := ftctlRun(t, append(append([]string{"trace"}, c.args...), "--duration", "1s")...)
		if r.code != c.code {
			t.Errorf("%q: %v", c.args, r)
		}
		for _, w := range c.want {
			if !strings.Contains(r.stderr, w) {
				t.Errorf("%q: stderr lacks %q: %s", c.args, w, r.stderr)
			}
		}
		checkWorld(t, before)
	}
	if got := read(t, "error_log"); got != "" {
		t.Errorf("the kernel saw a filter: error_log %q", got)
	}
	// A probe's fields are known once the kernel has defined it: exit 2 all the same, and
	// the session removed.
	r := ftctlRun(t, "trace", "-p", "p:fo do_sys_openat2", "--filter", "nosuch == 1", "--duration", "1s")
	if r.code != 2 || !strings.Contains(r.stderr, ": Field not found: no field \"nosuch\"") {
		t.Errorf("a probe's missing field: %v", r)
	}
	checkWorld(t, before)
	// What only the kernel judges: a .function symbol (6.1 knows no .function at all).
	filter := "__probe_ip.function == ftctl_no_such_function"
	r = ftctlRun(t, "trace", "-p", "p:fo do_sys_openat2", "--filter", filter, "--duration", "1s")
	if r.code != 3 || !strings.Contains(r.stderr, "kernel error_log: ") ||
		!(strings.Contains(r.stderr, "Function not found") || strings.Contains(r.stderr, "Invalid operator")) ||
		!strings.Contains(r.stderr, "\n    "+filter+"\n    ") || !strings.Contains(r.stderr, "the session was removed") {
		t.Errorf("a filter the kernel refuses: %v", r)
	}
	t.Logf("the kernel's refusal, as shown:\n%s", r.stderr)
	checkWorld(t, before)
}
