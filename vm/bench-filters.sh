#!/usr/bin/env bash
# bench-filters.sh: the filter benchmarks of BENCHMARKS.md, in one VM boot per kernel:
# selecting 1,000 functions by writing names with cat, by a raw index write, with trace-cmd
# (Debian's 3.1.6, run in the same initramfs), and with ftctl; then 10,000 functions with ftctl
# and a raw index write. Every method starts from an empty filter at the top level, with the
# nop tracer. Times come from vm/stopwatch (microseconds, /bin/sh -c included).
#
# usage: vm/bench-filters.sh [KERNEL...]   (default: 6.1 6.12; SKIP_TRACE_CMD=1 skips trace-cmd)
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/.." && pwd)
kernels=${*:-6.1 6.12}
build=$top/build
mkdir -p "$build"
CGO_ENABLED=0 go build -o "$build/stopwatch" "$here/stopwatch"
tracecmd=$(command -v trace-cmd || true)
if [ -z "$tracecmd" ] && [ "$(id -u)" = 0 ]; then
	DEBIAN_FRONTEND=noninteractive apt-get install -y -qq trace-cmd >/dev/null && tracecmd=$(command -v trace-cmd)
fi
[ -n "$tracecmd" ] || { echo "bench-filters.sh: trace-cmd is needed (apt-get install trace-cmd)" >&2; exit 1; }

guest=$(mktemp)
trap 'rm -f "$guest"' EXIT
cat >"$guest" <<EOF
T=/sys/kernel/tracing
cd \$T
cp available_filter_functions /tmp/aff
# Names that occur once, in the core kernel: each selects exactly one record.
grep -v -e '\[' -e __ftrace_invalid /tmp/aff | sort | uniq -u > /tmp/unique
shuf -n 10000 --random-source=/tmp/aff /tmp/unique 2>/dev/null > /tmp/names10k || head -n 10000 /tmp/unique > /tmp/names10k
head -n 1000 /tmp/names10k > /tmp/names1k
awk 'NR==FNR { want[\$1] = 1; next } (\$0 in want) { print FNR }' /tmp/names1k /tmp/aff > /tmp/idx1k
awk 'NR==FNR { want[\$1] = 1; next } (\$0 in want) { print FNR }' /tmp/names10k /tmp/aff > /tmp/idx10k
echo "BENCHINFO records \$(wc -l < /tmp/aff) names1k \$(wc -l < /tmp/names1k) idx1k \$(wc -l < /tmp/idx1k) idx10k \$(wc -l < /tmp/idx10k)"
clear() { echo > set_ftrace_filter; }
check() { echo "BENCHCHECK \$1 \$(grep -c . set_ftrace_filter)"; clear; }
sw=/bin/stopwatch
clear
\$sw startup-true 'true'
\$sw ftctl-startup 'ftctl functions --count vfs_read'
\$sw ftctl-plan-1k 'ftctl --dry-run filter set --from-file /tmp/names1k > /dev/null'
\$sw raw-index-1k 'cat /tmp/idx1k > set_ftrace_filter'; check raw-index-1k
\$sw ftctl-1k 'FTCTL_TIMING=1 ftctl -q filter set --from-file /tmp/names1k 2>&1 | sed "s/^ftctl: timing: /BENCHPHASE ftctl-1k /"'; check ftctl-1k
\$sw raw-index-10k 'cat /tmp/idx10k > set_ftrace_filter'; check raw-index-10k
\$sw ftctl-10k 'FTCTL_TIMING=1 ftctl -q filter set --from-file /tmp/names10k 2>&1 | sed "s/^ftctl: timing: /BENCHPHASE ftctl-10k /"'; check ftctl-10k
\$sw ftctl-swap-10k-to-1k 'ftctl -q filter set --from-file /tmp/names10k && ftctl -q filter set --from-file /tmp/names1k'; check ftctl-swap
\$sw cat-names-1k 'cat /tmp/names1k > set_ftrace_filter'; check cat-names-1k
if [ "${SKIP_TRACE_CMD:-0}" != 1 ]; then
	args=\$(sed 's/^/-l /' /tmp/names1k | tr '\n' ' ')
	\$sw trace-cmd-1k "trace-cmd start -p nop \$args > /dev/null 2>&1"; check trace-cmd-1k
	trace-cmd reset > /dev/null 2>&1
fi
EOF

for k in $kernels; do
	log=$build/bench-filters-$k.log
	"$here/run.sh" --kernel "$k" --mode cmd --script "$guest" --timeout 1500 --log "$log" \
		--file "$build/ftctl:/bin/ftctl" --file "$build/stopwatch:/bin/stopwatch" --bin "$tracecmd:/usr/bin/trace-cmd" >/dev/null
	echo "== kernel $k ($(grep -a -o 'FTCTL-VM-BOOTED kernel=[^ ]*' "$log" | sed 's/.*=//')), $(date -u +%F)"
	grep -a -E '^BENCH(INFO|CHECK|PHASE)? ' "$log"
done
