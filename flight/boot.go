package flight

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/ftctl/ftctl/session"
	"github.com/ftctl/ftctl/stream"
	"github.com/ftctl/ftctl/tracefs"
)

// Reboot survival. Linux 6.12 can place an instance's ring in memory reserved at boot
// (`reserve_mem=SIZE:ALIGN:LABEL`, `trace_instance=NAME@LABEL,EVENTS`), which a warm reboot
// keeps: the next boot finds the previous boot's events in it (Documentation/admin-guide/
// kernel-parameters.txt, trace_instance). BootConfig says which parameters make recorder
// NAME's instance such a ring and saves what reading it back needs; LastBoot, after a reboot,
// writes its content into a trace.dat.
//
// The capture (formats, kallsyms, printk formats) is saved where a reboot keeps it,
// BOOTDIR/flight/NAME/boot.dat (DefaultBootDir: /var/lib/ftctl, not /run, which a boot
// empties): the boot that reads the ring runs a kernel whose formats and symbols may differ.

// DefaultBootDir is where the captures of persistent recorders live: it must survive a reboot.
const DefaultBootDir = "/var/lib/ftctl"

// DefaultBootMB is the memory reserved for a persistent ring, as the kernel's example.
const DefaultBootMB = 16

// maxLabel: reserve_mem's label holds at most 15 characters (RESERVE_MEM_NAME_SIZE 16, with
// its NUL; mm/memblock.c).
const maxLabel = 15

// ErrNoPersistentRing: the kernel has no persistent ring buffer (before 6.12).
var ErrNoPersistentRing = fmt.Errorf("%w: this kernel has no persistent ring buffer (trace_instance=NAME@LABEL with reserve_mem=, Linux 6.12)", tracefs.ErrUnavailable)

// ErrNoEvent: an event boot-config names is not in the kernel.
var ErrNoEvent = errors.New("no such event")

// ErrNotBooted: the kernel was not booted with the recorder's parameters.
var ErrNotBooted = fmt.Errorf("%w: no persistent ring for this recorder", tracefs.ErrUnavailable)

// BootConfig is what `ftctl flight boot-config` reports.
type BootConfig struct {
	Name     string `json:"name"`
	Instance string `json:"instance"`
	// Params are the kernel parameters to boot with; Missing those the running kernel's
	// command line lacks (empty: it was booted with them).
	Params  []string `json:"params"`
	Missing []string `json:"missing"`
	// Active: the recorder's instance is a persistent ring now (it has last_boot_info).
	Active bool `json:"active"`
	// Saved is the capture saved for reading the ring after a reboot.
	Saved string `json:"saved"`
	// Kept: Saved is an earlier boot's capture, which 'last-boot' needs to read what the
	// ring kept from that boot: it was left as it is, not replaced by this boot's (last-boot
	// saves this boot's once it has read the ring).
	Kept bool `json:"kept"`
}

// bootIDFile is the boot id of the boot whose capture is saved, beside it.
func bootIDFile(header string) string { return strings.TrimSuffix(header, ".dat") + ".boot_id" }

// saveCapture saves this boot's capture (formats, symbols) of in's events into header, and
// this boot's id beside it.
func saveCapture(fs *tracefs.FS, in *tracefs.Instance, header string, evs []tracefs.EventName) error {
	if err := stream.SaveHeaderEvents(in, header, evs); err != nil {
		return err
	}
	return os.WriteFile(bootIDFile(header), []byte(fs.BootID()+"\n"), 0o600)
}

// capturedEarlier says whether the capture in header was saved in another boot than this one
// (a capture without its boot id, saved before ftctl kept it, counts as another boot's).
func capturedEarlier(fs *tracefs.FS, header string) bool {
	if _, err := os.Stat(header); err != nil {
		return false
	}
	b, err := os.ReadFile(bootIDFile(header))
	return err != nil || strings.TrimSpace(string(b)) != fs.BootID()
}

// bootHeader is recorder name's capture in bootDir.
func bootHeader(bootDir, name string) string {
	return filepath.Join(bootDir, "flight", name, "boot.dat")
}

// Persistent says whether the kernel has the persistent ring buffer, from its files: an
// instance with last_boot_info, or else (none booted so) the kernel's symbols of it,
// tracing_last_boot_read (the reader of last_boot_info, kernel/trace/trace.c) and
// reserve_mem_find_by_name (mm/memblock.c), both 6.12.
func Persistent(ctx context.Context, fs *tracefs.FS) bool {
	names, _ := fs.Instances()
	for _, n := range names {
		if in, err := fs.Existing(n); err == nil && in.Has("last_boot_info") {
			return true
		}
	}
	ks, err := fs.Kallsyms(ctx)
	return err == nil && hasSymbol(ks, "tracing_last_boot_read") && hasSymbol(ks, "reserve_mem_find_by_name")
}

// hasSymbol: kallsyms' text lists name (addresses hidden or not).
func hasSymbol(kallsyms []byte, name string) bool {
	for _, suffix := range []string{" " + name + "\n", " " + name + "\t"} {
		if bytes.Contains(kallsyms, []byte(suffix)) {
			return true
		}
	}
	return false
}

