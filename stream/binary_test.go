package stream

import (
	"encoding/binary"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/ftctl/ftctl/tracefs"
)

// Formats as the 6.12 VM kernel wrote them (6.1's are the same but for the char type, which it
// lacks).
const (
	headerPage612 = "\tfield: u64 timestamp;\toffset:0;\tsize:8;\tsigned:0;\n" +
		"\tfield: local_t commit;\toffset:8;\tsize:8;\tsigned:1;\n" +
		"\tfield: int overwrite;\toffset:8;\tsize:1;\tsigned:1;\n" +
		"\tfield: char data;\toffset:16;\tsize:4080;\tsigned:0;\n"
	common = "format:\n" +
		"\tfield:unsigned short common_type;\toffset:0;\tsize:2;\tsigned:0;\n" +
		"\tfield:unsigned char common_flags;\toffset:2;\tsize:1;\tsigned:0;\n" +
		"\tfield:unsigned char common_preempt_count;\toffset:3;\tsize:1;\tsigned:0;\n" +
		"\tfield:int common_pid;\toffset:4;\tsize:4;\tsigned:1;\n\n"
	functionFormat = "name: function\nID: 1\n" + common +
		"\tfield:unsigned long ip;\toffset:8;\tsize:8;\tsigned:0;\n" +
		"\tfield:unsigned long parent_ip;\toffset:16;\tsize:8;\tsigned:0;\n\n" +
		"print fmt: \" %ps <-- %ps\", (void *)REC->ip, (void *)REC->parent_ip\n"
	printFormat = "name: print\nID: 5\n" + common +
		"\tfield:unsigned long ip;\toffset:8;\tsize:8;\tsigned:0;\n" +
		"\tfield:char buf[];\toffset:16;\tsize:0;\tsigned:0;\n\n" +
		"print fmt: \"%ps: %s\", (void *)REC->ip, REC->buf\n"
	stackFormat = "name: kernel_stack\nID: 4\n" + common +
		"\tfield:int size;\toffset:8;\tsize:4;\tsigned:1;\n" +
		"\tfield:unsigned long caller[8];\toffset:16;\tsize:64;\tsigned:0;\n\n" +
		"print fmt: \"\\t=> %ps\\n\\t=> %ps\\n\", (void *)REC->caller[0], (void *)REC->caller[1]\n"
	kprobeFormat = "name: t1\nID: 1496\n" + common +
		"\tfield:unsigned long __probe_ip;\toffset:8;\tsize:8;\tsigned:0;\n" +
		"\tfield:u32 a;\toffset:16;\tsize:4;\tsigned:0;\n" +
		"\tfield:u64 b;\toffset:20;\tsize:8;\tsigned:0;\n" +
		"\tfield:s16 c;\toffset:28;\tsize:2;\tsigned:1;\n" +
		"\tfield:__data_loc char[] d;\toffset:30;\tsize:4;\tsigned:1;\n" +
		"\tfield:u64 e;\toffset:34;\tsize:8;\tsigned:0;\n" +
		"\tfield:u8 f[];\toffset:42;\tsize:4;\tsigned:0;\n" +
		"\tfield:u32 g;\toffset:46;\tsize:4;\tsigned:0;\n" +
		"\tfield:__data_loc char[] h;\toffset:50;\tsize:4;\tsigned:1;\n" +
		"\tfield:u8 i;\toffset:54;\tsize:1;\tsigned:0;\n\n" +
		"print fmt: \"(%lx) a=%u b=0x%Lx c=%d d=\\\"%s\\\" e=%pS f={%u,%u,%u,%u} g=%u h=\\\"%s\\\" i='%c'\", REC->__probe_ip, REC->a, REC->b, REC->c, __get_str(d), REC->e, REC->f[0], REC->f[1], REC->f[2], REC->f[3], REC->g, __get_str(h), REC->i\n"
	kretprobeFormat = "name: t2\nID: 1497\n" + common +
		"\tfield:unsigned long __probe_func;\toffset:8;\tsize:8;\tsigned:0;\n" +
		"\tfield:unsigned long __probe_ret_ip;\toffset:16;\tsize:8;\tsigned:0;\n" +
		"\tfield:s64 ret;\toffset:24;\tsize:8;\tsigned:1;\n\n" +
		"print fmt: \"(%lx <- %lx) ret=%Ld\", REC->__probe_func, REC->__probe_ret_ip, REC->ret\n"
	tracepointFormat = "name: sched_wakeup\nID: 300\n" + common +
		"\tfield:char comm[16];\toffset:8;\tsize:16;\tsigned:0;\n" +
		"\tfield:pid_t pid;\toffset:24;\tsize:4;\tsigned:1;\n" +
		"\tfield:int prio;\toffset:28;\tsize:4;\tsigned:1;\n\n" +
		"print fmt: \"comm=%s pid=%d prio=%d\", REC->comm, REC->pid, REC->prio\n"
	// hashedFormat prints a bare %p, which the kernel hashes (option hash-ptr): decoded field
	// by field.
	hashedFormat = "name: kfree\nID: 301\n" + common +
		"\tfield:unsigned long call_site;\toffset:8;\tsize:8;\tsigned:0;\n" +
		"\tfield:const void * ptr;\toffset:16;\tsize:8;\tsigned:0;\n\n" +
		"print fmt: \"call_site=%pS ptr=%p\", (void *)REC->call_site, REC->ptr\n"
)

