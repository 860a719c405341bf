package stream

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"sort"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/ftctl/ftctl/tracedat"
)

// fuzzSeeds are lines from the fixtures of both kernels, and hostile variants.
func fuzzSeeds(f *testing.F) {
	for _, k := range []string{"6.1", "6.12"} {
		for i, line := range bytes.Split(readFixtures(f, k), []byte{'\n'}) {
			if i%7 == 0 {
				f.Add(line)
			}
		}
	}
	for _, s := range []string{
		"CPU:1 [LOST 1849 EVENTS]", "CPU:0 [LOST EVENTS]",
		"       e\x1b[31mx\ty-269     [001] .....    28.667721: tracing_mark_write: \xff\xc2\x9b\x7f\u2028",
		`             cat-282     [000] .....    18.112195: open: (do_sys_openat2+0x0/0xe0) path="a" b="c" d=" e=f" g={"h","i"}`,
		` 0) # 1078.502 us |  } /* = 0x0 */`, "   37.081612 |   0)     dd-312     |               |  vfs_read() {",
		"x-1 [000] y-267 [001] ..... 0: a <-b (repeats: 1, last_ts: 1)",
	} {
		f.Add([]byte(s))
	}
}

// No input makes the parser panic, the JSON invalid, or a control character reach the text.
func FuzzParseLine(f *testing.F) {
	fuzzSeeds(f)
	f.Fuzz(func(t *testing.T, line []byte) {
		if bytes.IndexByte(line, '\n') >= 0 {
			line = line[:bytes.IndexByte(line, '\n')]
		}
		var ev Event
		ParseLine(&ev, line)
		for _, raw := range []bool{false, true} {
			js := AppendJSON(nil, &ev, raw)
			var obj map[string]any
			if err := json.Unmarshal(js, &obj); err != nil {
				t.Fatalf("invalid JSON for %q: %v\n%s", line, err, js)
			}
			if _, ok := obj["event"].(string); !ok {
				t.Fatalf("no event name: %s", js)
			}
			if raw && obj["raw"] != strings.ToValidUTF8(string(line), "\ufffd") && utf8.Valid(line) {
				t.Fatalf("raw %q, line %q", obj["raw"], line)
			}
		}
		for _, o := range []TextOptions{{}, {Raw: true}} {
			text := string(AppendText(nil, &ev, o))
			checkTerminalSafe(t, strings.TrimSuffix(text, "\n"), false)
			if strings.Contains(strings.TrimSuffix(text, "\n"), "\n") {
				t.Fatalf("one line became several: %q", text)
			}
		}
	})
}

// Whatever the bytes and however they are cut, the decoder gives the same events, each valid.
func FuzzDecoder(f *testing.F) {
	f.Add([]byte("              sh-152     [000] .....    18.430094: <stack trace>\n => a\n => b\nlines\n"), uint16(20))
	f.Add([]byte("CPU:1 [LOST 2 EVENTS]\n\n\n => x\nabc"), uint16(3))
	f.Fuzz(func(t *testing.T, data []byte, cut uint16) {
		var whole, pieces []byte
		var d1, d2 Decoder
		e1 := func(ev *Event) error { whole = AppendJSON(whole, ev, true); return nil }
		e2 := func(ev *Event) error { pieces = AppendJSON(pieces, ev, true); return nil }
		d1.Feed(data, e1)
		d1.Flush(e1)
		c := int(cut) % (len(data) + 1)
		d2.Feed(data[:c], e2)
		d2.Feed(data[c:], e2)
		d2.Flush(e2)
		if !bytes.Equal(whole, pieces) {
			t.Fatalf("cut at %d changes the events:\n%s\n%s", c, whole, pieces)
		}
		for _, line := range bytes.Split(bytes.TrimSuffix(whole, []byte{'\n'}), []byte{'\n'}) {
			if len(data) > 0 && !json.Valid(line) {
				t.Fatalf("invalid JSON %s", line)
			}
		}
	})
}

