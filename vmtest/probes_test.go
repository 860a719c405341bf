//go:build vmtest

package vmtest

import (
	"bytes"
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/ftctl/ftctl/probes"
	"github.com/ftctl/ftctl/tracefs"
)

//go:embed testdata/probe-corpus.txt
var probeCorpus string

// corpusDefs is the corpus file plus definitions too long to keep in it.
func corpusDefs() []string {
	var defs []string
	for _, line := range strings.Split(probeCorpus, "\n") {
		if strings.TrimSpace(line) == "" || strings.HasPrefix(line, "#") {
			continue
		}
		defs = append(defs, line)
	}
	many := func(n int) string {
		var b strings.Builder
		for i := 0; i < n; i++ {
			fmt.Fprintf(&b, " a%d=%%di", i)
		}
		return b.String()
	}
	defs = append(defs,
		"p:ftc/"+strings.Repeat("e", 63)+" vfs_read",
		"p:ftc/"+strings.Repeat("f", 64)+" vfs_read",
		"p:ftc/"+strings.Repeat("g", 65)+" vfs_read",
		"p:"+strings.Repeat("h", 63)+"/ev vfs_read",
		"p:"+strings.Repeat("i", 64)+"/ev vfs_read",
		"p:ftc/many128 vfs_read"+many(128),
		"p:ftc/many129 vfs_read"+many(129),
		"p:ftc/long63 vfs_read x=+0(+0(+0(+0(+0(+0(+0(+0(+0(+0(+0(+0(%di)))))))))))):u8",
		"p:ftc/long64 vfs_read x=+0(+0(+0(+0(+0(+0(+0(+0(+0(+0(+0(+0(%di)))))))))))):u16",
	)
	return defs
}

// kernelAccepts writes one definition to kprobe_events as a user would (no O_TRUNC) and
// removes whatever it created. A definition the kernel takes but lists with fewer arguments
// than written (6.1 drops the 129th and later) counts as refused: the kernel did not take it
// as written. The message is the kernel's error_log entry, with its caret position.
func kernelAccepts(t *testing.T, def string) (bool, string) {
	t.Helper()
	var listed []string
	err := tryDefinitionListed(t, def, &listed)
	if err == nil {
		words := len(strings.Fields(strings.SplitN(def, "#", 2)[0]))
		if words > 2+probes.MaxArgs && len(listed) == 1 && len(strings.Fields(listed[0])) < words {
			return false, fmt.Sprintf("accepted, listed with %d of %d arguments", len(strings.Fields(listed[0]))-2, words-2)
		}
		return true, ""
	}
	return false, kernelMessage(err)
}

// kernelMessage is a refused write's last error_log entry with its caret position, else the
// error.
func kernelMessage(err error) string {
	var te *tracefs.Error
	if errors.As(err, &te) && len(te.KernelLog) > 0 {
		e := te.KernelLog[len(te.KernelLog)-1]
		return fmt.Sprintf("%s @%d", e.Message, e.Pos)
	}
	return err.Error()
}

// tryDefinition writes def to kprobe_events (no O_TRUNC) and removes every event the write
// created, returning the write's error.
func tryDefinition(t *testing.T, def string) error {
	t.Helper()
	return tryDefinitionListed(t, def, nil)
}

// tryDefinitionListed is tryDefinition that also returns, in listed, how kprobe_events listed
// what the write created.
func tryDefinitionListed(t *testing.T, def string, listed *[]string) error {
	t.Helper()
	return tryDefinitionIn(t, "kprobe_events", def, listed)
}

// tryDefinitionIn is tryDefinitionListed on file (kprobe_events or dynamic_events).
func tryDefinitionIn(t *testing.T, file, def string, listed *[]string) error {
	t.Helper()
	top := topFS(t).Top()
	before := eventSet(t, file)
	err := top.Write(file, def+"\n")
	for _, p := range tracefs.ParseProbeList(read(t, file)) {
		if !before[p.Group+"/"+p.Event] {
			if listed != nil {
				*listed = append(*listed, p.Definition)
			}
			if e := top.Write(file, "-:"+p.Group+"/"+p.Event+"\n"); e != nil {
				t.Fatalf("cleaning up %s/%s: %v", p.Group, p.Event, e)
			}
		}
	}
	return err
}

func probeSet(t *testing.T) map[string]bool { return eventSet(t, "kprobe_events") }

// eventSet is the GROUP/EVENT names file lists.
func eventSet(t *testing.T, file string) map[string]bool {
	m := map[string]bool{}
	for _, p := range tracefs.ParseProbeList(read(t, file)) {
		m[p.Group+"/"+p.Event] = true
	}
	return m
}

// kernelOnlyReasons are refusals ftctl does not foresee: they need the kernel's text (an
// instruction boundary) or its kprobe rules (a symbol kallsyms lists that is not probe-able
// code: data, a blacklisted function), not its tracefs README, kallsyms names or BTF.
var kernelOnlyReasons = []string{"Probe point is not an instruction boundary", "Failed to register probe event"}