// testKallsyms: the kernel's symbols are sorted; a module's come after them.
const testKallsyms = "0000000000000000 A fixed_percpu_data\n" +
	"0000000000030000 A __per_cpu_end\n" +
	"ffffffff81000000 T _text\n" +
	"ffffffff81000000 T _stext\n" +
	"ffffffff81200000 t __pfx_vfs_read\n" +
	"ffffffff81200010 T vfs_read\n" +
	"ffffffff81200010 T vfs_read_alias\n" +
	"ffffffff81200180 T ksys_read\n" +
	"ffffffff81200300 T tracing_mark_write\n" +
	"ffffffff81200400 T do_syscall_64\n" +
	"ffffffff81200500 T __x64_sys_openat\n" +
	"ffffffff81200600 T do_sys_openat2\n" +
	"ffffffff81200770 D some_data\n" +
	"ffffffff81200800 T arch_rethook_trampoline\n" +
	"ffffffff82000000 B _end\n" +
	"ffffffffc0500000 t dummy_xmit\t[dummy]\n" +
	"ffffffffc0500100 t dummy_init\t[dummy]\n" +
	"ffffffffc0600000 t ftrace_trampoline\t[__builtin__ftrace]\n"

func testDecoder(t testing.TB) *BinaryDecoder {
	t.Helper()
	syms, err := ParseKallsyms([]byte(testKallsyms))
	if err != nil {
		t.Fatal(err)
	}
	layout, err := tracefs.ParsePageLayout(headerPage612)
	if err != nil {
		t.Fatal(err)
	}
	if layout != tracefs.DefaultPageLayout {
		t.Fatalf("layout %+v, want %+v", layout, tracefs.DefaultPageLayout)
	}
	d := &BinaryDecoder{Layout: layout, Symbols: syms, PrintParent: true, Comm: func(pid int) []byte {
		switch pid {
		case 154:
			return []byte("cat")
		case 155:
			return []byte("my prog-1")
		}
		return nil
	}, HashPtr: true}
	for sys, text := range map[string]string{"ftrace:1": functionFormat, "ftrace:5": printFormat, "ftrace:4": stackFormat, "ftctl:1496": kprobeFormat, "ftctl:1497": kretprobeFormat, "sched:300": tracepointFormat, "kmem:301": hashedFormat} {
		f, err := tracefs.ParseFormat(strings.Split(sys, ":")[0], text)
		if err != nil {
			t.Fatal(err)
		}
		if fmt.Sprint(f.ID) != strings.Split(sys, ":")[1] {
			t.Fatalf("%s: ID %d", sys, f.ID)
		}
		err = d.Add(f)
		if (err != nil) != (f.Name == "kfree") {
			t.Fatalf("Add(%s): %v", f.Name, err)
		}
	}
	return d
}

