package cmd

import (
	"bytes"
	"fmt"
	"github.com/ftctl/ftctl/tracefs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// A file report cannot read, and flags record refuses, are exit 2 naming the file or flag,
// with nothing changed: no working directory left beside -o, nothing written to the fake tracefs.
func TestRecordReportRefusals(t *testing.T) {
	root := fakeRoot(t)
	dir := t.TempDir()
	notDat := filepath.Join(dir, "notes.txt")
	os.WriteFile(notDat, []byte("not a recording\n"), 0o644)
	short := filepath.Join(dir, "short.dat")
	os.WriteFile(short, []byte("\x17\x08\x44tracing6\x00\x00\x08"), 0o644)
	shared := filepath.Join(dir, "shared")
	os.Mkdir(shared, 0o700)
	os.Chmod(shared, 0o777) // another user could rename the working directory and plant links
	v9 := filepath.Join(dir, "v9.dat")
	os.WriteFile(v9, []byte("\x17\x08\x44tracing9\x00\x00\x08\x00\x10\x00\x00"), 0o644)
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"report", filepath.Join(dir, "missing.dat")}, "missing.dat: no such file"},
		{[]string{"report", notDat}, "notes.txt: not a trace.dat file"},
		{[]string{"report", short}, "short.dat: corrupt trace.dat"},
		{[]string{"report", v9}, `v9.dat: file version not read by ftctl at byte 12 (version): version "9"`},
		{[]string{"report", dir}, "is a directory"},
		{[]string{"report", "--recover", dir}, "header.dat: no such file"},
		{[]string{"report", "a.dat", "b.dat"}, "one FILE (2 given)"},
		{[]string{"report", "--pid", "-3", notDat}, "--pid must not be negative"},
		{[]string{"report", "--comm", "[x", notDat}, "--comm: malformed glob"},
		{[]string{"report", "--cpu", "-1", notDat}, "--cpu must not be negative"},
		{[]string{"--tracefs", root, "record", "-w", filepath.Join(dir, "no", "x.dat")}, "directory " + filepath.Join(dir, "no") + " does not exist"},
		{[]string{"--tracefs", root, "record", "-w", dir}, "is a directory"},
		{[]string{"--tracefs", root, "record", "-w", filepath.Join(shared, "x.dat")}, shared + ": not a private directory: every user can write in it (mode 0777, not sticky)"},
		{[]string{"--tracefs", root, "record", "--mode", "0755"}, "--mode 0755: want octal permissions"},
		{[]string{"--tracefs", root, "record", "--mode", "0400"}, "--mode 0400"},
		{[]string{"--tracefs", root, "record", "--mode", "rw"}, "--mode rw"},
		{[]string{"--tracefs", root, "-B", "x", "record", "-e", "sched:sched_switch"}, "with -B, ftctl record reads the instance"},
		{[]string{"--tracefs", root, "-B", "x", "record", "--filter", "common_pid != 1"}, "with -B, ftctl record reads the instance"},
		{[]string{"--tracefs", root, "-B", "x", "record", "--clock", "global"}, "with -B, ftctl record reads the instance"},
		{[]string{"--tracefs", root, "-B", "x", "record", "-O", "sym-offset"}, "with -B, ftctl record reads the instance"},
		{[]string{"--tracefs", root, "record", "--count", "-1"}, "must not be negative"},
		// -o is the output format everywhere: a file given to it (trace-cmd's record -o FILE)
		// is refused with the spelling that writes it, never written
		{[]string{"--tracefs", root, "-o", "json", "record"}, "ftctl record has no -o json: it prints no JSON"},
		{[]string{"--tracefs", root, "record", "-o", filepath.Join(dir, "x.dat")}, "ftctl record writes its file with -w/--write FILE (trace-cmd record's -o FILE): ftctl record -w " + filepath.Join(dir, "x.dat")},
		{[]string{"--tracefs", root, "flight", "dump", "box", "-o", "x.dat"}, "ftctl flight dump writes its file with -w/--write FILE"},
		{[]string{"--tracefs", root, "flight", "last-boot", "box", "--output=x.dat"}, "ftctl flight last-boot writes its file with -w/--write FILE"},
		{[]string{"--tracefs", root, "record", "-w", ""}, "-w/--write: a file name is needed"},
	} {
		code, _, errs := run(t, c.args...)
		if code != ExitInvalid || !strings.Contains(errs, c.want) {
			t.Errorf("%q: exit %d, stderr %q; want exit 2 saying %q", c.args, code, errs, c.want)
		}
	}
	if left, _ := filepath.Glob(filepath.Join(dir, "*.tmp-*")); len(left) > 0 {
		t.Errorf("working directories left: %v", left)
	}
}

