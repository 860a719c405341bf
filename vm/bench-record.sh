#!/usr/bin/env bash
# bench-record.sh: recording under a hot function filter (issue 17's performance item). In one
# VM boot per kernel: an instance traces every `_raw_spin_lock*` function while a busy workload
# runs (BUSY shell loops, default 1, each `cat /proc/stat > /dev/null` over and over), and the
# readers take turns, each a fresh process, each for SECONDS_RUN (default 5) seconds:
#   cat       busybox `cat trace_pipe > /dev/null` (the kernel formats every event)
#   ftctl     `ftctl -B hot record -w /tmp/f.dat` (splice into per-CPU files, then the trace.dat)
#   trace-cmd `trace-cmd record -B hot -p function -l '_raw_spin_lock*' -o /tmp/t.dat`
#             (Debian's 3.1.6: its per-CPU recorders splice too; it sets the instance up again)
# The buffer is cleared before each run (echo > trace zeroes the counters). After SECONDS_RUN
# the script stops tracing in the instance (tracing_on 0: the window ends for every reader at
# the same moment), then sends SIGINT (cat: SIGTERM); each reader takes what the buffer still
# holds, as it can, and finishes its file. The per-CPU stats once the reader has exited give,
# over the window:
#   read      events the kernel handed the reader ("read events"): delivered
#   overrun   events overwritten before the reader got them
#   left      events still in the buffer once the reader has exited
# generated = delivered + overrun + left; kept = delivered / generated. For trace-cmd, the events
# its file holds (`trace-cmd report`, counted) against what the counters said the moment tracing
# was turned off, before the signal (BENCHGEN: read + overrun + entries, from its own reset of the
# buffer at its start; trace-cmd removes the instance when it ends, and setup makes it again).
# trace-cmd resets the
# instance's buffer when it starts and again when it ends (the counters read 0 after it), so its
# figures are the per-CPU stats it saved in its file (CPUSTAT, read back with `trace-cmd report
# --stat`), taken when it stopped: from its own start, the same three counters. The readers'
# CPU time is the shell's `times` for its waited children (trace-cmd's recorder processes
# included), from the start to the file written; bytes are the file's size. Every reader's own
# events are in what it delivered (the filter matches the locks its reads take).
#
# A reader's CPU time holds fixed costs besides the capture: ftctl and trace-cmd read every event
# format and kallsyms and write the file's header, which under emulation takes seconds (ftctl on
# 6.12, 2026-11-27, a CPU profile of a 5 s recording: event formats 1.7 s, kallsyms 1.1 s, the
# file's assembly 1.0 s, the moving of pages 0.24 s). So each of cat and ftctl also runs for
# LONG_RUN seconds (default 3 x SECONDS_RUN; LONG_RUN=0: not), and the marginal CPU per event,
# (CPU long - CPU short) / (delivered long - delivered short), is the capture's own cost.
#
# A recording's fixed costs, measured directly (IDLE=1, the default; IDLE=0: not): each round,
# ftctl and trace-cmd record for SECONDS_RUN an instance "idle" that is on but traces nothing
# (nop tracer, no event) while the load above goes on, and `cat /proc/kallsyms > /dev/null`
# alone gives what the kernel's formatting of kallsyms costs (every trace.dat holds it).
#
# usage: vm/bench-record.sh [KERNEL...]   (default: 6.1 6.12; RUNS rounds, default 2; BENCH_TIMEOUT
# seconds per boot, default 900)
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/.." && pwd)
kernels=${*:-6.1 6.12}
build=${BENCH_BUILD:-$top/build}
mkdir -p "$build"
(cd "$top" && CGO_ENABLED=0 go build -o "$build/ftctl-rec" .)
tracecmd=$(command -v trace-cmd || true)
[ -n "$tracecmd" ] || { echo "bench-record.sh: trace-cmd is needed (apt-get install trace-cmd)" >&2; exit 1; }

