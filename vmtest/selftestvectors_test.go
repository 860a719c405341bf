//go:build vmtest

package vmtest

import (
	_ "embed"
	"errors"
	"fmt"
	"regexp"
	"runtime"
	"strings"
	"testing"

	"github.com/ftctl/ftctl/probes"
	"github.com/ftctl/ftctl/tracefs"
)

//go:embed testdata/selftest-vectors.txt
var selftestVectors string

// selftestVector is one line of testdata/selftest-vectors.txt: a definition the kernel's own
// selftests expect it to refuse, with the caret position they expect.
type selftestVector struct {
	selftest string // kprobe, uprobe, fprobe, tprobe, eprobe
	requires []string
	def      string // the command, without '^'
	caret    int    // the selftest's caret: the byte offset of '^'
	name     string // the kernel's ERRORS name, as the selftest comments it
}

// ownVectors are not the selftests': definitions, in the same format, that pin what ftctl's
// parser assumes about the kernels where the selftests say nothing (where the kernel accepts
// one, ftctl must too). Not here: vfs_read+4 and +5, which only the kernel's text decides
// (seen: 6.1, built without IBT, refuses +4 and takes +5, 6.12 with IBT the reverse).
var ownVectors = `kprobe | - | p:^foo-1/bar vfs_read | ftctl: a group may hold '-' (is_good_system_name)
eprobe | - | e:^foo-1/bar syscalls.sys_enter_openat | ftctl: a group may hold '-'
eprobe | - | e ^a.1b | ftctl: an attached event's bad name, NO_EVENT_INFO or BAD_ATTACH_EVENT
eprobe | - | e ^foo.1/bar | ftctl: an attached event's bad group
eprobe | - | e:foo/bar syscalls/sys_enter_openat x=^$common_pid | ftctl: a common field is no field of the event's
eprobe | - | e:foo/bar syscalls/sys_enter_openat x=^$retval | ftctl: an event probe has no $retval
fprobe | - | f vfs_read r=^%di | ftctl: BAD_VAR, named
fprobe | - | f vfs_read x=+0(^%di) | ftctl: BAD_VAR, dereferenced
kprobe | amd64 | r ^vfs_read+2 | ftctl: BAD_RETPROBE inside the first instruction
eprobe | - | e:foo/bar syscalls/sys_enter_openat ^%ax | ftctl: BAD_VAR, an event probe reads no register
eprobe | - | e:foo/bar syscalls/sys_enter_openat ^arg=+0($foo) | ftctl: BAD_ATTACH_ARG or BAD_VAR inside a dereference
kprobe | amd64 | p ^vfs_read+1 | ftctl: BAD_INSN_BNDRY inside the first instruction of an ftrace-able function
kprobe | amd64 | p ^vfs_read+2 | ftctl: BAD_INSN_BNDRY
kprobe | btfargs | r vfs_read ^$arg* | ftctl: NOFENTRY_ARGS only where return probes take no $arg
`

func parseSelftestVectors(t *testing.T) []selftestVector {
	t.Helper()
	var vs []selftestVector
	for n, line := range strings.Split(selftestVectors+ownVectors, "\n") {
		if strings.TrimSpace(line) == "" || strings.HasPrefix(line, "#") {
			continue
		}
		f := strings.Split(line, " | ")
		if len(f) != 4 || strings.Count(f[2], "^") != 1 {
			t.Fatalf("selftest-vectors.txt:%d: want SELFTEST | REQUIRES | VECTOR (one '^') | NAME: %q", n+1, line)
		}
		v := selftestVector{selftest: f[0], def: strings.Replace(f[2], "^", "", 1), caret: strings.IndexByte(f[2], '^'), name: f[3]}
		if f[1] != "-" {
			v.requires = strings.Split(f[1], ",")
		}
		vs = append(vs, v)
	}
	return vs
}