// entry builds a trace entry: the common fields, then the rest.
func entry(typ uint16, flags, pc byte, pid int32, rest ...[]byte) []byte {
	b := binary.LittleEndian.AppendUint16(nil, typ)
	b = append(b, flags, pc)
	b = binary.LittleEndian.AppendUint32(b, uint32(pid))
	for _, r := range rest {
		b = append(b, r...)
	}
	return b
}

func u64(v uint64) []byte { return binary.LittleEndian.AppendUint64(nil, v) }
func u32(v uint32) []byte { return binary.LittleEndian.AppendUint32(nil, v) }
func u16(v uint16) []byte { return binary.LittleEndian.AppendUint16(nil, v) }

// TestBinaryMatchesText decodes binary events and parses the line the kernel prints for each
// (trace_pipe's format, kernel/trace/trace_output.c and trace_kprobe.c): the two must give the
// same JSON.
func TestBinaryMatchesText(t *testing.T) {
	d := testDecoder(t)
	kprobeData := func() []byte {
		e := entry(1496, 0x01, 0x12, 154,
			u64(0xffffffff81200010), // __probe_ip: vfs_read+0
			u32(4294967295),         // a u32
			u64(0x1f),               // b x64
			u16(0xfff6),             // c s16: -10
			u32(uint32(6)<<16|55),   // d: 6 bytes at 55
			u64(0xffffffff81200185), // e symbol: ksys_read+5
			[]byte{47, 100, 101, 118},
			u32(5), // g bitfield
			u32(0), // h: (fault)
			[]byte{'x'},
		)
		return append(e, "a\x1bb\"c\x00"...)
	}()
	cases := []struct {
		name string
		data []byte
		ts   uint64
		line string
	}{
		{"function", entry(1, 0, 0, 154, u64(0xffffffff81200010), u64(0xffffffff81200405)), 4634804123,
			"             cat-154     [001] .....     4.634804: vfs_read <-do_syscall_64"},
		{"function in a module, rounded time", entry(1, 0x08|0x10, 0x21, 155, u64(0xffffffffc0500004), u64(0xffffffff81200010)), 4634804500,
			"       my prog-1-155     [001] ..H12     4.634805: dummy_xmit <-vfs_read"},
		{"idle, no parent", entry(1, 0x81, 0, 0, u64(0xffffffff81200180), u64(0)), 5000000000,
			"          <idle>-0       [001] D....     5.000000: ksys_read"},
		{"unknown comm, unknown address", entry(1, 0x04|0x20, 0, 999, u64(0x1234), u64(0xffffffff81200180)), 6000000000,
			"           <...>-999     [001] .N...     6.000000: 0x00001234 <-ksys_read"},
		{"marker", entry(5, 0, 0, 154, u64(0xffffffff81200300), []byte("hello \x1b[31m marker\n\x00\x00\x00")), 7000001000,
			"             cat-154     [001] .....     7.000001: tracing_mark_write: hello \x1b[31m marker"},
		{"kprobe", kprobeData, 8000000000,
			"             cat-154     [001] d..21     8.000000: t1: (vfs_read+0x0/0x170) a=4294967295 b=0x1f c=-10 d=\"a\x1bb\"c\" e=ksys_read+0x5/0x180 f={47,100,101,118} g=5 h=(fault) i='x'"},
		{"kretprobe", entry(1497, 0, 0, 154, u64(0xffffffff81200600), u64(0xffffffff8120056a), u64(3)), 9000000000,
			"             cat-154     [001] .....     9.000000: t2: (__x64_sys_openat+0x6a/0x100 <- do_sys_openat2) ret=3"},
		{"kretprobe negative", entry(1497, 0, 0, 154, u64(0xffffffffc0500100), u64(0xffffffff8120056a), u64(^uint64(1))), 9000000000,
			"             cat-154     [001] .....     9.000000: t2: (__x64_sys_openat+0x6a/0x100 <- dummy_init) ret=-2"},
	}
	for _, c := range cases {
		var got Event
		d.Decode(&got, 1, c.ts, c.data)
		gotJSON := string(AppendJSON(nil, &got, false))
		var want Event
		ParseLine(&want, []byte(c.line))
		wantJSON := string(AppendJSON(nil, &want, false))
		if gotJSON != wantJSON {
			t.Errorf("%s:\nbinary %s\ntext   %s", c.name, gotJSON, wantJSON)
		}
		gotText := string(AppendText(nil, &got, TextOptions{}))
		wantText := string(AppendText(nil, &want, TextOptions{}))
		if gotText != wantText {
			t.Errorf("%s text:\nbinary %q\ntext   %q", c.name, gotText, wantText)
		}
	}
}

