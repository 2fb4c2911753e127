/* SPDX-License-Identifier: MIT */
/* coll_algo.c - the table of collective algorithms (coll_algo.h): for each,
 * its schedule as the exchanges one rank makes (so its emulated cost is what
 * those transfers add up to), its closed form, and what it does across
 * nodes.
 *
 * Ranks are positions in the group; "relative" ranks count from the root. */
#include "coll_algo.h"

#include <stdio.h>
#include <string.h>

#include "coll_internal.h"
#include "cost.h"
#include "device.h"

#define F sizeof(float)
#define BIT(i) (1u << (i))

/* The shared ones by short names, as the schedules read. */
static int mod(int a, int p)
{
	return sl_coll_mod(a, p);
}

static int peer(const struct sl_coll_ctx *x, int rank)
{
	return sl_coll_peer(x, rank);
}

static int xchg(struct sl_coll_ctx *x, const sl_msg *snd, const sl_msg *rcv, sl_xop xop,
                sl_coll_phase phase, int lstep)
{
	return sl_coll_xchg(x, snd, rcv, xop, phase, lstep);
}

/* Relative rank <-> group rank. */
static int rel(const struct sl_coll_ctx *x)
{
	return mod(x->r - x->root, x->p);
}

static int absr(const struct sl_coll_ctx *x, int vr)
{
	return mod(vr + x->root, x->p);
}

/* The bytes of blocks [first, first+len) in relative order from the root,
 * which wrap around the end of the buffer in at most two ranges. */
static sl_msg blocks_rel(const struct sl_coll_ctx *x, int to, int first_vr, int len)
{
	int b = absr(x, first_vr);
	sl_msg m;
	if (b + len <= x->p) {
		m = sl_msg1(to, x->buf, x->off[b] * F, (x->off[b + len] - x->off[b]) * F);
	} else {
		int tail = b + len - x->p;
		m = sl_msg2(to, x->buf, x->off[b] * F, (x->off[x->p] - x->off[b]) * F, 0,
		            x->off[tail] * F);
	}
	m.first = (short)b;
	m.count = (short)len;
	return m;
}

static sl_msg block_abs(const struct sl_coll_ctx *x, int to, int b)
{
	sl_msg m = sl_msg1(to, x->buf, x->off[b] * F, (x->off[b + 1] - x->off[b]) * F);
	m.first = (short)b;
	m.count = 1;
	return m;
}

/* The whole buffer: every rank's block. */
static sl_msg whole_buf(const struct sl_coll_ctx *x, int to, size_t count)
{
	sl_msg m = sl_msg1(to, x->buf, 0, count * F);
	m.first = 0;
	m.count = (short)x->p;
	return m;
}

static int log2ceil(int p)
{
	int l = 0;
	while ((1 << l) < p)
		l++;
	return l;
}

/* The level of a binomial tree's exchange over distance mask (a power of 2). */
static int level(int mask)
{
	int l = 0;
	while ((1 << l) < mask)
		l++;
	return l;
}

/* ---- ring ---- */

/* After it, block r of rank r holds the sum of everyone's block r. */
static int ring_reducescatter(struct sl_coll_ctx *x)
{
	int p = x->p, r = x->r;
	for (int s = 0; s < p - 1; s++) {
		sl_msg snd = block_abs(x, peer(x, r + 1), mod(r - s - 1, p));
		sl_msg rcv = block_abs(x, peer(x, r - 1), mod(r - s - 2, p));
		snd.stripes = x->s_next;
		rcv.stripes = x->s_prev;
		int rc = xchg(x, &snd, &rcv, SL_XSUM, SL_PHASE_RS, s);
		if (rc)
			return rc;
	}
	return SL_OK;
}

static int ring_allgather(struct sl_coll_ctx *x)
{
	int p = x->p, r = x->r;
	for (int s = 0; s < p - 1; s++) {
		sl_msg snd = block_abs(x, peer(x, r + 1), mod(r - s, p));
		sl_msg rcv = block_abs(x, peer(x, r - 1), mod(r - s - 1, p));
		snd.stripes = x->s_next;
		rcv.stripes = x->s_prev;
		int rc = xchg(x, &snd, &rcv, SL_XCOPY, SL_PHASE_AG, s);
		if (rc)
			return rc;
	}
	return SL_OK;
}

