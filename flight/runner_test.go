package flight

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ftctl/ftctl/profile"
	"github.com/ftctl/ftctl/stream"
	"github.com/ftctl/ftctl/tracefs"
)

// fakeWaiter hands what the test sends on ch to Run, as an arming session's pipe would.
type fakeWaiter struct {
	ch  chan []*Trigger
	err chan error
}

func newFakeWaiter() *fakeWaiter {
	return &fakeWaiter{ch: make(chan []*Trigger), err: make(chan error, 1)}
}

func (w *fakeWaiter) Next(ctx context.Context) ([]*Trigger, error) {
	select {
	case ts := <-w.ch:
		return ts, nil
	case err := <-w.err:
		return nil, err
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// testRunner is a runner of recorder "box" with no kernel: each arming is a fake (its own
// waiter, in waiters), each dump a file of 1000 bytes in the directory, the clock the test's.
type testRunner struct {
	*Runner
	dir     string
	mu      sync.Mutex
	now     time.Time
	waiters map[*Armed]*fakeWaiter
	armed   []*Armed
	notices []string
	dumpErr error
}

func newTestRunner(t *testing.T) *testRunner {
	t.Helper()
	state := t.TempDir()
	fs := &tracefs.FS{StateDir: state}
	if err := os.MkdirAll(dir(fs, "box"), 0o700); err != nil {
		t.Fatal(err)
	}
	tr := &testRunner{dir: t.TempDir(), now: time.Date(2026, 11, 28, 5, 0, 0, 0, time.UTC), waiters: map[*Armed]*fakeWaiter{}}
	lock := func(context.Context) (func(), error) { return func() {}, nil }
	tr.Runner = NewRunner(fs, "box", lock, func(f string, a ...any) {
		tr.mu.Lock()
		tr.notices = append(tr.notices, fmt.Sprintf(f, a...))
		tr.mu.Unlock()
	})
	tr.Now = func() time.Time { tr.mu.Lock(); defer tr.mu.Unlock(); return tr.now }
	tr.Runner.arm = func(_ context.Context, cfg Config) (*Armed, error) {
		a := &Armed{Name: "box", fs: fs, State: ArmState{PID: os.Getpid(), Dir: cfg.Dir, Triggers: cfg.Triggers}}
		tr.mu.Lock()
		tr.waiters[a] = newFakeWaiter()
		tr.armed = append(tr.armed, a)
		tr.mu.Unlock()
		return a, a.save()
	}
	tr.waitOn = func(a *Armed) waiter { tr.mu.Lock(); defer tr.mu.Unlock(); return tr.waiters[a] }
	tr.dump = func(_ context.Context, out string) (*stream.DumpStats, error) {
		tr.mu.Lock()
		err := tr.dumpErr
		tr.mu.Unlock()
		if err != nil {
			return nil, err
		}
		return &stream.DumpStats{Events: 1, Bytes: 1000}, os.WriteFile(out, make([]byte, 1000), 0o600)
	}
	return tr
}

func (tr *testRunner) at(d time.Duration) {
	tr.mu.Lock()
	tr.now = time.Date(2026, 11, 28, 5, 0, 0, 0, time.UTC).Add(d)
	tr.mu.Unlock()
}

func (tr *testRunner) waiter(i int) *fakeWaiter {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	return tr.waiters[tr.armed[i]]
}

// until waits for cond on the runner's counters (Run works in its own goroutine).
func (tr *testRunner) until(t *testing.T, what string, cond func(RunnerStats) bool) {
	t.Helper()
	for i := 0; i < 500; i++ {
		if cond(tr.Stats()) {
			return
		}
		time.Sleep(2 * time.Millisecond)
	}
	t.Fatalf("%s: stats %+v; notices %q", what, tr.Stats(), tr.notices)
}

func (tr *testRunner) run(t *testing.T, sig chan struct{}) (context.CancelFunc, chan error) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- tr.Run(ctx, sig) }()
	t.Cleanup(func() { cancel(); <-done })
	return cancel, done
}

// step is one firing of a runner test: at the clock's time, SIGUSR1 (sig) or the event, and
// the dumps made by then.
type step struct {
	at    time.Duration
	sig   bool
	dumps uint64
}