// AppendJSONString decodes to what encoding/json makes of the same bytes; AppendEscaped is
// terminal-safe and reversible (unescape gives the bytes back).
func FuzzEscape(f *testing.F) {
	for _, s := range []string{"", "plain", "tab\there", "\x1b[31m", "\x7f\xc2\x9b", "\xff\xfe", "a\\x1b", `q"uote`,
		"\u2028\u2029", "\u202e\u200b", "日本語", "\U0001F600", "\xed\xa0\x80", "\x00\x01\x1f"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, s []byte) {
		js := AppendJSONString(nil, s)
		var got string
		if err := json.Unmarshal(js, &got); err != nil {
			t.Fatalf("invalid JSON string %s for %q: %v", js, s, err)
		}
		ref, _ := json.Marshal(string(s))
		var want string
		json.Unmarshal(ref, &want)
		if got != want {
			t.Fatalf("%q decodes to %q, encoding/json's to %q", s, got, want)
		}
		for _, c := range js {
			if c < 0x20 || c == 0x7f {
				t.Fatalf("raw control byte %#x in %q", c, js)
			}
		}
		if bytes.Contains(js, []byte("\xc2\x80")) || strings.ContainsFunc(string(js), func(r rune) bool { return r >= 0x80 && r < 0xa0 }) {
			t.Fatalf("raw C1 control in %q", js)
		}

		for _, quoted := range []bool{false, true} {
			esc := appendEscaped(nil, s, quoted)
			checkTerminalSafe(t, string(esc), false)
			if quoted && bytes.Contains(bytes.ReplaceAll(esc, []byte(`\\`), nil), []byte{'"'}) &&
				!bytes.Contains(bytes.ReplaceAll(esc, []byte(`\\`), nil), []byte(`\"`)) {
				t.Fatalf("unescaped quote in %q", esc)
			}
			back, err := unescape(esc)
			if err != nil || !bytes.Equal(back, s) {
				t.Fatalf("%q escapes to %q, which unescapes to %q (%v)", s, esc, back, err)
			}
		}
	})
}

// unescape reverses AppendEscaped.
func unescape(s []byte) ([]byte, error) {
	var out []byte
	for i := 0; i < len(s); i++ {
		if s[i] != '\\' {
			out = append(out, s[i])
			continue
		}
		if i+1 >= len(s) {
			return nil, fmt.Errorf("trailing backslash")
		}
		i++
		switch s[i] {
		case '\\', '"':
			out = append(out, s[i])
		case 't':
			out = append(out, '\t')
		case 'n':
			out = append(out, '\n')
		case 'r':
			out = append(out, '\r')
		case 'x', 'u', 'U':
			n := map[byte]int{'x': 2, 'u': 4, 'U': 8}[s[i]]
			if i+n >= len(s) {
				return nil, fmt.Errorf("short escape")
			}
			v, err := strconv.ParseUint(string(s[i+1:i+1+n]), 16, 32)
			if err != nil {
				return nil, err
			}
			if s[i] == 'x' {
				out = append(out, byte(v))
			} else {
				out = utf8.AppendRune(out, rune(v))
			}
			i += n
		default:
			return nil, fmt.Errorf("unknown escape \\%c", s[i])
		}
	}
	return out, nil
}

func TestEscapeExamples(t *testing.T) {
	cases := []struct{ in, text, json string }{
		{"plain", "plain", `"plain"`},
		{"esc\x1b[31m", `esc\x1b[31m`, `"esc\u001b[31m"`},
		{"tab\tnl\ncr\r", `tab\tnl\ncr\r`, `"tab\tnl\ncr\r"`},
		{"del\x7f", `del\x7f`, `"del\u007f"`},
		{"c1\xc2\x9b", `c1\u009b`, `"c1\u009b"`},
		{"bad\xff", `bad\xff`, `"bad\ufffd"`},
		{"back\\slash", `back\\slash`, `"back\\slash"`},
		{"bidi\u202e", `bidi\u202e`, "\"bidi\u202e\""},
		{"ls\u2028", `ls\u2028`, `"ls\u2028"`},
		{"日本", "日本", `"日本"`},
		{`q"`, `q"`, `"q\""`},
	}
	for _, c := range cases {
		if got := string(AppendEscaped(nil, []byte(c.in))); got != c.text {
			t.Errorf("AppendEscaped(%q) = %q, want %q", c.in, got, c.text)
		}
		if got := string(AppendJSONString(nil, []byte(c.in))); got != c.json {
			t.Errorf("AppendJSONString(%q) = %s, want %s", c.in, got, c.json)
		}
	}
}

