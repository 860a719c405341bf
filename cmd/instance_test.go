package cmd

import (
	"bytes"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/spf13/cobra"
)

// instancesIn lists the directories under root's instances/.
func instancesIn(t *testing.T, root string) []string {
	t.Helper()
	ents, err := os.ReadDir(filepath.Join(root, "instances"))
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range ents {
		names = append(names, e.Name())
	}
	return names
}

// A write to a -B instance that does not exist is refused (exit 2), naming the close existing
// one and the ways to create it, and creates nothing; an existing one is written to as before.
func TestWriteToMissingInstanceRefused(t *testing.T) {
	root := fakeRootWithFunctions(t)
	inc := filepath.Join(root, "instances", "incident")
	for name, body := range map[string]string{
		"current_tracer": "nop\n", "set_ftrace_filter": "#### all functions enabled ####\n",
		"set_ftrace_notrace": "#### no functions disabled ####\n",
	} {
		os.MkdirAll(inc, 0o755)
		if err := os.WriteFile(filepath.Join(inc, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for _, args := range [][]string{
		{"-B", "incidnet", "filter", "set", "vfs_read"},
		{"-B", "incidnet", "--dry-run", "filter", "set", "vfs_read"},
		{"-B", "incidnet", "notrace", "add", "vfs_read"},
		{"-B", "incidnet", "filter", "clear"},
		{"-B", "incidnet", "probe", "enable", "a"},
		{"-B", "incidnet", "probe", "add", "p:x vfs_read", "--enable"},
	} {
		code, out, errs := run(t, append([]string{"--tracefs", root}, args...)...)
		for _, want := range []string{`no instance "incidnet"`, "did you mean incident?", "--create", "ftctl instance create incidnet"} {
			if !strings.Contains(errs, want) {
				t.Errorf("%q: stderr lacks %q:\n%s", args, want, errs)
			}
		}
		if code != ExitInvalid || strings.Contains(out, "mkdir") {
			t.Errorf("%q: exit %d, stdout %q", args, code, out)
		}
		if got := instancesIn(t, root); !slices.Equal(got, []string{"incident"}) {
			t.Fatalf("%q: the instances are now %q", args, got)
		}
	}
	// Nothing close: the list is named instead of a guess; a name a shell splits is quoted.
	code, _, errs := run(t, "--tracefs", root, "-B", "zz top", "filter", "add", "vfs_read")
	if code != ExitInvalid || strings.Contains(errs, "did you mean") || !strings.Contains(errs, "'ftctl instance list'") ||
		!strings.Contains(errs, "ftctl instance create 'zz top'") {
		t.Errorf("nothing close: exit %d\n%s", code, errs)
	}

	// --create in a dry run: the mkdir is printed, not made, then the plan for the new
	// instance (tracefs's planned instance: empty lists).
	code, out, errs := run(t, "--tracefs", root, "-B", "incidnet", "--dry-run", "filter", "set", "vfs_read", "--create")
	if code != 0 || !strings.Contains(out, "dry-run: mkdir "+filepath.Join(root, "instances", "incidnet")+"\n") ||
		!strings.Contains(out, "instances/incidnet/set_ftrace_filter: 1 function (+1 -0), dry run") || !strings.Contains(errs, "would be created") {
		t.Errorf("dry run with --create: exit %d %q %q", code, out, errs)
	}
	if got := instancesIn(t, root); !slices.Equal(got, []string{"incident"}) {
		t.Fatalf("the dry run made an instance: %q", got)
	}

	// The existing instance is planned for without --create, and nothing else is made.
	code, out, errs = run(t, "--tracefs", root, "-B", "incident", "--dry-run", "filter", "set", "vfs_read")
	if code != 0 || !strings.Contains(out, "open "+filepath.Join(inc, "set_ftrace_filter")+" for writing") ||
		!strings.Contains(out, "instances/incident/set_ftrace_filter: 1 function") || strings.Contains(errs, "created") {
		t.Errorf("existing instance: exit %d %q %q", code, out, errs)
	}
	if got := instancesIn(t, root); !slices.Equal(got, []string{"incident"}) {
		t.Fatalf("the instances are now %q", got)
	}
}

// With create, WriteInstance makes the missing instance and says so.
func TestWriteInstanceCreates(t *testing.T) {
	root := fakeRoot(t)
	var errb bytes.Buffer
	g := &Globals{TracefsDir: root, Instance: "fresh", Out: new(bytes.Buffer), Err: &errb}
	fs, err := g.FS()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := g.WriteInstance(fs, false); ExitCode(err) != ExitInvalid {
		t.Fatalf("without create: %v", err)
	}
	in, err := g.WriteInstance(fs, true)
	if err != nil || in.Name != "fresh" {
		t.Fatalf("%v %v", in, err)
	}
	if st, err := os.Stat(filepath.Join(root, "instances", "fresh")); err != nil || !st.IsDir() {
		t.Fatalf("not created: %v", err)
	}
	if !strings.Contains(errb.String(), `created instance "fresh"`) {
		t.Errorf("notice: %q", errb.String())
	}
	if _, err := g.WriteInstance(fs, false); err != nil {
		t.Errorf("existing, without create: %v", err)
	}
}

// --create is on exactly the commands that write to the -B instance.
func TestCreateFlagOnWritersOfB(t *testing.T) {
	var with []string
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		if c.LocalFlags().Lookup("create") != nil {
			with = append(with, c.CommandPath())
		}
		for _, sub := range c.Commands() {
			walk(sub)
		}
	}
	walk(NewRootCmd(&Globals{}))
	slices.Sort(with)
	want := []string{
		"ftctl filter add", "ftctl filter clear", "ftctl filter remove", "ftctl filter set",
		"ftctl notrace add", "ftctl notrace clear", "ftctl notrace remove", "ftctl notrace set",
		"ftctl probe add", "ftctl probe enable",
	}
	if !slices.Equal(with, want) {
		t.Errorf("--create on %q, want %q", with, want)
	}
}
