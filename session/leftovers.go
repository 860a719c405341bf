package session

import (
	"context"
	"errors"
	"fmt"
	iofs "io/fs"
	"sort"
	"strings"

	"github.com/ftctl/ftctl/probes"
	"github.com/ftctl/ftctl/tracefs"
)

// What a session left, and whether its owner is gone. A live session holds a file of its
// instance open (Session.Start), so the kernel refuses to remove the instance: the only proof
// of death that holds across pid namespaces is an rmdir that succeeds. A session's probe group
// without its instance is a dead session's: a session makes its instance before its group and
// removes its group before its instance.

// The states of a Leftover.
const (
	// StateUnknown: the instance exists; only removing it can tell (Remove tries).
	StateUnknown = "cannot tell"
	// StateDead: the owner is gone (the instance is gone, or was removed just now).
	StateDead = "dead"
	// StateInUse: the kernel refused to remove the instance: a process holds one of its files
	// (the session itself, maybe in another pid namespace, or a reader of its trace_pipe).
	StateInUse = "in use"
)

// ErrJournal marks a journal that cannot be read as one: reset leaves it and what it names,
// names it, and goes on with the other sessions.
var ErrJournal = errors.New("bad journal")

// ErrLeft marks a kernel-wide file a teardown left as it found it: it holds neither what the
// session wrote nor what it held before (another actor's).
var ErrLeft = errors.New("left as another actor set it")

// Leftover is an instance or a probe group that a session named, maybe left behind.
type Leftover struct {
	ID       ID       `json:"session"`
	Instance string   `json:"instance,omitempty"` // "" when the instance is gone
	Group    string   `json:"group,omitempty"`    // "" when it has no probes left
	Probes   []string `json:"probes"`
	// Dynamic are the session's fprobes, tracepoint probes, event probes and synthetic events
	// as dynamic_events lists them ("f:GROUP/EVENT", "s:synthetic/GROUP_NAME"): `ftctl
	// latency`'s, and those of `ftctl trace -p` (Probes are its kprobes).
	Dynamic []string `json:"dynamic,omitempty"`
	State   string   `json:"state"`
	// Removed lists what was removed ("instance NAME", "probe GROUP/EVENT"), in order.
	Removed []string `json:"removed"`
	// Files are the kernel-wide files the session's journal names (a graph session's), and
	// what Remove did with each, newest first: put back, found as before, or left because it
	// holds neither what the session wrote nor what it held before (another actor's).
	Files []FileOutcome `json:"files,omitempty"`
	// Journal says the session left a journal of kernel-wide files it changed.
	Journal bool `json:"journal,omitempty"`

	journal *journal
}

// Leftovers lists the instances and probe groups named by sessions other than self (the
// caller's own, or the zero ID), with what can be told of their owners without changing
// anything: StateDead for a group whose instance is gone, StateUnknown for an instance.
// Journals that cannot be read are named in an ErrJournal error returned with the leftovers
// (a partial result: those journals are "cannot tell", the rest is listed); any other error
// comes alone.
func Leftovers(fs *tracefs.FS, self ID) ([]*Leftover, error) {
	by := map[ID]*Leftover{}
	get := func(id ID) *Leftover {
		if by[id] == nil {
			by[id] = &Leftover{ID: id, Probes: []string{}, Removed: []string{}, State: StateDead}
		}
		return by[id]
	}
	names, err := fs.Instances()
	if err != nil && !errors.Is(err, tracefs.ErrUnavailable) {
		return nil, err
	}
	for _, n := range names {
		if id, ok := InstanceID(n); ok && id != self {
			l := get(id)
			l.Instance, l.State = n, StateUnknown
		}
	}
	if fs.Top().Has("kprobe_events") || fs.Top().Has("uprobe_events") {
		list, err := (&probes.Manager{FS: fs}).List()
		if err != nil {
			return nil, err
		}
		for _, p := range list {
			if p.File == "dynamic_events" {
				continue // listed in Dynamic below
			}
			if id, ok := GroupID(p.Group); ok && id != self {
				l := get(id)
				l.Group = p.Group
				if len(l.Probes) == 0 || l.Probes[len(l.Probes)-1] != p.Event {
					l.Probes = append(l.Probes, p.Event)
				}
			}
		}
	}
	if fs.Top().Has("dynamic_events") {
		b, err := fs.Top().ReadFile("dynamic_events")
		if err != nil {
			return nil, err
		}
		for _, name := range dynamicEvents(string(b)) {
			if id, ok := dynamicOwner(name); ok && id != self {
				l := get(id)
				l.Dynamic = append(l.Dynamic, name)
			}
		}
	}
	journals, bad, err := readJournals(fs)
	if err != nil {
		return nil, err
	}
	journalErr := badJournalsError(bad)
	for _, j := range journals {
		if j.Session != self {
			l := get(j.Session)
			l.journal, l.Journal = j, true
		}
	}
	out := make([]*Leftover, 0, len(by))
	for _, l := range by {
		out = append(out, l)
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].ID.PID != out[j].ID.PID {
			return out[i].ID.PID < out[j].ID.PID
		}
		return out[i].ID.Nonce < out[j].ID.Nonce
	})
	return out, journalErr
}

