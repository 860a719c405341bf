package cmd

import (
	"bufio"
	"context"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/ftctl/ftctl/filters"
)

// FunctionsOptions are the inputs of `ftctl functions`.
type FunctionsOptions struct {
	G        *Globals
	Patterns PatternArgs
	Count    bool // --count: only how many
}

// NewCmdFunctions builds `ftctl functions`: the pattern preview.
func NewCmdFunctions(g *Globals, runF func(context.Context, *FunctionsOptions) error) *cobra.Command {
	opts := &FunctionsOptions{G: g}
	c := &cobra.Command{
		Use:   "functions [PATTERN...]",
		Short: "List traceable functions matching patterns: what a filter would select",
		Long: `List the traceable functions (available_filter_functions) that the patterns select, with
their module and index (the line number the kernel accepts in place of the name). Without
patterns, all of them. Patterns have the kernel's exact semantics (see 'ftctl filter --help'):
this is precisely the set 'ftctl filter set PATTERN...' would apply. A name shared by several
static functions is listed once per record.`,
		Example: `  sudo ftctl functions 'vfs_*'
  sudo ftctl functions --count '*sched*'
  sudo ftctl functions '*:mod:ext4' -o json`,
		Annotations: map[string]string{AnnotationJSON: `An array with one object per record, in index order:

  [{"name": "vfs_read", "module": "", "index": 13930}]

module is empty for the core kernel; index is the line of available_filter_functions. With
--count: {"count": 42}.`},
		ValidArgsFunction: completeFunctionNames(g),
		RunE: func(c *cobra.Command, a []string) error {
			opts.Patterns.Args = a
			return runCmd(c, runF, functionsRun, opts)
		},
	}
	opts.Patterns.register(c)
	c.Flags().BoolVar(&opts.Count, "count", false, "print only how many functions match")
	return c
}

func functionsRun(_ context.Context, opts *FunctionsOptions) error {
	g := opts.G
	pats, err := opts.Patterns.compile(g.In)
	if err != nil {
		return err
	}
	fs, err := g.FS()
	if err != nil {
		return err
	}
	ix, err := filters.LoadIndex(fs.Top())
	if err != nil {
		return err
	}
	var recs []int
	if len(pats) == 0 {
		for i := 1; i <= ix.Len(); i++ {
			if ix.Valid(i) {
				recs = append(recs, i)
			}
		}
	} else if recs, err = ix.ResolveAll(pats); err != nil {
		return err
	}
	if opts.Count {
		if ok, err := g.printDoc(functionCountFormat, functionCountDoc{len(recs)}); ok {
			return err
		}
		fmt.Fprintln(g.Out, len(recs))
		return nil
	}
	if ok, err := g.printDoc(functionsFormat, functionDocs(ix, recs)); ok {
		return err
	}
	w := bufio.NewWriterSize(g.Out, 64*1024)
	for _, i := range recs {
		k := ix.Key(i)
		var err error
		if k.Module != "" {
			_, err = fmt.Fprintf(w, "%7d  %s [%s]\n", i, safe(k.Name), safe(k.Module))
		} else {
			_, err = fmt.Fprintf(w, "%7d  %s\n", i, safe(k.Name))
		}
		if err != nil {
			return err // EPIPE from | head: Run ends quietly
		}
	}
	return w.Flush()
}

// functionDocs are the records recs (1-based indexes of ix) as functions -o json lists them.
func functionDocs(ix *filters.Index, recs []int) []functionDoc {
	out := make([]functionDoc, 0, len(recs))
	for _, i := range recs {
		k := ix.Key(i)
		out = append(out, functionDoc{Name: k.Name, Module: k.Module, Index: i})
	}
	return out
}
