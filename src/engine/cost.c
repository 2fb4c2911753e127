/* SPDX-License-Identifier: MIT */
#include "cost.h"

#include <math.h>

#include "coll_algo.h"

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

/* Of a pairwise all-to-all: step k pairs ranks k apart, a latency on full
 * links, the ring links between them (min(k, p - k)) on a ring. */
static double pair_hops(int p, sl_topo topo)
{
	double h = 0;
	for (int k = 1; k < p; k++)
		h += topo == SL_TOPO_RING ? (k < p - k ? k : p - k) : 1;
	return h;
}

/* The time with a chain of k segments (k ignored by the other forms):
 * all-to-all and send/receive are pairwise whatever the algorithm; the
 * rest is the algorithm's closed form. */
static double coll_k(sl_coll_op op, sl_algo algo, int p, double n, double a, double b, double k,
                     sl_topo topo)
{
	if (p <= 1)
		return 0;
	double pp = p;
	double elems = n / 4;
	if (op == SL_COLL_ALLTOALL)
		return pair_hops(p, topo) * a + (pp - 1) * floor(elems / pp) * 4 / b;
	if (op == SL_COLL_SENDRECV)
		return a + n / b;
	const sl_algo_ops *al = sl_algo_ops_of(algo);
	return al ? al->time(op, p, n, a, b, k, topo) : 0;
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

/* Where a ring's links come from: c's links now, or as they were when the
 * run started (tuned), or cfg's classes with no cluster. */
struct ring_src {
	const sl_cluster *c;
	const sl_cluster_config *cfg;
	int tuned;
	const int *ranks; /* NULL: 0, 1, ..., p-1 */
};

/* The hop from ring rank i to i + 1, at its striped bandwidth if striped. */
static sl_link_spec hop(const struct ring_src *s, int p, int i, int striped)
{
	int j = p > 1 ? (i + 1) % p : i;
	int a = s->ranks ? s->ranks[i] : i, b = s->ranks ? s->ranks[j] : j;
	sl_link_spec l = !s->c      ? sl_cluster_config_link(s->cfg, a, b)
	                 : s->tuned ? sl_cluster_link_tuned(s->c, a, b)
	                            : sl_cluster_link(s->c, a, b);
	if (striped && p > 1)
		l.bandwidth *= s->tuned ? sl_cluster_ring_stripes(s->c, s->ranks, p, i)
		                        : sl_ring_stripes(s->cfg, s->ranks, p, i);
	return l;
}

/* The one rule for a ring's slowest link: the least bandwidth and the most
 * latency over its hops. */
static sl_link_spec bottleneck(const struct ring_src *s, int p, int striped)
{
	sl_link_spec w = hop(s, p, 0, striped);
	for (int i = 0; i < p && p > 1; i++) {
		sl_link_spec l = hop(s, p, i, striped);
		if (l.bandwidth < w.bandwidth)
			w.bandwidth = l.bandwidth;
		if (l.latency > w.latency)
			w.latency = l.latency;
	}
	return w;
}

sl_link_spec sl_cost_ring_bottleneck(const sl_cluster *c, int p)
{
	struct ring_src s = {c, sl_cluster_config_of(c), 0, NULL};
	return bottleneck(&s, p, 0);
}

sl_link_spec sl_cost_ring_bottleneck_op(const sl_cluster *c, int p, sl_coll_op op, sl_algo a)
{
	struct ring_src s = {c, sl_cluster_config_of(c), 0, NULL};
	return bottleneck(&s, p, sl_coll_channels(op, a));
}

sl_link_spec sl_cost_ring_bottleneck_tuned(const sl_cluster *c, const int *ranks, int p,
                                           sl_coll_op op, sl_algo a)
{
	struct ring_src s = {c, sl_cluster_config_of(c), 1, ranks};
	return bottleneck(&s, p, sl_coll_channels(op, a));
}

sl_link_spec sl_cost_ring_bottleneck_cfg(const sl_cluster_config *cfg, int p, sl_coll_op op,
                                         sl_algo a)
{
	struct ring_src s = {NULL, cfg, 0, NULL};
	return bottleneck(&s, p, sl_coll_channels(op, a));
}
