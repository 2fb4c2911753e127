/* SPDX-License-Identifier: MIT */
/* test_train_acct.c - traffic, bubble, memory and prediction of training
 * layouts against the formulas (computed here from the statements,
 * not from the code), invalid layouts, running out of memory, and resuming
 * a run under another layout through the state API. */
#include "testutil.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "trace.h"
#include "train.h"

#define F4 4 /* bytes per fp32 value */

/* Attention model with even splits everywhere: h=8, 4 heads of 2, f=16. */
static void attn_model(sl_model_spec *m, int layers, int batch)
{
	*m = tu_model(layers, 8, 16, 4, 4, batch);
}

static sl_cluster *cluster(int n, int per_node, double flops, double bw, double lat, uint64_t mem)
{
	sl_cluster_config cfg;
	sl_cluster_config_default(&cfg);
	cfg.devices = n;
	cfg.devices_per_node = per_node;
	cfg.flops = flops;
	cfg.intra.bandwidth = cfg.inter.bandwidth = bw;
	cfg.intra.latency = cfg.inter.latency = lat;
	cfg.memory = mem;
	sl_err err = {0};
	sl_cluster *c = sl_cluster_create(&cfg, &err);
	if (!c)
		fail_msg("cluster: %s", err.msg);
	return c;
}

/* Links 10^10 times faster than compute: communication is negligible, the
 * condition under which the bubble formulas hold. */
static sl_cluster *compute_bound(int n)
{
	return cluster(n, 0, 1e6, 1e15, 0, (uint64_t)1 << 32);
}

static void run(const sl_model_spec *m, const sl_layout *l, sl_cluster *c, int steps,
                sl_train_report *rep, sl_train **keep)
{
	sl_err err = {0};
	int n = sl_layout_devices(l);
	sl_train *tr = sl_train_create(m, l, n, &err);
	if (!tr)
		fail_msg("create: %s", err.msg);
	if (sl_train_run(tr, c, steps, rep, &err))
		fail_msg("run: %s", err.msg);
	if (keep)
		*keep = tr;
	else
		sl_train_destroy(tr);
}

/* Parameters a device holds: its blocks' shards (TP rank with h/t of the
 * attention's width and f/t of the MLP's) plus the replicated biases. */
static uint64_t params_per_device(const sl_model_spec *m, int blocks, int t)
{
	uint64_t h = (uint64_t)m->hidden, f = (uint64_t)m->ffn;
	uint64_t attn = m->heads ? h * 3 * h / t + h / t * h + h : 0;
	uint64_t mlp = h * (f / t) + f / t + (f / t) * h + h;
	return (uint64_t)blocks * (attn + mlp);
}

/* ---- traffic ---- */

/* TP: each sub-block moves one all-reduce of b*s*h values forward and one
 * backward, so a block 4 all-reduces, 8*b*s*h*(t-1)/t values per device
 * with the ring; sequence parallelism turns each all-reduce into a
 * reduce-scatter plus an all-gather and all-reduces the replicated biases'
 * gradients once per step. */
static void test_tp_traffic(void **state)
{
	(void)state;
	const int grid[][5] = {/* t, p, d, m, sp */
	                       {2, 1, 1, 1, 0}, {4, 1, 1, 2, 0}, {2, 2, 1, 2, 0}, {2, 1, 2, 1, 0},
	                       {2, 1, 1, 2, 1}, {4, 1, 1, 1, 1}, {2, 2, 2, 2, 1}};
	for (size_t g = 0; g < sizeof grid / sizeof grid[0]; g++) {
		int t = grid[g][0], p = grid[g][1], d = grid[g][2], mb = grid[g][3],
		    sp = grid[g][4];
		sl_model_spec m;
		attn_model(&m, 4, 16);
		sl_layout l = tu_layout(t, p, d, SL_SCHED_1F1B, mb, 1);
		l.seq_parallel = sp;
		sl_cluster *c = cluster(t * p * d, 0, 1e12, 1e11, 1e-6, (uint64_t)1 << 30);
		sl_train_report rep;
		run(&m, &l, c, 2, &rep, NULL);
		uint64_t b = (uint64_t)m.batch / d / mb, s = m.seq, h = m.hidden;
		uint64_t blocks = (uint64_t)m.layers / p;
		uint64_t act = blocks * mb * 8 * b * s * h * (t - 1) / t * F4;
		uint64_t bias = 2 * (uint64_t)(t - 1) * (blocks * 2 * h) / t * F4;
		for (int i = 0; i < rep.ndev; i++) {
			const sl_train_dev *dv = &rep.dev[i];
			if (!sp) {
				assert_int_equal(dv->sent[SL_TR_TP_ALLREDUCE], act);
				assert_int_equal(dv->received[SL_TR_TP_ALLREDUCE], act);
				/* Scatter/gather: every tensor a stage receives is
				 * gathered again over the TP group, a ring's (t-1)/t
				 * of its b s h values a rank. */
				int st = dv->pp;
				uint64_t got = (uint64_t)mb * ((st != 0) + (st != p - 1));
				assert_int_equal(dv->sent[SL_TR_TP_ALLGATHER],
				                 got * (b * s * h * F4) * (t - 1) / t);
			} else {
				/* Korthikanti et al.: the backward gathers the two
				 * sub-blocks' inputs again (it kept their row shards),
				 * half as much again as the forward's and backward's
				 * all-gathers */
				assert_int_equal(dv->sent[SL_TR_TP_ALLGATHER], act / 2 + act / 4);
				assert_int_equal(dv->sent[SL_TR_TP_REDUCESCATTER], act / 2);
				assert_int_equal(dv->received[SL_TR_TP_REDUCESCATTER], act / 2);
				assert_int_equal(dv->sent[SL_TR_TP_ALLREDUCE], bias);
			}
		}
		sl_train_report_free(&rep);
		sl_cluster_destroy(c);
	}
}

/* PP: each micro-batch's activations go forward across every stage
 * boundary and their gradients come back. */
static void test_pp_traffic(void **state)
{
	(void)state;
	const int grid[][5] = {/* p, m, v, t, sp */
	                       {2, 4, 1, 1, 0}, {4, 4, 1, 1, 0}, {2, 4, 2, 1, 0},
	                       {4, 4, 2, 1, 0}, {2, 2, 1, 2, 0}, {2, 2, 2, 2, 1}};
	for (size_t g = 0; g < sizeof grid / sizeof grid[0]; g++) {
		int p = grid[g][0], mb = grid[g][1], v = grid[g][2], t = grid[g][3],
		    sp = grid[g][4];
		sl_model_spec m;
		attn_model(&m, 8, 8);
		sl_layout l =
		    tu_layout(t, p, 1, v > 1 ? SL_SCHED_INTERLEAVED : SL_SCHED_1F1B, mb, v);
		l.seq_parallel = sp;
		sl_cluster *c = cluster(t * p, 0, 1e12, 1e11, 1e-6, (uint64_t)1 << 30);
		sl_train_report rep;
		run(&m, &l, c, 1, &rep, NULL);
		/* A device sends 1/t of the b s h values: with sequence
		 * parallelism its rows, without it its slice of the whole tensor
		 * (Narayanan et al. 2021's scatter/gather), which the receiving
		 * stage's TP ranks all-gather again. */
		uint64_t whole = (uint64_t)m.batch / mb * m.seq * m.hidden * F4, msg = whole / t;
		for (int i = 0; i < rep.ndev; i++) {
			int s = rep.dev[i].pp;
			/* Stage s holds global chunks c*p+s; all but the last send
			 * forward, all but the first send back. */
			uint64_t fwd = (uint64_t)mb * (v - (s == p - 1)),
			         bwd = (uint64_t)mb * (v - (s == 0));
			assert_int_equal(rep.dev[i].sent[SL_TR_PP_SENDRECV], (fwd + bwd) * msg);
			uint64_t rf = (uint64_t)mb * (v - (s == 0)),
			         rb = (uint64_t)mb * (v - (s == p - 1));
			assert_int_equal(rep.dev[i].received[SL_TR_PP_SENDRECV], (rf + rb) * msg);
			if (!sp)
				assert_int_equal(rep.dev[i].sent[SL_TR_TP_ALLGATHER],
				                 (rf + rb) * whole * (t - 1) / t);
		}
		sl_train_report_free(&rep);
		sl_cluster_destroy(c);
	}
}

/* DP: 2(d-1)/d of the device's gradient bytes per step with the ring;
 * ZeRO-1 the same total, half reduce-scatter and half all-gather. */
