#!/bin/sh
# SPDX-License-Identifier: MIT
# validate.sh - shardlab's figures next to published measurements, each
# row with its source and relative error (make validate; docs/validation.md
# says what each row compares).  Prints a Markdown table.
#
# Component rows check the device model on the kind of measurement it was
# calibrated on (GEMM rates by shape, collective bus bandwidth); end-to-end
# rows compare a plan's best layout with a published training throughput,
# in the publication's convention.
set -eu
SHARDLAB=${SHARDLAB:-./shardlab}

# The last value of a JSON key in the output on stdin; none (shardlab
# failed, and said why on stderr) stops the script, as set -e makes the
# failed assignment do: a missing figure is never a row.
num() {
	v=$(grep -o "\"$1\": *[-0-9.eE+]*" | tail -n 1 | sed 's/.*: *//')
	[ -n "$v" ] || { echo "validate.sh: no $1 in shardlab's output" >&2; return 1; }
	echo "$v"
}

# The same for a key whose value is a string or a truth value.
word() {
	v=$(grep -o "\"$1\": *[\"a-z0-9]*" | tail -n 1 | sed 's/.*: *//; s/"//g')
	[ -n "$v" ] || { echo "validate.sh: no $1 in shardlab's output" >&2; return 1; }
	echo "$v"
}

# row KIND CASE OURS PUBLISHED UNIT SOURCE [DIGITS]: one line of the table,
# the figures with DIGITS decimals (1 unless given).
row() {
	awk -v kind="$1" -v name="$2" -v ours="$3" -v pub="$4" -v unit="$5" -v src="$6" \
		-v d="${7:-1}" 'BEGIN {
		printf "| %s | %s | %.*f %s | %.*f %s | %+.1f%% | %s |\n", kind, name, d, ours, unit,
		       d, pub, unit, 100 * (ours - pub) / pub, src
	}'
}

echo "| kind | case | shardlab | published | error | source |"
echo "|---|---|---|---|---|---|"

