/* SPDX-License-Identifier: MIT */
/* test_train_timing.c - timing-only training runs: on a grid of small
 * layouts (every strategy, schedule and combination, even and uneven
 * splits, one node and several), a timing-only run gives the very figures
 * of a full run: emulated times, bubble, traffic per collective kind,
 * memory by category, every device statistic and every trace event. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "ckpt.h"
#include "testutil.h"
#include "trace.h"
#include "train.h"

static void attn_model(sl_model_spec *m, int layers, int batch)
{
	*m = tu_model(layers, 8, 16, 4, 4, batch);
}

struct lay {
	int tp, pp, dp;
	sl_sched k;
	int m, v, sp, z1, per_node;
	const char *order;
	sl_algo algo;
	int heads; /* 0: MLP-only blocks */
	int layers, batch, ffn;
	const char *stages; /* --stage-layers (NULL: even) */
};

static sl_layout to_layout(const struct lay *x)
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
	l.algo = x->algo;
	if (x->order)
		assert_int_equal(sl_mesh_order_parse(x->order, l.order), SL_OK);
	if (x->stages)
		assert_int_equal(sl_stage_layers_parse(x->stages, &l, NULL), SL_OK);
	return l;
}

/* Nonzero: the model accumulates its gradients separately, on a
 * realistic bf16 machine (where that pass has a time). */
static int g_separate;

static void to_model(const struct lay *x, sl_model_spec *m)
{
	attn_model(m, x->layers, x->batch);
	if (g_separate)
		m->grad_accum = SL_GACC_SEPARATE;
	m->heads = x->heads;
	if (x->ffn)
		m->ffn = x->ffn;
	if (!x->heads)
		m->seq = 1;
}

static sl_cluster *make(const struct lay *x, int timing_only, uint64_t memory)
{
	sl_cluster_config cfg = tu_config(x->tp * x->pp * x->dp, 40e9, 3e-6);
	cfg.devices_per_node = x->per_node;
	cfg.inter.bandwidth = 4e9;
	cfg.inter.latency = 8e-6;
	cfg.flops = 5e12;
	cfg.memory = memory;
	cfg.timing_only = timing_only;
	if (g_separate) {
		cfg.precision = SL_PREC_BF16;
		cfg.efficiency = SL_EFF_REALISTIC;
		cfg.dm = (sl_device_model){3e12, 0.8, 132, 256, 128, 64, 2e-6, 0.6, 0, 0.189};
	}
	return tu_create(&cfg);
}

#define SAME(a, b, what)                                                                           \
	do {                                                                                       \
		if ((a) != (b))                                                                    \
			fail_msg("%s: %s differs: %.17g full, %.17g timing-only", name, what,      \
			         (double)(a), (double)(b));                                        \
	} while (0)

static void same_report(const sl_train_report *f, const sl_train_report *d, const char *name)
{
	SAME(f->step_s, d->step_s, "step time");
	SAME(f->pipeline_s, d->pipeline_s, "pipeline time");
	SAME(f->ideal_s, d->ideal_s, "ideal time");
	SAME(f->bubble_fraction, d->bubble_fraction, "bubble fraction");
	SAME(f->idle_fraction, d->idle_fraction, "idle fraction");
	SAME(f->flops_per_step, d->flops_per_step, "FLOPs per step");
	SAME(f->ndev, d->ndev, "device count");
	for (int i = 0; i < f->ndev; i++) {
		const sl_train_dev *a = &f->dev[i], *b = &d->dev[i];
		SAME(a->params_bytes, b->params_bytes, "parameter bytes");
		SAME(a->grads_bytes, b->grads_bytes, "gradient bytes");
		SAME(a->optimizer_bytes, b->optimizer_bytes, "optimizer bytes");
		SAME(a->act_peak_bytes, b->act_peak_bytes, "peak activations");
		SAME(a->workspace_peak_bytes, b->workspace_peak_bytes, "peak workspace");
		SAME(a->mem_peak_bytes, b->mem_peak_bytes, "peak memory");
		SAME(a->compute_s, b->compute_s, "compute time");
		SAME(a->comm_s, b->comm_s, "communication time");
		SAME(a->idle_s, b->idle_s, "idle time");
		SAME(a->flops, b->flops, "FLOPs");
		SAME(a->pipe_busy_s, b->pipe_busy_s, "pipeline busy time");
		for (int k = 0; k < SL_TR_NKINDS; k++) {
			SAME(a->sent[k], b->sent[k], sl_traffic_name((sl_traffic_kind)k));
			SAME(a->received[k], b->received[k], sl_traffic_name((sl_traffic_kind)k));
		}
	}
	for (int s = 0; s < f->steps; s++) {
		assert_true(isfinite(f->losses[s]));
		assert_true(isnan(d->losses[s]));
	}
}

