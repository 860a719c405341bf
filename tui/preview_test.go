package tui

import (
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	tea "charm.land/bubbletea/v2"

	"github.com/ftctl/ftctl/filters"
)

// drain runs a command synchronously and gives the Functions view's answers (previews,
// suggestions) back to the model, as the program would; what those answers lead to (close names
// for a pattern matching nothing: an edit distance to every name) is not run.
func drain(m *Model, cmd tea.Cmd) {
	if cmd == nil {
		return
	}
	switch msg := cmd().(type) {
	case tea.BatchMsg:
		for _, c := range msg {
			drain(m, c)
		}
	case previewMsg, suggestMsg:
		m.Update(msg)
	}
}

// randomEdit is one key (or paste) that changes the pattern field: typing at the cursor,
// pasting a piece of a real name or a qualifier, deleting either side, moving the cursor.
func randomEdit(r *rand.Rand, ix *filters.Index) tea.Msg {
	const chars = "abcdefghijklmnopqrstuvwxyz_0123456789*?[]!-\\:"
	switch r.IntN(12) {
	case 0, 1, 2, 3:
		return press(string(chars[r.IntN(len(chars))]))
	case 4:
		name := ix.Records[r.IntN(ix.Len())].Name
		lo := r.IntN(len(name))
		return tea.PasteMsg{Content: name[lo:min(len(name), lo+1+r.IntN(8))]}
	case 5:
		q := []string{":mod:", ":mod:dummy", ":mod:!", ":mod:nls*", "*", "[rw]", "[!x]?"}[r.IntN(7)]
		return tea.PasteMsg{Content: q}
	case 6, 7:
		return tea.KeyPressMsg{Code: tea.KeyBackspace}
	case 8:
		return tea.KeyPressMsg{Code: tea.KeyDelete}
	case 9:
		return tea.KeyPressMsg{Code: tea.KeyLeft}
	case 10:
		return tea.KeyPressMsg{Code: tea.KeyRight}
	}
	return []tea.KeyPressMsg{{Code: tea.KeyHome}, {Code: tea.KeyEnd}, {Code: 'u', Mod: tea.ModCtrl}}[r.IntN(3)]
}

// TestPreviewNarrowingIsExact types random edit sequences (typing in the middle, pastes,
// deletions, qualifiers) into the Functions view over the 6.12 index, and after every key
// compares what the view shows with a full resolve of the text. The view answers from its
// cache, by narrowing, or by a full scan: all three must be exact, and the first two must happen.
func TestPreviewNarrowingIsExact(t *testing.T) {
	m, fb := functionsModel(t)
	v := m.funcs
	v.inlineMost = 8 // narrowing both at once and in a command
	r := rand.New(rand.NewPCG(7, 11))
	seqs, edits := 200, 14
	if testing.Short() {
		seqs = 20
	}
	for s := 0; s < seqs; s++ {
		v.input.SetValue("") // a fresh field
		drain(m, v.preview())
		for e := 0; e < edits; e++ {
			_, cmd := m.Update(randomEdit(r, fb.ix))
			drain(m, cmd)
			text := strings.TrimSpace(v.input.Value())
			p, err := filters.Compile(text)
			switch {
			case text == "":
				if v.pat != nil || v.pending {
					t.Fatalf("empty field, preview %v pending %v", v.pat, v.pending)
				}
			case err != nil:
				if v.patErr == nil {
					t.Fatalf("%q: no error shown (%v)", text, err)
				}
			default:
				want := fb.ix.Resolve(p)
				if v.pending || !slices.Equal(v.matches, want) {
					t.Fatalf("%q: the view shows %d matches (pending %v), a full resolve %d", text, len(v.matches), v.pending, len(want))
				}
				if s := screen(m); !strings.Contains(s, plural(len(want), "function")+" match") {
					t.Fatalf("%q: the screen does not show %d:\n%s", text, len(want), s)
				}
			}
		}
	}
	st := v.stats
	t.Logf("previews: %+v", st)
	if st.cached < 20 || st.narrowedNow < 20 || st.narrowedLater < 20 || st.scannedNow < 20 || st.scannedLater < 20 {
		t.Errorf("the edits did not exercise every path: %+v", st)
	}
}

// TestPreviewDropsStaleAnswers: a key pressed while the previous text is being resolved makes
// that resolve give up, and an answer for an old text is never shown.
func TestPreviewDropsStaleAnswers(t *testing.T) {
	m, fb := functionsModel(t)
	v := m.funcs
	typeText(m, "*") // every record: at once
	_, first := m.Update(press("v"))
	if !v.pending || !strings.Contains(screen(m), "counting") { // "*v": every name tested, in a command
		t.Fatalf("a count is shown before it is known:\n%s", screen(m))
	}
	_, second := m.Update(press("f"))
	drain(m, second)
	if v.pending || len(v.matches) != len(fb.ix.Resolve(mustCompile(t, "*vf"))) {
		t.Fatalf("*vf: %d matches, pending %v", len(v.matches), v.pending)
	}
	// The first command runs late: it sees its text is stale and answers nothing.
	var msgs []tea.Msg
	collect(first, &msgs)
	for _, msg := range msgs {
		if _, ok := msg.(previewMsg); ok {
			t.Fatalf("a stale resolve answered: %T", msg)
		}
	}
	// An answer for an old text that arrives anyway is dropped.
	m.Update(previewMsg{seq: v.seq.Load() - 1, text: "*v", matches: []int{1, 2, 3}})
	if !slices.Equal(v.matches, fb.ix.Resolve(mustCompile(t, "*vf"))) {
		t.Fatal("a stale answer was shown")
	}
}

func collect(cmd tea.Cmd, out *[]tea.Msg) {
	if cmd == nil {
		return
	}
	msg := cmd()
	if b, ok := msg.(tea.BatchMsg); ok {
		for _, c := range b {
			collect(c, out)
		}
		return
	}
	if msg != nil {
		*out = append(*out, msg)
	}
}

func mustCompile(t *testing.T, s string) *filters.Pattern {
	t.Helper()
	p, err := filters.Compile(s)
	if err != nil {
		t.Fatal(err)
	}
	return p
}
