package count

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ftctl/ftctl/hist"
	"github.com/ftctl/ftctl/session"
	"github.com/ftctl/ftctl/tracefs"
)

// histByValue is the table of 5,000 getppid(2) calls' durations of __task_pid_nr_ns keyed by
// exact value (hist:keys=lat), as 6.12 printed it under qemu (2026-11-28), shortened.
const histByValue = `# event histogram
#
# trigger info: hist:keys=lat:vals=hitcount:sort=lat:size=2048 [active]
#

{ lat:          2 } hitcount:       2181
{ lat:          3 } hitcount:       2625
{ lat:          4 } hitcount:         30
{ lat:          5 } hitcount:         40
{ lat:         38 } hitcount:          1
{ lat:       5230 } hitcount:          1

Totals:
    Hits: 4878
    Entries: 6
    Dropped: 0
`

func TestMedianOf(t *testing.T) {
	tables, err := hist.ParseOutput(histByValue)
	if err != nil || len(tables) != 1 {
		t.Fatal(err)
	}
	if med, n := medianOf(tables[0]); med != 3 || n != 4878 {
		t.Errorf("median %d of %d calls, want 3 of 4878", med, n)
	}
	for _, c := range []struct {
		rows string
		med  uint64
	}{
		{"{ lat: 7 } hitcount: 1\n", 7},
		{"{ lat: 9 } hitcount: 1\n{ lat: 1 } hitcount: 1\n", 1}, // the lower of two: at least half at or below
		{"{ lat: 1 } hitcount: 1\n{ lat: 4 } hitcount: 2\n", 4},
	} {
		tables, err := hist.ParseOutput("# trigger info: hist:keys=lat:vals=hitcount:sort=lat:size=2048 [active]\n\n" + c.rows + "\nTotals:\n    Hits: 3\n")
		if err != nil || len(tables) != 1 {
			t.Fatal(c.rows, err)
		}
		if med, _ := medianOf(tables[0]); med != c.med {
			t.Errorf("%q: median %d, want %d", c.rows, med, c.med)
		}
	}
	if med, n := medianOf(hist.Table{}); med != 0 || n != 0 {
		t.Errorf("empty: %d of %d", med, n)
	}
}

// The bias is kept per boot and per kind of probes: another boot's, or the other kind's, is
// not used; saving one keeps the other kind's of this boot and drops other boots'.
func TestBiasKeptPerBoot(t *testing.T) {
	dir := t.TempDir()
	fs := &tracefs.FS{StateDir: filepath.Join(dir, "state"), BootIDFile: filepath.Join(dir, "boot_id")}
	os.WriteFile(fs.BootIDFile, []byte("boot-a\n"), 0o644)
	if _, ok := LoadBias(fs, true); ok {
		t.Fatal("a bias before any was measured")
	}
	at := time.Date(2026, 11, 28, 4, 0, 0, 0, time.UTC)
	for _, b := range []Bias{
		{US: 9, Func: NearZero, Kind: "fprobe", Calls: 2000, Boot: "boot-old", Measured: at},
		{US: 7, Func: NearZero, Kind: "fprobe", Calls: 2000, Boot: "boot-a", Measured: at},
		{US: 11, Func: NearZero, Kind: "kprobe", Calls: 1999, Boot: "boot-a", Measured: at},
		{US: 8, Func: NearZero, Kind: "fprobe", Calls: 2000, Boot: "boot-a", Measured: at},
	} {
		if err := SaveBias(fs, b); err != nil {
			t.Fatal(err)
		}
	}
	if b, ok := LoadBias(fs, true); !ok || b.US != 8 {
		t.Errorf("fprobe: %+v %v, want 8 µs", b, ok)
	}
	if b, ok := LoadBias(fs, false); !ok || b.US != 11 || b.Calls != 1999 {
		t.Errorf("kprobe: %+v %v, want 11 µs", b, ok)
	}
	text, _ := os.ReadFile(filepath.Join(fs.StateDir, biasFile))
	if strings.Contains(string(text), "boot-old") || strings.Count(string(text), `"boot"`) != 2 {
		t.Errorf("kept:\n%s", text)
	}
	if st, err := os.Stat(filepath.Join(fs.StateDir, biasFile)); err != nil || st.Mode().Perm() != 0o600 {
		t.Errorf("mode: %v %v", st, err)
	}
	os.WriteFile(fs.BootIDFile, []byte("boot-b\n"), 0o644)
	if b, ok := LoadBias(fs, true); ok {
		t.Errorf("another boot's bias used: %+v", b)
	}
}