// The sym-offset and record-tgid options, as the kernel prints them.
func TestBinaryOptionsMatchText(t *testing.T) {
	d := testDecoder(t)
	d.SymOffset = true
	d.TGID = func(pid int) int {
		if pid == 154 {
			return 150
		}
		return 0
	}
	cases := []struct {
		data []byte
		line string
	}{
		{entry(1, 0, 0, 154, u64(0xffffffffc0500004), u64(0xffffffff81200010)),
			"             cat-154     (    150) [001] .....     4.634804: dummy_xmit+0x4/0x100 [dummy] <-vfs_read+0x0/0x170"},
		{entry(1, 0, 0, 155, u64(0x1234), u64(0xffffffff81200800)),
			"       my prog-1-155     (-------) [001] .....     4.634804: 0x1234 <-[unknown/kretprobe'd]"},
		{entry(1497, 0, 0, 154, u64(0xffffffff81200600), u64(0xffffffff8120056a), u64(3)),
			"             cat-154     (    150) [001] .....     4.634804: t2: (__x64_sys_openat+0x6a/0x100 <- do_sys_openat2) ret=3"},
	}
	for _, c := range cases {
		var got, want Event
		d.Decode(&got, 1, 4634804123, c.data)
		ParseLine(&want, []byte(c.line))
		if g, w := string(AppendJSON(nil, &got, false)), string(AppendJSON(nil, &want, false)); g != w {
			t.Errorf("binary %stext   %s", g, w)
		}
	}
	var ev Event
	d.Decode(&ev, 0, 1e9, entry(4, 0, 0, 154, u32(2), u32(0), u64(0xffffffff81200012), u64(0xffffffffc0500104), u64(^uint64(0))))
	if got := strings.Join([]string{string(ev.Frames[0]), string(ev.Frames[1])}, " "); got != "vfs_read+0x2/0x170 dummy_init+0x4/0xfff00 [dummy]" {
		t.Errorf("stack frames with sym-offset: %s", got)
	}
}

func TestBinaryStackAndGeneric(t *testing.T) {
	d := testDecoder(t)
	var ev Event
	stack := entry(4, 0, 0, 154, u32(3), u32(0), u64(0x7fffffff), u64(0xffffffff81200010), u64(0xffffffffc0500104), u64(0xffffffff81200405), u64(^uint64(0)))
	d.Decode(&ev, 0, 1e9, stack)
	got := string(AppendJSON(nil, &ev, false))
	want := `{"schema":"ftctl/event/v1","ts":1.000000,"cpu":0,"comm":"cat","pid":154,"flags":".....","event":"stack","stack":["[FTRACE TRAMPOLINE]","vfs_read","dummy_init","do_syscall_64"]}` + "\n"
	if got != want {
		t.Errorf("stack:\n got %s\nwant %s", got, want)
	}
	wake := entry(300, 0, 0, 154, []byte("kworker/1:1\x00\x00\x00\x00\x00"), u32(77), u32(120))
	d.Decode(&ev, 0, 1e9, wake)
	got = string(AppendJSON(nil, &ev, false))
	want = `{"schema":"ftctl/event/v1","ts":1.000000,"cpu":0,"comm":"cat","pid":154,"flags":".....","event":"sched_wakeup","text":"comm=kworker/1:1 pid=77 prio=120","fields":{"comm":"kworker/1:1","pid":77,"prio":120}}` + "\n"
	if got != want {
		t.Errorf("tracepoint:\n got %s\nwant %s", got, want)
	}
	d.Decode(&ev, 0, 1e9, entry(301, 0, 0, 154, u64(0xffffffff81200012), u64(0xffff888012345678)))
	got = string(AppendJSON(nil, &ev, false))
	want = `{"schema":"ftctl/event/v1","ts":1.000000,"cpu":0,"comm":"cat","pid":154,"flags":".....","event":"kfree","text":"call_site=18446744071580942354 ptr=18446612682375452280"}` + "\n"
	if got != want {
		t.Errorf("generic:\n got %s\nwant %s", got, want)
	}
	unknownAsked := 0
	d.Unknown = func(id int) *tracefs.Format { unknownAsked++; return nil }
	for range 2 {
		d.Decode(&ev, 0, 1e9, entry(777, 0, 0, 154))
		if ev.Kind != KindRaw || string(ev.Text) != "event type 777 (no format known)" {
			t.Errorf("unknown type: %v %q", ev.Kind, ev.Text)
		}
	}
	if unknownAsked != 1 {
		t.Errorf("Unknown asked %d times, want once", unknownAsked)
	}
	d.Decode(&ev, 0, 1e9, []byte{1, 0, 0})
	if ev.Kind != KindRaw {
		t.Errorf("short entry: kind %v", ev.Kind)
	}
}

