package cmd

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ftctl/ftctl/internal/fixture"
	"github.com/ftctl/ftctl/probes"
)

func fakeProbeRoot(t *testing.T) string {
	t.Helper()
	root := fakeRoot(t)
	readme, err := os.ReadFile("../tracefs/testdata/6.12/README")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(root, "README"), readme, 0o644); err != nil {
		t.Fatal(err)
	}
	return root
}

// A definition ftctl refuses exits 2 with the kernel's wording and a caret under the mistake,
// and writes nothing.
func TestProbeAddRefusedLocally(t *testing.T) {
	root := fakeProbeRoot(t)
	before, _ := os.ReadFile(filepath.Join(root, "kprobe_events"))
	for _, tc := range []struct {
		args  []string
		msg   string
		caret string
	}{
		{[]string{"probe", "add", "p:fty vfs_read %zz"}, "Invalid register name", "  p:fty vfs_read %zz\n                 ^"},
		{[]string{"probe", "add", "p:x", "vfs_read", "x=%di:string"}, "String accepts only memory argument", "  p:x vfs_read x=%di:string\n                     ^"},
		{[]string{"probe", "add", "--tracefs", "ROOT", "--", "-:ftctl/a"}, "removes a probe", ""},
	} {
		args := append([]string{}, tc.args...)
		if args[2] == "--tracefs" {
			args[3] = root
		} else {
			args = append(args, "--tracefs", root)
		}
		code, _, stderr := run(t, args...)
		if code != 2 || !strings.Contains(stderr, tc.msg) || !strings.Contains(stderr, tc.caret) {
			t.Errorf("%q: exit %d, stderr:\n%s\nwant exit 2, %q and caret\n%s", tc.args, code, stderr, tc.msg, tc.caret)
		}
	}
	after, _ := os.ReadFile(filepath.Join(root, "kprobe_events"))
	if string(after) != string(before) {
		t.Errorf("kprobe_events changed: %q", after)
	}
}

func TestProbeListOwnersAndEscaping(t *testing.T) {
	root := fakeProbeRoot(t)
	code, out, stderr := run(t, "probe", "list", "--tracefs", root)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	if !strings.Contains(out, "ftctl/a") || !strings.Contains(out, `\x1b`) || strings.Contains(out, "\x1b") {
		t.Errorf("list:\n%s", out)
	}
	code, out, _ = run(t, "probe", "list", "-o", "json", "--tracefs", root)
	var list []map[string]any
	if err := json.Unmarshal([]byte(payload(t, "probe-list", out)), &list); code != 0 || err != nil || len(list) != 2 {
		t.Fatalf("json: exit %d, %v\n%s", code, err, out)
	}
	if list[0]["owner"] != "ftctl" || list[1]["owner"] != "other" || list[0]["type"] != "kprobe" || list[0]["place"] != "vfs_read" {
		t.Errorf("json list: %v", list)
	}
}

// Another group's probe is changed only when named with its group.
func TestProbeRemoveNeedsGroupForOthers(t *testing.T) {
	root := fakeProbeRoot(t)
	os.WriteFile(filepath.Join(root, "kprobe_events"), []byte("p:kprobes/theirs vfs_write\n"), 0o644)
	code, _, stderr := run(t, "probe", "remove", "theirs", "--tracefs", root)
	if code != 2 || !strings.Contains(stderr, "kprobes/theirs") {
		t.Errorf("exit %d: %s", code, stderr)
	}
	if b, _ := os.ReadFile(filepath.Join(root, "kprobe_events")); string(b) != "p:kprobes/theirs vfs_write\n" {
		t.Errorf("kprobe_events changed: %q", b)
	}
	code, _, stderr = run(t, "probe", "remove", "nosuch", "--tracefs", root)
	if code != 0 || !strings.Contains(stderr, "already removed") {
		t.Errorf("removing a missing probe: exit %d: %s", code, stderr)
	}
	code, _, _ = run(t, "probe", "remove", "--tracefs", root)
	if code != 2 {
		t.Errorf("remove without names: exit %d", code)
	}
}

const probeFormatFixture = `name: a
ID: 1834
format:
	field:unsigned short common_type;	offset:0;	size:2;	signed:0;
	field:unsigned char common_flags;	offset:2;	size:1;	signed:0;
	field:unsigned long __probe_ip;	offset:8;	size:8;	signed:0;
	field:__data_loc char[] path;	offset:16;	size:4;	signed:1;
	field:u8 arr[4];	offset:20;	size:4;	signed:0;

print fmt: "(%lx) path=\"%s\" arr={%u,%u,%u,%u}", REC->__probe_ip, __get_str(path), REC->arr[0], REC->arr[1], REC->arr[2], REC->arr[3]
`

