package flight

import (
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/ftctl/ftctl/tracefs"
)

func TestBootParams(t *testing.T) {
	got, err := BootParams("crash", 16, []string{"sched:sched_switch", "irq"})
	want := []string{"nokaslr", "reserve_mem=16M:4096:crash", "trace_instance=ftctl-owned-crash@crash,sched:sched_switch,irq"}
	if err != nil || !reflect.DeepEqual(got, want) {
		t.Errorf("BootParams = %q, %v; want %q", got, err, want)
	}
	for _, c := range []struct {
		name   string
		size   int
		events []string
	}{
		{"Bad", 16, nil},
		{"abcdefghijklmnop", 16, nil}, // 16: longer than reserve_mem's label
		{"crash", 0, nil},
		{"crash", 16, []string{"sched,irq"}},
		{"crash", 16, []string{"a b"}},
		{"crash", 16, []string{""}},
	} {
		if _, err := BootParams(c.name, c.size, c.events); err == nil {
			t.Errorf("BootParams(%q, %d, %q) accepted", c.name, c.size, c.events)
		}
	}
}

// TestCapturedEarlier: a capture saved in another boot (or without its boot id) is an earlier
// boot's, which boot-config keeps for last-boot; this boot's is not.
func TestCapturedEarlier(t *testing.T) {
	dir := t.TempDir()
	idFile := filepath.Join(dir, "boot_id")
	os.WriteFile(idFile, []byte("1111\n"), 0o600)
	fs := &tracefs.FS{BootIDFile: idFile}
	header := filepath.Join(dir, "boot.dat")
	if capturedEarlier(fs, header) {
		t.Error("no capture at all counts as an earlier boot's")
	}
	os.WriteFile(header, []byte("capture"), 0o600)
	if !capturedEarlier(fs, header) {
		t.Error("a capture without its boot id does not count as an earlier boot's")
	}
	os.WriteFile(bootIDFile(header), []byte("1111\n"), 0o600)
	if capturedEarlier(fs, header) {
		t.Error("this boot's capture counts as an earlier boot's")
	}
	os.WriteFile(idFile, []byte("2222\n"), 0o600) // rebooted
	if !capturedEarlier(fs, header) {
		t.Error("the previous boot's capture does not count as an earlier boot's")
	}
	if got := bootIDFile(header); got != filepath.Join(dir, "boot.boot_id") {
		t.Errorf("bootIDFile = %s", got)
	}
}
