package filters

import (
	"math/bits"
	"runtime"
	"sort"
	"strings"
	"sync/atomic"
)

// Previewer resolves pattern after pattern over one index as someone types them (the console's
// Functions view): each distinct name is matched once, full globs run as a deterministic
// automaton, the work is shared by the CPUs in small chunks taken as they go (a CPU busy with
// something else takes fewer), a computation can be abandoned when the text changes again, and
// a pattern that provably selects a subset of an earlier one's matches (Pattern.Narrows) is
// resolved within them. Its answers are Index.Resolve's, record for record (TestPreviewerAgrees).
// A Previewer is safe for concurrent use.
type Previewer struct {
	ix    *Index
	names []string // distinct valid names, in the order of their first record
	first []int32  // per name: its first record (0-based)
	next  []int32  // per record: the next record of the same name, -1 at the end
	of    []int32  // per record: its name, -1 for invalid records
	all   []int    // every valid record (1-based): what "*" selects
}

// NewPreviewer prepares ix for previews (once per index: a few milliseconds for 70,000 records).
func NewPreviewer(ix *Index) *Previewer {
	pv := &Previewer{ix: ix, next: make([]int32, len(ix.Records)), of: make([]int32, len(ix.Records))}
	seen := make(map[string]int32, len(ix.Records))
	last := make([]int32, 0, len(ix.Records))
	for pos, k := range ix.Records {
		pv.next[pos] = -1
		if !ix.Valid(pos + 1) {
			pv.of[pos] = -1
			continue
		}
		g, ok := seen[k.Name]
		if !ok {
			g = int32(len(pv.names))
			seen[k.Name] = g
			pv.names = append(pv.names, k.Name)
			pv.first = append(pv.first, int32(pos))
			last = append(last, int32(pos))
		} else {
			pv.next[last[g]] = int32(pos)
			last[g] = int32(pos)
		}
		pv.of[pos] = g
		pv.all = append(pv.all, pos+1)
	}
	return pv
}

// Index is the index the previewer works on.
func (pv *Previewer) Index() *Index { return pv.ix }

// previewChunk is how many names (or candidate records) a worker takes at a time: small enough
// that a worker the scheduler delays holds little back, large enough that taking one is cheap.
const previewChunk = 1024

// nameTest is the function half of a pattern, compiled for many names.
func nameTest(p *Pattern) func(string) bool {
	switch {
	case p.re != nil:
		return p.re.MatchString
	case p.hasMod && p.fn.blank():
		return func(string) bool { return true }
	case p.fn.typ == matchGlob:
		if d := newDFA(&p.fn.k); d != nil {
			return d.match
		}
	}
	return p.fn.match
}

// Resolve returns the 1-based indexes of the records p selects, ascending, as Index.Resolve. With
// within (the result of an earlier Resolve of a pattern that p Narrows), only those records are
// tested. stop (may be nil) is asked between chunks: when it says true, Resolve gives up and
// returns false. The result may be shared with other calls: it must not be modified.
func (pv *Previewer) Resolve(p *Pattern, within []int, stop func() bool) ([]int, bool) {
	if stop != nil && stop() {
		return nil, false
	}
	if _, ok := p.exactName(); ok {
		return pv.ix.Resolve(p), true // a lookup
	}
	if p.re == nil && !p.hasMod && (p.fn.typ == matchEnd || p.fn.typ == matchMiddle) && p.fn.search == "" {
		return pv.all, true // "*", "**": every valid record
	}
	test := nameTest(p)
	recs := pv.ix.Records
	if within != nil {
		parts, ok := shareChunks(len(within), func(lo, hi int) []int32 {
			var out []int32
			for _, r := range within[lo:hi] {
				pos := r - 1
				if pos < 0 || pos >= len(recs) || pv.of[pos] < 0 {
					continue
				}
				if test(recs[pos].Name) && (!p.hasMod || p.moduleMatches(recs[pos].Module)) {
					out = append(out, int32(pos))
				}
			}
			return out
		}, stop)
		if !ok {
			return nil, false
		}
		n := 0
		for _, part := range parts {
			n += len(part)
		}
		out := make([]int, 0, n)
		for _, part := range parts { // the chunks are in order, and within is ascending
			for _, pos := range part {
				out = append(out, int(pos)+1)
			}
		}
		return out, true
	}
	parts, ok := shareChunks(len(pv.names), func(lo, hi int) []int32 {
		var out []int32
		for g := lo; g < hi; g++ {
			if !test(pv.names[g]) {
				continue
			}
			for pos := pv.first[g]; pos >= 0; pos = pv.next[pos] {
				if !p.hasMod || p.moduleMatches(recs[pos].Module) {
					out = append(out, pos)
				}
			}
		}
		return out
	}, stop)
	if !ok {
		return nil, false
	}
	// A name's records are spread over the index: ascending order through a bitmap.
	bm := make([]uint64, (len(recs)+63)/64)
	for _, part := range parts {
		for _, pos := range part {
			bm[pos>>6] |= 1 << (pos & 63)
		}
	}
	out := make([]int, 0, popcount(bm))
	for w, word := range bm {
		for word != 0 {
			out = append(out, w*64+bits.TrailingZeros64(word)+1)
			word &= word - 1
		}
	}
	return out, true
}

