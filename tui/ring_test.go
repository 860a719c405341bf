package tui

import (
	"fmt"
	"strings"
	"testing"

	"github.com/ftctl/ftctl/stream"
)

func TestRingEvictsOldest(t *testing.T) {
	r := NewRing(3)
	if r.Newest() != 0 || r.Oldest() != 1 || r.At(1) != nil {
		t.Fatalf("empty ring: newest %d oldest %d", r.Newest(), r.Oldest())
	}
	for i := 0; i < 5; i++ {
		if seq := r.Push(Row{PID: int32(i)}); seq != uint64(i+1) {
			t.Fatalf("push %d got seq %d", i, seq)
		}
	}
	if r.Len() != 3 || r.Oldest() != 3 || r.Newest() != 5 {
		t.Fatalf("len %d oldest %d newest %d", r.Len(), r.Oldest(), r.Newest())
	}
	if r.At(2) != nil || r.At(6) != nil {
		t.Error("evicted or future rows are returned")
	}
	for seq := uint64(3); seq <= 5; seq++ {
		if got := r.At(seq); got == nil || got.Seq != seq || got.PID != int32(seq-1) {
			t.Errorf("At(%d) = %+v", seq, got)
		}
	}
	r.Reset()
	if r.Len() != 0 || r.Push(Row{}) != 6 {
		t.Error("reset must keep numbering")
	}
}

func TestSeqListTrimAndIndex(t *testing.T) {
	var l seqList
	for s := uint64(10); s < 10000; s += 10 {
		l.Append(s)
	}
	if i := l.Index(25); i != 1 || l.At(i) != 20 {
		t.Errorf("Index(25) = %d", i)
	}
	if l.Index(5) != -1 {
		t.Error("Index below the first must be -1")
	}
	l.Trim(5001)
	if l.At(0) != 5010 || l.Len() != 499 {
		t.Errorf("after trim: first %d len %d", l.At(0), l.Len())
	}
	if last, ok := l.Last(); !ok || last != 9990 {
		t.Errorf("Last = %d %v", last, ok)
	}
	// Trimming often keeps the backing array bounded.
	var m seqList
	for s := uint64(1); s < 100000; s++ {
		m.Append(s)
		m.Trim(s - min(s, 100) + 1)
	}
	if cap(m.seqs) > 20000 || m.Len() != 100 {
		t.Errorf("cap %d len %d", cap(m.seqs), m.Len())
	}
}

// A comm, a marker and a probe string chosen by an attacker reach the rows escaped.
func TestIngestEscapesTraceData(t *testing.T) {
	text := fmt.Sprintf("%16s-%-7d [000] .....   100.000003: tracing_mark_write: hi \x1b]0;pwned\x07 \xff\n", "evil\x1b[2J", 666) +
		"             cat-4321    [000] .....   100.000004: myopen: (do_sys_openat2+0x0/0x100) path=\"/etc/\x1b[31m\"\n" +
		"              sh-260     [001] .....    17.998493: <stack trace>\n => bprm_execve\n => do_execveat_common.isra.0\n" +
		"CPU:1 [LOST 42 EVENTS]\n"
	rows := newIngester().feed([]byte(text))
	if len(rows) != 4 {
		t.Fatalf("%d rows", len(rows))
	}
	for _, r := range rows {
		var task []byte
		all := string(appendTask(task, &r)) + r.TS() + r.Detail() + string(stream.AppendEscaped(nil, r.EventName()))
		if strings.ContainsAny(all, "\x1b\x07") || strings.Contains(all, "\xff") {
			t.Errorf("unescaped control bytes reach the screen: %q", all)
		}
	}
	if got := string(appendTask(nil, &rows[0])); got != `evil\x1b[2J-666` {
		t.Errorf("task %q", got)
	}
	if got := rows[0].Detail(); got != `hi \x1b]0;pwned\x07 \xff` {
		t.Errorf("marker %q", got)
	}
	if !strings.Contains(rows[1].Detail(), `path="/etc/\x1b[31m"`) || string(rows[1].Name) != "myopen" {
		t.Errorf("probe %q %q", rows[1].Detail(), rows[1].Name)
	}
	if got := rows[2].Detail(); got != "<stack trace> => bprm_execve => do_execveat_common.isra.0" {
		t.Errorf("stack %q", got)
	}
	if rows[3].Kind != stream.KindLost || rows[3].Lost != 42 || rows[3].CPU != 1 {
		t.Errorf("lost %+v", rows[3])
	}
	if rows[0].TS() != "100.000003" {
		t.Errorf("ts %q", rows[0].TS())
	}
}

func TestIngestInterns(t *testing.T) {
	g := newIngester()
	a := g.feed([]byte("            bash-1234    [001] .....   1.000001: vfs_read <-ksys_read\n"))
	b := g.feed([]byte("            bash-1234    [001] .....   1.000002: vfs_read <-ksys_read\n"))
	if &a[0].Comm[0] != &b[0].Comm[0] || &a[0].Func[0] != &b[0].Func[0] {
		t.Error("repeated names are not shared")
	}
	if string(a[0].TopKey()) != "vfs_read" || string(a[0].EventName()) != "function" {
		t.Errorf("keys %q %q", a[0].TopKey(), a[0].EventName())
	}
}
