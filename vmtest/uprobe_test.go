//go:build vmtest

package vmtest

import (
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"os/exec"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/ftctl/ftctl/probes"
	"github.com/ftctl/ftctl/tracefs"
)

// The uprobes' target (vm/uprobetarget/target.c), shipped by vm/suite.sh: a static executable
// and the same program as a static PIE.
const (
	upTarget    = "/bin/uprobetarget"
	upTargetPIE = "/bin/uprobetarget-pie"
)

// upOffset is a function's file offset in the target, read with the ELF reader ftctl uses.
func upOffset(t *testing.T, path, fn string) uint64 {
	t.Helper()
	b, err := probes.OpenBinary(path)
	if err != nil {
		t.Fatalf("%s (make vm-bins builds it, vm/suite.sh ships it): %v", path, err)
	}
	f := b.Lookup(fn)
	if len(f) != 1 {
		t.Fatalf("%s: %s: %v", path, fn, f)
	}
	return f[0].Offset
}

// removeUprobeLater deletes a uprobe at the end of the test, disabling it everywhere first.
func removeUprobeLater(t *testing.T, group, event string) {
	removeEventLater(t, "uprobe_events", group, event)
}

func runTarget(t *testing.T, path string, args ...string) string {
	t.Helper()
	out, err := exec.Command(path, args...).CombinedOutput()
	if err != nil {
		t.Fatalf("%s %v: %v: %s", path, args, err, out)
	}
	return strings.TrimSpace(string(out))
}