// TestProbeCorpus: every definition of the corpus, through ftctl's validator (with this
// kernel's features, kallsyms and BTF) and through the kernel. The kernel accepting what ftctl
// refuses fails the test, and so does ftctl passing what the kernel refuses, unless the
// kernel's reason is one of kernelOnlyReasons.
func TestProbeCorpus(t *testing.T) {
	insmod(t, "nls_utf8") // modules' functions and BTF
	insmod(t, "dummy")
	start := probeSet(t)
	p := probes.NewManager(topFS(t)).Parser
	p.Kernel = probes.NewKernel(topFS(t)) // as probe add checks
	var both, neither, kernelOnly, localOnly int
	var table strings.Builder
	for _, def := range corpusDefs() {
		_, lerr := p.Parse(def)
		kok, kmsg := kernelAccepts(t, def)
		short := def
		if len(short) > 70 {
			short = short[:67] + "..."
		}
		verdict := ""
		switch {
		case kok && lerr == nil:
			both++
			verdict = "accept/accept"
		case !kok && lerr != nil:
			neither++
			verdict = "reject/reject"
		case kok && lerr != nil:
			kernelOnly++
			verdict = "KERNEL-ACCEPTS/ftctl-rejects"
			t.Errorf("the kernel accepts %q but ftctl refuses it: %v", def, lerr)
		default:
			localOnly++
			verdict = "kernel-rejects/ftctl-accepts"
			if !slices.ContainsFunc(kernelOnlyReasons, func(r string) bool { return strings.HasPrefix(kmsg, r) }) {
				t.Errorf("ftctl passes %q but the kernel refuses it: %s", def, kmsg)
			}
		}
		lmsg := ""
		if lerr != nil {
			var se *probes.SyntaxError
			if errors.As(lerr, &se) {
				lmsg = fmt.Sprintf("%s @%d", se.Msg, se.Pos)
			}
		}
		fmt.Fprintf(&table, "%-30s %-72q kernel=%q ftctl=%q\n", verdict, short, kmsg, lmsg)
	}
	t.Logf("probe corpus on %s: %d definitions; both accept %d, both reject %d, kernel rejects what ftctl accepts %d, kernel accepts what ftctl rejects %d\n%s",
		tracefs.KernelRelease(), both+neither+kernelOnly+localOnly, both, neither, localOnly, kernelOnly, table.String())
	if both < 20 || neither < 20 {
		t.Errorf("corpus too one-sided: %d accepted, %d rejected by both", both, neither)
	}
	for k := range probeSet(t) {
		if !start[k] {
			t.Errorf("corpus left probe %s behind", k)
		}
	}
}

// otherProbe defines a probe of another group that every ftctl probe command must leave alone.
func otherProbe(t *testing.T) string {
	t.Helper()
	write(t, "kprobe_events", "p:othergrp/keep vfs_read\n")
	removeProbeLater(t, "othergrp", "keep")
	return "p:othergrp/keep vfs_read"
}

func checkOtherProbe(t *testing.T, def string) {
	t.Helper()
	if !strings.Contains(read(t, "kprobe_events"), def) {
		t.Errorf("another group's probe %q was touched:\n%s", def, read(t, "kprobe_events"))
	}
}

