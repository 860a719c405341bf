package eventfilter

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ftctl/ftctl/tracefs"
)

// formatFixture reads an event's format captured from a VM kernel (vm/fixtures.sh).
func formatFixture(t testing.TB, kernel, system, event string) *Fields {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "tracefs", "testdata", kernel, "format."+system+"."+event))
	if err != nil {
		t.Fatal(err)
	}
	f, err := tracefs.ParseFormat(system, string(b))
	if err != nil {
		t.Fatal(err)
	}
	return FieldsOf(f)
}

func TestFieldKinds(t *testing.T) {
	for _, tc := range []struct {
		kernel, event, field string
		kind                 FieldKind
		signed               bool
	}{
		{"6.1", "sched.sched_switch", "prev_comm", FieldString, true},
		{"6.12", "sched.sched_switch", "prev_comm", FieldString, false},
		{"6.12", "sched.sched_switch", "prev_pid", FieldNumber, true},
		{"6.12", "sched.sched_switch", "prev_state", FieldNumber, true},
		{"6.1", "sched.sched_process_exec", "filename", FieldString, true},
		{"6.12", "sched.sched_process_exec", "filename", FieldString, false},
		{"6.12", "syscalls.sys_enter_openat", "filename", FieldString, false}, // const char *
		{"6.12", "syscalls.sys_enter_openat", "dfd", FieldNumber, false},      // syscall args are unsigned longs
		{"6.12", "rcu.rcu_utilization", "s", FieldString, false},
		{"6.12", "ipi.ipi_send_cpumask", "cpumask", FieldCPUMask, false},
		{"6.12", "ftctl.fo", "path", FieldString, true},
		{"6.12", "ftctl.fo", "dfd", FieldNumber, false},
		{"6.12", "ftctl.ro", "ret", FieldNumber, true},
		{"6.12", "workqueue.workqueue_queue_work", "cpu", FieldNumber, true}, // the event's own, before the generic cpu
		{"6.12", "sched.sched_switch", "cpu", FieldCPU, true},
		{"6.12", "sched.sched_switch", "COMM", FieldString, false},
		{"6.12", "sched.sched_switch", "common_pid", FieldNumber, true},
	} {
		sys, ev, _ := strings.Cut(tc.event, ".")
		f, ok := formatFixture(t, tc.kernel, sys, ev).Lookup(tc.field)
		if !ok || f.Kind != tc.kind || f.Signed != tc.signed {
			t.Errorf("%s %s %s: %+v %v, want kind %d signed %v", tc.kernel, tc.event, tc.field, f, ok, tc.kind, tc.signed)
		}
	}
}

