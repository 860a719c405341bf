package flight

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ftctl/ftctl/count"
	"github.com/ftctl/ftctl/session"
	"github.com/ftctl/ftctl/tracefs"
)

func TestEventOf(t *testing.T) {
	for _, c := range []struct{ line, want string }{
		{"       ftrigproc-123     [001] ..... 12.345678: sched_process_exit: comm=ftrigproc pid=123 prio=120", "sched_process_exit"},
		{"          <idle>-0       [000] d.h2.   1.000001: console: WARNING: CPU: 0 PID: 1 at x.c:1 f+0x0/0x10", "console"},
		{"             cat-77      (     77) [003] ...1. 5.000000: ftctl_77_ab_lat: lat=12", "ftctl_77_ab_lat"},
		{"             cat-77      [003] 5.000000: sched_process_exit: comm=cat", "sched_process_exit"}, // no irq-info
		// a comm that looks like a line's start: the name is where the kernel put it
		{"[000] 1.0: a:b-9 [002] ..... 3.000000: sched_process_exit: comm=x", "sched_process_exit"},
		{"a message: console: not a line", ""},
		{"", ""},
	} {
		if got := eventOf([]byte(c.line)); got != c.want {
			t.Errorf("eventOf(%q) = %q, want %q", c.line, got, c.want)
		}
	}
}

func TestParseTriggers(t *testing.T) {
	ev, err := ParseEventTrigger(`sched:sched_process_exit if comm == "nginx"`)
	if err != nil || ev.Event != "sched:sched_process_exit" || ev.Filter != `comm == "nginx"` || ev.Kind != KindEvent {
		t.Errorf("ParseEventTrigger: %+v %v", ev, err)
	}
	if ev, err := ParseEventTrigger("oom:mark_victim"); err != nil || ev.Filter != "" {
		t.Errorf("ParseEventTrigger without a filter: %+v %v", ev, err)
	}
	for _, bad := range []string{"sched", "sched:*", ":x", "sched:a b if x", " if comm == 1"} {
		if _, err := ParseEventTrigger(bad); !errors.Is(err, ErrTrigger) {
			t.Errorf("ParseEventTrigger(%q): %v", bad, err)
		}
	}
	lt, err := ParseLatencyTrigger("vfs_read>10ms")
	if err != nil || lt.fn != "vfs_read" || lt.threshold != 10*time.Millisecond {
		t.Errorf("ParseLatencyTrigger: %+v %v", lt, err)
	}
	if mt, err := ParseLatencyTrigger("vfs_read > max"); err != nil || mt.fn != "vfs_read" || !mt.max || mt.threshold != 0 || mt.Kind != KindLatency {
		t.Errorf("ParseLatencyTrigger of a maximum: %+v %v", mt, err)
	}
	for _, bad := range []string{"vfs_read", "vfs_read>", ">1ms", "vfs_read>0", "vfs_read>1ns", "vfs_*>1ms", "sched:x>1ms",
		">max", "vfs_*>max", "vfs_read>MAX", "vfs_read>maxi", "a.b>max"} {
		if _, err := ParseLatencyTrigger(bad); !errors.Is(err, ErrTrigger) {
			t.Errorf("ParseLatencyTrigger(%q): %v", bad, err)
		}
	}
}

// Each trigger is rate-limited on its own: within rate of its last dump it fires and makes none.
func TestFireRate(t *testing.T) {
	a := &Armed{}
	sig, ev := SignalTrigger(), &Trigger{Kind: KindEvent}
	at := time.Date(2026, 11, 28, 1, 0, 0, 0, time.UTC)
	steps := []struct {
		t     *Trigger
		after time.Duration
		dumps bool
	}{
		{sig, 0, true}, {sig, time.Second, false}, {ev, time.Second, true}, {sig, 9 * time.Second, false}, {sig, 10 * time.Second, true},
	}
	for i, s := range steps {
		if got := a.Fire(s.t, at.Add(s.after), 10*time.Second); got != s.dumps {
			t.Errorf("step %d: Fire = %v", i, got)
		}
	}
	if sig.Fired != 4 || ev.Fired != 1 {
		t.Errorf("fired: signal %d, event %d", sig.Fired, ev.Fired)
	}
}

// A latency trigger's set-up on a kernel's files: the threshold filters the duration's event;
// a maximum is the onmax() event, unfiltered, where the README announces onmax().trace(), and
// unavailable (naming the README) where it does not; kprobes where kprobe_events exists.
func TestLatencySetup(t *testing.T) {
	root := t.TempDir()
	for _, f := range []string{"kprobe_events", "synthetic_events"} {
		if err := os.WriteFile(filepath.Join(root, f), nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	readme, err := os.ReadFile("../tracefs/testdata/6.12/README")
	if err != nil {
		t.Fatal(err)
	}
	fs, err := tracefs.Open(root, "a test")
	if err != nil {
		t.Fatal(err)
	}
	id := session.OwnerID("t")
	setup := func(readme []byte, spec string) (count.Latency, *Trigger, error) {
		t.Helper()
		if err := os.WriteFile(filepath.Join(root, "README"), readme, 0o644); err != nil {
			t.Fatal(err)
		}
		tr, err := ParseLatencyTrigger(spec)
		if err != nil {
			t.Fatal(err)
		}
		l, err := latencySetup(fs, id, tr)
		return l, tr, err
	}
	l, tr, err := setup(readme, "vfs_read>10ms")
	if err != nil || l.Kind != 'p' || len(l.Triggers) != 2 || tr.Event != "synthetic:"+l.Synthetic || tr.Filter != "lat >= 10000" {
		t.Errorf("threshold: %v %+v %+v", err, l, tr)
	}
	l, tr, err = setup(readme, "vfs_read>max")
	if err != nil || l.Kind != 'p' || len(l.Triggers) != 3 || tr.Event != "synthetic:"+l.Max || tr.Filter != "" ||
		!strings.Contains(l.Triggers[2].Text, "onmax($m).trace("+l.Max) {
		t.Errorf("maximum: %v %+v %+v", err, l, tr)
	}
	old := bytes.ReplaceAll(readme, []byte("onmax(var) "), []byte("          "))
	if _, _, err := setup(old, "vfs_read>max"); !errors.Is(err, tracefs.ErrUnavailable) || !strings.Contains(err.Error(), "README") {
		t.Errorf("without onmax(): %v", err)
	}
}
