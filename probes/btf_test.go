package probes

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cilium/ebpf/btf"

	"github.com/ftctl/ftctl/tracefs"
)

// fixtureBTF writes a small vmlinux BTF built in memory: the types of vfs_read, getname, kfree
// and do_sys_openat2 as the 6.12 kernel declares them, cut down, with an unsigned char at type
// ID 8 as on Debian's 6.12 (see fitsString). Modules' BTF (split on vmlinux's, which
// btf.Builder does not write) is tested on the VM kernels.
func fixtureBTF(t testing.TB) string {
	t.Helper()
	uchar := &btf.Int{Name: "unsigned char", Size: 1}
	char := &btf.Int{Name: "char", Size: 1}
	u32 := &btf.Int{Name: "unsigned int", Size: 4}
	s32 := &btf.Int{Name: "int", Size: 4, Encoding: btf.Signed}
	ulong := &btf.Int{Name: "long unsigned int", Size: 8}
	slonglong := &btf.Int{Name: "long long int", Size: 8, Encoding: btf.Signed}
	sizeT := &btf.Typedef{Name: "size_t", Type: ulong}
	ssizeT := &btf.Typedef{Name: "ssize_t", Type: &btf.Int{Name: "long int", Size: 8, Encoding: btf.Signed}}
	loffT := &btf.Typedef{Name: "loff_t", Type: slonglong}
	qstr := &btf.Struct{Name: "qstr", Size: 16, Members: []btf.Member{
		{Name: "", Type: &btf.Union{Size: 8, Members: []btf.Member{
			{Name: "", Type: &btf.Struct{Size: 8, Members: []btf.Member{{Name: "hash", Type: u32}, {Name: "len", Type: u32, Offset: 32}}}},
			{Name: "hash_len", Type: ulong},
		}}},
		{Name: "name", Type: &btf.Pointer{Target: &btf.Const{Type: uchar}}, Offset: 64},
	}}
	dentry := &btf.Struct{Name: "dentry", Size: 32, Members: []btf.Member{{Name: "d_name", Type: qstr}, {Name: "d_iname", Type: &btf.Array{Type: uchar, Index: u32, Nelems: 16}, Offset: 128}}}
	path := &btf.Struct{Name: "path", Size: 16, Members: []btf.Member{{Name: "dentry", Type: &btf.Pointer{Target: dentry}}}}
	inode := &btf.Struct{Name: "inode", Size: 8, Members: []btf.Member{{Name: "i_ino", Type: ulong}}}
	file := &btf.Struct{Name: "file", Size: 40, Members: []btf.Member{
		{Name: "f_flags", Type: u32},
		{Name: "f_inode", Type: &btf.Pointer{Target: inode}, Offset: 64},
		{Name: "f_path", Type: path, Offset: 128},
		{Name: "f_pos", Type: loffT, Offset: 256},
	}}
	filename := &btf.Struct{Name: "filename", Size: 8, Members: []btf.Member{{Name: "name", Type: &btf.Pointer{Target: &btf.Const{Type: char}}}}}
	fn := func(name string, ret btf.Type, params ...btf.FuncParam) *btf.Func {
		return &btf.Func{Name: name, Type: &btf.FuncProto{Return: ret, Params: params}, Linkage: btf.GlobalFunc}
	}
	types := []btf.Type{s32, u32, ulong, slonglong, &btf.Int{Name: "short int", Size: 2, Encoding: btf.Signed}, &btf.Int{Name: "short unsigned int", Size: 2}, &btf.Int{Name: "_Bool", Size: 1, Encoding: btf.Bool}, uchar, char,
		fn("vfs_read", ssizeT,
			btf.FuncParam{Name: "file", Type: &btf.Pointer{Target: file}},
			btf.FuncParam{Name: "buf", Type: &btf.Pointer{Target: char}},
			btf.FuncParam{Name: "count", Type: sizeT},
			btf.FuncParam{Name: "pos", Type: &btf.Pointer{Target: loffT}}),
		fn("getname", &btf.Pointer{Target: filename}, btf.FuncParam{Name: "filename", Type: &btf.Pointer{Target: &btf.Const{Type: char}}}),
		fn("kfree", (*btf.Void)(nil), btf.FuncParam{Name: "objp", Type: &btf.Pointer{Target: &btf.Const{Type: (*btf.Void)(nil)}}}),
		fn("do_sys_openat2", &btf.Int{Name: "long int", Size: 8, Encoding: btf.Signed}, btf.FuncParam{Name: "dfd", Type: s32}),
		fn("noargs", s32),
	}
	b, err := btf.NewBuilder(types, nil)
	if err != nil {
		t.Fatal(err)
	}
	raw, err := b.Marshal(nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "vmlinux"), raw, 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}

