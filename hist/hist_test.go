package hist

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ftctl/ftctl/eventfilter"
	"github.com/ftctl/ftctl/tracefs"
)

var kernels = []string{"6.1", "6.12"}

func fixture(t testing.TB, kernel, name string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", kernel, name))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func readme(t testing.TB, kernel string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "tracefs", "testdata", kernel, "README"))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func format(t testing.TB, kernel, name string) *tracefs.Format {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "tracefs", "testdata", kernel, "format."+name))
	if err != nil {
		t.Fatal(err)
	}
	sys, _, _ := strings.Cut(name, ".")
	f, err := tracefs.ParseFormat(sys, string(b))
	if err != nil {
		t.Fatal(err)
	}
	return f
}

func TestKernelModifiers(t *testing.T) {
	want := map[string]string{
		"6.1":  "hex sym sym-offset execname syscall log2 buckets usecs percent graph",
		"6.12": "hex sym sym-offset execname syscall log2 buckets usecs percent graph",
	}
	for _, k := range kernels {
		got := KernelOf(tracefs.ParseHistReadme(readme(t, k)))
		if s := strings.Join(got.Modifiers, " "); s != want[k] {
			t.Errorf("%s: modifiers %q, want %q", k, s, want[k])
		}
	}
	if got := KernelOf(tracefs.ParseHistReadme(readme(t, "6.1"))).Stacktrace; len(got) != 1 || got[0] != "stacktrace" {
		t.Errorf("6.1 stack key %v, want stacktrace (seen: common_stacktrace refused)", got)
	}
	if got := KernelOf(tracefs.ParseHistReadme(readme(t, "6.12"))).Stacktrace; got[0] != "common_stacktrace" {
		t.Errorf("6.12 stack key %v", got)
	}
}

func TestTriggerString(t *testing.T) {
	for _, c := range []struct {
		keys, vals []string
		sort       string
		size       int
		filter     string
		want       string
	}{
		{[]string{"common_pid.execname"}, []string{"count"}, "count.descending", 0, "", "hist:keys=common_pid.execname:vals=count:sort=count.descending"},
		{[]string{"count.buckets=100"}, nil, "", 256, "", "hist:keys=count.buckets=100:size=256"},
		{[]string{"common_pid", "fd"}, nil, "fd.ascending", 0, "fd > 2", "hist:keys=common_pid,fd:sort=fd if fd > 2"},
		{[]string{"common_pid,fd.hex"}, []string{"hitcount.percent,count"}, "", 0, "", "hist:keys=common_pid,fd.hex:vals=hitcount.percent,count"},
	} {
		tr, err := Parse(c.keys, c.vals, c.sort, c.size, c.filter)
		if err != nil {
			t.Fatalf("%v: %v", c.keys, err)
		}
		if got := tr.String(); got != c.want {
			t.Errorf("got %q, want %q", got, c.want)
		}
	}
}

// TestCheck: what the kernels refused in the VM (error_log.hist) is refused before writing,
// and what they took is taken.
func TestCheck(t *testing.T) {
	for _, k := range kernels {
		kern := KernelOf(tracefs.ParseHistReadme(readme(t, k)))
		read := format(t, k, "syscalls.sys_enter_openat")
		for _, c := range []struct {
			keys, vals []string
			sort       string
			size       int
			filter     string
			err        string // "" accepted
			pos        int
		}{
			{keys: []string{"common_pid.execname"}, vals: []string{"flags"}, sort: "flags.descending"},
			{keys: []string{"filename.sym-offset", "common_timestamp.usecs"}},
			{keys: []string{"dfd.usecs"}}, // seen: the kernel takes .usecs on any field
			{keys: []string{"stacktrace"}},
			{keys: []string{"nosuch"}, err: "has no field nosuch", pos: 0},
			{keys: []string{"dfd,nosuch"}, err: "has no field nosuch", pos: 4},
			{keys: []string{"dfd.nosuchmod"}, err: "unknown modifier .nosuchmod", pos: 4},
			{keys: []string{"dfd"}, vals: []string{"nosuch"}, err: "has no field nosuch"},
			{keys: []string{"dfd"}, sort: "nosuch", err: "neither a key nor a value"},
			{keys: []string{"dfd"}, vals: []string{"flags.log2"}, err: "a value cannot take it", pos: 6},
			{keys: []string{"dfd.execname"}, err: "applies to common_pid only", pos: 4},
			{keys: []string{"dfd,flags,mode,common_pid"}, err: "at most 3 keys", pos: 15},
			{keys: []string{"dfd"}, sort: "dfd,flags,mode", vals: []string{"flags,mode"}, err: "at most 2 sort fields", pos: 10},
			{keys: []string{"dfd"}, size: 3, err: "between 128 and 131072"},
			{keys: []string{"dfd.buckets"}, err: "a bucket size is needed"},
			{keys: []string{"dfd.buckets=0"}, err: "positive number"},
			{keys: []string{"dfd-1"}, err: "want FIELD[.MODIFIER]"},
			{keys: nil, err: "at least one key"},
			{keys: []string{"dfd"}, sort: "dfd.up", err: "unknown sort direction"},
		} {
			tr, err := Parse(c.keys, c.vals, c.sort, c.size, c.filter)
			if err == nil {
				err = tr.Check(read, kern)
			}
			switch {
			case c.err == "" && err != nil:
				t.Errorf("%s %v: %v", k, c, err)
			case c.err != "" && (err == nil || !strings.Contains(err.Error(), c.err)):
				t.Errorf("%s %v: got %v, want %q", k, c, err, c.err)
			case c.err != "":
				var he *Error
				if !errors.As(err, &he) || !errors.Is(err, ErrInvalid) {
					t.Errorf("%s %v: %T is not a *hist.Error", k, c, err)
				} else if c.pos != 0 && he.Pos != c.pos {
					t.Errorf("%s %v: caret at %d, want %d", k, c, he.Pos, c.pos)
				}
			}
		}
		// Both announce .percent and .graph (6.1 refuses hitcount.percent, unlogged: the
		// kernel judges it).
		tr, _ := Parse([]string{"dfd"}, []string{"hitcount.percent,flags.graph"}, "", 0, "")
		if err := tr.Check(read, kern); err != nil {
			t.Errorf("%s: hitcount.percent: %v", k, err)
		}
		// a string is a key, never a value
		tr, _ = Parse([]string{"pid"}, []string{"filename"}, "", 0, "")
		if err := tr.Check(format(t, k, "sched.sched_process_exec"), kern); err == nil || !strings.Contains(err.Error(), "is a string") {
			t.Errorf("%s: a string value: %v", k, err)
		}
		// the filter is the event filter checker's
		tr, _ = Parse([]string{"dfd"}, nil, "", 0, "nosuch > 1")
		var fe *eventfilter.Error
		if err := tr.Check(read, kern); !errors.As(err, &fe) {
			t.Errorf("%s: filter on a missing field: %v", k, err)
		}
	}
	if _, err := Parse([]string{"dfd"}, nil, "", 0, "dfd >"); err == nil {
		t.Error("a filter's syntax error passed")
	}
}

