package stream

import (
	"os"
	"runtime"
	"runtime/debug"
)

// The Go runtime's settings the engine's readers run best with: one place for the rules that
// ftctl stream, trace, graph and count (reading the stream) and ftctl record follow.

// OneP runs the process with one P (runtime.GOMAXPROCS(1)) unless the GOMAXPROCS environment
// variable says otherwise, and returns what puts the setting back. For a command that reads the
// engine (Copy, CopyGraph, a Counter by the stream) and does little else: the engine decodes
// in one goroutine (which also reads trace_pipe_raw), and trace_pipe's reader and kallsyms'
// loader spend their time in system calls, which need none. A second P brought only the
// scheduler's traffic between them (waking the idle P, preempted goroutines through the global
// queue, the collector's stops), which spins on the scheduler's lock whenever the thread holding
// it is preempted: on a CPU shared with a busy workload that was most of ftctl's time (6.12 in
// the VM under a hot function filter, vm/bench-hot.sh: BENCHMARKS.md, "Under a hot function
// filter"). Not for the console, whose event loop runs beside the reader.
func OneP() (restore func()) {
	if os.Getenv("GOMAXPROCS") != "" {
		return func() {}
	}
	old := runtime.GOMAXPROCS(1)
	return func() { runtime.GOMAXPROCS(old) }
}

// recorderMemoryLimit is the heap past which a recording's collector runs (RecorderGC).
const recorderMemoryLimit = 64 << 20

// RecorderGC sets the collector as a Recorder wants it for the whole recording, and returns
// what puts it back. The recorder decodes nothing and its heap stays small. Paced by the heap's
// growth (GOGC), the collector runs on the megabytes read once (formats, the file's pieces) and
// frees nothing worth its CPU, which under load is taken from the traced workload (the profile
// in BENCHMARKS.md). It runs only past a bound (64 MiB) instead.
func RecorderGC() (restore func()) {
	gc := debug.SetGCPercent(-1)
	limit := debug.SetMemoryLimit(recorderMemoryLimit)
	return func() {
		debug.SetMemoryLimit(limit)
		debug.SetGCPercent(gc)
	}
}
