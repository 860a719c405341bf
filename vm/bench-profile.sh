#!/usr/bin/env bash
# bench-profile.sh: the benchmark of issue 29 (declarative profiles). In one VM boot per kernel
# (single-threaded TCG, 2 vCPUs), the guest builds a profile from the running kernel:
#   - 1,000 functions in spec.functions.filter: exact names that occur once in
#     available_filter_functions, in the core kernel, without a '.' (no .isra/.constprop
#     clones), never __ftrace_invalid_address___N; taken first from networking code the
#     benchmark never runs (tcp_, udp, ip6, fib, neigh...), so that the function tracer the
#     profile turns on does not slow the rest of the round; then from any such name
#   - 10 probes of mixed kinds on vfs_read, vfs_write, do_sys_openat2, do_unlinkat, do_mkdirat,
#     filp_close, vfs_fsync_range: kprobes and kretprobes, and fprobes (entry and %return)
#     where the tracefs README announces f[:[<group>/][<event>]] (6.12), else kprobes and a
#     kretprobe (6.1); 4 of them enabled (${group}:NAME in events), 1 only the source of a
#     trigger
#   - 5 tracepoints enabled with filters (sched_process_exit, sched_process_fork,
#     sched_process_exec, task_newtask, signal_generate)
#   - 2 hist triggers: sched:sched_switch hist:keys=prev_pid, ${group}:rd hist:keys=common_pid
# checks it with `ftctl profile validate -f`, and times per round (RUNS, default 5), wall
# clock of the VM by vm/stopwatch around /bin/sh -c (a bare `true` is measured too):
#   apply      first `ftctl apply -f` (nothing of the profile in the kernel)
#   noop       a second `ftctl apply -f` (in sync: writes nothing; --show-writes counts)
#   diff       `ftctl diff -f` (exit 0: in sync)
#   delete     `ftctl delete -f`
#   cmds       the same set-up by commands one after another, in instance and group bcmd:
#              `ftctl instance create`, `ftctl -B filter set --from-file` (1,000 names),
#              `ftctl -B probe add [--enable]` x10; by echo, as ftctl has no command for them:
#              the tracer, the 5 tracepoints' filters and enables, the 2 triggers
#   cmds-down  its teardown: triggers removed (echo), `ftctl probe remove` (10 names, one
#              command), `ftctl instance remove`
#   tc         the same set-up by trace-cmd (Debian's 3.1.6, in the same initramfs), in
#              instance and group btc: the probes by echo into dynamic_events (trace-cmd
#              start defines none), `trace-cmd start -B btc -p function -l REGEX -e EV -f
#              FILTER ...`, the triggers by echo (trace-cmd's -R attaches one only to an event
#              it also enables: sched_switch and rd are not enabled here). The 1,000 names go
#              as one anchored regex ^(f1|f2|...)$: one -l per name costs 300-430 s under
#              TCG (BENCHMARKS.md, bench-filters); TC_PER_NAME=1 times that way too, once
#   tc-down    `trace-cmd reset -B btc -d`, then what it left (probes of btc, the instance)
# Each set-up is checked before its teardown (BENCHCHECK: functions listed in the instance's
# set_ftrace_filter, tracer, events enabled, filters set, hist triggers, probes of the group;
# BENCHBAD when one is not what the profile asks), and each teardown after it (BENCHLEFT).
# The host prints one BENCH line per measurement and a summary per kernel: medians, min-max,
# and the ratios apply/cmds, apply/tc, noop/apply, diff/apply (issue 29's targets: apply <= the
# commands' time; a no-op apply or a diff <= 1/5 of the first apply).
#
# PROF=1 adds CPU profiles of an apply, a no-op apply and a diff (ftctl built with -tags
# profile), written to build/bench-profile-KERNEL-{apply,noop,diff}.pprof.
#
# usage: [RUNS=N] [TC_PER_NAME=1] [PROF=1] vm/bench-profile.sh [KERNEL...]   (default: 6.1 6.12)
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/.." && pwd)
kernels=${*:-6.1 6.12}
build=${BENCH_BUILD:-$top/build}
mkdir -p "$build"
(cd "$top" && CGO_ENABLED=0 go build -o "$build/ftctl" . && CGO_ENABLED=0 go build -o "$build/stopwatch" ./vm/stopwatch)
rev=$(cd "$top" && git describe --always --dirty)
extra=()
if [ "${PROF:-0}" = 1 ]; then
	(cd "$top" && CGO_ENABLED=0 go build -tags profile -o "$build/ftctl-prof" .)
	extra=(--file "$build/ftctl-prof:/bin/ftctl-prof")
