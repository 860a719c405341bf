package cmd

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/ftctl/ftctl/count"
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
		all, groups := latencyGroups("", tables[0], false)
		byPID, pids := latencyGroups("pid", tables[1], false)
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

// With the probes' cost taken off, a call shorter than it wraps below zero: the kernel lists it
// as 2^64 (seen on 6.1 and 6.12 with a bias larger than every call); it is put in the first
// bucket with the calls of 0 and 1 µs, and the output says what was taken off.
func TestLatencyCorrectedBuckets(t *testing.T) {
	const text = `# event histogram
#
# trigger info: hist:keys=lat.log2:vals=hitcount:sort=lat.log2:size=2048 [active]
#

{ lat: ~ 2^0  } hitcount:       4143
{ lat: ~ 2^2  } hitcount:        436
{ lat: ~ 2^64 } hitcount:         12

Totals:
    Hits: 4591
    Entries: 3
    Dropped: 0
`
	tables, err := hist.ParseOutput(text)
	if err != nil || len(tables) != 1 {
		t.Fatal(err)
	}
	all, _ := latencyGroups("", tables[0], true)
	if len(all.Buckets) != 2 || all.Buckets[0] != (latencyBucket{1, 4155}) || all.Buckets[1] != (latencyBucket{4, 436}) || all.Count != 4591 {
		t.Errorf("corrected: %+v", all)
	}
	if raw, _ := latencyGroups("", tables[0], false); raw.Buckets[len(raw.Buckets)-1].LeUS != 1<<63 {
		t.Errorf("raw: %+v", raw.Buckets)
	}
	var out bytes.Buffer
	g := &Globals{Out: &out, Err: &out, Output: string(FormatText)}
	bias := count.Bias{US: 7, Func: count.NearZero, Kind: "fprobe", Calls: 2000, Measured: time.Date(2026, 11, 28, 4, 40, 0, 0, time.UTC)}
	if err := printLatency(g, "vfs_read", "", tables[0], bias); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "corrected: 7 µs taken off each duration, the probes' own cost (the median of 2000 calls of __task_pid_nr_ns, fprobes, measured 2026-11-28T04:40:00Z)") {
		t.Errorf("text:\n%s", out.String())
	}
}

// The correction's "below" counts the calls shorter than it (listed as 2^64); more than half
// of them says the correction is too large, and a notice says so.
func TestLatencyBelowCorrection(t *testing.T) {
	table := func(first, rest int) hist.Table {
		text := fmt.Sprintf("# event histogram\n#\n# trigger info: hist:keys=lat.log2:vals=hitcount:sort=lat.log2:size=2048 [active]\n#\n\n{ lat: ~ 2^0  } hitcount: 1\n{ lat: ~ 2^64 } hitcount: %d\n{ lat: ~ 2^3  } hitcount: %d\n\nTotals:\n    Hits: %d\n    Entries: 3\n    Dropped: 0\n", first, rest, first+rest+1)
		tables, err := hist.ParseOutput(text)
		if err != nil || len(tables) != 1 {
			t.Fatal(err)
		}
		return tables[0]
	}
	bias := count.Bias{US: 5, Func: count.NearZero, Kind: "kprobe", Calls: 2000, Measured: time.Now()}
	for _, c := range []struct {
		first, rest int
		notice      bool
	}{{0, 1999, false}, {999, 1000, false}, {1001, 998, true}} {
		var out, errOut bytes.Buffer
		g := &Globals{Out: &out, Err: &errOut, Output: string(FormatJSON)}
		if err := printLatency(g, "f", "", table(c.first, c.rest), bias); err != nil {
			t.Fatal(err)
		}
		var doc struct {
			Correction struct{ Below uint64 } `json:"correction"`
		}
		if err := json.Unmarshal(out.Bytes(), &doc); err != nil {
			t.Fatalf("%v: %s", err, out.String())
		}
		if want := uint64(c.first); doc.Correction.Below != want {
			t.Errorf("%d/%d: below %d, want %d", c.first, c.rest, doc.Correction.Below, want)
		}
		if got := strings.Contains(errOut.String(), "the correction is too large"); got != c.notice {
			t.Errorf("%d/%d: notice %v, want %v: %q", c.first, c.rest, got, c.notice, errOut.String())
		}
	}
}
