// Command gendocs renders what is generated from ftctl's command tree: the man pages in man/
// (ftctl.1 and one page per command), the bash, zsh and fish completion scripts in completions/,
// and the exit-code table of README.md (from cmd.ExitStatuses). `make docs` runs it from the
// repository's root; its test fails when the checked-in copies differ from what it would write.
//
// It is a separate program rather than a hidden ftctl command so that the shipped binary
// carries no documentation generator, and the output depends on nothing but the source: no
// dates, no version, no environment.
package main

import (
	"bytes"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"github.com/ftctl/ftctl/cmd"
)

func main() {
	root := flag.String("root", ".", "the repository `DIR` to write into")
	flag.Parse()
	if err := write(*root, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "gendocs:", err)
		os.Exit(1)
	}
}

// Where the generated files go, relative to the repository.
const (
	manDir         = "man"
	completionsDir = "completions"
	readmeFile     = "README.md"
)

// newRoot builds the command tree as ftctl runs it, without touching the process's IO.
func newRoot() *cobra.Command {
	return cmd.NewRootCmd(&cmd.Globals{In: strings.NewReader(""), Out: io.Discard, Err: io.Discard})
}

// render returns every generated file, keyed by its path relative to the repository (with
// slashes). readme is the current README.md, whose exit-code table is replaced.
func render(readme []byte) (map[string][]byte, error) {
	out := map[string][]byte{}
	for name, page := range manPages(newRoot()) {
		out[manDir+"/"+name] = page
	}
	scripts, err := completionScripts(newRoot())
	if err != nil {
		return nil, err
	}
	for name, s := range scripts {
		out[completionsDir+"/"+name] = s
	}
	if out[readmeFile], err = readmeWithExitCodes(readme); err != nil {
		return nil, err
	}
	return out, nil
}

// completionScripts are cobra's scripts for bash (v2, with descriptions), zsh and fish, named
// as each shell's completion directory expects them once installed (see the Makefile).
func completionScripts(root *cobra.Command) (map[string][]byte, error) {
	var bash, zsh, fish bytes.Buffer
	if err := root.GenBashCompletionV2(&bash, true); err != nil {
		return nil, err
	}
	if err := root.GenZshCompletion(&zsh); err != nil {
		return nil, err
	}
	if err := root.GenFishCompletion(&fish, true); err != nil {
		return nil, err
	}
	return map[string][]byte{"ftctl.bash": bash.Bytes(), "_ftctl": zsh.Bytes(), "ftctl.fish": fish.Bytes()}, nil
}

// stale lists the generated-looking files of man/ (ftctl*.1) that render no longer produces: the
// pages of removed commands.
func stale(repo string, files map[string][]byte) ([]string, error) {
	have, err := filepath.Glob(filepath.Join(repo, manDir, "ftctl*.1"))
	if err != nil {
		return nil, err
	}
	var out []string
	for _, p := range have {
		rel := manDir + "/" + filepath.Base(p)
		if _, ok := files[rel]; !ok {
			out = append(out, rel)
		}
	}
	return out, nil
}

// write renders into the repository at repo: changed files are rewritten, stale pages removed,
// and each change is named on log.
func write(repo string, log io.Writer) error {
	readme, err := os.ReadFile(filepath.Join(repo, readmeFile))
	if err != nil {
		return err
	}
	files, err := render(readme)
	if err != nil {
		return err
	}
	names := make([]string, 0, len(files))
	for name := range files {
		names = append(names, name)
	}
	slices.Sort(names)
	for _, name := range names {
		p := filepath.Join(repo, filepath.FromSlash(name))
		if old, err := os.ReadFile(p); err == nil && bytes.Equal(old, files[name]) {
			continue
		}
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(p, files[name], 0o644); err != nil {
			return err
		}
		fmt.Fprintln(log, "wrote", name)
	}
	gone, err := stale(repo, files)
	if err != nil {
		return err
	}
	for _, name := range gone {
		if err := os.Remove(filepath.Join(repo, filepath.FromSlash(name))); err != nil {
			return err
		}
		fmt.Fprintln(log, "removed", name)
	}
	return nil
}
