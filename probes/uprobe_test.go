package probes

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

func uprobeParser(t testing.TB) Parser {
	return Parser{Features: AllFeatures, Arch: "amd64", User: NewUserSpace()}
}

// What ftctl writes to uprobe_events: the symbol resolved to its file offset, the path absolute.
func TestParseUprobe(t *testing.T) {
	abs, _ := filepath.Abs("testdata/elf")
	p := uprobeParser(t)
	for _, tc := range []struct{ src, line, place string }{
		{"p:g/add testdata/elf/exec.elf:ftctl_add a=%di b=%si",
			"p:g/add " + abs + "/exec.elf:0x100c a=%di b=%si", "testdata/elf/exec.elf:ftctl_add"},
		{"r:add testdata/elf/exec.elf:ftctl_add ret=$retval",
			"r:ftctl/add " + abs + "/exec.elf:0x100c ret=$retval", "testdata/elf/exec.elf:ftctl_add"},
		{"p testdata/elf/exec.elf:ftctl_add+4 s=+0(%di):string c=$comm x=@+0x1000:u8 y=+8($stack):x64 $stack1",
			"p:ftctl/ " + abs + "/exec.elf:0x1010 s=+0(%di):string c=$comm x=@+0x1000:u8 y=+8($stack):x64 $stack1", "testdata/elf/exec.elf:ftctl_add+4"},
		{"p:e " + abs + "/lib.so:0x103f%return(0x10)", "p:ftctl/e " + abs + "/lib.so:0x103f%return(0x10)", abs + "/lib.so:0x103f%return(0x10)"},
		{"p:e testdata/elf/lib.so:4159", "p:ftctl/e " + abs + "/lib.so:0x103f", "testdata/elf/lib.so:0x103f"},
		{"p:e testdata/elf/gen.sh:0x10", "p:ftctl/e " + abs + "/gen.sh:0x10", "testdata/elf/gen.sh:0x10"},                       // any regular file, at an offset
		{"p:e testdata/elf/lib.so:0x10 $stack9999", "p:ftctl/e " + abs + "/lib.so:0x10 $stack9999", "testdata/elf/lib.so:0x10"}, // no PARAM_MAX_STACK for user stacks (seen: both kernels)
	} {
		d, err := p.Parse(tc.src)
		if err != nil {
			t.Errorf("Parse(%q): %v", tc.src, err)
			continue
		}
		g := d.Group
		if g == "" {
			g = DefaultGroup
		}
		if w := d.Line(g, d.Event); w.Text != tc.line || d.Place() != tc.place || !d.IsUprobe() {
			t.Errorf("Parse(%q):\n line %q\n want %q\n place %q want %q", tc.src, w.Text, tc.line, d.Place(), tc.place)
		}
	}
	d, _ := p.Parse("p testdata/elf/exec.elf:ftctl_add")
	if u := d.Uprobe; u.Func == nil || u.Func.Name != "ftctl_add" || u.Segment == nil || u.Segment.Index != 1 || u.Segment.Flags != "r-x" {
		t.Errorf("resolved %+v", u)
	}
}

