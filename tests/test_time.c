/* SPDX-License-Identifier: MIT */
/* Emulated (model) times against closed forms computed here.
 *
 * Headless, model timing: every figure below is deterministic, so it is
 * asserted to 1e-12 relative.  The expected values come from the formulas in
 * the comments, never from src/engine/cost.c (which is itself checked
 * against them). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "coll.h"
#include "cost.h"
#include "trace.h"
#include "xfer.h"
#include "testutil.h"

#define REL 1e-12

/* ---- collectives ---- */

struct coll_job {
	sl_coll_op op;
	sl_algo algo;
	size_t count;
};

/* The group's ranks in this order when set (a ring that alternates nodes),
 * else 0, 1, ..., p-1. */
static const int *chan_order;

static int coll_prog(sl_dev *d, void *arg, sl_err *err)
{
	struct coll_job *j = arg;
	size_t bytes = j->count * sizeof(float);
	float *b = sl_dev_alloc(d, bytes, "buffer", err);
	if (!b)
		return err->code;
	for (size_t i = 0; i < j->count; i++)
		b[i] = tu_val(sl_dev_id(d), i);
	sl_group g = sl_group_all(sl_cluster_devices(sl_dev_cluster(d)));
	if (chan_order)
		memcpy(g.ranks, chan_order, (size_t)g.n * sizeof *g.ranks);
	int rc = sl_coll_run(d, &g, j->op, b, j->count, j->algo, err);
	sl_dev_free(d, b, bytes);
	return rc;
}

/* Run op on a one-node cluster and return the slowest device's clock;
 * with every_device, each device's clock must equal want. */
static double coll_time(int p, double a, double bw, size_t nbytes, sl_coll_op op, sl_algo algo,
                        double want, int every_device)
{
	sl_cluster *c = tu_cluster(p, bw, a);
	struct coll_job j = {op, algo, nbytes / sizeof(float)};
	sl_err err = {0};
	if (sl_cluster_run(c, coll_prog, &j, &err))
		fail_msg("%s p=%d: %s", sl_coll_op_name(op), p, err.msg);
	double tmax = 0;
	char what[160];
	for (int i = 0; i < p; i++) {
		double t = sl_cluster_dev_stats(c, i).clock;
		if (t > tmax)
			tmax = t;
		snprintf(what, sizeof what, "%s %s p=%d a=%g B=%g N=%zu: device %d's clock",
		         sl_coll_op_name(op), sl_algo_name(algo), p, a, bw, nbytes, i);
		if (every_device)
			tu_check_close(t, want, REL, what);
	}
	snprintf(what, sizeof what, "%s %s p=%d a=%g B=%g N=%zu: the slowest clock",
	         sl_coll_op_name(op), sl_algo_name(algo), p, a, bw, nbytes);
	if (!isnan(want))
		tu_check_close(tmax, want, REL, what);
	sl_cluster_destroy(c);
	return tmax;
}

static const int ps[] = {2, 3, 4, 8, 16};
static const double lats[] = {0, 1e-6, 50e-6};
static const double bws[] = {1e9, 450e9, 25e9};

#define LEN(a) (sizeof(a) / sizeof *(a))

/* Ring all-reduce: 2(p-1) steps, each moving N/p bytes on every link at
 * once, so 2(p-1)a + 2(p-1)/p N/B.  All-gather and reduce-scatter are one
 * of the two passes: (p-1)a + (p-1)/p N/B. */
static void ring_sweep(sl_coll_op op)
{
	for (size_t pi = 0; pi < LEN(ps); pi++)
		for (size_t ai = 0; ai < LEN(lats); ai++)
			for (size_t bi = 0; bi < LEN(bws); bi++) {
				int p = ps[pi];
				double a = lats[ai], bw = bws[bi];
				size_t sizes[] = {4 * (size_t)p, 4 * (size_t)p * 3,
				                  4 * (size_t)p * 1024};
				for (size_t si = 0; si < LEN(sizes); si++) {
					double n = (double)sizes[si], want;
					if (op == SL_COLL_ALLREDUCE)
						want =
						    2.0 * (p - 1) * a + 2.0 * (p - 1) / p * n / bw;
					else
						want = (p - 1) * a + (double)(p - 1) / p * n / bw;
					coll_time(p, a, bw, sizes[si], op, SL_ALGO_RING, want, 1);
					/* The analytic model states the same closed form. */
					tu_check_close(sl_cost_coll(op, SL_ALGO_RING, p, n, a, bw),
					               want, REL, "sl_cost_coll");
				}
			}
}

