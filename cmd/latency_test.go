package cmd

import (
	"bytes"
	"os"
	"strings"
	"testing"

	"github.com/ftctl/ftctl/hist"
)

// The histograms latency prints, from the synthetic event's tables captured on the VM kernels
// (hist/testdata/*/hist.synth: lat.log2 alone, then common_pid,lat.log2).
func TestLatencyGroups(t *testing.T) {
	for _, k := range []string{"6.1", "6.12"} {
		b, err := os.ReadFile("../hist/testdata/" + k + "/hist.synth")
		if err != nil {
			t.Fatal(err)
		}
		tables, err := hist.ParseOutput(string(b))
		if err != nil || len(tables) != 2 {
			t.Fatal(k, err)
		}
		all, groups := latencyGroups("", tables[0])
		byPID, pids := latencyGroups("pid", tables[1])
		if all.Count != tables[0].Hits || byPID.Count != tables[1].Hits || len(groups) != 0 {
			t.Errorf("%s: %d and %d calls, the kernel counted %d and %d", k, all.Count, byPID.Count, tables[0].Hits, tables[1].Hits)
		}
		if len(pids) != int(tables[1].Entries) { // one row per pid in these captures
			t.Errorf("%s: %d pids", k, len(pids))
		}
		if len(all.Buckets) != len(tables[0].Rows) {
			t.Errorf("%s: buckets %+v", k, all.Buckets)
		}
		for i, bk := range all.Buckets {
			if bk.LeUS != 1<<tables[0].Rows[i].Keys[0].Num {
				t.Errorf("%s: bucket %d is %d µs for key %q", k, i, bk.LeUS, tables[0].Rows[i].Keys[0].Text)
			}
		}
		var out bytes.Buffer
		if err := writeLog2Chart(&out, all.Buckets); err != nil {
			t.Fatal(err)
		}
		lines := strings.Split(strings.TrimSpace(out.String()), "\n")
		// 6.12: 2^5 to 2^10, every bucket between drawn (2^8 empty)
		if k == "6.12" && (len(lines) != 7 || !strings.Contains(lines[1], "17 -> 32") || !strings.Contains(lines[4], "129 -> 256        : 0 ")) {
			t.Errorf("%s chart:\n%s", k, out.String())
		}
		if !strings.Contains(out.String(), "|"+strings.Repeat("*", 40)+"|") {
			t.Errorf("%s: the largest bucket's bar is not full:\n%s", k, out.String())
		}
	}
}
