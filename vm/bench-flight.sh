#!/usr/bin/env bash
# bench-flight.sh: what a flight recorder costs the traced work, against nothing traced and
# against `trace-cmd record` of the same events, and how long a dump of a 64 MiB ring takes
# (issue 30). One boot per kernel (single-threaded TCG, as the test suite), RUNS rounds
# (default 5). The workload is `readloop -file /proc/version -bytes 1 -count CALLS` (default
# 200,000 one-byte pread64s; its own loop timed inside it) and the events are
# syscalls:sys_enter_pread64 and sys_exit_pread64 (two per call). Each round runs, in turn:
#   none      the workload alone
#   events    the events enabled by hand in an instance of its own (4 MiB per CPU, overwrite):
#             what the events themselves cost, with no tool
#   snap      as events, with the instance's snapshot buffer allocated as flight start does
#   flight    `ftctl flight start fb -e ... --buffer-kb 4096` before, the workload, `flight
#             stop` after: the recorder records with no process (the number of ftctl processes
#             alive once start returned, before the workload, is reported: counting them while
#             the workload ran cost it time on the emulator's one thread, 2026-11-28)
#   tracecmd  `trace-cmd record -e ... -b 4096 -o FILE W`: its readers copy the ring to a file
#             while the workload runs
# Per condition: the workload's own time (its loop, measured inside it) against none's, and the
# tool's CPU (wait4's user+system of the tool and its children minus the workload's getrusage;
# for flight: start's and stop's own runs, none while recording). Then DUMPS rounds (default 3)
# of the dump: a recorder of 32 MiB per CPU (64 MiB on the VM's two CPUs), filled by two
# readloops pinned one per CPU until each CPU's ring overwrote, `ftctl flight dump` timed.
#
# usage: [RUNS=N] [CALLS=N] [DUMPS=N] vm/bench-flight.sh [KERNEL...]  (default 6.1 6.12)
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/.." && pwd)
kernels=${*:-6.1 6.12}
build=${BENCH_BUILD:-$top/build}
mkdir -p "$build"
(cd "$top" && CGO_ENABLED=0 go build -o "$build/ftctl" . && CGO_ENABLED=0 go build -o "$build/readloop" ./vm/readloop &&
	CGO_ENABLED=0 go build -o "$build/stopwatch" ./vm/stopwatch)
rev=$(cd "$top" && git describe --always --dirty)
tracecmd=$(command -v trace-cmd || true)
[ -n "$tracecmd" ] || { echo "bench-flight.sh: needs trace-cmd (apt-get install trace-cmd)" >&2; exit 1; }

guest=$(mktemp)
trap 'rm -f "$guest"' EXIT
cat >"$guest" <<EOF
T=/sys/kernel/tracing
N=${CALLS:-200000}
W="readloop -file /proc/version -bytes 1 -count \$N"
EV="-e syscalls:sys_enter_pread64 -e syscalls:sys_exit_pread64"
cd \$T
echo "BENCHINFO kernel \$(uname -r) cpus \$(nproc) calls \$N"
sw() { # sw COND ROUND COMMAND: the workload's line, and wait4's CPU of all
	stopwatch "\$1" "\$3" > /tmp/sw 2>/tmp/out
	b=\$(grep '^BENCH ' /tmp/sw)
	echo "BENCHRUN \$1 \$2 wall \$(echo \$b | cut -d' ' -f3) rc \$(echo \$b | cut -d' ' -f4) cpuall \$(echo \$b | cut -d' ' -f5) \$(grep -a '^READS ' /tmp/out)"
}
run() { # run COND ROUND
	case \$1 in
	none) sw none \$2 "\$W" ;;
	events) mkdir instances/evb; echo 4096 > instances/evb/buffer_size_kb
		echo 1 > instances/evb/events/syscalls/sys_enter_pread64/enable; echo 1 > instances/evb/events/syscalls/sys_exit_pread64/enable
		sw events \$2 "\$W"
		echo "BENCHEVENTS events \$2 \$(cat instances/evb/per_cpu/cpu*/stats | awk '/^entries:/ { e += \$2 } /^overrun:/ { o += \$2 } END { print e + o }')"
		echo 0 > instances/evb/events/enable; rmdir instances/evb ;;
	snap) mkdir instances/evs; echo 4096 > instances/evs/buffer_size_kb; echo 1 > instances/evs/snapshot; echo 2 > instances/evs/snapshot
		echo 1 > instances/evs/events/syscalls/sys_enter_pread64/enable; echo 1 > instances/evs/events/syscalls/sys_exit_pread64/enable
		sw snap \$2 "\$W"
		echo "BENCHEVENTS snap \$2 \$(cat instances/evs/per_cpu/cpu*/stats | awk '/^entries:/ { e += \$2 } /^overrun:/ { o += \$2 } END { print e + o }')"
		echo 0 > instances/evs/events/enable; echo 0 > instances/evs/snapshot; rmdir instances/evs ;;
	flight) stopwatch fstart "ftctl flight start fb \$EV --buffer-kb 4096" > /tmp/sw0 2>/tmp/e0
		procs=\$(cat /proc/[0-9]*/comm 2>/dev/null | grep -c -x ftctl)
		sw flight \$2 "\$W"
		echo "BENCHEVENTS flight \$2 \$(cat instances/ftctl-owned-fb/per_cpu/cpu*/stats | awk '/^entries:/ { e += \$2 } /^overrun:/ { o += \$2 } END { print e + o }') procs \$procs"
		stopwatch fstop "ftctl flight stop fb" > /tmp/sw1 2>/tmp/e1
		echo "BENCHTOOL flight \$2 start \$(grep '^BENCH' /tmp/sw0 | cut -d' ' -f3,5) stop \$(grep '^BENCH' /tmp/sw1 | cut -d' ' -f3,5)"
		cat /tmp/e0 /tmp/e1 | grep -a -i 'error\|fail' | sed 's/^/STDERR /' ;;
	tracecmd) sw tracecmd \$2 "trace-cmd record -q \$EV -b 4096 -o /tmp/t.dat \$W"
		echo "BENCHEVENTS tracecmd \$2 \$(trace-cmd report /tmp/t.dat 2>/dev/null | grep -c -E 'sys_(enter|exit)_pread64')"; rm -f /tmp/t.dat ;;
	esac
}
stopwatch crng "head -c 1 /dev/random > /dev/null" 2>/dev/null | sed 's/^BENCH /BENCHINFO /'
for n in \$(seq ${RUNS:-5}); do
	for c in none events snap flight tracecmd; do run \$c \$n; done
