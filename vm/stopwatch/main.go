// Command stopwatch times shell commands inside the benchmark VM, where busybox's time has
// only 10 ms resolution: stopwatch LABEL 'COMMAND' runs COMMAND with /bin/sh -c and prints
// "BENCH LABEL SECONDS EXIT CPU" with microsecond resolution; CPU is the user+system seconds of
// the shell and every descendant it (or they) waited for, as wait4 reports them; then "start S
// end E", the wall clock in Unix nanoseconds before the start and after the end.
package main

import (
	"fmt"
	"os"
	"os/exec"
	"time"
)

func main() {
	if len(os.Args) != 3 {
		fmt.Fprintln(os.Stderr, "usage: stopwatch LABEL 'COMMAND'")
		os.Exit(2)
	}
	cmd := exec.Command("/bin/sh", "-c", os.Args[2])
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	start := time.Now()
	err := cmd.Run()
	elapsed := time.Since(start)
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		code = -1
	}
	var cpu float64
	if cmd.ProcessState != nil {
		cpu = (cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime()).Seconds()
	}
	fmt.Printf("BENCH %s %.6f %d %.3f start %d end %d\n", os.Args[1], elapsed.Seconds(), code, cpu,
		start.UnixNano(), start.Add(elapsed).UnixNano())
}
