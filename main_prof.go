//go:build profile

package main

import (
	"fmt"
	"os"
	"runtime/pprof"
)

// With the profile build tag (go build -tags profile), FTCTL_CPUPROFILE=FILE writes a CPU
// profile of the whole run to FILE: how BENCHMARKS.md's in-VM profiles were taken. Release
// builds have no such switch.
func init() {
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
	profStop = func() { pprof.StopCPUProfile(); f.Close() }
}
