/* SPDX-License-Identifier: MIT */
/* test_plan.c - the layout planner: on small cases its candidates are
 * every valid even layout, its figures and ranking are those of running
 * every candidate in full, and what it rejects for memory runs out of
 * memory; invalid inputs get one line saying what is missing; and what the
 * issue says a plan must show: TP inside nodes for a large model (and
 * across nodes measurably slower), the best layout moving with the
 * sequence length and the inter-node link, and a model that fits on a few
 * devices taking the smallest model-parallel size with DP for the rest;
 * and the table's plan, which times only what can rank in its first rows,
 * keeping those rows and the explanation of the plan that times all. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "plan.h"
#include "testutil.h"
#include "train.h"

static sl_model_spec small_model(int layers, int batch)
{
	return tu_model(layers, 8, 16, 4, 4, batch);
}

static void plan_or_fail(const sl_model_spec *m, const sl_cluster_config *cfg, sl_plan *p)
{
	sl_plan_spec s = {.model = *m, .cluster = *cfg};
	sl_err err = {0};
	if (sl_plan_run(&s, p, &err))
		fail_msg("plan: %s", err.msg);
}

/* A full run of one step: its step time and the largest peak memory, or
 * SL_EDEVMEM. */
static int run_full(const sl_model_spec *m, const sl_layout *l, const sl_cluster_config *cfg,
                    double *step, uint64_t *peak)
{
	sl_err err = {0};
	sl_cluster_config c = *cfg;
	c.timing_only = 0;
	sl_train *tr = sl_train_create(m, l, c.devices, &err);
	if (!tr)
		fail_msg("create: %s", err.msg);
	sl_cluster *cl = tu_create(&c);
	sl_train_report rep;
	int rc = sl_train_run(tr, cl, 1, &rep, &err);
	if (rc == SL_OK) {
		*step = rep.step_s;
		*peak = 0;
		for (int i = 0; i < rep.ndev; i++)
			*peak =
			    rep.dev[i].mem_peak_bytes > *peak ? rep.dev[i].mem_peak_bytes : *peak;
		sl_train_report_free(&rep);
	}
	sl_train_destroy(tr);
	sl_cluster_destroy(cl);
	return rc;
}

/* Uneven stages: 7 layers on 2 or 4 stages are tried split even and ends;
 * interleaved only where every chunk gets a layer (2 stages of 4 and 3: v
 * = 2; 4 stages of 2, 2, 2, 1 either way: none); and a best row of each
 * split equals a full run's step and memory (the planner's figures follow
 * each stage's own layers). */
static void test_uneven_candidates(void **state)
{
	(void)state;
	sl_model_spec m = small_model(7, 8);
	sl_cluster_config cfg = tu_h100(4, 2);
	cfg.flops = 2e12;
	cfg.memory = (uint64_t)1 << 30;
	sl_plan p;
	plan_or_fail(&m, &cfg, &p);
	int seen[5][2][2] = {{{0}}}; /* [pp][stages][interleaved] */
	for (int i = 0; i < p.n; i++) {
		const sl_layout *l = &p.rows[i].layout;
		assert_true(l->stages == SL_STAGES_EVEN || l->stages == SL_STAGES_ENDS);
		if (l->pp == 1)
			assert_int_equal(l->stages, SL_STAGES_EVEN);
		int il = l->schedule == SL_SCHED_INTERLEAVED;
		if (il)
			assert_int_equal(l->chunks, 2);
		seen[l->pp][l->stages][il]++;
	}
	assert_true(seen[2][0][0] && seen[2][1][0] && seen[2][0][1] && seen[2][1][1]);
	assert_true(seen[4][0][0] && seen[4][1][0]);
	assert_false(seen[4][0][1] || seen[4][1][1]);
	for (int k = 0; k < 2; k++) {
		int i = 0;
		while (i < p.nfit &&
		       !(p.rows[i].layout.stages == (sl_stage_rule)k && p.rows[i].layout.pp == 2))
			i++;
		assert_true(i < p.nfit);
		double step;
		uint64_t peak;
		assert_int_equal(run_full(&m, &p.rows[i].layout, &cfg, &step, &peak), SL_OK);
		tu_check_close(p.rows[i].est.step_s, step, 1e-12, "uneven plan row's step");
		assert_int_equal(p.rows[i].est.mem_peak_bytes, peak);
	}
	sl_plan_free(&p);
	/* 24 layers on 2 stages: v divides the stage's 12, up to 16 */
	m = small_model(24, 8);
	sl_plan_spec s = {.model = m,
	                  .cluster = cfg,
	                  .fix_tp = 1,
	                  .fix_pp = 2,
	                  .fix_schedule = 1,
	                  .schedule = SL_SCHED_INTERLEAVED};
	sl_err err = {0};
	if (sl_plan_run(&s, &p, &err))
		fail_msg("plan: %s", err.msg);
	int vs = 0;
	for (int i = 0; i < p.n; i++)
		vs |= 1 << p.rows[i].layout.chunks;
	assert_int_equal(vs, 1 << 2 | 1 << 3 | 1 << 4 | 1 << 6 | 1 << 12);
	sl_plan_free(&p);
}

