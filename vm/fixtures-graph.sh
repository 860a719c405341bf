#!/usr/bin/env bash
# fixtures-graph.sh: capture, from each VM kernel, what the unit tests of ftctl's funcgraph
# decoder and call-tree builder (stream/graph*.go) run on, into stream/testdata/<kernel series>/:
#   graph.trace         the kernel's own text of a function_graph session (the top level's trace
#                       file, funcgraph-proc and funcgraph-abstime on: every line has its task
#                       and time) under set_graph_function ksys_read, for a dd that reads
#                       /proc/version 64 bytes at a time (set_ftrace_pid: only dd's shell and dd)
#   graph.cpuN.raw      the same records, as the ring buffer's pages (per_cpu/cpuN/trace_pipe_raw,
#                       read after the trace file: trace does not consume)
#   graph.thresh.trace, graph.thresh.cpuN.raw   the same with tracing_thresh 50 (only the returns
#                       of calls of 50 us or more are recorded) and max_graph_depth 3
#   graph.saved_cmdlines, graph.kallsyms.gz  the comms and the kallsyms lines the text names
# Run by hand (vm/fixtures-graph.sh [KERNEL...]; default 6.1 6.12); the results are checked in.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/.." && pwd)
kernels=${*:-6.1 6.12}

guest=$(mktemp)
trap 'rm -f "$guest"' EXIT
cat >"$guest" <<'EOF'
T=/sys/kernel/tracing
emit() { # emit NAME FILE
	echo "FTCTL-FIXTURE-BEGIN $1"
	base64 "$2"
	echo "FTCTL-FIXTURE-END $1"
}
cd $T
echo 64 > buffer_size_kb
echo ksys_read > set_graph_function
echo 1 > options/funcgraph-proc
echo 1 > options/funcgraph-abstime
echo 1 > options/function-fork
capture() { # capture NAME
	echo > trace
	echo function_graph > current_tracer
	sh -c "echo \$\$ > $T/set_ftrace_pid; dd if=/proc/version of=/dev/null bs=64 2>/dev/null"
	echo 0 > tracing_on
	echo > set_ftrace_pid
	cat trace > /tmp/$1.trace
	emit $1.trace /tmp/$1.trace
	for c in 0 1; do
		timeout 5 dd if=per_cpu/cpu$c/trace_pipe_raw of=/tmp/$1.cpu$c.raw bs=4096 2>/dev/null
		emit $1.cpu$c.raw /tmp/$1.cpu$c.raw
	done
	echo nop > current_tracer
	echo 1 > tracing_on
}
capture graph
echo 50 > tracing_thresh
echo 3 > max_graph_depth
capture graph.thresh
echo 0 > tracing_thresh
echo 0 > max_graph_depth
emit graph.saved_cmdlines saved_cmdlines
gzip -c /proc/kallsyms > /tmp/kallsyms.gz
emit kallsyms.gz /tmp/kallsyms.gz
ls options | grep funcgraph > /tmp/opts; emit graph.options /tmp/opts
EOF

for k in $kernels; do
	out=$top/stream/testdata/$k
	mkdir -p "$out"
	log=$(mktemp)
	tmp=$(mktemp -d)
	"$here/run.sh" --kernel "$k" --mode cmd --script "$guest" --timeout 400 --log "$log" >/dev/null
	names=$(grep -a -o 'FTCTL-FIXTURE-BEGIN [^ ]*' "$log" | awk '{print $2}')
	for n in $names; do
		awk -v n="$n" '$0 == "FTCTL-FIXTURE-BEGIN " n {f=1; next} $0 == "FTCTL-FIXTURE-END " n {f=0} f' "$log" |
			tr -d '\r' | base64 -d >"$tmp/$n"
	done
	{ cat "$tmp"/graph*.trace | grep -o '[A-Za-z_][A-Za-z0-9_.]*'; printf '%s\n' _text _stext _etext _end; } | sort -u >"$tmp/words"
	zcat "$tmp/kallsyms.gz" | awk 'NR==FNR {w[$1]=1; next} keep {print; keep=0} ($3 in w) {print; keep=1}' "$tmp/words" - |
		awk '!seen[$0]++' | gzip -9n >"$out/graph.kallsyms.gz"
	for f in "$tmp"/graph*; do
		case $f in *.raw) gzip -9n -c "$f" >"$out/$(basename "$f").gz" ;; *) cp "$f" "$out/" ;; esac
	done
	rm -rf "$tmp" "$log"
	echo "fixtures-graph.sh: $k: ${out#$top/}" >&2
done
