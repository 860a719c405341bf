package count

import (
	"sort"

	"github.com/ftctl/ftctl/hist"
)

// Row is a function's calls over an interval.
type Row struct {
	Func  string `json:"func"` // as the kernel names it (raw: escape before a terminal)
	Count uint64 `json:"count"`
}

// Counts are the calls counted per function since the counting began.
type Counts map[string]uint64

// Delta is what cur counted beyond prev (nil: nothing before), most counted first (then by
// name), functions with no new call left out; at most top rows when top > 0. A count lower
// than before (a kernel table that dropped entries) is taken as it is.
func Delta(prev, cur Counts, top int) []Row {
	rows := make([]Row, 0, len(cur))
	for f, n := range cur {
		p := prev[f]
		if n < p {
			p = 0
		}
		if n-p > 0 {
			rows = append(rows, Row{f, n - p})
		}
	}
	sort.Slice(rows, func(i, j int) bool {
		if rows[i].Count != rows[j].Count {
			return rows[i].Count > rows[j].Count
		}
		return rows[i].Func < rows[j].Func
	})
	if top > 0 && len(rows) > top {
		rows = rows[:top]
	}
	return rows
}

// FromTable reads the counts of a hist table keyed by one symbol (__probe_ip.sym): the key's
// text is the function (two symbols of one name, in different modules, are summed).
func FromTable(t hist.Table) Counts {
	c := Counts{}
	for _, r := range t.Rows {
		if len(r.Keys) == 0 {
			continue
		}
		n, _ := r.Value("hitcount")
		c[r.Keys[0].Text] += uint64(n)
	}
	return c
}
