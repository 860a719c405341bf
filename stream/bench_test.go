package stream

import (
	"bytes"
	"testing"
)

// mixedFixture is every capture of both kernels (function lines in all layouts, kprobes,
// markers, tracepoints, stacks, function_graph, a LOST line), repeated to about 4 MiB.
func mixedFixture(b *testing.B) (data []byte, lines int) {
	one := append(readFixtures(b, "6.1"), readFixtures(b, "6.12")...)
	for len(data) < 4<<20 {
		data = append(data, one...)
	}
	return data, bytes.Count(data, []byte{'\n'})
}

func benchDecode(b *testing.B, render func(dst []byte, ev *Event) []byte) {
	data, lines := mixedFixture(b)
	var d Decoder
	out := make([]byte, 0, 1<<20)
	emit := func(ev *Event) error {
		out = render(out, ev)
		if len(out) > 1<<19 {
			out = out[:0]
		}
		return nil
	}
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		// In the pieces trace_pipe reads give, a Flush after each.
		for p := data; len(p) > 0; {
			n := min(4095, len(p))
			d.Feed(p[:n], emit)
			d.Flush(emit)
			p = p[n:]
		}
	}
	b.ReportMetric(float64(lines)*float64(b.N)/b.Elapsed().Seconds(), "lines/s")
}

// BenchmarkParse: lines per second through the Decoder alone (BENCHMARKS.md; target 1,000,000).
func BenchmarkParse(b *testing.B) {
	benchDecode(b, func(dst []byte, ev *Event) []byte { return dst })
}

// BenchmarkParseJSON: parse and encode as NDJSON (ftctl stream -o json).
func BenchmarkParseJSON(b *testing.B) {
	benchDecode(b, func(dst []byte, ev *Event) []byte { return AppendJSON(dst, ev, false) })
}

// BenchmarkParseText: parse and render for people (ftctl stream).
func BenchmarkParseText(b *testing.B) {
	benchDecode(b, func(dst []byte, ev *Event) []byte { return AppendText(dst, ev, TextOptions{}) })
}
