package session

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// kprobes lists probes of a live session (47), a dead one whose instance is still there (77), a
// dead one whose instance is gone (88, named as before November 2026), the shared group and
// another user's group.
const kprobes = "p:ftctl_47_0badcafe/open do_sys_openat2\n" +
	"p:ftctl_77_0123abcd/open do_sys_openat2\n" +
	"r:ftctl_77_0123abcd/ret vfs_read\n" +
	"p:ftctl_88/x vfs_write\n" +
	"p:ftctl/shared vfs_read\n" +
	"p:kprobes/other vfs_read\n"

func TestLeftoversAndRemove(t *testing.T) {
	fs, dirs := fakeFS(t, map[string]string{"kprobe_events": kprobes})
	// Session 47 runs (it holds its instance); session 77 was killed: its instance is there,
	// held by nobody; an unrelated instance and an instance named like a session but not one.
	live, err := New(fs, ID{PID: 47, Nonce: "0badcafe"}, Spec{})
	if err != nil {
		t.Fatal(err)
	}
	if err := live.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	defer live.Teardown()
	for _, n := range []string{"ftctl-77-0123abcd", "mine", "ftctl-77-xyz"} {
		if _, _, err := fs.Ensure(n); err != nil {
			t.Fatal(err)
		}
	}
	self := ID{PID: 99, Nonce: "00000000"}
	left, err := Leftovers(fs, self)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, l := range left {
		got = append(got, l.ID.String()+" "+l.Instance+" "+l.Group+" "+strings.Join(l.Probes, ",")+" "+l.State)
	}
	want := []string{
		"47-0badcafe ftctl-47-0badcafe ftctl_47_0badcafe open " + StateUnknown,
		"77-0123abcd ftctl-77-0123abcd ftctl_77_0123abcd open,ret " + StateUnknown,
		"88  ftctl_88 x " + StateDead,
	}
	if !slices.Equal(got, want) {
		t.Fatalf("leftovers\n got %q\nwant %q", got, want)
	}
	// The caller's own session is never a leftover.
	if mine, _ := Leftovers(fs, live.ID); slices.ContainsFunc(mine, func(l *Leftover) bool { return l.ID == live.ID }) {
		t.Error("a session listed itself")
	}

	before := readAll(t, fs, "kprobe_events")
	// The live session: the kernel refuses its instance; nothing of it is touched.
	if err := left[0].Remove(fs); err != nil {
		t.Fatal(err)
	}
	if left[0].State != StateInUse || len(left[0].Removed) != 0 || readAll(t, fs, "kprobe_events") != before {
		t.Errorf("live session: state %q, removed %v, kprobe_events %q", left[0].State, left[0].Removed, readAll(t, fs, "kprobe_events"))
	}
	if gone, err := live.Instance.Gone(); err != nil || gone {
		t.Error("the live session's instance is gone")
	}
	// The dead session: its instance first, then its probes, each said as done.
	if err := left[1].Remove(fs); err != nil {
		t.Fatal(err)
	}
	wantRemoved := []string{"instance ftctl-77-0123abcd", "probe ftctl_77_0123abcd/open", "probe ftctl_77_0123abcd/ret"}
	if left[1].State != StateDead || !slices.Equal(left[1].Removed, wantRemoved) {
		t.Errorf("dead session: state %q, removed %q", left[1].State, left[1].Removed)
	}
	if n := len(dirs.Removed); n != 1 || dirs.Removed[0].Name != "ftctl-77-0123abcd" {
		t.Errorf("rmdirs %+v", dirs.Removed)
	}
	// Each write lands at the start of the plain file: the last one is there (the dry run
	// below sees every write).
	if got := readAll(t, fs, "kprobe_events"); !strings.HasPrefix(got, "-:ftctl_77_0123abcd/ret\n") {
		t.Errorf("kprobe_events after the removal: %q", got)
	}
	// A group without its instance: its probes.
	if err := left[2].Remove(fs); err != nil || !slices.Equal(left[2].Removed, []string{"probe ftctl_88/x"}) {
		t.Errorf("instance-less group: %v, removed %q", err, left[2].Removed)
	}
	if !GroupAlive(fs, "ftctl_47_0badcafe") || GroupAlive(fs, "ftctl_88") || GroupAlive(fs, "ftctl") || GroupAlive(fs, "kprobes") {
		t.Error("GroupAlive: the running session's group alone may be alive")
	}
}

