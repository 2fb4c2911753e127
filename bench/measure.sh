# SPDX-License-Identifier: MIT
# bench/measure.sh - sourced by bench/trace.sh and bench/scale.sh.
# measure FILE CMD ARGS...: "KB seconds" of one run of CMD (peak RSS and
# wall time of the whole process): GNU time when there is one (its report
# goes to FILE), else the wall clock alone (RSS then reads n/a).
measure() {
	mf=$1
	shift
	if [ -x /usr/bin/time ] && /usr/bin/time -f '%M %e' true >/dev/null 2>&1; then
		/usr/bin/time -o "$mf" -f '%M %e' "$@" >/dev/null 2>&1 || return 1
		cat "$mf"
	else
		t0=$(date +%s)
		"$@" >/dev/null 2>&1 || return 1
		t1=$(date +%s)
		echo "n/a $((t1 - t0))"
	fi
}
