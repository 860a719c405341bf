# failures.awk: from a go test -v console log, print the output of each top-level test that
# failed (its "=== RUN" line to its "--- FAIL" line and the subtests' results after it), at most
# the last `max` lines of each, so that the end of a long CI log names what failed and why.
# Usage: awk -v max=80 -f vm/failures.awk build/vmtest-KERNEL.log
BEGIN { if (max == "") max = 80 }
/^=== RUN   Test[^\/]*$/ { n = 0; name = $3; collecting = 1 }
collecting { buf[n++] = $0 }
/^--- (PASS|SKIP): Test[^\/]*/ { collecting = 0; n = 0 }
/^--- FAIL: Test[^\/]*/ {
	collecting = 0
	print "----- " $3 " -----"
	start = n > max ? n - max : 0
	if (start > 0) print "[... " start " earlier lines]"
	for (i = start; i < n; i++) print buf[i]
	n = 0
}
# a panic or timeout ends the log without a --- FAIL line
/^panic: |^FAIL	|test timed out after/ && collecting {
	print "----- " name " (ended: " $0 ") -----"
	start = n > max ? n - max : 0
	for (i = start; i < n; i++) print buf[i]
	collecting = 0; n = 0
}