/* ---- small cases against full runs ---- */

static sl_cluster_config small_cluster(uint64_t memory)
{
	sl_cluster_config cfg = tu_h100(4, 2);
	cfg.flops = 2e12; /* slow enough that compute and links both matter */
	cfg.memory = memory;
	return cfg;
}

/* Every valid layout with even splits appears (GPipe only with a
 * pipeline of several micro-batches: otherwise its actions are 1F1B's). */
static void test_candidates_are_every_layout(void **state)
{
	(void)state;
	sl_model_spec m = small_model(4, 8);
	sl_cluster_config cfg = small_cluster((uint64_t)1 << 30);
	sl_plan p;
	plan_or_fail(&m, &cfg, &p);
	int want = 0;
	for (int tp = 1; tp <= 4; tp++)
		for (int pp = 1; pp <= 4; pp++)
			for (int dp = 1; dp <= 4; dp++) {
				if (tp * pp * dp != 4 || m.batch % dp)
					continue;
				for (int mb = 1; mb <= m.batch / dp; mb++)
					for (int k = 0; k < SL_SCHED_N; k++)
						for (int v = 1; v <= 8; v++)
							for (int sp = 0; sp < 2; sp++)
								for (int z = 0; z < 2; z++) {
									if ((m.batch / dp) % mb ||
									    (k == SL_SCHED_GPIPE &&
									     (pp == 1 || mb == 1)))
										continue;
									sl_layout l;
									sl_layout_default(&l);
									l.tp = tp, l.pp = pp,
									l.dp = dp;
									l.microbatches = mb,
									l.schedule = (sl_sched)k;
									l.chunks = v,
									l.seq_parallel = sp,
									l.zero = z;
									if (sl_layout_check(
									        &m, &l, 4, NULL))
										continue;
									want++;
									int found = 0;
									for (int i = 0;
									     i < p.n && !found;
									     i++) {
										const sl_layout *q =
										    &p.rows[i]
										         .layout;
										found =
										    q->tp == tp &&
										    q->pp == pp &&
										    q->dp == dp &&
										    q->microbatches ==
										        mb &&
										    q->schedule ==
										        (sl_sched)
										            k &&
										    q->chunks ==
										        v &&
										    q->seq_parallel ==
										        sp &&
										    q->zero == z;
									}
									if (!found)
										fail_msg(
										    "tp=%d pp=%d "
										    "dp=%d m=%d %s "
										    "v=%d sp=%d "
										    "z1=%d is "
										    "missing",
										    tp, pp, dp, mb,
										    sl_sched_name((
										        sl_sched)k),
										    v, sp, z);
								}
			}
	assert_true(want > 50);
	assert_true(p.n >= want); /* more: several mesh orders per layout */
	sl_plan_free(&p);
}

