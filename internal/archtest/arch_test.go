package archtest

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"
)

const module = "github.com/ftctl/ftctl"

// allowed lists, for each package of ftctl (its directory), the packages of ftctl its non-test
// files may import. A package missing here fails the test: say where a new one sits.
var allowed = map[string][]string{
	".":           {"cmd", "session"}, // main: the root command, and the gate of trace -- COMMAND
	"tracefs":     {},
	"filters":     {"tracefs"},
	"eventfilter": {"tracefs", "filters", "internal/kstr"}, // the filter grammar probes/, hist/ and session/ share
	"probes":      {"tracefs", "filters", "eventfilter", "internal/kstr"},
	"stream":      {"tracefs", "tracedat", "internal/atdir"},
	"tracedat":    {},
	"hist":        {"tracefs", "eventfilter"}, // never probes/: its filters are eventfilter/'s
	"session":     {"tracefs", "filters", "probes", "eventfilter", "stream", "internal/atdir"},
	"count":       {"tracefs", "filters", "probes", "stream", "session", "hist"},
	"tui":         {"tracefs", "filters", "probes", "stream", "session", "count", "tracedat"},
	// a tracing setup declared in a file: read and checked offline with the grammars' own
	// parsers, applied through session's declared owners
	"profile": {"tracefs", "filters", "probes", "eventfilter", "session"},
	// the flight recorder: a profile applied as a declared owner, its ring dumped by stream/
	"flight":           {"tracefs", "session", "profile", "stream", "count"}, // count: a latency trigger's set-up
	"cmd":              {"tracefs", "filters", "probes", "eventfilter", "stream", "session", "tui", "hist", "count", "tracedat", "internal/atdir", "profile", "flight"},
	"internal/gendocs": {"cmd"},
	"internal/fixture": {},
	// a directory held by its descriptor: the files a root process makes in the user's directories
	// (record's working directory, reset --remove-recordings), through package syscall
	"internal/atdir": {},
	// the kernel's number and character rules (lib/kstrtox.c, lib/ctype.c), for the grammars
	"internal/kstr": {},
	// writes trace-cmd's files with instances' buffers from ftctl's, for the readers' tests
	"internal/tracedattest": {"tracedat", "internal/fixture"},
	"internal/vtscreen":     {},
	"internal/archtest":     {},
	"vm/markerload":         {}, // programs run inside the VM by its benchmarks: not ftctl
	"vm/stopwatch":          {},
	"vm/readloop":           {},
	"vmtest":                {},
	"packaging/distcheck":   {}, // checks make dist's artifacts: not ftctl
}

// Third-party packages that belong to one layer only.
var confined = []struct {
	prefix string
	dirs   []string
	why    string
}{
	{"golang.org/x/sys/unix", []string{"tracefs"}, "only tracefs/ makes system calls on kernel files"},
	{"github.com/spf13/cobra", []string{"cmd", "internal/gendocs"}, "commands and flags are cmd/'s"},
	{"charm.land/", []string{"tui", "cmd"}, "the console is tui/'s (cmd/tui.go starts it)"},
	{"github.com/charmbracelet/", []string{"tui", "cmd"}, "the console is tui/'s (cmd/tui.go starts it)"},
	{"github.com/goccy/go-yaml", []string{"profile"}, "profiles are read by profile/ alone, with its bounds"},
	{"github.com/invopop/jsonschema", []string{"profile"}, "the profile's schema is profile/'s"},
}

// kernelPath matches a string literal that is a path to a kernel file (tracefs, sysfs, procfs)
// or the start of one ("/proc/self/task/" + tid): what code opens. Help text that mentions a
// path in a sentence is documentation, not an open, and is left alone.
var kernelPath = regexp.MustCompile(`^/(sys|proc)(/\S*)?$`)

// outsideKernel are the directories that may name kernel files by design: the integration suite
// and the benchmark programs, which run inside the VM against the kernel, and the unit tests'
// fake of the kernel (internal/fixture reads /proc/self/fd to refuse an rmdir as tracefs does).
var outsideKernel = []string{"vmtest", "vm/markerload", "vm/stopwatch", "internal/fixture"}

func root(t *testing.T) string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "..")
}

