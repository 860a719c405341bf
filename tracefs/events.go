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