// page builds a ring-buffer page: header (time stamp, commit with flags), the events, and the
// lost count after them when stored.
func page(ts uint64, flags uint64, lost uint64, events ...[]byte) []byte {
	var data []byte
	for _, e := range events {
		data = append(data, e...)
	}
	b := u64(ts)
	b = append(b, u64(uint64(len(data))|flags)...)
	b = append(b, data...)
	if flags&rbMissedStored != 0 {
		b = append(b, u64(lost)...)
	}
	for len(b) < 4096 {
		b = append(b, 0)
	}
	return b
}

// rbEvent encodes an event header and its data (padded to 4 bytes).
func rbEvent(delta uint32, data []byte) []byte {
	for len(data)%4 != 0 {
		data = append(data, 0)
	}
	if len(data) <= 28*4 {
		return append(u32(uint32(len(data)/4)|delta<<5), data...)
	}
	b := u32(delta << 5)
	b = append(b, u32(uint32(len(data)+4))...)
	return append(b, data...)
}

func TestPageEvents(t *testing.T) {
	small := entry(1, 0, 0, 1, u64(1), u64(2))
	big := entry(5, 0, 0, 2, u64(3), []byte(strings.Repeat("x", 200)))
	var ext []byte
	ext = append(ext, u32(rbTypeTimeExtend|uint32(5)<<5)...)
	ext = append(ext, u32(2)...) // + 2<<27 + 5
	var abs []byte
	abs = append(abs, u32(rbTypeTimeStamp|uint32(7)<<5)...)
	abs = append(abs, u32(1)...) // = 1<<27 + 7
	discarded := append(u32(rbTypePadding|1<<5), u32(12)...)
	discarded = append(discarded, make([]byte, 8)...)
	p := page(1000, rbMissedEvents|rbMissedStored, 42,
		rbEvent(10, small), rbEvent(20, big), ext, rbEvent(1, small), discarded, abs, rbEvent(3, small),
		u32(rbTypePadding), // time_delta 0: the rest is empty
	)
	pg, err := ParsePage(tracefs.DefaultPageLayout, p)
	if err != nil {
		t.Fatal(err)
	}
	if !pg.Missed || pg.Lost != 42 || pg.TS != 1000 {
		t.Fatalf("page header: %+v", pg)
	}
	var got []string
	err = pg.Events(func(ts uint64, data []byte) error {
		got = append(got, fmt.Sprintf("%d:%d:%d", ts, binary.LittleEndian.Uint16(data), len(data)))
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		"1010:1:24",
		"1030:5:216",
		fmt.Sprint(1030+2<<27+5+1) + ":1:24",
		fmt.Sprint(1<<27+7+3) + ":1:24",
	}
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("events:\n got %v\nwant %v", got, want)
	}

	// 6.1 adds the flag as a negative int to the 64-bit commit: the high half is all ones
	signExt := page(1000, 0, 0, rbEvent(10, small))
	binary.LittleEndian.PutUint64(signExt[8:], uint64(int64(len(rbEvent(10, small)))+int64(int32(-1<<31))))
	if pg, err := ParsePage(tracefs.DefaultPageLayout, signExt); err != nil || !pg.Missed || pg.Lost != -1 || len(pg.Data) != 28 {
		t.Errorf("sign-extended commit: %+v %v", pg, err)
	}

	// missed, count not stored; malformed data
	pg, _ = ParsePage(tracefs.DefaultPageLayout, page(0, rbMissedEvents, 0))
	if !pg.Missed || pg.Lost != -1 {
		t.Errorf("uncounted loss: %+v", pg)
	}
	bad := page(0, 0, 0, rbEvent(0, small))
	binary.LittleEndian.PutUint64(bad[8:], 4090)
	if _, err := ParsePage(tracefs.DefaultPageLayout, bad); err == nil {
		t.Error("commit past the page: no error")
	}
	cut := page(0, 0, 0, append(u32(0), u32(400)...))
	pg, _ = ParsePage(tracefs.DefaultPageLayout, cut)
	if err := pg.Events(func(uint64, []byte) error { return nil }); err == nil {
		t.Error("event past the page: no error")
	}
}

