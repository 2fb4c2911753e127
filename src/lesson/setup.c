/* SPDX-License-Identifier: MIT */
/* setup.c - setup keys and figures: the names a lesson may use. */
#include "setup.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "preset.h"
#include "units.h"

void sl_lsetup_default(sl_lsetup *s)
{
	memset(s, 0, sizeof *s);
	sl_scenario_default(&s->sc);
	s->op = SL_COLL_ALLREDUCE;
	s->bytes = 64.0 * 1024 * 1024;
	sl_model_default(&s->model);
	s->model.hidden = 128;
	s->model.ffn = 512;
	sl_layout_default(&s->layout);
	s->steps = 1;
}

/* As `shardlab train` chooses them, so a lesson and the command agree
 * (but for the attention core: a lesson's is the engine's materialized
 * one, whose memory its closed forms count; `train` defaults to flash). */
sl_layout sl_lsetup_layout(const sl_lsetup *s)
{
	sl_layout l = s->layout;
	l.algo = s->sc.gemm.algo;
	if (!s->given_v)
		l.chunks = l.schedule == SL_SCHED_INTERLEAVED ? 2 : 1;
	if (!s->given_mb) {
		int mb = l.pp > 1 ? 2 * l.pp : 1;
		int most = s->model.batch / l.dp > 0 ? s->model.batch / l.dp : 1;
		if (mb > most)
			mb = l.schedule == SL_SCHED_INTERLEAVED && most >= l.pp ? most - most % l.pp : most;
		l.microbatches = mb;
	}
	return l;
}

sl_layout sl_lsetup_target(const sl_lsetup *s)
{
	sl_lsetup t = *s;
	if (s->to_tp)
		t.layout.tp = s->to_tp;
	if (s->to_pp)
		t.layout.pp = s->to_pp;
	if (s->to_dp)
		t.layout.dp = s->to_dp;
	sl_layout l = sl_lsetup_layout(&t);
	if (l.dp < 2)
		l.zero1 = 0;
	if (l.tp < 2)
		l.seq_parallel = 0;
	return l;
}

/* ---- setup keys ---- */

enum key {
	K_PRESET, K_DEVICES, K_PER_NODE, K_TOPOLOGY, K_BANDWIDTH, K_LATENCY, K_INTER_BANDWIDTH,
	K_INTER_LATENCY, K_FLOPS, K_MEMORY, K_TIMING, K_STRATEGY, K_M, K_K, K_N, K_ALGO, K_OP,
	K_BYTES, K_SEED,
	/* training */
	K_LAYERS, K_HIDDEN, K_FFN, K_HEADS, K_SEQ, K_BATCH, K_TP, K_PP, K_DP, K_SCHEDULE, K_CHUNKS,
	K_MICROBATCHES, K_SEQ_PARALLEL, K_ZERO1, K_MESH_ORDER, K_STEPS,
	/* resharding */
	K_TO_TP, K_TO_PP, K_TO_DP, K_NKEYS
};

static const char *const key_names[K_NKEYS] = {
	"preset", "devices", "per-node", "topology", "bandwidth", "latency", "inter-bandwidth",
	"inter-latency", "flops", "memory", "timing", "strategy", "m", "k", "n", "algo", "op",
	"bytes", "seed",
	"layers", "hidden", "ffn", "heads", "seq", "batch", "tp", "pp", "dp", "schedule", "chunks",
	"microbatches", "sequence-parallel", "zero1", "mesh-order", "steps",
	"to-tp", "to-pp", "to-dp",
};

int sl_setup_key(const char *key)
{
	for (int i = 0; i < K_NKEYS; i++)
		if (strcmp(key, key_names[i]) == 0)
			return i;
	return -1;
}

const char *sl_setup_key_name(int i)
{
	return i >= 0 && i < K_NKEYS ? key_names[i] : "?";
}

const char *sl_setup_keys(void)
{
	return "preset devices per-node topology bandwidth latency inter-bandwidth inter-latency "
	       "flops memory timing strategy m k n algo op bytes seed layers hidden ffn heads seq "
	       "batch tp pp dp schedule chunks microbatches sequence-parallel zero1 mesh-order "
	       "steps to-tp to-pp to-dp";
}

