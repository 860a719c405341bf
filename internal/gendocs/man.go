package main

import (
	"cmp"
	"fmt"
	"slices"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/ftctl/ftctl/cmd"
)

// ftctl writes its own roff rather than using cobra/doc: cobra/doc passes the help text through
// a Markdown converter, which reads the kernel's glob syntax in it (*, \, [...]) as emphasis and
// escapes, and it has no place for the sections ftctl(1) needs (exit status, environment,
// files, JSON formats). The pages use only the man(7) macros that groff and mandoc both know.

// manPages renders ftctl.1 and one page per available command, keyed by file name.
// datePlaceholder stands for the date in a rendered page's .TH until render dates it.
const datePlaceholder = "@DATE@"

func manPages(root *cobra.Command, version string) map[string][]byte {
	root.InitDefaultVersionFlag()
	pages := map[string][]byte{}
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		pages[pageName(c)+".1"] = []byte(commandPage(c, version))
		for _, s := range subcommands(c) {
			walk(s)
		}
	}
	walk(root)
	return pages
}

// subcommands are the commands of c that get a page: not hidden, not help, not cobra's
// `completion` (the scripts are installed; ftctl(1) says how to print them).
func subcommands(c *cobra.Command) []*cobra.Command {
	var out []*cobra.Command
	for _, s := range c.Commands() {
		if s.IsAvailableCommand() && !s.IsAdditionalHelpTopicCommand() && s.Name() != "completion" && s.Name() != "help" {
			out = append(out, s)
		}
	}
	return out
}

// pageName is "ftctl-filter-set" for `ftctl filter set`.
func pageName(c *cobra.Command) string {
	return strings.ReplaceAll(c.CommandPath(), " ", "-")
}

// ref is a cross-reference to c's page: ftctl-filter-set(1) in bold.
func ref(c *cobra.Command) string {
	return `\fB` + escape(pageName(c)) + `\fR(1)`
}

// page accumulates roff source.
type page struct {
	b strings.Builder
	// pp says a paragraph break (.PP) is needed before more text: not right after .SH, .SS
	// or .TP, where one would be an empty paragraph.
	pp bool
}

func (p *page) line(s string) { p.b.WriteString(s + "\n") }

func (p *page) section(title string) {
	p.line(".SH " + title)
	p.pp = false
}

func (p *page) subsection(title string) {
	p.line(".SS " + escape(title))
	p.pp = false
}

// item is a tagged paragraph (.TP); tag and body are roff source.
func (p *page) item(tag, body string) {
	p.line(".TP")
	p.line(tag)
	p.line(body)
	p.pp = true
}

// text renders help text: paragraphs separated by blank lines, filled by the formatter;
// indented lines (examples, JSON) as literal displays, dedented and indented four columns.
func (p *page) text(s string) {
	for _, b := range helpBlocks(s) {
		if b.literal {
			p.literal(b.lines)
			continue
		}
		if p.pp {
			p.line(".PP")
		}
		for _, l := range b.lines {
			p.line(inline(l))
		}
		p.pp = true
	}
}

// helpBlock is a paragraph of help text (its lines, trimmed) or a literal block (its indented
// lines as they are).
type helpBlock struct {
	literal bool
	lines   []string
}

// helpBlocks splits help text into paragraphs, separated by blank lines, and literal blocks:
// runs of indented lines (examples, JSON). ftctl(1) and the reference render the same blocks.
func helpBlocks(s string) []helpBlock {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	indented := func(l string) bool { return strings.HasPrefix(l, " ") || strings.HasPrefix(l, "\t") }
	var out []helpBlock
	for i := 0; i < len(lines); {
		switch {
		case strings.TrimSpace(lines[i]) == "":
			i++
		case indented(lines[i]):
			j := i
			for j < len(lines) && indented(lines[j]) {
				j++
			}
			out = append(out, helpBlock{literal: true, lines: lines[i:j]})
			i = j
		default:
			b := helpBlock{}
			for ; i < len(lines) && strings.TrimSpace(lines[i]) != "" && !indented(lines[i]); i++ {
				b.lines = append(b.lines, strings.TrimSpace(lines[i]))
			}
			out = append(out, b)
		}
	}
	return out
}

// literal renders lines as they are, without filling.
func (p *page) literal(lines []string) {
	if p.pp {
		p.line(".PP")
	}
	p.line(".RS 4")
	p.line(".EX")
	for _, l := range dedent(lines) {
		p.line(escape(l))
	}
	p.line(".EE")
	p.line(".RE")
	p.pp = true
}

