package tracefs_test

import (
	"testing"

	"github.com/ftctl/ftctl/internal/fixture"
	"github.com/ftctl/ftctl/tracefs"
)

// An enumerator's value comes from vmlinux's enums, typed as C types it: int when it fits
// (sign-extended), its enum's type otherwise. A name two enums give different values, or none
// gives, has no value; two enums that agree are one value.
func TestBTFEnum(t *testing.T) {
	fs := &tracefs.FS{BTFDir: fixture.BTFDir(t)}
	b := fs.BTF()
	for _, c := range []struct {
		name string
		want tracefs.EnumConst
		ok   bool
	}{
		{"TCP_ESTABLISHED", tracefs.EnumConst{Value: 1, Size: 4, Signed: true}, true},
		{"TCP_NEW_SYN_RECV", tracefs.EnumConst{Value: 12, Size: 4, Signed: true}, true},
		{"TCP_SYN_SENT", tracefs.EnumConst{Value: 2, Size: 4, Signed: true}, true}, // two enums, one value
		{"IOPRIO_CLASS_NONE", tracefs.EnumConst{Value: 0, Size: 4, Signed: true}, true},
		{"BIG", tracefs.EnumConst{Value: 1 << 40, Size: 8, Signed: false}, true},
		{"CLASHING", tracefs.EnumConst{}, false},
		{"NOT_AN_ENUM", tracefs.EnumConst{}, false},
	} {
		got, ok, err := b.Enum(c.name)
		if err != nil || ok != c.ok || got != c.want {
			t.Errorf("%s: %+v %v %v, want %+v %v", c.name, got, ok, err, c.want, c.ok)
		}
	}
	if _, _, err := (&tracefs.FS{BTFDir: t.TempDir()}).BTF().Enum("TCP_ESTABLISHED"); err == nil {
		t.Errorf("no vmlinux BTF: no error")
	}
}
