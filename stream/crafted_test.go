package stream

import (
	"bytes"
	"errors"
	"fmt"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/ftctl/ftctl/tracedat"
	"github.com/ftctl/ftctl/tracefs"
)

// Crafted trace.dat files (issue 28): each class of hostile input the review found, read by
// ReadFile and rendered as report renders it. Each must end in an error naming where the file
// is wrong, or in events, within a bounded memory and time; never a panic.

// craft is a version 6 trace.dat with the header page, formats and CPU data given.
type craft struct {
	pageSize   int
	headerPage string // "" for the 6.12 kernel's
	ftrace     []string
	systems    []tracedat.System
	cpus       [][]byte
}

func (c craft) bytes(t testing.TB) []byte {
	t.Helper()
	hp := c.headerPage
	if hp == "" {
		hp = headerPage612
	}
	h := &tracedat.Header{PageSize: c.pageSize, LongSize: 8, HeaderPage: []byte(hp), CPUs: len(c.cpus),
		Systems: c.systems, Cmdlines: []byte("154 cat\n")}
	for _, f := range c.ftrace {
		h.Ftrace = append(h.Ftrace, []byte(f))
	}
	var srcs []tracedat.CPUSource
	for _, d := range c.cpus {
		srcs = append(srcs, tracedat.CPUSource{R: bytes.NewReader(d), Size: int64(len(d))})
	}
	var b bytes.Buffer
	if err := tracedat.Write(&b, h, srcs); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// sizedPage is a ring-buffer page of size bytes (6.12's layout) holding the events given.
func sizedPage(size int, ts uint64, events ...[]byte) []byte {
	var data []byte
	for _, e := range events {
		data = append(data, e...)
	}
	b := u64(ts)
	b = append(b, u64(uint64(len(data)))...)
	b = append(b, data...)
	return append(b, make([]byte, size-len(b))...)
}

// shareCPUData rewrites a version 6 file's CPU table so that every CPU's data is CPU 0's.
func shareCPUData(t testing.TB, b []byte) []byte {
	t.Helper()
	i := bytes.Index(b, []byte("flyrecord\x00"))
	if i < 0 {
		t.Fatal("no flyrecord")
	}
	b = bytes.Clone(b)
	table := b[i+10:]
	f, err := tracedat.Read(bytes.NewReader(b), int64(len(b)))
	if err != nil {
		t.Fatal(err)
	}
	for cpu := 1; cpu < f.CPUs; cpu++ {
		copy(table[16*cpu:16*cpu+16], table[:16])
	}
	return b
}

// readAll reads a file as report does (text and JSON of every event) and as the Graph view
// does (call trees, text and JSON); it says how many bytes were rendered.
func readAll(t testing.TB, b []byte) (int, error) {
	t.Helper()
	f, err := tracedat.Read(bytes.NewReader(b), int64(len(b)))
	if err != nil {
		return 0, err
	}
	n := 0
	var buf []byte
	tree := &CallTree{Done: func(c *Call) error {
		buf = AppendCallText(buf[:0], c)
		n += len(buf)
		buf = AppendCallJSON(buf[:0], c)
		n += len(buf)
		return nil
	}}
	_, err = ReadFile(f, FileOptions{}, func(ev *Event) error {
		buf = AppendText(buf[:0], ev, TextOptions{})
		n += len(buf)
		buf = AppendJSON(buf[:0], ev, false)
		n += len(buf)
		return tree.Add(ev)
	})
	if err != nil {
		return n, err
	}
	return n, tree.End()
}

// measure runs f and says how many bytes it allocated and how long it took.
func measure(f func()) (uint64, time.Duration) {
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	start := time.Now()
	f()
	d := time.Since(start)
	runtime.ReadMemStats(&after)
	return after.TotalAlloc - before.TotalAlloc, d
}

func functionEvent(pid int32) []byte {
	return rbEvent(10, entry(1, 0, 0, pid, u64(0xffffffff81200010), u64(0xffffffff81200180)))
}

// Many CPUs sharing one CPU's data: 512 CPUs of one page of 256 KiB each, all at the same
// bytes, cost 2 pages a CPU (256 MiB) before; such a file is refused (CPUs' data never
// overlap in a file trace-cmd or ftctl wrote), having allocated next to nothing.
func TestCraftedCPUsShareData(t *testing.T) {
	const pageSize = 256 << 10
	cpus := make([][]byte, 512)
	cpus[0] = sizedPage(pageSize, 1000, functionEvent(154), functionEvent(154))
	b := shareCPUData(t, craft{pageSize: pageSize, ftrace: []string{functionFormat}, cpus: cpus}.bytes(t))
	var err error
	alloc, took := measure(func() { _, err = readAll(t, b) })
	t.Logf("%d bytes, 512 CPUs at the same data: %v; allocated %d KiB in %v", len(b), err, alloc>>10, took)
	// tracedat.Read refuses it first ("CPU 1's data ... as CPU 0's data"); ReadFile's own check
	// ("(CPU 1's data) ... overlap CPU 0's") stands behind it for CPUs given by WithCPUs.
	if msg := fmt.Sprint(err); !errors.Is(err, tracedat.ErrCorrupt) || !strings.Contains(msg, "CPU 1's data") || !strings.Contains(msg, "CPU 0's") {
		t.Errorf("CPUs sharing their data: %v, want a corrupt file naming CPU 1 and CPU 0", err)
	}
	if alloc > 16<<20 {
		t.Errorf("allocated %d MiB reading a file of %d KiB", alloc>>20, len(b)>>10)
	}
}

// CPUs without data get no page buffer: 256 CPUs of pages of 1 MiB, one holding data, cost
// 256 MiB before (a page and its copy per CPU), about a page now.
func TestCraftedEmptyCPUs(t *testing.T) {
	const pageSize = 1 << 20
	cpus := make([][]byte, 256)
	cpus[3] = sizedPage(pageSize, 1000, functionEvent(154), functionEvent(154))
	b := craft{pageSize: pageSize, ftrace: []string{functionFormat}, cpus: cpus}.bytes(t)
	var err error
	alloc, took := measure(func() { _, err = readAll(t, b) })
	t.Logf("%d bytes, 256 CPUs, one with data: allocated %d KiB in %v", len(b), alloc>>10, took)
	if err != nil {
		t.Fatal(err)
	}
	if alloc > 8<<20 {
		t.Errorf("allocated %d MiB reading a file of %d KiB", alloc>>20, len(b)>>10)
	}
}

// Many CPUs each with a page: the merge by time was a scan of every CPU per event (65,536
// CPUs of one event each: 4 billion comparisons); a heap makes it n log n.
func TestCraftedManyCPUs(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a 4 MiB file of 65,536 CPUs")
	}
	const pageSize = 64
	cpus := make([][]byte, 1<<16)
	for i := range cpus {
		cpus[i] = sizedPage(pageSize, uint64(len(cpus)-i), rbEvent(0, entry(1, 0, 0, 154, u64(0xffffffff81200010))))
	}
	b := craft{pageSize: pageSize, ftrace: []string{functionFormat}, cpus: cpus}.bytes(t)
	f, err := tracedat.Read(bytes.NewReader(b), int64(len(b)))
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	last := -1
	alloc, took := measure(func() {
		_, err = ReadFile(f, FileOptions{}, func(ev *Event) error {
			if n++; ev.CPU > last && last >= 0 {
				t.Fatalf("event %d of CPU %d after CPU %d's: not in time order", n, ev.CPU, last)
			}
			last = ev.CPU
			return nil
		})
	})
	t.Logf("%d bytes, %d CPUs of one event: %d events, allocated %d KiB in %v", len(b), len(cpus), n, alloc>>10, took)
	if err != nil || n != len(cpus) {
		t.Fatalf("%d events, %v", n, err)
	}
	if took > 5*time.Second {
		t.Errorf("%v to read %d events", took, n)
	}
}

