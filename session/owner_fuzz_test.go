package session

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ftctl/ftctl/tracefs"
)

// A declaration is read back from the state directory before Undeclare removes what it names:
// whatever the file holds, reading it never panics, and one it accepts names the owner's own
// pieces only (its instance and group, events that are the owner's), so a declaration cannot
// make Undeclare remove another's.
func FuzzReadOwner(f *testing.F) {
	f.Add([]byte(`{"name":"x","instance":"ftctl-owned-x","group":"ftctl_owned_x","state":"applied","dynamic":[{"Kind":112,"Event":"e","Place":"vfs_read"},{"Kind":115,"Event":"ftctl_owned_x_lat","Place":"u64 lat"}],"triggers":[{"System":"ftctl_owned_x","Event":"e","Text":"hist:keys=common_pid"}]}`))
	f.Add([]byte(`{"name":"x","instance":"keepme","group":"othergrp"}`))
	f.Add([]byte(`{"name":"x","instance":"ftctl-owned-x","group":"ftctl_owned_x","dynamic":[{"Kind":115,"Event":"synthetic_other","Place":"u64 a"}]}`))
	f.Add([]byte(`not json`))
	f.Fuzz(func(t *testing.T, b []byte) {
		dir := t.TempDir()
		fs := &tracefs.FS{Mount: tracefs.Mount{Path: dir}, StateDir: filepath.Join(dir, "run")}
		if err := os.MkdirAll(filepath.Join(dir, "run", "owners"), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, "run", "owners", "x.json"), b, 0o600); err != nil {
			t.Fatal(err)
		}
		o, err := readOwner(fs, "x")
		if err != nil {
			return
		}
		if o.Instance != "ftctl-owned-x" || o.Group != "ftctl_owned_x" {
			t.Fatalf("accepted a declaration naming %q and %q", o.Instance, o.Group)
		}
		for _, d := range o.Dynamic {
			if !validEventName(d.Event) || d.Kind == 's' && !strings.HasPrefix(d.Event, "ftctl_owned_x_") {
				t.Fatalf("accepted event %q of kind %c", d.Event, d.Kind)
			}
		}
	})
}
