package count

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"syscall"
	"time"

	"github.com/ftctl/ftctl/hist"
	"github.com/ftctl/ftctl/session"
	"github.com/ftctl/ftctl/tracefs"
)

// The probes' own cost. A latency set-up measures from the entry probe's timestamp to the
// return probe's: the entry's trigger work after its timestamp (the table insert of ts0) and
// the return probe's own path before its timestamp are inside every duration. On a function
// that does next to nothing that bias is most of what is measured (seen 2026-11-28, 6.12 under
// qemu's instruction clock: ftctl's median one log2 bucket above function_graph's on
// __task_pid_nr_ns, and the same on 6.1). MeasureBias measures it on such a function, with the
// probes of the kind the set-up uses, and LatencySetupCorrected takes it off each duration.

// NearZero is the function the bias is measured on: getppid(2) calls it once, and it does
// next to nothing (a pid looked up under RCU); both Debian kernels (6.1, 6.12) let ftrace and
// kprobes attach to it, neither to __x64_sys_getppid.
const NearZero = "__task_pid_nr_ns"

// BiasCalls is how many calls of NearZero MeasureBias makes: under qemu's TCG about 0.1 s.
const BiasCalls = 2000

// biasFile is the bias kept for the boot, beside the sessions' journals (FS.StatePath).
const biasFile = "latency-bias.json"

// Bias is the probes' own cost as measured, in whole µs (the set-up's clock: common_timestamp.usecs).
type Bias struct {
	US       uint64    `json:"us"`       // the median of the calls measured: what is taken off
	Func     string    `json:"func"`     // the function measured (NearZero)
	Kind     string    `json:"kind"`     // "fprobe" or "kprobe": the probes of the set-up
	Calls    uint64    `json:"calls"`    // how many calls the median is of
	Boot     string    `json:"boot"`     // the boot it was measured in
	Measured time.Time `json:"measured"` // when
}

// ProbeKindName names the probes of a latency set-up: "fprobe" or "kprobe" (a kprobe and a
// kretprobe).
func ProbeKindName(fprobe bool) string {
	if fprobe {
		return "fprobe"
	}
	return "kprobe"
}

// MeasureBias measures the bias of fprobe's kind of probes: a latency set-up on NearZero in a
// session of its own (ftctl's own calls recorded: they are the measure), set up by start
// (which holds the tracefs lock and calls Start), BiasCalls getppid(2) calls made on one
// thread, the durations read by exact value, the median taken; the session is torn down.
func MeasureBias(fs *tracefs.FS, fprobe bool, start func(*session.Session) error) (b Bias, err error) {
	runtime.LockOSThread() // the calls are made by one thread, the one the entry's filter names
	defer runtime.UnlockOSThread()
	id := session.NewID(os.Getpid())
	l := LatencySetup(id, NearZero, fprobe, syscall.Gettid(), "")
	l.Triggers[2].Text = "hist:keys=lat:sort=lat" // each duration (µs) a key of its own
	s, err := session.New(fs, id, session.Spec{Dynamic: l.Dynamic, Triggers: l.Triggers, IncludeSelf: true})
	if err != nil {
		return b, err
	}
	if err := start(s); err != nil {
		return b, err
	}
	defer func() {
		for _, e := range s.Teardown() {
			if err == nil {
				err = e
			}
		}
	}()
	if err := s.Begin(); err != nil {
		return b, err
	}
	for range BiasCalls {
		syscall.Getppid()
	}
	if err := s.Instance.Write("tracing_on", "0"); err != nil {
		return b, err
	}
	t, err := readTable(s.Instance, "synthetic", l.Synthetic)
	if err != nil {
		return b, err
	}
	med, n := medianOf(t)
	if n < BiasCalls/2 {
		return b, fmt.Errorf("%d of %d calls of %s measured", n, BiasCalls, NearZero)
	}
	return Bias{US: med, Func: NearZero, Kind: ProbeKindName(fprobe), Calls: n, Boot: fs.BootID(), Measured: time.Now().UTC()}, nil
}

// medianOf is the median duration of a table keyed by exact durations (hist:keys=lat), and
// how many calls it holds.
func medianOf(t hist.Table) (median, calls uint64) {
	type row struct{ lat, n uint64 }
	var rows []row
	for _, r := range t.Rows {
		if len(r.Keys) == 0 {
			continue
		}
		n, _ := r.Value("hitcount")
		rows = append(rows, row{r.Keys[0].Num, uint64(n)})
		calls += uint64(n)
	}
	slices.SortFunc(rows, func(a, b row) int {
		switch {
		case a.lat < b.lat:
			return -1
		case a.lat > b.lat:
			return 1
		}
		return 0
	})
	var seen uint64
	for _, r := range rows {
		seen += r.n
		if 2*seen >= calls {
			return r.lat, calls
		}
	}
	return 0, calls
}

// LoadBias is the bias of fprobe's kind measured in this boot, if ftctl kept one.
func LoadBias(fs *tracefs.FS, fprobe bool) (Bias, bool) {
	b, err := os.ReadFile(filepath.Join(fs.StatePath(), biasFile))
	if err != nil {
		return Bias{}, false
	}
	var all []Bias
	if json.Unmarshal(b, &all) != nil {
		return Bias{}, false
	}
	boot, kind := fs.BootID(), ProbeKindName(fprobe)
	for _, x := range all {
		if boot != "" && x.Boot == boot && x.Kind == kind && x.Func == NearZero {
			return x, true
		}
	}
	return Bias{}, false
}

// SaveBias keeps b for the rest of the boot (the biases of other boots dropped), 0600 in
// ftctl's state directory.
func SaveBias(fs *tracefs.FS, b Bias) error {
	dir := fs.StatePath()
	path := filepath.Join(dir, biasFile)
	var all []Bias
	if old, err := os.ReadFile(path); err == nil {
		json.Unmarshal(old, &all) // a broken file is replaced
	}
	all = slices.DeleteFunc(all, func(x Bias) bool { return x.Boot != b.Boot || x.Kind == b.Kind })
	all = append(all, b)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("making %s for the probes' measured cost: %w", dir, err)
	}
	text, err := json.MarshalIndent(all, "", "  ")
	if err != nil {
		return err
	}
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, append(text, '\n'), 0o600); err != nil {
		return fmt.Errorf("keeping the probes' measured cost: %w", err)
	}
	if err := os.Rename(tmp, path); err != nil {
		os.Remove(tmp)
		return fmt.Errorf("keeping the probes' measured cost: %w", err)
	}
	return nil
}
