/* SPDX-License-Identifier: MIT */
/* coll.c - collectives from point-to-point transfers: ring and binomial tree.
 *
 * Ranks are positions in the group; "relative" ranks count from the root.
 * Every algorithm is written as the sequence of exchanges one rank makes, so
 * its emulated cost is what those transfers add up to. */
#include "coll.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "cost.h"
#include "device.h"
#include "internal.h"
#include "xfer.h"

#define F sizeof(float)

static const char *const op_names[SL_COLL_NOPS] = {
	"allreduce", "allgather", "reducescatter", "broadcast", "reduce",
	"gather",    "scatter",   "alltoall",      "sendrecv"};
static const char *const algo_names[SL_ALGO_NALGOS] = {"ring", "tree"};

const char *sl_coll_op_name(sl_coll_op op)
{
	return op >= 0 && op < SL_COLL_NOPS ? op_names[op] : "?";
}

const char *sl_algo_name(sl_algo a)
{
	return a >= 0 && a < SL_ALGO_NALGOS ? algo_names[a] : "?";
}

int sl_coll_op_parse(const char *s, sl_coll_op *op)
{
	for (int i = 0; i < SL_COLL_NOPS; i++)
		if (strcmp(s, op_names[i]) == 0) {
			*op = (sl_coll_op)i;
			return SL_OK;
		}
	return SL_EINVAL;
}

int sl_coll_channels(sl_coll_op op, sl_algo a)
{
	return a == SL_ALGO_RING && (op == SL_COLL_ALLREDUCE || op == SL_COLL_REDUCESCATTER ||
				     op == SL_COLL_ALLGATHER || op == SL_COLL_BROADCAST ||
				     op == SL_COLL_REDUCE);
}

int sl_algo_parse(const char *s, sl_algo *a)
{
	for (int i = 0; i < SL_ALGO_NALGOS; i++)
		if (strcmp(s, algo_names[i]) == 0) {
			*a = (sl_algo)i;
			return SL_OK;
		}
	return SL_EINVAL;
}

sl_group sl_group_all(int ndev)
{
	sl_group g;
	memset(&g, 0, sizeof g);
	g.n = ndev;
	for (int i = 0; i < ndev && i < SL_MAX_DEVICES; i++)
		g.ranks[i] = i;
	return g;
}

int sl_group_rank(const sl_group *g, int dev)
{
	for (int i = 0; i < g->n; i++)
		if (g->ranks[i] == dev)
			return i;
	return -1;
}

void sl_block_offsets(size_t n, int p, const size_t *counts, size_t *off)
{
	off[0] = 0;
	if (counts) {
		for (int r = 0; r < p; r++)
			off[r + 1] = off[r] + counts[r];
		return;
	}
	/* The planner asks for these on every micro-batch of every layout it
	 * times: one division, not two a rank. */
	size_t base = n / (size_t)p, extra = n % (size_t)p;
	for (int r = 0; r < p; r++)
		off[r + 1] = off[r] + base + ((size_t)r < extra);
}

/* What every collective needs: my rank, the block layout, argument checks. */
struct ctx {
	sl_dev *d;
	const sl_group *g;
	int p, r;
	float *buf;
	size_t off[SL_MAX_DEVICES + 1];
	sl_coll_op op;
	sl_algo algo;
	int root;
	int step, nsteps; /* this device's exchanges so far and in all, for the label */
	int lbase, lsteps; /* logical steps: this part's first, and the collective's count */
	int seq;           /* this device's how-many-th collective */
	double s_next, s_prev; /* sl_ring_stripes of the hops to rank r + 1 and from r - 1 */
	sl_err *err;
};

static int mod(int a, int p);

