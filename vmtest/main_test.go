//go:build vmtest

package vmtest

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/ftctl/ftctl/internal/outputcheck"
	"github.com/ftctl/ftctl/tracefs"
)

const (
	tracing = "/sys/kernel/tracing"
	ftctl   = "/bin/ftctl"
)

func TestMain(m *testing.M) {
	if dir := os.Getenv("FTCTL_VMTEST_HOLD_LOCK"); dir != "" {
		holdLockHelper(dir)
		return
	}
	cmdline, _ := os.ReadFile("/proc/cmdline")
	if !bytes.Contains(cmdline, []byte("ftctl.vmtest=1")) {
		fmt.Fprintln(os.Stderr, "vmtest: refusing to run: these tests change kernel tracing state and run only in ftctl's test VM (make vmtest)")
		os.Exit(1)
	}
	fmt.Printf("vmtest: kernel %s\n", tracefs.KernelRelease())
	if _, err := os.Stat(filepath.Join(jsonSchemas, "status.schema.json")); err != nil {
		fmt.Fprintf(os.Stderr, "vmtest: the JSON Schemas are not shipped (vm/suite.sh): %v\n", err)
		os.Exit(1)
	}
	expandTopRing()
	code := m.Run()
	fmt.Printf("vmtest: -o json: %d values of %d runs validated against docs/json\n", jsonValues.Load(), jsonRuns.Load())
	os.Exit(code)
}

// expandTopRing gives the top level's ring the size its first use would. On 6.1 the rings
// keep their boot size (buffer_size_kb "7 (expanded: 1408)") until a first use expands them
// all, but a write to any instance's buffer_size_kb marks them expanded without growing the
// top level's (trace.c tracing_resize_ring_buffer sets ring_buffer_expanded): a suite whose
// first test sized an instance's ring (TestAgent's profile) left the top level at 7 KiB, and
// ftctl graph, which runs there on 6.1, lost all but ~150 events (CI, 2026-11-28). Expanded
// here, the tests see the top level as any earlier use would have left it, in any order.
func expandTopRing() {
	b, err := os.ReadFile(filepath.Join(tracing, "buffer_size_kb"))
	if err != nil {
		return
	}
	m := regexp.MustCompile(`\(expanded: (\d+)\)`).FindSubmatch(b)
	if m == nil {
		return
	}
	if err := os.WriteFile(filepath.Join(tracing, "buffer_size_kb"), m[1], 0); err != nil {
		fmt.Fprintf(os.Stderr, "vmtest: expanding the top level's ring: %v\n", err)
		os.Exit(1)
	}
	fmt.Printf("vmtest: the top level's ring expanded to %s KiB per CPU, as a first use does\n", m[1])
}

// jsonSchemas holds docs/json, shipped by vm/suite.sh: every -o json output of ftctlRun and
// ftctlCommand is validated against it (checkJSON), so a new test is without code of its own.
const jsonSchemas = "/etc/ftctl-json"

var (
	outputSchemas        = outputcheck.New(jsonSchemas)
	jsonRuns, jsonValues atomic.Int64
)

// checkJSON validates what an ftctl run with args printed on stdout when args ask for -o json.
// A record cut short by a kill (no newline yet) is left out, and so is what a traced command
// (-- COMMAND) printed on the same stdout; a whole record of ftctl's must match its schema.
func checkJSON(t *testing.T, args []string, stdout string) {
	t.Helper()
	if !outputcheck.AsksJSON(args) {
		return
	}
	if outputcheck.Traced(args) { // the traced command writes to the same stdout
		stdout = string(outputcheck.Records([]byte(stdout)))
	}
	if i := strings.LastIndexByte(stdout, '\n'); i >= 0 {
		stdout = stdout[:i+1]
	} else {
		stdout = ""
	}
	n, err := outputSchemas.Check([]byte(stdout))
	jsonRuns.Add(1)
	jsonValues.Add(int64(n))
	if err != nil {
		t.Errorf("ftctl %q: -o json does not match docs/json: %v\n%s", args, err, stdout)
	}
}

// items is the list a document of -o json holds ({"schema": ..., "items": [...]}), or nil.
func items(stdout string) []byte {
	var doc struct {
		Items json.RawMessage `json:"items"`
	}
	if json.Unmarshal([]byte(stdout), &doc) != nil {
		return nil
	}
	return doc.Items
}

// ftctlCommand is exec.Command of ftctl for a test that starts it itself: its stdout (a buffer
// the test sets) is validated by checkJSON once the test is done, if the test waited for it.
func ftctlCommand(t *testing.T, args ...string) *exec.Cmd {
	t.Helper()
	cmd := exec.Command(ftctl, args...)
	t.Cleanup(func() {
		out, ok := cmd.Stdout.(interface{ String() string })
		if ok && cmd.ProcessState != nil {
			checkJSON(t, args, out.String())
		}
	})
	return cmd
}

