/* SPDX-License-Identifier: MIT */
/* coll_algo.h - the table of collective algorithms: a row of data and
 * functions per sl_algo (ring, tree), after nvtop's `gpu_vendor`.  The
 * engine walks a row's schedule (coll.c), the predictions take its closed
 * form and what it does across nodes (cost.c, train_est.c), the screen its
 * words (sentence.c).  A new algorithm is a row here and a value of sl_algo
 * (coll.h); nothing else tests which algorithm it holds. */
#ifndef SL_COLL_ALGO_H
#define SL_COLL_ALGO_H

#include <stddef.h>

#include "cluster.h"
#include "coll.h"

struct sl_coll_ctx; /* coll_internal.h: one collective call as a rank sees it */

/* The links of a group by rank: from rank `from` to rank `to`. */
typedef sl_link_spec (*sl_group_link_fn)(void *arg, int from, int to);

typedef struct sl_algo_ops {
	const char *name;      /* what --algorithm takes; traces and sentences say it */
	const char *step_word; /* what a sentence calls one of its logical steps */
	int quiet; /* the default: a sentence of a two-part collective does not name it */

	/* The schedule: op's exchanges as one rank of the group makes them, the
	 * blocks each moves and the logical step of each (sl_ev_coll), called
	 * with p > 1; NULL for alltoall and sendrecv, which are pairwise
	 * whatever the algorithm (coll.c). */
	int (*walk[SL_COLL_NOPS])(struct sl_coll_ctx *x, size_t count);
	/* Ops (bits 1 << op) that run as two parts of nsteps / 2 logical steps
	 * each (a ring all-reduce's reduce-scatter and all-gather). */
	unsigned two_parts;
	/* Phases (bits 1 << sl_coll_phase) in which every member sends one
	 * block to the next member and takes one from the previous. */
	unsigned neighbour_phases;

	/* Across nodes: ops (bits 1 << op) that NCCL runs on channels, whose
	 * hops between nodes are striped over the nodes' adapters
	 * (sl_ring_stripes), in the engine and every prediction alike. */
	unsigned channels;
	/* The training replay (train_est.c) steps through its exchanges as a
	 * ring's, member by member, and lets a replica's ranks stand for
	 * another's; 0: it takes time_on. */
	int ring_replay;

	/* The closed form (alpha-beta) of op over p devices on links of latency
	 * a and bandwidth b, `bytes` the whole buffer, k the segments of a
	 * pipelined chain (sl_chain_segments), on topology topo (a ring's pairs
	 * d apart are min(d, p - d) latencies); p > 1, every op but alltoall
	 * and sendrecv (cost.c). */
	double (*time)(sl_coll_op op, int p, double bytes, double a, double b, double k,
	               sl_topo topo);
	/* The same on the group's own links, link(arg, from, to) by rank, with
	 * bw the slowest bandwidth the caller already knows on the group's ring
	 * (INFINITY: none); NULL for a row with ring_replay. */
	double (*time_on)(sl_coll_op op, int p, double bytes, double bw, sl_group_link_fn link,
	                  void *arg);
	/* NCCL-tests' bus-bandwidth factor: busbw = algbw * factor. */
	double (*busbw)(sl_coll_op op, int p);
} sl_algo_ops;

/* The row of a, or NULL for none. */
const sl_algo_ops *sl_algo_ops_of(sl_algo a);
/* The algorithm after a in the table, the first after the last (a key
 * that switches between them). */
sl_algo sl_algo_next(sl_algo a);
/* The names in the table's order, parted by sep ("ring, tree" with ", "),
 * into buf of n bytes (truncated, always terminated when n > 0); returns
 * buf. */
char *sl_algo_list(char *buf, size_t n, const char *sep);

#endif
