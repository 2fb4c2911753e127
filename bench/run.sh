#!/bin/sh
# SPDX-License-Identifier: MIT
# bench/run.sh BUILD_DIR SRC_DIR - run the benchmarks (make bench) and write
# SRC_DIR/bench/RESULTS.md.  The raw lines go to BUILD_DIR/bench/results.raw.
#
# Open MPI (MPICC, MPIRUN) and hyperfine are optional: without them their
# columns say why they are empty.  OPENBLAS_NUM_THREADS and OPENBLAS_CORETYPE
# come from the Makefile.
set -u

B=${1:?usage: run.sh BUILD_DIR SRC_DIR}
S=${2:?usage: run.sh BUILD_DIR SRC_DIR}
OUT=$S/bench/RESULTS.md
RAW=$B/bench/results.raw
LOG=$B/bench/results.log
BE=$B/bench/bench_engine
SL=$B/shardlab
MPICC=${MPICC:-}
MPIRUN=${MPIRUN:-}

# Sizes: 1 MiB to 64 MiB; each timed loop lasts about SECS, REPS times.
MIN=1048576
MAX=67108864
SECS=0.1
REPS=5
PS="2 4 8"

mkdir -p "$B/bench"
: >"$RAW"
: >"$LOG"

T0=$(date +%s)
step() { printf 'bench: [%3ds] %s\n' "$(($(date +%s) - T0))" "$*" >&2; }
fail() { printf 'bench: %s (see %s)\n' "$*" "$LOG" >&2; exit 1; }

[ -x "$BE" ] || fail "$BE is not built"

date -u '+date %Y-%m-%d %H:%M UTC' >>"$RAW"
if rev=$(git -C "$S" rev-parse --short HEAD 2>/dev/null); then
	dirty=$(git -C "$S" status --porcelain --untracked-files=no 2>/dev/null | grep -v 'bench/RESULTS.md' | head -1)
	[ -n "$dirty" ] && rev="$rev (with uncommitted changes)"
	echo "commit $rev" >>"$RAW"
fi
"$BE" info >>"$RAW" 2>>"$LOG" || fail "info failed"
echo "config $REPS $SECS" >>"$RAW"

step "throttle accuracy (about 15 s)"
"$BE" throttle 3 >>"$RAW" 2>>"$LOG" || fail "throttle failed"

step "GEMM efficiency (about 20 s)"
"$BE" gemm 3 1024 4096 4096 4 >>"$RAW" 2>>"$LOG" || fail "gemm failed"

# Open MPI: built and run only when both tools are there.
MPI_BIN=$B/bench/mpi_coll
MPI_FLAGS="--oversubscribe"
[ "$(id -u)" = 0 ] && MPI_FLAGS="$MPI_FLAGS --allow-run-as-root"
mpi=no
if [ -n "$MPICC" ] && [ -n "$MPIRUN" ] && [ -x "$MPICC" ] && [ -x "$MPIRUN" ]; then
	if "$MPICC" -O2 -o "$MPI_BIN" "$S/bench/mpi_coll.c" >>"$LOG" 2>&1; then
		mpi=yes
	else
		echo "note mpi mpicc could not build bench/mpi_coll.c" >>"$RAW"
	fi
else
	echo "note mpi Open MPI (mpicc, mpirun) is not installed" >>"$RAW"
fi

step "unpaced collectives, shardlab (about 40 s)"
# shellcheck disable=SC2086 # PS is a list of rank counts
"$BE" coll "$MIN" "$MAX" "$SECS" "$REPS" $PS >>"$RAW" 2>>"$LOG" || fail "coll failed"

if [ "$mpi" = yes ]; then
	step "unpaced collectives, Open MPI (about 40 s)"
	for p in $PS; do
		# shellcheck disable=SC2086
		if ! "$MPIRUN" $MPI_FLAGS -np "$p" "$MPI_BIN" sweep "$MIN" "$MAX" "$SECS" "$REPS" \
			>>"$RAW" 2>>"$LOG"; then
			echo "note mpi mpirun -np $p failed" >>"$RAW"
		fi
	done
fi

