package agent

import (
	"fmt"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/ftctl/ftctl/flight"
	"github.com/ftctl/ftctl/hist"
	"github.com/ftctl/ftctl/profile"
	"github.com/ftctl/ftctl/tracefs"
)

// DefaultMaxSeries caps the series one hist trigger exports.
const DefaultMaxSeries = 1000

// maxLabel bounds a label value taken from the kernel (a stack, a process name).
const maxLabel = 256

// Collector reads, at each scrape, what the agent did and what the kernel holds for its
// profile: the agent's counters, the instance's rings per CPU, and each hist trigger of the
// profile as a Prometheus histogram (a .log2 or .buckets key) or counter family. It reads
// tracefs and writes nothing.
type Collector struct {
	a *Agent
}

// NewCollector is the agent's collector, to register in a prometheus.Registry.
func NewCollector(a *Agent) *Collector { return &Collector{a: a} }

// Describe sends nothing: the families follow the profile in force (an unchecked collector).
func (c *Collector) Describe(chan<- *prometheus.Desc) {}

// Collect sends the metrics.
func (c *Collector) Collect(ch chan<- prometheus.Metric) {
	p, st := c.a.Snapshot()
	ready, _ := c.a.Ready()
	agentMetrics(ch, p, st, ready)
	if p == nil {
		return
	}
	in, err := c.a.fs.Lookup(p.InstanceName())
	if err != nil {
		return // not ready says why
	}
	ringMetrics(ch, in)
	histMetrics(ch, in, p, c.a.opts.MaxSeries)
	if fst, ok := c.a.Flight(); ok {
		flightMetrics(ch, in, fst)
	}
}

var (
	flightFired = prometheus.NewDesc("ftctl_flight_triggers_fired_total",
		"Times a flight trigger fired (SIGUSR1, an event, a latency, a WARN), a dump made or not (within its rate limit).", []string{"trigger"}, nil)
	flightFill = prometheus.NewDesc("ftctl_flight_ring_fill_ratio",
		"How full the flight recorder's ring is: the bytes its CPUs' rings hold against their size (0 to 1).", []string{"trace_instance"}, nil)
)

// flightMetrics: the profile's flight recorder, its triggers and dumps.
func flightMetrics(ch chan<- prometheus.Metric, in *tracefs.Instance, st FlightStats) {
	gauge(ch, "ftctl_flight_armed", "1 when the flight recorder's triggers are armed.", boolf(st.Armed))
	counter(ch, "ftctl_flight_dumps_total", "Dumps of the flight recorder's ring that a trigger made.", st.Dumps)
	counter(ch, "ftctl_flight_dump_failures_total", "Dumps a trigger asked for that failed (the triggers stay armed).", st.DumpFailures)
	fired := maps.Clone(st.Fired)
	for _, t := range st.Triggers {
		if _, ok := fired[t]; !ok {
			fired[t] = 0
		}
	}
	for _, t := range slices.Sorted(maps.Keys(fired)) {
		constant(ch, flightFired, prometheus.CounterValue, float64(fired[t]), labelValue(t))
	}
	kb, _, ok := in.BufferSizeKB()
	if !ok {
		return
	}
	if cpus, err := in.CPUStats(); err == nil {
		constant(ch, flightFill, prometheus.GaugeValue, flight.FillRatio(cpus, kb), in.Name)
	}
}

// send sends m, or when it could not be made (names from the kernel the exposition refuses),
// an invalid metric that makes the scrape report the error: never a panic.
func send(ch chan<- prometheus.Metric, d *prometheus.Desc, m prometheus.Metric, err error) {
	if err != nil {
		m = prometheus.NewInvalidMetric(d, err)
	}
	ch <- m
}

func constant(ch chan<- prometheus.Metric, d *prometheus.Desc, t prometheus.ValueType, v float64, labels ...string) {
	m, err := prometheus.NewConstMetric(d, t, v, labels...)
	send(ch, d, m, err)
}

func gauge(ch chan<- prometheus.Metric, name, help string, v float64) {
	constant(ch, prometheus.NewDesc(name, help, nil, nil), prometheus.GaugeValue, v)
}

func counter(ch chan<- prometheus.Metric, name, help string, v uint64) {
	constant(ch, prometheus.NewDesc(name, help, nil, nil), prometheus.CounterValue, float64(v))
}