static int yes_no(const char *key, const char *value, int *out, sl_err *err)
{
	if (strcmp(value, "yes") == 0 || strcmp(value, "no") == 0) {
		*out = value[0] == 'y';
		return SL_OK;
	}
	return sl_fail(err, SL_EINVAL, "%s: '%s' is not yes or no", key, value);
}

static int word_list(const char *key, const char *value, const char *choices, sl_err *err)
{
	char near[32];
	if (sl_closest_in(value, choices, near, sizeof near))
		return sl_fail(err, SL_EINVAL, "%s: '%s' is not one of: %s (did you mean '%s'?)", key,
			       value, choices, near);
	return sl_fail(err, SL_EINVAL, "%s: '%s' is not one of: %s", key, value, choices);
}

int sl_lsetup_set(sl_lsetup *s, const char *key, const char *value, sl_err *err)
{
	int k = sl_setup_key(key);
	sl_cluster_config *c = &s->sc.cluster;
	double d;
	long l;
	sl_err e = {0};
	if (k < 0)
		return sl_fail(err, SL_EINVAL, "unknown setup key '%s' (keys: %s)", key, sl_setup_keys());
	if (!value || !*value)
		return sl_fail(err, SL_EINVAL, "%s needs a value: %s=VALUE", key, key);
	switch ((enum key)k) {
	case K_PRESET: {
		const sl_preset *p = sl_preset_find(value);
		if (!p) {
			char names[160] = "";
			for (const sl_preset *q = sl_presets(); q->name; q++)
				snprintf(names + strlen(names), sizeof names - strlen(names), "%s%s",
					 names[0] ? " " : "", q->name);
			return sl_fail(err, SL_EINVAL, "preset: unknown preset '%s' (presets: %s)", value, names);
		}
		/* Lessons run the closed-form machine: the preset's BF16 peak
		 * for every GEMM, 4-byte elements (sl_cluster_config_default). */
		sl_precision keep = c->precision;
		c->precision = SL_PREC_BF16;
		sl_preset_apply(p, c);
		c->precision = keep;
		snprintf(s->sc.preset, sizeof s->sc.preset, "%s", p->name);
		return SL_OK;
	}
	case K_DEVICES:
	case K_PER_NODE:
		if (sl_parse_int(value, k == K_DEVICES ? 1 : 0, SL_MAX_DEVICES, key, &l, &e))
			return sl_fail(err, SL_EINVAL, "%s", e.msg);
		if (k == K_DEVICES)
			c->devices = (int)l;
		else
			c->devices_per_node = (int)l;
		return SL_OK;
	case K_TOPOLOGY:
		if (strcmp(value, "full") == 0)
			c->topology = SL_TOPO_FULL;
		else if (strcmp(value, "ring") == 0)
			c->topology = SL_TOPO_RING;
		else
			return word_list(key, value, "full ring", err);
		return SL_OK;
	case K_BANDWIDTH:
	case K_INTER_BANDWIDTH:
		if (sl_parse_rate(value, &d, &e))
			return sl_fail(err, SL_EINVAL, "%s: %s", key, e.msg);
		if (d < 1e3 || d > 1e15)
			return sl_fail(err, SL_EINVAL, "%s: %s is out of range (1KB/s to 1PB/s)", key, value);
		(k == K_BANDWIDTH ? &c->intra : &c->inter)->bandwidth = d;
		s->sc.preset[0] = 0;
		return SL_OK;
	case K_LATENCY:
	case K_INTER_LATENCY:
		if (sl_parse_time(value, &d, &e))
			return sl_fail(err, SL_EINVAL, "%s: %s", key, e.msg);
		if (d > 1)
			return sl_fail(err, SL_EINVAL, "%s: %s is out of range (0 to 1s)", key, value);
		(k == K_LATENCY ? &c->intra : &c->inter)->latency = d;
		s->sc.preset[0] = 0;
		return SL_OK;
	case K_FLOPS:
		if (sl_parse_flops(value, &d, &e))
			return sl_fail(err, SL_EINVAL, "flops: %s", e.msg);
		if (d < 1e6 || d > 1e18)
			return sl_fail(err, SL_EINVAL, "flops: %s is out of range (1MFLOP/s to 1000PFLOP/s)",
				       value);
		c->flops = d;
		s->sc.preset[0] = 0;
		return SL_OK;
	case K_MEMORY:
		if (sl_parse_bytes(value, &d, &e))
			return sl_fail(err, SL_EINVAL, "memory: %s", e.msg);
		if (d < 1024 || d > 1e15)
			return sl_fail(err, SL_EINVAL, "memory: %s is out of range (1KiB to 1PB)", value);
		c->memory = (uint64_t)d;
		s->sc.preset[0] = 0;
		return SL_OK;
	case K_TIMING:
		if (strcmp(value, "model") == 0)
			c->timing = SL_TIMING_MODEL;
		else if (strcmp(value, "measured") == 0)
			c->timing = SL_TIMING_MEASURED;
		else
			return word_list(key, value, "model measured", err);
		return SL_OK;
	case K_STRATEGY:
		if (sl_split_parse(value, &s->sc.gemm.split))
			return word_list(key, value, "single colwise rowwise", err);
		s->touched |= SL_FIG_KIND(SL_RUN_MATMUL);
		return SL_OK;
	case K_M:
	case K_K:
	case K_N:
		if (sl_parse_int(value, 1, 1000000, key, &l, &e))
			return sl_fail(err, SL_EINVAL, "%s", e.msg);
		*(k == K_M ? &s->sc.gemm.m : k == K_K ? &s->sc.gemm.k : &s->sc.gemm.n) = (int)l;
		s->touched |= SL_FIG_KIND(SL_RUN_MATMUL);
		return SL_OK;
	case K_ALGO:
		if (sl_algo_parse(value, &s->sc.gemm.algo))
			return word_list(key, value, "ring tree", err);
		return SL_OK;
	case K_OP:
		if (sl_coll_op_parse(value, &s->op))
			return word_list(key, value,
					 "allreduce allgather reducescatter broadcast reduce gather scatter "
					 "alltoall sendrecv",
					 err);
		s->touched |= SL_FIG_KIND(SL_RUN_COLLECTIVE);
		return SL_OK;
	case K_BYTES:
		if (sl_parse_bytes(value, &d, &e))
			return sl_fail(err, SL_EINVAL, "bytes: %s", e.msg);
		if (d < 4 || d > 1e12)
			return sl_fail(err, SL_EINVAL, "bytes: %s is out of range (4B to 1TB)", value);
		s->bytes = floor(d / 4) * 4; /* whole fp32 elements */
		s->touched |= SL_FIG_KIND(SL_RUN_COLLECTIVE);
		return SL_OK;
	case K_SEED:
		if (sl_parse_int(value, 0, 1000000000L, key, &l, &e))
			return sl_fail(err, SL_EINVAL, "%s", e.msg);
		s->sc.gemm.seed = (uint64_t)l;
		s->model.seed = (uint64_t)l;
		return SL_OK;
	case K_LAYERS:
	case K_HIDDEN:
	case K_FFN:
	case K_HEADS:
	case K_SEQ:
	case K_BATCH:
	case K_TP:
	case K_PP:
	case K_DP:
	case K_CHUNKS:
	case K_MICROBATCHES:
	case K_STEPS: {
		static const long hi[] = {[K_LAYERS] = 64, [K_HIDDEN] = 8192, [K_FFN] = 32768,
					  [K_HEADS] = 256, [K_SEQ] = 4096, [K_BATCH] = 1 << 20,
					  [K_TP] = SL_MAX_DEVICES, [K_PP] = SL_MAX_DEVICES,
					  [K_DP] = SL_MAX_DEVICES, [K_CHUNKS] = 16, [K_MICROBATCHES] = 1024,
					  [K_STEPS] = 20};
		if (sl_parse_int(value, k == K_HEADS ? 0 : 1, hi[k], key, &l, &e))
			return sl_fail(err, SL_EINVAL, "%s", e.msg);
		int *f[] = {[K_LAYERS] = &s->model.layers, [K_HIDDEN] = &s->model.hidden,
			    [K_FFN] = &s->model.ffn, [K_HEADS] = &s->model.heads, [K_SEQ] = &s->model.seq,
			    [K_BATCH] = &s->model.batch, [K_TP] = &s->layout.tp, [K_PP] = &s->layout.pp,
			    [K_DP] = &s->layout.dp, [K_CHUNKS] = &s->layout.chunks,
			    [K_MICROBATCHES] = &s->layout.microbatches, [K_STEPS] = &s->steps};
		*f[k] = (int)l;
		if (k == K_TP || k == K_PP || k == K_DP) /* training uses tp*pp*dp devices */
			c->devices = s->layout.tp * s->layout.pp * s->layout.dp;
		s->given_mb |= k == K_MICROBATCHES;
		s->given_v |= k == K_CHUNKS;
		s->touched |= SL_FIG_KIND(SL_RUN_TRAIN);
		return SL_OK;
	}
	case K_TO_TP:
	case K_TO_PP:
	case K_TO_DP:
		if (sl_parse_int(value, 1, SL_MAX_DEVICES, key, &l, &e))
			return sl_fail(err, SL_EINVAL, "%s", e.msg);
		*(k == K_TO_TP ? &s->to_tp : k == K_TO_PP ? &s->to_pp : &s->to_dp) = (int)l;
		s->touched |= SL_FIG_KIND(SL_RUN_RESHARD);
		return SL_OK;
	case K_SCHEDULE:
		if (sl_sched_parse(value, &s->layout.schedule))
			return word_list(key, value, "gpipe 1f1b interleaved", err);
		s->touched |= SL_FIG_KIND(SL_RUN_TRAIN);
		return SL_OK;
	case K_SEQ_PARALLEL:
	case K_ZERO1:
		s->touched |= SL_FIG_KIND(SL_RUN_TRAIN);
		return yes_no(key, value, k == K_ZERO1 ? &s->layout.zero1 : &s->layout.seq_parallel, err);
	case K_MESH_ORDER:
		if (sl_mesh_order_parse(value, s->layout.order))
			return sl_fail(err, SL_EINVAL, "mesh-order: '%s' is not an order of tp, pp and dp "
				       "(as in tp-dp-pp)", value);
		s->touched |= SL_FIG_KIND(SL_RUN_TRAIN);
		return SL_OK;
	case K_NKEYS:
		break;
	}
	return sl_fail(err, SL_EINVAL, "unknown setup key '%s'", key);
}

