package cmd

import (
	"bytes"
	"io"
	"os"
	"strconv"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// --ready-fd takes a descriptor the caller opened, of 3 or more, and only on the commands that
// arm a session: elsewhere a script would wait for a line that never comes.
func TestReadyFDRefused(t *testing.T) {
	root := fakeRoot(t)
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"count", "vfs_read", "--ready-fd", "1"}, "0, 1 and 2 are ftctl's standard streams"},
		{[]string{"latency", "vfs_read", "--ready-fd", "0"}, "0, 1 and 2 are ftctl's standard streams"},
		{[]string{"trace", "-f", "vfs_read", "--ready-fd", "999"}, "--ready-fd 999: not an open file descriptor"},
		{[]string{"status", "--ready-fd", "3"}, "unknown flag: --ready-fd"},
		{[]string{"stream", "--ready-fd", "3"}, "unknown flag: --ready-fd"},
	} {
		code, _, errs := run(t, append([]string{"--tracefs", root}, c.args...)...)
		if code != 2 || !strings.Contains(errs, c.want) {
			t.Errorf("ftctl %q: exit %d, want 2 with %q:\n%s", c.args, code, c.want, errs)
		}
	}
	for _, name := range []string{"trace", "graph", "record", "count", "latency", "hist"} {
		c, _, err := NewRootCmd(&Globals{}).Find([]string{name})
		if err != nil || c.Flags().Lookup("ready-fd") == nil {
			t.Errorf("ftctl %s has no --ready-fd (%v)", name, err)
		}
	}
}

// The descriptor is kept from the command ftctl starts (-- COMMAND), so that a reader waiting
// for its end is not held open by the workload.
func TestReadyFDCloseOnExec(t *testing.T) {
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	fd, err := unix.Dup(int(w.Fd()))
	if err != nil {
		t.Fatal(err)
	}
	w.Close()
	rw, err := openReadyFD(fd)
	if err != nil {
		t.Fatal(err)
	}
	defer rw.Close()
	flags, err := unix.FcntlInt(uintptr(fd), unix.F_GETFD, 0)
	if err != nil || flags&unix.FD_CLOEXEC == 0 {
		t.Errorf("descriptor %d: flags %#x (%v), want FD_CLOEXEC", fd, flags, err)
	}
}

// Armed writes the line once, closes the descriptor, and says so on stderr unless -q; a run that
// never arms closes it with nothing written.
func TestArmed(t *testing.T) {
	for _, quiet := range []bool{false, true} {
		r, w, err := os.Pipe()
		if err != nil {
			t.Fatal(err)
		}
		var errb bytes.Buffer
		g := &Globals{Err: &errb, Quiet: quiet, ready: w, ReadyFD: int(w.Fd())}
		g.Armed(`counting in instance "x"`)
		g.Armed("again")
		got, err := io.ReadAll(r) // EOF only once w is closed
		r.Close()
		if err != nil || string(got) != readyLine {
			t.Errorf("quiet=%v: the descriptor got %q (%v), want %q then its end", quiet, got, err, readyLine)
		}
		wantNotice := "ftctl: armed: counting in instance \"x\"\n"
		if quiet {
			wantNotice = ""
		}
		if !strings.HasPrefix(errb.String(), wantNotice) || (quiet && errb.Len() > 0) {
			t.Errorf("quiet=%v: stderr %q, want it to start with %q", quiet, errb.String(), wantNotice)
		}
	}

	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	g := &Globals{ready: w}
	g.closeReady()
	if got, _ := io.ReadAll(r); len(got) != 0 {
		t.Errorf("never armed: the descriptor got %q, want nothing", got)
	}
	r.Close()
}

// A dry run arms nothing: the descriptor is closed with nothing written.
func TestReadyFDDryRun(t *testing.T) {
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	fd, err := unix.Dup(int(w.Fd()))
	if err != nil {
		t.Fatal(err)
	}
	w.Close()
	code, _, errs := run(t, "--tracefs", fakeRoot(t), "--dry-run", "trace", "-e", "sched", "--ready-fd", strconv.Itoa(fd))
	got, _ := io.ReadAll(r)
	if len(got) != 0 || strings.Contains(errs, "armed") {
		t.Errorf("dry run (exit %d): the descriptor got %q; stderr:\n%s", code, got, errs)
	}
}
