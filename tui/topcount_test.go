package tui

import (
	"reflect"
	"strings"
	"testing"

	tea "charm.land/bubbletea/v2"
)

// TestFlowTopCount: c in the Top view asks for patterns, refuses one that does not compile
// before anything reaches the backend, starts the count, and shows the kernel's table, read
// again at each status tick, most called first, with the calls between the last two readings
// (/s) and names from the kernel escaped.
func TestFlowTopCount(t *testing.T) {
	fb := newFakeBackend(t)
	tm := newFlow(t, testModel(t, fb, testTrace), 90, 16)
	tm.waitFor("35 events")
	tm.Type("4")
	tm.Type("c")
	tm.Type("1vfs")
	tm.waitFor("starts with a digit")
	tm.Send(press("enter"))
	tm.waitFor("fix it first")
	for range 4 {
		tm.Send(tea.KeyPressMsg{Code: tea.KeyBackspace})
	}
	tm.Type("vfs_* ksys_read")
	tm.Send(press("enter"))
	tm.waitFor("counting 2 functions by hist")
	tm.waitFor("vfs_read")
	tm.Send(statusTickMsg(fixedNow()))
	tm.waitFor("200")
	m := tm.finish()
	golden(t, m)
	fb.mu.Lock()
	defer fb.mu.Unlock()
	if want := []CountRequest{{Patterns: []string{"vfs_*", "ksys_read"}}}; !reflect.DeepEqual(fb.counting, want) {
		t.Errorf("the backend was asked to count %q, want %q", fb.counting, want)
	}
}

// TestTopCountStop: x removes the count through the backend and the stream's counts show
// again; a reading that comes after is dropped; nothing is read without a count.
func TestTopCountStop(t *testing.T) {
	fb := newFakeBackend(t)
	m := testModel(t, fb, testTrace)
	step(m, press("4"))
	step(m, press("c"))
	for _, r := range "vfs_read" {
		step(m, press(string(r)))
	}
	step(m, press("enter"))
	if !m.top.kcount.running || !strings.Contains(m.top.View(), "count vfs_read · by hist") {
		t.Fatalf("no count:\n%s", m.top.View())
	}
	if !strings.Contains(m.top.View(), `evil\x1b[31m`) {
		t.Errorf("the kernel's name is not escaped:\n%q", m.top.View())
	}
	step(m, press("x"))
	if fb.stops != 1 || m.top.kcount.running || !strings.Contains(m.top.View(), "top by") {
		t.Errorf("stops %d, running %v:\n%s", fb.stops, m.top.kcount.running, m.top.View())
	}
	reads := fb.reads
	step(m, countReadMsg{counts: map[string]uint64{"late": 1}})
	if strings.Contains(m.top.View(), "late") || m.top.Tick() != nil || fb.reads != reads {
		t.Errorf("a reading after the stop:\n%s", m.top.View())
	}
}

// TestTopHistTable: h asks for an event and keys (refusing text that does not read as one
// before anything is sent), the table shows the hits per key.
func TestTopHistTable(t *testing.T) {
	fb := newFakeBackend(t)
	m := testModel(t, fb, testTrace)
	step(m, press("4"))
	step(m, press("h"))
	for _, r := range "sys_enter_read" {
		step(m, press(string(r)))
	}
	if !strings.Contains(m.top.View(), "want SYSTEM:EVENT first") {
		t.Errorf("no complaint:\n%s", m.top.View())
	}
	step(m, press("enter"))
	if len(fb.counting) != 0 {
		t.Fatalf("sent %v", fb.counting)
	}
	m.top.kcount.input.SetValue("syscalls:sys_enter_read common_pid.execname")
	step(m, press("enter"))
	want := []CountRequest{{Event: "syscalls:sys_enter_read", Keys: []string{"common_pid.execname"}}}
	if !reflect.DeepEqual(fb.counting, want) {
		t.Fatalf("asked %v, want %v", fb.counting, want)
	}
	v := m.top.View()
	if !strings.Contains(v, "hist syscalls:sys_enter_read common_pid.execname · 3 keys") || !strings.Contains(v, "HITS") || !strings.Contains(v, "KEY") {
		t.Errorf("%s", v)
	}
}
