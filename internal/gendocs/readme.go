package main

import (
	"bytes"
	"cmp"
	"fmt"
	"strings"
	"unicode"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/ftctl/ftctl/cmd"
)

// The generated parts of the Markdown documents: README.md's exit-code table, and the
// reference's global flags, exit codes, environment, files and JSON formats. Each sits between
// two HTML comment lines (invisible once rendered) that name it and its source; the rest of
// the document is written by hand and left as it is.

// section is one generated part of a Markdown document.
type section struct {
	name   string                           // "exit codes": what the marker lines name
	source string                           // where it comes from, for the reader of the Markdown
	body   func(root *cobra.Command) string // the Markdown between the markers
}

// begin is the marker line before the section.
func (s section) begin() string {
	return "<!-- " + s.name + ": generated from " + s.source + " by make docs -->\n"
}

// end is the marker line after the section.
func (s section) end() string { return "<!-- end of the generated " + s.name + " -->\n" }

var (
	exitCodesSection = section{"exit codes", "cmd.ExitStatuses (cmd/exit.go)",
		func(*cobra.Command) string { return exitCodesMarkdown() }}
	globalFlagsSection = section{"global flags", "the root command's persistent flags (cmd/root.go)",
		globalFlagsMarkdown}
	environmentSection = section{"environment", "cmd.Environment (cmd/docs.go)",
		func(*cobra.Command) string { return itemsMarkdown(cmd.Environment) }}
	filesSection = section{"files", "cmd.Files (tracefs.KernelFiles)",
		func(*cobra.Command) string { return itemsMarkdown(cmd.Files) }}
	jsonSection = section{"JSON formats", "cmd.JSONFormats and the commands' JSON annotations (cmd.AnnotationJSON)",
		jsonFormatsMarkdown}
)

// The README's exit-code table sits between these lines.
var (
	exitCodesBegin = exitCodesSection.begin()
	exitCodesEnd   = exitCodesSection.end()
)

// readmeSections and referenceMarkdown are what README.md and docs/reference.md hold, in any
// order.
var (
	readmeSections    = []section{exitCodesSection}
	referenceMarkdown = []section{globalFlagsSection, exitCodesSection, environmentSection, filesSection, jsonSection}
)

// exitCodesMarkdown renders cmd.ExitStatuses as a Markdown table.
func exitCodesMarkdown() string {
	var b strings.Builder
	b.WriteString("| code | meaning |\n|---|---|\n")
	for _, s := range cmd.ExitStatuses {
		fmt.Fprintf(&b, "| %d | %s |\n", s.Code, strings.ReplaceAll(s.Meaning, "|", `\|`))
	}
	return b.String()
}

// readmeWithExitCodes returns the README with the table between the markers regenerated.
func readmeWithExitCodes(readme []byte) ([]byte, error) {
	return regenerate(readmeFile, readme, readmeSections, newRoot())
}

// regenerate returns doc with each section's text between its markers rendered anew. Every
// section must be there, once.
func regenerate(file string, doc []byte, sections []section, root *cobra.Command) ([]byte, error) {
	for _, s := range sections {
		begin, end := []byte(s.begin()), []byte(s.end())
		b := bytes.Index(doc, begin)
		e := bytes.Index(doc, end)
		if b < 0 || e < b || bytes.Count(doc, begin) != 1 || bytes.Count(doc, end) != 1 {
			return nil, fmt.Errorf("%s lacks the lines %q and %q around its %s (once each, in that order)",
				file, strings.TrimSpace(s.begin()), strings.TrimSpace(s.end()), s.name)
		}
		var out bytes.Buffer
		out.Write(doc[:b+len(begin)])
		out.WriteString(s.body(root))
		out.Write(doc[e:])
		doc = out.Bytes()
	}
	return doc, nil
}

// globalFlagsMarkdown is a table of the flags every command takes, as --help shows them.
func globalFlagsMarkdown(root *cobra.Command) string {
	var b strings.Builder
	b.WriteString("| flag | meaning |\n|---|---|\n")
	for _, f := range visibleFlags(root.PersistentFlags()) {
		varname, usage := pflag.UnquoteUsage(f)
		name := "--" + f.Name
		if f.Shorthand != "" && f.ShorthandDeprecated == "" {
			name = "-" + f.Shorthand + ", " + name
		}
		if varname != "" {
			name += " " + varname
		}
		if d := defaultText(f); d != "" {
			usage += " (default " + d + ")"
		}
		fmt.Fprintf(&b, "| `%s` | %s |\n", name, cell(usage))
	}
	return b.String()
}