static void same_devices_and_trace(sl_cluster *full, sl_cluster *dry, const char *name)
{
	for (int i = 0; i < sl_cluster_devices(full); i++) {
		sl_dev_stats a = sl_cluster_dev_stats(full, i), b = sl_cluster_dev_stats(dry, i);
		SAME(a.clock, b.clock, "device clock");
		SAME(a.wait_s, b.wait_s, "device wait");
		SAME(a.bytes_sent, b.bytes_sent, "bytes sent");
		SAME(a.bytes_received, b.bytes_received, "bytes received");
		SAME(a.mem_peak, b.mem_peak, "engine's peak memory");
		SAME(a.mem_current, b.mem_current, "memory held after the run");
	}
	sl_snapshot sa, sb;
	assert_int_equal(sl_trace_snapshot(sl_cluster_trace(full), &sa), SL_OK);
	assert_int_equal(sl_trace_snapshot(sl_cluster_trace(dry), &sb), SL_OK);
	SAME(sa.n, sb.n, "event count");
	for (size_t i = 0; i < sa.n; i++) {
		const sl_event *x = &sa.ev[i], *y = &sb.ev[i];
		if (x->dev != y->dev || x->peer != y->peer || x->kind != y->kind ||
		    x->op != y->op || x->mb != y->mb || x->t0 != y->t0 || x->t1 != y->t1 ||
		    x->bytes != y->bytes || x->flops != y->flops || strcmp(x->label, y->label) != 0)
			fail_msg("%s: event %zu differs: %s '%s' [%.17g, %.17g] vs %s '%s' [%.17g, "
			         "%.17g]",
			         name, i, sl_ev_kind_name(x->kind), x->label, x->t0, x->t1,
			         sl_ev_kind_name(y->kind), y->label, y->t0, y->t1);
	}
	sl_snapshot_free(&sa);
	sl_snapshot_free(&sb);
}

static const struct lay grid[] = {
    /* tp pp dp  schedule              m  v sp z1 node order       algo          heads L  B  f */
    {1, 1, 1, SL_SCHED_1F1B, 1, 1, 0, 0, 0, NULL, SL_ALGO_RING, 4, 4, 8, 0, NULL},
    {4, 1, 1, SL_SCHED_1F1B, 2, 1, 0, 0, 0, NULL, SL_ALGO_RING, 4, 2, 8, 0, NULL},
    {4, 1, 1, SL_SCHED_1F1B, 1, 1, 0, 0, 0, NULL, SL_ALGO_RING, 0, 3, 8, 0, NULL},
    {3, 1, 1, SL_SCHED_GPIPE, 2, 1, 0, 0, 0, NULL, SL_ALGO_RING, 0, 2, 6, 10, NULL},
    {2, 1, 2, SL_SCHED_1F1B, 1, 1, 1, 0, 2, NULL, SL_ALGO_RING, 4, 2, 8, 0, NULL},
    {1, 4, 1, SL_SCHED_GPIPE, 4, 1, 0, 0, 2, NULL, SL_ALGO_RING, 4, 8, 8, 0, NULL},
    {1, 4, 1, SL_SCHED_1F1B, 6, 1, 0, 0, 0, NULL, SL_ALGO_RING, 0, 6, 12, 0, NULL},
    {1, 2, 1, SL_SCHED_INTERLEAVED, 4, 2, 0, 0, 0, NULL, SL_ALGO_RING, 4, 8, 8, 0, NULL},
    {1, 1, 4, SL_SCHED_1F1B, 2, 1, 0, 1, 2, NULL, SL_ALGO_RING, 4, 2, 10, 0, NULL},
    {1, 1, 3, SL_SCHED_1F1B, 1, 1, 0, 0, 0, NULL, SL_ALGO_TREE, 0, 2, 7, 0, NULL},
    {2, 2, 2, SL_SCHED_1F1B, 2, 1, 1, 1, 4, NULL, SL_ALGO_RING, 4, 4, 8, 0, NULL},
    {2, 2, 2, SL_SCHED_INTERLEAVED, 2, 2, 0, 0, 2, "dp-tp-pp", SL_ALGO_RING, 4, 8, 8, 0, NULL},
    {2, 2, 2, SL_SCHED_GPIPE, 3, 1, 1, 0, 4, "pp-dp-tp", SL_ALGO_TREE, 4, 4, 12, 0, NULL},
    /* uneven stages: ends, a list with interleaving, chunks of unequal blocks */
    {1, 3, 1, SL_SCHED_1F1B, 3, 1, 0, 0, 0, NULL, SL_ALGO_RING, 4, 7, 8, 0, "ends"},
    {2, 2, 2, SL_SCHED_INTERLEAVED, 2, 2, 1, 1, 4, NULL, SL_ALGO_RING, 4, 7, 8, 0, "3,4"},
    {1, 2, 2, SL_SCHED_INTERLEAVED, 2, 3, 0, 2, 2, NULL, SL_ALGO_RING, 4, 7, 8, 0, "even"},
};

