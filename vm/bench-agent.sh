#!/usr/bin/env bash
# bench-agent.sh: what `ftctl agent` costs a host, idle and under a 100k events/s workload, and
# how long a scrape of ~1,000 series of one hist trigger takes (issue 31). One boot per kernel
# (single-threaded TCG, as the test suite). The agent runs `ftctl agent -f PROFILE --interval 1s
# --listen 127.0.0.1:9469 --max-series 2000`; the profile holds two hist triggers: keys=common_pid
# on syscalls:sys_enter_pread64 (the workload's event) and keys=pid on sched:sched_process_exit
# (one row per process that exits). The workload is `readloop -file /proc/version -bytes 1
# -count CALLS` (default 1,500,000 one-byte pread64s, about 15 s under TCG; its loop timed
# inside it). In order:
#   none      the workload alone, before the agent starts (ROUNDS times, default 2)
#   idle      the agent ready, then IDLE seconds (default 30) with no workload: its utime+stime
#             from /proc/PID/stat over them, and its VmRSS
#   scrape0   SCRAPES (default 20) GETs of /metrics in a row with the few series of then
#   agent     the workload while the agent checks every 1 s (ROUNDS times): the workload's rate,
#             the agent's CPU over the workload's wall time, its RSS after; the kernel's hist
#             row of the workload's pid and the exported counter of that pid, against CALLS
#   procs     PROCS (default 1000) subshells that exit at once, one sched_process_exit row each
#   scrape1   SCRAPES GETs of /metrics with those ~1,000 rows of one trigger: median seconds,
#             bytes, series; the agent's RSS after
#   trigger   the agent stopped (SIGTERM: the profile stays applied), the workload with the
#             triggers alone (ROUNDS times): what the hist triggers cost, apart from the agent
# Then `ftctl delete -f` and the instances left.
#
# usage: [CALLS=N] [ROUNDS=N] [IDLE=S] [SCRAPES=N] [PROCS=N] vm/bench-agent.sh [KERNEL...]
#        (default 6.1 6.12)
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/.." && pwd)
kernels=${*:-6.1 6.12}
build=${BENCH_BUILD:-$top/build}
mkdir -p "$build"
(cd "$top" && CGO_ENABLED=0 go build -o "$build/ftctl" . && CGO_ENABLED=0 go build -o "$build/readloop" ./vm/readloop &&
	CGO_ENABLED=0 go build -o "$build/scrape" ./vm/scrape)
rev=$(cd "$top" && git describe --always --dirty)

guest=$(mktemp)
trap 'rm -f "$guest"' EXIT
cat >"$guest" <<EOF
T=/sys/kernel/tracing
N=${CALLS:-1500000}
U=http://127.0.0.1:9469/metrics
I=\$T/instances/ftctl-owned-agentbench
AP=
cat > /tmp/agentbench.yaml <<'YAML'
apiVersion: ftctl.dev/v1alpha1
kind: TracingProfile
metadata:
  name: agentbench
spec:
  requires: [hist-triggers]
  instance:
    bufferKB: 256
  triggers:
    - event: syscalls:sys_enter_pread64
      trigger: "hist:keys=common_pid:vals=hitcount:size=4096"
    - event: sched:sched_process_exit
      trigger: "hist:keys=pid:vals=hitcount:size=4096"
YAML
echo "BENCHINFO kernel \$(uname -r) cpus \$(nproc) calls \$N"
up() { cut -d' ' -f1 /proc/uptime; }
ticks() { [ -n "\$AP" ] && cut -d')' -f2 /proc/\$AP/stat | awk '{ print \$12 + \$13 }' || echo 0; } # utime+stime, USER_HZ
rss() { [ -n "\$AP" ] && awk '/^VmRSS:/ { print \$2 }' /proc/\$AP/status || echo -; }
work() { # work COND ROUND: the workload, its READS line, the agent's CPU over it when one runs
	c0=\$(ticks); t0=\$(up)
	readloop -file /proc/version -bytes 1 -count \$N > /tmp/rl 2>&1
	t1=\$(up); c1=\$(ticks)
	echo "BENCHRUN \$1 \$2 wall \$(echo "\$t1 \$t0" | awk '{ printf "%.2f", \$1 - \$2 }') agentticks \$((c1 - c0)) rss \$(rss) \$(cat /tmp/rl)"
}
for n in \$(seq ${ROUNDS:-2}); do work none \$n; done

ftctl agent -f /tmp/agentbench.yaml --interval 1s --listen 127.0.0.1:9469 --max-series 2000 2>/tmp/agent.err &
AP=\$!
i=0
until scrape -url http://127.0.0.1:9469/readyz > /dev/null 2>&1; do
	i=\$((i + 1)); [ \$i -ge 120 ] && { echo "BENCHERR agent not ready"; sed 's/^/STDERR /' /tmp/agent.err; break; }
	sleep 0.5