static int setup(struct ctx *x, sl_dev *d, const sl_group *g, sl_coll_op op, float *buf, size_t count,
		 const size_t *counts, int root, sl_algo a, sl_err *err)
{
	memset(x, 0, sizeof *x);
	x->d = d;
	x->g = g;
	x->op = op;
	x->algo = a;
	x->buf = buf;
	x->err = err;
	x->root = root;
	if (!g || g->n < 1 || g->n > SL_MAX_DEVICES)
		return sl_fail(err, SL_EINVAL, "%s: a group holds 1 to %d devices", op_names[op],
			       SL_MAX_DEVICES);
	x->p = g->n;
	x->r = sl_group_rank(g, sl_dev_id(d));
	if (x->r < 0)
		return sl_fail(err, SL_EINVAL, "%s: device %d is not in the group", op_names[op], sl_dev_id(d));
	if (a < 0 || a >= SL_ALGO_NALGOS)
		return sl_fail(err, SL_EINVAL, "%s: unknown algorithm", op_names[op]);
	if (root < 0 || root >= x->p)
		return sl_fail(err, SL_EINVAL, "%s: root %d is not a rank of the group", op_names[op], root);
	/* Timing-only runs hold no buffers: messages keep offsets and sizes. */
	if (count > 0 && !buf && !sl_cluster_config_of(sl_dev_cluster(d))->timing_only)
		return sl_fail(err, SL_EINVAL, "%s: no buffer", op_names[op]);
	x->s_next = x->s_prev = 1;
	if (sl_coll_channels(op, a)) {
		const sl_cluster *c = sl_dev_cluster(d);
		x->s_next = sl_cluster_ring_stripes(c, g->ranks, x->p, x->r);
		x->s_prev = sl_cluster_ring_stripes(c, g->ranks, x->p, mod(x->r - 1, x->p));
	}
	x->seq = sl_dev_next_coll(d);
	d->rx_free[0] = d->rx_free[1] = 0;
	sl_block_offsets(count, x->p, counts, x->off);
	if (x->off[x->p] != count)
		return sl_fail(err, SL_EINVAL, "%s: the blocks add up to %zu elements, not %zu", op_names[op],
			       x->off[x->p], count);
	return SL_OK;
}

static int peer(const struct ctx *x, int rank)
{
	return x->g->ranks[((rank % x->p) + x->p) % x->p];
}

static int mod(int a, int p)
{
	return ((a % p) + p) % p;
}

/* Relative rank <-> group rank. */
static int rel(const struct ctx *x)
{
	return mod(x->r - x->root, x->p);
}

static int absr(const struct ctx *x, int vr)
{
	return mod(vr + x->root, x->p);
}

/* The bytes of blocks [first, first+len) in relative order from the root,
 * which wrap around the end of the buffer in at most two ranges. */
static sl_msg blocks_rel(const struct ctx *x, int to, int first_vr, int len)
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

static sl_msg block_abs(const struct ctx *x, int to, int b)
{
	sl_msg m = sl_msg1(to, x->buf, x->off[b] * F, (x->off[b + 1] - x->off[b]) * F);
	m.first = (short)b;
	m.count = 1;
	return m;
}

/* The whole buffer: every rank's block. */
static sl_msg whole_buf(const struct ctx *x, int to, size_t count)
{
	sl_msg m = sl_msg1(to, x->buf, 0, count * F);
	m.first = 0;
	m.count = (short)x->p;
	return m;
}

/* One exchange: an optional send and an optional receive, concurrently, as
 * logical step lstep of this part (phase) of the collective: the index every
 * device of the group gives the same transfer, so the step model groups
 * them (for a ring's out-of-step devices too). */