# Start-up: the whole process.  shardlab's coll subcommand may not exist yet:
# a binary that prints no table for it is not timed.
step "start-up"
STARTUP_ARGS="coll --op=allreduce --devices=4 --bytes=1MiB"
time_cmd() { # label runs command...
	label=$1
	runs=$2
	shift 2
	if command -v hyperfine >/dev/null 2>&1; then
		csv=$B/bench/hyperfine.csv
		if hyperfine -N --style none --warmup 2 --runs "$runs" --export-csv "$csv" "$*" \
			>>"$LOG" 2>&1; then
			# command,mean,stddev,median,user,system,min,max
			awk -F, -v l="$label" -v n="$runs" \
				'NR == 2 { printf "startup %s hyperfine %d %s %s\n", l, n, $4, $7 }' \
				"$csv" >>"$RAW"
			return
		fi
	fi
	if t=$("$BE" time "$runs" "$@" 2>>"$LOG"); then
		echo "$t" | awk -v l="$label" '{ printf "startup %s bench_engine %s %s %s\n", l, $2, $3, $4 }' \
			>>"$RAW"
	else
		echo "note startup $label could not be timed" >>"$RAW"
	fi
}
# shellcheck disable=SC2086
if out=$("$SL" $STARTUP_ARGS 2>>"$LOG") && echo "$out" | grep -qiE 'allreduce|busbw'; then
	# shellcheck disable=SC2086
	time_cmd shardlab 20 "$SL" $STARTUP_ARGS
	# As a user's shell runs it, with no OpenBLAS variables: the program sets
	# the core type and re-executes itself once (src/blasenv.c).
	# shellcheck disable=SC2086
	time_cmd shardlab_reexec 20 env -u OPENBLAS_CORETYPE -u OPENBLAS_NUM_THREADS "$SL" $STARTUP_ARGS
	# The fixed part: loading the program and OpenBLAS, no devices.
	time_cmd shardlab_version 20 "$SL" --version
else
	echo "note startup shardlab: this build has no working 'coll' subcommand yet" >>"$RAW"
fi
if [ "$mpi" = yes ]; then
	# shellcheck disable=SC2086
	time_cmd mpi 5 "$MPIRUN" $MPI_FLAGS -np 4 "$MPI_BIN" once 1048576
fi

step "engine overhead: 64 devices, 64 MiB all-reduce (up to a minute: 4 GiB of fresh pages)"
"$BE" memory 64 67108864 >>"$RAW" 2>>"$LOG" || fail "memory failed"
"$BE" info | grep '^info load' | sed 's/^info load/info load_end/' >>"$RAW"

step "writing $OUT"
awk -f "$S/bench/report.awk" "$RAW" >"$OUT.tmp" || fail "report failed"
mv "$OUT.tmp" "$OUT"

# The interactive view's costs (issue 4), measured through tmux; each line
# is "name value unit" as tests/screen/bench.sh prints it.
step "the interactive view (about a minute)"
tui=$(sh "$S/tests/screen/bench.sh" "$SL" 2>>"$LOG")
{
	echo
	echo "## 6. The interactive view"
	echo
	echo "tests/screen/bench.sh through tmux. Targets: the first complete frame in under 200 ms;"
	echo "under 1% of a core while paused for 10 s (it must block on input); under 10% of a core"
	echo "for the UI thread while animating at the default frame rate (device threads, which"
	echo "really compute and copy, reported apart)."
	echo
	echo '```'
	echo "$tui"
	echo '```'
} >>"$OUT"
# The layout planner (issue 7): wall and CPU seconds of 'shardlab plan' on
# real models; each line is "plan LABEL wall_s cpu_s layouts fit".
step "the layout planner (about a minute)"
PLANRAW=$B/bench/plan.raw
: >"$PLANRAW"
plan_case() { # label runs plan-arguments...
	label=$1
	runs=$2
	shift 2
	i=0
	while [ $i -lt "$runs" ]; do
		i=$((i + 1))
		t0=$(date +%s.%N)
		if ! "$SL" plan "$@" >"$B/bench/plan.out" 2>>"$LOG"; then
			echo "plan $label failed" >>"$PLANRAW"
			return
		fi
		t1=$(date +%s.%N)
		# From the report: the layouts, those that fit, the CPU time of
		# planning (all threads; the text says "1.22 ms of CPU"), and in
		# the table's form how many that fit were not timed.
		if grep -q '^{' "$B/bench/plan.out"; then
			cpu=$(sed -n 's/.*"cpu_s": *\([0-9.e+-]*\).*/\1/p' "$B/bench/plan.out")
			n=$(sed -n 's/.*"candidates": *\([0-9]*\).*/\1/p' "$B/bench/plan.out")
			fit=$(sed -n 's/.*"fit": *\([0-9]*\).*/\1/p' "$B/bench/plan.out")
			untimed=0
		else
			line=$(grep '^  candidates' "$B/bench/plan.out")
			n=$(echo "$line" | sed -n 's/^  candidates *\([0-9]*\) layouts.*/\1/p')
			fit=$(echo "$line" | sed -n 's/.*: \([0-9]*\) fit,.*/\1/p')
			cpu=$(echo "$line" | sed -n 's/.*, \([0-9.]*\) \([mu]*s\) of CPU.*/\1 \2/p' |
				awk '{ print $1 * ($2 == "ms" ? 1e-3 : $2 == "us" ? 1e-6 : 1) }')
			untimed=$(sed -n 's/^  (\([0-9]*\) that fit were not timed.*/\1/p' "$B/bench/plan.out")
		fi
		echo "$label $t0 $t1 ${cpu:--} $n $fit ${untimed:-0}" |
			awk '{ printf "plan %-17s %7.3f %7.3f %5s %4s %5s\n", $1, $3 - $2, $4, $5, $6, $7 }' \
				>>"$PLANRAW"
	done
}
H100="--preset=h100 --devices-per-node=8"
# shellcheck disable=SC2086 # H100 is a list of options
plan_case 7b_on_64 3 --devices=64 $H100 --layers=32 --hidden=4096 --ffn=11008 --heads=32 \
	--seq=4096 --batch=64