/* Segments for the pipelined chains: cost.c's rule on the group ring's
 * slowest link as the run started (striped as the chain runs), so every
 * device cuts the same and the prediction cuts as the run does. */
static int nsegments(const struct sl_coll_ctx *x, size_t count)
{
	const sl_cluster *c = sl_dev_cluster(x->d);
	sl_link_spec bn = sl_cost_ring_bottleneck_tuned(c, x->g->ranks, x->p, x->op, x->algo);
	double nw = (double)count * F * sl_wire_scale(sl_cluster_config_of(c));
	size_t k = (size_t)sl_chain_segments(x->p, nw / F, nw, bn.latency, bn.bandwidth);
	return (int)(k > count ? (count ? count : 1) : k);
}

static sl_msg segment(const struct sl_coll_ctx *x, int to, size_t count, int k, int j)
{
	size_t a = count * (size_t)j / (size_t)k, b = count * (size_t)(j + 1) / (size_t)k;
	return sl_msg1(to, x->buf, a * F, (b - a) * F);
}

/* Chain root -> 1 -> 2 ... in k pipelined segments. */
static int ring_broadcast(struct sl_coll_ctx *x, size_t count)
{
	int p = x->p, vr = rel(x), k = nsegments(x, count);
	int next = peer(x, absr(x, vr + 1)), prev = peer(x, absr(x, vr - 1));
	x->nsteps = vr == 0 ? k : vr == p - 1 ? k : k + 1;
	for (int j = 0; j <= k; j++) {
		int do_send = vr < p - 1 && (vr == 0 ? j < k : j >= 1);
		int do_recv = vr > 0 && j < k;
		int js = vr == 0 ? j : j - 1;
		if (!do_send && !do_recv)
			continue;
		sl_msg snd = segment(x, next, count, k, js), rcv = segment(x, prev, count, k, j);
		snd.stripes = x->s_next;
		rcv.stripes = x->s_prev;
		/* The pipeline's time slot: segment j leaves the root in slot j
		 * and reaches rank vr in slot j + vr - 1. */
		int rc = xchg(x, do_send ? &snd : NULL, do_recv ? &rcv : NULL, SL_XCOPY,
		              SL_PHASE_BCAST, vr == 0 ? j : j + vr - 1);
		if (rc)
			return rc;
	}
	return SL_OK;
}

/* Chain p-1 -> p-2 ... -> root, summing, in k pipelined segments. */
static int ring_reduce(struct sl_coll_ctx *x, size_t count)
{
	int p = x->p, vr = rel(x), k = nsegments(x, count);
	int next = peer(x, absr(x, vr + 1)), prev = peer(x, absr(x, vr - 1));
	x->nsteps = vr == p - 1 || vr == 0 ? k : k + 1;
	for (int j = 0; j <= k; j++) {
		int do_send = vr > 0 && (vr == p - 1 ? j < k : j >= 1);
		int do_recv = vr < p - 1 && j < k;
		int js = vr == p - 1 ? j : j - 1;
		if (!do_send && !do_recv)
			continue;
		sl_msg snd = segment(x, prev, count, k, js), rcv = segment(x, next, count, k, j);
		snd.stripes = x->s_prev;
		rcv.stripes = x->s_next;
		int u = p - 1 - vr; /* hops from the far end of the chain */
		int rc = xchg(x, do_send ? &snd : NULL, do_recv ? &rcv : NULL, SL_XSUM,
		              SL_PHASE_REDUCE, u == 0 ? j : j + u - 1);
		if (rc)
			return rc;
	}
	return SL_OK;
}

