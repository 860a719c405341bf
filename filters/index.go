package filters

import (
	"fmt"
	"iter"
	"maps"
	"math/bits"
	"runtime"
	"slices"
	"sort"
	"strings"
	"sync"

	"github.com/ftctl/ftctl/tracefs"
)

// Key identifies functions the way the kernel's name matching does: a name in a module ("" for
// the core kernel). Several records (static functions of the same name in different files) can
// share a key; a pattern always selects all or none of them.
type Key struct {
	Name   string `json:"name"`
	Module string `json:"module"`
}

func (k Key) String() string {
	if k.Module == "" {
		return k.Name
	}
	return k.Name + " [" + k.Module + "]"
}

// ParseKey parses a listing line: "name" or "name [module]".
func ParseKey(line string) Key {
	line = strings.TrimSpace(line)
	if i := strings.Index(line, " ["); i >= 0 && strings.HasSuffix(line, "]") {
		return Key{Name: line[:i], Module: line[i+2 : len(line)-1]}
	}
	return Key{Name: line}
}

// InvalidPrefix names the records the kernel lists but never matches by name
// ("__ftrace_invalid_address___N": weak functions whose address was dropped, FTRACE_FL_DISABLED
// since 6.0). They still take a line, so they must be counted for indexes to align.
const InvalidPrefix = "__ftrace_invalid_address___"

// Index is available_filter_functions: record i (1-based, the number the kernel accepts as an
// index write) is Records[i-1].
type Index struct {
	Records []Key
	Invalid int // how many records are invalid-address placeholders

	invalid []bool // per record: an invalid-address placeholder

	lookupOnce sync.Once
	byName     map[string][]int32 // name -> record positions (0-based), valid records only

	groups []group // set by Prepare: distinct names with their records

	loaded  bool   // read by LoadIndex, which recorded modules
	modules string // tracefs.ModulesFingerprint() just before the file was read
}

// IndexFile is the kernel's list of the functions ftrace can trace, which the index is read
// from: its line numbers are what set_ftrace_filter takes as indices.
const IndexFile = "available_filter_functions"

// LoadIndex reads and parses available_filter_functions (a top-level file: top is the top-level
// trace array), noting which modules were loaded when it did (see Stale). It is the one way
// ftctl reads the index: the commands, the console and sessions all load it here.
func LoadIndex(top *tracefs.Instance) (*Index, error) {
	// The fingerprint first: a module that comes or goes while the file is read makes the index
	// stale, never the fingerprint newer than the index.
	modules := tracefs.ModulesFingerprint()
	b, err := top.ReadFile(IndexFile)
	if err != nil {
		return nil, err
	}
	ix, err := ParseIndex(string(b))
	if err != nil {
		return nil, fmt.Errorf("parsing %s: %w", top.Path(IndexFile), err)
	}
	ix.loaded, ix.modules = true, modules
	return ix, nil
}

// Stale reports whether the loaded modules changed since LoadIndex read the index: an unloaded
// module shifts the index of every record after its own, a loaded one adds records, so indexes
// planned from a stale index may name other functions. An index that LoadIndex did not read
// (ParseIndex of a fixture) is always stale: nothing says which kernel it describes.
func (ix *Index) Stale() bool {
	return !ix.loaded || tracefs.ModulesFingerprint() != ix.modules
}

// group is one distinct function name and the positions (0-based) of its valid records.
type group struct {
	name string
	recs []int32
}

// Prepare readies the index for many previews (the TUI, a keystroke each): names are grouped
// so that each distinct name is matched once. A one-shot command does not need it.
func (ix *Index) Prepare() {
	if ix.groups != nil {
		return
	}
	seen := make(map[string]int32, len(ix.Records))
	groups := make([]group, 0, len(ix.Records))
	for pos, k := range ix.Records {
		if ix.invalid[pos] {
			continue
		}
		g, ok := seen[k.Name]
		if !ok {
			g = int32(len(groups))
			seen[k.Name] = g
			groups = append(groups, group{name: k.Name})
		}
		groups[g].recs = append(groups[g].recs, int32(pos))
	}
	ix.groups = groups
}