# shellcheck disable=SC2086
plan_case 70b_on_64 3 --devices=64 $H100 --layers=80 --hidden=8192 --ffn=28672 --heads=64 \
	--seq=4096 --batch=128
# shellcheck disable=SC2086
plan_case 175b_on_1024 1 --devices=1024 $H100 --layers=96 --hidden=12288 --ffn=49152 \
	--heads=96 --seq=2048 --batch=1536
# The same with every layout timed (the JSON report lists them all).
# shellcheck disable=SC2086
plan_case 175b_on_1024_all 1 --devices=1024 $H100 --layers=96 --hidden=12288 --ffn=49152 \
	--heads=96 --seq=2048 --batch=1536 --format=json
{
	echo
	echo "## 7. The layout planner"
	echo
	echo "'shardlab plan' on H100 nodes of 8 (preset h100), every layout enumerated and timed"
	echo "by the analytic estimate proven equal to the emulation, as a user runs it (the table"
	echo "of the 20 fastest: a layout whose busiest device's compute alone is slower than 20"
	echo "rows already timed is not replayed); the _all case times every layout, as the JSON"
	echo "report's list of them all needs. Targets: a 32-layer model on 64 devices within 2 s;"
	echo "1,024 devices within 15 s (issue 14). Columns: case, wall seconds (the whole"
	echo "process), CPU seconds of planning (all threads), layouts, layouts that fit, those"
	echo "that fit but were not timed; one line per run, on $(nproc 2>/dev/null || echo '?') cores."
	echo
	echo '```'
	cat "$PLANRAW"
	echo '```'
} >>"$OUT"

# Strategies (issue 3): sharding wastes no compute, and compare stays quick.
# Each line is "tp4_compute RUN sum_of_4_devices_s one_device_s ratio"
# (compute seconds per step, the mean of 3 steps, measured timing: thread CPU
# time of the real sgemm calls; five runs, interleaved, and the best of each
# since the host's speed drifts) and "compare RUN wall_s".
step "strategies: a TP=4 step in measured timing, and compare (about a minute)"
STRAT=$B/bench/strat.raw
: >"$STRAT"
TRAIN_ARGS="--layers=1 --hidden=1024 --ffn=4096 --seq=1 --batch=512 --steps=3 --timing=measured --format=json"
# compute_s of every device in a train report, summed.
sum_compute() { sed -n 's/.*"compute_s": *\([0-9.e+-]*\).*/\1/p' "$1" | awk '{ s += $1 } END { printf "%.6f\n", s }'; }
best1=""
best4=""
i=0
while [ $i -lt 5 ]; do
	i=$((i + 1))
	# shellcheck disable=SC2086 # TRAIN_ARGS is a list of options
	if "$SL" train --tp=4 $TRAIN_ARGS >"$B/bench/tp4.json" 2>>"$LOG" &&
		"$SL" train --tp=1 $TRAIN_ARGS >"$B/bench/tp1.json" 2>>"$LOG"; then
		c4=$(sum_compute "$B/bench/tp4.json")
		c1=$(sum_compute "$B/bench/tp1.json")
		echo "tp4_compute $i $c4 $c1" | awk '{ printf "%s %s %.4f %.4f %.4f\n", $1, $2, $3, $4, $3 / $4 }' >>"$STRAT"
		best4=$(echo "$best4 $c4" | awk '{ m = $1; for (i = 2; i <= NF; i++) if ($i < m) m = $i; print m }')
		best1=$(echo "$best1 $c1" | awk '{ m = $1; for (i = 2; i <= NF; i++) if ($i < m) m = $i; print m }')
	else
		echo "tp4_compute $i failed" >>"$STRAT"
	fi
