package count

import (
	"errors"
	"fmt"
	"strings"

	"github.com/ftctl/ftctl/filters"
	"github.com/ftctl/ftctl/session"
	"github.com/ftctl/ftctl/tracefs"
)

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

// LatencyFprobes says whether a latency set-up on this kernel uses fprobes: only where it has no
// kprobe events. A kprobe and a kretprobe of one function are one probe point to the kernel,
// defined in 0.02 s each, where each of two fprobes is an ftrace_ops of its own defined in
// 0.80 s, and the kprobe pair's chain costs a call 0.96 of the fprobe pair's (6.12 under qemu's
// instruction clock, 2026-11-28, BENCHMARKS.md: 1.5 s of latency's 2.06 s to armed).
func LatencyFprobes(ft tracefs.Features) bool {
	return ft.Probe.Fprobe && !ft.KprobeEvents
}

// ErrLatencyFunc is the kind of CheckLatencyName's and LatencyFuncRefused's errors: FUNC is not
// one function the kernel can probe (cmd/ maps it to invalid input).
var ErrLatencyFunc = errors.New("not a function latency can measure")

// CheckLatencyName checks FUNC's form: one function name, no wildcard (the probes take one
// symbol). Whether the kernel can probe it is left to the probes' definition (LatencyFuncRefused):
// reading available_filter_functions first cost about a second of arming under emulation, the
// kernel formatting 40,000 records (seen 2026-11-27, `cat` of it 0.97 s on 6.12).
func CheckLatencyName(fn string) error {
	if _, err := filters.Compile(fn); err != nil || fn == "" || strings.Trim(fn, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_.") != "" {
		return fmt.Errorf("%w: %q: want one function name (no wildcards)", ErrLatencyFunc, fn)
	}
	return nil
}

// CheckLatencyFunc checks FUNC against the index of traceable functions: what the probes of a
// latency set-up can attach to (kprobe events refuse a function ftrace cannot trace, unless
// the kernel has CONFIG_KPROBE_EVENTS_ON_NOTRACE; fprobes are ftrace's). A dry run, which
// defines nothing, checks this way; a run lets the kernel refuse and asks LatencyFuncRefused.
func CheckLatencyFunc(top *tracefs.Instance, fn string) error {
	if err := CheckLatencyName(fn); err != nil {
		return err
	}
	pat, err := filters.Compile(fn)
	if err != nil {
		return fmt.Errorf("%w: %q: %v", ErrLatencyFunc, fn, err)
	}
	ix, err := filters.LoadIndex(top)
	if err != nil {
		return err
	}
	if len(ix.Resolve(pat)) == 0 {
		return fmt.Errorf("%w: %q is not a traceable function (not in available_filter_functions; 'ftctl functions' lists them)", ErrLatencyFunc, fn)
	}
	return nil
}

// LatencyFuncRefused turns the kernel's refusal of a latency set-up's probe (err, from
// session.Start) into ErrLatencyFunc when FUNC is not in the index of traceable functions (the
// index is read only then); any other error is returned as it is.
func LatencyFuncRefused(top *tracefs.Instance, fn string, err error) error {
	var de *session.DynamicError
	if !errors.As(err, &de) || de.Dynamic.Kind == 's' {
		return err
	}
	if cerr := CheckLatencyFunc(top, fn); errors.Is(cerr, ErrLatencyFunc) {
		return cerr
	}
	return err
}