/* Ranked by the full runs' step time (to 12 digits), then peak memory. */
static void test_ranking_equals_full_runs(void **state)
{
	(void)state;
	sl_model_spec m = small_model(4, 8);
	sl_cluster_config cfg = small_cluster((uint64_t)1 << 30);
	sl_plan p;
	plan_or_fail(&m, &cfg, &p);
	assert_int_equal(p.nfit, p.n);
	double prev_t = 0;
	uint64_t prev_m = 0;
	for (int i = 0; i < p.n; i++) {
		const sl_plan_row *r = &p.rows[i];
		double step;
		uint64_t peak;
		char name[96];
		sl_plan_layout_name(&r->layout, name, sizeof name);
		if (run_full(&m, &r->layout, &cfg, &step, &peak))
			fail_msg("%s: the full run failed", name);
		tu_check_close(r->est.step_s, step, 1e-12, name);
		if (r->est.mem_peak_bytes != peak)
			fail_msg("%s: peak memory %llu, the run's %llu", name,
			         (unsigned long long)r->est.mem_peak_bytes,
			         (unsigned long long)peak);
		double t = sl_plan_time_key(step);
		if (i > 0 && (t < prev_t || (t == prev_t && peak < prev_m)))
			fail_msg("rank %d (%s, %.12g s, %llu B) is ahead of its place after %.12g "
			         "s, %llu B",
			         i + 1, name, step, (unsigned long long)peak, prev_t,
			         (unsigned long long)prev_m);
		prev_t = t;
		prev_m = peak;
	}
	sl_plan_free(&p);
}

/* With less memory, what the plan rejects runs out of memory in full and
 * what it keeps runs. */
static void test_rejections_equal_full_runs(void **state)
{
	(void)state;
	sl_model_spec m = small_model(4, 16);
	/* Tight enough that some layouts do not fit even with full
	 * recomputation, which the plan turns on before it rejects one. */
	sl_cluster_config cfg = small_cluster(30000);
	sl_plan p;
	plan_or_fail(&m, &cfg, &p);
	assert_true(p.nfit > 0 && p.nfit < p.n);
	for (int i = 0; i < p.n; i++) {
		const sl_plan_row *r = &p.rows[i];
		double step;
		uint64_t peak;
		char name[96];
		sl_plan_layout_name(&r->layout, name, sizeof name);
		int rc = run_full(&m, &r->layout, &cfg, &step, &peak);
		if (r->fits && rc != SL_OK)
			fail_msg("%s fits by the plan but its run failed", name);
		if (!r->fits && rc != SL_EDEVMEM)
			fail_msg("%s does not fit by the plan but its run gave %d", name, rc);
		assert_true(r->fits == (r->est.mem_peak_bytes <= cfg.memory));
	}
	sl_plan_free(&p);
}

/* ---- invalid inputs ---- */

static void test_no_valid_layout(void **state)
{
	(void)state;
	sl_model_spec m = small_model(1, 1);
	m.heads = 3;
	m.hidden = 9;
	sl_cluster_config cfg = tu_h100(8, 8);
	sl_plan_spec s = {.model = m, .cluster = cfg};
	sl_plan p;
	sl_err err = {0};
	assert_int_equal(sl_plan_run(&s, &p, &err), SL_EINVAL);
	assert_non_null(strstr(err.msg, "no layout fills 8 devices"));
	assert_non_null(strstr(err.msg, "the most that fit is 1 device:"));
	assert_null(strchr(err.msg, '\n'));
	sl_plan_free(&p);
}

static void test_fits_nowhere(void **state)
{
	(void)state;
	sl_model_spec m = small_model(4, 8);
	sl_cluster_config cfg = tu_h100(4, 4);
	cfg.memory = 4096;
	sl_plan_spec s = {.model = m, .cluster = cfg};
	sl_plan p;
	sl_err err = {0};
	assert_int_equal(sl_plan_run(&s, &p, &err), SL_EINVAL);
	assert_non_null(strstr(err.msg, "no layout fits in 4.00 KiB per device"));
	assert_non_null(strstr(err.msg, "the smallest peak is"));
	/* the smallest peak it names is the plan's first rejected row */
	assert_true(p.n > 0 && p.nfit == 0);
	for (int i = 1; i < p.n; i++)
		assert_true(p.rows[i].est.mem_peak_bytes >= p.rows[0].est.mem_peak_bytes);
	sl_plan_free(&p);
}

/* ---- what a plan must show ---- */

/* A 70B model on 64 H100s in nodes of 8: the best layouts that use TP keep
 * it inside a node, and the best one with its TP group moved across nodes
 * is measurably slower (its TP ring crosses the inter-node links). */
