package session

import "testing"

func TestNames(t *testing.T) {
	id := NewID(4242)
	if len(id.Nonce) != 8 || id.Instance() != "ftctl-4242-"+id.Nonce || id.Group() != "ftctl_4242_"+id.Nonce {
		t.Fatalf("%+v %s %s", id, id.Instance(), id.Group())
	}
	if other := NewID(4242); other == id {
		t.Error("two sessions of one pid got the same names")
	}
	for name, want := range map[string]bool{
		id.Instance(): true, "ftctl-7": true, "ftctl-7-0123abcd": true,
		"ftctl-": false, "ftctl-07": false, "ftctl-7-": false, "ftctl-7-0123ABCD": false, "ftctl-7-012": false,
		"ftctl-7_0123abcd": false, "ftctl-x": false, "other-7": false, "ftctl-0": false, "ftctl-7-0123abcd-x": false,
	} {
		got, ok := InstanceID(name)
		if ok != want {
			t.Errorf("InstanceID(%q) = %v, %v", name, got, ok)
		}
		if ok && got.Instance() != name {
			t.Errorf("InstanceID(%q) round trip: %q", name, got.Instance())
		}
	}
	if got, ok := GroupID(id.Group()); !ok || got != id {
		t.Errorf("GroupID(%q) = %v, %v", id.Group(), got, ok)
	}
	for group, want := range map[string]bool{"ftctl": true, "ftctl_12": true, id.Group(): true, "kprobes": false, "ftctl_": false, "ftctl-12": false, "ftctlx": false} {
		if OwnedGroup(group) != want {
			t.Errorf("OwnedGroup(%q) != %v", group, want)
		}
	}
}
