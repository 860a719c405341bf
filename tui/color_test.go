package tui

import (
	"testing"

	"github.com/charmbracelet/colorprofile"
)

// The console's colours: Plain (--color never, or auto with NO_COLOR or TERM=dumb) draws text
// only; ForceColor (--color always) draws colours despite NO_COLOR and TERM=dumb; otherwise
// what TERM and COLORTERM announce.
func TestColorProfile(t *testing.T) {
	for _, c := range []struct {
		name string
		o    Options
		env  []string
		want colorprofile.Profile
	}{
		{"plain", Options{Plain: true}, []string{"TERM=xterm-256color", "COLORTERM=truecolor"}, colorprofile.NoTTY},
		{"auto 256", Options{}, []string{"TERM=xterm-256color"}, colorprofile.ANSI256},
		{"auto truecolor", Options{}, []string{"TERM=xterm", "COLORTERM=truecolor"}, colorprofile.TrueColor},
		{"always, NO_COLOR", Options{ForceColor: true}, []string{"TERM=xterm-256color", "NO_COLOR=1"}, colorprofile.ANSI256},
		{"always, dumb", Options{ForceColor: true}, []string{"TERM=dumb", "NO_COLOR=1"}, colorprofile.ANSI},
		{"always, no TERM", Options{ForceColor: true}, nil, colorprofile.ANSI},
	} {
		if got := colorProfile(c.o, c.env); got != c.want {
			t.Errorf("%s: %v, want %v", c.name, got, c.want)
		}
	}
}