// Remove removes a leftover whose owner is gone: the instance first (the kernel refuses while
// the owner lives: State becomes StateInUse and nothing else is touched), then the probes of
// its group. Removed says what was removed; the error, what could not be.
func (l *Leftover) Remove(fs *tracefs.FS) error {
	if l.Instance != "" {
		in, err := fs.Existing(l.Instance)
		if err != nil {
			return err
		}
		err = in.Remove()
		if errors.Is(err, tracefs.ErrBusy) && l.clearVarTriggers(fs, in) {
			err = in.Remove()
		}
		switch {
		case errors.Is(err, tracefs.ErrBusy):
			l.State = StateInUse
			return nil
		case err != nil:
			return fmt.Errorf("removing instance %s: %w", l.Instance, err)
		}
		if fs.DryRun == nil {
			l.State = StateDead
			l.Removed = append(l.Removed, "instance "+l.Instance)
		}
	}
	var errs []error
	if l.journal != nil && l.State == StateDead {
		// the instance is gone: so is the graph it ran; at the top level, the journal's
		// newest entry is the tracer, put back first
		files, err := l.journal.undo(fs)
		l.Files = files
		if err != nil {
			errs = append(errs, err)
		}
	}
	// The synthetic events first: nothing refers to them once the instance is gone; then
	// fprobes and the other probes. "-:SYSTEM/EVENT" to dynamic_events removes any.
	for _, name := range l.Dynamic {
		_, ev, _ := strings.Cut(name, ":")
		if err := fs.Top().Write("dynamic_events", "-:"+ev+"\n"); err != nil && !errors.Is(err, iofs.ErrNotExist) {
			errs = append(errs, fmt.Errorf("removing %s: %w", ev, err))
			continue
		}
		if fs.DryRun == nil {
			l.Removed = append(l.Removed, "event "+ev)
		}
	}
	if l.Group == "" {
		return errors.Join(errs...)
	}
	m := &probes.Manager{FS: fs}
	for _, ev := range l.Probes {
		if err := m.Remove(context.Background(), l.Group, ev); err != nil {
			errs = append(errs, fmt.Errorf("removing probe %s/%s: %w", l.Group, ev, err))
			continue
		}
		if fs.DryRun == nil {
			l.Removed = append(l.Removed, "probe "+l.Group+"/"+ev)
		}
	}
	return errors.Join(errs...)
}

// dynamicEvents lists the fprobes, tracepoint probes, event probes and synthetic events of
// dynamic_events text as "f:GROUP/EVENT" and "s:synthetic/NAME" (kprobes are kprobe_events' to
// list; the name ends at white space: a synthetic event's fields follow a tab).
func dynamicEvents(text string) []string {
	var out []string
	for _, line := range strings.Split(text, "\n") {
		f := strings.Fields(line)
		if len(f) == 0 || len(f[0]) < 2 || !strings.Contains("ftes", f[0][:1]) || !strings.Contains(f[0], ":") {
			continue
		}
		out = append(out, f[0])
	}
	return out
}

// dynamicOwner says which session a probe (its group) or a synthetic event (named
// GROUP_WHAT by Session.Synthetic) belongs to.
func dynamicOwner(name string) (ID, bool) {
	kind, ev, _ := strings.Cut(name, ":")
	sys, event, ok := strings.Cut(ev, "/")
	if !ok {
		return ID{}, false
	}
	if kind != "s" {
		return GroupID(sys)
	}
	if i := strings.LastIndex(event, "_"); sys == "synthetic" && i > 0 {
		return GroupID(event[:i])
	}
	return ID{}, false
}

// clearVarTriggers removes the triggers of a leftover's instance that keep it busy after its
// owner died, when the owner is proven gone (Instance.Unheld): a hist trigger with variables
// holds a reference on its trace array (`ftctl latency`'s, on its probes and synthetic
// events). Each trigger file is truncated (the kernel's hist_unreg_all), several passes: a
// trigger whose variable another refers to goes after that one. It says whether anything was
// removed.
func (l *Leftover) clearVarTriggers(fs *tracefs.FS, in *tracefs.Instance) bool {
	group := l.ID.Group()
	if unheld, err := in.Unheld(); err != nil || !unheld {
		return false
	}
	var dirs []string
	if evs, err := fs.Events(group); err == nil {
		for _, ev := range evs {
			dirs = append(dirs, "events/"+group+"/"+ev)
		}
	}
	if evs, err := fs.Events("synthetic"); err == nil {
		for _, ev := range evs {
			if strings.HasPrefix(ev, group+"_") {
				dirs = append(dirs, "events/synthetic/"+ev)
			}
		}
	}
	removed := false
	for pass := 0; pass < 3; pass++ {
		left := false
		for _, d := range dirs {
			b, err := in.ReadFile(d + "/trigger")
			if err != nil || !hasTrigger(string(b)) {
				continue
			}
			in.Truncate(d + "/trigger")
			if b, err := in.ReadFile(d + "/trigger"); err == nil && hasTrigger(string(b)) {
				left = true
			} else {
				removed = true
			}
		}
		if !left {
			break
		}
	}
	return removed
}

// hasTrigger: a trigger file lists a trigger (its other lines are '#' comments).
func hasTrigger(text string) bool {
	for _, line := range strings.Split(text, "\n") {
		if line = strings.TrimSpace(line); line != "" && !strings.HasPrefix(line, "#") {
			return true
		}
	}
	return false
}

// GroupAlive says what can be told of the session owning a probe group without changing
// anything: false when the session is gone (its instance is), true when it may be running
// (its instance exists, or cannot be looked at; `ftctl reset` tells). The shared group and other groups are not a
// session's: false.
func GroupAlive(fs *tracefs.FS, group string) bool {
	id, ok := GroupID(group)
	if !ok {
		return false
	}
	in, err := fs.Existing(id.Instance())
	if err != nil {
		return false
	}
	gone, err := in.Gone()
	return err != nil || !gone
}
