package session

import (
	"context"
	"errors"
	"fmt"
	iofs "io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/ftctl/ftctl/probes"
	"github.com/ftctl/ftctl/tracefs"
)

// ResetAll returns the whole tracing state to its boot defaults, for `ftctl reset --all`:
// every instance removed (its tracing stopped and events disabled first), then at the top
// level: tracer nop, function filters, notrace, graph and pid lists emptied, max_graph_depth
// and tracing_thresh 0, every event disabled and its filter and triggers cleared, every probe
// of every kind removed (disabled first, one by one: never an O_TRUNC of kprobe_events while
// something is enabled), the buffer cleared, tracing on; then every session's journal
// (journal.go) removed. Declared owners (owner.go) go first, each deleted from its
// declaration and named. Every step is attempted; the failures are returned.
func ResetAll(fs *tracefs.FS, notice func(string, ...any)) []error {
	var errs []error
	step := func(what string, err error) {
		if err != nil && !errors.Is(err, tracefs.ErrUnavailable) {
			errs = append(errs, fmt.Errorf("%s: %w", what, err))
		}
	}
	owners, err := Owners(fs)
	step("reading the declared owners", err)
	for _, o := range owners {
		if _, err := Undeclare(fs, o.Name); err != nil {
			errs = append(errs, fmt.Errorf("declared owner %s: %w", o.Name, err))
		} else if fs.DryRun == nil {
			notice("removed declared owner %s (instance %s, %s since %s)", o.Name, o.Instance, o.State, o.Since.Format(time.RFC3339))
		} else {
			notice("would remove declared owner %s (instance %s, %s since %s)", o.Name, o.Instance, o.State, o.Since.Format(time.RFC3339))
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
	write(graphDepthFile, "0")
	write(threshFile, "0")
	write("events/enable", "0")
	n, err := clearEventFiltersAndTriggers(top)
	step("clearing event filters and triggers", err)
	if n > 0 {
		notice("cleared %d event filters and triggers", n)
	}
	if top.Has("kprobe_events") || top.Has("uprobe_events") || top.Has("dynamic_events") {
		m := &probes.Manager{FS: fs}
		list, err := m.List()
		step("listing probes", err)
		done := map[string]bool{}
		for _, p := range list {
			if done[p.Name()] {
				continue
			}
			done[p.Name()] = true
			kind := p.Type
			if kind == "" {
				kind = "probe" // a line ftctl cannot parse
			}
			err := m.Remove(context.Background(), p.Group, p.Event)
			step("removing "+kind+" "+strconv.Quote(p.Name()), err)
			if err == nil && fs.DryRun == nil {
				notice("removed %s %s", kind, strconv.Quote(p.Name()))
			}
		}
	}
	trunc("uprobe_events") // every event is disabled by now, so the kernel takes it
	trunc("trace")
	write("tracing_on", "1")
	if fs.DryRun == nil {
		// every session's journal: what they changed is back to the defaults
		journals, bad, err := readJournals(fs)
		step("reading the journals", err)
		for _, j := range journals {
			if err := j.remove(); err != nil {
				errs = append(errs, err)
			} else {
				notice("removed the journal of session %s", j.Session)
			}
		}
		// a session's journal that cannot be read names nothing that is not back at its
		// default now; a file not named after a session is not a journal of ftctl's
		for _, b := range bad {
			if !b.session {
				notice("%v", b.err)
				continue
			}
			if err := os.Remove(b.path); err != nil && !errors.Is(err, iofs.ErrNotExist) {
				errs = append(errs, fmt.Errorf("removing the unreadable journal %s: %w", b.path, err))
			} else {
				notice("removed the unreadable journal %s", strconv.Quote(b.path))
			}
		}
	}
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
			k, err := clearTriggers(top, rel+"/trigger", listedTriggers(string(b)))
			n += k
			if err != nil {
				errs = append(errs, err)
			}
		}
	}
	return n, errors.Join(errs...)
}

// clearTriggers removes the triggers a trigger file lists, each by "!" and its removal text
// (triggerRemoval), and reads the file again: what is still listed (a removal that matched
// nothing is taken without a word) goes by truncation (the kernel's unreg_all of hist
// triggers), and what survives that is an error naming it. It says how many went.
func clearTriggers(top *tracefs.Instance, rel string, listed []string) (int, error) {
	if len(listed) == 0 {
		return 0, nil
	}
	var errs []error
	for _, line := range listed {
		if err := top.Write(rel, "!"+triggerRemoval(line)); err != nil {
			errs = append(errs, err)
		}
	}
	if top.FS().DryRun != nil {
		return len(listed), errors.Join(errs...)
	}
	left := listed
	if b, err := top.ReadFile(rel); err == nil {
		if left = listedTriggers(string(b)); len(left) > 0 {
			top.Truncate(rel)
			if b, err = top.ReadFile(rel); err == nil {
				left = listedTriggers(string(b))
			}
		}
	}
	if len(left) > 0 {
		errs = append(errs, fmt.Errorf("%s: still listed after removal: %s", top.Path(rel), strings.Join(left, "; ")))
	} else {
		errs = nil // what a removal refused went by truncation
	}
	return len(listed) - len(left), errors.Join(errs...)
}

// listedTriggers is the triggers a trigger file lists (its other lines are '#' comments).
func listedTriggers(text string) []string {
	var out []string
	for _, line := range strings.Split(text, "\n") {
		if line = strings.TrimSpace(line); line != "" && !strings.HasPrefix(line, "#") {
			out = append(out, line)
		}
	}
	return out
}

// triggerRemoval is what follows "!" to remove a trigger the kernel lists as line. A hist
// trigger is matched on its keys, values, sort keys and filter: the line is kept, less its
// state (" [active]", " [paused]") and the keys' modifiers the listing repeats in sort=
// ("sort=bytes_req.log2", which the kernel refuses back: "Invalid sort modifier"). Other
// triggers are matched on their command alone: "traceon:count=3 if x > 1" is "traceon",
// "enable_event:sched:sched_switch:unlimited" is "enable_event:sched:sched_switch". Seen on
// 6.1 and 6.12 (vmtest TestResetAll).
func triggerRemoval(line string) string {
	head, filter, _ := strings.Cut(line, " ")
	if !strings.HasPrefix(head, "hist:") && head != "hist" {
		head = strings.TrimSuffix(head, ":unlimited")
		if i := strings.Index(head, ":count="); i >= 0 {
			head = head[:i]
		}
		return head
	}
	for _, state := range []string{"[active]", "[paused]"} {
		filter = strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(filter), state))
	}
	parts := strings.Split(head, ":")
	for i, p := range parts {
		keys, ok := strings.CutPrefix(p, "sort=")
		if !ok {
			continue
		}
		ks := strings.Split(keys, ",")
		for j, k := range ks {
			name, mods, _ := strings.Cut(k, ".")
			for _, m := range strings.Split(mods, ".") {
				if m == "descending" || m == "ascending" {
					name += "." + m
				}
			}
			ks[j] = name
		}
		parts[i] = "sort=" + strings.Join(ks, ",")
	}
	head = strings.Join(parts, ":")
	if filter != "" {
		return head + " " + filter
	}
	return head
}
