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

	"github.com/ftctl/ftctl/probes"
	"github.com/ftctl/ftctl/tracefs"
)

//go:embed testdata/dynprobe-corpus.txt
var dynCorpus string

// dynSet is the GROUP/EVENT names dynamic_events lists.
func dynSet(t *testing.T) map[string]bool { return eventSet(t, "dynamic_events") }

// dynKernelAccepts writes one definition to dynamic_events as a user would (appended) and
// removes whatever it created; the message is the kernel's error_log entry with its caret.
func dynKernelAccepts(t *testing.T, def string) (bool, string) {
	t.Helper()
	if err := tryDefinitionIn(t, "dynamic_events", def, nil); err != nil {
		return false, kernelMessage(err)
	}
	return true, ""
}

// TestDynProbeCorpus: every fprobe, tracepoint-probe and eprobe definition of the corpus,
// through ftctl's validator (this kernel's README, kallsyms, BTF and event formats) and through
// the kernel, counted per kind. The kernel accepting what ftctl refuses fails the test, and so
// does ftctl passing what the kernel refuses, unless the kernel's reason is one only the
// kernel can know (kernelOnlyReasons).
func TestDynProbeCorpus(t *testing.T) {
	for _, m := range []string{"crc16", "mbcache", "jbd2", "ext4"} { // ext4's functions and BTF, for MOD:SYM
		insmod(t, m)
	}
	start := dynSet(t)
	p := probes.NewManager(topFS(t)).Parser
	p.Kernel = probes.NewKernel(topFS(t))
	type counts struct{ both, neither, kernelOnly, localOnly int }
	per := map[byte]*counts{'f': {}, 't': {}, 'e': {}}
	var table strings.Builder
	for _, line := range strings.Split(dynCorpus, "\n") {
		def := strings.TrimSpace(line)
		if def == "" || strings.HasPrefix(def, "#") {
			continue
		}
		c := per[def[0]]
		_, lerr := p.Parse(def)
		kok, kmsg := dynKernelAccepts(t, def)
		verdict := ""
		switch {
		case kok && lerr == nil:
			c.both++
			verdict = "accept/accept"
		case !kok && lerr != nil:
			c.neither++
			verdict = "reject/reject"
		case kok && lerr != nil:
			c.kernelOnly++
			verdict = "KERNEL-ACCEPTS/ftctl-rejects"
			t.Errorf("the kernel accepts %q but ftctl refuses it: %v", def, lerr)
		default:
			c.localOnly++
			verdict = "kernel-rejects/ftctl-accepts"
			if !kernelOnlyReason(kmsg) {
				t.Errorf("ftctl passes %q but the kernel refuses it: %s", def, kmsg)
			}
		}
		lmsg := ""
		var se *probes.SyntaxError
		if errors.As(lerr, &se) {
			lmsg = fmt.Sprintf("%s @%d", se.Msg, se.Pos)
		}
		fmt.Fprintf(&table, "%-30s %-60q kernel=%q ftctl=%q\n", verdict, def, kmsg, lmsg)
	}
	var sum strings.Builder
	for _, k := range []byte{'f', 't', 'e'} {
		c := per[k]
		fmt.Fprintf(&sum, "\n  %c: %d definitions; both accept %d, both reject %d, kernel refuses what ftctl accepts %d, kernel accepts what ftctl refuses %d",
			k, c.both+c.neither+c.kernelOnly+c.localOnly, c.both, c.neither, c.localOnly, c.kernelOnly)
	}
	t.Logf("dynamic probe corpus on %s:%s\n%s", tracefs.KernelRelease(), sum.String(), table.String())
	var left []string
	for k := range dynSet(t) {
		if !start[k] {
			left = append(left, k)
		}
	}
	sort.Strings(left)
	if len(left) > 0 {
		t.Errorf("corpus left events behind: %v", left)
	}
}

func kernelOnlyReason(kmsg string) bool {
	for _, r := range kernelOnlyReasons {
		if strings.HasPrefix(kmsg, r) {
			return true
		}
	}
	return false
}

