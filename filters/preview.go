package filters

import (
	"math/bits"
	"runtime"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
)

// Previewer resolves pattern after pattern over one index as someone types them (the console's
// Functions view). Each distinct name is matched once, and only the names a pattern can select
// are tested: those starting with its literal head (a range of the sorted names), or holding a
// byte pair two of its adjacent tokens admit (lists made once), or the records of modules for
// ":mod:". A full glob compares its fixed head and tail in place and runs its middle as a
// deterministic automaton (globTest). Larger work is shared by the CPUs in small chunks taken as
// they go (a CPU busy with something else takes fewer); a computation can be abandoned when the
// text changes again; a pattern that provably selects a subset of an earlier one's matches
// (Pattern.Narrows) is resolved within them. Its answers are Index.Resolve's, record for record
// (TestPreviewerAgrees, TestPreviewerAgreesRandom). A Previewer is safe for concurrent use.
type Previewer struct {
	ix    *Index
	names []string // distinct valid names, in the order of their first record
	first []int32  // per name: its first record (0-based)
	next  []int32  // per record: the next record of the same name, -1 at the end
	of    []int32  // per record: its name, -1 for invalid records
	all   []int    // every valid record (1-based): what "*" selects
	// sorted is the names (their positions in names) in byte order: the names starting with a
	// pattern's literal head are a range of it.
	sorted []int32
	// inModule is the valid records of modules (1-based): the only candidates of ":mod:M".
	inModule []int
	// pairNames[pairAt[k]:pairAt[k+1]] is the names (positions in names, ascending) in which
	// byte a is followed by byte b, k = a<<8|b: the names a pattern can select are among those
	// holding one of the byte pairs two of its adjacent one-byte tokens admit.
	pairAt    []int32
	pairNames []int32
}

// pair is the names holding the byte pair k.
func (pv *Previewer) pair(k int) []int32 { return pv.pairNames[pv.pairAt[k]:pv.pairAt[k+1]] }

// NewPreviewer prepares ix for previews, once per index (tens of milliseconds and a few
// megabytes for 70,000 records: the byte-pair lists are most of both).
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
		if k.Module != "" {
			pv.inModule = append(pv.inModule, pos+1)
		}
	}
	// The pair lists, in one array: count, then fill.
	pv.pairAt = make([]int32, 1<<16+1)
	counted := make([]int32, 1<<16) // the last name that counted each pair, plus one
	eachPair := func(f func(k int, g int32)) {
		clear(counted)
		for g, name := range pv.names {
			for i := 0; i+1 < len(name); i++ {
				if k := int(name[i])<<8 | int(name[i+1]); counted[k] != int32(g)+1 {
					counted[k] = int32(g) + 1
					f(k, int32(g))
				}
			}
		}
	}
	eachPair(func(k int, _ int32) { pv.pairAt[k+1]++ })
	for k := 1; k < len(pv.pairAt); k++ {
		pv.pairAt[k] += pv.pairAt[k-1]
	}
	pv.pairNames = make([]int32, pv.pairAt[1<<16])
	fill := append([]int32(nil), pv.pairAt[:1<<16]...)
	eachPair(func(k int, g int32) { pv.pairNames[fill[k]] = g; fill[k]++ })
	pv.sorted = make([]int32, len(pv.names))
	for i := range pv.sorted {
		pv.sorted[i] = int32(i)
	}
	sort.Slice(pv.sorted, func(a, b int) bool { return pv.names[pv.sorted[a]] < pv.names[pv.sorted[b]] })
	return pv
}

// startingWith is the names (positions in names) that start with prefix.
func (pv *Previewer) startingWith(prefix string) []int32 {
	lo := sort.Search(len(pv.sorted), func(i int) bool { return pv.names[pv.sorted[i]] >= prefix })
	hi := lo
	for hi < len(pv.sorted) && strings.HasPrefix(pv.names[pv.sorted[hi]], prefix) {
		hi++
	}
	return pv.sorted[lo:hi]
}

// pairsMost bounds the byte pairs a token pair may stand for (a class times a class), and
// pairsWorth the share of the names below which candidates from pairs are worth the merge.
const (
	pairsMost  = 64
	pairsWorth = 2 // at most half the names
)

