package agent

import (
	"math"
	"os"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	"github.com/ftctl/ftctl/hist"
)

// tables is a collector of parsed hist tables, as the agent's Collect makes them.
type tables struct {
	ts  []histTable
	max int
}

func (c tables) Describe(chan<- *prometheus.Desc) {}
func (c tables) Collect(ch chan<- prometheus.Metric) {
	for _, t := range c.ts {
		var folded int
		if b := bucketKey(t.KeyFields()); b >= 0 {
			folded = histogram(ch, t, b, c.max)
		} else {
			folded = counters(ch, t, c.max)
		}
		constant(ch, histFolded, prometheus.GaugeValue, float64(folded), t.name)
	}
}

func gather(t *testing.T, file string, max int) map[string]*dto.MetricFamily {
	t.Helper()
	var hs []histTable
	for i, tb := range mustTables(t, file) {
		hs = append(hs, histTable{name: "ftctl_hist_t" + string(rune('0'+i)), event: "synthetic:x", Table: tb})
	}
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(tables{hs, max})
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]*dto.MetricFamily{}
	for _, mf := range mfs {
		out[mf.GetName()] = mf
	}
	return out
}

// A .log2 key becomes a histogram whose le are the kernel's 2^N and whose count is the hits;
// a second key becomes a label; beyond the cap, rows fold into _other_ and are counted.
func TestHistogramFromLog2(t *testing.T) {
	for _, k := range []string{"6.1", "6.12"} {
		mfs := gather(t, "../hist/testdata/"+k+"/hist.synth", 3)
		h := mfs["ftctl_hist_t0"]
		if h == nil || h.GetType() != dto.MetricType_HISTOGRAM || len(h.Metric) != 1 {
			t.Fatalf("%s: t0 = %v", k, h)
		}
		hm := h.Metric[0].GetHistogram()
		tb := mustTables(t, "../hist/testdata/"+k+"/hist.synth")[0]
		if hm.GetSampleCount() != tb.Hits {
			t.Errorf("%s: count %d, the kernel's hits %d", k, hm.GetSampleCount(), tb.Hits)
		}
		if !math.IsNaN(hm.GetSampleSum()) {
			t.Errorf("%s: sum %v without a value of lat: want NaN", k, hm.GetSampleSum())
		}
		prev := uint64(0)
		for _, b := range hm.Bucket {
			if b.GetCumulativeCount() < prev || math.Log2(b.GetUpperBound()) != math.Trunc(math.Log2(b.GetUpperBound())) {
				t.Errorf("%s: bucket %v after %d", k, b, prev)
			}
			prev = b.GetCumulativeCount()
		}
		if prev != tb.Hits {
			t.Errorf("%s: last bucket %d, hits %d", k, prev, tb.Hits)
		}
		// keys=common_pid,lat.log2: a series per pid, 3 kept (2 and _other_).
		h1 := mfs["ftctl_hist_t1"]
		if h1 == nil || len(h1.Metric) != 3 {
			t.Fatalf("%s: t1 has %v", k, h1)
		}
		var total uint64
		others := 0
		for _, m := range h1.Metric {
			total += m.GetHistogram().GetSampleCount()
			if m.Label[0].GetName() != "common_pid" {
				t.Errorf("%s: label %v", k, m.Label)
			}
			if m.Label[0].GetValue() == otherLabel {
				others++
			}
		}
		if tb1 := mustTables(t, "../hist/testdata/"+k+"/hist.synth")[1]; total != tb1.Hits || others != 1 {
			t.Errorf("%s: t1 total %d (hits %d), %d _other_", k, total, tb1.Hits, others)
		}
		folded := mfs["ftctl_hist_folded_rows"]
		if folded == nil || folded.Metric[1].GetGauge().GetValue() == 0 {
			t.Errorf("%s: folded rows not counted: %v", k, folded)
		}
	}
}

// A table without a bucket key becomes counters per key and value, rows of one label set
// added (execname keys by comm).
func TestCountersFromKeys(t *testing.T) {
	for _, k := range []string{"6.1", "6.12"} {
		file := "../hist/testdata/" + k + "/hist.sys_enter_read"
		mfs := gather(t, file, 1000)
		tb := mustTables(t, file)[0]
		var hits, count float64
		for _, r := range tb.Rows {
			h, _ := r.Value("hitcount")
			c, _ := r.Value("count")
			hits, count = hits+h, count+c
		}
		for name, want := range map[string]float64{"ftctl_hist_t0_hitcount_total": hits, "ftctl_hist_t0_count_total": count} {
			mf := mfs[name]
			if mf == nil || mf.GetType() != dto.MetricType_COUNTER {
				t.Fatalf("%s: %s = %v", k, name, mf)
			}
			var got float64
			for _, m := range mf.Metric {
				got += m.GetCounter().GetValue()
			}
			if got != want {
				t.Errorf("%s: %s sums to %v, the table to %v", k, name, got, want)
			}
		}
	}
}

func mustTables(t *testing.T, file string) []hist.Table {
	t.Helper()
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	tbs, err := hist.ParseOutput(string(b))
	if err != nil {
		t.Fatal(err)
	}
	return tbs
}

func TestNames(t *testing.T) {
	for in, want := range map[string]string{"sys_enter_read": "sys_enter_read", "a-b.c": "a_b_c", "ü": "__"} {
		if got := metricName(in); got != want {
			t.Errorf("metricName(%q) = %q, want %q", in, got, want)
		}
	}
	for in, want := range map[string]string{"__name": "k___name", "1x": "k_1x", "pid": "pid", "instance": "k_instance"} {
		if got := labelName(in); got != want {
			t.Errorf("labelName(%q) = %q, want %q", in, got, want)
		}
	}
	if got := labelValue("a\n  b\n c\n"); got != "a;b;c" {
		t.Errorf("stack label %q", got)
	}
	long := labelValue(strings.Repeat("é", 300) + "\xff")
	if len(long) > maxLabel || !strings.HasPrefix(long, "é") || strings.ContainsRune(long, '\uFFFD') && len(long) > maxLabel {
		t.Errorf("long label %d bytes", len(long))
	}
	if got := histName("hist:name=lat:keys=x", "ev"); got != "lat" {
		t.Errorf("histName = %q", got)
	}
}
