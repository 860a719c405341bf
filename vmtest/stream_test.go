//go:build vmtest

package vmtest

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/ftctl/ftctl/internal/fixture"
)

// streamProc is a running `ftctl stream`.
type streamProc struct {
	cmd       *exec.Cmd
	out, errb *fixture.SyncBuffer
}

// startStream starts ftctl stream with args and waits until it has trace_pipe (or a
// trace_pipe_raw) open.
func startStream(t *testing.T, stdout io.Writer, args ...string) *streamProc {
	t.Helper()
	p := &streamProc{out: &fixture.SyncBuffer{}, errb: &fixture.SyncBuffer{}}
	p.cmd = ftctlCommand(t, args...)
	p.cmd.Stdout, p.cmd.Stderr = p.out, p.errb
	if stdout != nil {
		p.cmd.Stdout = stdout
	}
	p.cmd.Env = []string{"PATH=/bin", "HOME=/root"}
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.cmd.Process.Kill(); p.cmd.Wait() })
	fdDir := fmt.Sprintf("/proc/%d/fd", p.cmd.Process.Pid)
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) {
		// A stream with little to read may have read it all and ended before this loop looked
		// (seen on a loaded host: 128 events in 0.4 s): an exited ftctl is waited for by wait.
		if st, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", p.cmd.Process.Pid)); err != nil || exited(st) {
			return p
		}
		ents, _ := os.ReadDir(fdDir)
		for _, e := range ents {
			if l, _ := os.Readlink(filepath.Join(fdDir, e.Name())); strings.HasSuffix(l, "/trace_pipe") || strings.HasSuffix(l, "/trace_pipe_raw") {
				return p
			}
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatalf("ftctl stream never opened trace_pipe; stderr:\n%s", p.errb)
	return nil
}

// wait waits for the stream to end (at most 60 s) and returns its exit code.
func (p *streamProc) wait(t *testing.T) int {
	t.Helper()
	done := make(chan error, 1)
	go func() { done <- p.cmd.Wait() }()
	select {
	case err := <-done:
		return exitCode(err)
	case <-time.After(60 * time.Second):
		p.cmd.Process.Kill()
		t.Fatalf("ftctl stream did not end; stderr:\n%s", p.errb)
		return -1
	}
}

// exited says whether /proc/PID/stat shows a process that has ended (a zombie: state Z).
func exited(stat []byte) bool {
	i := bytes.LastIndexByte(stat, ')')
	return i >= 0 && i+2 < len(stat) && (stat[i+2] == 'Z' || stat[i+2] == 'X')
}

// streamInstance makes an instance for a stream test, with tracing on.
func streamInstance(t *testing.T, name string) string {
	t.Helper()
	newInstance(t, name)
	return "instances/" + name
}

// endStream turns tracing off in the instance: once the stream has read something, the kernel
// ends trace_pipe, and ftctl stream with it.
func endStream(t *testing.T, inst string, p *streamProc) int {
	t.Helper()
	write(t, inst+"/tracing_on", "0\n")
	return p.wait(t)
}

// events parses NDJSON output.
func events(t *testing.T, out string) []map[string]any {
	t.Helper()
	var evs []map[string]any
	for _, line := range strings.Split(strings.TrimSuffix(out, "\n"), "\n") {
		if line == "" {
			continue
		}
		var ev map[string]any
		if err := json.Unmarshal([]byte(line), &ev); err != nil {
			t.Fatalf("invalid JSON line %q: %v", line, err)
		}
		evs = append(evs, ev)
	}
	return evs
}