static void test_ring_allreduce(void **st)
{
	(void)st;
	ring_sweep(SL_COLL_ALLREDUCE);
	/* Blocks of several headless chunks (1 MiB each), and an odd p. */
	for (int p = 2; p <= 3; p++) {
		size_t n = 4 * (size_t)p * ((5u << 20) / 4 + 3);
		double a = 7e-6, bw = 30e9;
		coll_time(p, a, bw, n, SL_COLL_ALLREDUCE, SL_ALGO_RING,
		          2.0 * (p - 1) * a + 2.0 * (p - 1) / p * (double)n / bw, 1);
	}
}

static void test_ring_allgather(void **st)
{
	(void)st;
	ring_sweep(SL_COLL_ALLGATHER);
}

static void test_ring_reducescatter(void **st)
{
	(void)st;
	ring_sweep(SL_COLL_REDUCESCATTER);
}

/* Ring broadcast and reduce are a chain cut into k segments, pipelined:
 * k + p - 2 slots of a + N/(kB) each.  The engine takes the k with the
 * least time; found here by trying every k.  With free latency the chain
 * tends to one transfer of N: its bus bandwidth (factor 1) is B within 2%
 * for large N, as NCCL's pipelined ring reaches. */
static double chain_best(int p, double a, double bw, double n, int *kbest)
{
	double best = INFINITY;
	for (int k = 1; k <= SL_CHAIN_SEGMENTS_MAX && k <= n / 4; k++) {
		double t = (k + p - 2) * (a + n / k / bw);
		if (t < best) {
			best = t;
			*kbest = k;
		}
	}
	return best;
}

/* The chain's run against that form; when k does not divide the
 * elements the segments differ by one element, so a slot may take one
 * element's time more: at most k + p - 2 elements' time in all. */
static double chain_run(int p, double a, double bw, size_t nbytes, sl_coll_op op)
{
	int k = 1;
	double want = chain_best(p, a, bw, (double)nbytes, &k);
	double slack = (nbytes / 4) % (size_t)k ? (k + p - 2) * 4.0 / bw : 0;
	double got = coll_time(p, a, bw, nbytes, op, SL_ALGO_RING, NAN, 0);
	if (fabs(got - want) > slack + REL * want)
		fail_msg("%s ring p=%d a=%g B=%g N=%zu: %.12g s, want %.12g s (k=%d, slack %.3g s)",
		         sl_coll_op_name(op), p, a, bw, nbytes, got, want, k, slack);
	tu_check_close(sl_cost_coll(op, SL_ALGO_RING, p, (double)nbytes, a, bw), want, REL,
	               "sl_cost_coll, chain");
	return got;
}

static void test_ring_chain(void **st)
{
	(void)st;
	sl_coll_op ops[] = {SL_COLL_BROADCAST, SL_COLL_REDUCE};
	for (size_t oi = 0; oi < LEN(ops); oi++)
		for (size_t pi = 0; pi < LEN(ps); pi++)
			for (size_t ai = 0; ai < LEN(lats); ai++) {
				int p = ps[pi];
				double a = lats[ai], bw = bws[ai];
				size_t sizes[] = {4, 4 * (size_t)p * 3, (size_t)4 << 20};
				for (size_t si = 0; si < LEN(sizes); si++)
					chain_run(p, a, bw, sizes[si], ops[oi]);
			}
	/* Large N at a = 0 over 8 devices: busbw = N / t within 2% of B. */
	double n = 64.0 * (1 << 20), bw = 100e9;
	double t = chain_run(8, 0, bw, (size_t)n, SL_COLL_BROADCAST);
	double busbw = n / t * sl_busbw_factor(SL_COLL_BROADCAST, 8);
	if (busbw < 0.98 * bw)
		fail_msg("ring broadcast busbw %.4g is under 98%% of B = %.4g", busbw, bw);
}

/* Binomial trees for any p, on full links and on a ring: a device takes
 * one message at a time within a collective (its port), so a root whose
 * children arrive together still takes them in turn and the critical path
 * is every level's; on a ring the level pairing ranks mask apart crosses
 * min(mask, p - mask) links, a latency each.  With L = ceil(log2 p) levels
 * and H the latencies they cross: reduce and broadcast H a + L N/B,
 * all-reduce twice that, gather and scatter H a + (p-1)/p N/B, all-gather
 * and reduce-scatter (a gather or reduce-scatter of blocks, then a
 * broadcast) 2 H a + (p-1)/p N/B + L N/B.  The run and the model both. */