static void test_dp_traffic(void **state)
{
	(void)state;
	const int grid[][4] = {/* d, t, p, zero1 */
	                       {2, 1, 1, 0}, {4, 1, 1, 0}, {2, 2, 1, 0}, {2, 1, 2, 0},
	                       {2, 1, 1, 1}, {4, 1, 1, 1}, {2, 2, 2, 1}};
	for (size_t g = 0; g < sizeof grid / sizeof grid[0]; g++) {
		int d = grid[g][0], t = grid[g][1], p = grid[g][2], z = grid[g][3];
		sl_model_spec m;
		attn_model(&m, 4, 8);
		sl_layout l = tu_layout(t, p, d, SL_SCHED_1F1B, 2, 1);
		l.zero = z;
		sl_cluster *c = cluster(t * p * d, 0, 1e12, 1e11, 1e-6, (uint64_t)1 << 30);
		sl_train_report rep;
		run(&m, &l, c, 1, &rep, NULL);
		uint64_t n = params_per_device(&m, m.layers / p, t);
		assert_int_equal(n % d, 0);
		for (int i = 0; i < rep.ndev; i++) {
			const sl_train_dev *dv = &rep.dev[i];
			assert_int_equal(dv->grads_bytes, n * F4);
			if (!z) {
				assert_int_equal(dv->sent[SL_TR_DP_ALLREDUCE],
				                 2 * (d - 1) * n / d * F4);
				assert_int_equal(dv->received[SL_TR_DP_ALLREDUCE],
				                 2 * (d - 1) * n / d * F4);
			} else {
				assert_int_equal(dv->sent[SL_TR_DP_ALLREDUCE], 0);
				assert_int_equal(dv->sent[SL_TR_DP_REDUCESCATTER],
				                 (d - 1) * n / d * F4);
				assert_int_equal(dv->sent[SL_TR_DP_ALLGATHER],
				                 (d - 1) * n / d * F4);
			}
		}
		sl_train_report_free(&rep);
		sl_cluster_destroy(c);
	}
}

/* ZeRO-2 and 3 (Rajbhandari et al. 2020; FSDP): each block's split
 * tensors are a unit, the replicated ones (here the two row-parallel
 * biases of each block) the root.  On d replicas with m micro-batches a
 * ring all-gather or reduce-scatter of u values moves (d-1)/d u a device.
 * ZeRO-2: each micro-batch's backward reduce-scatters every block, the
 * step's end the root, and the update all-gathers all: 2(d-1)/d of the
 * parameters when m = 1.  ZeRO-3: every micro-batch gathers each block
 * twice (forward, backward) and scatters its gradient once, the root is
 * gathered and scattered once a step: 3(d-1)/d of the blocks' bytes a
 * micro-batch, 2(d-1)/d of the root's. */
static void test_zero_traffic(void **state)
{
	(void)state;
	const int grid[][5] = {/* d, t, p, m, zero */
	                       {2, 1, 1, 1, 2}, {4, 1, 1, 1, 2}, {2, 1, 1, 1, 3}, {4, 1, 1, 1, 3},
	                       {2, 2, 1, 1, 3}, {2, 1, 2, 2, 3}, {4, 1, 1, 2, 2}, {2, 2, 2, 4, 3}};
	/* ZeRO-3 twice: freeing each block's parameters after its forward, and
	 * keeping them for its backward (reshard-after-forward no: one gather
	 * a micro-batch, not two) */
	for (size_t g = 0; g < 2 * sizeof grid / sizeof grid[0]; g++) {
		size_t gi = g % (sizeof grid / sizeof grid[0]);
		int keep = g >= sizeof grid / sizeof grid[0];
		int d = grid[gi][0], t = grid[gi][1], p = grid[gi][2], mb = grid[gi][3],
		    z = grid[gi][4];
		if (keep && z != 3)
			continue;
		sl_model_spec m;
		attn_model(&m, 4, 8);
		sl_layout l = tu_layout(t, p, d, SL_SCHED_1F1B, mb, 1);
		l.zero = z;
		l.zero_keep = keep;
		sl_cluster *c = cluster(t * p * d, 0, 1e12, 1e11, 1e-6, (uint64_t)1 << 30);
		sl_train_report rep;
		run(&m, &l, c, 1, &rep, NULL);
		uint64_t blocks = (uint64_t)m.layers / p;
		uint64_t n = params_per_device(&m, (int)blocks, t);
		uint64_t root = blocks * 2 * (uint64_t)m.hidden, split = n - root;
		assert_int_equal(split % (blocks * d), 0);
		assert_int_equal(root % d, 0);
		uint64_t ag, rs;
		if (z == 2) {
			rs = (d - 1) * (mb * split + root) / d;
			ag = (d - 1) * n / d;
		} else {
			rs = (d - 1) * (mb * split + root) / d;
			ag = (d - 1) * ((keep ? 1 : 2) * mb * split + root) / d;
		}
		if (mb == 1 && z == 2)
			assert_int_equal(ag + rs, 2 * (d - 1) * n / d);
		if (mb == 1 && z == 3 && !keep)
			assert_int_equal(ag + rs, (3 * (d - 1) * split + 2 * (d - 1) * root) / d);
		if (mb == 1 && z == 3 && keep)
			assert_int_equal(ag + rs, (2 * (d - 1) * split + 2 * (d - 1) * root) / d);
		for (int i = 0; i < rep.ndev; i++) {
			const sl_train_dev *dv = &rep.dev[i];
			if (dv->sent[SL_TR_DP_ALLGATHER] != ag * F4 ||
			    dv->sent[SL_TR_DP_REDUCESCATTER] != rs * F4 ||
			    dv->received[SL_TR_DP_ALLGATHER] != ag * F4)
				fail_msg(
				    "zero=%d keep=%d d=%d t=%d p=%d m=%d dev %d: all-gather %llu, "
				    "reduce-scatter %llu bytes; formulas %llu, %llu",
				    z, keep, d, t, p, mb, i,
				    (unsigned long long)dv->sent[SL_TR_DP_ALLGATHER],
				    (unsigned long long)dv->sent[SL_TR_DP_REDUCESCATTER],
				    (unsigned long long)(ag * F4), (unsigned long long)(rs * F4));
			assert_int_equal(dv->sent[SL_TR_DP_ALLREDUCE], 0);
		}
		sl_train_report_free(&rep);
		sl_cluster_destroy(c);
	}
}

/* Context parallelism over c ranks, ring or all-gather: a rank's block
 * of keys and values is its b s / c rows of 2 h values (every head's key
 * and value); a layer moves c - 1 blocks in the forward pass, and c - 1
 * blocks and c - 1 blocks of their gradients in the backward, sent and
 * received by every rank. */
static void test_cp_traffic(void **state)
{
	(void)state;
	for (int comm = 0; comm < SL_CP_N; comm++)
		for (int c = 2; c <= 4; c++) {
			sl_model_spec m = tu_model(3, 8, 16, 4, 24, 2);
			sl_layout l = tu_layout(1, 1, 1, SL_SCHED_1F1B, 1, 1);
			l.cp = c;
			l.cp_comm = comm;
			l.attention = SL_ATTN_FLASH;
			sl_cluster *cl = cluster(c, 0, 1e12, 1e11, 1e-6, (uint64_t)1 << 30);
			sl_train_report rep;
			run(&m, &l, cl, 1, &rep, NULL);
			uint64_t blk =
			    (uint64_t)m.batch * (uint64_t)(m.seq / c) * 2 * (uint64_t)m.hidden;
			uint64_t want = (uint64_t)m.layers * 3 * (uint64_t)(c - 1) * blk * F4;
			for (int i = 0; i < rep.ndev; i++) {
				const sl_train_dev *dv = &rep.dev[i];
				if (dv->sent[SL_TR_CP_KV] != want ||
				    dv->received[SL_TR_CP_KV] != want)
					fail_msg("cp=%d %s dev %d: sent %llu, received %llu bytes; "
					         "formula %llu",
					         c, sl_cp_comm_name(comm), i,
					         (unsigned long long)dv->sent[SL_TR_CP_KV],
					         (unsigned long long)dv->received[SL_TR_CP_KV],
					         (unsigned long long)want);
				assert_int_equal(dv->cp, i % c);
			}
			sl_train_report_free(&rep);
			sl_cluster_destroy(cl);
		}
}

