#!/usr/bin/env bash
# bench-stream.sh: the stream benchmarks of BENCHMARKS.md, in one VM boot per kernel: how many
# trace_pipe lines per second `cat trace_pipe > /dev/null` reads, against `ftctl stream -o json`
# (its default reader here: per-CPU trace_pipe_raw, "json") and `ftctl stream -o json --reader
# text` (trace_pipe, "jsonpipe"), each to /dev/null, in the same boot, on the same load.
#
# Two measures, the readers in turn, each reader a fresh process:
#   drain  100,000 trace_marker events of 64 bytes (dd writing 64-byte blocks: one event per
#          write) are written first into a 16 MiB-per-CPU buffer with tracing on, tracing is
#          turned off, then the reader is timed (vm/stopwatch, process start included) until
#          trace_pipe ends, which the kernel does once it is empty: the reader's own speed, with
#          the whole VM to itself. Repeated REPS times (default 5).
#   paced  the reader runs while vm/markerload writes events at a fixed RATE for PACED_SECONDS
#          (default 3) into a PACED_KB buffer (default 512 KiB per CPU: a reader that falls a few
#          per cent behind overruns it within the run); then the time until the reader has
#          emptied the buffer ("behind"), and the kernel's overrun counter: a reader keeps up
#          with a rate when nothing was overrun. RATES (default 20000 to 80000 by 10000), each
#          PACED_REPS times (default 2). The writer takes CPU time as a traced program would:
#          the highest rate a reader keeps up with is what it can follow on this machine.
#
# Each kernel boots twice: with multi-threaded TCG (the two vCPUs run in parallel on two host
# threads, as CPUs do; ftctl reads trace_pipe in one goroutine while it formats in another) and
# with the single-threaded TCG the test suite uses (the vCPUs take turns on one host thread:
# no two things ever run at once, so ftctl's formatting adds to the kernel's). MODES picks.
#
# BENCH_LOAD=tracepoints replaces the markers by tracepoints (drain only): sched_switch and the
# syscalls system enabled, the load `dd bs=1` copying N/4 bytes from /dev/zero to /dev/null (a
# read and a write per byte, each an enter and an exit event: N events, and the switches), so
# that the binary reader decodes them with the print fmt interpreter against trace_pipe's text.
#
# usage: vm/bench-stream.sh [KERNEL...]   (default: 6.1 6.12; MODES="multi single")
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/.." && pwd)
kernels=${*:-6.1 6.12}
build=${BENCH_BUILD:-$top/build}
reps=${REPS:-5}
rates=${RATES:-20000 30000 40000 50000 60000 70000 80000}
modes=${MODES:-multi single}
mkdir -p "$build"
(cd "$top" && CGO_ENABLED=0 go build -o "$build/ftctl" . && CGO_ENABLED=0 go build -o "$build/stopwatch" ./vm/stopwatch &&
	CGO_ENABLED=0 go build -o "$build/markerload" ./vm/markerload)

guest=$(mktemp)
trap 'rm -f "$guest"' EXIT
cat >"$guest" <<EOF
T=/sys/kernel/tracing
rates="$rates"
I=\$T/instances/bench
sw=/bin/stopwatch
N=${BENCH_N:-100000}
mkdir \$I
# N lines of exactly 64 bytes: one trace_marker event per 64-byte write.
awk -v n=\$N 'BEGIN { for (i = 0; i < n; i++) printf "bench marker %08d %s\n", i, "xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx" }' > /tmp/lines
echo "BENCHINFO lines \$(wc -l < /tmp/lines) bytes \$(wc -c < /tmp/lines) cpus \$(nproc)"
sum() { cat \$I/per_cpu/cpu*/stats | awk -v k="\$1" '\$0 ~ "^" k ":" { s += \$NF } END { print s + 0 }'; }
load="dd if=/tmp/lines of=\$I/trace_marker bs=64"
if [ "${BENCH_LOAD:-markers}" = tracepoints ]; then
	echo 1 > \$I/events/sched/sched_switch/enable
	echo 1 > \$I/events/syscalls/enable
	load="dd if=/dev/zero of=/dev/null bs=1 count=\$((N / 4))"
fi

drain() { # drain LABEL COMMAND
	echo > \$I/trace
	echo 1 > \$I/tracing_on
	\$load 2>/dev/null
	echo 0 > \$I/tracing_on
	n=\$(sum entries) o=\$(sum overrun)
	\$sw drain-\$1 "\$2"
	echo "BENCHDRAIN \$1 entries \$n overrun \$o left \$(sum entries)"
}

paced() { # paced LABEL COMMAND RATE
	echo > \$I/trace
	echo 1 > \$I/tracing_on
	o0=\$(sum overrun)
	sh -c "exec \$2" &
	reader=\$!
	sleep 1
	c0=\$(cut -d' ' -f14,15 /proc/\$reader/stat)
	/bin/markerload -file \$I/trace_marker -rate \$3 -seconds \$S
	# A blocked read of trace_pipe is not woken when tracing stops: wait until the reader has
	# emptied the buffer (at most 30 s), then stop it (SIGTERM: a background job of a
	# non-interactive shell ignores SIGINT).
	t0=\$(cut -d' ' -f1 /proc/uptime)
	i=0
	while [ "\$(sum entries)" != 0 ] && [ \$i -lt 600 ]; do sleep 0.05; i=\$((i + 1)); done
	t1=\$(cut -d' ' -f1 /proc/uptime)
	c1=\$(cut -d' ' -f14,15 /proc/\$reader/stat)
	kill -TERM \$reader
	wait \$reader
	echo 0 > \$I/tracing_on
	echo "BENCHPACED \$1 rate \$3 overrun \$((\$(sum overrun) - o0)) left \$(sum entries) behind \$(echo \$t0 \$t1 | awk '{print \$2 - \$1}') cpu \$(echo \$c0 \$c1 | awk '{print \$3 - \$1, \$4 - \$2}')"
}

