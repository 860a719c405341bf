package session

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// recordingDir makes what a killed `ftctl record -w out.dat` leaves: out.dat.tmp-PID with a
// header and a CPU's pages.
func recordingDir(t *testing.T) (dir, file string) {
	t.Helper()
	top := t.TempDir()
	file = filepath.Join(top, "out.dat")
	dir = file + ".tmp-4242"
	if err := os.Mkdir(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(dir, "header.dat"), []byte("header"), 0o600)
	os.WriteFile(filepath.Join(dir, "cpu0.raw"), make([]byte, 4096), 0o600)
	return dir, file
}

// A recording's journal names its directory while it runs (locked: "running", left alone),
// and once it died ("left", with its files), until it is removed when asked; Done forgets it.
func TestRecordingJournal(t *testing.T) {
	fs, _ := fakeFS(t, nil)
	dir, file := recordingDir(t)
	rec, err := StartRecording(fs, dir, file)
	if err != nil {
		t.Fatal(err)
	}
	if st, err := os.Stat(fs.StateDir); err != nil || st.Mode().Perm() != 0o700 {
		t.Errorf("state directory: %v %v", st, err)
	}
	left, err := LeftRecordings(fs)
	if err != nil || len(left) != 1 || left[0].State != RecordingRunning || left[0].Dir != dir || left[0].File != file || left[0].PID != os.Getpid() {
		t.Fatalf("while it runs: %+v %v", left, err)
	}
	if err := left[0].Remove(fs); err == nil {
		t.Errorf("a running recording's directory was removed")
	}
	if _, err := os.Stat(dir); err != nil {
		t.Fatal(err)
	}
	// killed: the lock goes with the process; the journal and the directory stay
	rec.f.Close()
	left, err = LeftRecordings(fs)
	if err != nil || len(left) != 1 || left[0].State != RecordingLeft || len(left[0].Files) != 2 {
		t.Fatalf("after its death: %+v %v", left, err)
	}
	if _, err := os.Stat(dir); err != nil {
		t.Fatalf("listing removed the directory: %v", err)
	}
	// a file ftctl does not write stops the removal
	os.WriteFile(filepath.Join(dir, "notes.txt"), []byte("mine"), 0o600)
	left, _ = LeftRecordings(fs)
	if err := left[0].Remove(fs); err == nil || !strings.Contains(err.Error(), "notes.txt") {
		t.Errorf("removal with a stranger's file: %v", err)
	}
	if _, err := os.Stat(filepath.Join(dir, "cpu0.raw")); err != nil {
		t.Fatalf("a refused removal removed: %v", err)
	}
	os.Remove(filepath.Join(dir, "notes.txt"))
	// --dry-run removes nothing
	dry := *fs
	dry.DryRun = os.Stdout
	left, _ = LeftRecordings(&dry)
	if err := left[0].Remove(&dry); err != nil || left[0].State != RecordingLeft {
		t.Errorf("dry run: %v %+v", err, left[0])
	}
	if _, err := os.Stat(dir); err != nil {
		t.Fatalf("a dry run removed: %v", err)
	}
	left, _ = LeftRecordings(fs)
	if err := left[0].Remove(fs); err != nil || left[0].State != RecordingRemoved {
		t.Fatalf("removal: %v %+v", err, left[0])
	}
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Errorf("the directory is still there: %v", err)
	}
	if left, err := LeftRecordings(fs); err != nil || len(left) != 0 {
		t.Errorf("after the removal: %+v %v", left, err)
	}
}

// A recording that ends removes its journal; a journal whose directory is gone is dropped
// when listed; a journal that is not one is named and left.
func TestRecordingJournalEnds(t *testing.T) {
	fs, _ := fakeFS(t, nil)
	dir, file := recordingDir(t)
	rec, err := StartRecording(fs, dir, file)
	if err != nil {
		t.Fatal(err)
	}
	if err := rec.Done(); err != nil {
		t.Fatal(err)
	}
	if err := rec.Done(); err != nil {
		t.Errorf("Done twice: %v", err)
	}
	if left, err := LeftRecordings(fs); err != nil || len(left) != 0 {
		t.Errorf("after Done: %+v %v", left, err)
	}
	rec, _ = StartRecording(fs, dir, file)
	rec.f.Close() // killed
	os.RemoveAll(dir)
	if left, err := LeftRecordings(fs); err != nil || len(left) != 0 {
		t.Errorf("directory gone: %+v %v", left, err)
	}
	if ents, _ := os.ReadDir(fs.StateDir); len(ents) != 0 {
		t.Errorf("the journal of a directory gone is left: %v", ents)
	}
	for name, text := range map[string]string{
		"record-1-0.recording": `{"dir": "relative.tmp-1", "file": "x", "pid": 1}`,
		"record-2-0.recording": `{"dir": "/etc", "file": "/x", "pid": 2}`,
		"record-3-0.recording": `not json`,
		"mine.recording":       `{}`,
	} {
		os.WriteFile(filepath.Join(fs.StateDir, name), []byte(text), 0o600)
	}
	_, err = LeftRecordings(fs)
	for _, want := range []string{"relative.tmp-1", `"/etc"`, "record-3-0.recording", "mine.recording"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("bad journals: %v; want it to name %s", err, want)
		}
	}
	if ents, _ := os.ReadDir(fs.StateDir); len(ents) != 4 {
		t.Errorf("bad journals were removed: %v", ents)
	}
}

// reset --remove-recordings never follows a link: a recording's directory replaced by a link
// to another directory holding files of the same names (or a path through a linked directory)
// is refused, and the files where the link points stay.
func TestRecordingRemoveNoLinks(t *testing.T) {
	for _, how := range []string{"dir", "parent"} {
		fs, _ := fakeFS(t, nil)
		dir, file := recordingDir(t)
		rec, err := StartRecording(fs, dir, file)
		if err != nil {
			t.Fatal(err)
		}
		rec.f.Close() // killed
		victim := t.TempDir()
		for _, n := range []string{"header.dat", "cpu0.raw", "trace.dat"} {
			os.WriteFile(filepath.Join(victim, n), []byte("precious"), 0o600)
		}
		switch how {
		case "dir": // the working directory itself made a link
			os.RemoveAll(dir)
			if err := os.Symlink(victim, dir); err != nil {
				t.Fatal(err)
			}
		case "parent": // a directory on the way made a link to another holding a namesake
			top := filepath.Dir(dir)
			moved := top + ".moved"
			os.Rename(top, moved)
			other := t.TempDir()
			os.Symlink(other, top)
			os.Mkdir(filepath.Join(other, filepath.Base(dir)), 0o700)
			for _, n := range []string{"header.dat", "cpu0.raw", "trace.dat"} {
				os.WriteFile(filepath.Join(other, filepath.Base(dir), n), []byte("precious"), 0o600)
			}
			victim = filepath.Join(other, filepath.Base(dir))
		}
		left, _ := LeftRecordings(fs)
		for _, l := range left {
			err = l.Remove(fs)
		}
		for _, n := range []string{"header.dat", "cpu0.raw", "trace.dat"} {
			if _, serr := os.Stat(filepath.Join(victim, n)); serr != nil {
				t.Errorf("%s: removal through a link removed %s (Remove: %v)", how, n, err)
			}
		}
		if len(left) == 1 && err == nil {
			t.Errorf("%s: removal through a link: no error", how)
		}
	}
}