/* Ring attention's forward on the closed-form machine, over c ranks: a
 * hop carries a rank's block of keys and values, b s / c rows of 2 h
 * values, in H = a + 8 b s h / (c B) seconds (fp32); step t computes on
 * the block of rank -t, C_t = 4 b (s/c)^2 h x share / F seconds for its
 * two products, share = the part of its four pairs of chunks at or below
 * the diagonal (own block: one pair wholly below, two on it, each a single
 * 128 x 128 tile and so run whole; the others: two pairs).  From T0, the
 * end of Q, K, V's product:
 *   e_0 = T0 + C_0, h_1 = T0 + H,
 *   h_{t+1} = max(h_t, e_{t-1}) + H  (the buffer step t-1 freed),
 *   e_t = max(e_{t-1}, h_t) + C_t,
 * and the attention ends at e_{c-1}.  The all-gather: T0 + (c-1) H + sum C_t. */
static void test_cp_ring_closed_form(void **state)
{
	(void)state;
	const double bws[] = {1e8, 1e12};
	for (int comm = 0; comm < SL_CP_N; comm++)
		for (int bi = 0; bi < 2; bi++)
			for (int c = 2; c <= 4; c++) {
				double F = 1e9, B = bws[bi], a = 1e-6;
				sl_model_spec m = tu_model(1, 8, 16, 4, 24, 2);
				sl_layout l = tu_layout(1, 1, 1, SL_SCHED_1F1B, 1, 1);
				l.cp = c;
				l.cp_comm = comm;
				l.attention = SL_ATTN_FLASH;
				sl_cluster *cl = cluster(c, 0, F, B, a, (uint64_t)1 << 30);
				sl_train_report rep;
				run(&m, &l, cl, 1, &rep, NULL);
				sl_snapshot snap;
				assert_int_equal(sl_trace_snapshot(sl_cluster_trace(cl), &snap),
				                 SL_OK);
				/* (the backward pass makes the scores again: the forward's
				 * are those before its first kernel) */
				double t0 = 0, end = 0, bwd = INFINITY;
				for (size_t i = 0; i < snap.n; i++) {
					const sl_event *e = &snap.ev[i];
					if (e->dev == 0 && e->kind == SL_EV_COMPUTE &&
					    e->work.pass == SL_PASS_BWD && e->t0 < bwd)
						bwd = e->t0;
				}
				for (size_t i = 0; i < snap.n; i++) {
					const sl_event *e = &snap.ev[i];
					if (e->dev != 0 || e->kind != SL_EV_COMPUTE ||
					    e->work.pass != SL_PASS_FWD || e->t1 > bwd)
						continue;
					if (e->work.part == SL_PART_QKV)
						t0 = e->t1;
					if ((e->work.part == SL_PART_SCORES ||
					     e->work.part == SL_PART_PV) &&
					    e->t1 > end)
						end = e->t1;
				}
				sl_snapshot_free(&snap);
				double b = m.batch, s = m.seq, h = m.hidden, sl = s / c;
				double H = a + 8 * b * s * h / (c * B);
				double ce = 4 * b * sl * sl * h / F;
				double e = t0 + ce * 3 / 4, hop = t0 + H, sum = ce * 3 / 4;
				for (int t = 1; t < c; t++) {
					double ct = ce * 2 / 4;
					double next = (hop > e ? hop : e) + H;
					e = (e > hop ? e : hop) + ct;
					hop = next;
					sum += ct;
				}
				if (comm == SL_CP_ALLGATHER)
					e = t0 + (c - 1) * H + sum;
				if (fabs(end - e) > 1e-12 * e)
					fail_msg(
					    "cp=%d %s bandwidth %g: attention ends at %.15g s, the "
					    "closed form %.15g s",
					    c, sl_cp_comm_name(comm), B, end, e);
				sl_train_report_free(&rep);
				sl_cluster_destroy(cl);
			}
}

/* TP's input-gradient all-reduce beside the weight gradient (overlap on),
 * on the closed-form machine, MLP blocks over t = 2: each block's backward
 * all-reduces fc1's r x h input gradient, T_ar = 2(t-1)(a + 4 r h/(t B)),
 * beside fc1's weight-gradient product, T_w = 2 h (f/t) r / F; the step
 * is shorter by min(T_ar, T_w) a block than with overlap off.  Slow links
 * hide all of T_w, fast ones all of T_ar.  With sequence parallelism the
 * input's all-gather, T_g = (t-1)(a + 4 r h/(t B)), goes beside dX's
 * product (T_w too) and the reduce-scatter (T_g) beside dW's: shorter by
 * 2 min(T_g, T_w) a block. */
static void test_tp_dx_overlap(void **state)
{
	(void)state;
	const double bws[] = {1e8, 1e12};
	for (int sp = 0; sp < 2; sp++)
		for (int bi = 0; bi < 2; bi++) {
			/* (slow compute with the fast links, so the product outlasts
			 * the collectives) */
			double F = bi ? 1e7 : 1e9, B = bws[bi], a = 1e-6;
			int t = 2;
			sl_model_spec m = tu_model(3, 8, 16, 0, 1, 4);
			double step[2];
			for (int ov = 0; ov < 2; ov++) {
				sl_layout l = tu_layout(t, 1, 1, SL_SCHED_1F1B, 1, 1);
				l.seq_parallel = sp;
				l.overlap = ov ? SL_OVERLAP_ON : SL_OVERLAP_OFF;
				sl_cluster *c = cluster(t, 0, F, B, a, (uint64_t)1 << 30);
				sl_train_report rep;
				run(&m, &l, c, 1, &rep, NULL);
				step[ov] = rep.step_s;
				sl_train_report_free(&rep);
				sl_cluster_destroy(c);
			}
			double r = (double)m.batch * m.seq, h = m.hidden, f = m.ffn;
			double tar = 2.0 * (t - 1) * (a + 4 * r * h / (t * B)),
			       tg = (t - 1) * (a + 4 * r * h / (t * B)),
			       tw = 2 * h * (f / t) * r / F;
			double want = sp ? m.layers * 2 * (tg < tw ? tg : tw)
			                 : m.layers * (tar < tw ? tar : tw);
			if (fabs((step[0] - step[1]) - want) > 1e-12 * step[0])
				fail_msg("sp=%d bandwidth %g: overlap saves %.15g s, the formula "
				         "%.15g s",
				         sp, B, step[0] - step[1], want);
			assert_true(bi == 0 ? tw < tg : tar < tw);
		}
}

/* Pipeline sends beside compute (overlap on), GPipe on the ideal machine
 * with a message time C no longer than a stage's forward F or backward B
 * of a micro-batch: a stage never waits for its own sends, so stage s
 * ends micro-batch j's forward at (j+1)F + s(F+C), and the gradients come
 * back the same way: the step is (m+p-1)(F+B) + 2(p-1)C.  Without
 * overlap every send holds its stage for C, so the step is longer. */
static void test_pp_send_overlap(void **state)
{
	(void)state;
	const int grid[][2] = {/* p, m */ {2, 4}, {3, 6}, {4, 8}};
	for (size_t g = 0; g < sizeof grid / sizeof grid[0]; g++) {
		int p = grid[g][0], mb = grid[g][1];
		double rate = 1e9, bw = 1e9, a = 2e-6;
		sl_model_spec m = tu_model(2 * p, 16, 64, 0, 1, 4 * mb);
		double step[2];
		for (int ov = 0; ov < 2; ov++) {
			sl_layout l = tu_layout(1, p, 1, SL_SCHED_GPIPE, mb, 1);
			l.overlap = ov ? SL_OVERLAP_ON : SL_OVERLAP_OFF;
			sl_cluster *c = cluster(p, 0, rate, bw, a, (uint64_t)1 << 30);
			sl_train_report rep;
			run(&m, &l, c, 1, &rep, NULL);
			step[ov] = rep.step_s;
			sl_train_report_free(&rep);
			sl_cluster_destroy(c);
		}
		double r = (double)m.batch / mb * m.seq, h = m.hidden, f = m.ffn;
		double blocks = (double)m.layers / p;
		double F = blocks * 4 * r * h * f / rate, B = 2 * F, C = a + F4 * r * h / bw;
		assert_true(C <= F && C <= B);
		double want = (mb + p - 1) * (F + B) + 2 * (p - 1) * C;
		if (fabs(step[1] - want) > 1e-12 * want)
			fail_msg("p=%d m=%d: overlapped step %.15g s, the formula %.15g s", p, mb,
			         step[1], want);
		if (!(step[0] > step[1] + (mb - 1) * C))
			fail_msg("p=%d m=%d: without overlap %.15g s, with %.15g s", p, mb, step[0],
			         step[1]);
	}
}

/* Memory under ZeRO-3 on d replicas: parameters and gradients are the
 * blocks' slices (1/d) and the root whole, Adam's state 1/d of all; in
 * flight, beyond what the same layout holds without ZeRO, one block's
 * gathered parameters and its gradient (the largest, at a backward). */