done
# the dump of a 64 MiB ring
ftctl flight start big \$EV --buffer-kb 32768 2>/dev/null || echo "BENCHERR flight start big"
for n in \$(seq ${DUMPS:-3}); do
	i=0
	while [ \$i -lt 40 ]; do
		taskset -c 0 readloop -file /proc/version -bytes 1 -count 200000 > /dev/null &
		taskset -c 1 readloop -file /proc/version -bytes 1 -count 200000 > /dev/null
		wait
		i=\$((i + 1))
		[ \$(cat instances/ftctl-owned-big/per_cpu/cpu*/stats | awk '/^overrun:/ && \$2 > 0 { n++ } END { print n + 0 }') -ge 2 ] && break
	done
	echo "BENCHFILL \$n rounds \$i \$(cat instances/ftctl-owned-big/per_cpu/cpu*/stats | awk '/^bytes:/ { b += \$2 } END { printf "bytes %d", b }')"
	stopwatch dump "ftctl flight dump big -w /tmp/big.dat" > /tmp/sw 2>/tmp/out
	echo "BENCHDUMP \$n \$(grep '^BENCH ' /tmp/sw | cut -d' ' -f3-5) size \$(stat -c %s /tmp/big.dat) \$(grep -a 'events' /tmp/out | tr '\n' ' ')"
	rm -f /tmp/big.dat
done
ftctl flight stop big 2>/dev/null
echo "BENCHLEFT instances \$(ls instances | tr '\n' ' ')"
exit 0
EOF

for k in $kernels; do
	log=$build/bench-flight-$k.log
	load0=$(cut -d' ' -f1-3 /proc/loadavg)
	FTCTL_VM_TCG_THREAD=single "$here/run.sh" --kernel "$k" --mode cmd --script "$guest" --timeout "${BENCH_TIMEOUT:-1500}" --log "$log" \
		--file "$build/ftctl:/bin/ftctl" --file "$build/readloop:/bin/readloop" --file "$build/stopwatch:/bin/stopwatch" \
		--bin "$tracecmd:/usr/bin/trace-cmd" >/dev/null 2>&1 || echo "bench-flight: the $k boot failed; see $log" >&2
	echo "== kernel $k ($(grep -a -o 'FTCTL-VM-BOOTED kernel=[^ ]*' "$log" | sed 's/.*=//')), TCG single-threaded, $(date -u '+%F %H:%M'), ftctl $rev; host load $load0 before, $(cut -d' ' -f1-3 /proc/loadavg) after"
	tr -d '\r' <"$log" | grep -a -E '^(BENCHINFO|BENCHERR|BENCHLEFT|BENCHFILL|BENCHDUMP|STDERR)'
	# medians per condition: the workload's seconds, its ratio to none's, the tool's CPU
	tr -d '\r' <"$log" | awk '
		function med(a, n,   i, j, t) { for (i = 2; i <= n; i++) for (j = i; j > 1 && a[j-1] > a[j]; j--) { t = a[j]; a[j] = a[j-1]; a[j-1] = t }
			return n % 2 ? a[(n+1)/2] : (a[n/2] + a[n/2+1]) / 2 }
		/^BENCHRUN / { c = $2; for (i = 1; i <= NF; i++) { if ($i == "secs") s = $(i+1); if ($i == "cpu") w = $(i+1) }
			n[c]++; secs[c, n[c]] = s; tool[c, n[c]] = $9 - w; if (!(c in seen)) { seen[c] = 1; order[++k] = c } }
		/^BENCHEVENTS / { ne[$2]++; ev[$2, ne[$2]] = $4; if ($5 == "procs") procs[$2] = procs[$2] " " $6 }
		/^BENCHTOOL / { nt++; st[nt] = $6 + $9 }
		END {
			for (j = 1; j <= n["none"]; j++) x[j] = secs["none", j]; base = med(x, n["none"])
			for (i = 1; i <= k; i++) { c = order[i]; delete x; delete y; delete z
				for (j = 1; j <= n[c]; j++) { x[j] = secs[c, j]; y[j] = tool[c, j]; z[j] = ev[c, j] }
				m = med(x, n[c]); lo = x[1]; hi = x[n[c]]
				if (c == "flight") { delete y; for (j = 1; j <= nt; j++) y[j] = st[j] }
				printf "%-9s workload %.3f s (%.3f-%.3f) ratio %.2f  tool cpu %.3f s  events %s%s\n", c, m, lo, hi, m / base, med(y, c == "flight" ? nt : n[c]), n[c] && c != "none" ? med(z, ne[c]) : "-", c in procs ? "  ftctl procs while recording:" procs[c] : "" }
		}'
done
