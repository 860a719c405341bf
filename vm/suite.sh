#!/usr/bin/env bash
# suite.sh: run the vmtest integration suite on each kernel of the matrix, one boot per kernel,
# the boots in parallel. Needs build/ftctl and build/vmtest.test (make vm-bins). Prints each
# boot's console, then one summary line per kernel and a closing "vmtest: N passed, N failed,
# N skipped". Exits non-zero when a test fails, a VM dies or times out, a kernel cannot be had,
# or a kernel ran no test.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/.." && pwd)
kernels=${KERNELS:-6.1 6.12}
build=$top/build
status=0 passed=0 failed=0 skipped=0
# VMTEST_RUN=REGEX runs only the matching tests (go test -run), for quick iterations.
# VMTEST_TIMEOUT=DURATION overrides go test's -test.timeout in the guest (vm/init's default);
# VMTEST_VM_SECONDS=N the whole boot's limit (run.sh --timeout).
extra=()
if [ -n "${VMTEST_RUN:-}${VMTEST_TIMEOUT:-}" ]; then
	: >"$build/vmtest-args"
	[ -z "${VMTEST_RUN:-}" ] || printf -- '-test.run=%s\n' "$VMTEST_RUN" >>"$build/vmtest-args"
	[ -z "${VMTEST_TIMEOUT:-}" ] || printf -- '-test.timeout=%s\n' "$VMTEST_TIMEOUT" >>"$build/vmtest-args"
	extra=(--file "$build/vmtest-args:/etc/ftctl-test-args")