// marker writes trace_marker lines to an instance.
func marker(t *testing.T, inst string, lines ...string) {
	t.Helper()
	f, err := os.OpenFile(filepath.Join(tracing, inst, "trace_marker"), os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	for _, l := range lines {
		if _, err := f.WriteString(l); err != nil {
			t.Fatal(err)
		}
	}
}

func TestStreamFunctionEvents(t *testing.T) {
	inst := streamInstance(t, "st_fn")
	write(t, inst+"/set_ftrace_filter", "do_sys_openat2\n")
	write(t, inst+"/current_tracer", "function\n")
	p := startStream(t, nil, "-B", "st_fn", "stream", "-o", "json", "--duration", "60s")
	pids := map[float64]bool{}
	for i := 0; i < 3; i++ {
		cat := exec.Command("/bin/cat", "/etc/motd")
		if err := cat.Run(); err != nil {
			t.Fatal(err)
		}
		pids[float64(cat.Process.Pid)] = true
	}
	if code := endStream(t, inst, p); code != 0 {
		t.Fatalf("exit %d; stderr:\n%s", code, p.errb)
	}
	seen := map[float64]bool{}
	for _, ev := range events(t, p.out.String()) {
		// The comm is the kernel's saved one, "<...>" for a process it has not saved yet.
		if pid, _ := ev["pid"].(float64); pids[pid] && ev["event"] == "function" &&
			ev["func"] == "do_sys_openat2" && ev["parent"] != nil && ev["ts"] != nil {
			seen[pid] = true
		}
	}
	if len(seen) != 3 {
		t.Errorf("do_sys_openat2 events from %d of the 3 cat processes %v:\n%s", len(seen), pids, p.out)
	}
	if !strings.Contains(p.errb.String(), "nothing lost") {
		t.Errorf("stderr: %s", p.errb)
	}
}

// A kprobe recording a file name; the file name holds an escape sequence and a tab: escaped in
// text, exact (and valid) in JSON.
func TestStreamKprobeString(t *testing.T) {
	const group, event = "ftctlstreamtest", "open"
	inst := streamInstance(t, "st_kp")
	// x86_64: the second argument of do_sys_openat2(dfd, filename, how) is in %si.
	write(t, "kprobe_events", "p:"+group+"/"+event+" do_sys_openat2 path=+0(%si):string\n")
	removeProbeLater(t, group, event)
	write(t, inst+"/events/"+group+"/"+event+"/enable", "1\n")
	name := "/tmp/ftctl-esc-\x1b[31mred\ttab"
	if err := os.WriteFile(name, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	defer os.Remove(name)
	var catPid float64
	open := func() {
		cat := exec.Command("/bin/cat", name)
		if err := cat.Run(); err != nil {
			t.Fatal(err)
		}
		catPid = float64(cat.Process.Pid)
	}

	p := startStream(t, nil, "-B", "st_kp", "stream", "-o", "json", "--event", event, "--duration", "60s")
	open()
	if code := endStream(t, inst, p); code != 0 {
		t.Fatalf("exit %d; stderr:\n%s", code, p.errb)
	}
	found := false
	for _, ev := range events(t, p.out.String()) {
		if ev["event"] != event {
			t.Errorf("--event %s let through %v", event, ev)
		}
		args, _ := ev["args"].(map[string]any)
		if args["path"] == name && ev["probe"] != nil && ev["pid"] == catPid {
			found = true
		}
	}
	if !found {
		t.Errorf("no event with path %q:\n%s", name, p.out)
	}

	write(t, inst+"/tracing_on", "1\n")
	p = startStream(t, nil, "-B", "st_kp", "stream", "--event", event, "--duration", "60s")
	open()
	if code := endStream(t, inst, p); code != 0 {
		t.Fatalf("exit %d; stderr:\n%s", code, p.errb)
	}
	out := p.out.String()
	if want := `path="/tmp/ftctl-esc-\x1b[31mred\ttab"`; !strings.Contains(out, want) {
		t.Errorf("text output lacks %s:\n%s", want, out)
	}
	if strings.ContainsAny(out, "\x1b\t") {
		t.Errorf("a raw escape or tab reached the text output:\n%q", out)
	}
}

func TestStreamMarkers(t *testing.T) {
	inst := streamInstance(t, "st_mk")
	lines := []string{"plain marker\n", "esc \x1b[2J tab\there\n", "del \x7f c1 \xc2\x9b bad \xff\n"}
	p := startStream(t, nil, "-B", "st_mk", "stream", "-o", "json", "--duration", "60s")
	marker(t, inst, lines...)
	if code := endStream(t, inst, p); code != 0 {
		t.Fatalf("exit %d; stderr:\n%s", code, p.errb)
	}
	var texts []string
	for _, ev := range events(t, p.out.String()) {
		if ev["event"] == "marker" && ev["comm"] != nil && ev["pid"] != nil && ev["ts"] != nil {
			texts = append(texts, ev["text"].(string))
		}
	}
	want := []string{"plain marker", "esc \x1b[2J tab\there", "del \x7f c1 \u009b bad \ufffd"}
	if strings.Join(texts, "|") != strings.Join(want, "|") {
		t.Errorf("markers %q, want %q", texts, want)
	}

	write(t, inst+"/tracing_on", "1\n")
	p = startStream(t, nil, "-B", "st_mk", "stream", "--duration", "60s")
	marker(t, inst, lines...)
	if code := endStream(t, inst, p); code != 0 {
		t.Fatalf("exit %d", code)
	}
	out := p.out.String()
	for _, w := range []string{`esc \x1b[2J tab\there`, `del \x7f c1 \u009b bad \xff`} {
		if !strings.Contains(out, w) {
			t.Errorf("text output lacks %s:\n%s", w, out)
		}
	}
	if strings.ContainsAny(out, "\x1b\t\x7f\u009b") {
		t.Errorf("a control character reached the text output: %q", out)
	}
}

// A full buffer, tracing already off: stream reads every event, in order, then the kernel's end
// of file ends it (exit 0). The markers' sizes vary up to the kernel's limit, so that reads of
// trace_pipe return pages filled to different lengths, short ones among them, while much is
// left: a reader that took a short read for an empty buffer, or tracing off for the end, would
// lose events here.
func TestStreamDrainsBuffer(t *testing.T) {
	inst := streamInstance(t, "st_dr")
	write(t, inst+"/buffer_size_kb", "4096\n")
	const n = 3000
	var lines []string
	for i := 0; i < n; i++ {
		lines = append(lines, fmt.Sprintf("drain %05d %s\n", i, strings.Repeat("y", (i*97)%1000)))
	}
	marker(t, inst, lines...)
	write(t, inst+"/tracing_on", "0\n")
	p := startStream(t, nil, "-B", "st_dr", "stream", "-o", "json", "--raw", "--summary")
	if code := p.wait(t); code != 0 {
		t.Fatalf("exit %d; stderr:\n%s", code, p.errb)
	}
	got, end := 0, ""
	for _, ev := range events(t, p.out.String()) {
		switch ev["event"] {
		case "marker":
			text, _ := ev["text"].(string)
			if want := strings.TrimSuffix(lines[got], "\n"); text != want {
				i := 0
				for i < len(text) && i < len(want) && text[i] == want[i] {
					i++
				}
				t.Fatalf("marker %d (%d bytes, want %d) differs from byte %d: %q; raw line %q", got, len(text), len(want), i, text[max(0, i-20):min(len(text), i+40)], ev["raw"])
			}
			got++
		case "summary":
			end, _ = ev["end"].(string)
		}
	}
	if got != n || end != "eof" {
		t.Fatalf("%d markers of %d, end %q (want eof); stderr:\n%s", got, n, end, p.errb)
	}
}

// A stream that cannot keep up (its output blocked) on a tiny buffer: the kernel overwrites
// events, and stream must say so: LOST lines in the output, the overrun in the summary.
func TestStreamOverrunReported(t *testing.T) {
	inst := streamInstance(t, "st_ov")
	write(t, inst+"/buffer_size_kb", "4\n")
	pr, pw, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	p := startStream(t, pw, "-B", "st_ov", "stream", "-o", "json", "--summary", "--duration", "60s")
	pw.Close()
	// Nobody reads pr yet: once the pipe (64 KiB) is full, stream blocks writing, and the
	// kernel overwrites the 4 KiB buffer many times over.
	for i := 0; i < 30; i++ {
		var b strings.Builder
		for j := 0; j < 100; j++ {
			fmt.Fprintf(&b, "overrun filler %d-%d %s\n", i, j, strings.Repeat("x", 60))
		}
		f, _ := os.OpenFile(filepath.Join(tracing, inst, "trace_marker"), os.O_WRONLY, 0)
		for _, l := range strings.SplitAfter(b.String(), "\n") {
			if l != "" {
				f.WriteString(l)
			}
		}
		f.Close()
	}
	var out bytes.Buffer
	copied := make(chan struct{})
	go func() { io.Copy(&out, pr); close(copied) }()
	code := endStream(t, inst, p)
	<-copied
	if code != 0 {
		t.Fatalf("exit %d; stderr:\n%s", code, p.errb)
	}
	evs := events(t, out.String())
	var lost float64
	for _, ev := range evs {
		if ev["event"] == "lost" {
			lost += ev["lost"].(float64)
		}
	}
	sum := evs[len(evs)-1]
	overrun, _ := sum["overrun"].(float64)
	t.Logf("%d events shown, LOST lines: %.0f, overrun counter +%.0f; stderr: %s", len(evs)-1, lost, overrun, p.errb)
	if lost == 0 || sum["event"] != "summary" || overrun == 0 || sum["lost_reported"].(float64) != lost {
		t.Errorf("the loss was not reported: LOST lines %v, summary %v", lost, sum)
	}
	if !strings.Contains(p.errb.String(), "LOST:") {
		t.Errorf("no loss summary on stderr: %s", p.errb)
	}
}

// Ctrl-C ends ftctl stream within 200 ms (the median of 5 tries) with exit 130, idle or busy
// reading a steady flow of events. The flow is paced (bursts, then 2 ms of sleep): under single-threaded TCG the two
// vCPUs take turns on one host thread, and a vCPU that never idles keeps the other waiting for
// up to qemu's round-robin kick period (100 ms) at each wake-up, which measures qemu, not ftctl.
// The binary reader's start-up is such a vCPU: the kernel formats /proc/kallsyms for a good
// part of a second under emulation (BENCHMARKS.md, "The binary reader against cat
// trace_pipe"), so an interrupt during it is measured apart, against 1 s, and the others after
// it (settle).
func TestStreamInterruptLatency(t *testing.T) {
	inst := streamInstance(t, "st_int")
	for _, c := range []struct {
		reader string
		busy   bool
		settle time.Duration
		limit  time.Duration
	}{
		{"text", false, 200 * time.Millisecond, 200 * time.Millisecond},
		{"text", true, 200 * time.Millisecond, 200 * time.Millisecond},
		{"binary", false, 100 * time.Millisecond, time.Second}, // during the start-up
		{"binary", false, 1500 * time.Millisecond, 200 * time.Millisecond},
		// busy, the binary reader has read ahead of what it printed: an interrupt decodes that
		// for up to 0.3 s (stream's drain budget) before it ends. Held to 200 ms, this case
		// failed twice in full runs, with the other kernel's VM on the second host core: medians
		// of 385 ms (6.1) and 307 ms (6.12), the budget and a scheduling delay.
		{"binary", true, 200 * time.Millisecond, 450 * time.Millisecond},
	} {
		busy := c.busy
		// A second round of 5 when the first misses a limit: a load spike of the host (two VMs
		// on two cores in CI, CPU-bound builds beside) lasts seconds and lifts every try of a
		// round; a slow interrupt path lifts both rounds.
		for round := 1; round <= 2; round++ {
			var took []time.Duration
			for i := 0; i < 5; i++ {
				stop := make(chan struct{})
				var wg sync.WaitGroup
				if busy {
					wg.Add(1)
					go func() { // a steady flow of events for the stream to be reading
						defer wg.Done()
						f, _ := os.OpenFile(filepath.Join(tracing, inst, "trace_marker"), os.O_WRONLY, 0)
						defer f.Close()
						for {
							select {
							case <-stop:
								return
							default:
								for j := 0; j < 50; j++ {
									f.WriteString("busy\n")
								}
								time.Sleep(2 * time.Millisecond)
							}
						}
					}()
				}
				p := startStream(t, nil, "-B", "st_int", "stream", "--reader", c.reader)
				time.Sleep(c.settle)
				// busy: until it is printing (the binary reader loads kallsyms first, ~0.3 s
				// under TCG)
				for deadline := time.Now().Add(10 * time.Second); busy && p.out.String() == "" && time.Now().Before(deadline); {
					time.Sleep(10 * time.Millisecond)
				}
				start := time.Now()
				p.cmd.Process.Signal(syscall.SIGINT)
				code := p.wait(t)
				d := time.Since(start)
				close(stop)
				wg.Wait()
				took = append(took, d)
				if code != 130 {
					t.Errorf("%s, busy %v: exit %d after SIGINT; stderr:\n%s", c.reader, busy, code, p.errb)
				}
				var n int
				fmt.Sscanf(p.errb.String()[strings.Index(p.errb.String(), "stream: ")+len("stream: "):], "%d events", &n)
				if busy && n == 0 {
					t.Errorf("busy: the stream read nothing before the interrupt; stderr:\n%s", p.errb)
				}
			}
			// The median of 5 is held to the limit; the worst to a second more, since a vCPU of a
			// loaded host can lose hundreds of milliseconds to the host's scheduler (473-493 ms were
			// seen on 6.1 while three other VMs ran on the 2 host cores).
			slices.Sort(took)
			median, worst := took[len(took)/2], took[len(took)-1]
			t.Logf("%s, busy %v, SIGINT %v after the start: to exit, median of 5 %v, worst %v (round %d)", c.reader, busy, c.settle, median, worst, round)
			if median <= c.limit && worst <= c.limit+time.Second {
				break
			}
			if round == 2 {
				t.Errorf("%s, busy %v, SIGINT %v after the start: ftctl stream took %v (median) and %v (worst) to end after SIGINT in both rounds (limits %v and %v)",
					c.reader, busy, c.settle, median, worst, c.limit, c.limit+time.Second)
			}
		}
	}
}

// | head: the reader of stdout goes away; stream ends quietly with exit 0.
func TestStreamClosedStdout(t *testing.T) {
	inst := streamInstance(t, "st_head")
	cmd := ftctlCommand(t, "-B", "st_head", "stream")
	cmd.Env = []string{"PATH=/bin"}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var errb fixture.SyncBuffer
	cmd.Stderr = &errb
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	stop := make(chan struct{})
	defer close(stop)
	go func() {
		f, _ := os.OpenFile(filepath.Join(tracing, inst, "trace_marker"), os.O_WRONLY, 0)
		defer f.Close()
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
				fmt.Fprintf(f, "line %d\n", i)
				time.Sleep(time.Millisecond)
			}
		}
	}()
	r := bufio.NewReader(stdout)
	for i := 0; i < 3; i++ {
		if _, err := r.ReadString('\n'); err != nil {
			t.Fatal(err)
		}
	}
	stdout.Close() // as head does after its lines
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		if code := exitCode(err); code != 0 {
			t.Errorf("exit %d after stdout closed; stderr:\n%s", code, errb.String())
		}
	case <-time.After(20 * time.Second):
		t.Fatal("ftctl stream kept running after its stdout was closed")
	}
	if s := errb.String(); strings.Contains(s, "broken pipe") || strings.Contains(s, "error") {
		t.Errorf("stderr: %s", s)
	}
}
