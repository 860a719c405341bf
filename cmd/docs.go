package cmd

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
// FTCTL_TIMING in applyChanges, FTCTL_ACTIVE_HELP in cobra's completion.
var Environment = []DocItem{
	{"FTCTL_TRACEFS", "The tracing directory to use when `--tracefs` is not given, instead of " +
		"looking for tracefs in /proc/self/mountinfo."},
	{"FTCTL_KALLSYMS", "A copy of /proc/kallsyms to name code addresses by in the stream's binary " +
		"reader, instead of the running kernel's own (e.g. the host's, from a container that cannot read it)."},
	{"FTCTL_TIMING", "When not empty, filter commands print how long each phase took (reading " +
		"the index and the list, planning, writing, verifying) on stderr."},
	{"FTCTL_ACTIVE_HELP", "Set to 0 to hide the notes that shell completion prints below the " +
		"choices, such as how many of the matching function names it shows " +
		"(COBRA_ACTIVE_HELP=0 does the same for every cobra program)."},
}

// Files lists the files ftctl uses besides tracefs's control files.
var Files = []DocItem{
	{"/sys/kernel/tracing", "Where tracefs is usually mounted; `ftctl mount` mounts it there."},
	{"/sys/kernel/debug/tracing", "tracefs automounted under debugfs; used when it is the only " +
		"tracefs mount (or debugfs's tracing directory, on kernels older than 4.1)."},
	{"/proc/self/mountinfo", "Searched for tracefs unless `--tracefs` or FTCTL_TRACEFS names " +
		"the directory."},
	{"/proc/locks", "Names the process holding the ftctl lock, an flock on the tracefs root " +
		"directory, when a writer has to wait for it."},
	{"/proc/modules", "Compared before a filter is written: a module loaded or unloaded since the " +
		"function index was read makes ftctl plan again."},
	{"/sys/kernel/security/lockdown", "The lockdown level, to explain an EPERM from tracefs."},
	{"/proc/kallsyms", "The kernel's symbols, by which the binary reader of the stream prints code " +
		"addresses (FTCTL_KALLSYMS names another copy)."},
	{"/proc/self/task", "ftctl's own threads, whose events the stream leaves out."},
}
