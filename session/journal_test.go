package session

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/ftctl/ftctl/filters"
	"github.com/ftctl/ftctl/tracefs"
)

// graphFiles are the kernel-wide files of function_graph at their defaults (the fake writes
// over a file's start, so its empty lists are empty files: the kernel's banners are
// TestNormal's).
var graphFiles = map[string]string{
	"set_graph_function": "",
	"set_graph_notrace":  "",
	"max_graph_depth":    "0\n",
	"tracing_thresh":     "0\n",
	"available_tracers":  "function_graph function nop\n", // the top level's; instances offer "function nop"
}

// killedGraph starts a graph session on a fake tracefs whose instances cannot run
// function_graph (the top level's path, as on 6.1), turns tracing on, and lets go of the
// instance without a teardown: what a SIGKILL leaves. The fake's files then hold what the
// kernel would list.
func killedGraph(t *testing.T) (*tracefs.FS, *Session) {
	t.Helper()
	fs, _ := fakeFS(t, graphFiles)
	os.WriteFile(filepath.Join(fs.Root(), "boot"), []byte("boot-a\n"), 0o644)
	fs.BootIDFile = filepath.Join(fs.Root(), "boot")
	root, err := filters.Compile("ksys_read")
	if err != nil {
		t.Fatal(err)
	}
	s, err := New(fs, ID{PID: 77, Nonce: "0123abcd"}, Spec{Graph: &GraphSpec{Roots: []*filters.Pattern{root}, Depth: 5, Threshold: 3 * time.Microsecond}})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	if !s.GraphAtTop() {
		t.Fatal("the fake's instances offer function nop: the graph should run at the top level")
	}
	if err := s.Begin(); err != nil {
		t.Fatal(err)
	}
	s.Release()
	for f, v := range map[string]string{"current_tracer": "function_graph\n", "set_graph_function": "ksys_read\n"} {
		os.WriteFile(filepath.Join(fs.Root(), f), []byte(v), 0o644)
	}
	return fs, s
}

func journalPath(fs *tracefs.FS, id ID) string {
	return filepath.Join(fs.StateDir, id.Instance()+".journal")
}

func topFile(t *testing.T, fs *tracefs.FS, f string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(fs.Root(), f))
	if err != nil {
		t.Fatal(err)
	}
	return strings.TrimSpace(string(b))
}

// The journal holds every file the session wrote outside its instance, in the order of the
// first writes, with what each held and what was written last (a list: what it read back).
func TestGraphJournal(t *testing.T) {
	fs, s := killedGraph(t)
	b, err := os.ReadFile(journalPath(fs, s.ID))
	if err != nil {
		t.Fatalf("no journal after the start: %v", err)
	}
	j, err := parseJournal(b)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, e := range j.Entries {
		got = append(got, e.File+" "+e.Before+" -> "+strings.TrimSpace(e.Wrote))
	}
	want := []string{"tracing_on 1 -> 1", "options/function-fork 0 -> 1", "set_ftrace_notrace_pid  -> " + strings.TrimSpace(j.Entries[2].Wrote),
		"set_graph_function  -> ksys_read", "max_graph_depth 0 -> 5", "tracing_thresh 0 -> 3", "current_tracer nop -> function_graph"}
	if !slices.Equal(got, want) || j.Session != s.ID || j.Boot != "boot-a" {
		t.Errorf("journal\n got %q (session %v, boot %q)\nwant %q", got, j.Session, j.Boot, want)
	}
	if st, err := os.Stat(fs.StateDir); err != nil || st.Mode().Perm() != 0o700 {
		t.Errorf("journal directory: %v %v, want mode 0700", st.Mode(), err)
	}
}

