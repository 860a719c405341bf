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
