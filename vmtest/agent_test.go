//go:build vmtest

package vmtest

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/ftctl/ftctl/internal/fixture"
)

// agentProfile keeps a hist trigger of read sizes (.log2: a histogram) and the ring's size.
func agentProfile(bufferKB int) string {
	return fmt.Sprintf(`apiVersion: ftctl.dev/v1alpha1
kind: TracingProfile
metadata:
  name: agentvm
spec:
  requires: [hist-triggers]
  instance:
    bufferKB: %d
  triggers:
    - event: syscalls:sys_enter_read
      trigger: "hist:keys=common_pid,count.log2:vals=hitcount,count"
`, bufferKB)
}

type agentRun struct {
	cmd  *exec.Cmd
	errb *fixture.SyncBuffer
	addr string
}

// startAgent starts `ftctl agent` on a free loopback port and waits until it serves.
func startAgent(t *testing.T, file string, extra ...string) *agentRun {
	t.Helper()
	return startAgentEnv(t, nil, file, extra...)
}

// startAgentEnv is startAgent with more environment (NOTIFY_SOCKET).
func startAgentEnv(t *testing.T, env []string, file string, extra ...string) *agentRun {
	t.Helper()
	args := append([]string{"agent", "-f", file, "--listen", "127.0.0.1:0", "--interval", "1s"}, extra...)
	cmd := ftctlCommand(t, args...)
	errb := &fixture.SyncBuffer{}
	cmd.Stdout, cmd.Stderr = io.Discard, errb
	cmd.Env = append([]string{"PATH=/bin"}, env...)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	serving := regexp.MustCompile(`serving on (127\.0\.0\.1:\d+)`)
	deadline := time.Now().Add(60 * time.Second)
	for {
		if m := serving.FindStringSubmatch(errb.String()); m != nil {
			return &agentRun{cmd: cmd, errb: errb, addr: m[1]}
		}
		if time.Now().After(deadline) || cmd.ProcessState != nil {
			cmd.Process.Kill()
			cmd.Wait()
			t.Fatalf("the agent did not serve; stderr:\n%s", errb)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func (a *agentRun) get(t *testing.T, path string) (int, string) {
	t.Helper()
	resp, err := http.Get("http://" + a.addr + path)
	if err != nil {
		t.Fatalf("GET %s: %v", path, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

func (a *agentRun) metrics(t *testing.T) map[string]*dto.MetricFamily {
	t.Helper()
	code, body := a.get(t, "/metrics")
	if code != 200 {
		t.Fatalf("/metrics: %d %s", code, body)
	}
	parser := expfmt.NewTextParser(model.LegacyValidation)
	mfs, err := parser.TextToMetricFamilies(strings.NewReader(body))
	if err != nil {
		t.Fatalf("/metrics does not parse: %v\n%s", err, body)
	}
	return mfs
}

func metricValue(mfs map[string]*dto.MetricFamily, name string, labels ...string) (float64, bool) {
	mf := mfs[name]
	if mf == nil {
		return 0, false
	}
	for _, m := range mf.Metric {
		ok := true
		for i := 0; i+1 < len(labels); i += 2 {
			found := false
			for _, l := range m.Label {
				found = found || l.GetName() == labels[i] && l.GetValue() == labels[i+1]
			}
			ok = ok && found
		}
		if !ok {
			continue
		}
		switch {
		case m.Counter != nil:
			return m.Counter.GetValue(), true
		case m.Gauge != nil:
			return m.Gauge.GetValue(), true
		case m.Untyped != nil:
			return m.Untyped.GetValue(), true
		}
	}
	return 0, false
}

// waitMetric polls /metrics until cond holds for the named metric, or fails after limit.
func (a *agentRun) waitMetric(t *testing.T, limit time.Duration, name string, cond func(float64) bool, labels ...string) {
	t.Helper()
	deadline := time.Now().Add(limit)
	for {
		v, ok := metricValue(a.metrics(t), name, labels...)
		if ok && cond(v) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s%v = %v (present %v) after %v; stderr:\n%s", name, labels, v, ok, limit, a.errb)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

func (a *agentRun) stop(t *testing.T) {
	t.Helper()
	a.cmd.Process.Signal(syscall.SIGTERM)
	if code := exitCode(a.cmd.Wait()); code != 143 {
		t.Errorf("the agent ended with %d on SIGTERM, want 143; stderr:\n%s", code, a.errb)
	}
}

// TestAgent: the agent applies its profile, serves the kernel's hist as a Prometheus histogram
// whose count is the workload's exact number of reads, repairs a hand change, keeps its setup
// on a broken file, reloads on SIGHUP, and after SIGKILL a new agent adopts the profile
// without writing.
func TestAgent(t *testing.T) {
	if !hasHist(t) {
		t.Skip("no hist triggers on this kernel (events/*/*/hist absent)")
	}
	file := profileFile(t, "agentvm.yaml", agentProfile(256))
	t.Cleanup(func() { ftctlRun(t, "delete", "-f", file) })
	a := startAgent(t, file)
	defer func() {
		if a.cmd.ProcessState == nil {
			a.cmd.Process.Kill()
			a.cmd.Wait()
		}
	}()
	if code, body := a.get(t, "/readyz"); code != 200 {
		t.Fatalf("/readyz: %d %s", code, body)
	}
	if code, _ := a.get(t, "/healthz"); code != 200 {
		t.Fatalf("/healthz: %d", code)
	}

	t.Run("exact histogram", func(t *testing.T) {
		const n = 3000
		loop := readLoop(t, n)
		if err := loop.Run(); err != nil {
			t.Fatal(err)
		}
		pid := strconv.Itoa(loop.Process.Pid)
		mf := a.metrics(t)["ftctl_hist_sys_enter_read"]
		if mf == nil || mf.GetType() != dto.MetricType_HISTOGRAM {
			t.Fatalf("no histogram ftctl_hist_sys_enter_read: %v", mf)
		}
		var h *dto.Histogram
		for _, m := range mf.Metric {
			if len(m.Label) == 1 && m.Label[0].GetName() == "common_pid" && m.Label[0].GetValue() == pid {
				h = m.Histogram
			}
		}
		if h == nil {
			t.Fatalf("no series for the loop's pid %s: %v", pid, mf)
		}
		// dd bs=1 count=n: n reads of one byte, each in the le=1 bucket (2^0), the sum n bytes
		if len(h.Bucket) == 0 || h.Bucket[0].GetUpperBound() != 1 || h.Bucket[0].GetCumulativeCount() != n {
			t.Errorf("buckets %v: want le=1 holding exactly %d", h.Bucket, n)
		}
		if h.GetSampleCount() < n || h.GetSampleSum() < n {
			t.Errorf("count %d, sum %v: want at least %d", h.GetSampleCount(), h.GetSampleSum(), n)
		}
		if _, ok := metricValue(a.metrics(t), "ftctl_ring_overrun_total", "trace_instance", "ftctl-owned-agentvm", "cpu", "0"); !ok {
			t.Errorf("no overrun series of cpu 0")
		}
	})

	t.Run("Prometheus scrapes it", func(t *testing.T) { scrapedByPrometheus(t, a) })
	t.Run("figures", func(t *testing.T) { agentFigures(t, a) })

	buf := "instances/ftctl-owned-agentvm/buffer_size_kb"
	t.Run("repairs drift", func(t *testing.T) {
		write(t, buf, "300")
		a.waitMetric(t, 20*time.Second, "ftctl_agent_repairs_total", func(v float64) bool { return v >= 1 })
		if got := bufferKB(t, buf); got < 256 || got > 256+4 {
			t.Errorf("buffer_size_kb %d after the repair, want 256 (the kernel rounds up to whole pages)", got)
		}
	})

	t.Run("broken file kept out", func(t *testing.T) {
		before := controlState(t)
		if err := os.WriteFile(file, []byte("apiVersion: ftctl.dev/v1alpha1\nkind: TracingProfile\nspec: [\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		a.waitMetric(t, 20*time.Second, "ftctl_agent_failures_total", func(v float64) bool { return v >= 1 }, "stage", "load")
		if code, body := a.get(t, "/readyz"); code != 200 {
			t.Errorf("/readyz after a broken file: %d %s", code, body)
		}
		if after := controlState(t); after != before {
			t.Errorf("a broken profile changed the state:\n%s", lineDiff(before, after))
		}
	})

	t.Run("SIGHUP reloads", func(t *testing.T) {
		// the file changes under the agent; SIGHUP makes sure it is read now
		if err := os.WriteFile(file, []byte(agentProfile(384)), 0o600); err != nil {
			t.Fatal(err)
		}
		a.cmd.Process.Signal(syscall.SIGHUP)
		a.waitMetric(t, 20*time.Second, "ftctl_agent_reloads_total", func(v float64) bool { return v >= 1 })
		if got := bufferKB(t, buf); got < 384 || got > 384+4 {
			t.Errorf("buffer_size_kb %d after the reload, want 384 (the kernel rounds up to whole pages)", got)
		}
		if a.cmd.ProcessState != nil {
			t.Fatalf("SIGHUP ended the agent: %v", a.cmd.ProcessState)
		}
	})

	t.Run("tracefs unmounted under it", func(t *testing.T) {
		// the agent's own mount of tracefs, unmounted and mounted again under it
		dir := filepath.Join(t.TempDir(), "tracing")
		if err := os.Mkdir(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		a.cmd.Process.Signal(syscall.SIGTERM)
		a.cmd.Wait()
		sh(t, "mount -t tracefs nodev "+dir)
		t.Cleanup(func() { exec.Command("/bin/sh", "-c", "umount "+dir+" 2>/dev/null").Run() })
		c := startAgent(t, file, "--tracefs", dir)
		defer c.stop(t)
		sh(t, "umount "+dir)
		waitReady(t, c, 503, "tracefs is no longer mounted")
		sh(t, "mount -t tracefs nodev "+dir)
		waitReady(t, c, 200, "ready")
		sh(t, "umount "+dir)
	})

	t.Run("SIGKILL then adopted", func(t *testing.T) {
		b := startAgent(t, file)
		b.cmd.Process.Kill()
		b.cmd.Wait()
		before := controlState(t)
		r := ftctlRun(t, "reset")
		if r.code != 0 {
			t.Fatalf("reset: %v", r)
		}
		if after := controlState(t); after != before {
			t.Errorf("reset removed the agent's declared profile:\n%s", lineDiff(before, after))
		}
		b = startAgent(t, file)
		defer b.stop(t)
		if !strings.Contains(b.errb.String(), "in sync") {
			t.Errorf("the restarted agent did not find its profile in sync:\n%s", b.errb)
		}
		if v, _ := metricValue(b.metrics(t), "ftctl_agent_applies_total"); v != 0 {
			t.Errorf("the restarted agent wrote: applies %v", v)
		}
		if after := controlState(t); after != before {
			t.Errorf("the restarted agent changed the state:\n%s", lineDiff(before, after))
		}
	})
}

func bufferKB(t *testing.T, rel string) int {
	t.Helper()
	n, err := strconv.Atoi(strings.TrimSpace(read(t, rel)))
	if err != nil {
		t.Fatalf("%s: %v", rel, err)
	}
	return n
}

// scrapedByPrometheus runs Debian's Prometheus server in the VM, scraping the agent over the
// loopback, and finds through its query API the histogram's bucket of a workload's reads
// holding exactly their number, and the rings' overrun series.
func scrapedByPrometheus(t *testing.T, a *agentRun) {
	const server = "/usr/bin/prometheus"
	if _, err := os.Stat(server); err != nil {
		t.Skip("no Prometheus server in the VM: the host lacks Debian's prometheus package (.ci/run installs it)")
	}
	dir := t.TempDir()
	cfg := filepath.Join(dir, "prometheus.yml")
	conf := "global:\n  scrape_interval: 1s\nscrape_configs:\n  - job_name: ftctl\n    static_configs:\n      - targets: ['" + a.addr + "']\n"
	if err := os.WriteFile(cfg, []byte(conf), 0o600); err != nil {
		t.Fatal(err)
	}
	prom := exec.Command(server, "--config.file="+cfg, "--storage.tsdb.path="+filepath.Join(dir, "data"),
		"--web.listen-address=127.0.0.1:9090", "--log.level=warn")
	logs := &fixture.SyncBuffer{}
	prom.Stdout, prom.Stderr = logs, logs
	if err := prom.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		prom.Process.Signal(syscall.SIGTERM)
		prom.Wait()
	}()
	const n = 2000
	loop := readLoop(t, n)
	if err := loop.Run(); err != nil {
		t.Fatal(err)
	}
	pid := strconv.Itoa(loop.Process.Pid)
	exact := `ftctl_hist_sys_enter_read_bucket{common_pid="` + pid + `",le=~"1|1\\.0"}`
	deadline := time.Now().Add(120 * time.Second)
	for {
		v, err := promQuery(exact)
		if err == nil && v == strconv.Itoa(n) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("Prometheus has %s = %q (%v), want %d; its log:\n%s", exact, v, err, n, logs)
		}
		time.Sleep(500 * time.Millisecond)
	}
	if v, err := promQuery(`sum(ftctl_ring_overrun_total{trace_instance="ftctl-owned-agentvm"}) >= 0`); err != nil || v == "" {
		t.Errorf("no overrun series in Prometheus: %q %v", v, err)
	}
}

// promQuery asks the Prometheus server in the VM for an instant query's one value.
func promQuery(q string) (string, error) {
	resp, err := http.Get("http://127.0.0.1:9090/api/v1/query?query=" + url.QueryEscape(q))
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	var r struct {
		Status string `json:"status"`
		Data   struct {
			Result []struct {
				Value []any `json:"value"`
			} `json:"result"`
		} `json:"data"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&r); err != nil {
		return "", err
	}
	if r.Status != "success" || len(r.Data.Result) != 1 || len(r.Data.Result[0].Value) != 2 {
		return "", fmt.Errorf("%s: %+v", q, r)
	}
	v, _ := r.Data.Result[0].Value[1].(string)
	return v, nil
}

// agentFigures measures what docs/fleet.md quotes: the scrape's size and series, its time, the
// agent's memory, and its CPU while idle (checks every second, as this test runs it; the
// default is every 30 s). They are logged as "agent figure:" lines.
func agentFigures(t *testing.T, a *agentRun) {
	_, body := a.get(t, "/metrics")
	series, ftctl := 0, 0
	for _, l := range strings.Split(body, "\n") {
		if l != "" && !strings.HasPrefix(l, "#") {
			series++
			if strings.HasPrefix(l, "ftctl_") {
				ftctl++
			}
		}
	}
	const scrapes = 20
	start := time.Now()
	for range scrapes {
		a.get(t, "/metrics")
	}
	per := time.Since(start) / scrapes
	cpu := func() float64 {
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", a.cmd.Process.Pid))
		if err != nil {
			t.Fatal(err)
		}
		f := strings.Fields(string(b[strings.LastIndexByte(string(b), ')')+2:]))
		u, _ := strconv.ParseFloat(f[11], 64) // utime, stime: fields 14 and 15
		s, _ := strconv.ParseFloat(f[12], 64)
		return (u + s) / 100 // USER_HZ
	}
	c0 := cpu()
	time.Sleep(10 * time.Second)
	idle := (cpu() - c0) / 10
	status, _ := os.ReadFile(fmt.Sprintf("/proc/%d/status", a.cmd.Process.Pid))
	rss := regexp.MustCompile(`VmRSS:\s+(\d+) kB`).FindStringSubmatch(string(status))
	if rss == nil {
		t.Fatalf("no VmRSS in /proc/PID/status")
	}
	t.Logf("agent figure: scrape %d bytes, %d series (%d ftctl_, the rest Go and process), %.1f ms per scrape (%d scrapes), RSS %s kB, CPU %.2f%% of a core idle with --interval 1s",
		len(body), series, ftctl, float64(per.Microseconds())/1000, scrapes, rss[1], idle*100)
}

// waitReady polls /readyz until it answers code with text in its body.
func waitReady(t *testing.T, a *agentRun, code int, text string) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		got, body := a.get(t, "/readyz")
		if got == code && strings.Contains(body, text) {
			return
		}
		if a.cmd.ProcessState != nil || time.Now().After(deadline) {
			t.Fatalf("/readyz %d %q, want %d %q; stderr:\n%s", got, body, code, text, a.errb)
		}
		time.Sleep(200 * time.Millisecond)
	}
}