// Refused before the kernel, the caret under the offending text.
func TestParseUprobeErrors(t *testing.T) {
	exe, err := os.Executable() // a Go binary
	if err != nil {
		t.Fatal(err)
	}
	p := uprobeParser(t)
	for _, tc := range []struct {
		src, msg string
		pos      int
	}{
		{"p testdata/elf/nope:0x10", "Failed to find the given file", 2},
		{"p testdata/elf:0x10", "Not a regular file", 2},
		{"p testdata/elf/exec.elf:ftctl_ad", "No such function symbol", 24},
		{"p testdata/elf/exec.elf:ftctl_add+99", "past the end", 34},
		{"p testdata/elf/exec.elf:0x1z", "Invalid uprobe offset", 24},
		{"p testdata/elf/exec.elf:", "Invalid uprobe offset", 24},
		{"p testdata/elf/exec.elf:0x10%ret", "Invalid probed address suffix", 28},
		{"p testdata/elf/exec.elf:0x10(0x4", "Reference counter brace is not closed", 32},
		{"p testdata/elf/exec.elf:0x10(0x4)x", "wrong suffix", 33},
		{"p testdata/elf/gen.sh:main", "Cannot resolve the symbol", 22},
		{"r4:e testdata/elf/exec.elf:0x10", "no maxactive", 1},
		{"r:e testdata/elf/exec.elf:ftctl_add+4", "function entry", 36},
		{"p testdata/elf/exec.elf:0x10 x=@jiffies", "Symbol is not available with uprobe", 31},
		{"p testdata/elf/exec.elf:0x10 x=@+zz", "Invalid file offset value", 31},
		{"p testdata/elf/exec.elf:0x10 x=@", "Symbol is not available with uprobe", 31},                   // seen: both kernels
		{"p testdata/elf/exec.elf:0x10 x=%ip:symbol", "Unknown type is specified", 35},                    // 6.12's refusal, on purpose on 6.1 too
		{"p testdata/elf/exec.elf:0x10 x=$stack99999999999999999999", "Invalid $-variable specified", 31}, // past unsigned long
		{"p testdata/elf/exec.elf:0x10 $arg1", "$arg* can be used only on function entry or exit", 29},
		{"p testdata/elf/exec.elf:0x10 count", "BTF is not available", 29},
		{"r testdata/elf/exec.elf:0x10 $retval->x", "Invalid $-variable", 29},
		{"p testdata/elf/exec.elf:0x10 $retval", "$retval is not available on probe", 29},
		{"p testdata/elf/exec.elf:0x10 x=%zz", "Invalid register name", 31},
		{"p testdata/elf/exec.elf:0x10 x=%di:string", "String accepts only memory argument", 35},
		{"r " + exe + ":0x10", "return probe on a Go binary", 0},
		{"p " + exe + ":0x10%return", "return probe on a Go binary", 0},
	} {
		_, err := p.Parse(tc.src)
		var se *SyntaxError
		if !errors.As(err, &se) || !strings.Contains(se.Msg, tc.msg) || se.Pos != tc.pos {
			t.Errorf("Parse(%q) = %v (at %d); want %q at %d", tc.src, err, posOf(se), tc.msg, tc.pos)
		}
	}
	// --force: the Go return probe is the user's call.
	p.Force = true
	if d, err := p.Parse("r " + exe + ":0x10"); err != nil || len(d.Forced) != 1 || !strings.Contains(d.Forced[0], "Go runtime") {
		t.Errorf("--force: %v %v", err, d)
	}
	// Entry probes on Go binaries are fine.
	p.Force = false
	if _, err := p.Parse("p " + exe + ":0x10"); err != nil {
		t.Errorf("entry probe on a Go binary: %v", err)
	}
	// 6.1's wording where the README announces no BTF arguments.
	p.Features.BTFArgs = false
	for src, msg := range map[string]string{
		"p testdata/elf/exec.elf:0x10 $arg1": "Invalid $-variable specified",
		"p testdata/elf/exec.elf:0x10 count": "Invalid fetch argument",
	} {
		_, err := p.Parse(src)
		var se *SyntaxError
		if !errors.As(err, &se) || se.Msg != msg {
			t.Errorf("Parse(%q) = %v; want %q", src, err, msg)
		}
	}
}

func posOf(se *SyntaxError) int {
	if se == nil {
		return -1
	}
	return se.Pos
}

// Without a UserSpace (the console's editor, at each key) the place is grammar only; the
// symbol is resolved when the probe is added (ResolveUprobe), with the same checks.
func TestResolveUprobeLater(t *testing.T) {
	p := Parser{Features: AllFeatures, Arch: "amd64"}
	d, err := p.Parse("p:e testdata/elf/exec.elf:ftctl_add a=%di")
	if err != nil {
		t.Fatal(err)
	}
	if d.Uprobe.Resolved || !strings.Contains(d.Line("g", "e").Text, ":ftctl_add") {
		t.Fatalf("resolved without IO: %+v", d.Uprobe)
	}
	if err := d.ResolveUprobe(NewUserSpace()); err != nil || !strings.HasSuffix(d.Line("g", "e").Text, "/exec.elf:0x100c a=%di") {
		t.Fatalf("ResolveUprobe: %v %q", err, d.Line("g", "e").Text)
	}
	d, _ = p.Parse("p:e testdata/elf/exec.elf:nope")
	var se *SyntaxError
	if err := d.ResolveUprobe(NewUserSpace()); !errors.As(err, &se) || se.Pos != 26 {
		t.Fatalf("ResolveUprobe(nope) = %v", err)
	}
}