done
echo "BENCHINFO agent pid \$AP ready after \$i polls of 0.5 s"
sleep 5
c0=\$(ticks); t0=\$(up); sleep ${IDLE:-30}; t1=\$(up); c1=\$(ticks)
echo "BENCHIDLE secs \$(echo "\$t1 \$t0" | awk '{ printf "%.2f", \$1 - \$2 }') ticks \$((c1 - c0)) rss \$(rss)"
echo "BENCHSCRAPE scrape0 \$(scrape -url \$U -n ${SCRAPES:-20} -prefix ftctl_hist_)"

for n in \$(seq ${ROUNDS:-2}); do
	work agent \$n
	p=\$(awk '{ for (i = 1; i < NF; i++) if (\$i == "pid") print \$(i+1) }' /tmp/rl)
	sleep 2 # a check or two after the workload
	k=\$(awk -v p=\$p '/^\{ common_pid:/ { gsub(/[{}]/, ""); if (\$2 == p) print \$4 }' \$I/events/syscalls/sys_enter_pread64/hist)
	scrape -url \$U -o /tmp/m > /dev/null
	m=\$(awk -v p="common_pid=\"\$p\"" 'index(\$0, "ftctl_hist_sys_enter_pread64_hitcount_total{") == 1 && index(\$0, p) { printf "%d", \$2 }' /tmp/m)
	echo "BENCHCOUNT agent \$n pid \$p calls \$N kernel \${k:--} exported \${m:--}"
done

t0=\$(up); i=0
while [ \$i -lt ${PROCS:-1000} ]; do (:); i=\$((i + 1)); done
echo "BENCHPROCS \$i in \$(echo "\$(up) \$t0" | awk '{ printf "%.2f", \$1 - \$2 }') s, kernel rows \$(grep -c '^{ pid:' \$I/events/sched/sched_process_exit/hist)"
sleep 3
echo "BENCHSCRAPE scrape1 \$(scrape -url \$U -n ${SCRAPES:-20} -prefix ftctl_hist_sched_process_exit_ -o /tmp/m)"
echo "BENCHINFO rss after scrape1 \$(rss)"
grep -a "^# TYPE ftctl_hist" /tmp/m | sed "s/^/BENCHMETRIC /"
grep -a 'ftctl_hist_folded_rows\|ftctl_agent_failures_total\|ftctl_agent_checks_total\|ftctl_hist_dropped_total' /tmp/m | grep -v '^#' | sed 's/^/BENCHMETRIC /'

kill -TERM \$AP; wait \$AP; echo "BENCHINFO agent exit \$?"
AP=
for n in \$(seq ${ROUNDS:-2}); do
	work trigger \$n
	p=\$(awk '{ for (i = 1; i < NF; i++) if (\$i == "pid") print \$(i+1) }' /tmp/rl)
	k=\$(awk -v p=\$p '/^\{ common_pid:/ { gsub(/[{}]/, ""); if (\$2 == p) print \$4 }' \$I/events/syscalls/sys_enter_pread64/hist)
	echo "BENCHCOUNT trigger \$n pid \$p calls \$N kernel \${k:--}"
done
ftctl delete -f /tmp/agentbench.yaml > /dev/null 2>&1 || echo "BENCHERR delete"
grep -a -i 'error\|fail\|panic' /tmp/agent.err | head -5 | sed 's/^/STDERR /'
echo "BENCHLEFT instances \$(ls \$T/instances | tr '\n' ' ')"
exit 0
EOF

for k in $kernels; do
	log=$build/bench-agent-$k.log
	load0=$(cut -d' ' -f1-3 /proc/loadavg)
	FTCTL_VM_TCG_THREAD=single "$here/run.sh" --kernel "$k" --mode cmd --script "$guest" --timeout "${BENCH_TIMEOUT:-1200}" --log "$log" \
		--file "$build/ftctl:/bin/ftctl" --file "$build/readloop:/bin/readloop" --file "$build/scrape:/bin/scrape" \
		>/dev/null 2>&1 || echo "bench-agent: the $k boot failed; see $log" >&2
	echo "== kernel $k ($(grep -a -o 'FTCTL-VM-BOOTED kernel=[^ ]*' "$log" | sed 's/.*=//')), TCG single-threaded, $(date -u '+%F %H:%M'), ftctl $rev; host load $load0 before, $(cut -d' ' -f1-3 /proc/loadavg) after"
	tr -d '\r' <"$log" | grep -a -E '^(BENCH|STDERR)' | grep -a -v '^BENCHRUN'
	# per run: the workload's rate, and the agent's CPU in % of a core over the workload's wall time
	tr -d '\r' <"$log" | awk '
		/^BENCHRUN / { for (i = 1; i <= NF; i++) { if ($i == "rate") r = $(i+1); if ($i == "wall") w = $(i+1); if ($i == "agentticks") t = $(i+1); if ($i == "rss") m = $(i+1) }
			printf "%-8s round %s  workload %.0f calls/s  wall %.2f s", $2, $3, r, w
			if ($2 == "agent") printf "  agent cpu %.1f %% of a core, rss %s kB", t / w, m
			printf "\n" }
		/^BENCHIDLE / { printf "idle     %s s  agent cpu %.2f %% of a core  rss %s kB\n", $3, $5 / $3, $7 }'
done
