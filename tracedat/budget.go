package tracedat

import (
	"fmt"
	"sync"
	"unsafe"
)

// Files come from colleagues, customers and CI systems: a trace.dat is untrusted input. Every
// size, count and offset it holds is checked before use, and reading it is bounded twice over:
//
//   - memory: what Read and File.Buffer keep (sections read, blocks decompressed, the
//     structures that hold them, the CPU tables) is charged to a budget of MaxMemory(size)
//     before it is allocated; past it, the file is refused with ErrTooLarge;
//   - the file's bytes: each section and each CPU's data is handed out once (its offset is
//     remembered: an options chain that loops, CPUs or buffers that share one chunk list, are
//     refused), and together they hold at most the file's size (overlapping ones are refused),
//     so that no byte is decompressed, or read by stream/, twice over.
//
// Time follows: every loop runs over bytes charged to one of the two.

// Budget: a file is read in at most the larger of minBudget and budgetFactor times its size.
// 16: trace-cmd's zstd and zlib blocks decompress 4 to 5 times over (stream's fixtures of
// 6.12: 4.4 and 5.0; kallsyms text and ring-buffer pages compress alike), and a version 6
// file's empty event systems (5 bytes each) take 8 times their bytes as Systems; 16 leaves
// room for pages more compressible than those (idle CPUs' half-empty pages) and is still a
// small multiple: a 10 MiB recording is read in at most 160 MiB. The floor lets any file of
// up to 4 MiB decompress to what a real recording of that size holds.
const (
	minBudget    = 64 << 20
	budgetFactor = 16
	// partCost is what remembering one section or CPU's data takes (a map entry).
	partCost = 64
)

// MaxMemory is the most memory Read, and File.Buffer of every buffer, take to read a file of
// size bytes (besides the compressed block being decompressed, at most the file's size, and
// the decompressor's state): the larger of 64 MiB and 16 times size. A file that would take
// more is refused with ErrTooLarge.
func MaxMemory(size int64) int64 { return max(minBudget, budgetFactor*max(size, 0)) }

// budget is what reading one file may still take, and which of its parts were handed out.
type budget struct {
	size    int64 // the file's
	limit   int64 // MaxMemory(size)
	used    int64
	claimed int64          // bytes of the file handed out as sections and CPU data
	parts   map[int64]part // their offsets
}

func newBudget(size int64) *budget {
	return &budget{size: size, limit: MaxMemory(size), parts: map[int64]part{}}
}

// part is a section, or a buffer's CPU's data, in messages.
type part struct {
	name string // the section's; CPU data: the buffer's ("" the top level's)
	cpu  int    // -1 for a section
}

func (p part) String() string {
	switch {
	case p.cpu < 0:
		return "the " + p.name + " section"
	case p.name == "":
		return fmt.Sprintf("CPU %d's data", p.cpu)
	}
	return fmt.Sprintf("buffer %q CPU %d's data", p.name, p.cpu)
}

// charge takes n bytes of memory (what, for the message) from the budget, before they are
// allocated.
func (r *reader) charge(n int64, what string) error {
	b := r.b
	if b == nil || n <= 0 {
		return nil
	}
	if n > b.limit-b.used {
		return r.errorf(ErrTooLarge, "%s would take %s more, with %s taken: more than the %s a file of %s may take to read (the larger of 64 MiB and %d times its size)",
			what, bytesText(n), bytesText(b.used), bytesText(b.limit), bytesText(b.size), budgetFactor)
	}
	b.used += n
	return nil
}

// claim hands out the n bytes of the file at off as p: once, and all of them together no more
// than the file holds.
func (r *reader) claim(off, n int64, p part) error {
	b := r.b
	if b == nil {
		return nil
	}
	fail := func(reason string, args ...any) error {
		return &FormatError{Section: r.section, Offset: off, Reason: fmt.Sprintf(reason, args...), Err: ErrCorrupt}
	}
	if prev, ok := b.parts[off]; ok {
		if prev == p {
			return fail("%s at %d is pointed at again: a loop", p, off)
		}
		return fail("%s at %d was read already, as %s: the file gives it twice", p, off, prev)
	}
	if n < 0 || n > b.size-b.claimed {
		return fail("%s (%d bytes at %d) and the parts read before it hold more than the file's %d bytes: they overlap", p, n, off, b.size)
	}
	if err := r.charge(partCost, "remembering "+p.String()); err != nil {
		return err
	}
	b.parts[off] = p
	b.claimed += n
	return nil
}

// grow appends v to s, the memory a larger array takes charged first (what, for the message).
func grow[T any](r *reader, s []T, v T, what string) ([]T, error) {
	if len(s) == cap(s) {
		n := max(8, 2*cap(s))
		if err := r.charge(int64(n)*int64(unsafe.Sizeof(v)), what); err != nil {
			return nil, err
		}
		t := make([]T, len(s), n)
		copy(t, s)
		s = t
	}
	return append(s, v), nil
}

// makeCharged is a slice of n T, its memory charged first; each takes at least min bytes of
// the reader's, which must hold them.
func makeCharged[T any](r *reader, n uint64, min int64, what string) ([]T, error) {
	if n == 0 {
		return nil, nil
	}
	if left := r.size - r.off; n > uint64(left/min) {
		return nil, r.fail("%d %s in %d bytes (each takes at least %d)", n, what, left, min)
	}
	var v T
	if err := r.charge(int64(n)*int64(unsafe.Sizeof(v)), fmt.Sprintf("%d %s", n, what)); err != nil {
		return nil, err
	}
	return make([]T, 0, n), nil
}

// views are a file's instances' buffers, read once and shared by every File of the file.
type views struct {
	mu  sync.Mutex // File.Buffer may be called from several goroutines (the console's views)
	all map[string]*File
}

func bytesText(n int64) string {
	switch {
	case n >= 10<<20:
		return fmt.Sprintf("%d MiB", n>>20)
	case n >= 10<<10:
		return fmt.Sprintf("%d KiB", n>>10)
	}
	return fmt.Sprintf("%d bytes", n)
}