// dedent removes the indentation the lines share (tabs counted as four spaces) and trailing
// spaces.
func dedent(lines []string) []string {
	indent := -1
	for _, l := range lines {
		l = strings.ReplaceAll(l, "\t", "    ")
		if n := len(l) - len(strings.TrimLeft(l, " ")); indent < 0 || n < indent {
			indent = n
		}
	}
	out := make([]string, len(lines))
	for i, l := range lines {
		out[i] = strings.TrimRight(strings.ReplaceAll(l, "\t", "    ")[indent:], " ")
	}
	return out
}

// escape makes s safe as a roff text line: a leading dot or apostrophe (which would make it a
// control line) is preceded by \&; see escapeChars for the rest.
func escape(s string) string {
	if strings.HasPrefix(s, ".") || strings.HasPrefix(s, "'") {
		return `\&` + escapeChars(s)
	}
	return escapeChars(s)
}

// escapeChars makes s safe within a roff line: backslashes printed as such, '-' as a minus
// sign (so that options copied from the page work), characters outside ASCII as \[uXXXX].
func escapeChars(s string) string {
	var b strings.Builder
	for _, r := range s {
		switch {
		case r == '\\':
			b.WriteString(`\e`)
		case r == '-':
			b.WriteString(`\-`)
		case r >= 0x80:
			fmt.Fprintf(&b, `\[u%04X]`, r)
		default:
			b.WriteRune(r)
		}
	}
	return b.String()
}

// inline escapes the text line s and sets `literal` spans in bold.
func inline(s string) string {
	parts := strings.Split(s, "`")
	if len(parts)%2 == 0 { // an unpaired backquote: print it
		return escape(s)
	}
	var b strings.Builder
	if strings.HasPrefix(s, ".") || strings.HasPrefix(s, "'") {
		b.WriteString(`\&`)
	}
	for i, part := range parts {
		if i%2 == 1 {
			b.WriteString(`\fB` + escapeChars(part) + `\fR`)
		} else {
			b.WriteString(escapeChars(part))
		}
	}
	return b.String()
}

// commandPage renders c's page; the root's is ftctl(1), with the reference sections.
func commandPage(c *cobra.Command, version string) string {
	p := &page{}
	isRoot := !c.HasParent()
	p.line(`.TH "` + strings.ToUpper(escape(pageName(c))) + `" 1 "` + datePlaceholder + `" "ftctl ` + escape(version) + `" "ftctl Manual"`)
	// Left-aligned and unhyphenated: names like available_filter_functions must stay whole.
	p.line(".nh")
	p.line(".ad l")
	p.section("NAME")
	p.line(escape(pageName(c)) + ` \- ` + escape(c.Short))

	p.section("SYNOPSIS")
	p.line(".B " + c.CommandPath())
	p.line(synopsis(c))

	p.section("DESCRIPTION")
	if c.Long != "" {
		p.text(c.Long)
	} else {
		p.text(c.Short + ".")
	}
	if c.HasParent() && c.Parent().HasParent() && c.Parent().Long != "" {
		// The group's page explains what its commands share (patterns, instances...).
		p.line(".PP")
		p.line("See " + ref(c.Parent()) + ".")
	}

	if isRoot {
		p.section("COMMANDS")
		p.text("Each command has its own page: ftctl-filter-set(1) for `ftctl filter set`.")
		var walk func(c *cobra.Command)
		walk = func(c *cobra.Command) {
			for _, s := range subcommands(c) {
				p.item(commandTag(s), escape(s.Short)+".")
				walk(s)
			}
		}
		walk(c)
	} else if subs := subcommands(c); len(subs) > 0 {
		p.section("COMMANDS")
		for _, s := range subs {
			p.item(commandTag(s), escape(s.Short)+". See "+ref(s)+".")
		}
	}

	if local := visibleFlags(c.NonInheritedFlags()); len(local) > 0 {
		p.section("OPTIONS")
		flagItems(p, local)
	}
	if inherited := visibleFlags(c.InheritedFlags()); len(inherited) > 0 {
		p.section("GLOBAL OPTIONS")
		flagItems(p, inherited)
	}

	if isRoot {
		referenceSections(p, c)
	} else if formats := formatsOf(c.Root(), c); len(formats) > 0 {
		p.section("JSON OUTPUT")
		if j := c.Annotations[cmd.AnnotationJSON]; j != "" {
			p.text(j)
		}
		for _, f := range formats {
			if f.text != c.Annotations[cmd.AnnotationJSON] {
				p.text(f.text)
			}
			p.text(f.schemaLine())
		}
	}

	if c.Example != "" {
		p.section("EXAMPLES")
		p.literal(strings.Split(strings.TrimRight(c.Example, "\n"), "\n"))
	}

	if !isRoot {
		exitStatus(p)
	}

	p.section("SEE ALSO")
	var refs []string
	if isRoot {
		for _, s := range subcommands(c) {
			refs = append(refs, ref(s))
		}
	} else {
		refs = append(refs, ref(c.Root()))
		if c.Parent() != c.Root() {
			refs = append(refs, ref(c.Parent()))
		}
		for _, s := range subcommands(c) {
			refs = append(refs, ref(s))
		}
	}
	// The tools a reader of ftctl's pages also uses, or comes from.
	refs = append(refs, `\fBtrace\-cmd\fR(1)`, `\fBperf\-ftrace\fR(1)`, `\fBperf\-probe\fR(1)`)
	p.line(strings.Join(refs, ", "))
	if isRoot {
		p.line(".PP")
		p.line("The kernel's Documentation/trace/ftrace.rst and kprobetrace.rst.")
	}
	return p.b.String()
}

