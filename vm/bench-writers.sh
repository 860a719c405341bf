#!/usr/bin/env bash
# bench-writers.sh: concurrent writers, in one VM boot per kernel. ROUNDS times, WRITERS
# `ftctl filter add` of distinct functions start at once on one instance, with the default
# --lock-timeout and FTCTL_TIMING=1; each writer's exit status and phases (lock wait, the time it
# held the lock, ...) are collected, and the filter is counted afterwards (WRITERS when every
# writer landed). With BASELINE=PATH (another ftctl binary, e.g. an older commit's), every
# round runs that binary too, alternating in the same boot, so that the two compare on equal
# terms (the machines are noisy: compare within a run).
#
# usage: [BASELINE=build/ftctl-old] [WRITERS=32] [ROUNDS=3] vm/bench-writers.sh [KERNEL...]
#        (default kernels: 6.1 6.12; FTCTL_BIN replaces build/ftctl)
# Prints per kernel: each round's wall time and count, the writers' exit statuses, and the
# median and maximum of each phase over all writers of all rounds, per binary.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/.." && pwd)
kernels=${*:-6.1 6.12}
writers=${WRITERS:-32} rounds=${ROUNDS:-3}
build=$top/build
ftctl=${FTCTL_BIN:-$build/ftctl}
mkdir -p "$build"
CGO_ENABLED=0 go build -o "$build/stopwatch" "$here/stopwatch"
files=(--file "$ftctl:/bin/ftctl" --file "$build/stopwatch:/bin/stopwatch")
variants=ftctl
if [ -n "${BASELINE:-}" ]; then
	files+=(--file "$BASELINE:/bin/ftctl-baseline")
	variants="ftctl-baseline ftctl"
fi

guest=$(mktemp)
trap 'rm -f "$guest"' EXIT
{
echo "WRITERS=$writers ROUNDS=$rounds VARIANTS='$variants'"
cat <<'EOF'
T=/sys/kernel/tracing
# Names that occur once, in the core kernel, spread over the index.
grep -v -e '\[' -e __ftrace_invalid $T/available_filter_functions | sort | uniq -u | awk 'NR % 499 == 7' | head -n $WRITERS > /tmp/names
mkdir $T/instances/conc
cat > /tmp/burst.sh <<'EOB'
i=0
for f in $(cat /tmp/names); do
	i=$((i + 1))
	( FTCTL_TIMING=1 $BIN -q -B conc filter add "$f" 2> /tmp/w.$i; echo "exit $?" >> /tmp/w.$i ) &
done
wait
EOB
for r in $(seq $ROUNDS); do
	for v in $VARIANTS; do
		echo > $T/instances/conc/set_ftrace_filter
		rm -f /tmp/w.*
		BIN=$v /bin/stopwatch burst-$v-$r 'sh /tmp/burst.sh'
		echo "BENCHCHECK $v round $r listed $(grep -c . $T/instances/conc/set_ftrace_filter)"
		for w in /tmp/w.*; do
			awk -v v=$v -v r=$r -v w=${w#/tmp/w.} '
				/^ftctl: timing: / { ph = $3; for (i = 4; i < NF; i++) ph = ph "_" $i; print "BENCHW", v, r, w, ph "=" $NF; next }
				/^exit / { print "BENCHW", v, r, w, "exit=" $2; next }
				{ if (n++ < 2) print "BENCHERR", v, r, w, $0 }' $w
		done
	done
done
echo > $T/instances/conc/set_ftrace_filter
EOF
} >"$guest"

for k in $kernels; do
	log=$build/bench-writers-$k.log
	"$here/run.sh" --kernel "$k" --mode cmd --script "$guest" --timeout 1500 --log "$log" "${files[@]}" >/dev/null
	echo "== kernel $k ($(grep -a -o 'FTCTL-VM-BOOTED kernel=[^ ]*' "$log" | sed 's/.*=//')), $(date -u +%F), $writers writers x $rounds rounds"
	grep -a -E '^(BENCH |BENCHCHECK)' "$log" || true
	grep -a -E '^BENCHERR' "$log" | head -n 3 || true
	grep -a '^BENCHW ' "$log" | awk '
		{ split($5, kv, "="); if (kv[1] == "exit") exits[$2 " exit " kv[2]]++; else v[$2 " " kv[1]] = v[$2 " " kv[1]] " " kv[2] }
		END {
			for (e in exits) printf "%s: %d writers\n", e, exits[e]
			for (p in v) {
				n = split(substr(v[p], 2), a, " ")
				for (i = 2; i <= n; i++) { x = a[i]; j = i - 1; while (j > 0 && a[j] + 0 > x + 0) { a[j + 1] = a[j]; j-- } a[j + 1] = x }
				printf "%-26s n=%3d median %.3f s  max %.3f s\n", p, n, a[int((n + 1) / 2)], a[n]
			}
		}' | sort
done
