//go:build vmtest

package vmtest

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/spf13/cobra"

	"github.com/ftctl/ftctl/cmd"
)

// helpExample is one example line of a command's --help.
type helpExample struct {
	command string // the command whose help shows it
	line    string // as shown, without the "sudo " (the VM runs as root)
}

// helpExamples collects every example of every command, joining lines continued with "\".
func helpExamples() []helpExample {
	var out []helpExample
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		var cont string
		for _, l := range strings.Split(c.Example, "\n") {
			l = strings.TrimSpace(l)
			if cont != "" {
				l, cont = cont+" "+l, ""
			}
			if strings.HasSuffix(l, "\\") {
				cont = strings.TrimSuffix(l, "\\")
				continue
			}
			l = strings.TrimPrefix(l, "sudo ")
			if strings.HasPrefix(l, "ftctl ") {
				out = append(out, helpExample{c.CommandPath(), l})
			}
		}
		for _, s := range c.Commands() {
			walk(s)
		}
	}
	walk(cmd.NewRootCmd(&cmd.Globals{}))
	return out
}

// withPID runs a sleeping process whose pid is pid (the examples name pids such as 1234): the
// kernel gives the next fork ns_last_pid+1.
func withPID(t *testing.T, pid int) {
	t.Helper()
	if err := os.WriteFile("/proc/sys/kernel/ns_last_pid", []byte(strconv.Itoa(pid-1)), 0); err != nil {
		t.Fatalf("ns_last_pid: %v", err)
	}
	c := exec.Command("/bin/sleep", "600")
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Process.Kill(); c.Wait() })
	if c.Process.Pid != pid {
		t.Fatalf("the process meant to be pid %d is %d", pid, c.Process.Pid)
	}
}

// TestHelpExamples runs every example of every command's --help on the real kernel, as
// written (the VM runs as root: no sudo), in the state the examples assume: the instances and
// probes they name, the files they read, the pids they trace, ext4 loaded. Each must exit 0;
// a stream without an end is interrupted after 2 s (exit 130); the console (tui) is left to
// the console's own tests; what a pipe feeds into jq (not in the VM) is dropped.
func TestHelpExamples(t *testing.T) {
	examples := helpExamples()
	if len(examples) < 40 {
		t.Fatalf("only %d examples found", len(examples))
	}
	for _, m := range []string{"crc16", "mbcache", "jbd2", "ext4"} {
		insmod(t, m)
	}
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "funcs.txt"), []byte("vfs_read\nvfs_write\n"), 0o644)
	os.WriteFile(filepath.Join(dir, "noisy.txt"), []byte("*spin_lock*\n"), 0o644)
	withPID(t, 1234)
	withPID(t, 4242)
	t.Cleanup(func() { exec.Command(ftctl, "reset", "--all", "--yes").Run() })
	setup := func() {
		for _, s := range [][]string{
			{"instance", "create", "mytrace", "incident42", "incident"},
			{"probe", "add", "p:ftctl/myopen do_sys_openat2 dfd=%di filename=+0(%si):string"},
			{"probe", "add", "p:kprobes/theirs vfs_read"},
		} {
			ftctlRun(t, s...) // may exist already: what an example removed is made again
		}
	}
	// Examples that change everything (reset --all) run last; the others in the tree's order.
	sort.SliceStable(examples, func(i, j int) bool {
		return !strings.Contains(examples[i].line, "--all") && strings.Contains(examples[j].line, "--all")
	})
	ran := 0
	for _, ex := range examples {
		line := ex.line
		if strings.Contains(line, " tui") {
			continue
		}
		if i := strings.Index(line, " | jq"); i >= 0 {
			line = line[:i]
		}
		setup()
		runs := exec.Command("/bin/sh", "-c", "exec "+line+" >/dev/null")
		runs.Dir = dir
		runs.Env = []string{"PATH=/bin:/sbin:/usr/bin", "HOME=/root"}
		var errb bytes.Buffer
		runs.Stderr = &errb
		if err := runs.Start(); err != nil {
			t.Fatal(err)
		}
		done := make(chan error, 1)
		go func() { done <- runs.Wait() }()
		endless := strings.HasPrefix(line, "ftctl stream") && !strings.Contains(line, "--count") && !strings.Contains(line, "--duration") && !strings.Contains(line, "| head")
		limit := 60 * time.Second
		if endless {
			limit = 2 * time.Second
		}
		var werr error
		interrupted := false
		select {
		case werr = <-done:
		case <-time.After(limit):
			runs.Process.Signal(syscall.SIGINT)
			interrupted = true
			select {
			case werr = <-done:
			case <-time.After(10 * time.Second):
				runs.Process.Kill()
				werr = <-done
			}
		}
		code := exitCode(werr)
		want := 0
		if interrupted && endless {
			want = 130
		}
		if interrupted && !endless || code != want {
			t.Errorf("%s --help: %s: exit %d (interrupted %v); stderr:\n%s", ex.command, ex.line, code, interrupted, errb.String())
		} else {
			t.Logf("%s: exit %d: %s", ex.command, code, ex.line)
		}
		ran++
	}
	t.Logf("%d examples run", ran)
}
