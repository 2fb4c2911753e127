/* SPDX-License-Identifier: MIT */
#include "scenario.h"

#include <stdio.h>
#include <string.h>

#include "preset.h"
#include "workload.h"

void sl_scenario_default(sl_scenario *s)
{
	memset(s, 0, sizeof *s);
	snprintf(s->preset, sizeof s->preset, "%s", SL_PRESET_DEFAULT);
	sl_cluster_config_default(&s->cluster);
	s->gemm.split = SL_SPLIT_COL;
	s->gemm.m = 1024;
	s->gemm.k = 4096;
	s->gemm.n = 4096;
	s->gemm.algo = SL_ALGO_RING;
	s->gemm.seed = 1;
}

int sl_scenario_run(const sl_scenario *s, sl_cluster **out, sl_gemm_result *res, sl_err *err)
{
	sl_workload w = sl_workload_product(&s->gemm);
	sl_wl_result r;
	memset(&r, 0, sizeof r);
	int rc = sl_workload_run(&w, &s->cluster, out, &r, err);
	if (res)
		*res = r.gemm;
	return rc;
}