guest=$(mktemp)
trap 'rm -f "$guest"' EXIT
cat >"$guest" <<EOF
T=/sys/kernel/tracing
I=\$T/instances/hot
S=${SECONDS_RUN:-5}
L=${LONG_RUN:-$((3 * ${SECONDS_RUN:-5}))}
mkdir \$I
setup() { [ -d \$I ] || mkdir \$I; echo '_raw_spin_lock*' > \$I/set_ftrace_filter; echo function > \$I/current_tracer; echo 1 > \$I/tracing_on; }
setup
echo "BENCHINFO kernel \$(uname -r) cpus \$(nproc) functions \$(wc -l < \$I/set_ftrace_filter) buffer_size_kb \$(cat \$I/buffer_size_kb)"
busy() { while :; do cat /proc/stat > /dev/null; done; }
for b in \$(seq ${BUSY:-1}); do busy & done
sleep 1
sum() { cat \$I/per_cpu/cpu*/stats | awk -v k="\$1" 'index(\$0, k ":") == 1 { s += \$NF } END { print s + 0 }'; }
# A background job of a script ignores SIGINT (no job control): cat is ended with SIGTERM; ftctl
# and trace-cmd install their own SIGINT handlers (Ctrl-C: stop, finish the file).
run() { # run LABEL N OUTFILE COMMAND
	setup
	echo > \$I/trace
	rm -f \$3
	r0=\$(sum "read events") o0=\$(sum overrun)
	sig=INT; case \$1 in cat*) sig=TERM ;; esac
	secs=\$S; case \$1 in *-long) secs=\$L ;; esac
	( sh -c "exec \$4" >/dev/null 2>/tmp/err & p=\$!; sleep \$secs; echo 0 > \$I/tracing_on
	  echo "BENCHGEN \$1 run \$2 generated \$((\$(sum "read events") + \$(sum overrun) + \$(sum entries)))"
	  kill -\$sig \$p; wait \$p; times > /tmp/times )
	r1=\$(sum "read events") o1=\$(sum overrun) left=\$(sum entries)
	if [ "\$1" = trace-cmd ]; then # its counters, as it saved them in its file
		trace-cmd report --stat \$3 > /tmp/stat 2>/dev/null || true
		[ "\$2" = 1 ] && grep -E '^(CPU|entries|overrun|read events)' /tmp/stat | sed 's/^/TCSTAT /'
		fsum() { awk -v k="\$1" 'index(\$0, k ":") == 1 { s += \$NF } END { print s + 0 }' /tmp/stat; }
		r0=0 o0=0 r1=\$(fsum "read events") o1=\$(fsum overrun) left=\$(fsum entries)
		# what its file holds: its saved stats are taken before its recorders' last flush
		echo "BENCHTCFILE run \$2 events \$(trace-cmd report \$3 2>/dev/null | grep -c ' function: ')"
	fi
	bytes=0; [ -f "\$3" ] && bytes=\$(wc -c < \$3)
	# times: the second line is the children's user and system time, e.g. "0m1.23s 0m4.56s"
	cpu=\$(sed -n 2p /tmp/times | awk '{ for (i = 1; i <= 2; i++) { split(\$i, a, "m"); sub("s", "", a[2]); t += a[1] * 60 + a[2] } print t }')
	echo "BENCHREC \$1 run \$2 read \$((r1 - r0)) overrun \$((o1 - o0)) left \$left cpu \$cpu bytes \$bytes"
	grep -a 'ftctl: timing:' /tmp/err | awk -v w="\$1" -v n="\$2" '{ sub("ftctl: timing: ", ""); c = \$NF; \$NF = ""; \$(NF-1) = ""; \$(NF-2) = ""; sub(/ +\$/, ""); l = l sprintf("%s %.2f; ", \$0, c) } END { if (l != "") print "TIMING " w " run " n ": " l }'
	grep -a -v 'ftctl: timing:' /tmp/err | tail -n 3 | sed 's/^/STDERR /'
}
idle() { # idle LABEL N COMMAND: CPU of a reader of an instance that traces nothing, for \$S s
	[ -d \$T/instances/idle ] || mkdir \$T/instances/idle
	if [ "\$1" = kallsyms ]; then
		( sh -c "exec \$3" >/dev/null 2>/tmp/err; times > /tmp/times )
	else
		( sh -c "exec \$3" >/dev/null 2>/tmp/err & p=\$!; sleep \$S; kill -INT \$p; wait \$p; times > /tmp/times )
	fi
	cpu=\$(sed -n 2p /tmp/times | awk '{ for (i = 1; i <= 2; i++) { split(\$i, a, "m"); sub("s", "", a[2]); t += a[1] * 60 + a[2] } print t }')
	echo "BENCHIDLE \$1 run \$2 cpu \$cpu"
	grep -a 'ftctl: timing:' /tmp/err | awk -v w="\$1" -v n="\$2" '{ sub("ftctl: timing: ", ""); c = \$NF; \$NF = ""; \$(NF-1) = ""; \$(NF-2) = ""; sub(/ +\$/, ""); l = l sprintf("%s %.2f; ", \$0, c) } END { if (l != "") print "TIMING " w " run " n ": " l }'
	grep -a -v 'ftctl: timing:' /tmp/err | tail -n 2 | sed 's/^/STDERR /'
}
for n in \$(seq ${RUNS:-2}); do
	if [ "${IDLE:-1}" = 1 ]; then
		idle kallsyms \$n "cat /proc/kallsyms"
		idle ftctl-idle \$n "env FTCTL_TIMING=1 ftctl -B idle record -w /tmp/fi.dat"
		idle trace-cmd-idle \$n "trace-cmd record -B idle -p nop -o /tmp/ti.dat"
	fi
	run cat \$n /dev/null "cat \$I/trace_pipe"
	run ftctl \$n /tmp/f.dat "env FTCTL_TIMING=1 ftctl -B hot record -w /tmp/f.dat"
	run trace-cmd \$n /tmp/t.dat "trace-cmd record -B hot -p function -l '_raw_spin_lock*' -o /tmp/t.dat"
	if [ "\$L" -gt 0 ]; then
		run cat-long \$n /dev/null "cat \$I/trace_pipe"
		run ftctl-long \$n /tmp/f.dat "env FTCTL_TIMING=1 ftctl -B hot record -w /tmp/f.dat"
	fi
