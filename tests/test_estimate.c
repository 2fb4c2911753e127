/* SPDX-License-Identifier: MIT */
/* test_estimate.c - sl_train_estimate, the planner's analytic model: on a
 * grid of layouts that takes every replay method (one device per stage,
 * one replica, a period of a mixed TP ring, every device) it gives the
 * figures of a timing-only run (which test_train_timing proves equal to a
 * full run); all methods agree; templates agree with literal recordings;
 * and it meets closed forms computed here, at 1024 devices too. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "testutil.h"
#include "train.h"
#include "device.h"

#define F4 4.0

struct lay {
	int tp, pp, dp;
	sl_sched k;
	int m, v, sp, z1;
	const char *order;
	int per_node;
	sl_topo topo;
	int heads, layers, batch, ffn;
	int want; /* the method AUTO should pick */
};

static void model_of(const struct lay *x, sl_model_spec *m)
{
	sl_model_default(m);
	m->layers = x->layers;
	m->hidden = 8;
	m->ffn = x->ffn ? x->ffn : 16;
	m->heads = x->heads;
	m->seq = x->heads ? 4 : 1;
	m->batch = x->batch;
}

static sl_layout layout_of(const struct lay *x)
{
	sl_layout l;
	sl_layout_default(&l);
	l.tp = x->tp;
	l.pp = x->pp;
	l.dp = x->dp;
	l.schedule = x->k;
	l.microbatches = x->m;
	l.chunks = x->v;
	l.seq_parallel = x->sp;
	l.zero = x->z1;
	if (x->order)
		assert_int_equal(sl_mesh_order_parse(x->order, l.order), SL_OK);
	return l;
}

static sl_cluster_config config_of(const struct lay *x)
{
	sl_cluster_config cfg = tu_config(x->tp * x->pp * x->dp, 450e9, 2e-6);
	cfg.devices_per_node = x->per_node;
	cfg.topology = x->topo;
	cfg.inter.bandwidth = 50e9;
	cfg.inter.latency = 5e-6;
	cfg.flops = 2e12;
	cfg.memory = (uint64_t)1 << 32;
	cfg.timing_only = 1;
	return cfg;
}

static void run_dry(const sl_model_spec *m, const sl_layout *l, const sl_cluster_config *cfg,
                    sl_train_report *rep)
{
	sl_err err = {0};
	sl_train *tr = sl_train_create_timing_only(m, l, cfg->devices, &err);
	if (!tr)
		fail_msg("create: %s", err.msg);
	sl_cluster *c = tu_create(cfg);
	if (sl_train_run(tr, c, 1, rep, &err))
		fail_msg("run: %s", err.msg);
	sl_train_destroy(tr);
	sl_cluster_destroy(c);
}

#define CLOSE(got, want, what) tu_check_close(got, want, 1e-12, what)

/* Every figure of the estimate against the run's. */
static void same_as_run(const sl_estimate *e, const sl_train_report *r, const char *name)
{
	char what[160];
	double step = r->step_s;
	snprintf(what, sizeof what, "%s: step time", name);
	CLOSE(e->step_s, step, what);
	snprintf(what, sizeof what, "%s: pipeline time", name);
	CLOSE(e->pipeline_s, r->pipeline_s, what);
	snprintf(what, sizeof what, "%s: ideal time", name);
	CLOSE(e->ideal_s, r->ideal_s, what);
	snprintf(what, sizeof what, "%s: FLOPs", name);
	CLOSE(e->flops_per_step, r->flops_per_step, what);
	if (fabs(e->bubble_fraction - r->bubble_fraction) > 1e-9 ||
	    fabs(e->idle_fraction - r->idle_fraction) > 1e-9)
		fail_msg("%s: bubble %.12g/%.12g idle %.12g/%.12g", name, e->bubble_fraction,
		         r->bubble_fraction, e->idle_fraction, r->idle_fraction);
	double comm = 0, comm_max = 0;
	uint64_t peak = 0, sent[SL_TR_NKINDS] = {0}, recv[SL_TR_NKINDS] = {0};
	int pd = 0;
	for (int i = 0; i < r->ndev; i++) {
		const sl_train_dev *d = &r->dev[i];
		comm += d->comm_s / r->ndev;
		comm_max = d->comm_s > comm_max ? d->comm_s : comm_max;
		if (d->mem_peak_bytes > peak) {
			peak = d->mem_peak_bytes;
			pd = i;
		}
		for (int k = 0; k < SL_TR_NKINDS; k++) {
			sent[k] = d->sent[k] > sent[k] ? d->sent[k] : sent[k];
			recv[k] = d->received[k] > recv[k] ? d->received[k] : recv[k];
		}
	}
	if (fabs(e->comm_s - comm) > 1e-12 * step || fabs(e->comm_max_s - comm_max) > 1e-12 * step)
		fail_msg("%s: communication %.17g/%.17g, most %.17g/%.17g", name, e->comm_s, comm,
		         e->comm_max_s, comm_max);
	const sl_train_dev *d = &r->dev[pd];
	if (e->mem_peak_bytes != peak || e->peak_dev != pd || e->params_bytes != d->params_bytes ||
	    e->grads_bytes != d->grads_bytes || e->optimizer_bytes != d->optimizer_bytes ||
	    e->act_peak_bytes != d->act_peak_bytes ||
	    e->workspace_peak_bytes != d->workspace_peak_bytes)
		fail_msg("%s: peak memory %llu on device %d, the run's %llu on device %d", name,
		         (unsigned long long)e->mem_peak_bytes, e->peak_dev,
		         (unsigned long long)peak, pd);
	for (int k = 0; k < SL_TR_NKINDS; k++)
		if (e->sent[k] != sent[k] || e->received[k] != recv[k])
			fail_msg("%s: %s traffic %llu/%llu", name,
			         sl_traffic_name((sl_traffic_kind)k),
			         (unsigned long long)e->sent[k], (unsigned long long)sent[k]);
}

static const struct lay grid[] = {
    /* tp pp dp  schedule          m  v sp z1 order       node topology   heads L  B  f  want */
    {1, 1, 1, SL_SCHED_1F1B, 1, 1, 0, 0, NULL, 0, SL_TOPO_FULL, 4, 4, 8, 0, SL_EST_STAGE},
    {4, 1, 1, SL_SCHED_1F1B, 2, 1, 0, 0, NULL, 0, SL_TOPO_FULL, 4, 2, 8, 0, SL_EST_STAGE},
    /* a TP ring over two nodes: every other link between nodes */
    {4, 1, 2, SL_SCHED_1F1B, 2, 1, 1, 1, NULL, 2, SL_TOPO_FULL, 4, 2, 8, 0, SL_EST_SLICE},
    /* fc1 columns 10 over 4 ranks: ranks differ */
    {4, 2, 1, SL_SCHED_1F1B, 2, 1, 0, 0, NULL, 0, SL_TOPO_FULL, 4, 4, 8, 10, SL_EST_SLICE},
    /* 8 sequences over 3 replicas: replicas differ */
    {1, 2, 3, SL_SCHED_1F1B, 2, 1, 0, 1, NULL, 0, SL_TOPO_FULL, 4, 4, 8, 0, SL_EST_FULL},
    {1, 4, 1, SL_SCHED_GPIPE, 4, 1, 0, 0, NULL, 2, SL_TOPO_FULL, 4, 8, 8, 0, SL_EST_STAGE},
    {1, 2, 1, SL_SCHED_INTERLEAVED, 4, 2, 0, 0, NULL, 0, SL_TOPO_FULL, 4, 8, 8, 0, SL_EST_STAGE},
    {2, 2, 2, SL_SCHED_1F1B, 2, 1, 1, 1, NULL, 4, SL_TOPO_FULL, 4, 4, 8, 0, SL_EST_STAGE},
    {2, 2, 2, SL_SCHED_1F1B, 2, 1, 1, 1, "dp-tp-pp", 4, SL_TOPO_FULL, 4, 4, 8, 0, SL_EST_STAGE},
    {2, 2, 2, SL_SCHED_INTERLEAVED, 2, 2, 0, 0, "pp-dp-tp", 2, SL_TOPO_FULL, 4, 8, 8, 0,
     SL_EST_STAGE},
    {2, 1, 2, SL_SCHED_1F1B, 1, 1, 1, 0, NULL, 2, SL_TOPO_FULL, 0, 3, 8, 0, SL_EST_STAGE},
    /* sequence parallelism over rows that do not split evenly: 3 tokens over 2 */
    {2, 2, 1, SL_SCHED_GPIPE, 2, 1, 1, 0, NULL, 0, SL_TOPO_FULL, 0, 4, 6, 0, SL_EST_SLICE},
    /* the ring topology: pairs further apart pay a latency per hop */
    {2, 1, 2, SL_SCHED_1F1B, 2, 1, 0, 1, "dp-tp-pp", 0, SL_TOPO_RING, 4, 2, 8, 0, SL_EST_STAGE},
    /* TP over three nodes of two: a period of two ranks */
    {6, 1, 1, SL_SCHED_1F1B, 2, 1, 0, 0, NULL, 2, SL_TOPO_FULL, 6, 2, 4, 12, SL_EST_SLICE},
    /* stages innermost, nodes of 2: replica 0's first hop stays in its node,
     * replica 1's crosses, replicas 2 and 3 are like 0 and 1 */
    {1, 3, 4, SL_SCHED_1F1B, 2, 1, 0, 0, "pp-dp-tp", 2, SL_TOPO_FULL, 4, 3, 8, 0, SL_EST_REPLICA},
    /* six devices a replica on nodes of 4: two kinds of replica, TP rings too */
    {2, 3, 4, SL_SCHED_1F1B, 2, 1, 1, 1, "pp-tp-dp", 4, SL_TOPO_FULL, 4, 3, 8, 0, SL_EST_REPLICA},
    /* the same with GPipe's schedule and ZeRO-1 */
    {1, 3, 4, SL_SCHED_GPIPE, 2, 1, 0, 1, "pp-dp-tp", 2, SL_TOPO_FULL, 4, 3, 8, 0, SL_EST_REPLICA},
};