// TestCheck: the checker's verdicts and the kernel's words and carets. The kernel
// positions were seen in the error_log of both VM kernels (vmtest TestEventFilterCorpus runs
// the same kind of corpus there).
func TestCheck(t *testing.T) {
	for _, tc := range []struct {
		event  string // SYSTEM.EVENT of a fixture
		filter string
		msg    string // "" when accepted
		pos    int    // ftctl's caret
		kpos   int    // the kernel's caret
		detail string // part of the detail or hint
	}{
		{"sched.sched_switch", "prev_pid == 1", "", 0, 0, ""},
		{"sched.sched_switch", "prev_pid==1||next_pid==1", "", 0, 0, ""},
		{"sched.sched_switch", "common_pid == 1 && !(prev_pid == 2 || next_pid == 3)", "", 0, 0, ""},
		{"sched.sched_switch", `prev_comm ~ "ba*"`, "", 0, 0, ""},
		{"sched.sched_switch", `prev_comm == 'sh'`, "", 0, 0, ""},
		{"sched.sched_switch", `prev_comm.ustring == "a"`, "", 0, 0, ""},
		{"sched.sched_switch", "prev_pid & 1", "", 0, 0, ""},
		{"sched.sched_switch", "prev_pid == -1", "", 0, 0, ""},
		{"sched.sched_switch", "prev_pid == 010", "", 0, 0, ""},
		{"sched.sched_switch", "prev_pid == 0x1F", "", 0, 0, ""},
		{"sched.sched_switch", "prev_state == -1", "", 0, 0, ""},
		{"sched.sched_switch", "cpu == 0 && CPU != 1 && common_cpu < 2", "", 0, 0, ""},
		{"sched.sched_switch", `comm == "sh" || COMM ~ "k*"`, "", 0, 0, ""},
		{"sched.sched_switch", "prev_pid == 1   ", "", 0, 0, ""},
		{"sched.sched_switch", "((prev_pid == 1))", "", 0, 0, ""},
		{"sched.sched_switch", "!!prev_pid != 1", "", 0, 0, ""},
		{"sched.sched_switch", "prev_state.function == schedule", "", 0, 0, ""}, // the symbol is the kernel's to judge
		{"sched.sched_switch", "common_cpu & CPUS{0-1}", "", 0, 0, ""},          // the list too
		{"sched.sched_switch", "prev_pid == CPUS{0}", "", 0, 0, ""},
		{"sched.sched_process_exec", `filename ~ "/bin/*"`, "", 0, 0, ""},
		{"syscalls.sys_enter_openat", `filename.ustring ~ "/etc/*"`, "", 0, 0, ""},
		{"ipi.ipi_send_cpumask", "cpumask & CPUS{1}", "", 0, 0, ""},
		{"ftctl.fo", `path ~ "/etc/*" && dfd == 0xffffff9c`, "", 0, 0, ""},
		{"ftctl.fo", "__probe_ip.function == do_sys_openat2", "", 0, 0, ""},
		{"ftctl.ro", "ret < 0", "", 0, 0, ""},

		{"sched.sched_switch", "prev_pidd == 1", filtFieldNotFound, 0, 10, "did you mean prev_pid?"},
		{"sched.sched_switch", "   prev_pidd == 1", filtFieldNotFound, 3, 13, "prev_comm, prev_pid"},
		{"sched.sched_switch", "prev_pid == 1 && prev_pidd == 2", filtFieldNotFound, 17, 27, ""},
		{"sched.sched_switch", `common_comm == "sh"`, filtFieldNotFound, 0, 12, ""},
		{"sched.sched_switch", "stacktrace == 1", filtFieldNotFound, 0, 11, ""},
		{"sched.sched_switch", "prev_pid = 1", filtInvalidOp, 9, 10, "equality is =="},
		{"sched.sched_switch", "prev_pid && 1", filtInvalidValue, 10, 11, ""},
		{"sched.sched_switch", `prev_pid == "x"`, filtExpectDigit, 12, 13, "is a number"},
		{"sched.sched_switch", "prev_comm == 1", filtExpectString, 13, 14, `prev_comm == "bash"`},
		{"sched.sched_process_exec", "filename == 5", filtExpectString, 12, 13, ""},
		{"sched.sched_switch", `prev_comm < "a"`, filtIllegalFieldOp, 10, 13, ""},
		{"sched.sched_switch", "prev_pid ~ 1", filtIllegalFieldOp, 9, 12, ""},
		{"sched.sched_switch", "prev_pid == 1 ||", filtInvalidFilter, 14, 16, ""},
		{"sched.sched_switch", "prev_pid == 1 &&", filtInvalidFilter, 14, 16, ""},
		{"sched.sched_switch", "prev_pid == 1 next_pid == 2", filtTooManyPreds, 14, 14, ""},
		{"sched.sched_switch", "prev_pid == 1.5", filtTooManyPreds, 13, 13, ""},
		{"sched.sched_switch", "(prev_pid == 1", filtTooManyOpen, 0, 0, ""},
		{"sched.sched_switch", "prev_pid == 1)", filtTooManyClose, 13, 13, ""},
		{"sched.sched_switch", `prev_comm == "abc`, filtMissingQuote, 13, 13, ""},
		{"sched.sched_switch", "== 1", filtErrno, 0, 0, "expected a field name"},
		{"sched.sched_switch", "()", filtErrno, 2, 0, ""},
		{"sched.sched_switch", "!", filtNoFilter, 1, 1, ""},
		{"sched.sched_switch", "prev_pid == abc", filtInvalidValue, 12, 13, ""},
		{"sched.sched_switch", "prev_pid == +1", filtInvalidValue, 12, 13, ""},
		{"sched.sched_switch", "prev_pid == 0xzz", filtIllegalIntval, 12, 13, ""},
		{"sched.sched_switch", "prev_pid != 08", filtIllegalIntval, 12, 13, ""},
		{"sched.sched_switch", "prev_pid == 99999999999999999999", filtIllegalIntval, 12, 13, ""},
		{"sched.sched_switch", "prev_pid == 9223372036854775808", filtIllegalIntval, 12, 13, ""},
		{"sched.sched_switch", "prev_pid == -9223372036854775808", "", 0, 0, ""},
		{"sched.sched_switch", "prev_pid == 1234567890123456789012345", filtOperandTooLong, 12, 38, ""},
		{"ftctl.fo", "dfd == -100", filtIllegalIntval, 7, 8, "is unsigned"},
		{"syscalls.sys_enter_openat", "dfd == -100", filtIllegalIntval, 7, 8, "is unsigned"},
		{"sched.sched_switch", "prev_pid.function == schedule", filtIllegalFieldOp, 0, 22, "size of a long"},
		{"ftctl.fo", "__probe_ip.function < do_sys_openat2", filtInvalidOp, 20, 23, ""},
		{"ftctl.fo", "__probe_ip.function == 0xzz", filtInvalidValue, 23, 28, ""},
		{"sched.sched_switch", `prev_comm == CPUS{0}`, filtIllegalFieldOp, 0, 14, ""},
		{"sched.sched_switch", "prev_pid < CPUS{0}", filtIllegalFieldOp, 9, 12, ""},
		{"sched.sched_switch", "prev_pid & CPUS0}", filtMissingBraceO, 15, 17, ""},
		{"sched.sched_switch", "prev_pid & CPUS{0", filtMissingBraceC, 15, 18, ""},
		{"sched.sched_switch", "prev_pid & CPUS{}", filtInvalidCPUList, 15, 17, ""},
		{"sched.sched_switch", `prev_comm == "` + strings.Repeat("x", 256) + `"`, filtOperandTooLong, 13, 271, ""},
		{"sched.sched_switch", `prev_comm == "` + strings.Repeat("x", 255) + `"`, "", 0, 0, ""},
	} {
		sys, ev, _ := strings.Cut(tc.event, ".")
		for _, kernel := range []string{"6.1", "6.12"} {
			if _, err := os.Stat(filepath.Join("..", "tracefs", "testdata", kernel, "format."+tc.event)); err != nil {
				continue // ipi_send_cpumask came with 6.4
			}
			_, err := Check(tc.filter, formatFixture(t, kernel, sys, ev))
			if tc.msg == "" {
				if err != nil {
					t.Errorf("%s %s %q: %v", kernel, tc.event, tc.filter, err)
				}
				continue
			}
			var fe *Error
			if !errors.As(err, &fe) {
				t.Errorf("%s %s %q: %v, want an Error %q", kernel, tc.event, tc.filter, err, tc.msg)
				continue
			}
			if fe.Msg != tc.msg || fe.Pos != tc.pos || fe.KernelPos != tc.kpos || fe.Source != tc.filter ||
				!strings.Contains(fe.Detail+" "+fe.Hint, tc.detail) {
				t.Errorf("%s %s %q:\n got %q pos %d kernel %d detail %q hint %q\nwant %q pos %d kernel %d detail ~%q",
					kernel, tc.event, tc.filter, fe.Msg, fe.Pos, fe.KernelPos, fe.Detail, fe.Hint, tc.msg, tc.pos, tc.kpos, tc.detail)
			}
		}
	}
}