static void test_tree_any_p(void **st)
{
	(void)st;
	sl_coll_op ops[] = {SL_COLL_ALLREDUCE,    SL_COLL_BROADCAST, SL_COLL_REDUCE,
	                    SL_COLL_GATHER,       SL_COLL_SCATTER,   SL_COLL_ALLGATHER,
	                    SL_COLL_REDUCESCATTER};
	sl_topo topos[] = {SL_TOPO_FULL, SL_TOPO_RING};
	double a = 3e-6, bw = 50e9;
	for (size_t ti = 0; ti < LEN(topos); ti++)
		for (int p = 2; p <= 9; p++) {
			double L = 0, H = 0;
			for (int mask = 1; mask < p; mask <<= 1) {
				L += 1;
				H += topos[ti] == SL_TOPO_RING && p - mask < mask ? p - mask
				     : topos[ti] == SL_TOPO_RING                  ? mask
				                                                  : 1;
			}
			size_t count = (size_t)p * 5040;
			double n = 4.0 * (double)count;
			for (size_t oi = 0; oi < LEN(ops); oi++) {
				sl_coll_op op = ops[oi];
				double want = H * a + L * n / bw;
				if (op == SL_COLL_ALLREDUCE)
					want *= 2;
				else if (op == SL_COLL_GATHER || op == SL_COLL_SCATTER)
					want = H * a + (p - 1.0) / p * n / bw;
				else if (op == SL_COLL_ALLGATHER || op == SL_COLL_REDUCESCATTER)
					want = 2 * H * a + (p - 1.0) / p * n / bw + L * n / bw;
				sl_cluster_config cfg = tu_config(p, bw, a);
				cfg.topology = topos[ti];
				cfg.timing_only = 1;
				sl_cluster *c = tu_create(&cfg);
				tu_coll_job j = {op, SL_ALGO_TREE, count};
				sl_err err = {0};
				if (sl_cluster_run(c, tu_coll_prog, &j, &err))
					fail_msg("%s tree p=%d: %s", sl_coll_op_name(op), p,
					         err.msg);
				double t = 0;
				for (int i = 0; i < p; i++)
					if (sl_cluster_dev_stats(c, i).clock > t)
						t = sl_cluster_dev_stats(c, i).clock;
				sl_cluster_destroy(c);
				char what[120];
				snprintf(what, sizeof what, "%s tree p=%d on %s links: the run",
				         sl_coll_op_name(op), p,
				         topos[ti] == SL_TOPO_RING ? "ring" : "full");
				tu_check_close(t, want, REL, what);
				snprintf(what, sizeof what, "%s tree p=%d on %s links: the model",
				         sl_coll_op_name(op), p,
				         topos[ti] == SL_TOPO_RING ? "ring" : "full");
				tu_check_close(sl_cost_coll_terms(op, SL_ALGO_TREE, p, n, a, bw,
				                                  topos[ti], NULL, NULL),
				               want, REL, what);
				/* A gather's root takes every block in turn: busbw B at most. */
				if (op == SL_COLL_GATHER && n / t * (p - 1.0) / p > bw * (1 + REL))
					fail_msg("gather tree p=%d: busbw over B", p);
			}
			/* A pairwise all-to-all: step k pairs ranks k apart. */
			double A = 0;
			for (int k = 1; k < p; k++)
				A += topos[ti] == SL_TOPO_RING ? (k < p - k ? k : p - k) : 1;
			double want = A * a + (p - 1.0) * (n / p) / bw;
			sl_cluster_config cfg = tu_config(p, bw, a);
			cfg.topology = topos[ti];
			sl_cluster *c = tu_create(&cfg);
			double t = 0;
			struct coll_job j = {SL_COLL_ALLTOALL, SL_ALGO_RING, count};
			sl_err err = {0};
			if (sl_cluster_run(c, coll_prog, &j, &err))
				fail_msg("alltoall p=%d: %s", p, err.msg);
			for (int i = 0; i < p; i++)
				if (sl_cluster_dev_stats(c, i).clock > t)
					t = sl_cluster_dev_stats(c, i).clock;
			sl_cluster_destroy(c);
			tu_check_close(t, want, REL, "alltoall: the run");
			tu_check_close(sl_cost_coll_terms(SL_COLL_ALLTOALL, SL_ALGO_RING, p, n, a,
			                                  bw, topos[ti], NULL, NULL),
			               want, REL, "alltoall: the model");
		}
}

/* Binomial tree all-reduce at p = 2^L: a reduce of L whole-buffer steps,
 * then a broadcast of L more, each a + N/B on the critical path. */
static void test_tree_allreduce(void **st)
{
	(void)st;
	for (int L = 1; L <= 4; L++) {
		int p = 1 << L;
		double a = 2e-6, bw = 100e9, n = 4.0 * 1000;
		coll_time(p, a, bw, (size_t)n, SL_COLL_ALLREDUCE, SL_ALGO_TREE,
		          2.0 * L * (a + n / bw), 0);
	}
}

/* ---- point to point ---- */

struct p2p_job {
	size_t n;
	int sends;        /* back-to-back sends 0 -> 1 */
	double bw2, lat2; /* > 0: device 0 turns the link to these between sends */
	int by_class;     /* ... through sl_cluster_set_class instead of set_link */
	size_t n1, n2;    /* device 0 sends n1 to 1 and n2 to 2 in one sl_xfer */
};

