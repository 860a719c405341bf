#!/usr/bin/env bash
# run.sh: boot one of Debian's kernels under qemu (TCG) with an initramfs made of busybox, ftctl
# and whatever else the caller adds, and run one mode:
#   test     run /bin/vmtest.test (the vmtest integration suite); exit with its status
#   demo     run /etc/ftctl-demo.sh (the scripted tour); exit with its status
#   cmd      run /etc/ftctl-cmd.sh (from --script); exit with its status
#   sandbox  an interactive shell on the serial console (Ctrl-A X leaves qemu)
#
# usage: vm/run.sh [--kernel 6.1|6.12] [--mode MODE] [--timeout SECONDS] [--log FILE]
#                  [--script FILE] [--file SRC:DEST]... [--bin SRC:DEST]... [--module PATH]...
#                  [--reboot PARAMS]
#   --file  copies a file into the initramfs; --bin does the same for a dynamically linked program
#   and the shared libraries ldd lists; --module copies one of the kernel's own modules, given by
#   its path under kernel/ without extension (e.g. drivers/net/dummy), decompressed, to
#   /lib/modules/ftctl/NAME.ko (for :mod: tests: insmod it there).
#   --reboot boots with the kernel parameters PARAMS and ftctl.reboot=1, a fresh 64 MiB ext4 disk
#   (/dev/vda, which vm/init mounts at /var/lib/ftctl) and without -no-reboot: a `reboot -f` in
#   the guest warm-resets the same qemu (its RAM, and so a persistent ring buffer, kept), and
#   vm/init runs its second phase in the boot after (it needs --module drivers/block/virtio_blk
#   and ext4's modules, with crypto/crc32c_generic: ext4 loads crc32c at mount).
# The exit status is the guest's; 1 also when the VM dies, times out or never reports.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
kernel=6.12 mode=test timeout=480 log= script= reboot=
files=() bins=() modules=()
while [ $# -gt 0 ]; do
	case $1 in
	--kernel) kernel=$2; shift 2 ;;
	--mode) mode=$2; shift 2 ;;
	--timeout) timeout=$2; shift 2 ;;
	--log) log=$2; shift 2 ;;
	--script) script=$2; shift 2 ;;
	--file) files+=("$2"); shift 2 ;;
	--bin) bins+=("$2"); shift 2 ;;
	--module) modules+=("$2"); shift 2 ;;
	--reboot) reboot=$2; shift 2 ;;
	*) echo "run.sh: unknown argument $1" >&2; exit 2 ;;
	esac
done

for tool in qemu-system-x86_64 cpio; do
	command -v "$tool" >/dev/null || { echo "run.sh: $tool is missing (make vm-deps installs it)" >&2; exit 1; }
done
busybox=$(command -v busybox || true)
[ -n "$busybox" ] && ! ldd "$busybox" >/dev/null 2>&1 || { echo "run.sh: need a static busybox (apt-get install busybox-static)" >&2; exit 1; }

kdir=$("$here/kernel.sh" "$kernel")
vmlinuz=$(ls "$kdir"/boot/vmlinuz-* | head -n1)

work=$(mktemp -d "${TMPDIR:-/tmp}/ftctl-vm.XXXXXX")
trap 'rm -rf "$work"' EXIT
root=$work/root
mkdir -p "$root"/{bin,sbin,etc,proc,sys,dev,tmp,run,root,lib,lib64,usr/bin,sys/kernel/tracing}
cp "$busybox" "$root/bin/busybox"
cp "$here/init" "$root/init"
chmod +x "$root/init"
[ -n "$script" ] && cp "$script" "$root/etc/ftctl-$mode.sh"
cat >"$root/etc/motd" <<'EOT'

  ftctl sandbox: a throw-away VM with a real kernel; nothing here touches your machine.
  tracefs is mounted at /sys/kernel/tracing and ftctl is on PATH. Try:
      ftctl status
      ftctl --help
  Leave with `poweroff -f` (or Ctrl-A X).

EOT
echo 'export PS1="ftctl-vm:\w# "' >"$root/etc/profile"

add() { # add SRC DEST
	mkdir -p "$root$(dirname "$2")"
	cp -L "$1" "$root$2"
}
for spec in "${files[@]+"${files[@]}"}"; do add "${spec%%:*}" "${spec#*:}"; done
for spec in "${bins[@]+"${bins[@]}"}"; do
	add "${spec%%:*}" "${spec#*:}"
	ldd "${spec%%:*}" | awk '/=>/ {print $3} /^\t\/lib/ {print $1}' | while read -r lib; do
		[ -n "$lib" ] && add "$lib" "$lib"
	done
