package tracefs

import "strings"

// A trace array's settings by what they are, not by file: the front ends (cmd/, tui/) read and
// write them through these and name no control file (a test in internal/archtest says so).

// TracingOn reads tracing_on: whether the trace array's ring buffer records.
func (i *Instance) TracingOn() (bool, error) {
	b, err := i.ReadFile("tracing_on")
	if err != nil {
		return false, err
	}
	return strings.TrimSpace(string(b)) == "1", nil
}

// SetTracingOn writes tracing_on: the ring buffer records, or stops recording (what it holds
// stays readable).
func (i *Instance) SetTracingOn(on bool) error {
	v := "0"
	if on {
		v = "1"
	}
	return i.Write("tracing_on", v)
}

// SetTracer writes current_tracer. The kernel runs a function tracer over whatever the
// function filter holds: the caller refuses an empty filter first (it traces every function).
func (i *Instance) SetTracer(name string) error { return i.Write("current_tracer", name) }

// BufferSizeKB reads buffer_size_kb: the per-CPU size in KiB tracing uses, and whether it is
// allocated (BufferSize). ok is false when the file cannot be read or the CPUs' sizes differ.
func (i *Instance) BufferSizeKB() (kb int, allocated, ok bool) {
	b, err := i.ReadFile("buffer_size_kb")
	if err != nil {
		return 0, false, false
	}
	return BufferSize(string(b))
}

// Clocks lists the trace clocks the trace array offers, in trace_clock's order (the current
// one, bracketed there, is TraceClock).
func (i *Instance) Clocks() ([]string, error) {
	b, err := i.ReadFile("trace_clock")
	if err != nil {
		return nil, err
	}
	return ParseClocks(string(b)), nil
}

// ParseClocks reads trace_clock's text ("[local] global counter ..."): every clock, the
// current one's brackets removed.
func ParseClocks(text string) []string {
	return strings.Fields(strings.NewReplacer("[", "", "]", "").Replace(text))
}