static void test_zero3_memory(void **state)
{
	(void)state;
	const int grid[][3] = {/* d, t, p */ {2, 1, 1}, {4, 1, 1}, {2, 2, 1}, {2, 1, 2}};
	for (size_t g = 0; g < sizeof grid / sizeof grid[0]; g++) {
		int d = grid[g][0], t = grid[g][1], p = grid[g][2];
		sl_model_spec m;
		attn_model(&m, 4, 8);
		sl_train_report rep[2];
		for (int z = 0; z < 2; z++) {
			sl_layout l = tu_layout(t, p, d, SL_SCHED_1F1B, 2, 1);
			l.zero = z ? 3 : 0;
			sl_cluster *c = cluster(t * p * d, 0, 1e12, 1e11, 1e-6, (uint64_t)1 << 30);
			run(&m, &l, c, 1, &rep[z], NULL);
			sl_cluster_destroy(c);
		}
		uint64_t blocks = (uint64_t)m.layers / p;
		uint64_t n = params_per_device(&m, (int)blocks, t);
		uint64_t root = blocks * 2 * (uint64_t)m.hidden, split = n - root;
		uint64_t held = (split / d + root) * F4, block = split / blocks * F4;
		for (int i = 0; i < rep[1].ndev; i++) {
			const sl_train_dev *a = &rep[0].dev[i], *b = &rep[1].dev[i];
			assert_int_equal(b->params_bytes, held);
			assert_int_equal(b->grads_bytes, held);
			assert_int_equal(b->optimizer_bytes, 2 * (n / d) * F4);
			assert_int_equal(b->act_peak_bytes, a->act_peak_bytes);
			if (b->workspace_peak_bytes != a->workspace_peak_bytes + 2 * block)
				fail_msg(
				    "d=%d t=%d p=%d dev %d: workspace %llu, without ZeRO %llu, "
				    "a block %llu",
				    d, t, p, i, (unsigned long long)b->workspace_peak_bytes,
				    (unsigned long long)a->workspace_peak_bytes,
				    (unsigned long long)block);
			uint64_t sa = a->params_bytes + a->grads_bytes + a->optimizer_bytes,
			         sb = b->params_bytes + b->grads_bytes + b->optimizer_bytes;
			if (b->mem_peak_bytes != a->mem_peak_bytes - sa + sb + 2 * block)
				fail_msg(
				    "d=%d t=%d p=%d dev %d: peak %llu, formula %llu", d, t, p, i,
				    (unsigned long long)b->mem_peak_bytes,
				    (unsigned long long)(a->mem_peak_bytes - sa + sb + 2 * block));
		}
		sl_train_report_free(&rep[0]);
		sl_train_report_free(&rep[1]);
	}
}

/* ---- bubble ---- */

/* bubble = idle / ideal = (p-1)/m for GPipe and 1F1B, (p-1)/(v*m)
 * interleaved, when stages are uniform and communication is free; the
 * idle share of the step is then bubble / (1 + bubble). */
static void test_bubble_formulas(void **state)
{
	(void)state;
	const int grid[][4] = {/* kind, p, m, v */
	                       {SL_SCHED_GPIPE, 2, 1, 1},       {SL_SCHED_GPIPE, 2, 4, 1},
	                       {SL_SCHED_GPIPE, 4, 2, 1},       {SL_SCHED_1F1B, 2, 16, 1},
	                       {SL_SCHED_1F1B, 4, 8, 1},        {SL_SCHED_1F1B, 4, 2, 1},
	                       {SL_SCHED_INTERLEAVED, 2, 2, 2}, {SL_SCHED_INTERLEAVED, 2, 4, 4},
	                       {SL_SCHED_INTERLEAVED, 4, 8, 2}, {SL_SCHED_INTERLEAVED, 4, 4, 2}};
	for (size_t g = 0; g < sizeof grid / sizeof grid[0]; g++) {
		int p = grid[g][1], mb = grid[g][2], v = grid[g][3];
		sl_model_spec m;
		attn_model(&m, 8, 16);
		sl_layout l = tu_layout(1, p, 1, (sl_sched)grid[g][0], mb, v);
		sl_cluster *c = compute_bound(p);
		sl_train_report rep;
		run(&m, &l, c, 1, &rep, NULL);
		double want = (double)(p - 1) / (v * mb);
		if (fabs(rep.bubble_fraction - want) > 1e-9 * want)
			fail_msg("%s p=%d m=%d v=%d: bubble %.12f, formula %.12f",
			         sl_sched_name(l.schedule), p, mb, v, rep.bubble_fraction, want);
		assert_true(fabs(rep.idle_fraction - want / (1 + want)) < 1e-9);
		sl_train_report_free(&rep);
		sl_cluster_destroy(c);
	}
}

/* GPipe and 1F1B take the same time; 1F1B holds fewer activations. */
static void test_gpipe_equals_1f1b_in_time(void **state)
{
	(void)state;
	for (int p = 2; p <= 4; p += 2)
		for (int mb = 1; mb <= 8; mb *= 2) {
			sl_model_spec m;
			attn_model(&m, 4, 8);
			sl_layout a = tu_layout(1, p, 1, SL_SCHED_GPIPE, mb, 1);
			sl_layout b = tu_layout(1, p, 1, SL_SCHED_1F1B, mb, 1);
			sl_cluster *c = compute_bound(p);
			sl_train_report ra, rb;
			run(&m, &a, c, 1, &ra, NULL);
			run(&m, &b, c, 1, &rb, NULL);
			assert_true(fabs(ra.step_s - rb.step_s) < 1e-9 * ra.step_s);
			if (mb > p)
				assert_true(rb.dev[0].act_peak_bytes < ra.dev[0].act_peak_bytes);
			sl_train_report_free(&ra);
			sl_train_report_free(&rb);
			sl_cluster_destroy(c);
		}
}

/* ---- memory ---- */

/* What one block keeps per micro-batch of nb sequences on a TP rank: the
 * attention's input, Q K V, the probabilities and the heads' outputs; the
 * MLP's input, fc1 output and GeLU output.  With sequence parallelism the
 * two inputs are kept as the rank's rows, 1/t of them (Korthikanti et al.
 * 2022), and gathered again in the backward pass. */
static uint64_t stash_per_block(const sl_model_spec *m, int t, int sp, uint64_t nb)
{
	uint64_t s = m->seq, r = nb * s, h = m->hidden, f = m->ffn / t;
	uint64_t d = m->heads ? h / m->heads : 0, ah = m->heads / t;
	uint64_t in = sp ? r * h / (uint64_t)t : r * h;
	uint64_t attn = m->heads ? in + r * 3 * d * ah + nb * ah * s * s + r * d * ah : 0;
	return (attn + in + 2 * r * f) * F4;
}

/* Megatron-LM's interleaved order for stage s, written out independently:
 * warm-up forwards, forward/backward pairs, then the remaining backwards;
 * virtual micro-batch k runs chunk (k mod pv) / p (reversed backwards).
 * Replayed for the peak of kept activations. */
static uint64_t interleaved_peak_bytes(int p, int mb, int v, int s, uint64_t per_chunk,
                                       uint64_t last)
{
	int total = mb * v, n = 0;
	int warm = mb == p ? total : (p - s - 1) * 2 + (v - 1) * p;
	if (warm > total)
		warm = total;
	int *fwd = malloc(sizeof(int) * 2 * total), *kk = malloc(sizeof(int) * 2 * total);
	for (int i = 0; i < warm; i++)
		fwd[n] = 1, kk[n++] = i;
	for (int i = 0; i < total - warm; i++) {
		fwd[n] = 1, kk[n++] = warm + i;
		fwd[n] = 0, kk[n++] = i;
	}
	for (int i = total - warm; i < total; i++)
		fwd[n] = 0, kk[n++] = i;
	uint64_t cur = 0, peak = 0;
	for (int i = 0; i < n; i++) {
		int chunk = (kk[i] % (p * v)) / p;
		if (!fwd[i])
			chunk = v - 1 - chunk;
		uint64_t bytes = per_chunk + (s == p - 1 && chunk == v - 1 ? last : 0);
		cur = fwd[i] ? cur + bytes : cur - bytes;
		if (cur > peak)
			peak = cur;
	}
	free(fwd);
	free(kk);
	return peak;
}