// probe format's output, text and JSON, pinned (one parser of format files: tracefs.ParseFormat).
func TestProbeFormatOutput(t *testing.T) {
	root := fakeProbeRoot(t)
	os.MkdirAll(filepath.Join(root, "events/ftctl/a"), 0o755)
	os.WriteFile(filepath.Join(root, "events/ftctl/a/format"), []byte(probeFormatFixture), 0o644)
	code, out, stderr := run(t, "probe", "format", "a", "--tracefs", root)
	want := `ftctl/a (id 1834)
FIELD       TYPE               OFFSET  SIZE  SIGNED
__probe_ip  unsigned long      8       8     false
path        __data_loc char[]  16      4     true
arr         u8[4]              20      4     false
print fmt: "(%lx) path=\"%s\" arr={%u,%u,%u,%u}", REC->__probe_ip, __get_str(path), REC->arr[0], REC->arr[1], REC->arr[2], REC->arr[3]
`
	if code != 0 || out != want {
		t.Errorf("exit %d %s\ngot:\n%s\nwant:\n%s", code, stderr, out, want)
	}
	code, out, stderr = run(t, "probe", "format", "a", "-o", "json", "--tracefs", root)
	wantJSON := `{
  "schema": "ftctl/probe-format/v1",
  "name": "a",
  "id": 1834,
  "fields": [
    {
      "name": "common_type",
      "type": "unsigned short",
      "offset": 0,
      "size": 2,
      "signed": false,
      "common": true
    },
    {
      "name": "common_flags",
      "type": "unsigned char",
      "offset": 2,
      "size": 1,
      "signed": false,
      "common": true
    },
    {
      "name": "__probe_ip",
      "type": "unsigned long",
      "offset": 8,
      "size": 8,
      "signed": false,
      "common": false
    },
    {
      "name": "path",
      "type": "__data_loc char[]",
      "offset": 16,
      "size": 4,
      "signed": true,
      "common": false
    },
    {
      "name": "arr",
      "type": "u8[4]",
      "offset": 20,
      "size": 4,
      "signed": false,
      "common": false
    }
  ],
  "print_fmt": "\"(%lx) path=\\\"%s\\\" arr={%u,%u,%u,%u}\", REC->__probe_ip, __get_str(path), REC->arr[0], REC->arr[1], REC->arr[2], REC->arr[3]"
}
`
	if code != 0 || out != wantJSON {
		t.Errorf("json: exit %d %s\ngot:\n%s\nwant:\n%s", code, stderr, out, wantJSON)
	}
}

// Issue 14 item 3: an event that exists is refused (exit 2, named, --append suggested), and
// nothing is written.
func TestProbeAddRefusesExistingEvent(t *testing.T) {
	root := fakeProbeRoot(t)
	before, _ := os.ReadFile(filepath.Join(root, "kprobe_events"))
	for _, def := range []string{"p:ftctl/a vfs_write", "p:a vfs_write", "p:kprobes/b\x1b[31m vfs_read"} {
		code, _, stderr := run(t, "probe", "add", def, "--tracefs", root)
		if strings.Contains(def, "\x1b") { // not a C identifier: refused by the grammar
			if code != 2 || strings.Contains(stderr, "\x1b") {
				t.Errorf("%q: exit %d, stderr:\n%s", def, code, stderr)
			}
			continue
		}
		if code != 2 || !strings.Contains(stderr, "ftctl/a already exists (p:ftctl/a vfs_read)") || !strings.Contains(stderr, "--append") {
			t.Errorf("%q: exit %d, stderr:\n%s", def, code, stderr)
		}
	}
	if after, _ := os.ReadFile(filepath.Join(root, "kprobe_events")); string(after) != string(before) {
		t.Errorf("kprobe_events changed: %q", after)
	}
}

// A definition that fits as typed but not once ftctl puts the group in its head: exit 2 with a
// caret, nothing written (found by FuzzParse).
func TestProbeAddTooLongWithGroup(t *testing.T) {
	root := fakeProbeRoot(t)
	before, _ := os.ReadFile(filepath.Join(root, "kprobe_events"))
	def := "p:x " + strings.Repeat("a", probes.MaxLineLen-4)
	code, _, stderr := run(t, "probe", "add", def, "--tracefs", root)
	if code != 2 || !strings.Contains(stderr, "line is too long") || !strings.Contains(stderr, "^") {
		t.Errorf("exit %d, stderr:\n%.300s", code, stderr)
	}
	if after, _ := os.ReadFile(filepath.Join(root, "kprobe_events")); string(after) != string(before) {
		t.Errorf("kprobe_events changed: %.100q", after)
	}
}

