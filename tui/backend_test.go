package tui

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/ftctl/ftctl/probes"
	"github.com/ftctl/ftctl/tracefs"
)

// Issue 14 item 3: a definition the console sends that names another owner's event is refused
// (the kernel would add a probe point to it, and the console would enable it), nothing written.
func TestKernelBackendAddProbeRefusesExistingEvent(t *testing.T) {
	root := t.TempDir()
	const other = "p:kprobes/other vfs_read\n"
	for name, body := range map[string]string{"kprobe_events": other, "error_log": ""} {
		if err := os.WriteFile(filepath.Join(root, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	fs, err := tracefs.Open(root, "test")
	if err != nil {
		t.Fatal(err)
	}
	b := NewKernelBackend(fs, fs.Top(), "ftctl_7_0badcafe", time.Second)
	d, err := probes.Parser{Features: probes.AllFeatures}.Parse("p:kprobes/other vfs_write")
	if err != nil {
		t.Fatal(err)
	}
	a, err := b.AddProbe(context.Background(), d)
	if !errors.Is(err, probes.ErrEventExists) || a != nil {
		t.Fatalf("AddProbe = %+v, %v; want ErrEventExists", a, err)
	}
	if got, _ := os.ReadFile(filepath.Join(root, "kprobe_events")); string(got) != other {
		t.Errorf("kprobe_events: %q", got)
	}
}