// itemsMarkdown is a list of terms and their explanations.
func itemsMarkdown(items []cmd.DocItem) string {
	var b strings.Builder
	for _, it := range items {
		fmt.Fprintf(&b, "- `%s`: %s\n", it.Term, markdownInline(it.Text))
	}
	return b.String()
}

// jsonFormatsMarkdown is one subsection per distinct JSON format, naming every command that
// prints it, as ftctl(1)'s JSON FORMATS section has them.
func jsonFormatsMarkdown(root *cobra.Command) string {
	var b strings.Builder
	b.WriteString("\n" + markdownText(jsonIntro))
	for _, f := range jsonFormats(root) {
		b.WriteString("\n### `" + commandList(f.commands) + "` (`" + cmp.Or(f.tag, "profile") + "`)\n\n")
		b.WriteString(markdownText(f.text))
		before, after, _ := strings.Cut(f.schemaLine(), f.file)
		b.WriteString("\n" + markdownInline(before) + "[" + f.file + "](" + strings.TrimPrefix(f.file, "docs/") + ")" + markdownInline(after) + "\n")
	}
	return b.String()
}

// cell is text for a table cell: inline Markdown with its pipes escaped.
func cell(s string) string { return strings.ReplaceAll(markdownInline(s), "|", `\|`) }

// markdownText renders help text as Markdown: each paragraph on one line, each literal block
// fenced and dedented (json when it starts with { or [).
func markdownText(s string) string {
	var out []string
	for _, b := range helpBlocks(s) {
		if b.literal {
			out = append(out, fenced(b.lines))
		} else {
			out = append(out, markdownInline(strings.Join(b.lines, " "))+"\n")
		}
	}
	return strings.Join(out, "\n")
}

// fenced renders literal lines as a fenced code block, dedented.
func fenced(lines []string) string {
	lang := ""
	if first := strings.TrimSpace(lines[0]); strings.HasPrefix(first, "{") || strings.HasPrefix(first, "[") {
		lang = "json"
	}
	return "```" + lang + "\n" + strings.Join(dedent(lines), "\n") + "\n```\n"
}

// wordRune is a letter or digit: what GitHub's Markdown takes as the inside of a word.
func wordRune(r rune) bool { return unicode.IsLetter(r) || unicode.IsDigit(r) }

// markdownInline makes a line of help text safe as Markdown: `code` spans are kept as they
// are; elsewhere what would start emphasis, HTML or a link is escaped, and a line start that
// would open a block (a heading, a list) too.
func markdownInline(s string) string {
	parts := strings.Split(s, "`")
	if len(parts)%2 == 0 { // an unpaired backquote: no code span, the backquotes escaped
		parts = []string{s}
	}
	// A bracket starts a link only as [text](url) or [text][ref] (the documents define no
	// shortcut references).
	linkLike := strings.Contains(s, "](") || strings.Contains(s, "][")
	var b strings.Builder
	for i, part := range parts {
		if i%2 == 1 {
			b.WriteString("`" + part + "`")
			continue
		}
		rs := []rune(part)
		for j, r := range rs {
			next := rune(0)
			if j+1 < len(rs) {
				next = rs[j+1]
			}
			switch {
			case r == '\\' || r == '*' || r == '`':
				b.WriteByte('\\')
			case r == '[' && linkLike: // else a bracket is only a bracket
				b.WriteByte('\\')
			case r == '<' && (unicode.IsLetter(next) || next == '/' || next == '!' || next == '?'): // HTML
				b.WriteByte('\\')
			case r == '_' && !(j > 0 && wordRune(rs[j-1]) && j+1 < len(rs) && wordRune(rs[j+1])):
				b.WriteByte('\\') // within a word an underscore is only an underscore
			}
			b.WriteRune(r)
		}
	}
	out := b.String()
	if len(out) > 0 && strings.ContainsRune("#-+=", rune(out[0])) {
		out = "\\" + out
	}
	if i := strings.IndexFunc(out, func(r rune) bool { return r < '0' || r > '9' }); i > 0 && (out[i] == '.' || out[i] == ')') {
		out = out[:i] + "\\" + out[i:]
	}
	return out
}