// BootParams are the kernel parameters that make recorder name's instance a persistent ring of
// sizeMB MiB enabling events (SYSTEM:EVENT or SYSTEM): nokaslr (the kernel's documentation:
// with KASLR the reserved memory may move, losing the ring), reserve_mem under the label name,
// trace_instance.
func BootParams(name string, sizeMB int, events []string) ([]string, error) {
	if err := session.CheckOwnerName(name); err != nil {
		return nil, err
	}
	if len(name) > maxLabel {
		return nil, fmt.Errorf("%s: a persistent recorder's name is reserve_mem's label, of at most %d characters", name, maxLabel)
	}
	if sizeMB <= 0 || sizeMB > 1<<20 {
		return nil, fmt.Errorf("--size-mb %d: not between 1 and %d", sizeMB, 1<<20)
	}
	inst := session.OwnerID(name).Instance() + "@" + name
	for _, e := range events {
		if e == "" || strings.ContainsAny(e, ", \t\n\"^@") {
			return nil, fmt.Errorf("event %q: not SYSTEM:EVENT or SYSTEM", e)
		}
		inst += "," + e
	}
	return []string{"nokaslr", fmt.Sprintf("reserve_mem=%dM:4096:%s", sizeMB, name), "trace_instance=" + inst}, nil
}

// eventNames are events as SaveHeaderEvents takes them, each checked to exist in the kernel.
func eventNames(fs *tracefs.FS, events []string) ([]tracefs.EventName, error) {
	var out []tracefs.EventName
	for _, e := range events {
		sys, ev, _ := strings.Cut(e, ":")
		if ev == "" {
			if names, _ := fs.Events(sys); len(names) == 0 {
				return nil, fmt.Errorf("%w: %q: no such system in events/", ErrNoEvent, e)
			}
		} else if !fs.Top().Has(filepath.Join("events", sys, ev, "format")) {
			return nil, fmt.Errorf("%w: %q: not in events/", ErrNoEvent, e)
		}
		out = append(out, tracefs.EventName{System: sys, Event: ev})
	}
	return out, nil
}

// Boot computes recorder name's boot parameters, checks cmdline (the running kernel's
// parameters) against them, and saves the capture a later LastBoot reads the ring with into
// bootDir. ErrNoPersistentRing on a kernel without the feature; an invalid name, size or event
// is an error wrapping session.ErrBadName or naming it.
func Boot(ctx context.Context, fs *tracefs.FS, name string, sizeMB int, events, cmdline []string, bootDir string) (*BootConfig, error) {
	params, err := BootParams(name, sizeMB, events)
	if err != nil {
		return nil, err
	}
	if !Persistent(ctx, fs) {
		return nil, ErrNoPersistentRing
	}
	evs, err := eventNames(fs, events)
	if err != nil {
		return nil, err
	}
	bc := &BootConfig{Name: name, Instance: session.OwnerID(name).Instance(), Params: params, Missing: []string{},
		Saved: bootHeader(bootDir, name)}
	for _, p := range params {
		if !slices.Contains(cmdline, p) {
			bc.Missing = append(bc.Missing, p)
		}
	}
	in := fs.Top()
	if pin, err := fs.Existing(bc.Instance); err == nil && pin.Has("last_boot_info") {
		in, bc.Active = pin, true
	}
	if bc.Active && capturedEarlier(fs, bc.Saved) {
		// the ring holds what an earlier boot recorded, unread: its capture reads it
		bc.Kept = true
		return bc, nil
	}
	if fs.DryRun != nil {
		fmt.Fprintf(fs.DryRun, "dry-run: save the formats and symbols of this boot into %s\n", bc.Saved)
		return bc, nil
	}
	if err := saveCapture(fs, in, bc.Saved, evs); err != nil {
		return nil, fmt.Errorf("saving the formats and symbols a reboot needs into %s: %w", bc.Saved, err)
	}
	return bc, nil
}

// LastBootResult is what LastBoot did.
type LastBootResult struct {
	*stream.DumpStats
	Shift stream.AddressShift `json:"shift"`
}

// LastBoot writes the previous boot's events in recorder name's persistent ring into the
// trace.dat out (its directory one of owners', as a recording's), with the capture Boot saved,
// moved to the previous boot's addresses; then saves this boot's capture for the next reboot.
// Reading empties the ring. The caller holds the tracefs lock.
func LastBoot(ctx context.Context, fs *tracefs.FS, name, out, bootDir string, owners ...int) (*LastBootResult, error) {
	if err := session.CheckOwnerName(name); err != nil {
		return nil, err
	}
	inst := session.OwnerID(name).Instance()
	in, err := fs.Existing(inst)
	if err != nil || !in.Has("last_boot_info") {
		if !Persistent(ctx, fs) {
			return nil, ErrNoPersistentRing
		}
		return nil, fmt.Errorf("%w: instance %s is not a persistent ring ('ftctl flight boot-config %s' says what to boot with)", ErrNotBooted, inst, name)
	}
	header := bootHeader(bootDir, name)
	if _, err := os.Stat(header); err != nil {
		return nil, fmt.Errorf("%w: no formats and symbols saved in %s: 'ftctl flight boot-config %s' saves them, in the boot before a reboot", ErrNotBooted, header, name)
	}
	if fs.DryRun != nil {
		fmt.Fprintf(fs.DryRun, "dry-run: read %s into %s (with %s)\ndry-run: save the formats and symbols of this boot into %s\n",
			in.Path("per_cpu/cpu*/trace_pipe_raw"), out, header, header)
		return nil, nil
	}
	st, shift, err := stream.DumpLastBoot(ctx, in, header, out, owners...)
	if err != nil {
		return nil, err
	}
	evs, _ := in.EnabledEvents()
	if err := saveCapture(fs, in, header, evs); err != nil {
		return nil, fmt.Errorf("%s written, but saving this boot's formats and symbols into %s failed (the next reboot's last-boot reads it with the old ones): %w", out, header, err)
	}
	return &LastBootResult{DumpStats: st, Shift: shift}, nil
}
