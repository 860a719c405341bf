package probes

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"sort"
	"strings"

	"github.com/ftctl/ftctl/filters"
	"github.com/ftctl/ftctl/tracefs"
)

// DefaultGroup is the group of probes ftctl adds when the definition names none. Probes of
// other groups are listed but never changed unless named explicitly.
const DefaultGroup = "ftctl"

// ErrNoProbe: the named probe does not exist.
var ErrNoProbe = errors.New("no such probe")

// ErrAmbiguous: a bare event name matches probes of several groups, or only another group's.
var ErrAmbiguous = errors.New("probe name needs its group")

// Probe is one kprobe event as the kernel lists it, with what ftctl knows about it.
type Probe struct {
	Group      string      `json:"group"`
	Event      string      `json:"event"`
	Type       string      `json:"type"` // "kprobe" or "kretprobe"
	Definition string      `json:"definition"`
	Place      string      `json:"place"`
	Owner      string      `json:"owner"`      // "ftctl" or "other"
	EnabledIn  []string    `json:"enabled_in"` // "" = top level, else instance names
	Parsed     *Definition `json:"-"`          // nil when ftctl cannot parse the kernel's line
}

// Name is GROUP/EVENT.
func (p Probe) Name() string { return p.Group + "/" + p.Event }

// Manager changes kprobe_events for ftctl's commands. Callers hold the tracefs lock around
// every method that writes.
type Manager struct {
	FS     *tracefs.FS
	Parser Parser
}

// NewManager reads the running kernel's probe features.
func NewManager(f *tracefs.FS) *Manager {
	return &Manager{FS: f, Parser: Parser{Features: f.DetectFeatures().Probe}}
}

// List reads kprobe_events and where each event is enabled.
func (m *Manager) List() ([]Probe, error) {
	top := m.FS.Top()
	b, err := top.ReadFile("kprobe_events")
	if err != nil {
		return nil, err
	}
	instances, _ := m.FS.Instances()
	all := Parser{Features: AllFeatures}
	var out []Probe
	seen := map[string]int{}
	for _, e := range tracefs.ParseProbeList(string(b)) {
		p := Probe{Group: e.Group, Event: e.Event, Definition: e.Definition, Owner: "other", EnabledIn: []string{}}
		if tracefs.OwnedGroup(e.Group) {
			p.Owner = "ftctl"
		}
		if d, err := all.Parse(e.Definition); err == nil {
			p.Parsed = d
			p.Place = d.Place()
			p.Type = "kprobe"
			if d.IsReturn() {
				p.Type = "kretprobe"
			}
		}
		// A multi-probe event is listed once per probe point: one entry per line, the
		// enablement is the event's.
		if k, ok := seen[p.Name()]; ok {
			p.EnabledIn = out[k].EnabledIn
		} else {
			p.EnabledIn = m.enabledIn(e.Group, e.Event, instances)
			seen[p.Name()] = len(out)
		}
		out = append(out, p)
	}
	return out, nil
}

func (m *Manager) enabledIn(group, event string, instances []string) []string {
	where := []string{}
	file := "events/" + group + "/" + event + "/enable"
	check := func(in *tracefs.Instance, label string) {
		b, err := in.ReadFile(file)
		if err == nil && strings.TrimSpace(string(b)) != "0" {
			where = append(where, label)
		}
	}
	check(m.FS.Top(), "")
	for _, n := range instances {
		if in, err := m.FS.Instance(n); err == nil {
			check(in, n)
		}
	}
	return where
}

