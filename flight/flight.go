// Package flight is the flight recorder: a profile applied as a declared owner whose instance
// records into an overwrite ring with no process holding it, what a later dump needs of the
// kernel (event formats, kallsyms) captured when it starts, and its ring dumped on demand into
// a trace.dat without stopping it (the kernel's snapshot buffer: the live ring swapped out and
// read while recording goes on into the other).
//
// A recorder's state lives beside its owner's declaration, in the state directory:
// flight/NAME/header.dat, a trace.dat without CPUs written at start.
package flight

import (
	"context"
	"errors"
	"fmt"
	iofs "io/fs"
	"os"
	"path/filepath"
	"sort"

	"github.com/ftctl/ftctl/profile"
	"github.com/ftctl/ftctl/session"
	"github.com/ftctl/ftctl/stream"
	"github.com/ftctl/ftctl/tracefs"
)

// ErrNoRecorder: no flight recorder of that name.
var ErrNoRecorder = errors.New("no such flight recorder")

// headerFile is the capture a recorder's dumps are written with.
const headerFile = "header.dat"

// dir is the recorder's state directory.
func dir(fs *tracefs.FS, name string) string { return filepath.Join(fs.StatePath(), "flight", name) }

// Start applies p as the recorder p.Metadata.Name: its owner declared (profile.Plan.Apply, the
// ring of the size p asks), the snapshot buffer allocated now (a dump at incident time then
// needs no memory), and what its dumps need of the kernel captured (stream.SaveHeader). A
// recorder that exists is refused (session.ErrOwnerExists). On failure nothing is left.
// The caller holds the tracefs lock.
func Start(ctx context.Context, fs *tracefs.FS, p *profile.Profile, notice func(string, ...any)) (*profile.Result, error) {
	name := p.Metadata.Name
	if _, err := session.ReadOwner(fs, name); err == nil {
		return nil, fmt.Errorf("%w: %s ('ftctl flight stop %s' first)", session.ErrOwnerExists, name, name)
	} else if !errors.Is(err, session.ErrNoOwner) {
		return nil, err
	}
	pl, err := profile.Compute(fs, p)
	if err != nil {
		return nil, err
	}
	res, err := pl.Apply(ctx, fs, notice)
	if err != nil || fs.DryRun != nil {
		return res, err
	}
	fail := func(err error) (*profile.Result, error) {
		if _, derr := Stop(fs, name); derr != nil {
			err = errors.Join(err, derr)
		}
		return nil, err
	}
	in, err := fs.Existing(p.InstanceName())
	if err != nil {
		return fail(err)
	}
	if err := equip(fs, in, name, notice); err != nil {
		return fail(err)
	}
	return res, nil
}

// equip gives recorder name's instance what its dumps need: its snapshot buffer (allocating
// it swaps the ring out and clears it, so what the first moments recorded goes; nothing when
// it is allocated already) and the kernel's formats and symbols, captured in its state
// directory.
func equip(fs *tracefs.FS, in *tracefs.Instance, name string, notice func(string, ...any)) error {
	if err := stream.PrepareSnapshot(in); err != nil {
		notice("flight %s: no snapshot buffer (%v): a dump will read the ring itself, emptying it", name, err)
	}
	if err := os.MkdirAll(dir(fs, name), 0o700); err != nil {
		return err
	}
	if err := stream.SaveHeader(in, filepath.Join(dir(fs, name), headerFile)); err != nil {
		return fmt.Errorf("capturing what a dump needs (formats, kallsyms): %w", err)
	}
	return nil
}

// Dump writes the ring of recorder name into the trace.dat out, without stopping it. out's
// directory must be one of owners' (stream.MakeRecordDir), as a recording's.
func Dump(ctx context.Context, fs *tracefs.FS, name, out string, owners ...int) (*stream.DumpStats, error) {
	in, err := recorder(fs, name)
	if err != nil {
		return nil, err
	}
	if fs.DryRun != nil { // what Dump writes and reads, in order; nil stats
		snap := in.Path("snapshot")
		fmt.Fprintf(fs.DryRun, "dry-run: write %s %q\ndry-run: write %s %q\ndry-run: read %s into %s\ndry-run: write %s %q\n",
			snap, "2", snap, "1", in.Path("per_cpu/cpu*/snapshot_raw"), out, snap, "2")
		return nil, nil
	}
	return stream.Dump(ctx, in, filepath.Join(dir(fs, name), headerFile), out, owners...)
}

// recorder is the instance of recorder name, checked to be one.
func recorder(fs *tracefs.FS, name string) (*tracefs.Instance, error) {
	if err := session.CheckOwnerName(name); err != nil {
		return nil, err
	}
	if _, err := os.Stat(filepath.Join(dir(fs, name), headerFile)); err != nil {
		return nil, fmt.Errorf("%w: %s ('ftctl flight status' lists them)", ErrNoRecorder, name)
	}
	return fs.Existing(session.OwnerID(name).Instance())
}

