#!/usr/bin/env bash
# bench-record-ab.sh: ftctl record's CPU, one build against another, in one VM boot per kernel
# (the comparison vm/bench-record.sh cannot make: its boots differ by more than the change).
# The load is vm/bench-record.sh's (an instance tracing every `_raw_spin_lock*` function while
# a busy shell loop runs); in each of ROUNDS rounds (default 3): `cat trace_pipe` for
# SECONDS_RUN (default 5) seconds, then `ftctl -B hot record` by the OLD build, the new build
# twice, and OLD again (the order evens out drift); then, twice, cat, OLD and new for 3 x
# SECONDS_RUN. Each reader is a fresh process; the window ends with tracing_on 0 for all, then
# SIGINT (cat: SIGTERM). Printed per run: events the kernel handed over (per_cpu stats "read
# events") and the CPU time of the reader (the shell's `times` for its children), as in
# vm/bench-record.sh.
#
# usage: OLD=COMMIT vm/bench-record-ab.sh [KERNEL...]   (default 6.1 6.12; the new build is the
# work tree's)
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/.." && pwd)
old=${OLD:?OLD=COMMIT names the build to compare with}
kernels=${*:-6.1 6.12}
build=$top/build
mkdir -p "$build"
src=$(mktemp -d)
guest=$(mktemp)
trap 'rm -rf "$src" "$guest"' EXIT
(cd "$top" && git archive "$old" | tar -x -C "$src")
(cd "$src" && CGO_ENABLED=0 go build -o "$build/ftctl-old" .)
(cd "$top" && CGO_ENABLED=0 go build -o "$build/ftctl-new" .)
# record's file flag: -w/--write since -o became the output format everywhere, -o before
ow=-o
if "$build/ftctl-old" record --help 2>/dev/null | grep -q -- '--write'; then ow=-w; fi
S=${SECONDS_RUN:-5}
cat >"$guest" <<GUEST
T=/sys/kernel/tracing
I=\$T/instances/hot
mkdir \$I
echo '_raw_spin_lock*' > \$I/set_ftrace_filter; echo function > \$I/current_tracer; echo 1 > \$I/tracing_on
busy() { while :; do cat /proc/stat > /dev/null; done; }
busy &
sleep 1
cat \$I/trace_pipe > /dev/null & c=\$!; sleep 3; kill \$c
sum() { cat \$I/per_cpu/cpu*/stats | awk -v k="\$1" 'index(\$0, k ":") == 1 { s += \$NF } END { print s + 0 }'; }
one() { # LABEL SECONDS SIGNAL COMMAND
	echo > \$I/trace; echo 1 > \$I/tracing_on
	r0=\$(sum "read events")
	( sh -c "exec \$4" >/dev/null 2>/dev/null & p=\$!; sleep \$2; echo 0 > \$I/tracing_on; kill -\$3 \$p; wait \$p; times > /tmp/times )
	r1=\$(sum "read events")
	cpu=\$(sed -n 2p /tmp/times | awk '{ for (i = 1; i <= 2; i++) { split(\$i, a, "m"); sub("s", "", a[2]); t += a[1] * 60 + a[2] } print t }')
	echo "BENCHAB \$1 \$2 events \$((r1 - r0)) cpu \$cpu"
	rm -f /tmp/f.dat
}
for n in \$(seq ${ROUNDS:-3}); do
	one cat $S TERM "cat \$I/trace_pipe"
	one old $S INT "/bin/ftctl-old -B hot record $ow /tmp/f.dat"
	one new $S INT "/bin/ftctl -B hot record -w /tmp/f.dat"
	one new $S INT "/bin/ftctl -B hot record -w /tmp/f.dat"
	one old $S INT "/bin/ftctl-old -B hot record $ow /tmp/f.dat"
done
for n in 1 2; do
	one cat $((3 * S)) TERM "cat \$I/trace_pipe"
	one old $((3 * S)) INT "/bin/ftctl-old -B hot record $ow /tmp/f.dat"
	one new $((3 * S)) INT "/bin/ftctl -B hot record -w /tmp/f.dat"
done
echo 0 > \$I/tracing_on
GUEST
for k in $kernels; do
	log=$build/bench-record-ab-$k.log
	"$here/run.sh" --kernel "$k" --mode cmd --script "$guest" --timeout ${BENCH_TIMEOUT:-1500} --log "$log" \
		--file "$build/ftctl-new:/bin/ftctl" --file "$build/ftctl-old:/bin/ftctl-old" >/dev/null 2>&1 || echo "bench-record-ab: the $k boot failed; see $log" >&2
	echo "== kernel $k, $(date -u '+%F %H:%M'), old $old, new $(cd "$top" && git describe --always --dirty); host load $(cut -d' ' -f1-3 /proc/loadavg)"
	grep -a '^BENCHAB' "$log" | awk '{ us = $5 ? 1e6 * $7 / $5 : 0; printf "%-4s %3ss: %8d events, CPU %6.2fs, %6.2f us/event\n", $2, $3, $5, $7, us }'
done
