package cmd

import (
	"context"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"github.com/ftctl/ftctl/tracefs"
)

// safe escapes control characters and invalid UTF-8 in text that came from the kernel or from
// other users (instance names, probe definitions, process names) before it reaches a terminal.
func safe(s string) string {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c == 0x7f || c >= 0x80 {
			q := strconv.QuoteToGraphic(s)
			return q[1 : len(q)-1]
		}
	}
	return s
}

// kv prints aligned "key  value" lines.
type kv struct {
	w      io.Writer
	indent string
	width  int
}

func (k kv) line(key, format string, args ...any) {
	fmt.Fprintf(k.w, "%s%-*s %s\n", k.indent, k.width, key, fmt.Sprintf(format, args...))
}

// wrapWords joins words into lines no wider than width, each after the first indented.
func wrapWords(words []string, width int, indent string) string {
	var b strings.Builder
	col := 0
	for i, w := range words {
		if i > 0 {
			if col+1+len(w) > width {
				b.WriteString("\n" + indent)
				col = 0
			} else {
				b.WriteString(" ")
				col++
			}
		}
		b.WriteString(w)
		col += len(w)
	}
	return b.String()
}

// args wraps a cobra argument validator so that its complaint is invalid input (exit 2).
func args(v cobra.PositionalArgs) cobra.PositionalArgs {
	return func(c *cobra.Command, a []string) error {
		if err := v(c, a); err != nil {
			return InvalidInput(fmt.Errorf("%w\nsee '%s --help'", err, c.CommandPath()))
		}
		return nil
	}
}

// plural is "1 function", "2 functions".
func plural(n int, word string) string {
	if n == 1 {
		return fmt.Sprintf("%d %s", n, word)
	}
	return fmt.Sprintf("%d %ss", n, word)
}

// runCmd is the end of every leaf command's RunE: the command's run function with the parsed
// options, or runF instead when a test gave one (it captures the options). Every leaf command
// has this shape: an options struct, NewCmdX(g, runF), xRun(ctx, opts).
func runCmd[O any](c *cobra.Command, runF, xRun func(context.Context, *O) error, opts *O) error {
	if runF != nil {
		return runF(c.Context(), opts)
	}
	return xRun(c.Context(), opts)
}

// terminal returns the file behind x (a reader or writer of the command's IO) when it is a
// terminal: the one check of "is this a terminal" in ftctl (tracefs.IsTerminal asks the tty
// driver, so /dev/null, pipes and files are not).
func terminal(x any) (*os.File, bool) {
	f, ok := x.(*os.File)
	return f, ok && tracefs.IsTerminal(f)
}

// isTerminal says whether x is a terminal.
func isTerminal(x any) bool {
	_, ok := terminal(x)
	return ok
}

// colorModes are the values of --color.
var colorModes = []string{"auto", "always", "never"}

// colorFor says whether text written to w may be coloured, as --color says (colorWanted).
func (g *Globals) colorFor(w io.Writer) bool {
	return colorWanted(g.Color, os.Getenv, isTerminal(w))
}

// colorWanted is ftctl's colour rule: always and never are obeyed; auto (or "") colours only a
// terminal, when NO_COLOR is unset or empty (no-color.org: any other value, "0" too, turns
// colour off) and TERM is not "dumb".
func colorWanted(mode string, getenv func(string) string, terminal bool) bool {
	switch mode {
	case "always":
		return true
	case "never":
		return false
	}
	return terminal && getenv("NO_COLOR") == "" && getenv("TERM") != "dumb"
}