static void test_memory_formulas(void **state)
{
	(void)state;
	const int grid[][6] = {
	    /* kind, p, m, v, t, sp */
	    {SL_SCHED_GPIPE, 2, 4, 1, 1, 0},       {SL_SCHED_1F1B, 2, 4, 1, 1, 0},
	    {SL_SCHED_1F1B, 4, 8, 1, 1, 0},        {SL_SCHED_1F1B, 4, 2, 1, 1, 0},
	    {SL_SCHED_GPIPE, 2, 2, 1, 2, 1},       {SL_SCHED_1F1B, 2, 4, 1, 2, 0},
	    {SL_SCHED_INTERLEAVED, 2, 4, 2, 1, 0}, {SL_SCHED_INTERLEAVED, 4, 8, 2, 1, 0},
	    {SL_SCHED_INTERLEAVED, 2, 2, 4, 2, 1}};
	for (size_t g = 0; g < sizeof grid / sizeof grid[0]; g++) {
		int p = grid[g][1], mb = grid[g][2], v = grid[g][3], t = grid[g][4],
		    sp = grid[g][5];
		sl_model_spec m;
		attn_model(&m, 8, 16);
		sl_layout l = tu_layout(t, p, 1, (sl_sched)grid[g][0], mb, v);
		l.seq_parallel = sp;
		sl_cluster *c = compute_bound(t * p);
		sl_train_report rep;
		run(&m, &l, c, 1, &rep, NULL);
		uint64_t nb = (uint64_t)m.batch / mb, blocks = (uint64_t)m.layers / p;
		uint64_t chunk = blocks / v * stash_per_block(&m, t, sp, nb);
		/* the last stage also keeps the loss gradient of its rows */
		uint64_t loss = nb * m.seq * m.hidden / (sp ? t : 1) * F4;
		for (int i = 0; i < rep.ndev; i++) {
			const sl_train_dev *dv = &rep.dev[i];
			int s = dv->pp;
			uint64_t n = params_per_device(&m, (int)blocks, t);
			assert_int_equal(dv->params_bytes, n * F4);
			assert_int_equal(dv->grads_bytes, n * F4);
			assert_int_equal(dv->optimizer_bytes, 2 * n * F4);
			uint64_t want;
			if (l.schedule == SL_SCHED_INTERLEAVED) {
				want = interleaved_peak_bytes(p, mb, v, s, chunk, loss);
			} else {
				uint64_t inflight = l.schedule == SL_SCHED_GPIPE ? mb
				                    : mb < p - s                 ? mb
				                                                 : p - s;
				want = inflight * (chunk + (s == p - 1 ? loss : 0));
			}
			if (dv->act_peak_bytes != want)
				fail_msg("%s p=%d m=%d v=%d t=%d stage %d: peak activations %llu, "
				         "formula %llu",
				         sl_sched_name(l.schedule), p, mb, v, t, s,
				         (unsigned long long)dv->act_peak_bytes,
				         (unsigned long long)want);
			assert_true(dv->mem_peak_bytes >= dv->params_bytes + dv->grads_bytes +
			                                      dv->optimizer_bytes + want);
		}
		sl_train_report_free(&rep);
		sl_cluster_destroy(c);
	}
}

static void test_zero1_shards_optimizer(void **state)
{
	(void)state;
	sl_model_spec m;
	attn_model(&m, 4, 8);
	sl_layout l = tu_layout(1, 1, 4, SL_SCHED_1F1B, 1, 1);
	l.zero = 1;
	sl_cluster *c = compute_bound(4);
	sl_train_report rep;
	run(&m, &l, c, 1, &rep, NULL);
	uint64_t n = params_per_device(&m, m.layers, 1);
	for (int i = 0; i < 4; i++) {
		assert_int_equal(rep.dev[i].params_bytes, n * F4);
		assert_int_equal(rep.dev[i].optimizer_bytes, 2 * (n / 4) * F4);
	}
	sl_train_report_free(&rep);
	sl_cluster_destroy(c);
}

/* ---- prediction ---- */

/* The analytic model equals the emulation in model timing with ring
 * collectives, on real link figures and across nodes. */
static void test_prediction_equals_emulation(void **state)
{
	(void)state;
	const int grid[][9] = {/* t, p, d, kind, m, v, sp, per_node, zero */
	                       {1, 1, 1, SL_SCHED_1F1B, 1, 1, 0, 0, 0},
	                       {4, 1, 1, SL_SCHED_1F1B, 2, 1, 0, 0, 0},
	                       {2, 1, 2, SL_SCHED_1F1B, 1, 1, 1, 2, 1},
	                       {1, 4, 1, SL_SCHED_GPIPE, 4, 1, 0, 2, 0},
	                       {1, 2, 1, SL_SCHED_INTERLEAVED, 4, 2, 0, 0, 0},
	                       {2, 2, 2, SL_SCHED_1F1B, 2, 1, 1, 4, 1},
	                       {2, 2, 2, SL_SCHED_INTERLEAVED, 2, 2, 0, 2, 0},
	                       /* ZeRO-2 and 3: DP collectives inside the pipeline, across nodes */
	                       {2, 2, 2, SL_SCHED_1F1B, 2, 1, 1, 4, 3},
	                       {1, 2, 2, SL_SCHED_INTERLEAVED, 4, 2, 0, 2, 2},
	                       {2, 1, 3, SL_SCHED_1F1B, 2, 1, 0, 2, 3}};
	for (size_t g = 0; g < sizeof grid / sizeof grid[0]; g++) {
		const int *x = grid[g];
		sl_model_spec m;
		attn_model(&m, 8, 16);
		sl_layout l = tu_layout(x[0], x[1], x[2], (sl_sched)x[3], x[4], x[5]);
		l.seq_parallel = x[6];
		l.zero = x[8];
		int n = x[0] * x[1] * x[2];
		sl_cluster_config cfg;
		sl_cluster_config_default(
		    &cfg); /* H100s: NVLink inside a node, InfiniBand across */
		cfg.devices = n;
		cfg.devices_per_node = x[7];
		cfg.inter.bandwidth = 50e9;
		cfg.inter.latency = 5e-6;
		sl_err err = {0};
		sl_cluster *c = sl_cluster_create(&cfg, &err);
		assert_non_null(c);
		sl_train *tr;
		sl_train_report rep;
		run(&m, &l, c, 2, &rep, &tr);
		sl_train_prediction pr;
		assert_int_equal(sl_train_predict(tr, c, &pr, &err), SL_OK);
		if (fabs(pr.step_s - rep.step_s) > 1e-9 * rep.step_s)
			fail_msg("layout %zu: predicted %.12g s, emulated %.12g s", g, pr.step_s,
			         rep.step_s);
		assert_true(fabs(pr.bubble_fraction - rep.bubble_fraction) < 1e-9);
		for (int i = 0; i < n; i++) {
			assert_true(fabs(pr.compute_s[i] - rep.dev[i].compute_s) <=
			            1e-9 * rep.step_s);
			if (!(fabs(pr.comm_s[i] - rep.dev[i].comm_s) <= 1e-9 * rep.step_s))
				fail_msg(
				    "layout %zu dev %d: predicted communication %.12g s, emulated "
				    "%.12g s",
				    g, i, pr.comm_s[i], rep.dev[i].comm_s);
		}
		sl_train_report_free(&rep);
		sl_train_destroy(tr);
		sl_cluster_destroy(c);
	}
}

/* Scatter/gather with uneven slices: an MLP-only model of width 11 on three
 * TP ranks, five rows in micro-batches of 2, 2 and 1.  The three ranks of
 * the first stage send their blocks of each micro-batch's stream (8, 7 and 7
 * of a 2-row micro-batch's 22 values) between them, once:
 * the whole forward stream; the prediction prices the same messages. */
static void test_scatter_gather_uneven(void **state)
{
	(void)state;
	sl_model_spec m = tu_model(4, 11, 42, 0, 1, 5);
	sl_layout l = tu_layout(3, 2, 1, SL_SCHED_1F1B, 3, 1);
	sl_cluster *c = cluster(6, 3, 1e12, 1e11, 1e-6, (uint64_t)1 << 30);
	sl_train *tr;
	sl_train_report rep;
	run(&m, &l, c, 1, &rep, &tr);
	uint64_t sent = 0, gathered = 0;
	for (int i = 0; i < rep.ndev; i++)
		if (rep.dev[i].pp == 0)
			sent += rep.dev[i].sent[SL_TR_PP_SENDRECV];
		else
			gathered += rep.dev[i].received[SL_TR_TP_ALLGATHER];
	assert_int_equal(sent, 5 * 11 * F4);
	/* each rank of the second stage gathers the other ranks' slices */
	assert_int_equal(gathered, 2 * 5 * 11 * F4);
	sl_err err = {0};
	sl_train_prediction pr;
	assert_int_equal(sl_train_predict(tr, c, &pr, &err), SL_OK);
	assert_true(fabs(pr.step_s - rep.step_s) <= 1e-9 * rep.step_s);
	sl_train_report_free(&rep);
	sl_train_destroy(tr);
	sl_cluster_destroy(c);
}

