package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/spf13/cobra"

	"github.com/ftctl/ftctl/cmd"
)

// repo is the repository's root, from this package's directory (where go test runs).
const repo = "../.."

// TestCheckedInCopiesAreCurrent regenerates the man pages, the completion scripts, the
// README's exit-code table and the reference's generated sections, and compares them with what
// is checked in. Adding or changing a command (its help, flags or JSON format) makes it fail
// until `make docs` is run.
func TestCheckedInCopiesAreCurrent(t *testing.T) {
	in, err := readInputs(repo, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	files, err := render(in)
	if err != nil {
		t.Fatal(err)
	}
	names := make([]string, 0, len(files))
	for name := range files {
		names = append(names, name)
	}
	slices.Sort(names)
	for _, name := range names {
		have, err := os.ReadFile(filepath.Join(repo, filepath.FromSlash(name)))
		switch {
		case err != nil:
			t.Errorf("%s: %v: run make docs", name, err)
		case !bytes.Equal(have, files[name]):
			t.Errorf("%s differs from what the command tree generates (first difference at line %d): run make docs",
				name, firstDifference(have, files[name]))
		}
	}
	gone, err := stale(repo, files)
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range gone {
		t.Errorf("%s is the page of no command: run make docs (it removes it)", name)
	}
}

// firstDifference is the 1-based line where a and b first differ.
func firstDifference(a, b []byte) int {
	la, lb := bytes.Split(a, []byte("\n")), bytes.Split(b, []byte("\n"))
	for i := range min(len(la), len(lb)) {
		if !bytes.Equal(la[i], lb[i]) {
			return i + 1
		}
	}
	return min(len(la), len(lb)) + 1
}

// Rendering twice gives the same bytes: no map order, and the date is an input.
func TestRenderIsDeterministic(t *testing.T) {
	in := inputs{readme: []byte("x\n" + exitCodesBegin + exitCodesEnd), reference: bareReference(), version: "1.2.3", today: "2026-01-02"}
	a, err := render(in)
	if err != nil {
		t.Fatal(err)
	}
	for range 3 {
		b, err := render(in)
		if err != nil {
			t.Fatal(err)
		}
		if len(a) != len(b) {
			t.Fatalf("%d files, then %d", len(a), len(b))
		}
		for name := range a {
			if !bytes.Equal(a[name], b[name]) {
				t.Errorf("%s changed between two renderings", name)
			}
		}
	}
}

func TestPagesCoverTheCommandTree(t *testing.T) {
	pages := manPages(newRoot(), "1.2.3")
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		name := strings.ReplaceAll(c.CommandPath(), " ", "-") + ".1"
		page, ok := pages[name]
		if !ok {
			t.Errorf("no page for %q", c.CommandPath())
		}
		for _, want := range []string{".SH NAME\n", ".SH SYNOPSIS\n", ".SH DESCRIPTION\n", ".SH EXIT STATUS\n", ".SH SEE ALSO\n"} {
			if !strings.Contains(string(page), want) {
				t.Errorf("%s lacks %q", name, want)
			}
		}
		if c.Annotations[cmd.AnnotationJSON] != "" && c.HasParent() && !strings.Contains(string(page), ".SH JSON OUTPUT\n") {
			t.Errorf("%s lacks its JSON format", name)
		}
		for _, s := range c.Commands() {
			if s.IsAvailableCommand() {
				walk(s)
			}
		}
	}
	walk(newRoot())

	top := string(pages["ftctl.1"])
	for _, want := range []string{".SH EXIT STATUS\n", ".SH ENVIRONMENT\n", ".SH FILES\n", ".SH JSON FORMATS\n",
		".SH FILTER SWAP PROTOCOL\n", ".SH SHELL COMPLETION\n", "\\fBFTCTL_TRACEFS\\fR\n"} {
		if !strings.Contains(top, want) {
			t.Errorf("ftctl.1 lacks %q", want)
		}
	}
	for _, s := range cmd.ExitStatuses {
		if !strings.Contains(top, ".TP\n\\fB"+strconv.Itoa(s.Code)+"\\fR\n") {
			t.Errorf("ftctl.1's EXIT STATUS lacks %d", s.Code)
		}
	}
}