fi
tracecmd=$(command -v trace-cmd || true)
[ -n "$tracecmd" ] || { echo "bench-profile.sh: trace-cmd is needed (apt-get install trace-cmd)" >&2; exit 1; }

guest=$(mktemp)
trap 'rm -f "$guest"' EXIT
{
	echo "RUNS=${RUNS:-5} TC_PER_NAME=${TC_PER_NAME:-0} PROF=${PROF:-0}"
	cat <<'EOF'
T=/sys/kernel/tracing
cd $T
sw=/bin/stopwatch
F=$(grep -c 'f\[:\[<group>' README)
echo "BENCHINFO kernel $(uname -r) cpus $(nproc) fprobe $F records $(wc -l < available_filter_functions)"

# --- the functions: unique core names, cold ones first
grep -v -e '\[' -e __ftrace_invalid -e '\.' available_filter_functions | sort | uniq -u > /tmp/unique
cold='^(tcp|udp|ip6|ipv6|inet6|xfrm|fib|neigh|nf_|nla_|rtnl|icmp|igmp|arp_|raw_|ping_|netlink|genl|ndisc|addrconf|mld|ipv4|ip_)'
{ grep -E "$cold" /tmp/unique; grep -v -E "$cold" /tmp/unique; } | head -n 1000 > /tmp/names
echo "BENCHINFO unique $(wc -l < /tmp/unique) names $(wc -l < /tmp/names) cold $(grep -c -E "$cold" /tmp/names)"

# --- the probes: KIND:NAME SYMBOL (the group is added per way); enabled: open openret unlink mkdir
if [ "$F" != 0 ]; then
	E=f; CLOSERET='f:closeret filp_close%return'
else
	E=p; CLOSERET='r:closeret filp_close'
fi
cat > /tmp/probes <<P
p:rd vfs_read
r:rdret vfs_read
p:wr vfs_write
r:wrret vfs_write
p:open do_sys_openat2
r:openret do_sys_openat2
$E:unlink do_unlinkat
$E:mkdir do_mkdirat
$CLOSERET
$E:fsync vfs_fsync_range
P
ENABLED="open openret unlink mkdir"
# the tracepoints: SYSTEM:EVENT<TAB>FILTER
printf '%s\t%s\n' \
	sched:sched_process_exit 'comm == "sh"' \
	sched:sched_process_fork 'parent_comm == "sh"' \
	sched:sched_process_exec 'filename ~ "/bin/*"' \
	task:task_newtask 'clone_flags != 0' \
	signal:signal_generate 'sig == 9' > /tmp/tps

# --- the profile
{
	cat <<P
apiVersion: ftctl.dev/v1alpha1
kind: TracingProfile
metadata:
  name: bench
  description: issue 29 benchmark (1000 functions, 10 probes, 5 filtered tracepoints, 2 hist triggers)
spec:
  functions:
    filter:
P
	sed 's/^/      - /' /tmp/names
	echo "  probes:"
	sed 's/^\(.*\)$/    - "\1"/' /tmp/probes
	echo "  events:"
	while IFS='	' read -r ev f; do
		printf '    - name: %s\n      filter: %s\n' "$ev" "'$f'"
	done < /tmp/tps
	for n in $ENABLED; do printf '    - name: "${group}:%s"\n' "$n"; done
	cat <<'P'
  triggers:
    - event: sched:sched_switch
      trigger: "hist:keys=prev_pid"
    - event: "${group}:rd"
      trigger: "hist:keys=common_pid"
P
} > /tmp/bench.yaml
echo "BENCHINFO profile $(wc -l < /tmp/bench.yaml) lines, $(wc -c < /tmp/bench.yaml) bytes"
if ! ftctl profile validate -f /tmp/bench.yaml > /tmp/err 2>&1; then
	sed 's/^/BENCHERR validate /' /tmp/err; exit 1
fi

# --- the commands' way (instance and group bcmd), as scripts timed whole
{
	echo 'cd /sys/kernel/tracing; set -e'
	echo 'ftctl -q instance create bcmd'
	echo 'ftctl -q -B bcmd filter set --from-file /tmp/names'
	echo 'echo function > instances/bcmd/current_tracer'
	while read -r kind sym; do
		n=${kind#*:}
		case " $ENABLED " in *" $n "*) en=--enable ;; *) en= ;; esac
		echo "ftctl -q -B bcmd probe add '${kind%%:*}:bcmd/$n $sym' $en"
	done < /tmp/probes
	while IFS='	' read -r ev f; do
		d=instances/bcmd/events/${ev%%:*}/${ev#*:}
		echo "echo '$f' > $d/filter; echo 1 > $d/enable"
	done < /tmp/tps
	echo "echo 'hist:keys=prev_pid' >> instances/bcmd/events/sched/sched_switch/trigger"
	echo "echo 'hist:keys=common_pid' >> instances/bcmd/events/bcmd/rd/trigger"
} > /tmp/cmds-up.sh
{
	echo 'cd /sys/kernel/tracing; set -e'
	echo "echo '!hist:keys=prev_pid' >> instances/bcmd/events/sched/sched_switch/trigger"
	echo "echo '!hist:keys=common_pid' >> instances/bcmd/events/bcmd/rd/trigger"
	echo "ftctl -q probe remove $(sed 's/^[^:]*:\([^ ]*\) .*/bcmd\/\1/' /tmp/probes | tr '\n' ' ')"
	echo 'ftctl -q instance remove bcmd'
} > /tmp/cmds-down.sh

# --- trace-cmd's way (instance and group btc)
# (a basic regex: libtracefs compiles -l without REG_EXTENDED, and ^(a|b)$ matches no name, which
# trace-cmd 3.1.6 takes without a word and leaves the filter empty: every function traced)
regex="^\\($(sed 's/$/\\|/' /tmp/names | tr -d '\n' | sed 's/\\|$//')\\)\$"
{
	echo 'cd /sys/kernel/tracing; set -e'
	sed 's/^\([^:]*\):\([^ ]*\) \(.*\)$/echo "\1:btc\/\2 \3" >> dynamic_events/' /tmp/probes
	printf 'trace-cmd start -B btc -p function -l "%s"' "$regex"
	while IFS='	' read -r ev f; do printf " -e %s -f '%s'" "$ev" "$f"; done < /tmp/tps
	for n in $ENABLED; do printf ' -e btc:%s' "$n"; done
	echo ' > /dev/null'
	echo "echo 'hist:keys=prev_pid' >> instances/btc/events/sched/sched_switch/trigger"
	echo "echo 'hist:keys=common_pid' >> instances/btc/events/btc/rd/trigger"
} > /tmp/tc-up.sh
cat > /tmp/tc-down.sh <<'P'
cd /sys/kernel/tracing
trace-cmd reset -B btc -d > /dev/null 2>&1
for e in $(grep -o '^[a-z][0-9]*:btc/[a-z]*' dynamic_events | cut -d: -f2); do echo "-:$e" >> dynamic_events; done
[ ! -d instances/btc ] || rmdir instances/btc
P

# check INSTANCE GROUP WAY ROUND: what the set-up holds
check() {
	d=instances/$1
	fn=$(grep -c . $d/set_ftrace_filter)
	tr=$(cat $d/current_tracer)
	ev=0 # set_event lists the events a trigger enabled softly too: their enable file says 0*
	for e in $(cat $d/set_event); do
		grep -q '^1' $d/events/${e%%:*}/${e#*:}/enable && ev=$((ev + 1))
	done
	fl=0
	while IFS='	' read -r e f; do
		grep -q -v '^none' $d/events/${e%%:*}/${e#*:}/filter && fl=$((fl + 1))
	done < /tmp/tps
	tg=$(cat $d/events/sched/sched_switch/trigger $d/events/$2/rd/trigger 2>/dev/null | grep -c '^hist:')
	pr=$(grep -c "^[a-z][0-9]*:$2/" dynamic_events) # r16:G/E: a kretprobe lists its maxactive
	echo "BENCHCHECK $3 $4 functions $fn tracer $tr events $ev filters $fl hist $tg probes $pr"
	[ "$fn $tr $ev $fl $tg $pr" = "1000 function 9 5 2 10" ] || echo "BENCHBAD $3 $4 want functions 1000 tracer function events 9 filters 5 hist 2 probes 10"
}
left() { # left WAY ROUND: what a teardown left
	l="$(ls instances | tr '\n' ' ')$(cut -d' ' -f1 dynamic_events | tr '\n' ' ')"
	echo "BENCHLEFT $1 $2 [$l]"
}
# sw LABEL ROUND COMMAND: stopwatch's line as "BENCH LABEL ROUND SECONDS EXIT CPU ..."
sw() { $sw "$1" "$3" | sed "s/^BENCH $1 /BENCH $1 $2 /"; }

sw true 0 true
for n in $(seq $RUNS); do
	sw apply $n 'ftctl --show-writes apply -f /tmp/bench.yaml 2>/tmp/apply.err'
	echo "BENCHWRITES apply $n $(grep -c '^+ ' /tmp/apply.err)"; grep -v '^+ \|^ftctl: profile bench: created' /tmp/apply.err | sed "s/^/STDERR apply $n /"
	check ftctl-owned-bench ftctl_owned_bench apply $n
	sw noop $n 'ftctl --show-writes apply -f /tmp/bench.yaml 2>/tmp/noop.err'
	echo "BENCHWRITES noop $n $(grep -c '^+ ' /tmp/noop.err)"; grep -v 'in sync, nothing written' /tmp/noop.err | sed "s/^/STDERR noop $n /"
	sw diff $n 'ftctl -q diff -f /tmp/bench.yaml > /tmp/diff.out 2>&1'
	grep -v -e 'in sync' -e '^globs, and what' -e '^  set_ftrace_filter ' /tmp/diff.out | head -n 5 | sed "s/^/STDERR diff $n /"
	# where a no-op apply's time goes: ftctl's start, the profile's offline load, reading the
	# index and the instance's filter (the kernel's side of a compare)
	sw startup $n 'ftctl version > /dev/null'
	sw validate $n 'ftctl profile validate -f /tmp/bench.yaml > /dev/null'
	sw read-index $n 'cat available_filter_functions > /dev/null'
	sw read-filter $n 'cat instances/ftctl-owned-bench/set_ftrace_filter > /dev/null'
	sw delete $n 'ftctl -q delete -f /tmp/bench.yaml'
	left profile $n

	sw cmds $n 'sh /tmp/cmds-up.sh'
	check bcmd bcmd cmds $n
	sw cmds-down $n 'sh /tmp/cmds-down.sh'
	left cmds $n

	sw tc $n 'sh /tmp/tc-up.sh'
	check btc btc tc $n
	sw tc-down $n 'sh /tmp/tc-down.sh'
	left tc $n
done
if [ "$PROF" = 1 ]; then # CPU profiles of an apply, a no-op apply and a diff (ftctl built with -tags profile)
	for w in apply noop diff; do
		c=apply; [ $w = diff ] && c=diff
		FTCTL_CPUPROFILE=/tmp/$w.prof ftctl-prof -q $c -f /tmp/bench.yaml > /dev/null 2>&1
		echo "BENCHPROF-BEGIN $w"; base64 /tmp/$w.prof; echo "BENCHPROF-END $w"
	done
	ftctl -q delete -f /tmp/bench.yaml
fi
if [ "$TC_PER_NAME" = 1 ]; then
	sed "s/-l \"[^\"]*\"/$(sed 's/^/-l /' /tmp/names | tr '\n' ' ')/" /tmp/tc-up.sh > /tmp/tc-names.sh
	sw tc-names 1 'sh /tmp/tc-names.sh'
	check btc btc tc-names 1
	sh /tmp/tc-down.sh
fi
exit 0
EOF
} >"$guest"

# Up to BENCH_WAIT seconds (default 300) are spent waiting for other VMs to end and the host's
# load average to fall to LOAD_MAX (default 1.5) before each boot; the load is reported.
others() { pgrep -c -x qemu-system-x86 || true; }
busy_host() { awk -v max="${LOAD_MAX:-1.5}" '{ exit !($1 > max) }' /proc/loadavg; }
for k in $kernels; do
	waited=0
	while { [ "$(others)" != 0 ] || busy_host; } && [ "$waited" -lt "${BENCH_WAIT:-300}" ]; do sleep 10; waited=$((waited + 10)); done
	log=$build/bench-profile-$k.log
	load0=$(cut -d' ' -f1-3 /proc/loadavg)
	FTCTL_VM_TCG_THREAD=single "$here/run.sh" --kernel "$k" --mode cmd --script "$guest" --timeout "${BENCH_TIMEOUT:-900}" --log "$log" \
		--file "$build/ftctl:/bin/ftctl" --file "$build/stopwatch:/bin/stopwatch" --bin "$tracecmd:/usr/bin/trace-cmd" "${extra[@]+"${extra[@]}"}" >/dev/null 2>&1 ||
		echo "bench-profile: the $k boot failed; see $log" >&2
	echo "== kernel $k ($(grep -a -o 'FTCTL-VM-BOOTED kernel=[^ ]*' "$log" | sed 's/.*=//')), TCG single-threaded, $(date -u '+%F %H:%M'), ftctl $rev; host load average $load0 before (after waiting ${waited}s), $(cut -d' ' -f1-3 /proc/loadavg) after; other VMs at the end $(others)"
	grep -a -E '^(BENCHINFO|BENCHERR|BENCHBAD|STDERR)' "$log"
	grep -a -E '^(BENCH|BENCHCHECK|BENCHWRITES|BENCHLEFT) ' "$log"
	for w in apply noop diff; do # PROF=1: go tool pprof -top build/bench-profile-$k-$w.pprof
		sed -n "/^BENCHPROF-BEGIN $w/,/^BENCHPROF-END $w/p" "$log" | sed '1d;$d' | base64 -d > "$build/bench-profile-$k-$w.pprof" 2>/dev/null || true
		[ -s "$build/bench-profile-$k-$w.pprof" ] || rm -f "$build/bench-profile-$k-$w.pprof"
	done
	grep -a '^BENCH ' "$log" | awk '
		# "BENCH LABEL ROUND SECONDS EXIT CPU ...": median, min-max and the ratios of medians, in ms
		{ l = $2; v[l, ++n[l]] = $4 * 1000; by[l, $3] = $4 * 1000; if ($3 > rounds) rounds = $3; if ($5 != 0) bad[l]++ }
		END {
			nl = split("true apply noop diff startup validate read-index read-filter delete cmds cmds-down tc tc-down tc-names", order, " ")
			for (i = 1; i <= nl; i++) {
				l = order[i]; k = n[l]; if (!k) continue
				for (a = 1; a <= k; a++) for (b = a + 1; b <= k; b++) if (v[l, b] < v[l, a]) { t = v[l, a]; v[l, a] = v[l, b]; v[l, b] = t }
				med[l] = (k % 2) ? v[l, (k + 1) / 2] : (v[l, k / 2] + v[l, k / 2 + 1]) / 2
				printf "%-10s median %9.1f ms  min %9.1f  max %9.1f  (%d runs%s)\n", l, med[l], v[l, 1], v[l, k], k, bad[l] ? ", " bad[l] " failed" : ""
			}
			ratio("apply", "cmds", " (target <= 1)"); ratio("apply", "tc", "")
			ratio("noop", "apply", " (target <= 0.20)"); ratio("diff", "apply", " (target <= 0.20)")
			ratio("delete", "cmds-down", ""); ratio("delete", "tc-down", "")
		}
		# ratio A B: of the medians, and the median and range of the ratios within each round
		# (the rounds interleave the ways, so a slow spell of the host weighs on both)
		function ratio(a, b, note,   m, r, i, j, t, q) {
			if (!med[a] || !med[b]) return
			m = 0
			for (i = 1; i <= rounds; i++) if (by[a, i] && by[b, i]) r[++m] = by[a, i] / by[b, i]
			for (i = 1; i <= m; i++) for (j = i + 1; j <= m; j++) if (r[j] < r[i]) { t = r[i]; r[i] = r[j]; r[j] = t }
			q = (m % 2) ? r[(m + 1) / 2] : (r[m / 2] + r[m / 2 + 1]) / 2
			printf "%-18s = %.2f of the medians; per round median %.2f, %.2f-%.2f%s\n", a " / " b, med[a] / med[b], q, r[1], r[m], note
		}'
done