# GEMM: square BF16 products on one H100 SXM (torch.matmul).
src="zzc0721/torch-performance-test-data issue 79 (H100 80GB HBM3, PyTorch 2.7, BF16)"
for pair in 1024:176.62 2048:676.59 4096:788.72 8192:797.51; do
	n=${pair%%:*}
	pub=${pair#*:}
	t=$("$SHARDLAB" run --strategy=single --devices=1 --m="$n" --k="$n" --n="$n" --dry-run \
		--preset=h100 --format=json | num emulated_time_s)
	ours=$(awk -v n="$n" -v t="$t" 'BEGIN { printf "%.6g", 2 * n * n * n / t / 1e12 }')
	row "GEMM" "h100 ${n}^3" "$ours" "$pub" "TFLOP/s" "$src"
done
# The calibration point itself: the best shape of Bekman's sweep.
t=$("$SHARDLAB" run --strategy=single --devices=1 --m=1024 --k=5120 --n=10240 --dry-run \
	--preset=a100 --format=json | num emulated_time_s)
ours=$(awk -v t="$t" 'BEGIN { printf "%.6g", 2 * 1024 * 5120 * 10240 / t / 1e12 }')
row "GEMM (calibration)" "a100 1024x10240x5120" "$ours" 271.2 "TFLOP/s" \
	"Bekman, ML Engineering, MAMF table"

# Collectives: ring all-reduce bus bandwidth of 8 GPUs in a node, large
# messages (the calibration point of the links' achievable share).
b=$("$SHARDLAB" coll --op=allreduce --devices=8 --preset=h100 --bytes=1GiB --format=json |
	num busbw_bytes_per_s)
ours=$(awk -v b="$b" 'BEGIN { printf "%.6g", b / 1e9 }')
row "all-reduce (calibration)" "8 x h100, 1 GiB, ring" "$ours" 367.5 "GB/s" \
	"nccl issue 1455: NCCL_ALGO=RING busbw 365-370 GB/s, 2 to 8 H100"

# Across nodes (held out: set after the calibration above, nothing fitted
# to them).  NCCL's ring leaves each node through every GPU's own adapter,
# one channel each (sl_ring_stripes); the nodes have eight adapters, one a
# GPU, as the presets assume.  Large messages (timing-only, --dry-run), so
# the ring's per-step latencies do not count.
b=$("$SHARDLAB" coll --op=allreduce --devices=16 --preset=a100 --bytes=4GiB --dry-run \
	--format=json | num busbw_bytes_per_s)
ours=$(awk -v b="$b" 'BEGIN { printf "%.6g", b / 1e9 }')
row "all-reduce" "16 x a100 in 2 nodes, 4 GiB, ring" "$ours" 192 "GB/s" \
	"nccl issue 812: 192 GB/s all-reduce busbw measured by NVIDIA on DGX A100 nodes of 8 x 200 Gb/s IB"
b=$("$SHARDLAB" coll --op=allreduce --devices=32 --preset=h100 --bytes=16GiB --dry-run \
	--format=json | num busbw_bytes_per_s)
ours=$(awk -v b="$b" 'BEGIN { printf "%.6g", b / 1e9 }')
row "all-reduce" "32 x h100 in 4 nodes, 16 GiB, ring" "$ours" 365.84 "GB/s" \
	"nccl-tests issue 309: max busbw 365.84 GB/s, 4 HGX H100 nodes of 8 GPU-NIC pairs" 2

# End to end: Narayanan et al. 2021 (arXiv 2104.04473), Table 1 and
# section 5.1: GPT models on A100 80GB (Selene), sequences of 2048 tokens,
# full activation recomputation, pre-layer norms (GPT-2's, which
# Megatron-LM's blocks keep), FLOPs counted as 96 B s l h^2 (1 + s/6h +
# V/16lh); attention as Megatron-LM ran it then, its scores in device
# memory (--attention=materialized), and Megatron-LM's default dropouts
# (megatron/arguments.py, _add_regularization_args: --attention-dropout and
# --hidden-dropout default to 0.1): a pass over the s x s probabilities and
# one over each sub-block's output, each with its mask kept.  Layouts of
# what Megatron-LM had then (--no-sequence-parallel --no-zero1): sequence
# parallelism came with Korthikanti et al. 2022 (arXiv 2205.05198), the
# distributed optimizer after it; without them every TP rank runs the
# element-wise work on the whole micro-batch.  The paper's vocabulary of
# 51,200 tokens (section 5.1), embeddings tied to the LM head and learned
# positions, vocabulary-parallel over t.  Weight gradients added up over
# the micro-batches by a kernel of their own (--grad-accumulation=separate):
# Megatron-LM's data-parallel hook adds each backward's gradient into its
# buffer (megatron/model/distributed.py, main_grad.add_) and all-reduces the
# buffer after the backward pass (--overlap=off: the bucketed overlap came
# later, as --overlap-grad-reduce, and Megatron-Core still leaves it off by
# default: overlap_grad_reduce = False in megatron/core/distributed/
# distributed_data_parallel_config.py; the 2022 rows below keep it off
# too), and the fused
# weight-gradient kernel that folds the add into the product came later
# (in NVIDIA apex's copy of Megatron's layers in February 2022, pull request
# 1297; the 2022 rows below keep it).  shardlab's
# figure: the GEMM FLOPs its best layout executes (recomputation included)
# per GPU and second, under --recompute=full.
src="Narayanan et al. 2021, arXiv 2104.04473"
# Each row twice: the plan's best layout, and the paper's own run, which
# separates the layout the planner prefers from how the emulated machine
# times a layout.  The runs are those of the script its authors published
# for Table 1 (NVIDIA/Megatron-LM, examples/sc21/run_table_1.sh): t and
# p, the micro-batch size (MBS, so --microbatches is the batch over the
# data-parallel degree and MBS) and the layers of a virtual pipeline stage
# (--num-layers-per-virtual-pipeline-stage: v, the chunks a device, is a
# stage's layers over them; without it 1F1B).  GPT-3 175B on 1,024 GPUs
# (section 5.1's figure) is not in Table 1: its run is the one the same
# repository gives for that model, GPU count and batch
# (examples/pretrain_gpt3_175B.sh: t=8, p=16, micro-batch 1, no virtual
# stages).  The last field names the script.
while read -r name heads hidden layers gpus batch pub tp pp mbs v run; do
	for paper in no yes; do
		what="$name on $gpus A100"
		fixed=
		if [ "$paper" = yes ]; then
			m=$((batch / (gpus / (tp * pp)) / mbs))
			fixed="--tp=$tp --pp=$pp --microbatches=$m"
			what="$what, t=$tp p=$pp, micro-batch $mbs"
			if [ "$v" -gt 1 ]; then
				fixed="$fixed --schedule=interleaved --chunks=$v"
				what="$what, interleaved v=$v"
			elif [ "$pp" -gt 1 ]; then
				fixed="$fixed --schedule=1f1b"
				what="$what, 1F1B"
			fi
		fi
		# shellcheck disable=SC2086 # $fixed is a list of options or none
		f=$("$SHARDLAB" plan --preset=a100 --devices="$gpus" --layers="$layers" \
			--hidden="$hidden" --ffn=$((4 * hidden)) --heads="$heads" --seq=2048 --norm=layernorm \
			--vocab=51200 \
			--batch="$batch" --recompute=full --attention=materialized \
			--attention-dropout=0.1 --hidden-dropout=0.1 --no-sequence-parallel \
			--no-zero1 --overlap=off --grad-accumulation=separate $fixed --top=1 \
			--format=json |
			num device_hardware_flop_per_s)
		ours=$(awk -v f="$f" 'BEGIN { printf "%.6g", f / 1e12 }')
		where=$src
		[ "$paper" = yes ] && where="$src; the run: NVIDIA/Megatron-LM $run"
		row "training" "$what" "$ours" "$pub" "TFLOP/s/GPU" "$where"
	done
done <<'ROWS'
1.7B 24 2304 24 32 512 137 1 1 16 1 examples/sc21/run_table_1.sh
3.6B 32 3072 30 64 512 138 2 1 16 1 examples/sc21/run_table_1.sh
7.5B 32 4096 36 128 512 142 4 1 16 1 examples/sc21/run_table_1.sh
18.4B 48 6144 40 256 1024 135 8 1 8 1 examples/sc21/run_table_1.sh
39.1B 64 8192 48 512 1536 138 8 2 4 1 examples/sc21/run_table_1.sh
76.1B 80 10240 60 1024 1792 140 8 4 2 3 examples/sc21/run_table_1.sh
145.6B 96 12288 80 1536 2304 148 8 8 2 2 examples/sc21/run_table_1.sh
310.1B 128 16384 96 1920 2160 155 8 16 1 2 examples/sc21/run_table_1.sh
529.6B 128 20480 105 2520 2520 163 8 35 1 3 examples/sc21/run_table_1.sh
GPT-3-175B 96 12288 96 1024 1536 140 8 16 1 1 examples/pretrain_gpt3_175B.sh
1T 160 25600 128 3072 3072 163 8 64 1 1 examples/sc21/run_table_1.sh
ROWS

# The same paper's Table 2 (section 5.2, against ZeRO-3): PTD-P's 175B and
# 530B models at a fixed global batch on more and more GPUs, model-parallel
# size 96 (t=8, p=12) and 280 (t=8, p=35), micro-batches of one sequence
# (--microbatches: the batch over the data-parallel degree), the options
# and the FLOP convention of the rows above; the schedule the plan's best.
# As data parallelism grows, each pipeline gets fewer micro-batches and
# its bubble grows: the rows test that fall, not only its level.
while read -r name heads hidden layers gpus batch pub pp; do
	dp=$((gpus / (8 * pp)))
	f=$("$SHARDLAB" plan --preset=a100 --devices="$gpus" --layers="$layers" \
		--hidden="$hidden" --ffn=$((4 * hidden)) --heads="$heads" --seq=2048 --norm=layernorm \
		--vocab=51200 --batch="$batch" --recompute=full --attention=materialized \
		--attention-dropout=0.1 --hidden-dropout=0.1 --no-sequence-parallel \
		--no-zero1 --overlap=off --grad-accumulation=separate --tp=8 --pp="$pp" \
		--microbatches=$((batch / dp)) --top=1 --format=json |
		num device_hardware_flop_per_s)
	ours=$(awk -v f="$f" 'BEGIN { printf "%.6g", f / 1e12 }')
	row "training" "$name on $gpus A100, t=8 p=$pp, micro-batch 1" "$ours" "$pub" \
		"TFLOP/s/GPU" "Narayanan et al. 2021, arXiv 2104.04473, Table 2"
done <<'ROWS'
GPT-3-175B 96 12288 96 384 1536 153 12
GPT-3-175B 96 12288 96 768 1536 149 12
GPT-3-175B 96 12288 96 1536 1536 141 12
530B 128 20480 105 560 2240 171 35
530B 128 20480 105 1120 2240 167 35
530B 128 20480 105 2240 2240 159 35
ROWS

# End to end on A100 in 2022: Korthikanti et al. 2022 (arXiv 2205.05198),
# Table 3's configurations (t = 8, no data parallelism; micro-batches of
# one sequence, the 22B model's one of four; sequences of 2048 tokens, the
# vocabulary of 51,200; the 175B and 530B models interleaved with three
# chunks, section 6) and Table 5's iteration times, "full recompute"
# (without sequence parallelism) and "present work" (sequence parallelism
# with selective recomputation), on the same Selene nodes as the 2021 rows
# (A100 80GB, eight HDR Infiniband adapters a node), with Megatron-LM's
# dropouts and layer norms as there; and section 6.3's 530B run with 8-way
# data parallelism (2,240 GPUs, the batch times 8: 39.15 s).  Iteration
# time needs no FLOP convention.  Table 4 says the runs overlap the TP
# all-reduce of the backward pass with the weight gradients' GEMM, which
# shardlab does not.
ksrc="Korthikanti et al. 2022, arXiv 2205.05198, Tables 3 and 5"
while read -r name heads hidden layers gpus batch pp m sched full present; do
	# the schedule: "1f1b", or "interleaved/V" for V chunks
	case $sched in
	*/*) sched="--schedule=${sched%/*} --chunks=${sched#*/}" ;;
	*) sched="--schedule=$sched" ;;
	esac
	for mode in full present; do
		case $mode in
		full) opts="--recompute=full --no-sequence-parallel" pub=$full what="full recomputation" ;;
		*) opts="--recompute=selective" pub=$present what="selective recomputation, sequence parallel" ;;
		esac
		[ "$pub" = - ] && continue
		# shellcheck disable=SC2086 # $opts and $sched are lists of options
		j=$("$SHARDLAB" plan --preset=a100 --devices="$gpus" --layers="$layers" \
			--hidden="$hidden" --ffn=$((4 * hidden)) --heads="$heads" --seq=2048 --norm=layernorm \
			--vocab=51200 --batch="$batch" --tp=8 --pp="$pp" --microbatches="$m" $sched \
			--attention=materialized --attention-dropout=0.1 --hidden-dropout=0.1 --no-zero1 --overlap=off \
			$opts --top=1 --format=json) || exit 1
		t=$(printf '%s\n' "$j" | num step_time_s)
		# the layout timed must be the one the paper ran: a plan that
		# fell back to full recomputation, or went without sequence
		# parallelism, would compare another configuration
		if [ "$mode" = present ]; then
			sp=$(printf '%s\n' "$j" | word sequence_parallel)
			rc=$(printf '%s\n' "$j" | word recompute)
			if [ "$sp $rc" != "true selective" ]; then
				echo "validate.sh: $name on $gpus: the best layout has" \
					"sequence_parallel $sp, recompute $rc," \
					"not sequence parallelism with selective recomputation" >&2
				exit 1
			fi
		fi
		unit=s
		if [ "$name" = 22B ]; then # a second or so: in ms
			unit=ms
			t=$(awk -v t="$t" 'BEGIN { printf "%.9g", 1000 * t }')
			pub=$(awk -v t="$pub" 'BEGIN { printf "%.9g", 1000 * t }')
		fi
		where=$ksrc
		[ "$gpus" = 2240 ] && where="Korthikanti et al. 2022, arXiv 2205.05198, section 6.3"
		# the paper's times have two decimals (seconds) or none (ms)
		digits=2
		[ "$unit" = ms ] && digits=0
		row "iteration" "$name on $gpus A100, $what" "$t" "$pub" "$unit" "$where" "$digits"
	done