static void name_of(const struct lay *x, char *buf, size_t n)
{
	snprintf(buf, n, "tp=%d pp=%d dp=%d %s m=%d v=%d sp=%d z1=%d %s node %d%s", x->tp, x->pp,
	         x->dp, sl_sched_name(x->k), x->m, x->v, x->sp, x->z1,
	         x->order ? x->order : "tp-dp-pp", x->per_node,
	         x->topo == SL_TOPO_RING ? " ring" : "");
}

/* The timing-only run of m under l on cfg, and the estimate by every
 * method against it: AUTO picks want (SL_EST_AUTO: any), and every method
 * that applies gives the same figures. */
static void every_method_equals_run(const sl_model_spec *m, const sl_layout *l,
                                    const sl_cluster_config *cfg, int want, const char *name)
{
	sl_train_report rep;
	run_dry(m, l, cfg, &rep);
	sl_err err = {0};
	for (int how = SL_EST_AUTO; how <= SL_EST_FULL; how++) {
		sl_estimate f;
		if (sl_train_estimate(m, l, cfg, (sl_est_method)how, &f, &err))
			fail_msg("%s: method %d: %s", name, how, err.msg);
		if (how == SL_EST_AUTO && want != SL_EST_AUTO && (int)f.method != want)
			fail_msg("%s: replayed by method %d, want %d", name, f.method, want);
		assert_true((int)f.method >= how);
		char nm[144];
		snprintf(nm, sizeof nm, "%.120s (method %d)", name, how);
		same_as_run(&f, &rep, nm);
	}
	/* The planner's floor never exceeds the run's step: a floor above it
	 * would leave a layout that could rank untimed. */
	sl_est_rec *rec;
	if (sl_est_record(m, l, cfg->devices, 0, cfg, &rec, &err))
		fail_msg("%s: %s", name, err.msg);
	double floor = sl_est_compute_floor(rec, cfg);
	sl_est_rec_free(rec);
	if (!(floor <= rep.step_s * (1 + 1e-12)))
		fail_msg("%s: floor %.17g s above the run's step %.17g s", name, floor, rep.step_s);
	sl_train_report_free(&rep);
}

static void test_estimate_equals_run(void **state)
{
	(void)state;
	for (size_t g = 0; g < sizeof grid / sizeof grid[0]; g++) {
		const struct lay *x = &grid[g];
		char name[128];
		name_of(x, name, sizeof name);
		sl_model_spec m;
		model_of(x, &m);
		if (x->heads == 6)
			m.hidden = 12;
		sl_layout l = layout_of(x);
		sl_cluster_config cfg = config_of(x);
		every_method_equals_run(&m, &l, &cfg, x->want, name);
	}
}

/* Llama's kinds (grouped-query attention, a SwiGLU MLP) through every
 * method: the same figures as the timing-only run. */
static const struct lay llama_grid[] = {
    /* tp pp dp  schedule          m  v sp z1 order       node topology   heads L  B  f  want */
    {2, 2, 2, SL_SCHED_1F1B, 2, 1, 1, 1, NULL, 4, SL_TOPO_FULL, 4, 4, 8, 0, SL_EST_STAGE},
    {2, 1, 2, SL_SCHED_1F1B, 2, 1, 0, 1, "dp-tp-pp", 0, SL_TOPO_RING, 4, 2, 8, 0, SL_EST_STAGE},
    {1, 2, 1, SL_SCHED_INTERLEAVED, 4, 2, 0, 0, NULL, 0, SL_TOPO_FULL, 4, 8, 8, 0, SL_EST_STAGE},
    /* 8 heads in 4 groups over two nodes of 2; fc1's 10 pairs over 4 ranks */
    {4, 1, 1, SL_SCHED_1F1B, 2, 1, 1, 0, NULL, 2, SL_TOPO_FULL, 8, 2, 8, 10, SL_EST_SLICE},
};

static void test_llama_kinds_estimate_equals_run(void **state)
{
	(void)state;
	for (size_t g = 0; g < sizeof llama_grid / sizeof llama_grid[0]; g++) {
		const struct lay *x = &llama_grid[g];
		char name[128];
		name_of(x, name, sizeof name);
		sl_model_spec m;
		model_of(x, &m);
		m.kv_heads = m.heads / 2;
		m.ffn_kind = SL_FFN_SWIGLU;
		sl_layout l = layout_of(x);
		sl_cluster_config cfg = config_of(x);
		every_method_equals_run(&m, &l, &cfg, x->want, name);
	}
}

static sl_cluster_config realistic_of(const struct lay *x, double attn_frac);

/* ZeRO-3 keeping each block's gathered parameters for its backward, with
 * PP and TP, overlapped or not, through every method on both machines. */
static void test_zero_keep_estimate_equals_run(void **state)
{
	(void)state;
	static const struct lay rows[] = {
	    {1, 2, 2, SL_SCHED_1F1B, 4, 1, 0, 3, NULL, 0, SL_TOPO_FULL, 4, 4, 8, 0, 0},
	    {2, 1, 2, SL_SCHED_1F1B, 2, 1, 1, 3, NULL, 2, SL_TOPO_FULL, 4, 2, 8, 0, 0},
	};
	for (size_t g = 0; g < sizeof rows / sizeof rows[0]; g++)
		for (int k = 0; k < 2; k++)
			for (int ov = SL_OVERLAP_ON; ov <= SL_OVERLAP_OFF; ov++) {
				const struct lay *x = &rows[g];
				char name[160];
				name_of(x, name, sizeof name);
				snprintf(name + strlen(name), sizeof name - strlen(name),
				         " keep %s %s", k ? "realistic" : "ideal",
				         sl_overlap_name(ov));
				sl_model_spec m;
				model_of(x, &m);
				sl_layout l = layout_of(x);
				l.zero_keep = 1;
				l.overlap = ov;
				sl_cluster_config cfg = k ? realistic_of(x, 0.6) : config_of(x);
				every_method_equals_run(&m, &l, &cfg, SL_EST_AUTO, name);
			}
}

/* Context parallelism through every method: the ring and the all-gather,
 * with TP, PP, DP and ZeRO-1, its ring inside a node and across nodes
 * (every other hop, and the whole ring), on a ring topology too. */
static void test_cp_estimate_equals_run(void **state)
{
	(void)state;
	static const struct {
		struct lay x;
		int cp, comm;
	} rows[] = {
	    {{1, 1, 1, SL_SCHED_1F1B, 1, 1, 0, 0, NULL, 0, SL_TOPO_FULL, 4, 4, 8, 0, 0},
	     2,
	     SL_CP_RING},
	    {{1, 1, 1, SL_SCHED_1F1B, 2, 1, 0, 0, NULL, 0, SL_TOPO_FULL, 4, 4, 8, 0, 0},
	     3,
	     SL_CP_ALLGATHER},
	    {{2, 1, 2, SL_SCHED_1F1B, 2, 1, 1, 1, NULL, 4, SL_TOPO_FULL, 4, 2, 8, 0, 0},
	     2,
	     SL_CP_RING},
	    {{1, 2, 1, SL_SCHED_1F1B, 4, 1, 0, 0, NULL, 2, SL_TOPO_FULL, 4, 4, 8, 0, 0},
	     4,
	     SL_CP_RING},
	    {{1, 2, 2, SL_SCHED_INTERLEAVED, 4, 2, 0, 1, "dp-pp-tp", 0, SL_TOPO_RING, 4, 8, 8, 0,
	      0},
	     2,
	     SL_CP_RING},
	    {{2, 1, 1, SL_SCHED_1F1B, 2, 1, 0, 0, NULL, 2, SL_TOPO_FULL, 4, 2, 8, 0, 0},
	     4,
	     SL_CP_ALLGATHER},
	};
	for (size_t g = 0; g < sizeof rows / sizeof rows[0]; g++) {
		const struct lay *x = &rows[g].x;
		char name[160];
		name_of(x, name, sizeof name);
		snprintf(name + strlen(name), sizeof name - strlen(name), " cp=%d %s", rows[g].cp,
		         sl_cp_comm_name(rows[g].comm));
		sl_model_spec m;
		model_of(x, &m);
		m.seq = 24;
		sl_layout l = layout_of(x);
		l.cp = rows[g].cp;
		l.cp_comm = rows[g].comm;
		l.attention = SL_ATTN_FLASH;
		/* the closed-form machine, and a realistic one (whose kernels beside
		 * the ring's hops run slower) */
		for (int k = 0; k < 2; k++) {
			sl_cluster_config cfg = k ? realistic_of(x, 0.6) : config_of(x);
			cfg.devices = sl_layout_devices(&l);
			every_method_equals_run(&m, &l, &cfg, SL_EST_AUTO, name);
		}
	}
}

/* A realistic device written out here (not a preset's figures). */
static sl_cluster_config realistic_of(const struct lay *x, double attn_frac)
{
	sl_cluster_config cfg = config_of(x);
	cfg.precision = SL_PREC_BF16;
	cfg.efficiency = SL_EFF_REALISTIC;
	cfg.dm = (sl_device_model){3e12, 0.8, 132, 256, 128, 64, 2e-6, attn_frac, 0, 0.189};
	return cfg;
}

/* The layouts the realistic machine's kinds go through every method on: one
 * device, pipelined with TP, DP, SP and ZeRO-1, TP of uneven fc1 shards, and
 * interleaved. */
