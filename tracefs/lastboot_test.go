package tracefs

import (
	"reflect"
	"testing"
)

func TestParseLastBootInfo(t *testing.T) {
	for _, c := range []struct {
		text string
		want LastBoot
		err  bool
	}{
		// (seen, 6.12.117 under qemu with nokaslr)
		{"text delta:\t0\ndata delta:\t0\n", LastBoot{}, false},
		{"text delta:\t-123456\ndata delta:\t4096\n", LastBoot{Text: -123456, Data: 4096}, false},
		{"2e000000\t[kernel]\nffffffffc0000000\text4\n", LastBoot{KASLR: 0x2e000000, HasBase: true}, false},
		{"# Current\n", LastBoot{Current: true}, false},
		{"text delta:\tx\n", LastBoot{}, true},
		{"", LastBoot{}, true},
		{"\x1b[2J", LastBoot{}, true},
	} {
		got, err := ParseLastBootInfo(c.text)
		if (err != nil) != c.err || !reflect.DeepEqual(got, c.want) {
			t.Errorf("ParseLastBootInfo(%q) = %+v, %v; want %+v, error %v", c.text, got, err, c.want, c.err)
		}
	}
}

func TestSplitCmdline(t *testing.T) {
	got := SplitCmdline(`BOOT_IMAGE=/vmlinuz  root=UUID=x ro  dyndbg="file a.c +p" nokaslr` + "\n")
	want := []string{"BOOT_IMAGE=/vmlinuz", "root=UUID=x", "ro", `dyndbg="file a.c +p"`, "nokaslr"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("SplitCmdline = %q, want %q", got, want)
	}
}
