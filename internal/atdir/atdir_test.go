package atdir

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"testing"
)

func TestCheckPrivate(t *testing.T) {
	for _, c := range []struct {
		owner int
		mode  fs.FileMode
		ok    bool
	}{
		{1000, fs.ModeDir | 0o755, true},
		{1000, fs.ModeDir | 0o700, true},
		{0, fs.ModeDir | 0o755, true},                    // root's: root can do anything anyway
		{0, fs.ModeDir | fs.ModeSticky | 0o777, true},    // /tmp
		{1000, fs.ModeDir | fs.ModeSticky | 0o777, true}, // sticky and ours
		{1000, fs.ModeDir | 0o777, false},                // world-writable, not sticky
		{1000, fs.ModeDir | 0o775, false},                // group-writable
		{0, fs.ModeDir | 0o757, false},
		{2000, fs.ModeDir | 0o755, false},                 // another user's: they rename at will
		{2000, fs.ModeDir | fs.ModeSticky | 0o777, false}, // sticky, but its owner can rename
	} {
		err := checkPrivate("/d", c.owner, c.mode, []int{1000})
		if (err == nil) != c.ok || (err != nil && !errors.Is(err, ErrShared)) {
			t.Errorf("owner %d mode %v: %v", c.owner, c.mode, err)
		}
	}
}

// Nothing is reached through a link: a directory, a file to open, a path from /.
func TestNoLinks(t *testing.T) {
	tmp := t.TempDir()
	os.Mkdir(filepath.Join(tmp, "real"), 0o700)
	os.WriteFile(filepath.Join(tmp, "secret"), []byte("x"), 0o600)
	os.Symlink("real", filepath.Join(tmp, "link"))
	os.Symlink("secret", filepath.Join(tmp, "flink"))
	d, err := Open(tmp)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	if _, err := d.Sub("link"); !errors.Is(err, ErrLink) {
		t.Errorf("Sub(link): %v", err)
	}
	if _, err := d.Open("flink"); !errors.Is(err, ErrLink) {
		t.Errorf("Open(flink): %v", err)
	}
	if _, err := d.Create("flink", 0o600); !errors.Is(err, fs.ErrExist) {
		t.Errorf("Create(flink): %v", err)
	}
	if _, err := OpenNoLinks(filepath.Join(tmp, "link")); !errors.Is(err, ErrLink) {
		t.Errorf("OpenNoLinks through a link: %v", err)
	}
	if err := d.RemoveDir("link"); err == nil {
		t.Errorf("RemoveDir(link) removed it")
	}
	real, _ := filepath.EvalSymlinks(filepath.Join(tmp, "real"))
	r, err := OpenNoLinks(real)
	if err != nil {
		t.Fatal(err)
	}
	r.Close()
	if fi, err := d.Lstat("link"); err != nil || fi.Mode()&fs.ModeSymlink == 0 {
		t.Errorf("Lstat(link): %v %v", fi, err)
	}
}
