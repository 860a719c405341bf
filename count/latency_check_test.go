package count

import (
	"errors"
	"path/filepath"
	"testing"

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
