package tracefs

import (
	"os"
	"path/filepath"
	"runtime"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// Wait, with buffer_percent set, waits through Go's poller on an epoll instance of the CPUs'
// files (here FIFOs, which epoll takes as it takes trace_pipe_raw): it ends early when a CPU
// has data, otherwise at its deadline, and it waits parked (no thread held in a system call
// for it: the count of threads stays what it was).
func TestSplicerWaitParked(t *testing.T) {
	dir := t.TempDir()
	for _, cpu := range []string{"cpu0", "cpu1"} {
		os.MkdirAll(filepath.Join(dir, "per_cpu", cpu), 0o755)
		if err := unix.Mkfifo(filepath.Join(dir, "per_cpu", cpu, "trace_pipe_raw"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	os.WriteFile(filepath.Join(dir, "buffer_percent"), []byte("50\n"), 0o644)
	in := (&FS{Mount: Mount{Path: dir}}).Top()
	s, err := in.OpenSplicer()
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if s.ep == nil {
		t.Fatal("no epoll instance: Wait polls")
	}
	// a writer for each FIFO, so that neither hangs up
	var writers []*os.File
	for _, cpu := range []string{"cpu0", "cpu1"} {
		w, err := os.OpenFile(filepath.Join(dir, "per_cpu", cpu, "trace_pipe_raw"), os.O_WRONLY, 0)
		if err != nil {
			t.Fatal(err)
		}
		defer w.Close()
		writers = append(writers, w)
	}
	start := time.Now()
	s.Wait(300 * time.Millisecond)
	if d := time.Since(start); d < 250*time.Millisecond || d > 2*time.Second {
		t.Errorf("Wait(300ms) with nothing to read took %v", d)
	}
	go func() {
		time.Sleep(100 * time.Millisecond)
		writers[1].Write([]byte("page"))
	}()
	start = time.Now()
	s.Wait(5 * time.Second)
	if d := time.Since(start); d > 2*time.Second {
		t.Errorf("Wait(5s) did not end when CPU 1 had data: %v", d)
	}
	// data left unread: the next Wait ends at once
	start = time.Now()
	s.Wait(5 * time.Second)
	if d := time.Since(start); d > time.Second {
		t.Errorf("Wait(5s) with data unread took %v", d)
	}
	// parked: many Waits at once (of as many Splicers) hold no thread each
	threads := func() int { n, _ := os.ReadDir("/proc/self/task"); return len(n) }
	buf := make([]byte, 16)
	unix.Read(s.fds[1], buf)
	var many []*Splicer
	for range 20 {
		o, err := in.OpenSplicer()
		if err != nil {
			t.Fatal(err)
		}
		defer o.Close()
		many = append(many, o)
	}
	before := threads()
	done := make(chan struct{})
	for _, o := range many {
		go func() { o.Wait(500 * time.Millisecond); done <- struct{}{} }()
	}
	time.Sleep(200 * time.Millisecond)
	runtime.Gosched()
	if during := threads(); during > before+3 {
		t.Errorf("%d threads while 20 goroutines wait, %d before: the waits hold threads", during, before)
	}
	for range 20 {
		<-done
	}
}

// Interrupt ends the Wait under way at once, and every later one: through Go's poller (FIFOs
// and buffer_percent), and where Wait sleeps (buffer_percent 0).
func TestSplicerInterrupt(t *testing.T) {
	for _, percent := range []string{"50", "0"} {
		dir := t.TempDir()
		os.MkdirAll(filepath.Join(dir, "per_cpu", "cpu0"), 0o755)
		if err := unix.Mkfifo(filepath.Join(dir, "per_cpu", "cpu0", "trace_pipe_raw"), 0o600); err != nil {
			t.Fatal(err)
		}
		os.WriteFile(filepath.Join(dir, "buffer_percent"), []byte(percent+"\n"), 0o644)
		s, err := (&FS{Mount: Mount{Path: dir}}).Top().OpenSplicer()
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		if got := s.WakesEarly(); got != (percent != "0") {
			t.Fatalf("buffer_percent %s: WakesEarly %v", percent, got)
		}
		time.AfterFunc(200*time.Millisecond, s.Interrupt)
		start := time.Now()
		s.Wait(5 * time.Second)
		if d := time.Since(start); d > 2*time.Second {
			t.Errorf("buffer_percent %s: Wait(5s) interrupted after 200 ms took %v", percent, d)
		}
		s.Interrupt() // again: nothing
		start = time.Now()
		s.Wait(5 * time.Second)
		if d := time.Since(start); d > time.Second {
			t.Errorf("buffer_percent %s: Wait(5s) after Interrupt took %v", percent, d)
		}
	}
}