// Resolve finds the probe a user named: GROUP/EVENT (or GROUP.EVENT), or a bare EVENT, which
// means ftctl's group first; a bare name that only another group has must be written with its
// group (ErrAmbiguous), so that nothing of another user's is touched by accident.
func Resolve(list []Probe, name string) (group, event string, err error) {
	if g, e, ok := splitName(name); ok {
		for _, p := range list {
			if p.Group == g && p.Event == e {
				return g, e, nil
			}
		}
		return g, e, fmt.Errorf("%w %s/%s (ftctl probe list shows the probes)", ErrNoProbe, g, e)
	}
	var groups []string
	for _, p := range list {
		if p.Event == name {
			if p.Group == DefaultGroup {
				return DefaultGroup, name, nil
			}
			groups = append(groups, p.Group)
		}
	}
	groups = uniq(groups)
	switch len(groups) {
	case 0:
		return DefaultGroup, name, fmt.Errorf("%w %s/%s (ftctl probe list shows the probes)", ErrNoProbe, DefaultGroup, name)
	default:
		var names []string
		for _, g := range groups {
			names = append(names, g+"/"+name)
		}
		return "", "", fmt.Errorf("%w: %q is not ftctl's; name it as %s", ErrAmbiguous, name, strings.Join(names, " or "))
	}
}

func splitName(name string) (group, event string, ok bool) {
	if g, e, ok := strings.Cut(name, "/"); ok {
		return g, e, true
	}
	if g, e, ok := strings.Cut(name, "."); ok {
		return g, e, true
	}
	return "", "", false
}

func uniq(s []string) []string {
	sort.Strings(s)
	out := s[:0]
	for i, v := range s {
		if i == 0 || v != s[i-1] {
			out = append(out, v)
		}
	}
	return out
}

// AddOptions are what `probe add` does besides defining the probe.
type AddOptions struct {
	Instance *tracefs.Instance // where --filter and --enable apply
	Filter   string            // event filter expression, "" for none
	Enable   bool
}

// Added is a probe ftctl defined.
type Added struct {
	Group, Event string
	Lines        []string // the kernel's listing of what was added
	Written      string   // what ftctl wrote
}

// RejectedError is the kernel refusing a definition, with its own diagnosis under the user's
// text, what already exists (EEXIST), and close symbol names (unknown symbol).
type RejectedError struct {
	Def         *Definition
	Written     string
	Diagnosis   *KernelDiagnosis
	Existing    []string // definitions of the probe that already exists (EEXIST)
	Suggestions []string // close symbol names (unknown symbol)
	Err         error    // the tracefs error
}

func (e *RejectedError) Error() string {
	msg := "the kernel rejected the probe definition"
	if e.Diagnosis != nil {
		msg += ": " + e.Diagnosis.Message
	} else if e.Err != nil {
		msg += ": " + e.Err.Error()
	}
	return msg
}

func (e *RejectedError) Unwrap() error { return e.Err }

// Add defines a probe: the group defaults to ftctl's; the event, when not named, is named by
// the kernel ("GROUP/" form) and read back. error_log is cleared first so that the kernel's
// diagnosis of this write is the one shown. When the filter or the enabling fails, the probe
// is removed again: a failed add changes nothing.
func (m *Manager) Add(ctx context.Context, d *Definition, opt AddOptions) (*Added, error) {
	if d.Kind == Delete {
		return nil, fmt.Errorf("%q removes a probe: use ftctl probe remove", d.Source())
	}
	group := d.Group
	if group == "" {
		group = DefaultGroup
	}
	w := d.Line(group, d.Event)
	top := m.FS.Top()
	before, err := top.ReadFile("kprobe_events")
	if err != nil {
		return nil, err
	}
	if top.Has("error_log") {
		if err := top.Truncate("error_log"); err != nil {
			return nil, err
		}
	}
	if err := top.Write("kprobe_events", w.Text+"\n"); err != nil {
		return nil, m.rejected(d, w, before, err)
	}
	a := &Added{Group: group, Event: d.Event, Written: w.Text}
	if m.FS.DryRun != nil {
		if a.Event == "" {
			a.Event = "(named by the kernel)"
		}
		return a, nil
	}
	after, err := top.ReadFile("kprobe_events")
	if err != nil {
		return nil, err
	}
	old := map[string]bool{}
	for _, l := range strings.Split(string(before), "\n") {
		old[l] = true
	}
	for _, e := range tracefs.ParseProbeList(string(after)) {
		if e.Group == group && !old[e.Definition] && (d.Event == "" || e.Event == d.Event) {
			a.Event = e.Event
			a.Lines = append(a.Lines, e.Definition)
		}
	}
	if a.Event == "" {
		return a, fmt.Errorf("the kernel took %q but kprobe_events lists no new probe of group %s", w.Text, group)
	}
	if opt.Filter != "" || opt.Enable {
		if err := m.configure(a, opt); err != nil {
			if rerr := m.Remove(ctx, a.Group, a.Event); rerr != nil {
				return a, fmt.Errorf("%w (and removing the probe again failed: %v)", err, rerr)
			}
			return nil, err
		}
	}
	return a, nil
}

