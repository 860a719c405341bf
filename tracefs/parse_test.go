package tracefs

import (
	"bytes"
	"reflect"
	"strings"
	"testing"
)

// kernels are the fixture directories captured from the VM kernels by vm/fixtures.sh.
var kernels = []string{"6.1", "6.12"}

func fixture(t testing.TB, kernel, name string) string {
	t.Helper()
	s, err := readFixture(kernel, name)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestParseMountInfo(t *testing.T) {
	in := `22 27 0:21 / /proc rw,relatime - proc proc rw
36 35 98:0 /mnt1 /mnt\040with\040space rw,noatime master:1 shared:2 - tracefs nodev rw,gid=1001
40 22 0:12 / /sys/kernel/debug rw,relatime - debugfs debugfs rw
`
	got, err := parseMountInfo(strings.NewReader(in))
	if err != nil {
		t.Fatal(err)
	}
	want := []mountEntry{
		{"/proc", "proc", "rw", "rw,relatime"},
		{"/mnt with space", "tracefs", "rw,gid=1001", "rw,noatime"},
		{"/sys/kernel/debug", "debugfs", "rw", "rw,relatime"},
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("got %+v\nwant %+v", got, want)
	}
	if _, err := parseMountInfo(strings.NewReader("garbage line\n")); err == nil {
		t.Fatal("malformed mountinfo accepted")
	}
}

func TestParseMountInfoFixtures(t *testing.T) {
	for _, k := range kernels {
		entries, err := parseMountInfo(strings.NewReader(fixture(t, k, "mountinfo")))
		if err != nil {
			t.Fatal(k, err)
		}
		m, ok := findTracefs(entries, func(string) bool { return false })
		if !ok || m.Path != "/sys/kernel/tracing" || m.FSType != "tracefs" {
			t.Errorf("%s: found %+v %v", k, m, ok)
		}
	}
}

func TestFindTracefsOrder(t *testing.T) {
	none := func(string) bool { return false }
	all := func(string) bool { return true }
	cases := []struct {
		name    string
		entries []mountEntry
		exists  func(string) bool
		want    string
		fstype  string
	}{
		{"default wins over earlier tracefs", []mountEntry{
			{"/sys/kernel/debug/tracing", "tracefs", "", ""}, {"/sys/kernel/tracing", "tracefs", "", ""}},
			none, "/sys/kernel/tracing", "tracefs"},
		{"any tracefs", []mountEntry{{"/mnt/t", "tracefs", "", ""}}, none, "/mnt/t", "tracefs"},
		{"tracefs before debugfs", []mountEntry{{"/sys/kernel/debug", "debugfs", "", ""}, {"/mnt/t", "tracefs", "", ""}},
			all, "/mnt/t", "tracefs"},
		{"debugfs/tracing", []mountEntry{{"/sys/kernel/debug", "debugfs", "", ""}}, all, "/sys/kernel/debug/tracing", "debugfs"},
		{"debugfs without tracing", []mountEntry{{"/sys/kernel/debug", "debugfs", "", ""}}, none, "", ""},
		{"nothing", []mountEntry{{"/", "ext4", "", ""}}, all, "", ""},
	}
	for _, c := range cases {
		m, ok := findTracefs(c.entries, c.exists)
		if ok != (c.want != "") || m.Path != c.want || m.FSType != c.fstype {
			t.Errorf("%s: got %+v %v, want %q", c.name, m, ok, c.want)
		}
	}
}

func TestParseErrorLogFixtures(t *testing.T) {
	for _, k := range kernels {
		entries := ParseErrorLog(fixture(t, k, "error_log.kprobe"))
		if len(entries) != 1 {
			t.Fatalf("%s: %d entries", k, len(entries))
		}
		e := entries[0]
		if e.Location != "trace_kprobe" || e.Message != "Invalid register name" || e.Command != "p:fty vfs_read %zz" {
			t.Errorf("%s: %+v", k, e)
		}
		if e.Command[e.Pos:] != "%zz" {
			t.Errorf("%s: caret at %d points at %q", k, e.Pos, e.Command[e.Pos:])
		}
		if e.Micros == 0 {
			t.Errorf("%s: no timestamp", k)
		}
		// Format reproduces the kernel's three lines, caret included.
		lines := strings.Split(e.Format(""), "\n")
		if len(lines) != 3 || strings.Index(lines[2], "^") != strings.Index(lines[1], "%zz") {
			t.Errorf("%s: Format misplaces the caret:\n%s", k, e.Format(""))
		}
	}
}

func TestParseErrorLogSeveral(t *testing.T) {
	log := "[   12.000001] trace_kprobe: error: Invalid register name\n  Command: p a %x\n                ^\n" +
		"[  100.5] event filter parse error: error: Field not found\n  Command: foo == 1\n           ^\n" +
		"[bad\n"
	got := ParseErrorLog(log)
	if len(got) != 2 {
		t.Fatalf("got %d entries: %+v", len(got), got)
	}
	if got[0].Micros != 12000001 || got[1].Micros != 100500000 {
		t.Errorf("stamps %d %d", got[0].Micros, got[1].Micros)
	}
	if got[0].Pos != 5 || got[1].Pos != 0 || got[1].Location != "event filter parse error" {
		t.Errorf("%+v", got)
	}
}

func TestParseReadme(t *testing.T) {
	p61, gid61 := ParseReadme(fixture(t, "6.1", "README"))
	p612, gid612 := ParseReadme(fixture(t, "6.12", "README"))
	pdev, _ := ParseReadme(fixture(t, "dev-6.18", "README"))
	// Both Debian kernels: the classic grammar.
	for name, p := range map[string]ProbeFeatures{"6.1": p61, "6.12": p612} {
		if !p.MaxActive || !p.ReturnSuffix || !p.ArgN || !p.Comm || !p.Imm || !p.ImmString || !p.Ustring ||
			!p.Symstr || !p.Bitfield || !p.Array || !p.Eprobe {
			t.Errorf("%s: missing classic features: %+v", name, p)
		}
	}
	// What 6.12 has and 6.1 lacks (see the README diff).
	if p61.BTFArgs || p61.BTFFields || p61.Fprobe || p61.Tprobe || p61.RetArgs || p61.Char || p61.PdPD || gid61 {
		t.Errorf("6.1 claims 6.12 features: %+v gid=%v", p61, gid61)
	}
	if !p612.BTFArgs || !p612.BTFFields || !p612.Fprobe || !p612.Tprobe || !p612.RetArgs || !p612.Char || !p612.PdPD || !gid612 {
		t.Errorf("6.12 lacks features: %+v gid=%v", p612, gid612)
	}
	if pdev.BTFArgs || !pdev.ArgN {
		t.Errorf("dev kernel: %+v", pdev)
	}
}

func TestParseFunctionList(t *testing.T) {
	for _, k := range kernels {
		empty := ParseFunctionList(fixture(t, k, "set_ftrace_filter.empty"))
		if !empty.Empty || empty.Functions != 0 {
			t.Errorf("%s empty filter: %+v", k, empty)
		}
		if n := ParseFunctionList(fixture(t, k, "set_ftrace_notrace.empty")); !n.Empty {
			t.Errorf("%s empty notrace: %+v", k, n)
		}
		cmds := ParseFunctionList(fixture(t, k, "set_ftrace_filter.commands"))
		want := []string{"vfs_read:traceon:count=3", "do_exit:traceoff:unlimited"}
		if cmds.Functions != 2 || cmds.Empty || !reflect.DeepEqual(cmds.Commands, want) {
			t.Errorf("%s commands: %+v", k, cmds)
		}
		mixed := ParseFunctionList(fixture(t, k, "set_ftrace_filter.mixed"))
		if mixed.Functions != 2 || !reflect.DeepEqual(mixed.PendingModules, []string{"*:mod:nosuchmodule"}) {
			t.Errorf("%s mixed: %+v", k, mixed)
		}
	}
	mod := ParseFunctionList("e1000_clean [e1000]\n*:mod:nfsd\n")
	if mod.Functions != 1 || mod.Empty {
		t.Errorf("module function: %+v", mod)
	}
	// Only a cached :mod: pattern: the kernel's filter is empty, every function is traced.
	if only := ParseFunctionList("*:mod:nfsd\n"); !only.Empty {
		t.Errorf("pending-only filter must count as empty: %+v", only)
	}
}

func TestParseProbeList(t *testing.T) {
	for _, k := range kernels {
		got := ParseProbeList(fixture(t, k, "kprobe_events"))
		want := []struct{ typ, group, event string }{
			{"p", "kprobes", "ftx"}, {"r10", "ftctl", "ret"}, {"p", "ftctl_42", "open"}, {"p", "kprobes", "p_vfs_write_0"},
		}
		if len(got) != len(want) {
			t.Fatalf("%s: %+v", k, got)
		}
		for i, w := range want {
			if got[i].Type != w.typ || got[i].Group != w.group || got[i].Event != w.event {
				t.Errorf("%s #%d: %+v, want %+v", k, i, got[i], w)
			}
		}
	}
	if got := ParseProbeList("p:grp.ev sym\n# comment\n\njunk\n"); len(got) != 1 || got[0].Group != "grp" || got[0].Event != "ev" {
		t.Errorf("dot separator: %+v", got)
	}
}

func TestOwnedGroup(t *testing.T) {
	for g, want := range map[string]bool{
		"ftctl": true, "ftctl_42": true, "ftctl_": false, "ftctl_x": false, "ftctlx": false, "kprobes": false,
		"ftctl_99999999999": false, "ftctl_-1": false,
	} {
		if OwnedGroup(g) != want {
			t.Errorf("OwnedGroup(%q) != %v", g, want)
		}
	}
}

func TestBufferSize(t *testing.T) {
	for _, k := range kernels {
		kb, alloc, ok := BufferSize(fixture(t, k, "buffer_size_kb"))
		if !ok || kb != 1408 || alloc {
			t.Errorf("%s: %d %v %v", k, kb, alloc, ok)
		}
	}
	if kb, alloc, ok := BufferSize("4096\n"); !ok || kb != 4096 || !alloc {
		t.Errorf("plain: %d %v %v", kb, alloc, ok)
	}
	if _, _, ok := BufferSize("X\n"); ok {
		t.Error("X parsed as a size")
	}
}

func TestParseCPUStats(t *testing.T) {
	for _, k := range kernels {
		st := ParseCPUStats(0, fixture(t, k, "cpu0.stats"))
		if st != (CPUStats{CPU: 0}) {
			t.Errorf("%s: %+v", k, st)
		}
	}
	st := ParseCPUStats(3, "entries: 5\noverrun: 17\ncommit overrun: 2\nbytes: 100\nnow ts: 1.0\ndropped events: 4\nread events: 9\n")
	want := CPUStats{CPU: 3, Entries: 5, Overrun: 17, CommitOverrun: 2, BytesInBuffer: 100, DroppedEvents: 4, ReadEvents: 9}
	if st != want {
		t.Errorf("%+v", st)
	}
}

func TestParseLockdown(t *testing.T) {
	for _, k := range kernels {
		if ld := ParseLockdown(fixture(t, k, "lockdown")); ld.Current != "none" || len(ld.Available) != 3 {
			t.Errorf("%s: %+v", k, ld)
		}
	}
	if ld := ParseLockdown("none integrity [confidentiality]\n"); ld.Current != "confidentiality" {
		t.Errorf("%+v", ld)
	}
	if ld := ParseLockdown("weird\n"); ld.Current != "" || ld.Note == "" {
		t.Errorf("%+v", ld)
	}
}

func TestFindFlockHolder(t *testing.T) {
	locks := `1: POSIX  ADVISORY  WRITE 99 08:01:1234 0 EOF
2: FLOCK  ADVISORY  WRITE 4242 00:0c:1 0 EOF
2: -> FLOCK  ADVISORY  WRITE 4343 00:0c:1 0 EOF
3: FLOCK  ADVISORY  WRITE 77 00:0c:2 0 EOF
`
	if pid := findFlockHolder(strings.NewReader(locks), 0, 0xc, 1); pid != 4242 {
		t.Errorf("holder %d", pid)
	}
	if pid := findFlockHolder(strings.NewReader(locks), 8, 1, 1234); pid != 0 {
		t.Errorf("POSIX lock taken for an flock: %d", pid)
	}
}

func TestParsePidLines(t *testing.T) {
	m := ParsePidLines([]byte("1 systemd\n154 my prog\nbad\n\n7 \n"))
	if string(m[1]) != "systemd" || string(m[154]) != "my prog" || len(m) != 3 || !bytes.Equal(m[7], []byte{}) {
		t.Errorf("%v", m)
	}
	for in, want := range map[string]string{"local [global] counter\n": "global", "nop\n": "nop", "[x": "[x"} {
		if got := CurrentChoice(in); got != want {
			t.Errorf("CurrentChoice(%q) = %q, want %q", in, got, want)
		}
	}
}

// mountOf finds the tracefs mount a directory is in: the longest mount point above it.
func TestMountOf(t *testing.T) {
	entries, err := parseMountInfo(strings.NewReader(`22 1 0:21 / /sys rw - sysfs sysfs rw
30 22 0:12 / /sys/kernel/tracing rw - tracefs tracefs rw
31 22 0:13 / /sys/kernel/debug rw - debugfs debugfs rw
32 31 0:12 / /sys/kernel/debug/tracing rw - tracefs tracefs rw
`))
	if err != nil {
		t.Fatal(err)
	}
	for dir, want := range map[string]string{
		"/sys/kernel/tracing":                    "/sys/kernel/tracing",
		"/sys/kernel/tracing/instances":          "/sys/kernel/tracing",
		"/sys/kernel/tracing/instances/x/events": "/sys/kernel/tracing",
		"/sys/kernel/debug/tracing/instances":    "/sys/kernel/debug/tracing",
		"/sys/kernel/tracingx":                   "",
		"/sys":                                   "",
	} {
		got, ok := mountOf(entries, "tracefs", dir)
		if got != want || ok != (want != "") {
			t.Errorf("%s: %q %v, want %q", dir, got, ok, want)
		}
	}
}

// A container's read-only bind of a read-write tracefs: the mount's options say ro, the super
// options rw (status said "rw" before: it showed the super options only).
func TestFindTracefsReadOnly(t *testing.T) {
	entries, err := parseMountInfo(strings.NewReader(`22 1 0:21 / /sys ro,nosuid - sysfs sysfs rw
30 22 0:12 / /sys/kernel/tracing ro,nosuid,nodev,noexec,relatime - tracefs tracefs rw,mode=700
`))
	if err != nil {
		t.Fatal(err)
	}
	m, ok := findTracefs(entries, fileExists)
	if !ok || !m.ReadOnly || m.Options != "ro,nosuid,nodev,noexec,relatime" || m.SuperOptions != "rw,mode=700" {
		t.Errorf("got %+v %v", m, ok)
	}
	entries[1].MountOpts = "rw,relatime"
	if m, _ := findTracefs(entries, fileExists); m.ReadOnly {
		t.Errorf("a read-write mount called read-only: %+v", m)
	}
}
