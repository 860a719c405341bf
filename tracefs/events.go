package tracefs

import (
	"errors"
	"io/fs"
	"os"
	"sort"
	"strings"
)

// EventSystems lists the trace event systems (the directories under events/: "sched", "syscalls",
// "kprobes"...), sorted; nil when the kernel has no events directory.
func (f *FS) EventSystems() ([]string, error) {
	return f.listDirs("events")
}

// Events lists the events of a system (the directories under events/SYSTEM/), sorted; nil when
// there is no such system (a name that is not a single directory name never is one). Every
// trace array has the same events, so the top level's are listed.
func (f *FS) Events(system string) ([]string, error) {
	if system == "" || system == "." || system == ".." || strings.ContainsRune(system, '/') {
		return nil, nil
	}
	return f.listDirs("events/" + system)
}

// listDirs returns the names of the directories in rel, sorted; nil when rel does not exist.
func (f *FS) listDirs(rel string) ([]string, error) {
	ents, err := os.ReadDir(f.Path(rel))
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, nil
		}
		return nil, f.opError("read", f.Path(rel), "", err)
	}
	var names []string
	for _, e := range ents {
		if e.IsDir() {
			names = append(names, e.Name())
		}
	}
	sort.Strings(names)
	return names, nil
}

// eventFile is a file of SYSTEM:EVENT's directory, relative to the trace array.
func eventFile(system, event, file string) string {
	return "events/" + system + "/" + event + "/" + file
}

// HasEvent says whether the trace array has the event SYSTEM:EVENT: its directory under
// events/ holds a format.
func (i *Instance) HasEvent(system, event string) bool {
	return i.Has(eventFile(system, event, "format"))
}

// CheckHist says whether SYSTEM:EVENT takes a hist trigger: the kernel has hist triggers
// (ft.HistTriggers, announced by the README) and the event's directory a hist file. Otherwise
// ErrUnavailable, naming the event's hist file.
func (i *Instance) CheckHist(system, event string, ft Features) error {
	file := eventFile(system, event, "hist")
	if i.Has(file) && ft.HistTriggers {
		return nil
	}
	return &Error{Op: "open", Path: i.Path(file), Class: ErrUnavailable,
		Reason: "this kernel has no hist triggers (CONFIG_HIST_TRIGGERS)"}
}

// EventHist reads the hist file of SYSTEM:EVENT: the tables of the hist triggers on the event
// in this trace array (hist.ParseOutput reads them).
func (i *Instance) EventHist(system, event string) ([]byte, error) {
	return i.ReadFile(eventFile(system, event, "hist"))
}