// selftestMissing is why this kernel cannot run the vector as the selftest would ("" when it
// can): the file or the kind is absent, or a condition the selftest gates it on is false. Read
// from the kernel's files (the README's announcements, file presence), never its version.
func selftestMissing(t *testing.T, v selftestVector, f tracefs.Features, readme string) string {
	ft := f.Probe
	kind := map[string]bool{"kprobe": f.KprobeEvents, "uprobe": f.UprobeEvents}
	switch v.def[0] {
	case 'f':
		kind["fprobe"] = f.DynamicEvents && ft.Fprobe
	case 't':
		kind["fprobe"] = f.DynamicEvents && ft.Tprobe
		kind["tprobe"] = kind["fprobe"]
	case 'e':
		kind["eprobe"] = f.DynamicEvents && ft.Eprobe && topFS(t).Top().Has("events/syscalls/sys_enter_openat")
	}
	if !kind[v.selftest] || !f.ErrorLog {
		return "the kernel lacks " + v.selftest + "s or error_log"
	}
	cond := map[string]bool{
		"maxactive": ft.MaxActive, "argN": ft.ArgN, "comm": ft.Comm, "imm": ft.Imm, "immstr": ft.ImmString,
		"array": ft.Array, "retsuffix": ft.ReturnSuffix, "btfargs": ft.BTFArgs, "btffields": ft.BTFFields,
		"retargs": ft.RetArgs, "amd64": runtime.GOARCH == "amd64",
		"epfilter": regexp.MustCompile(`<attached-group>\.<attached-event>.*\[if <filter>\]`).MatchString(readme),
	}
	for _, r := range v.requires {
		want := !strings.HasPrefix(r, "!")
		on, ok := cond[strings.TrimPrefix(r, "!")]
		if !ok {
			t.Fatalf("%q: unknown condition %q", v.def, r)
		}
		if on != want {
			return "the README says " + r + " is not so"
		}
	}
	return ""
}

// selftestFile is the file the selftest writes the vector to.
func selftestFile(v selftestVector) string {
	switch v.selftest {
	case "kprobe":
		return "kprobe_events"
	case "uprobe":
		return "uprobe_events"
	}
	return "dynamic_events"
}

// kernelRefusal writes def to file (appended, as the selftest's echo >>) and removes what it
// created; a refusal comes back with the kernel's last error_log entry for it (the selftest
// reads the log's last line; one write can log more than one entry: an event probe's attached
// event with no group logs "Group name is not specified", then "This requires both group and
// event name to attach"), nil when it made none.
func kernelRefusal(t *testing.T, file, def string) (accepted bool, entry *tracefs.LogEntry) {
	t.Helper()
	truncate(t, "error_log")
	if err := tryDefinitionIn(t, file, def, nil); err == nil {
		return true, nil
	}
	joined := strings.Join(strings.Fields(def), " ") // the kernel's argv, re-joined
	for _, e := range tracefs.ParseErrorLog(read(t, "error_log")) {
		if e.Command == joined {
			entry = &e
		}
	}
	return false, entry
}

// userPos moves a caret in the kernel's re-joined command (argv joined by single spaces) onto
// def as written, as probes.Written.UserPos does for what ftctl writes: the same offset in the
// same word, a space before the next word, past the last word one past its end.
func userPos(def string, pos int) int {
	var words [][2]int
	for i := 0; i < len(def); {
		for i < len(def) && (def[i] == ' ' || def[i] == '\t') {
			i++
		}
		j := i
		for j < len(def) && def[j] != ' ' && def[j] != '\t' {
			j++
		}
		if j > i {
			words = append(words, [2]int{i, j})
		}
		i = j
	}
	at := 0
	for i, w := range words {
		n := w[1] - w[0]
		if pos <= at+n || i == len(words)-1 {
			return w[0] + pos - at
		}
		at += n + 1
	}
	return pos
}

