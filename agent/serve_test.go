package agent

import (
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ftctl/ftctl/internal/fixture"
	"github.com/ftctl/ftctl/profile"
	"github.com/ftctl/ftctl/tracefs"
)

// served is the agent's /metrics over a fake tracefs holding its profile's instance: a CPU's
// stats and the hist files of two triggers, as captured from the kernels.
func served(t *testing.T, kernel string) (*Agent, string) {
	t.Helper()
	synth, err := os.ReadFile(filepath.Join("..", "hist", "testdata", kernel, "hist.synth"))
	if err != nil {
		t.Fatal(err)
	}
	reads, err := os.ReadFile(filepath.Join("..", "hist", "testdata", kernel, "hist.sys_enter_read"))
	if err != nil {
		t.Fatal(err)
	}
	root, dirs := fixture.Tracefs(t, kernel, nil)
	in := filepath.Join(root, "instances", "ftctl-owned-agentut")
	if err := dirs.Mkdir(in); err != nil {
		t.Fatal(err)
	}
	for name, body := range map[string]string{
		"per_cpu/cpu0/stats":                            "entries: 10\noverrun: 3\ncommit overrun: 0\nbytes: 480\noldest event ts: 1.0\nnow ts: 2.0\ndropped events: 0\nread events: 0\n",
		"events/synthetic/ftctl_owned_agentut_lat/hist": string(synth),
		"events/syscalls/sys_enter_read/hist":           string(reads),
	} {
		p := filepath.Join(in, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	fs := &tracefs.FS{Mount: tracefs.Mount{Path: root, Found: "test"}, Dirs: dirs, StateDir: filepath.Join(t.TempDir(), "run")}
	a := New(fs, Options{File: "agentut.yaml", Repair: true})
	a.prof = &profile.Profile{APIVersion: profile.APIVersion, Kind: profile.Kind, Metadata: profile.Metadata{Name: "agentut"},
		Spec: profile.Spec{Triggers: []profile.Trigger{
			{Event: "synthetic:${group}_lat", Trigger: "hist:keys=lat.log2"},
			{Event: "syscalls:sys_enter_read", Trigger: "hist:keys=common_pid.execname:vals=count"},
		}}}
	a.ready = true
	srv := httptest.NewServer(a.Handler())
	t.Cleanup(srv.Close)
	resp, err := http.Get(srv.URL + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != 200 {
		t.Fatalf("/metrics: %d %s", resp.StatusCode, b)
	}
	return a, string(b)
}

// The exposition holds each kind of family, and Prometheus's own promtool finds it valid
// (Debian's prometheus package; .ci/run installs it and sets FTCTL_REQUIRE_PROMTOOL).
func TestExposition(t *testing.T) {
	for _, k := range []string{"6.1", "6.12"} {
		_, body := served(t, k)
		for _, want := range []string{
			`ftctl_agent_ready 1`, `ftctl_agent_profile_info{profile="agentut",trace_instance="ftctl-owned-agentut"} 1`,
			`ftctl_ring_overrun_total{cpu="0",trace_instance="ftctl-owned-agentut"} 3`,
			`ftctl_hist_ftctl_owned_agentut_lat_bucket{le="+Inf"}`, `ftctl_hist_sys_enter_read_count_total{common_pid="head"}`,
			`ftctl_agent_failures_total{stage="load"} 0`,
		} {
			if !strings.Contains(body, want) {
				t.Errorf("%s: no %s in:\n%s", k, want, body)
			}
		}
		promtool, err := exec.LookPath("promtool")
		if err != nil {
			if os.Getenv("FTCTL_REQUIRE_PROMTOOL") != "" {
				t.Fatal("promtool is required (FTCTL_REQUIRE_PROMTOOL) and not found: apt-get install prometheus")
			}
			t.Log("promtool not found: the exposition is not checked by Prometheus's own linter")
			continue
		}
		cmd := exec.Command(promtool, "check", "metrics")
		cmd.Stdin = strings.NewReader(body)
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Errorf("%s: promtool check metrics: %v\n%s", k, err, out)
		}
	}
}

// /readyz says why it is not ready; nothing but GET is served.
func TestReadyz(t *testing.T) {
	a, _ := served(t, "6.12")
	srv := httptest.NewServer(a.Handler())
	defer srv.Close()
	a.mu.Lock()
	a.ready, a.lastErr = false, "check: tracefs is gone"
	a.mu.Unlock()
	resp, err := http.Get(srv.URL + "/readyz")
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 503 || !strings.Contains(string(b), "tracefs is gone") {
		t.Errorf("/readyz: %d %s", resp.StatusCode, b)
	}
	resp, err = http.Post(srv.URL+"/metrics", "text/plain", nil)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusMethodNotAllowed {
		t.Errorf("POST /metrics: %d", resp.StatusCode)
	}
}