static void run_pair(const struct lay *x, int values_in_dry)
{
	char name[96];
	snprintf(name, sizeof name, "tp=%d pp=%d dp=%d %s m=%d v=%d sp=%d z1=%d %s", x->tp, x->pp,
	         x->dp, sl_sched_name(x->k), x->m, x->v, x->sp, x->z1, x->order ? x->order : "");
	sl_model_spec m;
	to_model(x, &m);
	sl_layout l = to_layout(x);
	int n = x->tp * x->pp * x->dp;
	sl_err err = {0};
	sl_train *tf = sl_train_create(&m, &l, n, &err);
	if (!tf)
		fail_msg("%s: %s", name, err.msg);
	sl_train *td = values_in_dry ? sl_train_create(&m, &l, n, &err)
	                             : sl_train_create_timing_only(&m, &l, n, &err);
	assert_non_null(td);
	assert_int_equal(sl_train_has_values(td), values_in_dry);
	sl_cluster *cf = make(x, 0, (uint64_t)1 << 30), *cd = make(x, 1, (uint64_t)1 << 30);
	sl_train_report rf, rd;
	if (sl_train_run(tf, cf, 2, &rf, &err))
		fail_msg("%s: full run: %s", name, err.msg);
	if (sl_train_run(td, cd, 2, &rd, &err))
		fail_msg("%s: timing-only run: %s", name, err.msg);
	same_report(&rf, &rd, name);
	same_devices_and_trace(cf, cd, name);
	/* The values of a state that has them are left alone. */
	if (values_in_dry) {
		size_t np = sl_model_nparams(&m);
		float *p = malloc(np * sizeof *p), *init = malloc(np * sizeof *init);
		sl_model_init(&m, init);
		assert_int_equal(sl_train_gather(td, p, NULL, NULL), SL_OK);
		assert_memory_equal(p, init, np * sizeof *p);
		free(p);
		free(init);
	}
	sl_train_report_free(&rf);
	sl_train_report_free(&rd);
	sl_train_destroy(tf);
	sl_train_destroy(td);
	sl_cluster_destroy(cf);
	sl_cluster_destroy(cd);
}

static void test_grid_same_as_full(void **state)
{
	(void)state;
	for (size_t g = 0; g < sizeof grid / sizeof grid[0]; g++)
		run_pair(&grid[g], 0);
}

/* A state with values runs timing-only too, and keeps them. */
static void test_state_with_values(void **state)
{
	(void)state;
	run_pair(&grid[1], 1);
	run_pair(&grid[10], 1);
}

/* Separate gradient accumulation on a realistic machine: a timing-only run
 * is the full run, figure for figure; and the full run's losses are the
 * fused one's, bit for bit (only time and memory differ), in a step that
 * takes longer. */
static void test_separate_accumulation(void **state)
{
	(void)state;
	const int rows[] = {0, 1, 7, 10, 11};
	for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
		g_separate = 1;
		run_pair(&grid[rows[i]], 0);
		g_separate = 0;
	}
	const struct lay *x = &grid[10];
	sl_train_report r[2];
	for (int sep = 0; sep < 2; sep++) {
		g_separate = 1; /* the realistic machine both times */
		sl_model_spec m;
		to_model(x, &m);
		m.grad_accum = sep ? SL_GACC_SEPARATE : SL_GACC_FUSED;
		sl_layout l = to_layout(x);
		sl_err err = {0};
		sl_train *tr = sl_train_create(&m, &l, x->tp * x->pp * x->dp, &err);
		assert_non_null(tr);
		sl_cluster *c = make(x, 0, (uint64_t)1 << 30);
		if (sl_train_run(tr, c, 2, &r[sep], &err))
			fail_msg("run: %s", err.msg);
		sl_train_destroy(tr);
		sl_cluster_destroy(c);
		g_separate = 0;
	}
	for (int s = 0; s < 2; s++)
		assert_true(r[0].losses[s] == r[1].losses[s]);
	assert_true(r[1].step_s > r[0].step_s);
	sl_train_report_free(&r[0]);
	sl_train_report_free(&r[1]);
}

