package tracefs

import (
	"errors"
	"io/fs"
	"os"
	"sort"
	"strings"
)

// What a kernel offers, for `ftctl list`: events, tracers, options.

// ParseEventList reads a list of events, "system:event" per line (available_events,
// set_event), in its order; lines without a ':' are skipped.
func ParseEventList(text string) []EventName {
	var out []EventName
	for _, line := range strings.Split(text, "\n") {
		sys, ev, ok := strings.Cut(strings.TrimSpace(line), ":")
		if ok && sys != "" && ev != "" {
			out = append(out, EventName{System: sys, Event: ev})
		}
	}
	return out
}

// AvailableEvents lists the events the trace array can enable (available_events), sorted by
// system and event.
func (i *Instance) AvailableEvents() ([]EventName, error) {
	b, err := i.ReadFile("available_events")
	if err != nil {
		return nil, err
	}
	out := ParseEventList(string(b))
	sort.Slice(out, func(i, j int) bool {
		if out[i].System != out[j].System {
			return out[i].System < out[j].System
		}
		return out[i].Event < out[j].Event
	})
	return out, nil
}

// Tracers reads the tracers the trace array can run (available_tracers, in the kernel's order)
// and the current one.
func (i *Instance) Tracers() (available []string, current string, err error) {
	b, err := i.ReadFile("available_tracers")
	if err != nil {
		return nil, "", err
	}
	c, err := i.ReadFile("current_tracer")
	if err != nil {
		return nil, "", err
	}
	return strings.Fields(string(b)), strings.TrimSpace(string(c)), nil
}

// Option is one trace option of a trace array (a file of options/).
type Option struct {
	Name    string `json:"name"`
	Enabled bool   `json:"enabled"`
}

// Options reads the trace array's options (options/NAME holds 0 or 1), sorted by name. Options
// of a tracer appear only while that tracer is current (the kernel adds and removes them).
func (i *Instance) Options() ([]Option, error) {
	ents, err := os.ReadDir(i.Path("options"))
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, &Error{Op: "open", Path: i.Path("options"), Class: ErrUnavailable, Errno: err}
		}
		return nil, i.fs.opError("read", i.Path("options"), "", err)
	}
	var out []Option
	for _, e := range ents {
		if e.IsDir() {
			continue
		}
		b, err := i.ReadFile("options/" + e.Name())
		if err != nil {
			return nil, err
		}
		out = append(out, Option{Name: e.Name(), Enabled: strings.TrimSpace(string(b)) == "1"})
	}
	sort.Slice(out, func(a, b int) bool { return out[a].Name < out[b].Name })
	return out, nil
}
