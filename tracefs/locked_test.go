package tracefs

import (
	"bytes"
	"context"
	"errors"
	"testing"
)

// FS.Locked says whether a Lock taken through that FS is held; another FS on the same tracefs
// (another ftctl, as far as the lock goes) does not hold it, and cannot take it.
func TestLocked(t *testing.T) {
	root := t.TempDir()
	f := &FS{Mount: Mount{Path: root}}
	other := &FS{Mount: Mount{Path: root}}
	if f.Locked() {
		t.Fatal("locked before Lock")
	}
	l, err := f.Lock(context.Background(), 0, nil)
	if err != nil {
		t.Fatal(err)
	}
	if !f.Locked() || other.Locked() {
		t.Errorf("after Lock: f %v, other %v", f.Locked(), other.Locked())
	}
	if _, err := other.Lock(context.Background(), 0, nil); !errors.Is(err, ErrBusy) {
		t.Errorf("another FS took the lock: %v", err)
	}
	l.Unlock()
	l.Unlock() // twice: nothing more
	if f.Locked() {
		t.Error("locked after Unlock")
	}
	dry := &FS{Mount: Mount{Path: root}, DryRun: &bytes.Buffer{}}
	dl, _ := dry.Lock(context.Background(), 0, nil)
	if !dry.Locked() {
		t.Error("a dry run's lock is not held")
	}
	dl.Unlock()
	if dry.Locked() {
		t.Error("a dry run's lock is held after Unlock")
	}
}