done
echo 0 > \$I/tracing_on
exit 0
EOF

for k in $kernels; do
	log=$build/bench-record-$k.log
	"$here/run.sh" --kernel "$k" --mode cmd --script "$guest" --timeout ${BENCH_TIMEOUT:-900} --log "$log" \
		--file "$build/ftctl-rec:/bin/ftctl" --bin "$tracecmd:/usr/bin/trace-cmd" >/dev/null 2>&1 || echo "bench-record: the $k boot failed; see $log" >&2
	echo "== kernel $k ($(grep -a -o 'FTCTL-VM-BOOTED kernel=[^ ]*' "$log" | sed 's/.*=//')), $(date -u '+%F %H:%M'), ftctl $(cd "$top" && git describe --always --dirty); host load $(cut -d' ' -f1-3 /proc/loadavg), other VMs $(pgrep -c -x qemu-system-x86 || true)"
	grep -a -E '^(BENCHINFO|STDERR|TCSTAT|TIMING)' "$log" || true
	grep -a '^BENCHIDLE' "$log" | awk '{ C[$2] = C[$2] sprintf(" %.2f", $6) } END {
		if ("kallsyms" in C) printf "fixed CPU (s), each run: cat /proc/kallsyms%s; ftctl idle%s; trace-cmd idle%s\n", C["kallsyms"], C["ftctl-idle"], C["trace-cmd-idle"] }'
	grep -a -E '^(BENCHREC|BENCHTCFILE|BENCHGEN)' "$log" | awk -v S="${SECONDS_RUN:-5}" -v L="${LONG_RUN:-$((3 * ${SECONDS_RUN:-5}))}" '
		function pct(a, b) { return b ? 100 * a / b : 0 }
		$1 == "BENCHTCFILE" { TF[$3] = $5; next }
		$1 == "BENCHGEN" { if ($2 == "trace-cmd") TG[$4] = $6; next }
		{
			who = $2; n = $4; del = $6; over = $8; left = $10; cpu = $12; bytes = $14
			if (who == "trace-cmd") { TC[n] = cpu; TB[n] = bytes }
			gen = del + over + left
			secs = who ~ /-long$/ ? L : S
			printf "%-10s run %d: delivered %8d (%7.0f/s), generated %8d, kept %5.1f%%, file %6.2f MB (%5.2f MB/s), CPU %.2fs, %.2f us/event\n",
				who, n, del, del / secs, gen, pct(del, gen), bytes / 1e6, bytes / 1e6 / secs, cpu, del ? 1e6 * cpu / del : 0
			D[who, n] = del; C[who, n] = cpu; G[who, n] = gen; if (n > runs) runs = n
		}
		END {
			for (n = 1; n <= runs; n++) {
				if (n in TF) {
					printf "%-10s run %d: in its file %8d (%7.0f/s), generated %8d (counters at tracing off), kept %5.1f%%, CPU %.2fs, %.2f us/event\n",
						"trace-cmd", n, TF[n], TF[n] / S, TG[n], pct(TF[n], TG[n]), TC[n], TF[n] ? 1e6 * TC[n] / TF[n] : 0
				}
			}
			for (n = 1; n <= runs; n++) {
				line = ""
				for (i = 1; i <= 2; i++) {
					w = i == 1 ? "cat" : "ftctl"
					if ((w "-long", n) in D && D[w "-long", n] > D[w, n]) {
						m[w] = 1e6 * (C[w "-long", n] - C[w, n]) / (D[w "-long", n] - D[w, n])
						line = line sprintf("%s %.2f us/event  ", w, m[w])
					}
				}
				if (line != "") {
					printf "marginal run %d (%ds against %ds): %s", n, L, S, line
					if (m["cat"] > 0) printf "ftctl/cat %.2f", m["ftctl"] / m["cat"]
					printf "\n"
				}
			}
		}'
done
