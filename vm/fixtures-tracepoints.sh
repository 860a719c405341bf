#!/usr/bin/env bash
# fixtures-tracepoints.sh: capture, from each VM kernel, what the unit tests of ftctl's print fmt
# interpreter (stream/printfmt*.go) run on, into stream/testdata/<kernel series>/:
#   formats.tar.gz      every events/*/*/format file and events/header_page
#   tp.trace.gz         the kernel's own text (the instance's trace file) of a sample of
#                       tracepoints: every event of every system but the noisiest, while a
#                       workload runs (files, pipes, signals, a loopback ping, timers)
#   tp.cpuN.raw.gz      the same records, as the ring buffer's pages (per_cpu/cpuN/trace_pipe_raw,
#                       read after the trace file: trace does not consume)
#   tp.saved_cmdlines   the comms the kernel printed from
#   tp.kallsyms.gz      the lines of /proc/kallsyms the trace text names (and each one's next
#                       line, which sizes it), for %pS and friends
#   tp.trace-nohash.gz  the same records' text with the hash-ptr option off (%p as addresses)
#   tp.options          the instance's options (hash-ptr...)
# Run by hand (vm/fixtures-tracepoints.sh [KERNEL...]; default 6.1 6.12); the results are
# checked in. Files travel base64-encoded over the serial console.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/.." && pwd)
kernels=${*:-6.1 6.12}

guest=$(mktemp)
trap 'rm -f "$guest"' EXIT
cat >"$guest" <<'EOF'
T=/sys/kernel/tracing
emit() { # emit NAME FILE
	echo "FTCTL-FIXTURE-BEGIN $1"
	base64 "$2"
	echo "FTCTL-FIXTURE-END $1"
}
cd $T
# tracefs files say they are empty (size 0): copy them before tar takes them
for f in events/header_page events/header_event events/*/*/format; do
	mkdir -p /tmp/fmt/${f%/*}
	cat $f > /tmp/fmt/$f
done
(cd /tmp/fmt && tar czf /tmp/formats.tar.gz events)
emit formats.tar.gz /tmp/formats.tar.gz
I=$T/instances/tp
mkdir $I
echo 256 > $I/buffer_size_kb
echo 1 > $I/events/enable
for s in preemptirq lock rcu irq_vectors printk ftrace kprobes; do
	[ -e $I/events/$s/enable ] && echo 0 > $I/events/$s/enable
done
echo > $I/trace
echo 1 > $I/tracing_on
# the workload
for i in 1 2 3; do
	ls -l /etc > /tmp/ls.$i
	cat /tmp/ls.$i | wc -l > /dev/null
	dd if=/dev/zero of=/tmp/zero bs=4k count=16 2>/dev/null
	sync
	rm -f /tmp/ls.$i /tmp/zero
done
ping -c 2 -W 1 127.0.0.1 >/dev/null 2>&1
sleep 0.2 & kill $! 2>/dev/null
sleep 0.05
echo 0 > $I/tracing_on
cat $I/trace > /tmp/tp.trace
gzip -9 /tmp/tp.trace
emit tp.trace.gz /tmp/tp.trace.gz
# the same records with hash-ptr off: %p then prints the address (as %px)
echo 0 > $I/options/hash-ptr
cat $I/trace > /tmp/tp.trace-nohash
gzip -9 /tmp/tp.trace-nohash
emit tp.trace-nohash.gz /tmp/tp.trace-nohash.gz
echo 1 > $I/options/hash-ptr
for c in 0 1; do
	timeout 5 dd if=$I/per_cpu/cpu$c/trace_pipe_raw of=/tmp/tp.cpu$c.raw bs=4096 2>/dev/null
	gzip -9 /tmp/tp.cpu$c.raw
	emit tp.cpu$c.raw.gz /tmp/tp.cpu$c.raw.gz
done
emit tp.saved_cmdlines $T/saved_cmdlines
(cd $I/options && for o in *; do echo "$o $(cat $o)"; done) > /tmp/tp.options
emit tp.options /tmp/tp.options
gzip -c /proc/kallsyms > /tmp/kallsyms.gz
emit kallsyms.gz /tmp/kallsyms.gz
EOF

for k in $kernels; do
	out=$top/stream/testdata/$k
	mkdir -p "$out"
	log=$(mktemp)
	tmp=$(mktemp -d)
	"$here/run.sh" --kernel "$k" --mode cmd --script "$guest" --timeout 400 --log "$log" >/dev/null
	names=$(grep -a -o 'FTCTL-FIXTURE-BEGIN [^ ]*' "$log" | awk '{print $2}')
	for n in $names; do
		awk -v n="$n" '$0 == "FTCTL-FIXTURE-BEGIN " n {f=1; next} $0 == "FTCTL-FIXTURE-END " n {f=0} f' "$log" |
			tr -d '\r' | base64 -d >"$tmp/$n"
	done
	# kallsyms is large: keep the lines whose name the trace text holds, and each one's successor
	# (and the bounds of the kernel's text, which the lookup keeps to)
	{ zcat "$tmp/tp.trace.gz" | grep -o '[A-Za-z_][A-Za-z0-9_.]*'; printf '%s\n' _text _stext _etext _end; } | sort -u >"$tmp/words"
	zcat "$tmp/kallsyms.gz" | awk 'NR==FNR {w[$1]=1; next} keep {print; keep=0} ($3 in w) {print; keep=1}' "$tmp/words" - |
		awk '!seen[$0]++' | gzip -9n >"$out/tp.kallsyms.gz"
	for n in formats.tar.gz tp.trace.gz tp.trace-nohash.gz tp.cpu0.raw.gz tp.cpu1.raw.gz tp.saved_cmdlines tp.options; do
		cp "$tmp/$n" "$out/$n"
	done
	rm -rf "$tmp" "$log"
	echo "fixtures-tracepoints.sh: $k: ${out#$top/}" >&2
done