static int p2p_prog(sl_dev *d, void *arg, sl_err *err)
{
	struct p2p_job *j = arg;
	int id = sl_dev_id(d), rc = SL_OK;
	char *buf = sl_dev_alloc(d, j->n ? j->n : 1, "buffer", err);
	if (!buf)
		return err->code;
	memset(buf, id, j->n ? j->n : 1);
	for (int s = 0; s < j->sends && rc == SL_OK; s++) {
		if (id == 0) {
			if (s == 1 && j->bw2 > 0) {
				if (j->by_class)
					sl_cluster_set_class(sl_dev_cluster(d), 0, j->bw2, j->lat2);
				else
					sl_cluster_set_link(sl_dev_cluster(d), 0, 1, j->bw2,
					                    j->lat2);
			}
			rc = sl_send(d, 1, buf, j->n, "send", err);
		} else if (id == 1) {
			rc = sl_recv(d, 0, buf, j->n, "recv", err);
		}
	}
	sl_dev_free(d, buf, j->n ? j->n : 1);
	return rc;
}

static sl_cluster *run_p2p(int p, double bw, double a, struct p2p_job *j)
{
	sl_cluster *c = tu_cluster(p, bw, a);
	sl_err err = {0};
	if (sl_cluster_run(c, p2p_prog, j, &err))
		fail_msg("p2p: %s", err.msg);
	return c;
}

/* One send of n bytes on a free link: a + n/B, for both ends. */
static void test_single_send(void **st)
{
	(void)st;
	size_t ns[] = {0, 1, 1000, 3 << 20};
	for (size_t ni = 0; ni < LEN(ns); ni++)
		for (size_t ai = 0; ai < LEN(lats); ai++)
			for (size_t bi = 0; bi < LEN(bws); bi++) {
				struct p2p_job j = {.n = ns[ni], .sends = 1};
				double a = lats[ai], bw = bws[bi], want = a + (double)ns[ni] / bw;
				sl_cluster *c = run_p2p(2, bw, a, &j);
				tu_check_close(sl_cluster_dev_stats(c, 0).clock, want, REL,
				               "sender's clock");
				tu_check_close(sl_cluster_dev_stats(c, 1).clock, want, REL,
				               "receiver's clock");
				sl_cluster_destroy(c);
			}
}

/* Two sends back to back on the same link: the second starts when the
 * sender is ready and the link is free, both at a + n/B: 2(a + n/B). */
static void test_back_to_back(void **st)
{
	(void)st;
	for (size_t ai = 0; ai < LEN(lats); ai++)
		for (size_t bi = 0; bi < LEN(bws); bi++) {
			struct p2p_job j = {.n = 65536, .sends = 2};
			double a = lats[ai], bw = bws[bi], want = 2 * (a + 65536.0 / bw);
			sl_cluster *c = run_p2p(2, bw, a, &j);
			tu_check_close(sl_cluster_dev_stats(c, 0).clock, want, REL,
			               "sender's clock");
			tu_check_close(sl_cluster_dev_stats(c, 1).clock, want, REL,
			               "receiver's clock");
			sl_cluster_destroy(c);
		}
}

/* A knob turned between two transfers: the second goes at the new figures,
 * (a1 + n/B1) + (a2 + n/B2), whether set on the link or on the class. */
static void test_bandwidth_change(void **st)
{
	(void)st;
	for (int by_class = 0; by_class <= 1; by_class++) {
		double a1 = 3e-6, b1 = 10e9, a2 = 40e-6, b2 = 2e9;
		struct p2p_job j = {
		    .n = 1 << 20, .sends = 2, .bw2 = b2, .lat2 = a2, .by_class = by_class};
		double want = (a1 + (double)j.n / b1) + (a2 + (double)j.n / b2);
		sl_cluster *c = run_p2p(2, b1, a1, &j);
		tu_check_close(sl_cluster_dev_stats(c, 1).clock, want, REL,
		               "after a bandwidth change");
		sl_cluster_destroy(c);
	}
}

/* Sends on different links in one sl_xfer run concurrently: the sender's
 * clock ends at the later one, a + max(n1, n2)/B, not the sum. */
static int fanout_prog(sl_dev *d, void *arg, sl_err *err)
{
	struct p2p_job *j = arg;
	int id = sl_dev_id(d);
	size_t mine = id == 0 ? j->n1 + j->n2 : id == 1 ? j->n1 : j->n2;
	char *buf = sl_dev_alloc(d, mine, "buffer", err);
	if (!buf)
		return err->code;
	memset(buf, id, mine);
	int rc;
	if (id == 0) {
		sl_msg m[2] = {sl_msg1(1, buf, 0, j->n1), sl_msg1(2, buf, j->n1, j->n2)};
		rc = sl_xfer(d, m, 2, NULL, 0, SL_XCOPY, "fan-out", err);
	} else {
		rc = sl_recv(d, 0, buf, mine, "recv", err);
	}
	sl_dev_free(d, buf, mine);
	return rc;
}