// pairLists is the lists of the rarest pair of adjacent one-byte tokens of p's function half
// and how many names they hold in all: the names p can select are among them. ok is false when
// no pair narrows enough (then every name is a candidate); no lists and ok: nothing can match.
func (pv *Previewer) pairLists(p *Pattern) (lists [][]int32, n int, ok bool) {
	if p.re != nil || p.hasMod && p.fn.blank() || p.fn.typ == matchIndex {
		return nil, 0, false
	}
	g := p.fn.kglob()
	if g.never {
		return nil, 0, true
	}
	toks := globTokens(&g)
	n = len(pv.names) / pairsWorth
	for i := 0; i+1 < len(toks); i++ {
		a, b := toks[i], toks[i+1]
		if a.kind == gStar || b.kind == gStar {
			continue
		}
		as, bs := setBytes(a.bytes()), setBytes(b.bytes())
		if len(as)*len(bs) > pairsMost {
			continue
		}
		var these [][]int32
		k := 0
		for _, x := range as {
			for _, y := range bs {
				if l := pv.pair(int(x)<<8 | int(y)); len(l) > 0 {
					these = append(these, l)
					k += len(l)
				}
			}
		}
		if k == 0 {
			return nil, 0, true // the two tokens match two bytes in a row: no name has them
		}
		if k < n {
			lists, n, ok = these, k, true
		}
	}
	return lists, n, ok
}

// merge is the names of several pair lists, once each, ascending.
func (pv *Previewer) merge(lists [][]int32, n int) []int32 {
	switch len(lists) {
	case 0:
		return []int32{}
	case 1:
		return lists[0]
	}
	mark := make([]uint64, (len(pv.names)+63)/64)
	for _, l := range lists {
		for _, g := range l {
			mark[g>>6] |= 1 << (g & 63)
		}
	}
	out := make([]int32, 0, n)
	for w, word := range mark {
		for word != 0 {
			out = append(out, int32(w*64+bits.TrailingZeros64(word)))
			word &= word - 1
		}
	}
	return out
}

// setBytes lists the bytes of a set.
func setBytes(set [4]uint64) []byte {
	var out []byte
	for w, word := range set {
		for word != 0 {
			out = append(out, byte(w*64+bits.TrailingZeros64(word)))
			word &= word - 1
		}
	}
	return out
}

// literalHead is the text every name the pattern's function half selects starts with ("" when
// none can be said).
func (p *Pattern) literalHead() string {
	switch {
	case p.re != nil || p.hasMod && p.fn.blank():
		return ""
	case p.fn.typ == matchFront || p.fn.typ == matchFull:
		return p.fn.search
	case p.fn.typ == matchGlob:
		return p.fn.k.prefix // kglob.match requires it too
	}
	return ""
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
		return globTest(&p.fn.k)
	}
	return p.fn.match
}

// Cost is how many names or records Resolve would test for p (0 for a lookup): a caller can
// resolve a cheap pattern at once and hand an expensive one to another goroutine.
func (pv *Previewer) Cost(p *Pattern, within []int) int {
	c := pv.candidates(p, within)
	switch {
	case c.answered:
		return 0
	case c.within != nil:
		return len(c.within)
	case c.names != nil:
		return len(c.names)
	case c.lists != nil || c.pairs > 0:
		return c.pairs
	}
	return len(pv.names)
}

// candidateSet is what Resolve tests for a pattern: the answer itself (a lookup, or every
// record), records (within), names, or the pair lists holding them (merged only when used).
type candidateSet struct {
	answered bool
	answer   []int
	within   []int
	names    []int32
	lists    [][]int32
	pairs    int
}

