//go:build vmtest

package vmtest

import (
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"
)

// readmeCommand is one ftctl command of a document (README.md, docs/guide.md) with the exit
// status it documents.
type readmeCommand struct {
	line int
	cmd  string
	exit int
}

var (
	// In a fenced block: "$ sudo ftctl ...", "# ftctl ..." (a root prompt) or "sudo ftctl ...".
	blockCommand = regexp.MustCompile(`^(?:\$ |# )?(?:sudo )?(ftctl .*)$`)
	// A documented failure: "(exit 2)".
	exitLine = regexp.MustCompile(`^\(exit (\d+)\)$`)
	// In the side-by-side table, the ftctl column: `ftctl ...` fragments.
	tableCommand = regexp.MustCompile("`(ftctl [^`]*)`")
	tableExit    = regexp.MustCompile(`\(exit (\d+)`)
)

// readmeCommands extracts a document's example commands, in order.
func readmeCommands(t *testing.T, text string) []readmeCommand {
	var out []readmeCommand
	inBlock := false
	lines := strings.Split(text, "\n")
	for i, l := range lines {
		if strings.HasPrefix(l, "```") {
			inBlock = !inBlock
			continue
		}
		if inBlock {
			if m := exitLine.FindStringSubmatch(l); m != nil && len(out) > 0 {
				out[len(out)-1].exit, _ = strconv.Atoi(m[1])
				continue
			}
			if m := blockCommand.FindStringSubmatch(l); m != nil {
				out = append(out, readmeCommand{line: i + 1, cmd: m[1]})
			}
			continue
		}
		if strings.HasPrefix(l, "| ") && strings.Count(l, " | ") >= 2 {
			cells := strings.Split(l, " | ")
			cell := cells[len(cells)-1]
			for _, m := range tableCommand.FindAllStringSubmatch(cell, -1) {
				c := readmeCommand{line: i + 1, cmd: m[1]}
				if e := tableExit.FindStringSubmatch(cell); e != nil {
					c.exit, _ = strconv.Atoi(e[1])
				}
				out = append(out, c)
			}
		}
	}
	return out
}

// The documents whose ftctl commands run, where vm/suite.sh puts them in the initramfs, and the
// fewest commands each must yield (fewer: the extraction broke, or the examples were lost).
var exampleDocuments = []struct {
	name, path string
	min        int
}{
	{"README.md", "/etc/ftctl-README.md", 8},
	{"guide.md", "/etc/ftctl-guide.md", 40},
}

// TestReadmeExamples runs every ftctl command that README.md and docs/guide.md show, as written
// (without sudo: the VM runs as root), in order, one document after the other, each from a
// clean state, and checks the exit status it documents (0 unless an "(exit N)" line follows it,
// or its table cell says "(exit N").
func TestReadmeExamples(t *testing.T) {
	var missing []string
	for _, d := range exampleDocuments {
		if _, err := os.Stat(d.path); err != nil {
			missing = append(missing, d.path)
		}
	}
	if len(missing) == len(exampleDocuments) {
		t.Skip("the documents are not in this initramfs (vm/suite.sh puts them in /etc)")
	}
	if len(missing) > 0 {
		t.Fatalf("%s missing from the initramfs: vm/suite.sh copies every document of exampleDocuments", strings.Join(missing, ", "))
	}
	for _, d := range exampleDocuments {
		t.Run(d.name, func(t *testing.T) {
			b, err := os.ReadFile(d.path)
			if err != nil {
				t.Fatal(err)
			}
			cmds := readmeCommands(t, string(b))
			if len(cmds) < d.min {
				t.Fatalf("only %d commands found in %s", len(cmds), d.name)
			}
			start := time.Now()
			runDocumentCommands(t, d.name, cmds)
			t.Logf("%s: %d commands in %.1fs", d.name, len(cmds), time.Since(start).Seconds())
		})
	}
}

// runDocumentCommands runs a document's commands in a directory of their own and checks each
// one's exit status; everything they left is reset at the end.
func runDocumentCommands(t *testing.T, doc string, cmds []readmeCommand) {
	dir := t.TempDir()
	// What the examples refer to: a file of function names for --from-file.
	os.WriteFile(dir+"/names", []byte("vfs_read\nvfs_write\nksys_read\n"), 0o644)
	t.Cleanup(func() { ftctlCommand(t, "reset", "--all", "--yes").Run() })
	for _, c := range cmds {
		if strings.HasPrefix(c.cmd, "ftctl graph") {
			freeTop(t) // what the graph commands assume where instances cannot run function_graph
		}
		start := time.Now()
		// Braces and a newline: a trailing "# comment" must not swallow the redirections.
		cmd := exec.Command("/bin/sh", "-c", "{ "+c.cmd+"\n} >/tmp/readme-stdout 2>/tmp/readme-stderr")
		cmd.Dir = dir
		cmd.Env = []string{"PATH=/bin:/sbin:/usr/bin", "HOME=/root"}
		done := make(chan error, 1)
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		go func() { done <- cmd.Wait() }()
		var werr error
		select {
		case werr = <-done:
		case <-time.After(90 * time.Second):
			cmd.Process.Kill()
			werr = <-done
			t.Errorf("%s line %d: %s: still running after 90 s", doc, c.line, c.cmd)
		}
		code := 0
		if ee, ok := werr.(*exec.ExitError); ok {
			code = ee.ExitCode()
		} else if werr != nil {
			t.Fatal(werr)
		}
		stderr, _ := os.ReadFile("/tmp/readme-stderr")
		if stdout, _ := os.ReadFile("/tmp/readme-stdout"); !strings.ContainsAny(c.cmd, "|>") {
			checkJSON(t, strings.Fields(c.cmd), string(stdout)) // a document's -o json, as printed
		}
		// The console needs a terminal, which this harness does not give it (its pty tests,
		// tui_test.go, run it): refused before it reads anything.
		if code == 2 && strings.HasPrefix(c.cmd, "ftctl tui") && strings.Contains(string(stderr), "needs a terminal") {
			t.Logf("%s line %d: exit 2 without a terminal, as expected: %s", doc, c.line, c.cmd)
			continue
		}
		if code == 4 && strings.Contains(c.cmd, "function_graph") && strings.Contains(string(stderr), "cannot run the function_graph tracer in an instance") {
			t.Logf("%s line %d: exit 4 on this kernel, as documented (function_graph in instances needs 6.11+): %s", doc, c.line, c.cmd)
			continue
		}
		if code == 2 && c.exit == 0 && strings.Contains(string(stderr), "this kernel does not announce") && (strings.Contains(c.cmd, "'f:") || strings.Contains(c.cmd, "'t:")) {
			t.Logf("%s line %d: exit 2 on this kernel, as documented (fprobes and tracepoint probes need CONFIG_FPROBE_EVENTS): %s", doc, c.line, c.cmd)
			continue
		}
		if code != c.exit {
			t.Errorf("%s line %d: %s: exit %d, the document says %d; stderr:\n%s", doc, c.line, c.cmd, code, c.exit, stderr)
		} else {
			t.Logf("%s line %d: exit %d in %.1fs: %s", doc, c.line, code, time.Since(start).Seconds(), c.cmd)
		}
	}
}
