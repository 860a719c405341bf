#!/usr/bin/env bash
# bench-peers.sh: ftctl's latency, count and hist against their peers, in the same VM boot
# (issue 32). One boot per kernel (single-threaded TCG, as the test suite), RUNS rounds (default
# 5). The workload makes a known number of calls: `readloop -file /proc/version -bytes 1 -count
# CALLS` (default 200,000) is one thread making exactly CALLS one-byte pread64s of /proc/version,
# each through vfs_read once (the Go runtime's start-up adds a few reads of its own, before the
# loop: counted/made can exceed 1 by those). Each round runs, in turn:
#   none        the workload alone
#   graph       the reference: function_graph on vfs_read alone (set_ftrace_filter and
#               set_graph_function vfs_read, max_graph_depth 1, set_ftrace_pid the workload's),
#               a 32 MiB per-CPU buffer, read from the trace file afterwards: every call's duration
#               as the graph tracer measures it (entry and exit timestamps in its own trampoline)
#   lat-ftctl   `ftctl latency vfs_read -- W` (fprobes on 6.12, kprobe + kretprobe on 6.1, hist)
#   lat-raw     `ftctl latency --no-correct vfs_read -- W`: the durations as measured (lat-ftctl
#               takes the probes' own cost off each, measured once per boot on __task_pid_nr_ns)
#   lat-perf    `perf ftrace latency -T vfs_read -- W` (Debian's perf 6.1: function_graph read
#               from trace_pipe and bucketed in user space); -b (BPF) is tried once, reported
#   none0 graph0 lat0-ftctl lat0-perf   the same on `readloop -getppid -count CALLS` and its
#               kernel function __x64_sys_getppid, or where ftrace cannot attach to it (both
#               Debian kernels) __task_pid_nr_ns, which getppid calls once: next to nothing; what each latency
#               method adds to a call (its bias), against function_graph's measure of the same
#   cnt-ftctl   `ftctl count vfs_read -- W` (a probe point and a hist trigger)
#   cnt2-ftctl  `ftctl count vfs_read vfs_write -- W`: two probe points (the workload calls one)
#   cnt-base cnt2-base  the same by the ftctl binary BASE (BASE=path: another build, shipped as
#               /bin/ftctl-base; e.g. one that counts with an fprobe event where this one uses kprobes)
#   cnt-kprof   a kprobe on vfs_read enabled in an instance whose tracing_on is 0 (no trigger, nothing
#               recorded), its hits read from kprobe_profile (every task's: the kernel's
#               per-probe counter, no pid filter): what a kprobe alone costs a call
#   cnt-fstream `ftctl count vfs_read --method stream -- W` (the function tracer's events; not in
#               the default CONDS: on 6.12 it ran 600 s with soft lockups for a 1 s workload)
#   cnt-perfstat `perf stat -e probe:vfs_read -- W` (a kprobe made by `perf probe`, counted by
#               a perf counter: no ring buffer; `perf ftrace profile` is not in perf 6.1)
#   cnt2-perfstat `perf stat -e probe:vfs_read -e probe:vfs_write -- W`
#   cnt-perftrace `perf ftrace -t function -T vfs_read -- W`, its lines counted
#   cnt-tracecmd `trace-cmd record -p function -l vfs_read -F W`, its file's events counted
#   hist-ftctl  `ftctl hist syscalls:sys_enter_pread64 --key common_pid` around W
#   hist-tracecmd `trace-cmd start -B th -e syscalls:sys_enter_pread64 -R hist:keys=common_pid`
#               (trace-cmd's way to a hist trigger; `trace-cmd hist` only reads a trace.dat)
#   hist-raw    the same trigger echoed into the event's trigger file (what sqlhist writes)
#   lp0-*       ftctl latency's kernel chain on the near-zero function, written by hand in an
#               instance, built up piece by piece (where its per-call cost lies; not in the
#               default CONDS): the probe pair of the kind ftctl uses (fprobes where the README
#               announces them, else a kprobe and a kretprobe), then
#     lp0-floor   the pair enabled, written to the instance's ring buffer, no trigger
#     lp0-ts      the entry's hist trigger saving ts0 (filtered on the workload's pid, as
#                 ftctl's), and a plain hist trigger keyed by common_pid on the return
#     lp0-delta   the return's trigger also computes lat = common_timestamp.usecs - \$ts0
#     lp0-act     ... and sends it to a synthetic event (onmatch().trace()) nobody hooks
#     lp0-full    ... whose .log2 hist trigger buckets it: ftctl latency's whole chain
#     lp0-ns      lp0-full in nanoseconds (common_timestamp, no .usecs)
#     lp0-retsoft lp0-ts's triggers with tracing_on 0 in the instance (no ring buffer)
#   lpk0-*      the same with a kprobe and a kretprobe where the README offers fprobes (6.12)
# Per condition: calls counted (by the tool) against calls made, the workload's own time (its
# loop, measured inside it) against none's, the tool's CPU (user+system of the tool and its
# helpers, the workload's own CPU taken out: vm/stopwatch's wait4 figure minus readloop's
# getrusage), the time to armed (from the tool's start to the workload's first read, none's
# exec-to-first-read taken out) and to done (last read to the tool's exit), and for latency the median bucket of each tool against the reference's median
# duration. Medians of RUNS rounds, with the spread (min-max).
#
# usage: [RUNS=N] [CALLS=N] [CONDS="none graph ..."] [ICOUNT=3] [BASE=ftctl] vm/bench-peers.sh [KERNEL...]  (default 6.1 6.12)
# ICOUNT=N: the guest's clock counts instructions (qemu -icount shift=N): durations free of the
# shared host's load (seen 2026-11-28: 6.12 runs so; 6.1 printed nothing in 15 minutes)
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
perf=$(command -v perf || true)
[ -n "$tracecmd" ] && [ -n "$perf" ] || { echo "bench-peers.sh: needs trace-cmd and perf (apt-get install trace-cmd linux-perf)" >&2; exit 1; }
# Debian's /usr/bin/perf is a wrapper script on some releases: ship the versioned binary then.
if file -L "$perf" | grep -q 'shell script'; then perf=$(ls /usr/bin/perf_[0-9]* | sort -V | tail -n1); fi