// holdLockHelper is the body of a helper process: take the ftctl lock, say so, hold it until
// stdin closes (or the process is killed).
func holdLockHelper(dir string) {
	f := &tracefs.FS{Mount: tracefs.Mount{Path: dir}}
	l, err := f.Lock(context.Background(), 5*time.Second, nil)
	if err != nil {
		fmt.Println("error:", err)
		os.Exit(1)
	}
	fmt.Println("locked")
	bufio.NewReader(os.Stdin).ReadString('\n')
	l.Unlock()
	os.Exit(0)
}

type result struct {
	code           int
	stdout, stderr string
}

func (r result) String() string {
	return fmt.Sprintf("exit %d\nstdout:\n%s\nstderr:\n%s", r.code, r.stdout, r.stderr)
}

// ftctlRun runs the real ftctl binary with a time limit.
func ftctlRun(t *testing.T, args ...string) result {
	t.Helper()
	return ftctlRunAs(t, nil, args...)
}

func ftctlRunAs(t *testing.T, cred *syscall.Credential, args ...string) result {
	t.Helper()
	return ftctlRunFor(t, 60*time.Second, cred, args...)
}

// ftctlRunFor is ftctlRunAs with a time limit of its own: a graph switches function_graph on
// and off, which patches every traceable function twice (more than a minute under TCG on a
// loaded host).
func ftctlRunFor(t *testing.T, limit time.Duration, cred *syscall.Credential, args ...string) result {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), limit)
	defer cancel()
	cmd := exec.CommandContext(ctx, ftctl, args...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	cmd.Env = []string{"PATH=/bin", "HOME=/root"}
	if cred != nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: cred}
	}
	err := cmd.Run()
	r := result{stdout: out.String(), stderr: errb.String()}
	checkJSON(t, args, r.stdout)
	if ee, ok := err.(*exec.ExitError); ok {
		r.code = ee.ExitCode()
	} else if err != nil {
		t.Fatalf("ftctl %q: %v", args, err)
	}
	return r
}

// sh runs a busybox shell command (mount, umount...) and fails the test if it fails.
func sh(t *testing.T, script string) string {
	t.Helper()
	out, err := exec.Command("/bin/sh", "-c", script).CombinedOutput()
	if err != nil {
		t.Fatalf("sh -c %q: %v\n%s", script, err, out)
	}
	return string(out)
}

func topFS(t *testing.T) *tracefs.FS {
	t.Helper()
	f, err := tracefs.Open(tracing, "test")
	if err != nil {
		t.Fatal(err)
	}
	return f
}

// write writes to a tracefs file the way the kernel tests need (no O_TRUNC), failing on error.
func write(t *testing.T, rel, data string) {
	t.Helper()
	if err := topFS(t).Top().Write(rel, data); err != nil {
		t.Fatal(err)
	}
}

// truncate clears a tracefs list with O_TRUNC (echo > file): cleanup only.
func truncate(t *testing.T, rel string) {
	t.Helper()
	if err := os.WriteFile(filepath.Join(tracing, rel), nil, 0); err != nil {
		t.Errorf("truncating %s: %v", rel, err)
	}
}

func read(t *testing.T, rel string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(tracing, rel))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// removeProbeLater deletes a kprobe at the end of the test, disabling it everywhere first.
func removeProbeLater(t *testing.T, group, event string) {
	removeEventLater(t, "kprobe_events", group, event)
}

// removeEventLater deletes a probe of file (kprobe_events, uprobe_events, dynamic_events)
// at the end of the test, disabling it everywhere first.
func removeEventLater(t *testing.T, file, group, event string) {
	t.Cleanup(func() {
		matches, _ := filepath.Glob(filepath.Join(tracing, "instances/*/events", group, event, "enable"))
		matches = append(matches, filepath.Join(tracing, "events", group, event, "enable"))
		for _, m := range matches {
			os.WriteFile(m, []byte("0"), 0)
		}
		f, _ := os.OpenFile(filepath.Join(tracing, file), os.O_WRONLY, 0)
		if f != nil {
			f.WriteString("-:" + group + "/" + event + "\n")
			f.Close()
		}
	})
}

func removeInstanceLater(t *testing.T, name string) {
	t.Cleanup(func() { os.Remove(filepath.Join(tracing, "instances", name)) })
}

func instanceNames(t *testing.T) []string {
	t.Helper()
	names, err := topFS(t).Instances()
	if err != nil {
		t.Fatal(err)
	}
	return names
}

// sessionOf finds the instance (ftctl-PID-ID) and probe group (ftctl_PID_ID) of the session
// run by pid, waiting up to 30 s for the instance to appear.
func sessionOf(t *testing.T, pid int) (instance, group string) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		m, _ := filepath.Glob(filepath.Join(tracing, "instances", fmt.Sprintf("ftctl-%d-*", pid)))
		if len(m) == 1 {
			instance = filepath.Base(m[0])
			return instance, "ftctl_" + strings.ReplaceAll(strings.TrimPrefix(instance, "ftctl-"), "-", "_")
		}
		if len(m) > 1 || time.Now().After(deadline) {
			t.Fatalf("instances of the session of pid %d: %v", pid, m)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// sessionGone says whether no instance of the session run by pid is left.
func sessionGone(pid int) bool {
	m, _ := filepath.Glob(filepath.Join(tracing, "instances", fmt.Sprintf("ftctl-%d-*", pid)))
	return len(m) == 0
}
