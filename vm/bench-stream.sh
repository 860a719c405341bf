#!/usr/bin/env bash
# bench-stream.sh: the stream benchmarks of BENCHMARKS.md, in one VM boot per kernel: how many
# trace_pipe lines per second `cat trace_pipe > /dev/null` reads, against `ftctl stream -o json`
# and `ftctl stream` (text), each to /dev/null, in the same boot, on the same load.
#
# The load: 100,000 trace_marker events of 64 bytes (dd writing 64-byte blocks: one event per
# write) into an instance. Two measures, each repeated (REPS, default 5), the readers in turn:
#   drain  the events are written first into a 16 MiB-per-CPU buffer with tracing on, tracing is
#          turned off, then the reader is timed (vm/stopwatch, process start included) until
#          trace_pipe ends, which the kernel does once it is empty; lines = the buffer's entries.
#   live   the reader runs while dd writes the events into the default 1408 KiB buffer, then
#          until it has emptied it; lines read = events written - overruns - what is left, over
#          the time from dd's start until the buffer is empty (/proc/uptime, 10 ms); the
#          kernel's overrun counter says how much the reader could not keep up with.
#
# Each kernel boots twice: with multi-threaded TCG (the two vCPUs run in parallel on two host
# threads, as CPUs do; ftctl reads trace_pipe in one goroutine while it formats in another) and
# with the single-threaded TCG the test suite uses (the vCPUs take turns on one host thread:
# no two things ever run at once, so ftctl's formatting adds to the kernel's). MODES picks.
#
# usage: vm/bench-stream.sh [KERNEL...]   (default: 6.1 6.12; MODES="multi single", REPS=5)
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/.." && pwd)
kernels=${*:-6.1 6.12}
build=${BENCH_BUILD:-$top/build}
reps=${REPS:-5}
modes=${MODES:-multi single}
mkdir -p "$build"
(cd "$top" && CGO_ENABLED=0 go build -o "$build/ftctl" . && CGO_ENABLED=0 go build -o "$build/stopwatch" ./vm/stopwatch)

guest=$(mktemp)
trap 'rm -f "$guest"' EXIT
cat >"$guest" <<EOF
T=/sys/kernel/tracing
I=\$T/instances/bench
sw=/bin/stopwatch
N=${BENCH_N:-100000}
mkdir \$I
# N lines of exactly 64 bytes: one trace_marker event per 64-byte write.
awk -v n=\$N 'BEGIN { for (i = 0; i < n; i++) printf "bench marker %08d %s\n", i, "xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx" }' > /tmp/lines
echo "BENCHINFO lines \$(wc -l < /tmp/lines) bytes \$(wc -c < /tmp/lines) cpus \$(nproc)"
sum() { cat \$I/per_cpu/cpu*/stats | awk -v k="\$1" '\$0 ~ "^" k ":" { s += \$NF } END { print s + 0 }'; }
load="dd if=/tmp/lines of=\$I/trace_marker bs=64"

drain() { # drain LABEL COMMAND
	echo > \$I/trace
	echo 1 > \$I/tracing_on
	\$load 2>/dev/null
	echo 0 > \$I/tracing_on
	n=\$(sum entries) o=\$(sum overrun)
	\$sw drain-\$1 "\$2"
	echo "BENCHDRAIN \$1 entries \$n overrun \$o left \$(sum entries)"
}

live() { # live LABEL COMMAND
	echo > \$I/trace
	echo 1 > \$I/tracing_on
	o0=\$(sum overrun)
	sh -c "exec \$2" &
	reader=\$!
	sleep 1
	t0=\$(cut -d' ' -f1 /proc/uptime)
	\$load 2>/dev/null
	# A blocked read of trace_pipe is not woken when tracing stops: wait until the reader has
	# emptied the buffer (at most 60 s), then stop it (SIGTERM: a background job of a
	# non-interactive shell ignores SIGINT).
	i=0
	while [ "\$(sum entries)" != 0 ] && [ \$i -lt 600 ]; do sleep 0.05; i=\$((i + 1)); done
	t1=\$(cut -d' ' -f1 /proc/uptime)
	kill -TERM \$reader
	wait \$reader
	echo 0 > \$I/tracing_on
	echo "BENCHLIVE \$1 written \$N overrun \$((\$(sum overrun) - o0)) left \$(sum entries) secs \$(echo \$t0 \$t1 | awk '{print \$2 - \$1}')"
}