func TestProbeArgs(t *testing.T) {
	root := fakeRoot(t)
	t.Setenv("FTCTL_BTF", fixture.BTFDir(t))
	code, out, errs := run(t, "--tracefs", root, "probe", "args", "vfs_read")
	want := "vfs_read\n    struct file *file\n    char *buf\n    size_t count\n    loff_t *pos\n    returns ssize_t\n"
	if code != 0 || out != want {
		t.Fatalf("exit %d, stdout:\n%s\nwant:\n%s\nstderr: %s", code, out, want, errs)
	}
	code, out, _ = run(t, "--tracefs", root, "probe", "args", "kfree", "-o", "json")
	var got probes.FuncInfo
	if err := json.Unmarshal([]byte(out), &got); code != 0 || err != nil || got.Func != "kfree" || got.Return != "void" ||
		len(got.Params) != 1 || got.Params[0] != (probes.Param{Name: "objp", Type: "const void *"}) {
		t.Errorf("json: exit %d, %v: %s", code, err, out)
	}
	// A function BTF does not describe: exit 2, with close names from the function list.
	code, _, errs = run(t, "--tracefs", root, "probe", "args", "vfs_reed")
	if code != 2 || !strings.Contains(errs, "vfs_reed: no such function in the kernel's BTF; did you mean vfs_read?") {
		t.Errorf("unknown function: exit %d: %s", code, errs)
	}
	// No BTF: exit 4, saying so.
	t.Setenv("FTCTL_BTF", t.TempDir())
	code, _, errs = run(t, "--tracefs", root, "probe", "args", "vfs_read")
	if code != 4 || !strings.Contains(errs, "no BTF") && !strings.Contains(errs, "exposes no BTF") {
		t.Errorf("no BTF: exit %d: %s", code, errs)
	}
}

// probe args t:...: a tracepoint probe's arguments where the README announces t: (6.12), a
// bare tracepoint name too; exit 4 saying so where it does not (6.1's README).
func TestProbeArgsTracepoint(t *testing.T) {
	root := fakeProbeRoot(t)
	t.Setenv("FTCTL_BTF", fixture.BTFDir(t))
	if err := os.WriteFile(filepath.Join(root, "available_events"), []byte("sched:sched_switch\nsched:sched_wakeup\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	want := "tracepoint sched:sched_switch (t:sched_switch)\n    _Bool preempt\n    struct task_struct *prev\n    struct task_struct *next\n    unsigned int prev_state\n"
	for _, ref := range []string{"t:sched:sched_switch", "t:sched/sched_switch"} {
		if code, out, errs := run(t, "--tracefs", root, "probe", "args", ref); code != 0 || out != want {
			t.Errorf("%s: exit %d, stdout:\n%s\nwant:\n%s\nstderr: %s", ref, code, out, want, errs)
		}
	}
	for _, ref := range []string{"t:sched_switch", "sched_switch"} {
		if code, out, errs := run(t, "--tracefs", root, "probe", "args", ref); code != 0 || !strings.HasPrefix(out, "tracepoint sched_switch (t:sched_switch)\n    _Bool preempt\n") {
			t.Errorf("%s: exit %d: %s%s", ref, code, out, errs)
		}
	}
	code, out, _ := run(t, "--tracefs", root, "probe", "args", "t:sched_switch", "-o", "json")
	var got probes.FuncInfo
	if err := json.Unmarshal([]byte(out), &got); code != 0 || err != nil || got.Kind != "tracepoint" || len(got.Params) != 4 {
		t.Errorf("json: exit %d, %v: %s", code, err, out)
	}
	for ref, msg := range map[string]string{
		"t:sched_wakeup":        "sched_wakeup: no such tracepoint",
		"t:irq:sched_switch":    "irq:sched_switch: no such tracepoint",
		"t:sched:":              "a tracepoint is t:TRACEPOINT or t:SYSTEM:TRACEPOINT",
		"t:a:b:c":               "a tracepoint is t:TRACEPOINT",
		"vfs_reed":              "no such function",
		"t:sched:sched_switchx": "no such tracepoint",
	} {
		if code, _, errs := run(t, "--tracefs", root, "probe", "args", ref); code != 2 || !strings.Contains(errs, msg) {
			t.Errorf("%s: exit %d: %s", ref, code, errs)
		}
	}
	// 6.1's README: no t: announced.
	readme, err := os.ReadFile("../tracefs/testdata/6.1/README")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(root, "README"), readme, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, ref := range []string{"t:sched:sched_switch", "sched_switch"} {
		if code, _, errs := run(t, "--tracefs", root, "probe", "args", ref); code != 4 || !strings.Contains(errs, "does not announce tracepoint probes") {
			t.Errorf("6.1 %s: exit %d: %s", ref, code, errs)
		}
	}
}

// probe disable -B NAME with no such instance: refused (exit 2) saying what is missing, with the
// close names (issue 33: it said "read commands never create instances", no did-you-mean), and
// nothing written.
func TestProbeDisableMissingInstance(t *testing.T) {
	root := fakeRoot(t)
	if err := os.Mkdir(filepath.Join(root, "instances", "incident42"), 0o755); err != nil {
		t.Fatal(err)
	}
	before, _ := os.ReadFile(filepath.Join(root, "kprobe_events"))
	code, _, errs := run(t, "--tracefs", root, "-B", "incident24", "probe", "disable", "ftctl/a")
	if code != ExitInvalid || !strings.Contains(errs, `no instance "incident24"`) || !strings.Contains(errs, "did you mean incident42?") ||
		strings.Contains(errs, "read commands") || strings.Contains(errs, "--create") {
		t.Errorf("exit %d:\n%s", code, errs)
	}
	if after, _ := os.ReadFile(filepath.Join(root, "kprobe_events")); string(after) != string(before) {
		t.Errorf("kprobe_events changed: %q", after)
	}
}
