package probes

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/ftctl/ftctl/tracefs"
)

// dynamicEventsText lists what dynamic_events shows on 6.12 for the probes of
// kprobeEventsText and uprobeEventsText, with the kinds only it takes, a synthetic and a user
// event.
const (
	kprobeEventsText = "p:kprobes/k vfs_read\nr:ftctl/kr vfs_write ret=$retval\n"
	uprobeEventsText = "p:ftctl/up /bin/true:0x0000000000001010\nr:ftctl/upr /bin/true:0x0000000000001010\n"
	dynamicOnlyText  = "f:ftctl/fe vfs_read count=count\n" +
		"f:ftctl/fx vfs_read%return ret=$retval\n" +
		"t:ftctl/tp sched_switch pid=prev->pid\n" +
		"e:ftctl/ee sched.sched_switch p=$prev_pid\n" +
		"s:synthetic/lat u64 lat\n" +
		"u:myuser u32 x\n"
)

// listFS is a directory holding files (name to content), opened as tracefs.
func listFS(t *testing.T, files map[string]string) (*tracefs.FS, string) {
	t.Helper()
	root := t.TempDir()
	for name, body := range files {
		if err := os.WriteFile(filepath.Join(root, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	fs, err := tracefs.Open(root, "test")
	if err != nil {
		t.Fatal(err)
	}
	return fs, root
}

// Every probe is listed once, from its own file, with its kind: dynamic_events lists the
// kprobes and uprobes too (p:, r:), which come from kprobe_events and uprobe_events alone.
func TestListEveryFileOnce(t *testing.T) {
	want := []string{
		"kprobes/k kprobe kprobe_events",
		"ftctl/kr kretprobe kprobe_events",
		"ftctl/up uprobe uprobe_events",
		"ftctl/upr uretprobe uprobe_events",
		"ftctl/fe fprobe dynamic_events",
		"ftctl/fx fexit dynamic_events",
		"ftctl/tp tprobe dynamic_events",
		"ftctl/ee eprobe dynamic_events",
	}
	for _, tc := range []struct {
		name  string
		files map[string]string
		want  []string
	}{
		{"every file", map[string]string{
			"kprobe_events": kprobeEventsText, "uprobe_events": uprobeEventsText,
			"dynamic_events": kprobeEventsText + uprobeEventsText + dynamicOnlyText}, want},
		// The development machines' kernel: no kprobe_events (CONFIG_KPROBES off).
		{"no kprobe_events", map[string]string{
			"uprobe_events": uprobeEventsText, "dynamic_events": uprobeEventsText + dynamicOnlyText}, want[2:]},
	} {
		fs, _ := listFS(t, tc.files)
		list, err := (&Manager{FS: fs}).List()
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		var got []string
		for _, p := range list {
			got = append(got, p.Name()+" "+p.Type+" "+p.File)
		}
		if !slices.Equal(got, tc.want) {
			t.Errorf("%s:\n got %q\nwant %q", tc.name, got, tc.want)
		}
	}
}

// One removal path for every kind: "-:GROUP/EVENT" goes to the file that lists the event.
func TestRemoveWritesToTheEventsFile(t *testing.T) {
	for _, tc := range []struct{ name, file string }{
		{"kprobes/k", "kprobe_events"},
		{"ftctl/up", "uprobe_events"},
		{"ftctl/fx", "dynamic_events"},
		{"ftctl/tp", "dynamic_events"},
		{"ftctl/ee", "dynamic_events"},
	} {
		files := map[string]string{"kprobe_events": kprobeEventsText, "uprobe_events": uprobeEventsText,
			"dynamic_events": kprobeEventsText + uprobeEventsText + dynamicOnlyText}
		fs, root := listFS(t, files)
		group, event, _ := strings.Cut(tc.name, "/")
		if err := (&Manager{FS: fs}).Remove(context.Background(), group, event); err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		for file, before := range files {
			b, _ := os.ReadFile(filepath.Join(root, file))
			wrote := strings.Contains(string(b), "-:"+tc.name+"\n")
			if wrote != (file == tc.file) || (file != tc.file && string(b) != before) {
				t.Errorf("removing %s: %s holds %q", tc.name, file, b)
			}
		}
	}
}

// The file a definition is written to, for each kind.
func TestEventsFile(t *testing.T) {
	all := Parser{Features: AllFeatures, Arch: "amd64"}
	for def, want := range map[string]string{
		"p:k vfs_read":                  "kprobe_events",
		"r:k vfs_read":                  "kprobe_events",
		"p:u /bin/true:0x10":            "uprobe_events",
		"r:u /bin/true:0x10":            "uprobe_events",
		"f:f vfs_read":                  "dynamic_events",
		"t:t sched_switch":              "dynamic_events",
		"e:e sched.sched_switch":        "dynamic_events",
		"f:f vfs_read%return r=$retval": "dynamic_events",
	} {
		d, err := all.Parse(def)
		if err != nil {
			t.Fatalf("%q: %v", def, err)
		}
		if got := d.EventsFile(); got != want {
			t.Errorf("%q: %s, want %s", def, got, want)
		}
	}
}

// TestEprobeFilterRecord: the kernel lists an event probe without its "if FILTER" (6.12):
// List shows the filter ftctl recorded when it added the probe, marked as ftctl's record, only
// for the very line the kernel lists and only in the boot it was written in; the kernel's own
// filter, where it lists one, is the kernel's; removing the event drops the record.
func TestEprobeFilterRecord(t *testing.T) {
	line := "e:ftctl/ee sched.sched_switch p=$prev_pid"
	fs, root := listFS(t, map[string]string{"kprobe_events": "", "dynamic_events": line + "\ne:ftctl/other sched.sched_switch\ne:ftctl/kf sched.sched_switch if prev_pid>0\n"})
	fs.StateDir = filepath.Join(t.TempDir(), "state")
	fs.BootIDFile = filepath.Join(root, "boot_id")
	os.WriteFile(fs.BootIDFile, []byte("boot-1\n"), 0o644)
	m := &Manager{FS: fs}
	if err := m.recordFilters([]string{line}, "prev_pid > 0", ""); err != nil {
		t.Fatal(err)
	}
	filters := func() map[string]string {
		l, err := m.List()
		if err != nil {
			t.Fatal(err)
		}
		out := map[string]string{}
		for _, p := range l {
			if p.Filter != "" {
				out[p.Name()] = p.Filter + " from " + p.FilterFrom
			}
		}
		return out
	}
	got := filters()
	if len(got) != 2 || got["ftctl/ee"] != "prev_pid > 0 from ftctl" || got["ftctl/kf"] != "prev_pid>0 from kernel" {
		t.Errorf("filters %v", got)
	}
	if fi, err := os.Stat(fs.StateDir); err != nil || fi.Mode().Perm() != 0o700 {
		t.Errorf("state directory: %v %v", fi, err)
	}
	// another boot: nothing shown
	os.WriteFile(fs.BootIDFile, []byte("boot-2\n"), 0o644)
	if got := filters(); len(got) != 1 {
		t.Errorf("a record of an earlier boot shown: %v", got)
	}
	os.WriteFile(fs.BootIDFile, []byte("boot-1\n"), 0o644)
	// the event removed: its record goes
	if err := m.recordFilters(nil, "", "ftctl/ee"); err != nil {
		t.Fatal(err)
	}
	if got := filters(); len(got) != 1 {
		t.Errorf("after removal: %v", got)
	}
	if _, err := os.Stat(filepath.Join(fs.StateDir, filterRecordFile)); !os.IsNotExist(err) {
		t.Errorf("an empty record is removed: %v", err)
	}
}