/* Every rank forwards the blocks of the ranks behind it, one per step. */
static int ring_gather(struct sl_coll_ctx *x)
{
	int p = x->p, vr = rel(x);
	int toward = peer(x, absr(x, vr - 1)), from = peer(x, absr(x, vr + 1));
	int nsend = vr == 0 ? 0 : p - vr, nrecv = p - 1 - vr;
	x->nsteps = nsend > nrecv ? nsend : nrecv;
	for (int j = 0; j < x->nsteps; j++) {
		sl_msg snd = blocks_rel(x, toward, vr + j, 1),
		       rcv = blocks_rel(x, from, vr + 1 + j, 1);
		int rc = xchg(x, j < nsend ? &snd : NULL, j < nrecv ? &rcv : NULL, SL_XCOPY,
		              SL_PHASE_GATHER, j);
		if (rc)
			return rc;
	}
	return SL_OK;
}

/* The root sends the farthest block first; every rank keeps its own and
 * forwards the rest. */
static int ring_scatter(struct sl_coll_ctx *x)
{
	int p = x->p, vr = rel(x);
	int next = peer(x, absr(x, vr + 1)), prev = peer(x, absr(x, vr - 1));
	if (vr == 0) {
		x->nsteps = p - 1;
		for (int j = 0; j < p - 1; j++) {
			sl_msg snd = blocks_rel(x, next, p - 1 - j, 1);
			int rc = xchg(x, &snd, NULL, SL_XCOPY, SL_PHASE_SCATTER, j);
			if (rc)
				return rc;
		}
		return SL_OK;
	}
	int nrecv = p - vr;
	x->nsteps = nrecv;
	for (int j = 0; j < nrecv; j++) {
		int fwd = p - j; /* the block received in the step before */
		int do_send = j >= 1 && fwd > vr;
		sl_msg snd = blocks_rel(x, next, fwd, 1), rcv = blocks_rel(x, prev, p - 1 - j, 1);
		/* Rank vr's j-th exchange is the chain's slot j + vr - 1. */
		int rc =
		    xchg(x, do_send ? &snd : NULL, &rcv, SL_XCOPY, SL_PHASE_SCATTER, j + vr - 1);
		if (rc)
			return rc;
	}
	return SL_OK;
}

/* The collectives over the ring: reduce-scatter and all-gather step by step,
 * broadcast and reduce as pipelined chains, gather and scatter forwarded. */

static int ring_op_allreduce(struct sl_coll_ctx *x, size_t count)
{
	(void)count;
	x->nsteps = x->lsteps = 2 * (x->p - 1);
	int rc = ring_reducescatter(x);
	x->lbase = x->p - 1;
	return rc ? rc : ring_allgather(x);
}

static int ring_op_reducescatter(struct sl_coll_ctx *x, size_t count)
{
	(void)count;
	x->nsteps = x->lsteps = x->p - 1;
	return ring_reducescatter(x);
}

static int ring_op_allgather(struct sl_coll_ctx *x, size_t count)
{
	(void)count;
	x->nsteps = x->lsteps = x->p - 1;
	return ring_allgather(x);
}

static int ring_op_broadcast(struct sl_coll_ctx *x, size_t count)
{
	x->lsteps = nsegments(x, count) + x->p - 2;
	return ring_broadcast(x, count);
}

static int ring_op_reduce(struct sl_coll_ctx *x, size_t count)
{
	x->lsteps = nsegments(x, count) + x->p - 2;
	return ring_reduce(x, count);
}

static int ring_op_gather(struct sl_coll_ctx *x, size_t count)
{
	(void)count;
	x->lsteps = x->p - 1;
	return ring_gather(x);
}

static int ring_op_scatter(struct sl_coll_ctx *x, size_t count)
{
	(void)count;
	x->lsteps = x->p - 1;
	return ring_scatter(x);
}

/* Every step moves a block of n/p over each link at once; a chain of k
 * segments takes p - 1 + k - 1 slots of a segment each. */
static double ring_time(sl_coll_op op, int p, double n, double a, double b, double k, sl_topo topo)
{
	(void)topo; /* ring neighbours are one hop apart on either topology */
	double pp = p;
	switch (op) {
	case SL_COLL_ALLREDUCE:
		return 2 * (pp - 1) * a + 2 * (pp - 1) / pp * n / b;
	case SL_COLL_ALLGATHER:
	case SL_COLL_REDUCESCATTER:
		return (pp - 1) * a + (pp - 1) / pp * n / b;
	case SL_COLL_BROADCAST:
	case SL_COLL_REDUCE:
		return (pp - 1 + k - 1) * (a + n / k / b);
	case SL_COLL_GATHER:
	case SL_COLL_SCATTER:
		return (pp - 1) * (a + n / pp / b);
	default:
		return 0;
	}
}