done <<'ROWS'
22B 64 6144 48 8 4 1 1 1f1b 1.42 1.10
175B 96 12288 96 64 64 8 64 interleaved/3 18.13 13.75
530B 128 20480 105 280 280 35 280 interleaved/3 49.05 37.83
1T 160 25600 128 512 512 64 512 1f1b 94.42 71.49
530B 128 20480 105 2240 2240 35 280 interleaved/3 - 39.15
ROWS

# Sharded data parallelism on A100 80GB (BF16, full recomputation, the
# a100 preset's links): PyTorch FSDP's GPT-175B (Zhao et al. 2023, "PyTorch
# FSDP: Experiences on Scaling Fully Sharded Data Parallel", arXiv
# 2304.11277, section 5.4: full sharding with backward prefetch, activation
# checkpointing, 128 to 512 GPUs, "more than 173 and 186 TFLOPS per GPU with
# batch size equal to 1 and 2"; minGPT's 175B, sequences of 2048, a
# vocabulary of 50,000), here on 512 GPUs, a batch per GPU in one
# micro-batch; and OPT-175B (Zhang et al. 2022, arXiv 2205.01068, section
# 2.4: FSDP with 8-way tensor parallelism on 992 GPUs, "up to 147 TFLOP/s
# per GPU").  Neither says its FLOP convention: the model's FLOPs (no
# recomputation counted), the smaller of the two.  FSDP's figures are lower
# bounds ("more than") and OPT's a peak ("up to").
fsrc="Zhao et al. 2023, arXiv 2304.11277, section 5.4"
while read -r name gpus batch tp pub src shape; do
	case $src in fsdp) where=$fsrc ;; *) where="Zhang et al. 2022, arXiv 2205.01068, section 2.4" ;; esac
	# shellcheck disable=SC2086 # $shape is a list of options
	f=$("$SHARDLAB" plan --preset=a100 --devices="$gpus" --devices-per-node=8 $shape \
		--batch="$batch" --tp="$tp" --pp=1 --zero=3 --microbatches=1 --recompute=full \
		--top=1 --format=json | num device_model_flop_per_s)
	ours=$(awk -v f="$f" 'BEGIN { printf "%.6g", f / 1e12 }')
	per=$((batch / gpus * tp))
	row "training" "$name on $gpus A100, ZeRO-3, t=$tp, micro-batch $per" "$ours" \
		"$pub" "TFLOP/s/GPU" "$where"