static void test_tp_stays_inside_nodes(void **state)
{
	(void)state;
	sl_model_spec m = tu_model(80, 8192, 28672, 64, 2048, 128);
	sl_cluster_config cfg = tu_h100(64, 8);
	sl_plan p;
	plan_or_fail(&m, &cfg, &p);
	int seen = 0;
	for (int i = 0; i < p.nfit && seen < 5; i++)
		if (p.rows[i].layout.tp > 1) {
			seen++;
			if (p.rows[i].tp.inter)
				fail_msg("rank %d has its TP group across nodes", i + 1);
		}
	assert_int_equal(seen, 5);
	assert_true(p.rows[0].layout.tp > 1);
	int j = sl_plan_tp_moved(&p, 0, 1);
	assert_true(j > 0);
	assert_true(p.rows[j].tp.inter);
	assert_true(p.rows[j].tp.slowest.bandwidth == cfg.inter.bandwidth);
	assert_true(p.rows[j].est.step_s > 1.1 * p.rows[0].est.step_s);
	sl_plan_free(&p);
}

/* The same tokens per step in longer sequences: attention's activations
 * grow with s^2, and the best layout turns to more TP, with sequence
 * parallelism, or to selective recomputation. */
static void test_best_changes_with_sequence(void **state)
{
	(void)state;
	sl_cluster_config cfg = tu_h100(16, 8);
	sl_model_spec a = tu_model(32, 4096, 11008, 32, 2048, 64);
	sl_model_spec b = tu_model(32, 4096, 11008, 32, 8192, 16);
	sl_plan pa, pb;
	plan_or_fail(&a, &cfg, &pa);
	plan_or_fail(&b, &cfg, &pb);
	const sl_layout *la = &pa.rows[0].layout, *lb = &pb.rows[0].layout;
	char na[96], nb[96];
	sl_plan_layout_name(la, na, sizeof na);
	sl_plan_layout_name(lb, nb, sizeof nb);
	/* Either answer to the s^2 term: more TP with sequence parallelism,
	 * or recomputing the attention core that holds it. */
	if (!((lb->tp > la->tp && lb->seq_parallel) || lb->recompute > la->recompute))
		fail_msg("seq 2048: %s; seq 8192: %s", na, nb);
	sl_plan_free(&pa);
	sl_plan_free(&pb);
}

/* A 7B model on two nodes of 8: with a slow inter-node link the best keeps
 * its data-parallel gradients inside nodes; with a fast one it sends them
 * across. */
static void test_best_changes_with_inter_node_link(void **state)
{
	(void)state;
	sl_model_spec m = tu_model(32, 4096, 11008, 32, 2048, 64);
	sl_cluster_config slow = tu_h100(16, 8), fast = tu_h100(16, 8);
	slow.inter.bandwidth = 12.5e9;
	fast.inter.bandwidth = 400e9;
	sl_plan ps, pf;
	plan_or_fail(&m, &slow, &ps);
	plan_or_fail(&m, &fast, &pf);
	char ns[96], nf[96];
	sl_plan_layout_name(&ps.rows[0].layout, ns, sizeof ns);
	sl_plan_layout_name(&pf.rows[0].layout, nf, sizeof nf);
	if (strcmp(ns, nf) == 0 || ps.rows[0].dp.inter || !pf.rows[0].dp.inter)
		fail_msg("12.5 GB/s: %s; 400 GB/s: %s", ns, nf);
	sl_plan_free(&ps);
	sl_plan_free(&pf);
}

/* A 1.2B model (24 blocks of width 2048, ffn 8192, 16 heads) on devices of
 * 18 GiB: its parameters, gradients and Adam's moments alone, 16 bytes a
 * parameter, are just over one device; with a large batch the best layout
 * takes the smallest model-parallel size that fits without recomputation
 * and DP for the rest (one device a replica fits only with ZeRO-1 and
 * recomputation).
 * (With 16 GiB only TP fits on two devices, and four pipeline stages win:
 * the numbers can say otherwise.) */
