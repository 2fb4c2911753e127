/* SPDX-License-Identifier: MIT */
/* The step model (steps.c): a run's events grouped into the logical
 * operations a person steps through, checked against the counts that the
 * algorithms' definitions give (written here), on one node and across two,
 * even and uneven, ring and tree. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <unistd.h>

#include "ckpt.h"
#include "coll.h"
#include "preset.h"
#include "scenario.h"
#include "steps.h"
#include "train.h"
#include "testutil.h"
#include "tmputil.h"

static int ceil_log2(int p)
{
	int l = 0;
	while ((1 << l) < p)
		l++;
	return l;
}

/* What every step model must satisfy: each counted event is in one step,
 * a step's span is exactly its events' earliest start and latest end, the
 * stops never go back, and a collective step's events share their logical
 * step; a collective's steps come in logical order. */
static void check_spans(const sl_snapshot *s, const sl_opstep *st, size_t ns, const int *of)
{
	double *lo = malloc(ns * sizeof *lo), *hi = malloc(ns * sizeof *hi);
	int *cstep = malloc(ns * sizeof *cstep);
	for (size_t i = 0; i < ns; i++) {
		lo[i] = 1e300;
		hi[i] = -1;
		cstep[i] = -2;
	}
	for (size_t i = 0; i < s->n; i++) {
		const sl_event *e = &s->ev[i];
		int counted = e->kind != SL_EV_WAIT && e->t1 > e->t0;
		if (!counted) {
			assert_int_equal(of[i], -1);
			continue;
		}
		assert_true(of[i] >= 0 && (size_t)of[i] < ns);
		size_t k = (size_t)of[i];
		if (e->t0 < lo[k])
			lo[k] = e->t0;
		if (e->t1 > hi[k])
			hi[k] = e->t1;
		if (e->coll.op >= 0) {
			if (cstep[k] == -2)
				cstep[k] = e->coll.step;
			if (cstep[k] != e->coll.step)
				fail_msg("event %zu (%s, dev %d): step %zu holds logical steps %d "
				         "and %d",
				         i, e->label, e->dev, k, cstep[k], e->coll.step);
		}
	}
	for (size_t k = 0; k < ns; k++) {
		if (st[k].t0 != lo[k] || st[k].t1 != hi[k])
			fail_msg("step %zu: span [%.17g, %.17g], its events [%.17g, %.17g]", k,
			         st[k].t0, st[k].t1, lo[k], hi[k]);
		/* Stops never go back, and a step stops once it is over. */
		if (k > 0 && !(st[k].t_stop >= st[k - 1].t_stop))
			fail_msg("step %zu stops at %.17g, before step %zu (%.17g)", k,
			         st[k].t_stop, k - 1, st[k - 1].t_stop);
		if (!(st[k].t_stop >= st[k].t1))
			fail_msg("step %zu stops at %.17g, before its end %.17g", k, st[k].t_stop,
			         st[k].t1);
	}
	for (size_t k = 0; k < ns; k++)
		for (size_t j = 0; j < k; j++)
			if (st[k].coll && st[j].coll && st[k].coll->leader == st[j].coll->leader &&
			    st[k].coll->seq == st[j].coll->seq &&
			    st[j].coll->step > st[k].coll->step)
				fail_msg("logical step %d comes after step %d of one collective",
				         st[j].coll->step, st[k].coll->step);
	free(lo);
	free(hi);
	free(cstep);
}

/* A pipeline message's step and a checkpoint chunk's hold one message or
 * one chunk: every event of the step carries the same fields; a message's
 * step has its sends and its receives, forward from a chunk to the next
 * one's stage, backward to the one before, over pp stages; a chunk's step
 * holds only reads or only writes. */
