package tracefs

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Issue 28 (d): the state directory (journals that reset acts on as root, the event probes'
// filter record) is used only when nobody but ftctl's user or root can change what is in it:
// the directory itself owned by one of them and not writable by group or others, no symbolic
// link, and every directory above it the same or sticky (/tmp); one that does not exist yet
// only under such directories.
func TestCheckStateDir(t *testing.T) {
	base := t.TempDir()
	mk := func(rel string, mode os.FileMode) string {
		p := filepath.Join(base, rel)
		if err := os.MkdirAll(p, 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(p, mode); err != nil {
			t.Fatal(err)
		}
		return p
	}
	good := mk("good", 0o700)
	open := mk("open", 0o777)
	group := mk("group", 0o770)
	readable := mk("readable", 0o755)
	wideParent := mk("wide", 0o777)
	sticky := mk("sticky", os.ModeSticky|0o777)
	inWide := mk("wide/run", 0o700)
	os.Symlink(good, filepath.Join(base, "link"))
	os.WriteFile(filepath.Join(base, "file"), nil, 0o600)
	for _, c := range []struct {
		dir  string
		want string // "" accepted, else a word of the refusal
	}{
		{good, ""},
		{readable, ""},
		{filepath.Join(good, "not-yet"), ""},
		{filepath.Join(sticky, "not-yet"), ""},
		{open, "writable by group or others"},
		{group, "writable by group or others"},
		{filepath.Join(base, "link"), "symbolic link"},
		{filepath.Join(base, "file"), "not a directory"},
		{inWide, wideParent},
		{filepath.Join(wideParent, "not-yet"), wideParent},
		{"relative/dir", "not absolute"},
	} {
		err := CheckStateDir(c.dir)
		switch {
		case c.want == "" && err != nil:
			t.Errorf("%s: refused: %v", c.dir, err)
		case c.want != "" && (err == nil || !errors.Is(err, ErrPermission) || !strings.Contains(err.Error(), c.want)):
			t.Errorf("%s: %v, want a refusal saying %q", c.dir, err, c.want)
		}
	}
	if os.Geteuid() == 0 {
		other := mk("other", 0o700)
		os.Chown(other, 65534, 65534)
		if err := CheckStateDir(other); err == nil || !strings.Contains(err.Error(), "owned by uid 65534") {
			t.Errorf("a directory of another user: %v", err)
		}
		if err := CheckStateDir(filepath.Join(other, "run")); err == nil || !strings.Contains(err.Error(), "owned by uid 65534") {
			t.Errorf("under a directory of another user: %v", err)
		}
	}
	// the default: /run/ftctl, checked like any other
	if err := (&FS{}).CheckStateDir(); err != nil {
		t.Logf("this machine's %s: %v", DefaultStateDir, err)
	}
}
