package tracefs

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"golang.org/x/sys/unix"
)

// Lock is ftctl's cross-process control-plane lock. Every ftctl command that writes to tracefs
// holds it from its first read of the state it will change until its last write, so two
// concurrent writers (say two `ftctl filter add`) never lose an update to a read-modify-write.
//
// The lock is flock(LOCK_EX) on a descriptor of the tracefs root directory itself: no lock file
// to create, spoof or leave behind (a lock file in a world-writable place is an attack surface;
// perf-tools' mkdir lock is racy), one lock per tracefs superblock whatever path it is reached
// by, and the kernel drops it when the holder dies, even by SIGKILL. /proc/locks names the
// holder's pid.
type Lock struct {
	fd int
	fs *FS // the FS it was taken through, until Unlock
}

// held counts the Locks taken through each FS and not yet released: FS.Locked.
var held = struct {
	sync.Mutex
	n map[*FS]int
}{n: map[*FS]int{}}

// Locked says whether a Lock taken through f is held (by this process, through this FS
// value): a step that must run under the lock (session teardown's writes to kernel-wide
// files) asks it rather than taking the lock again, which a second descriptor of the same
// process could not (flock locks belong to open files).
func (f *FS) Locked() bool {
	held.Lock()
	defer held.Unlock()
	return held.n[f] > 0
}

func (f *FS) locked() *Lock {
	held.Lock()
	held.n[f]++
	held.Unlock()
	return &Lock{fd: -1, fs: f}
}

// LockHolder says who holds the control-plane lock, through /proc/locks (an unknown process
// when none, or one this pid namespace cannot see).
func (f *FS) LockHolder() Holder { return lockHolder(f.Root()) }

// Holder describes the process that holds the lock.
type Holder struct {
	PID     int    `json:"pid"`
	Command string `json:"command"` // its command line, or comm
}

func (h Holder) String() string {
	if h.PID == 0 {
		return "an unknown process"
	}
	if h.Command == "" {
		return fmt.Sprintf("pid %d", h.PID)
	}
	return fmt.Sprintf("pid %d (%s)", h.PID, h.Command)
}

// Lock takes the control-plane lock, waiting until timeout passes with no progress: each time
// the lock changes hands (another writer took it), the wait starts over, so a burst of
// serialized writers all land while a holder that never lets go still ends the wait. onWait (if
// not nil) is called once when the lock is found held, so the caller can say who it waits for.
// A context cancellation (Ctrl-C) stops the wait with ctx.Err(). In dry-run mode nothing is
// locked: a dry run changes nothing and must not wait on anyone.
func (f *FS) Lock(ctx context.Context, timeout time.Duration, onWait func(Holder)) (*Lock, error) {
	if f.DryRun != nil {
		return f.locked(), nil
	}
	root := f.Root()
	fd, err := unix.Open(root, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC|unix.O_NOFOLLOW, 0)
	if err != nil {
		return nil, f.opError("open", root, "", err)
	}
	deadline := time.Now().Add(timeout)
	delay := 2 * time.Millisecond
	waited := false
	// Progress: who holds the lock, looked up every holderEvery (a read of /proc/locks) and
	// before giving up. The holder waited for letting go (seen free, or in other hands) starts
	// the wait over. A pid not visible from here (another pid namespace) reads as free only
	// when it truly is: such a holder that never lets go still ends the wait.
	holder, looked, handovers := -1, time.Time{}, 0
	moved := func(now time.Time) bool {
		looked = now
		pid := lockHolderPID(root)
		was := holder
		holder = pid
		if was == -1 || pid == was || (was == 0 && pid != 0) {
			return false // the first look; the same holder; taken after a let-go already counted
		}
		deadline = now.Add(timeout)
		handovers++
		return true
	}
	for {
		err := unix.Flock(fd, unix.LOCK_EX|unix.LOCK_NB)
		if err == nil {
			l := f.locked()
			l.fd = fd
			return l, nil
		}
		if err != unix.EWOULDBLOCK && err != unix.EINTR {
			unix.Close(fd)
			return nil, &Error{Op: "lock", Path: root, Class: ErrIO, Errno: err}
		}
		if !waited && onWait != nil {
			onWait(lockHolder(root))
		}
		waited = true
		if now := time.Now(); now.Sub(looked) >= holderEvery {
			moved(now)
		}
		if now := time.Now(); !now.Before(deadline) && !moved(now) {
			unix.Close(fd)
			h := lockHolder(root)
			before := ""
			switch {
			case handovers == 1:
				before = " (it changed hands once before)"
			case handovers > 1:
				before = fmt.Sprintf(" (it changed hands %d times before)", handovers)
			}
			return nil, &Error{Op: "lock", Path: root, Class: ErrBusy,
				Reason: fmt.Sprintf("another ftctl is changing tracing state: the lock is held by %s; waited %v since it last changed hands%s (--lock-timeout)", h, timeout, before)}
		}
		select {
		case <-ctx.Done():
			unix.Close(fd)
			return nil, ctx.Err()
		case <-time.After(min(delay, time.Until(deadline))):
		}
		// A waiter polls at least every 10 ms: flock has no queue, so a long backoff let
		// newcomers take the lock ahead of those waiting longest (32 concurrent writers with a
		// 50 ms cap: BENCHMARKS.md, "Concurrent writers").
		delay = min(delay*2, 10*time.Millisecond)
	}
}

