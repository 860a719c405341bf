package stream

import (
	"math"
	"runtime"
	"runtime/debug"
	"testing"
)

// OneP gives one P unless GOMAXPROCS is set, and puts the setting back.
func TestOneP(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(3))
	for _, c := range []struct {
		env  string
		want int
	}{{"", 1}, {"3", 3}} {
		t.Setenv("GOMAXPROCS", c.env)
		restore := OneP()
		if n := runtime.GOMAXPROCS(0); n != c.want {
			t.Errorf("GOMAXPROCS=%q: %d Ps, want %d", c.env, n, c.want)
		}
		restore()
		if n := runtime.GOMAXPROCS(0); n != 3 {
			t.Errorf("GOMAXPROCS=%q: %d Ps after, want 3", c.env, n)
		}
	}
}

// RecorderGC turns the pacer off for a bound, and puts both back.
func TestRecorderGC(t *testing.T) {
	restore := RecorderGC()
	gc := debug.SetGCPercent(-1)
	limit := debug.SetMemoryLimit(-1)
	restore()
	if gc != -1 || limit != recorderMemoryLimit {
		t.Errorf("while recording: GOGC %d, limit %d", gc, limit)
	}
	gc = debug.SetGCPercent(100)
	debug.SetGCPercent(gc)
	if gc == -1 || debug.SetMemoryLimit(-1) != math.MaxInt64 {
		t.Errorf("after: GOGC %d, limit not put back", gc)
	}
}
