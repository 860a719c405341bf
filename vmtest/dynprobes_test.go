//go:build vmtest

package vmtest

import (
	_ "embed"
	"errors"
	"fmt"
	"sort"
	"strings"
	"testing"

	"github.com/ftctl/ftctl/probes"
	"github.com/ftctl/ftctl/tracefs"
)

//go:embed testdata/dynprobe-corpus.txt
var dynCorpus string

// dynSet is the GROUP/EVENT names dynamic_events lists.
func dynSet(t *testing.T) map[string]bool {
	m := map[string]bool{}
	for _, p := range tracefs.ParseProbeList(read(t, "dynamic_events")) {
		m[p.Group+"/"+p.Event] = true
	}
	return m
}

// dynKernelAccepts writes one definition to dynamic_events as a user would (appended) and
// removes whatever it created; the message is the kernel's error_log entry with its caret.
func dynKernelAccepts(t *testing.T, def string) (bool, string) {
	t.Helper()
	top := topFS(t).Top()
	before := dynSet(t)
	err := top.Write("dynamic_events", def+"\n")
	for _, p := range tracefs.ParseProbeList(read(t, "dynamic_events")) {
		if !before[p.Group+"/"+p.Event] {
			if e := top.Write("dynamic_events", "-:"+p.Group+"/"+p.Event+"\n"); e != nil {
				t.Fatalf("cleaning up %s/%s: %v", p.Group, p.Event, e)
			}
		}
	}
	if err == nil {
		return true, ""
	}
	var te *tracefs.Error
	msg := err.Error()
	if errors.As(err, &te) && len(te.KernelLog) > 0 {
		e := te.KernelLog[len(te.KernelLog)-1]
		msg = fmt.Sprintf("%s @%d", e.Message, e.Pos)
	}
	return false, msg
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
