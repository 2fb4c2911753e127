/* SPDX-License-Identifier: MIT */
/* scenario.h - one complete thing to run: a cluster and a workload.
 *
 * The command line fills it from options, the TUI and lessons from their own
 * controls; both hand it to the same engine calls, so they show the same
 * numbers. */
#ifndef SL_SCENARIO_H
#define SL_SCENARIO_H

#include "cluster.h"
#include "gemm.h"

typedef struct sl_scenario {
	char preset[32]; /* the preset the figures came from ("" if custom) */
	sl_cluster_config cluster;
	sl_gemm_spec gemm;
} sl_scenario;

/* 4 devices on one h100 node, a column-wise 1024 x 4096 x 4096 product. */
void sl_scenario_default(sl_scenario *s);

/* Build the cluster the scenario needs (1 device for the single strategy) and
 * run it. */
int sl_scenario_run(const sl_scenario *s, sl_cluster **out_cluster, sl_gemm_result *res,
                    sl_err *err);

#endif
