#!/usr/bin/env bash
# bench-hot.sh: the function tracer on a hot filter (issue 19, item 8). In one VM boot per kernel
# and TCG mode: an instance traces every `_raw_spin_lock*` function while a busy workload runs in
# the guest the whole time (BUSY shell loops, default 1: each runs `cat /proc/stat > /dev/null`
# over and over, a fork, an exec and a read each time: scheduler, mm, procfs and tty locks),
# and the readers take turns, each a fresh process, each for SECONDS (default 5):
#   cat    busybox `cat trace_pipe > /dev/null`
#   catx   the same with cat's pid in set_ftrace_notrace_pid (READERS="cat catx ftctl"): the
#          kernel records none of cat's own events, so that what it delivers is the workload's
#   ftctl  `ftctl -B hot stream -o json > /dev/null` (auto reader: trace_pipe_raw here)
# The buffer is cleared before each run (echo > trace: that also zeroes the counters). Each
# reader is started in the background and sent SIGTERM after SECONDS (the same wall-clock window
# for both, process start-up included); then the per-CPU stats give, over the run:
#   read      events the kernel handed the reader ("read events")
#   overrun   events overwritten before any reader got them ("overrun")
#   left      events still in the buffer at the end ("entries")
# delivered: the events the reader printed: for cat, read (it writes whatever it reads, its own
# events among them: trace_pipe takes the ring buffer's reader lock more than once for each event
# it hands out, which the filter records); for ftctl, its summary's events (on stderr), which
# leave out those of its own threads ("own", reported apart). generated = delivered + overrun, as
# issue 19 defines it; kept = delivered / generated. "left" (still in the buffer at the end) is
# in neither; what ftctl had read but not decoded within 0.3 s of the SIGTERM is in its summary
# ("undecoded", lost like an overrun). The reader's CPU
# time (utime and stime, /proc/PID/stat) is taken just before the SIGTERM.
#
# RUNS (default 3) rounds of the readers, in turn in the same boot. MODES (default "single",
# the test suite's TCG; "single multi" adds multi-threaded TCG). BUF_KB sets buffer_size_kb
# (default: the kernel's, 1410 KiB per CPU). STATS=1 prints every CPU's stats after each run.
# PROFILE=1 runs a `-tags profile` build with FTCTL_CPUPROFILE and copies each profile out to
# build/hot-KERNEL-MODE-prof.N.pprof (base64 through the console); MEMPROFILE=1 adds
# FTCTL_MEMPROFILE (every allocation: slower), build/hot-KERNEL-MODE-mem.N.pprof. FTCTL_ENV adds
# variables to ftctl's environment.
#
# usage: vm/bench-hot.sh [KERNEL...]   (default: 6.1 6.12)
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/.." && pwd)
kernels=${*:-6.1 6.12}
build=${BENCH_BUILD:-$top/build}
modes=${MODES:-single}
mkdir -p "$build"
tags=
[ "${PROFILE:-0}" = 1 ] && tags="-tags profile"
(cd "$top" && CGO_ENABLED=0 go build $tags -o "$build/ftctl-hot" .)
# BASE=COMMIT also builds that commit's ftctl, run as "base" in the same boots: before and after
# a change, measured side by side. READERS orders the readers of each run (default "cat ftctl",
# "cat base ftctl" with BASE); "alt" is this ftctl with ALT_ENV added to its environment and
# ALT_PREFIX before it (e.g. "taskset 2").
files=(--file "$build/ftctl-hot:/bin/ftctl")
readers=${READERS:-cat ${BASE:+base} ftctl}
if [ -n "${BASE:-}" ]; then
	src=$(mktemp -d)
	(cd "$top" && git archive "$BASE" | tar -x -C "$src")
	(cd "$src" && CGO_ENABLED=0 go build -o "$build/ftctl-base" .)
	rm -rf "$src"
	files+=(--file "$build/ftctl-base:/bin/ftctl-base")
fi

