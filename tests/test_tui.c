/* SPDX-License-Identifier: MIT */
/* What the TUI shows, without a terminal: the playback (plan, live run,
 * steps) and the model derived from the events.
 *
 * References are independent of the code under test: the headless run of
 * the same scenario (sl_scenario_run, what `shardlab run` prints), the
 * closed forms of the ring collectives, the ring algorithm's block schedule
 * written out here, and the NCCL-tests rule that bus bandwidth equals the
 * link bandwidth when latency is zero. */
#include <fcntl.h>
#include <math.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "play.h"
#include "scene.h"
#include "sweep.h"
#include "scenario.h"
#include "steps.h"
#include "units.h"
#include "testutil.h"

static double now_mono(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static sl_scenario small(sl_split split)
{
	sl_scenario sc;
	sl_scenario_default(&sc);
	sc.gemm.split = split;
	sc.gemm.m = 64;
	sc.gemm.k = 256;
	sc.gemm.n = 256;
	return sc;
}

/* The headless run's events and result: what `shardlab run` reports. */
static void headless(const sl_scenario *sc, sl_snapshot *snap, sl_gemm_result *res)
{
	sl_cluster *c = NULL;
	sl_err err = {0};
	if (sl_scenario_run(sc, &c, res, &err) != SL_OK)
		fail_msg("headless run: %s", err.msg);
	assert_int_equal(sl_trace_snapshot(sl_cluster_trace(c), snap), SL_OK);
	sl_cluster_destroy(c);
}

/* Distinct ends of non-waiting events, sorted (the steps). */
static size_t ends(const sl_snapshot *s, double *out, size_t cap)
{
	size_t n = 0;
	for (size_t i = 0; i < s->n; i++) {
		const sl_event *e = &s->ev[i];
		if (e->kind == SL_EV_WAIT || !(e->t1 > e->t0))
			continue;
		int seen = 0;
		for (size_t j = 0; j < n; j++)
			if (out[j] == e->t1)
				seen = 1;
		if (!seen && n < cap)
			out[n++] = e->t1;
	}
	for (size_t i = 0; i < n; i++)
		for (size_t j = i + 1; j < n; j++)
			if (out[j] < out[i]) {
				double t = out[i];
				out[i] = out[j];
				out[j] = t;
			}
	return n;
}

/* ---- playback against a pipe, as the UI loop does ---- */

struct rig {
	int fd[2];
	sl_play *p;
};

static void rig_open(struct rig *r, const sl_scenario *sc)
{
	assert_int_equal(pipe(r->fd), 0);
	fcntl(r->fd[0], F_SETFL, O_NONBLOCK);
	fcntl(r->fd[1], F_SETFL, O_NONBLOCK);
	sl_err err = {0};
	r->p = sl_play_create(sc, r->fd[1], &err);
	if (!r->p)
		fail_msg("play: %s", err.msg);
}

static void rig_close(struct rig *r)
{
	sl_play_destroy(r->p, 30);
	close(r->fd[0]);
	close(r->fd[1]);
}

/* Run the loop (wake-ups, collect, tick) until pred holds. */
static void pump_until(struct rig *r, int (*pred)(sl_play *), const char *what)
{
	double until = now_mono() + 120;
	while (!pred(r->p)) {
		if (now_mono() > until)
			fail_msg("timed out waiting for %s", what);
		struct pollfd pf = {r->fd[0], POLLIN, 0};
		if (poll(&pf, 1, 50) > 0) {
			char b[64];
			while (read(r->fd[0], b, sizeof b) > 0)
				;
		}
		sl_play_collect(r->p);
		sl_play_tick(r->p, now_mono());
	}
}

static int planned(sl_play *p)
{
	return sl_play_exact(p) && !sl_play_planning(p);
}

static int live_done(sl_play *p)
{
	return sl_play_live_result(p) != NULL;
}

static int stopped(sl_play *p)
{
	return !sl_play_animating(p);
}

static void model_of(sl_play *p, sl_scene *m)
{
	sl_scene_build_play(p, m);
}

/* The plan is the headless run, to the last bit. */
static void test_plan_is_the_headless_run(void **state)
{
	(void)state;
	for (int split = SL_SPLIT_SINGLE; split < SL_SPLIT_N; split++) {
		sl_scenario sc = small((sl_split)split);
		sl_snapshot ref;
		sl_gemm_result res;
		headless(&sc, &ref, &res);
		sl_run_info info;
		assert_int_equal(sl_play_run_headless(&sc, NULL, &info, NULL, NULL), SL_OK);
		assert_true(info.res.emulated_time_s == res.emulated_time_s);
		assert_true(info.end == res.emulated_time_s);
		assert_int_equal(info.snap.n, ref.n);
		for (size_t i = 0; i < ref.n; i++) {
			assert_true(info.snap.ev[i].t0 == ref.ev[i].t0);
			assert_true(info.snap.ev[i].t1 == ref.ev[i].t1);
			assert_int_equal(info.snap.ev[i].kind, ref.ev[i].kind);
		}
		sl_run_info_free(&info);
		sl_snapshot_free(&ref);
	}
}

static sl_link_spec cb_link_of_sc(void *ctx, int s, int d)
{
	(void)s;
	(void)d;
	const sl_scenario *sc = ctx;
	return sc->cluster.intra;
}

static int cb_inter_none(void *ctx, int s, int d)
{
	(void)ctx;
	(void)s;
	(void)d;
	return 0;
}

/* The scene of a training run played headless, at its end. */
static sl_scene_in train_scene_in(const sl_run_info *info, sl_scenario *sc, const sl_workload *tr,
                                  int ndev, int (*inter)(void *ctx, int s, int d))
{
	sl_scene_in in = {
	    .ev = &info->snap,
	    .t = info->end,
	    .end = info->end,
	    .exact = 1,
	    .sc = sc,
	    .ndev = ndev,
	    .result = info,
	    .predicted_s = info->tpred.step_s,
	    .wl = tr,
	    .link = cb_link_of_sc,
	    .inter = inter,
	    .ctx = sc,
	};
	return in;
}

/* A training step on screen: its end, step time and bubble equal what the
 * engine's training run of the same layout (`shardlab train --steps=1`)
 * gives on the same devices, for pipeline, tensor and mixed layouts. */
static void test_train_times_are_the_headless_run(void **state)
{
	(void)state;
	static const int lay[][5] = {/* tp pp dp schedule microbatches */
	                             {1, 4, 1, SL_SCHED_1F1B, 8},
	                             {1, 2, 1, SL_SCHED_GPIPE, 4},
	                             {2, 1, 1, SL_SCHED_1F1B, 1},
	                             {2, 2, 1, SL_SCHED_INTERLEAVED, 4}};
	for (size_t i = 0; i < sizeof lay / sizeof lay[0]; i++) {
		sl_workload tr = {.kind = SL_WL_TRAIN};
		sl_model_default(&tr.m);
		tr.m.layers = 4;
		tr.m.hidden = 32;
		tr.m.ffn = 64;
		tr.m.heads = i == 3 ? 2 : 0;
		tr.m.seq = i == 3 ? 4 : 1;
		tr.m.batch = 8;
		sl_layout_default(&tr.l);
		tr.l.tp = lay[i][0];
		tr.l.pp = lay[i][1];
		tr.l.dp = lay[i][2];
		tr.l.schedule = (sl_sched)lay[i][3];
		tr.l.microbatches = lay[i][4];
		tr.l.chunks = tr.l.schedule == SL_SCHED_INTERLEAVED ? 2 : 1;
		int n = tr.l.tp * tr.l.pp * tr.l.dp;
		sl_scenario sc = small(SL_SPLIT_COL);
		sc.cluster.devices = n;
		sc.cluster.devices_per_node = 0;

		/* The engine's run, as `shardlab train` makes it. */
		sl_err err = {0};
		sl_cluster *c = sl_cluster_create(&sc.cluster, &err);
		assert_non_null(c);
		sl_train *t = sl_train_create(&tr.m, &tr.l, n, &err);
		assert_non_null(t);
		sl_train_report rep;
		assert_int_equal(sl_train_run(t, c, 1, &rep, &err), SL_OK);
		sl_train_destroy(t);
		sl_cluster_destroy(c);

		sl_run_info info;
		assert_int_equal(sl_play_run_workload_headless(&sc, &tr, NULL, &info, NULL, NULL),
		                 SL_OK);
		assert_true(info.trep.step_s == rep.step_s);
		assert_true(info.trep.bubble_fraction == rep.bubble_fraction);
		assert_true(info.end == rep.step_s);
		assert_true(info.loss == rep.losses[0]);
		/* In model timing the analytic model agrees. */
		assert_true(fabs(info.tpred.step_s - rep.step_s) <= 1e-9 * rep.step_s);

		sl_scene *m = calloc(1, sizeof *m);
		assert_non_null(m);
		sl_scene_in in = train_scene_in(&info, &sc, &tr, n, cb_inter_none);
		sl_scene_build(&in, m);
		assert_true(m->total_s == rep.step_s);
		assert_true(m->have_report);
		assert_true(m->trep->step_s == rep.step_s);
		for (int d = 0; d < n; d++) {
			assert_true(m->trep->dev[d].params_bytes == rep.dev[d].params_bytes);
			assert_true(m->trep->dev[d].act_peak_bytes == rep.dev[d].act_peak_bytes);
		}
		assert_false(m->blk.valid);
		/* Each stop whose step is a pipeline message says its stages,
		 * micro-batch, direction and span, as the step's fields have
		 * them (test_steps checks the fields against the schedule). */
		sl_opstep *st;
		size_t ns = sl_steps_build(&info.snap, &st, NULL);
		int said = 0;
		for (size_t k = 0; k < ns; k++) {
			if (!st[k].p2p ||
			    (k + 1 < ns && st[k + 1].t_stop <= st[k].t_stop * (1 + 1e-12)))
				continue;
			in.t = st[k].t_stop;
			sl_scene_build(&in, m);
			const sl_ev_p2p *q = st[k].p2p;
			char w1[64], w2[96], w3[32], span[32];
			int fwd = q->kind == SL_P2P_ACT;
			snprintf(w1, sizeof w1, "pipeline %s: stage %d",
			         fwd ? "forward" : "backward", q->from);
			snprintf(w2, sizeof w2, "sends micro-batch %d's %s", q->mb,
			         fwd ? "activations" : "gradient");
			snprintf(w3, sizeof w3, "to stage %d", q->to);
			sl_fmt_time(st[k].t1 - st[k].t0, span, sizeof span);
			if (!strstr(m->sentence, w1) || !strstr(m->sentence, w2) ||
			    !strstr(m->sentence, w3) || !strstr(m->sentence, span))
				fail_msg("layout %zu, step %zu: '%s' (want '%s', '%s', '%s', %s)",
				         i, k, m->sentence, w1, w2, w3, span);
			said++;
		}
		if (tr.l.pp > 1 && said == 0)
			fail_msg("layout %zu: no stop tells a pipeline message", i);
		free(st);
		free(m);
		sl_train_report_free(&rep);
		sl_run_info_free(&info);
	}
}

/* Communication beside compute (--overlap): data-parallel gradient
 * buckets all-reduced on the communication stream during the backward
 * pass, and ZeRO-3's parameter gathers one block ahead.  The scene says the
 * run has a side stream; its figures at the end are the engine's (total
 * and exposed communication, the wait); each stop at a step of a
 * side-stream collective names the collective, its whole message (the
 * engine's bucket, from the layout), the stream, and what the compute
 * stream did beside it, with the time it waited for it (the compute
 * stream's waits for the side stream in the step, from the events). */
static void test_side_streams_on_screen(void **state)
{
	(void)state;
	for (int zero = 0; zero <= 3; zero += 3) {
		sl_workload tr = {.kind = SL_WL_TRAIN};
		sl_model_default(&tr.m);
		tr.m.layers = 4;
		tr.m.hidden = 32;
		tr.m.ffn = 64;
		tr.m.heads = 0;
		tr.m.seq = 1;
		tr.m.batch = 8;
		sl_layout_default(&tr.l);
		tr.l.dp = 2;
		tr.l.zero = zero;
		tr.l.overlap = SL_OVERLAP_ON;
		tr.l.bucket_bytes = 4000;
		int n = 2;
		sl_scenario sc = small(SL_SPLIT_COL);
		sc.cluster.devices = n;
		sc.cluster.devices_per_node = 0;
		/* slow compute: a block's backward outlasts its bucket's
		 * all-reduce, which it hides */
		sc.cluster.flops = 1e9;
		sl_run_info info;
		assert_int_equal(sl_play_run_workload_headless(&sc, &tr, NULL, &info, NULL, NULL),
		                 SL_OK);
		sl_scene *m = calloc(1, sizeof *m);
		assert_non_null(m);
		sl_scene_in in = train_scene_in(&info, &sc, &tr, n, cb_inter_none);
		sl_scene_build(&in, m);
		assert_true(m->side_streams == 1u << SL_STREAM_DP);
		/* The messages: a block's gradients (fc1's weight and bias,
		 * fc2's weight; a bucket of 4000 bytes holds one block), and
		 * last the replicated fc2 biases of all blocks (the root). */
		char blk[32], root[32];
		int h = tr.m.hidden, f = tr.m.ffn;
		sl_fmt_bytes(4.0 * (h * f + f + f * h), blk, sizeof blk);
		sl_fmt_bytes(4.0 * tr.m.layers * h, root, sizeof root);
		for (int d = 0; d < n; d++) {
			const sl_train_dev *x = &info.trep.dev[d];
			if (fabs(m->dev[d].comm_s - x->comm_s) > 1e-9 * x->comm_s ||
			    fabs(m->dev[d].exposed_s - x->comm_exposed_s) > 1e-9 * x->comm_s)
				fail_msg(
				    "zero %d device %d: comm %.9g exposed %.9g on screen, %.9g and "
				    "%.9g in the report",
				    zero, d, m->dev[d].comm_s, m->dev[d].exposed_s, x->comm_s,
				    x->comm_exposed_s);
			assert_true(m->dev[d].exposed_s < m->dev[d].comm_s);
		}
		sl_opstep *st;
		int *of;
		size_t ns = sl_steps_build(&info.snap, &st, &of);
		int said = 0, hidden = 0, side_work = 0;
		for (size_t k = 0; k < ns; k++) {
			const sl_event *r = &info.snap.ev[st[k].rep];
			if (r->stream != SL_STREAM_DP ||
			    (k + 1 < ns && st[k + 1].t_stop <= st[k].t_stop * (1 + 1e-12)))
				continue;
			in.t = st[k].t_stop;
			sl_scene_build(&in, m);
			/* other work on the stream (ZeRO's gradient slice sum) */
			if (!st[k].coll) {
				if (!strstr(m->sentence, ", on the communication stream ("))
					fail_msg("zero %d, step %zu: '%s'", zero, k, m->sentence);
				side_work++;
				continue;
			}
			const char *what =
			    st[k].coll->op == SL_COLL_ALLREDUCE       ? "gradient all-reduce"
			    : st[k].coll->op == SL_COLL_REDUCESCATTER ? "gradient reduce-scatter"
			                                              : "parameter all-gather";
			char w1[96], w2[96];
			snprintf(w1, sizeof w1, "the %s of %s on the communication stream, ", what,
			         blk);
			snprintf(w2, sizeof w2, "the %s of %s on the communication stream, ", what,
			         root);
			if (!strstr(m->sentence, w1) && !strstr(m->sentence, w2))
				fail_msg("zero %d, step %zu: '%s' (want '%s' or '%s')", zero, k,
				         m->sentence, w1, w2);
			hidden += strstr(m->sentence, "; none exposed. ") != NULL;
			/* the last: after the backward, the compute stream waits */
			if (k + 1 == ns &&
			    !strstr(m->sentence, "the compute stream waiting for it; "))
				fail_msg("zero %d: the last step: '%s'", zero, m->sentence);
			said++;
		}
		if (said == 0)
			fail_msg("zero %d: no stop tells a collective on the side stream", zero);
		if (hidden == 0)
			fail_msg("zero %d: no collective hidden beside compute", zero);
		(void)side_work; /* none on the ideal machine: element-wise work is free */
		free(st);
		free(of);
		free(m);
		sl_run_info_free(&info);
	}
}

static int cb_inter_nodes(void *ctx, int s, int d)
{
	const sl_scenario *sc = ctx;
	int g = sc->cluster.devices_per_node;
	return g > 0 && s / g != d / g;
}

/* Shared ports on screen: an interleaved pipeline of a stage a node on the
 * realistic machine sends to both neighbours at once through one network
 * adapter.  Each such message's event took a + 2 n/B (its link's figures,
 * written here), and the stop that ends with it says so; a message that
 * had the adapter to itself takes a + n/B and says nothing of it. */
static void test_shared_ports_on_screen(void **state)
{
	(void)state;
	sl_workload tr = {.kind = SL_WL_TRAIN};
	sl_model_default(&tr.m);
	tr.m.layers = 8;
	tr.m.hidden = 32;
	tr.m.ffn = 64;
	tr.m.heads = 0;
	tr.m.seq = 1;
	tr.m.batch = 8;
	sl_layout_default(&tr.l);
	tr.l.pp = 4;
	tr.l.schedule = SL_SCHED_INTERLEAVED;
	tr.l.microbatches = 8;
	tr.l.chunks = 2;
	sl_scenario sc = small(SL_SPLIT_COL);
	sc.cluster.devices = 4;
	sc.cluster.devices_per_node = 1;
	sc.cluster.efficiency = SL_EFF_REALISTIC;
	sc.cluster.inter = (sl_link_spec){25e9, 5e-6};
	double a = sc.cluster.inter.latency, B = sc.cluster.inter.bandwidth;
	sl_run_info info;
	assert_int_equal(sl_play_run_workload_headless(&sc, &tr, NULL, &info, NULL, NULL), SL_OK);
	int shared = 0, alone = 0;
	for (size_t e = 0; e < info.snap.n; e++) {
		const sl_event *ev = &info.snap.ev[e];
		if (ev->kind != SL_EV_SEND || ev->p2p.kind == SL_P2P_NONE)
			continue;
		int k = ev->p2p.share > 1 ? ev->p2p.share : 1;
		assert_true(k <= 2);
		tu_check_close(ev->t1 - ev->t0, a + k * (double)ev->bytes / B, 1e-12, "a message");
		shared += k == 2;
		alone += k == 1;
	}
	if (shared == 0 || alone == 0)
		fail_msg("%d messages through a shared adapter, %d alone: want both", shared,
		         alone);

	sl_scene *m = calloc(1, sizeof *m);
	assert_non_null(m);
	sl_scene_in in = train_scene_in(&info, &sc, &tr, 4, cb_inter_nodes);
	sl_opstep *st;
	size_t ns = sl_steps_build(&info.snap, &st, NULL);
	int said[2] = {0, 0};
	for (size_t k = 0; k < ns; k++) {
		if (!st[k].p2p || (k + 1 < ns && st[k + 1].t_stop <= st[k].t_stop * (1 + 1e-12)))
			continue;
		in.t = st[k].t_stop;
		sl_scene_build(&in, m);
		int sh = st[k].p2p->share == 2;
		const char *w = "; shared adapter: half the link's rate";
		if (!strstr(m->sentence, w) != !sh)
			fail_msg("step %zu (share %d): '%s'", k, st[k].p2p->share, m->sentence);
		said[sh]++;
	}
	if (said[0] == 0 || said[1] == 0)
		fail_msg("stops: %d with a shared adapter, %d without: want both", said[1],
		         said[0]);
	free(st);
	free(m);
	sl_run_info_free(&info);
}

/* Resharding on screen: the play's run is the engine's sl_ckpt_reshard
 * (same events, same end), its end is the busiest device's bytes over the
 * storage rate, devices read then write, and at the end every planned read
 * and write is done. */
static void rm_ckpt(const char *dir)
{
	char cmd[600];
	snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
	assert_int_equal(system(cmd), 0);
}

static void test_reshard_on_screen(void **state)
{
	(void)state;
	char tmp[] = "test_tui.ckpt-XXXXXX", src[64], out[64];
	assert_non_null(mkdtemp(tmp));
	snprintf(src, sizeof src, "%s/src", tmp);
	snprintf(out, sizeof out, "%s/out", tmp);
	sl_model_spec ms;
	sl_model_default(&ms);
	ms.layers = 2;
	ms.hidden = 16;
	ms.ffn = 24;
	ms.heads = 4;
	ms.seq = 2;
	ms.batch = 4;
	sl_layout from;
	sl_layout_default(&from);
	from.tp = 2;
	from.pp = 2;
	from.microbatches = 2;
	sl_err err = {0};
	sl_train *t = sl_train_create(&ms, &from, 4, &err);
	assert_non_null(t);
	assert_int_equal(sl_ckpt_save(t, NULL, src, NULL, &err), SL_OK);
	sl_train_destroy(t);
	sl_ckpt *ck;
	assert_int_equal(sl_ckpt_open(src, &ck, &err), SL_OK);

	sl_workload tr = {.kind = SL_WL_RESHARD, .m = ms, .ck = ck};
	sl_layout_default(&tr.l);
	tr.l.tp = 4;
	sl_ckpt_move *reads, *writes;
	t = sl_train_create(&ms, &tr.l, 4, &err);
	assert_non_null(t);
	assert_int_equal(sl_ckpt_read_plan(ck, t, &reads, &tr.nreads, &err), SL_OK);
	assert_int_equal(sl_ckpt_write_plan(t, &writes, &tr.nwrites, &err), SL_OK);
	sl_train_destroy(t);
	tr.reads = reads;
	tr.writes = writes;
	sl_scenario sc = small(SL_SPLIT_COL);
	sc.cluster.devices = 4;
	sc.cluster.devices_per_node = 0;

	/* The engine's run, as `shardlab ckpt reshard` makes it. */
	sl_cluster *c = sl_cluster_create(&sc.cluster, &err);
	assert_non_null(c);
	assert_int_equal(sl_ckpt_reshard(ck, &tr.l, c, out, NULL, &err), SL_OK);
	sl_snapshot ref;
	assert_int_equal(sl_trace_snapshot(sl_cluster_trace(c), &ref), SL_OK);
	sl_cluster_destroy(c);

	sl_run_info info;
	assert_int_equal(sl_play_run_workload_headless(&sc, &tr, NULL, &info, NULL, NULL), SL_OK);
	assert_int_equal(info.snap.n, ref.n);
	int nr = 0, nw = 0;
	for (size_t i = 0; i < ref.n; i++) {
		assert_true(info.snap.ev[i].t1 == ref.ev[i].t1);
		nr += ref.ev[i].kind == SL_EV_READ;
		nw += ref.ev[i].kind == SL_EV_WRITE;
	}
	assert_int_equal(nr, tr.nreads);
	assert_int_equal(nw, tr.nwrites);
	/* The prediction: the busiest device's bytes over the rate, summed here. */
	double most = 0;
	for (int d = 0; d < 4; d++) {
		double b = 0;
		for (int i = 0; i < tr.nreads; i++)
			b += reads[i].dev == d ? (double)reads[i].bytes : 0;
		for (int i = 0; i < tr.nwrites; i++)
			b += writes[i].dev == d ? (double)writes[i].bytes : 0;
		most = b > most ? b : most;
	}
	assert_true(fabs(info.end - most / SL_CKPT_STORAGE_BW_DEFAULT) <= 1e-12 * info.end);
	assert_true(fabs(sl_workload_ops_of(tr.kind)->predict(&tr, NULL) - info.end) <=
	            1e-12 * info.end);

	sl_scene *m = calloc(1, sizeof *m);
	assert_non_null(m);
	sl_scene_in in = {
	    .ev = &info.snap,
	    .end = info.end,
	    .exact = 1,
	    .sc = &sc,
	    .ndev = 4,
	    .result = &info,
	    .predicted_s = info.end,
	    .wl = &tr,
	    .link = cb_link_of_sc,
	    .inter = cb_inter_none,
	    .ctx = &sc,
	};
	double at[3] = {0, info.end * 1e-3, info.end * (1 - 1e-3)};
	sl_dstate want[3] = {SL_DS_READ, SL_DS_READ, SL_DS_WRITE};
	for (int k = 0; k < 3; k++) {
		in.t = at[k];
		sl_scene_build(&in, m);
		/* Every device reads first; at the end the busiest is still writing
		 * and no one reads any more. */
		int with = 0;
		for (int d = 0; d < 4; d++) {
			with += m->dev[d].state == want[k];
			assert_true(k < 2 || m->dev[d].state != SL_DS_READ);
		}
		assert_true(k < 2 ? with == 4 : with >= 1);
	}
	in.t = 0;
	sl_scene_build(&in, m);
	/* The first step is one stored chunk, the first tensor's first, read
	 * by every device the read plan sends to it (under TP 4, the two
	 * whose new quarters lie in that half), each keeping its own part:
	 * the sentence names them and the chunk, from the events' fields. */
	const sl_ckpt_tensor *T0 = &sl_ckpt_info_of(ck)->tensors[0];
	char want_who[64] = "", want_what[160];
	int nwho = 0;
	for (int i = 0; i < tr.nreads; i++)
		if (reads[i].chunk == T0->chunks[0].id)
			snprintf(want_who + strlen(want_who), sizeof want_who - strlen(want_who),
			         "%s %d", nwho++ ? "," : "devices", reads[i].dev);
	assert_int_equal(nwho, 2);
	snprintf(want_what, sizeof want_what, "%s read %s's stored chunk 1 of %d", want_who,
	         T0->name, T0->nchunks);
	if (!strstr(m->sentence, want_what) ||
	    !strstr(m->sentence, "and each keeps the part its new shard needs"))
		fail_msg("sentence: '%s', want '%s'", m->sentence, want_what);
	for (int i = 0; i < tr.nreads; i++)
		assert_true(sl_scene_io_fill(m, 0, reads[i].dev, reads[i].chunk) == 0);
	in.t = info.end;
	sl_scene_build(&in, m);
	for (int i = 0; i < tr.nreads; i++)
		assert_true(sl_scene_io_fill(m, 0, reads[i].dev, reads[i].chunk) == 1);
	for (int i = 0; i < tr.nwrites; i++)
		assert_true(sl_scene_io_fill(m, 1, writes[i].dev, writes[i].chunk) == 1);
	double io = 0;
	for (int d = 0; d < 4; d++)
		io = m->dev[d].io_s > io ? m->dev[d].io_s : io;
	assert_true(fabs(io - info.end) <= 1e-12 * info.end);
	free(m);
	sl_snapshot_free(&ref);
	sl_run_info_free(&info);
	free(reads);
	free(writes);
	sl_ckpt_close(ck);
	rm_ckpt(tmp);
}

/* A lone collective on screen (a lesson's `run collective`): the play's run
 * ends when the engine's own run of the collective does, and the buffer
 * panel's blocks say what a ring must leave: all-gather, only a device's
 * own block at first and every block at the end; reduce-scatter, block d
 * of device d summing all p devices at the end; all-reduce, that after its
 * reduce-scatter half, and every block summed everywhere at the end. */
struct coll_ref {
	sl_coll_op op;
	size_t count;
};

static int coll_ref_prog(sl_dev *d, void *arg, sl_err *err)
{
	struct coll_ref *j = arg;
	float *buf = sl_dev_alloc(d, j->count * sizeof(float), "buffer", err);
	if (!buf)
		return err->code;
	memset(buf, 0, j->count * sizeof(float));
	sl_group g = sl_group_all(sl_cluster_devices(sl_dev_cluster(d)));
	int rc = sl_coll_run(d, &g, j->op, buf, j->count, SL_ALGO_RING, err);
	sl_dev_free(d, buf, j->count * sizeof(float));
	return rc;
}

static void test_collective_on_screen(void **state)
{
	(void)state;
	const int p = 4;
	const sl_coll_op ops[] = {SL_COLL_ALLGATHER, SL_COLL_REDUCESCATTER, SL_COLL_ALLREDUCE};
	sl_scenario sc = small(SL_SPLIT_COL);
	sc.cluster.devices = p;
	sc.cluster.devices_per_node = 0;
	for (size_t o = 0; o < sizeof ops / sizeof ops[0]; o++) {
		sl_workload tr = {
		    .kind = SL_WL_COLLECTIVE, .op = ops[o], .algo = SL_ALGO_RING, .count = 1000};
		/* The engine's run, on its own. */
		sl_err err = {0};
		sl_cluster_config cfg = sc.cluster;
		cfg.slowdown = 0;
		sl_cluster *c = sl_cluster_create(&cfg, &err);
		assert_non_null(c);
		struct coll_ref j = {ops[o], tr.count};
		assert_int_equal(sl_cluster_run(c, coll_ref_prog, &j, &err), SL_OK);
		double want = 0;
		for (int d = 0; d < p; d++)
			want = fmax(want, sl_cluster_dev_stats(c, d).clock);
		sl_cluster_destroy(c);

		sl_run_info info;
		assert_int_equal(sl_play_run_workload_headless(&sc, &tr, NULL, &info, NULL, NULL),
		                 SL_OK);
		assert_true(info.end == want);
		/* The end of the last reduce-scatter step (all-reduce's first half). */
		double rs_end = 0;
		for (size_t i = 0; i < info.snap.n; i++)
			if (strstr(info.snap.ev[i].label, " rs "))
				rs_end = fmax(rs_end, info.snap.ev[i].t1);
		sl_scene *m = calloc(1, sizeof *m);
		assert_non_null(m);
		sl_scene_in in = {.ev = &info.snap,
		                  .end = info.end,
		                  .exact = 1,
		                  .sc = &sc,
		                  .ndev = p,
		                  .result = &info,
		                  .predicted_s = info.end,
		                  .wl = &tr,
		                  .link = cb_link_of_sc,
		                  .inter = cb_inter_none,
		                  .ctx = &sc};
		int cnt[4];
		for (int at = 0; at < 3; at++) {
			in.t = at == 0 ? 0 : at == 1 ? rs_end : info.end;
			sl_scene_build(&in, m);
			for (int d = 0; d < p; d++) {
				assert_int_equal(sl_scene_coll_blocks(m, d, p, cnt), 0);
				for (int b = 0; b < p; b++) {
					int got = cnt[b];
					if (ops[o] == SL_COLL_ALLGATHER)
						assert_int_equal(got, at == 2 || b == d ? 1 : 0);
					else if (at == 0)
						assert_int_equal(got, 1);
					else if (ops[o] == SL_COLL_ALLREDUCE && at == 2)
						assert_int_equal(got, p);
					else if (b == d) /* its own block is fully summed */
						assert_int_equal(got, p);
					else
						assert_true(got >= 1 && got < p);
				}
			}
		}
		free(m);
		sl_run_info_free(&info);
	}
}

/* Stepping stops exactly at every operation's end of the headless run,
 * which are the ring's closed forms; the live run that the steps release
 * ends at the headless run's time. */
static void test_steps_and_live_run(void **state)
{
	(void)state;
	sl_scenario sc = small(SL_SPLIT_COL);
	sc.cluster.slowdown = 1; /* real time: the live run keeps up at once */
	sl_snapshot ref;
	sl_gemm_result res;
	headless(&sc, &ref, &res);
	double want[64];
	size_t n = ends(&ref, want, 64);
	/* Compute, then p-1 all-gather steps of latency + block / bandwidth. */
	int p = sc.cluster.devices;
	double c = 2.0 * sc.gemm.m * (sc.gemm.n / p) * sc.gemm.k / sc.cluster.flops;
	double s = sc.cluster.intra.latency +
	           sc.gemm.m * (sc.gemm.n / p) * 4.0 / sc.cluster.intra.bandwidth;
	assert_int_equal(n, (size_t)p);
	for (size_t k = 0; k < n; k++)
		assert_true(fabs(want[k] - (c + (double)k * s)) <= 1e-12 * want[k]);

	struct rig r;
	rig_open(&r, &sc);
	pump_until(&r, planned, "the plan");
	/* The plan's steps are built once, with the plan: every frame gets
	 * the same ones, and they are the plan's. */
	const sl_step_index *x = sl_play_steps(r.p);
	assert_non_null(x);
	assert_ptr_equal(sl_play_steps(r.p), x);
	assert_int_equal(x->ns, (size_t)p);
	sl_scene *m = calloc(1, sizeof *m);
	double now = now_mono();
	for (size_t k = 0; k < n; k++) {
		sl_play_step(r.p, 1, now);
		now += 1; /* a second is far past any step at real time */
		unsigned f = sl_play_tick(r.p, now);
		assert_true(f & SL_PLAY_STOPPED);
		assert_true(sl_play_time(r.p) == want[k]);
		model_of(r.p, m);
		assert_true(m->t == want[k]);
		assert_int_equal(m->step, (int)k + 1);
		assert_int_equal(m->nsteps, (int)n);
		assert_true(m->at_step_end);
		assert_true(sl_play_live_started(r.p));
	}
	/* Nothing past the end. */
	sl_play_step(r.p, 1, now);
	sl_play_tick(r.p, now + 1);
	assert_true(sl_play_time(r.p) == res.emulated_time_s);
	assert_true(sl_play_end(r.p) == res.emulated_time_s);
	model_of(r.p, m);
	assert_true(m->total_s == res.emulated_time_s);
	assert_true(m->checked && m->pass);
	assert_true(fabs(m->speedup - res.speedup) <= 1e-12 * res.speedup);

	pump_until(&r, live_done, "the live run");
	const sl_run_info *live = sl_play_live_result(r.p);
	assert_int_equal(live->rc, SL_OK);
	assert_true(live->res.emulated_time_s == res.emulated_time_s);
	assert_true(live->res.max_abs_error == res.max_abs_error);
	double got[64];
	assert_int_equal(ends(&live->snap, got, 64), n);
	for (size_t k = 0; k < n; k++)
		assert_true(got[k] == want[k]);

	/* Back: replay, one operation at a time, down to zero. */
	for (size_t k = n - 1; k > 0; k--) {
		sl_play_step(r.p, 0, now);
		assert_true(sl_play_time(r.p) == want[k - 1]);
	}
	sl_play_step(r.p, 0, now);
	assert_true(sl_play_time(r.p) == 0);
	free(m);
	rig_close(&r);
	sl_snapshot_free(&ref);
}

/* A phase at a time (n and N in a lesson): a row-wise product's compute,
 * its all-reduce's reduce-scatter, then its all-gather; each press plays
 * to the end of one, at a step's stop, and back goes to the end of the
 * phase before, then to zero. */
static void test_phases(void **state)
{
	(void)state;
	sl_scenario sc = small(SL_SPLIT_ROW);
	sc.cluster.slowdown = 1;
	struct rig r;
	rig_open(&r, &sc);
	pump_until(&r, planned, "the plan");
	const sl_step_index *x = sl_play_steps(r.p);
	int p = sc.cluster.devices;
	assert_int_equal(x->ns, (size_t)(1 + 2 * (p - 1)));
	double *stops;
	assert_int_equal(sl_step_stops(x->st, x->ns, &stops), x->ns);
	/* Where each phase ends: the compute (step 0), the reduce-scatter
	 * (p-1 steps more), the all-gather (the run's end). */
	double want[3] = {stops[0], stops[p - 1], stops[2 * p - 2]};
	double now = now_mono();
	for (int k = 0; k < 3; k++) {
		sl_play_phase(r.p, 1, now);
		now += 1;
		assert_true(sl_play_tick(r.p, now) & SL_PLAY_STOPPED);
		assert_true(sl_play_time(r.p) == want[k]);
	}
	sl_play_phase(r.p, 1, now); /* nothing past the end */
	sl_play_tick(r.p, now + 1);
	assert_true(sl_play_time(r.p) == want[2]);
	/* Back from mid-phase: to the end of the phase before. */
	sl_play_step(r.p, 0, now);
	assert_true(sl_play_time(r.p) == stops[2 * p - 3]);
	sl_play_phase(r.p, 0, now);
	assert_true(sl_play_time(r.p) == want[1]);
	sl_play_phase(r.p, 0, now);
	assert_true(sl_play_time(r.p) == want[0]);
	sl_play_phase(r.p, 0, now);
	assert_true(sl_play_time(r.p) == 0);
	free(stops);
	rig_close(&r);
}

static const sl_scenario *cur_sc;
static sl_link_spec fixed_link(void *ctx, int s, int d)
{
	(void)ctx;
	(void)s;
	(void)d;
	return cur_sc->cluster.intra;
}
static int no_inter(void *ctx, int s, int d)
{
	(void)ctx;
	(void)s;
	(void)d;
	return 0;
}

/* The scene at t of a headless run, from the given step index of s (NULL:
 * sl_scene_build makes its own). */
static void build_with(const sl_scenario *sc, const sl_snapshot *s, const sl_gemm_result *res,
                       double t, const sl_step_index *x, sl_scene *m)
{
	/* The finished run the numbers come from. */
	static sl_run_info info;
	memset(&info, 0, sizeof info);
	info.done = 1;
	info.rc = SL_OK;
	info.res = *res;
	info.ndev = sc->cluster.devices;
	cur_sc = sc;
	sl_scene_in in = {
	    .ev = s,
	    .steps = x,
	    .t = t,
	    .end = res->emulated_time_s,
	    .exact = 1,
	    .sc = sc,
	    .ndev = sc->cluster.devices,
	    .result = &info,
	    .predicted_s = res->predicted_s,
	    .link = fixed_link,
	    .inter = no_inter,
	    .ctx = NULL,
	};
	sl_scene_build(&in, m);
}

static void build(const sl_scenario *sc, const sl_snapshot *s, const sl_gemm_result *res, double t,
                  sl_scene *m)
{
	build_with(sc, s, res, t, NULL, m);
}

static int md(int a, int p)
{
	return ((a % p) + p) % p;
}

/* Column-wise, ring all-gather: at step k device d has received blocks
 * d-1 .. d-k from its left neighbour. */
static void test_colwise_picture(void **state)
{
	(void)state;
	sl_scenario sc = small(SL_SPLIT_COL);
	sl_snapshot s;
	sl_gemm_result res;
	headless(&sc, &s, &res);
	double e[64];
	size_t n = ends(&s, e, 64);
	int p = sc.cluster.devices;
	double s_bytes = 4.0 * sc.gemm.m * (sc.gemm.n / p);
	sl_scene *m = calloc(1, sizeof *m);
	build(&sc, &s, &res, 0, m);
	for (int d = 0; d < p; d++) {
		assert_int_equal(m->dev[d].state, SL_DS_COMPUTE);
		for (int b = 0; b < p; b++)
			assert_true(m->blk.have[d][b] == 0 && m->blk.incoming[d][b] < 0);
	}
	/* Halfway through the product, each device's own block is coming. */
	build(&sc, &s, &res, e[0] / 2, m);
	for (int d = 0; d < p; d++)
		assert_true(fabs(m->blk.incoming[d][d] - 0.5) < 1e-6);
	for (size_t k = 1; k < n; k++) {
		/* Halfway through all-gather step k. */
		build(&sc, &s, &res, (e[k - 1] + e[k]) / 2, m);
		assert_true(m->blk.valid);
		for (int d = 0; d < p; d++) {
			assert_int_equal(m->dev[d].state, SL_DS_RECV);
			assert_int_equal(m->dev[d].recv_from, md(d - 1, p));
			assert_int_equal(m->dev[d].send_to, md(d + 1, p));
			assert_true(m->blk.incoming[d][md(d - (int)k, p)] >= 0);
		}
		/* In flight on every ring link: nothing moves during the
		 * latency, then the bytes at the link's rate. */
		double lat = sc.cluster.intra.latency, x = s_bytes / sc.cluster.intra.bandwidth;
		double fill = ((e[k] - e[k - 1]) / 2 - lat) / x;
		fill = fill < 0 ? 0 : fill;
		assert_int_equal(m->nlinks, p);
		for (int i = 0; i < m->nlinks; i++) {
			assert_int_equal(m->link[i].dst, md(m->link[i].src + 1, p));
			assert_true(fabs(m->link[i].fill - fill) <= 1e-9);
		}
		build(&sc, &s, &res, e[k], m);
		for (int d = 0; d < p; d++)
			for (int b = 0; b < p; b++) {
				int held = 0;
				for (int j = 0; j <= (int)k; j++)
					held |= b == md(d - j, p);
				assert_true(m->blk.have[d][b] == (held ? m->blk.full : 0));
			}
	}
	build(&sc, &s, &res, res.emulated_time_s, m);
	assert_true(m->checked && m->pass);
	assert_true(m->moved == m->moved_total);
	/* Each device sends p-1 blocks of m*n/p floats. */
	assert_true(m->moved_total == (uint64_t)p * (p - 1) * sc.gemm.m * (sc.gemm.n / p) * 4);
	for (int d = 0; d < p; d++)
		assert_true(m->dev[d].finished);
	free(m);
	sl_snapshot_free(&s);
}

/* Row-wise, ring all-reduce: reduce-scatter step s gives device r chunk
 * r-s-2 summed over ranks r, r-1, ..., r-s-1; then the all-gather copies
 * the complete chunks around. */
static void test_rowwise_picture(void **state)
{
	(void)state;
	sl_scenario sc = small(SL_SPLIT_ROW);
	sl_snapshot s;
	sl_gemm_result res;
	headless(&sc, &s, &res);
	double e[64];
	size_t n = ends(&s, e, 64);
	int p = sc.cluster.devices;
	assert_int_equal(n, (size_t)(1 + 2 * (p - 1)));
	sl_scene *m = calloc(1, sizeof *m);
	build(&sc, &s, &res, e[0], m);
	for (int d = 0; d < p; d++)
		for (int b = 0; b < p; b++)
			assert_true(m->blk.have[d][b] == (uint64_t)1 << d);
	for (int st = 0; st < p - 1; st++) {
		build(&sc, &s, &res, e[1 + st], m);
		assert_true(m->blk.valid);
		for (int r = 0; r < p; r++) {
			uint64_t want = 0;
			for (int j = 0; j <= st + 1; j++)
				want |= (uint64_t)1 << md(r - j, p);
			assert_true(m->blk.have[r][md(r - st - 2, p)] == want);
		}
		build(&sc, &s, &res, (e[st] + e[1 + st]) / 2, m);
		for (int r = 0; r < p; r++)
			assert_int_equal(m->dev[r].state, SL_DS_REDUCE);
	}
	build(&sc, &s, &res, e[p - 1], m);
	for (int r = 0; r < p; r++)
		assert_true(m->blk.have[r][r] == m->blk.full);
	build(&sc, &s, &res, res.emulated_time_s, m);
	for (int r = 0; r < p; r++)
		for (int b = 0; b < p; b++)
			assert_true(m->blk.have[r][b] == m->blk.full);
	assert_true(m->checked && m->pass);
	free(m);
	sl_snapshot_free(&s);
}

/* The receives a product's collective gives group rank r of p (root 0),
 * and what each leaves in r's buffer, from the algorithms' definitions
 * (written here from their descriptions, not from coll.c's block
 * fields): a block's value is the mask of whose contributions it sums
 * (column-wise a held block is complete: full).  Every effect is an OR
 * (a block gains contributions or becomes complete), so receives that
 * land out of program order (a sender that ran ahead, its bytes on the
 * link while r was still busy) leave the same buffer.
 *
 * - Ring all-gather: p-1 receives from r-1; receive j brings block r-j-1.
 * - Ring all-reduce: p-1 reduce-scatter receives from r-1, receive j adding
 *   r-1's sum of block r-j-2 over ranks r-1 .. r-j-1; then p-1 all-gather
 *   receives from r-1, receive j bringing the complete block r-j-1.
 * - Binomial tree: at level l, while bit l of r is clear, r takes from
 *   r + 2^l (when there is one) what that rank holds, which is its range
 *   [r + 2^l, r + 2^(l+1)) (blocks column-wise, contributions row-wise);
 *   then every rank but the root receives the whole result from
 *   r - lowbit(r). */
struct recv_def {
	int peer;
	int first, count; /* the blocks it touches (wrapping) */
	uint64_t adds;    /* the contributions they gain (full: complete) */
};

static int recv_defs(int row, int tree, int p, int r, uint64_t full, struct recv_def *v)
{
	int n = 0;
	if (!tree) {
		for (int j = 0; j < p - 1; j++) {
			uint64_t sum = 0;
			for (int q = 1; q <= j + 1; q++)
				sum |= (uint64_t)1 << md(r - q, p);
			v[n++] = row ? (struct recv_def){md(r - 1, p), md(r - j - 2, p), 1, sum}
			             : (struct recv_def){md(r - 1, p), md(r - j - 1, p), 1, full};
		}
		for (int j = 0; row && j < p - 1; j++)
			v[n++] = (struct recv_def){md(r - 1, p), md(r - j - 1, p), 1, full};
		return n;
	}
	for (int l = 0; (1 << l) < p && !(r & (1 << l)); l++) {
		int src = r + (1 << l), hi = r + (2 << l) < p ? r + (2 << l) : p;
		if (src >= p)
			continue;
		uint64_t range = 0;
		for (int q = src; q < hi; q++)
			range |= (uint64_t)1 << q;
		v[n++] = row ? (struct recv_def){src, 0, p, range}
		             : (struct recv_def){src, src, hi - src, full};
	}
	if (r != 0)
		v[n++] = (struct recv_def){r - (r & -r), 0, p, full};
	return n;
}

/* The screen after every step of a product is the engine's: at each stop
 * of the step model, each device's blocks on screen (the scene's picture)
 * are what its buffer holds, from 1 to 64 devices (1-9, 12, 16, 31, 32,
 * 48, 64), on one node and across several (where the slow inter-node hop
 * puts a ring's devices out of step, so at a stop some devices are a
 * receive or two ahead of others), even and uneven splits, ring and
 * binomial tree, column- and row-wise.
 *
 * The truth at a stop is independent of the scene's replay of the
 * engine's block fields: for each device, how many of its own receives
 * have ended by then (its progress, read from the trace) and what the
 * algorithm's definition says those receives leave in its buffer
 * (held_after, above).  That the definition is what the engine's buffers
 * really hold is checked at the end, where the engine compares Y on every
 * device with one device's product (the run's check), and every device's
 * count of receives must be the definition's. */
static void test_every_step_is_the_engines(void **state)
{
	(void)state;
	const int ps[] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 12, 16, 31, 32, 48, 64};
	sl_scene *m = calloc(1, sizeof *m);
	int configs = 0, stops = 0;
	for (size_t pi = 0; pi < sizeof ps / sizeof *ps; pi++)
		for (int nodes = 0; nodes < 3; nodes++)
			for (int split = 0; split < 2; split++)
				for (int v = 0; v < 4; v++) {
					int p = ps[pi], tree = v >= 2, uneven = v % 2;
					/* One node; nodes of p's largest divisor below p (two
					 * halves when p is even, one device each when p is
					 * prime); nodes of 4 past 8 devices. */
					int g = 0;
					for (int q = 1; nodes == 1 && q < p; q++)
						g = p % q ? g : q;
					if (nodes == 2)
						g = p > 8 && p % 4 == 0 && (p <= 16 || p == 64) ? 4
						                                                : 0;
					if (nodes > 0 && (p < 2 || g == 0))
						continue;
					if (uneven && p < 2)
						continue;
					/* Past 16 devices (runs of 31 to 64 threads, slow
					 * under the sanitizers) each split takes two of the
					 * four variants, so the two splits cover all four. */
					if (p > 16 && (v == 0 || v == 3) != (split == 0))
						continue;
					int row = split == 1;
					sl_scenario sc = small(row ? SL_SPLIT_ROW : SL_SPLIT_COL);
					sc.cluster.devices = p;
					sc.cluster.devices_per_node = g;
					sc.cluster.inter.bandwidth = sc.cluster.intra.bandwidth / 9;
					sc.cluster.inter.latency = sc.cluster.intra.latency * 2.5;
					sc.gemm.algo = tree ? SL_ALGO_TREE : SL_ALGO_RING;
					int base = 256 / p > 4 ? 256 / p : 4;
					sc.gemm.m = 16;
					sc.gemm.n = sc.gemm.k = base * p + (uneven ? p / 2 : 0);
					char what[96];
					snprintf(what, sizeof what, "p=%d nodes of %d %s%s %s", p,
					         g, row ? "rowwise" : "colwise",
					         uneven ? " uneven" : "", tree ? "tree" : "ring");
					sl_snapshot s;
					sl_gemm_result res;
					headless(&sc, &s, &res);
					sl_step_index x;
					assert_int_equal(sl_step_index_build(&s, &x), 0);
					double *at;
					size_t nat = sl_step_stops(x.st, x.ns, &at);
					assert_true(nat > 0);
					configs++;
					/* Each device's compute and receives, by device. */
					size_t first_of[SL_MAX_FULL_DEVICES + 1] = {0}, nmine = 0;
					const sl_event **mine =
					    malloc((s.n ? s.n : 1) * sizeof *mine);
					assert_non_null(mine);
					for (int d = 0; d < p; d++) {
						first_of[d] = nmine;
						for (size_t i = 0; i < s.n; i++)
							if (s.ev[i].dev == d &&
							    (s.ev[i].kind == SL_EV_COMPUTE ||
							     s.ev[i].kind == SL_EV_RECV ||
							     s.ev[i].kind == SL_EV_REDUCE))
								mine[nmine++] = &s.ev[i];
					}
					first_of[p] = nmine;
					for (size_t k = 0; k < nat; k++, stops++) {
						double t = at[k];
						build_with(&sc, &s, &res, t, &x, m);
						if (!m->blk.valid)
							fail_msg("%s: no block picture at stop %zu",
							         what, k);
						for (int d = 0; d < p; d++) {
							/* d's progress: its compute, and how many
							 * receives from each peer have ended. */
							int ncomp = 0, ndone = 0,
							    from[SL_MAX_FULL_DEVICES] = {0};
							for (size_t j = first_of[d];
							     j < first_of[d + 1]; j++) {
								const sl_event *e = mine[j];
								if (e->kind == SL_EV_COMPUTE) {
									ncomp++;
									ndone += e->t1 <= t;
								}
								if ((e->kind == SL_EV_RECV ||
								     e->kind == SL_EV_REDUCE) &&
								    e->peer >= 0 && e->peer < p &&
								    e->t1 <= t)
									from[e->peer]++;
							}
							assert_true(ncomp > 0);
							int computed = ndone == ncomp;
							/* What that leaves in its buffer. */
							uint64_t want[SL_MAX_FULL_DEVICES];
							for (int b = 0; b < p; b++)
								want[b] = !computed ? 0
								          : row ? (uint64_t)1 << d
								          : b == d ? m->blk.full
								                   : 0;
							struct recv_def
							    def[2 * SL_MAX_FULL_DEVICES];
							int ndef = recv_defs(row, tree, p, d,
							                     m->blk.full, def);
							int used = 0;
							for (int i = 0; i < ndef; i++) {
								if (from[def[i].peer] == 0)
									continue;
								from[def[i].peer]--;
								used++;
								for (int c = 0; c < def[i].count;
								     c++)
									want[(def[i].first + c) %
									     p] |= def[i].adds;
							}
							for (int q = 0; q < p; q++)
								if (from[q] != 0)
									fail_msg(
									    "%s: device %d has %d "
									    "receives from %d "
									    "the algorithm does "
									    "not give it",
									    what, d, from[q], q);
							if (k + 1 == nat && used != ndef)
								fail_msg("%s: device %d received "
								         "%d of the %d messages "
								         "the algorithm gives it",
								         what, d, used, ndef);
							for (int b = 0; b < p; b++)
								if (m->blk.have[d][b] != want[b])
									fail_msg(
									    "%s: at stop %zu of "
									    "%zu device %d "
									    "shows block %d as "
									    "%#llx, its buffer "
									    "holds %#llx",
									    what, k + 1, nat, d, b,
									    (unsigned long long)
									        m->blk.have[d][b],
									    (unsigned long long)
									        want[b]);
						}
					}
					/* The end: Y checked on every device by the engine. */
					build_with(&sc, &s, &res, res.emulated_time_s, &x, m);
					if (!(m->checked && m->pass))
						fail_msg("%s: the engine's check failed", what);
					for (int d = 0; d < p; d++)
						for (int b = 0; b < p; b++)
							if (m->blk.have[d][b] != m->blk.full)
								fail_msg("%s: at the end device %d "
								         "shows block %d "
								         "incomplete",
								         what, d, b);
					free(mine);
					free(at);
					sl_step_index_free(&x);
					sl_snapshot_free(&s);
				}
	print_message("%d products, %d stops checked\n", configs, stops);
	free(m);
}