// add -> list -> enable in an instance -> capture -> the binary reader's JSON equals the
// kernel's text -> remove, with another owner's uprobe on the same file untouched. Entry
// probes with register and string arguments, a return probe with $retval, and a symbol of a
// static PIE.
func TestUprobeLifecycle(t *testing.T) {
	addOff := upOffset(t, upTarget, "ftctl_add")
	greetOff := upOffset(t, upTarget, "ftctl_greet")
	pieOff := upOffset(t, upTargetPIE, "ftctl_greet")
	other := fmt.Sprintf("p:otherup/keep %s:0x%016x", upTarget, greetOff)
	write(t, "uprobe_events", other+"\n")
	removeUprobeLater(t, "otherup", "keep")
	inst := streamInstance(t, "vmuprobe")
	for _, e := range []string{"upadd", "upret", "uppie"} {
		removeUprobeLater(t, "ftctl", e)
	}

	r := ftctlRun(t, "probe", "add", "-o", "json", "p:upadd "+upTarget+":ftctl_add a=%di:s64 b=%si:s64")
	var added struct {
		Written string `json:"written"`
		Uprobe  struct {
			Path, Symbol, Segment string
			Offset                uint64
		} `json:"uprobe"`
	}
	if r.code != 0 || json.Unmarshal([]byte(r.stdout), &added) != nil {
		t.Fatalf("add: %v", r)
	}
	if added.Written != fmt.Sprintf("p:ftctl/upadd %s:0x%x a=%%di:s64 b=%%si:s64", upTarget, addOff) ||
		added.Uprobe.Symbol != "ftctl_add" || added.Uprobe.Offset != addOff || !strings.Contains(added.Uprobe.Segment, "r-x") {
		t.Errorf("add's JSON: %s", r.stdout)
	}
	if want := fmt.Sprintf("p:ftctl/upadd %s:0x%016x a=%%di:s64 b=%%si:s64", upTarget, addOff); !strings.Contains(read(t, "uprobe_events"), want) {
		t.Fatalf("uprobe_events lacks %q:\n%s", want, read(t, "uprobe_events"))
	}
	if r := ftctlRun(t, "probe", "add", "r:upret "+upTarget+":ftctl_add ret=$retval:s64"); r.code != 0 || !strings.Contains(r.stderr, fmt.Sprintf("file offset 0x%x of %s in PT_LOAD[", addOff, upTarget)) {
		t.Fatalf("add r: %v", r)
	} else {
		t.Logf("add r:\n%s%s", r.stdout, r.stderr)
	}
	if r := ftctlRun(t, "probe", "add", "p:uppie "+upTargetPIE+":ftctl_greet s=+0(%di):string c=$comm"); r.code != 0 {
		t.Fatalf("add PIE: %v", r)
	}
	if !strings.Contains(read(t, "uprobe_events"), fmt.Sprintf("%s:0x%016x", upTargetPIE, pieOff)) {
		t.Fatalf("uprobe_events:\n%s", read(t, "uprobe_events"))
	}

	r = ftctlRun(t, "probe", "list", "-o", "json")
	var list []struct {
		Name, Type, Place, Owner string
		Uprobe                   *struct{ Symbol string }
	}
	if r.code != 0 || json.Unmarshal(items(r.stdout), &list) != nil {
		t.Fatalf("list: %v", r)
	}
	got := map[string]string{}
	for _, p := range list {
		sym := ""
		if p.Uprobe != nil {
			sym = p.Uprobe.Symbol
		}
		got[p.Name] = p.Type + " " + p.Place + " " + p.Owner + " " + sym
	}
	for name, want := range map[string]string{
		"ftctl/upadd":  "uprobe " + upTarget + ":ftctl_add ftctl ftctl_add",
		"ftctl/upret":  "uretprobe " + upTarget + ":ftctl_add ftctl ftctl_add",
		"ftctl/uppie":  "uprobe " + upTargetPIE + ":ftctl_greet ftctl ftctl_greet",
		"otherup/keep": "uprobe " + upTarget + ":ftctl_greet other ftctl_greet",
	} {
		if got[name] != want {
			t.Errorf("list: %s is %q, want %q", name, got[name], want)
		}
	}

	if r := ftctlRun(t, "probe", "list"); r.code != 0 {
		t.Fatalf("list: %v", r)
	} else {
		t.Logf("probe list:\n%s", r.stdout)
	}
	if r := ftctlRun(t, "probe", "enable", "upadd", "upret", "uppie", "-B", "vmuprobe"); r.code != 0 {
		t.Fatalf("enable: %v", r)
	}
	write(t, inst+"/tracing_on", "1\n")
	if out := runTarget(t, upTarget, "3", "5", "7"); out != "14" {
		t.Errorf("target printed %q", out)
	}
	runTarget(t, upTargetPIE, "1", "1", "1")
	write(t, inst+"/tracing_on", "0\n")
	text := read(t, inst+"/trace")
	for _, want := range []string{"upadd: (0x", " a=5 b=7", " a=6 b=7", " a=7 b=7", "upret: (0x", " ret=14", `uppie: (0x`, ` s="hello uprobe" c="uprobetarget-pi"`} {
		if !strings.Contains(text, want) {
			t.Errorf("trace lacks %q:\n%s", want, text)
		}
	}
	// The binary reader decodes the same events as the kernel's text.
	p := startStream(t, nil, "-B", "vmuprobe", "stream", "-o", "json", "--reader", "binary", "--summary")
	if code := p.wait(t); code != 0 {
		t.Fatalf("stream: exit %d: %s", code, p.errb)
	}
	var gotJSON []string
	for _, line := range strings.SplitAfter(p.out.String(), "\n") {
		if line == "" {
			continue
		}
		if strings.Contains(line, `"event":"summary"`) {
			if !strings.Contains(line, `"reader":"trace_pipe_raw"`) {
				t.Errorf("summary: %s", line)
			}
			continue
		}
		gotJSON = append(gotJSON, line)
	}
	want := textJSON(t, text)
	sort.Strings(gotJSON)
	sort.Strings(want)
	if len(want) != 7 || strings.Join(gotJSON, "") != strings.Join(want, "") {
		t.Errorf("binary reader:\n%s\ntext:\n%s", strings.Join(gotJSON, ""), strings.Join(want, ""))
	}

	// stream --pid: the events of one process, the other run's left out.
	write(t, inst+"/tracing_on", "1\n")
	one := exec.Command(upTarget, "2", "40", "2")
	if err := one.Run(); err != nil {
		t.Fatal(err)
	}
	runTarget(t, upTargetPIE, "1", "1", "1")
	write(t, inst+"/tracing_on", "0\n")
	p = startStream(t, nil, "-B", "vmuprobe", "stream", "-o", "json", "--pid", fmt.Sprint(one.Process.Pid))
	if code := p.wait(t); code != 0 {
		t.Fatalf("stream --pid: exit %d: %s", code, p.errb)
	}
	var names []string
	for _, ev := range events(t, p.out.String()) {
		names = append(names, fmt.Sprintf("%v %v", ev["event"], ev["pid"]))
	}
	pid := fmt.Sprint(one.Process.Pid)
	if strings.Join(names, " ") != "upadd "+pid+" upret "+pid+" upadd "+pid+" upret "+pid {
		t.Errorf("stream --pid %s: %v", pid, names)
	}

	r = ftctlRun(t, "probe", "remove", "upadd", "upret", "uppie")
	if r.code != 0 || strings.Contains(read(t, "uprobe_events"), "ftctl/") {
		t.Fatalf("remove (enabled in vmuprobe): %v\n%s", r, read(t, "uprobe_events"))
	}
	if !strings.Contains(read(t, "uprobe_events"), other) {
		t.Errorf("another owner's uprobe was touched:\n%s", read(t, "uprobe_events"))
	}
}

