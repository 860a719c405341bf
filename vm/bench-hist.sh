#!/usr/bin/env bash
# bench-hist.sh: what in-kernel aggregation costs a workload, against streaming the same events
# (issue 16). In one VM boot per kernel (single-threaded TCG, as the test suite), vm/readloop
# reads 16 bytes of a small file with pread64 in a loop for SECONDS (default 5) and reports its
# reads per second, under each condition in turn, RUNS rounds (default 3), in the same boot:
#   none      nothing traced
#   stream    instance "bench" runs the function tracer on vfs_read, and `ftctl -B bench stream
#             -o json > /dev/null` streams its events (tracer on only for this condition)
#   hist      `ftctl hist bench:vr --key common_pid`: a hist trigger on a kprobe on vfs_read
#             (the same function's calls, counted in the kernel)
#   histsys   `ftctl hist syscalls:sys_enter_pread64 --key common_pid` (the tracepoint of the
#             loop's system call: no probe)
#   latency   `ftctl latency vfs_read`: entry and return probes, a synthetic event, a .log2 hist
#   kstream   `ftctl -B bench stream -o json > /dev/null` of the kprobe event bench:vr on vfs_read:
#             the very events hist counts, streamed instead
#   pairs     `ftctl -B bench stream -o json > /dev/null` of an entry/return pair on vfs_read of
#             the kind latency uses (fprobes where announced, else a kprobe and a kretprobe): the
#             events latency aggregates, streamed instead
#   floor     the same pair enabled in instance bench with no reader (the ring buffer overwrites):
#             what the probes alone cost, the least any method built on them can cost
#   count     `ftctl count vfs_read`: the method it chooses for one function (a probe point,
#             fprobe on 6.12 and kprobe on 6.1, and a hist trigger keyed by the function)
#   countstream `ftctl count vfs_read --method stream`: the function tracer's events of
#             vfs_read in count's own instance, read and counted by ftctl
#   graph     `ftctl graph -f vfs_read -o json > /dev/null`: function_graph under vfs_read (its
#             callees too: an entry and an exit per call of each), call trees built by ftctl
#             (in its instance on 6.12; at the top level on 6.1)
# Each tool is started first and the loop run once the tool is ready (its trigger in its
# instance; the stream after 2 s), then the tool is sent SIGINT. cost = 1 - rate/none's rate,
# each from the median of the runs;
# the issue's target: hist and latency cost at most half of what streaming the same events costs
# (kstream for hist, pairs for latency; stream, the function tracer's events, is cheaper per event).
#
# usage: [RUNS=N] [CONDITIONS="none stream ..."] vm/bench-hist.sh [KERNEL...]   (default: 6.1 6.12)
#        CONDITIONS="none stream graph" vm/bench-hist.sh ...   (only these conditions; default all)
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/.." && pwd)
kernels=${*:-6.1 6.12}
build=${BENCH_BUILD:-$top/build}
mkdir -p "$build"
(cd "$top" && CGO_ENABLED=0 go build -o "$build/ftctl" . && CGO_ENABLED=0 go build -o "$build/readloop" ./vm/readloop)
rev=$(cd "$top" && git describe --always --dirty) # what was built, for the report

guest=$(mktemp)
trap 'rm -f "$guest"' EXIT
cat >"$guest" <<EOF
T=/sys/kernel/tracing
S=${SECONDS_RUN:-5}
cd \$T
mkdir instances/bench
echo vfs_read > instances/bench/set_ftrace_filter
echo 'p:bench/vr vfs_read' >> kprobe_events
head -c 4096 /dev/zero > /tmp/small
F=\$(grep -c 'f\[:\[<group>' README)
echo "BENCHINFO kernel \$(uname -r) cpus \$(nproc) fprobe \$F"
# the entry/return pair latency uses (fprobes where announced, else a kprobe and a kretprobe):
# pairs streams it, floor only writes it to a ring buffer nobody reads
if [ "\$F" != 0 ]; then PE='f:bench/pe vfs_read'; PR='f:bench/pr vfs_read%return'; else PE='p:bench/pe vfs_read'; PR='r:bench/pr vfs_read'; fi
echo "\$PE" >> dynamic_events; echo "\$PR" >> dynamic_events
ready() { # ready GLOB: wait up to 30 s for a hist trigger in a file matching GLOB
	i=0
	while [ \$i -lt 300 ]; do
		cat \$1 2>/dev/null | grep -q '^hist:' && return 0
		sleep 0.1; i=\$((i + 1))
	done
	echo "BENCHERR not ready: \$1"
}
run() { # run LABEL N
	case \$1 in
	none) readloop -file /tmp/small -seconds \$S | sed "s/^/BENCHHIST \$1 run \$2 /"; return ;;
	stream) echo function > instances/bench/current_tracer
		ftctl -B bench stream -o json > /dev/null 2>/tmp/err & p=\$!; sleep 2 ;;
	hist) ftctl hist bench:vr --key common_pid > /dev/null 2>/tmp/err & p=\$!
		ready "instances/ftctl-*/events/bench/vr/trigger" ;;
	histsys) ftctl hist syscalls:sys_enter_pread64 --key common_pid > /dev/null 2>/tmp/err & p=\$!
		ready "instances/ftctl-*/events/syscalls/sys_enter_pread64/trigger" ;;
	latency) ftctl latency vfs_read > /dev/null 2>/tmp/err & p=\$!
		ready "instances/ftctl-*/events/synthetic/*/trigger" ;;
	pairs) echo 1 > instances/bench/events/bench/pe/enable; echo 1 > instances/bench/events/bench/pr/enable
		ftctl -B bench stream -o json > /dev/null 2>/tmp/err & p=\$!; sleep 2 ;;
	floor) echo 1 > instances/bench/events/bench/pe/enable; echo 1 > instances/bench/events/bench/pr/enable
		sleep 100 & p=\$!; : > /tmp/err ;;
	kstream) echo 1 > instances/bench/events/bench/vr/enable
		ftctl -B bench stream -o json > /dev/null 2>/tmp/err & p=\$!; sleep 2 ;;
	count) ftctl count vfs_read > /dev/null 2>/tmp/err & p=\$!
		ready "instances/ftctl-*/events/ftctl_*/count/trigger" ;;
	countstream) ftctl count vfs_read --method stream > /dev/null 2>/tmp/err & p=\$!; sleep 3 ;;
	graph) ftctl graph -f vfs_read -o json > /dev/null 2>/tmp/err & p=\$!
		i=0
		while [ \$i -lt 300 ] && ! cat current_tracer instances/ftctl-*/current_tracer 2>/dev/null | grep -q function_graph; do sleep 0.1; i=\$((i + 1)); done
		sleep 1 ;;
	esac
	readloop -file /tmp/small -seconds \$S | sed "s/^/BENCHHIST \$1 run \$2 /"
	kill -INT \$p; wait \$p
	echo nop > instances/bench/current_tracer; echo 0 > instances/bench/events/enable
	grep -v -e '^ftctl: vfs_read: ' -e '^ftctl: counting ' -e '^ftctl: function_graph runs' /tmp/err | sed 's/^/STDERR /'
}
for n in \$(seq ${RUNS:-3}); do
	for c in ${CONDITIONS:-${CONDS:-none stream kstream hist histsys latency pairs floor count countstream graph}}; do run \$c \$n; done
