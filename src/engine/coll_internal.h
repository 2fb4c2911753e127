/* SPDX-License-Identifier: MIT */
/* coll_internal.h - what coll.c (the entry points, the exchange) and
 * coll_algo.c (the algorithms' schedules) share: one collective call as a
 * rank sees it.  Nobody else sees it. */
#ifndef SL_COLL_INTERNAL_H
#define SL_COLL_INTERNAL_H

#include <stddef.h>

#include "coll.h"
#include "trace.h"
#include "xfer.h"

/* What every collective needs: my rank, the block layout, the counters of
 * its events.  Ranks are positions in the group; "relative" ranks count
 * from the root. */
struct sl_coll_ctx {
	sl_dev *d;
	const sl_group *g;
	int p, r;
	float *buf;
	size_t off[SL_MAX_DEVICES + 1];
	sl_coll_op op;
	sl_algo algo;
	int root;
	int step, nsteps;      /* this device's exchanges so far and in all, for the label */
	int lbase, lsteps;     /* logical steps: this part's first, and the collective's count */
	int seq;               /* this device's how-many-th collective */
	double s_next, s_prev; /* sl_ring_stripes of the hops to rank r + 1 and from r - 1 */
	sl_err *err;
};

static inline int sl_coll_mod(int a, int p)
{
	return ((a % p) + p) % p;
}

/* The device id of group rank `rank`, taken modulo the group. */
static inline int sl_coll_peer(const struct sl_coll_ctx *x, int rank)
{
	return x->g->ranks[sl_coll_mod(rank, x->p)];
}

/* One exchange: an optional send and an optional receive, concurrently, as
 * logical step lstep of this part (phase) of the collective: the index every
 * device of the group gives the same transfer, so the step model groups
 * them (for a ring's out-of-step devices too). */
int sl_coll_xchg(struct sl_coll_ctx *x, const sl_msg *snd, const sl_msg *rcv, sl_xop xop,
                 sl_coll_phase phase, int lstep);

#endif
