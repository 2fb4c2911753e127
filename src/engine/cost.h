/* SPDX-License-Identifier: MIT */
/* cost.h - the analytic (alpha-beta) model, shown beside what the emulation
 * measured.  Closed forms for even splits. */
#ifndef SL_COST_H
#define SL_COST_H

#include <stddef.h>

#include "cluster.h"
#include "coll.h"

/* Predicted time of a collective of `bytes` (the whole buffer) over p
 * devices on links of latency a and bandwidth b. */
double sl_cost_coll(sl_coll_op op, sl_algo algo, int p, double bytes, double a, double b);
/* NCCL-tests bus-bandwidth factor: busbw = algbw * factor. */
double sl_busbw_factor(sl_coll_op op, int p);
/* The slowest link a ring over devices 0..p-1 of c crosses. */
sl_link_spec sl_cost_ring_bottleneck(const sl_cluster *c, int p);

#endif
