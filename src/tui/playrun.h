/* SPDX-License-Identifier: MIT */
/* playrun.h - the runs a play is made of (playrun.c): the scenario or the
 * training step run headless, and the analytic model; what play.c's state
 * machine needs of them.  Only play.c and playrun.c include it. */
#ifndef SL_PLAYRUN_H
#define SL_PLAYRUN_H

#include "play.h"

/* The cluster w (NULL: sc's product) runs on. */
sl_cluster_config sl_playrun_cluster_cfg(const sl_scenario *sc, const sl_workload *w);
void sl_playrun_info_fill(sl_run_info *info, sl_cluster *c, int rc, const sl_err *err);
void sl_playrun_info_result(sl_run_info *info, const sl_wl_result *r);
int sl_playrun_run(const sl_scenario *sc, const sl_workload *w, const sl_link_spec *links,
                   sl_run_info *info, sl_publish_fn publish, void *ctx);
double sl_playrun_predict_with(const sl_scenario *sc, sl_link_spec bn);

#endif
