// Command gendocs renders what is generated from ftctl's command tree: the man pages in man/
// (ftctl.1 and one page per command), the bash, zsh and fish completion scripts in completions/,
// the exit-code table of README.md (from cmd.ExitStatuses), and the generated sections of
// docs/reference.md (the global flags, exit codes, environment, files and JSON formats, from the
// same sources as ftctl(1)'s), and the JSON Schemas of every JSON format in docs/json. `make docs` runs it from the repository's root; its test fails
// when the checked-in copies differ from what it would write.
//
// It is a separate program rather than a hidden ftctl command so that the shipped binary
// carries no documentation generator. The output depends on nothing but the source: a page's
// .TH carries the release in VERSION and the date of the page's last change (kept from the
// checked-in copy while the rest of the page is unchanged, else today's).
//
// Why its own roff writer (man.go) rather than muesli/mango-cobra: rendered side by side
// (2026-11-25, mango-cobra v1.3.0, `man -l`), mango-cobra's page for `ftctl filter set` is titled
// SET(1) with the name "set" and the synopsis "set [options...] [argument...]", leaves the
// flag-usage backquotes in (`PATTERN`), has an empty DESCRIPTION (no Long text is rendered), no
// global options, and no EXIT STATUS, JSON OUTPUT, FILES or SEE ALSO sections; this generator
// writes all of those, escapes the glob syntax (\, -, leading . and ') and is tested for it.
package main

import (
	"bytes"
	"flag"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"time"

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
	referenceFile  = "docs/reference.md"
	versionFile    = "VERSION"
)

// newRoot builds the command tree as ftctl runs it, without touching the process's IO.
func newRoot() *cobra.Command {
	return cmd.NewRootCmd(&cmd.Globals{In: strings.NewReader(""), Out: io.Discard, Err: io.Discard})
}

// inputs are what render reads besides the command tree.
type inputs struct {
	readme    []byte            // README.md, whose exit-code table is replaced
	reference []byte            // docs/reference.md, whose generated sections are replaced
	version   string            // the release, from VERSION
	today     string            // YYYY-MM-DD, the date of a page that changed
	existing  map[string][]byte // the checked-in man pages, by name: their dates are kept
	comments  map[string]string // the Go source's field comments (fieldComments)
}

// readInputs reads the inputs from the repository at repo.
func readInputs(repo string, today time.Time) (inputs, error) {
	in := inputs{today: today.UTC().Format(time.DateOnly), existing: map[string][]byte{}}
	var err error
	if in.readme, err = os.ReadFile(filepath.Join(repo, readmeFile)); err != nil {
		return in, err
	}
	if in.reference, err = os.ReadFile(filepath.Join(repo, filepath.FromSlash(referenceFile))); err != nil {
		return in, err
	}
	v, err := os.ReadFile(filepath.Join(repo, versionFile))
	if err != nil {
		return in, err
	}
	in.version = strings.TrimSpace(string(v))
	if in.comments, err = fieldComments(repo); err != nil {
		return in, err
	}
	pages, err := filepath.Glob(filepath.Join(repo, manDir, "ftctl*.1"))
	if err != nil {
		return in, err
	}
	for _, p := range pages {
		if b, err := os.ReadFile(p); err == nil {
			in.existing[filepath.Base(p)] = b
		}
	}
	return in, nil
}

// render returns every generated file, keyed by its path relative to the repository (with
// slashes).
func render(in inputs) (map[string][]byte, error) {
	out := map[string][]byte{}
	for name, page := range manPages(newRoot(), in.version) {
		out[manDir+"/"+name] = datePage(page, in.existing[name], in.today)
	}
	scripts, err := completionScripts(newRoot())
	if err != nil {
		return nil, err
	}
	for name, s := range scripts {
		out[completionsDir+"/"+name] = s
	}
	schemas, err := jsonSchemaFiles(newRoot(), in.comments)
	if err != nil {
		return nil, err
	}
	for name, b := range schemas {
		out[name] = b
	}
	if out[readmeFile], err = readmeWithExitCodes(in.readme); err != nil {
		return nil, err
	}
	if out[referenceFile], err = regenerate(referenceFile, in.reference, referenceMarkdown, newRoot()); err != nil {
		return nil, err
	}
	return out, nil
}

// datePage puts a date into page's .TH: the checked-in copy's when the page is otherwise the
// same, else today's.
func datePage(page, existing []byte, today string) []byte {
	if m := thDate.FindSubmatch(existing); m != nil {
		if kept := bytes.Replace(page, []byte(datePlaceholder), m[1], 1); bytes.Equal(kept, existing) {
			return kept
		}
	}
	return bytes.Replace(page, []byte(datePlaceholder), []byte(today), 1)
}

// thDate finds the date of a page's .TH line (its third field).
var thDate = regexp.MustCompile(`(?m)^\.TH "[^"]*" 1 "([^"]*)"`)

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

// stale lists the generated-looking files of man/ (ftctl*.1) and docs/json (*.schema.json) that
// render no longer produces: the pages of removed commands, the schemas of removed formats.
func stale(repo string, files map[string][]byte) ([]string, error) {
	var out []string
	for _, glob := range []string{manDir + "/ftctl*.1", jsonDir + "/*.schema.json"} {
		gone, err := staleIn(repo, glob, files)
		if err != nil {
			return nil, err
		}
		out = append(out, gone...)
	}
	return out, nil
}

// staleIn lists the files matching glob (relative, with slashes) that files lacks.
func staleIn(repo, glob string, files map[string][]byte) ([]string, error) {
	have, err := filepath.Glob(filepath.Join(repo, filepath.FromSlash(glob)))
	if err != nil {
		return nil, err
	}
	var out []string
	for _, p := range have {
		rel := path.Dir(glob) + "/" + filepath.Base(p)
		if _, ok := files[rel]; !ok {
			out = append(out, rel)
		}
	}
	return out, nil
}

// write renders into the repository at repo: changed files are rewritten, stale pages removed,
// and each change is named on log.
func write(repo string, log io.Writer) error {
	in, err := readInputs(repo, time.Now())
	if err != nil {
		return err
	}
	files, err := render(in)
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