guest=$(mktemp)
trap 'rm -f "$guest"' EXIT
cat >"$guest" <<EOF
T=/sys/kernel/tracing
N=${CALLS:-200000}
W1="readloop -file /proc/version -bytes 1 -count \$N"
W0="readloop -getppid -count \$N"
W=\$W1
cd \$T
# getppid's kernel function where ftrace can attach to it, else the pid lookup it calls (seen:
# neither Debian kernel lists __x64_sys_getppid in available_filter_functions; both take
# __task_pid_nr_ns): either does next to nothing
F0=\$(for f in __x64_sys_getppid __task_pid_nr_ns; do grep -qx \$f available_filter_functions && { echo \$f; break; }; done)
echo "BENCHINFO near-zero function \$F0"
echo "BENCHINFO kernel \$(uname -r) cpus \$(nproc) calls \$N fprobe \$(grep -c 'f\[:\[<group>' README) perf \$(perf version 2>&1)"
perf probe -q -a vfs_read > /tmp/pp 2>&1 || { echo "BENCHERR perf probe:"; sed 's/^/STDERR /' /tmp/pp; }
perf probe -q -a vfs_write > /tmp/pp 2>&1 || { echo "BENCHERR perf probe vfs_write:"; sed 's/^/STDERR /' /tmp/pp; }
perf ftrace latency -b -T vfs_read -- true > /tmp/pb 2>&1; echo "BENCHINFO perf-latency-b rc \$? \$(head -c 300 /tmp/pb | tr '\n' ' ')"
sw() { # sw COND ROUND COMMAND: time COMMAND, report wall, CPU, and the workload's own line
	rm -f /tmp/pt /tmp/pt1; stopwatch "\$1" "\$3" > /tmp/sw 2>/tmp/out
	b=\$(grep '^BENCH ' /tmp/sw); r=\$(cat /tmp/out /tmp/pt1 2>/dev/null | grep -a '^READS ')
	echo "BENCHRUN \$1 \$2 wall \$(echo \$b | cut -d' ' -f3) rc \$(echo \$b | cut -d' ' -f4) cpuall \$(echo \$b | cut -d' ' -f5-) \$r"
}
tcpu() { awk '{ print (\$14 + \$15) / 100 }' /proc/\$1/stat; } # a live process's CPU seconds
ready() { # ready GLOB: wait up to 30 s for a hist trigger in a file matching GLOB
	i=0
	while [ \$i -lt 300 ]; do cat \$1 2>/dev/null | grep -q '^hist:' && return 0; sleep 0.1; i=\$((i + 1)); done
	echo "BENCHERR not ready: \$1"
}
bkt() { sed "s/^/BENCHB \$1 \$2 /"; } # bkt COND ROUND: "LE COUNT" lines, bucket (LE/2, LE] µs
# ftctl latency's chain by hand (lp0-*): the probe pair of the kind ftctl uses; lpk0-*: a kprobe
# and a kretprobe whatever the README offers
kind() { # kind COND
	if [ \$(grep -c 'f\[:\[<group>' README) -gt 0 ] && [ "\${1#lpk}" = "\$1" ]; then PE=f:bp/e PR=f:bp/r PRS=%return PF=dynamic_events
	else PE=p:bp/e PR=r:bp/r PRS= PF=kprobe_events; fi
}
lpunset() { # remove what lp set, newest first; each removal by the text written
	E=instances/lp/events
	[ -n "\$T3" ] && echo "!\$T3" >> \$E/synthetic/lpsyn/trigger
	[ -n "\$T2" ] && echo "!\$T2" >> \$E/bp/r/trigger
	[ -f /tmp/t1 ] && echo "!\$(cat /tmp/t1)" >> \$E/bp/e/trigger
	echo 0 > \$E/bp/e/enable 2>/dev/null; echo 0 > \$E/bp/r/enable 2>/dev/null
	grep -q '^lpsyn' synthetic_events && echo '!lpsyn u64 lat' >> synthetic_events
	echo -:bp/r >> \$PF; echo -:bp/e >> \$PF; rmdir instances/lp; rm -f /tmp/t1 /tmp/t2
}
lp() { # lp COND ROUND
	E=instances/lp/events; u=.usecs; T2=; T3=; kind \$1
	case \$1 in *-ns) u= ;; esac
	mkdir instances/lp; echo "\$PE \$F" >> \$PF; echo "\$PR \$F\$PRS" >> \$PF
	T1="hist:keys=common_pid:ts0=common_timestamp\$u"
	case \$1 in
	*-floor) echo 1 > \$E/bp/e/enable; echo 1 > \$E/bp/r/enable ;;
	*-ts|*-retsoft) T2="hist:keys=common_pid" ;;
	*-delta) T2="hist:keys=common_pid:lat=common_timestamp\$u-"'\$ts0' ;;
	*) T2="hist:keys=common_pid:lat=common_timestamp\$u-"'\$ts0:onmatch(bp.e).trace(lpsyn,\$lat)'
		echo 'lpsyn u64 lat' >> synthetic_events ;;
	esac
	case \$1 in *-full|*-ns) T3="hist:keys=lat.log2:sort=lat"; echo "\$T3" >> \$E/synthetic/lpsyn/trigger ;; esac
	printf '%s\\n' "\$T2" > /tmp/t2
	case \$1 in *-retsoft) echo 0 > instances/lp/tracing_on ;; esac
	# the entry's trigger filtered on the workload's pid, as ftctl's, then the return's (which
	# names the entry's variable), written by the workload's shell before it becomes the
	# workload (the loop's time is measured inside it)
	case \$1 in
	*-floor) sw \$1 \$2 "\$W" ;;
	*) sw \$1 \$2 "echo \\"\$T1 if common_pid == \\\$\\\$\\" | tee /tmp/t1 >> \$T/\$E/bp/e/trigger; read -r l < /tmp/t2; echo \\"\\\$l\\" >> \$T/\$E/bp/r/trigger; exec \$W" ;;
	esac
	h=\$E/bp/r/hist; [ -n "\$T3" ] && h=\$E/synthetic/lpsyn/hist
	[ -n "\$T2" ] && echo "BENCHCALLS \$1 \$2 \$(grep 'Hits:' \$h | awk '{ print \$2 }')"
	if [ -n "\$T3" ]; then # the buckets, LE in µs ((LE/2, LE]; in ns for lp0-ns, divided by 1000)
		d=1; [ -z "\$u" ] && d=1000
		awk -v d=\$d '/hitcount:/ { e = \$0; sub(/.*2\\^/, "", e); sub(/[^0-9].*/, "", e); c = \$0; sub(/.*hitcount: */, "", c); p = 1; for (i = 0; i < e + 0; i++) p *= 2; print p / d, c + 0 }' \$h | bkt \$1 \$2
	fi
	lpunset
}
run() { # run COND ROUND
	F=vfs_read; W=\$W1
	case \$1 in *0|*0-*) F=\$F0; W=\$W0 ;; esac
	case \$1 in
	none|none0) sw \$1 \$2 "\$W" ;;
	graph|graph0) echo 0 > tracing_on; echo nop > current_tracer; : > trace; echo 32768 > buffer_size_kb
		echo \$F > set_ftrace_filter; echo \$F > set_graph_function; echo 1 > max_graph_depth
		echo function_graph > current_tracer
		sw \$1 \$2 "echo \\\$\\\$ > \$T/set_ftrace_pid; echo 1 > \$T/tracing_on; exec \$W"
		echo 0 > tracing_on
		echo "BENCHCALLS \$1 \$2 \$(grep -c "\$F();" trace) overrun \$(cat per_cpu/cpu*/stats | awk '/^overrun:/ { s += \$2 } END { print s + 0 }')"
		# the durations, binned by 0.05 µs: the reference's median, and its log2 buckets
		awk -v f="\$F();" -v c=\$1 -v r=\$2 'index(\$0, f) { for (i = 2; i <= NF; i++) if (\$i == "us") { v = \$(i - 1); break }
				n++; h[int(v * 20)]++; le = 1; while (le < v) le *= 2; b[le]++ }
			END { s = 0; for (k = 0; s < n / 2; k++) s += h[k]; printf "BENCHREF %s %s median %.2f\n", c, r, (k - 0.5) / 20
				for (le in b) print "BENCHB " c " " r " " le, b[le] }' trace
		echo nop > current_tracer; echo > set_ftrace_pid; echo > set_ftrace_filter; echo > set_graph_function
		echo 0 > max_graph_depth; : > trace; echo 1408 > buffer_size_kb; echo 1 > tracing_on ;;
	lat-ftctl|lat0-ftctl|lat-raw|lat0-raw) o=; case \$1 in *raw) o=--no-correct ;; esac
		sw \$1 \$2 "ftctl latency \$o \$F -- \$W"
		awk '\$2 == "->" { print \$3, \$5 }' /tmp/out | bkt \$1 \$2
		echo "BENCHCALLS \$1 \$2 \$(grep -a "^\$F: " /tmp/out | awk '{ print \$2 }')"
		grep -a -i 'dropped' /tmp/out | sed 's/^/STDERR /' ;;
	lat-perf|lat0-perf) sw \$1 \$2 "perf ftrace latency -T \$F -- \$W"
		# perf's bucket "A - B us" holds [A, B): the same label as ftctl's (A, B] up to one µs
		awk -F'|' '/ us *\|/ { split(\$1, a, " "); le = (a[3] == "...") ? 2 * a[1] : a[3]; print le, \$2 + 0 }' /tmp/out | bkt \$1 \$2
		echo "BENCHCALLS \$1 \$2 \$(awk -F'|' '/ us *\|/ { s += \$2 } END { print s + 0 }' /tmp/out)" ;;
	cnt-ftctl) sw \$1 \$2 "ftctl count vfs_read -- \$W"
		grep -a 'counting' /tmp/out | head -n 1 | sed "s/^/BENCHINFO \$1 /"
		echo "BENCHCALLS \$1 \$2 \$(grep -a '^vfs_read ' /tmp/out | awk '{ print \$2 }')" ;;
	cnt2-ftctl|cnt-base|cnt2-base) b=ftctl f=vfs_read
		case \$1 in *base) b=ftctl-base ;; esac
		case \$1 in cnt2*) f="vfs_read vfs_write" ;; esac
		sw \$1 \$2 "\$b count \$f -- \$W"
		grep -a 'counting' /tmp/out | head -n 1 | sed "s/^/BENCHINFO \$1 /"
		echo "BENCHCALLS \$1 \$2 \$(grep -a '^vfs_read ' /tmp/out | awk '{ print \$2 }')" ;;
	cnt2-perfstat) perf probe -q -a vfs_read > /dev/null 2>&1; perf probe -q -a vfs_write > /dev/null 2>&1
		sw \$1 \$2 "perf stat -x, -e probe:vfs_read -e probe:vfs_write -- \$W"
		echo "BENCHCALLS \$1 \$2 \$(grep -a 'probe:vfs_read' /tmp/out | cut -d, -f1)" ;;
	cnt-kprof) echo 'p:ck/ckread vfs_read' >> kprobe_events; mkdir instances/ck
		echo 0 > instances/ck/tracing_on; echo 1 > instances/ck/events/ck/ckread/enable
		sw \$1 \$2 "\$W"
		echo "BENCHCALLS \$1 \$2 \$(awk '\$1 == "ckread" { print \$2 }' kprobe_profile)"
		echo 0 > instances/ck/events/ck/ckread/enable; rmdir instances/ck; echo '-:ck/ckread' >> kprobe_events ;;
	cnt-fstream) sw \$1 \$2 "ftctl count vfs_read --method stream -- \$W"
		echo "BENCHCALLS \$1 \$2 \$(grep -a '^vfs_read ' /tmp/out | awk '{ print \$2 }')"
		grep -a -i 'lost\|overwr' /tmp/out | sed 's/^/STDERR /' ;;
	cnt-perfstat) # trace-cmd reset (hist-tracecmd) removes every dynamic event: the probe made again
		perf probe -q -a vfs_read > /dev/null 2>&1
		sw \$1 \$2 "perf stat -x, -e probe:vfs_read -- \$W"
		echo "BENCHCALLS \$1 \$2 \$(grep -a 'probe:vfs_read' /tmp/out | cut -d, -f1)" ;;
	cnt-perftrace) # the workload's line to a file of its own: perf's output is not line-aligned
		sw \$1 \$2 "perf ftrace -t function -T vfs_read -- sh -c 'exec \$W > /tmp/pt1' > /tmp/pt"
		echo "BENCHCALLS \$1 \$2 \$(grep -c 'vfs_read' /tmp/pt)" ;;
	cnt-tracecmd) sw \$1 \$2 "trace-cmd record -q -p function -l vfs_read -o /tmp/t.dat -F \$W"
		echo "BENCHCALLS \$1 \$2 \$(trace-cmd report /tmp/t.dat 2>/dev/null | grep -c ' vfs_read')"; rm -f /tmp/t.dat ;;
	hist-ftctl) ftctl hist syscalls:sys_enter_pread64 --key common_pid > /tmp/h 2>&1 & p=\$!
		ready "instances/ftctl-*/events/syscalls/sys_enter_pread64/trigger"
		sw \$1 \$2 "\$W"; c=\$(tcpu \$p); kill -INT \$p; wait \$p
		echo "BENCHCALLS \$1 \$2 \$(grep -a 'sys_enter_pread64: ' /tmp/h | awk '{ print \$2 }') toolcpu \$c" ;;
	hist-tracecmd) stopwatch tc-start "trace-cmd start -B th -e syscalls:sys_enter_pread64 -R 'hist:keys=common_pid'" > /tmp/sw0 2>/dev/null
		sw \$1 \$2 "\$W"
		echo "BENCHCALLS \$1 \$2 \$(grep 'Hits:' instances/th/events/syscalls/sys_enter_pread64/hist | awk '{ print \$2 }') toolcpu \$(cut -d' ' -f5 /tmp/sw0)"
		trace-cmd reset -B th > /dev/null 2>&1; rmdir instances/th 2>/dev/null ;;
	lp0-*|lpk0-*) lp \$1 \$2 ;;
	hist-raw) mkdir instances/hr; echo 'hist:keys=common_pid' > instances/hr/events/syscalls/sys_enter_pread64/trigger
		sw \$1 \$2 "\$W"
		echo "BENCHCALLS \$1 \$2 \$(grep 'Hits:' instances/hr/events/syscalls/sys_enter_pread64/hist | awk '{ print \$2 }') toolcpu 0"
		echo '!hist:keys=common_pid' > instances/hr/events/syscalls/sys_enter_pread64/trigger; rmdir instances/hr ;;
	esac
}
# A fresh VM has no entropy source: the first getrandom(2) blocks (6.12 spins jitter entropy
# meanwhile) until the CRNG is ready. Wait for it here, once, outside the rounds; say how long.
stopwatch crng "head -c 1 /dev/random > /dev/null" 2>/dev/null | sed 's/^BENCH /BENCHINFO /'
# what reading the function index costs (ftctl latency read it at every start until h-lat)
stopwatch index "cat available_filter_functions > /dev/null" 2>/dev/null | sed 's/^BENCH /BENCHINFO /'
# latency's correction: measured by the first ftctl latency of the boot, kept for the others
stopwatch calib "ftctl latency vfs_read --duration 1s -o json > /tmp/calib" 2>/dev/null | sed 's/^BENCH /BENCHINFO /'
echo "BENCHINFO correction \$(tr -d ' \\n' < /tmp/calib | grep -o '"correction":{[^}]*}')"
stopwatch cached "ftctl latency vfs_read --duration 1s -o json > /dev/null" 2>/dev/null | sed 's/^BENCH /BENCHINFO /'
for n in \$(seq ${RUNS:-5}); do
	for c in ${CONDS:-none graph lat-ftctl lat-perf none0 graph0 lat0-ftctl lat0-perf cnt-ftctl cnt-perfstat cnt-perftrace cnt-tracecmd hist-ftctl hist-tracecmd hist-raw}; do
		run \$c \$n; echo "BENCHLOAD \$c \$n \$(cat /proc/loadavg)"
	done