// steps fires each step in turn (SIGUSR1 on sig, or ev through the first arming's waiter) and
// waits for the runner to have counted it and made the step's dumps.
func (tr *testRunner) steps(t *testing.T, sig chan struct{}, ev *Trigger, steps []step) {
	t.Helper()
	for i, s := range steps {
		tr.at(s.at)
		if s.sig {
			sig <- struct{}{}
		} else {
			tr.waiter(0).ch <- []*Trigger{ev}
		}
		tr.until(t, fmt.Sprintf("step %d", i), func(st RunnerStats) bool { return sum(st.Fired) == uint64(i+1) && st.Dumps == s.dumps })
	}
}

func sum(m map[string]uint64) (n uint64) {
	for _, v := range m {
		n += v
	}
	return n
}

// Each trigger is rate-limited on its own, every firing is counted, each dump is rotated
// under keep (the oldest removed first), and the dumps are named for the clock.
func TestRunnerFiresAndRotates(t *testing.T) {
	tr := newTestRunner(t)
	ev := &Trigger{Kind: KindEvent, Spec: "sched:sched_process_exit", Event: "sched:sched_process_exit"}
	sigT := SignalTrigger()
	cfg := Config{Dir: tr.dir, Keep: 2, Rate: 10 * time.Second, Triggers: []*Trigger{sigT, ev}}
	if err := tr.Rearm(context.Background(), cfg, nil); err != nil {
		t.Fatal(err)
	}
	sig := make(chan struct{})
	tr.run(t, sig)
	steps := []step{
		{0, false, 1},                // the event: a dump
		{time.Second, false, 1},      // the event within 10s of its dump: none
		{2 * time.Second, true, 2},   // SIGUSR1: its own limit
		{11 * time.Second, false, 3}, // the event past its limit: a dump
	}
	tr.steps(t, sig, ev, steps)
	st := tr.Stats()
	if st.Fired[ev.Spec] != 3 || st.Fired["SIGUSR1"] != 1 || st.DumpFailures != 0 {
		t.Errorf("stats %+v", st)
	}
	if ev.Fired != 3 || ev.Dumps != 2 || sigT.Dumps != 1 {
		t.Errorf("triggers: event fired %d dumped %d, signal dumped %d", ev.Fired, ev.Dumps, sigT.Dumps)
	}
	dumps, err := Dumps(tr.dir, "box")
	if err != nil || len(dumps) != 2 || dumps[0].Name != "box-20261128T050002.000Z.dat" || dumps[1].Name != "box-20261128T050011.000Z.dat" {
		t.Errorf("dumps kept: %v %v", dumps, err)
	}
	tr.mu.Lock()
	defer tr.mu.Unlock()
	if n := strings.Join(tr.notices, "\n"); !strings.Contains(n, "within the rate limit 10s") || !strings.Contains(n, "removed the old dump") {
		t.Errorf("notices:\n%s", n)
	}
}

// A dump that fails is counted, and the runner stays armed: the next trigger dumps.
func TestRunnerDumpFailure(t *testing.T) {
	tr := newTestRunner(t)
	if err := tr.Rearm(context.Background(), Config{Dir: tr.dir, Rate: 0, Triggers: []*Trigger{SignalTrigger()}}, nil); err != nil {
		t.Fatal(err)
	}
	sig := make(chan struct{})
	tr.run(t, sig)
	tr.dumpErr = errors.New("disk full")
	sig <- struct{}{}
	tr.until(t, "a failure", func(st RunnerStats) bool { return st.DumpFailures == 1 && st.Dumps == 0 })
	tr.mu.Lock()
	tr.dumpErr = nil
	tr.mu.Unlock()
	tr.at(time.Second)
	sig <- struct{}{}
	tr.until(t, "a dump after it", func(st RunnerStats) bool { return st.Dumps == 1 })
}