/* Every sentence's duration is its step's span (earliest start to latest
 * end of its events), and the step counter never goes back, at every stop
 * of the cases: 8 devices on two nodes row- and column-wise, 7
 * devices uneven, a tree all-reduce on 6 and 8. */
static void test_sentences_tell_spans(void **state)
{
	(void)state;
	struct {
		sl_split split;
		int p, g, n;
		sl_algo algo;
	} cases[] = {
	    {SL_SPLIT_ROW, 8, 4, 256, SL_ALGO_RING}, {SL_SPLIT_COL, 8, 4, 256, SL_ALGO_RING},
	    {SL_SPLIT_COL, 7, 0, 250, SL_ALGO_RING}, {SL_SPLIT_ROW, 6, 0, 256, SL_ALGO_TREE},
	    {SL_SPLIT_ROW, 8, 0, 256, SL_ALGO_TREE},
	};
	sl_scene *m = calloc(1, sizeof *m), *m2 = calloc(1, sizeof *m2);
	for (size_t c = 0; c < sizeof cases / sizeof *cases; c++) {
		sl_scenario sc = small(cases[c].split);
		sc.cluster.devices = cases[c].p;
		sc.cluster.devices_per_node = cases[c].g;
		sc.cluster.inter.bandwidth = sc.cluster.intra.bandwidth / 9;
		sc.gemm.n = cases[c].n;
		sc.gemm.algo = cases[c].algo;
		sl_snapshot s;
		sl_gemm_result res;
		headless(&sc, &s, &res);
		sl_opstep *st;
		size_t ns = sl_steps_build(&s, &st, NULL);
		int last = 0;
		sl_step_index x;
		assert_int_equal(sl_step_index_build(&s, &x), 0);
		for (size_t k = 0; k < ns; k++) {
			/* A frame from the steps kept with the snapshot (the play's)
			 * is the frame that builds them itself. */
			build_with(&sc, &s, &res, st[k].t_stop, &x, m2);
			build(&sc, &s, &res, st[k].t_stop, m);
			assert_string_equal(m->sentence, m2->sentence);
			assert_int_equal(m->step, m2->step);
			assert_int_equal(m->nsteps, m2->nsteps);
			assert_memory_equal(&m->blk, &m2->blk, sizeof m->blk);
			assert_memory_equal(m->dev, m2->dev, sizeof m->dev);
			/* The step this stop describes is the last to end here. */
			if (k + 1 < ns && st[k + 1].t_stop <= st[k].t_stop * (1 + 1e-12))
				continue;
			char want[32], *w = sl_fmt_time(st[k].t1 - st[k].t0, want, sizeof want);
			if (!strstr(m->sentence, w))
				fail_msg("case %zu, step %zu: '%s' does not say its span %s", c, k,
				         m->sentence, w);
			if (m->step <= last)
				fail_msg("case %zu: the counter went from %d to %d", c, last,
				         m->step);
			last = m->step;
		}
		sl_step_index_free(&x);
		free(st);
		sl_snapshot_free(&s);
	}
	free(m);
	free(m2);
}