// TestParseOutput reads the tables the VM kernels printed (vm: hist/testdata, see
// docs in hist/testdata/README).
func TestParseOutput(t *testing.T) {
	for _, k := range kernels {
		tables, err := ParseOutput(fixture(t, k, "hist.sys_enter_read"))
		if err != nil {
			t.Fatal(k, err)
		}
		if len(tables) != 6 {
			t.Fatalf("%s: %d tables, want 6", k, len(tables))
		}
		for _, tb := range tables {
			var hits uint64
			for _, r := range tb.Rows {
				n, _ := r.Value("hitcount")
				hits += uint64(n)
			}
			if hits != tb.Hits || uint64(len(tb.Rows)) != tb.Entries || tb.State != "active" {
				t.Errorf("%s %s: rows sum to %d hits in %d entries; totals say %d in %d (%s)", k, tb.Trigger, hits, len(tb.Rows), tb.Hits, tb.Entries, tb.State)
			}
		}
		first := tables[0].Rows[0]
		if first.Keys[0].Name != "common_pid" || first.Keys[0].Text != "head" || !first.Keys[0].HasNum {
			t.Errorf("%s: execname key %+v", k, first.Keys[0])
		}
		if v, ok := first.Value("count"); !ok || v != 4096 {
			t.Errorf("%s: count value %v %v", k, v, ok)
		}
		log2 := tables[2].Rows
		if log2[len(log2)-1].Keys[0].Text != "2^12" || log2[len(log2)-1].Keys[0].Num != 12 {
			t.Errorf("%s: log2 key %+v", k, log2[len(log2)-1].Keys[0])
		}
		if b := tables[3].Rows[len(tables[3].Rows)-1].Keys[0]; b.Text != "4000-4099" || b.Num != 4000 {
			t.Errorf("%s: buckets key %+v", k, b)
		}
		if h := tables[4].Rows[0].Keys; len(h) != 2 || h[1].Name != "fd" || h[1].Num != 3 {
			t.Errorf("%s: two keys %+v", k, h)
		}
		st := tables[5].Rows[0].Keys[0]
		if !strings.Contains(st.Text, "entry_SYSCALL_64") {
			t.Errorf("%s: stack key %+v", k, st)
		}

		tables, err = ParseOutput(fixture(t, k, "hist.raw_syscalls.sys_enter"))
		if err != nil || len(tables) != 1 {
			t.Fatal(k, err)
		}
		if r := tables[0].Rows[0].Keys[0]; r.Text != "sys_close" || r.Num != 3 {
			t.Errorf("%s: syscall key %+v", k, r)
		}
		tables, err = ParseOutput(fixture(t, k, "hist.kprobe"))
		if err != nil {
			t.Fatal(k, err)
		}
		if r := tables[0].Rows[0].Keys[0]; r.Text != "vfs_read" || r.Num == 0 {
			t.Errorf("%s: sym key %+v", k, r)
		}
		if r := tables[1].Rows[0].Keys[0]; !strings.HasPrefix(r.Text, "vfs_read+0x") {
			t.Errorf("%s: sym-offset key %+v", k, r)
		}
		if k == "6.12" {
			r := tables[2].Rows[0]
			if len(r.Values) != 3 || r.Values[1].Name != "hitcount (%)" || r.Values[1].Num <= 0 || !strings.HasPrefix(r.Values[2].Text, "#") {
				t.Errorf("percent/graph values %+v", r.Values)
			}
		}
		tables, err = ParseOutput(fixture(t, k, "hist.synth"))
		if err != nil || len(tables) != 2 {
			t.Fatal(k, err, len(tables))
		}
		var sum uint64
		for _, r := range tables[0].Rows {
			n, _ := r.Value("hitcount")
			sum += uint64(n)
		}
		if sum != 51 || tables[0].Hits != 51 {
			t.Errorf("%s: synthetic latency table sums to %d", k, sum)
		}
		tables, err = ParseOutput(fixture(t, k, "hist.sched_process_exec"))
		if err != nil || tables[0].Rows[0].Keys[0].Text != "/proc/self/exe" || tables[0].Rows[0].Keys[0].HasNum {
			t.Errorf("%s: string key %+v %v", k, tables, err)
		}
	}
}