// header_page's offsets are checked against the page: the timestamp at 5000 of a 4096-byte
// page panicked in the page parser (slice bounds out of range [5000:4096]).
func TestCraftedHeaderPage(t *testing.T) {
	line := func(name string, off, size int) string {
		return "\tfield: u64 " + name + ";\toffset:" + strconv.Itoa(off) + ";\tsize:" + strconv.Itoa(size) + ";\tsigned:0;\n"
	}
	for _, c := range []struct {
		name, hp, want string
	}{
		{"timestamp past the page", line("timestamp", 5000, 8) + line("commit", 8, 8) + line("data", 16, 4080), "timestamp"},
		{"timestamp over the data", line("timestamp", 12, 8) + line("commit", 0, 8) + line("data", 16, 4080), "timestamp"},
		{"commit past the page", line("timestamp", 0, 8) + line("commit", 4095, 8) + line("data", 16, 4080), "commit"},
		{"data past the page", line("timestamp", 0, 8) + line("commit", 8, 8) + line("data", 1<<20, 4080), "data"},
		{"negative timestamp", line("timestamp", -8, 8) + line("commit", 8, 8) + line("data", 16, 4080), "timestamp"},
		{"huge data", line("timestamp", 0, 8) + line("commit", 8, 8) + line("data", 1<<62, 4080), "data"},
		{"timestamp of 4 bytes", line("timestamp", 0, 4) + line("commit", 8, 8) + line("data", 16, 4080), "timestamp"},
	} {
		t.Run(c.name, func(t *testing.T) {
			b := craft{pageSize: 4096, headerPage: c.hp, ftrace: []string{functionFormat},
				cpus: [][]byte{sizedPage(4096, 1000, functionEvent(154))}}.bytes(t)
			_, err := readAll(t, b)
			if !errors.Is(err, tracedat.ErrCorrupt) || !strings.Contains(err.Error(), "header_page") || !strings.Contains(err.Error(), c.want) {
				t.Errorf("%v, want a corrupt header_page naming %s", err, c.want)
			}
		})
	}
}

