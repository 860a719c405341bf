// Package tui is ftctl's interactive console (ftctl tui), a bubbletea program: a root model
// (Model) with a state enum and a shared context, and five views, each a component with
// Init/Update/View, SetSize and its key map (keys.go; colours in styles.go):
//
//   - Stream: the live events of the trace array (stream.Open: trace_pipe_raw where it prints
//     what trace_pipe would, else trace_pipe; the view says which), in coloured columns, kept in a
//     ring of the last 100,000 (memory is bounded), followed or paused, narrowed by quick
//     filters (event, comm, pid), searched with highlighting, with the rate and every loss
//     counter in view;
//   - Functions: a pattern previewed against available_filter_functions on every keystroke
//     (resolved in a command, narrowed from earlier matches when provably a subset, stale
//     answers dropped), marked for the filter or the notrace list, applied with the swap
//     protocol after a confirmation showing what each list gains and loses;
//   - Probes: kprobe_events, with definitions validated as they are typed (a caret under the
//     mistake before anything reaches the kernel, the kernel's own error_log after);
//   - Top: counts per function or event (or comm), sorted, live; or a count or hist table the
//     kernel keeps, in a session of its own;
//   - Graph: live call trees of a function_graph session of its own (ftctl graph's), folded
//     and unfolded, slowest or newest first, for one task or all, the last trees kept
//     (graph.go builds them off the event loop; graphmodel.go is the view's pure state); over
//     a recording, its function_graph calls.
//
// IO never runs inside Update: every read and write of the kernel is a Backend method called
// from a tea.Cmd, and the stream is a re-arming command that takes one batch from the source's
// channel per call (source.go). The kernel's stream and a recording's (--file) are read
// through the same stream.Events and the same loop (pump), as are a live graph's trees and a
// recording's (buildTrees). Trace data is escaped (stream.AppendEscaped) before it is
// styled or shown. Data marks the frame dirty and a tick redraws it, so a flood of events
// costs at most 30 renders a second while keys still redraw at once. Quitting waits for the
// kernel writes in flight (writes.go), so that the caller's teardown never races them.
package tui