// Unlock releases the lock. Safe on a nil or already released lock.
func (l *Lock) Unlock() error {
	if l == nil {
		return nil
	}
	if l.fs != nil {
		held.Lock()
		if held.n[l.fs]--; held.n[l.fs] <= 0 {
			delete(held.n, l.fs)
		}
		held.Unlock()
		l.fs = nil
	}
	if l.fd < 0 {
		return nil
	}
	err := unix.Close(l.fd) // closing the last descriptor drops the flock
	l.fd = -1
	return err
}

// holderEvery is how often a waiter looks up who holds the lock, to see progress.
const holderEvery = 50 * time.Millisecond

// lockHolderPID is flockHolderPID; tests replace it.
var lockHolderPID = flockHolderPID

// lockHolder finds who holds an flock on path, through /proc/locks.
func lockHolder(path string) Holder {
	pid := lockHolderPID(path)
	if pid == 0 {
		return Holder{}
	}
	return Holder{PID: pid, Command: processCommand(pid)}
}

// flockHolderPID is the pid holding an flock on path, through /proc/locks (0: none, or not
// visible from this pid namespace).
func flockHolderPID(path string) int {
	var st unix.Stat_t
	if err := unix.Stat(path, &st); err != nil {
		return 0
	}
	f, err := os.Open("/proc/locks")
	if err != nil {
		return 0
	}
	defer f.Close()
	return findFlockHolder(f, unix.Major(st.Dev), unix.Minor(st.Dev), st.Ino)
}

// findFlockHolder parses /proc/locks (fs/locks.c lock_get_status):
//
//	1: FLOCK  ADVISORY  WRITE 1234 00:0e:1 0 EOF
//	1: -> FLOCK  ADVISORY  WRITE 1300 00:0e:1 0 EOF   (a waiter: skipped)
//
// and returns the pid holding an FLOCK on the inode major:minor:ino (device numbers in hex).
func findFlockHolder(r io.Reader, major, minor uint32, ino uint64) int {
	want := fmt.Sprintf("%02x:%02x:%d", major, minor, ino)
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) < 6 || fields[1] == "->" || fields[1] != "FLOCK" {
			continue
		}
		if fields[5] != want {
			continue
		}
		if pid, err := strconv.Atoi(fields[4]); err == nil {
			return pid
		}
	}
	return 0
}

// processCommand returns a process's command line (arguments joined by spaces, control
// characters escaped), or its comm when the command line is empty.
func processCommand(pid int) string {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
	if err == nil && len(b) > 0 {
		s := strings.TrimRight(string(b), "\x00")
		s = strings.ReplaceAll(s, "\x00", " ")
		if len(s) > 120 {
			s = s[:120] + "..."
		}
		return escapeControl(s)
	}
	b, err = os.ReadFile(fmt.Sprintf("/proc/%d/comm", pid))
	if err != nil {
		return ""
	}
	return escapeControl(strings.TrimSpace(string(b)))
}

// escapeControl makes a string from another process safe to print on a terminal.
func escapeControl(s string) string {
	q := strconv.Quote(s)
	return q[1 : len(q)-1]
}