// Rearm while running: the new triggers replace the old (the old waiter is no longer read,
// the counters go on); a commit that fails leaves the old triggers armed and the new torn down.
func TestRunnerRearm(t *testing.T) {
	tr := newTestRunner(t)
	a := &Trigger{Kind: KindEvent, Spec: "a:a", Event: "a:a"}
	if err := tr.Rearm(context.Background(), Config{Dir: tr.dir, Triggers: []*Trigger{SignalTrigger(), a}}, nil); err != nil {
		t.Fatal(err)
	}
	tr.run(t, nil)
	tr.waiter(0).ch <- []*Trigger{a}
	tr.until(t, "a", func(st RunnerStats) bool { return st.Fired["a:a"] == 1 })

	b := &Trigger{Kind: KindEvent, Spec: "b:b", Event: "b:b"}
	refused := errors.New("the kernel refused the profile")
	if err := tr.Rearm(context.Background(), Config{Dir: tr.dir, Triggers: []*Trigger{b}}, func() error { return refused }); !errors.Is(err, refused) {
		t.Fatalf("Rearm with a failing commit: %v", err)
	}
	if tr.Armed() != tr.armed[0] {
		t.Fatal("a failed commit replaced the armed triggers")
	}
	tr.at(time.Hour)
	tr.waiter(0).ch <- []*Trigger{a} // still read
	tr.until(t, "a again", func(st RunnerStats) bool { return st.Fired["a:a"] == 2 })

	committed := false
	if err := tr.Rearm(context.Background(), Config{Dir: tr.dir, Triggers: []*Trigger{b}}, func() error { committed = true; return nil }); err != nil || !committed {
		t.Fatalf("Rearm: %v (committed %v)", err, committed)
	}
	if tr.Armed() != tr.armed[2] {
		t.Fatal("Rearm did not put the new triggers in place")
	}
	select {
	case tr.waiter(0).ch <- []*Trigger{a}:
		t.Fatal("the replaced session is still waited on")
	case <-time.After(20 * time.Millisecond):
	}
	tr.waiter(2).ch <- []*Trigger{b}
	tr.until(t, "b", func(st RunnerStats) bool { return st.Fired["b:b"] == 1 && st.Fired["a:a"] == 2 && st.Dumps == 3 })
	if _, err := os.Stat(filepath.Join(dir(tr.fs, "box"), armFile)); err != nil {
		t.Errorf("the state of the new arming: %v", err)
	}
}

// A failing pipe ends Run with its error; Disarm removes the state.
func TestRunnerPipeFails(t *testing.T) {
	tr := newTestRunner(t)
	if err := tr.Rearm(context.Background(), Config{Dir: tr.dir, Triggers: []*Trigger{SignalTrigger()}}, nil); err != nil {
		t.Fatal(err)
	}
	_, done := tr.run(t, nil)
	broken := errors.New("pipe broken")
	tr.waiter(0).err <- broken
	if err := <-done; !errors.Is(err, broken) {
		t.Errorf("Run: %v", err)
	}
	done <- nil // for the cleanup
	tr.Disarm()
	if _, err := os.Stat(filepath.Join(dir(tr.fs, "box"), armFile)); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("Disarm left the state: %v", err)
	}
}

// A configuration without a directory, or with a file for one, is refused before arming.
func TestRunnerConfig(t *testing.T) {
	tr := newTestRunner(t)
	file := filepath.Join(tr.dir, "f")
	os.WriteFile(file, nil, 0o600)
	for _, cfg := range []Config{{}, {Dir: file}, {Dir: tr.dir, Keep: -1}} {
		if err := tr.Rearm(context.Background(), cfg, nil); !errors.Is(err, ErrTrigger) {
			t.Errorf("Rearm(%+v): %v", cfg, err)
		}
	}
	if len(tr.armed) != 0 {
		t.Error("armed after a refusal")
	}
}

func TestQuote(t *testing.T) {
	for in, want := range map[string]string{`a if comm == "x"`: `a if comm == "x"`, "a\x1b[2Jb": `a\x1b[2Jb`, "/tmp/d\n": `/tmp/d\n`} {
		if got := quote(in); got != want {
			t.Errorf("quote(%q) = %q, want %q", in, got, want)
		}
	}
}

// What the "dumped" notice says is already in the state status reads (arm.json) and in the
// runner's counters: a script that waits for the notice then reads `flight status` sees the
// dump counted (VM TestFlightArmLatency read it right after the notice).
func TestRunnerDumpedNoticeAfterState(t *testing.T) {
	tr := newTestRunner(t)
	ev := &Trigger{Kind: KindEvent, Spec: "a:a", Event: "a:a"}
	if err := tr.Rearm(context.Background(), Config{Dir: tr.dir, Keep: 1, Triggers: []*Trigger{SignalTrigger(), ev}}, nil); err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var seen []string
	notice := tr.Notice
	tr.Notice = func(f string, a ...any) {
		if strings.Contains(f, "dumped") || strings.Contains(f, "removed") {
			st := readArm(tr.fs, "box")
			mu.Lock()
			seen = append(seen, fmt.Sprintf("%s: state dumps %d, runner dumps %d", strings.Fields(f)[2], st.Triggers[1].Dumps, tr.Stats().Dumps))
			mu.Unlock()
		}
		notice(f, a...)
	}
	tr.run(t, make(chan struct{}))
	for i := 1; i <= 2; i++ {
		tr.at(time.Duration(i) * time.Minute)
		tr.waiter(0).ch <- []*Trigger{ev}
		tr.until(t, "the dump", func(st RunnerStats) bool { return st.Dumps == uint64(i) })
	}
	for i := 0; i < 500; i++ { // the notices come after the counts
		mu.Lock()
		n := len(seen)
		mu.Unlock()
		if n >= 3 {
			break
		}
		time.Sleep(2 * time.Millisecond)
	}
	mu.Lock()
	defer mu.Unlock()
	want := []string{"dumped: state dumps 1, runner dumps 1", "dumped: state dumps 2, runner dumps 2", "removed: state dumps 2, runner dumps 2"}
	if strings.Join(seen, "\n") != strings.Join(want, "\n") {
		t.Errorf("at the notices:\n%s\nwant\n%s", strings.Join(seen, "\n"), strings.Join(want, "\n"))
	}
}