// FuzzParseUprobe: the uprobe grammar; no panics, a caret within the text, and what parses
// formats to text that parses to the same definition.
func FuzzParseUprobe(f *testing.F) {
	for _, s := range []string{
		"p:g/add testdata/elf/exec.elf:ftctl_add a=%di b=%si", "r testdata/elf/lib.so:0x103f $retval",
		"p testdata/elf/exec.elf:ftctl_add+4 s=+0(%di):string x=@+0x1000:u8", "p /x:0x10%return(0x4)",
		"p /bin/go:main.(*T).Run+2 $stack1", "p /a:b:0x10", "r /a/b:0x10 x=+u0($retval):u32",
		"r4:g/e /a/b:0x10 x=$retval->a y=%ip:symbol", "r /a/b:0x10 x=$retvalz:symstr",
	} {
		f.Add(s)
	}
	p := uprobeParser(f)
	pure := Parser{Features: AllFeatures, Arch: "amd64"}
	forced := pure
	forced.Force = true // --force: what it passes must format and parse back too
	f.Fuzz(func(t *testing.T, src string) {
		for _, p := range []Parser{p, pure, forced} {
			d, err := p.Parse(src)
			if err != nil {
				var se *SyntaxError
				if !errors.As(err, &se) || se.Pos < 0 || se.Pos > len(src)+1 {
					t.Fatalf("Parse(%q): bad error %#v", src, err)
				}
				continue
			}
			text := d.String()
			d2, err := (Parser{Features: AllFeatures, Arch: "amd64", Force: p.Force}).Parse(text)
			if err != nil {
				t.Fatalf("Parse(%q) ok, its format %q does not parse: %v", src, text, err)
			}
			if !reflect.DeepEqual(d.Args, d2.Args) || d.Place() != d2.Place() || d.IsUprobe() != d2.IsUprobe() {
				t.Fatalf("round trip changed the definition:\n%q\n%q", src, text)
			}
			if d.Kind != Delete {
				d.Line("ftctl", "e")
			}
		}
	})
}

// probe list shows a uprobe's offset as the function holding it, read back from the ELF file,
// and the bare offset when the file cannot tell.
func TestListUprobe(t *testing.T) {
	abs, _ := filepath.Abs("testdata/elf/exec.elf")
	all := Parser{Features: AllFeatures, Arch: "amd64"}
	for _, tc := range []struct {
		line, place, symbol, segment string
		symOff                       uint64
	}{
		{"p:ftctl/e " + abs + ":0x0000000000001010 x=%di", abs + ":ftctl_add+4", "ftctl_add", "PT_LOAD[1] r-x vaddr 0x401000 offset 0x1000", 4},
		{"r:ftctl/e " + abs + ":0x000000000000100c", abs + ":ftctl_add", "ftctl_add", "PT_LOAD[1] r-x vaddr 0x401000 offset 0x1000", 0}, // the type says it returns
		{"p:ftctl/e /nonexistent/x:0x0000000000001010", "/nonexistent/x:0x1010", "", "", 0},
	} {
		d, err := all.Parse(tc.line)
		if err != nil {
			t.Fatal(err)
		}
		l := listUprobe(d.Uprobe, NewUserSpace())
		if l.Place != tc.place || l.Symbol != tc.symbol || l.SymOffset != tc.symOff || l.Segment != tc.segment {
			t.Errorf("%q: %+v", tc.line, l)
		}
	}
}

