package tracefs

import (
	"bytes"
	"io"
	"os"
)

// The snapshot buffer of a trace array (CONFIG_TRACER_SNAPSHOT): a second ring buffer of the
// live one's size, which writing "1" to the trace array's snapshot file swaps with the live one
// (tracing goes on into the buffer swapped in, with no gap), "2" clears and "0" frees
// (Documentation/trace/ftrace.rst, "Snapshot"). Its pages are read per CPU from
// per_cpu/cpuN/snapshot_raw.
//
// (seen, Debian 6.1.0-56 and 6.12.117 under qemu) snapshot_raw reads as trace_pipe_raw does:
// a consuming read of one ring-buffer page per read(2) (4096 bytes when 8192 were asked, the
// last page partial, zero-filled), then EAGAIN with O_NONBLOCK once the CPU's snapshot is
// empty (nothing writes into it: without O_NONBLOCK the read would wait for ever); read again,
// or opened again, it stays empty. It opens and reads EAGAIN when the snapshot is freed too.
// The snapshot file reads "# * Snapshot is freed *" when freed, "# * Snapshot is allocated *"
// when allocated and empty, and the snapshot's events as trace does otherwise; reading it does
// not stop tracing.

// Values written to a trace array's snapshot file.
const (
	SnapshotFree  = "0" // clear and free the snapshot buffer
	SnapshotSwap  = "1" // allocate it if need be, and swap it with the live buffer
	SnapshotClear = "2" // empty it, keeping its memory
)

// HasSnapshot says whether the trace array has a snapshot buffer to swap with
// (CONFIG_TRACER_SNAPSHOT: the snapshot file exists).
func (i *Instance) HasSnapshot() bool { return i.Has("snapshot") }

// WriteSnapshot writes op (SnapshotFree, SnapshotSwap, SnapshotClear) to the snapshot file.
// The kernel refuses a swap (EBUSY) while a latency tracer (irqsoff, wakeup...) uses the
// snapshot buffer, or a conditional snapshot (a hist trigger's snapshot()) holds it.
func (i *Instance) WriteSnapshot(op string) error { return i.Write("snapshot", op) }

// snapshotFreed is the line the snapshot file starts with (after the tracer's) when the
// snapshot buffer is freed.
var snapshotFreed = []byte("# * Snapshot is freed *")

// SnapshotAllocated says whether the trace array's snapshot buffer is allocated, from the
// first 4 KiB of the snapshot file (the lines before any event).
func (i *Instance) SnapshotAllocated() (bool, error) {
	f, err := os.Open(i.Path("snapshot"))
	if err != nil {
		return false, i.fs.opError("open", i.Path("snapshot"), "", unwrapPath(err))
	}
	defer f.Close()
	b := make([]byte, 4096)
	n, err := io.ReadFull(f, b)
	if err != nil && err != io.ErrUnexpectedEOF && err != io.EOF {
		return false, i.fs.opError("read", i.Path("snapshot"), "", unwrapPath(err))
	}
	return !bytes.Contains(b[:n], snapshotFreed), nil
}

// OpenSnapshotSplicer is OpenSplicer of the snapshot buffer: every CPU's snapshot_raw. Its
// Flush reads a CPU's snapshot until it is empty (nothing writes into it).
func (i *Instance) OpenSnapshotSplicer() (*Splicer, error) { return i.openSplicer("snapshot_raw") }
