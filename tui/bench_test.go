package tui

import (
	"bytes"
	"context"
	"io"
	"runtime"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	tea "github.com/charmbracelet/bubbletea"

	"github.com/ftctl/ftctl/filters"
	"github.com/ftctl/ftctl/internal/fixture"
)

// previewIndex is the 70,000-function index of the budget: the 6.12 list followed by the
// 6.1 one, cut at 70,000 lines (as filters.BenchmarkPreview).
func previewIndex(b testing.TB) *filters.Index {
	b.Helper()
	a, err := fixture.Read("6.12", "available_filter_functions")
	if err != nil {
		b.Fatal(err)
	}
	c, err := fixture.Read("6.1", "available_filter_functions")
	if err != nil {
		b.Fatal(err)
	}
	lines := strings.SplitAfter(a+c, "\n")
	ix, err := filters.ParseIndex(strings.Join(lines[:70000], ""))
	if err != nil {
		b.Fatal(err)
	}
	ix.Prepare()
	return ix
}

// BenchmarkFunctionsKeystroke is one keystroke in the Functions view over 70,000 functions:
// the key through Update (compile, resolve, suggestions when nothing matches) and the view
// rendered. The budget is 5 ms.
func BenchmarkFunctionsKeystroke(b *testing.B) {
	fb := &fakeBackend{ix: previewIndex(b), tracer: "nop"}
	m := New(Options{Backend: fb, Now: fixedNow})
	m.SetSize(120, 40)
	m.Update(indexMsg{ix: fb.ix})
	m.Update(press("2"))
	for _, c := range []struct{ name, pattern string }{
		{"exact", "vfs_read"},
		{"prefix", "vfs_*"},
		{"middle", "*sched*"},
		{"glob", "*_[rw]*_[!x]?*"},
		{"everything", "*"},
		{"module", "*:mod:nls*"},
		{"typo-suggest", "vfs_raed"},
	} {
		last := c.pattern[len(c.pattern)-1:]
		b.Run(c.name, func(b *testing.B) {
			took := make([]time.Duration, 0, b.N)
			var cmd tea.Cmd
			for i := 0; i < b.N; i++ {
				m.funcs.input.SetValue(c.pattern[:len(c.pattern)-1])
				m.funcs.input.CursorEnd()
				start := time.Now()
				_, cmd = m.Update(press(last))
				_ = m.View()
				took = append(took, time.Since(start))
			}
			b.StopTimer()
			if m.funcs.input.Value() != c.pattern {
				b.Fatalf("typed %q", m.funcs.input.Value())
			}
			sort.Slice(took, func(i, j int) bool { return took[i] < took[j] })
			ms := func(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
			b.ReportMetric(ms(took[len(took)/2]), "p50-ms")
			b.ReportMetric(ms(took[len(took)*99/100]), "p99-ms")
			b.ReportMetric(float64(len(m.funcs.matches)), "matches")
			if len(m.funcs.matches) == 0 && cmd != nil { // the close names, computed off the event loop
				start := time.Now()
				msg := cmd()
				if batch, ok := msg.(tea.BatchMsg); ok {
					for _, c := range batch {
						if c != nil {
							c()
						}
					}
				}
				b.ReportMetric(ms(time.Since(start)), "suggest-ms")
			}
		})
	}
}

// frameWriter records when the program writes (one write per frame) and whether a write
// contains a marker.
type frameWriter struct {
	mu     sync.Mutex
	frames []time.Time
	marks  map[string][]time.Time
	want   []string
}

func (w *frameWriter) Write(p []byte) (int, error) {
	now := time.Now()
	w.mu.Lock()
	defer w.mu.Unlock()
	w.frames = append(w.frames, now)
	for _, s := range w.want {
		if bytes.Contains(p, []byte(s)) {
			w.marks[s] = append(w.marks[s], now)
		}
	}
	return len(p), nil
}

// firstAfter is when a write containing s first happened after t.
func (w *frameWriter) firstAfter(s string, t time.Time) (time.Time, bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, at := range w.marks[s] {
		if !at.Before(t) {
			return at, true
		}
	}
	return time.Time{}, false
}

type loadResult struct {
	events       int64
	seconds      float64
	frames       int // writes to the terminal
	renders      int // frames the model rendered
	latencies    []time.Duration
	missed       int
	heapMB       float64
	frameRate    float64
	p50, p99, mx time.Duration
}

// runUnderLoad runs the whole program (the standard renderer, at most 30 fps) with a synthetic
// source of rate events/s for d, pressing space (pause/resume) every 200 ms and measuring how
// long until a frame showing the change is written.
func runUnderLoad(t testing.TB, rate int, d time.Duration) loadResult {
	src := NewSyntheticSource(rate, 5*time.Millisecond, DefaultRingSize)
	m := New(Options{Backend: &fakeBackend{ix: &filters.Index{}, tracer: "function", on: true}, Source: src, StatusEvery: time.Second})
	w := &frameWriter{marks: map[string][]time.Time{}, want: []string{"PAUSED", "FOLLOWING"}}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	p := tea.NewProgram(m, tea.WithContext(ctx), tea.WithInput(nil), tea.WithOutput(w), tea.WithFPS(30), tea.WithoutSignalHandler())
	done := make(chan struct{})
	go func() {
		p.Run()
		close(done)
	}()
	p.Send(tea.WindowSizeMsg{Width: 160, Height: 50})
	time.Sleep(500 * time.Millisecond) // the ring fills, the rate settles
	start := time.Now()
	w.mu.Lock()
	framesBefore := len(w.frames)
	w.mu.Unlock()
	rendersBefore := m.Frames()
	var res loadResult
	paused := false
	for time.Since(start) < d {
		want := "PAUSED"
		if paused {
			want = "FOLLOWING"
		}
		sent := time.Now()
		p.Send(press("space"))
		paused = !paused
		time.Sleep(200 * time.Millisecond)
		if at, ok := w.firstAfter(want, sent); ok {
			res.latencies = append(res.latencies, at.Sub(sent))
		} else {
			res.missed++
		}
	}
	res.seconds = time.Since(start).Seconds()
	w.mu.Lock()
	res.frames = len(w.frames) - framesBefore
	w.mu.Unlock()
	p.Send(press("ctrl+c"))
	<-done
	res.renders = int(m.Frames() - rendersBefore)
	src.Close()
	res.events = m.stream.total
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	res.heapMB = float64(ms.HeapAlloc) / (1 << 20)
	runtime.KeepAlive(m)
	res.frameRate = float64(res.frames) / res.seconds
	sort.Slice(res.latencies, func(i, j int) bool { return res.latencies[i] < res.latencies[j] })
	if n := len(res.latencies); n > 0 {
		res.p50, res.p99, res.mx = res.latencies[n/2], res.latencies[(n*99)/100], res.latencies[n-1]
	}
	return res
}

// BenchmarkStreamUnderLoad: 50,000 events/s from a synthetic source through the decoder, the
// collector, the ring, the top counts and the renderer; key presses must redraw within 100 ms
// and the terminal must get at most 30 frames a second. Run with -benchtime 1x.
func BenchmarkStreamUnderLoad(b *testing.B) {
	for i := 0; i < b.N; i++ {
		r := runUnderLoad(b, 50000, 10*time.Second)
		b.ReportMetric(r.frameRate, "frames/s")
		b.ReportMetric(float64(r.renders)/r.seconds, "renders/s")
		b.ReportMetric(float64(r.p50.Microseconds())/1000, "key-p50-ms")
		b.ReportMetric(float64(r.p99.Microseconds())/1000, "key-p99-ms")
		b.ReportMetric(float64(r.mx.Microseconds())/1000, "key-max-ms")
		b.ReportMetric(float64(r.missed), "keys-missed")
		b.ReportMetric(float64(r.events)/(r.seconds+0.5), "events/s")
		b.ReportMetric(r.heapMB, "heap-MB")
	}
}

// TestStreamUnderLoad is the same, shorter, with the bounds asserted (generously for latency:
// a loaded CI machine is not the benchmark's).
func TestStreamUnderLoad(t *testing.T) {
	if testing.Short() {
		t.Skip("takes 3 s")
	}
	r := runUnderLoad(t, 50000, 3*time.Second)
	t.Logf("%.0f events, %.1f frames/s, %.1f renders/s, key→frame p50 %v max %v, %d missed, heap %.0f MB",
		float64(r.events), r.frameRate, float64(r.renders)/r.seconds, r.p50, r.mx, r.missed, r.heapMB)
	if r.frameRate > 31 {
		t.Errorf("%.1f frames/s written: the budget is 30", r.frameRate)
	}
	if r.events < 100000 {
		t.Errorf("only %d events in %.1f s at 50,000/s", r.events, r.seconds+0.5)
	}
	if r.missed > 0 || r.mx > time.Second {
		t.Errorf("key presses: %d never redrawn, slowest %v", r.missed, r.mx)
	}
}

var _ io.Writer = (*frameWriter)(nil)
