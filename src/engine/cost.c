/* SPDX-License-Identifier: MIT */
#include "cost.h"

#include <math.h>

static int log2ceil(int p)
{
	int l = 0;
	while ((1 << l) < p)
		l++;
	return l;
}

double sl_cost_coll(sl_coll_op op, sl_algo algo, int p, double n, double a, double b)
{
	if (p <= 1)
		return 0;
	double pp = p, L = log2ceil(p);
	double elems = n / 4;
	double k = elems < pp ? (elems < 1 ? 1 : floor(elems)) : pp; /* pipeline segments */
	if (algo == SL_ALGO_RING) {
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
	switch (op) {
	case SL_COLL_ALLREDUCE:
		return 2 * L * (a + n / b);
	case SL_COLL_BROADCAST:
	case SL_COLL_REDUCE:
		return L * (a + n / b);
	case SL_COLL_GATHER:
	case SL_COLL_SCATTER:
		return L * a + (pp - 1) / pp * n / b;
	case SL_COLL_ALLGATHER:
	case SL_COLL_REDUCESCATTER:
		return L * a + (pp - 1) / pp * n / b + L * (a + n / b);
	default:
		return 0;
	}
}

double sl_busbw_factor(sl_coll_op op, int p)
{
	double pp = p;
	if (p <= 1)
		return 1;
	switch (op) {
	case SL_COLL_ALLREDUCE:
		return 2 * (pp - 1) / pp;
	case SL_COLL_ALLGATHER:
	case SL_COLL_REDUCESCATTER:
	case SL_COLL_GATHER:
	case SL_COLL_SCATTER:
		return (pp - 1) / pp;
	default:
		return 1;
	}
}

sl_link_spec sl_cost_ring_bottleneck(const sl_cluster *c, int p)
{
	sl_link_spec w = sl_cluster_link(c, 0, p > 1 ? 1 % p : 0);
	for (int i = 0; i < p && p > 1; i++) {
		sl_link_spec s = sl_cluster_link(c, i, (i + 1) % p);
		if (s.bandwidth < w.bandwidth)
			w.bandwidth = s.bandwidth;
		if (s.latency > w.latency)
			w.latency = s.latency;
	}
	return w;
}
