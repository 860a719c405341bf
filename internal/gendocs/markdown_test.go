package main

import (
	"strconv"
	"strings"
	"testing"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/ftctl/ftctl/cmd"
)

// bareReference is a reference with every generated section's markers and nothing else.
func bareReference() []byte {
	var b strings.Builder
	for _, s := range referenceMarkdown {
		b.WriteString("## " + s.name + "\n\n" + s.begin() + s.end() + "\n")
	}
	return []byte(b.String())
}

func TestMarkdownInline(t *testing.T) {
	cases := []struct{ in, want string }{
		{"plain text", "plain text"},
		{"set_ftrace_filter and ftctl_PID_ID", "set_ftrace_filter and ftctl_PID_ID"},
		{"__probe_ip and _x_", `\_\_probe_ip and \_x\_`},
		{"vfs_* selects", `vfs\_\* selects`},
		{"PATH:SYMBOL[+OFFS] <tag> a < b", `PATH:SYMBOL[+OFFS] \<tag> a < b`},
		{"[text](url) and [a][b]", `\[text](url) and \[a]\[b]`},
		{`\x1b escaped`, `\\x1b escaped`},
		{"`vfs_*` and `<x>` stay", "`vfs_*` and `<x>` stay"},
		{"an odd ` is escaped", "an odd \\` is escaped"},
		{"# not a heading", `\# not a heading`},
		{"- not a list", `\- not a list`},
		{"1. not a list", `1\. not a list`},
	}
	for _, c := range cases {
		if got := markdownInline(c.in); got != c.want {
			t.Errorf("markdownInline(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}

func TestMarkdownText(t *testing.T) {
	cases := []struct {
		name, in, want string
	}{
		{"a paragraph on one line", "First line\nsecond line.", "First line second line.\n"},
		{"paragraphs", "One.\n\nTwo.\n", "One.\n\nTwo.\n"},
		{"an indented JSON block is fenced and dedented",
			"Example:\n\n  {\"a\": 1,\n   \"b\": 2}\n\nAfter.",
			"Example:\n\n```json\n{\"a\": 1,\n \"b\": 2}\n```\n\nAfter.\n"},
		{"other literal text", "Text:\n  ftctl status", "Text:\n\n```\nftctl status\n```\n"},
	}
	for _, c := range cases {
		if got := markdownText(c.in); got != c.want {
			t.Errorf("%s: got\n%s\nwant\n%s", c.name, got, c.want)
		}
	}
}

// The reference's sections hold every global flag, exit status, environment variable, file and
// documented JSON format; a reference without a section's markers is refused.
func TestReferenceSections(t *testing.T) {
	root := newRoot()
	out, err := regenerate(referenceFile, bareReference(), referenceMarkdown, root)
	if err != nil {
		t.Fatal(err)
	}
	s := string(out)
	root.PersistentFlags().VisitAll(func(f *pflag.Flag) {
		if !f.Hidden && !strings.Contains(s, "--"+f.Name) {
			t.Errorf("no global flag --%s", f.Name)
		}
	})
	for _, st := range cmd.ExitStatuses {
		if !strings.Contains(s, "\n| "+strconv.Itoa(st.Code)+" |") {
			t.Errorf("no row for exit %d", st.Code)
		}
	}
	for _, e := range append(append([]cmd.DocItem{}, cmd.Environment...), cmd.Files...) {
		if !strings.Contains(s, "- `"+e.Term+"`: ") {
			t.Errorf("no entry for %s", e.Term)
		}
	}
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		if c.Annotations[cmd.AnnotationJSON] != "" && !strings.Contains(s, " "+c.Name()) {
			t.Errorf("no JSON format for %s", c.CommandPath())
		}
		for _, sub := range subcommands(c) {
			walk(sub)
		}
	}
	walk(root)
	if strings.Count(s, "```")%2 != 0 {
		t.Error("an unclosed code block")
	}
	for _, sec := range referenceMarkdown {
		without := strings.Replace(string(bareReference()), sec.end(), "", 1)
		if _, err := regenerate(referenceFile, []byte(without), referenceMarkdown, root); err == nil {
			t.Errorf("a reference without the end of its %s was accepted", sec.name)
		}
		twice := string(bareReference()) + sec.begin() + sec.end()
		if _, err := regenerate(referenceFile, []byte(twice), referenceMarkdown, root); err == nil {
			t.Errorf("a reference with its %s twice was accepted", sec.name)
		}
	}
}
