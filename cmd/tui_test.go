package cmd

import (
	"context"
	"strings"
	"testing"
)

func TestTUIFlags(t *testing.T) {
	var got *TUIOptions
	g := &Globals{In: strings.NewReader(""), Out: &strings.Builder{}, Err: &strings.Builder{}}
	root := NewRootCmd(g)
	for _, c := range root.Commands() {
		if c.Name() == "tui" {
			root.RemoveCommand(c)
		}
	}
	root.AddCommand(NewCmdTUI(g, func(_ context.Context, o *TUIOptions) error { got = o; return nil }))
	root.SetArgs([]string{"tui", "--keep", "--ring", "5000"})
	if err := root.Execute(); err != nil {
		t.Fatal(err)
	}
	if got == nil || !got.Keep || got.RingSize != 5000 {
		t.Errorf("%+v", got)
	}
}

// Refusals come before anything is touched: no terminal, JSON, dry run, --keep with -B, a ring
// out of range.
func TestTUIRefusals(t *testing.T) {
	root := fakeRoot(t)
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"tui"}, "needs a terminal"},
		{[]string{"-o", "json", "tui"}, "no -o json"},
		{[]string{"--dry-run", "tui"}, "no --dry-run"},
		{[]string{"-B", "x", "tui", "--keep"}, "--keep is for the private instance"},
		{[]string{"tui", "--ring", "10"}, "--ring 10"},
		{[]string{"tui", "--recover"}, "--recover goes with --file"},
		{[]string{"-B", "x", "tui", "--file", "t.dat"}, "--file shows a recording"},
	} {
		code, _, errs := run(t, append([]string{"--tracefs", root}, c.args...)...)
		if code != ExitInvalid || !strings.Contains(errs, c.want) {
			t.Errorf("%v: exit %d, %q", c.args, code, errs)
		}
	}
}