// Reset puts back every file that holds what the dead session wrote, newest first; a file
// another actor changed is left and reported; the journal is removed.
func TestResetUndoesJournal(t *testing.T) {
	fs, s := killedGraph(t)
	os.WriteFile(filepath.Join(fs.Root(), "max_graph_depth"), []byte("7\n"), 0o644) // another actor
	left, err := Leftovers(fs, ID{})
	if err != nil {
		t.Fatal(err)
	}
	if len(left) != 1 || !left[0].Journal || left[0].State != StateUnknown {
		t.Fatalf("leftovers: %+v", left)
	}
	if err := left[0].Remove(fs); err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, f := range left[0].Files {
		got = append(got, f.File+" "+f.State+" "+f.Holds)
	}
	want := []string{"current_tracer restored function_graph", "tracing_thresh restored 3", "max_graph_depth changed 7",
		"set_graph_function restored ksys_read", "set_ftrace_notrace_pid as before ", "options/function-fork restored 1", "tracing_on restored 1"}
	if slices.Contains(got, "set_ftrace_notrace_pid restored "+left[0].Files[4].Holds) {
		want[4] = "set_ftrace_notrace_pid restored " + left[0].Files[4].Holds // the fake keeps the pids the kernel drops at exit
	}
	if !slices.Equal(got, want) {
		t.Errorf("files\n got %q\nwant %q", got, want)
	}
	// (the fake writes over a file's start: "nop" over "function_graph" leaves its tail)
	if v := topFile(t, fs, "current_tracer"); !strings.HasPrefix(v, "nop") {
		t.Errorf("current_tracer %q", v)
	}
	for f, v := range map[string]string{"tracing_thresh": "0", "max_graph_depth": "7", "set_graph_function": "", "options/function-fork": "0", "tracing_on": "1"} {
		if got := topFile(t, fs, f); got != v {
			t.Errorf("%s holds %q, want %q", f, got, v)
		}
	}
	if _, err := os.Stat(journalPath(fs, s.ID)); !os.IsNotExist(err) {
		t.Errorf("the journal is still there: %v", err)
	}
	if left, _ := Leftovers(fs, ID{}); len(left) != 0 {
		t.Errorf("leftovers after reset: %+v", left)
	}
}

// A journal whose session holds its instance is left alone, files and all.
func TestResetLeavesLiveJournal(t *testing.T) {
	fs, s := killedGraph(t)
	hold, err := s.Instance.Hold()
	if err != nil {
		t.Fatal(err)
	}
	defer hold.Close()
	left, _ := Leftovers(fs, ID{})
	if len(left) != 1 {
		t.Fatalf("leftovers: %+v", left)
	}
	if err := left[0].Remove(fs); err != nil {
		t.Fatal(err)
	}
	if left[0].State != StateInUse || len(left[0].Files) != 0 || topFile(t, fs, "max_graph_depth") != "5" {
		t.Errorf("a live session's files touched: %+v", left[0])
	}
	if _, err := os.Stat(journalPath(fs, s.ID)); err != nil {
		t.Errorf("the live session's journal: %v", err)
	}
}

// A journal of an earlier boot is dropped without a write: the kernel started from its
// defaults.
func TestResetDropsJournalOfEarlierBoot(t *testing.T) {
	fs, s := killedGraph(t)
	os.WriteFile(fs.BootIDFile, []byte("boot-b\n"), 0o644)
	os.RemoveAll(filepath.Join(fs.Root(), "instances", s.ID.Instance())) // gone with the boot
	left, _ := Leftovers(fs, ID{})
	if len(left) != 1 || left[0].State != StateDead {
		t.Fatalf("leftovers: %+v", left)
	}
	if err := left[0].Remove(fs); err != nil {
		t.Fatal(err)
	}
	if len(left[0].Files) != 0 || topFile(t, fs, "max_graph_depth") != "5" {
		t.Errorf("an earlier boot's journal was applied: %+v", left[0].Files)
	}
	if _, err := os.Stat(journalPath(fs, s.ID)); !os.IsNotExist(err) {
		t.Errorf("the journal is still there: %v", err)
	}
}

// A clean teardown puts everything back and removes the journal.
func TestTeardownRemovesJournal(t *testing.T) {
	fs, _ := fakeFS(t, graphFiles)
	root, _ := filters.Compile("ksys_read")
	s, err := New(fs, ID{PID: 78, Nonce: "0123abcd"}, Spec{Graph: &GraphSpec{Roots: []*filters.Pattern{root}, Depth: 3}})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(journalPath(fs, s.ID)); err != nil {
		t.Fatalf("no journal: %v", err)
	}
	if errs := s.Teardown(); len(errs) > 0 {
		t.Fatal(errs)
	}
	if _, err := os.Stat(journalPath(fs, s.ID)); !os.IsNotExist(err) {
		t.Errorf("the journal is still there after a clean teardown: %v", err)
	}
	if v := topFile(t, fs, "max_graph_depth"); v != "0" {
		t.Errorf("max_graph_depth %q", v)
	}
}

