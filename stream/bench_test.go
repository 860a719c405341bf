package stream

import (
	"bytes"
	"fmt"
	"os"
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
	benchFeed(b, data, lines, render)
}

// sink renders each event into a reused buffer, as the stream does before each write.
func sink(render func(dst []byte, ev *Event) []byte) Emit {
	out := make([]byte, 0, 1<<20)
	return func(ev *Event) error {
		out = render(out, ev)
		if len(out) > 1<<19 {
			out = out[:0]
		}
		return nil
	}
}

// benchFeed decodes data (lines lines) through render, b.N times, reporting lines per second.
func benchFeed(b *testing.B, data []byte, lines int, render func(dst []byte, ev *Event) []byte) {
	var d Decoder
	emit := sink(render)
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

// markerLines is what vm/bench-stream.sh's load reads back: trace_marker events of 64 bytes,
// written by dd (comm dd) on two CPUs.
func markerLines(n int) []byte {
	var b []byte
	for i := 0; i < n; i++ {
		b = fmt.Appendf(b, "              dd-%-7d [%03d] ..... %5d.%06d: tracing_mark_write: bench marker %08d %s\n",
			150+i%3, i%2, 20+i/100000, i%1000000, i, "xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx")
	}
	return b
}

func benchMarkers(b *testing.B, render func(dst []byte, ev *Event) []byte) {
	benchFeed(b, markerLines(10000), 10000, render)
}

// BenchmarkMarkerParse, BenchmarkMarkerJSON, BenchmarkMarkerText: the VM benchmark's load
// (BENCHMARKS.md compares their figures in the VM with cat trace_pipe's).
func BenchmarkMarkerParse(b *testing.B) {
	benchMarkers(b, func(dst []byte, ev *Event) []byte { return dst })
}
func BenchmarkMarkerJSON(b *testing.B) {
	benchMarkers(b, func(dst []byte, ev *Event) []byte { return AppendJSON(dst, ev, false) })
}
func BenchmarkMarkerText(b *testing.B) {
	benchMarkers(b, func(dst []byte, ev *Event) []byte { return AppendText(dst, ev, TextOptions{}) })
}

// BenchmarkKallsyms parses the dev machine's /proc/kallsyms (the binary reader's start-up).
func BenchmarkKallsyms(b *testing.B) {
	text, err := os.ReadFile("/proc/kallsyms")
	if err != nil {
		b.Skip(err)
	}
	b.SetBytes(int64(len(text)))
	for b.Loop() {
		if _, err := ParseKallsyms(text); err != nil {
			b.Skip(err)
		}
	}
}

// markerPages is the same load as markerLines in ring-buffer pages (what trace_pipe_raw
// returns), spread over two CPUs.
func markerPages(n int) []CPUPage {
	var pages []CPUPage
	var data [2][]byte
	flush := func(cpu int) {
		pages = append(pages, CPUPage{CPU: cpu, Data: page(20_000_000_000, 0, 0, data[cpu])})
		data[cpu] = nil
	}
	for i := 0; i < n; i++ {
		cpu := i % 2
		text := fmt.Sprintf("bench marker %08d %s\n\x00", i, "xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx")
		ev := rbEvent(1000, entry(5, 0, 0, int32(150+i%3), u64(0xffffffff81200300), []byte(text)))
		if 16+len(data[cpu])+len(ev) > 4096 {
			flush(cpu)
		}
		data[cpu] = append(data[cpu], ev...)
	}
	flush(0)
	flush(1)
	return pages
}

// BenchmarkMarkerBinaryJSON: the same markers decoded from ring-buffer pages and encoded as
// NDJSON (ftctl stream -o json with the binary reader).
func BenchmarkMarkerBinaryJSON(b *testing.B) {
	d := testDecoder(b)
	dd := []byte("dd")
	d.Comm = func(pid int) []byte { return dd }
	pages := markerPages(10000)
	emit := sink(func(dst []byte, ev *Event) []byte { return AppendJSON(dst, ev, false) })
	b.ReportAllocs()
	for b.Loop() {
		for i := 0; i < len(pages); i += 32 { // in read-ahead chunks of 32 pages
			if err := d.Feed(pages[i:min(i+32, len(pages))], emit); err != nil {
				b.Fatal(err)
			}
		}
	}
	b.ReportMetric(10000*float64(b.N)/b.Elapsed().Seconds(), "lines/s")
}

// hotFunctionLoad is what vm/bench-hot.sh's reader gets: function events of the
// _raw_spin_lock* functions called from 170 call sites, in runs of about 60 events of a pid
// among 270, over two CPUs, in pages, with a kallsyms of 100,000 kernel symbols (seen in the
// 6.12 VM: 168 parents, 3 functions, 270 pids, 66 events a run on average in 4 s).
func hotFunctionLoad(b *testing.B, n int) (*BinaryDecoder, []CPUPage) {
	var text []byte
	text = append(text, "ffffffff81000000 T _text\n"...)
	addr := uint64(0xffffffff81000000)
	var addrs []uint64
	for i := range 100_000 {
		addr += 16 + uint64(i*7919%400)
		addrs = append(addrs, addr)
		text = fmt.Appendf(text, "%016x t kernel_function_%d\n", addr, i)
	}
	text = fmt.Appendf(text, "%016x T _end\n", addr+4096)
	syms, err := ParseKallsyms(text)
	if err != nil {
		b.Fatal(err)
	}
	d := testDecoder(b)
	d.Symbols = syms
	comms := &pidTable{vals: map[int][]byte{}}
	for pid := 1000; pid < 1270; pid++ {
		comms.vals[pid] = fmt.Appendf(nil, "worker-%d", pid)
	}
	d.Comm = comms.lookup
	var pages []CPUPage
	var data [2][]byte
	flush := func(cpu int) {
		pages = append(pages, CPUPage{CPU: cpu, Data: page(20_000_000_000, 0, 0, data[cpu])})
		data[cpu] = nil
	}
	for i := range n {
		cpu := i / 7 % 2
		ip := addrs[50_000+i%4]
		parent := addrs[(i*104729)%170*500] + 8
		ev := rbEvent(300, entry(1, 0x01, 0x01, int32(1000+i/60%270), u64(ip), u64(parent)))
		if 16+len(data[cpu])+len(ev) > 4096 {
			flush(cpu)
		}
		data[cpu] = append(data[cpu], ev...)
	}
	flush(0)
	flush(1)
	return d, pages
}

// BenchmarkHotFunctionJSON: hotFunctionLoad decoded and encoded as NDJSON (ftctl stream -o
// json with the binary reader), in read-ahead chunks of 32 pages.
func BenchmarkHotFunctionJSON(b *testing.B) {
	const n = 20_000
	d, pages := hotFunctionLoad(b, n)
	emit := sink(func(dst []byte, ev *Event) []byte { return AppendJSON(dst, ev, false) })
	b.ReportAllocs()
	for b.Loop() {
		for i := 0; i < len(pages); i += 32 {
			if err := d.Feed(pages[i:min(i+32, len(pages))], emit); err != nil {
				b.Fatal(err)
			}
		}
	}
	b.ReportMetric(n*float64(b.N)/b.Elapsed().Seconds(), "events/s")
}