// Refused with a caret: by ftctl before the kernel (no such symbol), and by the kernel (a
// probe point appended to an event whose arguments differ), its error_log caret under the
// user's text; a return probe on a Go binary unless --force. Nothing of another owner changed.
func TestUprobeRejected(t *testing.T) {
	other := fmt.Sprintf("p:otherup/keep2 %s:0x%016x", upTarget, upOffset(t, upTarget, "ftctl_greet"))
	write(t, "uprobe_events", other+"\n")
	removeUprobeLater(t, "otherup", "keep2")
	removeUprobeLater(t, "ftctl", "uprej")
	removeUprobeLater(t, "ftctl", "gor")
	before := read(t, "uprobe_events")

	r := ftctlRun(t, "probe", "add", "p:uprej "+upTarget+":ftctl_ad")
	if r.code != 2 || !strings.Contains(r.stderr, "No such function symbol") || !strings.Contains(r.stderr, "ftctl_add") ||
		!strings.Contains(r.stderr, "\n  p:uprej "+upTarget+":ftctl_ad\n  "+strings.Repeat(" ", len("p:uprej "+upTarget+":"))+"^") {
		t.Errorf("unknown symbol: %v", r)
	}
	r = ftctlRun(t, "probe", "add", "p:uprej /tmp/nonexistent/x:0x10")
	if r.code != 2 || !strings.Contains(r.stderr, "Failed to find the given file") {
		t.Errorf("no such file: %v", r)
	}
	if read(t, "uprobe_events") != before {
		t.Fatalf("a refused definition changed uprobe_events:\n%s", read(t, "uprobe_events"))
	}

	if r := ftctlRun(t, "probe", "add", "p:uprej "+upTarget+":ftctl_add a=%di:s64"); r.code != 0 {
		t.Fatalf("add: %v", r)
	}
	def := "p:ftctl/uprej " + upTarget + ":ftctl_greet a=%si:u8"
	r = ftctlRun(t, "probe", "add", "--append", def)
	t.Logf("kernel refusal: %v", r)
	if r.code != 3 || !strings.Contains(r.stderr, "kernel error_log: ") {
		t.Errorf("--append with other arguments: %v", r)
	} else if i := strings.Index(r.stderr, "    "+def+"\n"); i < 0 || !strings.Contains(r.stderr[i:], "^") {
		t.Errorf("no caret under the user's text: %v", r)
	}

	// ftctl itself is a Go binary.
	r = ftctlRun(t, "probe", "add", "r:gor /bin/ftctl:0x1000")
	if r.code != 2 || !strings.Contains(r.stderr, "Go") || !strings.Contains(r.stderr, "--force") {
		t.Errorf("return probe on a Go binary: %v", r)
	}
	if r := ftctlRun(t, "probe", "add", "--force", "r:gor /bin/ftctl:0x1000"); r.code != 0 {
		t.Errorf("--force: %v", r)
	}
	if r := ftctlRun(t, "probe", "remove", "uprej", "gor"); r.code != 0 {
		t.Errorf("remove: %v", r)
	}
	if got := read(t, "uprobe_events"); got != before {
		t.Errorf("uprobe_events after: %q, before: %q", got, before)
	}
}

