package stream

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"
	"unicode/utf8"
)

var update = flag.Bool("update", false, "rewrite the golden files under testdata/")

// decodeAll decodes a whole input and returns each event's JSON and text.
func decodeAll(t testing.TB, in []byte, opts TextOptions) (js, text []string, events []Event) {
	var d Decoder
	emit := func(ev *Event) error {
		js = append(js, string(AppendJSON(nil, ev, false)))
		text = append(text, string(AppendText(nil, ev, opts)))
		events = append(events, cloneEvent(ev))
		return nil
	}
	if err := d.Feed(in, emit); err != nil {
		t.Fatal(err)
	}
	if err := d.Flush(emit); err != nil {
		t.Fatal(err)
	}
	return js, text, events
}

// cloneEvent copies what the tests look at out of the decoder's buffers.
func cloneEvent(ev *Event) Event {
	c := *ev
	c.Line = bytes.Clone(ev.Line)
	c.Text = bytes.Clone(ev.Text)
	c.Name = bytes.Clone(ev.Name)
	c.Comm = bytes.Clone(ev.Comm)
	c.Args = nil
	for _, a := range ev.Args {
		c.Args = append(c.Args, Arg{Name: bytes.Clone(a.Name), Kind: a.Kind, Value: bytes.Clone(a.Value)})
	}
	c.Frames = nil
	for _, f := range ev.Frames {
		c.Frames = append(c.Frames, bytes.Clone(f))
	}
	return c
}