const fixtureKallsyms = "ffffffff81000000 T vfs_read\nffffffff81000100 T getname\nffffffff81000200 T kfree\n" +
	"ffffffff81000300 T do_sys_openat2\nffffffff81000400 T noargs\nffffffff81000500 t twice\nffffffff81000600 t twice\n" +
	"ffffffffc0000000 t dummy_xmit\t[dummy]\nffffffffc0000100 t uni2char\t[nls_utf8]\n"

func btfParser(t testing.TB) Parser {
	t.Helper()
	fs := &tracefs.FS{BTFDir: fixtureBTF(t)}
	k := NewKernelFrom([]byte(fixtureKallsyms), fs.BTF())
	k.Suggest = func(sym string) []string { return []string{"vfs_read"} }
	return Parser{Features: AllFeatures, Arch: "amd64", Kernel: k}
}

// TestBTFChecks: what 6.12 refuses for BTF reasons (seen in the VM corpus), refused before the
// kernel with its words and its caret; what it accepts, accepted.
func TestBTFChecks(t *testing.T) {
	p := btfParser(t)
	for _, c := range []struct {
		def, msg string
		pos      int // -1: not checked
	}{
		{"p vfs_read file buf count pos", "", 0},
		{"p vfs_read count pos nosuch", "This variable is not found at this probe point", 21},
		{"p vfs_read x=+0(nosuch):u32", "This variable is not found at this probe point", 16},
		{"p vfs_read x=+0(pos):s64", "", 0},
		{"p vfs_read x=file->f_inode->i_ino", "", 0},
		{"p vfs_read x=file->f_path.dentry->d_name.name:string", "", 0},
		{"p vfs_read x=file->f_path.dentry->d_name.len", "", 0},
		{"p vfs_read x=file->f_path.dentry->d_iname:string", "", 0},
		{"p vfs_read x=file->nosuchfield", "This field is not found.", 19},
		{"p vfs_read x=count->x", "This is not a pointer to union/structure.", 20},
		{"p vfs_read x=pos->x", "Failed to get BTF type info.", 18},
		{"p vfs_read x=file->f_flags->x", "This is not a pointer to union/structure.", 28},
		{"p vfs_read x=file->f_path->dentry", "This is not a pointer to union/structure.", 27},
		{"p vfs_read x=file->f_path.nosuch", "This field is not found.", 26},
		{"p vfs_read x=file->f_inode.i_ino", "Failed to get BTF type info.", 27},
		{"r do_sys_openat2 x=$retval->f_flags", "This is not a pointer to union/structure.", 28},
		{"r getname x=$retval->name:string", "", 0},
		{"r getname x=$retval->nosuch", "This field is not found.", 21},
		{"r kfree x=$retval", "This function returns 'void' type", 10},
		{"r getname x=$retval:string", "This type does not fit for string.", 12},
		{"r getname x=$retval.name", "Non pointer structure/union argument is not supported.", 20},
		{"p vfs_read buf:string", "", 0},
		{"p vfs_read count:string", "", 0}, // size 8: type ID 8 is unsigned char (the kernel's quirk)
		{"p vfs_read x=file->f_flags:string", "This type does not fit for string.", 13},
		{"p vfs_read $arg1:string", "This type does not fit for string.", 11},
		{"p vfs_read $arg2:string", "", 0},
		{"p vfs_read x=$arg1:string", "String accepts only memory argument", 19},
		{"p vfs_read $arg5", "This variable is not found at this probe point", 11},
		{"p vfs_read x=$arg5", "", 0},
		{"p vfs_read $arg1 file", "This argument name is already used", 17},
		{"p vfs_read $arg* file", "This argument name is already used", 17},
		{"p vfs_read $arg*", "", 0},
		{"p noargs $arg*", "BTF is not available or not supported", 9},
		{"p noargs x", "No BTF entry for this probe point", 9},
		{"r vfs_read count pos", "", 0},
		{"p vfs_read+8 count", "BTF is not available or not supported", 13},
		{"p nosuchfunction count", "Invalid probed address or symbol", 2},
		{"p twice", "The symbol is not unique", 2},
		{"p dummy_xmit skb", "No BTF entry for this probe point", 13}, // its module has no BTF
		{"p dummy:dummy_xmit skb", "No BTF entry for this probe point", 19},
		{"p dummy:dummy_xmit x=%di", "", 0},
		{"p dummy:nosuch", "Invalid probed address or symbol", 2},
		{"p nosuchmod:somefn", "", 0}, // a module not loaded: the kernel keeps the probe pending
		{"p 0xffffffff81000000 x=%di", "", 0},
	} {
		_, err := p.Parse(c.def)
		var se *SyntaxError
		switch {
		case c.msg == "" && err != nil:
			t.Errorf("%q: %v", c.def, err)
		case c.msg == "":
		case !errors.As(err, &se):
			t.Errorf("%q: %v, want %q", c.def, err, c.msg)
		case se.Msg != c.msg || (c.pos >= 0 && se.Pos != c.pos):
			t.Errorf("%q: %q at %d, want %q at %d", c.def, se.Msg, se.Pos, c.msg, c.pos)
		}
	}
}