// Two events of one trigger read together make one dump, and the trigger counts both fires and
// that one dump (its dumps are the files it made), not a dump per fire; the second is in the dump
// the first makes, not a fire within the rate limit.
func TestRunnerFiresReadTogether(t *testing.T) {
	tr := newTestRunner(t)
	ev := &Trigger{Kind: KindEvent, Spec: "a:a", Event: "a:a"}
	if err := tr.Rearm(context.Background(), Config{Dir: tr.dir, Rate: time.Minute, Triggers: []*Trigger{SignalTrigger(), ev}}, nil); err != nil {
		t.Fatal(err)
	}
	tr.run(t, make(chan struct{}))
	tr.waiter(0).ch <- []*Trigger{ev, ev}
	tr.until(t, "the dump", func(st RunnerStats) bool { return st.Fired["a:a"] == 2 && st.Dumps == 1 })
	dumps, err := Dumps(tr.dir, "box")
	tr.mu.Lock()
	defer tr.mu.Unlock()
	if st := readArm(tr.fs, "box"); err != nil || len(dumps) != 1 || st.Triggers[1].Fired != 2 || st.Triggers[1].Dumps != 1 {
		t.Errorf("dumps %v %v; the trigger's state %+v", dumps, err, st.Triggers[1])
	}
	if n := strings.Join(tr.notices, "\n"); strings.Contains(n, "within the rate limit") {
		t.Errorf("notices:\n%s", n)
	}
}

// A trigger with a rate limit of its own (spec.flight.triggers[].rate) is held to it, the
// others to the arming's: a frequent event can dump once an hour while SIGUSR1 dumps every 10 s.
func TestRunnerTriggerRate(t *testing.T) {
	cfg, err := ConfigOf(&profile.Flight{Dir: t.TempDir(), Rate: "10s", Triggers: []profile.FlightTrigger{
		{Event: "sched:sched_process_exit", Rate: "1h"}}})
	if err != nil || len(cfg.Triggers) != 2 || cfg.Triggers[1].Rate != "1h" || cfg.Triggers[1].rateLimit(cfg.Rate) != time.Hour || cfg.Triggers[0].rateLimit(cfg.Rate) != 10*time.Second {
		t.Fatalf("ConfigOf: %+v %v", cfg, err)
	}
	if _, err := ConfigOf(&profile.Flight{Dir: "/x", Triggers: []profile.FlightTrigger{{Warn: true, Rate: "-1s"}}}); !errors.Is(err, ErrTrigger) {
		t.Errorf("a negative rate: %v", err)
	}
	tr := newTestRunner(t)
	cfg.Dir = tr.dir
	ev := cfg.Triggers[1]
	if err := tr.Rearm(context.Background(), cfg, nil); err != nil {
		t.Fatal(err)
	}
	sig := make(chan struct{})
	tr.run(t, sig)
	steps := []step{
		{0, false, 1},                // the event: a dump
		{time.Second, true, 2},       // SIGUSR1: a dump
		{30 * time.Second, false, 2}, // the event within its own hour: none
		{31 * time.Second, true, 3},  // SIGUSR1 past its 10 s: a dump
		{61 * time.Minute, false, 4}, // the event past its hour: a dump
	}
	tr.steps(t, sig, ev, steps)
	tr.mu.Lock()
	defer tr.mu.Unlock()
	if n := strings.Join(tr.notices, "\n"); !strings.Contains(n, "within the rate limit 1h0m0s") {
		t.Errorf("notices:\n%s", n)
	}
}
