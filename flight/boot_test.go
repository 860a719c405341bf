package flight

import (
	"reflect"
	"testing"
)

func TestBootParams(t *testing.T) {
	got, err := BootParams("crash", 16, []string{"sched:sched_switch", "irq"})
	want := []string{"nokaslr", "reserve_mem=16M:4096:crash", "trace_instance=ftctl-owned-crash@crash,sched:sched_switch,irq"}
	if err != nil || !reflect.DeepEqual(got, want) {
		t.Errorf("BootParams = %q, %v; want %q", got, err, want)
	}
	for _, c := range []struct {
		name   string
		size   int
		events []string
	}{
		{"Bad", 16, nil},
		{"abcdefghijklmnop", 16, nil}, // 16: longer than reserve_mem's label
		{"crash", 0, nil},
		{"crash", 16, []string{"sched,irq"}},
		{"crash", 16, []string{"a b"}},
		{"crash", 16, []string{""}},
	} {
		if _, err := BootParams(c.name, c.size, c.events); err == nil {
			t.Errorf("BootParams(%q, %d, %q) accepted", c.name, c.size, c.events)
		}
	}
}
