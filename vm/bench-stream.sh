#!/usr/bin/env bash
# bench-stream.sh: the stream benchmarks of BENCHMARKS.md, in one VM boot per kernel: how many
# trace_pipe lines per second `cat trace_pipe > /dev/null` reads, against `ftctl stream -o json`
# and `ftctl stream` (text), each to /dev/null, in the same boot, on the same load.
#
# The load: 100,000 trace_marker events of 64 bytes (dd writing 64-byte blocks: one event per
# write) into an instance. Two measures, each repeated (REPS, default 3), the readers in turn:
#   drain  the events are written first into a 16 MiB-per-CPU buffer with tracing on, tracing is
#          turned off, then the reader is timed (vm/stopwatch, process start included) until
#          trace_pipe ends, which the kernel does once it is empty; lines = the buffer's entries.
#   live   the reader runs while dd writes the events into the default 1408 KiB buffer, then
#          until it has emptied it; lines read = events written - overruns - what is left; the
#          rate is over the time dd ran; the kernel's overrun counter says whether the reader
#          kept up.
#
# Each kernel boots twice: with multi-threaded TCG (the two vCPUs run in parallel on two host
# threads, as CPUs do; ftctl reads trace_pipe in one goroutine while it formats in another) and
# with the single-threaded TCG the test suite uses (the vCPUs take turns on one host thread:
# no two things ever run at once, so ftctl's formatting adds to the kernel's). MODES picks.
#
# usage: vm/bench-stream.sh [KERNEL...]   (default: 6.1 6.12; MODES="multi single", REPS=3)
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/.." && pwd)
kernels=${*:-6.1 6.12}
build=${BENCH_BUILD:-$top/build}
reps=${REPS:-3}
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
	\$sw live-\$1 "\$load 2>/dev/null"
	# A blocked read of trace_pipe is not woken when tracing stops: wait until the reader has
	# emptied the buffer (at most 60 s), then stop it (SIGTERM: a background job of a
	# non-interactive shell ignores SIGINT).
	i=0
	while [ "\$(sum entries)" != 0 ] && [ \$i -lt 600 ]; do sleep 0.1; i=\$((i + 1)); done
	kill -TERM \$reader
	wait \$reader
	echo 0 > \$I/tracing_on
	echo "BENCHLIVE \$1 written \$N overrun \$((\$(sum overrun) - o0)) left \$(sum entries)"
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

for k in $kernels; do
for mode in $modes; do
	log=$build/bench-stream-$k-$mode.log
	FTCTL_VM_TCG_THREAD=$mode "$here/run.sh" --kernel "$k" --mode cmd --script "$guest" --timeout 1500 --log "$log" \
		--file "$build/ftctl:/bin/ftctl" --file "$build/stopwatch:/bin/stopwatch" >/dev/null
	echo "== kernel $k ($(grep -a -o 'FTCTL-VM-BOOTED kernel=[^ ]*' "$log" | sed 's/.*=//')), TCG $mode-threaded, $(date -u +%F)"
	# Pair each stopwatch line with the counters that follow it, and compute lines per second.
	grep -a -E '^BENCH' "$log" | awk '
		/^BENCHINFO/ { print; next }
		/^BENCH (drain|live)-/ { split($2, a, "-"); kind = a[1]; who = a[2]; secs = $3; next }
		/^BENCHDRAIN/ { lines = $4 - $8; printf "drain %-4s %7d lines in %7.3fs = %8.0f lines/s (overrun before %d)\n", who, lines, secs, lines / secs, $6; d[who] += lines / secs; nd[who]++ }
		/^BENCHLIVE/ { lines = $4 - $6 - $8; printf "live  %-4s %7d lines read, %6d overrun, load ran %7.3fs = %8.0f lines/s\n", who, lines, $6, secs, lines / secs; l[who] += lines / secs; o[who] += $6; nl[who]++ }
		END {
			if (nd["cat"]) for (w in d) if (w != "cat") printf "drain: %s reads %.1f%% of cat'"'"'s lines/s (means of %d)\n", w, 100 * d[w] / d["cat"], nd[w]
			if (nl["cat"]) for (w in l) if (w != "cat") printf "live: %s %.1f%% of cat'"'"'s lines/s, overruns %d against cat'"'"'s %d (totals of %d)\n", w, 100 * l[w] / l["cat"], o[w], o["cat"], nl[w]
		}'
done
done