cat=cat
json="ftctl -q -B bench stream -o json"
text="ftctl -q -B bench stream"
echo 16384 > \$I/buffer_size_kb
for r in \$(seq $reps); do
	drain cat "\$cat \$I/trace_pipe > /dev/null"
	drain json "\$json > /dev/null"
	drain text "\$text > /dev/null"
done
echo 1408 > \$I/buffer_size_kb
for r in \$(seq $reps); do
	live cat "\$cat \$I/trace_pipe > /dev/null"
	live json "\$json > /dev/null"
	live text "\$text > /dev/null"
done
rmdir \$I
EOF

# Other VMs on this host make the figures meaningless: wait for them (up to BENCH_WAIT seconds,
# default 900), and say in the output how many ran during each boot (the process name is cut
# to 15 characters), and how much CPU time the host's own hypervisor took from it (steal).
others() { pgrep -c -x qemu-system-x86 || true; }
cpustat() { awk '/^cpu / { t = 0; for (i = 2; i <= NF; i++) t += $i; print $9, t }' /proc/stat; }
for k in $kernels; do
for mode in $modes; do
	waited=0
	while [ "$(others)" != 0 ] && [ "$waited" -lt "${BENCH_WAIT:-900}" ]; do sleep 10; waited=$((waited + 10)); done
	before=$(others)
	read -r steal0 total0 < <(cpustat)
	log=$build/bench-stream-$k-$mode.log
	FTCTL_VM_TCG_THREAD=$mode "$here/run.sh" --kernel "$k" --mode cmd --script "$guest" --timeout 1500 --log "$log" \
		--file "$build/ftctl:/bin/ftctl" --file "$build/stopwatch:/bin/stopwatch" >/dev/null
	read -r steal1 total1 < <(cpustat)
	echo "== kernel $k ($(grep -a -o 'FTCTL-VM-BOOTED kernel=[^ ]*' "$log" | sed 's/.*=//')), TCG $mode-threaded, $(date -u +%F); other VMs on the host at start $before, at end $(others); host CPU steal $(( 100 * (steal1 - steal0) / (total1 - total0) ))%"
	# Pair each stopwatch line with the counters that follow it; lines per second per run, and
	# the median of the runs for each reader (the host is noisy: medians, not means).
	grep -a -E '^BENCH' "$log" | awk '
		function median(list,    a, n, i, j, t) {
			n = split(substr(list, 2), a, " ")
			for (i = 2; i <= n; i++) { t = a[i] + 0; for (j = i - 1; j >= 1 && a[j] + 0 > t; j--) a[j + 1] = a[j]; a[j + 1] = t }
			return n % 2 ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2
		}
		/^BENCHINFO/ { print; next }
		/^BENCH (drain|live)-/ { split($2, a, "-"); who = a[2]; secs = $3; next }
		/^BENCHDRAIN/ { lines = $4 - $8; printf "drain %-4s %7d lines in %7.3fs = %8.0f lines/s\n", who, lines, secs, lines / secs; d[who] = d[who] " " lines / secs }
		/^BENCHLIVE/ { lines = $4 - $6 - $8; printf "live  %-4s %7d lines read, %6d overrun, in %7.2fs = %8.0f lines/s\n", $2, lines, $6, $10, lines / $10; l[$2] = l[$2] " " lines / $10; o[$2] = o[$2] " " $6 }
		END {
			for (w in d) if (w != "cat") printf "drain: %s %.0f lines/s, cat %.0f: %.1f%% (medians)\n", w, median(d[w]), median(d["cat"]), 100 * median(d[w]) / median(d["cat"])
			for (w in l) if (w != "cat") printf "live: %s %.0f lines/s, cat %.0f: %.1f%%; overruns %.0f, cat %.0f (medians)\n", w, median(l[w]), median(l["cat"]), 100 * median(l[w]) / median(l["cat"]), median(o[w]), median(o["cat"])
		}'
done
done
