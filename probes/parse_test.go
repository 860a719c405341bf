package probes

import (
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/ftctl/ftctl/internal/fixture"
	"github.com/ftctl/ftctl/tracefs"
)

func features(t testing.TB, kernel string) tracefs.ProbeFeatures {
	t.Helper()
	return func() tracefs.ProbeFeatures {
		ft, _ := tracefs.ParseReadme(readFixture(t, kernel, "README"))
		return ft
	}()
}

func readFixture(t testing.TB, kernel, name string) string {
	t.Helper()
	s, err := fixture.Read(kernel, name)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestParseValid(t *testing.T) {
	p := Parser{Features: AllFeatures, Arch: "amd64"}
	for _, tc := range []struct {
		src  string
		want string // String() of the result
	}{
		{"p:myopen do_sys_openat2 dfd=%di filename=+0(%si):string", "p:myopen do_sys_openat2 dfd=%di filename=+0(%si):string"},
		{"r:myret vfs_read ret=$retval", "r:myret vfs_read ret=$retval"},
		{"p vfs_read count pos", "p vfs_read count pos"},
		{"r4:g/e vfs_read", "r4:g/e vfs_read"},
		{"p:g/e vfs_read%return $retval", "p:g/e vfs_read%return $retval"},
		{"p:g.e ext4:ext4_sync_file+0x10", "p:g/e ext4:ext4_sync_file+16"},
		{"p 0xffffffff81000000", "p 0xffffffff81000000"},
		{"p:g/ vfs_read", "p:g/ vfs_read"},
		{"p:e vfs_read x=-u8(+0x10(%sp)):b3@2/16 y=@jiffies+8:x64 z=\\-1 s=\\\"a\"", "p:e vfs_read x=-u8(+16(%sp)):b3@2/16 y=@jiffies+8:x64 z=\\-1 s=\\\"a\""},
		{"p:e vfs_read a=+0(%si):u8[4] $comm $stack $stack2 $arg1", "p:e vfs_read a=+0(%si):u8[4] $comm $stack $stack2 $arg1"},
		{"-:g/e", "-:g/e"},
		{"p:e vfs_read   x=%di\t# comment", "p:e vfs_read x=%di"},
	} {
		d, err := p.Parse(tc.src)
		if err != nil {
			t.Errorf("Parse(%q): %v", tc.src, err)
			continue
		}
		if got := d.String(); got != tc.want {
			t.Errorf("Parse(%q).String() = %q, want %q", tc.src, got, tc.want)
		}
	}
}

// TestParseErrors: message and caret position (under the user's text) for refused definitions.
func TestParseErrors(t *testing.T) {
	p := Parser{Features: AllFeatures, Arch: "amd64"}
	for _, tc := range []struct {
		src, msg string
		pos      int
	}{
		{"p:fty vfs_read %zz", "Invalid register name", 15},
		{"p:e   vfs_read   x=%rax", "Invalid register name", 19},
		{"p:e vfs_read x=+0(%di", "Dereference brace is not closed", 21},
		{"p:e vfs_read x=+8(+0(%zz))", "Invalid register name", 21},
		{"p:e vfs_read x=+0(%di):u8[65]", "Array number is too big", 26},
		{"p:e vfs_read x=%di:u77", "Unknown type is specified", 19},
		{"p:e vfs_read x=%di:string", "String accepts only memory argument", 19},
		{"p:e vfs_read $retval", "$retval is not available on probe", 13},
		{"p:e vfs_read x=%di x=%si", "This argument name is already used", 19},
		{"p:1e vfs_read", "Event name must follow the same rules as C identifiers", 2},
		{"p:g/1e vfs_read", "Event name must follow the same rules as C identifiers", 4},
		{"p:e", "no probe place: give a symbol ([MOD:]SYM[+OFFS]) or an address", 3},
		{"r0:e vfs_read", "Invalid maxactive number", 1},
		{"p4:e vfs_read", "Maxactive is only for function exit", 1},
		{"p:e vfs_read%ret", "Invalid probed address suffix", 12},
		{"r:e vfs_read+8", "Retprobe address must be an function entry", 4},
		{"p:e vfs_read x=\\\"abc", "String is not closed with '\"'", 20},
		{"p:e vfs_read\nx", "a definition is a single line", 12},
		{"s:e u64 x", "\"s\" definitions are not probes", 0},
		{"", "empty definition", 0},
		// An empty type, or an array of one (issue 14 item 11): the kernel's find_fetch_type("")
		// finds nothing; its caret is where the type starts.
		{"p:e vfs_read x=+0(%si):[4]", "Unknown type is specified", 23},
		{"p 0 +0(%si):[1]", "Unknown type is specified", 12},
		{"p:e vfs_read x=%di:", "Unknown type is specified", 19},
		{"p:e vfs_read x=$comm:", "$comm and immediate-string only accepts string type", 21},
		{"p:e vfs_read x=$comm:[2]", "$comm and immediate-string only accepts string type", 21},
		{`p:e vfs_read x=\"ab":`, "$comm and immediate-string only accepts string type", 21},
	} {
		_, err := p.Parse(tc.src)
		var se *SyntaxError
		if !errors.As(err, &se) {
			t.Errorf("Parse(%q) = %v, want a SyntaxError", tc.src, err)
			continue
		}
		if se.Msg != tc.msg || se.Pos != tc.pos {
			t.Errorf("Parse(%q): %q at %d, want %q at %d\n%s", tc.src, se.Msg, se.Pos, tc.msg, tc.pos, Caret("", tc.src, se.Pos))
		}
	}
}

// TestFeatureGates: the same definitions on the two kernels' READMEs.
func TestFeatureGates(t *testing.T) {
	for _, tc := range []struct {
		src         string
		on61, on612 bool
	}{
		{"p:e vfs_read count", false, true},
		{"p:e vfs_read $arg*", false, true},
		{"p:e vfs_read f=file->f_flags", false, true},
		{"p:e vfs_read c=+0(%si):char", false, true},
		{"p:e vfs_read d=file:%pD", false, true},
		{"r:e vfs_read $arg1", false, true},
		{"p:e vfs_read s=+0(%si):symstr", true, true},
		{"p:e vfs_read s=+0(%si):ustring", true, true},
		{"r4:e vfs_read", true, true},
		{"p:e vfs_read%return", true, true},
	} {
		for _, k := range []struct {
			kernel string
			want   bool
		}{{"6.1", tc.on61}, {"6.12", tc.on612}} {
			_, err := Parser{Features: features(t, k.kernel), Arch: "amd64"}.Parse(tc.src)
			if (err == nil) != k.want {
				t.Errorf("%s: Parse(%q) = %v, want accepted=%v", k.kernel, tc.src, err, k.want)
			}
			var se *SyntaxError
			if err != nil && errors.As(err, &se) && !k.want && se.Hint == "" && !strings.Contains(se.Msg, "only") {
				t.Errorf("%s: %q refused without saying the kernel lacks the feature: %+v", k.kernel, tc.src, se)
			}
		}
	}
}

// TestKernelCaretRealigned: the kernel's caret, measured in its re-joined command, lands under
// the same character of the user's text, including in a head ftctl rewrote.
func TestKernelCaretRealigned(t *testing.T) {
	for _, kernel := range []string{"6.1", "6.12"} {
		entries := tracefs.ParseErrorLog(readFixture(t, kernel, "error_log.kprobe"))
		if len(entries) == 0 {
			t.Fatalf("%s: no error_log entry in the fixture", kernel)
		}
		e := entries[len(entries)-1]
		// The fixture is the kernel's answer to "p:fty vfs_read %zz"; say the user typed it with
		// more spaces and without a group, and ftctl wrote it with group "kprobes" (what the
		// kernel used): the caret must go under the user's "%zz".
		user := "p:fty   vfs_read\t %zz"
		d, err := Parser{Features: AllFeatures, Arch: "riscv64"}.Parse(user)
		if err != nil {
			t.Fatal(err)
		}
		w := d.Line("", "fty")
		if w.Text != e.Command {
			t.Fatalf("%s: wrote %q, the kernel's command is %q", kernel, w.Text, e.Command)
		}
		kd, ok := w.Diagnose(entries)
		if !ok || kd.Pos != strings.Index(user, "%zz") || kd.Message != "Invalid register name" {
			t.Errorf("%s: diagnosis %+v, want caret at %d", kernel, kd, strings.Index(user, "%zz"))
		}
	}
	// Head rewritten: user "p vfs_read", written "p:ftctl/x vfs_read"; a caret on the event
	// part maps to the end of the user's head, one on the place to the user's place.
	d, _ := Parser{Features: AllFeatures}.Parse("p  vfs_read")
	w := d.Line("ftctl", "x")
	if got := w.UserPos(strings.Index(w.Text, "x ")); got != 1 {
		t.Errorf("event caret -> %d, want 1", got)
	}
	if got := w.UserPos(strings.Index(w.Text, "vfs_read")); got != 3 {
		t.Errorf("place caret -> %d, want 3", got)
	}
	d, _ = Parser{Features: AllFeatures}.Parse("p:g/ev vfs_read")
	w = d.Line("g", "ev")
	if got := w.UserPos(strings.Index(w.Text, "ev")); got != 4 {
		t.Errorf("event caret -> %d, want 4", got)
	}
	if got := w.UserPos(len(w.Text) + 1); got != len("p:g/ev vfs_read")+1 {
		t.Errorf("past-the-end caret -> %d", got)
	}
}

func TestCaret(t *testing.T) {
	got := Caret("  ", "p:é x\x1b", 5)
	want := "  p:é x?\n      ^"
	if got != want {
		t.Errorf("Caret = %q, want %q", got, want)
	}
}

// FuzzParse: no panics; whatever parses formats to text that parses to the same definition,
// and what ftctl writes to the kernel (Line: the user's words with the group and event put in
// the head) parses back to the definition that was typed, in the group and event written.
func FuzzParse(f *testing.F) {
	for _, s := range []string{
		"p:myopen do_sys_openat2 dfd=%di filename=+0(%si):string", "r4:g/e vfs_read%return $retval",
		"p vfs_read count pos", "p:e vfs_read x=-u8(+0x10(%sp)):b3@2/16 y=@jiffies+8:x64 z=\\-1",
		"-:g/e", "p:e vfs_read a=+0(%si):u8[4] $comm $stack $stack2 $arg1 s=\\\"x\"", "p 0x10",
		"p:g/ m:f+0x4 $arg* x=$retval->a.b", "p:e f x=+0(%di):%pd",
		"f:g/e vfs_read count $arg2 x=$retval", "f8 vfs_rea*%return $retval:s64", "t:g/ sched_switch prev->pid $arg*",
		"e:g/e sched.sched_switch p=$prev_pid:x32 c=$comm n=+0($next_comm):string if prev_pid == 0 && next_pid > 1",
		"e10 a/b", "fx:g/e f", "t s x=\\1",
	} {
		f.Add(s)
	}
	p := Parser{Features: AllFeatures, Arch: "amd64"}
	f.Fuzz(func(t *testing.T, src string) {
		d, err := p.Parse(src)
		if err != nil {
			var se *SyntaxError
			if !errors.As(err, &se) || se.Pos < 0 || se.Pos > len(src)+1 {
				t.Fatalf("Parse(%q): bad error %#v", src, err)
			}
			return
		}
		text := d.String()
		d2, err := p.Parse(text)
		if err != nil {
			t.Fatalf("Parse(%q) ok, its format %q does not parse: %v", src, text, err)
		}
		if !reflect.DeepEqual(d.Args, d2.Args) || d.Kind != d2.Kind || d.Group != d2.Group ||
			d.Event != d2.Event || d.Place() != d2.Place() || d.MaxActive != d2.MaxActive {
			t.Fatalf("round trip changed the definition:\n%q\n%q\n%#v\n%#v", src, text, d, d2)
		}
		if d2.String() != text {
			t.Fatalf("format not stable: %q then %q", text, d2.String())
		}
		for _, ge := range [][2]string{{d.Group, d.Event}, {"ftctl", d.Event}, {"ftctl_1_0badcafe", "ev"}} {
			if d.Kind == Delete {
				break
			}
			w, err := d.WriteLine(ge[0], ge[1])
			var se *SyntaxError
			if errors.As(err, &se) && se.Pos >= 0 && se.Pos <= len(src)+1 && len(d.Line(ge[0], ge[1]).Text) > MaxLineLen {
				continue // refused before writing: the head ftctl writes makes the line too long
			} else if err != nil {
				t.Fatalf("WriteLine(%q, %q) of %q: %v", ge[0], ge[1], src, err)
			}
			d3, err := p.Parse(w.Text)
			if err != nil {
				t.Fatalf("Parse(%q) ok, what ftctl writes, %q, does not parse: %v", src, w.Text, err)
			}
			if !reflect.DeepEqual(d.Args, d3.Args) || d.Kind != d3.Kind || d3.Group != ge[0] || d3.Event != ge[1] ||
				d.Place() != d3.Place() || d.MaxActive != d3.MaxActive || d3.String() != d.WithGroup(ge[0]).withEvent(ge[1]).String() {
				t.Fatalf("what ftctl writes is not what was typed:\n%q\n%q\n%#v\n%#v", src, w.Text, d, d3)
			}
		}
	})
}

func (d *Definition) withEvent(event string) *Definition {
	c := *d
	c.Event = event
	return &c
}

// The group and event ftctl puts in the head can make the line longer than the kernel takes
// (found by FuzzParse): refused before writing, the caret where the kernel's limit falls.
func TestWriteLineTooLong(t *testing.T) {
	p := Parser{Features: AllFeatures, Arch: "amd64"}
	src := "p " + strings.Repeat("a", MaxLineLen-2)
	d, err := p.Parse(src)
	if err != nil {
		t.Fatal(err)
	}
	if w, err := d.WriteLine("", ""); err != nil || w.Text != src {
		t.Fatalf("as typed: %v %v", w, err)
	}
	_, err = d.WriteLine("ftctl", "x")
	var se *SyntaxError
	if !errors.As(err, &se) || !strings.Contains(se.Msg, "too long") || se.Pos != MaxLineLen-len("p:ftctl/x ")+2 || se.Source != src {
		t.Fatalf("WriteLine = %#v", err)
	}
}
