package tui

import "github.com/ftctl/ftctl/filters"

// previewCacheSize is how many recent previews the Functions view keeps: enough for a word typed
// and backspaced over, a few hundred kilobytes at most.
const previewCacheSize = 16

// previewEntry is a resolved preview: what a text selects (never nil: empty when nothing).
type previewEntry struct {
	text    string
	pat     *filters.Pattern
	matches []int
}

// previewCache keeps the latest previews, oldest first. A backspace returns to a text it has;
// a text that grows is resolved within the smallest entry it provably narrows.
type previewCache struct {
	entries []previewEntry
}

func (c *previewCache) get(text string) *previewEntry {
	for i := range c.entries {
		if c.entries[i].text == text {
			e := c.entries[i]
			c.entries = append(append(c.entries[:i:i], c.entries[i+1:]...), e) // newest now
			return &c.entries[len(c.entries)-1]
		}
	}
	return nil
}

func (c *previewCache) put(e previewEntry) {
	for i := range c.entries {
		if c.entries[i].text == e.text {
			c.entries = append(c.entries[:i], c.entries[i+1:]...)
			break
		}
	}
	if len(c.entries) == previewCacheSize {
		c.entries = append(c.entries[:0:0], c.entries[1:]...)
	}
	c.entries = append(c.entries, e)
}

// within returns the matches of the cached pattern with the fewest matches that p provably
// narrows (every record p selects, it selects), or nil: then p is resolved over the whole index.
// An entry with more than most matches is not worth it: the whole index is scanned by distinct
// names, faster than testing that many records one by one.
func (c *previewCache) within(p *filters.Pattern, most int) []int {
	var best []int
	found := false
	for _, e := range c.entries {
		if len(e.matches) <= most && (!found || len(e.matches) < len(best)) && p.Narrows(e.pat) {
			best, found = e.matches, true
		}
	}
	return best
}
