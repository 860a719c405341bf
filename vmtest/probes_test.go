//go:build vmtest

package vmtest

import (
	_ "embed"
	"errors"
	"fmt"
	"strings"
	"testing"

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
// removes whatever it created.
func kernelAccepts(t *testing.T, def string) (bool, string) {
	t.Helper()
	top := topFS(t).Top()
	before := probeSet(t)
	err := top.Write("kprobe_events", def+"\n")
	for _, p := range tracefs.ParseProbeList(read(t, "kprobe_events")) {
		if !before[p.Group+"/"+p.Event] {
			if e := top.Write("kprobe_events", "-:"+p.Group+"/"+p.Event+"\n"); e != nil {
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
		msg = te.KernelLog[len(te.KernelLog)-1].Message
	}
	return false, msg
}

func probeSet(t *testing.T) map[string]bool {
	m := map[string]bool{}
	for _, p := range tracefs.ParseProbeList(read(t, "kprobe_events")) {
		m[p.Group+"/"+p.Event] = true
	}
	return m
}

// TestProbeCorpus: every definition of the corpus, through ftctl's validator (with this
// kernel's features) and through the kernel. The kernel accepting what ftctl refuses fails the
// test; the reverse (ftctl lets the kernel judge) is reported.
func TestProbeCorpus(t *testing.T) {
	start := probeSet(t)
	ft := topFS(t).DetectFeatures()
	p := probes.Parser{Features: ft.Probe}
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
		}
		lmsg := ""
		if lerr != nil {
			var se *probes.SyntaxError
			if errors.As(lerr, &se) {
				lmsg = se.Msg
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