// ParseIndex parses the text of available_filter_functions. It keeps substrings of text and
// builds no map (lookups by key are built on first use): the file is ~40,000 lines, read on
// every command, and under emulation every allocation shows.
func ParseIndex(text string) (*Index, error) {
	n := strings.Count(text, "\n") + 1
	ix := &Index{Records: make([]Key, 0, n), invalid: make([]bool, 0, n)}
	for line := 1; text != ""; line++ {
		var l string
		if i := strings.IndexByte(text, '\n'); i >= 0 {
			l, text = text[:i], text[i+1:]
		} else {
			l, text = text, ""
		}
		if l == "" {
			if text == "" {
				break
			}
			return nil, fmt.Errorf("available_filter_functions line %d is empty", line)
		}
		k := ParseKey(l)
		bad := strings.HasPrefix(k.Name, InvalidPrefix)
		if bad {
			ix.Invalid++
		}
		ix.Records = append(ix.Records, k)
		ix.invalid = append(ix.invalid, bad)
	}
	return ix, nil
}

func (ix *Index) lookup() {
	ix.lookupOnce.Do(func() {
		ix.byName = make(map[string][]int32, len(ix.Records))
		for pos, k := range ix.Records {
			if !ix.invalid[pos] {
				ix.byName[k.Name] = append(ix.byName[k.Name], int32(pos))
			}
		}
	})
}

// Len is the number of records (lines).
func (ix *Index) Len() int { return len(ix.Records) }

// Valid reports whether the 1-based index names a record the kernel can match.
func (ix *Index) Valid(i int) bool {
	return i >= 1 && i <= len(ix.Records) && !ix.invalid[i-1]
}

// Key of a 1-based index.
func (ix *Index) Key(i int) Key { return ix.Records[i-1] }

// RecordsOf returns the 1-based indexes of every record with this key.
func (ix *Index) RecordsOf(k Key) []int {
	ix.lookup()
	var out []int
	for _, pos := range ix.byName[k.Name] {
		if ix.Records[pos].Module == k.Module {
			out = append(out, int(pos)+1)
		}
	}
	return out
}

// Count is how many records have this key.
func (ix *Index) Count(k Key) int {
	ix.lookup()
	n := 0
	for _, pos := range ix.byName[k.Name] {
		if ix.Records[pos].Module == k.Module {
			n++
		}
	}
	return n
}

// Resolve returns the 1-based indexes of the records the pattern selects, ascending.
func (ix *Index) Resolve(p *Pattern) []int {
	if name, ok := p.ExactName(); ok {
		// A plain name (the usual case for lists of thousands from a file): a lookup, not a scan.
		ix.lookup()
		var out []int
		for _, pos := range ix.byName[name] {
			if p.moduleMatches(ix.Records[pos].Module) {
				out = append(out, int(pos)+1)
			}
		}
		return out
	}
	bm, n := ix.matchBits(p)
	out := make([]int, 0, n)
	for w, word := range bm {
		for word != 0 {
			out = append(out, w*64+bits.TrailingZeros64(word)+1)
			word &= word - 1
		}
	}
	return out
}

// CountMatches is len(Resolve(p)) without building the list: the TUI's per-keystroke preview.
func (ix *Index) CountMatches(p *Pattern) int {
	_, n := ix.matchBits(p)
	return n
}

// parallelFrom is the number of records (or prepared names) from which matching is split
// across CPUs.
const parallelFrom = 8192

// matchBits returns a bitmap over record positions of what p selects, and how many. Large
// indexes are scanned by up to four goroutines, each over a slice of the names with a bitmap of
// its own, OR-ed together at the end.
func (ix *Index) matchBits(p *Pattern) ([]uint64, int) {
	words := (len(ix.Records) + 63) / 64
	workers := min(runtime.GOMAXPROCS(0), 4)
	scan, n := ix.scan, len(ix.Records)
	if ix.groups != nil {
		scan, n = ix.scanGroups, len(ix.groups)
	}
	if n < parallelFrom || workers < 2 {
		bm := make([]uint64, words)
		scan(p, 0, n, bm)
		return bm, popcount(bm)
	}
	maps := make([][]uint64, workers)
	var wg sync.WaitGroup
	chunk := (n + workers - 1) / workers
	for w := 0; w < workers; w++ {
		lo, hi := w*chunk, min((w+1)*chunk, n)
		maps[w] = make([]uint64, words)
		wg.Add(1)
		go func(lo, hi int, bm []uint64) {
			defer wg.Done()
			scan(p, lo, hi, bm)
		}(lo, hi, maps[w])
	}
	wg.Wait()
	bm := maps[0]
	for _, m := range maps[1:] {
		for i, word := range m {
			bm[i] |= word
		}
	}
	return bm, popcount(bm)
}

