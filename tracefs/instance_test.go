package tracefs

import (
	"errors"
	"os"
	"strings"
	"testing"
)

func TestValidateInstanceName(t *testing.T) {
	good := []string{"a", "ftctl-123", "my trace", "ünïcode", "a.b", strings.Repeat("x", 255)}
	bad := []string{"", "a/b", "/", "..", ".", "a..b", "../x", "x\x00", "x\ny", "esc\x1b[31m", "del\x7f",
		"c1\u0085", strings.Repeat("x", 256), "bad\xffutf8"}
	for _, n := range good {
		if err := ValidateInstanceName(n); err != nil {
			t.Errorf("%q rejected: %v", n, err)
		}
	}
	for _, n := range bad {
		err := ValidateInstanceName(n)
		if !errors.Is(err, ErrBadInstance) {
			t.Errorf("%q accepted (%v)", n, err)
			continue
		}
		// The message must be printable as is: the bad name is shown escaped.
		for _, r := range err.Error() {
			if r < 0x20 && r != '\n' {
				t.Errorf("%q: message carries a control character: %q", n, err.Error())
			}
		}
	}
}

func TestInstancesLifecycle(t *testing.T) {
	f := fakeTracefs(t, "6.12")
	if _, err := f.Lookup("x"); !errors.Is(err, ErrNoInstance) {
		t.Fatalf("Lookup of a missing instance: %v", err)
	}
	if _, err := os.Stat(f.Path("instances/x")); err == nil {
		t.Fatal("Lookup created the instance")
	}
	in, created, err := f.Ensure("x")
	if err != nil || !created || in.Name != "x" {
		t.Fatal(in, created, err)
	}
	if _, created, err := f.Ensure("x"); err != nil || created {
		t.Fatal("second Ensure:", created, err)
	}
	if _, err := f.Lookup("x"); err != nil {
		t.Fatal(err)
	}
	names, err := f.Instances()
	if err != nil || len(names) != 1 || names[0] != "x" {
		t.Fatal(names, err)
	}
	if err := f.Remove("x"); err != nil {
		t.Fatal(err)
	}
	if err := f.Remove("x"); err != nil {
		t.Fatal("removal is not idempotent:", err)
	}
	if _, _, err := f.Ensure("../etc"); !errors.Is(err, ErrBadInstance) {
		t.Fatal(err)
	}
	if err := f.Remove(""); !errors.Is(err, ErrBadInstance) {
		t.Fatal("removing the top level:", err)
	}
}

func TestNoInstancesDir(t *testing.T) {
	f := fakeTracefs(t, "6.12")
	if err := os.Remove(f.Path("instances")); err != nil {
		t.Fatal(err)
	}
	if _, _, err := f.Ensure("x"); !errors.Is(err, ErrUnavailable) {
		t.Fatal(err)
	}
	if _, err := f.Lookup("x"); !errors.Is(err, ErrUnavailable) {
		t.Fatal(err)
	}
	if names, err := f.Instances(); err != nil || names != nil {
		t.Fatal(names, err)
	}
}
