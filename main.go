// Command ftctl is a safe command-line and terminal-UI control plane for Linux ftrace.
package main

import (
	"os"

	"github.com/ftctl/ftctl/cmd"
)

func main() {
	os.Exit(cmd.Main())
}