// Lines as the kernels print them (most from the fixtures; the ones the VM did not produce are
// built from the kernel's format strings, as noted), and the JSON each must give.
func TestParseLine(t *testing.T) {
	cases := []struct {
		name, line, want string
	}{
		{"function", `             cat-154     [001] .....     4.634804: ksys_write <-do_syscall_64`,
			`{"schema":"ftctl/event/v1","ts":4.634804,"cpu":1,"comm":"cat","pid":154,"flags":".....","event":"function","func":"ksys_write","parent":"do_syscall_64"}`},
		{"function, no parent", `             cat-182     [000] .....     7.639459: ksys_write`,
			`{"schema":"ftctl/event/v1","ts":7.639459,"cpu":0,"comm":"cat","pid":182,"flags":".....","event":"function","func":"ksys_write"}`},
		{"sym-offset and sym-addr", `             cat-175     [000] .....     6.830576: ksys_write+0x4/0xf0 <ffffffff914581d4> <-do_syscall_64+0x87/0x1b0 <ffffffff91ce0ff7>`,
			`{"schema":"ftctl/event/v1","ts":6.830576,"cpu":0,"comm":"cat","pid":175,"flags":".....","event":"function","func":"ksys_write","func_offset":"0x4/0xf0","func_addr":"ffffffff914581d4","parent":"do_syscall_64","parent_offset":"0x87/0x1b0","parent_addr":"ffffffff91ce0ff7"}`},
		// kallsyms appends " [module]" to a module's symbol (__sprint_symbol); not captured.
		{"module function", `          <idle>-0       [001] ..s1.    52.000001: dummy_xmit+0x0/0x20 [dummy] <-dev_hard_start_xmit+0x9c/0x1f0`,
			`{"schema":"ftctl/event/v1","ts":52.000001,"cpu":1,"comm":"<idle>","pid":0,"flags":"..s1.","event":"function","func":"dummy_xmit","func_offset":"0x0/0x20","func_module":"dummy","parent":"dev_hard_start_xmit","parent_offset":"0x9c/0x1f0"}`},
		{"irq-info off", `             cat-189     [000]      8.463237: ksys_write <-do_syscall_64`,
			`{"schema":"ftctl/event/v1","ts":8.463237,"cpu":0,"comm":"cat","pid":189,"event":"function","func":"ksys_write","parent":"do_syscall_64"}`},
		{"counter clock", `             cat-196     [000] .....            4: ksys_write <-do_syscall_64`,
			`{"schema":"ftctl/event/v1","ts":4,"cpu":0,"comm":"cat","pid":196,"flags":".....","event":"function","func":"ksys_write","parent":"do_syscall_64"}`},
		{"x86-tsc clock", `             cat-203     [000] .....  29880629019: ksys_write <-do_syscall_64`,
			`{"schema":"ftctl/event/v1","ts":29880629019,"cpu":0,"comm":"cat","pid":203,"flags":".....","event":"function","func":"ksys_write","parent":"do_syscall_64"}`},
		{"tgid", `     rcu_preempt-18      (     18) [000] d..2.    14.221402: sched_switch: prev_comm=rcu_preempt prev_pid=18`,
			`{"schema":"ftctl/event/v1","ts":14.221402,"cpu":0,"comm":"rcu_preempt","pid":18,"tgid":18,"flags":"d..2.","event":"sched_switch","text":"prev_comm=rcu_preempt prev_pid=18"}`},
		{"tgid unknown", `              sh-152     (-------) [001] .....    13.478782: ksys_write <-do_syscall_64`,
			`{"schema":"ftctl/event/v1","ts":13.478782,"cpu":1,"comm":"sh","pid":152,"flags":".....","event":"function","func":"ksys_write","parent":"do_syscall_64"}`},
		{"repeats", `              dd-248     [000] .N...    17.277031: vfs_read <-ksys_read (repeats: 49, last_ts:    17.275509)`,
			`{"schema":"ftctl/event/v1","ts":17.277031,"cpu":0,"comm":"dd","pid":248,"flags":".N...","event":"function","func":"vfs_read","parent":"ksys_read","repeats":49,"last_ts":17.275509}`},
		{"no context", `ksys_write <-do_syscall_64`,
			`{"schema":"ftctl/event/v1","event":"function","func":"ksys_write","parent":"do_syscall_64"}`},
		{"comm with a space and a dash", `    my-evil proc-265     [001] .....    28.637730: tracing_mark_write: comm test`,
			`{"schema":"ftctl/event/v1","ts":28.637730,"cpu":1,"comm":"my-evil proc","pid":265,"flags":".....","event":"marker","text":"comm test"}`},
		{"comm like a context", `     x-1 [000] y-267     [001] .....    28.652781: tracing_mark_write: comm test`,
			`{"schema":"ftctl/event/v1","ts":28.652781,"cpu":1,"comm":"x-1 [000] y","pid":267,"flags":".....","event":"marker","text":"comm test"}`},
		{"comm a dash", `               --273     [001] .....    28.692459: tracing_mark_write: comm test`,
			`{"schema":"ftctl/event/v1","ts":28.692459,"cpu":1,"comm":"-","pid":273,"flags":".....","event":"marker","text":"comm test"}`},
		{"comm of 15 bytes", ` fifteen-bytes-x-271     [001] .....    28.680490: tracing_mark_write: comm test`,
			`{"schema":"ftctl/event/v1","ts":28.680490,"cpu":1,"comm":"fifteen-bytes-x","pid":271,"flags":".....","event":"marker","text":"comm test"}`},
		{"comm with escapes", "       e\x1b[31mx\ty-269     [001] .....    28.667721: tracing_mark_write: comm test",
			`{"schema":"ftctl/event/v1","ts":28.667721,"cpu":1,"comm":"e\u001b[31mx\ty","pid":269,"flags":".....","event":"marker","text":"comm test"}`},
		// A comm longer than the kernel's 15 bytes (not possible on 6.1/6.12): later dashes are tried.
		{"comm longer than 16", `a-very-long-command-name-77 [003] d.... 1.000000: tracing_mark_write: x`,
			`{"schema":"ftctl/event/v1","ts":1.000000,"cpu":3,"comm":"a-very-long-command-name","pid":77,"flags":"d....","event":"marker","text":"x"}`},
		{"marker with escapes", "              sh-152     [001] .....    17.805566: tracing_mark_write: esc \x1b[31mred\x1b[0m tab\there",
			`{"schema":"ftctl/event/v1","ts":17.805566,"cpu":1,"comm":"sh","pid":152,"flags":".....","event":"marker","text":"esc \u001b[31mred\u001b[0m tab\there"}`},
		{"marker, invalid UTF-8, DEL, C1", "              sh-151     [001] .....    28.626251: tracing_mark_write: del \x7f c1 \xc2\x9b bad \xff end",
			`{"schema":"ftctl/event/v1","ts":28.626251,"cpu":1,"comm":"sh","pid":151,"flags":".....","event":"marker","text":"del \u007f c1 \u009b bad \ufffd end"}`},
		{"marker, empty", `              sh-152     [001] .....    17.805566: tracing_mark_write: `,
			`{"schema":"ftctl/event/v1","ts":17.805566,"cpu":1,"comm":"sh","pid":152,"flags":".....","event":"marker","text":""}`},
		// print_print passes the tracer flags to seq_print_ip_sym: sym-offset shows on markers.
		{"marker with sym-offset", `              sh-152     [001] .....    17.805566: tracing_mark_write+0x1b3/0x2d0: hi`,
			`{"schema":"ftctl/event/v1","ts":17.805566,"cpu":1,"comm":"sh","pid":152,"flags":".....","event":"marker","text":"hi"}`},
		{"kprobe", `              sh-152     [000] .N...    18.053601: open: (do_sys_openat2+0x0/0xe0) dfd=-100 path="/dev/null" bad=(fault) comm="sh" arr={47,100,101,118} how=0xffffd1a98041bc98`,
			`{"schema":"ftctl/event/v1","ts":18.053601,"cpu":0,"comm":"sh","pid":152,"flags":".N...","event":"open","probe":"do_sys_openat2+0x0/0xe0","args":{"dfd":-100,"path":"/dev/null","bad":null,"comm":"sh","arr":[47,100,101,118],"how":"0xffffd1a98041bc98"}}`},
		{"kretprobe", `              sh-152     [000] .....    18.055479: openret: (__x64_sys_openat+0x6e/0xa0 <- do_sys_openat2) ret=3`,
			`{"schema":"ftctl/event/v1","ts":18.055479,"cpu":0,"comm":"sh","pid":152,"flags":".....","event":"openret","probe":"do_sys_openat2","return_to":"__x64_sys_openat+0x6e/0xa0","args":{"ret":3}}`},
		{"kprobe without arguments", `            stat-285     [000] .....    18.157493: bare: (vfs_fstat+0x4/0x90)`,
			`{"schema":"ftctl/event/v1","ts":18.157493,"cpu":0,"comm":"stat","pid":285,"flags":".....","event":"bare","probe":"vfs_fstat+0x4/0x90","args":{}}`},
		{"kprobe string holding a quote", `             cat-282     [000] .....    18.112195: open: (do_sys_openat2+0x0/0xe0) dfd=-100 path="/tmp/quote" x=y" bad=(fault)`,
			`{"schema":"ftctl/event/v1","ts":18.112195,"cpu":0,"comm":"cat","pid":282,"flags":".....","event":"open","probe":"do_sys_openat2+0x0/0xe0","args":{"dfd":-100,"path":"/tmp/quote\" x=y","bad":null}}`},
		{"kprobe string with escapes", "             cat-281     [001] .....    18.096558: open: (do_sys_openat2+0x0/0xe0) path=\"/tmp/esc\x1b[31mname\ttab\" bad=(fault)",
			`{"schema":"ftctl/event/v1","ts":18.096558,"cpu":1,"comm":"cat","pid":281,"flags":".....","event":"open","probe":"do_sys_openat2+0x0/0xe0","args":{"path":"/tmp/esc\u001b[31mname\ttab","bad":null}}`},
		// A file name with a newline breaks the line: the first half keeps its arguments as text.
		{"kprobe string cut by a newline", `             cat-281     [001] .....    18.096558: open: (do_sys_openat2+0x0/0xe0) path="/tmp/a`,
			`{"schema":"ftctl/event/v1","ts":18.096558,"cpu":1,"comm":"cat","pid":281,"flags":".....","event":"open","probe":"do_sys_openat2+0x0/0xe0","text":"path=\"/tmp/a"}`},
		// Types print_type_* gives that the VM probes did not use: char, symbol, string arrays.
		{"kprobe other types", `              sh-1       [000] .....     1.000000: p1: (f+0x0/0x10) c='x' s=vfs_read+0x0/0x1a0 names={"a,b","c"} e={}`,
			`{"schema":"ftctl/event/v1","ts":1.000000,"cpu":0,"comm":"sh","pid":1,"flags":".....","event":"p1","probe":"f+0x0/0x10","args":{"c":"'x'","s":"vfs_read+0x0/0x1a0","names":["a,b","c"],"e":[]}}`},
		{"tracepoint", `              sh-152     [000] .....    18.212108: sched_process_fork: comm=sh pid=102 child_comm=sh child_pid=252`,
			`{"schema":"ftctl/event/v1","ts":18.212108,"cpu":0,"comm":"sh","pid":152,"flags":".....","event":"sched_process_fork","text":"comm=sh pid=102 child_comm=sh child_pid=252"}`},
		{"lost", `CPU:1 [LOST 1849 EVENTS]`, `{"schema":"ftctl/event/v1","event":"lost","cpu":1,"lost":1849}`},
		// print_trace_line prints this when the ring buffer could not count (lost_events == -1).
		{"lost, uncounted", `CPU:0 [LOST EVENTS]`, `{"schema":"ftctl/event/v1","event":"lost","cpu":0,"lost":null}`},
		{"graph entry", ` 0)               |  vfs_read() {`,
			`{"schema":"ftctl/event/v1","cpu":0,"event":"graph","type":"entry","func":"vfs_read","depth":0}`},
		{"graph leaf", ` 0) ! 161.331 us  |      security_file_permission();`,
			`{"schema":"ftctl/event/v1","cpu":0,"event":"graph","type":"call","func":"security_file_permission","depth":2,"duration_us":161.331}`},
		{"graph exit", ` 0) # 1078.502 us |  }`,
			`{"schema":"ftctl/event/v1","cpu":0,"event":"graph","type":"exit","depth":0,"duration_us":1078.502}`},
		{"graph exit, funcgraph-tail", ` 1) + 12.713 us   |    } /* proc_reg_read_iter */`,
			`{"schema":"ftctl/event/v1","cpu":1,"event":"graph","type":"exit","func":"proc_reg_read_iter","depth":1,"duration_us":12.713}`},
		{"graph, proc and abstime", `   37.081630 |   0)     dd-312     | + 18.735 us   |      security_file_permission();`,
			`{"schema":"ftctl/event/v1","ts":37.081630,"cpu":0,"comm":"dd","pid":312,"event":"graph","type":"call","func":"security_file_permission","depth":2,"duration_us":18.735}`},
		{"graph, bare", `    security_file_permission();`,
			`{"schema":"ftctl/event/v1","event":"graph","type":"call","func":"security_file_permission","depth":2}`},
		{"continuation of a marker", `lines`, `{"schema":"ftctl/event/v1","event":"raw","text":"lines"}`},
		{"latency-format (not parsed)", `     cat-240       0..... 61069us : ksys_write <-do_syscall_64`,
			`{"schema":"ftctl/event/v1","event":"raw","text":"     cat-240       0..... 61069us : ksys_write <-do_syscall_64"}`},
		{"graph context switch (not parsed)", ` ------------------------------------------`,
			`{"schema":"ftctl/event/v1","event":"raw","text":" ------------------------------------------"}`},
		{"unknown body", `              sh-152     [000] .....    18.212108: ??? what`,
			`{"schema":"ftctl/event/v1","ts":18.212108,"cpu":0,"comm":"sh","pid":152,"flags":".....","event":"raw","text":"??? what"}`},
		{"orphan frame", ` => vfs_read`, `{"schema":"ftctl/event/v1","event":"raw","text":" => vfs_read"}`},
		{"empty", ``, `{"schema":"ftctl/event/v1","event":"raw","text":""}`},
	}
	for _, c := range cases {
		var ev Event
		ParseLine(&ev, []byte(c.line))
		got := strings.TrimSuffix(string(AppendJSON(nil, &ev, false)), "\n")
		if got != c.want {
			t.Errorf("%s:\n%q\n got %s\nwant %s", c.name, c.line, got, c.want)
		}
		if !json.Valid([]byte(got)) {
			t.Errorf("%s: invalid JSON %s", c.name, got)
		}
	}
}