// Stop removes exactly what Start made: the snapshot buffer freed, the owner deleted
// (session.Undeclare), the captured state removed. A recorder half gone is finished. A
// recorder another live process arms is refused (tracefs.ErrBusy): its triggers would fire
// into a recorder gone.
func Stop(fs *tracefs.FS, name string) (*session.Owner, error) {
	if err := session.CheckOwnerName(name); err != nil {
		return nil, err
	}
	if a := readArm(fs, name); a != nil && a.Alive && a.PID != os.Getpid() {
		return nil, fmt.Errorf("%w: recorder %s is armed by process %d (ftctl flight arm), whose dumps would fail: stop it first (systemctl stop ftctl-flight@%s, or kill %d), or arm with --stop-at-exit",
			tracefs.ErrBusy, name, a.PID, name, a.PID)
	}
	var errs []error
	if in, err := fs.Existing(session.OwnerID(name).Instance()); err == nil && in.Has("snapshot") {
		if err := stream.FreeSnapshot(in); err != nil {
			errs = append(errs, err)
		}
	}
	o, err := session.Undeclare(fs, name)
	if err != nil && !errors.Is(err, session.ErrNoOwner) {
		errs = append(errs, err)
	}
	_, serr := os.Stat(dir(fs, name))
	if errors.Is(err, session.ErrNoOwner) && errors.Is(serr, iofs.ErrNotExist) {
		return nil, fmt.Errorf("%w: %s", ErrNoRecorder, name)
	}
	if fs.DryRun == nil {
		if err := os.RemoveAll(dir(fs, name)); err != nil {
			errs = append(errs, err)
		}
		os.Remove(filepath.Dir(dir(fs, name))) // the last recorder takes flight/ with it
	}
	return o, errors.Join(errs...)
}

// Status is a recorder's state, for `ftctl flight status`.
type Status struct {
	Name     string `json:"name"`
	Instance string `json:"instance"`
	State    string `json:"state"` // the declaration's: applied, applying
	Since    string `json:"since"`
	// BufferKB is the ring's size per CPU; TracingOn whether it records.
	BufferKB  int                `json:"buffer_kb"`
	TracingOn bool               `json:"tracing_on"`
	Snapshot  bool               `json:"snapshot"` // dumps swap the ring out (no gap)
	CPUs      []tracefs.CPUStats `json:"cpus"`
	// FillPercent is how full the ring is: the bytes it holds against its size, all CPUs.
	FillPercent float64 `json:"fill_percent"`
	// Events are the events enabled in the ring.
	Events []string `json:"events"`
	// Arm is the arming process's state (flight arm), null when none armed it; Dumps are
	// the dumps on disk in its directory.
	Arm   *ArmState  `json:"arm"`
	Dumps []DumpFile `json:"dumps"`
}

// Statuses lists the recorders (only name when given).
func Statuses(fs *tracefs.FS, name string) ([]Status, error) {
	names := []string{name}
	if name == "" {
		ents, err := os.ReadDir(filepath.Join(fs.StatePath(), "flight"))
		if err != nil && !errors.Is(err, iofs.ErrNotExist) {
			return nil, err
		}
		names = nil
		for _, e := range ents {
			names = append(names, e.Name())
		}
		sort.Strings(names)
	}
	out := []Status{}
	for _, n := range names {
		in, err := recorder(fs, n)
		if err != nil {
			return nil, err
		}
		st := Status{Name: n, Instance: in.Name, Snapshot: in.Has("snapshot"), Events: []string{}, Dumps: []DumpFile{}}
		if o, err := session.ReadOwner(fs, n); err == nil {
			st.State, st.Since = o.State, o.Since.Format("2006-01-02T15:04:05Z")
		} else {
			st.State = "not declared"
		}
		if !in.Has("tracing_on") {
			st.State = "instance missing"
			out = append(out, st)
			continue
		}
		st.BufferKB, _, _ = in.BufferSizeKB()
		st.TracingOn, _ = in.TracingOn()
		st.CPUs, _ = in.CPUStats()
		st.FillPercent = fill(st.CPUs, st.BufferKB)
		if st.Arm = readArm(fs, n); st.Arm != nil {
			st.Dumps, _ = Dumps(st.Arm.Dir, n)
		}
		if ev, err := in.EnabledEvents(); err == nil {
			for _, e := range ev {
				st.Events = append(st.Events, e.System+":"+e.Event)
			}
		}
		out = append(out, st)
	}
	return out, nil
}

