package session

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/ftctl/ftctl/probes"
	"github.com/ftctl/ftctl/tracefs"
)

// ResetAll returns the whole tracing state to its boot defaults, for `ftctl reset --all`:
// every instance removed (its tracing stopped and events disabled first), then at the top
// level: tracer nop, function filters, notrace, graph and pid lists emptied, every event
// disabled and its filter and triggers cleared, every kprobe removed (disabled first, one by
// one: never an O_TRUNC of kprobe_events while something is enabled), uprobes removed, the
// buffer cleared, tracing on. Every step is attempted; the failures are returned.
func ResetAll(fs *tracefs.FS, notice func(string, ...any)) []error {
	var errs []error
	step := func(what string, err error) {
		if err != nil && !errors.Is(err, tracefs.ErrUnavailable) {
			errs = append(errs, fmt.Errorf("%s: %w", what, err))
		}
	}
	names, _ := fs.Instances()
	for _, n := range names {
		in, err := fs.Existing(n)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if e := teardown(fs, in, "", nil); len(e) > 0 {
			errs = append(errs, fmt.Errorf("instance %s: %w", strconv.Quote(n), errors.Join(e...)))
			continue
		}
		if fs.DryRun == nil {
			gone, err := in.Gone()
			if err != nil {
				errs = append(errs, fmt.Errorf("instance %s: cannot tell whether its rmdir removed it: %w", strconv.Quote(n), err))
				continue
			}
			if !gone {
				errs = append(errs, fmt.Errorf("instance %s is still there after its rmdir", strconv.Quote(n)))
				continue
			}
		}
		if fs.DryRun == nil {
			notice("removed instance %s", strconv.Quote(n))
		}
	}
	top := fs.Top()
	write := func(file, data string) {
		if top.Has(file) {
			step("writing "+file, top.Write(file, data))
		}
	}
	trunc := func(file string) {
		if top.Has(file) {
			step("clearing "+file, top.Truncate(file))
		}
	}
	write("tracing_on", "0")
	write("current_tracer", "nop")
	for _, f := range []string{"set_ftrace_filter", "set_ftrace_notrace", "set_graph_function",
		"set_graph_notrace", "set_ftrace_pid", "set_event_pid", "set_ftrace_notrace_pid", "set_event_notrace_pid"} {
		trunc(f)
	}
	write("events/enable", "0")
	n, err := clearEventFiltersAndTriggers(top)
	step("clearing event filters and triggers", err)
	if n > 0 {
		notice("cleared %d event filters and triggers", n)
	}
	if top.Has("kprobe_events") {
		m := &probes.Manager{FS: fs}
		list, err := m.List()
		step("listing probes", err)
		done := map[string]bool{}
		for _, p := range list {
			if done[p.Name()] {
				continue
			}
			done[p.Name()] = true
			err := m.Remove(context.Background(), p.Group, p.Event)
			step("removing probe "+strconv.Quote(p.Name()), err)
			if err == nil && fs.DryRun == nil {
				notice("removed probe %s", strconv.Quote(p.Name()))
			}
		}
	}
	trunc("uprobe_events") // every event is disabled by now, so the kernel takes it
	trunc("trace")
	write("tracing_on", "1")
	return errs
}

// clearEventFiltersAndTriggers clears each event's filter ("0") and removes its triggers
// ("!TRIGGER"), reading them first so that untouched files are not written.
func clearEventFiltersAndTriggers(top *tracefs.Instance) (int, error) {
	dirs, err := filepath.Glob(top.Path("events/*/*"))
	if err != nil {
		return 0, err
	}
	n := 0
	var errs []error
	for _, dir := range dirs {
		rel, _ := filepath.Rel(top.Dir(), dir)
		if b, err := top.ReadFile(rel + "/filter"); err == nil {
			if f := strings.TrimSpace(string(b)); f != "" && f != "none" {
				if err := top.Write(rel+"/filter", "0"); err != nil {
					errs = append(errs, err)
				}
				n++
			}
		}
		if b, err := top.ReadFile(rel + "/trigger"); err == nil {
			for _, line := range strings.Split(string(b), "\n") {
				line = strings.TrimSpace(line)
				if line == "" || strings.HasPrefix(line, "#") {
					continue
				}
				// "traceon:unlimited" / "hist:keys=..." / "enable_event:sys:ev:unlimited":
				// removed by "!" and the trigger without its count or details.
				trig := line
				if i := strings.Index(trig, " "); i >= 0 {
					trig = trig[:i]
				}
				trig = strings.TrimSuffix(trig, ":unlimited")
				if i := strings.Index(trig, ":count="); i >= 0 {
					trig = trig[:i]
				}
				if err := top.Write(rel+"/trigger", "!"+trig); err != nil {
					errs = append(errs, err)
				}
				n++
			}
		}
	}
	return n, errors.Join(errs...)
}