static const sl_algo_ops ring_ops = {
    .name = "ring",
    .step_word = "step",
    .quiet = 1,
    .walk = {[SL_COLL_ALLREDUCE] = ring_op_allreduce,
             [SL_COLL_REDUCESCATTER] = ring_op_reducescatter,
             [SL_COLL_ALLGATHER] = ring_op_allgather,
             [SL_COLL_BROADCAST] = ring_op_broadcast,
             [SL_COLL_REDUCE] = ring_op_reduce,
             [SL_COLL_GATHER] = ring_op_gather,
             [SL_COLL_SCATTER] = ring_op_scatter},
    .two_parts = BIT(SL_COLL_ALLREDUCE),
    .neighbour_phases = BIT(SL_PHASE_NONE) | BIT(SL_PHASE_RS) | BIT(SL_PHASE_AG),
    /* NCCL's ring all-reduce, reduce-scatter and all-gather, and the
     * pipelined chains of broadcast and reduce. */
    .channels = BIT(SL_COLL_ALLREDUCE) | BIT(SL_COLL_REDUCESCATTER) | BIT(SL_COLL_ALLGATHER) |
                BIT(SL_COLL_BROADCAST) | BIT(SL_COLL_REDUCE),
    .ring_replay = 1,
    .time = ring_time,
    .time_on = NULL,
    .busbw = sl_busbw_factor,
};

/* ---- binomial trees ---- */

/* Levels from the farthest: the exchange over distance mask is logical step
 * L-1-level(mask) of the broadcast. */
static int tree_broadcast(struct sl_coll_ctx *x, size_t count)
{
	int p = x->p, vr = rel(x), mask = 1, L = log2ceil(p);
	x->nsteps = L;
	sl_msg whole;
	while (mask < p) {
		if (vr & mask) {
			whole = whole_buf(x, peer(x, absr(x, vr - mask)), count);
			int rc =
			    xchg(x, NULL, &whole, SL_XCOPY, SL_PHASE_BCAST, L - 1 - level(mask));
			if (rc)
				return rc;
			break;
		}
		mask <<= 1;
	}
	for (mask >>= 1; mask > 0; mask >>= 1)
		if (vr + mask < p) {
			whole = whole_buf(x, peer(x, absr(x, vr + mask)), count);
			int rc =
			    xchg(x, &whole, NULL, SL_XCOPY, SL_PHASE_BCAST, L - 1 - level(mask));
			if (rc)
				return rc;
		}
	return SL_OK;
}

static int tree_reduce(struct sl_coll_ctx *x, size_t count)
{
	int p = x->p, vr = rel(x);
	x->nsteps = log2ceil(p);
	for (int mask = 1; mask < p; mask <<= 1) {
		if ((vr & mask) == 0) {
			if ((vr | mask) < p) {
				sl_msg m = whole_buf(x, peer(x, absr(x, vr | mask)), count);
				int rc = xchg(x, NULL, &m, SL_XSUM, SL_PHASE_REDUCE, level(mask));
				if (rc)
					return rc;
			}
		} else {
			sl_msg m = whole_buf(x, peer(x, absr(x, vr & ~mask)), count);
			return xchg(x, &m, NULL, SL_XSUM, SL_PHASE_REDUCE, level(mask));
		}
	}
	return SL_OK;
}

static int imin(int a, int b)
{
	return a < b ? a : b;
}