static const struct lay realistic_rows[] = {
    {1, 1, 1, SL_SCHED_1F1B, 2, 1, 0, 0, NULL, 0, SL_TOPO_FULL, 4, 4, 8, 0, SL_EST_STAGE},
    {2, 2, 2, SL_SCHED_1F1B, 2, 1, 1, 1, NULL, 4, SL_TOPO_FULL, 4, 4, 8, 0, SL_EST_STAGE},
    {4, 2, 1, SL_SCHED_1F1B, 2, 1, 0, 0, NULL, 0, SL_TOPO_FULL, 4, 4, 8, 10, SL_EST_SLICE},
    {1, 2, 1, SL_SCHED_INTERLEAVED, 4, 2, 0, 0, NULL, 0, SL_TOPO_FULL, 4, 8, 8, 0, SL_EST_STAGE},
    /* rings across nodes with several members a node, which NCCL's
     * channels stripe over their adapters (sl_ring_stripes): DP rings of 8
     * with 4 a node, of 4 with 2 a node (ZeRO-1's reduce-scatter and
     * all-gather too), TP rings of 4 with 2 a node, and DP rings of 3 that
     * a node boundary splits 2 + 1 (the smaller run, 1: not striped) */
    {1, 1, 8, SL_SCHED_1F1B, 1, 1, 0, 0, NULL, 4, SL_TOPO_FULL, 4, 2, 8, 0, SL_EST_AUTO},
    {2, 1, 4, SL_SCHED_1F1B, 2, 1, 0, 1, "tp-dp-pp", 4, SL_TOPO_FULL, 4, 2, 8, 0, SL_EST_AUTO},
    {4, 2, 1, SL_SCHED_1F1B, 2, 1, 1, 0, "tp-pp-dp", 2, SL_TOPO_FULL, 4, 4, 8, 0, SL_EST_AUTO},
    {2, 2, 3, SL_SCHED_1F1B, 2, 1, 0, 0, "dp-tp-pp", 2, SL_TOPO_FULL, 4, 4, 12, 0, SL_EST_AUTO},
    /* interleaved pipelines whose steady exchanges send to the next and
     * the previous stage at once, and take from both (sl_port_share):
     * through one adapter when both are in other nodes (a stage a node),
     * through two ports when one is inside the node (two stages a node),
     * through one switch port when both are (a replica a node) */
    {2, 4, 2, SL_SCHED_INTERLEAVED, 8, 2, 0, 0, "tp-pp-dp", 2, SL_TOPO_FULL, 4, 8, 16, 0,
     SL_EST_AUTO},
    {1, 4, 1, SL_SCHED_INTERLEAVED, 8, 2, 0, 0, NULL, 2, SL_TOPO_FULL, 4, 8, 8, 0, SL_EST_AUTO},
    {1, 4, 2, SL_SCHED_INTERLEAVED, 8, 2, 0, 0, "pp-dp-tp", 4, SL_TOPO_FULL, 4, 8, 16, 0,
     SL_EST_AUTO},
};

/* Fused attention on a realistic machine: the estimate is the run by every
 * method, as the materialized core's is. */
static void test_flash_estimate_equals_run(void **state)
{
	(void)state;
	for (size_t g = 0; g < sizeof realistic_rows / sizeof realistic_rows[0]; g++)
		for (int a = 0; a < 2 * SL_ATTN_N; a++) {
			/* the second round with attention and hidden dropout and a
			 * pre-norm (and, on odd rows, RMS and selective recomputation) */
			int drop = a >= SL_ATTN_N;
			const struct lay *x = &realistic_rows[g];
			char name[160];
			name_of(x, name, sizeof name);
			snprintf(name + strlen(name), sizeof name - strlen(name), " %s%s",
			         sl_attention_name((sl_attention)(a % SL_ATTN_N)),
			         drop ? " dropout" : "");
			sl_model_spec m;
			model_of(x, &m);
			m.attn_dropout = drop ? 0.1f : 0.0f;
			m.hidden_dropout = drop ? 0.2f : 0.0f;
			m.norm = drop ? (g % 2 ? SL_NORM_RMS : SL_NORM_LAYER) : SL_NORM_NONE;
			sl_layout l = layout_of(x);
			l.attention = (sl_attention)(a % SL_ATTN_N);
			if (drop && g % 2)
				l.recompute = SL_RECOMPUTE_SELECTIVE;
			sl_cluster_config cfg = realistic_of(x, 0.6);
			every_method_equals_run(&m, &l, &cfg, x->want, name);
		}
}

/* A pipeline hop is timed by its port as well as its link: with the same
 * figures inside and between nodes, a stage whose two neighbours sit in
 * other nodes shares its adapter and one with a neighbour in its node does
 * not, so the replay must not stand one such device in for the other. */
static void test_ports_equal_figures(void **state)
{
	(void)state;
	const struct lay rows[] = {
	    {1, 4, 1, SL_SCHED_INTERLEAVED, 8, 2, 0, 0, NULL, 2, SL_TOPO_FULL, 4, 8, 8, 0, 0},
	    {1, 4, 2, SL_SCHED_INTERLEAVED, 8, 2, 0, 0, "pp-dp-tp", 2, SL_TOPO_FULL, 4, 8, 16, 0,
	     0},
	    {2, 3, 1, SL_SCHED_INTERLEAVED, 6, 2, 0, 0, NULL, 3, SL_TOPO_FULL, 4, 6, 6, 0, 0},
	    /* replicas 0 and 2, 1 and 3 alike only in their ports' kinds */
	    {1, 3, 4, SL_SCHED_INTERLEAVED, 6, 2, 0, 0, "pp-dp-tp", 2, SL_TOPO_FULL, 4, 6, 24, 0,
	     0},
	};
	for (size_t g = 0; g < sizeof rows / sizeof rows[0]; g++) {
		const struct lay *x = &rows[g];
		char name[160];
		name_of(x, name, sizeof name);
		snprintf(name + strlen(name), sizeof name - strlen(name), " equal figures");
		sl_model_spec m;
		model_of(x, &m);
		sl_layout l = layout_of(x);
		sl_cluster_config cfg = realistic_of(x, 0.6);
		cfg.inter = cfg.intra;
		every_method_equals_run(&m, &l, &cfg, SL_EST_AUTO, name);
	}
}

/* Fused attention against its closed forms, one device, one micro-batch of
 * B sequences, L layers of a heads of d:
 *  - it keeps no probabilities: L B a s^2 elements fewer kept;
 *  - its kernels do 4 s^2 d a head forward and 10 backward (the scores
 *    again, then dP, dV, dQ, dK), all at peak * attn_frac: halving the
 *    fraction adds L B a 14 s^2 d / (peak attn_frac) seconds;
 *  - on the ideal machine it adds only the backward's scores, L B a 2 s^2 d
 *    at the peak. */
static void test_flash_closed_forms(void **state)
{
	(void)state;
	const struct lay x = {1, 1, 1, SL_SCHED_1F1B, 1, 1, 0, 0, NULL, 0, SL_TOPO_FULL, 4, 3,
	                      4, 0, 0};
	sl_model_spec m;
	model_of(&x, &m);
	m.seq = 64; /* scores of 64 x 64 a head */
	double L = m.layers, B = m.batch, a = m.heads, s = m.seq, d = (double)m.hidden / m.heads;
	sl_layout l = layout_of(&x);
	sl_err err = {0};
	sl_estimate e[2][3]; /* [attention][ideal, realistic 0.6, realistic 0.3] */
	for (int at = 0; at < 2; at++)
		for (int k = 0; k < 3; k++) {
			l.attention = (sl_attention)at;
			sl_cluster_config cfg =
			    k ? realistic_of(&x, k == 1 ? 0.6 : 0.3) : config_of(&x);
			assert_int_equal(
			    sl_train_estimate(&m, &l, &cfg, SL_EST_AUTO, &e[at][k], &err), SL_OK);
		}
	double eb_ideal = 4, eb_real = 2; /* fp32 unless set; the realistic one is bf16 */
	assert_true(e[0][0].act_peak_bytes - e[1][0].act_peak_bytes ==
	            (uint64_t)(L * B * a * s * s * eb_ideal));
	assert_true(e[0][1].act_peak_bytes - e[1][1].act_peak_bytes ==
	            (uint64_t)(L * B * a * s * s * eb_real));
	sl_cluster_config ideal = config_of(&x);
	CLOSE(e[1][0].step_s - e[0][0].step_s, L * B * a * 2 * s * s * d / ideal.flops,
	      "ideal: the backward's scores again");
	CLOSE(e[1][0].flops_per_step - e[0][0].flops_per_step, L * B * a * 2 * s * s * d,
	      "executed FLOPs: the backward's scores again");
	CLOSE(e[1][2].step_s - e[1][1].step_s, L * B * a * 14 * s * s * d / (ideal.flops * 0.6),
	      "the fused kernels at half the rate");
}

/* A causal mask under fused attention, one device, one micro-batch: the
 * kernels skip the 128 x 128 tiles above the diagonal, so of a head's
 * 14 s^2 d executed FLOPs (4 forward, 10 backward) they run half plus the
 * diagonal tiles' share, (1/2 + 1/(2n)) of them for n = s / 128 tiles a
 * side, exactly; at s = 320 (tiles of 128, 128 and 64 rows) the row tiles
 * run 128 * 128 + 128 * 256 + 64 * 320 of the 320^2 elements.  The time
 * falls by the skipped FLOPs at the fused rate.  Materialized attention
 * does the whole s x s work either way: the same FLOPs and time. */
