package count

import "github.com/ftctl/ftctl/tracefs"

// CheckLatency says whether this kernel can measure a function's latency in a session (the
// set-up count.LatencySetup describes): hist triggers and synthetic events compute it, and
// fprobes or kprobes see the function's entry and return. Otherwise ErrUnavailable, naming
// the control file missing. ft is the kernel's features (tracefs.FS.DetectFeatures).
func CheckLatency(fs *tracefs.FS, ft tracefs.Features) error {
	switch {
	case !ft.SyntheticEvents || !ft.HistTriggers:
		return &tracefs.Error{Op: "open", Path: fs.Path("synthetic_events"), Class: tracefs.ErrUnavailable,
			Reason: "this kernel has no hist triggers or synthetic events (CONFIG_HIST_TRIGGERS, CONFIG_SYNTH_EVENTS), which latency is computed with"}
	case !ft.Probe.Fprobe && !ft.KprobeEvents:
		return &tracefs.Error{Op: "open", Path: fs.Path("kprobe_events"), Class: tracefs.ErrUnavailable, Reason: "this kernel has neither fprobe nor kprobe events"}
	}
	return nil
}