// fill is the percentage of the rings of cpus (bufferKB each) their bytes take.
func fill(cpus []tracefs.CPUStats, bufferKB int) float64 {
	var bytes int64
	for _, c := range cpus {
		bytes += c.BytesInBuffer
	}
	if bufferKB <= 0 || len(cpus) == 0 {
		return 0
	}
	return float64(bytes) * 100 / float64(int64(bufferKB)<<10*int64(len(cpus)))
}

// Summary of a status's CPUs: entries, overruns (events the ring overwrote) and bytes.
func (s Status) Summary() string {
	var entries, overrun, bytes int64
	for _, c := range s.CPUs {
		entries, overrun, bytes = entries+c.Entries, overrun+c.Overrun, bytes+c.BytesInBuffer
	}
	return fmt.Sprintf("%d events in the ring (%d KiB, %.0f%% full), %d overwritten", entries, bytes>>10, s.FillPercent, overrun) +
		map[bool]string{true: "", false: "; not recording"}[s.TracingOn] +
		map[bool]string{true: "", false: "; no snapshot buffer (a dump empties the ring)"}[s.Snapshot]
}

// Prune removes the state of recorders whose owner is gone (`ftctl reset --all` deleted it):
// a directory flight/NAME with no declaration of NAME. It returns the names it removed (with
// fs.DryRun, would remove: a dry run of reset --all deleted no owner, so there every
// recorder's state is one it would remove). The caller holds the tracefs lock.
func Prune(fs *tracefs.FS) ([]string, error) {
	ents, err := os.ReadDir(filepath.Join(fs.StatePath(), "flight"))
	if errors.Is(err, iofs.ErrNotExist) {
		return nil, nil
	} else if err != nil {
		return nil, err
	}
	var pruned []string
	var errs []error
	for _, e := range ents {
		n := e.Name()
		if session.CheckOwnerName(n) != nil {
			continue // not a recorder's
		}
		if _, err := session.ReadOwner(fs, n); !errors.Is(err, session.ErrNoOwner) && fs.DryRun == nil {
			continue
		}
		if fs.DryRun == nil {
			if err := os.RemoveAll(dir(fs, n)); err != nil {
				errs = append(errs, err)
				continue
			}
		}
		pruned = append(pruned, n)
	}
	if fs.DryRun == nil {
		os.Remove(filepath.Join(fs.StatePath(), "flight")) // empty now: gone, as after the last stop
	}
	return pruned, errors.Join(errs...)
}

// Reapply brings the running recorder p.Metadata.Name to p through the engine
// (profile.Plan.Apply: what changed written in place, or the owner set up again when its
// definitions changed, and on failure the kernel put back as it was), then allocates its
// snapshot buffer again if the set-up made a new instance, and captures what its dumps need
// again (its events may have changed). The caller holds the tracefs lock.
func Reapply(ctx context.Context, fs *tracefs.FS, p *profile.Profile, notice func(string, ...any)) (*profile.Result, error) {
	name := p.Metadata.Name
	if _, err := recorder(fs, name); err != nil {
		return nil, err
	}
	pl, err := profile.Compute(fs, p)
	if err != nil {
		return nil, err
	}
	res, err := pl.Apply(ctx, fs, notice)
	if err != nil || fs.DryRun != nil || !res.Changed {
		return res, err
	}
	in, err := fs.Existing(p.InstanceName())
	if err != nil {
		return res, err
	}
	return res, equip(fs, in, name, notice)
}

// Ensure makes the recorder p.Metadata.Name hold p, whatever it finds: no owner of that name
// (Start), an owner applied as a plain profile, not yet a recorder (p applied, then its
// snapshot buffer and capture added: adopted), or a recorder (Reapply). What an agent keeps.
// The caller holds the tracefs lock.
func Ensure(ctx context.Context, fs *tracefs.FS, p *profile.Profile, notice func(string, ...any)) (*profile.Result, error) {
	name := p.Metadata.Name
	if _, err := session.ReadOwner(fs, name); errors.Is(err, session.ErrNoOwner) {
		return Start(ctx, fs, p, notice)
	} else if err != nil {
		return nil, err
	}
	if _, err := recorder(fs, name); !errors.Is(err, ErrNoRecorder) {
		return Reapply(ctx, fs, p, notice)
	}
	pl, err := profile.Compute(fs, p)
	if err != nil {
		return nil, err
	}
	res, err := pl.Apply(ctx, fs, notice)
	if err != nil || fs.DryRun != nil {
		return res, err
	}
	in, err := fs.Existing(p.InstanceName())
	if err != nil {
		return res, err
	}
	return res, equip(fs, in, name, notice)
}

// FillRatio is how full a recorder's ring is, 0 to 1: the bytes its CPUs' rings hold
// against their size (bufferKB each).
func FillRatio(cpus []tracefs.CPUStats, bufferKB int) float64 { return fill(cpus, bufferKB) / 100 }