func (m *Manager) configure(a *Added, opt AddOptions) error {
	dir := "events/" + a.Group + "/" + a.Event + "/"
	in := opt.Instance
	if in == nil {
		in = m.FS.Top()
	}
	if opt.Filter != "" {
		if err := in.Write(dir+"filter", opt.Filter+"\n"); err != nil {
			return fmt.Errorf("setting the filter of %s/%s (the probe was removed again): %w", a.Group, a.Event, err)
		}
	}
	if opt.Enable {
		if err := in.Write(dir+"enable", "1"); err != nil {
			return fmt.Errorf("enabling %s/%s (the probe was removed again): %w", a.Group, a.Event, err)
		}
	}
	return nil
}

// rejected explains a failed definition write.
func (m *Manager) rejected(d *Definition, w *Written, before []byte, err error) error {
	var te *tracefs.Error
	if !errors.As(err, &te) || !errors.Is(err, tracefs.ErrRejected) {
		return err
	}
	re := &RejectedError{Def: d, Written: w.Text, Err: err}
	if kd, ok := w.Diagnose(te.KernelLog); ok {
		re.Diagnosis = &kd
	}
	if errors.Is(err, fs.ErrExist) {
		for _, e := range tracefs.ParseProbeList(string(before)) {
			if e.Group == w.group && e.Event == w.event {
				re.Existing = append(re.Existing, e.Definition)
			}
		}
	}
	if re.Diagnosis != nil && re.Diagnosis.Message == "Invalid probed address or symbol" && !d.IsAddr {
		re.Suggestions = m.suggest(d.Symbol)
	}
	return re
}

// Enable enables or disables the event in an instance.
func (m *Manager) Enable(in *tracefs.Instance, group, event string, on bool) error {
	v := "0"
	if on {
		v = "1"
	}
	return in.Write("events/"+group+"/"+event+"/enable", v)
}

