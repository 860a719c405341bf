#!/usr/bin/env bash
# fixtures.sh: capture the kernel text that ftctl's parsers are unit-tested on, from each VM
# kernel, into tracefs/testdata/<kernel series>/. Run with `make fixtures`; the results are
# checked in. The guest prints each file base64-encoded between markers on the serial console,
# so that nothing (tabs, carriage returns, escapes) is lost on the way.
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
emit README README
emit available_tracers available_tracers
emit buffer_size_kb buffer_size_kb
emit set_ftrace_filter.empty set_ftrace_filter
emit set_ftrace_notrace.empty set_ftrace_notrace
emit lockdown /sys/kernel/security/lockdown
emit mountinfo /proc/self/mountinfo
emit cpu0.stats per_cpu/cpu0/stats
# A kprobe the kernel rejects, and its error_log entry.
echo 'p:fty vfs_read %zz' >> kprobe_events 2>/dev/null
emit error_log.kprobe error_log
# A filter with functions and function commands; then with a :mod: pattern for a module that
# is not loaded too (the kernel then lists no commands: seen on 6.1 and 6.12).
echo 'vfs_read vfs_write' > set_ftrace_filter
echo 'do_exit:traceoff' >> set_ftrace_filter
echo 'vfs_read:traceon:3' >> set_ftrace_filter
emit set_ftrace_filter.commands set_ftrace_filter
echo '*:mod:nosuchmodule' >> set_ftrace_filter
emit set_ftrace_filter.mixed set_ftrace_filter
echo > set_ftrace_filter
echo '!do_exit:traceoff' >> set_ftrace_filter
echo '!vfs_read:traceon' >> set_ftrace_filter
# kprobe_events with probes of several forms.
echo 'p:kprobes/ftx vfs_read' >> kprobe_events
echo 'r:ftctl/ret vfs_read ret=$retval' >> kprobe_events
echo 'p:ftctl_42/open do_sys_openat2 dfd=%di' >> kprobe_events
echo 'p vfs_write' >> kprobe_events
emit kprobe_events kprobe_events
echo > kprobe_events
# Event formats, for the event filter checker: numbers, char arrays, __data_loc strings, char
# pointers, a field named like a generic one (cpu), cpumask_t (6.4+), and probes' fields.
echo 'p:ftctl/fo do_sys_openat2 dfd=%di path=+0(%si):string' >> kprobe_events
echo 'r:ftctl/ro do_sys_openat2 ret=$retval' >> kprobe_events
for e in sched/sched_switch sched/sched_process_exec sched/sched_wakeup irq/irq_handler_entry \
	workqueue/workqueue_queue_work syscalls/sys_enter_openat rcu/rcu_utilization \
	ipi/ipi_send_cpumask ftctl/fo ftctl/ro; do
	[ -e events/$e/format ] && emit "format.$(echo $e | tr / .)" events/$e/format
done
echo > kprobe_events
# The function index, with two modules loaded (their records come last, "name [module]").
insmod /lib/modules/ftctl/dummy.ko && insmod /lib/modules/ftctl/nls_utf8.ko
emit available_filter_functions available_filter_functions
echo 'dummy_*' > set_ftrace_filter
echo ':mod:nls_utf8' >> set_ftrace_filter
echo 'vfs_read' >> set_ftrace_filter
emit set_ftrace_filter.modules set_ftrace_filter
echo > set_ftrace_filter
EOF

for k in $kernels; do
	out=$top/tracefs/testdata/$k
	mkdir -p "$out"
	log=$(mktemp)
	"$here/run.sh" --kernel "$k" --mode cmd --script "$guest" --timeout 180 --log "$log" \
		--module drivers/net/dummy --module fs/nls/nls_utf8 >/dev/null
	names=$(grep -a -o 'FTCTL-FIXTURE-BEGIN [^ ]*' "$log" | awk '{print $2}')
	for n in $names; do
		awk -v n="$n" '$0 == "FTCTL-FIXTURE-BEGIN " n {f=1; next} $0 == "FTCTL-FIXTURE-END " n {f=0} f' "$log" |
			base64 -d >"$out/$n"
	done
	# The function index is large: keep it compressed.
	gzip -9nf "$out/available_filter_functions"
	uname_r=$(grep -a -o 'FTCTL-VM-BOOTED kernel=[^ ]*' "$log" | sed 's/.*kernel=//')
	echo "$uname_r" >"$out/KERNEL"
	echo "fixtures.sh: $k ($uname_r): $(echo $names | wc -w) files in ${out#$top/}" >&2
	rm -f "$log"
done
