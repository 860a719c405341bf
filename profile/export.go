package profile

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/ftctl/ftctl/filters"
	"github.com/ftctl/ftctl/session"
	"github.com/ftctl/ftctl/tracefs"
)

// ExportName is the owner name an export of instance gets by default: a declared owner's
// own name, else the instance's letters and digits ("top" for the top level).
func ExportName(instance string) string {
	if rest, ok := strings.CutPrefix(instance, "ftctl-owned-"); ok && session.CheckOwnerName(rest) == nil {
		return rest
	}
	if instance == "" {
		return "top"
	}
	var b strings.Builder
	for _, c := range strings.ToLower(instance) {
		if (c >= 'a' && c <= 'z' || c >= '0' && c <= '9') && b.Len() < 32 {
			b.WriteRune(c)
		}
	}
	if b.Len() == 0 {
		return "exported"
	}
	return b.String()
}

// Export reads the state of an instance ("" the top level) as a profile named name: its
// tracer, tracing_on, buffer size, clock, the options that differ from the top level's (those
// a new instance starts with), its function lists as the functions they hold (a glob is
// expanded by the kernel when written: what it was is lost), its enabled events with their
// filters, the probes among them (and, for a declared owner's instance, its probes, synthetic
// events and the triggers on its events). Nothing is written.
func Export(fs *tracefs.FS, instance, name string) (*Profile, error) {
	if err := session.CheckOwnerName(name); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrInvalid, err)
	}
	in, err := fs.Lookup(instance)
	if err != nil {
		return nil, err
	}
	p := &Profile{APIVersion: APIVersion, Kind: Kind, Metadata: Metadata{Name: name}}
	x := exporter{fs: fs, in: in, p: p, group: p.Group()}
	if id, ok := session.InstanceID(instance); ok || strings.HasPrefix(instance, "ftctl-owned-") {
		x.srcGroup = id.Group()
		if rest, ok := strings.CutPrefix(instance, "ftctl-owned-"); ok {
			x.srcGroup = session.OwnerID(rest).Group()
		}
	}
	for _, step := range []func() error{x.settings, x.graph, x.functions, x.probes, x.events, x.synthetic, x.triggers} {
		if err := step(); err != nil {
			return nil, err
		}
	}
	return p, nil
}

type exporter struct {
	fs       *tracefs.FS
	in       *tracefs.Instance
	p        *Profile
	group    string // the exported profile's group
	srcGroup string // the instance's owner's group, if ftctl's
	probeDef map[string]string
}

// rename puts ${group} in for the source's group in a name or text.
func (x *exporter) rename(s string) string {
	if x.srcGroup == "" {
		return s
	}
	return strings.ReplaceAll(s, x.srcGroup, GroupVar)
}

func (x *exporter) settings() error {
	inst := &x.p.Spec.Instance
	tracer, err := x.in.Tracer()
	if err != nil {
		return err
	}
	inst.Tracer = tracer
	on, err := x.in.TracingOn()
	if err != nil {
		return err
	}
	if !on {
		inst.TracingOn = &on
	}
	if kb, _, ok := x.in.BufferSizeKB(); ok {
		inst.BufferKB = kb
	}
	if c, err := x.in.TraceClock(); err == nil && c != "local" {
		inst.Clock = c
	}
	if x.in.Name == "" {
		return nil
	}
	mine, err := x.in.Options()
	if err != nil {
		return err
	}
	theirs, err := x.fs.Top().Options()
	if err != nil {
		return err
	}
	top := map[string]bool{}
	for _, o := range theirs {
		top[o.Name] = o.Enabled
	}
	for _, o := range mine {
		if o.Name == "function-fork" || o.Name == "event-fork" {
			continue // ftctl's own, for pid filters
		}
		if t, ok := top[o.Name]; ok && t != o.Enabled {
			if inst.Options == nil {
				inst.Options = map[string]bool{}
			}
			inst.Options[o.Name] = o.Enabled
		}
	}
	return nil
}