// readPipeUntil reads an instance's trace_pipe (non-blocking, polled) until a line contains
// want, or the deadline passes.
func readPipeUntil(t *testing.T, instance, want string, trigger func()) string {
	t.Helper()
	f, err := os.OpenFile(filepath.Join(tracing, "instances", instance, "trace_pipe"), os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var got strings.Builder
	buf := make([]byte, 64<<10)
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) {
		trigger()
		n, _ := f.Read(buf)
		got.Write(buf[:max(n, 0)])
		for _, line := range strings.Split(got.String(), "\n") {
			if strings.Contains(line, want) {
				return line
			}
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatalf("no trace_pipe line with %q in 20s; read:\n%s", want, got.String())
	return ""
}

func TestProbeLifecycle(t *testing.T) {
	other := otherProbe(t)
	removeProbeLater(t, "ftctl", "vmopen")
	removeInstanceLater(t, "vmprobe")
	r := ftctlRun(t, "probe", "add", "p:vmopen do_sys_openat2 path=+0(%si):string")
	if r.code != 0 || strings.TrimSpace(r.stdout) != "ftctl/vmopen" {
		t.Fatalf("add: %v", r)
	}
	if !strings.Contains(read(t, "kprobe_events"), "p:ftctl/vmopen do_sys_openat2 path=+0(%si):string") {
		t.Fatalf("kprobe_events:\n%s", read(t, "kprobe_events"))
	}
	r = ftctlRun(t, "probe", "list", "-o", "json")
	if r.code != 0 || !strings.Contains(r.stdout, `"name": "ftctl/vmopen"`) || !strings.Contains(r.stdout, `"owner": "other"`) {
		t.Fatalf("list: %v", r)
	}
	r = ftctlRun(t, "probe", "enable", "vmopen", "-B", "vmprobe", "--create")
	if r.code != 0 || strings.TrimSpace(read(t, "instances/vmprobe/events/ftctl/vmopen/enable")) != "1" {
		t.Fatalf("enable: %v", r)
	}
	r = ftctlRun(t, "probe", "list")
	if !strings.Contains(r.stdout, "vmprobe") {
		t.Errorf("list does not say where the probe is enabled:\n%s", r.stdout)
	}
	marker := "/tmp/ftctl-probe-marker-42"
	line := readPipeUntil(t, "vmprobe", marker, func() { os.Open(marker) })
	if !strings.Contains(line, "vmopen:") || !strings.Contains(line, `path="`+marker+`"`) {
		t.Errorf("event line: %q", line)
	}
	r = ftctlRun(t, "probe", "format", "vmopen")
	if r.code != 0 || !strings.Contains(r.stdout, "path") || !strings.Contains(r.stdout, "__data_loc char[]") {
		t.Errorf("format: %v", r)
	}
	r = ftctlRun(t, "probe", "disable", "vmopen", "-B", "vmprobe")
	if r.code != 0 || strings.TrimSpace(read(t, "instances/vmprobe/events/ftctl/vmopen/enable")) != "0" {
		t.Fatalf("disable: %v", r)
	}
	r = ftctlRun(t, "probe", "remove", "vmopen")
	if r.code != 0 || strings.Contains(read(t, "kprobe_events"), "vmopen") {
		t.Fatalf("remove: %v\n%s", r, read(t, "kprobe_events"))
	}
	r = ftctlRun(t, "probe", "remove", "vmopen")
	if r.code != 0 || !strings.Contains(r.stderr, "already removed") {
		t.Errorf("second remove: %v", r)
	}
	checkOtherProbe(t, other)
}

// An enabled probe (top level and an instance) is removed without the user seeing EBUSY.
func TestProbeRemoveEnabled(t *testing.T) {
	other := otherProbe(t)
	removeProbeLater(t, "ftctl", "busy")
	removeInstanceLater(t, "vmbusy")
	if r := ftctlRun(t, "probe", "add", "p:busy vfs_read", "--enable"); r.code != 0 {
		t.Fatalf("add: %v", r)
	}
	if r := ftctlRun(t, "probe", "enable", "busy", "-B", "vmbusy", "--create"); r.code != 0 {
		t.Fatalf("enable: %v", r)
	}
	// The naive way fails: the kernel refuses to delete an enabled probe.
	if err := topFS(t).Top().Write("kprobe_events", "-:ftctl/busy\n"); !errors.Is(err, tracefs.ErrBusy) {
		t.Fatalf("deleting an enabled probe by hand: %v, want EBUSY", err)
	}
	r := ftctlRun(t, "probe", "remove", "busy")
	if r.code != 0 || strings.Contains(read(t, "kprobe_events"), "ftctl/busy") {
		t.Fatalf("remove: %v\n%s", r, read(t, "kprobe_events"))
	}
	checkOtherProbe(t, other)
	// Disabling another group's enabled probe is refused unless named with its group.
	write(t, "events/othergrp/keep/enable", "1")
	r = ftctlRun(t, "probe", "remove", "keep")
	if r.code != 2 || !strings.Contains(r.stderr, "othergrp/keep") {
		t.Errorf("remove of another group's probe by bare name: %v", r)
	}
	if r = ftctlRun(t, "probe", "remove", "--all-owned"); r.code != 0 {
		t.Errorf("--all-owned: %v", r)
	}
	checkOtherProbe(t, other)
	write(t, "events/othergrp/keep/enable", "0")
}

// What only the kernel can judge: its error_log message, the caret under the user's text.
func TestProbeKernelRejects(t *testing.T) {
	other := otherProbe(t)
	removeProbeLater(t, "ftctl", "dup")
	removeProbeLater(t, "ftctl", "filt")
	// Unknown symbol, written with extra spaces: kallsyms tells before the kernel is asked
	// (exit 2), the caret under the user's "vfs_raed", close names.
	def := "p:typo    vfs_raed"
	r := ftctlRun(t, "probe", "add", def)
	if r.code != 2 || !strings.Contains(r.stderr, "Invalid probed address or symbol") || !strings.Contains(r.stderr, "did you mean") || !strings.Contains(r.stderr, "vfs_read") {
		t.Fatalf("unknown symbol: %v", r)
	}
	t.Logf("unknown symbol:\n%s", r.stderr)
	wantCaret := "  " + def + "\n" + strings.Repeat(" ", 2+strings.Index(def, "vfs_raed")) + "^"
	if !strings.Contains(r.stderr, wantCaret) {
		t.Errorf("caret not under the user's text; want\n%s\ngot\n%s", wantCaret, r.stderr)
	}
	// A symbol kallsyms lists that the kernel cannot probe (data): only the kernel knows
	// (exit 3), its error_log caret moved under the user's text.
	def = "p:typo    jiffies"
	r = ftctlRun(t, "probe", "add", def)
	t.Logf("data symbol:\n%s", r.stderr)
	wantCaret = "    " + def + "\n" + strings.Repeat(" ", 4+strings.Index(def, "jiffies")) + "^"
	if r.code != 3 || !strings.Contains(r.stderr, "kernel error_log: ") || !strings.Contains(r.stderr, wantCaret) ||
		!strings.Contains(r.stderr, "ftrace cannot trace jiffies (it is not in available_filter_functions)") {
		t.Errorf("data symbol: %v\nwant caret\n%s", r, wantCaret)
	}
	// A BTF name the function does not have (6.12: BTF tells, exit 2, its parameters named),
	// or no BTF names at all (6.1: refused before writing, exit 2).
	r = ftctlRun(t, "probe", "add", "p:btf vfs_read  nosuchparam")
	t.Logf("BTF:\n%s", r.stderr)
	if topFS(t).DetectFeatures().Probe.BTFArgs {
		want := "  p:btf vfs_read  nosuchparam\n" + strings.Repeat(" ", 2+len("p:btf vfs_read  ")) + "^"
		if r.code != 2 || !strings.Contains(r.stderr, "This variable is not found at this probe point") ||
			!strings.Contains(r.stderr, "vfs_read's parameters: file buf count pos") || !strings.Contains(r.stderr, want) {
			t.Errorf("BTF name: %v\nwant caret\n%s", r, want)
		}
	} else if r.code != 2 || !strings.Contains(r.stderr, "BTF") {
		t.Errorf("BTF name without BTF: %v", r)
	}
	// An event that exists is refused before writing (exit 2), naming what it holds; with
	// --append the kernel judges, and its EEXIST (arguments that differ) names the probe too.
	if r = ftctlRun(t, "probe", "add", "p:dup vfs_read"); r.code != 0 {
		t.Fatalf("add: %v", r)
	}
	r = ftctlRun(t, "probe", "add", "p:dup vfs_write x=%di")
	t.Logf("exists:\n%s", r.stderr)
	if r.code != 2 || !strings.Contains(r.stderr, "p:ftctl/dup vfs_read") {
		t.Errorf("exists: %v", r)
	}
	r = ftctlRun(t, "probe", "add", "--append", "p:dup vfs_write x=%di")
	t.Logf("EEXIST:\n%s", r.stderr)
	if r.code != 3 || !strings.Contains(r.stderr, "p:ftctl/dup vfs_read") {
		t.Errorf("EEXIST: %v", r)
	}
	// A filter naming a field the new event lacks: ftctl checks it against the event's format
	// before writing it (exit 2, its words and a caret; the kernel is not asked) and removes the
	// probe again. A filter whose syntax is wrong is refused before anything is written.
	truncate(t, "error_log")
	r = ftctlRun(t, "probe", "add", "p:filt vfs_read x=%di", "--filter", "nosuchfield == 1", "--enable")
	t.Logf("bad filter:\n%s", r.stderr)
	if r.code != 2 || strings.Contains(read(t, "kprobe_events"), "ftctl/filt") ||
		!strings.Contains(r.stderr, "invalid --filter for probe ftctl/filt") || !strings.Contains(r.stderr, "x") {
		t.Errorf("bad filter: %v\n%s", r, read(t, "kprobe_events"))
	}
	if log := read(t, "error_log"); strings.Contains(log, "nosuchfield") {
		t.Errorf("the kernel was asked to take the filter:\n%s", log)
	}
	r = ftctlRun(t, "probe", "add", "p:filt vfs_read x=%di", "--filter", "x ==")
	t.Logf("filter syntax:\n%s", r.stderr)
	if r.code != 2 || strings.Contains(r.stderr, "removed again") || !strings.Contains(r.stderr, "invalid --filter") {
		t.Errorf("filter syntax: %v", r)
	}
	// No event name: the kernel names it and ftctl prints the name.
	removeProbeLater(t, "ftctl", "p_vfs_write_0")
	r = ftctlRun(t, "probe", "add", "p vfs_write")
	if r.code != 0 || strings.TrimSpace(r.stdout) != "ftctl/p_vfs_write_0" {
		t.Errorf("auto name: %v", r)
	}
	checkOtherProbe(t, other)
}

// Issue 14 item 3. The kernel merges the probes of one event name (5.7+): writing a definition
// that names an existing event adds a probe point to it. Measured before the fix: with
// kprobes/other defined by someone else, `probe add 'p:kprobes/other vfs_write' --filter
// 'nosuchfield == 1'` appended to it, the filter failed (exit 3) and the rollback deleted the
// whole event, the other owner's probe with it. Now: an event that existed before the add is
// refused (exit 2, named) unless --append, and a rollback removes only the point it added.
func TestProbeAddNeverAppendsToOthers(t *testing.T) {
	removeProbeLater(t, "kprobes", "other")
	removeProbeLater(t, "kprobes", "p_vfs_write_0")
	removeProbeLater(t, "kprobes", "argsother")
	write(t, "kprobe_events", "p:kprobes/other vfs_read\n")
	want := read(t, "kprobe_events")
	unchanged := func(what string) {
		t.Helper()
		if got := read(t, "kprobe_events"); got != want {
			t.Errorf("%s: kprobe_events changed:\nbefore:\n%s\nafter:\n%s", what, want, got)
		}
	}
	// The measured scenario.
	r := ftctlRun(t, "probe", "add", "p:kprobes/other vfs_write", "--filter", "nosuchfield == 1")
	if r.code != 2 || !strings.Contains(r.stderr, "kprobes/other") || !strings.Contains(r.stderr, "--append") {
		t.Errorf("add onto another's event with a failing filter: %v", r)
	}
	unchanged("add onto another's event with a failing filter")
	r = ftctlRun(t, "probe", "add", "p:kprobes/other vfs_write")
	if r.code != 2 || !strings.Contains(r.stderr, "p:kprobes/other vfs_read") {
		t.Errorf("add onto another's event: %v", r)
	}
	unchanged("add onto another's event")
	// An event the kernel names can exist too: p_vfs_write_0, someone's probe of vfs_read.
	write(t, "kprobe_events", "p:kprobes/p_vfs_write_0 vfs_read\n")
	want = read(t, "kprobe_events")
	r = ftctlRun(t, "probe", "add", "p:kprobes/ vfs_write")
	if r.code != 2 || !strings.Contains(r.stderr, "kprobes/p_vfs_write_0") {
		t.Errorf("add onto an event the kernel named after an existing one: %v", r)
	}
	unchanged("add onto an event the kernel named after an existing one")

	// --append on purpose; a failing filter (refused by ftctl's check against the event's
	// fields, once the point is added) takes back only the point it added, even while the owner
	// has the event enabled, and leaves the owner's filter as it was.
	write(t, "events/kprobes/other/filter", "common_pid != 0")
	write(t, "events/kprobes/other/enable", "1")
	r = ftctlRun(t, "probe", "add", "--append", "p:kprobes/other vfs_write", "--filter", "nosuchfield == 1")
	t.Logf("--append, failing filter:\n%s", r.stderr)
	if r.code != 2 || !strings.Contains(r.stderr, "invalid --filter for probe kprobes/other") {
		t.Errorf("--append with a failing filter: %v", r)
	}
	unchanged("--append with a failing filter")
	if f := strings.TrimSpace(read(t, "events/kprobes/other/filter")); f != "common_pid != 0" {
		t.Errorf("the owner's filter is now %q", f)
	}
	if en := strings.TrimSpace(read(t, "events/kprobes/other/enable")); en != "1" {
		t.Errorf("the owner's event is no longer enabled: %q", en)
	}
	r = ftctlRun(t, "probe", "add", "--append", "p:kprobes/other vfs_write")
	if r.code != 0 || strings.TrimSpace(r.stdout) != "kprobes/other" {
		t.Errorf("--append: %v", r)
	}
	got := read(t, "kprobe_events")
	if !strings.Contains(got, "p:kprobes/other vfs_read\n") || !strings.Contains(got, "p:kprobes/other vfs_write\n") {
		t.Errorf("--append: kprobe_events:\n%s", got)
	}
	write(t, "events/kprobes/other/enable", "0")

	// The point is deleted as the kernel lists it, which is not always as it was written (BTF
	// names list as count=count).
	args := []string{"x=%si:u32"}
	if topFS(t).DetectFeatures().Probe.BTFArgs {
		args = append(args, "count")
	}
	for _, a := range args {
		write(t, "kprobe_events", "p:kprobes/argsother vfs_read "+a+"\n")
		want = read(t, "kprobe_events")
		r = ftctlRun(t, "probe", "add", "--append", "p:kprobes/argsother vfs_write "+a, "--filter", "nosuchfield == 1")
		if r.code != 2 {
			t.Errorf("--append %q with a failing filter: %v", a, r)
		}
		unchanged("--append " + a + " with a failing filter")
		write(t, "kprobe_events", "-:kprobes/argsother\n")
	}
}

// Issue 14 item 11: a type that is empty (":" with nothing after it, or an array of nothing,
// ":[4]") is refused by the kernel; ftctl refused nothing and wrote something else than was
// typed. ftctl must refuse each with the kernel's words, its caret where the kernel puts it.
func TestProbeEmptyTypesRefusedAsTheKernel(t *testing.T) {
	p := probes.Parser{Features: topFS(t).DetectFeatures().Probe}
	for _, def := range []string{
		`p:ftc/t1 vfs_read x=+0(%si):[4]`,
		`p:ftc/t2 vfs_read x=+0(%si):`,
		`p:ftc/t3 vfs_read +0(%si):[1]`,
		`p:ftc/t4 vfs_read x=$comm:`,
		`p:ftc/t5 vfs_read x=$comm:[2]`,
		`p:ftc/t6 vfs_read x=\"ab":`,
		`p:ftc/t7 vfs_read x=%di:`,
	} {
		_, lerr := p.Parse(def)
		kok, entry := kernelVerdict(t, def)
		var se *probes.SyntaxError
		switch {
		case kok:
			t.Errorf("the kernel accepts %q", def)
		case !errors.As(lerr, &se):
			t.Errorf("%q: the kernel refuses it (%+v), ftctl: %v", def, entry, lerr)
		case entry == nil:
			t.Logf("%q: the kernel refuses it without an error_log entry; ftctl: %q at %d", def, se.Msg, se.Pos)
		case se.Msg != entry.Message || se.Pos != entry.Pos:
			t.Errorf("%q: kernel %q at %d, ftctl %q at %d\n%s", def, entry.Message, entry.Pos, se.Msg, se.Pos, probes.Caret("  ", def, entry.Pos))
		default:
			t.Logf("%q: both refuse: %q at %d", def, se.Msg, se.Pos)
		}
	}
}

// kernelVerdict writes one definition and removes what it created, like kernelAccepts, and
// returns the kernel's error_log entry for it (nil when there is none).
func kernelVerdict(t *testing.T, def string) (bool, *tracefs.LogEntry) {
	t.Helper()
	truncate(t, "error_log")
	err := tryDefinition(t, def)
	if err == nil {
		return true, nil
	}
	for _, e := range tracefs.ParseErrorLog(read(t, "error_log")) {
		if e.Command == def {
			return false, &e
		}
	}
	return false, nil
}

// probe remove --all-owned removes ftctl's shared group and the groups of sessions that are
// gone (their instance is), and leaves a running session's probes: the session holds its
// instance, so the instance exists and the session may be running. Pids prove nothing: the
// gone session's group here carries the running session's pid.
func TestProbeRemoveAllOwnedLeavesLiveSessions(t *testing.T) {
	other := otherProbe(t)
	cmd, _, errb := startTrace(t)
	stopped := false
	stop := func() {
		if !stopped {
			stopped = true
			cmd.Process.Signal(syscall.SIGINT)
			if code := exitCode(cmd.Wait()); code != 130 {
				t.Errorf("the session ended with exit %d; stderr:\n%s", code, errb)
			}
		}
	}
	defer stop()
	_, live := sessionOf(t, cmd.Process.Pid)
	dead := fmt.Sprintf("ftctl_%d_0badcafe", cmd.Process.Pid)
	write(t, "kprobe_events", "p:"+dead+"/gone vfs_read\n")
	removeProbeLater(t, dead, "gone")
	write(t, "kprobe_events", "p:ftctl/shared vfs_read\n")
	removeProbeLater(t, "ftctl", "shared")
	r := ftctlRun(t, "probe", "remove", "--all-owned", "-o", "json")
	t.Logf("%v", r)
	got := read(t, "kprobe_events")
	if r.code != 0 || !strings.Contains(r.stdout, `"`+dead+`/gone"`) || !strings.Contains(r.stdout, `"ftctl/shared"`) ||
		strings.Contains(r.stdout, live) || !strings.Contains(r.stderr, "leaving "+live+"/open") {
		t.Errorf("--all-owned: %v", r)
	}
	if !strings.Contains(got, "p:"+live+"/open ") || strings.Contains(got, dead) || strings.Contains(got, "ftctl/shared") {
		t.Errorf("kprobe_events after --all-owned:\n%s", got)
	}
	checkOtherProbe(t, other)
	stop()
	if got := read(t, "kprobe_events"); strings.Contains(got, live) {
		t.Errorf("the session's probes outlive it:\n%s", got)
	}
}

// A definition that fits as typed but not once ftctl puts its group in the head (found by
// FuzzParse): the kernel would refuse the line ftctl writes; ftctl refuses it first (exit 2).
func TestProbeLineTooLongWithGroup(t *testing.T) {
	def := "p:x vfs_read" + strings.Repeat(" ", probes.MaxLineLen-len("p:x vfs_read$stack")) + "$stack"
	if len(def) != probes.MaxLineLen {
		t.Fatalf("len %d", len(def))
	}
	before := read(t, "kprobe_events")
	r := ftctlRun(t, "probe", "add", def)
	if r.code != 0 {
		t.Fatalf("as typed it fits, once written as p:ftctl/x with single spaces too: %v", r)
	}
	removeProbeLater(t, "ftctl", "x")
	write(t, "kprobe_events", "-:ftctl/x\n")
	// A symbol of a module that is not loaded: kallsyms cannot judge it (the kernel would
	// keep the probe pending), so the line's length is what is refused.
	long := "p nomod:" + strings.Repeat("a", probes.MaxLineLen-8)
	r = ftctlRun(t, "probe", "add", long)
	if r.code != 2 || !strings.Contains(r.stderr, "line is too long") {
		t.Errorf("too long with its group: exit %d\n%.400s", r.code, r.stderr)
	}
	if got := read(t, "kprobe_events"); got != before {
		t.Errorf("kprobe_events changed:\n%s", got)
	}
	// The kernel's limit is probes.MaxLineLen: a good definition padded to that length is
	// taken, one byte more is refused.
	removeProbeLater(t, "ftctl", "lim")
	for _, n := range []int{probes.MaxLineLen, probes.MaxLineLen + 1} {
		line := "p:ftctl/lim vfs_read" + strings.Repeat(" ", n-len("p:ftctl/lim vfs_read $stack")) + " $stack"
		err := topFS(t).Top().Write("kprobe_events", line+"\n")
		t.Logf("the kernel, given a %d-byte line: %v", len(line), err)
		if (err == nil) != (n <= probes.MaxLineLen) {
			t.Errorf("the kernel's answer to a %d-byte line: %v", len(line), err)
		}
		if err == nil {
			write(t, "kprobe_events", "-:ftctl/lim\n")
		}
	}
}

// probe args: a function's parameters from the kernel's BTF (both kernels have
// CONFIG_DEBUG_INFO_BTF), and a module's function from the module's BTF when it has some.
func TestProbeArgs(t *testing.T) {
	r := ftctlRun(t, "probe", "args", "vfs_read")
	want := "vfs_read\n    struct file *file\n    char *buf\n    size_t count\n    loff_t *pos\n    returns ssize_t\n"
	if r.code != 0 || r.stdout != want {
		t.Fatalf("probe args vfs_read: %v\nwant:\n%s", r, want)
	}
	r = ftctlRun(t, "probe", "args", "do_sys_openat2", "-o", "json")
	var info probes.FuncInfo
	if err := json.Unmarshal([]byte(r.stdout), &info); r.code != 0 || err != nil || info.Func != "do_sys_openat2" ||
		info.Module != "" || info.Return != "long int" || len(info.Params) != 3 || info.Params[1] != (probes.Param{Name: "filename", Type: "const char *"}) {
		t.Errorf("json: %v (%v): %+v", r, err, info)
	}
	r = ftctlRun(t, "probe", "args", "vfs_raed")
	if r.code != 2 || !strings.Contains(r.stderr, "did you mean") || !strings.Contains(r.stderr, "vfs_read") {
		t.Errorf("unknown function: %v", r)
	}
	insmod(t, "dummy")
	if _, err := os.Stat(filepath.Join(tracefs.BTFDir, "dummy")); err != nil {
		r = ftctlRun(t, "probe", "args", "dummy:dummy_xmit")
		if r.code != 4 || !strings.Contains(r.stderr, "no BTF") {
			t.Errorf("a module without BTF: %v", r)
		}
		t.Skipf("dummy has no BTF on %s: %v", tracefs.KernelRelease(), err)
	}
	for _, ref := range []string{"dummy_xmit", "dummy:dummy_xmit"} {
		r = ftctlRun(t, "probe", "args", ref)
		want := "dummy_xmit [dummy]\n    struct sk_buff *skb\n    struct net_device *dev\n    returns netdev_tx_t\n"
		if r.code != 0 || r.stdout != want {
			t.Errorf("probe args %s: %v\nwant:\n%s", ref, r, want)
		}
	}
}

// TestBTFLoadCost measures what reading BTF costs a command (BENCHMARKS.md): the load of
// vmlinux's BTF, the first lookup (the name index), a module's, and the whole `probe args`
// command's wall time and peak RSS. It asserts only that BTF works.
func TestBTFLoadCost(t *testing.T) {
	insmod(t, "dummy")
	removeProbeLater(t, "ftctl", "btfcost")
	st, err := os.Stat(filepath.Join(tracefs.BTFDir, "vmlinux"))
	if err != nil {
		t.Fatal(err)
	}
	runtime.GC()
	var m0, m1 runtime.MemStats
	runtime.ReadMemStats(&m0)
	start := time.Now()
	b := topFS(t).BTF()
	if _, err := b.Vmlinux(); err != nil {
		t.Fatal(err)
	}
	load := time.Since(start)
	start = time.Now()
	k := probes.NewKernel(topFS(t))
	if _, err := k.FuncArgs("vfs_read"); err != nil {
		t.Fatal(err)
	}
	first := time.Since(start) // a new Kernel: its own load, and the name index
	start = time.Now()
	if _, err := k.FuncArgs("do_sys_openat2"); err != nil {
		t.Fatal(err)
	}
	second := time.Since(start)
	start = time.Now()
	_, modErr := k.FuncArgs("dummy:dummy_xmit")
	module := time.Since(start)
	runtime.ReadMemStats(&m1)
	// The whole command, against one that reads no BTF (probe list), and a probe definition
	// checked against BTF (add with a field chain; removed again).
	cmds := [][]string{{"probe", "args", "vfs_read"}, {"probe", "list"}}
	if topFS(t).DetectFeatures().Probe.BTFArgs {
		cmds = append(cmds, []string{"probe", "add", "p:btfcost vfs_read x=file->f_path.dentry->d_name.name:string"}, []string{"probe", "remove", "btfcost"})
	}
	var runs []string
	for _, args := range cmds {
		for range 3 {
			// Under busybox time: a child forked from this test process would report this
			// process's peak RSS (the kernel carries the peak across exec).
			c := exec.Command("/bin/busybox", append([]string{"time", "-v", ftctl}, args...)...)
			var errb bytes.Buffer
			c.Stderr = &errb
			start := time.Now()
			if err := c.Run(); err != nil {
				t.Fatalf("%v: %s", err, errb.String())
			}
			wall := time.Since(start)
			rss := regexp.MustCompile(`Maximum resident set size \(kbytes\): (\d+)`).FindStringSubmatch(errb.String())
			if rss == nil {
				t.Fatalf("busybox time -v: %s", errb.String())
			}
			kb, _ := strconv.Atoi(rss[1])
			runs = append(runs, fmt.Sprintf("%q %v wall, %.1f MiB max RSS", strings.Join(args[:2], " "), wall.Round(time.Millisecond), float64(kb)/1024))
			if args[1] == "add" || args[1] == "remove" {
				break
			}
		}
	}
	t.Logf("BTF on %s: vmlinux %.1f MiB; Vmlinux() %v; a new Kernel's first FuncArgs (load + name index) %v, the next %v; dummy's BTF %v (%v); heap after: %.1f MiB more in use, %.1f MiB more from the OS; commands:\n%s",
		tracefs.KernelRelease(), float64(st.Size())/(1<<20), load.Round(time.Millisecond), first.Round(time.Millisecond),
		second.Round(time.Microsecond), module.Round(time.Millisecond), modErr,
		float64(int64(m1.HeapInuse)-int64(m0.HeapInuse))/(1<<20), float64(int64(m1.Sys)-int64(m0.Sys))/(1<<20), strings.Join(runs, "\n"))
}

// The kernel checks a probed symbol against kallsyms (validate_probe_symbol), and ftctl does
// the same; a code symbol kallsyms lists but ftrace cannot trace (not in
// available_filter_functions) then passes that check. Seen on both Debian kernels, built
// without CONFIG_KPROBE_EVENTS_ON_NOTRACE: the kernel refuses every one tried when it registers
// the probe (trace_kprobe.c within_notrace_func: "Failed to register probe event"), a refusal
// ftctl leaves to the kernel (a kernel built with that option takes them). The test fails if
// the kernel takes one that ftctl refuses, and logs what the kernel did.
func TestProbeSymbolOutsideFilterList(t *testing.T) {
	traceable := map[string]bool{}
	for _, l := range strings.Split(read(t, "available_filter_functions"), "\n") {
		if f := strings.Fields(l); len(f) > 0 {
			traceable[f[0]] = true
		}
	}
	p := probes.NewManager(topFS(t)).Parser
	p.Kernel = probes.NewKernel(topFS(t)) // as probe add checks
	syms, err := os.ReadFile("/proc/kallsyms")
	if err != nil {
		t.Fatal(err)
	}
	count := map[string]int{}
	var candidates []string
	for _, l := range strings.Split(string(syms), "\n") {
		f := strings.Fields(l)
		if len(f) != 3 || (f[1] != "t" && f[1] != "T") {
			continue // vmlinux code only
		}
		count[f[2]]++
		if !traceable[f[2]] && !strings.ContainsAny(f[2], ".$") && !strings.HasPrefix(f[2], "__") {
			candidates = append(candidates, f[2])
		}
	}
	accepted, tried := 0, 0
	reasons := map[string]int{}
	for i := 0; i < len(candidates) && tried < 20; i += len(candidates)/23 + 1 {
		sym := candidates[i]
		if count[sym] != 1 {
			continue
		}
		tried++
		def := "p:ftc/untraceable " + sym
		kok, kmsg := kernelAccepts(t, def)
		if _, lerr := p.Parse(def); lerr != nil {
			t.Errorf("ftctl refuses %q, a code symbol kallsyms lists: %v", def, lerr)
		}
		if kok {
			accepted++
		} else {
			reasons[kmsg]++
		}
	}
	t.Logf("on %s the kernel took %d of %d code symbols outside available_filter_functions; refusals: %v",
		tracefs.KernelRelease(), accepted, tried, reasons)
}

// An event name held by a probe of another kind is refused before anything is written, with
// --append too: an event probe named like someone's kprobe, a kprobe named like someone's event
// probe (the kernel would refuse either only after the write, exit 3). Event probes are
// announced on both kernels.
func TestProbeAddRefusesAnotherKindsEvent(t *testing.T) {
	removeProbeLater(t, "kinds", "same")
	removeProbeLater(t, "kinds", "eprobe")
	write(t, "kprobe_events", "p:kinds/same vfs_read\n")
	write(t, "dynamic_events", "e:kinds/eprobe sched.sched_switch\n")
	before := read(t, "dynamic_events")
	for _, args := range [][]string{
		{"probe", "add", "e:kinds/same sched.sched_switch"},
		{"probe", "add", "--append", "e:kinds/same sched.sched_switch"},
		{"probe", "add", "p:kinds/eprobe vfs_write"},
		{"probe", "add", "--append", "p:kinds/eprobe vfs_write"},
	} {
		r := ftctlRun(t, args...)
		if r.code != 2 || !strings.Contains(r.stderr, "another kind of probe") {
			t.Errorf("%q: %v", args, r)
		}
		if got := read(t, "dynamic_events"); got != before {
			t.Errorf("%q changed dynamic_events:\n%s\nwas:\n%s", args, got, before)
		}
	}
}
