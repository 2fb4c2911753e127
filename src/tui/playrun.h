/* SPDX-License-Identifier: MIT */
/* playrun.h - the runs a play is made of (playrun.c): the scenario or the
 * training step run headless, and the analytic model; what play.c's state
 * machine needs of them.  Only play.c and playrun.c include it. */
#ifndef SL_PLAYRUN_H
#define SL_PLAYRUN_H

#include "play.h"

sl_cluster_config sl_playrun_cluster_cfg(const sl_scenario *sc);
void sl_playrun_info_fill(sl_run_info *info, sl_cluster *c, int rc, const sl_err *err);
int sl_playrun_train_step(sl_cluster *c, const sl_play_train *tr, sl_train_report *rep, double *loss, sl_train_prediction *pred, double *single, sl_err *err);
int sl_playrun_run(const sl_scenario *sc, const sl_play_train *tr, const sl_link_spec *links, sl_run_info *info, sl_publish_fn publish, void *ctx);
double sl_playrun_predict_with(const sl_scenario *sc, sl_link_spec bn);

#endif