// TestFeedMerges: two CPUs' pages come out in time order, a page's loss before its events.
func TestFeedMerges(t *testing.T) {
	d := testDecoder(t)
	fn := func(pid int32) []byte { return entry(1, 0, 0, pid, u64(0xffffffff81200010), u64(0)) }
	p0 := page(100, 0, 0, rbEvent(0, fn(1)), rbEvent(50, fn(2)), rbEvent(50, fn(3))) // 100 150 200
	p1 := page(120, rbMissedEvents|rbMissedStored, 7, rbEvent(0, fn(4)), rbEvent(60, fn(5)))
	var got []string
	err := d.Feed([]CPUPage{{0, p0}, {1, p1}}, func(ev *Event) error {
		if ev.Kind == KindLost {
			got = append(got, fmt.Sprintf("lost%d:%d", ev.CPU, ev.Lost))
		} else {
			got = append(got, fmt.Sprintf("%d:%d", ev.CPU, ev.PID))
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if s := strings.Join(got, " "); s != "0:1 lost1:7 1:4 0:2 1:5 0:3" {
		t.Errorf("order %s", s)
	}
}

func TestLatFlags(t *testing.T) {
	for _, c := range []struct {
		flags, pc byte
		want      string
	}{
		{0, 0, "....."}, {0x01, 0, "d...."}, {0x81, 0, "D...."}, {0x80, 0, "b...."}, {0x02, 0, "X...."},
		{0x04, 0, ".n..."}, {0x20, 0, ".p..."}, {0x24, 0, ".N..."},
		{0x40 | 0x08, 0, "..Z.."}, {0x40, 0, "..z.."}, {0x18, 0, "..H.."}, {0x08, 0, "..h.."}, {0x10, 0, "..s.."},
		{0, 0x0f, "...f."}, {0, 0x21, "...12"}, {0, 0x10, "....1"},
	} {
		if got := string(appendLatFlags(nil, c.flags, c.pc)); got != c.want {
			t.Errorf("flags %#x pc %#x: %q, want %q", c.flags, c.pc, got, c.want)
		}
	}
}

// A function event's symbols (sym, one lookup) print as appendIP prints them, with and without
// sym-offset: the kretprobe trampoline, no symbol, 0, a module's.
func TestSymMatchesAppendIP(t *testing.T) {
	d := testDecoder(t)
	for _, offset := range []bool{false, true} {
		d.SymOffset = offset
		for _, addr := range []uint64{0, 0x10, 0x7fffffff, 0xffffffff81200010, 0xffffffff8120017f, 0xffffffff81200771,
			0xffffffff81200800, 0xffffffff81200801, 0xffffffff82000001, 0xffffffffc0600083, 0xffffffffc0500101} {
			var sym Sym
			d.buf = d.buf[:0]
			d.sym(&sym, addr)
			got := string(sym.Name)
			if sym.Offset != nil {
				got += "+" + string(sym.Offset)
			}
			if sym.Module != nil {
				got += " [" + string(sym.Module) + "]"
			}
			if want := string(d.appendIP(nil, addr, offset)); got != want {
				t.Errorf("sym-offset %v, %#x: %q, want %q", offset, addr, got, want)
			}
		}
	}
}

func TestSymbols(t *testing.T) {
	s, err := ParseKallsyms([]byte(testKallsyms))
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		addr uint64
		name string
		sym  string
	}{
		{0xffffffff81200010, "vfs_read", "vfs_read+0x0/0x170"}, // the first alias listed
		{0xffffffff8120017f, "vfs_read", "vfs_read+0x16f/0x170"},
		{0xffffffff81200771, "some_data", "some_data+0x1/0x90"},
		{0xffffffff81200800, "[unknown/kretprobe'd]", "arch_rethook_trampoline+0x0/0xdff800"},
		{0xffffffff81200801, "arch_rethook_trampoline", "arch_rethook_trampoline+0x1/0xdff800"},
		{0x7fffffff, "0x7fffffff", "0x7fffffff"},                             // below _text: the kernel's lookup fails
		{0xffffffff82000001, "0xffffffff82000001", "0xffffffff82000001"},     // past _end
		{0xffffffffc0600083, "0xffffffffc0600083", "0xffffffffc0600083"},     // an ftrace trampoline
		{0xffffffffc0500101, "dummy_init", "dummy_init+0x1/0xfff00 [dummy]"}, // a module's last: to the next listed (the kernel knows the section's end)
		{0x10, "0x00000010", "0x10"},
	} {
		if got := string(s.AppendName(nil, c.addr)); got != c.name {
			t.Errorf("%#x: name %q, want %q", c.addr, got, c.name)
		}
		if got := string(s.AppendSymOffset(nil, c.addr)); got != c.sym {
			t.Errorf("%#x: %%pS %q, want %q", c.addr, got, c.sym)
		}
	}
	if _, err := ParseKallsyms([]byte("0000000000000000 T vfs_read\n0000000000000000 T ksys_read\n")); err == nil {
		t.Error("hidden addresses: no error")
	}
	// modules' symbols come in no order
	unsorted, err := ParseKallsyms([]byte("ffffffff81000000 T _stext\nffffffffc0000200 t b\t[m]\nffffffffc0000100 t a\t[m]\n"))
	if err != nil {
		t.Fatal(err)
	}
	if got := string(unsorted.AppendSymOffset(nil, 0xffffffffc0000150)); got != "a+0x50/0x100 [m]" {
		t.Errorf("unsorted modules: %q", got)
	}
	// the kernel's own: a binary search in the text, at every position
	var big []byte
	for i := range 1000 {
		big = fmt.Appendf(big, "%016x T f%d\n", 0xffffffff81000000+uint64(i/2)*0x100, i) // pairs of aliases
	}
	bs, err := ParseKallsyms(big)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 500; i++ {
		addr := 0xffffffff81000000 + uint64(i)*0x100 + uint64(i%0x100)
		want := fmt.Sprintf("f%d+0x%x/0x100", 2*i, i%0x100)
		if i == 499 {
			want = fmt.Sprintf("f%d+0x%x/0x0", 2*i, i%0x100)
		}
		if got := string(bs.AppendSymOffset(nil, addr)); got != want {
			t.Fatalf("%#x: %q, want %q", addr, got, want)
		}
	}
	if got := string(bs.AppendSymOffset(nil, 0xffffffff80000000)); got != "0xffffffff80000000" {
		t.Errorf("below the first: %q", got)
	}
}

func TestAppendMicros(t *testing.T) {
	for ns, want := range map[uint64]string{0: "0.000000", 499: "0.000000", 500: "0.000001", 4634804123: "4.634804", 999999500: "1.000000", 12345678901234567: "12345678.901235"} {
		if got := string(appendMicros(nil, ns)); got != want {
			t.Errorf("%d: %q, want %q", ns, got, want)
		}
	}
}

func TestProbeArgsRefused(t *testing.T) {
	f, err := tracefs.ParseFormat("ftctl", strings.Replace(kprobeFormat, "a=%u", "a=%q", 1))
	if err != nil {
		t.Fatal(err)
	}
	var d BinaryDecoder
	if err := d.Add(f); err == nil || !strings.Contains(err.Error(), `"%q"`) {
		t.Errorf("unknown print format: %v", err)
	}
}

// FuzzBinaryPage: whatever a page holds, and whatever header_page and format text describe it
// (a trace.dat's, anyone's), decoding it neither panics nor reads out of bounds, and every event
// it gives renders as valid JSON.
func FuzzBinaryPage(f *testing.F) {
	fn := entry(1, 0, 0, 154, u64(0xffffffff81200010), u64(0xffffffff81200405))
	tp := entry(300, 0, 0, 154, []byte("cat\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00"), u32(7), u32(120))
	f.Add(page(100, 0, 0, rbEvent(1, fn), rbEvent(2, entry(5, 0, 0, 1, u64(0xffffffff81200300), []byte("hi\n\x00")))), headerPage612, tracepointFormat)
	f.Add(page(100, rbMissedEvents|rbMissedStored, 3, rbEvent(0, entry(1496, 1, 2, 3, make([]byte, 60)))), headerPage612, kprobeFormat)
	f.Add(page(100, 0, 0, rbEvent(0, entry(4, 0, 0, 1, u32(2), u32(0), u64(1), u64(2)))), headerPage612, stackFormat)
	f.Add(page(100, 0, 0, rbEvent(3, tp)), strings.Replace(headerPage612, "offset:0;", "offset:5000;", 1),
		strings.Replace(tracepointFormat, "offset:24;\tsize:4;", "offset:24;\tsize:-4;", 1))
	f.Fuzz(func(t *testing.T, b []byte, headerPage, format string) {
		d := testDecoder(t)
		if l, err := tracefs.ParsePageLayout(headerPage); err == nil && l.Check(max(len(b), 64)) == nil {
			d.Layout = l
		}
		for _, system := range []string{"sched", "ftrace", "ftctl"} {
			if fm, err := tracefs.ParseFormat(system, format); err == nil {
				d.Add(fm)
			}
		}
		emit := func(ev *Event) error {
			js := AppendJSON(nil, ev, false)
			if !json.Valid(js) {
				t.Fatalf("invalid JSON %q", js)
			}
			AppendText(nil, ev, TextOptions{})
			return nil
		}
		d.Feed([]CPUPage{{CPU: 0, Data: b}, {CPU: 3, Data: b}}, emit)
		// with sym-offset, and odd pids left out before decoding
		d.SymOffset, d.Skip = true, func(pid int) bool { return pid%2 != 0 }
		d.Feed([]CPUPage{{CPU: 1, Data: b}}, emit)
	})
}

// FuzzKallsyms: whatever the table holds, parsing it and looking addresses up never panics.
func FuzzKallsyms(f *testing.F) {
	f.Add([]byte(testKallsyms), uint64(0xffffffff81200010))
	f.Add([]byte("ffffffff81000000 T a\nzz\n\nffffffff81000100 T b\n"), uint64(0xffffffff81000101))
	f.Add([]byte("ffffffff81000000 T a\tx\n"), uint64(1))
	f.Fuzz(func(t *testing.T, text []byte, addr uint64) {
		s, err := ParseKallsyms(text)
		if err != nil {
			return
		}
		for _, a := range []uint64{addr, addr + 1, addr - 1, 0, ^uint64(0)} {
			s.AppendSymOffset(nil, a)
			s.AppendName(nil, a)
		}
	})
}

// TestEprobeNotDecoded: an eprobe's print fmt (6.12: " prev=0x%Lx", REC->prev) is not what the
// kernel prints for it (print_eprobe_event: "ep: (sched.sched_switch) prev=0x..."), so an event
// dynamic_events lists as "e:" is refused, never printed from its print fmt.
func TestEprobeNotDecoded(t *testing.T) {
	f, err := tracefs.ParseFormat("ftx", "name: ep\nID: 1496\nformat:\n"+common+
		"\tfield:u64 prev;\toffset:8;\tsize:8;\tsigned:0;\n\nprint fmt: \" prev=0x%Lx\", REC->prev\n")
	if err != nil {
		t.Fatal(err)
	}
	d := BinaryDecoder{HashPtr: true, Dynamic: map[tracefs.EventName]string{{System: "ftx", Event: "ep"}: "e"}}
	if err := d.Add(f); err == nil || !strings.Contains(err.Error(), "eprobe") {
		t.Errorf("Add(eprobe): %v, want it refused as an eprobe", err)
	}
	if err := CheckFormat(f, true, "", nil); err != nil {
		t.Errorf("the same format as a tracepoint: %v", err)
	}
}