done <<'ROWS'
GPT-175B 512 512 1 173 fsdp --model=gpt3-175b --vocab=50000
GPT-175B 512 1024 1 186 fsdp --model=gpt3-175b --vocab=50000
OPT-175B 992 992 8 147 opt --model=opt-175b
ROWS

# End to end on H100 SXM (BF16; fused attention, the command line's
# default): training throughput in tokens per second and GPU, which needs no
# FLOP convention.  NVIDIA's DGX Cloud benchmark recipes (NeMo 24.09):
# Llama 3.1 from the shipped Llama 3 files (the same blocks) at the
# recipes' global batch, GPT-3 175B at sequences of 2048; MosaicML's
# llm-foundry table (FSDP, no tensor or pipeline parallelism) for MPT, whose
# blocks are GPT's (MLP of 4h, multi-head attention, layer norms).  The
# model files carry each model's norm (GPT's layer norms, Llama's RMS
# norms).  Each row twice
# where the publication names its layout: the plan's best, then the
# recipe's own run: its t, p and context parallelism c (ring attention),
# its virtual stages v (interleaved) and its gradient accumulation, the
# micro-batches a replica (README_8b.md: TP=1 PP=1 CP=2 GA=32;
# README_70b.md: TP=4 PP=4 CP=2 VP=5 GA=64; README_175b.md: TP=4 PP=8
# VP=12, 256 sequences on 4 replicas, 64 each; all MBS=1).  The model files
# carry each model's vocabulary (Llama 3's 128,256 tokens untied, GPT's
# 51,200 tied); MPT's is 50,432 tokens (mosaicml/mpt-7b config.json:
# vocab_size 50432, the GPT-NeoX tokenizer), tied, with ALiBi
# (attn_config.alibi), which like rotary positions has no parameters
# (--position-embedding=rope).
nv="NVIDIA/dgxc-benchmarking, NeMo 24.09 BF16"
mo="mosaicml/llm-foundry, scripts/train/benchmarking/README.md, BF16"
# pub: the published figure as given: NVIDIA's tokens/s of all GPUs
# ("Throughput in tokens per second"), MosaicML's per GPU.
while read -r name gpus pub tp pp cp v ga src shape; do
	[ "$src" = nv ] && pub=$(awk -v t="$pub" -v n="$gpus" 'BEGIN { printf "%.6g", t / n }')
	run="--tp=$tp --pp=$pp --cp=$cp --microbatches=$ga"
	[ "$v" != - ] && [ "$v" -gt 1 ] && run="$run --schedule=interleaved --chunks=$v"
	for fixed in "" "$run"; do
		what="$name on $gpus H100"
		if [ -n "$fixed" ]; then
			[ "$tp" = - ] && continue
			what="$what, t=$tp p=$pp"
			[ "$cp" -gt 1 ] && what="$what c=$cp"
			[ "$v" -gt 1 ] && what="$what v=$v"
			what="$what, $ga micro-batches"
		fi
		case $src in nv) where="$nv" ;; *) where="$mo" ;; esac
		# shellcheck disable=SC2086 # $shape and $fixed are lists of options
		tps=$("$SHARDLAB" plan --preset=h100 --devices="$gpus" $shape $fixed --top=1 \
			--format=json | num tokens_per_s)
		ours=$(awk -v t="$tps" -v n="$gpus" 'BEGIN { printf "%.6g", t / n }')
		row "training" "$what" "$ours" "$pub" "tokens/s/GPU" "$where"
	done