done
echo "BENCHLEFT instances \$(ls instances | tr '\n' ' ') dynamic \$(cat dynamic_events | tr '\n' ' ')"
exit 0
EOF

# Up to BENCH_WAIT seconds (default 300) are spent waiting for other VMs to end and the host's
# load average to fall to LOAD_MAX (default 1.5) before each boot; the load is reported.
others() { pgrep -c -x qemu-system-x86 || true; }
busy_host() { awk -v max="${LOAD_MAX:-1.5}" '{ exit !($1 > max) }' /proc/loadavg; }
for k in $kernels; do
	waited=0
	while { [ "$(others)" != 0 ] || busy_host; } && [ "$waited" -lt "${BENCH_WAIT:-300}" ]; do sleep 10; waited=$((waited + 10)); done
	log=$build/bench-hist-$k.log
	load0=$(cut -d' ' -f1-3 /proc/loadavg)
	FTCTL_VM_TCG_THREAD=single "$here/run.sh" --kernel "$k" --mode cmd --script "$guest" --timeout 900 --log "$log" \
		--file "$build/ftctl:/bin/ftctl" --file "$build/readloop:/bin/readloop" >/dev/null 2>&1 || echo "bench-hist: the $k boot failed; see $log" >&2
	echo "== kernel $k ($(grep -a -o 'FTCTL-VM-BOOTED kernel=[^ ]*' "$log" | sed 's/.*=//')), TCG single-threaded, $(date -u '+%F %H:%M'), ftctl $rev; host load average $load0 before (after waiting ${waited}s), $(cut -d' ' -f1-3 /proc/loadavg) after; other VMs at the end $(others)"
	grep -a -E '^(BENCHINFO|BENCHERR|BENCHLEFT|STDERR)' "$log" | tr -d '\r'
	grep -a '^BENCHHIST' "$log" | tr -d '\r' | awk '
		# medians per condition ("BENCHHIST COND run N READS ops X secs T rate R"); the runs too
		{ c = $2; v[c, ++n[c]] = $NF; runs[c] = runs[c] " " $NF }
		END {
			nc = split("none stream kstream hist histsys latency pairs floor count countstream graph", order, " ")
			for (i = 1; i <= nc; i++) {
				c = order[i]; k = n[c]; if (!k) continue
				for (a = 1; a <= k; a++) for (b = a + 1; b <= k; b++) if (v[c, b] < v[c, a]) { t = v[c, a]; v[c, a] = v[c, b]; v[c, b] = t }
				med[c] = (k % 2) ? v[c, (k + 1) / 2] : (v[c, k / 2] + v[c, k / 2 + 1]) / 2
			}
			for (i = 1; i <= nc; i++) {
				c = order[i]; if (!n[c]) continue
				cost[c] = 1 - med[c] / med["none"]
				printf "%-8s reads/s median %8.0f (runs:%s)  cost %5.1f%%\n", c, med[c], runs[c], 100 * cost[c]
			}
			if (cost["stream"] > 0) for (i = 3; i <= nc; i++) { c = order[i]; if (n[c]) printf "%s cost / stream cost = %.2f\n", c, cost[c] / cost["stream"] }
			# the same events streamed: the kprobe hist counts, the pair latency measures
			if (cost["kstream"] > 0 && n["hist"]) printf "hist cost / kstream cost = %.2f\n", cost["hist"] / cost["kstream"]
			if (cost["pairs"] > 0) for (i = 3; i <= nc; i++) { c = order[i]; if (n[c] && (c == "latency" || c == "floor")) printf "%s cost / pairs cost = %.2f\n", c, cost[c] / cost["pairs"] }
		}'
done