func TestEscape(t *testing.T) {
	cases := []struct{ in, want string }{
		{"plain text", "plain text"},
		{"--dry-run", `\-\-dry\-run`},
		{`a \ escape`, `a \e escape`},
		{".starts with a dot", `\&.starts with a dot`},
		{"'quoted' start", `\&'quoted' start`},
		{"mid . and ' are fine", "mid . and ' are fine"},
		{"old ∪ new", `old \[u222A] new`},
		{"…", `\[u2026]`},
		{`\fB`, `\efB`},
	}
	for _, c := range cases {
		if got := escape(c.in); got != c.want {
			t.Errorf("escape(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}

func TestInline(t *testing.T) {
	cases := []struct{ in, want string }{
		{"use `--tracefs` here", `use \fB\-\-tracefs\fR here`},
		{"`.dot` first", `\fB.dot\fR first`}, // the line starts with \f: no control line
		{".dot then `x`", `\&.dot then \fBx\fR`},
		{"an odd ` stays", "an odd ` stays"},
		{"`a` and `b`", `\fBa\fR and \fBb\fR`},
	}
	for _, c := range cases {
		if got := inline(c.in); got != c.want {
			t.Errorf("inline(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}

func TestText(t *testing.T) {
	cases := []struct {
		name, in, want string
	}{
		{"one paragraph, lines kept for filling", "First line\nsecond line.", "First line\nsecond line.\n"},
		{"paragraphs", "One.\n\nTwo.\n", "One.\n.PP\nTwo.\n"},
		{"an indented block is literal and dedented",
			"Example:\n\n  ftctl status\n    -o json\n\nAfter.",
			"Example:\n.PP\n.RS 4\n.EX\nftctl status\n  \\-o json\n.EE\n.RE\n.PP\nAfter.\n"},
		{"a literal block right after text", "Text:\n  lit", "Text:\n.PP\n.RS 4\n.EX\nlit\n.EE\n.RE\n"},
		{"a line starting with a dot", "Intro\n.hidden", "Intro\n\\&.hidden\n"},
	}
	for _, c := range cases {
		p := &page{}
		p.text(c.in)
		if got := p.b.String(); got != c.want {
			t.Errorf("%s: got\n%s\nwant\n%s", c.name, got, c.want)
		}
	}
}

func TestCommandList(t *testing.T) {
	root := newRoot()
	find := func(path ...string) *cobra.Command {
		c, _, err := root.Find(path)
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	got := commandList([]*cobra.Command{find("filter", "add"), find("filter", "set"), find("notrace", "add"), find("status")})
	if want := "ftctl filter add|set, ftctl notrace add, ftctl status"; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
}

func TestReadmeExitCodes(t *testing.T) {
	in := "# x\n\n## Exit codes\n\n" + exitCodesBegin + "| old | table |\n" + exitCodesEnd + "\nafter\n"
	out, err := readmeWithExitCodes([]byte(in))
	if err != nil {
		t.Fatal(err)
	}
	s := string(out)
	if strings.Contains(s, "| old | table |") || !strings.HasSuffix(s, exitCodesEnd+"\nafter\n") || !strings.HasPrefix(s, "# x\n\n## Exit codes\n\n"+exitCodesBegin+"| code | meaning |\n") {
		t.Errorf("got\n%s", s)
	}
	for _, st := range cmd.ExitStatuses {
		if !strings.Contains(s, "\n| "+strconv.Itoa(st.Code)) {
			t.Errorf("no row for %d", st.Code)
		}
	}
	if _, err := readmeWithExitCodes([]byte("no markers")); err == nil {
		t.Error("a README without the markers was accepted")
	}
}

// TestPagesFormatCleanly runs every page through groff with all warnings on (man-db's formatter;
// skipped where groff is not installed).
func TestPagesFormatCleanly(t *testing.T) {
	groff, err := exec.LookPath("groff")
	if err != nil {
		t.Skip("groff is not installed")
	}
	for name, page := range manPages(newRoot(), "1.2.3") {
		c := exec.Command(groff, "-man", "-ww", "-z", "-Tutf8")
		c.Stdin = bytes.NewReader(page)
		out, err := c.CombinedOutput()
		if err != nil || len(out) > 0 {
			t.Errorf("%s: groff: %v\n%s", name, err, out)
		}
	}
}

// A page's .TH says the release and the date of its last change: a page otherwise unchanged
// keeps the checked-in copy's date, a changed one gets today's.
func TestPageDates(t *testing.T) {
	in := inputs{readme: []byte("x\n" + exitCodesBegin + exitCodesEnd), reference: bareReference(), version: "1.2.3", today: "2026-01-02",
		existing: map[string][]byte{}}
	first, err := render(in)
	if err != nil {
		t.Fatal(err)
	}
	page := first["man/ftctl-status.1"]
	if !bytes.HasPrefix(page, []byte(`.TH "FTCTL\-STATUS" 1 "2026-01-02" "ftctl 1.2.3" "ftctl Manual"`)) {
		t.Fatalf(".TH: %q", bytes.SplitN(page, []byte("\n"), 2)[0])
	}
	if !bytes.Contains(page, []byte(`\fBtrace\-cmd\fR(1)`)) || !bytes.Contains(page, []byte(`\fBperf\-ftrace\fR(1)`)) {
		t.Error("SEE ALSO names neither trace-cmd(1) nor perf-ftrace(1)")
	}
	in.existing["ftctl-status.1"] = page
	in.existing["ftctl-trace.1"] = append(bytes.Clone(first["man/ftctl-trace.1"]), "an old line\n"...)
	in.today = "2027-03-04"
	second, err := render(in)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(second["man/ftctl-status.1"], page) {
		t.Error("an unchanged page lost its date")
	}
	if !bytes.Contains(second["man/ftctl-trace.1"], []byte(`1 "2027-03-04"`)) {
		t.Error("a changed page kept its old date")
	}
}