static void check_fields(const sl_snapshot *s, const sl_opstep *st, size_t ns, const int *of,
                         int pp)
{
	int *snd = calloc(ns ? ns : 1, sizeof *snd), *rcv = calloc(ns ? ns : 1, sizeof *rcv);
	for (size_t i = 0; i < s->n; i++) {
		if (of[i] < 0)
			continue;
		const sl_event *e = &s->ev[i];
		const sl_opstep *o = &st[of[i]];
		if ((e->p2p.kind != SL_P2P_NONE) != (o->p2p != NULL) ||
		    (e->io.kind != SL_IO_NONE) != (o->io != NULL))
			fail_msg("event %zu (%s) and its step %d differ in kind", i, e->label,
			         of[i]);
		if (o->p2p) {
			const sl_ev_p2p *a = &e->p2p, *b = o->p2p;
			if (a->kind != b->kind || a->from != b->from || a->to != b->to ||
			    a->chunk != b->chunk || a->mb != b->mb || a->iter != b->iter)
				fail_msg("step %d holds two pipeline messages", of[i]);
			int fwd = a->kind == SL_P2P_ACT;
			assert_true(a->kind == SL_P2P_ACT || a->kind == SL_P2P_GRAD);
			assert_int_equal(a->from, a->chunk % pp);
			assert_int_equal(a->to, (fwd ? a->chunk + 1 : a->chunk - 1 + pp) % pp);
			assert_true(e->kind == SL_EV_SEND || e->kind == SL_EV_RECV);
			(e->kind == SL_EV_SEND ? snd : rcv)[of[i]]++;
		}
		if (o->io) {
			assert_int_equal(e->io.kind, o->io->kind);
			assert_int_equal(e->io.id, o->io->id);
			assert_int_equal(e->kind,
			                 e->io.kind == SL_IO_WRITE ? SL_EV_WRITE : SL_EV_READ);
			assert_true(e->io.chunk >= 0 && e->io.chunk < e->io.nchunks);
		}
	}
	for (size_t k = 0; k < ns; k++)
		if (st[k].p2p && (snd[k] == 0 || snd[k] != rcv[k]))
			fail_msg("pipeline step %zu: %d sends, %d receives", k, snd[k], rcv[k]);
	free(snd);
	free(rcv);
}

/* The phases of the last run checked (steps_tallied), for the cases that
 * count them. */
static size_t last_phases;

/* Phases (sl_phase_stops) end where steps stop, the last one with the
 * run; none holds two kinds of step; their count is at most the stops'. */
static size_t check_phases(const sl_opstep *st, size_t ns)
{
	double *ph, *stops;
	size_t np = sl_phase_stops(st, ns, &ph), nstops = sl_step_stops(st, ns, &stops);
	assert_true(np <= nstops);
	for (size_t i = 0; i < np; i++) {
		int found = 0;
		for (size_t j = 0; j < nstops && !found; j++)
			found = ph[i] == stops[j];
		if (!found)
			fail_msg("phase %zu ends at %.17g, where no step stops", i, ph[i]);
		if (i > 0 && !(ph[i] > ph[i - 1]))
			fail_msg("phase %zu ends at %.17g, not after phase %zu", i, ph[i], i - 1);
	}
	if (ns)
		assert_true(np > 0 && ph[np - 1] == stops[nstops - 1]);
	for (size_t k = 1; k < ns; k++)
		if ((st[k].compute != st[k - 1].compute || !st[k].p2p != !st[k - 1].p2p ||
		     !st[k].coll != !st[k - 1].coll) &&
		    !sl_step_phase_break(&st[k - 1], &st[k]))
			fail_msg("steps %zu and %zu differ in kind, in one phase", k - 1, k);
	free(ph);
	free(stops);
	return np;
}

/* What a run's steps are made of. */
struct tally {
	int gemms;    /* training GEMMs */
	int p2p;      /* pipeline messages */
	int writes;   /* checkpoint chunks written */
	int reads;    /* stored chunks read */
	size_t stops; /* distinct stops (sl_step_ends) */
};

/* The steps of cluster c's run, checked (check_spans, check_fields over pp
 * stages); the first step's span, the last step's end and what the steps
 * are into the pointers given (each may be NULL). */
static size_t steps_tallied(sl_cluster *c, int pp, double *span0, double *end, struct tally *t)
{
	sl_snapshot s;
	assert_int_equal(sl_trace_snapshot(sl_cluster_trace(c), &s), SL_OK);
	sl_opstep *st;
	int *of;
	size_t ns = sl_steps_build(&s, &st, &of);
	check_spans(&s, st, ns, of);
	check_fields(&s, st, ns, of, pp > 0 ? pp : 1);
	last_phases = check_phases(st, ns);
	for (size_t i = 0; t && i < ns; i++) {
		t->gemms += st[i].compute && s.ev[st[i].rep].work.pass != SL_PASS_NONE;
		t->p2p += st[i].p2p != NULL;
		t->writes += st[i].io && st[i].io->kind == SL_IO_WRITE;
		t->reads += st[i].io && st[i].io->kind == SL_IO_READ;
	}
	if (t) {
		double *ends;
		t->stops = sl_step_ends(&s, &ends);
		free(ends);
	}
	if (span0 && ns)
		*span0 = st[0].t1 - st[0].t0;
	if (end && ns)
		*end = st[ns - 1].t_stop;
	free(st);
	free(of);
	sl_snapshot_free(&s);
	return ns;
}

