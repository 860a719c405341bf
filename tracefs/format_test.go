package tracefs

import "testing"

// TestParseFormatMultiLinePrint: a TP_printk format holding "\n" is written with a real
// newline in the format file (6.1's mmap:exit_mmap, ras:aer_event): the print fmt goes on to
// the end of the file, not to the end of its first line.
func TestParseFormatMultiLinePrint(t *testing.T) {
	text := "name: exit_mmap\nID: 472\nformat:\n" +
		"\tfield:unsigned short common_type;\toffset:0;\tsize:2;\tsigned:0;\n" +
		"\tfield:struct maple_tree * mt;\toffset:8;\tsize:8;\tsigned:0;\n\n" +
		"print fmt: \"mt_mod %p, DESTROY\n\", REC->mt\n"
	f, err := ParseFormat("mmap", text)
	if err != nil {
		t.Fatal(err)
	}
	if want := "\"mt_mod %p, DESTROY\n\", REC->mt"; f.Print != want {
		t.Errorf("Print %q, want %q", f.Print, want)
	}
	if want := "mt_mod %p, DESTROY\n"; f.PrintFmt != want {
		t.Errorf("PrintFmt %q, want %q", f.PrintFmt, want)
	}
}

// A format's offsets and sizes are a trace.dat's to give (anyone's): negative ones, ones past
// a record, and arrays of a negative count are refused, so that no reader of a record slices
// by them (a negative size panicked in the stream's field decoder and in three other places).
func TestParseFormatFieldBounds(t *testing.T) {
	head := "name: x\nID: 7\nformat:\n\tfield:unsigned short common_type;\toffset:0;\tsize:2;\tsigned:0;\n"
	for _, c := range []struct {
		line string
		ok   bool
	}{
		{"\tfield:u32 a;\toffset:8;\tsize:4;\tsigned:0;", true},
		{"\tfield:char buf[];\toffset:16;\tsize:0;\tsigned:0;", true},
		{"\tfield:u32 a;\toffset:8;\tsize:-4;\tsigned:0;", false},
		{"\tfield:u32 a;\toffset:-8;\tsize:4;\tsigned:0;", false},
		{"\tfield:u32 a;\toffset:9223372036854775807;\tsize:1;\tsigned:0;", false},
		{"\tfield:u32 a;\toffset:8;\tsize:1048577;\tsigned:0;", false},
		{"\tfield:u32 a[-3];\toffset:8;\tsize:12;\tsigned:0;", false},
	} {
		_, err := ParseFormat("s", head+c.line+"\n\nprint fmt: \"\"\n")
		if (err == nil) != c.ok {
			t.Errorf("%q: %v", c.line, err)
		}
	}
}

// header_page's fields are checked against each other and, with Check, against the page: a
// timestamp at 5000 of a 4096-byte page panicked in the page parser.
func TestParsePageLayoutBounds(t *testing.T) {
	line := func(decl string, off, size string) string {
		return "\tfield: " + decl + ";\toffset:" + off + ";\tsize:" + size + ";\tsigned:0;\n"
	}
	kernel := line("u64 timestamp", "0", "8") + line("local_t commit", "8", "8") + line("int overwrite", "8", "1") + line("char data", "16", "4080")
	l, err := ParsePageLayout(kernel)
	if err != nil || l != DefaultPageLayout || l.Check(4096) != nil {
		t.Fatalf("the kernel's: %+v %v %v", l, err, l.Check(4096))
	}
	if err := l.Check(16); err == nil {
		t.Error("data at 16 of a page of 16 bytes: accepted")
	}
	for _, text := range []string{
		line("u64 timestamp", "5000", "8") + line("local_t commit", "8", "8") + line("char data", "16", "4080"),
		line("u64 timestamp", "4", "8") + line("local_t commit", "8", "8") + line("char data", "16", "4080"),
		line("u64 timestamp", "0", "4") + line("local_t commit", "8", "8") + line("char data", "16", "4080"),
		line("u64 timestamp", "0", "8") + line("local_t commit", "8", "2") + line("char data", "16", "4080"),
		line("u64 timestamp", "0", "8") + line("local_t commit", "12", "8") + line("char data", "16", "4080"),
		line("u64 timestamp", "-8", "8") + line("local_t commit", "8", "8") + line("char data", "16", "4080"),
		line("u64 timestamp", "0", "8") + line("local_t commit", "8", "8"),
	} {
		if l, err := ParsePageLayout(text); err == nil {
			t.Errorf("%q: %+v", text, l)
		}
	}
}