static void test_causal_flash_closed_forms(void **state)
{
	(void)state;
	const struct lay x = {1, 1, 1, SL_SCHED_1F1B, 1, 1, 0, 0, NULL, 0, SL_TOPO_FULL, 4, 3,
	                      4, 0, 0};
	const struct {
		int s;
		double share;
	} rows[] = {
	    {512, 0.5 + 1.0 / (2 * 4)},
	    {1024, 0.5 + 1.0 / (2 * 8)},
	    {320, (128.0 * 128 + 128.0 * 256 + 64.0 * 320) / (320.0 * 320)},
	};
	for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
		sl_model_spec m;
		model_of(&x, &m);
		m.seq = rows[i].s;
		double L = m.layers, B = m.batch, a = m.heads, s = m.seq;
		double d = (double)m.hidden / m.heads;
		double full_fl = L * B * a * 14 * s * s * d; /* the fused kernels' */
		sl_layout l = layout_of(&x);
		sl_err err = {0};
		sl_estimate e[2][2][SL_MASK_N]; /* [attention][ideal, realistic][mask] */
		for (int at = 0; at < 2; at++)
			for (int k = 0; k < 2; k++)
				for (int mk = 0; mk < SL_MASK_N; mk++) {
					l.attention = (sl_attention)at;
					m.mask = mk;
					sl_cluster_config cfg =
					    k ? realistic_of(&x, 0.6) : config_of(&x);
					assert_int_equal(sl_train_estimate(&m, &l, &cfg,
					                                   SL_EST_AUTO,
					                                   &e[at][k][mk], &err),
					                 SL_OK);
				}
		const int fl = SL_ATTN_FLASH, mat = SL_ATTN_MATERIALIZED;
		const int c = SL_MASK_CAUSAL, f = SL_MASK_FULL;
		double skipped = full_fl * (1 - rows[i].share);
		for (int k = 0; k < 2; k++) {
			CLOSE(e[fl][k][f].flops_per_step - e[fl][k][c].flops_per_step, skipped,
			      "flash: the tiles above the diagonal skipped");
			assert_true(e[mat][k][f].flops_per_step == e[mat][k][c].flops_per_step);
			assert_true(e[mat][k][f].step_s == e[mat][k][c].step_s);
			assert_true(e[fl][k][f].act_peak_bytes == e[fl][k][c].act_peak_bytes);
		}
		sl_cluster_config ideal = config_of(&x);
		CLOSE(e[fl][0][f].step_s - e[fl][0][c].step_s, skipped / ideal.flops,
		      "ideal: the skipped FLOPs at the peak");
		CLOSE(e[fl][1][f].step_s - e[fl][1][c].step_s, skipped / (ideal.flops * 0.6),
		      "realistic: the skipped FLOPs at the fused rate");
	}
}

/* Attention dropout against Korthikanti et al.'s terms, one device, one
 * micro-batch: with the scores in device memory it keeps the dropped
 * probabilities (eb bytes each) and the mask (a byte each) besides P:
 * L B a s^2 (eb + 1) bytes more (3 a s^2 b a layer in bf16, their 5 a s^2 b
 * less the 2 a s^2 b of P); fused attention keeps none of it.  Its kernels
 * read P and write both (2 eb + 1 bytes an element), and the backward reads
 * the gradient and the mask and writes the gradient: L B a s^2 (4 eb + 2)
 * bytes at the memory's rate, none of it on the ideal machine. */
static void test_dropout_closed_forms(void **state)
{
	(void)state;
	const struct lay x = {1, 1, 1, SL_SCHED_1F1B, 1, 1, 0, 0, NULL, 0, SL_TOPO_FULL, 4, 3,
	                      4, 0, 0};
	sl_model_spec m;
	model_of(&x, &m);
	m.seq = 64;
	double L = m.layers, B = m.batch, a = m.heads, s = m.seq;
	sl_layout l = layout_of(&x);
	sl_err err = {0};
	sl_estimate e[2][2][2]; /* [attention][ideal, realistic][dropout] */
	for (int at = 0; at < 2; at++)
		for (int k = 0; k < 2; k++)
			for (int dr = 0; dr < 2; dr++) {
				l.attention = (sl_attention)at;
				m.attn_dropout = dr ? 0.1f : 0.0f;
				sl_cluster_config cfg = k ? realistic_of(&x, 0.6) : config_of(&x);
				assert_int_equal(sl_train_estimate(&m, &l, &cfg, SL_EST_AUTO,
				                                   &e[at][k][dr], &err),
				                 SL_OK);
			}
	const int mat = SL_ATTN_MATERIALIZED, fl = SL_ATTN_FLASH;
	double n = L * B * a * s * s;
	assert_true(e[mat][0][1].act_peak_bytes - e[mat][0][0].act_peak_bytes ==
	            (uint64_t)(n * (4 + 1)));
	assert_true(e[mat][1][1].act_peak_bytes - e[mat][1][0].act_peak_bytes ==
	            (uint64_t)(n * (2 + 1)));
	assert_true(e[fl][1][1].act_peak_bytes == e[fl][1][0].act_peak_bytes);
	CLOSE(e[mat][0][1].step_s, e[mat][0][0].step_s, "ideal: element-wise work is free");
	CLOSE(e[fl][1][1].step_s, e[fl][1][0].step_s, "fused: on chip");
	sl_cluster_config r = realistic_of(&x, 0.6);
	/* a kernel over every head of the micro-batch, forward and backward:
	 * one launch each a layer */
	double kernels = L * 2;
	CLOSE(e[mat][1][1].step_s - e[mat][1][0].step_s,
	      n * (4 * 2 + 2) / r.dm.mem_bw + kernels * r.dm.launch_s,
	      "the dropout kernels' bytes at the memory's rate, and their launches");
}

/* e[k][n]: the estimate of model off (n = 0) and on (n = 1), on the ideal
 * (k = 0) and the realistic machine (k = 1), both in layout x. */
static void estimate_pair(const sl_model_spec *off, const sl_model_spec *on, const struct lay *x,
                          sl_estimate e[2][2])
{
	sl_layout l = layout_of(x);
	sl_err err = {0};
	for (int k = 0; k < 2; k++)
		for (int n = 0; n < 2; n++) {
			sl_cluster_config cfg = k ? realistic_of(x, 0.6) : config_of(x);
			assert_int_equal(
			    sl_train_estimate(n ? on : off, &l, &cfg, SL_EST_AUTO, &e[k][n], &err),
			    SL_OK);
		}
}

/* Hidden dropout, one device, one micro-batch of R = B s rows, L layers
 * of two sub-blocks: each keeps its output's mask (a byte an element:
 * 2 L R h bytes more at the peak, in bf16 as in fp32).  Forward, the
 * dropout is inside the fused bias-dropout-residual kernel, which also
 * writes the mask: R h bytes more each, no launch.  Backward, a kernel
 * reads the gradient and the mask and writes the gradient: R h (2 eb + 1)
 * bytes and a launch each.  On the ideal machine none of it. */
static void test_hidden_dropout_closed_forms(void **state)
{
	(void)state;
	const struct lay x = {1, 1, 1, SL_SCHED_1F1B, 1, 1, 0, 0, NULL, 0, SL_TOPO_FULL, 4, 3,
	                      4, 0, 0};
	sl_model_spec m, d;
	model_of(&x, &m);
	m.seq = 16;
	d = m;
	d.hidden_dropout = 0.1f;
	double L = m.layers, R = (double)m.batch * m.seq, h = m.hidden;
	sl_estimate e[2][2]; /* [ideal, realistic][dropout] */
	estimate_pair(&m, &d, &x, e);
	for (int k = 0; k < 2; k++)
		assert_true(e[k][1].act_peak_bytes - e[k][0].act_peak_bytes ==
		            (uint64_t)(2 * L * R * h));
	CLOSE(e[0][1].step_s, e[0][0].step_s, "ideal: element-wise work is free");
	sl_cluster_config r = realistic_of(&x, 0.6);
	CLOSE(e[1][1].step_s - e[1][0].step_s,
	      2 * L * R * h * (1 + 2 * 2 + 1) / r.dm.mem_bw + 2 * L * r.dm.launch_s,
	      "the hidden dropout's bytes at the memory's rate, and its backward's launches");
}

/* Separate gradient accumulation against its closed form, one device, M
 * micro-batches, L layers of multi-head attention and a GeLU MLP of f:
 * after each weight-gradient product a kernel reads the new gradient and
 * the gradient array and writes the array, 3 eb bytes an element and a
 * launch: the weights are Wqkv (h x 3h), Wo (h x h), W1 (h x f) and W2
 * (f x h), 4 h^2 + 2 h f elements a layer, and with a vocabulary of V the
 * LM head's V x h (one tensor more).  Every micro-batch pays it.  Nothing on
 * the ideal machine; the values, the FLOPs and what is kept are the same. */
static void test_grad_accum_closed_forms(void **state)
{
	(void)state;
	const struct lay x = {1, 1, 1, SL_SCHED_1F1B, 3, 1, 0, 0, NULL, 0, SL_TOPO_FULL, 4, 3,
	                      6, 0, 0};
	for (int vocab = 0; vocab <= 37; vocab += 37) {
		sl_model_spec m, g;
		model_of(&x, &m);
		m.vocab = vocab;
		g = m;
		g.grad_accum = SL_GACC_SEPARATE;
		double L = m.layers, M = x.m, h = m.hidden, f = m.ffn;
		double elems = L * (4 * h * h + 2 * h * f) + vocab * h;
		double kernels = 4 * L + (vocab ? 1 : 0);
		sl_estimate e[2][2]; /* [ideal, realistic][separate] */
		estimate_pair(&m, &g, &x, e);
		for (int k = 0; k < 2; k++) {
			assert_true(e[k][1].act_peak_bytes == e[k][0].act_peak_bytes);
			assert_true(e[k][1].workspace_peak_bytes >= e[k][0].workspace_peak_bytes);
			CLOSE(e[k][1].flops_per_step, e[k][0].flops_per_step, "the same products");
		}
		CLOSE(e[0][1].step_s, e[0][0].step_s, "ideal: element-wise work is free");
		sl_cluster_config r = realistic_of(&x, 0.6);
		CLOSE(e[1][1].step_s - e[1][0].step_s,
		      M * (3 * 2 * elems / r.dm.mem_bw + kernels * r.dm.launch_s),
		      "each micro-batch's gradient adds at the memory's rate, a launch a weight");
	}
}