// In a dry run, nothing is removed and nothing is said to be.
func TestLeftoverRemoveDryRun(t *testing.T) {
	fs, dirs := fakeFS(t, map[string]string{"kprobe_events": kprobes})
	if _, _, err := fs.Ensure("ftctl-77-0123abcd"); err != nil {
		t.Fatal(err)
	}
	var plan bytes.Buffer
	fs.DryRun = &plan
	left, err := Leftovers(fs, ID{})
	if err != nil {
		t.Fatal(err)
	}
	before := readAll(t, fs, "kprobe_events")
	for _, l := range left {
		if err := l.Remove(fs); err != nil {
			t.Fatal(err)
		}
		if len(l.Removed) != 0 {
			t.Errorf("dry run said %v removed", l.Removed)
		}
	}
	if len(dirs.Removed) != 0 || readAll(t, fs, "kprobe_events") != before {
		t.Error("the dry run changed something")
	}
	// Every write planned: the dead sessions' probes, the instance first; nothing of the shared
	// group or another user's.
	var writes []string
	for _, line := range strings.Split(plan.String(), "\n") {
		if strings.Contains(line, "rmdir") || strings.Contains(line, "-:") {
			writes = append(writes, line)
		}
	}
	joined := strings.Join(writes, "\n")
	// (session 47 has no instance here: its group is a dead session's too)
	for _, want := range []string{"rmdir", "-:ftctl_77_0123abcd/open", "-:ftctl_77_0123abcd/ret", "-:ftctl_88/x", "-:ftctl_47_0badcafe/open"} {
		if !strings.Contains(joined, want) {
			t.Errorf("the plan lacks %q:\n%s", want, plan.String())
		}
	}
	if strings.Index(joined, "rmdir") > strings.Index(joined, "-:ftctl_77") {
		t.Errorf("a probe before its instance:\n%s", joined)
	}
	for _, never := range []string{"-:kprobes/other", "-:ftctl/shared"} {
		if strings.Contains(joined, never) {
			t.Errorf("the plan touches %q:\n%s", never, joined)
		}
	}
}

func readAll(t *testing.T, fs interface{ Path(string) string }, rel string) string {
	t.Helper()
	return readFile(t, fs.Path(rel))
}

// A session whose instance cannot be looked at (stat fails for another reason than "no such
// file": here a loop of links, ELOOP) may be running: GroupAlive must not call it gone, or
// `probe remove --all-owned` would remove a live session's probes.
func TestGroupAliveWhenInstanceCannotBeSeen(t *testing.T) {
	fs, _ := fakeFS(t, nil)
	dir := filepath.Join(fs.Mount.Path, "instances", "ftctl-47-0badcafe")
	if err := os.Symlink(dir, dir); err != nil {
		t.Fatal(err)
	}
	if !GroupAlive(fs, "ftctl_47_0badcafe") {
		t.Error("an instance that stat could not look at (ELOOP) was judged gone")
	}
	if GroupAlive(fs, "ftctl_48_0badcafe") {
		t.Error("a missing instance was judged alive")
	}
}

