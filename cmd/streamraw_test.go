package cmd

import (
	"bufio"
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/ftctl/ftctl/stream"
	"github.com/ftctl/ftctl/tracefs"
)

// rawRoot is a fake tracing directory whose CPUs' trace_pipe_raw are regular files of
// ring-buffer pages holding trace_marker events (the page layout of the VM kernels): read to
// the end, with tracing_on 0, they end the stream as the kernel's do. The marker's address is
// this machine's tracing_mark_write, from its /proc/kallsyms, which the reader loads.
func rawRoot(t *testing.T, markers map[int][]string) string {
	t.Helper()
	mark := kallsymsAddr(t, "tracing_mark_write")
	root := fakeRoot(t)
	files := map[string]string{
		"current_tracer":             "nop\n",
		"trace_clock":                "[local] global counter\n",
		"saved_cmdlines":             "154 cat\n155 e\x1bx y\n",
		"events/header_page":         "\tfield: u64 timestamp;\toffset:0;\tsize:8;\tsigned:0;\n\tfield: local_t commit;\toffset:8;\tsize:8;\tsigned:1;\n\tfield: int overwrite;\toffset:8;\tsize:1;\tsigned:1;\n\tfield: char data;\toffset:16;\tsize:4080;\tsigned:0;\n",
		"events/ftrace/print/format": "name: print\nID: 5\nformat:\n\tfield:unsigned short common_type;\toffset:0;\tsize:2;\tsigned:0;\n\tfield:unsigned char common_flags;\toffset:2;\tsize:1;\tsigned:0;\n\tfield:unsigned char common_preempt_count;\toffset:3;\tsize:1;\tsigned:0;\n\tfield:int common_pid;\toffset:4;\tsize:4;\tsigned:1;\n\n\tfield:unsigned long ip;\toffset:8;\tsize:8;\tsigned:0;\n\tfield:char buf[];\toffset:16;\tsize:0;\tsigned:0;\n\nprint fmt: \"%ps: %s\", (void *)REC->ip, REC->buf\n",
	}
	for cpu, texts := range markers {
		var data []byte
		for i, text := range texts {
			e := binary.LittleEndian.AppendUint16(nil, 5)
			e = append(e, 0, 0)
			e = binary.LittleEndian.AppendUint32(e, uint32(154+i%2))
			e = binary.LittleEndian.AppendUint64(e, mark)
			e = append(e, text+"\n\x00"...)
			for len(e)%4 != 0 {
				e = append(e, 0)
			}
			// type_len 0 (length in array[0]), time delta 1000 ns
			data = binary.LittleEndian.AppendUint32(data, 1000<<5)
			data = binary.LittleEndian.AppendUint32(data, uint32(len(e)+4))
			data = append(data, e...)
		}
		page := binary.LittleEndian.AppendUint64(nil, uint64(cpu+1)*1_000_000_000)
		page = binary.LittleEndian.AppendUint64(page, uint64(len(data)))
		page = append(page, data...)
		page = append(page, make([]byte, 4096-len(page))...)
		files["per_cpu/cpu"+strconv.Itoa(cpu)+"/trace_pipe_raw"] = string(page)
	}
	for name, body := range files {
		p := filepath.Join(root, name)
		os.MkdirAll(filepath.Dir(p), 0o755)
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return root
}

// kallsymsAddr finds a symbol in this machine's /proc/kallsyms; the test skips when the kernel
// hides the addresses.
func kallsymsAddr(t *testing.T, name string) uint64 {
	t.Helper()
	f, err := os.Open("/proc/kallsyms")
	if err != nil {
		t.Skip(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) >= 3 && fields[2] == name {
			addr, err := strconv.ParseUint(fields[0], 16, 64)
			if err != nil || addr == 0 {
				t.Skipf("/proc/kallsyms hides addresses")
			}
			return addr
		}
	}
	t.Skipf("no %s in /proc/kallsyms", name)
	return 0
}

func TestStreamBinaryReader(t *testing.T) {
	root := rawRoot(t, map[int][]string{0: {"first", "third"}, 1: {"second \x1b[2J"}})
	code, out, errs := run(t, "--tracefs", root, "stream", "-o", "json", "--summary")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	want := `{"ts":1.000001,"cpu":0,"comm":"cat","pid":154,"flags":".....","event":"marker","text":"first"}
{"ts":1.000002,"cpu":0,"comm":"e\u001bx y","pid":155,"flags":".....","event":"marker","text":"third"}
{"ts":2.000001,"cpu":1,"comm":"cat","pid":154,"flags":".....","event":"marker","text":"second \u001b[2J"}
`
	lines := strings.SplitAfter(out, "\n")
	if got := strings.Join(lines[:3], ""); got != want {
		t.Errorf("got\n%swant\n%s", got, want)
	}
	if !strings.Contains(lines[3], `"reader":"trace_pipe_raw"`) || !strings.Contains(lines[3], `"end":"eof"`) || !strings.Contains(lines[3], `"events":3`) {
		t.Errorf("summary %s", lines[3])
	}

	// the text reader, asked for, and chosen by auto for --grep
	for _, args := range [][]string{{"--reader", "text"}, {"--grep", "x"}} {
		_, out, _ = run(t, append([]string{"--tracefs", root, "stream", "-o", "json", "--summary"}, args...)...)
		if !strings.Contains(out, `"reader":"trace_pipe"`) {
			t.Errorf("%v: %s", args, out)
		}
	}
	_, out, _ = run(t, "--tracefs", root, "stream", "-o", "json", "--summary", "--grep", "x")
	if !strings.Contains(out, `"reader_why":"--grep matches the kernel's lines`) {
		t.Errorf("no reason given: %s", out)
	}
	// auto: the function_graph tracer's lines only the kernel formats
	os.WriteFile(filepath.Join(root, "current_tracer"), []byte("function_graph\n"), 0o644)
	_, out, _ = run(t, "--tracefs", root, "stream", "-o", "json", "--summary")
	if !strings.Contains(out, `"reader_why":"the function_graph tracer`) {
		t.Errorf("function_graph: %s", out)
	}
}

func TestStreamReaderInvalid(t *testing.T) {
	root := rawRoot(t, map[int][]string{0: {"x"}})
	for _, args := range [][]string{
		{"--reader", "bogus"}, {"--reader", "binary", "--grep", "x"}, {"--reader", "binary", "--raw"},
	} {
		code, out, errs := run(t, append([]string{"--tracefs", root, "stream"}, args...)...)
		if code != 2 || out != "" {
			t.Errorf("%v: exit %d, stdout %q, stderr %q", args, code, out, errs)
		}
	}
	os.WriteFile(filepath.Join(root, "trace_clock"), []byte("local [counter]\n"), 0o644)
	code, _, errs := run(t, "--tracefs", root, "stream", "--reader", "binary")
	if code != 2 || !strings.Contains(errs, `"counter" does not count nanoseconds`) {
		t.Errorf("counter clock: exit %d %s", code, errs)
	}
}

func TestParseSavedCmdlines(t *testing.T) {
	m := parseSavedCmdlines([]byte("1 systemd\n154 my prog\nbad\n\n7 \n"))
	if string(m[1]) != "systemd" || string(m[154]) != "my prog" || len(m) != 3 || !bytes.Equal(m[7], []byte{}) {
		t.Errorf("%v", m)
	}
	for in, want := range map[string]string{"local [global] counter\n": "global", "nop\n": "nop", "[x": "[x"} {
		if got := currentChoice(in); got != want {
			t.Errorf("currentChoice(%q) = %q, want %q", in, got, want)
		}
	}
}

// While kallsyms loads, chunks wait in the backlog (copied: the reader reuses its buffers),
// then come out in order; at the end of the stream finish waits for kallsyms, or for the
// context.
func TestBinaryBacklog(t *testing.T) {
	root := rawRoot(t, map[int][]string{0: {"one", "two"}, 1: {"three"}})
	var chunks [][]byte
	for cpu := range 2 {
		page, err := os.ReadFile(filepath.Join(root, "per_cpu", "cpu"+strconv.Itoa(cpu), "trace_pipe_raw"))
		if err != nil {
			t.Fatal(err)
		}
		c := binary.LittleEndian.AppendUint32(nil, uint32(cpu))
		c = binary.LittleEndian.AppendUint32(c, uint32(len(page)))
		chunks = append(chunks, append(c, page...))
	}
	g := &Globals{Out: new(bytes.Buffer), Err: new(bytes.Buffer)}
	fs := &tracefs.FS{Mount: tracefs.Mount{Path: root}}
	s, err := newBinarySetup(g, fs.Top(), nil)
	if err != nil {
		t.Fatal(err)
	}
	real := s.symbols
	pending := make(chan error, 1)
	s.symbols = pending // kallsyms "still loading"
	var got []string
	emit := func(ev *stream.Event) error { got = append(got, string(ev.Text)); return nil }
	for _, c := range chunks {
		buf := bytes.Clone(c)
		if err := s.feed(buf, emit); err != nil {
			t.Fatal(err)
		}
		clear(buf) // the reader reuses its buffer
	}
	if len(got) != 0 || len(s.backlog) != 2 {
		t.Fatalf("decoded before kallsyms: %q, backlog %d", got, len(s.backlog))
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := s.finish(ctx, emit); !errors.Is(err, context.Canceled) {
		t.Fatalf("finish with the context ended: %v", err)
	}
	pending <- <-real
	if err := s.finish(context.Background(), emit); err != nil {
		t.Fatal(err)
	}
	if strings.Join(got, ",") != "one,two,three" || s.loading() != nil || s.backlog != nil {
		t.Errorf("after kallsyms: %q", got)
	}
}

// saved_cmdlines is read again for a pid never seen after pidRefresh, for one known missing
// after pidRetry, and never for a pid found.
func TestPidTable(t *testing.T) {
	root := t.TempDir()
	file := filepath.Join(root, "saved_cmdlines")
	os.WriteFile(file, []byte("10 ten\n"), 0o644)
	c := &pidTable{in: (&tracefs.FS{Mount: tracefs.Mount{Path: root}}).Top(), file: "saved_cmdlines"}
	t0 := time.Unix(1000, 0)
	c.t = t0
	if string(c.lookup(10)) != "ten" || c.lookup(11) != nil {
		t.Fatal("first read")
	}
	os.WriteFile(file, []byte("10 TEN\n11 eleven\n12 twelve\n"), 0o644)
	check := func(at time.Duration, pid int, want string) {
		t.Helper()
		c.t = t0.Add(at)
		if got := string(c.lookup(pid)); got != want {
			t.Errorf("at %v, pid %d: %q, want %q", at, pid, got, want)
		}
	}
	check(10*time.Millisecond, 11, "")       // known missing, not retried yet
	check(10*time.Millisecond, 12, "")       // never seen, but read 10 ms ago
	check(30*time.Millisecond, 11, "")       // known missing: waits pidRetry
	check(30*time.Millisecond, 13, "")       // never seen, 30 ms: read again (12 and 11 now there)
	check(30*time.Millisecond, 12, "twelve") // found by that read
	check(30*time.Millisecond, 10, "TEN")    // the new table
	os.WriteFile(file, []byte("13 thirteen\n"), 0o644)
	check(1100*time.Millisecond, 10, "TEN")      // found: no read
	check(1100*time.Millisecond, 13, "thirteen") // known missing, 1.07 s after the last read: read again
	check(1100*time.Millisecond, 10, "")         // gone from the kernel's table too
}
