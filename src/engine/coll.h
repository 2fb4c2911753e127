/* SPDX-License-Identifier: MIT */
/* coll.h - collectives over a group of devices, built from transfers.
 *
 * Every device of the group calls the same collective with the same
 * arguments (its own buffer).  Buffers hold fp32 elements; counts are in
 * elements.  Where a collective splits the buffer into one block per rank,
 * counts[r] gives rank r's block (NULL: an even split, the first N % p ranks
 * one element larger).  Time comes from the transfers the algorithm makes. */
#ifndef SL_COLL_H
#define SL_COLL_H

#include <stddef.h>

#include "cluster.h"

typedef enum sl_coll_op {
	SL_COLL_ALLREDUCE,
	SL_COLL_ALLGATHER,
	SL_COLL_REDUCESCATTER,
	SL_COLL_BROADCAST,
	SL_COLL_REDUCE,
	SL_COLL_GATHER,
	SL_COLL_SCATTER,
	SL_COLL_ALLTOALL, /* block b of rank r to block r of rank b */
	SL_COLL_SENDRECV, /* the whole buffer to the next rank, from the previous */
	SL_COLL_NOPS
} sl_coll_op;

/* Each a row of coll_algo.c's table (coll_algo.h), in this order. */
typedef enum sl_algo {
	SL_ALGO_RING, /* bandwidth-optimal; the default */
	SL_ALGO_TREE, /* binomial trees: log2(p) latency terms */
	SL_ALGO_NALGOS
} sl_algo;

typedef struct sl_group {
	int n;
	int ranks[SL_MAX_DEVICES]; /* device ids in rank order */
} sl_group;

/* All devices of the cluster, in id order. */
sl_group sl_group_all(int ndev);
/* The rank of device id in g, or -1. */
int sl_group_rank(const sl_group *g, int dev);

const char *sl_coll_op_name(sl_coll_op op);
const char *sl_algo_name(sl_algo a);
int sl_coll_op_parse(const char *s, sl_coll_op *op);
int sl_algo_parse(const char *s, sl_algo *a);
/* The algorithms' names come from their rows.  Whether NCCL runs op under
 * a on its channels, so that a ring's hops between nodes are striped over
 * adapters (sl_ring_stripes): the row's `channels` (the ring all-reduce,
 * reduce-scatter and all-gather, and the pipelined chains of broadcast and
 * reduce). */
int sl_coll_channels(sl_coll_op op, sl_algo a);

/* Block partition of n elements into p blocks: offsets[0..p]. */
void sl_block_offsets(size_t n, int p, const size_t *counts, size_t *offsets);

/* In place on buf[count]. */
int sl_allreduce(sl_dev *d, const sl_group *g, float *buf, size_t count, sl_algo a, sl_err *err);
/* Rank r supplies block r of buf; on return every rank has all blocks. */
int sl_allgather(sl_dev *d, const sl_group *g, float *buf, size_t count, const size_t *counts,
                 sl_algo a, sl_err *err);
/* On return block r of rank r's buf holds the sum of everyone's block r;
 * the other blocks are scratch. */
int sl_reducescatter(sl_dev *d, const sl_group *g, float *buf, size_t count, const size_t *counts,
                     sl_algo a, sl_err *err);
/* Root's buf to everyone. */
int sl_broadcast(sl_dev *d, const sl_group *g, float *buf, size_t count, int root, sl_algo a,
                 sl_err *err);
/* Sum on root; other ranks' buffers are scratch. */
int sl_reduce(sl_dev *d, const sl_group *g, float *buf, size_t count, int root, sl_algo a,
              sl_err *err);
/* Block r of rank r to block r of root's buf. */
int sl_gather(sl_dev *d, const sl_group *g, float *buf, size_t count, const size_t *counts,
              int root, sl_algo a, sl_err *err);
/* Block r of root's buf to block r of rank r's buf. */
int sl_scatter(sl_dev *d, const sl_group *g, float *buf, size_t count, const size_t *counts,
               int root, sl_algo a, sl_err *err);

/* Out of place: recv's block b is rank b's send block r, blocks of
 * q = count / p elements (the count % p elements past p q are not sent).
 * Pairwise: in step s rank r sends to r + s and receives from r - s, so it
 * takes (p-1)(a + q F / B) on uniform links, whatever the algorithm. */
int sl_alltoall(sl_dev *d, const sl_group *g, const float *send, float *recv, size_t count,
                sl_algo a, sl_err *err);
/* Out of place: send (count elements) to rank r + 1, recv from rank r - 1,
 * in one exchange (nccl-tests' sendrecv): a + N / B. */
int sl_sendrecv(sl_dev *d, const sl_group *g, const float *send, float *recv, size_t count,
                sl_err *err);

/* Dispatch by op (root is rank 0 where one is needed), in place on buf:
 * alltoall and sendrecv receive into a scratch buffer of count elements
 * the device allocates (accounted as "the collective's receive buffer")
 * and copy it back. */
int sl_coll_run(sl_dev *d, const sl_group *g, sl_coll_op op, float *buf, size_t count, sl_algo a,
                sl_err *err);
/* The same out of place where the op has such a form (alltoall, sendrecv);
 * for the others recv must be send (or NULL in timing-only runs). */
int sl_coll_run2(sl_dev *d, const sl_group *g, sl_coll_op op, const float *send, float *recv,
                 size_t count, sl_algo a, sl_err *err);

#endif