guest=$(mktemp)
trap 'rm -f "$guest"' EXIT
cat >"$guest" <<EOF
T=/sys/kernel/tracing
I=\$T/instances/hot
S=${SECONDS_RUN:-5}
mkdir \$I
[ -n "${BUF_KB:-}" ] && echo ${BUF_KB:-} > \$I/buffer_size_kb
echo '_raw_spin_lock*' > \$I/set_ftrace_filter
echo function > \$I/current_tracer
echo "BENCHINFO kernel \$(uname -r) cpus \$(nproc) functions \$(wc -l < \$I/set_ftrace_filter) buffer_size_kb \$(cat \$I/buffer_size_kb) subbuf_kb \$(cat \$I/buffer_subbuf_size_kb 2>/dev/null || echo none) buffer_percent \$(cat \$I/buffer_percent 2>/dev/null || echo none)"
busy() { while :; do ${WORK:-cat /proc/stat > /dev/null}; done; }
for b in \$(seq ${BUSY:-1}); do busy & done
sleep 1
sum() { cat \$I/per_cpu/cpu*/stats | awk -v k="\$1" 'index(\$0, k ":") == 1 { s += \$NF } END { print s + 0 }'; }
# catx: cat with its own pid in set_ftrace_notrace_pid, so that the kernel records none of its
# events: its delivered count is the workload's alone, as ftctl's is (ftctl leaves its own out
# as it decodes, the kernel still records them).
printf '#!/bin/sh\necho \$\$ > %s/set_ftrace_notrace_pid\nexec cat %s/trace_pipe\n' \$I \$I > /bin/catx
chmod +x /bin/catx
run() { # run LABEL N COMMAND
	echo > \$I/trace
	echo > \$I/set_ftrace_notrace_pid
	r0=\$(sum "read events") o0=\$(sum overrun)
	sh -c "exec \$3" 2>/tmp/err &
	reader=\$!
	sleep \$S
	cpu=\$(cut -d' ' -f14,15 /proc/\$reader/stat)
	kill -TERM \$reader
	wait \$reader
	r1=\$(sum "read events") o1=\$(sum overrun) left=\$(sum entries)
	if [ "${STATS:-0}" = 1 ]; then for f in \$I/per_cpu/cpu*/stats; do echo "STATS \$1 \$2 \$f"; sed 's/^/STATS   /' \$f; done; fi
	# ftctl's summary: "N events (M shown) ... , K of ftctl's own left out"
	ev=\$(awk '/ events \(/ { n = \$3; for (i = 1; i <= NF; i++) if (\$i == "own") o = \$(i - 3) } /not decoded before the end/ { for (i = 2; i <= NF; i++) if (\$i == "read" && \$(i + 1) == "from") u = \$(i - 1) } END { print n + 0, o + 0, u + 0 }' /tmp/err)
	echo "BENCHHOT \$1 run \$2 read \$((r1 - r0)) overrun \$((o1 - o0)) left \$left cpu \$cpu summary \$ev"
	grep -v -E ' events \(|^LOST' /tmp/err | sed 's/^/STDERR /'
}
for n in \$(seq ${RUNS:-3}); do
	for r in $readers; do
		case \$r in
		cat) run cat \$n "cat \$I/trace_pipe > /dev/null" ;;
		catx) run catx \$n "catx > /dev/null" ;;
		ftctl) run ftctl \$n "env ${FTCTL_ENV:-} FTCTL_CPUPROFILE=/tmp/prof.\$n ${MEMPROFILE:+FTCTL_MEMPROFILE=/tmp/mem.\$n} ftctl -B hot stream -o json > /dev/null" ;;
		alt) run alt \$n "env ${ALT_ENV:-} FTCTL_CPUPROFILE=/tmp/prof-alt.\$n ${ALT_PREFIX:-} ftctl -B hot stream -o json > /dev/null" ;;
		base) run base \$n "env ${FTCTL_ENV:-} ftctl-base -B hot stream -o json > /dev/null" ;;
		esac
	done
done
echo 0 > \$I/tracing_on
for f in /tmp/prof* /tmp/mem*; do [ -f "\$f" ] && { echo "PROFILE-BEGIN \${f#/tmp/}"; base64 "\$f"; echo "PROFILE-END"; }; done
exit 0
EOF

