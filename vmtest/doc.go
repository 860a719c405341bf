// Package vmtest holds ftctl's integration tests against real Linux kernels. They are built
// with the vmtest build tag into a static test binary that vm/run.sh boots, with the static
// ftctl binary, in an initramfs under qemu: `make vmtest` (part of `make test`) does it for
// each kernel of the matrix.
//
// These tests change tracing state freely, so the binary refuses to run anywhere but in that
// VM: it checks for ftctl.vmtest=1 on the kernel command line. Never run them on a host.
package vmtest