void sl_lsetup_describe(const sl_lsetup *s, char *buf, size_t n)
{
	const sl_cluster_config *c = &s->sc.cluster;
	char fl[32], mem[32], bw[32], lat[32], ibw[32], ilat[32], by[32];
	int nodes = c->devices_per_node > 0 ? c->devices / c->devices_per_node : 1;
	sl_fmt_flops(c->flops, fl, sizeof fl);
	sl_fmt_bytes((double)c->memory, mem, sizeof mem);
	sl_fmt_rate(c->intra.bandwidth, bw, sizeof bw);
	sl_fmt_time(c->intra.latency, lat, sizeof lat);
	sl_fmt_rate(c->inter.bandwidth, ibw, sizeof ibw);
	sl_fmt_time(c->inter.latency, ilat, sizeof ilat);
	sl_fmt_bytes(s->bytes, by, sizeof by);
	int len = snprintf(buf, n, "%d device%s%s%s (%s, %s each)", c->devices,
			   c->devices == 1 ? "" : "s", s->sc.preset[0] ? " like " : "", s->sc.preset,
			   fl, mem);
	if (len < 0 || (size_t)len >= n)
		return;
	if (nodes > 1)
		len += snprintf(buf + len, n - (size_t)len,
				" in %d nodes of %d; links %s + %s inside a node, %s + %s between", nodes,
				c->devices_per_node, bw, lat, ibw, ilat);
	else
		len += snprintf(buf + len, n - (size_t)len, " in one node%s; links %s + %s",
				c->topology == SL_TOPO_RING ? " wired as a ring" : "", bw, lat);
	if (len < 0 || (size_t)len >= n)
		return;
	unsigned show = s->touched ? s->touched : SL_FIG_KIND(SL_RUN_MATMUL);
	if (show & SL_FIG_KIND(SL_RUN_MATMUL))
		len += snprintf(buf + len, n - (size_t)len, "; matmul %s m=%d k=%d n=%d%s",
				sl_split_name(s->sc.gemm.split), s->sc.gemm.m, s->sc.gemm.k, s->sc.gemm.n,
				s->sc.gemm.split == SL_SPLIT_SINGLE && c->devices > 1 ? " (on one device)"
										       : "");
	if (len >= 0 && (size_t)len < n && (show & SL_FIG_KIND(SL_RUN_COLLECTIVE)))
		len += snprintf(buf + len, n - (size_t)len, "; collective %s of %s", sl_coll_op_name(s->op),
				by);
	if (len >= 0 && (size_t)len < n && (show & SL_FIG_KIND(SL_RUN_TRAIN))) {
		sl_layout l = sl_lsetup_layout(s);
		char heads[24] = "";
		if (s->model.heads)
			snprintf(heads, sizeof heads, ", %d heads", s->model.heads);
		len += snprintf(buf + len, n - (size_t)len,
				"; training %d block%s of width %d (ffn %d%s) on tp=%d pp=%d dp=%d",
				s->model.layers, s->model.layers == 1 ? "" : "s", s->model.hidden,
				s->model.ffn, heads, l.tp, l.pp, l.dp);
		if (len >= 0 && (size_t)len < n && l.pp > 1)
			len += snprintf(buf + len, n - (size_t)len, ", %s, %d micro-batches",
					sl_sched_name(l.schedule), l.microbatches);
	}
	if (len >= 0 && (size_t)len < n && (show & SL_FIG_KIND(SL_RUN_RESHARD))) {
		sl_layout t = sl_lsetup_target(s);
		len += snprintf(buf + len, n - (size_t)len,
				"; checkpoint resharded to tp=%d pp=%d dp=%d", t.tp, t.pp, t.dp);
	}
	if (len >= 0 && (size_t)len < n)
		snprintf(buf + len, n - (size_t)len, "%s%s",
			 s->sc.gemm.algo == SL_ALGO_TREE ? "; tree collectives" : "",
			 c->timing == SL_TIMING_MEASURED ? "; measured timing" : "");
}