static void test_concurrent_links(void **st)
{
	(void)st;
	double a = 1e-6, bw = 25e9;
	struct p2p_job j = {.n1 = 1 << 20, .n2 = 3 << 20};
	sl_cluster *c = tu_cluster(3, bw, a);
	sl_err err = {0};
	if (sl_cluster_run(c, fanout_prog, &j, &err))
		fail_msg("fan-out: %s", err.msg);
	tu_check_close(sl_cluster_dev_stats(c, 0).clock, a + (double)j.n2 / bw, REL, "sender");
	tu_check_close(sl_cluster_dev_stats(c, 1).clock, a + (double)j.n1 / bw, REL, "device 1");
	tu_check_close(sl_cluster_dev_stats(c, 2).clock, a + (double)j.n2 / bw, REL, "device 2");
	sl_cluster_destroy(c);
}

/* ---- a device's ports ---- */

/* Exchanges given device by device: each posts its sends and takes its
 * receives in one sl_xfer. */
struct port_job {
	int ns[8], nr[8];
	int sp[8][2], rp[8][2];    /* peers */
	size_t sn[8][2], rn[8][2]; /* bytes */
};

static int port_prog(sl_dev *d, void *arg, sl_err *err)
{
	struct port_job *j = arg;
	int id = sl_dev_id(d);
	size_t total = 0;
	for (int k = 0; k < j->ns[id]; k++)
		total += j->sn[id][k];
	for (int k = 0; k < j->nr[id]; k++)
		total += j->rn[id][k];
	if (total == 0)
		return SL_OK;
	char *buf = sl_dev_alloc(d, total, "buffer", err);
	if (!buf)
		return err->code;
	memset(buf, id, total);
	sl_msg s[2], r[2];
	size_t off = 0;
	for (int k = 0; k < j->ns[id]; k++, off += j->sn[id][k - 1])
		s[k] = sl_msg1(j->sp[id][k], buf, off, j->sn[id][k]);
	for (int k = 0; k < j->nr[id]; k++, off += j->rn[id][k - 1])
		r[k] = sl_msg1(j->rp[id][k], buf, off, j->rn[id][k]);
	int rc = sl_xfer(d, s, j->ns[id], r, j->nr[id], SL_XCOPY, "ports", err);
	sl_dev_free(d, buf, total);
	return rc;
}

static void port_add(struct port_job *j, int from, int to, size_t n)
{
	j->sp[from][j->ns[from]] = to;
	j->sn[from][j->ns[from]++] = n;
	j->rp[to][j->nr[to]] = from;
	j->rn[to][j->nr[to]++] = n;
}

/* Six devices in nodes of two, inside a node bi and ai, between nodes bx
 * and ax; returns the cluster after the run, for its clocks. */
static sl_cluster *port_run(struct port_job *j, sl_efficiency eff)
{
	sl_cluster_config cfg = tu_config(6, 450e9, 1e-6);
	cfg.devices_per_node = 2;
	cfg.inter.bandwidth = 25e9;
	cfg.inter.latency = 5e-6;
	cfg.efficiency = eff;
	sl_cluster *c = tu_create(&cfg);
	sl_err err = {0};
	if (sl_cluster_run(c, port_prog, j, &err))
		fail_msg("ports: %s", err.msg);
	return c;
}

/* On the realistic machine a device has one port inside its node and one
 * adapter to other nodes, each carrying one link's bandwidth in all: the
 * k transfers of an exchange through one port run at B/k each, their
 * receiver's count binding as well as their sender's.  Transfers through
 * different ports, and the ideal machine's, run at B each
 * (test_concurrent_links). */
