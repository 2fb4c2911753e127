/* SPDX-License-Identifier: MIT */
/* setup.c - setup keys and figures: the names a lesson may use. */
#include "setup.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "device.h"
#include "hwfile.h"
#include "knobs.h"
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
			mb = l.schedule == SL_SCHED_INTERLEAVED && most >= l.pp ? most - most % l.pp
			                                                        : most;
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
	if (sl_layout_dpc(&l) < 2)
		l.zero = 0;
	if (l.tp < 2)
		l.seq_parallel = 0;
	return l;
}

/* ---- setup keys ---- */

/* The setup keys are the knob table's rows a lesson may set (knobs.h),
 * with the command line's names, ranges and messages; key i is the i-th
 * such row. */
static const sl_knob *key_row(int i)
{
	for (int r = 0, n = 0; r < sl_knob_count(); r++)
		if ((sl_knobs()[r].flags & SL_KF_SETUP) && n++ == i)
			return &sl_knobs()[r];
	return NULL;
}

int sl_setup_key(const char *key)
{
	const sl_knob *k;
	for (int i = 0; (k = key_row(i)); i++)
		if (strcmp(k->name, key) == 0 || (k->alias && strcmp(k->alias, key) == 0))
			return i;
	return -1;
}

const char *sl_setup_key_name(int i)
{
	const sl_knob *k = key_row(i);
	return k ? k->name : "?";
}

const char *sl_setup_keys(void)
{
	static char list[1024];
	if (!list[0]) {
		size_t len = 0;
		const sl_knob *k;
		for (int i = 0; (k = key_row(i)) && len < sizeof list; i++)
			len += (size_t)snprintf(list + len, sizeof list - len, "%s%s", i ? " " : "",
			                        k->name);
	}
	return list;
}

/* Which kind of run a group's keys set up (SETUP steps describe those). */
static unsigned touches(const sl_knob *k)
{
	switch (k->group) {
	case SL_KG_WORKLOAD:
		return k->code == SL_OPT_SEED ? 0 : SL_FIG_KIND(SL_RUN_MATMUL);
	case SL_KG_COLL:
		return SL_FIG_KIND(SL_RUN_COLLECTIVE);
	case SL_KG_LAYOUT:
	case SL_KG_MODEL:
		return SL_FIG_KIND(SL_RUN_TRAIN);
	case SL_KG_TARGET:
		return SL_FIG_KIND(SL_RUN_RESHARD);
	default:
		return 0;
	}
}

/* The preset (or hardware file) set, at the precision and efficiency set,
 * and then the figures set over it since, as the command line applies
 * them whatever their order.  The rate is the precision's: fp32 elements
 * at the preset's FP32 rate, bf16 at its BF16 rate. */
static void apply_hardware(sl_lsetup *s)
{
	sl_cluster_config *c = &s->sc.cluster;
	const sl_preset *p = s->hw ? s->hw : sl_preset_find(SL_PRESET_DEFAULT);
	if (!p)
		return;
	sl_cluster_config kept = *c;
	const sl_knob_dest from = {.cluster = &kept}, to = {.cluster = c};
	sl_preset_apply(p, c);
	for (int i = 0; i < sl_knob_count() && i < 128; i++)
		if (s->figs[i / 64] >> (i % 64) & 1) {
			const sl_knob *k = &sl_knobs()[i];
			sl_knob_store(k, &(sl_knob_val){.d = sl_knob_load(k, &from)}, &to);
		}
}