fi
# The guide's runbook profiles, which vmtest/profile_test.go applies.
for f in "$top"/docs/profiles/*.yaml; do
	extra+=(--file "$f:/etc/ftctl-profiles/$(basename "$f")")
done
# The JSON Schemas of -o json (docs/json), which the suite validates every JSON output against
# (vmtest/main_test.go, checkJSON).
for f in "$top"/docs/json/*.schema.json; do
	extra+=(--file "$f:/etc/ftctl-json/$(basename "$f")")
done
# Debian's trace-cmd (3.1.6) and its libraries, for the record/report interop tests (vmtest/
# record_test.go), when the host has it (.ci/run installs it). Its plugins are left out: trace-cmd
# report then prints every event by its print fmt, as the kernel does.
tracecmd=$(command -v trace-cmd || true)
if [ -n "$tracecmd" ]; then
	extra+=(--bin "$tracecmd:/usr/bin/trace-cmd")
fi
# Debian's Prometheus server, which scrapes `ftctl agent` over the guest's loopback in
# vmtest/agent_test.go, when the host has it (.ci/run installs it).
prometheus=$(command -v prometheus || true)
if [ -n "$prometheus" ]; then
	extra+=(--bin "$prometheus:/usr/bin/prometheus")
fi
# The reboot test (vmtest/flightboot_test.go) boots a kernel of REBOOT_KERNELS once more, after
# its suite, with a persistent ring buffer's parameters; `reboot -f` warm-resets that qemu and
# its second boot reads the ring (run.sh --reboot). Skipped when VMTEST_RUN selects no reboot
# test. Its console is build/vmtest-KERNEL-reboot.log, counted with the kernel's.
reboot_kernels=${REBOOT_KERNELS:-6.12}
reboot_params="nokaslr reserve_mem=16M:4096:boot trace_instance=ftctl-owned-boot@boot"
reboot_run=1
if [ -n "${VMTEST_RUN:-}" ] && ! echo TestFlightRebootBefore | grep -q -E -- "$VMTEST_RUN"; then
	reboot_run=
fi
printf -- '-test.run=^TestFlightReboot(Before|After)$\n' >"$build/vmtest-reboot-args"
reboot_extra=(--file "$build/vmtest-reboot-args:/etc/ftctl-test-args")
[ -z "$tracecmd" ] || reboot_extra+=(--bin "$tracecmd:/usr/bin/trace-cmd")
for f in "$top"/docs/json/*.schema.json; do # -o json is validated in this boot too
	reboot_extra+=(--file "$f:/etc/ftctl-json/$(basename "$f")")
done
summary=()
# The kernels boot in parallel (single-threaded TCG: one host core each); their consoles go to
# build/vmtest-KERNEL.log and are printed, one after the other, when all are done.
declare -A pid rc secs
for k in $kernels; do # fetch first, one at a time (apt must not run twice at once)
	"$here/kernel.sh" "$k" >/dev/null || { echo "vmtest: cannot get the $k kernel" >&2; exit 1; }
done
for k in $kernels; do
	(
		start=$(date +%s%N)
		"$here/run.sh" --kernel "$k" --mode test --timeout "${VMTEST_VM_SECONDS:-3900}" --log "$build/vmtest-$k.log" \
			--file "$build/ftctl:/bin/ftctl" --file "$build/vmtest.test:/bin/vmtest.test" \
			--file "$top/README.md:/etc/ftctl-README.md" --file "$top/docs/guide.md:/etc/ftctl-guide.md" \
			--file "$build/uprobetarget:/bin/uprobetarget" --file "$build/uprobetarget-pie:/bin/uprobetarget-pie" \
			--module drivers/net/dummy --module fs/nls/nls_utf8 --module lib/crc16 --module fs/mbcache --module fs/jbd2/jbd2 --module fs/ext4/ext4 "${extra[@]+"${extra[@]}"}" \
			>/dev/null 2>"$build/vmtest-$k.runner"
		r=$?
		rm -f "$build/vmtest-$k-reboot.log"
		if [ -n "$reboot_run" ] && [[ " $reboot_kernels " == *" $k "* ]]; then
			"$here/run.sh" --kernel "$k" --mode test --timeout 600 --log "$build/vmtest-$k-reboot.log" --reboot "$reboot_params" \
				--file "$build/ftctl:/bin/ftctl" --file "$build/vmtest.test:/bin/vmtest.test" \
				--module crypto/crc32c_generic --module lib/crc16 --module fs/mbcache --module fs/jbd2/jbd2 --module fs/ext4/ext4 --module drivers/block/virtio_blk \
				"${reboot_extra[@]}" >/dev/null 2>>"$build/vmtest-$k.runner" || r=1
		fi
		echo "$r $(( ($(date +%s%N) - start) / 1000000 ))" >"$build/vmtest-$k.status"
	) &
	pid[$k]=$!
done
for k in $kernels; do
	wait "${pid[$k]}"
	read -r rc[$k] secs[$k] <"$build/vmtest-$k.status"
done
for k in $kernels; do
	log=$build/vmtest-$k.log
	echo "===== kernel $k: console ====="
	cat "$log"
	logs=("$log")
	if [ -f "$build/vmtest-$k-reboot.log" ]; then
		echo "===== kernel $k: console of the reboot test's boots ====="
		cat "$build/vmtest-$k-reboot.log"
		logs+=("$build/vmtest-$k-reboot.log")
	fi
	cat "$build/vmtest-$k.runner" >&2
	p=$(cat "${logs[@]}" | grep -a -c -E '^--- PASS: ')
	f=$(cat "${logs[@]}" | grep -a -c -E '^--- FAIL: ')
	s=$(cat "${logs[@]}" | grep -a -c -E '^--- SKIP: ')
	boot=$(grep -a -o 'FTCTL-VM-BOOTED kernel=[^ ]* uptime=[0-9.]*' "$log" | sed 's/.*uptime=//')
	done_at=$(grep -a -o 'FTCTL-VM-RESULT rc=[0-9]* uptime=[0-9.]*' "$log" | sed 's/.*uptime=//')
	passed=$((passed + p)) failed=$((failed + f)) skipped=$((skipped + s))
	ms=${secs[$k]}
	line="kernel $k ($(grep -a -o 'vmtest: kernel .*' "$log" | head -n1 | sed 's/vmtest: kernel //')): $p passed, $f failed, $s skipped; boot to /init ${boot:-?}s, guest done at ${done_at:-?}s, whole run $((ms / 1000)).$(printf %03d $((ms % 1000)))s"
	if [ "${rc[$k]}" != 0 ] || [ "$p" = 0 ]; then
		status=1
		line="$line: FAILED (exit ${rc[$k]})"
	fi
	summary+=("$line")
done
# What failed, with its output, last: a CI log shows its end.
for k in $kernels; do
	for log in "$build/vmtest-$k.log" "$build/vmtest-$k-reboot.log"; do
		if [ -f "$log" ] && grep -a -q -E '^--- FAIL: |^panic: |test timed out after' "$log"; then
			echo
			echo "===== kernel $k: what failed ($(basename "$log")) ====="
			awk -v max=80 -f "$here/failures.awk" "$log"
		fi
	done
done
echo
printf '%s\n' "${summary[@]}"
echo "vmtest: $passed passed, $failed failed, $skipped skipped"
exit $status