func popcount(bm []uint64) int {
	n := 0
	for _, w := range bm {
		n += bits.OnesCount64(w)
	}
	return n
}

// scanGroups is scan over prepared groups [lo, hi): each distinct name is matched once.
func (ix *Index) scanGroups(p *Pattern, lo, hi int, bm []uint64) {
	for gi := lo; gi < hi; gi++ {
		g := &ix.groups[gi]
		if !p.nameMatches(g.name) {
			continue
		}
		for _, pos := range g.recs {
			if !p.hasMod || p.moduleMatches(ix.Records[pos].Module) {
				bm[pos>>6] |= 1 << (pos & 63)
			}
		}
	}
}

// scan sets the bit of every record in [lo, hi) that p selects.
func (ix *Index) scan(p *Pattern, lo, hi int, bm []uint64) {
	for pos := lo; pos < hi; pos++ {
		if ix.invalid[pos] {
			continue
		}
		k := &ix.Records[pos]
		if p.nameMatches(k.Name) && (!p.hasMod || p.moduleMatches(k.Module)) {
			bm[pos>>6] |= 1 << (pos & 63)
		}
	}
}

// ResolveAll resolves several patterns; the union is returned ascending. A pattern that
// selects nothing is an error naming it, with close names suggested (NoMatchError).
func (ix *Index) ResolveAll(ps []*Pattern) ([]int, error) {
	seen := make(map[int]bool)
	var out []int
	for _, p := range ps {
		got := ix.Resolve(p)
		if len(got) == 0 {
			return nil, &NoMatchError{Pattern: p.Text, Suggestions: ix.Suggest(p.Literal(), 5)}
		}
		for _, i := range got {
			if !seen[i] {
				seen[i] = true
				out = append(out, i)
			}
		}
	}
	sort.Ints(out)
	return out, nil
}

// NoMatchError: a pattern selects no traceable function.
type NoMatchError struct {
	Pattern     string
	Suggestions []string
}

func (e *NoMatchError) Error() string {
	msg := fmt.Sprintf("pattern %q matches no traceable function in available_filter_functions", e.Pattern)
	if len(e.Suggestions) > 0 {
		msg += "; close matches: " + strings.Join(e.Suggestions, ", ")
	}
	return msg
}

func (e *NoMatchError) Unwrap() error { return ErrPattern }

// Suggest returns up to n distinct names close to lit: those containing it first (shortest
// first), then those within a small edit distance.
func (ix *Index) Suggest(lit string, n int) []string {
	ix.lookup()
	return suggest(lit, maps.Keys(ix.byName), n)
}

// Suggest is Index.Suggest over any names (events, symbols of a file): one rule for "did you
// mean" across ftctl.
func Suggest(lit string, names []string, n int) []string {
	return suggest(lit, slices.Values(names), n)
}

func suggest(lit string, names iter.Seq[string], n int) []string {
	if lit == "" {
		return nil
	}
	type cand struct {
		name string
		d    int
	}
	var cands []cand
	seen := map[string]bool{}
	maxd := max(1, len(lit)/4)
	for name := range names {
		if seen[name] {
			continue
		}
		seen[name] = true
		switch {
		case strings.Contains(name, lit):
			cands = append(cands, cand{name, -1000 + len(name)})
		default:
			if abs(len(name)-len(lit)) > maxd {
				continue
			}
			if d := EditDistance(lit, name, maxd); d <= maxd {
				cands = append(cands, cand{name, d})
			}
		}
	}
	sort.SliceStable(cands, func(a, b int) bool {
		if cands[a].d != cands[b].d {
			return cands[a].d < cands[b].d
		}
		return cands[a].name < cands[b].name
	})
	var out []string
	for _, c := range cands {
		if len(out) == n {
			break
		}
		out = append(out, c.name)
	}
	return out
}

func abs(x int) int {
	if x < 0 {
		return -x
	}
	return x
}

// EditDistance is the Levenshtein distance, giving up (returning limit+1) once every cell of a
// row exceeds limit: ftctl's one measure of "close names", for functions and event fields alike.
func EditDistance(a, b string, limit int) int {
	var r editRows
	return r.distance(a, b, limit)
}
