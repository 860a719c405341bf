package cmd

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"strings"

	"github.com/spf13/cobra"
)

// ProbeFieldsOptions are the inputs of `ftctl probe fields`.
type ProbeFieldsOptions struct {
	G     *Globals
	Event string // SYSTEM:EVENT (or SYSTEM.EVENT, SYSTEM/EVENT)
}

// NewCmdProbeFields builds `ftctl probe fields`.
func NewCmdProbeFields(g *Globals, runF func(context.Context, *ProbeFieldsOptions) error) *cobra.Command {
	opts := &ProbeFieldsOptions{G: g}
	return &cobra.Command{
		Use:   "fields SYSTEM:EVENT",
		Short: "List an event's fields: what an event probe (e:) fetches as $FIELD and filters on",
		Long: `List the fields of any trace event, from events/SYSTEM/EVENT/format: name, C type, offset and
size. An event probe ('e:GROUP/EVENT SYSTEM.EVENT $FIELD ... if FILTER') fetches these fields
as $FIELD and its filter compares them; the common_* fields every event has are listed in JSON
only (an event probe cannot fetch them). An event the kernel does not have is exit 2. Read only.`,
		Example: `  sudo ftctl probe fields sched:sched_switch
  sudo ftctl probe fields syscalls:sys_enter_openat -o json |
    jq -r '.fields[] | select(.common | not) | .name'`,
		Args:              args(cobra.ExactArgs(1)),
		Annotations:       map[string]string{AnnotationJSON: probeFormatJSON},
		ValidArgsFunction: completeEventNames(g),
		RunE: func(c *cobra.Command, a []string) error {
			opts.Event = a[0]
			return runCmd(c, runF, probeFieldsRun, opts)
		},
	}
}

func probeFieldsRun(_ context.Context, opts *ProbeFieldsOptions) error {
	g := opts.G
	sys, ev, ok := strings.Cut(opts.Event, ":")
	if !ok {
		if sys, ev, ok = strings.Cut(opts.Event, "."); !ok {
			sys, ev, ok = strings.Cut(opts.Event, "/")
		}
	}
	bad := func(s string) bool { return s == "" || strings.ContainsAny(s, "/.:\x00") }
	if !ok || bad(sys) || bad(ev) {
		return InvalidInput(fmt.Errorf("%q: want SYSTEM:EVENT (e.g. sched:sched_switch)", safe(opts.Event)))
	}
	tfs, err := g.FS()
	if err != nil {
		return err
	}
	f, err := tfs.Top().EventFormat(sys, ev)
	if errors.Is(err, fs.ErrNotExist) {
		return InvalidInput(fmt.Errorf("no event %s:%s in this kernel (ftctl list events shows them)", safe(sys), safe(ev)))
	}
	if err != nil {
		return err
	}
	return writeFormat(g, sys, f)
}
