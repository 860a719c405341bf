// Package eventfilter is the grammar of event filters: what is written to
// events/SYSTEM/EVENT/filter (Documentation/trace/events.rst, "5. Event filtering"), and the
// text after "if" of an event probe (probes/) or a trigger (hist/). It checks a filter's syntax
// alone (Parse) or against an event's fields (FieldsOf, Check), and explains the kernel's
// refusal of one that passed (Rejected). It reads no kernel file: its callers hand it the
// event's format (tracefs.Format).
//
// The parser is a port of the kernel's (kernel/trace/trace_events_filter.c
// calc_stack, predicate_parse and parse_pred, as in Debian's 6.1.192 and 6.12.117), with the
// kernel's error messages, so that a filter ftctl refuses before writing is explained the way the
// kernel would explain it, and so that ftctl refuses nothing the kernel takes:
//
//	FILTER := PRED | FILTER && FILTER | FILTER || FILTER | !FILTER | (FILTER)
//	PRED   := FIELD[.ustring][.function] OP VALUE
//	OP     := == != < <= > >= & ~
//	VALUE  := NUMBER ("-"? then kstrtoll/kstrtoull base 0: 42, 0x2a, 052)
//	        | "STRING" | 'STRING'   (no escapes; for ~ a glob)
//	        | CPUS{CPULIST}         (6.6+)
//	        | SYMBOL                (after .function, 6.2+)
//
// A field is one of the event's (its format file), then the generic ones (CPU, cpu,
// common_cpu: the CPU the event is recorded on; COMM, comm: the current task's name), then the
// common ones (common_pid...). String fields (char arrays, __data_loc char[], char pointers,
// comm) take quoted values with ==, != and ~; the others numbers.
//
// What only the kernel can judge is left to it: whether a .function symbol exists, whether a
// CPUS{} list fits this machine, and whether the running kernel knows .function and CPUS{} at
// all (6.1 knows neither; it refuses them with "Invalid operator" and "Invalid value"). Its
// error_log entry is then shown under the user's text (RejectedError).
package eventfilter