static size_t steps_checked(sl_cluster *c, double *span0, double *end)
{
	return steps_tallied(c, 1, span0, end, NULL);
}

/* A product on p devices, on nodes of g (0: one node). */
static size_t product_steps(sl_split split, int p, int g, int m, int k, int n, sl_algo algo)
{
	sl_scenario sc;
	sl_scenario_default(&sc);
	sl_preset_apply(sl_preset_find("h100"), &sc.cluster);
	sc.cluster.devices = p;
	sc.cluster.devices_per_node = g;
	sc.cluster.timing = SL_TIMING_MODEL;
	sc.cluster.slowdown = 0;
	sc.gemm.split = split;
	sc.gemm.m = m;
	sc.gemm.k = k;
	sc.gemm.n = n;
	sc.gemm.algo = algo;
	sl_cluster *c = NULL;
	sl_gemm_result res;
	sl_err err = {0};
	if (sl_scenario_run(&sc, &c, &res, &err))
		fail_msg("run: %s", err.msg);
	double end = 0;
	size_t ns = steps_checked(c, NULL, &end);
	/* The last step ends with the run. */
	assert_true(ns > 0);
	tu_check_close(end, res.emulated_time_s, 1e-12, "the last step's end");
	sl_cluster_destroy(c);
	return ns;
}

/* The cases: 8 devices on two nodes of 4, row- and column-wise
 * (a ring whose devices fall out of step); 7 devices, n = 1000 (uneven
 * shards, unequal compute times); ring and tree. */
static void test_products(void **state)
{
	(void)state;
	/* Column-wise: the compute phase, then p-1 all-gather steps. */
	assert_int_equal(product_steps(SL_SPLIT_COL, 8, 4, 256, 2048, 2048, SL_ALGO_RING), 1 + 7);
	/* Row-wise: the compute phase, then 2(p-1) all-reduce steps. */
	assert_int_equal(product_steps(SL_SPLIT_ROW, 8, 4, 256, 2048, 2048, SL_ALGO_RING), 1 + 14);
	assert_int_equal(product_steps(SL_SPLIT_COL, 8, 0, 256, 2048, 2048, SL_ALGO_RING), 1 + 7);
	assert_int_equal(product_steps(SL_SPLIT_COL, 7, 0, 256, 1024, 1000, SL_ALGO_RING), 1 + 6);
	assert_int_equal(product_steps(SL_SPLIT_ROW, 3, 0, 256, 512, 512, SL_ALGO_RING), 1 + 4);
	/* Tree: a binomial all-reduce is 2 ceil(log2 p) levels. */
	for (int p = 2; p <= 9; p++)
		assert_int_equal(product_steps(SL_SPLIT_ROW, p, 0, 64, 256, 256, SL_ALGO_TREE),
		                 (size_t)(1 + 2 * ceil_log2(p)));
	/* Uneven shards over 6: levels 2 and 3 of the reduce run side by side
	 * and the later one ends a hair sooner; they still come in order. */
	assert_int_equal(product_steps(SL_SPLIT_ROW, 6, 0, 256, 1024, 1024, SL_ALGO_TREE), 1 + 6);
	/* Phases: the compute, then each half of the collective (a ring's
	 * reduce-scatter and all-gather, a tree's reduce and broadcast). */
	assert_int_equal(last_phases, 3);
	product_steps(SL_SPLIT_ROW, 8, 4, 256, 2048, 2048, SL_ALGO_RING);
	assert_int_equal(last_phases, 3);
	product_steps(SL_SPLIT_COL, 8, 4, 256, 2048, 2048, SL_ALGO_RING);
	assert_int_equal(last_phases, 2);
}

/* A lone collective, timing only, over p devices on nodes of g. */
static size_t coll_steps(sl_coll_op op, sl_algo algo, int p, int g, size_t count, double *span0)
{
	sl_cluster_config cfg = tu_config(p, 100e9, 2e-6);
	cfg.devices_per_node = g;
	cfg.inter.bandwidth = 12.5e9;
	cfg.inter.latency = 5e-6;
	cfg.timing_only = 1;
	sl_cluster *c = tu_create(&cfg);
	tu_coll_job j = {op, algo, count};
	sl_err err = {0};
	if (sl_cluster_run(c, tu_coll_prog, &j, &err))
		fail_msg("%s: %s", sl_coll_op_name(op), err.msg);
	size_t ns = steps_checked(c, span0, NULL);
	sl_cluster_destroy(c);
	return ns;
}

