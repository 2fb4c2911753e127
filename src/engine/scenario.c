/* SPDX-License-Identifier: MIT */
#include "scenario.h"

#include <stdio.h>
#include <string.h>

#include "preset.h"

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
	sl_cluster_config cfg = s->cluster;
	if (s->gemm.split == SL_SPLIT_SINGLE) {
		cfg.devices = 1;
		cfg.devices_per_node = 0;
	}
	int rc = sl_gemm_check(&s->gemm, cfg.devices, err);
	if (rc)
		return rc;
	sl_cluster *c = sl_cluster_create(&cfg, err);
	if (!c)
		return err ? err->code : SL_EINVAL;
	rc = sl_gemm_run(c, &s->gemm, res, err);
	if (out)
		*out = c;
	else
		sl_cluster_destroy(c);
	return rc;
}