// A journal that is not one is named and nothing is written.
func TestBadJournal(t *testing.T) {
	fs, _ := fakeFS(t, graphFiles)
	os.MkdirAll(fs.StateDir, 0o700)
	for name, text := range map[string]string{
		"ftctl-5-0123abcd.journal": `{"session":{"pid":5,"id":"0123abcd"},"entries":[{"file":"../../etc/passwd","before":"x","wrote":"y"}]}`,
		"ftctl-6-0123abcd.journal": `{"session":{"pid":7,"id":"0123abcd"},"entries":[]}`,
		"ftctl-8-0123abcd.journal": `not json`,
		"something.journal":        `{}`,
	} {
		path := filepath.Join(fs.StateDir, name)
		os.WriteFile(path, []byte(text), 0o600)
		_, err := Leftovers(fs, ID{})
		if err == nil || !strings.Contains(err.Error(), path) || !errors.Is(err, ErrJournal) {
			t.Errorf("%s: %v", name, err)
		}
		os.Remove(path)
	}
}

// The kernel's empty lists read as banners; a list's order does not matter.
func TestNormal(t *testing.T) {
	for _, c := range []struct {
		text string
		list bool
		want string
	}{
		{"#### all functions enabled ####\n", true, ""},
		{"#### no functions disabled ####\n", true, ""},
		{"no pid\n", true, ""},
		{"", true, ""},
		{"vfs_read\nksys_read\n", true, "ksys_read\nvfs_read"},
		{" 5\n", false, "5"},
	} {
		if got := normal([]byte(c.text), c.list); got != c.want {
			t.Errorf("normal(%q, %v) = %q, want %q", c.text, c.list, got, c.want)
		}
	}
}