done
echo "BENCHLEFT instances \$(ls instances | tr '\n' ' ') dynamic \$(cat dynamic_events | tr '\n' ' ')"
exit 0
EOF

# Before each boot, up to BENCH_WAIT seconds (default 600) waiting for the host's load average
# to fall below LOAD_MAX (default 3), polled every 30 s; the load is reported either way.
busy_host() { awk -v max="${LOAD_MAX:-3}" '{ exit !($1 >= max) }' /proc/loadavg; }
for k in $kernels; do
	waited=0
	while busy_host && [ "$waited" -lt "${BENCH_WAIT:-600}" ]; do sleep 30; waited=$((waited + 30)); done
	log=$build/bench-peers-$k.log
	load0=$(cut -d' ' -f1-3 /proc/loadavg)
	FTCTL_VM_TCG_THREAD=single FTCTL_VM_ICOUNT=${ICOUNT-} "$here/run.sh" --kernel "$k" --mode cmd --script "$guest" --timeout "${BENCH_TIMEOUT:-900}" --log "$log" \
		--file "$build/ftctl:/bin/ftctl" --file "$build/readloop:/bin/readloop" --file "$build/stopwatch:/bin/stopwatch" \
		${BASE:+--file "$BASE:/bin/ftctl-base"} --bin "$tracecmd:/usr/bin/trace-cmd" --bin "$perf:/usr/bin/perf" >/dev/null 2>&1 || echo "bench-peers: the $k boot failed; see $log" >&2
	echo "== kernel $k ($(grep -a -o 'FTCTL-VM-BOOTED kernel=[^ ]*' "$log" | sed 's/.*=//')), TCG single-threaded, $(date -u '+%F %H:%M'), ftctl $rev; host load $load0 before (after waiting ${waited}s), $(cut -d' ' -f1-3 /proc/loadavg) after"
	grep -a -E '^(BENCHINFO|BENCHERR|BENCHLEFT|STDERR)' "$log" | tr -d '\r' | sort | uniq -c | sed 's/^ *1 //'
	tr -d '\r' <"$log" | "$here/bench-peers.awk"
done
