#!/usr/bin/env bash
# fixtures-stream.sh: capture what each VM kernel writes on trace_pipe, into
# stream/testdata/<kernel series>/NAME.pipe, for the unit tests of ftctl's line parser (stream/).
# Run with `make fixtures`; the results are checked in. Each capture happens in its own instance
# (options are per trace array) or, for what only the top level has (function_graph's
# set_graph_function), at the top level; the function tracer is kept narrow (a few functions, and
# only the capture's own processes through set_ftrace_pid + function-fork), because under TCG
# tracing every function makes the guest crawl. Each file is read from trace_pipe after tracing
# was turned off, so that the read ends by itself (trace_pipe gives EOF once it has returned
# something and tracing is off), and travels base64-encoded over the serial console.
#
# usage: vm/fixtures-stream.sh [KERNEL...]   (default: 6.1 6.12)
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/.." && pwd)
kernels=${*:-6.1 6.12}

guest=$(mktemp)
trap 'rm -f "$guest"' EXIT
cat >"$guest" <<'EOF'
T=/sys/kernel/tracing
FUNCS='vfs_read ksys_read vfs_write ksys_write do_sys_openat2'
emit() { # emit NAME FILE
	echo "FTCTL-FIXTURE-BEGIN $1"
	base64 "$2"
	echo "FTCTL-FIXTURE-END $1"
}
# fresh NAME: a new instance, its buffer emptied, tracing on.
fresh() {
	I=$T/instances/$1
	mkdir $I
	echo > $I/trace
}
# capture NAME DIR: stop tracing in DIR, read its trace_pipe dry into NAME.pipe, then put the
# nop tracer back (only now: a tracer's init empties the buffer).
capture() {
	echo 0 > $2/tracing_on
	timeout 10 cat $2/trace_pipe > /tmp/$1.pipe
	emit $1.pipe /tmp/$1.pipe
	echo nop > $2/current_tracer
}
# workload DIR: a shell that DIR follows with set_ftrace_pid, reading and writing a little.
workload() {
	sh -c "echo \$\$ > $1/set_ftrace_pid; dd if=/proc/version of=/dev/null 2>/dev/null; echo hi > /tmp/wl; dd if=/tmp/wl of=/dev/null 2>/dev/null"
}
# functions DIR [OPTION=VALUE...]: the function tracer on FUNCS for the workload.
functions() {
	d=$1; shift
	for kv in "$@"; do echo "${kv#*=}" > $d/options/${kv%%=*}; done
	echo "$FUNCS" > $d/set_ftrace_filter
	echo 1 > $d/options/function-fork
	echo 1 > $d/set_ftrace_pid
	echo function > $d/current_tracer
	workload $d
	echo 0 > $d/tracing_on # before the tracer changes: a tracer's init empties the buffer
}

fresh fn; functions $I; capture function.default $I
fresh fo; functions $I sym-offset=1; capture function.sym-offset $I
fresh fa; functions $I sym-addr=1; capture function.sym-addr $I
fresh fb; functions $I sym-addr=1 sym-offset=1; capture function.sym-offset-addr $I
fresh fp; functions $I print-parent=0; capture function.noparent $I
fresh fi; functions $I irq-info=0; capture function.noirqinfo $I
fresh fc; echo counter > $I/trace_clock; functions $I; capture function.counter $I
fresh ft; echo x86-tsc > $I/trace_clock; functions $I; capture function.x86-tsc $I
fresh fu; echo uptime > $I/trace_clock; functions $I; capture function.uptime $I
fresh fm; echo mono > $I/trace_clock; functions $I; capture function.mono $I
# record-tgid: events recorded before the option is on have no tgid yet ("(-------)").
# (the tgid map is filled on sched_switch, hence the event)
fresh fg; functions $I; echo 1 > $I/tracing_on; echo 1 > $I/options/record-tgid
echo 1 > $I/events/sched/sched_switch/enable; functions $I; capture function.tgid $I
fresh fx; functions $I context-info=0; capture function.nocontext $I
fresh fl; functions $I latency-format=1; capture function.latency $I
# func-no-repeats: one function called again and again from the same place, folded by the
# kernel into "(repeats: N, last_ts: T)", printed when another call (here dd's do_exit) breaks the run. A tracer
# option: set once the tracer is current.
fresh fr
echo 'vfs_read do_sys_openat2 do_exit' > $I/set_ftrace_filter
echo 1 > $I/options/function-fork
echo 1 > $I/set_ftrace_pid
echo function > $I/current_tracer
echo 1 > $I/options/func-no-repeats
sh -c "echo \$\$ > $I/set_ftrace_pid; dd if=/dev/zero of=/dev/null bs=1 count=50 2>/dev/null; dd if=/proc/version of=/dev/null 2>/dev/null"
capture function.repeats $I
# The function tracer with a kernel stack after each call (func_stack_trace, a tracer option;
# seen on 6.12: nothing is recorded with it and set_ftrace_pid together, so no pid filter here).
fresh fs
echo vfs_read > $I/set_ftrace_filter
echo function > $I/current_tracer
echo 1 > $I/options/func_stack_trace
dd if=/proc/version of=/dev/null 2>/dev/null
capture function.stacktrace $I
# Events with kernel and user stacks (options/stacktrace, options/userstacktrace).
fresh es
echo 1 > $I/options/stacktrace
echo 1 > $I/options/userstacktrace
echo 1 > $I/events/sched/sched_process_exec/enable
sh -c true
capture event.stacktrace $I