// trace -p takes a uprobe, and -- COMMAND traces only the command: another process running the
// same code meanwhile is left out (set_event_pid, as for kprobes).
func TestUprobeTracePid(t *testing.T) {
	stop := make(chan struct{})
	done := make(chan struct{})
	runs := 0   // the other process's runs while the session lasted: the filter had work to do
	go func() { // the other process: a=900..
		defer close(done)
		for {
			select {
			case <-stop:
				return
			default:
			}
			exec.Command(upTarget, "2", "900", "1").Run()
			runs++
			time.Sleep(20 * time.Millisecond) // often enough to run during the session, gently on a TCG guest
		}
	}()
	// The command lasts a second after its calls: the other process runs meanwhile.
	r := ftctlRun(t, "trace", "-o", "json", "-p", "p:tadd "+upTarget+":ftctl_add a=%di:s64", "--", "/bin/sh", "-c", upTarget+" 3 100 1; sleep 1")
	close(stop)
	<-done
	if r.code != 0 {
		t.Fatalf("trace: %v", r)
	}
	if runs < 3 {
		t.Fatalf("the other process ran %d times during the session: the test tested nothing", runs)
	}
	t.Logf("the other process ran %d times during the session", runs)
	var as, jsonLines []string
	for _, l := range strings.SplitAfter(r.stdout, "\n") {
		if strings.HasPrefix(l, "{") { // the command's own output ("103") shares stdout
			jsonLines = append(jsonLines, l)
		}
	}
	for _, ev := range events(t, strings.Join(jsonLines, "")) {
		if ev["event"] == "tadd" {
			args, _ := ev["args"].(map[string]any)
			as = append(as, fmt.Sprint(args["a"]))
		}
	}
	if strings.Join(as, " ") != "100 101 102" {
		t.Errorf("events of tadd: %v\n%v", as, r)
	}
	if strings.Contains(read(t, "uprobe_events"), "tadd") {
		t.Errorf("the session's uprobe is left:\n%s", read(t, "uprobe_events"))
	}
}

//go:embed testdata/uprobe-corpus.txt
var uprobeCorpus string

// uprobeAccepts writes def to uprobe_events (no O_TRUNC) and removes what it created.
func uprobeAccepts(t *testing.T, def string) (bool, string) {
	t.Helper()
	top := topFS(t).Top()
	set := func() map[string]bool {
		m := map[string]bool{}
		for _, p := range tracefs.ParseProbeList(read(t, "uprobe_events")) {
			m[p.Group+"/"+p.Event] = true
		}
		return m
	}
	before := set()
	err := top.Write("uprobe_events", def+"\n")
	for k := range set() {
		if !before[k] {
			if e := top.Write("uprobe_events", "-:"+k+"\n"); e != nil {
				t.Fatalf("cleaning up %s: %v", k, e)
			}
		}
	}
	if err == nil {
		return true, ""
	}
	var te *tracefs.Error
	if errors.As(err, &te) && len(te.KernelLog) > 0 {
		e := te.KernelLog[len(te.KernelLog)-1]
		return false, fmt.Sprintf("%s @%d", e.Message, e.Pos)
	}
	return false, err.Error()
}

