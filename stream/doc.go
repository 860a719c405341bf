// Package stream turns what trace_pipe says into typed events, and events into output that is
// safe to print: the line parser (the context prefix of any trace_clock and option set;
// function, kprobe and kretprobe, trace_marker, tracepoint, stack-trace, function_graph and
// LOST lines, each captured from the 6.1 and 6.12 kernels into testdata/), the Decoder that
// groups a stack trace's lines into one event, the NDJSON and terminal renderers (every byte of
// trace data escaped: comms, marker text and probed strings are chosen by whoever is traced),
// client-side filters, and the loss accounting. And the binary side: the ring-buffer pages of
// per_cpu/cpuN/trace_pipe_raw (ring.go: page and event headers, event formats) decoded into the
// same events, formatted as the kernel formats trace_pipe (binary.go, symbols.go; tracepoints
// by their print fmt, interpreted by printfmt*.go), so that ftctl can read the buffer without
// the kernel's text formatting.
//
// Nothing here reads a kernel file: tracefs opens trace_pipe, trace_pipe_raw and the per-CPU
// stats, cmd/ reads formats, kallsyms and saved_cmdlines and wires them to this package. The
// hot paths (Decoder.Feed, BinaryDecoder.Feed, AppendJSON, AppendText) make no allocation per
// event; see BenchmarkParse, BenchmarkMarkerBinaryJSON and BENCHMARKS.md.
package stream