cat=cat
json="ftctl -q -B bench stream -o json"
jsonpipe="ftctl -q -B bench stream -o json --reader text"
echo 16384 > \$I/buffer_size_kb
for r in \$(seq $reps); do
	drain cat "\$cat \$I/trace_pipe > /dev/null"
	drain json "\$json > /dev/null"
	drain jsonpipe "\$jsonpipe > /dev/null"
done
echo ${PACED_KB:-512} > \$I/buffer_size_kb
S=${PACED_SECONDS:-3}
[ "${BENCH_LOAD:-markers}" = tracepoints ] && rates=
for rate in \$rates; do
	for r in \$(seq ${PACED_REPS:-2}); do
		paced cat "\$cat \$I/trace_pipe > /dev/null" \$rate
		paced json "\$json > /dev/null" \$rate
		paced jsonpipe "\$jsonpipe > /dev/null" \$rate
	done
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
	log=$build/bench-stream-$k-$mode${BENCH_LOAD:+-$BENCH_LOAD}.log
	FTCTL_VM_TCG_THREAD=$mode "$here/run.sh" --kernel "$k" --mode cmd --script "$guest" --timeout 1500 --log "$log" \
		--file "$build/ftctl:/bin/ftctl" --file "$build/stopwatch:/bin/stopwatch" \
		--file "$build/markerload:/bin/markerload" >/dev/null
	read -r steal1 total1 < <(cpustat)
	echo "== kernel $k ($(grep -a -o 'FTCTL-VM-BOOTED kernel=[^ ]*' "$log" | sed 's/.*=//')), TCG $mode-threaded, $(date -u +%F); other VMs on the host at start $before, at end $(others); host CPU steal $(( 100 * (steal1 - steal0) / (total1 - total0) ))%"
	# Pair each stopwatch line with the counters that follow it; lines per second per run, and
	# the median of the runs for each reader (the host is noisy: medians, not means). For the
	# paced runs, the highest rate each reader kept up with in every repetition.
	grep -a -E '^(BENCH|LOAD)' "$log" | awk '
		function median(list,    a, n, i, j, t) {
			n = split(substr(list, 2), a, " ")
			for (i = 2; i <= n; i++) { t = a[i] + 0; for (j = i - 1; j >= 1 && a[j] + 0 > t; j--) a[j + 1] = a[j]; a[j + 1] = t }
			return n % 2 ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2
		}
		/^BENCHINFO/ { print; next }
		/^BENCH drain-/ { split($2, a, "-"); who = a[2]; secs = $3; next }
		/^BENCHDRAIN/ { lines = $4 - $8; printf "drain %-4s %7d lines in %7.3fs = %8.0f lines/s\n", who, lines, secs, lines / secs; d[who] = d[who] " " lines / secs }
		/^LOAD/ { achieved = $NF; secs = $7; next }
		/^BENCHPACED/ {
			lines = achieved * secs - $6 - $8
			printf "paced %-4s rate %6d (writer achieved %6.0f/s): overrun %6d, behind %5.2fs at the end; reader CPU user %.2fs sys %.2fs = %5.1f us/line\n", $2, $4, achieved, $6, $10, $12 / 100, $13 / 100, 1e4 * ($12 + $13) / lines
			cpu[$2] = cpu[$2] " " 1e4 * ($12 + $13) / lines; usr[$2] = usr[$2] " " 1e4 * $12 / lines
			dl[$2 " " $4] = dl[$2 " " $4] " " lines / secs
			if ($6 > 0) bad[$2 " " $4] = 1; readers[$2] = 1
			if (!($4 in israte)) { israte[$4] = 1; rl = rl " " $4 }
		}
		END {
			for (w in d) if (w != "cat") printf "drain: %s %.0f lines/s, cat %.0f: %.1f%% (medians)\n", w, median(d[w]), median(d["cat"]), 100 * median(d[w]) / median(d["cat"])
			n = split(substr(rl, 2), r, " ")
			for (w in readers) {
				best[w] = 0
				for (i = 1; i <= n; i++) { if (bad[w " " r[i]]) break; best[w] = r[i] }
			}
			for (w in readers) printf "paced: %s CPU per line read %.1f us, of which user %.1f (medians over every rate)\n", w, median(cpu[w]), median(usr[w])
			for (i = 1; i <= n; i++) for (w in readers) if (w != "cat") printf "paced: at %d/s %s delivers %.0f lines/s, cat %.0f: %.0f%% (medians)\n", r[i], w, median(dl[w " " r[i]]), median(dl["cat " r[i]]), 100 * median(dl[w " " r[i]]) / median(dl["cat " r[i]])
			for (w in readers) if (w != "cat") printf "paced: %s keeps up with %d events/s, cat with %d: %.0f%% (highest rate with no overrun in any repetition, rates tried:%s)\n", w, best[w], best["cat"], best["cat"] ? 100 * best[w] / best["cat"] : 0, rl
		}'
done
done