// TestUprobeCorpus: each definition of the uprobe corpus through ftctl's parser (this kernel's
// features, the ELF files) and through the kernel, the table in the log. The kernel accepting
// what ftctl refuses fails the test, and so does ftctl passing what the kernel refuses. A line
// marked "force:" is one ftctl refuses on purpose (unsafe, or not doing what it says) unless
// --force: it agrees with the kernel when the kernel refuses it too, or when the kernel takes
// it and --force passes it; `ftctl probe add --force` then runs it for real and must end as
// the kernel did (exit 0, or 3 with the kernel's error_log; 2 where ftctl knows this kernel
// refuses it).
func TestUprobeCorpus(t *testing.T) {
	hex := func(v uint64) string { return fmt.Sprintf("0x%x", v) }
	add := upOffset(t, upTarget, "ftctl_add")
	r := strings.NewReplacer("{T}", upTarget, "{PIE}", upTargetPIE, "{ADDDEC}", fmt.Sprint(add), "{ADD}", hex(add),
		"{GREET}", hex(upOffset(t, upTarget, "ftctl_greet")), "{PIEADD}", hex(upOffset(t, upTargetPIE, "ftctl_add")))
	p := probes.NewManager(topFS(t)).Parser
	p.User = probes.NewUserSpace()
	pf := p
	pf.Force = true
	var both, neither, kernelOnly, localOnly, unlessForce, forcedRefused int
	var table, forced strings.Builder
	for _, line := range strings.Split(uprobeCorpus, "\n") {
		if strings.TrimSpace(line) == "" || strings.HasPrefix(line, "#") {
			continue
		}
		def := r.Replace(line)
		force := strings.Contains(def, "# force:")
		_, lerr := p.Parse(def)
		_, ferr := pf.Parse(def)
		kok, kmsg := uprobeAccepts(t, def)
		verdict := ""
		switch {
		case force && lerr == nil:
			t.Errorf("%q is marked force: but ftctl passes it without --force", def)
		case !force && ferr != nil != (lerr != nil):
			t.Errorf("--force changes the verdict on %q, which is not marked force: (%v, %v)", def, lerr, ferr)
		}
		switch {
		case kok && lerr == nil:
			both++
			verdict = "accept/accept"
		case !kok && lerr != nil:
			neither++
			verdict = "reject/reject"
		case kok && force && ferr == nil:
			unlessForce++
			verdict = "accept/accept with --force"
		case kok:
			kernelOnly++
			verdict = "KERNEL-ACCEPTS/ftctl-rejects"
			t.Errorf("the kernel accepts %q but ftctl refuses it: %v (with --force: %v)", def, lerr, ferr)
		default:
			localOnly++
			verdict = "KERNEL-REJECTS/ftctl-accepts"
			t.Errorf("ftctl passes %q but the kernel refuses it: %s", def, kmsg)
		}
		lmsg := ""
		var se *probes.SyntaxError
		if errors.As(lerr, &se) {
			lmsg = fmt.Sprintf("%s @%d", se.Msg, se.Pos)
		}
		fmt.Fprintf(&table, "%-42s %-60q kernel=%q ftctl=%q\n", verdict, strings.ReplaceAll(line, "{T}", "T"), kmsg, lmsg)
		if !force {
			continue
		}
		// The real command with --force: it ends as the kernel did.
		text, _, _ := strings.Cut(def, " #")
		res := ftctlRun(t, "probe", "add", "--force", text)
		want := 0
		switch {
		case ferr != nil:
			want = 2 // ftctl knows this kernel refuses it
		case !kok:
			want = 3
			forcedRefused++
		}
		fmt.Fprintf(&forced, "  %-50q kernel=%-5v probe add --force: exit %d %q\n", strings.ReplaceAll(line, "{T}", "T"), kok, res.code,
			strings.TrimSpace(res.stdout+" "+res.stderr))
		if res.code != want {
			t.Errorf("probe add --force %q: want exit %d (the kernel accepts: %v)\n%v", text, want, kok, res)
		}
		if res.code == 0 {
			name := strings.TrimSpace(res.stdout)
			if !strings.Contains(res.stderr, "ftctl: --force: ") {
				t.Errorf("probe add --force %q: no warning on stderr\n%v", text, res)
			}
			if strings.HasPrefix(line, "r4:") && !strings.HasPrefix(name, "uprobes/p_uprobetarget_0x") {
				t.Errorf("r4: the kernel names the event itself, ftctl printed %q\n%v", name, res)
			}
			if rm := ftctlRun(t, "probe", "remove", name); rm.code != 0 {
				t.Errorf("removing %s: %v", name, rm)
			}
		}
	}
	t.Logf("uprobe corpus on %s: %d definitions; both accept %d, both reject %d, kernel rejects what ftctl accepts %d, kernel accepts what ftctl rejects %d; "+
		"refused unless --force and accepted by both with it %d (with --force the kernel still refuses %d)\n%s\nthe force: lines through probe add --force:\n%s",
		tracefs.KernelRelease(), both+neither+kernelOnly+localOnly+unlessForce, both, neither, localOnly, kernelOnly, unlessForce, forcedRefused, table.String(), forced.String())
	if both < 20 || neither < 20 {
		t.Errorf("corpus too one-sided: %d accepted, %d rejected by both", both, neither)
	}
	if left := read(t, "uprobe_events"); strings.Contains(left, ":ftu/") || strings.Contains(left, "/p_uprobetarget_") {
		t.Errorf("the corpus left uprobes behind:\n%s", left)
	}
}