/* ---- figures ---- */

#define MM SL_FIG_KIND(SL_RUN_MATMUL)
#define CO SL_FIG_KIND(SL_RUN_COLLECTIVE)
#define TR SL_FIG_KIND(SL_RUN_TRAIN)
#define RS SL_FIG_KIND(SL_RUN_RESHARD)
#define PL SL_FIG_KIND(SL_RUN_PLAN)
#define SU SL_FIG_SETUP

enum fig {
	F_DEVICES, F_NODES, F_PER_NODE, F_BANDWIDTH, F_LATENCY, F_INTER_BANDWIDTH, F_INTER_LATENCY,
	F_FLOPS, F_MEMORY, F_M, F_K, F_N, F_BYTES, F_X_BYTES, F_W_BYTES, F_Y_BYTES, F_WORK,
	F_TP, F_PP, F_DP, F_MICROBATCHES, F_CHUNKS, F_LAYERS, F_HIDDEN, F_FFN, F_HEADS, F_SEQ, F_BATCH,
	F_PARAMS, F_PARAM_BYTES, F_STEP_WORK,
	F_NSETUP
};

static const sl_figdef figs[] = {
	/* The set-up. */
	{"devices", SL_DIM_NONE, 0, SU, "number of devices"},
	{"nodes", SL_DIM_NONE, 0, SU, "number of nodes"},
	{"per_node", SL_DIM_NONE, 0, SU, "devices per node"},
	{"bandwidth", SL_DIM_RATE, 0, SU, "link bandwidth inside a node"},
	{"latency", SL_DIM_TIME, 0, SU, "link latency inside a node"},
	{"inter_bandwidth", SL_DIM_RATE, 0, SU, "link bandwidth between nodes"},
	{"inter_latency", SL_DIM_TIME, 0, SU, "link latency between nodes"},
	{"flops", SL_DIM_FLOPS, 0, SU, "compute rate of one device"},
	{"memory", SL_DIM_BYTES, 0, SU, "memory of one device"},
	{"m", SL_DIM_NONE, 0, SU, "rows of X and Y (the batch)"},
	{"k", SL_DIM_NONE, 0, SU, "columns of X, rows of W"},
	{"n", SL_DIM_NONE, 0, SU, "columns of W and Y"},
	{"bytes", SL_DIM_BYTES, 0, SU, "the collective's buffer"},
	{"x_bytes", SL_DIM_BYTES, 0, SU, "size of X in fp32"},
	{"w_bytes", SL_DIM_BYTES, 0, SU, "size of W in fp32"},
	{"y_bytes", SL_DIM_BYTES, 0, SU, "size of Y in fp32"},
	{"work", SL_DIM_WORK, 0, SU, "FLOP of the whole product, 2mkn"},
	{"tp", SL_DIM_NONE, 0, SU, "tensor-parallel size"},
	{"pp", SL_DIM_NONE, 0, SU, "pipeline stages"},
	{"dp", SL_DIM_NONE, 0, SU, "data-parallel replicas"},
	{"microbatches", SL_DIM_NONE, 0, SU, "micro-batches per replica and step"},
	{"chunks", SL_DIM_NONE, 0, SU, "model chunks per device (interleaved schedule)"},
	{"layers", SL_DIM_NONE, 0, SU, "blocks of the model"},
	{"hidden", SL_DIM_NONE, 0, SU, "the model's width h"},
	{"ffn", SL_DIM_NONE, 0, SU, "the MLP's inner width f"},
	{"heads", SL_DIM_NONE, 0, SU, "attention heads (0: MLP-only blocks)"},
	{"seq", SL_DIM_NONE, 0, SU, "tokens per sequence"},
	{"batch", SL_DIM_NONE, 0, SU, "sequences per training step"},
	{"params", SL_DIM_NONE, 0, SU, "the model's parameter count"},
	{"param_bytes", SL_DIM_BYTES, 0, SU, "the model's parameters in fp32"},
	{"step_work", SL_DIM_WORK, 0, SU, "GEMM FLOP of one training step"},
	/* What runs measured. */
	{"time", SL_DIM_TIME, 0, MM | CO | TR | RS | PL,
	 "emulated time of the run (the slowest device); of one step for training; of the "
	 "resharding (reads and writes) for reshard; of the best layout's step for a plan"},
	{"predicted", SL_DIM_TIME, 0, MM | CO | TR | RS, "the analytic model's time"},
	{"traffic", SL_DIM_BYTES, 0, MM | CO | TR | RS,
	 "bytes sent over links, all devices together (per step for training)"},
	{"fits", SL_DIM_NONE, 1, MM | CO | TR | RS | PL,
	 "whether every device's buffers fitted in its memory (a plan: whether any layout fits)"},
	{"mem_peak", SL_DIM_BYTES, 0, MM | CO | TR | RS | PL, "the most memory one device held"},
	{"link_bw", SL_DIM_RATE, 0, MM | CO | TR | RS,
	 "bandwidth of the slowest link the ring crosses"},
	{"link_latency", SL_DIM_TIME, 0, MM | CO | TR | RS,
	 "latency of the slowest link the ring crosses"},
	{"single_time", SL_DIM_TIME, 0, MM | TR, "the same work on one device"},
	{"speedup", SL_DIM_NONE, 0, MM | TR, "single_time / time"},
	{"compute_time", SL_DIM_TIME, 0, MM | TR, "compute part of the slowest (busiest) device"},
	{"comm_time", SL_DIM_TIME, 0, MM | TR, "communication part of the slowest (busiest) device"},
	{"error", SL_DIM_NONE, 0, MM, "largest relative error against one plain sgemm"},
	{"mem_need", SL_DIM_BYTES, 0, MM, "memory one device needs for its shard of the product"},
	{"crossover_bw", SL_DIM_RATE, 0, MM,
	 "link bandwidth below which the split is slower than one device (model)"},
	{"algbw", SL_DIM_RATE, 0, CO, "bytes / time"},
	{"busbw", SL_DIM_RATE, 0, CO, "algbw times the NCCL bus factor"},
	{"latency_term", SL_DIM_TIME, 0, CO, "the model's latency part (alpha terms)"},
	{"bandwidth_term", SL_DIM_TIME, 0, CO, "the model's bandwidth part (bytes / B terms)"},
	{"bubble", SL_DIM_NONE, 0, TR | PL, "pipeline bubble over the ideal time"},
	{"predicted_bubble", SL_DIM_NONE, 0, TR, "the analytic model's bubble"},
	{"idle", SL_DIM_NONE, 0, TR, "idle share of all devices' step time"},
	{"pipeline_time", SL_DIM_TIME, 0, TR, "from the step's start to the last backward"},
	{"ideal_time", SL_DIM_TIME, 0, TR, "the busiest device's compute and communication in it"},
	{"params_mem", SL_DIM_BYTES, 0, TR, "parameters one device holds (the most)"},
	{"grads_mem", SL_DIM_BYTES, 0, TR, "gradients one device holds (the most)"},
	{"optimizer_mem", SL_DIM_BYTES, 0, TR, "Adam state one device holds (the most)"},
	{"act_mem", SL_DIM_BYTES, 0, TR, "activations one device keeps for backward (peak, the most)"},
	{"tp_traffic", SL_DIM_BYTES, 0, TR, "bytes per step of tensor-parallel collectives"},
	{"pp_traffic", SL_DIM_BYTES, 0, TR, "bytes per step between pipeline stages"},
	{"dp_traffic", SL_DIM_BYTES, 0, TR, "bytes per step of data-parallel gradient exchange"},
	{"loss", SL_DIM_NONE, 0, TR | RS, "the loss of the last step"},
	{"loss_first", SL_DIM_NONE, 0, TR | RS, "the loss of the first step"},
	{"loss_error", SL_DIM_NONE, 0, TR, "largest relative difference of the losses from one device's"},
	{"held_params", SL_DIM_BYTES, 0, TR, "parameter bytes all devices hold, copies included"},
	{"saved_params", SL_DIM_BYTES, 0, TR,
	 "parameter bytes a sharded checkpoint saves: each element once, from its primary copy"},
	{"shards", SL_DIM_NONE, 0, TR, "pieces of tensors a sharded checkpoint saves"},
	{"ckpt_chunks", SL_DIM_NONE, 0, RS,
	 "chunks the saved checkpoint holds (each tensor's pieces)"},
	{"ckpt_bytes", SL_DIM_BYTES, 0, RS,
	 "bytes of the saved checkpoint's data files: parameters and Adam's two moments"},
	{"files", SL_DIM_NONE, 0, RS,
	 "data files of the saved checkpoint (one per writing device)"},
	{"save_time", SL_DIM_TIME, 0, RS, "emulated time of the save (the slowest writer)"},
	{"reads", SL_DIM_NONE, 0, RS, "stored chunks the new layout's devices read, all together"},
	{"read_bytes", SL_DIM_BYTES, 0, RS, "bytes they read, all together"},
	{"new_chunks", SL_DIM_NONE, 0, RS, "chunks of the checkpoint written under the new layout"},
	{"state_error", SL_DIM_NONE, 0, RS,
	 "largest difference of a parameter or Adam moment loaded under the new layout from the "
	 "saved one"},
	{"resume_error", SL_DIM_NONE, 0, RS,
	 "largest relative difference of the losses, saved and resumed, from uninterrupted "
	 "training on one device"},
	{"candidates", SL_DIM_NONE, 0, PL, "layouts the plan evaluated"},
	{"fit", SL_DIM_NONE, 0, PL, "layouts that fit in device memory"},
	{"best_tp", SL_DIM_NONE, 0, PL, "the best layout's tensor-parallel size"},
	{"best_pp", SL_DIM_NONE, 0, PL, "the best layout's pipeline stages"},
	{"best_dp", SL_DIM_NONE, 0, PL, "the best layout's data-parallel replicas"},
	{"best_mp", SL_DIM_NONE, 0, PL, "tp*pp of the best layout: the devices one replica spans"},
	{"best_microbatches", SL_DIM_NONE, 0, PL, "the best layout's micro-batches per replica"},
	{"best_chunks", SL_DIM_NONE, 0, PL, "the best layout's model chunks per device"},
	{"best_sp", SL_DIM_NONE, 1, PL, "whether the best layout uses sequence parallelism"},
	{"best_zero1", SL_DIM_NONE, 1, PL, "whether the best layout shards Adam's state (ZeRO-1)"},
	{"best_tp_across", SL_DIM_NONE, 1, PL, "whether the best layout's TP groups cross nodes"},
	{"best_pp_across", SL_DIM_NONE, 1, PL, "whether the best layout's pipeline crosses nodes"},
	{"best_dp_across", SL_DIM_NONE, 1, PL, "whether the best layout's DP groups cross nodes"},
	{"best_tokens", SL_DIM_NONE, 0, PL, "tokens per second of the best layout"},
	{"best_flops", SL_DIM_FLOPS, 0, PL, "model FLOP/s per device of the best layout"},
	{"best_comm", SL_DIM_NONE, 0, PL, "share of the best layout's step in communication"},
	{"runner_time", SL_DIM_TIME, 0, PL,
	 "the runner-up's step time (the next layout that is not the best's ZeRO-1 twin)"},
	{"moved_time", SL_DIM_TIME, 0, PL,
	 "the best layout's step time with its TP group moved to the other side of the node boundary"},
};