func TestStackGrouping(t *testing.T) {
	in := "              sh-152     [000] .....    18.430094: <stack trace>\n" +
		" => kprobe_trace_func\n => 0xffffffffc05720de\n => do_sys_openat2\n" +
		"              sh-152     [000] .....    18.431596: tracing_mark_write: after\n" +
		"              sh-258     [001] .....    28.506553: <user stack trace>\n =>  <000000000040ebf0>\n"
	js, _, _ := decodeAll(t, []byte(in), TextOptions{})
	want := []string{
		`{"schema":"ftctl/event/v1","ts":18.430094,"cpu":0,"comm":"sh","pid":152,"flags":".....","event":"stack","stack":["kprobe_trace_func","0xffffffffc05720de","do_sys_openat2"]}`,
		`{"schema":"ftctl/event/v1","ts":18.431596,"cpu":0,"comm":"sh","pid":152,"flags":".....","event":"marker","text":"after"}`,
		`{"schema":"ftctl/event/v1","ts":28.506553,"cpu":1,"comm":"sh","pid":258,"flags":".....","event":"user_stack","stack":["<000000000040ebf0>"]}`,
	}
	if strings.Join(js, "") != strings.Join(want, "\n")+"\n" {
		t.Errorf("got\n%s\nwant\n%s", strings.Join(js, ""), strings.Join(want, "\n"))
	}
}

