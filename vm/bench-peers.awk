#!/usr/bin/awk -f
# bench-peers.awk: the figures of vm/bench-peers.sh from its guest's console lines. Per condition,
# the median of the rounds and their spread (min-max) of: calls counted / calls made; the
# workload's loop time / none's in the same round; the tool's CPU seconds (the workload's own
# taken out, and the shell's, measured by none) and per million calls; for latency, the median
# log2 bucket (LE: (LE/2, LE] µs) and its distance in buckets from the bucket of the reference's
# median duration (function_graph's, the same round).
function med(s,    a, n, i, j, t) {
	n = split(s, a, " ")
	if (!n) return "-"
	for (i = 1; i <= n; i++) for (j = i + 1; j <= n; j++) if (a[j] + 0 < a[i] + 0) { t = a[i]; a[i] = a[j]; a[j] = t }
	return (n % 2) ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2
}
function spread(s, fmt,    a, n, i, lo, hi) {
	n = split(s, a, " ")
	if (!n) return ""
	lo = hi = a[1]
	for (i = 2; i <= n; i++) { if (a[i] + 0 < lo + 0) lo = a[i]; if (a[i] + 0 > hi + 0) hi = a[i] }
	return sprintf("(" fmt "-" fmt ")", lo, hi)
}
function lg(x) { return log(x) / log(2) }
$1 == "BENCHINFO" && $2 == "kernel" { calls = $7 }
$1 == "BENCHRUN" {
	c = $2; r = $3; seen[c] = 1; rounds[r] = 1
	delete v; for (i = 4; i < NF; i++) v[$i] = $(i + 1)
	secs[c, r] = v["secs"]; cpuall[c, r] = v["cpuall"]; self[c, r] = v["cpu"]; made[c, r] = v["ops"]
	if (v["t0"] != "") { arm[c, r] = (v["t0"] - v["start"]) / 1e9; done[c, r] = (v["end"] - v["t1"]) / 1e9 }
	next
}
$1 == "BENCHCALLS" { cnt[$2, $3] = $4; if ($5 == "toolcpu") tcpu[$2, $3] = $6; if ($5 == "overrun") over[$2, $3] = $6; next }
$1 == "BENCHB" { b[$2, $3, $4 + 0] += $5; tot[$2, $3] += $5; les[$2, $3] = les[$2, $3] " " $4; next }
$1 == "BENCHREF" { ref[$2, $3] = $5; next }
$1 == "BENCHLOAD" { load[$2] = load[$2] " " $4; next }
END {
	order = "none graph lat-ftctl lat-raw lat-perf none0 graph0 lat0-ftctl lat0-raw lat0-perf cnt-ftctl cnt-base cnt2-ftctl cnt2-base cnt-kprof cnt-fstream cnt-perfstat cnt2-perfstat cnt-perftrace cnt-tracecmd hist-ftctl hist-tracecmd hist-raw lp0-floor lp0-ts lp0-retsoft lp0-delta lp0-act lp0-full lp0-ns lpk0-floor lpk0-full"
	nc = split(order, O, " ")
	printf "%-14s %-22s %-20s %-16s %-20s %-11s %-18s %-18s %s\n", "condition", "counted/made", "workload time/none", "µs/call added", "tool CPU s", "CPU s/Mcall", "armed after s", "done after s", "median bucket (µs) vs graph's"
	for (i = 1; i <= nc; i++) {
		c = O[i]
		if (!seen[c]) continue
		R = ""; C = ""; P = ""; M = ""; D = ""; LE = ""; A = ""; Z = ""; U = ""
		# conditions on the getppid workload (none0 graph0 lat0-*) against its own baseline
		base = (c ~ /0$|0-/) ? "none0" : "none"; g = (c ~ /0$|0-/) ? "graph0" : "graph"
		for (r in rounds) {
			if (!((c, r) in secs) || !((base, r) in secs)) continue
			R = R " " secs[c, r] / secs[base, r]
			if (c != base) U = U " " 1e6 * (secs[c, r] - secs[base, r]) / made[c, r]
			if ((c, r) in arm && c != base) { A = A " " arm[c, r] - arm[base, r]; Z = Z " " done[c, r] - done[base, r] }
			if ((c, r) in tcpu) t = tcpu[c, r]
			else t = (cpuall[c, r] - self[c, r]) - (cpuall[base, r] - self[base, r])
			if (c != base) { C = C " " t; P = P " " 1e6 * t / made[c, r] }
			if ((c, r) in cnt) M = M " " cnt[c, r] / made[c, r]
			if (tot[c, r] > 0 && ((g, r) in ref)) {
				# the median bucket: the first LE whose cumulative count reaches half
				n = split(les[c, r], L, " ")
				for (x = 1; x <= n; x++) for (y = x + 1; y <= n; y++) if (L[y] + 0 < L[x] + 0) { z = L[x]; L[x] = L[y]; L[y] = z }
				h = 0
				for (x = 1; x <= n; x++) { if (x > 1 && L[x] == L[x - 1]) continue; h += b[c, r, L[x] + 0]; if (h >= tot[c, r] / 2) break }
				le = L[x]; rl = 1; while (rl < ref[g, r]) rl *= 2
				LE = LE " " le; D = D " " lg(le / rl)
			}
		}
		printf "%-14s %-22s %-20s %-16s %-20s %-11s %-18s %-18s %s\n", c,
			(M == "" ? "-" : sprintf("%.4f %s", med(M), spread(M, "%.4f"))),
			sprintf("%.2f %s", med(R), spread(R, "%.2f")),
			(U == "" ? "-" : sprintf("%.1f %s", med(U), spread(U, "%.1f"))),
			(C == "" ? "-" : sprintf("%.2f %s", med(C), spread(C, "%.2f"))),
			(P == "" ? "-" : sprintf("%.2f", med(P))),
			(A == "" ? "-" : sprintf("%.2f %s", med(A), spread(A, "%.2f"))),
			(Z == "" ? "-" : sprintf("%.2f %s", med(Z), spread(Z, "%.2f"))),
			(c == g ? sprintf("median duration %s µs %s", med(refs(g)), spread(refs(g), "%.2f")) : (LE == "" ? "" : sprintf("LE %s %s, buckets above graph's: %s %s", med(LE), spread(LE, "%g"), med(D), spread(D, "%.1f"))))
	}
	# ftctl against each peer, round by round (the two ran a few seconds apart: less of the
	# host's drift than in two ratios to none): the workload's loop time under ftctl / under the peer
	np = split("lat-ftctl/lat-raw lat0-ftctl/lat0-raw lat0-ftctl/lp0-full lp0-ns/lp0-full lpk0-full/lp0-full lpk0-floor/lp0-floor lat-ftctl/lat-perf lat0-ftctl/lat0-perf cnt-ftctl/cnt-perfstat cnt-kprof/cnt-perfstat cnt-ftctl/cnt-base cnt-base/cnt-perfstat cnt2-ftctl/cnt2-perfstat cnt2-ftctl/cnt2-base cnt2-base/cnt2-perfstat cnt-ftctl/cnt-tracecmd cnt-ftctl/cnt-perftrace hist-ftctl/hist-tracecmd hist-ftctl/hist-raw", PR, " ")
	for (i = 1; i <= np; i++) {
		split(PR[i], ab, "/"); Q = ""
		for (r in rounds) if ((ab[1], r) in secs && (ab[2], r) in secs && secs[ab[2], r] > 0) Q = Q " " secs[ab[1], r] / secs[ab[2], r]
		if (Q != "") printf "workload time under %s / under %s: %.2f %s\n", ab[1], ab[2], med(Q), spread(Q, "%.2f")
	}
	for (k in over) if (over[k] > 0) { split(k, K, SUBSEP); printf "%s round %s: the kernel overwrote %s events\n", K[1], K[2], over[k] }
	for (c in load) if (c == "hist-raw" || c == "none") printf "guest load after %s:%s\n", c, load[c]
}
function refs(g,    s, k, K) { s = ""; for (k in ref) { split(k, K, SUBSEP); if (K[1] == g) s = s " " ref[k] }; return s }
