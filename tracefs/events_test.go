package tracefs

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
)

func TestEventListing(t *testing.T) {
	root := t.TempDir()
	for _, p := range []string{"events/sched/sched_switch/enable", "events/sched/sched_wakeup/enable",
		"events/sched/enable", "events/kprobes/myopen/id", "events/enable", "events/header_page"} {
		if err := os.MkdirAll(filepath.Join(root, filepath.Dir(p)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(root, p), nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	f := &FS{Mount: Mount{Path: root}}
	if got, err := f.EventSystems(); err != nil || !slices.Equal(got, []string{"kprobes", "sched"}) {
		t.Errorf("EventSystems: %q %v", got, err)
	}
	cases := []struct {
		system string
		want   []string
	}{
		{"sched", []string{"sched_switch", "sched_wakeup"}},
		{"kprobes", []string{"myopen"}},
		{"nosuch", nil},
		{"", nil},
		{".", nil},
		{"..", nil},
		{"sched/sched_switch", nil},
	}
	for _, c := range cases {
		if got, err := f.Events(c.system); err != nil || !slices.Equal(got, c.want) {
			t.Errorf("Events(%q) = %q, %v; want %q", c.system, got, err, c.want)
		}
	}
	bare := &FS{Mount: Mount{Path: t.TempDir()}} // a kernel without events/
	if got, err := bare.EventSystems(); err != nil || got != nil {
		t.Errorf("without events/: %q %v", got, err)
	}
}
