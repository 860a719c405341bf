package cmd

import (
	"os"

	"github.com/ftctl/ftctl/tracefs"
)

// The unit tests' fixtures: a state directory of the test's (FTCTL_STATE_DIR) and BTF
// (FTCTL_BTF), read from the environment in the test binary only (see testHooks).
func init() {
	testHooks = func(fs *tracefs.FS) {
		fs.BTFDir = os.Getenv("FTCTL_BTF")
		fs.StateDir = os.Getenv("FTCTL_STATE_DIR")
	}
}