/* Running out of device memory fails at the same buffer either way. */
static void test_out_of_memory_same(void **state)
{
	(void)state;
	const struct lay x = {1,  2, 1,   SL_SCHED_GPIPE, 4, 1, 0, 0, 0, NULL, SL_ALGO_RING, 4, 4,
	                      16, 0, NULL};
	sl_model_spec m;
	to_model(&x, &m);
	sl_layout l = to_layout(&x);
	sl_err ef = {0}, ed = {0};
	/* Parameters, gradients and moments fit; GPipe's activations do not. */
	uint64_t mem = 20000;
	sl_train *tf = sl_train_create(&m, &l, 2, &ef),
	         *td = sl_train_create_timing_only(&m, &l, 2, &ed);
	sl_cluster *cf = make(&x, 0, mem), *cd = make(&x, 1, mem);
	sl_train_report r;
	assert_int_equal(sl_train_run(tf, cf, 1, &r, &ef), SL_EDEVMEM);
	assert_int_equal(sl_train_run(td, cd, 1, &r, &ed), SL_EDEVMEM);
	assert_string_equal(strchr(ef.msg, ':'), strchr(ed.msg, ':'));
	sl_train_destroy(tf);
	sl_train_destroy(td);
	sl_cluster_destroy(cf);
	sl_cluster_destroy(cd);
}

/* A state without values needs a timing-only cluster, and has nothing to
 * gather. */
static void test_shapes_only_refusals(void **state)
{
	(void)state;
	const struct lay *x = &grid[1];
	sl_model_spec m;
	to_model(x, &m);
	sl_layout l = to_layout(x);
	sl_err err = {0};
	sl_train *td = sl_train_create_timing_only(&m, &l, 4, &err);
	sl_cluster *cf = make(x, 0, (uint64_t)1 << 30);
	sl_train_report r;
	assert_int_equal(sl_train_run(td, cf, 1, &r, &err), SL_EINVAL);
	assert_non_null(strstr(err.msg, "timing-only"));
	float p[1];
	assert_int_equal(sl_train_gather(td, p, NULL, NULL), SL_EINVAL);
	assert_int_equal(sl_train_scatter(td, p, NULL, NULL), SL_EINVAL);
	sl_dev_state ds = sl_train_dev_state(td, 0);
	assert_null(ds.params);
	assert_true(ds.n > 0);
	/* Nor any checkpoint: neither the state nor a timing-only cluster has
	 * values to write (the refusal comes before the directory is touched). */
	sl_cluster *cd = make(x, 1, (uint64_t)1 << 30);
	sl_train *tf = sl_train_create(&m, &l, 4, &err);
	assert_non_null(tf);
	const char *dir = "/nonexistent/shardlab-ckpt";
	assert_int_equal(sl_ckpt_save(td, cd, dir, NULL, &err), SL_EINVAL);
	assert_non_null(strstr(err.msg, "timing-only"));
	assert_int_equal(sl_ckpt_save(tf, cd, dir, NULL, &err), SL_EINVAL);
	assert_non_null(strstr(err.msg, "timing-only"));
	assert_int_equal(sl_ckpt_train_run(tf, cd, 1, dir, 0, NULL, &r, &err), SL_EINVAL);
	assert_non_null(strstr(err.msg, "timing-only"));
	sl_train_destroy(tf);
	sl_cluster_destroy(cd);
	sl_train_destroy(td);
	sl_cluster_destroy(cf);
}

int main(void)
{
	tu_watchdog(600);
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_grid_same_as_full),     cmocka_unit_test(test_state_with_values),
	    cmocka_unit_test(test_separate_accumulation), cmocka_unit_test(test_out_of_memory_same),
	    cmocka_unit_test(test_shapes_only_refusals),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