// TestParse: the syntax alone, before any event is known; what depends on a field's
// type passes.
func TestParse(t *testing.T) {
	for _, tc := range []struct {
		filter string
		msg    string
	}{
		{"nosuchfield == 1", ""},
		{`prev_pid == "x"`, ""},
		{"prev_comm == 1", ""},
		{"a == 1 && (b ~ \"x*\" || !c != -2)", ""},
		{"x.function == foo", ""},
		{"vfs_read", filtInvalidOp},
		{"ext4_*", filtInvalidOp},
		{"prev_pid == 1 ||", filtInvalidFilter},
		{"", "empty filter"},
		{"   ", "empty filter"},
		{"0", `"0" clears an event's filter`},
		{" 0 \xa0", `"0" clears an event's filter`},
		{"\t\xa0", "empty filter"},
		{"a == 1 \xa0 ", ""},
		{"a == 1\nb == 2", "a filter is a single line"},
		{"a == \x00", "a filter is a single line"},
		{"a == " + strings.Repeat("1", MaxLen), "filter is too long: the kernel takes at most 4094 bytes"},
	} {
		f, err := Parse(tc.filter)
		var fe *Error
		switch {
		case tc.msg == "" && err != nil:
			t.Errorf("%q: %v", tc.filter, err)
		case tc.msg == "":
			if len(f.Preds) == 0 {
				t.Errorf("%q: no predicates", tc.filter)
			}
		case !errors.As(err, &fe) || fe.Msg != tc.msg:
			t.Errorf("%q: %v, want %q", tc.filter, err, tc.msg)
		case fe.Event != "":
			t.Errorf("%q: a syntax error names event %q", tc.filter, fe.Event)
		}
	}
	f, err := Parse(`prev_pid == 1 || (prev_comm.ustring ~ "sh*" && x.function != 0x10)`)
	if err != nil {
		t.Fatal(err)
	}
	want := []Predicate{
		{Field: "prev_pid", Op: "==", Value: "1", Start: 0, End: 13},
		{Field: "prev_comm", Ustring: true, Op: "~", Value: `"sh*"`, Start: 18, End: 43},
		{Field: "x", Function: true, Op: "!=", Value: "0x10", Start: 47, End: 65},
	}
	if len(f.Preds) != len(want) {
		t.Fatalf("preds %+v", f.Preds)
	}
	for i := range want {
		if f.Preds[i] != want[i] {
			t.Errorf("pred %d: %+v, want %+v", i, f.Preds[i], want[i])
		}
	}
}