/* With zero latency, bus bandwidth is the link bandwidth (NCCL-tests). */
static void test_busbw_without_latency(void **state)
{
	(void)state;
	for (int split = SL_SPLIT_COL; split <= SL_SPLIT_ROW; split++) {
		sl_scenario sc = small((sl_split)split);
		sc.cluster.intra.latency = 0;
		sc.cluster.intra.bandwidth = 100e9;
		sl_snapshot s;
		sl_gemm_result res;
		headless(&sc, &s, &res);
		sl_scene *m = calloc(1, sizeof *m);
		build(&sc, &s, &res, res.emulated_time_s, m);
		assert_int_equal(m->coll_state, 2);
		assert_true(fabs(m->busbw - 100e9) <= 1e-9 * 100e9);
		/* Halfway, the collective is running and has no figure yet. */
		build(&sc, &s, &res, res.emulated_time_s * 0.9, m);
		assert_int_equal(m->coll_state, 1);
		free(m);
		sl_snapshot_free(&s);
	}
}

/* A knob turned before the live run plans the scenario again: the new plan
 * is the headless run with the new bandwidth. */
static void test_knob_replans(void **state)
{
	(void)state;
	sl_scenario sc = small(SL_SPLIT_ROW);
	struct rig r;
	rig_open(&r, &sc);
	pump_until(&r, planned, "the plan");
	double before = sl_play_end(r.p);
	sl_play_set_class(r.p, 0, sc.cluster.intra.bandwidth / 4, -1);
	assert_true(sl_play_planning(r.p));
	pump_until(&r, planned, "the new plan");
	sl_scenario slow = sc;
	slow.cluster.intra.bandwidth /= 4;
	sl_snapshot s;
	sl_gemm_result res;
	headless(&slow, &s, &res);
	assert_true(sl_play_end(r.p) == res.emulated_time_s);
	assert_true(sl_play_end(r.p) > before);
	/* The prediction follows the knob: the alpha-beta closed form. */
	int p = sc.cluster.devices;
	double bytes = 4.0 * sc.gemm.m * sc.gemm.n;
	double pred = 2.0 * sc.gemm.m * sc.gemm.n * (sc.gemm.k / p) / sc.cluster.flops +
	              2 * (p - 1) * slow.cluster.intra.latency +
	              2.0 * (p - 1) / p * bytes / slow.cluster.intra.bandwidth;
	assert_true(fabs(sl_play_predicted(r.p) - pred) <= 1e-12 * pred);
	sl_snapshot_free(&s);
	rig_close(&r);
}