done
for m in "${modules[@]+"${modules[@]}"}"; do
	src=$(ls "$kdir"/lib/modules/*/kernel/"$m".ko* 2>/dev/null | head -n1)
	[ -n "$src" ] || { echo "run.sh: module $m not found in $kdir" >&2; exit 1; }
	mkdir -p "$root/lib/modules/ftctl"
	dst=$root/lib/modules/ftctl/$(basename "$m").ko
	case $src in
	*.xz) xz -dc "$src" >"$dst" ;;
	*.zst) zstd -dcq "$src" >"$dst" ;;
	*.gz) gzip -dc "$src" >"$dst" ;;
	*) cp "$src" "$dst" ;;
	esac
done

# An uncompressed cpio: the guest unpacks it faster under emulation than it would gunzip it.
(cd "$root" && find . -print0 | cpio --null -H newc -o --quiet -R 0:0) >"$work/initrd.cpio"

# Single-threaded TCG (the two vCPUs take turns on one host thread). Multi-threaded TCG lets a
# vCPU run a stale translation of kernel text that another vCPU just patched: ftrace, kprobes and
# jump labels patch text with int3 (text_poke_bp), and under MTTCG a vCPU occasionally hits the
# int3 after the patch completed and the kernel oopses ("Oops: int3" in ttwu_do_activate, seen
# on 6.12 while enabling a kprobe event). FTCTL_VM_TCG_THREAD=multi brings MTTCG back.
tcg_thread=${FTCTL_VM_TCG_THREAD:-single}
append="console=ttyS0 quiet loglevel=3 panic=-1 oops=panic ftctl.mode=$mode ftctl.vmtest=1 ${FTCTL_VM_APPEND:-}"
qemu=(qemu-system-x86_64 -accel "tcg,thread=$tcg_thread" -m 1024 -smp 2 -kernel "$vmlinuz" -initrd "$work/initrd.cpio" -display none)
if [ -n "$reboot" ]; then
	command -v mkfs.ext4 >/dev/null || { echo "run.sh: --reboot needs mkfs.ext4 (apt-get install e2fsprogs)" >&2; exit 1; }
	truncate -s 64M "$work/disk.img" # (sparse; a capture with kallsyms is ~10 MiB, written beside the old)
	mkfs.ext4 -q -F "$work/disk.img"
	qemu+=(-append "$append $reboot ftctl.reboot=1" -drive "file=$work/disk.img,format=raw,if=virtio")
else
	qemu+=(-append "$append" -no-reboot)
fi
# FTCTL_VM_ICOUNT=N: the guest's clock counts instructions, 2^N ns each (qemu -icount
# shift=N), not the host's time: a benchmark's durations are then the guest's work alone,
# whatever else the shared host runs (its load moved the TCG figures by up to 3x).
if [ -n "${FTCTL_VM_ICOUNT:-}" ]; then qemu+=(-icount "shift=$FTCTL_VM_ICOUNT,sleep=on"); fi

if [ "$mode" = sandbox ]; then
	# mon:stdio: Ctrl-C reaches the guest's shell, Ctrl-A X leaves qemu.
	"${qemu[@]}" -serial mon:stdio
	exit 0
fi

out=${log:-$work/console.log}
start=$(date +%s%N)
set +e
timeout -k 5 "$timeout" "${qemu[@]}" -monitor none -serial stdio </dev/null 2>&1 | tr -d '\r' | tee "$out"
qrc=${PIPESTATUS[0]}
set -e
elapsed_ms=$((($(date +%s%N) - start) / 1000000))
elapsed=$((elapsed_ms / 1000)).$(printf %03d $((elapsed_ms % 1000)))
result=$(grep -a -o 'FTCTL-VM-RESULT rc=[0-9]*' "$out" | tail -n1 | sed 's/.*rc=//')
booted=$(grep -a -o 'FTCTL-VM-BOOTED kernel=[^ ]* uptime=[0-9.]*' "$out" | tail -n1)
echo "run.sh: kernel $kernel ($(basename "$vmlinuz")) mode $mode: ${booted:-never booted}; whole run ${elapsed}s" >&2
if grep -a -q -E 'Oops:|Kernel panic|BUG:' "$out"; then
	echo "run.sh: the guest kernel crashed; its report is in the console output above" >&2
fi
if [ -z "$result" ]; then
	if [ "$qrc" = 124 ]; then
		echo "run.sh: the VM timed out after ${timeout}s without reporting a result" >&2
	else
		echo "run.sh: the VM died (qemu exit $qrc) without reporting a result" >&2
	fi
	exit 1
fi
exit "$result"