// removeDynLater deletes a dynamic event at the end of the test, disabled everywhere first.
func removeDynLater(t *testing.T, group, event string) {
	removeEventLater(t, "dynamic_events", group, event)
}

// TestStreamBinaryDynamicProbes records fprobes (entry and exit), a tracepoint probe and event
// probes (string, number and user-string arguments) into an instance, then compares the binary
// reader's JSON of trace_pipe_raw with the kernel's own text of the same events, event for
// event. fprobes and tracepoint probes only where the README announces them (not on 6.1).
func TestStreamBinaryDynamicProbes(t *testing.T) {
	const group = "ftctlrawdyn"
	inst := streamInstance(t, "st_dyn")
	write(t, inst+"/buffer_size_kb", "2048\n")
	ft := topFS(t).DetectFeatures().Probe
	defs := map[string]string{
		"esw":   "e:" + group + "/esw sched.sched_switch p=$prev_pid n=$next_comm:string st=$prev_state c=$comm",
		"eopen": "e:" + group + "/eopen syscalls.sys_enter_openat fn=+0($filename):ustring fl=$flags:x32 d=$dfd:s32",
	}
	if ft.Fprobe {
		defs["fent"] = "f:" + group + "/fent vfs_read count pos flags=file->f_flags name=file->f_path.dentry->d_name.name:string"
		defs["fret"] = "f:" + group + "/fret vfs_read%return ret=$retval"
	}
	if ft.Tprobe {
		defs["tsw"] = "t:" + group + "/tsw sched_switch prev->pid next->pid comm=next->comm:string"
	}
	var need []string
	for ev, def := range defs {
		write(t, "dynamic_events", def+"\n")
		removeDynLater(t, group, ev)
		need = append(need, ev)
	}
	sort.Strings(need)
	write(t, inst+"/events/"+group+"/enable", "1\n")
	truncate(t, inst+"/trace")
	write(t, inst+"/tracing_on", "1\n")
	if out, err := exec.Command("/bin/sh", "-c", "for i in 1 2 3; do head -c 100 /etc/motd /proc/version >/dev/null; cat /nonexistent 2>/dev/null; sleep 0.01; done").CombinedOutput(); err != nil {
		t.Fatalf("workload: %v: %s", err, out)
	}
	write(t, inst+"/tracing_on", "0\n")
	compareReadersKinds(t, inst, "binary", nil, need)
}

