// Package filters is the function-filter engine: the kernel's glob semantics (kglob.go, a port
// of lib/glob.c and of ftrace's filter_parse_regex and :mod: rules; gobwas/glob appears only in
// the tests, as an independent check), the index of available_filter_functions (LoadIndex), the
// pure swap planner (PlanStep, PlanRestore), and the Applier that writes set_ftrace_filter and
// set_ftrace_notrace through tracefs in one open without O_TRUNC (additions first, then
// removals), then reads back and verifies.
//
// A change is made in two parts. Resolve matches every pattern of every step against the index
// (the slow part, which needs no lock: a pattern that selects nothing fails before anything is
// written). Applier.ApplyResolved then runs under the tracefs lock: it reads the index again if
// a module came or went, plans every step on the lists as they are now, and only then writes.
package filters