// commandTag is a command's entry in a list: its path in bold and its arguments in italics.
func commandTag(c *cobra.Command) string {
	tag := `\fB` + escape(c.CommandPath()) + `\fR`
	if a := useArgs(c); a != "" {
		tag += ` \fI` + escape(a) + `\fR`
	}
	return tag
}

// useArgs is the arguments part of c.Use ("PATTERN..." of "set PATTERN...").
func useArgs(c *cobra.Command) string {
	_, a, _ := strings.Cut(c.Use, " ")
	return strings.TrimSpace(a)
}

// synopsis is what follows the command path in SYNOPSIS.
func synopsis(c *cobra.Command) string {
	parts := []string{`[\fIoptions\fR]`}
	switch {
	case c.HasAvailableSubCommands() && c.Runnable() && !c.HasParent():
		parts = append(parts, `\fIcommand\fR [\fIarguments\fR]`)
	case c.HasAvailableSubCommands():
		parts = []string{`\fIcommand\fR [\fIoptions\fR] [\fIarguments\fR]`}
	case useArgs(c) != "":
		parts = append(parts, `\fI`+escape(useArgs(c))+`\fR`)
	}
	return strings.Join(parts, " ")
}

// visibleFlags are the flags of fs a page documents, sorted by name.
func visibleFlags(fs *pflag.FlagSet) []*pflag.Flag {
	var out []*pflag.Flag
	fs.VisitAll(func(f *pflag.Flag) {
		if !f.Hidden && f.Deprecated == "" && f.Name != "help" {
			out = append(out, f)
		}
	})
	slices.SortFunc(out, func(a, b *pflag.Flag) int { return strings.Compare(a.Name, b.Name) })
	return out
}

// flagItems lists flags as --help shows them: "-B, --instance NAME", the usage, the default.
func flagItems(p *page, flags []*pflag.Flag) {
	for _, f := range flags {
		varname, usage := pflag.UnquoteUsage(f)
		tag := `\fB\-\-` + escape(f.Name) + `\fR`
		if f.Shorthand != "" && f.ShorthandDeprecated == "" {
			tag = `\fB\-` + escape(f.Shorthand) + `\fR, ` + tag
		}
		if varname != "" {
			tag += ` \fI` + escape(varname) + `\fR`
		}
		if d := defaultText(f); d != "" {
			usage += " (default " + d + ")"
		}
		p.item(tag, escape(usage))
	}
}

// defaultText is a flag's default as --help shows it, or "" when it is the zero value.
func defaultText(f *pflag.Flag) string {
	switch f.Value.Type() {
	case "bool":
		if f.DefValue == "false" {
			return ""
		}
	case "string":
		if f.DefValue == "" {
			return ""
		}
		return fmt.Sprintf("%q", f.DefValue)
	case "duration":
		if f.DefValue == "0s" {
			return ""
		}
	default:
		if f.DefValue == "" || f.DefValue == "0" || f.DefValue == "[]" {
			return ""
		}
	}
	return f.DefValue
}