static void test_shared_ports(void **st)
{
	(void)st;
	double ai = 1e-6, bi = 450e9, ax = 5e-6, bx = 25e9, n1 = 1 << 20, n2 = 3 << 20;
	/* device 0 sends to two other nodes at once: one adapter */
	struct port_job j = {0};
	port_add(&j, 0, 2, (size_t)n1);
	port_add(&j, 0, 4, (size_t)n2);
	sl_cluster *c = port_run(&j, SL_EFF_REALISTIC);
	tu_check_close(sl_cluster_dev_stats(c, 2).clock, ax + 2 * n1 / bx, REL, "fan-out: 2");
	tu_check_close(sl_cluster_dev_stats(c, 4).clock, ax + 2 * n2 / bx, REL, "fan-out: 4");
	tu_check_close(sl_cluster_dev_stats(c, 0).clock, ax + 2 * n2 / bx, REL, "fan-out: 0");
	sl_cluster_destroy(c);
	c = port_run(&j, SL_EFF_IDEAL);
	tu_check_close(sl_cluster_dev_stats(c, 0).clock, ax + n2 / bx, REL, "ideal fan-out");
	sl_cluster_destroy(c);

	/* one send inside the node, one to another: two ports */
	memset(&j, 0, sizeof j);
	port_add(&j, 0, 1, (size_t)n1);
	port_add(&j, 0, 2, (size_t)n2);
	c = port_run(&j, SL_EFF_REALISTIC);
	tu_check_close(sl_cluster_dev_stats(c, 1).clock, ai + n1 / bi, REL, "two ports: 1");
	tu_check_close(sl_cluster_dev_stats(c, 2).clock, ax + n2 / bx, REL, "two ports: 2");
	sl_cluster_destroy(c);

	/* device 5 takes from two other nodes at once: each sender has one
	 * message, the receiver's adapter is shared */
	memset(&j, 0, sizeof j);
	port_add(&j, 1, 5, (size_t)n1);
	port_add(&j, 3, 5, (size_t)n2);
	c = port_run(&j, SL_EFF_REALISTIC);
	tu_check_close(sl_cluster_dev_stats(c, 1).clock, ax + 2 * n1 / bx, REL, "fan-in: 1");
	tu_check_close(sl_cluster_dev_stats(c, 3).clock, ax + 2 * n2 / bx, REL, "fan-in: 3");
	tu_check_close(sl_cluster_dev_stats(c, 5).clock, ax + 2 * n2 / bx, REL, "fan-in: 5");
	sl_cluster_destroy(c);
	c = port_run(&j, SL_EFF_IDEAL);
	tu_check_close(sl_cluster_dev_stats(c, 5).clock, ax + n2 / bx, REL, "ideal fan-in");
	sl_cluster_destroy(c);

	/* a pipeline's steady exchange: 2 sends to 0 and 4 and takes from
	 * both, each through its adapter with another transfer */
	memset(&j, 0, sizeof j);
	port_add(&j, 2, 4, (size_t)n1);
	port_add(&j, 2, 0, (size_t)n1);
	port_add(&j, 4, 2, (size_t)n1);
	port_add(&j, 0, 2, (size_t)n1);
	c = port_run(&j, SL_EFF_REALISTIC);
	for (int d = 0; d < 6; d += 2)
		tu_check_close(sl_cluster_dev_stats(c, d).clock, ax + 2 * n1 / bx, REL,
		               "both ways");
	sl_cluster_destroy(c);

	/* the rule by itself */
	sl_cluster_config cfg = tu_config(6, 450e9, 1e-6);
	cfg.devices_per_node = 2;
	cfg.efficiency = SL_EFF_REALISTIC;
	const int peers[3] = {1, 2, 4};
	assert_int_equal(sl_port_share(&cfg, 0, peers, 3, 0), 1);
	assert_int_equal(sl_port_share(&cfg, 0, peers, 3, 1), 2);
	assert_int_equal(sl_port_share(&cfg, 0, peers, 3, 2), 2);
	cfg.efficiency = SL_EFF_IDEAL;
	assert_int_equal(sl_port_share(&cfg, 0, peers, 3, 1), 1);
	/* the ring topology: a link to each neighbour, no switch port */
	cfg = tu_config(6, 450e9, 1e-6);
	cfg.topology = SL_TOPO_RING;
	cfg.efficiency = SL_EFF_REALISTIC;
	assert_int_equal(sl_port_share(&cfg, 0, peers, 3, 1), 1);
}

/* ---- compute ---- */

struct gemm_job {
	int m, n, k;
	double extra_flops;
};

static int gemm_prog(sl_dev *d, void *arg, sl_err *err)
{
	struct gemm_job *j = arg;
	size_t sa = (size_t)j->m * j->k, sb = (size_t)j->k * j->n, sc = (size_t)j->m * j->n;
	float *a = calloc(sa + sb + sc, sizeof *a);
	if (!a)
		return sl_fail(err, SL_ENOMEM, "host memory");
	int rc = sl_dev_sgemm(d, 0, 0, j->m, j->n, j->k, 1.0f, a, j->k, a + sa, j->n, 0.0f,
	                      a + sa + sb, j->n, "sgemm", err);
	if (rc == SL_OK && j->extra_flops > 0)
		rc = sl_dev_compute(d, j->extra_flops, sl_dev_cpu_mark(), "elementwise", err);
	free(a);
	return rc;
}

/* One sl_dev_sgemm advances the clock by 2mnk/F, on every device alike;
 * element-wise work by flops/F. */
