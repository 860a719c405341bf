// Package count counts calls per kernel function (funccount) for `ftctl count` and the
// console's Top view. It chooses how (Choose: pure), sets the counting up in a session of
// ftctl's own (Counter), reads the counts, and tells the caller how many calls each function
// had since the last reading (Delta: pure).
//
// Two methods, cheapest first:
//
//   - Hist: one probe event in the session's group with one probe point per function (kprobes
//     where the kernel has kprobe events: an event takes several points from Linux 5.7; fprobes
//     where it has none, for a name several functions share, which an fprobe takes on each, and
//     for a function the kernel refuses a kprobe on), and one hist trigger on it keyed by
//     __probe_ip.sym in the session's instance. The
//     trigger alone arms the event (soft-enabled: nothing is written to the ring buffer), and
//     the kernel counts: nothing is streamed. Each point is one registration, so this is for a
//     small set of functions (MaxProbed).
//   - Stream: the function tracer on the functions in the session's instance, its events read
//     through stream.Open and counted as they are decoded. Any number of functions, one write of
//     the filter by index; every call is an event through the ring buffer.
//
// A third, Event (NewEvent), counts any event's hits per key with a hist trigger (ftctl
// hist's table), for the console's Top view.
//
// The kernel's function profiler (function_profile_enabled, CONFIG_FUNCTION_PROFILER) is not
// used: Debian's kernels lack it, and where it exists it is one profile for the whole kernel
// (no instances: another user's profile would be reset) over every function.
//
// The events of the kernel's own ftrace:function have no trigger file (seen on 6.1 and 6.12:
// events/ftrace/function holds format, hist and id), so no hist can count the function tracer's
// calls in the kernel.
package count

import (
	"errors"
	"fmt"
	"strings"

	"github.com/ftctl/ftctl/filters"
	"github.com/ftctl/ftctl/tracefs"
)

// Method is how a Counter counts.
type Method string

// The methods; "" (Auto) lets Choose decide.
const (
	Auto   Method = ""
	Hist   Method = "hist"   // probe points and a hist trigger: counted in the kernel
	Stream Method = "stream" // the function tracer, its events counted as they are read
)

// MaxProbed is the largest set of functions Choose counts with probe points: each point is a
// registration of its own (40 kprobe points on vfs_* were defined within one second under
// qemu's TCG, 6.12, timed with busybox date at 1 s resolution). Past it, one filter write by
// index and the stream.
const MaxProbed = 64

// ErrMethod marks a method refused for the set of functions (or an unknown one) before
// anything was written; a method the kernel cannot do is tracefs.ErrUnavailable.
var ErrMethod = errors.New("invalid counting method")

// Kernel is what Choose needs to know of the running kernel.
type Kernel struct {
	HistTriggers   bool // events/.../trigger and the README's "hist trigger"
	Fprobe         bool // the README announces f[:[<group>/][<event>]]
	Kprobe         bool // kprobe_events
	FunctionTracer bool
	Profiler       bool // function_profile_enabled exists (never used: see the package comment)
	// SymbolCount is how many kallsyms symbols have the name (in module mod): the kernel
	// refuses a probe on a name that is not unique. -1: cannot tell.
	SymbolCount func(mod, name string) int
}

// Choice is what Choose decided, and why, in words for people (verbose, JSON).
type Choice struct {
	Method Method
	Why    string
	Probe  byte // Hist: 'f' (fprobe) or 'p' (kprobe)
	Funcs  []filters.Key
}

