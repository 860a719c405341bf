package session

import (
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"
)

// reset --all removes the probes of every file and names each by its kind, on a kernel
// without kprobe_events too (CONFIG_KPROBES off, as the development machines' kernel: its
// fprobes and uprobes are still there to remove). dynamic_events lists the uprobe as well.
func TestResetAllNamesEveryKind(t *testing.T) {
	const uprobes = "p:ftctl/up /bin/true:0x0000000000001010\n"
	fs, _ := fakeFS(t, map[string]string{
		"uprobe_events":  uprobes,
		"dynamic_events": uprobes + "f:ftctl/fx vfs_read%return ret=$retval\ne:kprobes/ee sched.sched_switch p=$prev_pid\n",
	})
	if err := os.Remove(fs.Path("kprobe_events")); err != nil {
		t.Fatal(err)
	}
	var notices []string
	errs := ResetAll(fs, func(format string, args ...any) { notices = append(notices, fmt.Sprintf(format, args...)) })
	if len(errs) != 0 {
		t.Fatal(errs)
	}
	var removed []string
	for _, n := range notices {
		if strings.HasPrefix(n, "removed ") && !strings.HasPrefix(n, "removed instance") {
			removed = append(removed, n)
		}
	}
	want := []string{`removed uprobe "ftctl/up"`, `removed fexit "ftctl/fx"`, `removed eprobe "kprobes/ee"`}
	if !slices.Equal(removed, want) {
		t.Errorf("notices\n got %q\nwant %q", removed, want)
	}
}
