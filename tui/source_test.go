package tui

import (
	"context"
	"errors"
	"io"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ftctl/ftctl/stream"
)

func TestCollectorBoundsAndCountsDrops(t *testing.T) {
	c := newCollector(10)
	defer c.close()
	for i := 0; i < 25; i++ {
		c.put([]Row{{PID: int32(i)}})
	}
	b := <-c.out
	if len(b.Rows) != 10 || b.Dropped != 15 || b.Rows[0].PID != 15 || b.Rows[9].PID != 24 {
		t.Fatalf("%d rows, %d dropped, first %d", len(b.Rows), b.Dropped, b.Rows[0].PID)
	}
	c.fail(errors.New("boom"))
	if b := <-c.out; b.Err == nil || b.Err.Error() != "boom" {
		t.Fatalf("%+v", b)
	}
	if _, ok := <-c.out; ok {
		t.Fatal("the channel must close after the error")
	}
}

// scriptedPipe hands out chunks, then EOF, then blocks until closed (like trace_pipe).
type scriptedPipe struct {
	ctx    context.Context
	chunks []string
	eof    bool
	closed chan struct{}
	once   sync.Once
}

func (p *scriptedPipe) Read(b []byte) (int, error) {
	if len(p.chunks) > 0 {
		n := copy(b, p.chunks[0])
		p.chunks = p.chunks[1:]
		return n, nil
	}
	if p.eof {
		return 0, io.EOF
	}
	select {
	case <-p.closed:
		return 0, errors.New("closed")
	case <-p.ctx.Done():
		return 0, p.ctx.Err()
	}
}

func (p *scriptedPipe) Close() error {
	p.once.Do(func() { close(p.closed) })
	return nil
}

// lineStream is an EventStream over trace_pipe text, for tests.
type lineStream struct {
	r   io.ReadCloser
	dec stream.Decoder
	buf [4096]byte
}

func (l *lineStream) Next(emit stream.Emit) error {
	n, err := l.r.Read(l.buf[:])
	if n > 0 {
		l.dec.Feed(l.buf[:n], emit)
		l.dec.Flush(emit)
	}
	return err
}

func (l *lineStream) Close() error { return l.r.Close() }

func TestPipeSourceReopensAfterEOFAndCloses(t *testing.T) {
	before := runtime.NumGoroutine()
	var mu sync.Mutex
	opens := 0
	open := func(ctx context.Context) (EventStream, error) {
		mu.Lock()
		defer mu.Unlock()
		opens++
		line := "            bash-1234    [001] .....   1.00000" + string(rune('0'+opens)) + ": vfs_read <-ksys_read\n"
		return &lineStream{r: &scriptedPipe{ctx: ctx, chunks: []string{line}, eof: opens == 1, closed: make(chan struct{})}}, nil
	}
	src, err := NewPipeSource(context.Background(), open, 100)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	deadline := time.After(5 * time.Second)
	for len(got) < 2 {
		select {
		case b := <-src.Batches():
			for _, r := range b.Rows {
				got = append(got, r.TS())
			}
		case <-deadline:
			t.Fatalf("rows: %v", got)
		}
	}
	if strings.Join(got, " ") != "1.000001 1.000002" {
		t.Errorf("rows %v", got)
	}
	src.Close()
	if _, ok := <-src.Batches(); ok {
		t.Error("Batches must close with the source")
	}
	time.Sleep(50 * time.Millisecond)
	if n := runtime.NumGoroutine(); n > before+1 {
		t.Errorf("goroutines: %d before, %d after Close", before, n)
	}
}

// TestSyntheticSourceRate: the source keeps to its rate: never ahead of the clock, and it gets
// there (within a generous 5 s for 0.3 s of events: a loaded machine schedules it late, which
// is not what this tests).
func TestSyntheticSourceRate(t *testing.T) {
	const rate = 20000
	start := time.Now() // before the source's own start: its events are due no earlier
	src := NewSyntheticSource(rate, 5*time.Millisecond, 100000)
	defer src.Close()
	deadline := time.After(5 * time.Second)
	for n := 0; n < rate*3/10; {
		select {
		case b := <-src.Batches():
			n += len(b.Rows)
			if due := rate * time.Since(start).Seconds(); float64(n) > due+1 {
				t.Fatalf("%d events after %v: ahead of %d/s", n, time.Since(start), rate)
			}
		case <-deadline:
			t.Fatalf("only %d events in 5 s at %d/s", n, rate)
		}
	}
}

// trackedPipe blocks until closed and says whether it is open.
type trackedPipe struct {
	scriptedPipe
	open *atomic.Int32
}

func (p *trackedPipe) Close() error {
	p.once.Do(func() { p.open.Add(-1); close(p.closed) })
	return nil
}

func TestPipeSourceSuspendReleasesThePipe(t *testing.T) {
	var open, opens atomic.Int32
	src, err := NewPipeSource(context.Background(), func(ctx context.Context) (EventStream, error) {
		open.Add(1)
		opens.Add(1)
		return &lineStream{r: &trackedPipe{scriptedPipe: scriptedPipe{ctx: ctx, closed: make(chan struct{})}, open: &open}}, nil
	}, 100)
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	ran := false
	err = src.Suspend(func() error {
		ran = true
		if n := open.Load(); n != 0 {
			t.Errorf("%d pipes open while suspended", n)
		}
		return errors.New("EBUSY?")
	})
	if !ran || err == nil || err.Error() != "EBUSY?" {
		t.Fatalf("ran %v err %v", ran, err)
	}
	deadline := time.Now().Add(5 * time.Second)
	for opens.Load() < 2 || open.Load() != 1 {
		if time.Now().After(deadline) {
			t.Fatalf("not reopened: %d opens, %d open", opens.Load(), open.Load())
		}
		time.Sleep(5 * time.Millisecond)
	}
}
