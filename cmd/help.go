package cmd

import (
	"fmt"
	"slices"
	"strings"

	"github.com/spf13/cobra"
)

// newCmdHelp is `ftctl help [COMMAND...]`: cobra's own prints the root's help and exits 0 for a
// topic that does not exist, so a script's check of a command's help passes on a typo.
func newCmdHelp() *cobra.Command {
	return &cobra.Command{
		Use:   "help [command]",
		Short: "Help about any command",
		Long:  `Help provides help for any command in the application.`,
		ValidArgsFunction: func(c *cobra.Command, a []string, _ string) ([]string, cobra.ShellCompDirective) {
			target, _, err := c.Root().Find(a)
			if target == nil || err != nil {
				target = c.Root()
			}
			var names []string
			for _, sub := range target.Commands() {
				if sub.IsAvailableCommand() {
					names = append(names, sub.Name()+"\t"+sub.Short)
				}
			}
			return names, cobra.ShellCompDirectiveNoFileComp
		},
		RunE: func(c *cobra.Command, a []string) error {
			target, rest, err := c.Root().Find(a)
			if err == nil && target != nil {
				err = unknownIn(target, positional(rest))
			}
			if err != nil || target == nil {
				return InvalidInput(fmt.Errorf("no help topic %q: %w", strings.Join(a, " "), err))
			}
			return target.Help()
		},
	}
}

// unknownWithHelp refuses `ftctl nosuch --help` (and `ftctl filter nosuch -h`), which cobra
// answers with the parent's help and exit 0: an unknown command is invalid input whether or
// not help was asked for. It looks on a command tree of its own, so that parsing flags here
// leaves the one that runs untouched.
func unknownWithHelp(args []string) error {
	end := slices.Index(args, "--")
	if end < 0 {
		end = len(args)
	}
	if !slices.Contains(args[:end], "--help") && !slices.Contains(args[:end], "-h") {
		return nil
	}
	root := NewRootCmd(&Globals{})
	target, rest, err := root.Find(args[:end])
	if err != nil || target == nil {
		return nil // cobra says what is wrong
	}
	target.InitDefaultHelpFlag() // cobra adds -h/--help when it executes
	if err := target.ParseFlags(rest); err != nil {
		return nil // a flag error: cobra reports it as usual
	}
	return unknownIn(target, target.Flags().Args())
}

// unknownIn is the error for words left after the command c was found, when c takes commands
// rather than arguments: the first of them names no command of c.
func unknownIn(c *cobra.Command, words []string) error {
	if len(words) == 0 || !c.HasAvailableSubCommands() {
		return nil
	}
	msg := fmt.Sprintf("unknown command %q for %q", words[0], c.CommandPath())
	if s := c.SuggestionsFor(words[0]); len(s) > 0 {
		msg += fmt.Sprintf("; did you mean %q?", s[0])
	}
	return InvalidInput(fmt.Errorf("%s\nsee '%s --help'", msg, c.CommandPath()))
}

// positional drops flags from what Find left (help takes no flags of its own to give values).
func positional(words []string) []string {
	var out []string
	for _, w := range words {
		if !strings.HasPrefix(w, "-") {
			out = append(out, w)
		}
	}
	return out
}