func boolf(b bool) float64 {
	if b {
		return 1
	}
	return 0
}

func agentMetrics(ch chan<- prometheus.Metric, p *profile.Profile, st Stats, ready bool) {
	gauge(ch, "ftctl_agent_ready", "1 when the profile is applied and the last check could read the kernel.", boolf(ready))
	if p != nil {
		d := prometheus.NewDesc("ftctl_agent_profile_info", "The profile in force: its name and instance.", []string{"profile", "trace_instance"}, nil)
		constant(ch, d, prometheus.GaugeValue, 1, p.Metadata.Name, p.InstanceName())
		gauge(ch, "ftctl_agent_profile_in_sync", "1 when the last check found the kernel holding the profile (after a repair, if one was made).", boolf(st.InSync))
	}
	counter(ch, "ftctl_agent_applies_total", "Applies that wrote something (the first, reloads and repairs).", st.Applies)
	counter(ch, "ftctl_agent_repairs_total", "Drift found and repaired.", st.Repairs)
	counter(ch, "ftctl_agent_drifts_total", "Checks that found the kernel drifted from the profile.", st.Drifts)
	counter(ch, "ftctl_agent_checks_total", "Checks of the kernel against the profile.", st.Checks)
	counter(ch, "ftctl_agent_reloads_total", "Changed profile files applied.", st.Reloads)
	d := prometheus.NewDesc("ftctl_agent_failures_total", "Failures by stage: load (the file), check (reading the kernel), apply (the kernel refused; the state before was restored), flight (arming the flight triggers, or their pipe).", []string{"stage"}, nil)
	for _, stage := range []string{"load", "check", "apply", "flight"} {
		constant(ch, d, prometheus.CounterValue, float64(st.Failures[stage]), stage)
	}
	if !st.LastCheck.IsZero() {
		gauge(ch, "ftctl_agent_last_check_timestamp_seconds", "When the kernel was last checked against the profile.", float64(st.LastCheck.UnixNano())/1e9)
	}
}

var ringLabels = []string{"trace_instance", "cpu"}

var (
	ringEntries  = prometheus.NewDesc("ftctl_ring_entries", "Events in the CPU's ring buffer now.", ringLabels, nil)
	ringBytes    = prometheus.NewDesc("ftctl_ring_bytes", "Bytes in the CPU's ring buffer now.", ringLabels, nil)
	ringOverrun  = prometheus.NewDesc("ftctl_ring_overrun_total", "Events overwritten in the CPU's ring (an overwrite ring's oldest, lost to readers).", ringLabels, nil)
	ringCommit   = prometheus.NewDesc("ftctl_ring_commit_overrun_total", "Events lost because the ring's writer was interrupted by too many nested events.", ringLabels, nil)
	ringDropped  = prometheus.NewDesc("ftctl_ring_dropped_events_total", "Events dropped because the ring was full (a ring that does not overwrite).", ringLabels, nil)
	histFolded   = prometheus.NewDesc("ftctl_hist_folded_rows", "Rows of a hist trigger beyond the series cap, folded into the series labelled _other_.", []string{"hist"}, nil)
	histDropped  = prometheus.NewDesc("ftctl_hist_dropped_total", "Events the kernel's hist table could not hold (its size reached).", []string{"hist"}, nil)
	histEntries  = prometheus.NewDesc("ftctl_hist_entries", "Entries in the kernel's hist table.", []string{"hist"}, nil)
	otherLabel   = "_other_"
	bucketMods   = []string{"log2", "buckets"}
	skippedMods  = []string{"graph", "percent"}
	histHitcount = "hitcount"
)

func ringMetrics(ch chan<- prometheus.Metric, in *tracefs.Instance) {
	stats, err := in.CPUStats()
	if err != nil {
		return
	}
	name := in.Name
	for _, s := range stats {
		cpu := strconv.Itoa(s.CPU)
		constant(ch, ringEntries, prometheus.GaugeValue, float64(s.Entries), name, cpu)
		constant(ch, ringBytes, prometheus.GaugeValue, float64(s.BytesInBuffer), name, cpu)
		constant(ch, ringOverrun, prometheus.CounterValue, float64(s.Overrun), name, cpu)
		constant(ch, ringCommit, prometheus.CounterValue, float64(s.CommitOverrun), name, cpu)
		constant(ch, ringDropped, prometheus.CounterValue, float64(s.DroppedEvents), name, cpu)
	}
}