# The host's load is reported with each boot: other VMs running (the process name is cut to 15
# characters), the load average and the host CPU's steal over the boot. Up to BENCH_WAIT seconds
# (default 600) are spent waiting for other VMs to end and the load average to fall to LOAD_MAX
# (default 1.5) first.
others() { pgrep -c -x qemu-system-x86 || true; }
busy_host() { awk -v max="${LOAD_MAX:-1.5}" '{ exit !($1 > max) }' /proc/loadavg; }
cpustat() { awk '/^cpu / { t = 0; for (i = 2; i <= NF; i++) t += $i; print $9, t }' /proc/stat; }
for k in $kernels; do
for mode in $modes; do
	waited=0
	while { [ "$(others)" != 0 ] || busy_host; } && [ "$waited" -lt "${BENCH_WAIT:-600}" ]; do sleep 10; waited=$((waited + 10)); done
	before=$(others) load0=$(cut -d' ' -f1-3 /proc/loadavg)
	read -r steal0 total0 < <(cpustat)
	log=$build/bench-hot-$k-$mode.log
	FTCTL_VM_TCG_THREAD=$mode "$here/run.sh" --kernel "$k" --mode cmd --script "$guest" --timeout 900 --log "$log" \
		"${files[@]}" >/dev/null 2>&1 || echo "bench-hot: the $k boot failed; see $log" >&2
	read -r steal1 total1 < <(cpustat)
	echo "== kernel $k ($(grep -a -o 'FTCTL-VM-BOOTED kernel=[^ ]*' "$log" | sed 's/.*=//')), TCG $mode-threaded, $(date -u '+%F %H:%M'), ftctl $(cd "$top" && git describe --always --dirty); host: other VMs at start $before, at end $(others); load average $load0 before, $(cut -d' ' -f1-3 /proc/loadavg) after; CPU steal $(( 100 * (steal1 - steal0) / (total1 - total0) ))%"
	grep -a '^BENCHINFO' "$log"
	grep -a -E '^(STATS|STDERR)' "$log" || true
	awk '/^PROFILE-BEGIN/ { f = sprintf("%s/hot-%s-%s-%s.b64", dir, k, m, $2); next } /^PROFILE-END/ { close(f); f = ""; next } f { print > f }' \
		dir="$build" k="$k" m="$mode" "$log"
	for f in "$build"/hot-"$k"-"$mode"-*.b64; do [ -f "$f" ] && base64 -d "$f" >"${f%.b64}.pprof" && rm "$f"; done
	# delivered: cat's read events; ftctl's events (its summary). Per run, then the ranges and
	# the ratio of each ftctl run to the cat run before it.
	grep -a '^BENCHHOT' "$log" | awk -v S="${SECONDS_RUN:-5}" '
		function pct(a, b) { return b ? 100 * a / b : 0 }
		{
			who = $2; n = $4; read = $6; over = $8; left = $10; ut = $12; st = $13
			del = who ~ /^cat/ ? read : $15
			gen = del + over
			printf "%-5s run %d: delivered %7d (%6.0f/s), overrun %7d, generated %7d, kept %5.1f%%, left %6d, read by the kernel %7d; CPU user %.2fs sys %.2fs", who, n, del, del / S, over, gen, pct(del, gen), left, read, ut / 100, st / 100
			if (who !~ /^cat/) {
				printf "; own %d; undecoded %d; delivered/cat %.0f%%", $16, $17, pct(del, cd)
				if (cx) printf ", delivered/catx %.0f%%", pct(del, cx)
			}
			printf "\n"
			if (who == "cat") cd = del
			else if (who == "catx") cx = del
			else { rs[who] = rs[who] " " sprintf("%.0f", pct(del, cd)); if (cx) rx[who] = rx[who] " " sprintf("%.0f", pct(del, cx)) }
			k = pct(del, gen); if (!(who in lo) || k < lo[who]) lo[who] = k; if (!(who in hi) || k > hi[who]) hi[who] = k
		}
		END { for (w in lo) { printf "%s: kept %.1f-%.1f%%", w, lo[w], hi[w]; if (w !~ /^cat/) { printf ", delivered / cat delivered per run:%s (%%)", rs[w]; if (w in rx) printf ", / catx:%s (%%)", rx[w] }; printf "\n" } }'
done
done