// Feeding the bytes in any pieces gives the same events as feeding them whole.
func TestDecoderChunking(t *testing.T) {
	in := readFixtures(t, "6.12")
	whole, _, _ := decodeAll(t, in, TextOptions{})
	for _, size := range []int{1, 7, 100, 4095, 4096, 65536} {
		var d Decoder
		var got []string
		emit := func(ev *Event) error { got = append(got, string(AppendJSON(nil, ev, false))); return nil }
		for p := in; len(p) > 0; {
			n := min(size, len(p))
			if err := d.Feed(p[:n], emit); err != nil {
				t.Fatal(err)
			}
			p = p[n:]
		}
		d.Flush(emit)
		if strings.Join(got, "") != strings.Join(whole, "") {
			t.Errorf("pieces of %d bytes: %d events, whole: %d", size, len(got), len(whole))
		}
	}
}

// readFixtures concatenates every trace_pipe capture of a kernel, in name order.
func readFixtures(t testing.TB, kernel string) []byte {
	names, err := filepath.Glob(filepath.Join("testdata", kernel, "*.pipe"))
	if err != nil || len(names) == 0 {
		t.Fatalf("no fixtures for %s: %v", kernel, err)
	}
	sort.Strings(names)
	var all []byte
	for _, n := range names {
		b, err := os.ReadFile(n)
		if err != nil {
			t.Fatal(err)
		}
		all = append(all, b...)
	}
	return all
}

