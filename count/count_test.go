package count

import (
	"errors"
	"os"
	"reflect"
	"strings"
	"testing"

	"github.com/ftctl/ftctl/filters"
	"github.com/ftctl/ftctl/hist"
	"github.com/ftctl/ftctl/tracefs"
)

func keys(names ...string) []filters.Key {
	var out []filters.Key
	for _, n := range names {
		out = append(out, filters.Key{Name: n})
	}
	return out
}

func TestChoose(t *testing.T) {
	unique := func(string, string) int { return 1 }
	twice := func(_, name string) int {
		if name == "dup" {
			return 2
		}
		return 1
	}
	full := Kernel{HistTriggers: true, Fprobe: true, Kprobe: true, FunctionTracer: true, SymbolCount: unique}
	kprobeOnly := full
	kprobeOnly.Fprobe = false
	fprobeOnly := full
	fprobeOnly.Kprobe = false
	fullTwice := full
	fullTwice.SymbolCount = twice
	noHist := full
	noHist.HistTriggers = false
	noTracer := noHist
	noTracer.FunctionTracer = false
	many := make([]string, MaxProbed+1)
	for i := range many {
		many[i] = "f" + strings.Repeat("x", i)
	}
	for _, c := range []struct {
		name   string
		funcs  []filters.Key
		want   Method
		k      Kernel
		method Method
		probe  byte
		why    string
		err    error
	}{
		{"kprobes where both", keys("vfs_read"), Auto, full, Hist, 'p', "one kprobe event", nil},
		{"kprobes where no fprobes", keys("vfs_read", "vfs_write"), Auto, kprobeOnly, Hist, 'p', "one kprobe event", nil},
		{"fprobes where no kprobes", keys("vfs_read", "vfs_write"), Auto, fprobeOnly, Hist, 'f', "one fprobe event", nil},
		{"fprobes for a name twice in kallsyms", keys("vfs_read", "dup"), Auto, fullTwice, Hist, 'f', "(dup is 2 symbols in kallsyms: an fprobe takes every function of the name)", nil},
		{"hist asked, fprobes for a name twice", keys("dup"), Hist, fullTwice, Hist, 'f', "one fprobe event", nil},
		{"too many to probe", keys(many...), Auto, full, Stream, 0, "65 functions, more than 64", nil},
		{"hist asked beyond the limit", keys(many...), Hist, full, Hist, 'p', "one kprobe event", nil},
		{"a name twice in kallsyms", keys("vfs_read", "dup"), Auto, Kernel{HistTriggers: true, Kprobe: true, FunctionTracer: true, SymbolCount: twice}, Stream, 0, "dup is 2 symbols in kallsyms", nil},
		{"hist asked, a name twice", keys("dup"), Hist, Kernel{HistTriggers: true, Kprobe: true, FunctionTracer: true, SymbolCount: twice}, "", 0, "", ErrMethod},
		{"no hist triggers", keys("vfs_read"), Auto, noHist, Stream, 0, "no hist triggers", nil},
		{"hist asked, no hist triggers", keys("vfs_read"), Hist, noHist, "", 0, "", tracefs.ErrUnavailable},
		{"stream asked", keys("vfs_read"), Stream, full, Stream, 0, "asked for", nil},
		{"nothing possible", keys("vfs_read"), Auto, noTracer, "", 0, "", tracefs.ErrUnavailable},
		{"unknown method", keys("vfs_read"), "profile", full, "", 0, "", ErrMethod},
		{"profiler present", keys("vfs_read"), Auto, Kernel{HistTriggers: true, Kprobe: true, Profiler: true, SymbolCount: unique}, Hist, 'p', "function profiler is not used", nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			got, err := Choose(c.funcs, c.want, c.k)
			if c.err != nil {
				if !errors.Is(err, c.err) {
					t.Fatalf("err %v, want %v", err, c.err)
				}
				return
			}
			if err != nil || got.Method != c.method || got.Probe != c.probe || !strings.Contains(got.Why, c.why) {
				t.Errorf("%+v %v, want %s %c %q", got, err, c.method, c.probe, c.why)
			}
		})
	}
}

func TestDelta(t *testing.T) {
	prev := Counts{"a": 5, "b": 7, "c": 1}
	cur := Counts{"a": 9, "b": 7, "c": 3, "d": 4, "e": 4}
	want := []Row{{"a", 4}, {"d", 4}, {"e", 4}, {"c", 2}}
	if got := Delta(prev, cur, 0); !reflect.DeepEqual(got, want) {
		t.Errorf("%v, want %v", got, want)
	}
	if got := Delta(prev, cur, 2); !reflect.DeepEqual(got, want[:2]) {
		t.Errorf("top 2: %v", got)
	}
	if got := Delta(nil, Counts{"x": 1}, 0); !reflect.DeepEqual(got, []Row{{"x", 1}}) {
		t.Errorf("first: %v", got)
	}
	// a count lower than before (a table that dropped entries): taken as it is
	if got := Delta(Counts{"x": 10}, Counts{"x": 3}, 0); !reflect.DeepEqual(got, []Row{{"x", 3}}) {
		t.Errorf("lower: %v", got)
	}
}

