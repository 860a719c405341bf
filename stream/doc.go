// Package stream will hold the trace line parser (trace_pipe's context prefix, function,
// kprobe, marker, stack, function_graph and lost-event lines), the typed event model, the
// terminal-safe text and NDJSON renderers, and per-CPU loss accounting.
//
// Not built yet: see the issue "The live stream".
package stream