func TestRejected(t *testing.T) {
	log := tracefs.ParseErrorLog(`[   15.258504] event filter parse error: error: Function not found
  Command: __probe_ip.function == do_sys_openat3
                                                 ^
`)
	terr := &tracefs.Error{Op: "write", Path: "/t/instances/x/events/ftctl/fo/filter", Class: tracefs.ErrForbidden, KernelLog: log}
	err := Rejected("ftctl:fo", "__probe_ip.function == do_sys_openat3  ", terr)
	var re *RejectedError
	if !errors.As(err, &re) || re.Diagnosis == nil {
		t.Fatalf("%#v", err)
	}
	if re.Diagnosis.Message != "Function not found" || re.Diagnosis.Pos != 38 || re.Diagnosis.Source != "__probe_ip.function == do_sys_openat3  " {
		t.Errorf("%+v", re.Diagnosis)
	}
	if !errors.Is(err, tracefs.ErrRejected) {
		t.Error("a rejected filter is not ErrRejected (exit 3), whatever the errno")
	}
	// Another text's entry is not this one's; a permission error stays one.
	other := &tracefs.Error{Op: "write", Class: tracefs.ErrRejected, KernelLog: log}
	if err := Rejected("ftctl:fo", "x == 1", other); !errors.As(err, &re) || re.Diagnosis != nil {
		t.Errorf("%#v", err)
	}
	perm := &tracefs.Error{Op: "open", Class: tracefs.ErrPermission}
	if err := Rejected("ftctl:fo", "x == 1", perm); err != error(perm) {
		t.Errorf("%#v", err)
	}
}

// FuzzEventFilter: no panics; an error's caret lies within the text (or just past it); what
// the checker accepts with an event's fields, the syntax check accepts too; predicates lie in
// the text, in order.
func FuzzEventFilter(f *testing.F) {
	for _, s := range []string{
		"prev_pid == 1", `prev_comm ~ "ba*" && !(next_pid != 0x10 || cpu < 2)`, "prev_pid == 1 ||",
		"(a", "a)", `x == "`, "!", "()", "prev_state.function == schedule", "cpu & CPUS{0-3}",
		"prev_pid & CPUS{", "a.ustring.function == 1", "-", "prev_pid == -", "\xa0prev_pid\xa0==\xa01",
	} {
		f.Add(s)
	}
	fields := formatFixture(f, "6.12", "sched", "sched_switch")
	f.Fuzz(func(t *testing.T, src string) {
		checked, cerr := Check(src, fields)
		parsed, perr := Parse(src)
		for _, err := range []error{cerr, perr} {
			if err == nil {
				continue
			}
			var fe *Error
			if !errors.As(err, &fe) || fe.Pos < 0 || fe.Pos > len(src) || fe.Source != src || fe.Msg == "" {
				t.Fatalf("%q: bad error %#v", src, err)
			}
		}
		if cerr == nil && perr != nil {
			t.Fatalf("%q: accepted for sched_switch, refused by the syntax check: %v", src, perr)
		}
		if perr != nil {
			return
		}
		if len(parsed.Preds) == 0 {
			t.Fatalf("%q: accepted without a predicate", src)
		}
		end := 0
		for _, p := range parsed.Preds {
			if p.Start < end || p.End > len(src) || p.Start >= p.End || !strings.HasPrefix(src[p.Start:], p.Field) {
				t.Fatalf("%q: predicate %+v out of place", src, p)
			}
			end = p.End
		}
		if cerr == nil && len(checked.Preds) != len(parsed.Preds) {
			t.Fatalf("%q: %d predicates checked, %d parsed", src, len(checked.Preds), len(parsed.Preds))
		}
	})
}
