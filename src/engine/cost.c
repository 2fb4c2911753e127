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

int sl_chain_segments(int p, double elems, double bytes, double a, double b)
{
	double most = elems < SL_CHAIN_SEGMENTS_MAX ? floor(elems) : SL_CHAIN_SEGMENTS_MAX;
	if (most < 1 || p <= 2 || !(b > 0) || !isfinite(bytes))
		return 1;
	if (!(a > 0))
		return (int)most;
	/* (k + c)(a + D / k) falls while k (k + 1) < c D / a. */
	double q = (p - 2) * bytes / (a * b), k = floor(sqrt(q));
	if (k * (k + 1) < q)
		k += 1;
	return k < 1 ? 1 : k > most ? (int)most : (int)k;
}

/* Latencies between ranks d apart: one on full links, the ring links
 * between them (min(d, p - d)) on a ring. */
static double hops(int d, int p, sl_topo topo)
{
	return topo == SL_TOPO_RING ? (d < p - d ? d : p - d) : 1;
}

/* On a binomial tree's critical path: each level pairs ranks mask apart. */
static double tree_hops(int p, sl_topo topo)
{
	double h = 0;
	for (int mask = 1; mask < p; mask <<= 1)
		h += hops(mask, p, topo);
	return h;
}

/* Of a pairwise all-to-all: step k pairs ranks k apart. */
static double pair_hops(int p, sl_topo topo)
{
	double h = 0;
	for (int k = 1; k < p; k++)
		h += hops(k, p, topo);
	return h;
}

double sl_cost_tree(sl_coll_op op, int p, double n, double ha, double b)
{
	if (p <= 1)
		return 0;
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

/* The time with a chain of k segments (k ignored by the other forms). */
static double coll_k(sl_coll_op op, sl_algo algo, int p, double n, double a, double b, double k,
		     sl_topo topo)
{
	if (p <= 1)
		return 0;
	double pp = p, H = tree_hops(p, topo);
	double elems = n / 4;
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
		case SL_COLL_ALLTOALL:
			return pair_hops(p, topo) * a + (pp - 1) * floor(elems / pp) * 4 / b;
		case SL_COLL_SENDRECV:
			return a + n / b;
		default:
			return 0;
		}
	}
	if (op == SL_COLL_ALLTOALL) /* point to point whatever the algorithm */
		return pair_hops(p, topo) * a + (pp - 1) * floor(elems / pp) * 4 / b;
	if (op == SL_COLL_SENDRECV)
		return a + n / b;
	return sl_cost_tree(op, p, n, H * a, b);
}


double sl_cost_coll_terms(sl_coll_op op, sl_algo algo, int p, double n, double a, double b,
			  sl_topo topo, double *lat, double *bw)
{
	double k = sl_chain_segments(p, n / 4, n, a, b);
	if (lat)
		*lat = coll_k(op, algo, p, n, a, INFINITY, k, topo);
	if (bw)
		*bw = coll_k(op, algo, p, n, 0, b, k, topo);
	return coll_k(op, algo, p, n, a, b, k, topo);
}

double sl_cost_coll(sl_coll_op op, sl_algo algo, int p, double n, double a, double b)
{
	return sl_cost_coll_terms(op, algo, p, n, a, b, SL_TOPO_FULL, NULL, NULL);
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
	case SL_COLL_ALLTOALL:
		return (pp - 1) / pp;
	default:
		return 1;
	}
}

static sl_link_spec bottleneck(const sl_cluster *c, int p, int striped)
{
	const sl_cluster_config *cfg = sl_cluster_config_of(c);
	sl_link_spec w = sl_cluster_link(c, 0, p > 1 ? 1 % p : 0);
	if (striped && p > 1)
		w.bandwidth *= sl_ring_stripes(cfg, NULL, p, 0);
	for (int i = 0; i < p && p > 1; i++) {
		sl_link_spec s = sl_cluster_link(c, i, (i + 1) % p);
		if (striped)
			s.bandwidth *= sl_ring_stripes(cfg, NULL, p, i);
		if (s.bandwidth < w.bandwidth)
			w.bandwidth = s.bandwidth;
		if (s.latency > w.latency)
			w.latency = s.latency;
	}
	return w;
}

sl_link_spec sl_cost_ring_bottleneck(const sl_cluster *c, int p)
{
	return bottleneck(c, p, 0);
}

sl_link_spec sl_cost_ring_bottleneck_op(const sl_cluster *c, int p, sl_coll_op op, sl_algo a)
{
	return bottleneck(c, p, sl_coll_channels(op, a));
}
