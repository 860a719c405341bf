package stream

import (
	"context"
	"encoding/binary"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/ftctl/ftctl/internal/fixture"
	"github.com/ftctl/ftctl/tracedat"
	"github.com/ftctl/ftctl/tracefs"
)

// flightFS is rawFS with what a flight recorder's dump reads besides: a kprobe group (ftx/open,
// id 400) listed in dynamic_events, an enabled event (sched/sched_switch, id 300), a disabled
// one (irq/irq_handler_entry, id 302), CPU 0's stats counting 3 events lost, and, with
// snapshot, a snapshot file (the buffer freed) and every CPU's snapshot_raw holding
// snapshotMarkers where trace_pipe_raw holds markers.
func flightFS(t *testing.T, markers, snapshotMarkers map[int][]string) *tracefs.FS {
	t.Helper()
	fs := rawFS(t, markers)
	root := fs.Mount.Path
	put := func(rel, body string) {
		t.Helper()
		p := filepath.Join(root, rel)
		os.MkdirAll(filepath.Dir(p), 0o755)
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	format := func(name string, id int) string {
		return "name: " + name + "\nID: " + strconv.Itoa(id) + "\nformat:\n\tfield:unsigned short common_type;\toffset:0;\tsize:2;\tsigned:0;\n" +
			"\tfield:unsigned char common_flags;\toffset:2;\tsize:1;\tsigned:0;\n\tfield:unsigned char common_preempt_count;\toffset:3;\tsize:1;\tsigned:0;\n" +
			"\tfield:int common_pid;\toffset:4;\tsize:4;\tsigned:1;\n\n\tfield:int x;\toffset:8;\tsize:4;\tsigned:1;\n\nprint fmt: \"x=%d\", REC->x\n"
	}
	for _, e := range []struct {
		path string
		id   int
	}{{"sched/sched_switch", 300}, {"irq/irq_handler_entry", 302}, {"ftx/open", 400}} {
		put("events/"+e.path+"/format", format(filepath.Base(e.path), e.id))
		put("events/"+e.path+"/id", strconv.Itoa(e.id)+"\n")
	}
	put("events/ftrace/print/id", "5\n")
	put("set_event", "sched:sched_switch\n")
	put("dynamic_events", "p:ftx/open do_sys_openat2\n")
	put("printk_formats", "0xffffffff82000010 : \"hello\\n\"\n")
	put("per_cpu/cpu0/stats", "entries: 2\noverrun: 3\ndropped events: 0\nread events: 0\n")
	if snapshotMarkers != nil {
		put("snapshot", "# tracer: nop\n#\n#\n# * Snapshot is freed *\n#\n")
		for cpu := range markers {
			put("per_cpu/cpu"+strconv.Itoa(cpu)+"/snapshot_raw", "")
		}
		for cpu, texts := range snapshotMarkers {
			put("per_cpu/cpu"+strconv.Itoa(cpu)+"/snapshot_raw", string(fixture.MarkerPage(cpu, texts, 154)))
		}
	}
	return fs
}

// formatNames lists a header's formats as SYSTEM/NAME.
func formatNames(h *tracedat.Header) string {
	var out []string
	for _, f := range h.Ftrace {
		out = append(out, "ftrace/"+strings.TrimPrefix(strings.SplitN(string(f), "\n", 2)[0], "name: "))
	}
	for _, s := range h.Systems {
		for _, f := range s.Formats {
			out = append(out, s.Name+"/"+strings.TrimPrefix(strings.SplitN(string(f), "\n", 2)[0], "name: "))
		}
	}
	return strings.Join(out, " ")
}

// markerTexts reads a trace.dat's events as COMM:TEXT.
func markerTexts(t *testing.T, f *tracedat.File) string {
	t.Helper()
	var got []string
	if _, err := ReadFile(f, FileOptions{}, func(ev *Event) error {
		got = append(got, string(ev.Comm)+":"+string(ev.Text))
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	return strings.Join(got, " ")
}

func fileMode(t *testing.T, path string) os.FileMode {
	t.Helper()
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	return fi.Mode().Perm()
}

// SaveHeader writes a trace.dat without CPUs, 0600, under its name only: the ftrace system's
// formats, the enabled events', every event of the dynamic events' groups (not a disabled
// tracepoint's), kallsyms, the printk formats, the clock. The probe removed afterwards, a dump
// still has its format from there.
func TestSaveHeader(t *testing.T) {
	fs := flightFS(t, map[int][]string{0: {"one"}}, nil)
	dir := t.TempDir()
	path := filepath.Join(dir, "flight.header")
	if err := SaveHeader(fs.Top(), path); err != nil {
		t.Fatal(err)
	}
	if m := fileMode(t, path); m != 0o600 {
		t.Errorf("mode %v", m)
	}
	if names, _ := os.ReadDir(dir); len(names) != 1 {
		t.Errorf("the directory holds %v", names)
	}
	h := readDat(t, path)
	if got, want := formatNames(&h.Header), "ftrace/print ftx/open sched/sched_switch"; got != want {
		t.Errorf("formats %q, want %q", got, want)
	}
	if h.CPUs != 0 || len(h.Kallsyms) == 0 || len(h.Printk) == 0 || h.Clock() != "local" || len(h.HeaderPage) == 0 || h.PageSize <= 0 {
		t.Errorf("%d CPUs, %d bytes of kallsyms, %d of printk formats, clock %q, %d of header_page, page size %d",
			h.CPUs, len(h.Kallsyms), len(h.Printk), h.Clock(), len(h.HeaderPage), h.PageSize)
	}
	// again: replaced whole
	if err := SaveHeader(fs.Top(), path); err != nil {
		t.Fatal(err)
	}
	if err := SaveHeader(fs.Top(), filepath.Join(dir, "missing", "h")); err == nil {
		t.Error("a header saved into a missing directory")
	}
}

// Dump, where the trace array has a snapshot buffer: the pages are read from snapshot_raw
// (not trace_pipe_raw, which stays as it was), written with the saved header's formats, the
// kernel's for an event the header lacks (irq_handler_entry, in the pages), none for an id no
// event has (999), and the figures the stats and the pages give. The file is 0600, the working
// directory gone. Without a snapshot buffer, the live ring is read (consumed).
func TestDump(t *testing.T) {
	for _, snapshot := range []bool{true, false} {
		t.Run(fmt.Sprintf("snapshot=%v", snapshot), func(t *testing.T) {
			live := map[int][]string{0: {"one", "three"}, 1: {"two", "four"}}
			var snap map[int][]string
			want := "cat:one e\x1bx y:three cat:two e\x1bx y:four " + idEvents
			if snapshot {
				snap = map[int][]string{0: {"s1", "s3"}, 1: {"s2"}}
				want = "cat:s1 e\x1bx y:s3 cat:s2 " + idEvents
			}
			fs := flightFS(t, live, snap)
			root := fs.Mount.Path
			dir := t.TempDir()
			header := filepath.Join(dir, "flight.header")
			if err := SaveHeader(fs.Top(), header); err != nil {
				t.Fatal(err)
			}
			// the probe is gone by the dump; an event not saved and an unknown id are in the pages
			os.RemoveAll(filepath.Join(root, "events/ftx"))
			os.WriteFile(filepath.Join(root, "dynamic_events"), nil, 0o644)
			cpu := 1
			if snapshot {
				cpu = 2
			}
			os.MkdirAll(filepath.Join(root, "per_cpu/cpu"+strconv.Itoa(cpu)), 0o755)
			os.WriteFile(filepath.Join(root, "per_cpu/cpu"+strconv.Itoa(cpu)+"/stats"), []byte("overrun: 0\n"), 0o644)
			page := idPage(302, 400, 999)
			file := "trace_pipe_raw"
			if snapshot {
				file = "snapshot_raw"
				os.WriteFile(filepath.Join(root, "per_cpu/cpu2/trace_pipe_raw"), nil, 0o644)
			} else {
				b, _ := os.ReadFile(filepath.Join(root, "per_cpu/cpu1/trace_pipe_raw"))
				page = append(b, page...)
			}
			os.WriteFile(filepath.Join(root, "per_cpu/cpu"+strconv.Itoa(cpu)+"/"+file), page, 0o644)

			out := filepath.Join(dir, "dump.dat")
			st, err := Dump(context.Background(), fs.Top(), header, out)
			if err != nil {
				t.Fatal(err)
			}
			if m := fileMode(t, out); m != 0o600 {
				t.Errorf("mode %v", m)
			}
			if names, _ := os.ReadDir(dir); len(names) != 2 {
				t.Errorf("the directory holds %v", names)
			}
			f := readDat(t, out)
			if got := formatNames(&f.Header); got != "ftrace/print ftx/open irq/irq_handler_entry sched/sched_switch" {
				t.Errorf("formats %q", got)
			}
			if len(f.Kallsyms) == 0 || len(f.Printk) == 0 || len(f.Cmdlines) == 0 || f.Clock() != "local" {
				t.Errorf("%d bytes of kallsyms, %d of printk, %d of cmdlines, clock %q", len(f.Kallsyms), len(f.Printk), len(f.Cmdlines), f.Clock())
			}
			if got := markerTexts(t, f); got != want {
				t.Errorf("events %q, want %q", got, want)
			}
			events := int64(4 + 3)
			if snapshot {
				events = 3 + 3
			}
			if !st.Snapshot == snapshot || st.Consumed == snapshot || st.Allocated != snapshot || st.Lost != 3 ||
				st.Events != events || fmt.Sprint(st.NoFormat) != "[999]" || st.Pages != 3 || st.Bytes != 3*4096 {
				t.Errorf("stats %+v (events want %d)", st, events)
			}
			if snapshot {
				if b, _ := os.ReadFile(filepath.Join(root, "snapshot")); b[0] != '2' {
					t.Errorf("the snapshot was not cleared last: %q", b[:1])
				}
			}
		})
	}
}

// idEvents are idPage(302, 400, 999)'s events as markerTexts reads them.
const idEvents = "cat:x=7 cat:x=7 cat:event type 999 (no format known)"

// idPage is a ring-buffer page of CPU 2 at 3 s holding a 12-byte record of each type id.
func idPage(ids ...uint16) []byte {
	var data []byte
	for _, id := range ids {
		e := binary.LittleEndian.AppendUint16(nil, id)
		e = append(e, 0, 0)
		e = binary.LittleEndian.AppendUint32(e, 154)
		e = binary.LittleEndian.AppendUint32(e, 7)
		data = binary.LittleEndian.AppendUint32(data, 3<<0|1000<<5) // type_len 3: 12 bytes
		data = append(data, e...)
	}
	page := binary.LittleEndian.AppendUint64(nil, 3_000_000_000)
	page = binary.LittleEndian.AppendUint64(page, uint64(len(data)))
	page = append(page, data...)
	return append(page, make([]byte, 4096-len(page))...)
}

// PrepareSnapshot allocates (swap, then clear) only a freed snapshot; FreeSnapshot frees it.
// Without a snapshot buffer: ErrNoSnapshot, and FreeSnapshot does nothing.
func TestPrepareSnapshot(t *testing.T) {
	fs := flightFS(t, map[int][]string{0: {"one"}}, map[int][]string{})
	p := filepath.Join(fs.Mount.Path, "snapshot")
	if err := PrepareSnapshot(fs.Top()); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(p); b[0] != '2' {
		t.Errorf("snapshot after PrepareSnapshot: %q", b[:1])
	}
	os.WriteFile(p, []byte("# tracer: nop\n#\n#\n# * Snapshot is allocated *\n"), 0o644)
	if err := PrepareSnapshot(fs.Top()); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(p); b[0] != '#' {
		t.Errorf("an allocated snapshot was written: %q", b[:1])
	}
	if err := FreeSnapshot(fs.Top()); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(p); b[0] != '0' {
		t.Errorf("snapshot after FreeSnapshot: %q", b[:1])
	}
	os.Remove(p)
	if err := PrepareSnapshot(fs.Top()); err != ErrNoSnapshot {
		t.Errorf("without a snapshot: %v", err)
	}
	if err := FreeSnapshot(fs.Top()); err != nil {
		t.Errorf("FreeSnapshot without a snapshot: %v", err)
	}
}