func (x *exporter) functions() error {
	if x.p.Spec.Instance.Tracer == "nop" {
		return nil
	}
	for _, l := range []struct {
		file string
		to   *[]string
	}{{filters.FilterFile, &x.p.Spec.Functions.Filter}, {filters.NotraceFile, &x.p.Spec.Functions.Notrace}} {
		if !x.in.Has(l.file) {
			continue
		}
		names, err := listedFunctions(x.in, l.file, true)
		if err != nil {
			return err
		}
		*l.to = append(*l.to, names...)
	}
	return nil
}

// listedFunctions are the functions a list file holds, as a profile writes them: NAME, or
// NAME:mod:MODULE with withModule (set_graph_function takes no :mod:, and NAME selects every
// record of the name: each once).
func listedFunctions(in *tracefs.Instance, file string, withModule bool) ([]string, error) {
	b, err := in.ReadFile(file)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, n := range tracefs.ParseFunctionList(string(b)).Names {
		k := filters.ParseKey(n)
		text := k.Name
		if k.Module != "" && withModule {
			text += ":mod:" + k.Module
		}
		if withModule || !slices.Contains(out, text) {
			out = append(out, text)
		}
	}
	return out, nil
}

// graph: the top level's graph files, for a declared owner's instance whose owner claims
// them, or for the top level itself when they are set; with the claim, which applying the
// export needs. An owner that held the top level whole ran function_graph there.
func (x *exporter) graph() error {
	top := x.fs.Top()
	if !top.Has(graphRootsFile) {
		return nil
	}
	if x.in.Name == "" && x.p.Spec.Instance.Tracer != "function_graph" {
		return nil // the graph files are function_graph's
	}
	if x.in.Name != "" {
		name, ok := strings.CutPrefix(x.in.Name, "ftctl-owned-")
		if !ok {
			return nil
		}
		o, err := session.ReadOwner(x.fs, name)
		if err != nil || o.TopLevel == nil {
			return nil
		}
		if o.TopLevel.Whole {
			x.p.Spec.Instance.Tracer = "function_graph"
		}
	}
	g := &x.p.Spec.Graph
	var err error
	if g.Roots, err = listedFunctions(top, graphRootsFile, false); err != nil {
		return err
	}
	if top.Has(graphNotraceFile) {
		if g.Notrace, err = listedFunctions(top, graphNotraceFile, false); err != nil {
			return err
		}
	}
	if top.Has(graphDepthFile) {
		d, err := readTrim(top, graphDepthFile)
		if err != nil {
			return err
		}
		if g.Depth, err = strconv.Atoi(d); err != nil {
			return fmt.Errorf("reading %s: %q is not a number", graphDepthFile, d)
		}
	}
	if len(g.Roots) == 0 {
		// no roots: function_graph's every function, which a profile does not take
		*g = Graph{}
		return nil
	}
	x.p.Spec.TopLevel.Claim = true
	return nil
}

// probes: the probes of the source's group, and the probes enabled in the instance.
func (x *exporter) probes() error {
	x.probeDef = map[string]string{}
	var list []tracefs.ProbeListEntry
	for _, f := range []string{"dynamic_events", "kprobe_events", "uprobe_events"} {
		if b, err := x.fs.Top().ReadFile(f); err == nil {
			list = append(list, tracefs.ParseProbeList(string(b))...)
			if f == "dynamic_events" {
				break // it lists every kind
			}
		}
	}
	enabled, err := x.in.EnabledEvents()
	if err != nil {
		return err
	}
	for _, e := range list {
		if e.Type == "s" || e.Group == "synthetic" || x.probeDef[e.Group+":"+e.Event] != "" {
			continue
		}
		on := false
		for _, n := range enabled {
			on = on || n.System == e.Group && n.Event == e.Event
		}
		if e.Group != x.srcGroup && !on {
			continue
		}
		_, rest, _ := strings.Cut(e.Definition, " ")
		def := e.Type + ":" + e.Event + " " + rest
		x.probeDef[e.Group+":"+e.Event] = def
		x.p.Spec.Probes = append(x.p.Spec.Probes, def)
	}
	return nil
}