// previewParallelFrom is the number of names (or candidate records) from which the work is
// shared between CPUs: below, a goroutine costs more than it saves.
const previewParallelFrom = 8 * previewChunk

// shareChunks runs work over [0, n) in chunks of previewChunk and returns each chunk's result,
// in order. Small inputs run in the caller. Larger ones are shared by the caller and up to three
// goroutines, each taking the next chunk as it finishes one: a worker the scheduler delays (a
// busy CPU) takes fewer. When no chunk is left to take, a worker redoes the chunks still
// running elsewhere (work is pure: the first result stored wins), so that the caller never
// waits for a thread that waits for a CPU; such a straggler ends on its own when it runs again,
// its result dropped.
func shareChunks(n int, work func(lo, hi int) []int32, stop func() bool) ([][]int32, bool) {
	chunks := (n + previewChunk - 1) / previewChunk
	results := make([]atomic.Pointer[[]int32], chunks)
	var taken atomic.Int64
	var stopped atomic.Bool
	do := func(c int) bool {
		if results[c].Load() != nil {
			return true
		}
		if stopped.Load() || stop != nil && stop() {
			stopped.Store(true)
			return false
		}
		out := work(c*previewChunk, min((c+1)*previewChunk, n))
		results[c].CompareAndSwap(nil, &out)
		return true
	}
	run := func() {
		for c := int(taken.Add(1) - 1); c < chunks; c = int(taken.Add(1) - 1) {
			if !do(c) {
				return
			}
		}
		for c := 0; c < chunks; c++ { // what others still hold
			if !do(c) {
				return
			}
		}
	}
	if n >= previewParallelFrom {
		for w := 1; w < min(runtime.GOMAXPROCS(0), 4); w++ {
			go run()
		}
	}
	run() // returns with every chunk's result stored, or stopped
	if stopped.Load() {
		return nil, false
	}
	out := make([][]int32, chunks)
	for c := range results {
		out[c] = *results[c].Load()
	}
	return out, true
}

// Suggest is Index.Suggest for the console: the same names in the same order (those containing
// lit first, shortest first, then those within a small edit distance, ties by name), found by
// keeping the best n as it goes instead of sorting every candidate (a literal like "_" is in
// nearly every name), and abandoned when stop says so.
func (pv *Previewer) Suggest(lit string, n int, stop func() bool) ([]string, bool) {
	if lit == "" || n <= 0 {
		return nil, true
	}
	type cand struct {
		name string
		d    int
	}
	less := func(a, b cand) bool { return a.d < b.d || a.d == b.d && a.name < b.name }
	best := make([]cand, 0, n+1)
	maxd := max(1, len(lit)/4)
	for i, name := range pv.names {
		if i%previewChunk == 0 && stop != nil && stop() {
			return nil, false
		}
		var c cand
		switch {
		case strings.Contains(name, lit):
			c = cand{name, -1000 + len(name)}
		case abs(len(name)-len(lit)) > maxd:
			continue
		default:
			d := editDistance(lit, name, maxd)
			if d > maxd {
				continue
			}
			c = cand{name, d}
		}
		if len(best) == n && !less(c, best[n-1]) {
			continue
		}
		at := sort.Search(len(best), func(k int) bool { return less(c, best[k]) })
		best = append(best, cand{})
		copy(best[at+1:], best[at:])
		best[at] = c
		if len(best) > n {
			best = best[:n]
		}
	}
	out := make([]string, len(best))
	for i, c := range best {
		out[i] = c.name
	}
	return out, true
}