// referenceSections are the sections of ftctl(1) after OPTIONS.
func referenceSections(p *page, root *cobra.Command) {
	for _, s := range cmd.ManSections {
		p.section(s.Title)
		p.text(s.Text)
	}

	exitStatus(p)

	p.section("ENVIRONMENT")
	for _, e := range cmd.Environment {
		p.item(`\fB`+escape(e.Term)+`\fR`, inline(e.Text))
	}

	p.section("FILES")
	for _, f := range cmd.Files {
		p.item(`\fI`+escape(f.Term)+`\fR`, inline(f.Text))
	}

	// JSON FORMATS: one subsection per format, naming every command that prints it.
	if formats := jsonFormats(root); len(formats) > 0 {
		p.section("JSON FORMATS")
		p.text(jsonIntro)
		for _, f := range formats {
			p.subsection(commandList(f.commands) + " (" + cmp.Or(f.tag, "profile") + ")")
			p.text(f.text)
			p.text(f.schemaLine())
		}
	}
}

// jsonFormat is one JSON format (cmd.JSONFormats) as the documentation shows it: what it is
// for people, its schema tag and file, and the commands that print it.
type jsonFormat struct {
	text     string
	tag      string // "ftctl/NAME/vN"; "" for an exported profile, versioned by its apiVersion
	file     string // docs/json/NAME.schema.json
	records  bool
	commands []*cobra.Command
}

// schemaLine says where the format's JSON Schema is and how its values are tagged.
func (f *jsonFormat) schemaLine() string {
	switch {
	case f.tag == "":
		return "JSON Schema: " + f.file + " (a profile: its apiVersion is its version)."
	case f.records:
		return "JSON Schema: " + f.file + "; each record (one JSON object a line) begins with \"schema\": \"" + f.tag + "\"."
	}
	return "JSON Schema: " + f.file + "; the document begins with \"schema\": \"" + f.tag + "\"."
}

// jsonFormats are the JSON formats with a schema, in the order cmd declares them: what
// ftctl(1)'s JSON FORMATS section and the reference's list.
func jsonFormats(root *cobra.Command) []*jsonFormat {
	var formats []*jsonFormat
	for _, f := range cmd.JSONFormats() {
		if f.Type == nil && f.Name != "profile" {
			continue // a JSON Schema itself (profile schema)
		}
		jf := &jsonFormat{text: about(root, f), tag: f.Tag, file: jsonDir + "/" + f.Name + ".schema.json", records: f.Records}
		for _, path := range f.Commands {
			if c, _, err := root.Find(strings.Fields(path)[1:]); err == nil {
				jf.commands = append(jf.commands, c)
			}
		}
		formats = append(formats, jf)
	}
	return formats
}

// formatsOf are the formats c prints.
func formatsOf(root, c *cobra.Command) []*jsonFormat {
	var out []*jsonFormat
	for _, f := range jsonFormats(root) {
		if slices.Contains(f.commands, c) {
			out = append(out, f)
		}
	}
	return out
}

// exitStatus is the EXIT STATUS section: the one table, cmd.ExitStatuses.
func exitStatus(p *page) {
	p.section("EXIT STATUS")
	for _, s := range cmd.ExitStatuses {
		p.item(fmt.Sprintf(`\fB%d\fR`, s.Code), inline(s.Meaning))
	}
}

// commandList names commands briefly: "ftctl filter add|set, ftctl status".
func commandList(cmds []*cobra.Command) string {
	var out []string
	for i := 0; i < len(cmds); {
		j := i + 1
		for j < len(cmds) && cmds[j].Parent() == cmds[i].Parent() {
			j++
		}
		var names []string
		for _, c := range cmds[i:j] {
			names = append(names, c.Name())
		}
		out = append(out, cmds[i].Parent().CommandPath()+" "+strings.Join(names, "|"))
		i = j
	}
	return strings.Join(out, ", ")
}

// jsonIntro opens the JSON formats of ftctl(1) and of the reference.
const jsonIntro = `With -o json a command prints one JSON document on stdout, or a stream of records, one JSON
object a line (NDJSON). Every document and record begins with "schema": "ftctl/NAME/vN", its
format and version; a document that is a list is {"schema": ..., "items": [...]}. A member may
be added within a version; one removed, renamed or changed in meaning takes a new version. The
JSON Schemas (draft 2020-12) in docs/json, generated from ftctl's Go types, are the reference of
each format; the VM suite validates every -o json output it produces against them.`