/* The single-device baseline is the whole batch's GEMM FLOPs over the rate. */
static void test_single_baseline(void **state)
{
	(void)state;
	sl_model_spec m;
	attn_model(&m, 4, 8);
	sl_cluster *c = cluster(1, 0, 1e12, 1e11, 1e-6, (uint64_t)1 << 30);
	sl_train_report rep;
	sl_layout l = tu_layout(1, 1, 1, SL_SCHED_1F1B, 1, 1);
	run(&m, &l, c, 1, &rep, NULL);
	/* 32 rows; forward: fc1 and fc2, QKV, the output projection, scores
	 * and PV for 8 sequences x 4 heads; backward twice the forward */
	double s = 3.0 * m.layers *
	           (2 * (2.0 * 32 * 8 * 16) + 2.0 * 32 * 8 * 24 + 2.0 * 32 * 8 * 8 +
	            2 * (2.0 * 32 * 16 * 2));
	double one;
	int est;
	sl_err err;
	assert_int_equal(
	    sl_train_single_step_s(&m, NULL, sl_cluster_config_of(c), &one, &est, &err), SL_OK);
	assert_int_equal(est, 0);
	assert_true(fabs(one - s / 1e12) < 1e-12 * one);
	assert_true(fabs(rep.step_s - one) < 1e-12 * one);
	assert_true(fabs(rep.flops_per_step - s) < 1e-6);
	sl_train_report_free(&rep);
	sl_cluster_destroy(c);
}

/* Measured timing charges the device threads' CPU time; the arithmetic,
 * and so the losses, are the same as in model timing. */
static void test_measured_timing(void **state)
{
	(void)state;
	sl_model_spec m;
	attn_model(&m, 4, 8);
	sl_layout l = tu_layout(2, 2, 1, SL_SCHED_1F1B, 2, 1);
	l.seq_parallel = 1;
	sl_cluster_config cfg;
	sl_cluster_config_default(&cfg);
	cfg.devices = 4;
	cfg.timing = SL_TIMING_MEASURED;
	sl_err err = {0};
	sl_cluster *cm = sl_cluster_create(&cfg, &err), *c = compute_bound(4);
	assert_non_null(cm);
	sl_train_report rm, r;
	run(&m, &l, cm, 2, &rm, NULL);
	run(&m, &l, c, 2, &r, NULL);
	for (int s = 0; s < 2; s++)
		assert_true(rm.losses[s] == r.losses[s]);
	for (int i = 0; i < 4; i++) {
		assert_true(rm.dev[i].compute_s > 0);
		assert_true(rm.dev[i].flops == r.dev[i].flops);
		assert_true(rm.dev[i].sent[SL_TR_PP_SENDRECV] == r.dev[i].sent[SL_TR_PP_SENDRECV]);
	}
	double one;
	int est;
	assert_int_equal(sl_train_single_step_s(&m, NULL, &cfg, &one, &est, &err), SL_OK);
	assert_int_equal(est, 0);
	assert_true(one > 0);
	sl_train_report_free(&rm);
	sl_train_report_free(&r);
	sl_cluster_destroy(cm);
	sl_cluster_destroy(c);
}

/* ---- bad layouts and memory ---- */

static void expect_refused(const sl_model_spec *m, sl_layout l, int ndev, const char *msg)
{
	sl_err err = {0};
	sl_train *tr = sl_train_create(m, &l, ndev, &err);
	if (tr)
		fail_msg("accepted a layout that should say: %s", msg);
	assert_int_equal(err.code, SL_EINVAL);
	if (!strstr(err.msg, msg))
		fail_msg("message \"%s\" does not say \"%s\"", err.msg, msg);
	assert_null(strchr(err.msg, '\n'));
}

/* --stage-layers: the rules' counts, the lists' refusals, and where every
 * stage's chunks fall, against counts written out by hand. */
static void test_stage_layers(void **state)
{
	(void)state;
	sl_model_spec m;
	attn_model(&m, 4, 8);
	m.layers = 126;
	m.batch = 16;
	sl_layout l = tu_layout(1, 16, 1, SL_SCHED_INTERLEAVED, 16, 2);
	sl_err err = {0};
	assert_int_equal(sl_stage_layers_parse("ends", &l, &err), SL_OK);
	/* Llama 3 405B: 126 layers on 16 stages, one fewer on each end */
	for (int s = 0; s < 16; s++)
		assert_int_equal(sl_layout_stage_layers(&m, &l, s), s == 0 || s == 15 ? 7 : 8);
	assert_false(sl_layout_stages_even(&m, &l));
	if (sl_layout_check(&m, &l, 16, &err))
		fail_msg("%s", err.msg);
	/* two chunks a stage: 4+3 on the ends, 4+4 between; chunk 0 of every
	 * stage, then chunk 1 of every stage */
	int next = 0;
	for (int c = 0; c < 2; c++)
		for (int s = 0; s < 16; s++) {
			int first, count, want = c == 0 ? 4 : s == 0 || s == 15 ? 3 : 4;
			sl_layout_blocks(&m, &l, s, c, &first, &count);
			assert_int_equal(first, next);
			assert_int_equal(count, want);
			next += count;
		}
	assert_int_equal(next, 126);
	/* a deficit of 3 comes off the first stage twice, the last once */
	m.layers = 125;
	assert_int_equal(sl_layout_stage_layers(&m, &l, 0), 6);
	assert_int_equal(sl_layout_stage_layers(&m, &l, 1), 8);
	assert_int_equal(sl_layout_stage_layers(&m, &l, 15), 7);
	/* even: the first L % p stages one more, as before; where the chunks
	 * divide, chunk c of stage s is model chunk c*p + s of L/(p v) */
	l.stages = SL_STAGES_EVEN;
	assert_int_equal(sl_layout_stage_layers(&m, &l, 12), 8);
	assert_int_equal(sl_layout_stage_layers(&m, &l, 13), 7);
	m.layers = 96;
	l = tu_layout(1, 8, 1, SL_SCHED_INTERLEAVED, 8, 12);
	assert_true(sl_layout_stages_even(&m, &l));
	for (int c = 0; c < 12; c++)
		for (int s = 0; s < 8; s++) {
			int first, count;
			sl_layout_blocks(&m, &l, s, c, &first, &count);
			assert_int_equal(first, c * 8 + s);
			assert_int_equal(count, 1);
		}
	/* a list: 1F1B's stages in order; its name reads back */
	m.layers = 7;
	l = tu_layout(1, 3, 1, SL_SCHED_1F1B, 3, 1);
	assert_int_equal(sl_stage_layers_parse("1,4,2", &l, &err), SL_OK);
	assert_int_equal(sl_layout_check(&m, &l, 3, &err), SL_OK);
	const int f3[3] = {0, 1, 5}, n3[3] = {1, 4, 2};
	for (int s = 0; s < 3; s++) {
		int first, count;
		sl_layout_blocks(&m, &l, s, 0, &first, &count);
		assert_int_equal(first, f3[s]);
		assert_int_equal(count, n3[s]);
	}
	char buf[64];
	assert_string_equal(sl_stage_layers_name(&l, buf, sizeof buf), "1,4,2");
	/* malformed lists name the count at fault */
	const char *bad[][2] = {{"1,,2", "count 2 is not a whole number"},
	                        {"2,0", "count 2 is 0"},
	                        {"middle", "count 1 is not a whole number"},
	                        {"3,-1", "count 2 is not a whole number"},
	                        {"4,", "count 2 is not a whole number"}};
	for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
		assert_int_equal(sl_stage_layers_parse(bad[i][0], &l, &err), SL_EINVAL);
		if (!strstr(err.msg, bad[i][1]))
			fail_msg("'%s': \"%s\" does not say \"%s\"", bad[i][0], err.msg, bad[i][1]);
	}
}

