#!/bin/sh
# gen.sh: rebuild the tiny ELF fixtures of probes/elf_test.go (a few KB each; no libc, so they
# do not change with the host's C library). Needs gcc (x86-64).
#   exec.elf   ET_EXEC, fixed addresses: .text's vaddr differs from its file offset
#   pie.elf    ET_DYN, a static PIE
#   lib.so     ET_DYN, a shared library (.dynsym exports ftctl_add)
set -eu
cd "$(dirname "$0")"
src=$(mktemp --suffix=.c)
trap 'rm -f "$src"' EXIT
cat >"$src" <<'C'
volatile long sink;
__attribute__((noinline)) long ftctl_add(long a, long b) { sink = a; return a + b; }
__attribute__((noinline)) static long helper(long a) { sink = a; return a * 3; }
long twice(long a) { return helper(a) + helper(a + 1); }
void _start(void) { sink = ftctl_add(1, 2) + twice(3); for (;;) __asm__ volatile("hlt"); }
C
flags="-Os -nostdlib -fno-asynchronous-unwind-tables -Wl,--build-id=none"
gcc $flags -static -no-pie -o exec.elf "$src"
gcc $flags -static-pie -fPIE -o pie.elf "$src"
gcc $flags -shared -fPIC -o lib.so "$src"