// Without BTF (the kernel has none, or it cannot be read) nothing BTF-related is refused.
func TestBTFAbsentChecksNothing(t *testing.T) {
	k := NewKernelFrom([]byte(fixtureKallsyms), (&tracefs.FS{BTFDir: t.TempDir()}).BTF())
	p := Parser{Features: AllFeatures, Arch: "amd64", Kernel: k}
	for _, def := range []string{"p vfs_read nosuch", "r kfree x=$retval", "p vfs_read count->x", "p vfs_read $arg9"} {
		if _, err := p.Parse(def); err != nil {
			t.Errorf("%q: %v", def, err)
		}
	}
	if _, err := p.Parse("p nosuchfunction"); err == nil {
		t.Error("kallsyms is still checked without BTF")
	}
}

func TestTooManyArguments(t *testing.T) {
	p := Parser{Features: AllFeatures, Arch: "amd64"}
	def := "p vfs_read" + strings.Repeat(" %di", MaxArgs)
	if _, err := p.Parse(def); err != nil {
		t.Fatalf("%d arguments: %v", MaxArgs, err)
	}
	var se *SyntaxError
	if _, err := p.Parse(def + " %si"); !errors.As(err, &se) || se.Msg != "Too many arguments are specified" || se.Pos != len(def)+1 {
		t.Fatalf("%d arguments: %v", MaxArgs+1, err)
	}
	// $arg* counts as the function's parameters.
	bp := btfParser(t)
	def = "p vfs_read $arg*" + strings.Repeat(" %di", MaxArgs-3)
	if _, err := bp.Parse(def); !errors.As(err, &se) || se.Msg != "Too many arguments are specified" {
		t.Fatalf("$arg* and %d more: %v", MaxArgs-3, err)
	}
}

func TestFuncArgs(t *testing.T) {
	k := btfParser(t).Kernel
	got, err := k.FuncArgs("vfs_read")
	if err != nil {
		t.Fatal(err)
	}
	want := []Param{{"file", "struct file *"}, {"buf", "char *"}, {"count", "size_t"}, {"pos", "loff_t *"}}
	if got.Func != "vfs_read" || got.Module != "" || got.Return != "ssize_t" || len(got.Params) != 4 {
		t.Fatalf("%+v", got)
	}
	for i := range want {
		if got.Params[i] != want[i] {
			t.Errorf("param %d: %+v, want %+v", i, got.Params[i], want[i])
		}
	}
	if got, err := k.FuncArgs("kfree"); err != nil || got.Return != "void" || got.Params[0].Type != "const void *" {
		t.Errorf("kfree: %+v %v", got, err)
	}
	var nf *NoFuncError
	if _, err := k.FuncArgs("vfs_reed"); !errors.As(err, &nf) || !errors.Is(err, ErrNoFunc) || len(nf.Suggestions) == 0 {
		t.Errorf("vfs_reed: %v", err)
	}
	if _, err := k.FuncArgs("nls_utf8:uni2char"); !errors.Is(err, tracefs.ErrNoBTF) {
		t.Errorf("a module without BTF: %v", err)
	}
	none := NewKernelFrom(nil, (&tracefs.FS{BTFDir: t.TempDir()}).BTF())
	if _, err := none.FuncArgs("vfs_read"); !errors.Is(err, tracefs.ErrNoBTF) || !errors.Is(err, tracefs.ErrUnavailable) {
		t.Errorf("no BTF: %v", err)
	}
}