/* The device memory's achievable share (mem_frac) is the rate of every
 * memory-bound kernel: at a share f the separate accumulation's passes
 * take 1/f of their bytes' time at the datasheet bandwidth, their launches
 * the same; 0 is the whole bandwidth, as 1 is. */
static void test_memory_fraction_closed_form(void **state)
{
	(void)state;
	const struct lay x = {1, 1, 1, SL_SCHED_1F1B, 3, 1, 0, 0, NULL, 0, SL_TOPO_FULL, 4, 3,
	                      6, 0, 0};
	sl_model_spec m, g;
	model_of(&x, &m);
	g = m;
	g.grad_accum = SL_GACC_SEPARATE;
	sl_layout l = layout_of(&x);
	double L = m.layers, M = x.m, h = m.hidden, f = m.ffn;
	double elems = L * (4 * h * h + 2 * h * f), kernels = 4 * L;
	const double fr[] = {0, 1, 0.5, 0.781};
	double base = 0;
	for (size_t i = 0; i < sizeof fr / sizeof *fr; i++) {
		sl_cluster_config cfg = realistic_of(&x, 0.6);
		cfg.dm.mem_frac = fr[i];
		sl_estimate e[2];
		sl_err err = {0};
		for (int n = 0; n < 2; n++)
			assert_int_equal(
			    sl_train_estimate(n ? &g : &m, &l, &cfg, SL_EST_AUTO, &e[n], &err),
			    SL_OK);
		double bw = cfg.dm.mem_bw * (fr[i] > 0 ? fr[i] : 1);
		CLOSE(e[1].step_s - e[0].step_s,
		      M * (3 * 2 * elems / bw + kernels * cfg.dm.launch_s),
		      "the gradient adds at the achievable bandwidth");
		if (i < 2) {
			if (i == 1)
				CLOSE(e[0].step_s, base, "a share of 1 is the whole bandwidth");
			base = e[0].step_s;
		} else {
			assert_true(e[0].step_s > base);
		}
		/* A GEMM's bytes too: on a device of 1e18 FLOP/s, 4096 x 4096 by
		 * an inner dimension of 1 is all bytes (33.6 MB of bf16). */
		sl_cluster_config fast = cfg;
		fast.flops = 1e18;
		double M2 = 4096, bytes = (M2 + M2 + M2 * M2) * 2;
		CLOSE(sl_gemm_s(&fast, M2, M2, 1, 1), cfg.dm.launch_s + bytes / bw,
		      "a memory-bound GEMM at the achievable bandwidth");
	}
}

/* Separate gradient accumulation through every method, with and without a
 * vocabulary, pipelined, interleaved and tensor parallel: the same figures
 * as the timing-only run. */
static void test_grad_accum_estimate_equals_run(void **state)
{
	(void)state;
	for (size_t g = 0; g < sizeof realistic_rows / sizeof realistic_rows[0]; g++)
		for (int vocab = 0; vocab <= 37; vocab += 37) {
			const struct lay *x = &realistic_rows[g];
			char name[160];
			name_of(x, name, sizeof name);
			snprintf(name + strlen(name), sizeof name - strlen(name),
			         " separate accumulation, vocabulary %d", vocab);
			sl_model_spec m;
			model_of(x, &m);
			m.grad_accum = SL_GACC_SEPARATE;
			m.vocab = vocab;
			sl_layout l = layout_of(x);
			sl_cluster_config cfg = realistic_of(x, 0.6);
			every_method_equals_run(&m, &l, &cfg, x->want, name);
		}
}

/* Pre-norms, one device, one micro-batch of R rows, L layers of two
 * sub-blocks: each keeps its norm's input besides its output (R h eb bytes
 * more each at the peak); the forward's kernel reads x and writes the
 * norm, the backward's reads x and the gradient and writes it: L (2 x 2 +
 * 2 x 3) R h eb bytes at the memory's rate and 4 L launches; nothing on
 * the ideal machine. */
static void test_norm_closed_forms(void **state)
{
	(void)state;
	const struct lay x = {1, 1, 1, SL_SCHED_1F1B, 1, 1, 0, 0, NULL, 0, SL_TOPO_FULL, 4, 3,
	                      4, 0, 0};
	sl_model_spec m, nm;
	model_of(&x, &m);
	m.seq = 16;
	double L = m.layers, R = (double)m.batch * m.seq, h = m.hidden;
	for (int nk = SL_NORM_LAYER; nk <= SL_NORM_RMS; nk++) {
		nm = m;
		nm.norm = nk;
		sl_estimate e[2][2]; /* [ideal, realistic][norm] */
		estimate_pair(&m, &nm, &x, e);
		assert_true(e[0][1].act_peak_bytes - e[0][0].act_peak_bytes ==
		            (uint64_t)(2 * L * R * h * 4));
		assert_true(e[1][1].act_peak_bytes - e[1][0].act_peak_bytes ==
		            (uint64_t)(2 * L * R * h * 2));
		CLOSE(e[0][1].step_s, e[0][0].step_s, "ideal: element-wise work is free");
		sl_cluster_config r = realistic_of(&x, 0.6);
		CLOSE(e[1][1].step_s - e[1][0].step_s,
		      L * (2 * 2 + 2 * 3) * R * h * 2 / r.dm.mem_bw + 4 * L * r.dm.launch_s,
		      "the norms' bytes at the memory's rate, and their launches");
	}
}

/* Embeddings and an LM head (a vocabulary of 37 words: padded to 38 over
 * tp=2, 40 over tp=4) through every method on both machines: the same
 * figures as the timing-only run, tied and untied, learned and rotary
 * positions, with sequence parallelism, interleaved and uneven. */
static const struct lay vocab_grid[] = {
    /* tp pp dp  schedule          m  v sp z1 order       node topology   heads L  B  f  want */
    {1, 1, 1, SL_SCHED_1F1B, 1, 1, 0, 0, NULL, 0, SL_TOPO_FULL, 4, 2, 4, 0, SL_EST_STAGE},
    {2, 2, 2, SL_SCHED_1F1B, 2, 1, 1, 1, NULL, 4, SL_TOPO_FULL, 4, 4, 8, 0, SL_EST_STAGE},
    {2, 1, 2, SL_SCHED_1F1B, 2, 1, 0, 0, "dp-tp-pp", 0, SL_TOPO_RING, 4, 2, 8, 0, SL_EST_STAGE},
    {1, 2, 1, SL_SCHED_INTERLEAVED, 4, 2, 0, 0, NULL, 0, SL_TOPO_FULL, 4, 8, 8, 0, SL_EST_STAGE},
    {4, 1, 1, SL_SCHED_1F1B, 2, 1, 1, 0, NULL, 2, SL_TOPO_FULL, 8, 2, 8, 0, SL_EST_SLICE},
    {2, 2, 1, SL_SCHED_GPIPE, 3, 1, 0, 0, NULL, 0, SL_TOPO_FULL, 4, 2, 5, 0, SL_EST_AUTO},
};

static void test_vocab_estimate_equals_run(void **state)
{
	(void)state;
	for (size_t g = 0; g < sizeof vocab_grid / sizeof vocab_grid[0]; g++)
		for (int kind = 0; kind < 2; kind++) {
			const struct lay *x = &vocab_grid[g];
			char name[128];
			name_of(x, name, sizeof name);
			sl_model_spec m;
			model_of(x, &m);
			m.vocab = 37;
			m.untie = kind;
			m.pos_emb = kind ? SL_POS_ROPE : SL_POS_LEARNED;
			m.norm = kind ? SL_NORM_RMS : SL_NORM_LAYER;
			m.hidden_dropout = kind ? 0.1f : 0.0f; /* the embedding's too */
			sl_layout l = layout_of(x);
			sl_cluster_config cfg = kind ? realistic_of(x, 0.6) : config_of(x);
			every_method_equals_run(&m, &l, &cfg, x->want, name);
		}
}

/* Uneven stages (a list, or ends' fewer layers on the first and last
 * stage, which hold the embedding and the head), interleaved with chunks
 * of unequal blocks too, through every method on both machines, with and
 * without a vocabulary: the same figures as the timing-only run. */
static const struct {
	struct lay x;
	const char *stages;
} uneven_grid[] = {
    /* tp pp dp  schedule          m  v sp z1 order       node topology   heads L  B  f  want */
    {{1, 3, 1, SL_SCHED_1F1B, 3, 1, 0, 0, NULL, 0, SL_TOPO_FULL, 4, 7, 8, 0, SL_EST_STAGE}, "ends"},
    {{1, 2, 1, SL_SCHED_INTERLEAVED, 4, 2, 0, 0, NULL, 0, SL_TOPO_FULL, 4, 7, 8, 0, SL_EST_STAGE},
     "even"},
    {{2, 2, 2, SL_SCHED_INTERLEAVED, 2, 2, 1, 1, NULL, 4, SL_TOPO_FULL, 4, 7, 8, 0, SL_EST_STAGE},
     "ends"},
    {{1, 3, 2, SL_SCHED_INTERLEAVED, 3, 2, 0, 3, "pp-dp-tp", 2, SL_TOPO_FULL, 4, 7, 8, 0,
      SL_EST_AUTO},
     "ends"},
    {{2, 2, 1, SL_SCHED_GPIPE, 3, 1, 0, 0, NULL, 0, SL_TOPO_FULL, 4, 5, 6, 0, SL_EST_STAGE}, "1,4"},
    {{1, 4, 2, SL_SCHED_1F1B, 2, 1, 0, 2, "pp-dp-tp", 2, SL_TOPO_FULL, 4, 10, 8, 0, SL_EST_AUTO},
     "ends"},
    {{1, 2, 1, SL_SCHED_INTERLEAVED, 2, 3, 0, 0, NULL, 0, SL_TOPO_FULL, 4, 7, 8, 0, SL_EST_STAGE},
     "4,3"},
};

