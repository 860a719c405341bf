// Command stopwatch times shell commands inside the benchmark VM, where busybox's time has
// only 10 ms resolution: stopwatch LABEL 'COMMAND' runs COMMAND with /bin/sh -c and prints
// "BENCH LABEL SECONDS EXIT" with microsecond resolution.
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
	fmt.Printf("BENCH %s %.6f %d\n", os.Args[1], elapsed.Seconds(), code)
}