/* A knob turned during the live run applies to it: the plan goes stale,
 * steps stop at operations the live run really ends, and its end is later
 * than planned. */
static void test_knob_during_live_run(void **state)
{
	(void)state;
	sl_scenario sc = small(SL_SPLIT_COL);
	sc.cluster.slowdown = 20000; /* 6 us emulated: about 0.1 s of wall time */
	struct rig r;
	rig_open(&r, &sc);
	pump_until(&r, planned, "the plan");
	double planned_end = sl_play_end(r.p);
	sl_play_step(r.p, 1, now_mono());
	pump_until(&r, stopped, "the first step");
	sl_play_set_class(r.p, 0, sc.cluster.intra.bandwidth / 8, -1);
	assert_true(sl_play_stale(r.p));
	double t0 = sl_play_time(r.p);
	sl_play_step(r.p, 1, now_mono());
	pump_until(&r, stopped, "a step of the live run");
	double t1 = sl_play_time(r.p);
	assert_true(t1 > t0);
	int found = 0;
	const sl_snapshot *ev = sl_play_events(r.p);
	for (size_t i = 0; i < ev->n; i++)
		found |= ev->ev[i].t1 == t1 && ev->ev[i].kind != SL_EV_WAIT;
	assert_true(found);
	sl_play_to_end(r.p, now_mono());
	pump_until(&r, live_done, "the live run");
	sl_play_collect(r.p);
	assert_false(sl_play_stale(r.p));
	assert_true(sl_play_time(r.p) == sl_play_end(r.p));
	assert_true(sl_play_end(r.p) > planned_end);
	rig_close(&r);
}

