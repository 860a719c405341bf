//go:build profile

package main

import (
	"fmt"
	"os"
	"runtime"
	"runtime/pprof"

	"github.com/ftctl/ftctl/session"
)

// With the profile build tag (go build -tags profile), FTCTL_CPUPROFILE=FILE writes a CPU
// profile of the whole run to FILE, and FTCTL_MEMPROFILE=FILE the allocations made (every
// allocation sampled): how BENCHMARKS.md's in-VM profiles were taken. Release builds have no
// such switch. The gate (`ftctl __exec`, the process that execs a traced command) profiles
// nothing: a CPU profile's interval timer (ITIMER_PROF) survives exec, and the command, its
// SIGPROF at the default action, would die of the first tick; its profile would also replace
// the traced run's.
func init() {
	if len(os.Args) > 1 && os.Args[1] == session.GateArg {
		return
	}
	if path := os.Getenv("FTCTL_MEMPROFILE"); path != "" {
		runtime.MemProfileRate = 1
		profStop = func() { writeAllocs(path) }
	}
	path := os.Getenv("FTCTL_CPUPROFILE")
	if path == "" {
		return
	}
	f, err := os.Create(path)
	if err == nil {
		err = pprof.StartCPUProfile(f)
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "ftctl: FTCTL_CPUPROFILE: %v\n", err)
		return
	}
	allocs := profStop
	profStop = func() { pprof.StopCPUProfile(); f.Close(); allocs() }
}

func writeAllocs(path string) {
	f, err := os.Create(path)
	if err == nil {
		err = pprof.Lookup("allocs").WriteTo(f, 0)
		f.Close()
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "ftctl: FTCTL_MEMPROFILE: %v\n", err)
	}
}
