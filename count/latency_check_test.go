package count

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/ftctl/ftctl/session"
	"github.com/ftctl/ftctl/tracefs"
)

// CheckLatency names the file of what the kernel lacks: synthetic_events for hist triggers or
// synthetic events, kprobe_events when neither fprobes nor kprobes can see the function.
func TestCheckLatency(t *testing.T) {
	fs := &tracefs.FS{Mount: tracefs.Mount{Path: "/t"}}
	full := tracefs.Features{SyntheticEvents: true, HistTriggers: true, KprobeEvents: true}
	full.Probe.Fprobe = true
	without := func(change func(*tracefs.Features)) tracefs.Features {
		ft := full
		change(&ft)
		return ft
	}
	for _, c := range []struct {
		name string
		ft   tracefs.Features
		file string // "" when the kernel can
	}{
		{"all", full, ""},
		{"kprobes alone", without(func(ft *tracefs.Features) { ft.Probe.Fprobe = false }), ""},
		{"fprobes alone", without(func(ft *tracefs.Features) { ft.KprobeEvents = false }), ""},
		{"no synthetic events", without(func(ft *tracefs.Features) { ft.SyntheticEvents = false }), "synthetic_events"},
		{"no hist triggers", without(func(ft *tracefs.Features) { ft.HistTriggers = false }), "synthetic_events"},
		{"no probes", without(func(ft *tracefs.Features) { ft.KprobeEvents, ft.Probe.Fprobe = false, false }), "kprobe_events"},
		{"nothing", tracefs.Features{}, "synthetic_events"},
	} {
		err := CheckLatency(fs, c.ft)
		var e *tracefs.Error
		switch {
		case c.file == "" && err != nil:
			t.Errorf("%s: %v", c.name, err)
		case c.file != "" && (!errors.As(err, &e) || !errors.Is(err, tracefs.ErrUnavailable) || e.Path != filepath.Join("/t", c.file)):
			t.Errorf("%s: %v; want ErrUnavailable on %s", c.name, err, c.file)
		}
	}
}

// CheckLatencyName takes one function name and refuses a pattern or an empty or odd name,
// without reading any file.
func TestCheckLatencyName(t *testing.T) {
	for _, fn := range []string{"vfs_read", "__x64_sys_getppid", "foo.isra.0"} {
		if err := CheckLatencyName(fn); err != nil {
			t.Errorf("%q: %v", fn, err)
		}
	}
	for _, fn := range []string{"", "vfs_*", "vfs_rea?", "[vf]fs_read", "vfs_read%return", "vfs read", "a\x1b[2J"} {
		if err := CheckLatencyName(fn); !errors.Is(err, ErrLatencyFunc) {
			t.Errorf("%q: %v, want ErrLatencyFunc", fn, err)
		}
	}
}

// LatencyFuncRefused reads the index only for a refused probe: FUNC outside it is
// ErrLatencyFunc; FUNC in it (the kernel refused for another reason), a refused synthetic
// event or any other error stays the kernel's.
func TestLatencyFuncRefused(t *testing.T) {
	root := t.TempDir()
	if err := os.WriteFile(filepath.Join(root, "available_filter_functions"), []byte("vfs_read\nksys_read\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	fs, err := tracefs.Open(root, "a test")
	if err != nil {
		t.Fatal(err)
	}
	kernel := errors.New("write kprobe_events: no such file or directory")
	probe := &session.DynamicError{Dynamic: session.Dynamic{Kind: 'f', Event: "lat_entry", Place: "x"}, Err: kernel}
	synth := &session.DynamicError{Dynamic: session.Dynamic{Kind: 's', Event: "lat", Place: "u64 lat"}, Err: kernel}
	for _, c := range []struct {
		fn      string
		err     error
		outside bool
	}{
		{"no_such_function_ftctl", probe, true},
		{"vfs_read", probe, false},
		{"no_such_function_ftctl", synth, false},
		{"no_such_function_ftctl", kernel, false},
	} {
		got := LatencyFuncRefused(fs.Top(), c.fn, c.err)
		if errors.Is(got, ErrLatencyFunc) != c.outside || (!c.outside && got != c.err) {
			t.Errorf("%s, %v: %v", c.fn, c.err, got)
		}
	}
	// a dry run's check: the index alone
	if err := CheckLatencyFunc(fs.Top(), "ksys_read"); err != nil {
		t.Error(err)
	}
	if err := CheckLatencyFunc(fs.Top(), "ksys_write"); !errors.Is(err, ErrLatencyFunc) {
		t.Errorf("ksys_write: %v", err)
	}
}