// The tables of a hist trigger keyed by __probe_ip.sym on an event with four probe points
// (kprobes on 6.1, fprobes on 6.12), captured on the VM kernels after 50 one-byte reads by dd.
func TestFromTable(t *testing.T) {
	for _, k := range []string{"6.1", "6.12"} {
		b, err := os.ReadFile("testdata/hist-" + k + ".txt")
		if err != nil {
			t.Fatal(err)
		}
		tables, err := hist.ParseOutput(string(b))
		if err != nil || len(tables) != 1 {
			t.Fatal(k, err)
		}
		want := Counts{"do_sys_openat2": 4, "ksys_read": 51, "vfs_read": 51, "vfs_write": 52}
		if got := FromTable(tables[0]); !reflect.DeepEqual(got, want) {
			t.Errorf("%s: %v, want %v", k, got, want)
		}
	}
}

func FuzzFromTable(f *testing.F) {
	for _, k := range []string{"6.1", "6.12"} {
		b, _ := os.ReadFile("testdata/hist-" + k + ".txt")
		f.Add(string(b))
	}
	f.Fuzz(func(t *testing.T, s string) {
		tables, err := hist.ParseOutput(s)
		if err != nil {
			return
		}
		for _, tb := range tables {
			c := FromTable(tb)
			var sum, nonzero uint64
			for _, n := range c {
				sum += n
				if n > 0 {
					nonzero++
				}
			}
			rows := Delta(nil, c, 0)
			var got uint64
			for i, r := range rows {
				got += r.Count
				if i > 0 && r.Count > rows[i-1].Count {
					t.Fatalf("rows out of order: %v", rows)
				}
			}
			if got != sum || uint64(len(rows)) != nonzero {
				t.Fatalf("delta from nothing: %v, counts %v", rows, c)
			}
		}
	})
}

// An event's table per key, from hist tables captured on the VM kernels: a syscall key keeps
// its number, an execname key its pid; every hit is counted once.
func TestKeyedCounts(t *testing.T) {
	for _, c := range []struct {
		file, key string
		want      uint64
	}{
		{"../hist/testdata/6.12/hist.raw_syscalls.sys_enter", "sys_close [3]", 552},
		{"../hist/testdata/6.1/hist.sys_enter_read", "head [106]", 1},
	} {
		b, err := os.ReadFile(c.file)
		if err != nil {
			t.Fatal(err)
		}
		tables, err := hist.ParseOutput(string(b))
		if err != nil || len(tables) == 0 {
			t.Fatal(c.file, err)
		}
		got := KeyedCounts(tables[0])
		var sum uint64
		for _, n := range got {
			sum += n
		}
		if got[c.key] != c.want || sum != tables[0].Hits || len(got) != int(tables[0].Entries) {
			t.Errorf("%s: %q %d (want %d), %d hits in %d keys, the kernel's %d in %d", c.file, c.key, got[c.key], c.want, sum, len(got), tables[0].Hits, tables[0].Entries)
		}
	}
}

// fprobeInstead turns a choice on kprobes into one on an fprobe event where the kernel has
// fprobes, saying why; anything else is left as it is.
func TestFprobeInstead(t *testing.T) {
	k := Kernel{HistTriggers: true, Fprobe: true, Kprobe: true}
	kp := Choice{Method: Hist, Probe: 'p', Why: "one kprobe event", Funcs: keys("black_fn")}
	got, ok := fprobeInstead(kp, k, "the kernel refused a kprobe on black_fn")
	if !ok || got.Probe != 'f' || got.Method != Hist || !strings.Contains(got.Why, "one fprobe event") || !strings.Contains(got.Why, "(the kernel refused a kprobe on black_fn)") || !reflect.DeepEqual(got.Funcs, kp.Funcs) {
		t.Errorf("%+v %v", got, ok)
	}
	noF := k
	noF.Fprobe = false
	for _, c := range []struct {
		choice Choice
		k      Kernel
	}{{kp, noF}, {got, k}, {Choice{Method: Stream}, k}} {
		if again, ok := fprobeInstead(c.choice, c.k, "x"); ok || !reflect.DeepEqual(again, c.choice) {
			t.Errorf("%+v on %+v: %+v %v", c.choice, c.k, again, ok)
		}
	}
}
