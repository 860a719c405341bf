package tracefs

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// TestMain doubles as a lock-holding helper process: with FTCTL_TEST_HOLD_LOCK=DIR the test
// binary takes the lock on DIR, prints "locked", and holds it until killed or stdin closes.
func TestMain(m *testing.M) {
	if dir := os.Getenv("FTCTL_TEST_HOLD_LOCK"); dir != "" {
		f := &FS{Mount: Mount{Path: dir}}
		l, err := f.Lock(context.Background(), time.Second, nil)
		if err != nil {
			fmt.Println("error:", err)
			os.Exit(1)
		}
		fmt.Println("locked")
		bufio.NewReader(os.Stdin).ReadString('\n')
		l.Unlock()
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// holdLock starts a helper process holding the lock on dir.
func holdLock(t *testing.T, dir string) (*exec.Cmd, func()) {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), "FTCTL_TEST_HOLD_LOCK="+dir)
	stdin, _ := cmd.StdinPipe()
	stdout, _ := cmd.StdoutPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	line, _ := bufio.NewReader(stdout).ReadString('\n')
	if strings.TrimSpace(line) != "locked" {
		t.Fatalf("helper: %q", line)
	}
	var waited sync.Once // release (from another goroutine) and the cleanup both wait
	release := func() { stdin.Close(); waited.Do(func() { cmd.Wait() }) }
	t.Cleanup(func() { cmd.Process.Kill(); waited.Do(func() { cmd.Wait() }) })
	return cmd, release
}

func TestLockTimeoutNamesHolder(t *testing.T) {
	dir := t.TempDir()
	helper, _ := holdLock(t, dir)
	f := &FS{Mount: Mount{Path: dir}}
	var waitedFor Holder
	start := time.Now()
	_, err := f.Lock(context.Background(), 150*time.Millisecond, func(h Holder) { waitedFor = h })
	if !errors.Is(err, ErrBusy) {
		t.Fatalf("expected busy, got %v", err)
	}
	if d := time.Since(start); d < 150*time.Millisecond || d > 2*time.Second {
		t.Errorf("waited %v", d)
	}
	pid := fmt.Sprint(helper.Process.Pid)
	if waitedFor.PID != helper.Process.Pid || !strings.Contains(err.Error(), "pid "+pid) {
		t.Errorf("holder not named: onWait %+v, error %v", waitedFor, err)
	}
}

func TestLockWaitsForRelease(t *testing.T) {
	dir := t.TempDir()
	_, release := holdLock(t, dir)
	f := &FS{Mount: Mount{Path: dir}}
	go func() { time.Sleep(200 * time.Millisecond); release() }()
	start := time.Now()
	l, err := f.Lock(context.Background(), 5*time.Second, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Unlock()
	if d := time.Since(start); d < 150*time.Millisecond {
		t.Errorf("got the lock after %v while it was held", d)
	}
}

// The kernel drops an flock when its holder dies, even by SIGKILL: no stale lock.
func TestLockSurvivesHolderKill(t *testing.T) {
	dir := t.TempDir()
	helper, _ := holdLock(t, dir)
	helper.Process.Signal(syscall.SIGKILL)
	helper.Wait()
	f := &FS{Mount: Mount{Path: dir}}
	l, err := f.Lock(context.Background(), time.Second, nil)
	if err != nil {
		t.Fatal(err)
	}
	l.Unlock()
}

func TestLockCancel(t *testing.T) {
	dir := t.TempDir()
	holdLock(t, dir)
	f := &FS{Mount: Mount{Path: dir}}
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(100*time.Millisecond, cancel)
	start := time.Now()
	_, err := f.Lock(ctx, 10*time.Second, nil)
	if !errors.Is(err, context.Canceled) || time.Since(start) > 2*time.Second {
		t.Fatalf("%v after %v", err, time.Since(start))
	}
}

func TestLockExcludesWithinProcessToo(t *testing.T) {
	// flock locks belong to open file descriptions: a second Lock in the same process waits too.
	dir := t.TempDir()
	f := &FS{Mount: Mount{Path: dir}}
	l, err := f.Lock(context.Background(), time.Second, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.Lock(context.Background(), 50*time.Millisecond, nil); !errors.Is(err, ErrBusy) {
		t.Fatalf("second lock: %v", err)
	}
	l.Unlock()
	l.Unlock() // idempotent
	l2, err := f.Lock(context.Background(), time.Second, nil)
	if err != nil {
		t.Fatal(err)
	}
	l2.Unlock()
}

func TestLockDryRunLocksNothing(t *testing.T) {
	dir := t.TempDir()
	holdLock(t, dir)
	f := &FS{Mount: Mount{Path: dir}, DryRun: new(strings.Builder)}
	l, err := f.Lock(context.Background(), 0, nil)
	if err != nil {
		t.Fatal(err)
	}
	l.Unlock()
}

// waitWithHolders holds the lock on a temporary directory, lets holders(since) play who holds it
// (lockHolderPID), and waits for the lock with timeout; it returns how long the waiter waited and
// its error. The holders are this process's, their pids played.
func waitWithHolders(t *testing.T, timeout time.Duration, holders func(since time.Duration) int) (time.Duration, error) {
	t.Helper()
	f := &FS{Mount: Mount{Path: t.TempDir()}}
	held, err := f.Lock(context.Background(), time.Second, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer held.Unlock()
	start := time.Now()
	lockHolderPID = func(string) int { return holders(time.Since(start)) }
	defer func() { lockHolderPID = flockHolderPID }()
	_, err = f.Lock(context.Background(), timeout, nil)
	return time.Since(start), err
}

// TestLockWaitCountsNoProgress: the timeout counts the time since the lock last changed hands.
// While holders follow one another (a burst of serialized writers), the waiter waits on; once
// one keeps it, the waiter gives up a timeout later, saying the lock moved meanwhile.
func TestLockWaitCountsNoProgress(t *testing.T) {
	const moving = 600 * time.Millisecond
	d, err := waitWithHolders(t, 300*time.Millisecond, func(since time.Duration) int {
		return 1000 + int(min(since, moving)/(100*time.Millisecond)) // a new holder every 100 ms for 600 ms, then one stays
	})
	if !errors.Is(err, ErrBusy) || !strings.Contains(err.Error(), "since it last changed hands (it changed hands 6 times before)") {
		t.Fatalf("want busy after 6 handovers: %v", err)
	}
	if d < moving+300*time.Millisecond || d > moving+2*time.Second {
		t.Errorf("gave up after %v, want the 600 ms of handovers and then 300 ms", d)
	}
}

// TestLockWaitLetGoIsProgress: the holder waited for letting go counts as progress even when
// another takes the lock before the waiter does (seen free in between).
func TestLockWaitLetGoIsProgress(t *testing.T) {
	d, err := waitWithHolders(t, 300*time.Millisecond, func(since time.Duration) int {
		switch { // 1000 holds, lets go (free for 100 ms), 1001 takes it
		case since < 200*time.Millisecond:
			return 1000
		case since < 300*time.Millisecond:
			return 0
		}
		return 1001
	})
	if !errors.Is(err, ErrBusy) || !strings.Contains(err.Error(), "(it changed hands once before)") {
		t.Fatalf("want busy after one handover: %v", err)
	}
	if d < 500*time.Millisecond || d > 2500*time.Millisecond {
		t.Errorf("gave up after %v, want 200 ms, then 300 ms from the let-go", d)
	}
}