static void test_smallest_model_parallel_fit(void **state)
{
	(void)state;
	int L = 24, h = 2048, f = 8192;
	sl_model_spec m = tu_model(L, h, f, 16, 2048, 1024);
	sl_cluster_config cfg = tu_h100(8, 8);
	cfg.memory = (uint64_t)18 << 30;
	double params =
	    L * (3.0 * h * h + (double)h * h + h + (double)h * f + f + (double)f * h + h);
	assert_true(16 * params > (double)cfg.memory);     /* one device is too small */
	assert_true(16 * params / 2 < (double)cfg.memory); /* two may do */
	sl_plan p;
	plan_or_fail(&m, &cfg, &p);
	int smallest = 1 << 30;
	for (int i = 0; i < p.nfit; i++) {
		int mp = p.rows[i].layout.tp * p.rows[i].layout.pp;
		smallest = mp < smallest ? mp : smallest;
	}
	/* One device per replica fits only sharded: with ZeRO-1 (8 bytes a
	 * parameter stay whole) and recomputation, which the plan turns on, or
	 * with ZeRO-2 or 3, which it tries when ZeRO-1 alone does not fit. */
	assert_int_equal(smallest, 1);
	for (int i = 0; i < p.nfit; i++)
		if (p.rows[i].layout.tp * p.rows[i].layout.pp == 1)
			assert_true(p.rows[i].layout.zero >= 2 ||
			            (p.rows[i].layout.zero == 1 &&
			             p.rows[i].layout.recompute != SL_RECOMPUTE_NONE));
	/* Recomputing costs a third more work, so among the unsharded and
	 * ZeRO-1 layouts the best is the smallest model-parallel size that fits
	 * without it, DP for the rest. */
	int plain = 1 << 30;
	for (int i = 0; i < p.nfit; i++) {
		int mp = p.rows[i].layout.tp * p.rows[i].layout.pp;
		if (p.rows[i].layout.recompute == SL_RECOMPUTE_NONE && p.rows[i].layout.zero <= 1 &&
		    mp < plain)
			plain = mp;
	}
	assert_int_equal(plain, 2);
	const sl_layout *b = &p.rows[0].layout;
	assert_int_equal(b->recompute, SL_RECOMPUTE_NONE);
	assert_int_equal(b->tp * b->pp, plain);
	assert_int_equal(b->dp, 8 / plain);
	sl_plan_free(&p);
}

/* The explanation names the best, the runner-up (the next layout that is
 * not the best's ZeRO-1 twin) and what makes it slower, here its
 * gradients' traffic. */
static void test_explanation(void **state)
{
	(void)state;
	sl_model_spec m = tu_model(32, 4096, 11008, 32, 2048, 64);
	sl_cluster_config cfg = tu_h100(16, 8);
	sl_plan p;
	plan_or_fail(&m, &cfg, &p);
	char buf[2048];
	sl_plan_explain(&p, buf, sizeof buf);
	char name[96];
	sl_plan_layout_name(&p.rows[0].layout, name, sizeof name);
	assert_non_null(strstr(buf, name));
	const sl_layout *b = &p.rows[0].layout;
	int ru = 1;
	for (; ru < p.nfit; ru++) {
		const sl_layout *q = &p.rows[ru].layout;
		if (q->tp != b->tp || q->pp != b->pp || q->dp != b->dp ||
		    q->schedule != b->schedule || q->chunks != b->chunks ||
		    q->microbatches != b->microbatches || q->seq_parallel != b->seq_parallel ||
		    memcmp(q->order, b->order, sizeof q->order))
			break;
	}
	sl_plan_layout_name(&p.rows[ru].layout, name, sizeof name);
	assert_non_null(strstr(buf, "The runner-up"));
	assert_non_null(strstr(buf, name));
	assert_non_null(strstr(buf, "most of the difference"));
	sl_plan_free(&p);
}

/* The table's plan (exact_top = K) times only what can rank in its first
 * K rows.  Against the plan that times every row: the same rows, the same
 * first K bit for bit, the same explanation; every row it left untimed is,
 * in the full plan, slower than the K-th; and every floor lies between the
 * mean device's compute and the step (a floor above a step would prune a
 * row that could win). */
