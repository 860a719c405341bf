// Package probes is the dynamic-event grammar of every kind the kernel takes: kprobes (p,
// r[MAXACTIVE], SYM%return, -:, [MOD:]SYM[+offs], MEMADDR), fprobes (f), tracepoint probes (t),
// event probes (e, their filter checked by package eventfilter) and uprobes (PATH:OFFSET; ELF
// symbols resolved to file offsets in elf.go), with every FETCHARG and TYPE: a parser and
// validator gated on the features the running kernel's tracefs README announces, checks against
// kallsyms and BTF (Kernel), a formatter, the Manager that adds, lists, enables and removes
// them, and the translation of the kernel's own error_log diagnosis back onto the user's text.
//
// The parser is a port of the kernel's (kernel/trace/trace_kprobe.c __trace_kprobe_create and
// kernel/trace/trace_probe.c traceprobe_parse_probe_arg and friends, 6.1 to 6.12), with the
// kernel's error messages and caret positions, so that what ftctl refuses before writing is
// explained the way the kernel would explain it. It is deliberately never stricter than the
// kernel: what depends on information only the kernel has (symbols, BTF types, registered
// events) is left to the kernel, whose error_log is then shown under the user's text.
package probes