done
[ -n "$best4" ] && echo "tp4_compute best $best4 $best1" |
	awk '{ printf "%s %s %.4f %.4f %.4f\n", $1, $2, $3, $4, $3 / $4 }' >>"$STRAT"
i=0
while [ $i -lt 3 ]; do
	i=$((i + 1))
	t0=$(date +%s.%N)
	if "$SL" compare >/dev/null 2>>"$LOG"; then
		t1=$(date +%s.%N)
		echo "compare $i $t0 $t1" | awk '{ printf "%s %s %.3f\n", $1, $2, $4 - $3 }' >>"$STRAT"
	else
		echo "compare $i failed" >>"$STRAT"
	fi
done
{
	echo
	echo "## 8. Strategies"
	echo
	echo "A TP=4 training step of one MLP block (h=1024, f=4096, batch 512, measured timing):"
	echo "the four devices' compute seconds per step summed, against one device's for the same"
	echo "step; five runs each, interleaved, and the best of each ('best')."
	echo "Target: ratio within 1.10 (sharding wastes no compute). Then the wall seconds of a"
	echo "headless 'shardlab compare' with its default sizes. Target: under 10 s."
	echo "Columns: tp4_compute run sum_4 one ratio; compare run wall_s."
	echo
	echo '```'
	cat "$STRAT"
	echo '```'
} >>"$OUT"

# The lesson checker (issue 11): 'shardlab check' of a 1 MiB lesson of 81,000
# labels (a scan per name lookup made 55,770 labels take 13 to 22 s); each
# line is "check_1mib RUN wall_s".
step "the lesson checker on 1 MiB (a few seconds)"
CHECKRAW=$B/bench/check.raw
BIG=$B/bench/big.lesson
awk 'BEGIN { print "title Big"; print "minutes 5"; n = 20
	for (i = 0; n < 1048400; i++) { s = "label l" i; print s; n += length(s) + 1 }
	print "say end" }' >"$BIG"
: >"$CHECKRAW"
i=0
while [ $i -lt 5 ]; do
	i=$((i + 1))
	t0=$(date +%s.%N)
	if "$SL" check "$BIG" >/dev/null 2>>"$LOG"; then
		t1=$(date +%s.%N)
		echo "check_1mib $i $t0 $t1" | awk '{ printf "%s %s %.3f\n", $1, $2, $4 - $3 }' >>"$CHECKRAW"
	else
		echo "check_1mib $i failed" >>"$CHECKRAW"
	fi
done
rm -f "$BIG"
{
	echo
	echo "## 9. The lesson checker"
	echo
	echo "'shardlab check' of a generated lesson of 1 MiB (81,000 labels and"
	echo "a step), wall seconds of the whole process, five runs. Target: well under 1 s."
	echo
	echo '```'
	cat "$CHECKRAW"
	echo '```'
} >>"$OUT"

# The trace writer (issue "Fit the tools people already use"): RSS and wall
# time of a 64-device dry run with and without --trace.
step "the trace writer (a few seconds)"
sh "$S/bench/trace.sh" "$SL" "$B/bench" >>"$OUT" 2>>"$LOG" || fail "trace failed"

# Full scale (issue 37): BLOOM's whole step timed without values, and a
# 16,384-device plan of Llama 3 405B.
step "scale: BLOOM's step on 384 devices, Llama 3 405B planned on 16,384 (a few minutes)"
sh "$S/bench/scale.sh" "$SL" "$B/bench" >>"$OUT" 2>>"$LOG" || fail "scale failed"

cat "$OUT"
