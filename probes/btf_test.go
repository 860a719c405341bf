package probes

import (
	"errors"
	"strings"
	"testing"

	"github.com/ftctl/ftctl/internal/fixture"
	"github.com/ftctl/ftctl/tracefs"
)

const fixtureKallsyms = "ffffffff81000000 T vfs_read\nffffffff81000100 T getname\nffffffff81000200 T kfree\n" +
	"ffffffff81000300 T do_sys_openat2\nffffffff81000400 T noargs\nffffffff81000500 t twice\nffffffff81000600 t twice\n" +
	"ffffffffc0000000 t dummy_xmit\t[dummy]\nffffffffc0000100 t uni2char\t[nls_utf8]\n"

func btfParser(t testing.TB) Parser {
	t.Helper()
	fs := &tracefs.FS{BTFDir: fixture.BTFDir(t)}
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

// BTF is big: a definition that names nothing BTF describes does not read it.
func TestBTFReadOnlyWhenNeeded(t *testing.T) {
	p := btfParser(t)
	for _, def := range []string{"p vfs_read x=%di y=+0(%si):string", "r vfs_read x=%ax", "p vfs_read $comm $stack3 @jiffies", "p:e vfs_read"} {
		if _, err := p.Parse(def); err != nil {
			t.Fatalf("%q: %v", def, err)
		}
	}
	if p.Kernel.lookups != 0 {
		t.Errorf("BTF looked up %d times for definitions without BTF names", p.Kernel.lookups)
	}
	p.Parse("p vfs_read count")
	if p.Kernel.lookups != 1 {
		t.Errorf("a BTF name: %d lookups, want 1", p.Kernel.lookups)
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

// FuzzParseBTF: the checks against kallsyms and BTF (names, ->field and .field chains,
// $retval, :string, $argN), and those of fprobes (the function glob), tracepoint probes (the
// stub's BTF) and event probes (the attached event's fields and filter), never panic, and a
// refusal points inside the definition.
func FuzzParseBTF(f *testing.F) {
	for _, s := range []string{
		"p vfs_read x=file->f_path.dentry->d_name.name:string", "r getname x=$retval->name:string",
		"p vfs_read $arg* file", "p vfs_read $arg2:string count->x", "r kfree $retval",
		"p vfs_read x=+0(file->f_inode)->i_ino", "p vfs_read file->->", "p vfs_read file.->x",
		"r do_sys_openat2 $retval.x->y", "p dummy:dummy_xmit skb", "p twice", "p vfs_read $arg1 $arg9",
		"f vfs_read count file->f_flags x=$retval", "f vfs_* $arg1", "t sched_switch prev->comm:string $arg*",
		"e sched.sched_switch n=$next_comm:string if prev_pid == 0 && next_comm ~ \"a*\"", "e kprobes.kp $prev_pid",
	} {
		f.Add(s)
	}
	p := kindsParser(f) // BTF, and the functions, formats and dynamic events the other kinds need
	f.Fuzz(func(t *testing.T, src string) {
		_, err := p.Parse(src)
		if err == nil {
			return
		}
		var se *SyntaxError
		if !errors.As(err, &se) || se.Pos < 0 || se.Pos > len(src)+1 {
			t.Fatalf("Parse(%q): bad error %#v", src, err)
		}
	})
}