// What each capture must parse into, on both kernels. raw counts the lines the parser is
// expected not to understand (and keep whole).
var fixtureSpecs = map[string]struct {
	kinds []Kind // every event is one of these
	raw   int
	check func(t *testing.T, evs []Event)
}{
	"function.default":         {kinds: []Kind{KindFunction}, check: allParents},
	"function.sym-offset":      {kinds: []Kind{KindFunction}, check: symParts(true, false)},
	"function.sym-addr":        {kinds: []Kind{KindFunction}, check: symParts(false, true)},
	"function.sym-offset-addr": {kinds: []Kind{KindFunction}, check: symParts(true, true)},
	"function.noparent":        {kinds: []Kind{KindFunction}},
	"function.noirqinfo":       {kinds: []Kind{KindFunction}, check: noFlags},
	"function.counter":         {kinds: []Kind{KindFunction}, check: integerTS},
	"function.x86-tsc":         {kinds: []Kind{KindFunction}, check: integerTS},
	"function.uptime":          {kinds: []Kind{KindFunction}, check: integerTS},
	"function.mono":            {kinds: []Kind{KindFunction}, check: allParents},
	"function.nocontext":       {kinds: []Kind{KindFunction}, check: allParents},
	"function.tgid":            {kinds: []Kind{KindFunction, KindPrint}, check: tgids},
	"function.repeats":         {kinds: []Kind{KindFunction}, check: repeats},
	"function.stacktrace":      {kinds: []Kind{KindFunction, KindStack}, check: stacks(KindStack)},
	"event.stacktrace":         {kinds: []Kind{KindPrint, KindStack, KindUserStack}, check: stacks(KindUserStack)},
	"kprobe.stacktrace":        {kinds: []Kind{KindProbe, KindStack}, check: stacks(KindStack)},
	"kprobe":                   {kinds: []Kind{KindProbe}, check: probes},
	"tracepoint":               {kinds: []Kind{KindPrint}},
	"marker":                   {kinds: []Kind{KindMarker, KindPrint, KindRaw}, raw: 1, check: markers},
	"graph.default":            {kinds: []Kind{KindGraph}, check: graphs(true, false)},
	"graph.proc-abstime":       {kinds: []Kind{KindGraph}, check: graphs(true, true)},
	"graph.bare":               {kinds: []Kind{KindGraph}, check: graphs(false, false)},
	"overrun":                  {kinds: []Kind{KindMarker, KindLost}, check: lost},
	"function.latency":         {kinds: []Kind{KindRaw}, raw: -1},
}