// A format's field with a negative size (or an offset and size whose sum overflows) panicked
// in the field decoder and in three other places that slice a record by a field (a
// tracepoint's JSON fields, an event shown field by field, a print fmt's field): the format is
// refused now, and its events show as an unknown type's.
func TestCraftedFieldSizes(t *testing.T) {
	fieldLine := func(decl string, off, size int) string {
		return "\tfield:" + decl + ";\toffset:" + strconv.Itoa(off) + ";\tsize:" + strconv.Itoa(size) + ";\tsigned:0;\n"
	}
	format := func(name, id string, fields, print string) string {
		return "name: " + name + "\nID: " + id + "\n" + common + fields + "\nprint fmt: " + print + "\n"
	}
	for _, c := range []struct {
		name, system, format string
		rec                  []byte
	}{
		{"function, ip of -8 bytes", "ftrace", format("function", "1",
			fieldLine("unsigned long ip", 8, -8)+fieldLine("unsigned long parent_ip", 16, 8), `" %ps <-- %ps", (void *)REC->ip, (void *)REC->parent_ip`),
			entry(1, 0, 0, 154, u64(1), u64(2))},
		{"tracepoint field of -4 bytes", "sched", format("tp", "300",
			fieldLine("char comm[16]", 8, 16)+fieldLine("int prio", 24, -4), `"comm=%s", REC->comm`),
			entry(300, 0, 0, 154, []byte("cat\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00"), u32(1))},
		{"print fmt's char array of -16 bytes", "sched", format("tp", "300",
			fieldLine("char comm[16]", 8, -16), `"comm=%s", REC->comm`),
			entry(300, 0, 0, 154, []byte("cat\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00"))},
		{"field by field, size -2", "other", format("odd", "301",
			fieldLine("u16 a", 8, -2), `"%s", __print_symbolic(REC->a)`),
			entry(301, 0, 0, 154, u64(7))},
		{"offset and size overflowing", "sched", format("tp", "300",
			fieldLine("char comm[16]", 1<<62-1, 1<<62+9), `"comm=%s", REC->comm`),
			entry(300, 0, 0, 154, u64(7))},
		{"array index at a negative offset", "sched", format("tp", "300",
			fieldLine("u32 a[4]", -8, 16), `"a=%u", REC->a[1]`),
			entry(300, 0, 0, 154, u64(7), u64(8))},
	} {
		t.Run(c.name, func(t *testing.T) {
			cr := craft{pageSize: 4096, cpus: [][]byte{sizedPage(4096, 1000, rbEvent(1, c.rec))}}
			if c.system == "ftrace" {
				cr.ftrace = []string{c.format}
			} else {
				cr.systems = []tracedat.System{{Name: c.system, Formats: [][]byte{[]byte(c.format)}}}
			}
			b := cr.bytes(t)
			f, err := tracedat.Read(bytes.NewReader(b), int64(len(b)))
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			info, err := ReadFile(f, FileOptions{}, func(ev *Event) error {
				got = append(got, string(AppendText(nil, ev, TextOptions{})), string(AppendJSON(nil, ev, false)))
				return nil
			})
			if err != nil || len(got) != 2 {
				t.Fatalf("%q %v", got, err)
			}
			why := ""
			for _, w := range info.Undecoded {
				why += w
			}
			if !strings.Contains(why, "offset") && !strings.Contains(why, "size") {
				t.Errorf("the format taken (%q), event %q", why, got[0])
			}
		})
	}
}

