package cmd

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"strconv"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/ftctl/ftctl/filters"
	"github.com/ftctl/ftctl/probes"
)

const probeSymsJSON = `One object: "path", "type" ("EXEC" for fixed addresses, "DYN" for a PIE or a shared
library), "go" (a Go binary: return probes refused without --force), "go_version",
"segments" (the PT_LOAD program headers: "index", "vaddr", "offset", "filesz", "flags"), and
"functions", each with "name", "offset" (the file offset a uprobe takes), "size", "vaddr",
"segment" (its PT_LOAD's index) and "dynamic" (exported in .dynsym):

  {"path": "/usr/bin/prog", "type": "EXEC", "go": false, "go_version": "",
   "segments": [{"index": 1, "vaddr": 4198400, "offset": 4096, "filesz": 85, "flags": "r-x"}],
   "functions": [{"name": "ftctl_add", "vaddr": 4198412, "size": 15, "offset": 4108,
   "segment": 1, "dynamic": false}]}`

// ProbeSymsOptions are the inputs of `ftctl probe syms`.
type ProbeSymsOptions struct {
	G    *Globals
	Path string
	Glob string // "" for every function
}

// NewCmdProbeSyms builds `ftctl probe syms`.
func NewCmdProbeSyms(g *Globals, runF func(context.Context, *ProbeSymsOptions) error) *cobra.Command {
	opts := &ProbeSymsOptions{G: g}
	return &cobra.Command{
		Use:   "syms PATH [GLOB]",
		Short: "List the functions of an ELF file a uprobe can take (name, file offset, size)",
		Long: `List the function symbols of an executable or shared library (.symtab and .dynsym) with
the file offset each starts at, the offset uprobe_events takes, and its size: the names
'ftctl probe add p:EVENT PATH:SYMBOL' resolves. GLOB selects names with the kernel's glob
(* ? [...]); one that selects nothing is exit 2, with the closest names. A file that is missing
or not ELF is exit 2. Reads only the file.`,
		Example: `  ftctl probe syms /bin/bash 'readline*'
  ftctl probe syms /usr/lib/x86_64-linux-gnu/libc.so.6 malloc -o json`,
		Args:        args(cobra.RangeArgs(1, 2)),
		Annotations: map[string]string{AnnotationJSON: probeSymsJSON},
		RunE: func(c *cobra.Command, a []string) error {
			opts.Path = a[0]
			if len(a) > 1 {
				opts.Glob = a[1]
			}
			return runCmd(c, runF, probeSymsRun, opts)
		},
	}
}

func probeSymsRun(_ context.Context, opts *ProbeSymsOptions) error {
	g := opts.G
	var pat *filters.Pattern
	if opts.Glob != "" {
		p, err := filters.Compile(opts.Glob)
		if err != nil {
			return InvalidInput(fmt.Errorf("GLOB %q: %w", opts.Glob, err))
		}
		pat = p
	}
	b, err := probes.OpenBinary(opts.Path)
	switch {
	case errors.Is(err, probes.ErrNotELF), errors.Is(err, fs.ErrNotExist):
		return InvalidInput(fmt.Errorf("%s: %w", safe(opts.Path), err))
	case err != nil:
		return err
	}
	funcs := []probes.ELFFunc{}
	for _, f := range b.Funcs {
		if pat == nil || pat.Match(f.Name, "") {
			funcs = append(funcs, f)
		}
	}
	if len(funcs) == 0 && pat != nil {
		return nothingMatched("function symbol of "+safe(opts.Path), opts.Glob, b.Names())
	}
	doc := probeSymsDoc{Path: opts.Path, Type: b.Type, Go: b.Go, GoVersion: b.GoVersion, Segments: nonNilSegments(b.Segments), Functions: funcs}
	if ok, err := g.printDoc(probeSymsFormat, doc); ok {
		return err
	}
	if len(funcs) == 0 {
		what := "no function symbols"
		if pat != nil {
			what = "no function symbol matches " + strconv.Quote(opts.Glob)
		}
		g.Notice("%s: %s", safe(opts.Path), what)
		return nil
	}
	tw := tabwriter.NewWriter(g.Out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "NAME\tOFFSET\tSIZE")
	for _, f := range funcs {
		fmt.Fprintf(tw, "%s\t0x%x\t%d\n", safe(f.Name), f.Offset, f.Size)
	}
	if b.Go {
		g.Notice("%s is a Go binary: return probes on it are refused unless --force (the Go runtime moves stacks)", safe(opts.Path))
	}
	return tw.Flush()
}

func nonNilSegments(s []probes.Segment) []probes.Segment {
	if s == nil {
		return []probes.Segment{}
	}
	return s
}

// uprobeJSON is a uprobe's place in probe add's JSON.
func uprobeJSON(u *probes.UprobePlace) *uprobeDoc {
	out := &uprobeDoc{Path: u.AbsPath, Offset: u.Offset, Go: u.Go}
	if u.Func != nil {
		out.Symbol = u.Func.Name
		out.SymbolOffset = u.Offset - u.Func.Offset
	}
	if u.Segment != nil {
		out.Segment = u.Segment.String()
	}
	return out
}

// noticeUprobe says what a uprobe's place became.
func noticeUprobe(g *Globals, u *probes.UprobePlace) {
	where := ""
	if u.Segment != nil {
		where = " in " + u.Segment.String()
	}
	g.Notice("%s is file offset 0x%x of %s%s", safe(u.String()), u.Offset, safe(u.AbsPath), where)
}
