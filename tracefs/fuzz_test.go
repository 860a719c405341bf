package tracefs

import (
	"strings"
	"testing"
	"unicode/utf8"

	fx "github.com/ftctl/ftctl/internal/fixture"
)

// Fuzz targets for every parser of kernel text in this package. The kernel's text is trusted
// less than it might be: tracefs can be a fake directory (--tracefs), and error_log and
// kprobe_events echo back what any root user wrote.

func seedFixtures(f *testing.F, names ...string) {
	for _, k := range append(kernels, "dev-6.18") {
		for _, n := range names {
			if s, err := readFixture(k, n); err == nil {
				f.Add(s)
			}
		}
	}
}

func readFixture(kernel, name string) (string, error) { return fx.Read(kernel, name) }

func FuzzParseMountInfo(f *testing.F) {
	seedFixtures(f, "mountinfo")
	f.Add("36 35 98:0 /mnt1 /mnt\\040x rw master:1 - tracefs nodev rw\n")
	f.Fuzz(func(t *testing.T, s string) {
		entries, err := parseMountInfo(strings.NewReader(s))
		if err == nil && len(entries) > strings.Count(s, "\n")+1 {
			t.Fatalf("%d entries from %d lines", len(entries), strings.Count(s, "\n")+1)
		}
		findTracefs(entries, func(string) bool { return true })
	})
}

func FuzzParseErrorLog(f *testing.F) {
	seedFixtures(f, "error_log.kprobe")
	f.Add("[ 1.0] x: error: y\n  Command: z\n ^\n")
	f.Fuzz(func(t *testing.T, s string) {
		for _, e := range ParseErrorLog(s) {
			if e.Pos < -1 {
				t.Fatalf("pos %d", e.Pos)
			}
			_ = e.Format("  ")
		}
	})
}

func FuzzParseFunctionList(f *testing.F) {
	seedFixtures(f, "set_ftrace_filter.empty", "set_ftrace_filter.commands", "set_ftrace_filter.mixed")
	f.Fuzz(func(t *testing.T, s string) {
		l := ParseFunctionList(s)
		if n := l.Functions + len(l.Commands) + len(l.PendingModules); n > strings.Count(s, "\n")+1 {
			t.Fatalf("%d items from %d lines", n, strings.Count(s, "\n")+1)
		}
		if l.Empty != (l.Functions == 0) {
			t.Fatalf("Empty %v with %d functions", l.Empty, l.Functions)
		}
	})
}

func FuzzParseProbeList(f *testing.F) {
	seedFixtures(f, "kprobe_events")
	f.Fuzz(func(t *testing.T, s string) {
		for _, p := range ParseProbeList(s) {
			if strings.Contains(p.Definition, "\n") || p.Type == "" && p.Group == "" && p.Event == "" && p.Definition == "" {
				t.Fatalf("bad entry %+v", p)
			}
		}
	})
}

func FuzzSmallParsers(f *testing.F) {
	seedFixtures(f, "buffer_size_kb", "lockdown", "cpu0.stats")
	f.Fuzz(func(t *testing.T, s string) {
		BufferSize(s)
		ld := ParseLockdown(s)
		if ld.Current == "" && ld.Note == "" {
			t.Fatal("unknown lockdown without a note")
		}
		ParseCPUStats(0, s)
		ParseLastBootInfo(s)
		findFlockHolder(strings.NewReader(s), 0, 0, 0)
		parseStampMicros(s)
		for _, e := range ParseEventList(s) { // system:event, neither empty nor spanning lines
			if e.System == "" || e.Event == "" || strings.ContainsRune(e.System+e.Event, '\n') {
				t.Fatalf("%q gave %+v", s, e)
			}
		}
		if id := FormatID([]byte(s)); id < -1 {
			t.Fatalf("%q: FormatID %d", s, id)
		}
	})
}

// Whatever ValidateInstanceName accepts is one printable directory name.
func FuzzValidateInstanceName(f *testing.F) {
	for _, s := range []string{"a", "..", "a/b", "x\x1b", "ftctl-1", strings.Repeat("y", 255)} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if ValidateInstanceName(s) != nil {
			return
		}
		if s == "" || len(s) > 255 || strings.ContainsAny(s, "/\x00") || strings.Contains(s, "..") || s == "." || !utf8.ValidString(s) {
			t.Fatalf("accepted %q", s)
		}
		for _, r := range s {
			if r < 0x20 || r == 0x7f {
				t.Fatalf("accepted control character in %q", s)
			}
		}
	})
}
