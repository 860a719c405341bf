package cmd

import (
	"strings"
	"testing"
)

// FuzzReadPatternFile: --from-file text never panics; every pattern is a non-empty word with no
// whitespace and no '#', and none comes from a comment.
func FuzzReadPatternFile(f *testing.F) {
	f.Add("# read path\nvfs_read  # trailing\n\n ksys_read ksys_write\n")
	f.Add("a#b\n#\n\t\n")
	f.Fuzz(func(t *testing.T, text string) {
		got, err := readPatternFile(strings.NewReader(text), "-")
		if err != nil {
			return
		}
		for _, p := range got {
			if p == "" || strings.ContainsAny(p, "# \t\n\r\v\f") {
				t.Fatalf("pattern %q from %q", p, text)
			}
		}
		var want int
		for _, line := range strings.Split(text, "\n") {
			line, _, _ = strings.Cut(line, "#")
			want += len(strings.Fields(line))
		}
		if len(got) != want {
			t.Fatalf("%d patterns, want %d, from %q", len(got), want, text)
		}
	})
}