// histTable is one hist trigger's table, named for Prometheus.
type histTable struct {
	name  string // the family's name: ftctl_hist_EVENT or ftctl_hist_NAME (the trigger's name=)
	event string
	hist.Table
}

// histTables reads the hist file of every event the profile's hist triggers are on, each
// table named once.
func histTables(in *tracefs.Instance, p *profile.Profile) []histTable {
	var out []histTable
	seen := map[string]bool{}
	used := map[string]int{}
	for _, t := range p.Spec.Triggers {
		if !strings.HasPrefix(t.Trigger, "hist") {
			continue
		}
		ev := strings.ReplaceAll(t.Event, profile.GroupVar, p.Group())
		if seen[ev] {
			continue
		}
		seen[ev] = true
		sys, name, ok := strings.Cut(ev, ":")
		if !ok {
			continue
		}
		text, err := in.EventHist(sys, name)
		if err != nil {
			continue
		}
		tables, _ := hist.ParseOutput(string(text)) // the tables parsed before a bad line
		for _, tb := range tables {
			base := "ftctl_hist_" + metricName(histName(tb.Trigger, name))
			used[base]++
			if used[base] > 1 {
				base += "_" + strconv.Itoa(used[base])
			}
			out = append(out, histTable{name: base, event: ev, Table: tb})
		}
	}
	return out
}

// histName is the trigger's name= when it has one, else the event's name.
func histName(trigger, event string) string {
	spec, _, _ := strings.Cut(trigger, " if ")
	for _, part := range strings.Split(spec, ":") {
		if n, ok := strings.CutPrefix(part, "name="); ok && n != "" {
			return n
		}
	}
	return event
}

// metricName makes s a valid Prometheus name part: [a-zA-Z0-9_], others as _.
func metricName(s string) string {
	b := []byte(s)
	for i, c := range b {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_') {
			b[i] = '_'
		}
	}
	return string(b)
}

// labelName is a key's name made a label name: a name the exposition reserves (__...), one
// Prometheus gives its targets (job, instance: the tracing instance is trace_instance here),
// or one that starts with a digit gets a k_ before it.
func labelName(s string) string {
	s = metricName(s)
	if s == "" || strings.HasPrefix(s, "__") || s[0] >= '0' && s[0] <= '9' || s == "job" || s == "instance" {
		s = "k_" + s
	}
	return s
}

// labelValue is kernel text made a label value: valid UTF-8, a stack's lines joined by ";" (the
// folded-stack habit), bounded.
func labelValue(s string) string {
	s = strings.ToValidUTF8(s, "\uFFFD")
	if strings.Contains(s, "\n") {
		var parts []string
		for _, l := range strings.Split(s, "\n") {
			if l = strings.TrimSpace(l); l != "" {
				parts = append(parts, l)
			}
		}
		s = strings.Join(parts, ";")
	}
	if len(s) > maxLabel {
		cut := maxLabel
		for cut > 0 && !utf8.RuneStart(s[cut]) {
			cut--
		}
		s = s[:cut]
	}
	return s
}

func histMetrics(ch chan<- prometheus.Metric, in *tracefs.Instance, p *profile.Profile, maxSeries int) {
	if maxSeries <= 0 {
		maxSeries = DefaultMaxSeries
	}
	for _, t := range histTables(in, p) {
		constant(ch, histEntries, prometheus.GaugeValue, float64(t.Entries), t.name)
		constant(ch, histDropped, prometheus.CounterValue, float64(t.Dropped), t.name)
		var folded int
		if b := bucketKey(t.KeyFields()); b >= 0 {
			folded = histogram(ch, t, b, maxSeries)
		} else {
			folded = counters(ch, t, maxSeries)
		}
		constant(ch, histFolded, prometheus.GaugeValue, float64(folded), t.name)
	}
}

// bucketKey is the index of the table's one .log2 or .buckets key, -1 when it has none (or more
// than one: a histogram has one bucket dimension).
func bucketKey(keys []hist.Field) int {
	at := -1
	for i, k := range keys {
		if slices.Contains(bucketMods, k.Mod) {
			if at >= 0 {
				return -1
			}
			at = i
		}
	}
	return at
}