static void test_uneven_estimate_equals_run(void **state)
{
	(void)state;
	for (size_t g = 0; g < sizeof uneven_grid / sizeof uneven_grid[0]; g++)
		for (int kind = 0; kind < 3; kind++) {
			const struct lay *x = &uneven_grid[g].x;
			char name[128];
			name_of(x, name, sizeof name);
			size_t len = strlen(name);
			snprintf(name + len, sizeof name - len, " stages %s kind %d",
			         uneven_grid[g].stages, kind);
			sl_model_spec m;
			model_of(x, &m);
			if (kind) {
				m.vocab = 37;
				m.untie = kind == 2;
				m.norm = SL_NORM_RMS;
			}
			sl_layout l = layout_of(x);
			assert_int_equal(sl_stage_layers_parse(uneven_grid[g].stages, &l, NULL),
			                 SL_OK);
			sl_cluster_config cfg = kind == 2 ? realistic_of(x, 0.6) : config_of(x);
			every_method_equals_run(&m, &l, &cfg, x->want, name);
		}
}

/* The vocabulary's closed forms on one device with one micro-batch of R
 * rows, on the ideal machine (fp32): the LM head's product, forward and
 * backward, is 6 R h V FLOPs more, as in sl_model_step_flops and
 * Narayanan et al.'s 6 B s h V, and all the step adds; the parameters are
 * Megatron-LM's (V + s) h tied with learned positions, 2 V h untied with
 * rotary ones, at 4 bytes each; the softmax of R x V logits is kept for
 * the backward, in fp32 on the bf16 machine too (the loss gradient of
 * R h it replaces is the LM head's input, kept instead). */
static void test_vocab_closed_forms(void **state)
{
	(void)state;
	const struct lay x = {1, 1, 1, SL_SCHED_1F1B, 1, 1, 0, 0, NULL, 0, SL_TOPO_FULL, 4, 3,
	                      4, 0, 0};
	sl_model_spec m;
	model_of(&x, &m);
	m.seq = 16;
	double R = (double)m.batch * m.seq, h = m.hidden, s = m.seq, V = 40;
	for (int untie = 0; untie < 2; untie++) {
		sl_model_spec v = m;
		v.vocab = (int)V;
		v.untie = untie;
		v.pos_emb = untie ? SL_POS_ROPE : SL_POS_LEARNED;
		double np = untie ? 2 * V * h : (V + s) * h;
		assert_true(sl_model_embed_params(&v) == (size_t)np);
		assert_true(sl_model_total_params(&v) == sl_model_nparams(&m) + (size_t)np);
		CLOSE(sl_model_step_flops(&v) - sl_model_step_flops(&m), 6 * R * h * V,
		      "model FLOPs: the LM head's 6 R h V");
		sl_estimate e[2][2]; /* [ideal, realistic][vocab] */
		estimate_pair(&m, &v, &x, e);
		CLOSE(e[0][1].flops_per_step - e[0][0].flops_per_step, 6 * R * h * V,
		      "executed FLOPs: the LM head's");
		sl_cluster_config c = config_of(&x);
		CLOSE(e[0][1].step_s - e[0][0].step_s, 6 * R * h * V / c.flops,
		      "ideal: the LM head's FLOPs at the rate, nothing else");
		assert_true(e[0][1].params_bytes - e[0][0].params_bytes == (uint64_t)(np * F4));
		assert_true(e[0][1].act_peak_bytes - e[0][0].act_peak_bytes ==
		            (uint64_t)(R * V * F4));
		/* in bf16 too: the softmax is kept in fp32, as Megatron-LM's
		 * cross entropy casts the logits up */
		assert_true(e[1][1].act_peak_bytes - e[1][0].act_peak_bytes ==
		            (uint64_t)(R * V * F4));
	}
	/* Megatron-LM's count of GPT-3 175B's embeddings: (V + s) h. */
	sl_model_spec g;
	sl_model_default(&g);
	g.layers = 96;
	g.hidden = 12288;
	g.ffn = 4 * 12288;
	g.heads = 96;
	g.seq = 2048;
	g.vocab = 51200;
	assert_true(sl_model_embed_params(&g) == (size_t)(51200 + 2048) * 12288);
	assert_int_equal(sl_model_vocab_shard(&g, 8), 6400);
	g.vocab = 128256; /* Llama 3's, padded over tp=8 as Megatron-LM pads */
	assert_int_equal(sl_model_vocab_shard(&g, 8), 16032);
}

/* Which devices a replay needs: one per stage; the period of a TP ring
 * that crosses nodes (here 2 ranks of a node of 2) per stage; or all. */
static void test_replayed_devices(void **state)
{
	(void)state;
	const struct lay *x = &grid[2]; /* tp=4 dp=2 over nodes of 2 */
	sl_model_spec m;
	model_of(x, &m);
	sl_layout l = layout_of(x);
	sl_cluster_config cfg = config_of(x);
	sl_err err = {0};
	sl_estimate e;
	assert_int_equal(sl_train_estimate(&m, &l, &cfg, SL_EST_AUTO, &e, &err), SL_OK);
	assert_int_equal(e.method, SL_EST_SLICE);
	assert_int_equal(e.replayed, 2);
	x = &grid[7]; /* tp=2 pp=2 dp=2, nodes of 4: one per stage */
	model_of(x, &m);
	l = layout_of(x);
	cfg = config_of(x);
	assert_int_equal(sl_train_estimate(&m, &l, &cfg, SL_EST_AUTO, &e, &err), SL_OK);
	assert_int_equal(e.replayed, 2);
	assert_int_equal(sl_train_estimate(&m, &l, &cfg, SL_EST_FULL, &e, &err), SL_OK);
	assert_int_equal(e.replayed, 8);
	/* Two kinds of replica of 3 stages (grid[14]) and of 3 x 2 (grid[15]):
	 * one replica of each kind. */
	for (int g = 14; g <= 15; g++) {
		x = &grid[g];
		model_of(x, &m);
		l = layout_of(x);
		cfg = config_of(x);
		assert_int_equal(sl_train_estimate(&m, &l, &cfg, SL_EST_AUTO, &e, &err), SL_OK);
		assert_int_equal(e.method, SL_EST_REPLICA);
		assert_int_equal(e.replayed, 2 * x->tp * x->pp);
	}
}

/* A recording that reuses one template per chunk and micro-batch shape
 * gives what recording every micro-batch in full gives. */
static void test_templates_equal_literal(void **state)
{
	(void)state;
	for (size_t g = 0; g < sizeof grid / sizeof grid[0]; g++) {
		const struct lay *x = &grid[g];
		char name[128];
		name_of(x, name, sizeof name);
		sl_model_spec m;
		model_of(x, &m);
		if (x->heads == 6)
			m.hidden = 12;
		sl_layout l = layout_of(x);
		sl_cluster_config cfg = config_of(x);
		sl_err err = {0};
		sl_est_rec *a, *b;
		assert_int_equal(sl_est_record(&m, &l, cfg.devices, 0, &cfg, &a, &err), SL_OK);
		assert_int_equal(sl_est_record(&m, &l, cfg.devices, 1, &cfg, &b, &err), SL_OK);
		sl_estimate ea, eb;
		assert_int_equal(sl_est_replay(a, NULL, &cfg, SL_EST_AUTO, &ea, &err), SL_OK);
		assert_int_equal(sl_est_replay(b, NULL, &cfg, SL_EST_AUTO, &eb, &err), SL_OK);
		char what[160];
		snprintf(what, sizeof what, "%s: templates", name);
		CLOSE(ea.step_s, eb.step_s, what);
		CLOSE(ea.ideal_s, eb.ideal_s, what);
		assert_true(ea.mem_peak_bytes == eb.mem_peak_bytes &&
		            ea.act_peak_bytes == eb.act_peak_bytes &&
		            ea.workspace_peak_bytes == eb.workspace_peak_bytes);
		sl_est_rec_free(a);
		sl_est_rec_free(b);
	}
}

/* ---- closed forms, computed here ---- */

/* An MLP-only model: per block fc1 [h, f] + bias f, fc2 [f, h] + bias h;
 * a step of r rows does 3 * (2rhf + 2rfh) FLOPs a block (forward, and a
 * backward of twice that). */
static void mlp_model(sl_model_spec *m, int layers, int h, int f, int batch)
{
	sl_model_default(m);
	m->layers = layers;
	m->hidden = h;
	m->ffn = f;
	m->heads = 0;
	m->seq = 1;
	m->batch = batch;
}

/* Data parallel only: the step is the replica's GEMMs, then a ring
 * all-reduce of the gradients: 2(d-1) steps of a + (n/d) 4 / B. */
static void test_dp_closed_form(void **state)
{
	(void)state;
	int d = 4, L = 3, h = 16, f = 32, B = 8;
	sl_model_spec m;
	mlp_model(&m, L, h, f, B);
	sl_layout l;
	sl_layout_default(&l);
	l.dp = d;
	sl_cluster_config cfg = tu_config(d, 100e9, 3e-6);
	cfg.flops = 1e12;
	cfg.timing_only = 1;
	sl_err err = {0};
	sl_estimate e;
	assert_int_equal(sl_train_estimate(&m, &l, &cfg, SL_EST_AUTO, &e, &err), SL_OK);
	double rows = (double)B / d, n = L * ((double)h * f + f + (double)f * h + h);
	double compute = L * 3 * (2 * rows * h * f + 2 * rows * f * h) / cfg.flops;
	double ar = 2 * (d - 1) * (3e-6 + n / d * F4 / 100e9);
	tu_check_close(e.step_s, compute + ar, 1e-12, "DP step");
	assert_int_equal(e.params_bytes, (uint64_t)(n * F4));
	assert_int_equal(e.optimizer_bytes, (uint64_t)(2 * n * F4));
	assert_int_equal(e.sent[SL_TR_DP_ALLREDUCE], (uint64_t)(2 * (d - 1) * (n / d) * F4));
}

