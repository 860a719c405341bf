package count

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ftctl/ftctl/filters"
	"github.com/ftctl/ftctl/tracefs"
)

// fakeKernel is a tracefs with hist triggers, kprobe events and the function tracer, and a
// kallsyms file; with withIndex, index is its available_filter_functions (else there is none:
// reading it fails).
func fakeKernel(t *testing.T, index, kallsyms string, withIndex bool) *tracefs.FS {
	t.Helper()
	root := t.TempDir()
	files := map[string]string{
		"README":            "... hist trigger ...\n",
		"kprobe_events":     "",
		"available_tracers": "function nop\n",
		"current_tracer":    "nop\n",
	}
	if withIndex {
		files["available_filter_functions"] = index
	}
	if err := os.Mkdir(filepath.Join(root, "instances"), 0o755); err != nil {
		t.Fatal(err)
	}
	for name, text := range files {
		if err := os.WriteFile(filepath.Join(root, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	fs, err := tracefs.Open(root, "a test")
	if err != nil {
		t.Fatal(err)
	}
	fs.KallsymsFile = filepath.Join(root, "kallsyms")
	if err := os.WriteFile(fs.KallsymsFile, []byte(kallsyms), 0o644); err != nil {
		t.Fatal(err)
	}
	return fs
}

func compiled(t *testing.T, texts ...string) []*filters.Pattern {
	t.Helper()
	var out []*filters.Pattern
	for _, s := range texts {
		p, err := filters.Compile(s)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, p)
	}
	return out
}

// Functions named exactly are counted by the hist method without reading the function index
// or kallsyms (there is none here: reading either would fail); a glob, a :mod: pattern or the
// stream method reads the index.
func TestNewByNameReadsNoIndex(t *testing.T) {
	fs := fakeKernel(t, "", "", false)
	c, err := New(fs, Options{Patterns: compiled(t, "vfs_read", "ksys_read", "vfs_read")})
	if err != nil {
		t.Fatal(err)
	}
	if c.Choice.Method != Hist || !c.unchecked || len(c.Choice.Funcs) != 2 {
		t.Errorf("by name: %+v, unchecked %v", c.Choice, c.unchecked)
	}
	for _, p := range []string{"vfs_*", "vfs_read:mod:ext4"} {
		if _, err := New(fs, Options{Patterns: compiled(t, p)}); err == nil {
			t.Errorf("%s: counted without the index", p)
		}
	}
	if _, err := New(fs, Options{Patterns: compiled(t, "vfs_read"), Method: Stream}); err == nil {
		t.Error("--method stream: counted without the index")
	}
	fs.DryRun = new(strings.Builder)
	if _, err := New(fs, Options{Patterns: compiled(t, "vfs_read")}); err == nil {
		t.Error("a dry run: counted without the index")
	}
}

// The function index and kallsyms of the refusal tests: a name kallsyms lists twice (dup_fn)
// and one the kernel refuses a kprobe on (black_fn, as if on the kprobe blacklist).
const (
	index    = "vfs_read\ndup_fn\ndup_fn\nblack_fn\n"
	kallsyms = "ffffffff81000000 T vfs_read\nffffffff81000100 t dup_fn\nffffffff81000200 t dup_fn\nffffffff81000300 T black_fn\n"
)

// A refused probe point of functions taken by name is explained from the index and kallsyms:
// no such traceable function (exit 2), a name several symbols have (the stream counts; with
// --method hist, exit 2), or the kernel's own reason (the stream counts; --method hist: the
// refusal).
func TestArmExplainsRefusalByName(t *testing.T) {
	refuse := func(c *Counter) error {
		if c.Choice.Method == Hist {
			return &ProbeRefusedError{Func: c.Choice.Funcs[0].Name, Err: tracefs.ErrRejected}
		}
		return nil
	}
	for _, tc := range []struct {
		fn       string
		method   Method
		want     Method // the counter armed, "" for an error
		err      error
		fallback bool // told why the stream counts
	}{
		{"no_such_fn", Auto, "", filters.ErrPattern, false},
		{"dup_fn", Auto, Stream, nil, false},
		{"dup_fn", Hist, "", ErrMethod, false},
		{"black_fn", Auto, Stream, nil, true},
		{"black_fn", Hist, "", tracefs.ErrRejected, false},
	} {
		fs := fakeKernel(t, index, kallsyms, true)
		o := Options{Patterns: compiled(t, tc.fn), Method: tc.method}
		first, err := New(fs, o)
		if err != nil {
			t.Fatalf("%s: %v", tc.fn, err)
		}
		if !first.unchecked {
			t.Fatalf("%s: checked at New", tc.fn)
		}
		told := false
		c, err := Arm(first, fs, o, func(*ProbeRefusedError) { told = true }, refuse)
		switch {
		case tc.err != nil && !errors.Is(err, tc.err):
			t.Errorf("%s %q: %v, want %v", tc.fn, tc.method, err, tc.err)
		case tc.err == nil && (err != nil || c.Choice.Method != tc.want):
			t.Errorf("%s %q: %v, %+v", tc.fn, tc.method, err, c)
		case told != tc.fallback:
			t.Errorf("%s %q: fallback told %v", tc.fn, tc.method, told)
		}
		if tc.fn == "dup_fn" && c != nil && !strings.Contains(c.Choice.Why, "2 symbols") {
			t.Errorf("dup_fn: why %q", c.Choice.Why)
		}
		if c != nil {
			c.Close()
		}
	}
}

// Where the kernel has fprobes too, count probes with kprobes (they arm sooner and cost a call
// no more), and an fprobe event counts what a kprobe cannot: a name several symbols share (an
// fprobe takes each) and a function the kernel refuses a kprobe on; the stream counts only
// where the fprobe is refused too.
func TestArmFprobeWhereKprobeRefused(t *testing.T) {
	kprobesRefused := func(c *Counter) error {
		fn := c.Choice.Funcs[0].Name
		if c.Choice.Method == Hist && (c.Choice.Probe == 'p' && fn != "vfs_read" || fn == "no_fprobe_fn") {
			return &ProbeRefusedError{Func: c.Choice.Funcs[0].Name, Err: tracefs.ErrRejected}
		}
		return nil
	}
	for _, tc := range []struct {
		fn       string
		method   Method
		want     Method // the counter armed, "" for an error
		probe    byte
		err      error
		fallback bool // told why the stream counts
		why      string
	}{
		{"vfs_read", Auto, Hist, 'p', nil, false, "one kprobe event"},
		{"dup_fn", Auto, Hist, 'f', nil, false, "dup_fn is 2 symbols in kallsyms: an fprobe takes every function of the name"},
		{"dup_fn", Hist, Hist, 'f', nil, false, "one fprobe event"},
		{"black_fn", Auto, Hist, 'f', nil, false, "the kernel refused a kprobe on black_fn"},
		{"black_fn", Hist, Hist, 'f', nil, false, "one fprobe event"},
		{"no_fprobe_fn", Auto, Stream, 0, nil, true, "the kernel refused a probe on no_fprobe_fn"},
		{"no_fprobe_fn", Hist, "", 0, tracefs.ErrRejected, false, ""},
	} {
		fs := fakeKernel(t, index+"no_fprobe_fn\n", kallsyms+"ffffffff81000400 T no_fprobe_fn\n", true)
		for name, text := range map[string]string{"README": "... hist trigger ...\n\t  f[:[<group>/][<event>]] <func-name>[%return] [<args>]\n", "dynamic_events": ""} {
			if err := os.WriteFile(fs.Path(name), []byte(text), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		o := Options{Patterns: compiled(t, tc.fn), Method: tc.method}
		first, err := New(fs, o)
		if err != nil {
			t.Fatalf("%s: %v", tc.fn, err)
		}
		if first.Choice.Probe != 'p' {
			t.Errorf("%s: first choice %+v, want kprobes", tc.fn, first.Choice)
		}
		told := false
		c, err := Arm(first, fs, o, func(*ProbeRefusedError) { told = true }, kprobesRefused)
		switch {
		case tc.err != nil && !errors.Is(err, tc.err):
			t.Errorf("%s %q: %v, want %v", tc.fn, tc.method, err, tc.err)
		case tc.err == nil && (err != nil || c.Choice.Method != tc.want || c.Choice.Probe != tc.probe || !strings.Contains(c.Choice.Why, tc.why)):
			t.Errorf("%s %q: %v, %+v, want %s %q %q", tc.fn, tc.method, err, c, tc.want, tc.probe, tc.why)
		case told != tc.fallback:
			t.Errorf("%s %q: fallback told %v", tc.fn, tc.method, told)
		}
		if c != nil {
			c.Close()
		}
	}
}
