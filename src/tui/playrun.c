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

sl_cluster_config sl_playrun_cluster_cfg(const sl_scenario *sc)
{
	sl_cluster_config cfg = sc->cluster;
	if (sc->gemm.split == SL_SPLIT_SINGLE) {
		cfg.devices = 1;
		cfg.devices_per_node = 0;
	}
	return cfg;
}

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

/* Reshard tr->ck to tr->l on c, into a directory that is removed after:
 * what the view shows is the devices' reads and writes. */
static int reshard(sl_cluster *c, const sl_play_train *tr, sl_err *err)
{
	const char *tmp = getenv("TMPDIR");
	char dir[4096], out[4200];
	snprintf(dir, sizeof dir, "%s/shardlab-reshard-XXXXXX", tmp && *tmp ? tmp : "/tmp");
	if (!mkdtemp(dir))
		return sl_fail(err, SL_ESYS, "cannot create a directory in %s: %s",
		               tmp && *tmp ? tmp : "/tmp", strerror(errno));
	snprintf(out, sizeof out, "%s/ckpt", dir);
	int rc = sl_ckpt_reshard(tr->ck, &tr->l, c, out, NULL, err);
	sl_ckpt_remove(out);
	rmdir(dir);
	return rc;
}

/* A lone collective: each device a buffer of random values, then the
 * collective over all of them, as a lesson's `run collective` runs it. */
static int coll_prog(sl_dev *d, void *arg, sl_err *err)
{
	const sl_play_train *tr = arg;
	size_t bytes = tr->count * sizeof(float);
	int dry = sl_cluster_config_of(sl_dev_cluster(d))->timing_only;
	float *buf = dry ? NULL : sl_dev_alloc(d, bytes, "the collective's buffer", err);
	if (!buf && !dry)
		return err && err->code ? err->code : SL_EDEVMEM;
	if (buf)
		sl_fill_random(buf, tr->count, (uint64_t)sl_dev_id(d) + 1);
	sl_group g = sl_group_all(sl_cluster_devices(sl_dev_cluster(d)));
	int rc = sl_coll_run(d, &g, tr->op, buf, tr->count, tr->algo, err);
	if (buf)
		sl_dev_free(d, buf, bytes);
	return rc;
}

/* One training step on c; pred and single may be NULL (the live run). */
int sl_playrun_train_step(sl_cluster *c, const sl_play_train *tr, sl_train_report *rep,
                      double *loss, sl_train_prediction *pred, double *single, sl_err *err)
{
	if (tr->ck)
		return reshard(c, tr, err);
	if (tr->coll)
		return sl_cluster_run(c, coll_prog, (void *)tr, err);
	/* A timing-only cluster runs a state without values (the same step). */
	sl_train *t = sl_cluster_config_of(c)->timing_only
	                  ? sl_train_create_timing_only(&tr->m, &tr->l, sl_cluster_devices(c), err)
	                  : sl_train_create(&tr->m, &tr->l, sl_cluster_devices(c), err);
	if (!t)
		return err->code ? err->code : SL_EINVAL;
	int rc = sl_train_run(t, c, 1, rep, err);
	if (rc == SL_OK) {
		*loss = rep->losses ? rep->losses[0] : 0;
		if (pred)
			rc = sl_train_predict(t, c, pred, err);
	}
	sl_train_report_free(rep);
	sl_train_destroy(t);
	int est;
	if (rc == SL_OK && single)
		rc = sl_train_single_step_s(&tr->m, sl_cluster_config_of(c), single, &est, err);
	return rc;
}

int sl_playrun_run(const sl_scenario *sc, const sl_play_train *tr, const sl_link_spec *links,
                        sl_run_info *info, sl_publish_fn publish, void *ctx)
{
	memset(info, 0, sizeof *info);
	sl_cluster_config cfg = sl_playrun_cluster_cfg(sc);
	cfg.slowdown = 0;
	sl_err err = {0};
	int rc = tr && tr->coll ? SL_OK
	         : tr           ? sl_layout_check(&tr->m, &tr->l, cfg.devices, &err)
	                        : sl_gemm_check(&sc->gemm, cfg.devices, &err);
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
	if (tr)
		rc = sl_playrun_train_step(c, tr, &info->trep, &info->loss, &info->tpred, &info->single_s, &err);
	else
		rc = sl_gemm_run(c, &sc->gemm, &info->res, &err);
	if (publish)
		publish(ctx, NULL);
	sl_train_report trep = info->trep;
	sl_playrun_info_fill(info, c, rc, &err);
	info->trep = trep;
	sl_cluster_destroy(c);
	return info->rc;
}

int sl_play_run_headless(const sl_scenario *sc, const sl_link_spec *links, sl_run_info *info,
                         sl_publish_fn publish, void *ctx)
{
	return sl_playrun_run(sc, NULL, links, info, publish, ctx);
}

int sl_play_run_train_headless(const sl_scenario *sc, const sl_play_train *tr,
                               const sl_link_spec *links, sl_run_info *info,
                               sl_publish_fn publish, void *ctx)
{
	return sl_playrun_run(sc, tr, links, info, publish, ctx);
}

/* ---- the analytic model, as gemm.c computes its prediction ---- */

static int node_of(const sl_cluster_config *cfg, int d)
{
	return cfg->devices_per_node > 0 ? d / cfg->devices_per_node : 0;
}

double sl_playrun_predict_with(const sl_scenario *sc, sl_link_spec bn)
{
	sl_cluster_config cfg = sl_playrun_cluster_cfg(sc);
	int t = cfg.devices;
	double m = sc->gemm.m, k = sc->gemm.k, n = sc->gemm.n;
	double dim = sc->gemm.split == SL_SPLIT_ROW ? k : n;
	double maxshard = ceil(dim / t);
	double bytes = m * n * sizeof(float);
	if (sc->gemm.split == SL_SPLIT_ROW)
		return 2.0 * m * n * maxshard / cfg.flops + sl_cost_coll(SL_COLL_ALLREDUCE,
		                                                         sc->gemm.algo, t, bytes,
		                                                         bn.latency, bn.bandwidth);
	return 2.0 * m * maxshard * k / cfg.flops +
	       sl_cost_coll(SL_COLL_ALLGATHER, sc->gemm.algo, t, bytes, bn.latency, bn.bandwidth);
}

double sl_play_predict(const sl_scenario *sc, sl_link_spec intra, sl_link_spec inter)
{
	sl_cluster_config cfg = sl_playrun_cluster_cfg(sc);
	int p = cfg.devices;
	sl_link_spec bn = intra;
	/* The slowest link a ring over 0..p-1 crosses; ring neighbours are one
	 * hop apart in either topology. */
	for (int i = 0; i < p && p > 1; i++) {
		sl_link_spec s = node_of(&cfg, i) == node_of(&cfg, (i + 1) % p) ? intra : inter;
		if (i == 0 || s.bandwidth < bn.bandwidth)
			bn.bandwidth = i == 0 ? s.bandwidth : fmin(bn.bandwidth, s.bandwidth);
		if (i == 0 || s.latency > bn.latency)
			bn.latency = i == 0 ? s.latency : fmax(bn.latency, s.latency);
	}
	return sl_playrun_predict_with(sc, bn);
}

double sl_play_single_time(const sl_scenario *sc)
{
	return 2.0 * sc->gemm.m * (double)sc->gemm.n * sc->gemm.k / sc->cluster.flops;
}

