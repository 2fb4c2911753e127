#!/bin/sh
# SPDX-License-Identifier: MIT
# bench/scale.sh SHARDLAB SCRATCH_DIR - full-scale runs (issue 37): the peak
# RSS and wall time of
#   - a timing-only run of BLOOM's whole step: 176B parameters (70 blocks
#     of width 14336, 112 heads, a vocabulary of 250,680; BigScience 2022,
#     arXiv 2211.05100, section 3.4 and Table 3's 176B row: sequences of
#     2,048 tokens, a batch of 2,048 sequences) on 384 A100s as TP4 PP12 DP8
#     in micro-batches of 2 (128 a replica), ZeRO-1 and full recomputation,
#     as Megatron-DeepSpeed ran it (ALiBi has no parameters; rotary
#     positions stand for it here).  Target: under 2 GiB of host memory.
#   - 'plan' of Llama 3 405B on 16,384 H100s at Llama 3's degrees (TP8 PP16,
#     so DP128; arXiv 2407.21783, Table 4), everything else searched.
#     Target: under 120 s on this machine.
#   - 'plan' of Llama 3.1 405B on 576 H100s with context parallelism 2 at
#     NeMo's degrees (TP8 PP9 CP2, so DP4; 252 sequences of 8,192 tokens):
#     its best layout must fit without full recomputation.
# Prints a RESULTS.md section on stdout.  Run by bench/run.sh; runs alone.
set -u

SL=${1:?usage: scale.sh SHARDLAB SCRATCH_DIR}
D=${2:?usage: scale.sh SHARDLAB SCRATCH_DIR}

. "$(dirname "$0")/measure.sh"

BLOOM="train --dry-run --steps=1 --preset=a100 --devices-per-node=8 --precision=bf16
	--layers=70 --hidden=14336 --ffn=57344 --heads=112 --norm=layernorm --vocab=250680
	--position-embedding=rope --seq=2048 --batch=2048 --tp=4 --pp=12 --dp=8
	--microbatches=128 --zero=1 --recompute=full"
LLAMA="plan --model=llama-3-405b --preset=h100 --devices=16384 --devices-per-node=8 --tp=8
	--pp=16"
CP="plan --model=llama-3-405b --preset=h100 --devices=576 --devices-per-node=8 --tp=8
	--pp=9 --cp=2 --attention=flash --batch=252 --top=1 --format=csv"
# shellcheck disable=SC2086 # word lists of options
bloom=$(measure "$D/bench-scale.time" "$SL" $BLOOM) || bloom="failed failed"
# shellcheck disable=SC2086
llama=$(measure "$D/bench-scale.time" "$SL" $LLAMA) || llama="failed failed"
# shellcheck disable=SC2086
cp=$(measure "$D/bench-scale.time" "$SL" $CP) || cp="failed failed"
# the best row's recomputation (plan's CSV: its header names the column)
# shellcheck disable=SC2086
cprc=$("$SL" $CP 2>/dev/null | awk -F, 'NR == 1 { for (i = 1; i <= NF; i++) if ($i == "recompute") c = i }
	NR == 2 { print c ? $c : "?" }')
rm -f "$D/bench-scale.time"

echo
echo "## 11. Scale"
echo
echo "Peak RSS and wall time of the whole process, one run each:"
echo
echo "- bloom: \`shardlab $(echo $BLOOM)\`"
echo "  (BLOOM's whole step, 384 devices, 128 micro-batches a replica). Target: under 2 GiB."
echo "- llama: \`shardlab $(echo $LLAMA)\`"
echo "  (Llama 3 405B on 16,384 devices at its published TP and PP). Target: under 120 s."
echo "- cp: \`shardlab $(echo $CP)\`"
echo "  (Llama 3.1 405B on 576 devices with context parallelism 2). Target: the best layout"
echo "  fits without full recomputation (its recomputation: ${cprc:-?})."
echo
echo "| run | peak RSS (KB) | wall (s) | result |"
echo "|---|---|---|---|"
printf '%s\n%s\n%s\n' "bloom $bloom" "llama $llama" "cp $cp" | awk -v rc="${cprc:-?}" '
	$2 == "failed" { print "| " $1 " | failed | failed | FAIL |"; next }
	$1 == "bloom" { ok = $2 == "n/a" ? "n/a" : $2 < 2 * 1024 * 1024 ? "PASS" : "FAIL" }
	$1 == "llama" { ok = $3 < 120 ? "PASS" : "FAIL" }
	$1 == "cp" { ok = rc != "full" && rc != "?" ? "PASS" : "FAIL" }
	{ print "| " $1 " | " $2 " | " $3 " | " ok " |" }'