/* The keys whose value needs more than a store. */
static int set_special(sl_lsetup *s, const sl_knob *k, const sl_knob_val *v, sl_err *err)
{
	const char *value = v->s;
	switch (k->code) {
	case SL_OPT_PRESET:
	case SL_OPT_HARDWARE: {
		sl_err e = {0};
		const char *from = "";
		const sl_preset *p =
		    k->code == SL_OPT_PRESET ? sl_hw_find(value, &from, &e) : sl_hw_load(value, &e);
		if (!p)
			return k->code == SL_OPT_PRESET && !from
			           ? sl_fail(err, SL_EINVAL, "preset: %s", e.msg)
			           : sl_fail(err, SL_EINVAL, "%s", e.msg);
		s->hw = p;
		s->figs[0] = s->figs[1] = 0; /* the preset's figures, all of them */
		apply_hardware(s);
		snprintf(s->sc.preset, sizeof s->sc.preset, "%s", p->name);
		return SL_OK;
	}
	case SL_OPT_MODEL: {
		sl_model_file mf;
		sl_err e = {0};
		if (sl_model_file_find(value, &mf, &e))
			return sl_fail(err, SL_EINVAL, "model: %s", e.msg);
		sl_model_spec *m = &s->model;
		m->layers = mf.layers;
		m->hidden = mf.hidden;
		m->ffn = mf.ffn;
		m->heads = mf.heads;
		m->seq = mf.seq;
		m->batch = mf.batch;
		m->kv_heads = mf.kv_heads;
		m->ffn_kind = mf.ffn_kind;
		m->norm = mf.norm;
		m->vocab = mf.vocab;
		m->untie = mf.untie;
		m->pos_emb = mf.pos_emb;
		return SL_OK;
	}
	case SL_OPT_ORDER:
		if (sl_mesh_order_parse(value, s->layout.order))
			return sl_fail(
			    err, SL_EINVAL,
			    "mesh-order: '%s' is not an order of tp, pp and dp (as in tp-dp-pp)",
			    value);
		return SL_OK;
	case SL_OPT_STAGE_LAYERS: {
		sl_err e = {0};
		if (sl_stage_layers_parse(value, &s->layout, &e))
			return sl_fail(err, SL_EINVAL, "stage-layers: %s", e.msg);
		return SL_OK;
	}
	case SL_OPT_OP:
		s->op = (sl_coll_op)v->d;
		return SL_OK;
	case SL_OPT_BYTES: {
		/* One size, with the range of coll's sizes. */
		sl_knob_val b;
		sl_knob size = *sl_knob_of('b');
		size.name = k->name;
		if (sl_knob_parse(&size, "", value, &b, err))
			return SL_EINVAL;
		s->bytes = floor(b.d / 4) * 4; /* whole fp32 elements */
		return SL_OK;
	}
	case SL_OPT_TO_TP:
	case SL_OPT_TO_PP:
	case SL_OPT_TO_DP:
		*(k->code == SL_OPT_TO_TP   ? &s->to_tp
		  : k->code == SL_OPT_TO_PP ? &s->to_pp
		                            : &s->to_dp) = (int)v->d;
		return SL_OK;
	default:
		return sl_fail(err, SL_EINVAL, "%s: no lesson may set it", k->name);
	}
}

int sl_lsetup_set(sl_lsetup *s, const char *key, const char *value, sl_err *err)
{
	int i = sl_setup_key(key);
	if (i < 0)
		return sl_fail(err, SL_EINVAL, "unknown setup key '%s' (keys: %s)", key,
		               sl_setup_keys());
	const sl_knob *k = key_row(i);
	if (!value || !*value)
		return sl_fail(err, SL_EINVAL, "%s needs a value: %s=VALUE", key, key);
	sl_knob_val v;
	sl_knob as_written = *k; /* messages name the key as the lesson spells it */
	as_written.name = key;
	if (sl_knob_parse(&as_written, "", value, &v, err))
		return SL_EINVAL;
	const sl_knob_dest d = {.cluster = &s->sc.cluster,
	                        .gemm = &s->sc.gemm,
	                        .model = &s->model,
	                        .layout = &s->layout,
	                        .steps = &s->steps};
	if (!sl_knob_store(k, &v, &d) && set_special(s, k, &v, err))
		return SL_EINVAL;
	if (k->flags & SL_KF_FIGURE) {
		int r = sl_knob_index(k);
		s->figs[r / 64] |= (uint64_t)1 << (r % 64);
		/* The device computes no longer like the preset's once its
		 * compute figures change; memory and links set anew are shown
		 * in the line as they are. */
		if (k->code == SL_OPT_FLOPS || k->code == SL_OPT_MEMORY_BW ||
		    k->code == SL_OPT_KERNEL_LAUNCH)
			s->sc.preset[0] = 0;
	}
	if (k->code == SL_OPT_PRECISION || k->code == SL_OPT_EFFICIENCY) {
		apply_hardware(s);
	}
	if (k->code == SL_OPT_TP || k->code == SL_OPT_PP || k->code == SL_OPT_DP ||
	    k->code == SL_OPT_CP)
		s->sc.cluster.devices = sl_layout_devices(&s->layout);
	s->given_mb |= k->code == SL_OPT_MICROBATCHES;
	s->given_v |= k->code == SL_OPT_CHUNKS;
	s->touched |= touches(k);
	return SL_OK;
}

