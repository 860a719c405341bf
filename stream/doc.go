// Package stream turns what trace_pipe says into typed events, and events into output that is
// safe to print: the line parser (the context prefix of any trace_clock and option set;
// function, kprobe and kretprobe, trace_marker, tracepoint, stack-trace, function_graph and
// LOST lines, each captured from the 6.1 and 6.12 kernels into testdata/), the Decoder that
// groups a stack trace's lines into one event, the NDJSON and terminal renderers (every byte of
// trace data escaped: comms, marker text and probed strings are chosen by whoever is traced),
// client-side filters, and the loss accounting.
//
// Nothing here reads a kernel file: tracefs opens trace_pipe and the per-CPU stats, cmd/
// wires them to this package. The hot path (Decoder.Feed, AppendJSON, AppendText) makes no
// allocation per line; see BenchmarkParse and BENCHMARKS.md.
package stream