// sources parses every .go file of the module (test files too, marked), by directory.
func sources(t *testing.T) map[string][]*ast.File {
	t.Helper()
	top := root(t)
	fset := token.NewFileSet()
	out := map[string][]*ast.File{}
	err := filepath.WalkDir(top, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if n := d.Name(); p != top && (strings.HasPrefix(n, ".") || n == "testdata" || n == "build") {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(p, ".go") {
			return nil
		}
		f, err := parser.ParseFile(fset, p, nil, parser.ImportsOnly|parser.ParseComments)
		if err != nil {
			return err
		}
		if strings.HasSuffix(p, "_test.go") {
			return nil // tests may reach anywhere (fixtures, fakes); the literal check below parses them apart
		}
		rel, _ := filepath.Rel(top, filepath.Dir(p))
		out[filepath.ToSlash(rel)] = append(out[filepath.ToSlash(rel)], f)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func TestLayering(t *testing.T) {
	for dir, files := range sources(t) {
		allow, known := allowed[dir]
		if !known {
			t.Errorf("package %s is not in the layering table of internal/archtest: say which packages it may import", dir)
			continue
		}
		for _, f := range files {
			for _, imp := range f.Imports {
				path, _ := strconv.Unquote(imp.Path.Value)
				if rest, ok := strings.CutPrefix(path, module+"/"); ok {
					if !slices.Contains(allow, rest) {
						t.Errorf("%s imports %s: %s may import only %v (data flows one way: cmd, tui -> session -> filters, probes, stream -> tracefs)", dir, rest, dir, allow)
					}
					continue
				}
				for _, c := range confined {
					if strings.HasPrefix(path, c.prefix) && !slices.Contains(c.dirs, dir) {
						t.Errorf("%s imports %s: %s", dir, path, c.why)
					}
				}
			}
		}
	}
}

// TestKernelPathsOnlyInTracefs: no code outside tracefs/ names a kernel file. The check reads
// every string literal of the non-test files.
func TestKernelPathsOnlyInTracefs(t *testing.T) {
	top := root(t)
	fset := token.NewFileSet()
	err := filepath.WalkDir(top, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(top, p)
		rel = filepath.ToSlash(rel)
		if d.IsDir() {
			if n := d.Name(); p != top && (strings.HasPrefix(n, ".") || n == "testdata" || n == "build" ||
				rel == "tracefs" || slices.Contains(outsideKernel, rel)) {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(p, ".go") || strings.HasSuffix(p, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(fset, p, nil, 0)
		if err != nil {
			return err
		}
		ast.Inspect(f, func(n ast.Node) bool {
			lit, ok := n.(*ast.BasicLit)
			if !ok || lit.Kind != token.STRING {
				return true
			}
			s, err := strconv.Unquote(lit.Value)
			if err == nil && kernelPath.MatchString(s) {
				t.Errorf("%s names a kernel path (%q): only tracefs/ knows where kernel files are", fset.Position(lit.Pos()), s)
			}
			return true
		})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// The checks must be able to fail: a source that breaks each rule is caught.
func TestChecksCatchViolations(t *testing.T) {
	for _, s := range []string{"/sys/kernel/tracing", "/proc/kallsyms", "/proc/self/task/", "/sys/kernel/debug/tracing/trace_pipe", "/proc"} {
		if !kernelPath.MatchString(s) {
			t.Errorf("%q is not recognised as a kernel path", s)
		}
	}
	for _, s := range []string{"/tmp/x", "/bin/sh", "sys/kernel", "set_ftrace_filter", "/dev/null",
		"found in /proc/self/mountinfo", "the files under /sys/kernel/tracing"} {
		if kernelPath.MatchString(s) {
			t.Errorf("%q taken for a kernel path", s)
		}
	}
	if slices.Contains(allowed["tracefs"], "cmd") || slices.Contains(allowed["stream"], "session") {
		t.Error("the table lets a lower layer import an upper one")
	}
	if slices.Contains(allowed["hist"], "probes") || slices.Contains(allowed["eventfilter"], "probes") {
		t.Error("the table lets hist/ or eventfilter/ import probes/: the event-filter grammar they share is eventfilter/'s")
	}
}