// fileFuzzSeeds are valid recordings, small: version 6 (ftctl's), version 7 as trace-cmd
// writes it uncompressed, with zstd and with zlib, a function_graph recording (call trees) in
// each, and an instance's buffer beside the top level's.
func fileFuzzSeeds(f *testing.F) {
	small := fixtureTraceDat(f, "6.12", true)
	f.Add(small)
	f.Add(gunzip(f, filepath.Join("testdata", "6.12", "tp.v7.dat.gz")))
	for _, name := range []string{"tp.v7zstd.dat", "tp.v7zlib.dat"} {
		b, err := os.ReadFile(filepath.Join("testdata", "6.12", name))
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	graph := graphTraceDat(f, "6.12", 2)
	f.Add(graph)
	for _, comp := range []string{"none", "zstd", "zlib"} {
		f.Add(asTraceCmd(f, graph, 7, comp, map[string][]int{"": {0}, "inst": {1}}, []string{"", "inst"}))
	}
	f.Add(asTraceCmd(f, graph, 6, "", map[string][]int{"": {0}, "inst": {1}}, []string{"", "inst"}))
}

// graphTraceDat is a version 6 recording of the function_graph capture of a kernel (pages
// pages a CPU, the funcgraph formats only, no kallsyms).
func graphTraceDat(t testing.TB, kernel string, pages int) []byte {
	var ftrace []string
	for name, body := range gzTar(t, filepath.Join("testdata", kernel, "formats.tar.gz")) {
		if strings.HasPrefix(name, "events/ftrace/funcgraph_") && strings.HasSuffix(name, "/format") {
			ftrace = append(ftrace, body)
		}
	}
	sort.Strings(ftrace)
	var cpus [][]byte
	for cpu := range 2 {
		raw := gunzip(t, filepath.Join("testdata", kernel, fmt.Sprintf("graph.cpu%d.raw.gz", cpu)))
		cpus = append(cpus, raw[:min(len(raw), pages*4096)])
	}
	return craft{pageSize: 4096, ftrace: ftrace, cpus: cpus}.bytes(t)
}

// fileFuzzBudget is what reading a recording may allocate, given the bytes of its file and of
// its CPUs' data (decompressed, for a compressed file): the budget README.md states.
func fileFuzzBudget(file, data int) uint64 {
	return uint64(max(64<<20, 16*(file+data)))
}

// FuzzReadFileEndToEnd: a file's bytes through everything ftctl report and the console do
// with them (tracedat.Read, each buffer, stream.ReadFile, the text and JSON of every event,
// call trees in text and JSON): an error or events, never a panic, within the memory budget
// (allocations counted, and the process's limit set to 512 MiB: make fuzz runs it so) and
// with output bounded by the input.
func FuzzReadFileEndToEnd(f *testing.F) {
	fileFuzzSeeds(f)
	debug.SetMemoryLimit(512 << 20)
	f.Fuzz(func(t *testing.T, b []byte) {
		file, err := tracedat.Read(bytes.NewReader(b), int64(len(b)))
		if err != nil {
			return
		}
		data := 0
		for _, name := range append([]string{""}, file.Buffers()...) {
			if g, err := file.Buffer(name); err == nil {
				for _, c := range g.CPUData {
					data += int(c.Size)
				}
			}
		}
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		out := 0
		var buf []byte
		render := func(c *Call) error {
			buf = AppendCallJSON(buf[:0], c)
			if !json.Valid(buf) {
				t.Fatalf("invalid call tree JSON %s", buf)
			}
			out += len(buf)
			buf = AppendCallText(buf[:0], c)
			checkTerminalSafe(t, string(buf), true)
			out += len(buf)
			return nil
		}
		tree := &CallTree{Done: render}
		_, err = ReadFile(file, FileOptions{}, func(ev *Event) error {
			buf = AppendJSON(buf[:0], ev, false)
			if !json.Valid(buf) {
				t.Fatalf("invalid JSON %s", buf)
			}
			out += len(buf)
			buf = AppendText(buf[:0], ev, TextOptions{})
			out += len(buf)
			return tree.Add(ev)
		})
		if err == nil {
			_ = tree.End() // its error is the input's like any other: the budget is what is checked
		}
		runtime.ReadMemStats(&after)
		if alloc := after.TotalAlloc - before.TotalAlloc; alloc > fileFuzzBudget(len(b), data) {
			t.Fatalf("allocated %d bytes reading a file of %d bytes (%d of CPU data)", alloc, len(b), data)
		}
		if out > 64<<20+64*(len(b)+data) {
			t.Fatalf("rendered %d bytes of a file of %d bytes (%d of CPU data)", out, len(b), data)
		}
	})
}
