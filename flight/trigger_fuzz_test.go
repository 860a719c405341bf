package flight

import "testing"

// The trigger flags' parsers (arm's --on, --on-latency) take anything without a panic, and what
// they accept names an event or a function.
func FuzzTriggers(f *testing.F) {
	for _, s := range []string{`sched:sched_process_exit if comm == "nginx"`, "vfs_read>10ms", "vfs_read>max", "a:b", ">", "x>1", ":"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if tr, err := ParseEventTrigger(s); err == nil && tr == nil {
			t.Fatalf("%q: no trigger and no error", s)
		}
		if tr, err := ParseLatencyTrigger(s); err == nil && tr == nil {
			t.Fatalf("%q: no latency trigger and no error", s)
		}
	})
}