static int xchg(struct ctx *x, const sl_msg *snd, const sl_msg *rcv, sl_xop xop, sl_coll_phase phase,
		int lstep)
{
	static const char *const short_names[SL_PHASE_N] = {NULL, "rs", "ag", NULL, NULL, NULL, NULL};
	const char *ph = short_names[phase];
	char label[40];
	x->step++;
	snprintf(label, sizeof label, "%s %s%s%s %d/%d", op_names[x->op], algo_names[x->algo],
		 ph ? " " : "", ph ? ph : "", x->step, x->nsteps);
	sl_ev_coll info = {.op = (signed char)x->op,
			   .algo = (signed char)x->algo,
			   .phase = (signed char)phase,
			   .step = (short)(x->lbase + lstep),
			   .nsteps = (short)x->lsteps,
			   .p = (short)x->p,
			   .leader = (short)x->g->ranks[0],
			   .seq = x->seq};
	return sl_xfer_coll(x->d, snd, snd ? 1 : 0, rcv, rcv ? 1 : 0, xop, &info, label, x->err);
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
static int ring_reducescatter(struct ctx *x)
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

static int ring_allgather(struct ctx *x)
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
 * slowest link as the run started, so every device cuts the same and the
 * prediction cuts as the run does. */
static int nsegments(const struct ctx *x, size_t count)
{
	const sl_cluster *c = sl_dev_cluster(x->d);
	double a = 0, b = INFINITY;
	for (int r = 0; r < x->p; r++) {
		sl_link_spec s = sl_cluster_link_tuned(c, x->g->ranks[r], x->g->ranks[(r + 1) % x->p]);
		s.bandwidth *= sl_cluster_ring_stripes(c, x->g->ranks, x->p, r);
		a = s.latency > a ? s.latency : a;
		b = s.bandwidth < b ? s.bandwidth : b;
	}
	double nw = (double)count * F * sl_wire_scale(sl_cluster_config_of(c));
	size_t k = (size_t)sl_chain_segments(x->p, nw / F, nw, a, b);
	return (int)(k > count ? (count ? count : 1) : k);
}

static sl_msg segment(const struct ctx *x, int to, size_t count, int k, int j)
{
	size_t a = count * (size_t)j / (size_t)k, b = count * (size_t)(j + 1) / (size_t)k;
	return sl_msg1(to, x->buf, a * F, (b - a) * F);
}

/* Chain root -> 1 -> 2 ... in k pipelined segments. */
static int ring_broadcast(struct ctx *x, size_t count)
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
		int rc = xchg(x, do_send ? &snd : NULL, do_recv ? &rcv : NULL, SL_XCOPY, SL_PHASE_BCAST,
			      vr == 0 ? j : j + vr - 1);
		if (rc)
			return rc;
	}
	return SL_OK;
}

/* Chain p-1 -> p-2 ... -> root, summing, in k pipelined segments. */
static int ring_reduce(struct ctx *x, size_t count)
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
		int rc = xchg(x, do_send ? &snd : NULL, do_recv ? &rcv : NULL, SL_XSUM, SL_PHASE_REDUCE,
			      u == 0 ? j : j + u - 1);
		if (rc)
			return rc;
	}
	return SL_OK;
}

/* Every rank forwards the blocks of the ranks behind it, one per step. */
static int ring_gather(struct ctx *x)
{
	int p = x->p, vr = rel(x);
	int toward = peer(x, absr(x, vr - 1)), from = peer(x, absr(x, vr + 1));
	int nsend = vr == 0 ? 0 : p - vr, nrecv = p - 1 - vr;
	x->nsteps = nsend > nrecv ? nsend : nrecv;
	for (int j = 0; j < x->nsteps; j++) {
		sl_msg snd = blocks_rel(x, toward, vr + j, 1), rcv = blocks_rel(x, from, vr + 1 + j, 1);
		int rc = xchg(x, j < nsend ? &snd : NULL, j < nrecv ? &rcv : NULL, SL_XCOPY, SL_PHASE_GATHER,
			      j);
		if (rc)
			return rc;
	}
	return SL_OK;
}

/* The root sends the farthest block first; every rank keeps its own and
 * forwards the rest. */
static int ring_scatter(struct ctx *x)
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
		int rc = xchg(x, do_send ? &snd : NULL, &rcv, SL_XCOPY, SL_PHASE_SCATTER, j + vr - 1);
		if (rc)
			return rc;
	}
	return SL_OK;
}

/* ---- binomial trees ---- */

/* Levels from the farthest: the exchange over distance mask is logical step
 * L-1-level(mask) of the broadcast. */
static int tree_broadcast(struct ctx *x, size_t count)
{
	int p = x->p, vr = rel(x), mask = 1, L = log2ceil(p);
	x->nsteps = L;
	sl_msg whole;
	while (mask < p) {
		if (vr & mask) {
			whole = whole_buf(x, peer(x, absr(x, vr - mask)), count);
			int rc = xchg(x, NULL, &whole, SL_XCOPY, SL_PHASE_BCAST, L - 1 - level(mask));
			if (rc)
				return rc;
			break;
		}
		mask <<= 1;
	}
	for (mask >>= 1; mask > 0; mask >>= 1)
		if (vr + mask < p) {
			whole = whole_buf(x, peer(x, absr(x, vr + mask)), count);
			int rc = xchg(x, &whole, NULL, SL_XCOPY, SL_PHASE_BCAST, L - 1 - level(mask));
			if (rc)
				return rc;
		}
	return SL_OK;
}