static void test_collectives(void **state)
{
	(void)state;
	double span;
	/* Lesson 7's all-reduce: 16 devices on two nodes of 8, 2(p-1) steps. */
	assert_int_equal(coll_steps(SL_COLL_ALLREDUCE, SL_ALGO_RING, 16, 8, 1 << 20, NULL), 30);
	/* Tree all-reduce on 6 and 8 devices: 2 ceil(log2 p). */
	assert_int_equal(coll_steps(SL_COLL_ALLREDUCE, SL_ALGO_TREE, 6, 0, 1 << 16, NULL), 6);
	assert_int_equal(coll_steps(SL_COLL_ALLREDUCE, SL_ALGO_TREE, 8, 0, 1 << 16, NULL), 6);
	/* One node, equal blocks: every ring step is one block's hop, alpha +
	 * (N/p)/B, the first as the others. */
	assert_int_equal(coll_steps(SL_COLL_ALLGATHER, SL_ALGO_RING, 4, 0, 1 << 20, &span), 3);
	tu_check_close(span, 2e-6 + (double)(1 << 20) / 4 * 4 / 100e9, 1e-12, "a ring step");
	/* Two nodes: the step lasts at least the slow inter-node hop. */
	assert_int_equal(coll_steps(SL_COLL_ALLGATHER, SL_ALGO_RING, 8, 4, 1 << 20, &span), 7);
	assert_true(span >= 5e-6 + (double)(1 << 20) / 8 * 4 / 12.5e9 * (1 - 1e-12));
}

/* A training step under a pipeline schedule: every GEMM of every block
 * and micro-batch is one step, whatever devices compute it (a tensor-
 * parallel group, its data-parallel replicas); so the GEMM steps number
 * layers x micro-batches x 6 for MLP-only blocks (forward fc1, fc2;
 * backward fc2 and fc1, each a weight and an input gradient), from the
 * model's shape.  Every pipeline message is one step too: each micro-
 * batch's activations cross the pp*v-1 boundaries between the model's
 * chunks forward and its gradients cross them back, so there are
 * 2 (pp v - 1) m of them, whatever the schedule's order.  Spans hold as
 * for any step.  Returns the stops. */
static size_t train_case(int tp, int pp, int dp, sl_sched k, int m, int v)
{
	sl_model_spec ms = tu_model(4, 16, 32, 0, 4, 32);
	sl_layout l = tu_layout(tp, pp, dp, k, m, v);
	int n = tp * pp * dp;
	sl_err err = {0};
	sl_train *tr = sl_train_create(&ms, &l, n, &err);
	if (!tr)
		fail_msg("%s: %s", sl_sched_name(k), err.msg);
	sl_cluster_config cfg = tu_h100(n, 8);
	cfg.timing = SL_TIMING_MODEL;
	cfg.slowdown = 0;
	cfg.memory = (uint64_t)1 << 30;
	sl_cluster *c = tu_create(&cfg);
	sl_train_report rep;
	if (sl_train_run(tr, c, 1, &rep, &err))
		fail_msg("%s: %s", sl_sched_name(k), err.msg);
	sl_train_report_free(&rep);
	struct tally t = {0};
	size_t ns = steps_tallied(c, pp, NULL, NULL, &t);
	if (t.gemms != ms.layers * m * 6)
		fail_msg("tp=%d pp=%d dp=%d %s m=%d: %d GEMM steps, want %d", tp, pp, dp,
		         sl_sched_name(k), m, t.gemms, ms.layers * m * 6);
	if (t.p2p != 2 * (pp * v - 1) * m)
		fail_msg("tp=%d pp=%d dp=%d %s m=%d v=%d: %d pipeline steps, want %d", tp, pp, dp,
		         sl_sched_name(k), m, v, t.p2p, 2 * (pp * v - 1) * m);
	print_message("tp=%d pp=%d dp=%d %s m=%d v=%d: %zu steps (%d GEMMs, %d pipeline "
	              "messages), %zu stops, %zu phases\n",
	              tp, pp, dp, sl_sched_name(k), m, v, ns, t.gemms, t.p2p, t.stops, last_phases);
	/* A pipeline's phases are its rounds: the stages' work, then the
	 * messages between them; at least one per micro-batch and pass, and
	 * fewer than the places stepping stops. */
	if (pp > 1 && (last_phases < (size_t)(2 * m) || last_phases >= t.stops))
		fail_msg("%s m=%d: %zu phases of %zu steps", sl_sched_name(k), m, last_phases, ns);
	sl_cluster_destroy(c);
	sl_train_destroy(tr);
	return t.stops;
}