func TestFixtures(t *testing.T) {
	for _, kernel := range []string{"6.1", "6.12"} {
		names, _ := filepath.Glob(filepath.Join("testdata", kernel, "*.pipe"))
		if len(names) < len(fixtureSpecs) {
			t.Fatalf("%s: %d captures, want %d (run make fixtures)", kernel, len(names), len(fixtureSpecs))
		}
		for _, path := range names {
			name := strings.TrimSuffix(filepath.Base(path), ".pipe")
			t.Run(kernel+"/"+name, func(t *testing.T) {
				spec, ok := fixtureSpecs[name]
				if !ok {
					t.Fatalf("no expectations for %s", name)
				}
				in, err := os.ReadFile(path)
				if err != nil {
					t.Fatal(err)
				}
				if len(in) == 0 {
					t.Fatal("empty capture")
				}
				js, text, evs := decodeAll(t, in, TextOptions{Color: true})
				// Nothing dropped: the events' lines are the input's lines.
				var lines int
				raw := 0
				for i, ev := range evs {
					lines += bytes.Count(ev.Line, []byte{'\n'}) + 1
					if !kindIn(ev.Kind, spec.kinds) {
						t.Errorf("event %d is %v: %q", i, ev.Kind, ev.Line)
					}
					if ev.Kind == KindRaw {
						raw++
					}
					if !json.Valid([]byte(js[i])) {
						t.Errorf("invalid JSON: %s", js[i])
					}
					checkTerminalSafe(t, text[i], true)
				}
				if want := bytes.Count(in, []byte{'\n'}); lines != want {
					t.Errorf("events cover %d lines, the capture has %d", lines, want)
				}
				if spec.raw >= 0 && raw != spec.raw {
					t.Errorf("%d raw lines, want %d", raw, spec.raw)
				}
				if spec.check != nil {
					spec.check(t, evs)
				}
				golden := filepath.Join("testdata", kernel, name+".json")
				got := strings.Join(js, "")
				if *update {
					os.WriteFile(golden, []byte(got), 0o644)
				}
				want, err := os.ReadFile(golden)
				if err != nil {
					t.Fatalf("%v (go test -update writes it)", err)
				}
				if got != string(want) {
					t.Errorf("JSON differs from %s (go test ./stream -update, then review the diff)", golden)
				}
			})
		}
	}
}

func kindIn(k Kind, ks []Kind) bool {
	for _, x := range ks {
		if k == x {
			return true
		}
	}
	return false
}

// checkTerminalSafe fails on any control character but the newlines ending lines (and the
// SGR colour sequences ftctl itself writes, when allowed), on DEL, C1 controls and invalid UTF-8.
func checkTerminalSafe(t *testing.T, s string, colorAllowed bool) {
	t.Helper()
	if colorAllowed {
		for _, seq := range []string{sgrReset, sgrDim, sgrLost, "\x1b[36m", "\x1b[32m", "\x1b[33m", "\x1b[34m", "\x1b[35m"} {
			s = strings.ReplaceAll(s, seq, "")
		}
	}
	if !utf8.ValidString(s) {
		t.Errorf("invalid UTF-8 in text output %q", s)
	}
	for _, r := range s {
		if (r < 0x20 && r != '\n') || (r >= 0x7f && r < 0xa0) {
			t.Errorf("control character %U in text output %q", r, s)
			return
		}
	}
}

func allParents(t *testing.T, evs []Event) {
	for _, ev := range evs {
		if ev.Kind == KindFunction && (ev.Func.Name == nil || ev.Parent.Name == nil) {
			t.Errorf("function without a parent: %q", ev.Line)
		}
	}
}

func symParts(offset, addr bool) func(*testing.T, []Event) {
	return func(t *testing.T, evs []Event) {
		for _, ev := range evs {
			for _, s := range []Sym{ev.Func, ev.Parent} {
				if (s.Offset != nil) != offset || (s.Addr != nil) != addr {
					t.Errorf("symbol %+v of %q", s, ev.Line)
				}
			}
		}
	}
}

func noFlags(t *testing.T, evs []Event) {
	for _, ev := range evs {
		if ev.Flags != nil || !ev.HasContext {
			t.Errorf("flags %q in %q", ev.Flags, ev.Line)
		}
	}
}

func integerTS(t *testing.T, evs []Event) {
	for _, ev := range evs {
		if len(ev.TS) == 0 || bytes.IndexByte(ev.TS, '.') >= 0 {
			t.Errorf("timestamp %q in %q", ev.TS, ev.Line)
		}
	}
}

