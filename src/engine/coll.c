/* SPDX-License-Identifier: MIT */
/* coll.c - collectives from point-to-point transfers: the calls, checked
 * and set up here, walk their algorithm's schedule (coll_algo.c's table);
 * all-to-all and send/receive are pairwise whatever the algorithm.
 *
 * Every algorithm is written as the sequence of exchanges one rank makes, so
 * its emulated cost is what those transfers add up to. */
#include "coll.h"

#include <stdio.h>
#include <string.h>

#include "coll_algo.h"
#include "coll_internal.h"
#include "internal.h"
#include "xfer.h"

#define F sizeof(float)

static const char *const op_names[SL_COLL_NOPS] = {"allreduce", "allgather", "reducescatter",
                                                   "broadcast", "reduce",    "gather",
                                                   "scatter",   "alltoall",  "sendrecv"};

const char *sl_coll_op_name(sl_coll_op op)
{
	return op >= 0 && op < SL_COLL_NOPS ? op_names[op] : "?";
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

/* My rank, the block layout, argument checks. */
static int setup(struct sl_coll_ctx *x, sl_dev *d, const sl_group *g, sl_coll_op op, float *buf,
                 size_t count, const size_t *counts, int root, sl_algo a, sl_err *err)
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
		return sl_fail(err, SL_EINVAL, "%s: device %d is not in the group", op_names[op],
		               sl_dev_id(d));
	if (!sl_algo_ops_of(a))
		return sl_fail(err, SL_EINVAL, "%s: unknown algorithm", op_names[op]);
	if (root < 0 || root >= x->p)
		return sl_fail(err, SL_EINVAL, "%s: root %d is not a rank of the group",
		               op_names[op], root);
	/* Timing-only runs hold no buffers: messages keep offsets and sizes. */
	if (count > 0 && !buf && !sl_cluster_config_of(sl_dev_cluster(d))->timing_only)
		return sl_fail(err, SL_EINVAL, "%s: no buffer", op_names[op]);
	x->s_next = x->s_prev = 1;
	if (sl_coll_channels(op, a)) {
		const sl_cluster *c = sl_dev_cluster(d);
		x->s_next = sl_cluster_ring_stripes(c, g->ranks, x->p, x->r);
		x->s_prev = sl_cluster_ring_stripes(c, g->ranks, x->p, sl_coll_mod(x->r - 1, x->p));
	}
	x->seq = sl_dev_next_coll(d);
	d->rx_free[0] = d->rx_free[1] = 0;
	sl_block_offsets(count, x->p, counts, x->off);
	if (x->off[x->p] != count)
		return sl_fail(err, SL_EINVAL, "%s: the blocks add up to %zu elements, not %zu",
		               op_names[op], x->off[x->p], count);
	return SL_OK;
}

int sl_coll_xchg(struct sl_coll_ctx *x, const sl_msg *snd, const sl_msg *rcv, sl_xop xop,
                 sl_coll_phase phase, int lstep)
{
	static const char *const short_names[SL_PHASE_N] = {NULL, "rs", "ag", NULL,
	                                                    NULL, NULL, NULL};
	const char *ph = short_names[phase];
	char label[40];
	x->step++;
	snprintf(label, sizeof label, "%s %s%s%s %d/%d", op_names[x->op], sl_algo_name(x->algo),
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
	struct sl_coll_ctx x;
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
		int to = sl_coll_mod(r + s, p), from = sl_coll_mod(r - s, p);
		sl_msg snd = qblock(sl_coll_peer(&x, to), send, q, to);
		sl_msg rcv = qblock(sl_coll_peer(&x, from), recv, q, from);
		/* The message carries the receiver's block (the sender's rank). */
		snd.first = (short)r;
		if ((rc = sl_coll_xchg(&x, &snd, &rcv, SL_XCOPY, SL_PHASE_NONE, s - 1)))
			return rc;
	}
	return SL_OK;
}

int sl_sendrecv(sl_dev *d, const sl_group *g, const float *send, float *recv, size_t count,
                sl_err *err)
{
	struct sl_coll_ctx x;
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
	sl_msg snd = sl_msg1(sl_coll_peer(&x, x.r + 1), (void *)send, 0, count * F);
	sl_msg rcv = sl_msg1(sl_coll_peer(&x, x.r - 1), recv, 0, count * F);
	snd.first = rcv.first = 0;
	snd.count = rcv.count = (short)x.p;
	return sl_coll_xchg(&x, &snd, &rcv, SL_XCOPY, SL_PHASE_NONE, 0);
}

/* ---- the public calls ---- */

/* The rest of a call set up in x: its algorithm's schedule. */
static int walk(struct sl_coll_ctx *x, size_t count)
{
	int (*fn)(struct sl_coll_ctx *, size_t) = sl_algo_ops_of(x->algo)->walk[x->op];
	if (!fn)
		return sl_fail(x->err, SL_EINVAL, "%s: the %s algorithm has no schedule for it",
		               op_names[x->op], sl_algo_name(x->algo));
	return fn(x, count);
}

int sl_allreduce(sl_dev *d, const sl_group *g, float *buf, size_t count, sl_algo a, sl_err *err)
{
	struct sl_coll_ctx x;
	int rc = setup(&x, d, g, SL_COLL_ALLREDUCE, buf, count, NULL, 0, a, err);
	return rc || x.p == 1 ? rc : walk(&x, count);
}

int sl_reducescatter(sl_dev *d, const sl_group *g, float *buf, size_t count, const size_t *counts,
                     sl_algo a, sl_err *err)
{
	struct sl_coll_ctx x;
	int rc = setup(&x, d, g, SL_COLL_REDUCESCATTER, buf, count, counts, 0, a, err);
	return rc || x.p == 1 ? rc : walk(&x, count);
}

int sl_allgather(sl_dev *d, const sl_group *g, float *buf, size_t count, const size_t *counts,
                 sl_algo a, sl_err *err)
{
	struct sl_coll_ctx x;
	int rc = setup(&x, d, g, SL_COLL_ALLGATHER, buf, count, counts, 0, a, err);
	return rc || x.p == 1 ? rc : walk(&x, count);
}

int sl_broadcast(sl_dev *d, const sl_group *g, float *buf, size_t count, int root, sl_algo a,
                 sl_err *err)
{
	struct sl_coll_ctx x;
	int rc = setup(&x, d, g, SL_COLL_BROADCAST, buf, count, NULL, root, a, err);
	return rc || x.p == 1 ? rc : walk(&x, count);
}

int sl_reduce(sl_dev *d, const sl_group *g, float *buf, size_t count, int root, sl_algo a,
              sl_err *err)
{
	struct sl_coll_ctx x;
	int rc = setup(&x, d, g, SL_COLL_REDUCE, buf, count, NULL, root, a, err);
	return rc || x.p == 1 ? rc : walk(&x, count);
}

int sl_gather(sl_dev *d, const sl_group *g, float *buf, size_t count, const size_t *counts,
              int root, sl_algo a, sl_err *err)
{
	struct sl_coll_ctx x;
	int rc = setup(&x, d, g, SL_COLL_GATHER, buf, count, counts, root, a, err);
	return rc || x.p == 1 ? rc : walk(&x, count);
}

int sl_scatter(sl_dev *d, const sl_group *g, float *buf, size_t count, const size_t *counts,
               int root, sl_algo a, sl_err *err)
{
	struct sl_coll_ctx x;
	int rc = setup(&x, d, g, SL_COLL_SCATTER, buf, count, counts, root, a, err);
	return rc || x.p == 1 ? rc : walk(&x, count);
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