/* The crossover: where speedup = single / time crosses 1, between two
 * points, on a log axis; measured times win over the model's. */
static void test_crossover(void **state)
{
	(void)state;
	sl_sweep_point p[3] = {
	    {.x = 1e9, .single = 10, .predicted = 40, .done = 1, .rc = 0, .time = 20},
	    {.x = 1e11, .single = 10, .predicted = 20, .done = 1, .rc = 0, .time = 5},
	    {.x = 1e13, .single = 10, .predicted = 10, .done = 0},
	};
	int measured = 0;
	/* Measured: speedup 0.5 at 1e9, 2 at 1e11; 1 is a third of the way in
	 * speedup, so at 10^(9 + 2/3) on the log axis. */
	double x = sl_sweep_crossover(p, 3, &measured);
	assert_true(measured);
	assert_true(fabs(x - pow(10, 9 + 2.0 / 3)) <= 1e-9 * x);
	/* Without measurements, the model: 0.25, 0.5, 1 reaches 1 at 1e13. */
	p[0].done = p[1].done = 0;
	x = sl_sweep_crossover(p, 3, &measured);
	assert_false(measured);
	assert_true(fabs(x - 1e13) <= 1e-9 * 1e13);
	/* Never crossing. */
	p[2].predicted = 20;
	assert_true(sl_sweep_crossover(p, 3, &measured) == 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_crossover),
	    cmocka_unit_test(test_plan_is_the_headless_run),
	    cmocka_unit_test(test_train_times_are_the_headless_run),
	    cmocka_unit_test(test_shared_ports_on_screen),
	    cmocka_unit_test(test_side_streams_on_screen),
	    cmocka_unit_test(test_reshard_on_screen),
	    cmocka_unit_test(test_collective_on_screen),
	    cmocka_unit_test(test_colwise_picture),
	    cmocka_unit_test(test_rowwise_picture),
	    cmocka_unit_test(test_every_step_is_the_engines),
	    cmocka_unit_test(test_sentences_tell_spans),
	    cmocka_unit_test(test_busbw_without_latency),
	    cmocka_unit_test(test_steps_and_live_run),
	    cmocka_unit_test(test_phases),
	    cmocka_unit_test(test_knob_replans),
	    cmocka_unit_test(test_knob_during_live_run),
	};
	return cmocka_run_group_tests_name("tui model", tests, NULL, NULL);
}
