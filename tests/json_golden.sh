#!/bin/sh
# SPDX-License-Identifier: MIT
# json_golden.sh - every command's --format=json, on README's example
# command lines, byte for byte against tests/golden/json/NAME.json: so a
# change to how the reports are built (names, order, nesting, digits) shows
# here.  GENERATE=1 rewrites the golden files.
#
# Examples too slow for `make check` run smaller, through the same code:
# fewer steps, sizes or devices, and plan and the big dry run constrained
# to a few layouts (each line below says what it changed).
#
# Masked (tests/jsonmask): what is not the same on every machine.  Values
# computed by real arithmetic, whose last digits follow the BLAS kernel
# (OPENBLAS_CORETYPE) and the CPU: errors against the reference product,
# losses, the checkpoint's checksums; clocks (wall_s, cpu_s); the version.
# Emulated times come from the model alone and are held exactly.  Paths:
# the cases run in a scratch directory with relative names, and the
# lessons' directory becomes <lessons>.  make check sets the environment.
set -u
bin=${SHARDLAB:?}
mask=${SHARDLAB_BUILDDIR:?}/tests/jsonmask
golden=${SHARDLAB_GOLDEN:?}/json
lessons=${SHARDLAB_LESSON_PATH:?}
GENERATE=${GENERATE:-0}
[ -x "$mask" ] || { echo "FAIL: no $mask"; exit 1; }
dir=$(mktemp -d) || exit 1
trap 'rm -rf "$dir"' EXIT
cd "$dir" || exit 1
fails=0
cases=0

# golden NAME STATUS ARGS...: run shardlab ARGS (exit status STATUS), mask,
# compare with (or, GENERATE=1, write) $golden/NAME.json.
golden() {
	name=$1 want=$2
	shift 2
	cases=$((cases + 1))
	"$bin" "$@" >"$name.out" 2>"$name.err"
	status=$?
	if [ "$status" != "$want" ]; then
		echo "FAIL: $name: shardlab $*: status $status, want $want: $(cat "$name.err")"
		fails=$((fails + 1))
		return
	fi
	if ! "$mask" -k shardlab_version -k wall_s -k cpu_s \
		-k max_abs_error -k max_rel_error \
		-k losses -k reference_losses -k max_loss_rel_diff -k crc32 \
		-r "$lessons=<lessons>" <"$name.out" >"$name.json"; then
		echo "FAIL: $name: shardlab $*: the output is not JSON"
		fails=$((fails + 1))
		return
	fi
	if [ "$GENERATE" = 1 ]; then
		cp "$name.json" "$golden/$name.json" && echo "wrote $golden/$name.json"
		return
	fi
	if diff -u "$golden/$name.json" "$name.json"; then
		echo "ok: $name: shardlab $*"
	else
		echo "FAIL: $name: shardlab $*: differs from $golden/$name.json (above)"
		fails=$((fails + 1))
	fi
}

# README: --m=1024
golden run-colwise 0 run --strategy=colwise --devices=4 --m=64 --k=4096 --n=4096 --preset=h100 --format=json
golden run-rowwise 0 run --strategy=rowwise --devices=8 --m=64 --k=4096 --n=4096 --bandwidth=25GB/s \
	--latency=5us --format=json
# README: -e 64M
golden coll 0 coll --op=allreduce --devices=8 -b 1M -e 8M -f 2 --format=json
# README: the default product (1024 x 4096 x 4096)
golden run-trace 0 run --strategy=colwise --devices=16 --devices-per-node=8 --m=64 --k=1024 --n=1024 \
	--trace=run.json --format=json
# README: --steps=10
golden train-3d 0 train --tp=2 --pp=2 --dp=2 --microbatches=4 --sequence-parallel --zero1 --steps=2 \
	--format=json
# README: the default steps
golden train-gpipe 0 train --pp=4 --schedule=gpipe --microbatches=8 --steps=2 --trace=pipe.json \
	--format=json
# README: the default model and steps
golden compare 0 compare --devices=8 --layers=8 --hidden=32 --ffn=64 --heads=2 --seq=8 --batch=8 \
	--steps=1 --format=json
# README: --steps=3 (ckpt verify is not in README's lines; it takes --format=json)
golden train-save 0 train --tp=2 --pp=2 --steps=1 --save=ckpt --format=json
golden train-load 0 train --tp=4 --steps=1 --load=ckpt --format=json
golden ckpt-inspect 0 ckpt inspect ckpt --format=json
golden ckpt-verify 0 ckpt verify ckpt --format=json
# README: every layout (6 MB of JSON); here tp=8, pp=8, 1F1B with 8
# micro-batches: three candidates, one rejected
golden plan 0 plan --devices=64 --layers=80 --hidden=8192 --ffn=28672 --heads=64 --seq=4096 --batch=128 \
	--tp=8 --pp=8 --schedule=1f1b --microbatches=8 --format=json
# README: --tp=8 --pp=16 --dp=8 --layers=96 (1024 devices, 25 s)
golden train-dry-run 0 train --dry-run --tp=2 --pp=4 --dp=2 --layers=8 --hidden=12288 --ffn=49152 \
	--heads=96 --seq=2048 --batch=64 --microbatches=8 --steps=1 --format=json
golden train-dry-run-model 0 train --dry-run --preset=a100 --tp=8 --model=gpt3-175b --layers=2 --batch=8 \
	--steps=1 --format=json
golden list-presets 0 --list-presets --format=json
golden sandbox 0 sandbox --strategy=rowwise --devices=8 --devices-per-node=4 --m=256 --k=2048 --n=2048 \
	--format=json
# README: lesson 02, whose text quotes the product's error (BLAS digits);
# lesson 04 quotes only emulated figures, and is quicker
golden lesson 0 lesson --headless --demo --format=json 04
golden check 0 check --format=json "$lessons"/*.lesson
# The error object (not in README): a usage error under --format=json
golden error 2 coll --op=bad --format=json

echo "$cases cases, $fails failed"
[ $fails = 0 ]