func tgids(t *testing.T, evs []Event) {
	known, unknown := 0, 0
	for _, ev := range evs {
		switch {
		case ev.TGID > 0:
			known++
		case ev.TGID < 0:
			unknown++
		default:
			t.Errorf("no tgid column in %q", ev.Line)
		}
	}
	if known == 0 || unknown == 0 {
		t.Errorf("%d known and %d unknown tgids: the capture should have both", known, unknown)
	}
}

func repeats(t *testing.T, evs []Event) {
	n := 0
	for _, ev := range evs {
		if ev.LastTS != nil {
			n++
			if ev.Repeats <= 0 {
				t.Errorf("repeats %d in %q", ev.Repeats, ev.Line)
			}
		}
	}
	if n == 0 {
		t.Error("no repeats note parsed")
	}
}

func stacks(kind Kind) func(*testing.T, []Event) {
	return func(t *testing.T, evs []Event) {
		n := 0
		for _, ev := range evs {
			if ev.Kind == kind {
				n++
				if len(ev.Frames) == 0 {
					t.Errorf("stack without frames: %q", ev.Line)
				}
				for _, f := range ev.Frames {
					if len(f) == 0 || f[0] == ' ' || bytes.HasPrefix(f, []byte("=>")) {
						t.Errorf("frame %q", f)
					}
				}
			}
		}
		if n == 0 {
			t.Errorf("no %v event", kind)
		}
	}
}

func probes(t *testing.T, evs []Event) {
	var faults, strs, arrays, rets, weird int
	for _, ev := range evs {
		if !ev.ArgsOK {
			t.Errorf("arguments not parsed: %q", ev.Line)
		}
		if ev.RetFrom != nil {
			rets++
		}
		for _, a := range ev.Args {
			switch a.Kind {
			case ValueFault:
				faults++
			case ValueString:
				strs++
				if bytes.Contains(a.Value, []byte("\x1b[31m")) || bytes.Contains(a.Value, []byte(`quote" x=y`)) {
					weird++
				}
			case ValueArray:
				arrays++
			}
		}
	}
	if faults == 0 || strs == 0 || arrays == 0 || rets == 0 || weird != 2 {
		t.Errorf("faults %d, strings %d, arrays %d, return probes %d, hostile file names %d (want 2)", faults, strs, arrays, rets, weird)
	}
}

func markers(t *testing.T, evs []Event) {
	comms := map[string]bool{}
	for _, ev := range evs {
		comms[string(ev.Comm)] = true
	}
	for _, c := range []string{"my-evil proc", "x-1 [000] y", "e\x1b[31mx\ty", "fifteen-bytes-x", "-", "<idle>"} {
		if !comms[c] {
			t.Errorf("comm %q not parsed", c)
		}
	}
}

func graphs(cpu, proc bool) func(*testing.T, []Event) {
	return func(t *testing.T, evs []Event) {
		types := map[GraphType]int{}
		for _, ev := range evs {
			types[ev.Graph.Type]++
			if (ev.CPU >= 0) != cpu || (ev.Comm != nil) != proc || (ev.TS != nil) != proc {
				t.Errorf("columns of %q: cpu %d comm %q ts %q", ev.Line, ev.CPU, ev.Comm, ev.TS)
			}
		}
		if types[GraphEntry] == 0 || types[GraphExit] == 0 || types[GraphCall] == 0 || types[GraphEntry] != types[GraphExit] {
			t.Errorf("graph line types %v", types)
		}
	}
}

func lost(t *testing.T, evs []Event) {
	for _, ev := range evs {
		if ev.Kind == KindLost {
			if ev.Lost <= 0 || ev.CPU < 0 {
				t.Errorf("lost %d on cpu %d", ev.Lost, ev.CPU)
			}
			return
		}
	}
	t.Error("no LOST line")
}