done <<'ROWS'
Llama-3.1-8B 8 81222 1 1 2 1 32 nv --model=llama-3-8b --batch=128
Llama-3.1-70B 64 71235 4 4 2 5 64 nv --model=llama-3-70b --batch=128
GPT-3-175B 128 63099 4 8 1 12 64 nv --model=gpt3-175b --batch=256
MPT-7B 8 10643 - - - - - mo --layers=32 --hidden=4096 --ffn=16384 --heads=32 --seq=2048 --batch=48 --norm=layernorm --vocab=50432 --position-embedding=rope
MPT-70B 64 1039 - - - - - mo --layers=80 --hidden=8192 --ffn=32768 --heads=64 --seq=2048 --batch=2048 --recompute=full --norm=layernorm --vocab=50432 --position-embedding=rope
ROWS

# At full scale (issue 37): Llama 3 405B's pre-training at 8K tokens on
# 8,192 and 16,384 H100s (Llama Team 2024, arXiv 2407.21783, Table 4: TP8
# CP1 PP16, DP64 and DP128, 16M tokens a batch, 430 and 400 TFLOP/s a GPU),
# the first and last pipeline stages one layer short (section 3.3.2,
# --stage-layers=ends: 126 layers on 16 stages), the plan's best with its
# t and p (schedule, chunks, micro-batches, ZeRO stage and recomputation
# searched).  shardlab's figure: the model's FLOPs per GPU and second
# (device_model_flop_per_s), counted as shardlab(1) says under --mask.
src="Llama Team 2024, arXiv 2407.21783, Table 4"
while read -r gpus pub; do
	f=$("$SHARDLAB" plan --preset=h100 --devices="$gpus" --devices-per-node=8 \
		--model=llama-3-405b --tp=8 --pp=16 --stage-layers=ends --top=1 --format=json |
		num device_model_flop_per_s)
	ours=$(awk -v f="$f" 'BEGIN { printf "%.6g", f / 1e12 }')
	row "training" "Llama-3-405B on $gpus H100, t=8 p=16, 8K tokens" "$ours" "$pub" \
		"TFLOP/s/GPU" "$src"
done <<'ROWS'
8192 430
16384 400
ROWS
# Long context (issue 37): its 128K stage on 16,384 H100s, TP8 CP16 PP16
# (DP 16,384 / (8 x 16 x 16) = 8), 16M tokens a batch (128 sequences of
# 131,072), 380 TFLOP/s a GPU (the same Table 4); its context parallelism
# all-gathers the keys and values (section 3.3.2), as --cp-comm=allgather.
f=$("$SHARDLAB" plan --preset=h100 --devices=16384 --devices-per-node=8 \
	--model=llama-3-405b --tp=8 --pp=16 --cp=16 --cp-comm=allgather --attention=flash \
	--seq=131072 --batch=128 --stage-layers=ends --top=1 --format=json |
	num device_model_flop_per_s)
ours=$(awk -v f="$f" 'BEGIN { printf "%.6g", f / 1e12 }')
row "training" "Llama-3-405B on 16384 H100, t=8 c=16 p=16, 128K tokens" "$ours" 380 \
	"TFLOP/s/GPU" "$src"