// The decoder's own bounds, for a Format not made by tracefs.ParseFormat (which refuses these):
// no field of any offset or size slices past a record.
func TestFieldBoundsUnparsed(t *testing.T) {
	for _, fl := range []tracefs.Field{
		{Name: "a", Type: "u32", Offset: 8, Size: -8},
		{Name: "a", Type: "u32", Offset: -8, Size: 4},
		{Name: "a", Type: "u32", Offset: 1<<62 - 1, Size: 1<<62 + 9},
		{Name: "a", Type: "char", Array: 16, Offset: 8, Size: -16},
		{Name: "a", Type: "u32", Array: 4, Offset: -8, Size: 16},
	} {
		f := &tracefs.Format{System: "s", Name: "x", ID: 300, Fields: []tracefs.Field{fl}}
		rec := entry(300, 0, 0, 154, u64(7), u64(8))
		for _, print := range []string{`"a=%u"`, `"a=%s"`, `"a=%u", REC->a[1]`} {
			f.PrintFmt = print
			if pf, err := parsePrintFmt(f, false, nil); err == nil {
				var x pfEval
				pf.appendPrint(nil, &x, rec)
			}
		}
		appendFields(nil, f, rec)
		fieldUint(&f.Fields[0], rec)
		d := &BinaryDecoder{Layout: tracefs.DefaultPageLayout}
		d.Add(f)
		var ev Event
		d.Decode(&ev, 0, 1, rec)
		d.appendEventFields(&ev, newBinFields(f), rec)
	}
}

// A print fmt is evaluated for every record: a file's format with a 64 KiB literal made each
// 8-byte record print 64 KiB (an 86 KB file rendered 175 MB). An event's text stops at
// pfTextLimit bytes; a print fmt past pfMaxPrint bytes or pfMaxConvs conversions, or a format
// past tracefs.MaxFormatFields fields, is not evaluated.
func TestCraftedPrintFmtAmplification(t *testing.T) {
	var evs [][]byte
	for range 4000 / 12 {
		evs = append(evs, rbEvent(1, entry(300, 0, 0, 154)))
	}
	var pages []byte
	for range 4 {
		pages = append(pages, sizedPage(4096, 1000, evs...)...)
	}
	var fields strings.Builder
	for i := range 2000 {
		fields.WriteString("\tfield:char f" + strconv.Itoa(i) + "[];\toffset:8;\tsize:0;\tsigned:0;\n")
	}
	for _, c := range []struct{ name, format string }{
		{"a literal of 60 KiB", "name: tp\nID: 300\n" + common + "\nprint fmt: \"" + strings.Repeat("x", 60<<10) + "\"\n"},
		{"a literal of 1 MiB", "name: tp\nID: 300\n" + common + "\nprint fmt: \"" + strings.Repeat("x", 1<<20) + "\"\n"},
		{"2,000 conversions", "name: tp\nID: 300\n" + common + "\tfield:int a;\toffset:4;\tsize:4;\tsigned:1;\n\nprint fmt: \"" +
			strings.Repeat("%4000d", 2000) + "\"" + strings.Repeat(", REC->a", 2000) + "\n"},
		{"2,000 fields", "name: tp\nID: 300\n" + common + fields.String() + "\nprint fmt: \"\"\n"},
	} {
		t.Run(c.name, func(t *testing.T) {
			b := craft{pageSize: 4096, systems: []tracedat.System{{Name: "s", Formats: [][]byte{[]byte(c.format)}}}, cpus: [][]byte{pages}}.bytes(t)
			var n int
			var err error
			alloc, took := measure(func() { n, err = readAll(t, b) })
			t.Logf("%d bytes: rendered %d bytes, allocated %d KiB, in %v", len(b), n, alloc>>10, took)
			if err != nil {
				t.Fatal(err)
			}
			if n > 128*len(b) {
				t.Errorf("rendered %d bytes of a file of %d", n, len(b))
			}
		})
	}
}