func FuzzParseJournal(f *testing.F) {
	f.Add([]byte(`{"session":{"pid":5,"id":"0123abcd"},"boot":"x","entries":[{"file":"max_graph_depth","before":"0","wrote":"5"},{"file":"set_graph_function","list":true,"before":"","wrote":"ksys_read\n"}]}`))
	f.Add([]byte(`{"entries":[{"file":"tracing_on","before":"1\n0","wrote":"1"}]}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		j, err := parseJournal(b)
		if err != nil {
			return
		}
		for _, e := range j.Entries {
			if !journalFiles[e.File] || (!e.List && strings.Contains(e.Before+e.Wrote, "\n")) || (e.List && e.Before != "") {
				t.Fatalf("accepted %+v", e)
			}
		}
		out, err := json.Marshal(j)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := parseJournal(out); err != nil {
			t.Fatalf("its own output refused: %v", err)
		}
	})
}

// TestForkedFrom: a pid list the kernel changed by itself under function-fork (children of
// the session's pids added, exited pids dropped) is told from one another writer changed.
func TestForkedFrom(t *testing.T) {
	// running tasks: pid -> {tgid, ppid}; 10 is the session's command, 11 its child, 12 a
	// grandchild, 13 a thread of 11, 20 someone else's, 30 adopted by init
	tasks := map[int][2]int{10: {10, 1}, 11: {11, 10}, 12: {12, 11}, 13: {11, 10}, 20: {20, 1}, 30: {30, 1}}
	task := func(pid int) (int, int, bool) {
		v, ok := tasks[pid]
		return v[0], v[1], ok
	}
	for _, c := range []struct {
		holds, wrote string
		want         bool
	}{
		{"10\n11", "10", true},              // a child added at its fork
		{"10\n11\n12\n13", "10", true},      // a grandchild and a thread
		{"10\n11", "10\n40", true},          // 40 exited: dropped
		{"10\n20", "10", false},             // 20 is not 10's
		{"10\n99", "10", false},             // 99 runs no more: the kernel would have dropped it
		{"10\n30", "10", false},             // adopted by init: cannot tell
		{"11\n12", "10", false},             // 10 runs, and is gone from the list: a write
		{"10\nx", "10", false},              // not a pid list
		{"10\n11", "", false},               // nothing written
		{"10\n11\n12\n13\n20", "10", false}, // one pid of another's is enough
	} {
		if got := forkedFrom(c.holds, c.wrote, task); got != c.want {
			t.Errorf("holds %q wrote %q: %v, want %v", c.holds, c.wrote, got, c.want)
		}
	}
	delete(tasks, 10) // the command exited: its children were adopted by init
	tasks[11] = [2]int{11, 1}
	if forkedFrom("11", "10", task) {
		t.Error("a child adopted by init is not known to be the session's")
	}
}

// A pid list function-fork changes while undo looks at it settles: a child that exited between
// the read and the look is dropped by the kernel by the next read, and the list is the
// session's; another writer's pid fails every look, and the list is left.
func TestSettledForkedFrom(t *testing.T) {
	tasks := map[int][2]int{10: {10, 1}, 11: {11, 10}, 20: {20, 1}}
	task := func(pid int) (int, int, bool) {
		v, ok := tasks[pid]
		return v[0], v[1], ok
	}
	// 15 (a `sleep 0.2` of 10's) exited after the first read; the kernel dropped it
	reads := []string{"10\n11"}
	reread := func() (string, error) {
		h := reads[0]
		if len(reads) > 1 {
			reads = reads[1:]
		}
		return h, nil
	}
	holds := "10\n11\n15"
	if !settledForkedFrom(&holds, reread, "10", task) || holds != "10\n11" {
		t.Errorf("an exited child dropped by the next read: false (holds %q)", holds)
	}
	n := 0
	holds = "10\n20"
	if settledForkedFrom(&holds, func() (string, error) { n++; return "10\n20", nil }, "10", task) {
		t.Error("another writer's pid, read again: true")
	}
	if n != pidSettleTries-1 {
		t.Errorf("read again %d times, want %d", n, pidSettleTries-1)
	}
	holds = "10\n15"
	if settledForkedFrom(&holds, func() (string, error) { return "", errors.New("gone") }, "10", task) {
		t.Error("a list that cannot be read again: true")
	}
}

// Issue 28 (c): one journal that cannot be read does not stop reset. It is named (its path
// and why) in an ErrJournal error, and left with whatever it describes ("cannot tell"); the
// other sessions' leftovers are listed and removed all the same, their journals undone.
func TestBadJournalDoesNotStopReset(t *testing.T) {
	fs, s := killedGraph(t)
	bad := filepath.Join(fs.StateDir, "ftctl-8-0123abcd.journal")
	if err := os.WriteFile(bad, []byte("not json"), 0o600); err != nil {
		t.Fatal(err)
	}
	left, err := Leftovers(fs, ID{})
	if err == nil || !errors.Is(err, ErrJournal) || !strings.Contains(err.Error(), bad) || !strings.Contains(err.Error(), "not a journal") {
		t.Errorf("the bad journal is not named with its reason: %v", err)
	}
	if len(left) != 1 || left[0].ID != s.ID || !left[0].Journal {
		t.Fatalf("the good session's leftovers are not listed beside the bad journal: %+v", left)
	}
	if err := left[0].Remove(fs); err != nil {
		t.Fatal(err)
	}
	if v := topFile(t, fs, "max_graph_depth"); v != "0" {
		t.Errorf("the good journal was not undone: max_graph_depth %q", v)
	}
	if _, err := os.Stat(journalPath(fs, s.ID)); !os.IsNotExist(err) {
		t.Errorf("the good journal is still there: %v", err)
	}
	if b, err := os.ReadFile(bad); err != nil || string(b) != "not json" {
		t.Errorf("the bad journal was touched: %q %v", b, err)
	}
	// a second look: the bad journal alone, still named
	left, err = Leftovers(fs, ID{})
	if len(left) != 0 || !errors.Is(err, ErrJournal) {
		t.Errorf("second look: %+v %v", left, err)
	}
}

// reset --all puts every file back to its default, so a session's journal it cannot read
// names nothing left to put back: it is removed (and said so) with the others; a file not
// named after a session is not ftctl's journal: named, and left.
func TestResetAllRemovesBadJournal(t *testing.T) {
	fs, _ := killedGraph(t)
	bad := filepath.Join(fs.StateDir, "ftctl-8-0123abcd.journal")
	other := filepath.Join(fs.StateDir, "something.journal")
	os.WriteFile(bad, []byte("not json"), 0o600)
	os.WriteFile(other, []byte("{}"), 0o600)
	var notices []string
	errs := ResetAll(fs, func(f string, a ...any) { notices = append(notices, fmt.Sprintf(f, a...)) })
	if len(errs) > 0 {
		t.Errorf("reset --all: %v", errs)
	}
	if _, err := os.Stat(bad); !os.IsNotExist(err) {
		t.Errorf("the unreadable journal of a session is still there: %v", err)
	}
	if _, err := os.Stat(other); err != nil {
		t.Errorf("a file not named after a session was removed: %v", err)
	}
	all := strings.Join(notices, "\n")
	if !strings.Contains(all, "removed the unreadable journal \""+bad) || !strings.Contains(all, other) {
		t.Errorf("notices:\n%s", all)
	}
}

// killed is what afterListWrite panics with to end a session where a SIGKILL would.
type killed struct{}

// startKilledAfterWrite starts s and ends it (a panic, as a SIGKILL would) right after the
// write to file, before ftctl reads the list back; holds is what the kernel lists then. The
// instance is let go, as the kernel lets a dead process's files go.
func startKilledAfterWrite(t *testing.T, fs *tracefs.FS, s *Session, file, holds string) {
	t.Helper()
	afterListWrite = func(f string) {
		if f == file {
			if err := os.WriteFile(fs.Path(f), []byte(holds), 0o644); err != nil {
				t.Error(err)
			}
			panic(killed{})
		}
	}
	defer func() { afterListWrite = nil }()
	func() {
		defer func() {
			if r := recover(); r != (killed{}) {
				t.Fatalf("the session was not killed after writing %s: %v", file, r)
			}
		}()
		s.Start(context.Background())
	}()
	s.Release()
}

// Issue 28 (a): a session killed between its write to set_graph_function and the read-back
// of what the kernel made of it (a glob: the functions it selected; a name that occurs
// twice: two lines; a module's function: "name [module]") left the journal with what it
// meant to write, which the kernel's list matches: reset puts the list back.
func TestKilledBeforeGraphReadBack(t *testing.T) {
	files := maps.Clone(graphFiles)
	files["available_filter_functions"] = "vfs_read\nvfs_write\nksys_read\nvfs_read\nvfs_mod [mymod]\n"
	for _, c := range []struct {
		roots string
		holds string // what the kernel lists after the write
	}{
		{"vfs_*", "vfs_read\nvfs_write\nvfs_read\nvfs_mod [mymod]\n"},
		{"vfs_mod", "vfs_mod [mymod]\n"},
		{"vfs_read", "vfs_read\nvfs_read\n"},
	} {
		fs, _ := fakeFS(t, files)
		s, err := New(fs, ID{PID: 79, Nonce: "0123abcd"}, Spec{Graph: &GraphSpec{Roots: mustCompile(t, c.roots)}})
		if err != nil {
			t.Fatal(err)
		}
		startKilledAfterWrite(t, fs, s, graphFunctionFile, c.holds)
		left, err := Leftovers(fs, ID{})
		if err != nil || len(left) != 1 {
			t.Fatalf("%s: leftovers %+v %v", c.roots, left, err)
		}
		if err := left[0].Remove(fs); err != nil {
			t.Fatal(err)
		}
		i := slices.IndexFunc(left[0].Files, func(o FileOutcome) bool { return o.File == graphFunctionFile })
		if i < 0 || left[0].Files[i].State != FileRestored {
			t.Errorf("-f %s: set_graph_function not put back: %+v", c.roots, left[0].Files)
		}
		if v := topFile(t, fs, graphFunctionFile); v != "" {
			t.Errorf("-f %s: set_graph_function holds %q after reset", c.roots, v)
		}
	}
}

// startedGraph starts a graph session at the top level of a fake tracefs (its instances
// offer "function nop", as 6.1's) with a root, --depth and --threshold, tracing on.
func startedGraph(t *testing.T) (*tracefs.FS, *Session) {
	t.Helper()
	fs, _ := fakeFS(t, graphFiles)
	s, err := New(fs, ID{PID: 81, Nonce: "0123abcd"}, Spec{Graph: &GraphSpec{Roots: mustCompile(t, "ksys_read"), Depth: 5, Threshold: 3 * time.Microsecond}})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	if err := s.Begin(); err != nil {
		t.Fatal(err)
	}
	// what the kernel lists (the fake writes over a file's start)
	os.WriteFile(fs.Path("current_tracer"), []byte("function_graph\n"), 0o644)
	return fs, s
}

// Issue 28 (b): a teardown puts back only the kernel-wide files that hold what the session
// wrote: one another actor changed meanwhile is left as the other set it, and said so (the
// file, what it holds, what the session wrote); the rest is put back, the journal removed.
func TestTeardownLeavesWhatAnotherChanged(t *testing.T) {
	fs, s := startedGraph(t)
	os.WriteFile(fs.Path("max_graph_depth"), []byte("7\n"), 0o644)            // another actor
	os.WriteFile(fs.Path("set_graph_function"), []byte("vfs_write\n"), 0o644) // another actor
	errs := s.Teardown()
	msg := fmt.Sprint(errs)
	for _, f := range []string{"max_graph_depth", "set_graph_function"} {
		if !strings.Contains(msg, "left "+f) || !errors.Is(errors.Join(errs...), ErrLeft) {
			t.Errorf("the teardown does not say it left %s: %v", f, errs)
		}
	}
	if len(errs) != 2 {
		t.Errorf("teardown: %d errors, want the 2 files left: %v", len(errs), errs)
	}
	for f, v := range map[string]string{"max_graph_depth": "7", "set_graph_function": "vfs_write", "tracing_thresh": "0", "tracing_on": "1"} {
		if got := topFile(t, fs, f); got != v {
			t.Errorf("%s holds %q, want %q", f, got, v)
		}
	}
	if v := topFile(t, fs, "current_tracer"); !strings.HasPrefix(v, "nop") {
		t.Errorf("current_tracer %q", v)
	}
	if _, err := os.Stat(journalPath(fs, s.ID)); !os.IsNotExist(err) {
		t.Errorf("the journal is still there: %v", err)
	}
}

// Issue 28 (b): a teardown that cannot have the tracefs lock (another ftctl holds it: the
// caller's wait ran out) does not write the kernel-wide files unlocked: it removes what is
// the session's alone (its instance), leaves those files and their journal, and says so;
// `ftctl reset`, under the lock, puts them back.
func TestTeardownWithoutTheLockLeavesTheJournal(t *testing.T) {
	fs, s := startedGraph(t)
	other := &tracefs.FS{Mount: tracefs.Mount{Path: fs.Root()}} // another ftctl, on the same tracefs
	l, err := other.Lock(context.Background(), time.Second, nil)
	if err != nil {
		t.Fatal(err)
	}
	errs := s.Teardown()
	if !errors.Is(errors.Join(errs...), tracefs.ErrBusy) || !strings.Contains(fmt.Sprint(errs), "ftctl reset") {
		t.Errorf("the teardown does not say it left the files for reset: %v", errs)
	}
	for f, v := range map[string]string{"max_graph_depth": "5", "tracing_thresh": "3", "set_graph_function": "ksys_read", "current_tracer": "function_graph"} {
		if got := topFile(t, fs, f); got != v {
			t.Errorf("%s holds %q, want %q: written without the lock", f, got, v)
		}
	}
	if _, err := os.Stat(journalPath(fs, s.ID)); err != nil {
		t.Fatalf("the journal is gone: %v", err)
	}
	if _, err := os.Stat(fs.Path("instances/" + s.ID.Instance())); !os.IsNotExist(err) {
		t.Errorf("the session's instance is still there: %v", err)
	}
	l.Unlock()
	left, err := Leftovers(fs, ID{})
	if err != nil || len(left) != 1 || left[0].State != StateDead {
		t.Fatalf("leftovers: %+v %v", left, err)
	}
	if err := left[0].Remove(fs); err != nil {
		t.Fatal(err)
	}
	for f, v := range map[string]string{"max_graph_depth": "0", "tracing_thresh": "0", "set_graph_function": ""} {
		if got := topFile(t, fs, f); got != v {
			t.Errorf("after reset %s holds %q, want %q", f, got, v)
		}
	}
}

// Issue 28 (d): a journal is never written into, or read from, a state directory others may
// write: the session does not start (nothing written outside its instance), reset lists
// nothing from there.
func TestJournalRefusesUnsafeStateDir(t *testing.T) {
	fs, _ := fakeFS(t, graphFiles)
	os.Mkdir(fs.StateDir, 0o700)
	os.Chmod(fs.StateDir, 0o777)
	before := snapshot(t, fs.Root())
	s, err := New(fs, ID{PID: 83, Nonce: "0123abcd"}, Spec{Graph: &GraphSpec{Roots: mustCompile(t, "ksys_read"), Depth: 5}})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Start(context.Background()); !errors.Is(err, tracefs.ErrPermission) || !strings.Contains(err.Error(), fs.StateDir) {
		t.Errorf("started with its journal in a directory others may write: %v", err)
	}
	if after := snapshot(t, fs.Root()); !mapsEqual(before, after) {
		t.Errorf("the failed start changed the fake tracefs")
	}
	if ents, _ := os.ReadDir(fs.StateDir); len(ents) != 0 {
		t.Errorf("written into the unsafe directory: %v", ents)
	}
	os.WriteFile(journalPath(fs, ID{PID: 84, Nonce: "0123abcd"}), []byte(`{"session":{"pid":84,"id":"0123abcd"},"entries":[]}`), 0o600)
	if _, err := Leftovers(fs, ID{}); !errors.Is(err, tracefs.ErrPermission) {
		t.Errorf("journals read from a directory others may write: %v", err)
	}
}

// The session's own stop (the traced command exited: tracing off in the graph's trace array,
// the top level here) is the session's write: the teardown puts tracing_on back, it does not
// take it for another actor's (seen on 6.1 in vmtest TestGraph/command before StopTracing
// journaled it: the top level left with tracing off).
func TestTeardownAfterStopTracing(t *testing.T) {
	fs, s := startedGraph(t)
	if err := s.StopTracing(); err != nil {
		t.Fatal(err)
	}
	if v := topFile(t, fs, "tracing_on"); v != "0" {
		t.Fatalf("tracing_on %q after StopTracing", v)
	}
	if errs := s.Teardown(); len(errs) > 0 {
		t.Errorf("teardown: %v", errs)
	}
	if v := topFile(t, fs, "tracing_on"); v != "1" {
		t.Errorf("tracing_on %q after the teardown, want 1 as before", v)
	}
}

// A graph list is not emptied while function_graph may still run in the session's trace
// array (here the top level's tracer cannot be read, so cannot be put back): emptied, it
// would graph every function. It is left, failed, in the journal for a second try.
func TestGraphListNotEmptiedUnderARunningGraph(t *testing.T) {
	fs, s := killedGraph(t)
	os.Remove(fs.Path("current_tracer"))
	os.Mkdir(fs.Path("current_tracer"), 0o755) // reads fail
	left, _ := Leftovers(fs, ID{})
	if len(left) != 1 {
		t.Fatalf("leftovers: %+v", left)
	}
	err := left[0].Remove(fs)
	if err == nil || !strings.Contains(err.Error(), "would graph every function") {
		t.Errorf("reset does not say why it left set_graph_function: %v", err)
	}
	if v := topFile(t, fs, graphFunctionFile); v != "ksys_read" {
		t.Errorf("set_graph_function emptied under a graph that may run: %q", v)
	}
	b, _ := os.ReadFile(journalPath(fs, s.ID))
	j, err := parseJournal(b)
	if err != nil || j.entry(graphFunctionFile) == nil || j.entry("current_tracer") == nil || j.entry(graphDepthFile) != nil {
		t.Errorf("the journal should keep what is left (the tracer, the list), and only that: %s %v", b, err)
	}
}
