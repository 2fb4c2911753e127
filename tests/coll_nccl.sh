#!/bin/sh
# SPDX-License-Identifier: MIT
# `shardlab coll` read the way nccl-tests' output is read: lines starting
# with '#' are comments, a row is nccl-tests' 13 whitespace-separated
# fields (size $1, count $2, type $3, redop $4, root $5, then out of place
# time $6 in us, algbw $7 and busbw $8 in GB/s, #wrong $9, and in place
# the same in $10 to $13), with --predicted a 14th (the prediction, us),
# the header and units rows name them, and the footer says
# "# Out of bounds values : N OK" and "# Avg bus bandwidth    : X".  The
# figures are checked against the alpha-beta closed forms computed here
# (emulated times are deterministic), and --format=csv against the text.
# make check sets $SHARDLAB.
set -u
bin=${SHARDLAB:?}
command -v awk >/dev/null || { echo "SKIP: no awk"; exit 77; }
dir=$(mktemp -d) || exit 1
trap 'rm -rf "$dir"' EXIT
fails=0
fail() {
	echo "FAIL: $*"
	fails=$((fails + 1))
}

# check OP P FACTOR ALPHA_S BW_BPS WANT_ROWS ARGS...: run, parse, compare.
# FACTOR is nccl-tests' bus factor, the time formula is picked by OP.
check() {
	op=$1 p=$2 bus=$3 a=$4 b=$5 want_rows=$6
	shift 6
	if ! "$bin" coll --op="$op" --devices="$p" --bandwidth="${b}B/s" --latency="${a}s" --predicted "$@" \
		>"$dir/out" 2>"$dir/err"; then
		fail "coll --op=$op $*: status $?: $(cat "$dir/err")"
		return
	fi
	awk -v op="$op" -v p="$p" -v bus="$bus" -v a="$a" -v b="$b" -v want_rows="$want_rows" '
	function abs(x) { return x < 0 ? -x : x }
	function bad(msg) { print "FAIL: " op " p=" p ": " msg; errs++ }
	# The expected time of a size, in seconds (uniform links).
	function want_t(n,    q) {
		if (op == "allreduce") return 2 * (p - 1) * a + 2 * (p - 1) / p * n / b
		if (op == "allgather") return (p - 1) * a + (p - 1) / p * n / b
		if (op == "alltoall") { q = int(n / 4 / p); return (p - 1) * (a + q * 4 / b) }
		if (op == "sendrecv") return a + n / b
		return -1
	}
	/^#/ {
		if ($0 ~ /^# +out-of-place +in-place *$/) places++
		if ($0 ~ /^# +size +count +type +redop +root +time +algbw +busbw +#wrong +time +algbw +busbw +#wrong +predicted *$/) hdr++
		if ($0 ~ /^# +\(B\) +\(elements\) +\(us\) +\(GB\/s\) +\(GB\/s\) +\(us\) +\(GB\/s\) +\(GB\/s\) +\(us\) *$/) units++
		if ($0 ~ /^# Out of bounds values : [0-9]+ (OK|FAILED)$/) { oob = $7; oobw = $8 }
		if ($0 ~ /^# Avg bus bandwidth    : /) { avg = $6; navg++ }
		next
	}
	NF == 0 { next }
	{
		rows++
		if (NF != 14) { bad("row " rows " has " NF " fields: " $0); next }
		# In place: the same run, the same figures.
		for (i = 6; i <= 9; i++)
			if ($(i + 4) != $i) bad("size " $1 ": in place $" (i + 4) " " $(i + 4) ", out of place " $i)
		size = $1; count = $2
		if (size != count * 4) bad("size " size " is not count " count " x 4")
		if ($3 != "float") bad("type " $3)
		redop = (op == "allreduce" || op == "reducescatter" || op == "reduce") ? "sum" : "none"
		if ($4 != redop) bad("redop " $4 ", want " redop)
		if ($5 != -1) bad("root " $5)
		t = want_t(size) * 1e6
		# nccl-tests prints 2 decimals under 100 us, 1 under 10000 us.
		tol = t < 100 ? 0.006 : t < 10000 ? 0.06 : 0.6
		if (abs($6 - t) > tol) bad("size " size ": time " $6 " us, want " t)
		if (abs($14 - t) > tol) bad("size " size ": predicted " $14 " us, want " t)
		algbw = size / (t / 1e6) / 1e9
		if (abs($7 - algbw) > 0.006 + 1e-3 * algbw) bad("size " size ": algbw " $7 ", want " algbw)
		if (abs($8 - algbw * bus) > 0.006 + 1e-3 * algbw) bad("size " size ": busbw " $8 ", want " algbw * bus)
		if ($9 != 0) bad("size " size ": #wrong " $9)
		sizes = sizes " " size
		sum += $8
	}
	END {
		if (places != 1) bad("the out-of-place and in-place row is missing or wrong")
		if (hdr != 1) bad("the column names row is missing or wrong")
		if (units != 1) bad("the units row is missing or wrong")
		if (rows != want_rows) bad(rows " rows, want " want_rows)
		if (oob != "0" || oobw != "OK") bad("footer: out of bounds " oob " " oobw)
		if (navg != 1 || abs(avg - sum / rows) > 1e-3 * (sum / rows) + 0.01)
			bad("footer: avg bus bandwidth " avg ", the rows average " sum / rows)
		print "sizes" sizes
		exit errs > 0
	}' "$dir/out" >"$dir/parsed" || { cat "$dir/parsed"; fail "coll --op=$op $*"; return; }
	echo "ok: coll --op=$op --devices=$p $*: $(cat "$dir/parsed")"
}

# -b/-e/-f: 8 B to 128 MiB by 4: 13 sizes.
check allreduce 4 1.5 2e-6 100e9 13 -b 8 -e 128M -f 4
check allreduce 8 1.75 1e-6 50e9 3 -b 1M -e 4M
check allgather 5 0.8 3e-6 25e9 4 --minbytes=40K --maxbytes=320K
# alltoall rounds to p blocks (1 MiB / 6 devices); sendrecv's bus factor is 1.
check alltoall 6 0.83333333 2e-6 100e9 3 -b 1M -e 4M
check sendrecv 4 1 2e-6 100e9 2 -b 64K -e 128K
# -n: the time per iteration is the same as one iteration's.
check allreduce 4 1.5 2e-6 100e9 1 -b 16M -e 16M -n 5

# Sizes: -f 4 from 8 gives 8 32 128 ...
"$bin" coll --devices=2 -b 8 -e 512 -f 4 | awk '!/^#/ {s = s " " $1} END {exit s != " 8 32 128 512"}' ||
	fail "-b 8 -e 512 -f 4 does not give 8 32 128 512"

# Without --predicted, nccl-tests' 13 columns exactly, as its parsers count
# them ($8 and $12 the two busbw).
[ "$("$bin" coll --devices=4 -b 1M -e 4M | awk '!/^#/ {print NF}' | sort -u)" = 13 ] ||
	fail "rows without --predicted do not all have 13 fields"
"$bin" coll --devices=4 -b 4M -e 4M | awk '!/^#/ {exit $8 != $12 || $8 <= 0}' ||
	fail "\$8 and \$12 are not the same busbw"

# --format=csv: a header with the JSON names, the same rows as the text.
"$bin" coll --devices=4 -b 1M -e 8M --format=csv >"$dir/csv" || fail "--format=csv status $?"
"$bin" coll --devices=4 -b 1M -e 8M >"$dir/txt"
awk -F, 'NR == 1 { if ($0 != "size_bytes,count,type,redop,root,emulated_time_s,algbw_bytes_per_s,busbw_bytes_per_s,wrong,predicted_s") exit 1; next }
	NF != 10 { exit 1 } { print $1, int($6 * 1e8 + 0.5) }' "$dir/csv" >"$dir/csv.rows" || fail "csv header or row"
awk '!/^#/ { print $1, int($6 * 100 + 0.5) }' "$dir/txt" >"$dir/txt.rows"
cmp -s "$dir/csv.rows" "$dir/txt.rows" || { fail "csv and text rows differ"; diff "$dir/csv.rows" "$dir/txt.rows"; }

# --human keeps the table in units.
"$bin" coll --devices=2 --bytes=1MiB --human | grep -q '1.00 MiB' || fail "--human"

[ $fails = 0 ] || exit 1
