package main

import (
	"bytes"
	"fmt"
	"strings"

	"github.com/ftctl/ftctl/cmd"
)

// The README's exit-code table sits between these lines (HTML comments: invisible once rendered).
const (
	exitCodesBegin = "<!-- exit codes: generated from cmd.ExitStatuses (cmd/exit.go) by make docs -->\n"
	exitCodesEnd   = "<!-- end of the generated exit codes -->\n"
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
	begin := bytes.Index(readme, []byte(exitCodesBegin))
	end := bytes.Index(readme, []byte(exitCodesEnd))
	if begin < 0 || end < begin {
		return nil, fmt.Errorf("%s lacks the lines %q and %q around its exit-code table",
			readmeFile, strings.TrimSpace(exitCodesBegin), strings.TrimSpace(exitCodesEnd))
	}
	var out bytes.Buffer
	out.Write(readme[:begin+len(exitCodesBegin)])
	out.WriteString(exitCodesMarkdown())
	out.Write(readme[end:])
	return out.Bytes(), nil
}