int sl_fig_count(void)
{
	return (int)(sizeof figs / sizeof figs[0]);
}

const sl_figdef *sl_fig(int i)
{
	return i >= 0 && i < sl_fig_count() ? &figs[i] : NULL;
}

int sl_fig_find(const char *name)
{
	for (int i = 0; i < sl_fig_count(); i++)
		if (strcmp(figs[i].name, name) == 0)
			return i;
	return -1;
}

double sl_fig_setup_value(int fig, const sl_lsetup *s)
{
	const sl_cluster_config *c = &s->sc.cluster;
	double m = s->sc.gemm.m, k = s->sc.gemm.k, n = s->sc.gemm.n;
	switch ((enum fig)fig) {
	case F_DEVICES: return c->devices;
	case F_NODES: return c->devices_per_node > 0 ? c->devices / c->devices_per_node : 1;
	case F_PER_NODE: return c->devices_per_node > 0 ? c->devices_per_node : c->devices;
	case F_BANDWIDTH: return c->intra.bandwidth;
	case F_LATENCY: return c->intra.latency;
	case F_INTER_BANDWIDTH: return c->inter.bandwidth;
	case F_INTER_LATENCY: return c->inter.latency;
	case F_FLOPS: return c->flops;
	case F_MEMORY: return (double)c->memory;
	case F_M: return m;
	case F_K: return k;
	case F_N: return n;
	case F_BYTES: return s->bytes;
	case F_X_BYTES: return 4 * m * k;
	case F_W_BYTES: return 4 * k * n;
	case F_Y_BYTES: return 4 * m * n;
	case F_WORK: return 2 * m * k * n;
	case F_NSETUP: break;
	default: break;
	}
	sl_layout l = sl_lsetup_layout(s);
	switch ((enum fig)fig) {
	case F_TP: return l.tp;
	case F_PP: return l.pp;
	case F_DP: return l.dp;
	case F_MICROBATCHES: return l.microbatches;
	case F_CHUNKS: return l.chunks;
	case F_LAYERS: return s->model.layers;
	case F_HIDDEN: return s->model.hidden;
	case F_FFN: return s->model.ffn;
	case F_HEADS: return s->model.heads;
	case F_SEQ: return s->model.seq;
	case F_BATCH: return s->model.batch;
	case F_PARAMS: return (double)sl_model_nparams(&s->model);
	case F_PARAM_BYTES: return 4.0 * (double)sl_model_nparams(&s->model);
	case F_STEP_WORK: return sl_model_step_flops(&s->model);
	default: break;
	}
	return NAN;
}