static int tree_gather(struct sl_coll_ctx *x)
{
	int p = x->p, vr = rel(x);
	x->nsteps = log2ceil(p);
	for (int mask = 1; mask < p; mask <<= 1) {
		if ((vr & mask) == 0) {
			int src = vr | mask;
			if (src < p) {
				sl_msg m =
				    blocks_rel(x, peer(x, absr(x, src)), src, imin(mask, p - src));
				int rc = xchg(x, NULL, &m, SL_XCOPY, SL_PHASE_GATHER, level(mask));
				if (rc)
					return rc;
			}
		} else {
			sl_msg m =
			    blocks_rel(x, peer(x, absr(x, vr & ~mask)), vr, imin(mask, p - vr));
			return xchg(x, &m, NULL, SL_XCOPY, SL_PHASE_GATHER, level(mask));
		}
	}
	return SL_OK;
}

static int tree_scatter(struct sl_coll_ctx *x)
{
	int p = x->p, vr = rel(x), mask = 1, L = log2ceil(p);
	x->nsteps = L;
	while (mask < p) {
		if (vr & mask) {
			sl_msg m =
			    blocks_rel(x, peer(x, absr(x, vr - mask)), vr, imin(mask, p - vr));
			int rc = xchg(x, NULL, &m, SL_XCOPY, SL_PHASE_SCATTER, L - 1 - level(mask));
			if (rc)
				return rc;
			break;
		}
		mask <<= 1;
	}
	for (mask >>= 1; mask > 0; mask >>= 1)
		if (vr + mask < p) {
			int dst = vr + mask;
			sl_msg m = blocks_rel(x, peer(x, absr(x, dst)), dst, imin(mask, p - dst));
			int rc = xchg(x, &m, NULL, SL_XCOPY, SL_PHASE_SCATTER, L - 1 - level(mask));
			if (rc)
				return rc;
		}
	return SL_OK;
}

/* The collectives as binomial trees from rank 0: all-reduce a reduce then a
 * broadcast, all-gather a gather then a broadcast, reduce-scatter a reduce
 * then a scatter, each part log2(p) levels. */

/* A second part after the first: its own exchange count, its levels after
 * the first's. */
static void tree_second_part(struct sl_coll_ctx *x)
{
	x->step = 0;
	x->lbase = log2ceil(x->p);
}

static int tree_op_allreduce(struct sl_coll_ctx *x, size_t count)
{
	x->lsteps = 2 * log2ceil(x->p);
	int rc = tree_reduce(x, count);
	tree_second_part(x);
	return rc ? rc : tree_broadcast(x, count);
}

static int tree_op_reducescatter(struct sl_coll_ctx *x, size_t count)
{
	x->lsteps = 2 * log2ceil(x->p);
	int rc = tree_reduce(x, count);
	tree_second_part(x);
	return rc ? rc : tree_scatter(x);
}

static int tree_op_allgather(struct sl_coll_ctx *x, size_t count)
{
	x->lsteps = 2 * log2ceil(x->p);
	int rc = tree_gather(x);
	tree_second_part(x);
	return rc ? rc : tree_broadcast(x, count);
}

static int tree_op_broadcast(struct sl_coll_ctx *x, size_t count)
{
	x->lsteps = log2ceil(x->p);
	return tree_broadcast(x, count);
}

static int tree_op_reduce(struct sl_coll_ctx *x, size_t count)
{
	x->lsteps = log2ceil(x->p);
	return tree_reduce(x, count);
}

static int tree_op_gather(struct sl_coll_ctx *x, size_t count)
{
	(void)count;
	x->lsteps = log2ceil(x->p);
	return tree_gather(x);
}

static int tree_op_scatter(struct sl_coll_ctx *x, size_t count)
{
	(void)count;
	x->lsteps = log2ceil(x->p);
	return tree_scatter(x);
}

/* A binomial tree's time over p devices on links of bandwidth b whose
 * levels' latencies add up to ha on its critical path (each level takes
 * its slowest pair's). */
static double tree_closed(sl_coll_op op, int p, double n, double ha, double b)
{
	double pp = p, L = log2ceil(p);
	switch (op) {
	case SL_COLL_ALLREDUCE:
		return 2 * (ha + L * n / b);
	case SL_COLL_BROADCAST:
	case SL_COLL_REDUCE:
		return ha + L * n / b;
	case SL_COLL_GATHER:
	case SL_COLL_SCATTER:
		return ha + (pp - 1) / pp * n / b;
	case SL_COLL_ALLGATHER:
	case SL_COLL_REDUCESCATTER:
		return 2 * ha + (pp - 1) / pp * n / b + L * n / b;
	default:
		return 0;
	}
}