// The corrected set-up takes the bias off in the entry's saved time, in µs computed from
// nanoseconds on both sides (a constant beside common_timestamp.usecs is refused: the
// kernel's check_expr_operands wants the same timestamp units, and a constant has none).
func TestLatencySetupCorrected(t *testing.T) {
	id := session.OwnerID("t")
	raw := LatencySetup(id, "vfs_read", true, 0, "")
	if raw.BiasUS != 0 || !strings.Contains(raw.Triggers[0].Text, "ts0=common_timestamp.usecs") ||
		!strings.Contains(raw.Triggers[1].Text, "lat=common_timestamp.usecs-$ts0") {
		t.Errorf("raw: %+v", raw.Triggers)
	}
	c := LatencySetupCorrected(id, "vfs_read", false, 42, "", 7)
	if c.BiasUS != 7 || c.Triggers[0].Text != "hist:keys=common_pid:ts0=common_timestamp/1000+7 if common_pid == 42" ||
		!strings.HasPrefix(c.Triggers[1].Text, "hist:keys=common_pid:lat=common_timestamp/1000-$ts0:onmatch(") {
		t.Errorf("corrected: %+v", c.Triggers)
	}
	for _, x := range []struct {
		log2      uint64
		corrected bool
		le        uint64
	}{
		{0, false, 1}, {3, false, 8}, {3, true, 8}, {64, true, 1}, {63, true, 1}, {64, false, 1 << 63}, {62, true, 1 << 62},
	} {
		if got := LatencyBucket(x.log2, x.corrected); got != x.le {
			t.Errorf("LatencyBucket(%d, %v) = %d, want %d", x.log2, x.corrected, got, x.le)
		}
	}
}

// The set-up of each new maximum: the kprobe pair, both synthetic events defined before the
// trigger naming them, and onmax() keyed on common_type (one value on one event: one maximum).
func TestLatencyMaxSetup(t *testing.T) {
	id := session.OwnerID("t")
	l := LatencyMaxSetup(id, "vfs_read", false)
	want := []session.Dynamic{
		{Kind: 'p', Event: "lat_entry", Place: "vfs_read"}, {Kind: 'r', Event: "lat_return", Place: "vfs_read"},
		{Kind: 's', Event: l.Synthetic, Place: "u64 lat"}, {Kind: 's', Event: l.Max, Place: "u64 lat"},
	}
	if l.Max != id.Synthetic("max") || l.Max == l.Synthetic || len(l.Dynamic) != len(want) {
		t.Fatalf("max %q synthetic %q dynamic %+v", l.Max, l.Synthetic, l.Dynamic)
	}
	for i := range want {
		if l.Dynamic[i] != want[i] {
			t.Errorf("dynamic %d = %+v, want %+v", i, l.Dynamic[i], want[i])
		}
	}
	if len(l.Triggers) != 3 || l.Triggers[2].System != "synthetic" || l.Triggers[2].Event != l.Synthetic ||
		l.Triggers[2].Text != "hist:keys=common_type:m=lat:onmax($m).trace("+l.Max+",$m)" {
		t.Errorf("triggers: %+v", l.Triggers)
	}
	if l.Triggers[1] != LatencySetup(id, "vfs_read", false, 0, "").Triggers[1] {
		t.Errorf("the return's trigger is not latency's: %+v", l.Triggers[1])
	}
}
