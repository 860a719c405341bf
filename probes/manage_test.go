package probes

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ftctl/ftctl/tracefs"
)

// fakeFS is a directory with the files Manager.Add reads; a write to kprobe_events would
// overwrite the file, which the tests then see.
func fakeFS(t *testing.T, kprobeEvents string) (*tracefs.FS, string) {
	t.Helper()
	return listFS(t, map[string]string{"kprobe_events": kprobeEvents, "error_log": ""})
}

// Issue 14 item 3: a definition naming an event that exists (someone else's) would add a
// probe point to it; Add refuses before writing anything, naming the event and what it holds.
func TestAddRefusesExistingEvent(t *testing.T) {
	const other = "p:kprobes/other vfs_read\n"
	fs, root := fakeFS(t, other)
	m := &Manager{FS: fs, Parser: Parser{Features: AllFeatures, Arch: "amd64"}}
	for _, tc := range []struct {
		def string
		opt AddOptions
	}{
		{"p:kprobes/other vfs_write", AddOptions{}},
		{"p:kprobes/other vfs_write", AddOptions{Filter: "nosuchfield == 1"}},
		{"p:kprobes.other vfs_write x=%di", AddOptions{Enable: true}},
	} {
		d, err := m.Parser.Parse(tc.def)
		if err != nil {
			t.Fatal(err)
		}
		a, err := m.Add(context.Background(), d, tc.opt)
		var ee *ExistsError
		if !errors.As(err, &ee) || !errors.Is(err, ErrEventExists) || a != nil {
			t.Fatalf("Add(%q) = %+v, %v; want an ExistsError", tc.def, a, err)
		}
		if ee.Group != "kprobes" || ee.Event != "other" || len(ee.Existing) != 1 || ee.Existing[0] != "p:kprobes/other vfs_read" ||
			!strings.Contains(err.Error(), "kprobes/other") {
			t.Errorf("%+v: %v", ee, err)
		}
		if b, _ := os.ReadFile(filepath.Join(root, "kprobe_events")); string(b) != other {
			t.Errorf("Add(%q) wrote kprobe_events: %q", tc.def, b)
		}
	}
}

// The command that takes back a probe point names that point only, as the kernel lists it.
func TestPointDeletion(t *testing.T) {
	for _, tc := range []struct{ def, want string }{
		{"p:kprobes/other vfs_write", "-:kprobes/other vfs_write"},
		{"p:kprobes/other vfs_write count=count pos=pos", "-:kprobes/other vfs_write count=count pos=pos"},
		{"r16:g/e ext4:ext4_sync_file+0 x=$retval:s32", "-:g/e ext4:ext4_sync_file+0 x=$retval:s32"},
		{"p:g/e 0xffffffffc0001000", "-:g/e 0xffffffffc0001000"},
	} {
		if got := pointDeletion(tc.def); got != tc.want {
			t.Errorf("pointDeletion(%q) = %q, want %q", tc.def, got, tc.want)
		}
	}
}

func TestExistsErrorEscapes(t *testing.T) {
	e := &ExistsError{Group: "kprobes", Event: "x", Existing: []string{"p:kprobes/x f s=\\\"\x1b[31m\"", "p:kprobes/x g"}}
	if msg := e.Error(); strings.ContainsAny(msg, "\x1b") || !strings.Contains(msg, `\x1b[31m`) || !strings.Contains(msg, "p:kprobes/x g") {
		t.Errorf("%q", msg)
	}
}

// An event name another file's probe holds (a kprobe, and now an fprobe of the same name) is
// refused the same way, --append or not: the kernel cannot make one event of two kinds, and
// would refuse it only after the write (exit 3).
func TestAddRefusesEventOfAnotherKind(t *testing.T) {
	const other = "p:kprobes/other vfs_read\n"
	fs, root := listFS(t, map[string]string{"kprobe_events": other, "dynamic_events": other, "error_log": ""})
	m := &Manager{FS: fs, Parser: Parser{Features: AllFeatures, Arch: "amd64"}}
	for _, opt := range []AddOptions{{}, {Append: true}} {
		d, err := m.Parser.Parse("f:kprobes/other vfs_write")
		if err != nil {
			t.Fatal(err)
		}
		a, err := m.Add(context.Background(), d, opt)
		var ee *ExistsError
		if !errors.As(err, &ee) || a != nil || len(ee.Existing) != 1 || !strings.Contains(err.Error(), "another kind") {
			t.Fatalf("Add(f:kprobes/other, append %v) = %+v, %v; want an ExistsError naming the kprobe", opt.Append, a, err)
		}
		if b, _ := os.ReadFile(filepath.Join(root, "dynamic_events")); string(b) != other {
			t.Errorf("wrote dynamic_events: %q", b)
		}
	}
}

