package tracefs

import (
	"os"
	"testing"
)

// TestParseStatus: /proc/PID/status's state, Tgid and PPid, whatever the Name line holds.
func TestParseStatus(t *testing.T) {
	for _, c := range []struct {
		text       string
		state      byte
		tgid, ppid int
		ok         bool
	}{
		{"Name:\tsh\nUmask:\t0022\nState:\tS (sleeping)\nTgid:\t155\nNgid:\t0\nPid:\t156\nPPid:\t1\n", 'S', 155, 1, true},
		{"Name:\tTgid: 9\nState:\tZ (zombie)\nTgid:\t7\nPPid:\t3\n", 'Z', 7, 3, true},
		{"Name:\tx\nState:\tR (running)\nTgid:\t7\n", 0, 0, 0, false},
		{"Name:\tx\nState:\tR\nTgid:\tseven\nPPid:\t1\n", 0, 0, 0, false},
		{"", 0, 0, 0, false},
	} {
		state, tgid, ppid, ok := ParseStatus([]byte(c.text))
		if ok != c.ok || ok && (state != c.state || tgid != c.tgid || ppid != c.ppid) {
			t.Errorf("%q: %c %d %d %v, want %c %d %d %v", c.text, state, tgid, ppid, ok, c.state, c.tgid, c.ppid, c.ok)
		}
	}
	if tgid, ppid, ok := Task(os.Getpid()); !ok || tgid != os.Getpid() || ppid != os.Getppid() {
		t.Errorf("Task(self): %d %d %v", tgid, ppid, ok)
	}
	if _, _, ok := Task(0); ok {
		t.Error("Task(0) runs")
	}
}

func TestParseModules(t *testing.T) {
	text := "ext4 1036288 1 - Live 0xffffffffc0a1b000\n" +
		"mbcache 16384 1 ext4, Live 0xffffffffc0a14000\n" +
		"crc16 12288 1 ext4, Live 0xffffffffc09f4000 (E)\n"
	mods, ok := ParseModules(text)
	if !ok || len(mods) != 3 || mods[0] != (Module{"ext4", 1036288, "Live", "0xffffffffc0a1b000"}) || mods[2].Name != "crc16" {
		t.Fatalf("ParseModules = %+v, %v", mods, ok)
	}
	if mods, ok := ParseModules(""); !ok || len(mods) != 0 {
		t.Errorf("no modules: %+v, %v", mods, ok)
	}
	for _, bad := range []string{
		"ext4 1036288 1 - Loading 0xffffffffc0a1b000\n", // its init functions are still listed
		"ext4 1036288 1 - Unloading 0xffffffffc0a1b000\n",
		"ext4 big 1 - Live 0x0\n",
		"ext4 1 1 - Live\n",
		"../x 1 1 - Live 0x0\n",
	} {
		if _, ok := ParseModules(bad); ok {
			t.Errorf("ParseModules(%q) vouched for it", bad)
		}
	}
}
