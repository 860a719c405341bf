package agent

import (
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/ftctl/ftctl/hist"
)

// Whatever a hist file holds, its tables become metrics without a panic, and a registry
// gathers them or says what it refused.
func FuzzHistMetrics(f *testing.F) {
	f.Add("# trigger info: hist:keys=lat.log2:vals=hitcount:sort=lat.log2:size=2048 [active]\n{ lat: ~ 2^5  } hitcount:          4\n")
	f.Add("# trigger info: hist:keys=common_pid.execname:vals=hitcount,count [active]\n{ common_pid: head [ 160] } hitcount: 1  count: 4096\n")
	f.Add("# trigger info: hist:keys=x.buckets=10,y:vals=hitcount [active]\n{ x: ~ 0-9, y: 3 } hitcount: 2\n")
	f.Fuzz(func(t *testing.T, text string) {
		tbs, _ := hist.ParseOutput(text)
		var hs []histTable
		for _, tb := range tbs {
			hs = append(hs, histTable{name: "ftctl_hist_f", event: "s:e", Table: tb})
		}
		reg := prometheus.NewRegistry()
		reg.MustRegister(tables{hs, 3})
		reg.Gather() // an error is a refused series, not a crash
	})
}