static void test_compute(void **st)
{
	(void)st;
	const double rates[] = {1e9, 989e12, 2.5e12};
	const int shapes[][3] = {{1, 1, 1}, {64, 48, 32}, {7, 129, 3}};
	for (size_t ri = 0; ri < LEN(rates); ri++)
		for (size_t si = 0; si < LEN(shapes); si++) {
			sl_cluster_config cfg = tu_config(3, 100e9, 1e-6);
			cfg.flops = rates[ri];
			sl_cluster *c = tu_create(&cfg);
			struct gemm_job j = {shapes[si][0], shapes[si][1], shapes[si][2], 12345};
			sl_err err = {0};
			if (sl_cluster_run(c, gemm_prog, &j, &err))
				fail_msg("gemm: %s", err.msg);
			double f = 2.0 * j.m * j.n * j.k;
			/* The sgemm alone, as its trace event shows it. */
			sl_snapshot snap;
			assert_int_equal(sl_trace_snapshot(sl_cluster_trace(c), &snap), SL_OK);
			int seen = 0;
			for (size_t e = 0; e < snap.n; e++)
				if (snap.ev[e].kind == SL_EV_COMPUTE &&
				    strcmp(snap.ev[e].label, "sgemm") == 0) {
					seen++;
					assert_true(snap.ev[e].t0 == 0);
					tu_check_close(snap.ev[e].t1, f / rates[ri], REL,
					               "one sgemm: 2mnk/F");
					tu_check_close(snap.ev[e].flops, f, REL,
					               "one sgemm's flops");
				}
			assert_int_equal(seen, 3);
			sl_snapshot_free(&snap);
			for (int i = 0; i < 3; i++) {
				sl_dev_stats s = sl_cluster_dev_stats(c, i);
				tu_check_close(s.clock, (f + j.extra_flops) / rates[ri], REL,
				               "clock");
				tu_check_close(s.compute_s, (f + j.extra_flops) / rates[ri], REL,
				               "compute_s");
				tu_check_close(s.flops, f + j.extra_flops, REL, "flops");
			}
			sl_cluster_destroy(c);
		}
}

/* ---- two nodes ---- */

/* A ring over nodes of G devices crosses the inter-node link twice per
 * lap (G-1 -> G and p-1 -> 0).  Let di = ai + N/(p Bi) and dx = ax + N/(p Bx)
 * be one step on an intra-node and an inter-node link, dx > di.  A device's
 * clock after step s is the later of its own send (its clock + the step
 * time of its outgoing link) and the receive from its predecessor (the
 * predecessor's clock + that link's step time).  A device whose outgoing
 * link leaves the node therefore ends every step dx later: after the
 * 2(p-1) steps of an all-reduce it reads 2(p-1) dx, and that is the run's
 * time.  With G = 2 every device has a slow link on one side and all read
 * 2(p-1) dx.  With G = 4, p = 8 the devices 1 and 5 follow device 0/4 one
 * fast step behind (13 dx + di), devices 2 and 6 two (12 dx + 2 di). */
static void two_node_case(int p, int g, const double *want_of_dev)
{
	double ai = 1e-6, bi = 450e9, ax = 5e-6, bx = 25e9;
	sl_cluster_config cfg = tu_config(p, bi, ai);
	cfg.devices_per_node = g;
	cfg.inter.bandwidth = bx;
	cfg.inter.latency = ax;
	sl_cluster *c = tu_create(&cfg);
	struct coll_job j = {SL_COLL_ALLREDUCE, SL_ALGO_RING, (size_t)p * 8192};
	sl_err err = {0};
	if (sl_cluster_run(c, coll_prog, &j, &err))
		fail_msg("two nodes: %s", err.msg);
	double tmax = 0;
	for (int i = 0; i < p; i++) {
		char what[80];
		snprintf(what, sizeof what, "p=%d G=%d: device %d's clock", p, g, i);
		double t = sl_cluster_dev_stats(c, i).clock;
		tu_check_close(t, want_of_dev[i], REL, what);
		if (t > tmax)
			tmax = t;
	}
	double n = (double)j.count * sizeof(float);
	tu_check_close(tmax, 2.0 * (p - 1) * (ax + n / p / bx), REL, "two nodes: the run's time");
	sl_cluster_destroy(c);
}

static void test_two_nodes(void **st)
{
	(void)st;
	double ai = 1e-6, bi = 450e9, ax = 5e-6, bx = 25e9;
	double want[8];

	int p = 4;
	double blk = 8192.0 * sizeof(float); /* N/p bytes */
	double dx = ax + blk / bx;
	for (int i = 0; i < p; i++)
		want[i] = 2.0 * (p - 1) * dx;
	two_node_case(4, 2, want);

	p = 8;
	double di = ai + blk / bi;
	dx = ax + blk / bx;
	for (int i = 0; i < p; i++) {
		int behind = i % 4 == 1 ? 1 : i % 4 == 2 ? 2 : 0;
		want[i] = (2.0 * (p - 1) - behind) * dx + behind * di;
	}
	two_node_case(8, 4, want);
}

/* NCCL's channels (sl_ring_stripes), on the realistic machine: a ring whose
 * members on each node are one run crosses between nodes on k adapters at
 * once, k the members a node, so its inter-node step is ax + N/(p k Bx),
 * with k Bx at most the intra-node Bi.  That step stays the slowest here,
 * so by test_two_nodes' argument the all-reduce takes 2(p-1) of it.  A ring
 * whose members alternate nodes has no run to stripe: 2(p-1)(ax + N/(p Bx)).
 * The ideal machine keeps the textbook ring (test_two_nodes). */
