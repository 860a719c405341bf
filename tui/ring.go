package tui

import "sort"

// DefaultRingSize is how many events the console keeps by default: the last 100,000. Memory is
// bounded by it (a row is ~130 bytes plus its text), whatever the event rate.
const DefaultRingSize = 100_000

// Ring keeps the last N rows. Rows are numbered by Seq from 1, without gaps, so the row of a
// sequence number is found by arithmetic.
type Ring struct {
	rows  []Row
	start int    // index of the oldest row
	n     int    // rows held
	next  uint64 // Seq of the next row pushed
}

// NewRing makes a ring of n rows (DefaultRingSize when n <= 0).
func NewRing(n int) *Ring {
	if n <= 0 {
		n = DefaultRingSize
	}
	return &Ring{rows: make([]Row, n), next: 1}
}

// Cap is how many rows the ring keeps.
func (r *Ring) Cap() int { return len(r.rows) }

// Len is how many rows it holds.
func (r *Ring) Len() int { return r.n }

// Push appends a row, numbering it, and evicts the oldest when full. It returns the row's Seq.
func (r *Ring) Push(row Row) uint64 {
	row.Seq = r.next
	r.next++
	if r.n < len(r.rows) {
		r.rows[(r.start+r.n)%len(r.rows)] = row
		r.n++
	} else {
		r.rows[r.start] = row
		r.start = (r.start + 1) % len(r.rows)
	}
	return row.Seq
}

// Oldest is the Seq of the oldest row held (Newest()+1 when empty).
func (r *Ring) Oldest() uint64 { return r.next - uint64(r.n) }

// Newest is the Seq of the newest row (0 before any).
func (r *Ring) Newest() uint64 { return r.next - 1 }

// At returns the row with this Seq, or nil when it was evicted or is yet to come.
func (r *Ring) At(seq uint64) *Row {
	if seq < r.Oldest() || seq >= r.next {
		return nil
	}
	return &r.rows[(r.start+int(seq-r.Oldest()))%len(r.rows)]
}

// Reset empties the ring (numbering goes on).
func (r *Ring) Reset() {
	clear(r.rows)
	r.start, r.n = 0, 0
}

// seqList is an ascending list of the Seqs of the rows a filter lets through: appended to as
// rows arrive, trimmed as the ring evicts them. The stream view's scrolling works on it.
type seqList struct {
	seqs []uint64
	off  int // seqs[off:] are live
}

func (l *seqList) Len() int          { return len(l.seqs) - l.off }
func (l *seqList) At(i int) uint64   { return l.seqs[l.off+i] }
func (l *seqList) Append(seq uint64) { l.seqs = append(l.seqs, seq) }
func (l *seqList) Reset()            { l.seqs, l.off = l.seqs[:0], 0 }
func (l *seqList) live() []uint64    { return l.seqs[l.off:] }

// Last is the newest Seq, if any.
func (l *seqList) Last() (uint64, bool) {
	if l.Len() == 0 {
		return 0, false
	}
	return l.seqs[len(l.seqs)-1], true
}

// Trim drops the Seqs below oldest (evicted rows), compacting now and then so that the slice
// does not grow without bound.
func (l *seqList) Trim(oldest uint64) {
	live := l.live()
	k := sort.Search(len(live), func(i int) bool { return live[i] >= oldest })
	l.off += k
	if l.off > 4096 && l.off > len(l.seqs)/2 {
		n := copy(l.seqs, l.seqs[l.off:])
		l.seqs, l.off = l.seqs[:n], 0
	}
}

// Index is the position of the last Seq <= seq, or -1 when every Seq is greater.
func (l *seqList) Index(seq uint64) int {
	live := l.live()
	return sort.Search(len(live), func(i int) bool { return live[i] > seq }) - 1
}
