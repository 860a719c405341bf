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
// The engine's readers: Open makes a Source of a trace array's ring buffer (trace_pipe or every
// CPU's trace_pipe_raw: source.go), OpenFile a FileSource of a recording (a trace.dat, or what a
// killed recorder left: OpenRecording, OpenRecordDir; file.go, recorddir.go). Both yield events
// a chunk at a time (Events), so every loop over them is one: Copy and CopyFile (copy.go: the
// filters, renderers and writes of ftctl stream, trace and report), CopyGraph and the console's
// readers. The Recorder (record.go) moves a trace array's pages into its RecordDir and assembles
// a trace.dat; CallTree (calltree.go) builds function_graph's records into calls; OneP and
// RecorderGC (runtime.go) are the runtime's settings the commands reading them run with.
//
// This package opens no kernel file itself: tracefs opens trace_pipe, trace_pipe_raw, the
// per-CPU stats, formats, kallsyms and saved_cmdlines for it; it writes no tracing state. The
// hot paths (Decoder.Feed, BinaryDecoder.Feed, AppendJSON, AppendText) make no allocation per
// event; see BenchmarkParse, BenchmarkMarkerBinaryJSON and BENCHMARKS.md.
package stream