/* The planner's floor of a pipeline, on the ideal machine (GEMMs only):
 * p stages of k MLP blocks, m micro-batches of r rows, so a stage's
 * forward pass is 2 GEMMs of 2rhf FLOPs a block and its backward twice
 * that: the step is at least the fill of p - 1 stages' forward and backward
 * passes, then the last stage's m of each: (m + p - 1) 12 r h f k / rate,
 * whatever the schedule (interleaved: the fill and drain a chunk a stage).
 * On free links the step is exactly that. */
static void test_pipeline_floor_closed_form(void **state)
{
	(void)state;
	const int grid3[][4] = {{SL_SCHED_GPIPE, 4, 8, 1},
	                        {SL_SCHED_1F1B, 4, 2, 1},
	                        {SL_SCHED_1F1B, 2, 6, 1},
	                        {SL_SCHED_INTERLEAVED, 2, 4, 2}};
	for (size_t g = 0; g < sizeof grid3 / sizeof grid3[0]; g++) {
		int p = grid3[g][1], mb = grid3[g][2], v = grid3[g][3], k = 2 * v;
		int h = 16, f = 32, rows = 2;
		sl_model_spec m;
		mlp_model(&m, p * k, h, f, mb * rows);
		sl_layout l = tu_layout(1, p, 1, (sl_sched)grid3[g][0], mb, v);
		sl_cluster_config cfg = tu_config(p, 1e30, 0);
		cfg.flops = 1e12;
		cfg.timing_only = 1;
		sl_err err = {0};
		sl_est_rec *rec;
		assert_int_equal(sl_est_record(&m, &l, p, 0, &cfg, &rec, &err), SL_OK);
		double floor = sl_est_compute_floor(rec, &cfg);
		sl_est_rec_free(rec);
		/* interleaved: the fill and drain pass one chunk (k / v blocks) a stage */
		double pass = 12.0 * rows * h * f / cfg.flops;
		double want = ((double)mb * k + (double)(p - 1) * k / v) * pass;
		tu_check_close(floor, want, 1e-12, "pipeline floor");
		if (v == 1) {
			sl_estimate e;
			assert_int_equal(sl_train_estimate(&m, &l, &cfg, SL_EST_AUTO, &e, &err),
			                 SL_OK);
			tu_check_close(e.step_s, want, 1e-12, "pipeline step on free links");
		}
	}
}

/* On free links the floor comes near the step, so one too high shows:
 * the uneven and realistic grids' layouts with every ZeRO stage their
 * data parallelism allows, overlap on (compute beside on side streams),
 * each under its run's step; and the pipelined ones mostly close to it. */
static void test_floor_below_step_on_free_links(void **state)
{
	(void)state;
	int n = 0, tight = 0;
	for (size_t g = 0; g < sizeof uneven_grid / sizeof uneven_grid[0] +
	                           sizeof realistic_rows / sizeof realistic_rows[0];
	     g++) {
		int un = g < sizeof uneven_grid / sizeof uneven_grid[0];
		const struct lay *x =
		    un ? &uneven_grid[g].x
		       : &realistic_rows[g - sizeof uneven_grid / sizeof uneven_grid[0]];
		for (int zero = 0; zero <= (x->dp > 1 ? 3 : 0); zero++) {
			sl_model_spec m;
			model_of(x, &m);
			m.vocab = 37;
			m.norm = SL_NORM_RMS;
			sl_layout l = layout_of(x);
			if (un)
				assert_int_equal(
				    sl_stage_layers_parse(uneven_grid[g].stages, &l, NULL), SL_OK);
			l.zero = zero;
			l.overlap = SL_OVERLAP_ON;
			sl_cluster_config cfg = realistic_of(x, 0.6);
			cfg.intra.bandwidth = cfg.inter.bandwidth = 1e15;
			cfg.intra.latency = cfg.inter.latency = 0;
			sl_train_report rep;
			run_dry(&m, &l, &cfg, &rep);
			sl_err err = {0};
			sl_est_rec *rec;
			assert_int_equal(sl_est_record(&m, &l, cfg.devices, 0, &cfg, &rec, &err),
			                 SL_OK);
			double floor = sl_est_compute_floor(rec, &cfg);
			sl_est_rec_free(rec);
			char name[128];
			name_of(x, name, sizeof name);
			if (!(floor <= rep.step_s * (1 + 1e-12)))
				fail_msg("%s zero=%d: floor %.17g s above the run's step %.17g s",
				         name, zero, floor, rep.step_s);
			n += x->pp > 1;
			tight += x->pp > 1 && floor >= 0.9 * rep.step_s;
			sl_train_report_free(&rep);
		}
	}
	assert_true(tight * 2 >= n);
}

/* GPipe and 1F1B with free links: the bubble over the ideal time is
 * (p-1)/m; interleaved, (p-1)/(v m). */
static void test_bubble_closed_form(void **state)
{
	(void)state;
	const int grid2[][4] = {{SL_SCHED_GPIPE, 4, 8, 1},
	                        {SL_SCHED_1F1B, 4, 8, 1},
	                        {SL_SCHED_1F1B, 2, 6, 1},
	                        {SL_SCHED_INTERLEAVED, 2, 4, 2},
	                        {SL_SCHED_INTERLEAVED, 4, 8, 2}};
	for (size_t g = 0; g < sizeof grid2 / sizeof grid2[0]; g++) {
		int p = grid2[g][1], mb = grid2[g][2], v = grid2[g][3];
		sl_model_spec m;
		mlp_model(&m, 8, 16, 64, 48);
		sl_layout l;
		sl_layout_default(&l);
		l.pp = p;
		l.schedule = (sl_sched)grid2[g][0];
		l.microbatches = mb;
		l.chunks = v;
		sl_cluster_config cfg = tu_config(p, 1e15, 0);
		cfg.flops = 1e9;
		cfg.timing_only = 1;
		sl_err err = {0};
		sl_estimate e;
		assert_int_equal(sl_train_estimate(&m, &l, &cfg, SL_EST_AUTO, &e, &err), SL_OK);
		double want = (double)(p - 1) / (v * mb);
		if (fabs(e.bubble_fraction - want) > 1e-6)
			fail_msg("%s p=%d m=%d v=%d: bubble %.9f, want %.9f",
			         sl_sched_name(l.schedule), p, mb, v, e.bubble_fraction, want);
	}
}

/* 1024 devices: TP groups of 8 inside nodes of 8 (NVLink-like), 128 data-
 * parallel replicas across nodes (every DP hop between nodes).  One
 * micro-batch of r rows: per block the fc1 and fc2 GEMMs on f/8 columns,
 * one TP all-reduce of r*h values forward and one backward (2*7 steps of
 * a + (r h/8) 4/B each), then the gradients' all-reduce over 128 (2*127
 * steps of a + (n/128) 4/B). */
static void test_1024_devices_closed_form(void **state)
{
	(void)state;
	int t = 8, d = 128, L = 4, h = 1024, f = 4096, B = 1024;
	sl_model_spec m;
	mlp_model(&m, L, h, f, B);
	sl_layout l;
	sl_layout_default(&l);
	l.tp = t;
	l.dp = d;
	sl_cluster_config cfg = tu_config(t * d, 450e9, 2e-6);
	cfg.devices_per_node = 8;
	cfg.inter.bandwidth = 50e9;
	cfg.inter.latency = 5e-6;
	cfg.flops = 989e12;
	cfg.memory = (uint64_t)80 << 30;
	cfg.timing_only = 1;
	sl_err err = {0};
	sl_estimate e;
	assert_int_equal(sl_train_estimate(&m, &l, &cfg, SL_EST_AUTO, &e, &err), SL_OK);
	assert_int_equal(e.method, SL_EST_STAGE);
	assert_int_equal(e.replayed, 1);
	double r = (double)B / d, fl = (double)f / t;
	double n = L * ((double)h * fl + fl + fl * h + h); /* fc2's bias replicated */
	double compute = L * 3 * (2 * r * h * fl + 2 * r * fl * h) / cfg.flops;
	double tp = L * 2 * 2 * (t - 1) * (2e-6 + r * h / t * F4 / 450e9);
	double dp = 2 * (d - 1) * (5e-6 + n / d * F4 / 50e9);
	tu_check_close(e.step_s, compute + tp + dp, 1e-12, "1024-device step");
	assert_int_equal(e.params_bytes, (uint64_t)(n * F4));
	assert_int_equal(e.sent[SL_TR_TP_ALLREDUCE],
	                 (uint64_t)(L * 2 * 2 * (t - 1) * r * h / t * F4));
	assert_int_equal(e.sent[SL_TR_DP_ALLREDUCE], (uint64_t)(2 * (d - 1) * n / d * F4));
}

/* 256 devices, TP over two nodes of 8 (a period of 8 ranks): the replay
 * of a period agrees with the replay of every device. */
