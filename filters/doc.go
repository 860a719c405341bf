// Package filters will hold the function-filter engine: the kernel's glob semantics compiled
// with gobwas/glob, the index of available_filter_functions, the pure swap planner, and the
// applier that writes set_ftrace_filter / set_ftrace_notrace through tracefs in one open
// without O_TRUNC (additions first, then removals), then reads back and verifies.
//
// Not built yet: see the issue "Function filters: kernel-exact pattern preview and a
// crash-safe atomic swap".
package filters