// The fprobes and synthetic event `ftctl latency` leaves, as dynamic_events lists them (seen on
// 6.12 after a SIGKILL), and the tracepoint and event probes of `ftctl trace -p`, are the
// session's; others' are not.
func TestDynamicLeftovers(t *testing.T) {
	text := "f:ftctl_153_e48c79e1/lat_entry vfs_read\nf:ftctl_153_e48c79e1/lat_return vfs_read%return\n" +
		"s:synthetic/ftctl_153_e48c79e1_lat\tu64 lat\np:ftctl_153_e48c79e1/k vfs_read\nf:other/x vfs_read\ns:synthetic/wakeup_lat\tu64 lat\n" +
		"t:ftctl_153_e48c79e1/sw sched_switch arg1=prev->pid\ne:ftctl_153_e48c79e1/esw sched.sched_switch p=$prev_pid\nt:tracepoints/x sched_switch\n"
	got := dynamicEvents(text)
	want := []string{"f:ftctl_153_e48c79e1/lat_entry", "f:ftctl_153_e48c79e1/lat_return", "s:synthetic/ftctl_153_e48c79e1_lat", "f:other/x", "s:synthetic/wakeup_lat",
		"t:ftctl_153_e48c79e1/sw", "e:ftctl_153_e48c79e1/esw", "t:tracepoints/x"}
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Fatalf("got %q", got)
	}
	id := ID{PID: 153, Nonce: "e48c79e1"}
	for _, name := range got {
		owner, ok := dynamicOwner(name)
		mine := strings.Contains(name, "ftctl_153")
		if ok != mine || (ok && owner != id) {
			t.Errorf("%s: owner %v %v", name, owner, ok)
		}
	}
}

// The removal text of each trigger as 6.1 and 6.12 list them (vmtest TestResetAll runs them).
func TestTriggerRemoval(t *testing.T) {
	for _, c := range []struct{ listed, want string }{
		{"hist:keys=common_pid:vals=hitcount,bytes_req:sort=hitcount:size=2048 if bytes_req > 100 [active]",
			"hist:keys=common_pid:vals=hitcount,bytes_req:sort=hitcount:size=2048 if bytes_req > 100"},
		{"hist:keys=bytes_req.log2:vals=hitcount:sort=bytes_req.log2:size=2048 [active]",
			"hist:keys=bytes_req.log2:vals=hitcount:sort=bytes_req:size=2048"},
		{"hist:keys=next_pid:vals=hitcount:sort=next_pid.descending,hitcount:size=2048 [paused]",
			"hist:keys=next_pid:vals=hitcount:sort=next_pid.descending,hitcount:size=2048"},
		{"hist:keys=lat.log2:vals=hitcount:sort=lat.log2.descending:size=2048 if comm == \"a b\" [active]",
			"hist:keys=lat.log2:vals=hitcount:sort=lat.descending:size=2048 if comm == \"a b\""},
		{"traceon:count=3 if bytes_req > 10", "traceon"},
		{"traceon:unlimited if bytes_req > 10", "traceon"},
		{"stacktrace:unlimited", "stacktrace"},
		{"enable_event:sched:sched_switch:unlimited", "enable_event:sched:sched_switch"},
		{"snapshot:count=1", "snapshot"},
	} {
		if got := triggerRemoval(c.listed); got != c.want {
			t.Errorf("%q:\n got %q\nwant %q", c.listed, got, c.want)
		}
	}
}

// The trigger file's lines are the kernel's (and other tools'): any of them gives a removal
// text without a panic, and a hist trigger's keeps its head.
func FuzzTriggerRemoval(f *testing.F) {
	for _, s := range []string{
		"hist:keys=common_pid:vals=hitcount,bytes_req:sort=hitcount:size=2048 if bytes_req > 100 [active]",
		"hist:keys=lat.log2:vals=hitcount:sort=lat.log2.descending:size=2048 [paused]",
		"traceon:count=3 if x > 1", "enable_event:sched:sched_switch:unlimited", "hist", "", ":", "hist:sort=.",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, line string) {
		out := triggerRemoval(line)
		if strings.HasPrefix(line, "hist:") && !strings.HasPrefix(out, "hist:") {
			t.Errorf("%q -> %q", line, out)
		}
	})
}
