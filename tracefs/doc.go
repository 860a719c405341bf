// Package tracefs is the only part of ftctl that opens kernel files. It finds tracefs, reads
// and writes its control files, translates the kernel's errnos into errors that name the file,
// the operation and the cause, detects features, manages instances, and holds the
// cross-process lock that serialises ftctl's writers.
//
// Where tracefs is found, in order (see Locate):
//  1. an explicit directory: the --tracefs flag, else the FTCTL_TRACEFS environment variable;
//  2. a tracefs mount at /sys/kernel/tracing in /proc/self/mountinfo;
//  3. any other tracefs mount (e.g. the automount under /sys/kernel/debug/tracing);
//  4. debugfs's tracing/ directory, for kernels older than 4.1.
//
// Writes never open a file with O_TRUNC unless the caller asks for truncation by name
// (Instance.Truncate): on set_ftrace_filter an O_TRUNC open empties the filter, which means
// "trace every function", and on kprobe_events it deletes every probe on the system.
//
// Nothing here knows about cobra or bubbletea; callers above (filters/, probes/, stream/)
// build on it, and cmd/ and tui/ build on them.
package tracefs