// TestUprobeForce: what ftctl refuses on uprobes although a kernel takes it (trace_uprobe.c,
// trace_probe.c of 6.1 and 6.12), refused with the reason and "--force", and passed with
// Parser.Force and a note; what the kernel refuses stays refused.
func TestUprobeForce(t *testing.T) {
	abs, _ := filepath.Abs("testdata/elf/exec.elf")
	for _, tc := range []struct {
		src      string
		fields   bool   // the README announces ->field (6.12)
		msg      string // without --force
		forceMsg string // with --force; "" passes
		note     string // what Definition.Forced says
	}{
		{"r4:g/e testdata/elf/exec.elf:ftctl_add", true, "uprobes take no maxactive", "", "ignores the maxactive of r4:g/e"},
		{"p:g/e testdata/elf/exec.elf:0x100c x=%ip:symbol", true, "Unknown type is specified", "", "symbol type of a uprobe"},
		{"p:g/e testdata/elf/exec.elf:0x100c x=%ip:symstr", false, "Unknown type is specified", "", "symstr type of a uprobe"},
		{"r:g/e testdata/elf/exec.elf:0x100c x=$retval->a", true, "Invalid $-variable specified", "", `ignores "->a"`},
		// 6.1 (no ->field in its README) refuses any $retval but $retval itself: forced too.
		{"r:g/e testdata/elf/exec.elf:0x100c x=$retval->a", false, "Invalid $-variable specified", "Invalid $-variable specified", ""},
		// an entry probe has no $retval at all (RETVAL_ON_PROBE comes first on 6.12)
		{"p:g/e testdata/elf/exec.elf:0x100c x=$retval->a", true, "$retval is not available on probe", "$retval is not available on probe", ""},
	} {
		for _, force := range []bool{false, true} {
			p := Parser{Features: AllFeatures, Arch: "amd64", User: NewUserSpace(), Force: force}
			p.Features.BTFFields = tc.fields
			d, err := p.Parse(tc.src)
			want := tc.msg
			if force {
				want = tc.forceMsg
			}
			var se *SyntaxError
			switch {
			case want == "" && err != nil:
				t.Errorf("force=%v Parse(%q): %v", force, tc.src, err)
			case want == "" && (len(d.Forced) != 1 || !strings.Contains(d.Forced[0], tc.note)):
				t.Errorf("force=%v Parse(%q): Forced %q, want %q", force, tc.src, d.Forced, tc.note)
			case want != "" && (!errors.As(err, &se) || se.Msg != want):
				t.Errorf("force=%v Parse(%q) = %v, want %q", force, tc.src, err, want)
			case want != "" && !force && tc.forceMsg == "" && !strings.Contains(se.Hint, "--force"):
				t.Errorf("Parse(%q): the hint does not name --force: %q", tc.src, se.Hint)
			}
		}
	}
	// r<N>: written as given; the kernel names the event itself, in group uprobes.
	p := Parser{Features: AllFeatures, Arch: "amd64", User: NewUserSpace(), Force: true}
	d, err := p.Parse("r4:g/e testdata/elf/exec.elf:ftctl_add ret=$retval")
	if err != nil {
		t.Fatal(err)
	}
	if w := d.Line("g", "e").Text; w != "r4:g/e "+abs+":0x100c ret=$retval" {
		t.Errorf("written %q", w)
	}
	if g, e, ok := d.KernelName(); !ok || g != "uprobes" || e != "p_exec_0x100c" {
		t.Errorf("KernelName = %q %q %v", g, e, ok)
	}
	for _, src := range []string{"r:g/e testdata/elf/exec.elf:ftctl_add", "r4:g/e vfs_read"} {
		p.User = nil
		if d, err := p.Parse(src); err != nil {
			t.Error(err)
		} else if _, _, ok := d.KernelName(); ok {
			t.Errorf("KernelName(%q): the kernel takes its name", src)
		}
	}
	// probe list parses what the kernel lists, forced or not.
	if _, err := (Parser{Features: AllFeatures, Force: true}).Parse("r:uprobes/p_exec_0x100c " + abs + ":0x000000000000100c x=$retval->a"); err != nil {
		t.Errorf("a listed line: %v", err)
	}
}