# trace_marker: plain, no trailing newline, an escape sequence and a tab, an embedded newline,
# and from processes whose comm holds spaces, dashes, brackets, escapes and 15 bytes.
fresh mk
echo hello marker > $I/trace_marker
printf 'no newline' > $I/trace_marker
printf 'esc \033[31mred\033[0m tab\there\n' > $I/trace_marker
printf 'two\nlines\n' > $I/trace_marker
printf 'quote " backslash \\ del \177 c1 \302\233 bad \377 end\n' > $I/trace_marker
# A comm shows in the context only once the kernel saved it (on sched_switch): each renamed
# shell waits for a child so that it is switched out.
echo 1 > $I/events/sched/sched_switch/enable
for c in 'my-evil proc' 'x-1 [000] y' "$(printf 'e\033[31mx\ty')" 'fifteen-bytes-x' '-' '<idle>'; do
	(printf '%s' "$c" > /proc/self/comm; echo "comm test" > $I/trace_marker; /bin/true; echo "comm test 2" > $I/trace_marker)
done
echo 0 > $I/events/sched/sched_switch/enable
capture marker $I

# kprobes (definitions at the top level; enabled in the instance): a string argument, one that
# faults (dfd is a small negative number, not an address), $comm, an array, hex and signed
# types; a kretprobe; a probe event with a stacktrace trigger.
fresh kp
echo 'p:ftctlfx/open do_sys_openat2 dfd=%di:s32 path=+0(%si):string bad=+0(%di):string comm=$comm arr=+0(%si):u8[4] how=%dx:x64' >> $T/kprobe_events
echo 'r:ftctlfx/openret do_sys_openat2 ret=$retval:s64' >> $T/kprobe_events
echo 'p:ftctlfx/bare vfs_fstat' >> $T/kprobe_events
echo 1 > $I/events/ftctlfx/enable
cat /etc/motd > /dev/null
f=$(printf '/tmp/esc\033[31mname\ttab')
cat "$f" 2>/dev/null
cat '/tmp/quote" x=y' 2>/dev/null
cat '/tmp/sp ace' 2>/dev/null
(printf 'evil-comm x' > /proc/self/comm; cat /tmp/nonexistent 2>/dev/null)
stat /tmp > /dev/null
echo 0 > $I/events/ftctlfx/enable
capture kprobe $I
fresh ks
echo stacktrace > $I/events/ftctlfx/open/trigger
echo 1 > $I/events/ftctlfx/open/enable
cat /etc/motd > /dev/null
echo 0 > $I/events/ftctlfx/open/enable
echo '!stacktrace' > $I/events/ftctlfx/open/trigger
capture kprobe.stacktrace $I
# Tracepoint events, for the generic "name: text" form.
fresh tp
echo 1 > $I/events/sched/sched_process_fork/enable
echo 1 > $I/events/sched/sched_process_exec/enable
echo 1 > $I/events/sched/sched_process_exit/enable
sh -c 'true'
echo 0 > $I/events/sched/enable
capture tracepoint $I

# function_graph (set_graph_function is top-level only), three levels deep under vfs_read, without
# irqs: default options, then with the process and absolute time, then without cpu and duration.
# (busybox cat copies with sendfile, without vfs_read: the workloads read with dd.)
graph() { # graph NAME
	echo function_graph > $T/current_tracer
	dd if=/proc/version of=/dev/null 2>/dev/null
	capture $1 $T
	echo 1 > $T/tracing_on
}
echo > $T/trace
echo vfs_read > $T/set_graph_function
echo 3 > $T/max_graph_depth
echo 0 > $T/options/funcgraph-irqs
graph graph.default
echo 1 > $T/options/funcgraph-proc
echo 1 > $T/options/funcgraph-abstime
graph graph.proc-abstime
echo 0 > $T/options/funcgraph-proc
echo 0 > $T/options/funcgraph-abstime
echo 0 > $T/options/funcgraph-duration
echo 0 > $T/options/funcgraph-cpu
graph graph.bare
echo 1 > $T/options/funcgraph-duration
echo 1 > $T/options/funcgraph-cpu
echo 1 > $T/options/funcgraph-irqs
echo 0 > $T/max_graph_depth
echo > $T/set_graph_function

# A forced overrun: a tiny buffer filled many times over before anything reads it.
fresh ov
echo 4 > $I/buffer_size_kb
i=0
while [ $i -lt 2000 ]; do echo "overrun filler $i" > $I/trace_marker; i=$((i+1)); done
emit overrun.cpu0.stats $I/per_cpu/cpu0/stats
emit overrun.cpu1.stats $I/per_cpu/cpu1/stats
capture overrun $I

for d in $T/instances/*; do rmdir $d; done
echo > $T/kprobe_events
EOF

for k in $kernels; do
	out=$top/stream/testdata/$k
	mkdir -p "$out"
	log=$(mktemp)
	"$here/run.sh" --kernel "$k" --mode cmd --script "$guest" --timeout 600 --log "$log" >/dev/null
	names=$(grep -a -o 'FTCTL-FIXTURE-BEGIN [^ ]*' "$log" | awk '{print $2}')
	for n in $names; do
		awk -v n="$n" '$0 == "FTCTL-FIXTURE-BEGIN " n {f=1; next} $0 == "FTCTL-FIXTURE-END " n {f=0} f' "$log" |
			base64 -d >"$out/$n"
	done
	uname_r=$(grep -a -o 'FTCTL-VM-BOOTED kernel=[^ ]*' "$log" | sed 's/.*kernel=//')
	echo "$uname_r" >"$out/KERNEL"
	echo "fixtures-stream.sh: $k ($uname_r): $(echo $names | wc -w) files in ${out#$top/}" >&2
	rm -f "$log"
done