// Remove deletes a probe: first disabled in every trace array where it is enabled (a probe
// enabled anywhere cannot be deleted: EBUSY), then "-:GROUP/EVENT" (always with its group: a
// bare name deletes that event in every group). A probe already gone is done, not an error.
// It returns whether the probe existed.
func (m *Manager) Remove(ctx context.Context, group, event string) error {
	top := m.FS.Top()
	b, err := top.ReadFile("kprobe_events")
	if err != nil {
		return err
	}
	found := false
	for _, e := range tracefs.ParseProbeList(string(b)) {
		if e.Group == group && e.Event == event {
			found = true
		}
	}
	if !found {
		return nil
	}
	instances, _ := m.FS.Instances()
	for _, where := range m.enabledIn(group, event, instances) {
		in, err := m.FS.Instance(where)
		if err != nil {
			return err
		}
		if err := m.Enable(in, group, event, false); err != nil {
			return fmt.Errorf("disabling %s/%s in the %s before removing it: %w", group, event, in.Label(), err)
		}
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	err = top.Write("kprobe_events", "-:"+group+"/"+event+"\n")
	switch {
	case err == nil, errors.Is(err, fs.ErrNotExist): // removed by someone else meanwhile: done
		return nil
	case errors.Is(err, tracefs.ErrBusy):
		return fmt.Errorf("%s/%s is still in use after disabling it in every trace array (perf, BPF, or another event's enable_event trigger holds it): %w", group, event, err)
	}
	return err
}

// suggest lists function names close to sym (from available_filter_functions).
func (m *Manager) suggest(sym string) []string {
	b, err := m.FS.Top().ReadFile("available_filter_functions")
	if err != nil {
		return nil
	}
	return closeNames(string(b), sym, 5)
}

// Field is one field of an event's format file.
type Field struct {
	Name   string `json:"name"`
	Type   string `json:"type"`
	Offset int    `json:"offset"`
	Size   int    `json:"size"`
	Signed bool   `json:"signed"`
	Common bool   `json:"common"` // common_* fields every event has
}

// Format is an event's format file: its id, fields and print format.
type Format struct {
	Name   string  `json:"name"`
	ID     int     `json:"id"`
	Fields []Field `json:"fields"`
	Print  string  `json:"print_fmt"`
}

// ReadFormat reads events/GROUP/EVENT/format.
func (m *Manager) ReadFormat(group, event string) (*Format, error) {
	b, err := m.FS.Top().ReadFile("events/" + group + "/" + event + "/format")
	if err != nil {
		return nil, err
	}
	return ParseFormat(string(b)), nil
}

// closeNames: function names close to sym, through the filter index's suggestions.
func closeNames(available, sym string, n int) []string {
	ix, err := filters.ParseIndex(available)
	if err != nil {
		return nil
	}
	return ix.Suggest(sym, n)
}

// ParseFormat parses an event's format file (kernel/trace/trace_events.c f_show):
//
//	name: myopen
//	ID: 1834
//	format:
//		field:unsigned short common_type;	offset:0;	size:2;	signed:0;
//		...
//		field:__data_loc char[] path;	offset:24;	size:4;	signed:1;
//
//	print fmt: "(%lx) path=\"%s\"", REC->__probe_ip, __get_str(path)
func ParseFormat(text string) *Format {
	f := &Format{Fields: []Field{}}
	for _, line := range strings.Split(text, "\n") {
		t := strings.TrimSpace(line)
		switch {
		case strings.HasPrefix(t, "name:"):
			f.Name = strings.TrimSpace(t[len("name:"):])
		case strings.HasPrefix(t, "ID:"):
			fmt.Sscan(strings.TrimSpace(t[len("ID:"):]), &f.ID)
		case strings.HasPrefix(t, "print fmt:"):
			f.Print = strings.TrimSpace(t[len("print fmt:"):])
		case strings.HasPrefix(t, "field:"):
			var fd Field
			for _, part := range strings.Split(t, ";") {
				k, v, ok := strings.Cut(strings.TrimSpace(part), ":")
				if !ok {
					continue
				}
				switch k {
				case "field":
					fd.Type, fd.Name = splitDecl(v)
				case "offset":
					fmt.Sscan(v, &fd.Offset)
				case "size":
					fmt.Sscan(v, &fd.Size)
				case "signed":
					fd.Signed = v == "1"
				}
			}
			fd.Common = strings.HasPrefix(fd.Name, "common_")
			f.Fields = append(f.Fields, fd)
		}
	}
	return f
}

// splitDecl splits a C declaration "unsigned long __probe_ip" or "u8 arr[4]" into its type
// ("unsigned long", "u8[4]") and name.
func splitDecl(decl string) (typ, name string) {
	decl = strings.TrimSpace(decl)
	i := strings.LastIndexAny(decl, " \t")
	if i < 0 {
		return "", decl
	}
	typ, name = strings.TrimSpace(decl[:i]), decl[i+1:]
	if b := strings.IndexByte(name, '['); b >= 0 {
		typ += name[b:]
		name = name[:b]
	}
	return typ, name
}