// candidates narrows what p can select before anything is tested: ":mod:M" selects only records
// of modules; a literal head, only names starting with it (a range of the sorted names); two
// adjacent one-byte tokens, only names holding a pair of bytes they admit ("sched": the names
// with "sc"; "_[rw]": those with "_r" or "_w").
func (pv *Previewer) candidates(p *Pattern, within []int) candidateSet {
	if _, ok := p.ExactName(); ok {
		return candidateSet{answered: true, answer: pv.ix.Resolve(p)} // a lookup
	}
	if p.re == nil && !p.hasMod && (p.fn.typ == matchEnd || p.fn.typ == matchMiddle) && p.fn.search == "" {
		return candidateSet{answered: true, answer: pv.all} // "*", "**": every valid record
	}
	switch {
	case within != nil:
		return candidateSet{within: within}
	case p.re == nil && p.hasMod && !p.modExclude:
		return candidateSet{within: pv.inModule}
	}
	if head := p.literalHead(); head != "" {
		return candidateSet{names: pv.startingWith(head)}
	}
	if lists, n, ok := pv.pairLists(p); ok {
		if lists == nil {
			return candidateSet{names: []int32{}}
		}
		return candidateSet{lists: lists, pairs: n}
	}
	return candidateSet{}
}

// Resolve returns the 1-based indexes of the records p selects, ascending, as Index.Resolve. With
// within (the result of an earlier Resolve of a pattern that p Narrows), only those records are
// tested. stop (may be nil) is asked between chunks: when it says true, Resolve gives up and
// returns false. The result may be shared with other calls: it must not be modified.
func (pv *Previewer) Resolve(p *Pattern, within []int, stop func() bool) ([]int, bool) {
	if stop != nil && stop() {
		return nil, false
	}
	c := pv.candidates(p, within)
	if c.answered {
		return c.answer, true
	}
	test := nameTest(p)
	recs := pv.ix.Records
	within, names := c.within, c.names
	if c.lists != nil {
		names = pv.merge(c.lists, c.pairs)
	}
	if within != nil {
		parts, ok := shareChunks(len(within), func(lo, hi int) []int32 {
			out := chunkBuffer()
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
		recycleChunks(parts)
		return out, true
	}
	n := len(pv.names)
	if names != nil {
		n = len(names)
	}
	parts, ok := shareChunks(n, func(lo, hi int) []int32 {
		out := chunkBuffer()
		for i := lo; i < hi; i++ {
			g := int32(i)
			if names != nil {
				g = names[i]
			}
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
	recycleChunks(parts)
	out := make([]int, 0, popcount(bm))
	for w, word := range bm {
		for word != 0 {
			out = append(out, w*64+bits.TrailingZeros64(word)+1)
			word &= word - 1
		}
	}
	return out, true
}

// chunkPool keeps the chunks' result buffers from one resolve to the next: made anew, they were
// most of a resolve's garbage, and the collections they brought made the slow tail of a pasted
// glob's preview (BENCHMARKS.md, "Preview per keystroke").
var chunkPool = sync.Pool{New: func() any { return new([]int32) }}

// chunkBuffer is an empty buffer for a chunk's result.
func chunkBuffer() []int32 { return (*chunkPool.Get().(*[]int32))[:0] }

// recycleChunks gives the chunks' buffers back once their results are copied out. (A chunk a
// straggler redid after the caller returned is not among them: it is left to the collector.)
func recycleChunks(parts [][]int32) {
	for _, p := range parts {
		if cap(p) > 0 && cap(p) <= 4*previewChunk {
			b := p[:0]
			chunkPool.Put(&b)
		}
	}
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
	var rows editRows
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
			d := rows.distance(lit, name, maxd)
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

// editRows is EditDistance with its two rows kept from one name to the next: the suggestions
// compare a literal with thousands of names, and a pair of slices each would keep the garbage
// collector busy while the next key is resolved.
type editRows struct{ prev, cur []int }

// distance is EditDistance's Levenshtein distance, giving up (limit+1) once every cell of a row
// exceeds limit.
func (r *editRows) distance(a, b string, limit int) int {
	if cap(r.prev) < len(b)+1 {
		r.prev, r.cur = make([]int, len(b)+1), make([]int, len(b)+1)
	}
	prev, cur := r.prev[:len(b)+1], r.cur[:len(b)+1]
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		rowMin := cur[0]
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
			rowMin = min(rowMin, cur[j])
		}
		if rowMin > limit {
			return limit + 1
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}
