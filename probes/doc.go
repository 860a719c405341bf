// Package probes will hold the kprobe_events grammar: a parser and validator for every form the
// kernel accepts (gated on the features the running kernel's README announces), a formatter,
// and the translation of the kernel's error_log diagnosis back onto the user's text.
//
// Not built yet: see the issue "kprobe events: validated definitions, the kernel's own
// diagnosis, ownership and safe removal".
package probes