// TestSelftestVectors (issue 33, "kernel-exact"): every syntax-error vector of the kernel's
// own ftrace selftests (testdata/selftest-vectors.txt) that this kernel can run, through the
// kernel and through ftctl's parser with this kernel's features, kallsyms, BTF, event formats
// and ELF files (as probe add parses). Both must refuse it, with the same message (ftctl's
// SyntaxError.Msg is the kernel's error_log text) and the caret in the same place (the
// kernel's moved onto the text as written, as ftctl moves it), or both accept it (a vector of
// a selftest newer than this kernel). Every difference is listed and fails the test; the tally
// per selftest is logged, with the vectors where the kernel itself does not do what its
// selftest expects.
func TestSelftestVectors(t *testing.T) {
	fs := topFS(t)
	f := fs.DetectFeatures()
	readme := read(t, "README")
	p := probes.Parser{Features: f.Probe, Kernel: probes.NewKernel(fs), User: probes.NewUserSpace()}
	type tally struct{ run, same, skipped int }
	per := map[string]*tally{}
	var order []string
	var diffs, table, selfNotes []string
	for _, v := range parseSelftestVectors(t) {
		c := per[v.selftest]
		if c == nil {
			c = &tally{}
			per[v.selftest] = c
			order = append(order, v.selftest)
		}
		if why := selftestMissing(t, v, f, readme); why != "" {
			c.skipped++
			table = append(table, fmt.Sprintf("skipped  %-60q %s", v.def, why))
			continue
		}
		c.run++
		kok, entry := kernelRefusal(t, selftestFile(v), v.def)
		_, lerr := p.Parse(v.def)
		var se *probes.SyntaxError
		isSyntax := errors.As(lerr, &se)
		kernel, local := "accepted", "accepted"
		switch {
		case !kok && entry == nil:
			kernel = "refused, no error_log entry"
		case !kok:
			kernel = fmt.Sprintf("%q @%d", entry.Message, userPos(v.def, entry.Pos))
		}
		switch {
		case isSyntax:
			local = fmt.Sprintf("%q @%d", se.Msg, se.Pos)
		case lerr != nil:
			local = "refused: " + lerr.Error()
		}
		same := kok && lerr == nil ||
			!kok && entry != nil && isSyntax && se.Msg == entry.Message && se.Pos == userPos(v.def, entry.Pos)
		if same {
			c.same++
		} else {
			diffs = append(diffs, fmt.Sprintf("%s %q (%s):\n      kernel %s\n      ftctl  %s", v.selftest, v.def, v.name, kernel, local))
		}
		switch {
		case strings.HasPrefix(v.name, "ftctl:"): // an own vector: no selftest to compare with
		case kok:
			selfNotes = append(selfNotes, fmt.Sprintf("%q: the kernel accepts it, its selftest expects a refusal (%s)", v.def, v.name))
		case entry != nil && entry.Pos != v.caret:
			selfNotes = append(selfNotes, fmt.Sprintf("%q: the kernel's caret @%d, its selftest's @%d", v.def, entry.Pos, v.caret))
		}
		mark := "same     "
		if !same {
			mark = "DIFFERENT"
		}
		table = append(table, fmt.Sprintf("%s %-60q kernel=%s ftctl=%s", mark, v.def, kernel, local))
	}
	var sum strings.Builder
	for _, s := range order {
		c := per[s]
		fmt.Fprintf(&sum, "\n  %s: %d run, %d the same, %d different, %d skipped", s, c.run, c.same, c.run-c.same, c.skipped)
	}
	t.Logf("selftest vectors on %s:%s\n%s", tracefs.KernelRelease(), sum.String(), strings.Join(table, "\n"))
	if len(selfNotes) > 0 {
		t.Logf("where this kernel does not do what its selftest expects:\n  %s", strings.Join(selfNotes, "\n  "))
	}
	if len(diffs) > 0 {
		t.Errorf("%d vectors where ftctl and the kernel differ:\n  %s", len(diffs), strings.Join(diffs, "\n  "))
	}
}