// Choose picks the method for funcs (the functions the patterns selected, at least one):
// want when it is not Auto and the kernel can, else the cheapest the kernel allows. Hist
// probes with kprobes where the kernel has kprobe events: a kprobe point is defined in about
// 0.02 s where an fprobe event is an ftrace_ops of its own defined in 0.8 s, and a call costs
// the same (6.12 under qemu's instruction clock, 2026-11-28, BENCHMARKS.md: armed 0.34 s
// after its start against 1.07 s, workload time 1.00 of the fprobe's).
func Choose(funcs []filters.Key, want Method, k Kernel) (Choice, error) {
	c := Choice{Funcs: funcs}
	profiler := profilerWhy(k)
	// probe chooses Hist, or says why not: the kernel lacks something (tracefs.ErrUnavailable)
	// or the set cannot be probed (ErrMethod).
	probe := func() error {
		switch {
		case !k.HistTriggers:
			return fmt.Errorf("%w: this kernel has no hist triggers (CONFIG_HIST_TRIGGERS)", tracefs.ErrUnavailable)
		case !k.Fprobe && !k.Kprobe:
			return fmt.Errorf("%w: this kernel has neither fprobe nor kprobe events", tracefs.ErrUnavailable)
		}
		shared := ""
		for _, f := range funcs {
			if n := k.SymbolCount(f.Module, f.Name); n > 1 {
				shared = fmt.Sprintf("%s is %d symbols in kallsyms", f, n)
				break
			}
		}
		switch {
		case k.Kprobe && shared == "":
			c.Method, c.Probe = Hist, 'p'
			c.Why = histWhy('p', "", profiler)
		case k.Fprobe:
			// an fprobe takes a name several functions share, on each of them
			because := ""
			if shared != "" {
				because = shared + ": an fprobe takes every function of the name"
			}
			c.Method, c.Probe = Hist, 'f'
			c.Why = histWhy('f', because, profiler)
		default:
			return fmt.Errorf("%w: %s: the kernel refuses a probe on a name that is not unique", ErrMethod, shared)
		}
		return nil
	}
	stream := func(because string) error {
		if !k.FunctionTracer {
			return fmt.Errorf("%w: this kernel has no function tracer (and %s)", tracefs.ErrUnavailable, because)
		}
		c.Method = Stream
		c.Why = streamWhy(because, profiler)
		return nil
	}
	switch want {
	case Hist:
		return c, probe()
	case Stream:
		return c, stream("asked for (--method stream)")
	case Auto:
	default:
		return c, fmt.Errorf("%w: %q: want hist or stream", ErrMethod, string(want))
	}
	if len(funcs) > MaxProbed {
		return c, stream(fmt.Sprintf("%s, more than %d to probe one by one", plural(len(funcs), "function"), MaxProbed))
	}
	if err := probe(); err != nil {
		why := err.Error()
		for _, e := range []error{ErrMethod, tracefs.ErrUnavailable} {
			why = strings.TrimPrefix(why, e.Error()+": ")
		}
		return c, stream(why)
	}
	return c, nil
}

// histWhy is Hist's reason, in words for people: probe kind 'p' or 'f', and why fprobes where
// the kernel has kprobes too ("" where it has none).
func histWhy(kind byte, because, profiler string) string {
	what := "kprobe"
	if kind == 'f' {
		what = "fprobe"
	}
	if because != "" {
		because = " (" + because + ")"
	}
	return fmt.Sprintf("one %s event with a point per function and a hist trigger on it, counted in the kernel (nothing streamed)%s; %s",
		what, because, profiler)
}

// fprobeInstead is choice (Hist on kprobes) on an fprobe event instead, because the kernel
// refused a kprobe point (a function on the kprobe blacklist, a name several symbols share):
// an fprobe is ftrace's, and takes what ftrace can trace. ok is false where k has no fprobes
// or choice is not on kprobes.
func fprobeInstead(choice Choice, k Kernel, because string) (Choice, bool) {
	if choice.Method != Hist || choice.Probe != 'p' || !k.Fprobe {
		return choice, false
	}
	choice.Probe = 'f'
	choice.Why = histWhy('f', because, profilerWhy(k))
	return choice, true
}

// profilerWhy says why the kernel's function profiler does not count.
func profilerWhy(k Kernel) string {
	if k.Profiler {
		return "the kernel's function profiler is not used (one profile for the whole kernel, over every function)"
	}
	return "the kernel's function profiler is absent (CONFIG_FUNCTION_PROFILER)"
}

// streamWhy is Stream's reason, in words for people.
func streamWhy(because, profiler string) string {
	return "the function tracer on them in ftctl's instance, every call an event read and counted (" + because + "); " + profiler
}

func plural(n int, word string) string {
	if n == 1 {
		return "1 " + word
	}
	return fmt.Sprintf("%d %ss", n, word)
}