// TestDynProbeLifecycle: per kind this kernel announces (fprobe, tracepoint probe, event
// probe), ftctl probe add, list (its kind), enable in an instance, an event captured, format,
// remove while enabled (disabled everywhere first); a definition refused with its caret; a
// probe of the same kind of another group untouched throughout. On a kernel that does not
// announce a kind (6.1: f and t), probe add refuses it locally, saying so, writing nothing.
func TestDynProbeLifecycle(t *testing.T) {
	ft := topFS(t).DetectFeatures().Probe
	newInstance(t, "dynlife")
	removeInstanceLater(t, "dynlife")
	for _, k := range []struct {
		on                  bool
		kind, def, other    string
		typ, trigger, want  string
		bad, badMsg, notAnn string
	}{
		{ft.Fprobe, "f", "f:lf_f vfs_read count flags=file->f_flags", "f:othergrp/keepf vfs_write count",
			"fprobe", "/proc/version", "lf_f: (vfs_read+", "f:bad_f vfs_read count nosuch", "This variable is not found at this probe point", "fprobe events"},
		{ft.Tprobe, "t", "t:lf_t sched_switch prev->pid next->pid", "t:othergrp/keept sched_wakeup",
			"tprobe", "", "lf_t: (__probestub_sched_switch+", "t:bad_t sched_switch prev->nosuch", "This field is not found.", "tracepoint probes"},
		{ft.Eprobe, "e", "e:lf_e sched.sched_switch p=$prev_pid n=$next_comm:string if next_pid != 0", "e:othergrp/keepe sched.sched_wakeup",
			"eprobe", "", "lf_e: (sched.sched_switch) p=", "e:bad_e sched.sched_switch p=$nosuch", eprobeNoField(ft), "event probes"},
	} {
		t.Run(k.typ, func(t *testing.T) {
			if !k.on {
				before := read(t, "dynamic_events")
				r := ftctlRun(t, "probe", "add", k.def)
				if r.code != 2 || !strings.Contains(r.stderr, "this kernel does not announce "+k.notAnn) || read(t, "dynamic_events") != before {
					t.Fatalf("a kind the README does not announce: %v", r)
				}
				return
			}
			write(t, "dynamic_events", k.other+"\n")
			otherName := strings.Fields(k.other)[0][2:]
			removeDynLater(t, "othergrp", strings.TrimPrefix(otherName, "othergrp/"))
			name := strings.TrimPrefix(strings.Fields(k.def)[0], k.kind+":")
			removeDynLater(t, "ftctl", name)
			r := ftctlRun(t, "probe", "add", k.def)
			if r.code != 0 || strings.TrimSpace(r.stdout) != "ftctl/"+name {
				t.Fatalf("add: %v", r)
			}
			if !strings.Contains(read(t, "dynamic_events"), k.kind+":ftctl/"+name+" ") {
				t.Fatalf("dynamic_events:\n%s", read(t, "dynamic_events"))
			}
			r = ftctlRun(t, "probe", "list", "-o", "json")
			var list []map[string]any
			if err := json.Unmarshal(items(r.stdout), &list); r.code != 0 || err != nil {
				t.Fatalf("list: %v %v", r, err)
			}
			found := false
			for _, p := range list {
				if p["name"] == "ftctl/"+name {
					found = p["type"] == k.typ && p["owner"] == "ftctl"
				}
			}
			if !found {
				t.Errorf("list: no %s ftctl/%s owned by ftctl:\n%s", k.typ, name, r.stdout)
			}
			r = ftctlRun(t, "probe", "enable", name, "-B", "dynlife")
			if r.code != 0 || strings.TrimSpace(read(t, "instances/dynlife/events/ftctl/"+name+"/enable")) != "1" {
				t.Fatalf("enable: %v", r)
			}
			line := readPipeUntil(t, "dynlife", k.want, func() {
				exec.Command("/bin/sh", "-c", "head -c 10 /proc/version >/dev/null; sleep 0.01").Run()
			})
			if !strings.Contains(line, k.want) {
				t.Errorf("no event %q in the instance: %q", k.want, line)
			}
			r = ftctlRun(t, "probe", "format", name)
			if r.code != 0 || !strings.Contains(r.stdout, "ftctl/"+name) {
				t.Errorf("format: %v", r)
			}
			r = ftctlRun(t, "-o", "json", "status")
			if r.code != 0 || !strings.Contains(r.stdout, `"`+k.typ+`": `) {
				t.Errorf("status does not count the %s: %v", k.typ, r)
			}
			before := read(t, "dynamic_events")
			r = ftctlRun(t, "probe", "add", k.bad)
			if r.code != 2 || !strings.Contains(r.stderr, k.badMsg) || !strings.Contains(r.stderr, "^") || read(t, "dynamic_events") != before {
				t.Errorf("a refused definition: %v", r)
			}
			r = ftctlRun(t, "probe", "remove", name) // enabled in dynlife: disabled first
			if r.code != 0 || strings.Contains(read(t, "dynamic_events"), "ftctl/"+name+" ") {
				t.Fatalf("remove: %v\n%s", r, read(t, "dynamic_events"))
			}
			if !strings.Contains(read(t, "dynamic_events"), k.other) {
				t.Errorf("another group's %s was touched:\n%s", k.typ, read(t, "dynamic_events"))
			}
		})
	}
}

// eprobeNoField is the kernel's word for an event probe's $FIELD the event lacks: the common
// parser's BAD_VAR where the README announces the fprobe series' grammar (6.12), else
// trace_eprobe.c's BAD_ATTACH_ARG (6.1); TestSelftestVectors compares both with the kernel.
func eprobeNoField(ft tracefs.ProbeFeatures) string {
	if ft.Fprobe || ft.Tprobe || ft.BTFArgs || ft.RetArgs || ft.PdPD {
		return "Invalid $-variable specified"
	}
	return "Attached event does not have this field"
}

