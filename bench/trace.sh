#!/bin/sh
# SPDX-License-Identifier: MIT
# bench/trace.sh SHARDLAB SCRATCH_DIR - the trace writer's cost: a 64-device
# 16-layer training dry run with and without --trace, peak RSS and wall time
# of the whole process, best of 5 each (the machine is shared: noise only
# slows a run down).  Prints a RESULTS.md section on stdout.  Run by
# bench/run.sh; runs alone as well.  Target: with the trace within 1.5x the
# RSS and 2x the wall time of the run without.
set -u

SL=${1:?usage: trace.sh SHARDLAB SCRATCH_DIR}
D=${2:?usage: trace.sh SHARDLAB SCRATCH_DIR}
ARGS="train --dry-run --tp=4 --pp=4 --dp=4 --layers=16 --steps=1 --devices-per-node=8"
TR=$D/bench-trace.json

. "$(dirname "$0")/measure.sh"

# best (lowest RSS, lowest wall) of 5 runs of "$@"
best() {
	i=0
	out=
	while [ $i -lt 5 ]; do
		i=$((i + 1))
		m=$(measure "$D/bench-trace.time" "$@") || return 1
		out="$out$m
"
	done
	printf '%s' "$out" | awk 'NR == 1 || ($1 != "n/a" && $1 < r) { r = $1 } NR == 1 || $2 < w { w = $2 }
		END { print r, w }'
}

none=$(best "$SL" $ARGS) || none="failed failed"
plain=$(best "$SL" $ARGS --trace="$TR") || plain="failed failed"
bytes=$(wc -c <"$TR" 2>/dev/null || echo 0)
events=$(grep -o '"ph":"X"' "$TR" 2>/dev/null | wc -l)
gz=$(best "$SL" $ARGS --trace="$TR.gz") || gz="failed failed"
gzbytes=$(wc -c <"$TR.gz" 2>/dev/null || echo 0)
rm -f "$TR" "$TR.gz" "$D/bench-trace.time"

echo
echo "## 10. The trace writer"
echo
echo "\`shardlab $ARGS\`, peak RSS and wall time of"
echo "the whole process, best of 5; the trace has $events slices ($bytes bytes; .gz: $gzbytes bytes)."
echo "Target: with --trace within 1.5x the RSS and 2x the wall time of the run without."
echo
echo "| run | peak RSS (KB) | wall (s) | RSS ratio | wall ratio | result |"
echo "|---|---|---|---|---|---|"
printf '%s\n%s\n%s\n' "none $none" "trace.json $plain" "trace.json.gz $gz" | awk '
	NR == 1 { r0 = $2; w0 = $3; print "| no trace | " $2 " | " $3 " | | | |"; next }
	{
		rr = (r0 > 0 && $2 > 0) ? $2 / r0 : 0; wr = (w0 > 0) ? $3 / w0 : 0
		ok = (rr == 0 || rr <= 1.5) && wr <= 2 ? "PASS" : "FAIL"
		printf "| --trace=%s | %s | %s | %s | %.2f | %s |\n", $1, $2, $3,
			rr ? sprintf("%.2f", rr) : "n/a", wr, ok
	}'
