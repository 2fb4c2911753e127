#!/bin/bash
# SPDX-License-Identifier: MIT
# run.sh - runs every fuzzer for a bounded time (make fuzz-run calls it).
#
#   run.sh SRCDIR OUTDIR SECONDS SHARDLAB [JOBS]
#
# Each fuzzer starts from its seed corpus (SRCDIR/fuzz/corpus/NAME: for the
# lessons, the shipped course too; for hardware and model files, the shipped
# ones; for the manifest, a checkpoint that
# SHARDLAB saves here first) copied into a scratch directory, so the source
# tree never changes, with its dictionary, and stops after SECONDS.  Any
# crash, leak, timeout (10 s an input) or memory blow-up (2 GiB) fails the
# run; the input that did it is kept in OUTDIR/findings/.  Prints the
# executions and the CPU time each fuzzer used.  JOBS (1 unless given;
# make fuzz-run FUZZ_JOBS=N) fuzzers run at a time: each is one process on
# one core, so on N free cores each still gets its SECONDS of a core.
set -u
src=$1
out=$2
secs=$3
shardlab=$4
jobs=${5:-1}
work=$(mktemp -d "${TMPDIR:-/tmp}/shardlab-fuzz.XXXXXX")
trap 'rm -rf "$work"' EXIT
trap 'exit 130' INT TERM
mkdir -p "$out/findings"
export OPENBLAS_NUM_THREADS=1 OPENBLAS_CORETYPE="${OPENBLAS_CORETYPE:-auto}"
export ASAN_OPTIONS="detect_leaks=1:abort_on_error=0${ASAN_OPTIONS:+:$ASAN_OPTIONS}"
export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1"

# A real checkpoint for the manifest fuzzer: its data files, its manifest
# the seed.
"$shardlab" train --tp=2 --pp=1 --layers=1 --hidden=16 --ffn=32 --heads=2 --seq=4 --batch=2 \
	--steps=1 --save="$work/ckpt" >/dev/null || {
	echo "fuzz-run: could not save the seed checkpoint"
	exit 1
}
export SHARDLAB_FUZZ_CKPT="$work/ckpt"

# fuzz NAME: runs one fuzzer; its report goes to $work/NAME.report, its
# status to $work/NAME.status.
fuzz() {
	name=$1
	bin="$out/fuzz_$name"
	corpus="$work/corpus-$name"
	mkdir -p "$corpus"
	cp "$src/fuzz/corpus/$name"/* "$corpus/" 2>/dev/null
	case $name in
	lesson) cp "$src"/lessons/*.lesson "$corpus/" ;;
	manifest) cp "$work/ckpt/manifest.json" "$corpus/" ;;
	hwfile) cp "$src"/data/hardware/*.json "$src"/data/models/*.json "$corpus/" ;;
	esac
	log="$work/$name.log"
	TIMEFORMAT='%U %S'
	{ time (cd "$work" && "$bin" \
		-max_total_time="$secs" -timeout=10 -rss_limit_mb=2048 -print_final_stats=1 \
		-dict="$src/fuzz/$name.dict" -artifact_prefix="$out/findings/$name-" \
		"$corpus" >"$log" 2>&1); } 2>"$work/$name.time"
	st=$?
	runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log")
	cpu=$(awk '{printf "%.1f", $1 + $2}' "$work/$name.time" 2>/dev/null)
	if [ $st -eq 0 ]; then
		echo "fuzz_$name: ${runs:-?} inputs in ${cpu:-?} s of CPU, nothing found"
	else
		echo "fuzz_$name: FAILED (status $st) after ${runs:-?} inputs; the input is in $out/findings/:"
		grep -E 'ERROR|SUMMARY|runtime error|Test unit written' "$log" | head -n 20
	fi >"$work/$name.report"
	echo $st >"$work/$name.status"
}

names="lesson manifest units hwfile"
running=0
for name in $names; do
	if [ "$running" -ge "$jobs" ]; then
		wait -n
		running=$((running - 1))
	fi
	fuzz "$name" &
	running=$((running + 1))
done
wait
failed=0
for name in $names; do
	cat "$work/$name.report" 2>/dev/null
	[ "$(cat "$work/$name.status" 2>/dev/null)" = 0 ] || failed=1
done
exit $failed
