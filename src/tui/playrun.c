/* SPDX-License-Identifier: MIT */
/* playrun.c - the runs behind a play: the scenario, a training step, a
 * reshard or a lone collective run headless (the plan), and the analytic
 * model as gemm.c computes its prediction (see play.h). */
#include "playrun.h"
#include "play.h"

#include "steps.h"

#include <dirent.h>
#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "cost.h"

/* ---- headless runs ---- */

void sl_run_info_free(sl_run_info *info)
{
	sl_snapshot_free(&info->snap);
	memset(info, 0, sizeof *info);
}

static double snap_end(const sl_snapshot *s)
{
	double e = 0;
	for (size_t i = 0; i < s->n; i++)
		if (s->ev[i].t1 > e)
			e = s->ev[i].t1;
	return e;
}

/* Take what a finished run left on its cluster. */
void sl_playrun_info_fill(sl_run_info *info, sl_cluster *c, int rc, const sl_err *err)
{
	info->done = 1;
	info->rc = rc;
	if (err)
		info->err = *err;
	info->ndev = sl_cluster_devices(c);
	for (int i = 0; i < info->ndev; i++)
		info->st[i] = sl_cluster_dev_stats(c, i);
	if (sl_trace_snapshot(sl_cluster_trace(c), &info->snap) != SL_OK && info->rc == SL_OK)
		info->rc = sl_fail(&info->err, SL_ENOMEM, "out of host memory for the trace");
	info->end = snap_end(&info->snap);
}

static void apply_links(sl_cluster *c, const sl_link_spec *links)
{
	int n = sl_cluster_devices(c);
	for (int s = 0; s < n; s++)
		for (int d = 0; d < n; d++)
			if (s != d)
				sl_cluster_set_link(c, s, d, links[s * n + d].bandwidth,
				                    links[s * n + d].latency);
}

/* The scenario's product when w is NULL. */
static sl_workload workload_of(const sl_scenario *sc, const sl_workload *w)
{
	return w ? *w : sl_workload_product(&sc->gemm);
}

sl_cluster_config sl_playrun_cluster_cfg(const sl_scenario *sc, const sl_workload *w)
{
	sl_workload wl = workload_of(sc, w);
	return sl_workload_cluster(&wl, &sc->cluster);
}

/* What a run of w left in r, into info (a training report without its
 * losses: the loss is kept). */
void sl_playrun_info_result(sl_run_info *info, const sl_wl_result *r)
{
	info->res = r->gemm;
	info->trep = r->trep;
	info->trep.losses = NULL;
	info->loss = r->loss;
	info->tpred = r->tpred;
	info->single_s = r->single_s;
}

int sl_playrun_run(const sl_scenario *sc, const sl_workload *w, const sl_link_spec *links,
                   sl_run_info *info, sl_publish_fn publish, void *ctx)
{
	memset(info, 0, sizeof *info);
	sl_workload wl = workload_of(sc, w);
	sl_cluster_config cfg = sl_workload_cluster(&wl, &sc->cluster);
	cfg.slowdown = 0;
	sl_err err = {0};
	int rc = sl_workload_ops_of(wl.kind)->check(&wl, cfg.devices, &err);
	sl_cluster *c = rc ? NULL : sl_cluster_create(&cfg, &err);
	if (!c) {
		info->done = 1;
		info->rc = err.code ? err.code : SL_EINVAL;
		info->err = err;
		return info->rc;
	}
	if (links)
		apply_links(c, links);
	if (publish && publish(ctx, c)) {
		sl_cluster_destroy(c);
		info->done = 1;
		info->rc = sl_fail(&info->err, SL_ECANCEL, "cancelled");
		return info->rc;
	}
	sl_wl_result r;
	memset(&r, 0, sizeof r);
	rc = sl_workload_exec(&wl, c, &r, 1, &err);
	sl_wl_result_free(&r); /* the losses: the first is kept */
	if (publish)
		publish(ctx, NULL);
	sl_playrun_info_fill(info, c, rc, &err);
	sl_playrun_info_result(info, &r);
	sl_cluster_destroy(c);
	return info->rc;
}

int sl_play_run_headless(const sl_scenario *sc, const sl_link_spec *links, sl_run_info *info,
                         sl_publish_fn publish, void *ctx)
{
	return sl_playrun_run(sc, NULL, links, info, publish, ctx);
}

int sl_play_run_workload_headless(const sl_scenario *sc, const sl_workload *w,
                                  const sl_link_spec *links, sl_run_info *info,
                                  sl_publish_fn publish, void *ctx)
{
	return sl_playrun_run(sc, w, links, info, publish, ctx);
}

/* ---- the analytic model, as gemm.c computes its prediction ---- */

double sl_playrun_predict_with(const sl_scenario *sc, sl_link_spec bn)
{
	sl_cluster_config cfg = sl_playrun_cluster_cfg(sc, NULL);
	int t = cfg.devices;
	double dim = sc->gemm.split == SL_SPLIT_ROW ? sc->gemm.k : sc->gemm.n;
	return sl_gemm_predict(&cfg, &sc->gemm, t, ceil(dim / t), bn);
}

double sl_play_predict(const sl_scenario *sc, sl_link_spec intra, sl_link_spec inter)
{
	sl_cluster_config cfg = sl_playrun_cluster_cfg(sc, NULL);
	cfg.intra = intra; /* the links asked about */
	cfg.inter = inter;
	return sl_playrun_predict_with(
	    sc, sl_cost_ring_bottleneck_cfg(&cfg, cfg.devices, SL_COLL_ALLREDUCE, sc->gemm.algo));
}

double sl_play_single_time(const sl_scenario *sc)
{
	return sl_gemm_single_s(&sc->cluster, &sc->gemm);
}