func (x *exporter) events() error {
	enabled, err := x.in.EnabledEvents()
	if err != nil {
		return err
	}
	for _, e := range enabled {
		dir := "events/" + e.System + "/" + e.Event
		v, err := readTrim(x.in, dir+"/enable")
		if err != nil || !strings.HasPrefix(v, "1") {
			continue
		}
		f, _ := readTrim(x.in, dir+"/filter")
		if f == "none" {
			f = ""
		}
		name := e.System + ":" + e.Event
		if x.probeDef[name] != "" {
			name = GroupVar + ":" + e.Event // one of the profile's probes, enabled
		}
		x.p.Spec.Events = append(x.p.Spec.Events, Event{Name: name, Filter: f})
	}
	return nil
}

// synthetic: the synthetic events named after the source's group.
func (x *exporter) synthetic() error {
	if x.srcGroup == "" || !x.fs.Top().Has("synthetic_events") {
		return nil
	}
	b, err := x.fs.Top().ReadFile("synthetic_events")
	if err != nil {
		return err
	}
	for _, line := range strings.Split(string(b), "\n") {
		name, fields, ok := strings.Cut(strings.TrimSpace(line), "\t")
		if !ok {
			name, fields, ok = strings.Cut(strings.TrimSpace(line), " ")
		}
		if what, mine := strings.CutPrefix(name, x.srcGroup+"_"); ok && mine {
			x.p.Spec.Synthetic = append(x.p.Spec.Synthetic, Synthetic{Name: what, Fields: strings.TrimSpace(fields)})
		}
	}
	return nil
}

// writable turns a trigger as the kernel lists it into one it takes back: without the
// listing's " [active]" / " [paused]", and with a hist trigger's sort= keys as the kernel
// parses them. It lists each sort key as hist_field_print does, the key's modifiers and their
// parameters included ("sort=lat.log2", "sort=pid.buckets=1000.descending"), but takes a
// sort key as NAME[.descending|.ascending] only (create_sort_keys, kernel/trace/
// trace_events_hist.c: anything else is EINVAL; seen on 6.1 and 6.12).
func writable(t string) string {
	t = strings.TrimSpace(t)
	for _, state := range []string{"[active]", "[paused]"} {
		t = strings.TrimSpace(strings.TrimSuffix(t, state))
	}
	if !strings.HasPrefix(t, "hist:") {
		return t
	}
	parts := strings.Split(t, ":")
	for i, part := range parts {
		s, ok := strings.CutPrefix(part, "sort=")
		if !ok {
			continue
		}
		keys := strings.Split(s, ",")
		for k, key := range keys {
			// a filter ("if ...") may follow the last key in the same part
			key, rest, _ := strings.Cut(key, " ")
			if rest != "" {
				rest = " " + rest
			}
			f := strings.Split(key, ".")
			keys[k] = f[0]
			if n := len(f); n > 1 && (f[n-1] == "descending" || f[n-1] == "ascending") {
				keys[k] += "." + f[n-1]
			}
			keys[k] += rest
		}
		parts[i] = "sort=" + strings.Join(keys, ",")
	}
	return strings.Join(parts, ":")
}

// triggers: the triggers on the instance's events, in the order the kernel lists them (for
// a declared owner's, which write onmatch() after what it names, the order they were made).
func (x *exporter) triggers() error {
	systems, err := x.fs.EventSystems()
	if err != nil {
		return err
	}
	for _, sys := range systems {
		events, err := x.fs.Events(sys)
		if err != nil {
			return err
		}
		for _, ev := range events {
			b, err := x.in.ReadFile("events/" + sys + "/" + ev + "/trigger")
			if err != nil {
				continue
			}
			for _, t := range triggerLines(string(b)) {
				t = writable(t)
				x.p.Spec.Triggers = append(x.p.Spec.Triggers, Trigger{Event: x.rename(sys + ":" + ev), Trigger: x.rename(t)})
			}
		}
	}
	return nil
}