func TestGlob(t *testing.T) {
	cases := []struct {
		pat, name string
		want      bool
	}{
		{"open", "open", true}, {"open", "openret", false}, {"open*", "openret", true},
		{"*ret", "openret", true}, {"*", "", true}, {"?", "", false}, {"o?en", "open", true},
		{"kworker*", "kworker/0:1", true}, {"*/0:*", "kworker/0:1", true},
		{"[a-c]at", "cat", true}, {"[!a-c]at", "cat", false}, {"[^a-c]at", "rat", true},
		{"[]]", "]", true}, {`\*`, "*", true}, {`\*`, "a", false}, {"a*b*c", "aXbYc", true},
		{"a*b*c", "aXbY", false}, {"my-evil proc", "my-evil proc", true}, {"sched_*", "sched_switch", true},
		{"*a*a*a*a*b", "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa", false},
	}
	for _, c := range cases {
		if got := globMatch(c.pat, []byte(c.name)); got != c.want {
			t.Errorf("globMatch(%q, %q) = %v", c.pat, c.name, got)
		}
	}
	for _, bad := range []string{"[abc", `abc\`, "x[", "[!"} {
		if validGlob(bad) {
			t.Errorf("%q accepted", bad)
		}
	}
}

func TestFilter(t *testing.T) {
	in := readFixtures(t, "6.12")
	count := func(f Filter) (n int) {
		if err := f.Validate(); err != nil {
			t.Fatal(err)
		}
		var d Decoder
		emit := func(ev *Event) error {
			if f.Match(ev) {
				n++
			}
			return nil
		}
		d.Feed(in, emit)
		d.Flush(emit)
		return n
	}
	all := count(Filter{})
	lost := count(Filter{Events: []string{"no-such-event"}})
	if lost != 1 {
		t.Errorf("LOST lines must always pass: %d shown", lost)
	}
	for _, c := range []struct {
		name string
		f    Filter
	}{
		{"event", Filter{Events: []string{"open"}}},
		{"events", Filter{Events: []string{"open*", "marker"}}},
		{"pid", Filter{PID: 152, HasPID: true}},
		{"comm", Filter{Comm: "my-evil*"}},
		{"grep", Filter{Grep: regexp.MustCompile(`do_sys_openat2`)}},
	} {
		n := count(c.f)
		if n <= 1 || n >= all {
			t.Errorf("%s: %d of %d events shown", c.name, n, all)
		}
	}
	if err := (&Filter{Events: []string{"[x"}}).Validate(); err == nil {
		t.Error("malformed glob accepted")
	}
}

// A probe string holding a newline continues on the next line, which may look like any event
// (a forged trace_marker line of another comm): the decoder joins the lines while the string
// is open, and a string that never closes leaves the lines as they were.
func TestDecoderJoinsProbeStringOverLines(t *testing.T) {
	forged := "  sshd-4242 [000] ..... 12345.678901: tracing_mark_write: forged"
	text := "             cat-154     [001] ..... 10.000001: open: (do_sys_openat2+0x0/0x120) dfd=-100 path=\"/tmp/x\n" + forged + "\" flags=0\n" +
		"             cat-154     [001] ..... 10.000002: tracing_mark_write: after\n"
	for _, chunks := range [][]string{{text}, {text[:60], text[60:130], text[130:]}} {
		var d Decoder
		var got []string
		emit := func(ev *Event) error {
			s := string(ev.Comm) + "|" + ev.Kind.String()
			for _, a := range ev.Args {
				s += "|" + string(a.Name) + "=" + string(a.Value)
			}
			got = append(got, s)
			return nil
		}
		for _, c := range chunks {
			if err := d.Feed([]byte(c), emit); err != nil {
				t.Fatal(err)
			}
		}
		d.Flush(emit)
		want := []string{"cat|probe|dfd=-100|path=/tmp/x\n" + forged + "|flags=0", "cat|marker"}
		if strings.Join(got, "\n~\n") != strings.Join(want, "\n~\n") {
			t.Errorf("chunks %d: got\n%q\nwant\n%q", len(chunks), got, want)
		}
	}

	// never closed: the first line as printed, the next one as its own event
	unclosed := "             cat-154     [001] ..... 10.000001: open: (do_sys_openat2+0x0/0x120) path=\"/tmp/x\n" +
		"             cat-154     [001] ..... 10.000002: tracing_mark_write: next\n"
	var d Decoder
	var kinds []string
	emit := func(ev *Event) error { kinds = append(kinds, ev.Kind.String()+":"+string(ev.Text)); return nil }
	d.Feed([]byte(unclosed), emit)
	if len(kinds) != 0 {
		t.Fatalf("emitted before the read ended: %q", kinds)
	}
	d.Flush(emit)
	if strings.Join(kinds, ",") != `probe:path="/tmp/x,marker:next` {
		t.Errorf("unclosed: %q", kinds)
	}
}
