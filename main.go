// Command ftctl is a safe command-line and terminal-UI control plane for Linux ftrace.
package main

import (
	"os"

	"github.com/ftctl/ftctl/cmd"
)

// profStop ends a CPU profile (builds with the profile tag, main_prof.go).
var profStop = func() {}

func main() {
	code := cmd.Main()
	profStop()
	os.Exit(code)
}