void sl_lsetup_describe(const sl_lsetup *s, char *buf, size_t n)
{
	const sl_cluster_config *c = &s->sc.cluster;
	char fl[32], mem[32], bw[32], lat[32], ibw[32], ilat[32], by[32];
	unsigned show = s->touched ? s->touched : SL_FIG_KIND(SL_RUN_MATMUL);
	/* A training run takes tp x cp x pp x dp devices, whatever devices
	 * says. */
	int ndev = c->devices;
	if (show == SL_FIG_KIND(SL_RUN_TRAIN)) {
		sl_layout tl = sl_lsetup_layout(s);
		ndev = sl_layout_devices(&tl);
	}
	int nodes =
	    c->devices_per_node > 0 ? (ndev + c->devices_per_node - 1) / c->devices_per_node : 1;
	sl_fmt_flops(c->flops, fl, sizeof fl);
	sl_fmt_bytes((double)c->memory, mem, sizeof mem);
	sl_fmt_rate(c->intra.bandwidth, bw, sizeof bw);
	sl_fmt_time(c->intra.latency, lat, sizeof lat);
	sl_fmt_rate(c->inter.bandwidth, ibw, sizeof ibw);
	sl_fmt_time(c->inter.latency, ilat, sizeof ilat);
	sl_fmt_bytes(s->bytes, by, sizeof by);
	/* The rate is named with the precision it is for: the elements'. */
	int len = snprintf(buf, n, "%d device%s%s%s (%s %s, %s each%s)", ndev, ndev == 1 ? "" : "s",
	                   s->sc.preset[0] ? " like " : "", s->sc.preset, fl,
	                   sl_precision_name(c->precision), mem,
	                   c->efficiency == SL_EFF_REALISTIC ? ", realistic efficiency" : "");
	if (len < 0 || (size_t)len >= n)
		return;
	if (nodes > 1)
		len += snprintf(buf + len, n - (size_t)len,
		                " in %d nodes of %d; links %s + %s inside a node, %s + %s between",
		                nodes, c->devices_per_node, bw, lat, ibw, ilat);
	else
		len += snprintf(buf + len, n - (size_t)len, " in one node%s; links %s + %s",
		                c->topology == SL_TOPO_RING ? " wired as a ring" : "", bw, lat);
	if (len < 0 || (size_t)len >= n)
		return;
	if (show & SL_FIG_KIND(SL_RUN_MATMUL))
		len += snprintf(
		    buf + len, n - (size_t)len, "; matmul %s m=%d k=%d n=%d%s",
		    sl_split_name(s->sc.gemm.split), s->sc.gemm.m, s->sc.gemm.k, s->sc.gemm.n,
		    s->sc.gemm.split == SL_SPLIT_SINGLE && c->devices > 1 ? " (on one device)"
		                                                          : "");
	if (len >= 0 && (size_t)len < n && (show & SL_FIG_KIND(SL_RUN_COLLECTIVE)))
		len += snprintf(buf + len, n - (size_t)len, "; collective %s of %s",
		                sl_coll_op_name(s->op), by);
	if (len >= 0 && (size_t)len < n && (show & SL_FIG_KIND(SL_RUN_TRAIN))) {
		sl_layout l = sl_lsetup_layout(s);
		char heads[24] = "";
		if (s->model.heads)
			snprintf(heads, sizeof heads, ", %d heads", s->model.heads);
		len += snprintf(buf + len, n - (size_t)len,
		                "; training %d block%s of width %d (ffn %d%s) on tp=%d pp=%d dp=%d",
		                s->model.layers, s->model.layers == 1 ? "" : "s", s->model.hidden,
		                s->model.ffn, heads, l.tp, l.pp, l.dp);
		/* Context parallelism (lesson 15): how many share a sequence, and
		 * how their keys and values move. */
		if (len >= 0 && (size_t)len < n && l.cp > 1)
			len += snprintf(buf + len, n - (size_t)len, " cp=%d (%s)", l.cp,
			                sl_cp_comm_name(l.cp_comm));
		if (len >= 0 && (size_t)len < n && l.seq_parallel && l.tp > 1)
			len += snprintf(buf + len, n - (size_t)len, ", sequence parallel");
		if (len >= 0 && (size_t)len < n && l.pp > 1)
			len += snprintf(buf + len, n - (size_t)len, ", %s, %d micro-batch%s",
			                sl_sched_name(l.schedule), l.microbatches,
			                l.microbatches == 1 ? "" : "es");
		/* Where the groups sit (lesson 10 is about it) and ZeRO-1
		 * (lesson 9), when they can matter. */
		int axes = (l.tp > 1) + (l.pp > 1) + (l.dp > 1);
		char order[32];
		if (len >= 0 && (size_t)len < n && axes > 1)
			len += snprintf(buf + len, n - (size_t)len, ", mesh %s",
			                sl_mesh_order_name(l.order, order, sizeof order));
		if (len >= 0 && (size_t)len < n && l.zero > 0 && l.dp > 1)
			len += snprintf(buf + len, n - (size_t)len, ", ZeRO-%d", l.zero);
		/* Communication beside compute (lesson 13), where it changes
		 * anything: the replicas' exchange; the buckets are the plain
		 * all-reduce's (ZeRO-2 and 3 go block by block). */
		int overlap = l.overlap == SL_OVERLAP_ON ||
		              (l.overlap == SL_OVERLAP_AUTO && c->efficiency == SL_EFF_REALISTIC);
		if (len >= 0 && (size_t)len < n && overlap && l.dp > 1) {
			char bk[32];
			sl_fmt_bytes(l.bucket_bytes > 0 ? l.bucket_bytes : SL_BUCKET_DEFAULT, bk,
			             sizeof bk);
			if (l.zero == 0)
				len += snprintf(buf + len, n - (size_t)len,
				                ", overlapped in buckets of %s", bk);
			else
				len += snprintf(buf + len, n - (size_t)len, ", overlapped");
		}
	}
	if (len >= 0 && (size_t)len < n && (show & SL_FIG_KIND(SL_RUN_RESHARD))) {
		sl_layout t = sl_lsetup_target(s);
		len += snprintf(buf + len, n - (size_t)len,
		                "; checkpoint resharded to tp=%d pp=%d dp=%d", t.tp, t.pp, t.dp);
	}
	if (len >= 0 && (size_t)len < n)
		snprintf(buf + len, n - (size_t)len, "%s%s%s%s",
		         s->sc.gemm.algo != SL_ALGO_RING ? "; collectives by " : "",
		         s->sc.gemm.algo != SL_ALGO_RING ? sl_algo_name(s->sc.gemm.algo) : "",
		         c->timing == SL_TIMING_MEASURED ? "; measured timing" : "",
		         c->timing_only ? "; timing only (no values computed)" : "");
}

