package session

import (
	"strings"
	"testing"
	"time"
)

// GraphRequest.Spec is the one set-up of a graph (ftctl graph's flags, the console's prompt):
// the limits and the patterns checked with no kernel, the Spec made.
func TestGraphRequestSpec(t *testing.T) {
	spec, err := GraphRequest{Roots: []string{"ksys_read", "vfs_*"}, Notrace: []string{"security_*"}, Depth: 3,
		Threshold: 100 * time.Microsecond, PID: 42}.Spec()
	if err != nil {
		t.Fatal(err)
	}
	g := spec.Graph
	if g == nil || len(g.Roots) != 2 || g.Roots[1].Text != "vfs_*" || len(g.Notrace) != 1 || g.Depth != 3 ||
		g.Threshold != 100*time.Microsecond || len(spec.PIDs) != 1 || spec.PIDs[0] != 42 {
		t.Errorf("spec %+v, graph %+v", spec, g)
	}
	if spec, err := (GraphRequest{Roots: []string{"f"}}).Spec(); err != nil || spec.PIDs != nil {
		t.Errorf("no --pid: %v, pids %v", err, spec.PIDs)
	}
	for _, c := range []struct {
		r    GraphRequest
		want string
	}{
		{GraphRequest{Roots: []string{"f"}, Depth: -1}, "--depth must not be negative"},
		{GraphRequest{Roots: []string{"f"}, Threshold: time.Nanosecond}, "want 1us or more"},
		{GraphRequest{Roots: []string{"f"}, PID: -3}, "--pid takes a process id"},
		{GraphRequest{Roots: []string{"vfs_read:mod:ext4"}}, "no :mod: part"},
		{GraphRequest{Roots: []string{"f"}, Notrace: []string{"x:mod:y"}}, "no :mod: part"},
		{GraphRequest{Roots: []string{"!vfs_read"}}, "leading '!'"},
	} {
		if _, err := c.r.Spec(); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: %v, want %q", c.r, err, c.want)
		}
	}
}