/* Each level pairs ranks mask apart: a latency on full links, the ring
 * links between them (min(d, p - d)) on a ring. */
static double tree_time(sl_coll_op op, int p, double n, double a, double b, double k, sl_topo topo)
{
	(void)k;
	double h = 0;
	for (int mask = 1; mask < p; mask <<= 1)
		h += topo == SL_TOPO_RING ? (mask < p - mask ? mask : p - mask) : 1;
	return tree_closed(op, p, n, h * a, b);
}

/* Each level takes its slowest pair's latency (on a ring topology, the
 * hops between them) and the tree its slowest link's bandwidth. */
static double tree_time_on(sl_coll_op op, int p, double n, double bw, sl_group_link_fn link,
                           void *arg)
{
	double ha = 0;
	for (int mask = 1; mask < p; mask <<= 1) {
		double lv = 0;
		for (int r = 0; r + mask < p; r += 2 * mask) {
			sl_link_spec s = link(arg, r + mask, r);
			lv = s.latency > lv ? s.latency : lv;
			bw = s.bandwidth < bw ? s.bandwidth : bw;
		}
		ha += lv;
	}
	return tree_closed(op, p, n, ha, bw);
}

static const sl_algo_ops tree_ops = {
    .name = "tree",
    .step_word = "level",
    .quiet = 0,
    .walk = {[SL_COLL_ALLREDUCE] = tree_op_allreduce,
             [SL_COLL_REDUCESCATTER] = tree_op_reducescatter,
             [SL_COLL_ALLGATHER] = tree_op_allgather,
             [SL_COLL_BROADCAST] = tree_op_broadcast,
             [SL_COLL_REDUCE] = tree_op_reduce,
             [SL_COLL_GATHER] = tree_op_gather,
             [SL_COLL_SCATTER] = tree_op_scatter},
    .two_parts = BIT(SL_COLL_ALLREDUCE) | BIT(SL_COLL_REDUCESCATTER) | BIT(SL_COLL_ALLGATHER),
    .neighbour_phases = 0,
    .channels = 0, /* one adapter a hop */
    .ring_replay = 0,
    .time = tree_time,
    .time_on = tree_time_on,
    .busbw = sl_busbw_factor,
};

/* ---- the table ---- */

static const sl_algo_ops *const algos[SL_ALGO_NALGOS] = {
    [SL_ALGO_RING] = &ring_ops,
    [SL_ALGO_TREE] = &tree_ops,
};

const sl_algo_ops *sl_algo_ops_of(sl_algo a)
{
	return a >= 0 && a < SL_ALGO_NALGOS ? algos[a] : NULL;
}

sl_algo sl_algo_next(sl_algo a)
{
	return a >= 0 && a + 1 < SL_ALGO_NALGOS ? (sl_algo)(a + 1) : (sl_algo)0;
}

const char *sl_algo_name(sl_algo a)
{
	const sl_algo_ops *o = sl_algo_ops_of(a);
	return o ? o->name : "?";
}

int sl_algo_parse(const char *s, sl_algo *a)
{
	for (int i = 0; i < SL_ALGO_NALGOS; i++)
		if (strcmp(s, algos[i]->name) == 0) {
			*a = (sl_algo)i;
			return SL_OK;
		}
	return SL_EINVAL;
}

char *sl_algo_list(char *buf, size_t n, const char *sep)
{
	size_t len = 0;
	if (n == 0)
		return buf;
	buf[0] = '\0';
	for (int i = 0; i < SL_ALGO_NALGOS && len < n; i++) {
		int w = snprintf(buf + len, n - len, "%s%s", i ? sep : "", algos[i]->name);
		if (w < 0)
			break;
		len += (size_t)w;
	}
	return buf;
}

int sl_coll_channels(sl_coll_op op, sl_algo a)
{
	const sl_algo_ops *o = sl_algo_ops_of(a);
	return o && op >= 0 && op < SL_COLL_NOPS && (o->channels & BIT(op)) != 0;
}
