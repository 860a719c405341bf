package cmd

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// Issue 28 (d): the environment variables that point ftctl at fixtures for its own tests
// (FTCTL_STATE_DIR: where the journals reset acts on as root live; FTCTL_BTF) are not read by
// the binary: no Go file outside the tests names them (cmd's tests install testHooks).
func TestTestHooksAreNotInTheBinary(t *testing.T) {
	hooks := []string{"FTCTL_STATE_DIR", "FTCTL_BTF"}
	root, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (d.Name() == "vmtest" || d.Name() == "testdata" || strings.HasPrefix(d.Name(), ".")) && path != root {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		ast.Inspect(f, func(n ast.Node) bool {
			if lit, ok := n.(*ast.BasicLit); ok && lit.Kind == token.STRING {
				for _, h := range hooks {
					if v, _ := strconv.Unquote(lit.Value); v == h {
						t.Errorf("%s: the binary reads %s, a hook for tests", fset.Position(lit.Pos()), h)
					}
				}
			}
			return true
		})
		return nil
	})
}

// Issue 28 (d): a state directory group or others may write (or not ftctl's user's or root's)
// is refused before anything is read from it or written (exit 4, naming it and why).
func TestUnsafeStateDirRefused(t *testing.T) {
	root := fakeRoot(t)
	state := filepath.Join(t.TempDir(), "run")
	os.Mkdir(state, 0o700)
	os.Chmod(state, 0o777)
	t.Setenv("FTCTL_STATE_DIR", state)
	os.WriteFile(filepath.Join(state, "ftctl-77-0123abcd.journal"), []byte(`{"session":{"pid":77,"id":"0123abcd"},"entries":[{"file":"tracing_on","before":"1","wrote":"0"}]}`), 0o600)
	code, out, errs := run(t, "--tracefs", root, "reset")
	if code != ExitUnavailable || !strings.Contains(errs, state) || !strings.Contains(errs, "writable by group or others") {
		t.Errorf("exit %d, want %d naming %s:\n%s\n%s", code, ExitUnavailable, state, out, errs)
	}
	if b, _ := os.ReadFile(filepath.Join(root, "tracing_on")); strings.TrimSpace(string(b)) != "0" {
		t.Errorf("tracing_on %q: the journal in an unsafe directory was acted on", b)
	}
	os.Chmod(state, 0o700)
	if code, out, errs := run(t, "--tracefs", root, "reset"); code != 0 || !strings.Contains(out, "put back tracing_on") {
		t.Errorf("a safe directory: exit %d\n%s\n%s", code, out, errs)
	}
}