// FTCTL_TIMING: record's phases, each with its wall and CPU time since the one before; nothing
// without it.
func TestRecordTimer(t *testing.T) {
	var out bytes.Buffer
	g := &Globals{Err: &out}
	t.Setenv("FTCTL_TIMING", "")
	recordTimer(g)("start")
	if out.Len() != 0 {
		t.Fatalf("FTCTL_TIMING unset: %q", out.String())
	}
	t.Setenv("FTCTL_TIMING", "1")
	phase := recordTimer(g)
	phase("start")
	// CPU to count: spun until the process has used 30 ms more (by the clock the timer reads),
	// not for 30 ms of wall time, which on a loaded machine holds less CPU than that.
	for start := tracefs.ProcessCPU(); tracefs.ProcessCPU()-start < 30*time.Millisecond; {
	}
	phase("header: kallsyms")
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	if len(lines) != 2 {
		t.Fatalf("want 2 lines, got %q", out.String())
	}
	for i, name := range []string{"start", "header: kallsyms"} {
		var wall, cpu float64
		rest, ok := strings.CutPrefix(lines[i], "ftctl: timing: "+name+" ")
		if n, err := fmt.Sscanf(rest, "%f cpu %f", &wall, &cpu); !ok || err != nil || n != 2 {
			t.Fatalf("line %q: %v", lines[i], err)
		}
		if i == 1 && (wall < 0.015 || cpu < 0.03) {
			t.Errorf("30 ms of spinning timed as %.3f s wall, %.3f s CPU", wall, cpu)
		}
	}
}

// treeOf is every file of a directory tree and its content.
func treeOf(t *testing.T, root string) map[string]string {
	t.Helper()
	out := map[string]string{}
	filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			b, _ := os.ReadFile(p)
			out[p] = string(b)
		} else if err == nil {
			out[p+"/"] = ""
		}
		return nil
	})
	return out
}

// A session command's --dry-run prints its set-up, in order, and changes nothing: not the
// (fake) tracefs, not the directory of record's -o, and starts no command.
func TestSessionDryRunChangesNothing(t *testing.T) {
	root := fakeRootWithFunctions(t)
	dir := t.TempDir()
	marker := filepath.Join(dir, "ran")
	before, beforeDir := treeOf(t, root), treeOf(t, dir)
	for _, c := range []struct {
		args []string
		want []string // in this order
	}{
		{[]string{"trace", "-f", "vfs_read"}, []string{"dry-run: mkdir " + root + "/instances/ftctl-", "/tracing_on \"0\"", "set_ftrace_filter for writing", "/current_tracer \"function\""}},
		{[]string{"trace", "-f", "vfs_read", "--", "touch", marker}, []string{"dry-run: mkdir", "/set_ftrace_pid \"$COMMAND_PID\\n\"", "/current_tracer \"function\""}},
		{[]string{"record", "-f", "vfs_read", "-w", filepath.Join(dir, "x.dat"), "--", "touch", marker}, []string{"dry-run: mkdir", "set_ftrace_filter for writing", "/current_tracer \"function\""}},
	} {
		code, out, errs := run(t, append([]string{"--tracefs", root, "--dry-run"}, c.args...)...)
		if code != 0 || !strings.Contains(errs, "dry run: nothing was changed") {
			t.Errorf("%q: exit %d, stderr %q", c.args, code, errs)
			continue
		}
		at := 0
		for _, w := range c.want {
			i := strings.Index(out[at:], w)
			if i < 0 {
				t.Errorf("%q: the plan lacks %q after byte %d:\n%s", c.args, w, at, out)
				break
			}
			at += i + len(w)
		}
	}
	if after := treeOf(t, root); fmt.Sprint(after) != fmt.Sprint(before) {
		t.Errorf("the dry runs changed the tracefs tree")
	}
	if after := treeOf(t, dir); fmt.Sprint(after) != fmt.Sprint(beforeDir) {
		t.Errorf("the dry runs made files: %v", after)
	}
}