// TestProbeFields: ftctl probe fields lists an event's own fields (text) and all of them with
// the common ones marked (JSON); an event the kernel lacks is exit 2.
func TestProbeFields(t *testing.T) {
	r := ftctlRun(t, "probe", "fields", "sched:sched_switch")
	if r.code != 0 || !strings.Contains(r.stdout, "prev_pid") || strings.Contains(r.stdout, "common_pid") {
		t.Errorf("text: %v", r)
	}
	r = ftctlRun(t, "probe", "fields", "sched.sched_switch", "-o", "json")
	var f struct {
		Name   string `json:"name"`
		Fields []struct {
			Name   string `json:"name"`
			Offset int    `json:"offset"`
			Size   int    `json:"size"`
			Common bool   `json:"common"`
		} `json:"fields"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &f); r.code != 0 || err != nil || f.Name != "sched_switch" {
		t.Fatalf("json: %v %v", r, err)
	}
	own := 0
	for _, fd := range f.Fields {
		if !fd.Common {
			own++
		}
	}
	if own < 6 {
		t.Errorf("%d own fields: %+v", own, f.Fields)
	}
	if r := ftctlRun(t, "probe", "fields", "sched:no_such_event"); r.code != 2 {
		t.Errorf("unknown event: %v", r)
	}
}

// TestTraceDynamicProbes: ftctl trace -p takes every kind: the session's probes are defined in
// its group, their events streamed, and removed at the end.
func TestTraceDynamicProbes(t *testing.T) {
	ft := topFS(t).DetectFeatures().Probe
	args := []string{"trace", "-o", "json", "-p", "e:tsw sched.sched_switch p=$prev_pid"}
	if ft.Fprobe {
		args = append(args, "-p", "f:fr vfs_read%return ret=$retval")
	}
	if ft.Tprobe {
		args = append(args, "-p", "t:tw sched_wakeup p->pid")
	}
	r := ftctlRun(t, append(args, "--", "/bin/sh", "-c", "head -c 10 /proc/version; sleep 0.2")...)
	if r.code != 0 || !strings.Contains(r.stdout, `"event":"tsw"`) {
		t.Fatalf("trace: %v", r)
	}
	if d := read(t, "dynamic_events"); strings.Contains(d, "ftctl_") {
		t.Errorf("the session's probes were left behind:\n%s", d)
	}
}

// TestDynProbeAppendTakeBack: --append adds an fprobe exit point to an fprobe event of ftctl's;
// when its --filter is refused, only the point added is taken back (the kernel matches an
// fprobe's point by its symbol without %return), the first point left as it was.
func TestDynProbeAppendTakeBack(t *testing.T) {
	if !topFS(t).DetectFeatures().Probe.Fprobe {
		t.Skip("this kernel's README does not announce fprobes")
	}
	removeDynLater(t, "ftctl", "multi")
	if r := ftctlRun(t, "probe", "add", "f:multi vfs_read%return r=$retval"); r.code != 0 {
		t.Fatalf("add: %v", r)
	}
	first := read(t, "dynamic_events")
	r := ftctlRun(t, "probe", "add", "--append", "f:multi vfs_write%return r=$retval", "--filter", "nosuch == 1")
	if r.code != 2 || !strings.Contains(r.stderr, "probe point was removed again") {
		t.Fatalf("append with a refused filter: %v", r)
	}
	if got := read(t, "dynamic_events"); got != first {
		t.Errorf("dynamic_events after the take-back:\n%s\nwant:\n%s", got, first)
	}
	r = ftctlRun(t, "probe", "add", "--append", "f:multi vfs_write%return r=$retval")
	if r.code != 0 || strings.Count(read(t, "dynamic_events"), "f:ftctl/multi ") != 2 {
		t.Fatalf("append: %v\n%s", r, read(t, "dynamic_events"))
	}
	if r := ftctlRun(t, "probe", "remove", "multi"); r.code != 0 || strings.Contains(read(t, "dynamic_events"), "ftctl/multi") {
		t.Fatalf("remove: %v\n%s", r, read(t, "dynamic_events"))
	}
}
