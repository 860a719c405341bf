package cmd

import "github.com/ftctl/ftctl/tracefs"

// Reference text that belongs to no single command. `make docs` renders it, with the command
// tree and ExitStatuses, into man/ftctl.1 (internal/gendocs). Each entry must stay true to the
// code it describes, which it names.

// DocItem is a term and its explanation: one entry of a tagged list in ftctl(1). Text in
// backquotes is rendered as literal (bold) text.
type DocItem struct {
	Term, Text string
}

// DocSection is a titled section of ftctl(1).
type DocSection struct {
	Title string // upper case, as man pages title sections
	Text  string // paragraphs separated by blank lines; indented lines are kept as they are
}

// ManSections are the sections of ftctl(1) between OPTIONS and EXIT STATUS. The text is shared
// with the commands' help, so that the two cannot drift.
var ManSections = []DocSection{
	{"PATTERNS", patternHelp},
	{"FILTER SWAP PROTOCOL", swapProtocolHelp},
	{"SHELL COMPLETION", completionHelp},
}

// AnnotationJSON is the cobra annotation holding a command's JSON output format (-o json), for
// its man page and the JSON FORMATS section of ftctl(1). Commands with the same text are listed
// together there.
const AnnotationJSON = "ftctl/json"

// Environment lists the environment variables ftctl reads: FTCTL_TRACEFS and FTCTL_KALLSYMS in Globals.FS,
// FTCTL_TIMING in applyChanges and recordTimer, FTCTL_ACTIVE_HELP in cobra's completion, NO_COLOR
// and TERM in colorWanted (and the console's colorProfile).
var Environment = []DocItem{
	{"FTCTL_TRACEFS", "The tracing directory to use when `--tracefs` is not given, instead of " +
		"looking for tracefs in " + tracefs.MountInfoPath + "."},
	{"FTCTL_KALLSYMS", "A copy of " + tracefs.KallsymsPath + " to name code addresses by in the stream's binary " +
		"reader, instead of the running kernel's own (e.g. the host's, from a container that cannot read it)."},
	{"FTCTL_TIMING", "When not empty, filter commands print how long each phase took (reading " +
		"the index and the list, planning, writing, verifying) on stderr, and record prints the wall " +
		"and CPU time of each of its phases (set-up, the formats, kallsyms, the moving of pages, " +
		"the file's assembly)."},
	{"NO_COLOR", "When set to anything but the empty string (no-color.org), no colour with " +
		"`--color auto`, the default; `--color always` colours all the same."},
	{"TERM", "`dumb` turns colour off with `--color auto`, as NO_COLOR does. The console " +
		"draws as many colours as TERM and COLORTERM announce; it never asks the terminal."},
	{"FTCTL_ACTIVE_HELP", "Set to 0 to hide the notes that shell completion prints below the " +
		"choices, such as how many of the matching function names it shows " +
		"(COBRA_ACTIVE_HELP=0 does the same for every cobra program)."},
}

// Files lists the files ftctl uses besides tracefs's control files (tracefs knows them).
var Files = func() []DocItem {
	var out []DocItem
	for _, f := range tracefs.KernelFiles {
		out = append(out, DocItem{f.Path, f.Use})
	}
	return out
}()