static void test_invalid_layouts(void **state)
{
	(void)state;
	sl_model_spec m;
	attn_model(&m, 4, 8);
	sl_layout l = tu_layout(2, 2, 2, SL_SCHED_1F1B, 1, 1);
	expect_refused(&m, l, 4, "tp*pp*dp = 2*2*2 = 8 but there are 4 devices");
	{
		/* context parallelism: 2 cp chunks, fused attention, no attention dropout */
		sl_model_spec q = tu_model(2, 8, 16, 4, 12, 2);
		sl_layout c = tu_layout(1, 1, 1, SL_SCHED_1F1B, 1, 1);
		c.cp = 4;
		c.attention = SL_ATTN_FLASH;
		expect_refused(&q, c, 4, "--seq=12 does not divide by 8");
		c.cp = 2;
		expect_refused(&q, c, 3, "tp*cp*pp*dp = 1*2*1*1 = 2 but there are 3 devices");
		c.attention = SL_ATTN_MATERIALIZED;
		expect_refused(&q, c, 2, "add --attention=flash");
		c.attention = SL_ATTN_FLASH;
		q.attn_dropout = 0.1f;
		expect_refused(&q, c, 2, "set --attention-dropout=0");
	}
	expect_refused(&m, tu_layout(3, 1, 1, SL_SCHED_1F1B, 1, 1), 3,
	               "4 heads do not split over tp=3");
	sl_model_spec f = m;
	f.heads = 0;
	f.ffn = 2;
	expect_refused(&f, tu_layout(4, 1, 1, SL_SCHED_1F1B, 1, 1), 4,
	               "--ffn=2 cannot be split over tp=4");
	expect_refused(&m, tu_layout(1, 8, 1, SL_SCHED_1F1B, 8, 1), 8,
	               "4 layers cannot fill pp*chunks = 8*1 = 8 model chunks");
	sl_model_spec nine = m;
	nine.layers = 9;
	l = tu_layout(1, 4, 1, SL_SCHED_INTERLEAVED, 4, 2);
	l.stages = SL_STAGES_ENDS; /* 1, 3, 3, 2 */
	expect_refused(&nine, l, 4,
	               "--stage-layers=ends gives stage 0 1 layer, fewer than its 2 model chunks");
	l = tu_layout(1, 2, 1, SL_SCHED_1F1B, 2, 1);
	assert_int_equal(sl_stage_layers_parse("1,2,1", &l, NULL), SL_OK);
	expect_refused(&m, l, 2, "--stage-layers names 3 stages but --pp=2");
	assert_int_equal(sl_stage_layers_parse("1,2", &l, NULL), SL_OK);
	expect_refused(&m, l, 2, "--stage-layers adds up to 3 layers but the model has 4");
	l = tu_layout(1, 2, 1, SL_SCHED_INTERLEAVED, 2, 2);
	assert_int_equal(sl_stage_layers_parse("3,1", &l, NULL), SL_OK);
	expect_refused(&m, l, 2, "--stage-layers gives stage 1 1 layer, fewer than its 2 model");
	expect_refused(&m, tu_layout(1, 2, 1, SL_SCHED_INTERLEAVED, 3, 2), 2,
	               "3 is not a multiple of 2");
	expect_refused(&m, tu_layout(1, 2, 1, SL_SCHED_1F1B, 2, 2), 2,
	               "--chunks=2 needs --schedule=interleaved");
	expect_refused(
	    &m, tu_layout(1, 1, 4, SL_SCHED_1F1B, 4, 1), 4,
	    "a batch of 8 sequences cannot fill dp*microbatches = 4*4 = 16 micro-batches");
	l = tu_layout(1, 2, 1, SL_SCHED_1F1B, 1, 1);
	l.seq_parallel = 1;
	expect_refused(&m, l, 2, "--sequence-parallel splits the sequence inside a TP group");
	sl_model_spec one = m;
	one.seq = 1;
	one.heads = 0;
	l = tu_layout(4, 1, 2, SL_SCHED_1F1B, 2, 1);
	l.seq_parallel = 1;
	expect_refused(&one, l, 8, "splits a micro-batch's 2 tokens over tp=4");
	l = tu_layout(2, 1, 1, SL_SCHED_1F1B, 1, 1);
	l.zero = 1;
	expect_refused(&m, l, 2, "ZeRO-1 shards over data-parallel replicas");
	l = tu_layout(1, 1, 1, SL_SCHED_1F1B, 1, 1);
	l.order[1] = SL_AXIS_TP;
	expect_refused(&m, l, 1, "the mesh order must name tp, pp and dp once each");
	sl_axis o[3];
	assert_int_equal(sl_mesh_order_parse("tp-tp-dp", o), SL_EINVAL);
	assert_int_equal(sl_mesh_order_parse("pp-tp-dp", o), SL_OK);
	assert_int_equal(o[0], SL_AXIS_PP);
}

/* The mesh order puts TP groups on consecutive devices by default. */
static void test_mesh_order(void **state)
{
	(void)state;
	sl_layout l = tu_layout(2, 3, 4, SL_SCHED_1F1B, 1, 1);
	for (int dev = 0; dev < 24; dev++) {
		int t, p, d;
		sl_mesh_coords(&l, dev, &t, &p, &d);
		assert_int_equal(dev, t + 2 * (d + 4 * p));
		assert_int_equal(sl_mesh_device(&l, t, p, d), dev);
	}
	assert_int_equal(sl_mesh_order_parse("pp-dp-tp", l.order), SL_OK);
	for (int dev = 0; dev < 24; dev++) {
		int t, p, d;
		sl_mesh_coords(&l, dev, &t, &p, &d);
		assert_int_equal(dev, p + 3 * (d + 4 * t));
	}
}

static void test_out_of_memory(void **state)
{
	(void)state;
	sl_model_spec m;
	attn_model(&m, 4, 8);
	sl_layout l = tu_layout(1, 2, 1, SL_SCHED_GPIPE, 4, 1);
	uint64_t n = params_per_device(&m, 2, 1) * F4;
	sl_err err = {0};
	sl_train *tr = sl_train_create(&m, &l, 2, &err);
	assert_non_null(tr);
	/* room for parameters and gradients, not Adam's moments */
	sl_cluster *c = cluster(2, 0, 1e12, 1e11, 1e-6, 3 * n);
	sl_train_report rep;
	assert_int_equal(sl_train_run(tr, c, 1, &rep, &err), SL_EDEVMEM);
	assert_non_null(strstr(err.msg, "is out of memory: its Adam state needs"));
	sl_cluster_destroy(c);
	sl_train_destroy(tr);
	/* one device: room for the state, not for GPipe's four micro-batches of
	 * activations */
	l = tu_layout(1, 1, 1, SL_SCHED_GPIPE, 4, 1);
	n = params_per_device(&m, 4, 1) * F4;
	tr = sl_train_create(&m, &l, 1, &err);
	assert_non_null(tr);
	c = cluster(1, 0, 1e12, 1e11, 1e-6, 4 * n + 2 * stash_per_block(&m, 1, 0, 2));
	assert_int_equal(sl_train_run(tr, c, 1, &rep, &err), SL_EDEVMEM);
	assert_non_null(strstr(err.msg, "device 0 is out of memory: "));
	assert_non_null(strstr(err.msg, "is free"));
	sl_cluster_destroy(c);
	sl_train_destroy(tr);
}

/* ---- resuming ---- */

/* Runs carry on from the state's step: 4 + 6 steps are 10 steps. */
static void test_runs_continue(void **state)
{
	(void)state;
	sl_model_spec m;
	attn_model(&m, 4, 8);
	sl_layout l = tu_layout(2, 2, 1, SL_SCHED_1F1B, 2, 1);
	sl_cluster *c = compute_bound(4);
	sl_train *a, *b;
	sl_train_report ra, r1, r2;
	run(&m, &l, c, 10, &ra, &a);
	run(&m, &l, c, 4, &r1, &b);
	sl_err err;
	assert_int_equal(sl_train_run(b, c, 6, &r2, &err), SL_OK);
	assert_int_equal(r2.first_step, 4);
	for (int s = 0; s < 4; s++)
		assert_true(r1.losses[s] == ra.losses[s]);
	for (int s = 0; s < 6; s++)
		assert_true(r2.losses[s] == ra.losses[4 + s]);
	sl_train_report_free(&ra);
	sl_train_report_free(&r1);
	sl_train_report_free(&r2);
	sl_train_destroy(a);
	sl_train_destroy(b);
	sl_cluster_destroy(c);
}

/* Gather the state under one layout, scatter it into another, carry on:
 * the run matches one device's 10 steps (what checkpoints build on). */
