// Package archtest holds no code: its test enforces the layering shared/STYLE.md describes,
// over the source of every package of the module. Data flows one way (cmd/ and tui/ call
// session/, filters/, probes/ and stream/, which call tracefs/; nothing calls back up), and
// only tracefs/ touches the kernel: it alone imports golang.org/x/sys/unix or names a kernel
// path (/sys/kernel/..., /proc/...). The front ends (cmd/, tui/) name no control file either:
// tracefs/ reads and writes the files, session/, probes/, filters/ and hist/ say what they mean
// (controlfiles_test.go).
package archtest