// The other way: a kprobe named like an existing fprobe (listed in dynamic_events only).
func TestAddRefusesKprobeOverFprobe(t *testing.T) {
	const fprobe = "f:fprobes/other vfs_read\n"
	fs, root := listFS(t, map[string]string{"kprobe_events": "", "dynamic_events": fprobe, "error_log": ""})
	m := &Manager{FS: fs, Parser: Parser{Features: AllFeatures, Arch: "amd64"}}
	d, err := m.Parser.Parse("p:fprobes/other vfs_write")
	if err != nil {
		t.Fatal(err)
	}
	a, err := m.Add(context.Background(), d, AddOptions{Append: true})
	var ee *ExistsError
	if !errors.As(err, &ee) || a != nil || !ee.OtherKind {
		t.Fatalf("Add = %+v, %v; want an ExistsError of another kind", a, err)
	}
	if b, _ := os.ReadFile(filepath.Join(root, "kprobe_events")); len(b) != 0 {
		t.Errorf("wrote kprobe_events: %q", b)
	}
}

// CheckFile names the file a definition goes to when the kernel lacks it, and the option
// behind it; CheckKernel refuses only a kernel with neither kprobe nor uprobe events.
func TestCheckFileAndKernel(t *testing.T) {
	fs, root := listFS(t, map[string]string{"kprobe_events": ""})
	m := &Manager{FS: fs, Parser: Parser{Features: AllFeatures, Arch: "amd64", Force: true}}
	parse := func(def string) *Definition {
		d, err := m.Parser.Parse(def)
		if err != nil {
			t.Fatal(err)
		}
		return d
	}
	if err := m.CheckFile(parse("p:g/e vfs_read")); err != nil {
		t.Errorf("kprobe with kprobe_events: %v", err)
	}
	if err := m.CheckKernel(); err != nil {
		t.Errorf("CheckKernel with kprobe_events: %v", err)
	}
	for _, c := range []struct{ def, file, reason string }{
		{"f:g/e vfs_read", "dynamic_events", "this kernel has no dynamic_events (CONFIG_DYNAMIC_EVENTS, 5.0)"},
		{"p:g/e /bin/true:0x10", "uprobe_events", "this kernel has no uprobe events (CONFIG_UPROBE_EVENTS)"},
	} {
		err := m.CheckFile(parse(c.def))
		var e *tracefs.Error
		if !errors.As(err, &e) || !errors.Is(err, tracefs.ErrUnavailable) || e.Path != filepath.Join(root, c.file) || e.Reason != c.reason {
			t.Errorf("%s: %v", c.def, err)
		}
	}
	os.Remove(filepath.Join(root, "kprobe_events"))
	err := m.CheckFile(parse("p:g/e vfs_read"))
	var e *tracefs.Error
	if !errors.As(err, &e) || e.Path != filepath.Join(root, "kprobe_events") || e.Reason != "this kernel has no kprobe events (CONFIG_KPROBE_EVENTS)" {
		t.Errorf("kprobe without kprobe_events: %v", err)
	}
	err = m.CheckKernel()
	if !errors.As(err, &e) || !errors.Is(err, tracefs.ErrUnavailable) || e.Path != filepath.Join(root, "kprobe_events") {
		t.Errorf("CheckKernel with neither file: %v", err)
	}
	if err := os.WriteFile(filepath.Join(root, "uprobe_events"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := m.CheckKernel(); err != nil {
		t.Errorf("CheckKernel with uprobe_events alone: %v", err)
	}
}
