package probes

import (
	"encoding/json"
	"errors"
	"fmt"
	iofs "io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// The filters of the event probes ftctl adds. The kernel lists an event probe without its
// "if FILTER" (trace_eprobe.c eprobe_dyn_event_show prints the group, the event, the
// attached event and the arguments; seen on 6.12), so ftctl keeps each filter it writes in a
// record of its own, beside the sessions' journals (tracefs.FS.StatePath, /run/ftctl): `probe
// list` shows it from there, marked as ftctl's record and not the kernel's listing. A record
// holds the boot and the line the kernel listed once the probe was added: a probe defined again
// under the name, with another line, or a record of an earlier boot, shows nothing. `probe
// remove` drops the event's records.

const filterRecordFile = "eprobe-filters.json"

// filterRecord is one event probe's filter, as ftctl wrote it.
type filterRecord struct {
	Boot       string `json:"boot"`
	Definition string `json:"definition"` // the probe point as the kernel lists it
	Filter     string `json:"filter"`
}

func (m *Manager) filterRecordPath() string {
	return filepath.Join(m.FS.StatePath(), filterRecordFile)
}

// filterRecords reads the record: the entries of this boot (none when it cannot be read).
func (m *Manager) filterRecords() []filterRecord {
	b, err := os.ReadFile(m.filterRecordPath())
	if err != nil {
		return nil
	}
	var all []filterRecord
	if json.Unmarshal(b, &all) != nil {
		return nil
	}
	boot := m.FS.BootID()
	return slices.DeleteFunc(all, func(r filterRecord) bool { return r.Boot != boot })
}

// recordFilters notes the filter of the probe points just added (lines: as the kernel lists
// them), where the kernel's listing leaves the filter out; drop removes the records of an
// event ("GROUP/EVENT"; "" none). Callers hold the tracefs lock.
func (m *Manager) recordFilters(lines []string, filter, drop string) error {
	if m.FS.DryRun != nil {
		return nil
	}
	recs := slices.DeleteFunc(m.filterRecords(), func(r filterRecord) bool {
		return drop != "" && recordName(r.Definition) == drop || slices.Contains(lines, r.Definition)
	})
	boot := m.FS.BootID()
	for _, l := range lines {
		if filter != "" && !strings.Contains(l, " if ") {
			recs = append(recs, filterRecord{Boot: boot, Definition: l, Filter: filter})
		}
	}
	return m.saveFilterRecords(recs)
}

// recordName is the GROUP/EVENT of a listed line.
func recordName(line string) string {
	head, _, _ := strings.Cut(line, " ")
	_, name, _ := strings.Cut(head, ":")
	return name
}

func (m *Manager) saveFilterRecords(recs []filterRecord) error {
	path := m.filterRecordPath()
	if len(recs) == 0 {
		if err := os.Remove(path); err != nil && !errors.Is(err, iofs.ErrNotExist) {
			return fmt.Errorf("removing ftctl's record of event probe filters: %w", err)
		}
		return nil
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return fmt.Errorf("making %s for ftctl's record of event probe filters: %w", filepath.Dir(path), err)
	}
	b, err := json.MarshalIndent(recs, "", "  ")
	if err != nil {
		return err
	}
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, append(b, '\n'), 0o600); err != nil {
		return fmt.Errorf("writing ftctl's record of event probe filters: %w", err)
	}
	if err := os.Rename(tmp, path); err != nil {
		os.Remove(tmp)
		return fmt.Errorf("writing ftctl's record of event probe filters: %w", err)
	}
	return nil
}