/* ---- figures ---- */

#define MM SL_FIG_KIND(SL_RUN_MATMUL)
#define CO SL_FIG_KIND(SL_RUN_COLLECTIVE)
#define TR SL_FIG_KIND(SL_RUN_TRAIN)
#define RS SL_FIG_KIND(SL_RUN_RESHARD)
#define PL SL_FIG_KIND(SL_RUN_PLAN)
#define SU SL_FIG_SETUP

enum fig {
	F_DEVICES,
	F_NODES,
	F_PER_NODE,
	F_BANDWIDTH,
	F_LATENCY,
	F_INTER_BANDWIDTH,
	F_INTER_LATENCY,
	F_FLOPS,
	F_KERNEL_LAUNCH,
	F_BF16_FLOPS,
	F_FP32_FLOPS,
	F_MEMORY,
	F_M,
	F_K,
	F_N,
	F_BYTES,
	F_X_BYTES,
	F_W_BYTES,
	F_Y_BYTES,
	F_ELEM_BYTES,
	F_WORK,
	F_TP,
	F_PP,
	F_DP,
	F_CP,
	F_MICROBATCHES,
	F_CHUNKS,
	F_LAYERS,
	F_HIDDEN,
	F_FFN,
	F_HEADS,
	F_SEQ,
	F_BATCH,
	F_PARAMS,
	F_PARAM_BYTES,
	F_STEP_WORK,
	F_ZERO,
	F_BUCKET,
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
    {"kernel_launch", SL_DIM_TIME, 0, SU, "the cost of launching a kernel (realistic efficiency)"},
    {"bf16_flops", SL_DIM_FLOPS, 0, SU, "the device's peak rate in bf16"},
    {"fp32_flops", SL_DIM_FLOPS, 0, SU, "the device's peak rate in fp32"},
    {"memory", SL_DIM_BYTES, 0, SU, "memory of one device"},
    {"m", SL_DIM_NONE, 0, SU, "rows of X and Y (the batch)"},
    {"k", SL_DIM_NONE, 0, SU, "columns of X, rows of W"},
    {"n", SL_DIM_NONE, 0, SU, "columns of W and Y"},
    {"bytes", SL_DIM_BYTES, 0, SU, "the collective's buffer"},
    {"x_bytes", SL_DIM_BYTES, 0, SU, "size of X in the precision set"},
    {"w_bytes", SL_DIM_BYTES, 0, SU, "size of W in the precision set"},
    {"y_bytes", SL_DIM_BYTES, 0, SU, "size of Y in the precision set"},
    {"elem_bytes", SL_DIM_BYTES, 0, SU, "bytes of one element in the precision set"},
    {"work", SL_DIM_WORK, 0, SU, "FLOP of the whole product, 2mkn"},
    {"tp", SL_DIM_NONE, 0, SU, "tensor-parallel size"},
    {"pp", SL_DIM_NONE, 0, SU, "pipeline stages"},
    {"dp", SL_DIM_NONE, 0, SU, "data-parallel replicas"},
    {"cp", SL_DIM_NONE, 0, SU, "context-parallel size: devices sharing each sequence"},
    {"microbatches", SL_DIM_NONE, 0, SU, "micro-batches per replica and step"},
    {"chunks", SL_DIM_NONE, 0, SU, "model chunks per device (interleaved schedule)"},
    {"layers", SL_DIM_NONE, 0, SU, "blocks of the model"},
    {"hidden", SL_DIM_NONE, 0, SU, "the model's width h"},
    {"ffn", SL_DIM_NONE, 0, SU, "the MLP's inner width f"},
    {"heads", SL_DIM_NONE, 0, SU, "attention heads (0: MLP-only blocks)"},
    {"seq", SL_DIM_NONE, 0, SU, "tokens per sequence"},
    {"batch", SL_DIM_NONE, 0, SU, "sequences per training step"},
    {"params", SL_DIM_NONE, 0, SU, "the model's parameter count"},
    {"param_bytes", SL_DIM_BYTES, 0, SU, "the model's parameters in the precision set"},
    {"step_work", SL_DIM_WORK, 0, SU, "GEMM FLOP of one training step"},
    {"zero_stage", SL_DIM_NONE, 0, SU, "ZeRO stage over the data-parallel replicas (0 to 3)"},
    {"bucket", SL_DIM_BYTES, 0, SU, "the data-parallel gradient bucket with overlap"},
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
    {"exposed_time", SL_DIM_TIME, 0, TR,
     "communication the compute waited for, not hidden beside it (the most of any device)"},
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
    {"cp_traffic", SL_DIM_BYTES, 0, TR,
     "bytes per step of context parallelism's keys, values and their gradients"},
    {"loss", SL_DIM_NONE, 0, TR | RS, "the loss of the last step"},
    {"loss_first", SL_DIM_NONE, 0, TR | RS, "the loss of the first step"},
    {"loss_error", SL_DIM_NONE, 0, TR,
     "largest relative difference of the losses from one device's"},
    {"held_params", SL_DIM_BYTES, 0, TR, "parameter bytes all devices hold, copies included"},
    {"saved_params", SL_DIM_BYTES, 0, TR,
     "parameter bytes a sharded checkpoint saves: each element once, from its primary copy"},
    {"shards", SL_DIM_NONE, 0, TR, "pieces of tensors a sharded checkpoint saves"},
    {"ckpt_chunks", SL_DIM_NONE, 0, RS, "chunks the saved checkpoint holds (each tensor's pieces)"},
    {"ckpt_bytes", SL_DIM_BYTES, 0, RS,
     "bytes of the saved checkpoint's data files: parameters and Adam's two moments"},
    {"files", SL_DIM_NONE, 0, RS, "data files of the saved checkpoint (one per writing device)"},
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
	case F_DEVICES:
		return c->devices;
	case F_NODES:
		return c->devices_per_node > 0 ? c->devices / c->devices_per_node : 1;
	case F_PER_NODE:
		return c->devices_per_node > 0 ? c->devices_per_node : c->devices;
	case F_BANDWIDTH:
		return c->intra.bandwidth;
	case F_LATENCY:
		return c->intra.latency;
	case F_INTER_BANDWIDTH:
		return c->inter.bandwidth;
	case F_INTER_LATENCY:
		return c->inter.latency;
	case F_FLOPS:
		return c->flops;
	case F_KERNEL_LAUNCH:
		return c->efficiency == SL_EFF_REALISTIC ? c->dm.launch_s : 0;
	case F_BF16_FLOPS:
	case F_FP32_FLOPS: {
		const sl_preset *p = s->hw ? s->hw : sl_preset_find(SL_PRESET_DEFAULT);
		sl_cluster_config at = *c;
		at.precision = fig == F_BF16_FLOPS ? SL_PREC_BF16 : SL_PREC_FP32;
		sl_preset_apply(p, &at);
		return at.flops;
	}
	case F_MEMORY:
		return (double)c->memory;
	case F_M:
		return m;
	case F_K:
		return k;
	case F_N:
		return n;
	case F_BYTES:
		return s->bytes;
	case F_X_BYTES:
		return sl_elem_bytes(c) * m * k;
	case F_W_BYTES:
		return sl_elem_bytes(c) * k * n;
	case F_Y_BYTES:
		return sl_elem_bytes(c) * m * n;
	case F_ELEM_BYTES:
		return sl_elem_bytes(c);
	case F_WORK:
		return 2 * m * k * n;
	case F_NSETUP:
		break;
	default:
		break;
	}
	sl_layout l = sl_lsetup_layout(s);
	switch ((enum fig)fig) {
	case F_TP:
		return l.tp;
	case F_PP:
		return l.pp;
	case F_DP:
		return l.dp;
	case F_CP:
		return l.cp;
	case F_MICROBATCHES:
		return l.microbatches;
	case F_CHUNKS:
		return l.chunks;
	case F_LAYERS:
		return s->model.layers;
	case F_HIDDEN:
		return s->model.hidden;
	case F_FFN:
		return s->model.ffn;
	case F_HEADS:
		return s->model.heads;
	case F_SEQ:
		return s->model.seq;
	case F_BATCH:
		return s->model.batch;
	case F_PARAMS:
		return (double)sl_model_nparams(&s->model);
	case F_PARAM_BYTES:
		return sl_elem_bytes(&s->sc.cluster) * (double)sl_model_nparams(&s->model);
	case F_STEP_WORK:
		return sl_model_step_flops(&s->model);
	case F_ZERO:
		return l.zero;
	case F_BUCKET:
		return l.bucket_bytes > 0 ? l.bucket_bytes : SL_BUCKET_DEFAULT;
	default:
		break;
	}
	return NAN;
}
