package session

import (
	"context"
	"errors"
	"fmt"
	"sort"

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

// Leftover is an instance or a probe group that a session named, maybe left behind.
type Leftover struct {
	ID       ID       `json:"session"`
	Instance string   `json:"instance,omitempty"` // "" when the instance is gone
	Group    string   `json:"group,omitempty"`    // "" when it has no probes left
	Probes   []string `json:"probes"`
	State    string   `json:"state"`
	// Removed lists what was removed ("instance NAME", "probe GROUP/EVENT"), in order.
	Removed []string `json:"removed"`
}

// Leftovers lists the instances and probe groups named by sessions other than self (the
// caller's own, or the zero ID), with what can be told of their owners without changing
// anything: StateDead for a group whose instance is gone, StateUnknown for an instance.
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
	if fs.Top().Has("kprobe_events") {
		list, err := (&probes.Manager{FS: fs}).List()
		if err != nil {
			return nil, err
		}
		for _, p := range list {
			if id, ok := GroupID(p.Group); ok && id != self {
				l := get(id)
				l.Group = p.Group
				if len(l.Probes) == 0 || l.Probes[len(l.Probes)-1] != p.Event {
					l.Probes = append(l.Probes, p.Event)
				}
			}
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
	return out, nil
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
		switch err := in.Remove(); {
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
	if l.Group == "" {
		return nil
	}
	var errs []error
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