static double channels_case(int p, int g, double bx, const int *order, sl_coll_op op)
{
	double ai = 1e-6, bi = 450e9, ax = 5e-6;
	sl_cluster_config cfg = tu_config(p, bi, ai);
	cfg.devices_per_node = g;
	cfg.inter.bandwidth = bx;
	cfg.inter.latency = ax;
	cfg.efficiency = SL_EFF_REALISTIC;
	sl_cluster *c = tu_create(&cfg);
	struct coll_job j = {op, SL_ALGO_RING, (size_t)p * 8192};
	sl_err err = {0};
	chan_order = order;
	if (sl_cluster_run(c, coll_prog, &j, &err))
		fail_msg("channels: %s", err.msg);
	chan_order = NULL;
	double tmax = 0;
	for (int i = 0; i < p; i++)
		tmax = fmax(tmax, sl_cluster_dev_stats(c, i).clock);
	if (!order) {
		/* the prediction's bottleneck is the striped hop */
		sl_link_spec bn = sl_cost_ring_bottleneck_op(c, p, op, SL_ALGO_RING);
		double k = fmin((double)g, bi / bx);
		tu_check_close(bn.bandwidth, k * bx, REL, "channels: the striped bottleneck");
		tu_check_close(sl_cost_ring_bottleneck(c, p).bandwidth, bx, REL,
		               "channels: the plain bottleneck");
	}
	sl_cluster_destroy(c);
	return tmax;
}

static void test_two_nodes_channels(void **st)
{
	(void)st;
	double ax = 5e-6, blk = 8192.0 * sizeof(float); /* N/p bytes */
	/* 8 devices, nodes of 4, 25 GB/s adapters: 4 of them, 100 GB/s */
	tu_check_close(channels_case(8, 4, 25e9, NULL, SL_COLL_ALLREDUCE),
	               2.0 * 7 * (ax + blk / (4 * 25e9)), REL, "p=8 G=4: all-reduce");
	tu_check_close(channels_case(8, 4, 25e9, NULL, SL_COLL_ALLGATHER),
	               7 * (ax + blk / (4 * 25e9)), REL, "p=8 G=4: all-gather");
	tu_check_close(channels_case(8, 4, 25e9, NULL, SL_COLL_REDUCESCATTER),
	               7 * (ax + blk / (4 * 25e9)), REL, "p=8 G=4: reduce-scatter");
	/* 16 devices, nodes of 8, 100 GB/s adapters: 800 GB/s capped at 450 */
	tu_check_close(channels_case(16, 8, 100e9, NULL, SL_COLL_ALLREDUCE),
	               2.0 * 15 * (ax + blk / 450e9), REL, "p=16 G=8: all-reduce");
	/* members alternating between the two nodes: no runs, one adapter */
	static const int alt[8] = {0, 4, 1, 5, 2, 6, 3, 7};
	tu_check_close(channels_case(8, 4, 25e9, alt, SL_COLL_ALLREDUCE),
	               2.0 * 7 * (ax + blk / 25e9), REL, "p=8 G=4 alternating: all-reduce");
	/* sl_ring_stripes by itself: the smaller run sets k */
	sl_cluster_config cfg = tu_config(6, 450e9, 1e-6);
	cfg.devices_per_node = 4;
	cfg.inter.bandwidth = 25e9;
	cfg.efficiency = SL_EFF_REALISTIC;
	tu_check_close(sl_ring_stripes(&cfg, NULL, 6, 3), 2, REL, "runs of 4 and 2");
	tu_check_close(sl_ring_stripes(&cfg, NULL, 6, 0), 1, REL, "a hop inside a node");
	cfg.efficiency = SL_EFF_IDEAL;
	tu_check_close(sl_ring_stripes(&cfg, NULL, 6, 3), 1, REL, "the ideal machine");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_ring_allreduce),     cmocka_unit_test(test_ring_allgather),
	    cmocka_unit_test(test_ring_reducescatter), cmocka_unit_test(test_ring_chain),
	    cmocka_unit_test(test_tree_allreduce),     cmocka_unit_test(test_tree_any_p),
	    cmocka_unit_test(test_single_send),        cmocka_unit_test(test_back_to_back),
	    cmocka_unit_test(test_bandwidth_change),   cmocka_unit_test(test_concurrent_links),
	    cmocka_unit_test(test_shared_ports),       cmocka_unit_test(test_compute),
	    cmocka_unit_test(test_two_nodes),          cmocka_unit_test(test_two_nodes_channels),
	};
	return cmocka_run_group_tests_name("model time", tests, NULL, NULL);
}
