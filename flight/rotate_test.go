package flight

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"
)

func TestRotate(t *testing.T) {
	dir := t.TempDir()
	at := time.Date(2026, 11, 27, 23, 0, 0, 0, time.UTC)
	var names []string
	for i := 0; i < 5; i++ {
		n := DumpName("box", at.Add(time.Duration(i)*time.Second))
		names = append(names, n)
		if err := os.WriteFile(filepath.Join(dir, n), make([]byte, 100*(i+1)), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	os.WriteFile(filepath.Join(dir, "other-20261127T230000.000Z.dat"), nil, 0o600) // another recorder's
	os.WriteFile(filepath.Join(dir, "box-notes.txt"), nil, 0o600)
	left := func() []string {
		ents, _ := os.ReadDir(dir)
		var out []string
		for _, e := range ents {
			out = append(out, e.Name())
		}
		return out
	}
	if names[0] != "box-20261127T230000.000Z.dat" {
		t.Errorf("DumpName = %q", names[0])
	}
	removed, err := Rotate(dir, "box", 3, 0)
	if err != nil || len(removed) != 2 || filepath.Base(removed[0]) != names[0] || filepath.Base(removed[1]) != names[1] {
		t.Fatalf("Rotate by count: %v %v", removed, err)
	}
	// 300 + 400 + 500 bytes left; a cap of 900 takes the oldest (300), then 400+500 fits
	removed, err = Rotate(dir, "box", 0, 900)
	if err != nil || len(removed) != 1 || filepath.Base(removed[0]) != names[2] {
		t.Fatalf("Rotate by size: %v %v", removed, err)
	}
	// the newest stays even over the cap
	if removed, err = Rotate(dir, "box", 0, 10); err != nil || len(removed) != 1 {
		t.Fatalf("Rotate to the newest: %v %v", removed, err)
	}
	if got := left(); !slices.Equal(got, []string{names[4], "box-notes.txt", "other-20261127T230000.000Z.dat"}) {
		t.Errorf("left: %q", got)
	}
}

// TestDumpPathSameMillisecond: a second dump in the same millisecond gets the next free name
// and sorts after the first; before DumpPath, the second dump replaced the first.
func TestDumpPathSameMillisecond(t *testing.T) {
	dir := t.TempDir()
	at := time.Date(2026, 11, 28, 4, 0, 0, 123456789, time.UTC)
	var made []string
	for i := 0; i < 3; i++ {
		p := DumpPath(dir, "box", at)
		if err := os.WriteFile(p, []byte{byte(i)}, 0o600); err != nil {
			t.Fatal(err)
		}
		made = append(made, filepath.Base(p))
	}
	want := []string{"box-20261128T040000.123Z.dat", "box-20261128T040000.124Z.dat", "box-20261128T040000.125Z.dat"}
	if !slices.Equal(made, want) {
		t.Fatalf("names %q, want %q", made, want)
	}
	dumps, err := Dumps(dir, "box")
	if err != nil || len(dumps) != 3 || dumps[0].Name != want[0] || dumps[2].Name != want[2] {
		t.Errorf("Dumps: %v %v", dumps, err)
	}
}