static void test_exact_top_keeps_the_first_rows(void **state)
{
	(void)state;
	sl_model_spec m = tu_model(32, 4096, 11008, 32, 2048, 64);
	sl_cluster_config cfg = tu_h100(64, 8);
	cfg.precision = SL_PREC_BF16;
	cfg.efficiency = SL_EFF_REALISTIC;
	cfg.dm = (sl_device_model){3e12, 0.8, 132, 256, 128, 64, 2e-6, 0.6, 0, 0.189};
	sl_plan all, top;
	plan_or_fail(&m, &cfg, &all);
	const int ks[] = {1, 5};
	for (size_t k = 0; k < sizeof ks / sizeof *ks; k++) {
		int K = ks[k] < 3 ? 3 : ks[k];
		sl_plan_spec s = {.model = m, .cluster = cfg, .exact_top = ks[k]};
		sl_err err = {0};
		if (sl_plan_run(&s, &top, &err))
			fail_msg("plan: %s", err.msg);
		assert_int_equal(top.n, all.n);
		assert_int_equal(top.nfit, all.nfit);
		assert_int_equal(all.nuntimed, 0);
		/* it spares work (about a sixth here; how much depends on the
		 * order the threads time rows in) */
		assert_true(top.nuntimed > all.nfit / 20);
		for (int i = 0; i < K; i++) {
			assert_true(top.rows[i].timed);
			assert_memory_equal(&top.rows[i].layout, &all.rows[i].layout,
			                    sizeof top.rows[i].layout);
			assert_true(top.rows[i].est.step_s == all.rows[i].est.step_s);
		}
		char a[2048], b[2048];
		sl_plan_explain(&all, a, sizeof a);
		sl_plan_explain(&top, b, sizeof b);
		assert_string_equal(a, b);
		int untimed = 0;
		for (int i = 0; i < top.nfit; i++) {
			const sl_plan_row *r = &top.rows[i];
			if (r->timed) {
				assert_true(r->floor_s <= r->est.step_s * (1 + 1e-12));
				/* compute beside communication runs up to 18.9% slower
				 * (the realistic machine's overlap_slowdown) */
				assert_true(r->floor_s >= r->est.compute_s / 1.189 * (1 - 1e-9));
				assert_true(untimed == 0); /* the timed first */
				continue;
			}
			untimed++;
			int j = 0;
			while (j < all.nfit &&
			       memcmp(&all.rows[j].layout, &r->layout, sizeof r->layout))
				j++;
			assert_true(j < all.nfit);
			assert_true(j >= K);
			assert_true(all.rows[j].est.step_s >= r->floor_s * (1 - 1e-12));
			assert_true(all.rows[j].est.step_s > all.rows[K - 1].est.step_s);
		}
		assert_int_equal(untimed, top.nuntimed);
		sl_plan_free(&top);
	}
	sl_plan_free(&all);
}

/* On the realistic machine the plan searches overlap and the gradient
 * bucket for its best layouts: the best row is no slower than its own
 * layout with overlap off, or on with the default bucket, a quarter of it
 * or four times it, each estimated apart from the plan; and over a few
 * models the search moves the bucket at least once. */
static void test_overlap_and_bucket_searched(void **state)
{
	(void)state;
	const int layers[] = {4, 16, 48};
	int moved = 0;
	for (size_t g = 0; g < sizeof layers / sizeof *layers; g++) {
		sl_model_spec m = tu_model(layers[g], 1024, 4096, 16, 2048, 32);
		sl_cluster_config cfg = tu_h100(16, 8);
		cfg.precision = SL_PREC_BF16;
		cfg.efficiency = SL_EFF_REALISTIC;
		cfg.dm = (sl_device_model){3e12, 0.8, 132, 256, 128, 64, 2e-6, 0.6, 0, 0.189};
		sl_plan_spec s = {.model = m, .cluster = cfg, .no_zero1 = 1, .exact_top = 3};
		sl_plan p;
		sl_err err = {0};
		if (sl_plan_run(&s, &p, &err))
			fail_msg("plan: %s", err.msg);
		const sl_plan_row *best = &p.rows[0];
		assert_true(best->fits && best->timed);
		const double f[3] = {0.25, 1, 4};
		for (int v = 0; v < 4; v++) {
			sl_layout l = best->layout;
			l.overlap = v == 3 ? SL_OVERLAP_OFF : SL_OVERLAP_ON;
			l.bucket_bytes = SL_BUCKET_DEFAULT * f[v < 3 ? v : 1];
			sl_estimate e;
			if (sl_train_estimate(&m, &l, &cfg, SL_EST_AUTO, &e, &err))
				fail_msg("estimate: %s", err.msg);
			char name[128];
			sl_plan_layout_name(&l, name, sizeof name);
			if (e.mem_peak_bytes <= cfg.memory &&
			    e.step_s < best->est.step_s * (1 - 1e-12))
				fail_msg(
				    "L=%d: %s takes %.9g s, faster than the plan's best %.9g s",
				    layers[g], name, e.step_s, best->est.step_s);
		}
		moved |=
		    best->layout.bucket_bytes > 0 && best->layout.bucket_bytes != SL_BUCKET_DEFAULT;
		sl_plan_free(&p);
	}
	assert_true(moved);
}