static int tree_reduce(struct ctx *x, size_t count)
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

static int tree_gather(struct ctx *x)
{
	int p = x->p, vr = rel(x);
	x->nsteps = log2ceil(p);
	for (int mask = 1; mask < p; mask <<= 1) {
		if ((vr & mask) == 0) {
			int src = vr | mask;
			if (src < p) {
				sl_msg m = blocks_rel(x, peer(x, absr(x, src)), src, imin(mask, p - src));
				int rc = xchg(x, NULL, &m, SL_XCOPY, SL_PHASE_GATHER, level(mask));
				if (rc)
					return rc;
			}
		} else {
			sl_msg m = blocks_rel(x, peer(x, absr(x, vr & ~mask)), vr, imin(mask, p - vr));
			return xchg(x, &m, NULL, SL_XCOPY, SL_PHASE_GATHER, level(mask));
		}
	}
	return SL_OK;
}

static int tree_scatter(struct ctx *x)
{
	int p = x->p, vr = rel(x), mask = 1, L = log2ceil(p);
	x->nsteps = L;
	while (mask < p) {
		if (vr & mask) {
			sl_msg m = blocks_rel(x, peer(x, absr(x, vr - mask)), vr, imin(mask, p - vr));
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

/* ---- point to point: all-to-all and send/receive ---- */

/* Block b of q elements of a buffer that is not the collective's own. */
static sl_msg qblock(int to, const float *buf, size_t q, int b)
{
	sl_msg m = sl_msg1(to, (void *)buf, (size_t)b * q * F, q * F);
	m.first = (short)b;
	m.count = 1;
	return m;
}

int sl_alltoall(sl_dev *d, const sl_group *g, const float *send, float *recv, size_t count,
		sl_algo a, sl_err *err)
{
	struct ctx x;
	int rc = setup(&x, d, g, SL_COLL_ALLTOALL, recv, count, NULL, 0, a, err);
	if (rc)
		return rc;
	if (count > 0 && !send && recv)
		return sl_fail(err, SL_EINVAL, "alltoall: no send buffer");
	if (send && recv && send == recv && x.p > 1)
		return sl_fail(err, SL_EINVAL, "alltoall: the send and receive buffers are one");
	size_t q = count / (size_t)x.p;
	int p = x.p, r = x.r;
	if (send && recv && q > 0)
		memcpy(recv + (size_t)r * q, send + (size_t)r * q, q * F);
	if (p == 1)
		return SL_OK;
	x.nsteps = x.lsteps = p - 1;
	for (int s = 1; s < p; s++) {
		int to = mod(r + s, p), from = mod(r - s, p);
		sl_msg snd = qblock(peer(&x, to), send, q, to);
		sl_msg rcv = qblock(peer(&x, from), recv, q, from);
		/* The message carries the receiver's block (the sender's rank). */
		snd.first = (short)r;
		if ((rc = xchg(&x, &snd, &rcv, SL_XCOPY, SL_PHASE_NONE, s - 1)))
			return rc;
	}
	return SL_OK;
}

int sl_sendrecv(sl_dev *d, const sl_group *g, const float *send, float *recv, size_t count,
		sl_err *err)
{
	struct ctx x;
	int rc = setup(&x, d, g, SL_COLL_SENDRECV, recv, count, NULL, 0, SL_ALGO_RING, err);
	if (rc)
		return rc;
	if (count > 0 && !send && recv)
		return sl_fail(err, SL_EINVAL, "sendrecv: no send buffer");
	if (send && recv && send == recv && x.p > 1)
		return sl_fail(err, SL_EINVAL, "sendrecv: the send and receive buffers are one");
	if (x.p == 1) {
		if (send && recv && count > 0 && send != recv)
			memcpy(recv, send, count * F);
		return SL_OK;
	}
	x.nsteps = x.lsteps = 1;
	sl_msg snd = sl_msg1(peer(&x, x.r + 1), (void *)send, 0, count * F);
	sl_msg rcv = sl_msg1(peer(&x, x.r - 1), recv, 0, count * F);
	snd.first = rcv.first = 0;
	snd.count = rcv.count = (short)x.p;
	return xchg(&x, &snd, &rcv, SL_XCOPY, SL_PHASE_NONE, 0);
}

/* ---- the public calls ---- */

int sl_allreduce(sl_dev *d, const sl_group *g, float *buf, size_t count, sl_algo a, sl_err *err)
{
	struct ctx x;
	int rc = setup(&x, d, g, SL_COLL_ALLREDUCE, buf, count, NULL, 0, a, err);
	if (rc || x.p == 1)
		return rc;
	if (a == SL_ALGO_RING) {
		x.nsteps = x.lsteps = 2 * (x.p - 1);
		rc = ring_reducescatter(&x);
		x.lbase = x.p - 1;
		return rc ? rc : ring_allgather(&x);
	}
	x.lsteps = 2 * log2ceil(x.p);
	rc = tree_reduce(&x, count);
	x.step = 0;
	x.lbase = log2ceil(x.p);
	return rc ? rc : tree_broadcast(&x, count);
}

int sl_reducescatter(sl_dev *d, const sl_group *g, float *buf, size_t count, const size_t *counts,
		     sl_algo a, sl_err *err)
{
	struct ctx x;
	int rc = setup(&x, d, g, SL_COLL_REDUCESCATTER, buf, count, counts, 0, a, err);
	if (rc || x.p == 1)
		return rc;
	if (a == SL_ALGO_RING) {
		x.nsteps = x.lsteps = x.p - 1;
		return ring_reducescatter(&x);
	}
	x.lsteps = 2 * log2ceil(x.p);
	rc = tree_reduce(&x, count);
	x.step = 0;
	x.lbase = log2ceil(x.p);
	return rc ? rc : tree_scatter(&x);
}

int sl_allgather(sl_dev *d, const sl_group *g, float *buf, size_t count, const size_t *counts,
		 sl_algo a, sl_err *err)
{
	struct ctx x;
	int rc = setup(&x, d, g, SL_COLL_ALLGATHER, buf, count, counts, 0, a, err);
	if (rc || x.p == 1)
		return rc;
	if (a == SL_ALGO_RING) {
		x.nsteps = x.lsteps = x.p - 1;
		return ring_allgather(&x);
	}
	x.lsteps = 2 * log2ceil(x.p);
	rc = tree_gather(&x);
	x.step = 0;
	x.lbase = log2ceil(x.p);
	return rc ? rc : tree_broadcast(&x, count);
}

int sl_broadcast(sl_dev *d, const sl_group *g, float *buf, size_t count, int root, sl_algo a,
		 sl_err *err)
{
	struct ctx x;
	int rc = setup(&x, d, g, SL_COLL_BROADCAST, buf, count, NULL, root, a, err);
	if (rc || x.p == 1)
		return rc;
	x.lsteps = a == SL_ALGO_RING ? nsegments(&x, count) + x.p - 2 : log2ceil(x.p);
	return a == SL_ALGO_RING ? ring_broadcast(&x, count) : tree_broadcast(&x, count);
}

int sl_reduce(sl_dev *d, const sl_group *g, float *buf, size_t count, int root, sl_algo a,
	      sl_err *err)
{
	struct ctx x;
	int rc = setup(&x, d, g, SL_COLL_REDUCE, buf, count, NULL, root, a, err);
	if (rc || x.p == 1)
		return rc;
	x.lsteps = a == SL_ALGO_RING ? nsegments(&x, count) + x.p - 2 : log2ceil(x.p);
	return a == SL_ALGO_RING ? ring_reduce(&x, count) : tree_reduce(&x, count);
}

int sl_gather(sl_dev *d, const sl_group *g, float *buf, size_t count, const size_t *counts, int root,
	      sl_algo a, sl_err *err)
{
	struct ctx x;
	int rc = setup(&x, d, g, SL_COLL_GATHER, buf, count, counts, root, a, err);
	if (rc || x.p == 1)
		return rc;
	x.lsteps = a == SL_ALGO_RING ? x.p - 1 : log2ceil(x.p);
	return a == SL_ALGO_RING ? ring_gather(&x) : tree_gather(&x);
}

int sl_scatter(sl_dev *d, const sl_group *g, float *buf, size_t count, const size_t *counts,
	       int root, sl_algo a, sl_err *err)
{
	struct ctx x;
	int rc = setup(&x, d, g, SL_COLL_SCATTER, buf, count, counts, root, a, err);
	if (rc || x.p == 1)
		return rc;
	x.lsteps = a == SL_ALGO_RING ? x.p - 1 : log2ceil(x.p);
	return a == SL_ALGO_RING ? ring_scatter(&x) : tree_scatter(&x);
}

/* alltoall or sendrecv in place: through a receive buffer of the device's. */
static int run_via_scratch(sl_dev *d, const sl_group *g, sl_coll_op op, float *buf, size_t count,
			   sl_algo a, sl_err *err)
{
	size_t bytes = count * F;
	const char *what = "the collective's receive buffer";
	int dry = sl_cluster_config_of(sl_dev_cluster(d))->timing_only && !buf;
	float *tmp = NULL;
	if (dry) {
		int rc = sl_dev_reserve(d, bytes, what, err);
		if (rc)
			return rc;
	} else if (bytes > 0 && !(tmp = sl_dev_alloc(d, bytes, what, err))) {
		return err && err->code ? err->code : SL_EDEVMEM;
	}
	int rc = op == SL_COLL_ALLTOALL ? sl_alltoall(d, g, buf, tmp, count, a, err)
					: sl_sendrecv(d, g, buf, tmp, count, err);
	if (rc == SL_OK && tmp) {
		/* alltoall leaves the tail past p q elements as it was. */
		size_t n = op == SL_COLL_ALLTOALL && g->n > 0 ? count / (size_t)g->n * (size_t)g->n
							       : count;
		memcpy(buf, tmp, n * F);
	}
	if (dry)
		sl_dev_release(d, bytes);
	else if (tmp)
		sl_dev_free(d, tmp, bytes);
	return rc;
}

int sl_coll_run2(sl_dev *d, const sl_group *g, sl_coll_op op, const float *send, float *recv,
		 size_t count, sl_algo a, sl_err *err)
{
	if (op == SL_COLL_ALLTOALL)
		return sl_alltoall(d, g, send, recv, count, a, err);
	if (op == SL_COLL_SENDRECV)
		return sl_sendrecv(d, g, send, recv, count, err);
	if (send != recv)
		return sl_fail(err, SL_EINVAL, "%s works in place: one buffer",
			       sl_coll_op_name(op));
	return sl_coll_run(d, g, op, recv, count, a, err);
}

int sl_coll_run(sl_dev *d, const sl_group *g, sl_coll_op op, float *buf, size_t count, sl_algo a,
		sl_err *err)
{
	switch (op) {
	case SL_COLL_ALLTOALL:
	case SL_COLL_SENDRECV:
		return run_via_scratch(d, g, op, buf, count, a, err);
	case SL_COLL_ALLREDUCE:
		return sl_allreduce(d, g, buf, count, a, err);
	case SL_COLL_ALLGATHER:
		return sl_allgather(d, g, buf, count, NULL, a, err);
	case SL_COLL_REDUCESCATTER:
		return sl_reducescatter(d, g, buf, count, NULL, a, err);
	case SL_COLL_BROADCAST:
		return sl_broadcast(d, g, buf, count, 0, a, err);
	case SL_COLL_REDUCE:
		return sl_reduce(d, g, buf, count, 0, a, err);
	case SL_COLL_GATHER:
		return sl_gather(d, g, buf, count, NULL, 0, a, err);
	case SL_COLL_SCATTER:
		return sl_scatter(d, g, buf, count, NULL, 0, a, err);
	default:
		return sl_fail(err, SL_EINVAL, "unknown collective");
	}
}
