package cmd

import (
	"context"
	"fmt"
	"runtime"
	"runtime/debug"

	"github.com/spf13/cobra"
)

// buildVersion, buildCommit and buildDate are set at build time by make (and the packages):
//
//	go build -ldflags "-X github.com/ftctl/ftctl/cmd.buildVersion=1.2.3 ..."
//
// Left empty (go install, go build), they come from the module and VCS stamps Go records.
var (
	buildVersion string
	buildCommit  string
	buildDate    string
)

// VersionInfo is what `ftctl version -o json` prints.
type VersionInfo struct {
	Version  string `json:"version"`
	Commit   string `json:"commit"`   // "" when unknown; "+dirty" when built from a modified tree
	Date     string `json:"date"`     // RFC 3339, the commit's time when the build did not set it
	Go       string `json:"go"`       // the Go release that built it
	Platform string `json:"platform"` // GOOS/GOARCH
}

// Version describes this binary.
func Version() VersionInfo {
	v := VersionInfo{Version: buildVersion, Commit: buildCommit, Date: buildDate, Go: runtime.Version(),
		Platform: runtime.GOOS + "/" + runtime.GOARCH}
	bi, ok := debug.ReadBuildInfo()
	if ok && v.Version == "" && bi.Main.Version != "" {
		v.Version = bi.Main.Version
	}
	if v.Version == "" {
		v.Version = "(devel)"
	}
	if ok && v.Commit == "" {
		var dirty bool
		for _, s := range bi.Settings {
			switch s.Key {
			case "vcs.revision":
				v.Commit = s.Value
			case "vcs.time":
				if v.Date == "" {
					v.Date = s.Value
				}
			case "vcs.modified":
				dirty = s.Value == "true"
			}
		}
		if dirty && v.Commit != "" {
			v.Commit += "+dirty"
		}
	}
	return v
}

func (v VersionInfo) String() string {
	unknown := func(s string) string {
		if s == "" {
			return "unknown"
		}
		return s
	}
	return fmt.Sprintf("ftctl %s\ncommit %s\nbuilt %s\n%s %s\n", v.Version, unknown(v.Commit), unknown(v.Date), v.Go, v.Platform)
}

// VersionOptions are the inputs of `ftctl version`.
type VersionOptions struct {
	G *Globals
}

// NewCmdVersion builds `ftctl version` (also `ftctl --version`).
func NewCmdVersion(g *Globals, runF func(context.Context, *VersionOptions) error) *cobra.Command {
	opts := &VersionOptions{G: g}
	return &cobra.Command{
		Use:   "version",
		Short: "Show ftctl's version, commit, build date and Go release",
		Long: `Show the version of this ftctl binary, the commit and date it was built from, and the Go
release and platform that built it. The same as 'ftctl --version'. It reads nothing of the kernel.`,
		Example: `  ftctl version
  ftctl version -o json`,
		Args:        args(cobra.NoArgs),
		Annotations: map[string]string{AnnotationJSON: `One object: {"version": "1.2.3", "commit": "0123abcd...", "date": "2026-11-25T09:00:00Z", "go": "go1.26.8", "platform": "linux/amd64"}`},
		RunE: func(c *cobra.Command, _ []string) error {
			return runCmd(c, runF, versionRun, opts)
		},
	}
}

func versionRun(_ context.Context, opts *VersionOptions) error {
	v := Version()
	if ok, err := opts.G.printDoc(versionFormat, v); ok {
		return err
	}
	_, err := fmt.Fprint(opts.G.Out, v.String())
	return err
}