/* --schedule and --chunks keep the plan to the rows of the full plan with
 * that schedule and chunk count, with the same figures (and GPipe by name
 * its pipelines of one micro-batch, which are 1F1B's). */
static void test_fixed_schedule_is_a_subset(void **state)
{
	(void)state;
	sl_model_spec m = small_model(4, 8);
	sl_cluster_config cfg = small_cluster((uint64_t)1 << 30);
	sl_plan all;
	plan_or_fail(&m, &cfg, &all);
	const struct {
		sl_sched k;
		int v;
	} want[] = {{SL_SCHED_INTERLEAVED, 2}, {SL_SCHED_GPIPE, 0}, {SL_SCHED_1F1B, 1}};
	for (size_t c = 0; c < sizeof want / sizeof *want; c++) {
		sl_plan_spec s = {.model = m,
		                  .cluster = cfg,
		                  .fix_schedule = 1,
		                  .schedule = want[c].k,
		                  .fix_chunks = want[c].v};
		sl_plan p;
		sl_err err = {0};
		if (sl_plan_run(&s, &p, &err))
			fail_msg("plan: %s", err.msg);
		int n = 0;
		for (int i = 0; i < all.n; i++) {
			const sl_layout *l = &all.rows[i].layout;
			if (l->schedule != want[c].k || (want[c].v > 0 && l->chunks != want[c].v))
				continue;
			int j = 0;
			while (j < p.n && memcmp(&p.rows[j].layout, l, sizeof *l))
				j++;
			assert_true(j < p.n);
			assert_true(p.rows[j].est.step_s == all.rows[i].est.step_s);
			n++;
		}
		assert_true(n > 0);
		/* GPipe asked for by name also lists a pipeline of one
		 * micro-batch, whose actions and figures are 1F1B's */
		int extra = 0;
		for (int j = 0; j < p.n; j++) {
			sl_layout l = p.rows[j].layout;
			if (want[c].k != SL_SCHED_GPIPE || l.microbatches != 1 || l.pp == 1)
				continue;
			l.schedule = SL_SCHED_1F1B;
			int i = 0;
			while (i < all.n && memcmp(&all.rows[i].layout, &l, sizeof l))
				i++;
			assert_true(i < all.n);
			assert_true(p.rows[j].est.step_s == all.rows[i].est.step_s);
			extra++;
		}
		assert_true(want[c].k != SL_SCHED_GPIPE || extra > 0);
		assert_int_equal(p.n, n + extra);
		sl_plan_free(&p);
	}
	sl_plan_spec s = {.model = m,
	                  .cluster = cfg,
	                  .fix_schedule = 1,
	                  .schedule = SL_SCHED_INTERLEAVED,
	                  .fix_chunks = 3};
	sl_plan p;
	sl_err err = {0};
	assert_int_equal(sl_plan_run(&s, &p, &err), SL_EINVAL); /* 3 divides no stage's 4 or 2 */
	assert_non_null(strstr(err.msg, "chunks=3"));
	sl_plan_free(&p);
	sl_plan_free(&all);
}

int main(void)
{
	tu_watchdog(1200);
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_candidates_are_every_layout),
	    cmocka_unit_test(test_uneven_candidates),
	    cmocka_unit_test(test_ranking_equals_full_runs),
	    cmocka_unit_test(test_rejections_equal_full_runs),
	    cmocka_unit_test(test_no_valid_layout),
	    cmocka_unit_test(test_fits_nowhere),
	    cmocka_unit_test(test_tp_stays_inside_nodes),
	    cmocka_unit_test(test_best_changes_with_sequence),
	    cmocka_unit_test(test_best_changes_with_inter_node_link),
	    cmocka_unit_test(test_smallest_model_parallel_fit),
	    cmocka_unit_test(test_explanation),
	    cmocka_unit_test(test_exact_top_keeps_the_first_rows),
	    cmocka_unit_test(test_fixed_schedule_is_a_subset),
	    cmocka_unit_test(test_overlap_and_bucket_searched),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
