package cmd

import (
	"bytes"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/ftctl/ftctl/internal/vtscreen"
)

// openPTY makes a pseudo-terminal pair.
func openPTY(t *testing.T) (master, slave *os.File) {
	t.Helper()
	m, s, err := vtscreen.OpenPTY(80, 24)
	if err != nil {
		t.Skipf("no pseudo-terminals here: %v", err)
	}
	return m, s
}

// On a terminal that never answers (a serial or IPMI console), no command but the console
// asks the terminal anything: each finishes at once and writes no escape sequence. (bubbletea
// v1 asked for the background colour at package init and waited 5 s for the answer.)
func TestNoTerminalQueryOutsideTUI(t *testing.T) {
	bin := linkFtctl(t)
	root := fakeRoot(t)
	for _, args := range [][]string{{"--version"}, {"version"}, {"--tracefs", root, "status"}} {
		master, slave := openPTY(t)
		cmd := exec.Command(filepath.Join(bin, "ftctl"), args...)
		cmd.Stdin, cmd.Stdout, cmd.Stderr = slave, slave, slave
		cmd.Env = append(os.Environ(), "TERM=xterm-256color")
		cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true, Setctty: true}
		start := time.Now()
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		slave.Close()
		var out bytes.Buffer
		copied := make(chan struct{})
		go func() { io.Copy(&out, master); close(copied) }() // never answers: only reads
		done := make(chan error, 1)
		go func() { done <- cmd.Wait() }()
		select {
		case err := <-done:
			if d := time.Since(start); err != nil || d > 3*time.Second { // a query waits 5 s; a loaded host (load 10) took 1.2 s to run version
				t.Errorf("%q: %v after %v", args, err, d)
			}
		case <-time.After(10 * time.Second):
			cmd.Process.Kill()
			<-done
			t.Errorf("%q: still running after 10 s", args)
		}
		master.Close()
		<-copied
		if i := bytes.IndexByte(out.Bytes(), 0x1b); i >= 0 {
			t.Errorf("%q wrote an escape sequence to the terminal: %q", args, out.Bytes())
		}
	}
}

// ftctl tui --file shows a recording on a terminal without tracefs (--tracefs names a
// directory that is not there): every event read to the end, q quits with 0.
func TestTUIFileOnATerminal(t *testing.T) {
	bin := linkFtctl(t)
	file, err := filepath.Abs(filepath.Join("..", "stream", "testdata", "6.12", "tp.v7zstd.dat"))
	if err != nil {
		t.Fatal(err)
	}
	master, slave := openPTY(t)
	defer master.Close()
	cmd := exec.Command(filepath.Join(bin, "ftctl"), "--tracefs", filepath.Join(t.TempDir(), "none"), "tui", "--file", file)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = slave, slave, slave
	cmd.Env = append(os.Environ(), "TERM=xterm-256color")
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true, Setctty: true}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	slave.Close()
	screen := vtscreen.New(80, 24)
	var mu sync.Mutex
	go func() {
		buf := make([]byte, 4096)
		for {
			n, err := master.Read(buf)
			mu.Lock()
			screen.Write(buf[:n])
			mu.Unlock()
			if err != nil {
				return
			}
		}
	}()
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	shows := func(text string) bool {
		mu.Lock()
		defer mu.Unlock()
		return screen.Contains(text)
	}
	for deadline := time.Now().Add(15 * time.Second); !shows("end of the recording"); time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			cmd.Process.Kill()
			mu.Lock()
			t.Fatalf("the end of the recording never showed:\n%s", screen)
		}
	}
	master.Write([]byte("q"))
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("q: %v", err)
		}
	case <-time.After(10 * time.Second):
		cmd.Process.Kill()
		t.Error("q: still running after 10 s")
	}
}