// upperBound is the largest value the row's bucket holds: 2^N for .log2 (the kernel keys
// ilog2(roundup_pow_of_two(v))), LO+SIZE-1 for .buckets=SIZE.
func upperBound(k hist.Key, f hist.Field) (float64, bool) {
	if !k.HasNum {
		return 0, false
	}
	if f.Mod == "log2" {
		return math.Ldexp(1, int(min(k.Num, 1023))), true
	}
	return float64(k.Num) + float64(f.Buckets) - 1, true
}

// series groups a table's rows by the labels of its keys other than skip (-1: none), keeping
// the first max label sets (the kernel lists rows in its sort order) and folding the rest into
// one labelled _other_.
type series struct {
	names  []string
	order  []string
	labels map[string][]string
	rows   map[string][]hist.Row
	folded int
}

func groupRows(t histTable, skip, max int) *series {
	s := &series{labels: map[string][]string{}, rows: map[string][]hist.Row{}}
	keys := t.KeyFields()
	for i, k := range keys {
		if i != skip {
			s.names = append(s.names, labelName(k.Name))
		}
	}
	for _, r := range t.Rows {
		var vals []string
		for i, k := range r.Keys {
			if i != skip {
				vals = append(vals, labelValue(k.Text))
			}
		}
		id := strings.Join(vals, "\x00")
		if _, ok := s.labels[id]; !ok {
			if len(s.order) >= max-1 && len(s.names) > 0 {
				s.folded++
				vals = slices.Repeat([]string{otherLabel}, len(s.names))
				id = strings.Join(vals, "\x00")
			}
			if _, ok := s.labels[id]; !ok {
				s.labels[id] = vals
				s.order = append(s.order, id)
			}
		}
		s.rows[id] = append(s.rows[id], r)
	}
	return s
}

// histogram sends the table as a Prometheus histogram per label set: a row's hitcount in its
// bucket; the sum is that of a value naming the bucket key's field (vals=lat beside keys=lat.log2),
// else NaN (the kernel keeps no sum).
func histogram(ch chan<- prometheus.Metric, t histTable, b, maxSeries int) int {
	keys := t.KeyFields()
	s := groupRows(t, b, maxSeries)
	desc := prometheus.NewDesc(t.name, fmt.Sprintf("The hist trigger on %s, %s: hits per bucket of %s.", t.event, labelValue(t.Trigger), keys[b].Name), s.names, nil)
	for _, id := range s.order {
		buckets := map[float64]uint64{}
		var count uint64
		sum, sumOK := 0.0, false
		for _, r := range s.rows[id] {
			le, ok := upperBound(r.Keys[b], keys[b])
			hits, _ := r.Value(histHitcount)
			if !ok {
				continue
			}
			buckets[le] += uint64(hits)
			count += uint64(hits)
			if v, ok := r.Value(keys[b].Name); ok {
				sum, sumOK = sum+v, true
			}
		}
		if !sumOK {
			sum = math.NaN()
		}
		cum := map[float64]uint64{}
		var run uint64
		for _, le := range slices.Sorted(maps.Keys(buckets)) {
			run += buckets[le]
			cum[le] = run
		}
		m, err := prometheus.NewConstHistogram(desc, count, sum, cum, s.labels[id]...)
		send(ch, desc, m, err)
	}
	return s.folded
}

// counters sends each value of the table (hitcount and the vals=) as a counter family
// NAME_VALUE_total, one series per row's keys.
func counters(ch chan<- prometheus.Metric, t histTable, maxSeries int) int {
	s := groupRows(t, -1, maxSeries)
	for _, v := range t.ValueFields() {
		if slices.Contains(skippedMods, v.Mod) {
			continue
		}
		name := t.name + "_" + metricName(v.Name) + "_total"
		desc := prometheus.NewDesc(name, fmt.Sprintf("The hist trigger on %s, %s: %s per key.", t.event, labelValue(t.Trigger), v.Name), s.names, nil)
		for _, id := range s.order {
			var sum float64
			for _, r := range s.rows[id] {
				n, _ := r.Value(v.Name)
				sum += n
			}
			constant(ch, desc, prometheus.CounterValue, sum, s.labels[id]...)
		}
	}
	return s.folded
}