// TestRejected: the kernel's error_log entries (captured in the VM) come back under the trigger.
func TestRejected(t *testing.T) {
	for _, k := range kernels {
		log := tracefs.ParseErrorLog(fixture(t, k, "error_log.hist"))
		err := &tracefs.Error{Op: "write", Class: tracefs.ErrRejected, KernelLog: log}
		got := Rejected("syscalls", "sys_enter_read", "hist:keys=fd:sort=nosuch", err)
		var re *RejectedError
		if !errors.As(got, &re) || re.Diagnosis == nil || re.Diagnosis.Message != "Sort field must be a key or a val" || re.Diagnosis.Pos != len("hist:keys=fd:sort=") {
			t.Errorf("%s: %+v", k, re.Diagnosis)
		}
		if !errors.Is(got, tracefs.ErrRejected) {
			t.Errorf("%s: not ErrRejected", k)
		}
		got = Rejected("syscalls", "sys_enter_read", "hist:keys=fd,count,buf,common_pid", err)
		if !errors.As(got, &re) || re.Diagnosis != nil {
			t.Errorf("%s: an unlogged refusal: %+v", k, got)
		}
	}
	log := tracefs.ParseErrorLog("[    3.454376] event filter parse error: error: Invalid value (did you forget quotes)?\n  Command: fd >\n                ^\n")
	got := Rejected("syscalls", "sys_enter_read", "hist:keys=fd if fd >", &tracefs.Error{Class: tracefs.ErrRejected, KernelLog: log})
	var re *RejectedError
	if !errors.As(got, &re) || re.Diagnosis == nil || re.Diagnosis.Pos != len("hist:keys=fd if ")+5 { // the kernel put its caret at 5 in "fd >"
		t.Errorf("filter refusal: %+v", re.Diagnosis)
	}
}

func FuzzParseOutput(f *testing.F) {
	for _, k := range kernels {
		for _, n := range []string{"hist.sys_enter_read", "hist.kprobe", "hist.synth", "hist.raw_syscalls.sys_enter"} {
			f.Add(fixture(f, k, n))
		}
	}
	f.Fuzz(func(t *testing.T, text string) {
		tables, _ := ParseOutput(text)
		for _, tb := range tables {
			for _, r := range tb.Rows {
				if len(r.Keys) > len(tb.keys) || len(r.Values) > len(tb.vals) {
					t.Fatalf("row %+v has more than the trigger's fields", r)
				}
			}
		}
	})
}

func FuzzTrigger(f *testing.F) {
	f.Add("common_pid.execname,fd", "count.hex", "count.descending", "fd > 1")
	f.Add("count.buckets=100", "hitcount.percent", "", "")
	f.Add("stacktrace", "", "hitcount", "comm ~ \"sh*\"")
	f.Fuzz(func(t *testing.T, key, val, sort, filter string) {
		var vals []string
		if val != "" {
			vals = []string{val}
		}
		tr, err := Parse([]string{key}, vals, sort, 0, filter)
		if err != nil {
			return
		}
		// What was taken prints as the kernel's grammar, and reads back the same.
		s := tr.String()
		if !strings.HasPrefix(s, "hist:keys=") || strings.ContainsAny(strings.SplitN(s, " if ", 2)[0], " \n") {
			t.Fatalf("%q", s)
		}
		keys, values := triggerFields(strings.SplitN(s, " if ", 2)[0])
		if len(keys) != len(tr.Keys) || len(values) != len(tr.Values) {
			t.Fatalf("%q reads back as %v %v", s, keys, values)
		}
		for i := range keys {
			if keys[i].String() != tr.Keys[i].String() {
				t.Fatalf("%q: key %q reads back as %q", s, tr.Keys[i], keys[i])
			}
		}
		tr.Check(nil2format(), KernelOf(tracefs.HistFeatures{}))
	})
}

func nil2format() *tracefs.Format { return &tracefs.Format{System: "s", Name: "e"} }