static void test_reshard_through_canonical_form(void **state)
{
	(void)state;
	sl_model_spec m;
	attn_model(&m, 4, 8);
	m.lr = 1e-2f;
	sl_ref ref;
	sl_err err;
	double want[10];
	assert_int_equal(sl_ref_init(&ref, &m, &err), SL_OK);
	for (int s = 0; s < 10; s++)
		sl_ref_step(&ref, &want[s], &err);
	sl_layout la = tu_layout(2, 1, 2, SL_SCHED_1F1B, 2, 1);
	la.zero = 1;
	sl_layout lb = tu_layout(1, 2, 2, SL_SCHED_INTERLEAVED, 2, 2);
	sl_cluster *c = compute_bound(4);
	sl_train *a, *b;
	sl_train_report ra, rb;
	run(&m, &la, c, 5, &ra, &a);
	size_t np = sl_model_nparams(&m);
	float *p = malloc(np * 4), *mo = malloc(np * 4), *va = malloc(np * 4);
	assert_int_equal(sl_train_gather(a, p, mo, va), SL_OK);
	b = sl_train_create(&m, &lb, 4, &err);
	assert_non_null(b);
	assert_int_equal(sl_train_scatter(b, p, mo, va), SL_OK);
	sl_train_set_step(b, sl_train_step(a));
	assert_int_equal(sl_train_run(b, c, 5, &rb, &err), SL_OK);
	for (int s = 0; s < 5; s++) {
		assert_true(fabs(ra.losses[s] - want[s]) <= 1e-5 * want[s]);
		assert_true(fabs(rb.losses[s] - want[5 + s]) <= 1e-5 * want[5 + s]);
	}
	assert_int_equal(sl_train_gather(b, p, NULL, NULL), SL_OK);
	double d = 0, mx = 0;
	for (size_t i = 0; i < np; i++) {
		if (fabs(p[i] - ref.params[i]) > d)
			d = fabs(p[i] - ref.params[i]);
		if (fabs(ref.params[i]) > mx)
			mx = fabs(ref.params[i]);
	}
	assert_true(d <= 1e-4 * mx);
	/* every tensor is saved by exactly one device */
	int *owners = calloc((size_t)sl_model_ntensors(&m), sizeof *owners);
	size_t covered = 0;
	for (int dev = 0; dev < 4; dev++) {
		sl_dev_state ds = sl_train_dev_state(b, dev);
		for (int i = 0; i < ds.nshards; i++)
			if (ds.shards[i].primary) {
				owners[ds.shards[i].tensor]++;
				covered += ds.shards[i].count;
			}
	}
	assert_int_equal(covered, np);
	free(owners);
	free(p);
	free(mo);
	free(va);
	sl_ref_free(&ref);
	sl_train_report_free(&ra);
	sl_train_report_free(&rb);
	sl_train_destroy(a);
	sl_train_destroy(b);
	sl_cluster_destroy(c);
}

/* Gradient buckets beside the backward pass (PyTorch DDP; overlap on the
 * ideal machine, no slowdown).  Four blocks of 528 parameters, a bucket of
 * 4000 bytes: blocks 3 and 2 fill the first (1056 values), 1 and 0 the
 * second, and the replicated biases (64 values) go last, at the step's end.
 * A ring all-reduce of S bytes over d devices takes 2(d-1)(a + S/(dB)); a
 * bucket starts when its last block's backward ends and the bucket before
 * it is done, and the step ends when the last one is:
 *   e1 = t(block 2) + T1, e2 = max(t(block 0), e1) + T2,
 *   e3 = max(t(block 0), e2) + T3 = max(backward, last bucket's end).
 * The blocks' ends are read from the trace; the buckets' times from the
 * formula.  Slow links make the reductions the longer chain, fast ones the
 * backward pass. */
static void test_dp_overlap_buckets(void **state)
{
	(void)state;
	const double bws[] = {1e9, 1e11};
	const int ds[] = {2, 4};
	for (int bi = 0; bi < 2; bi++)
		for (int di = 0; di < 2; di++) {
			int d = ds[di];
			double bw = bws[bi], a = 1e-6;
			sl_model_spec m;
			attn_model(&m, 4, 8);
			sl_layout l = tu_layout(1, 1, d, SL_SCHED_1F1B, 1, 1);
			l.overlap = SL_OVERLAP_ON;
			l.bucket_bytes = 4000;
			sl_cluster *c = cluster(d, 0, 1e9, bw, a, (uint64_t)1 << 30);
			sl_train_report rep;
			run(&m, &l, c, 1, &rep, NULL);
			uint64_t blocks = 4, n = params_per_device(&m, 4, 1);
			uint64_t root = blocks * 2 * (uint64_t)m.hidden, per = (n - root) / blocks;
			assert_int_equal(per, 528);
			sl_snapshot snap;
			assert_int_equal(sl_trace_snapshot(sl_cluster_trace(c), &snap), SL_OK);
			double end[4] = {0};
			for (size_t i = 0; i < snap.n; i++) {
				const sl_event *e = &snap.ev[i];
				if (e->dev == 0 && e->kind == SL_EV_COMPUTE &&
				    e->work.pass == SL_PASS_BWD && e->t1 > end[e->work.block])
					end[e->work.block] = e->t1;
			}
			sl_snapshot_free(&snap);
#define RING(S) (2.0 * (d - 1) * (a + (S) / (d * bw)))
			double e1 = end[2] + RING(2.0 * per * F4);
			double e2 = (end[0] > e1 ? end[0] : e1) + RING(2.0 * per * F4);
			double e3 = (end[0] > e2 ? end[0] : e2) + RING((double)root * F4);
#undef RING
			if (fabs(rep.step_s - e3) > 1e-12 * e3)
				fail_msg("d=%d bandwidth %g: step %.15g s, bucket schedule %.15g s",
				         d, bw, rep.step_s, e3);
			/* slow links: the reductions outlast the backward pass */
			assert_true(bi == 0 ? e2 > end[0] : e1 < end[0]);
			assert_true(rep.dev[0].comm_exposed_s < rep.dev[0].comm_s);
			sl_train_report_free(&rep);
			sl_cluster_destroy(c);
		}
}

/* The trace tags pipeline work with its micro-batch: the staircase. */
static void test_trace_microbatches(void **state)
{
	(void)state;
	sl_model_spec m;
	attn_model(&m, 4, 8);
	sl_layout l = tu_layout(1, 4, 1, SL_SCHED_1F1B, 4, 1);
	sl_cluster *c = compute_bound(4);
	sl_train_report rep;
	run(&m, &l, c, 1, &rep, NULL);
	sl_snapshot snap;
	assert_int_equal(sl_trace_snapshot(sl_cluster_trace(c), &snap), SL_OK);
	double first[4][4];
	for (int d = 0; d < 4; d++)
		for (int b = 0; b < 4; b++)
			first[d][b] = -1;
	for (size_t i = 0; i < snap.n; i++) {
		const sl_event *e = &snap.ev[i];
		if (e->kind == SL_EV_COMPUTE && e->mb >= 0 && first[e->dev][e->mb] < 0)
			first[e->dev][e->mb] = e->t0;
	}
	/* every stage starts every micro-batch, each stage after the one before */
	for (int b = 0; b < 4; b++)
		for (int d = 1; d < 4; d++)
			assert_true(first[d][b] > first[d - 1][b]);
	sl_snapshot_free(&snap);
	sl_train_report_free(&rep);
	sl_cluster_destroy(c);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_tp_traffic),
	    cmocka_unit_test(test_pp_traffic),
	    cmocka_unit_test(test_dp_traffic),
	    cmocka_unit_test(test_bubble_formulas),
	    cmocka_unit_test(test_gpipe_equals_1f1b_in_time),
	    cmocka_unit_test(test_memory_formulas),
	    cmocka_unit_test(test_zero1_shards_optimizer),
	    cmocka_unit_test(test_zero_traffic),
	    cmocka_unit_test(test_cp_traffic),
	    cmocka_unit_test(test_cp_ring_closed_form),
	    cmocka_unit_test(test_tp_dx_overlap),
	    cmocka_unit_test(test_pp_send_overlap),
	    cmocka_unit_test(test_dp_overlap_buckets),
	    cmocka_unit_test(test_zero3_memory),
	    cmocka_unit_test(test_prediction_equals_emulation),
	    cmocka_unit_test(test_scatter_gather_uneven),
	    cmocka_unit_test(test_single_baseline),
	    cmocka_unit_test(test_measured_timing),
	    cmocka_unit_test(test_invalid_layouts),
	    cmocka_unit_test(test_stage_layers),
	    cmocka_unit_test(test_mesh_order),
	    cmocka_unit_test(test_out_of_memory),
	    cmocka_unit_test(test_runs_continue),
	    cmocka_unit_test(test_reshard_through_canonical_form),
	    cmocka_unit_test(test_trace_microbatches),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