static void test_methods_agree_at_scale(void **state)
{
	(void)state;
	sl_model_spec m;
	model_of(&grid[1], &m);
	m.hidden = 32;
	m.heads = 16;
	m.ffn = 64;
	m.layers = 4;
	m.batch = 16;
	sl_layout l;
	sl_layout_default(&l);
	l.tp = 16;
	l.pp = 2;
	l.dp = 8;
	l.microbatches = 2;
	sl_cluster_config cfg = tu_config(256, 450e9, 2e-6);
	cfg.devices_per_node = 8;
	cfg.inter.bandwidth = 50e9;
	cfg.inter.latency = 5e-6;
	cfg.timing_only = 1;
	sl_err err = {0};
	sl_estimate a, b;
	assert_int_equal(sl_train_estimate(&m, &l, &cfg, SL_EST_AUTO, &a, &err), SL_OK);
	assert_int_equal(a.method, SL_EST_SLICE);
	assert_int_equal(a.replayed, 16);
	assert_int_equal(sl_train_estimate(&m, &l, &cfg, SL_EST_FULL, &b, &err), SL_OK);
	assert_int_equal(b.replayed, 256);
	tu_check_close(a.step_s, b.step_s, 1e-12, "period against every device");
	tu_check_close(a.comm_s, b.comm_s, 1e-12, "communication");
	tu_check_close(a.ideal_s, b.ideal_s, 1e-12, "ideal time");
	assert_true(a.mem_peak_bytes == b.mem_peak_bytes);
}

/* A TP ring of 12 over three nodes of 4: the ring's 22 all-reduce steps
 * settle after a few (each member follows at most three others back to a
 * sender across nodes), and the steps added at once from there give the
 * step-by-step replay's figures and the run's. */
static void test_ring_across_nodes_settles(void **state)
{
	(void)state;
	const struct lay x = {12, 1, 2,  SL_SCHED_1F1B, 2, 1, 0, 0, NULL, 4, SL_TOPO_FULL, 0,
	                      2,  4, 96, SL_EST_SLICE};
	sl_model_spec m;
	model_of(&x, &m);
	m.hidden = 24;
	sl_layout l = layout_of(&x);
	sl_cluster_config cfg = config_of(&x);
	every_method_equals_run(&m, &l, &cfg, x.want, "tp=12 dp=2 on nodes of 4");
	/* and on nodes of 3, which cut the ring into runs of three */
	cfg.devices_per_node = 3;
	every_method_equals_run(&m, &l, &cfg, SL_EST_AUTO, "tp=12 dp=2 on nodes of 3");
}

/* Refusals: a layout the model cannot take, a device count the cluster
 * does not have. */
static void test_refusals(void **state)
{
	(void)state;
	sl_model_spec m;
	model_of(&grid[1], &m);
	sl_layout l;
	sl_layout_default(&l);
	l.tp = 3;
	sl_cluster_config cfg = tu_config(3, 1e9, 0);
	sl_err err = {0};
	sl_estimate e;
	assert_int_equal(sl_train_estimate(&m, &l, &cfg, SL_EST_AUTO, &e, &err), SL_EINVAL);
	assert_non_null(strstr(err.msg, "heads"));
	l.tp = 2;
	assert_int_equal(sl_train_estimate(&m, &l, &cfg, SL_EST_AUTO, &e, &err), SL_EINVAL);
	assert_non_null(strstr(err.msg, "devices"));
}

/* 4 blocks of width 64 with 4 heads, 4 sequences of 32 tokens: every
 * division below is exact. */
static sl_model_spec closed_form_model(void)
{
	sl_model_spec m;
	sl_model_default(&m);
	m.layers = 4;
	m.hidden = 64;
	m.ffn = 256;
	m.heads = 4;
	m.seq = 32;
	m.batch = 4;
	return m;
}

/* Recomputation against its closed forms on one device (m = 1), the
 * attention core materialized: it executes the whole s x s products
 * whatever the mask, 12 s^2 d a head (two forward, four backward), where
 * the model's FLOPs count a causal head's at half, 6 s^2 d; so without
 * recomputation the step executes F + L B a 6 s^2 d.  Full recomputation
 * runs every forward GEMM twice, 4/3 of that; selective runs the attention
 * core's forward again, as Megatron-LM's checkpointed core attention does:
 * the scores and the product with V, 2 s^2 d each for each of B a heads
 * and L layers; and keeps exactly each layer's B a s^2 probabilities
 * fewer. */
static void test_recompute_closed_forms(void **state)
{
	(void)state;
	sl_model_spec m = closed_form_model();
	sl_cluster_config cfg = tu_config(1, 1e9, 0);
	sl_err err = {0};
	sl_estimate e[SL_RECOMPUTE_N];
	for (int r = 0; r < SL_RECOMPUTE_N; r++) {
		sl_layout l;
		sl_layout_default(&l);
		l.recompute = (sl_recompute)r;
		assert_int_equal(sl_train_estimate(&m, &l, &cfg, SL_EST_AUTO, &e[r], &err), SL_OK);
	}
	assert_int_equal(m.mask, SL_MASK_CAUSAL);
	double d = (double)m.hidden / m.heads;
	double heads = m.layers * (double)m.batch * m.heads, ss = (double)m.seq * m.seq;
	double F = sl_model_step_flops(&m) + heads * 6 * ss * d;
	assert_true(fabs(e[SL_RECOMPUTE_NONE].flops_per_step - F) <= 1e-12 * F);
	assert_true(fabs(e[SL_RECOMPUTE_FULL].flops_per_step - 4.0 / 3.0 * F) <= 1e-12 * F);
	double sel = F + heads * (2 * ss * d + 2 * ss * d);
	assert_true(fabs(e[SL_RECOMPUTE_SELECTIVE].flops_per_step - sel) <= 1e-12 * F);
	uint64_t probs = (uint64_t)m.layers * m.batch * m.heads * m.seq * m.seq * 4;
	assert_int_equal(
	    e[SL_RECOMPUTE_NONE].act_peak_bytes - e[SL_RECOMPUTE_SELECTIVE].act_peak_bytes, probs);
	/* Full keeps every block's input and at most one block's activations. */
	uint64_t inputs = (uint64_t)m.layers * m.batch * m.seq * m.hidden * 4;
	assert_true(e[SL_RECOMPUTE_FULL].act_peak_bytes >= inputs);
	assert_true(e[SL_RECOMPUTE_FULL].act_peak_bytes < e[SL_RECOMPUTE_SELECTIVE].act_peak_bytes);
	/* More work, never less time. */
	assert_true(e[SL_RECOMPUTE_FULL].step_s > e[SL_RECOMPUTE_NONE].step_s);
}

/* Sequence parallelism divides every per-layer activation by t
 * (Korthikanti et al. 2022, table 2, for this model's tensors: the
 * sub-blocks' inputs as row shards, Q K V, probabilities, heads' outputs
 * and the MLP's inner activations by heads and columns), and the loss
 * gradient with them: the kept memory of one device is exactly 1/t of a
 * single device's. */
static void sp_divides(const sl_model_spec *mp, int tmax)
{
	sl_model_spec m = *mp;
	sl_err err = {0};
	uint64_t one = 0;
	for (int t = 1; t <= tmax; t *= 2) {
		sl_cluster_config cfg = tu_config(t, 1e9, 0);
		sl_layout l;
		sl_layout_default(&l);
		l.tp = t;
		l.seq_parallel = t > 1;
		sl_estimate e;
		assert_int_equal(sl_train_estimate(&m, &l, &cfg, SL_EST_AUTO, &e, &err), SL_OK);
		if (t == 1)
			one = e.act_peak_bytes;
		else if (e.act_peak_bytes * (uint64_t)t != one)
			fail_msg(
			    "tp=%d with SP keeps %llu bytes of activations; 1/%d of one device's "
			    "is %llu",
			    t, (unsigned long long)e.act_peak_bytes, t,
			    (unsigned long long)one / t);
	}
}

static void test_sequence_parallel_divides_activations(void **state)
{
	(void)state;
	sl_model_spec m = closed_form_model();
	sp_divides(&m, 4);
	/* and with Llama's kinds: Q K V of (a + 2G) d columns, SwiGLU's 2f */
	m.kv_heads = 2;
	m.ffn_kind = SL_FFN_SWIGLU;
	sp_divides(&m, 2);
}

int main(void)
{
	tu_watchdog(900);
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_estimate_equals_run),
	    cmocka_unit_test(test_llama_kinds_estimate_equals_run),
	    cmocka_unit_test(test_cp_estimate_equals_run),
	    cmocka_unit_test(test_zero_keep_estimate_equals_run),
	    cmocka_unit_test(test_flash_estimate_equals_run),
	    cmocka_unit_test(test_ports_equal_figures),
	    cmocka_unit_test(test_flash_closed_forms),
	    cmocka_unit_test(test_causal_flash_closed_forms),
	    cmocka_unit_test(test_dropout_closed_forms),
	    cmocka_unit_test(test_hidden_dropout_closed_forms),
	    cmocka_unit_test(test_norm_closed_forms),
	    cmocka_unit_test(test_grad_accum_closed_forms),
	    cmocka_unit_test(test_memory_fraction_closed_form),
	    cmocka_unit_test(test_grad_accum_estimate_equals_run),
	    cmocka_unit_test(test_vocab_estimate_equals_run),
	    cmocka_unit_test(test_vocab_closed_forms),
	    cmocka_unit_test(test_uneven_estimate_equals_run),
	    cmocka_unit_test(test_replayed_devices),
	    cmocka_unit_test(test_templates_equal_literal),
	    cmocka_unit_test(test_dp_closed_form),
	    cmocka_unit_test(test_bubble_closed_form),
	    cmocka_unit_test(test_pipeline_floor_closed_form),
	    cmocka_unit_test(test_floor_below_step_on_free_links),
	    cmocka_unit_test(test_1024_devices_closed_form),
	    cmocka_unit_test(test_methods_agree_at_scale),
	    cmocka_unit_test(test_ring_across_nodes_settles),
	    cmocka_unit_test(test_refusals),
	    cmocka_unit_test(test_recompute_closed_forms),
	    cmocka_unit_test(test_sequence_parallel_divides_activations),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