static void test_training(void **state)
{
	(void)state;
	train_case(1, 4, 1, SL_SCHED_GPIPE, 8, 1);
	train_case(1, 4, 1, SL_SCHED_1F1B, 8, 1);
	train_case(2, 2, 2, SL_SCHED_1F1B, 4, 1);
	train_case(1, 2, 1, SL_SCHED_INTERLEAVED, 4, 2);
}

/* Checkpoint I/O: a save writes each chunk of each tensor once, on its
 * owner, so a save of N chunks is N steps; a reshard reads each stored
 * chunk (every one overlaps some new shard, since the new layout covers
 * each tensor whole) on every device that needs it, one step a chunk,
 * then writes the new layout's chunks: N_old + N_new steps.  The chunk
 * counts come from the manifests, the steps from the events. */
static int manifest_chunks(const sl_ckpt *ck)
{
	const sl_ckpt_info *in = sl_ckpt_info_of(ck);
	int n = 0;
	for (int t = 0; t < in->ntensors; t++)
		n += in->tensors[t].nchunks;
	return n;
}

static void test_checkpoint(void **state)
{
	(void)state;
	char root[512];
	tu_tmpname(root, sizeof root, "test_steps-XXXXXX");
	assert_non_null(mkdtemp(root));
	char a[600], b[600];
	snprintf(a, sizeof a, "%s/a", root);
	snprintf(b, sizeof b, "%s/b", root);
	sl_model_spec ms = tu_model(4, 16, 32, 2, 4, 32);
	sl_layout l = tu_layout(2, 2, 1, SL_SCHED_1F1B, 2, 1);
	sl_err err = {0};
	sl_train *tr = sl_train_create(&ms, &l, 4, &err);
	if (!tr)
		fail_msg("%s", err.msg);
	sl_cluster_config cfg = tu_config(4, 100e9, 1e-6);
	sl_cluster *c = tu_create(&cfg);
	if (sl_ckpt_save(tr, c, a, NULL, &err))
		fail_msg("save: %s", err.msg);
	struct tally t = {0};
	size_t ns = steps_tallied(c, 1, NULL, NULL, &t);
	sl_ckpt *ck;
	if (sl_ckpt_open(a, &ck, &err))
		fail_msg("open: %s", err.msg);
	int n_old = manifest_chunks(ck);
	assert_true(n_old > 0);
	assert_int_equal(t.writes, n_old);
	assert_int_equal(t.reads, 0);
	assert_int_equal(ns, (size_t)n_old);
	print_message("save of %d chunks on 4 devices: %zu steps, %zu stops\n", n_old, ns, t.stops);
	sl_cluster_destroy(c);
	/* Reshard from TP 2 x PP 2 onto PP 4: each new device reads the
	 * stored chunks of its blocks' tensors, whole or in halves. */
	sl_layout l3 = tu_layout(1, 4, 1, SL_SCHED_1F1B, 4, 1);
	cfg = tu_config(4, 100e9, 1e-6);
	c = tu_create(&cfg);
	if (sl_ckpt_reshard(ck, &l3, c, b, NULL, &err))
		fail_msg("reshard: %s", err.msg);
	memset(&t, 0, sizeof t);
	ns = steps_tallied(c, 1, NULL, NULL, &t);
	sl_ckpt *ck2;
	if (sl_ckpt_open(b, &ck2, &err))
		fail_msg("open: %s", err.msg);
	int n_new = manifest_chunks(ck2);
	assert_int_equal(t.reads, n_old);
	assert_int_equal(t.writes, n_new);
	assert_int_equal(ns, (size_t)(n_old + n_new));
	print_message("reshard of %d chunks onto %d: %zu steps, %zu stops\n", n_old, n_new, ns,
	              t.stops);
	sl_ckpt_close(ck2);
	sl_ckpt_close(ck);
	sl_cluster_destroy(c);
	sl_train_destroy(tr);
	tu_rm_rf(root);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_products),
	    cmocka_unit_test(test_collectives),
	    cmocka_unit_test(test_training),
	    cmocka_unit_test(test_checkpoint),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
