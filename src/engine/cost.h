/* SPDX-License-Identifier: MIT */
/* cost.h - the analytic (alpha-beta) model, shown beside what the emulation
 * measured.  Closed forms for even splits. */
#ifndef SL_COST_H
#define SL_COST_H

#include <stddef.h>

#include "cluster.h"
#include "coll.h"

/* Predicted time of a collective of `bytes` (the whole buffer) over p
 * devices on links of latency a and bandwidth b: its algorithm's closed form
 * (coll_algo.h), all-to-all and send/receive pairwise whatever the
 * algorithm. */
double sl_cost_coll(sl_coll_op op, sl_algo algo, int p, double bytes, double a, double b);
/* The same on a topology: on SL_TOPO_RING a binomial tree's pair at
 * distance d crosses min(d, p - d) ring links, a latency each; with its
 * latency and bandwidth terms (either may be NULL), a chain's segments
 * chosen once from a and b for both. */
double sl_cost_coll_terms(sl_coll_op op, sl_algo algo, int p, double bytes, double a, double b,
                          sl_topo topo, double *lat, double *bw);
/* Most segments a pipelined chain cuts a message into. */
#define SL_CHAIN_SEGMENTS_MAX 1024
/* The segments of a ring (chain) broadcast or reduce of `bytes` in `elems`
 * elements over p devices: the k that minimises the chain's time
 * (k + p - 2)(a + bytes / (k b)), the integer on one side or the other of
 * sqrt((p - 2) bytes / (a b)), within 1 .. min(elems, SL_CHAIN_SEGMENTS_MAX).  Free latency
 * takes the most segments: the chain's time tends to bytes / b. */
int sl_chain_segments(int p, double elems, double bytes, double a, double b);
/* NCCL-tests bus-bandwidth factor: busbw = algbw * factor.  NCCL-tests
 * defines it by the op, whatever the algorithm; every row of the table
 * (coll_algo.h) takes it. */
double sl_busbw_factor(sl_coll_op op, int p);
/* The slowest link a ring over devices 0..p-1 of c crosses. */
sl_link_spec sl_cost_ring_bottleneck(const sl_cluster *c, int p);
/* The same for collective op under algorithm a: the hops NCCL's channels
 * stripe across nodes (sl_coll_channels, sl_ring_stripes) at their striped
 * bandwidth, as the engine runs them. */
sl_link_spec sl_cost_ring_bottleneck_op(const sl_cluster *c, int p, sl_coll_op op, sl_algo a);
/* The same over ranks[0..p) of c (NULL: devices 0..p-1) at the figures its
 * links had when the run started (sl_cluster_link_tuned), as the engine
 * cuts a pipelined chain's segments by it. */
sl_link_spec sl_cost_ring_bottleneck_tuned(const sl_cluster *c, const int *ranks, int p,
                                           sl_coll_op op, sl_algo a);
/* The same over devices 0..p-1 of a cluster configured as cfg, from its
 * links' classes (intra, inter; hops on a ring topology), with no cluster:
 * the sandbox's curves. */
sl_link_spec sl_cost_ring_bottleneck_cfg(const sl_cluster_config *cfg, int p, sl_coll_op op,
                                         sl_algo a);

#endif
