package cmd

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/coreos/go-systemd/v22/unit"
)

// TestSystemdUnits: every systemd unit in packaging/ parses (go-systemd's unit reader), names
// man pages that exist, and runs ftctl commands that exist with flags they take: each Exec*
// line of /usr/bin/ftctl, its specifiers (%i, %b) filled in and its $VARIABLES left out,
// parses as the command line it is, with its arguments.
func TestSystemdUnits(t *testing.T) {
	units, _ := filepath.Glob("../packaging/*.service")
	if len(units) == 0 {
		t.Fatal("no unit in packaging/")
	}
	man := regexp.MustCompile(`^man:([a-z0-9-]+)\(([0-9])\)$`)
	for _, u := range units {
		f, err := os.Open(u)
		if err != nil {
			t.Fatal(err)
		}
		opts, err := unit.DeserializeOptions(f)
		f.Close()
		if err != nil {
			t.Errorf("%s: %v", u, err)
			continue
		}
		execs := 0
		for _, o := range opts {
			switch {
			case o.Section == "Unit" && o.Name == "Documentation":
				for _, d := range strings.Fields(o.Value) {
					m := man.FindStringSubmatch(d)
					if m == nil {
						continue
					}
					if _, err := os.Stat(filepath.Join("../man", m[1]+"."+m[2])); err != nil {
						t.Errorf("%s: Documentation=%s: %v", u, d, err)
					}
				}
			case o.Section == "Service" && strings.HasPrefix(o.Name, "Exec"):
				fields := strings.Fields(strings.ReplaceAll(o.Value, "\\\n", " ")) // a continued line, joined as systemd does
				if len(fields) == 0 || fields[0] != "/usr/bin/ftctl" {
					continue
				}
				execs++
				var args []string
				for _, a := range fields[1:] {
					if strings.HasPrefix(a, "$") {
						continue // an environment file's: may be empty
					}
					args = append(args, strings.NewReplacer("%i", "box", "%b", "0123abcd", "%%", "%").Replace(a))
				}
				root := NewRootCmd(&Globals{})
				c, rest, err := root.Find(args)
				if err == nil && c == root {
					err = os.ErrNotExist
				}
				if err == nil {
					err = c.ParseFlags(rest)
				}
				if err == nil {
					err = c.ValidateArgs(c.Flags().Args())
				}
				if err != nil {
					t.Errorf("%s: %s=%s: %v", u, o.Name, o.Value, err)
				}
			}
		}
		if execs == 0 {
			t.Errorf("%s: runs no /usr/bin/ftctl", u)
		}
	}
}
