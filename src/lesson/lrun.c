/* SPDX-License-Identifier: MIT */
/* lrun.c - the runs a lesson asks for, on the engine, and their figures. */
#include <dirent.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ckpt.h"
#include "cost.h"
#include "gemm.h"
#include "plan.h"
#include "setup.h"
#include "units.h"
#include "workload.h"

/* A lesson is untrusted: what one run may take of the host.  Every device
 * really holds its buffers and really multiplies, so these bound memory and
 * CPU time whatever the emulated hardware is. */
#define HOST_BYTES_LIMIT (1024.0 * 1024 * 1024)
#define HOST_WORK_LIMIT 2e11  /* FLOP of a product: a few seconds of one core */
#define PLAN_DEVICES_LIMIT 64 /* a plan of that many devices takes about a second */

static const char *const kind_names[SL_RUN_NKINDS] = {"matmul", "collective", "train", "reshard",
                                                      "plan"};

const char *sl_run_kind_name(sl_run_kind k)
{
	return k >= 0 && k < SL_RUN_NKINDS ? kind_names[k] : "?";
}

int sl_run_kind_parse(const char *s, sl_run_kind *k)
{
	for (int i = 0; i < SL_RUN_NKINDS; i++)
		if (strcmp(s, kind_names[i]) == 0) {
			*k = (sl_run_kind)i;
			return SL_OK;
		}
	return SL_EINVAL;
}

const char *sl_run_kinds(void)
{
	return "matmul collective train reshard plan";
}

void sl_runrec_init(sl_runrec *r)
{
	memset(r, 0, sizeof *r);
}

void sl_runrec_free(sl_runrec *r)
{
	free(r->v);
	sl_runrec_init(r);
}

int sl_runrec_copy(sl_runrec *dst, const sl_runrec *src)
{
	double *v = dst->v;
	if (!v && !(v = malloc(sizeof *v * (size_t)sl_fig_count())))
		return SL_ENOMEM;
	*dst = *src;
	dst->v = v;
	if (src->v)
		memcpy(v, src->v, sizeof *v * (size_t)sl_fig_count());
	return SL_OK;
}

static int fig(const char *name)
{
	return sl_fig_find(name);
}

static void set(sl_runrec *r, const char *name, double v)
{
	int i = fig(name);
	if (i >= 0)
		r->v[i] = v;
}

/* Bytes one device holds for its part of the product, as gemm.c allocates
 * them (X replicated or sliced, its shard of W, a full Y). */
static double matmul_need(const sl_lsetup *s, int t)
{
	double m = s->sc.gemm.m, k = s->sc.gemm.k, n = s->sc.gemm.n;
	switch (s->sc.gemm.split) {
	case SL_SPLIT_COL:
		return 4 * (m * k + k * ceil(n / t) + m * n);
	case SL_SPLIT_ROW:
		return 4 * (m * ceil(k / t) + ceil(k / t) * n + m * n);
	default:
		return 4 * (m * k + k * n + m * n);
	}
}

int sl_lrun_config(sl_run_kind k, const sl_lsetup *s, double slowdown, sl_cluster_config *cfg,
                   sl_err *err)
{
	*cfg = s->sc.cluster;
	cfg->slowdown = slowdown;
	if (k == SL_RUN_PLAN) {
		/* The planner runs nothing: the devices as set up, timing only. */
		cfg->slowdown = 0;
		cfg->timing = SL_TIMING_MODEL;
		cfg->timing_only = 1;
	}
	if (k == SL_RUN_MATMUL && s->sc.gemm.split == SL_SPLIT_SINGLE) {
		cfg->devices = 1;
		cfg->devices_per_node = 0;
	}
	if (k == SL_RUN_TRAIN || k == SL_RUN_RESHARD) {
		/* As many devices as the layout uses, in nodes of the set-up's
		 * size (as `shardlab train` builds them); a reshard runs on the
		 * devices of the layout it loads under. */
		sl_layout t = sl_lsetup_target(s);
		int n = k == SL_RUN_TRAIN ? sl_layout_devices(&s->layout) : sl_layout_devices(&t),
		    g = cfg->devices_per_node;
		if (n > SL_MAX_DEVICES)
			return sl_fail(err, SL_EINVAL, "tp*cp*pp*dp = %d devices: more than %d", n,
			               SL_MAX_DEVICES);
		cfg->devices = n;
		if (g > 0 && n <= g)
			cfg->devices_per_node = 0;
		else if (g > 0 && n % g != 0)
			return sl_fail(err, SL_EINVAL,
			               "%d devices do not fill nodes of %d: use a multiple "
			               "of %d",
			               n, g, g);
	}
	return sl_cluster_config_check(cfg, err);
}

/* The engine's layout messages name command-line options (--tp); a lesson
 * names setup keys (tp). */
static int lesson_words(int rc, sl_err *err)
{
	if (!err || !rc)
		return rc;
	char out[sizeof err->msg];
	size_t j = 0;
	for (const char *p = err->msg; *p && j + 1 < sizeof out; p++) {
		if (p[0] == '-' && p[1] == '-' && p[2] >= 'a' && p[2] <= 'z') {
			p++;
			continue;
		}
		out[j++] = *p;
	}
	out[j] = 0;
	memcpy(err->msg, out, j + 1);
	return rc;
}

int sl_lrun_check(sl_run_kind k, const sl_lsetup *s, sl_err *err)
{
	sl_cluster_config cfg;
	char a[32], b[32];
	if (sl_lrun_config(k, s, 0, &cfg, err))
		return SL_EINVAL;
	double mem = (double)cfg.memory, host;
	if (k == SL_RUN_PLAN) {
		/* It holds nothing, but its time grows with the devices. */
		if (cfg.devices > PLAN_DEVICES_LIMIT)
			return sl_fail(
			    err, SL_EINVAL,
			    "a lesson plans at most %d devices, not %d (shardlab plan takes up "
			    "to %d)",
			    PLAN_DEVICES_LIMIT, cfg.devices, SL_MAX_PLAN_DEVICES);
		return lesson_words(sl_model_check(&s->model, err), err);
	}
	if (cfg.timing_only && k == SL_RUN_RESHARD)
		return sl_fail(err, SL_EINVAL,
		               "a reshard moves stored values, and a timing-only run "
		               "(dry-run=yes) has none: set dry-run=no");
	if (k == SL_RUN_TRAIN || k == SL_RUN_RESHARD) {
		sl_layout l = sl_lsetup_layout(s);
		int n = sl_layout_devices(&l);
		if (lesson_words(sl_layout_check(&s->model, &l, n, err), err))
			return SL_EINVAL;
		/* Timing only: no values, so no host memory or arithmetic (as
		 * `shardlab train --dry-run`). */
		if (cfg.timing_only)
			return SL_OK;
		if (lesson_words(sl_model_check_values(&s->model, err), err))
			return SL_EINVAL;
		if (k == SL_RUN_RESHARD) {
			/* It saves on the set-up's layout's devices first. */
			sl_cluster_config saving;
			sl_lsetup src = *s;
			src.to_tp = src.to_pp = src.to_dp = 0;
			if (sl_lrun_config(SL_RUN_TRAIN, &src, 0, &saving, err))
				return SL_EINVAL;
			sl_layout t = sl_lsetup_target(s);
			sl_err e = {0};
			if (sl_layout_check(&s->model, &t, cfg.devices, &e)) {
				lesson_words(SL_EINVAL, &e);
				return sl_fail(
				    err, SL_EINVAL,
				    "the checkpoint cannot be resharded to tp=%d pp=%d dp=%d: %s",
				    t.tp, t.pp, t.dp, e.msg);
			}
		}
		/* The steps, and the one-device reference that checks the losses
		 * (a reshard trains before the save and after the load). */
		int twice = k == SL_RUN_RESHARD ? 2 : 1;
		double work = 2.0 * twice * s->steps * sl_model_step_flops(&s->model);
		if (work > HOST_WORK_LIMIT)
			return sl_fail(
			    err, SL_EINVAL,
			    "%d training step%s of this model is %.3g FLOP: more than a lesson "
			    "may run on this host (%.0e); use a smaller model or fewer steps",
			    s->steps, s->steps == 1 ? "" : "s", work, HOST_WORK_LIMIT);
		host = twice * sl_train_host_bytes(&s->model, &l);
	} else if (k == SL_RUN_MATMUL) {
		if (sl_gemm_check(&s->sc.gemm, cfg.devices, err))
			return SL_EINVAL;
		if (cfg.timing_only)
			return SL_OK;
		double m = s->sc.gemm.m, kk = s->sc.gemm.k, n = s->sc.gemm.n;
		double need = matmul_need(s, cfg.devices);
		host = 4 * (m * kk + kk * n + 2 * m * n) + cfg.devices * fmin(need, mem);
		if (2 * m * kk * n > HOST_WORK_LIMIT)
			return sl_fail(
			    err, SL_EINVAL,
			    "m=%d k=%d n=%d is %.3g FLOP: more than a lesson may run on this host "
			    "(%.0e); use smaller matrices",
			    s->sc.gemm.m, s->sc.gemm.k, s->sc.gemm.n, 2 * m * kk * n,
			    HOST_WORK_LIMIT);
	} else {
		host = cfg.timing_only ? 0 : cfg.devices * fmin(s->bytes, mem);
	}
	if (host > HOST_BYTES_LIMIT)
		return sl_fail(
		    err, SL_EINVAL,
		    "this %s would hold %s of host memory; a lesson may use %s: use smaller "
		    "sizes or fewer devices",
		    sl_run_kind_name(k), sl_fmt_bytes(host, a, sizeof a),
		    sl_fmt_bytes(HOST_BYTES_LIMIT, b, sizeof b));
	return SL_OK;
}

static void common(sl_runrec *r, sl_cluster *c, int t)
{
	double peak = 0, traffic = 0;
	for (int i = 0; i < t; i++) {
		sl_dev_stats st = sl_cluster_dev_stats(c, i);
		if ((double)st.mem_peak > peak)
			peak = (double)st.mem_peak;
		traffic += (double)st.bytes_sent;
	}
	set(r, "mem_peak", peak);
	set(r, "traffic", traffic);
	sl_link_spec bn = sl_cost_ring_bottleneck(c, t);
	if (t > 1) {
		set(r, "link_bw", bn.bandwidth);
		set(r, "link_latency", bn.latency);
	}
}

static int run_matmul(const sl_lsetup *s, sl_cluster *c, sl_runrec *r, sl_wl_result *eng,
                      sl_err *err)
{
	int t = sl_cluster_devices(c);
	sl_gemm_result res;
	sl_err e = {0};
	char a[32], b[32];
	set(r, "mem_need", matmul_need(s, t));
	sl_workload w = sl_workload_product(&s->sc.gemm);
	sl_wl_result wr;
	memset(&wr, 0, sizeof wr);
	int rc = sl_workload_exec(&w, c, &wr, 0, &e);
	res = wr.gemm;
	if (eng)
		eng->gemm = res;
	common(r, c, t);
	if (rc == SL_EDEVMEM) {
		set(r, "fits", 0);
		snprintf(r->why, sizeof r->why, "the matmul did not fit in device memory: %s",
		         e.msg);
		snprintf(r->summary, sizeof r->summary, "did not fit: %s", e.msg);
		return SL_OK;
	}
	if (rc) {
		if (err)
			*err = e;
		return rc;
	}
	set(r, "fits", 1);
	set(r, "time", res.emulated_time_s);
	set(r, "single_time", res.single_time_s);
	set(r, "speedup", res.speedup);
	set(r, "predicted", res.predicted_s);
	set(r, "compute_time", res.compute_s);
	set(r, "comm_time", res.comm_s);
	set(r, "error", res.max_rel_error);
	const char *coll = "";
	if (s->sc.gemm.split != SL_SPLIT_SINGLE && t > 1) {
		/* Where the split stops paying: the link bandwidth at which the
		 * model's time equals one device's. */
		sl_coll_op op =
		    s->sc.gemm.split == SL_SPLIT_ROW ? SL_COLL_ALLREDUCE : SL_COLL_ALLGATHER;
		sl_link_spec bn = sl_cost_ring_bottleneck_op(c, t, op, s->sc.gemm.algo);
		double ybytes = 4.0 * s->sc.gemm.m * s->sc.gemm.n;
		double comm =
		    sl_cost_coll(op, s->sc.gemm.algo, t, ybytes, bn.latency, bn.bandwidth);
		double lat = sl_cost_coll(op, s->sc.gemm.algo, t, ybytes, bn.latency, INFINITY);
		double per_bw = sl_cost_coll(op, s->sc.gemm.algo, t, ybytes, 0, 1.0);
		double room = res.single_time_s - (res.predicted_s - comm) - lat;
		set(r, "crossover_bw", room > 0 ? per_bw / room : INFINITY);
		coll = op == SL_COLL_ALLREDUCE ? "all-reduce" : "all-gather";
	} else {
		snprintf(r->why, sizeof r->why, "one device has no links");
	}
	if (t > 1)
		snprintf(r->summary, sizeof r->summary,
		         "%d devices, %s: %s (one device: %s), speedup %s; compute %s, %s %s", t,
		         sl_split_name(s->sc.gemm.split),
		         sl_fmt_time(res.emulated_time_s, a, sizeof a),
		         sl_fmt_time(res.single_time_s, b, sizeof b),
		         sl_fmt_ratio(res.speedup, (char[32]){0}, 32),
		         sl_fmt_time(res.compute_s, (char[32]){0}, 32), coll,
		         sl_fmt_time(res.comm_s, (char[32]){0}, 32));
	else
		snprintf(r->summary, sizeof r->summary, "one device: %s for %s",
		         sl_fmt_time(res.emulated_time_s, a, sizeof a),
		         sl_value_fmt(2.0 * s->sc.gemm.m * s->sc.gemm.k * s->sc.gemm.n, SL_DIM_WORK,
		                      0, 0, b, sizeof b));
	return SL_OK;
}

static int run_coll(const sl_lsetup *s, sl_cluster *c, sl_runrec *r, sl_wl_result *eng, sl_err *err)
{
	(void)eng;
	int p = sl_cluster_devices(c);
	sl_workload j = {.kind = SL_WL_COLLECTIVE,
	                 .op = s->op,
	                 .algo = s->sc.gemm.algo,
	                 .count = (size_t)(s->bytes / 4)};
	sl_err e = {0};
	char a[32], b[32], d[32], f[32];
	int rc = sl_workload_exec(&j, c, NULL, 0, &e);
	common(r, c, p);
	if (rc == SL_EDEVMEM) {
		set(r, "fits", 0);
		snprintf(r->why, sizeof r->why, "the buffer did not fit in device memory: %s",
		         e.msg);
		snprintf(r->summary, sizeof r->summary, "did not fit: %s", e.msg);
		return SL_OK;
	}
	if (rc) {
		if (err)
			*err = e;
		return rc;
	}
	double t = 0;
	for (int i = 0; i < p; i++) {
		sl_dev_stats st = sl_cluster_dev_stats(c, i);
		if (st.clock > t)
			t = st.clock;
	}
	sl_link_spec bn = sl_cost_ring_bottleneck_op(c, p, s->op, j.algo);
	double bytes = (double)j.count * 4;
	set(r, "fits", 1);
	set(r, "time", t);
	double lat, bwt;
	set(r, "predicted",
	    sl_cost_coll_terms(s->op, j.algo, p, bytes, bn.latency, bn.bandwidth,
	                       sl_cluster_config_of(c)->topology, &lat, &bwt));
	set(r, "latency_term", lat);
	set(r, "bandwidth_term", bwt);
	if (t > 0) {
		set(r, "algbw", bytes / t);
		set(r, "busbw", bytes / t * sl_busbw_factor(s->op, p));
	} else {
		snprintf(r->why, sizeof r->why, "a collective on one device takes no time");
	}
	snprintf(r->summary, sizeof r->summary,
	         "%s of %s over %d devices (%s): %s; algbw %s, busbw %s", sl_coll_op_name(s->op),
	         sl_fmt_bytes(bytes, a, sizeof a), p, sl_algo_name(j.algo),
	         sl_fmt_time(t, b, sizeof b), t > 0 ? sl_fmt_rate(bytes / t, d, sizeof d) : "-",
	         t > 0 ? sl_fmt_rate(bytes / t * sl_busbw_factor(s->op, p), f, sizeof f) : "-");
	return SL_OK;
}

static int run_train(const sl_lsetup *s, sl_cluster *c, sl_runrec *r, sl_wl_result *eng,
                     sl_err *err)
{
	int n = sl_cluster_devices(c);
	sl_layout l = sl_lsetup_layout(s);
	sl_err e = {0};
	char a[32], b[32];
	sl_train *tr = sl_cluster_config_of(c)->timing_only
	                   ? sl_train_create_timing_only(&s->model, &l, n, &e)
	                   : sl_train_create(&s->model, &l, n, &e);
	if (!tr) {
		if (err)
			*err = e;
		return lesson_words(e.code ? e.code : SL_EINVAL, err);
	}
	sl_train_report rep;
	memset(&rep, 0, sizeof rep);
	int rc = sl_train_run(tr, c, s->steps, &rep, &e);
	common(r, c, n);
	if (rc == SL_EDEVMEM) {
		set(r, "fits", 0);
		snprintf(r->why, sizeof r->why, "the layout did not fit in device memory: %s",
		         e.msg);
		snprintf(r->summary, sizeof r->summary, "did not fit: %s", e.msg);
		sl_train_report_free(&rep);
		sl_train_destroy(tr);
		return SL_OK;
	}
	sl_train_prediction pred;
	double single = 0;
	int est = 0;
	if (rc == SL_OK)
		rc = sl_train_predict(tr, c, &pred, &e);
	if (rc == SL_OK)
		rc = sl_train_single_step_s(&s->model, sl_train_layout(tr), sl_cluster_config_of(c),
		                            &single, &est, &e);
	/* The same steps on one device, plain: the losses must agree (a
	 * timing-only run has none). */
	int dry = sl_cluster_config_of(c)->timing_only;
	double loss_err = dry ? NAN : 0;
	sl_ref ref;
	if (rc == SL_OK && !dry && (rc = sl_ref_init(&ref, &s->model, &e)) == SL_OK) {
		for (int i = 0; i < rep.steps && rc == SL_OK; i++) {
			double lr;
			rc = sl_ref_step(&ref, &lr, &e);
			double d = fabs(rep.losses[i] - lr) / fabs(lr);
			if (!(d <= loss_err))
				loss_err = d;
		}
		sl_ref_free(&ref);
	}
	if (rc) {
		if (err)
			*err = e;
		sl_train_report_free(&rep);
		sl_train_destroy(tr);
		return lesson_words(rc, err);
	}
	double comp = 0, comm = 0, pmem = 0, gmem = 0, omem = 0, amem = 0, peak = 0, expo = 0;
	double tp = 0, pp = 0, dp = 0, cpb = 0, held = 0, saved = 0, shards = 0;
	for (int i = 0; i < rep.ndev; i++) {
		const sl_train_dev *d = &rep.dev[i];
		comp = fmax(comp, d->compute_s);
		comm = fmax(comm, d->comm_s);
		expo = fmax(expo, d->comm_exposed_s);
		pmem = fmax(pmem, (double)d->params_bytes);
		gmem = fmax(gmem, (double)d->grads_bytes);
		omem = fmax(omem, (double)d->optimizer_bytes);
		amem = fmax(amem, (double)d->act_peak_bytes);
		peak = fmax(peak, (double)d->mem_peak_bytes);
		tp += (double)(d->sent[SL_TR_TP_ALLREDUCE] + d->sent[SL_TR_TP_ALLGATHER] +
		               d->sent[SL_TR_TP_REDUCESCATTER]);
		pp += (double)d->sent[SL_TR_PP_SENDRECV];
		dp += (double)(d->sent[SL_TR_DP_ALLREDUCE] + d->sent[SL_TR_DP_REDUCESCATTER] +
		               d->sent[SL_TR_DP_ALLGATHER]);
		cpb += (double)d->sent[SL_TR_CP_KV];
		sl_dev_state ds = sl_train_dev_state(tr, i);
		held += 4.0 * (double)ds.n;
		for (int j = 0; j < ds.nshards; j++)
			if (ds.shards[j].primary) {
				saved += 4.0 * (double)ds.shards[j].count;
				shards++;
			}
	}
	set(r, "fits", 1);
	set(r, "time", rep.step_s);
	set(r, "predicted", pred.step_s);
	set(r, "single_time", single);
	set(r, "speedup", rep.step_s > 0 ? single / rep.step_s : NAN);
	set(r, "compute_time", comp);
	set(r, "comm_time", comm);
	set(r, "exposed_time", expo);
	set(r, "traffic", tp + pp + dp + cpb);
	set(r, "mem_peak", peak);
	set(r, "bubble", rep.bubble_fraction);
	set(r, "predicted_bubble", pred.bubble_fraction);
	set(r, "idle", rep.idle_fraction);
	set(r, "pipeline_time", rep.pipeline_s);
	set(r, "ideal_time", rep.ideal_s);
	set(r, "params_mem", pmem);
	set(r, "grads_mem", gmem);
	set(r, "optimizer_mem", omem);
	set(r, "act_mem", amem);
	set(r, "tp_traffic", tp);
	set(r, "pp_traffic", pp);
	set(r, "dp_traffic", dp);
	set(r, "cp_traffic", cpb);
	set(r, "loss", rep.losses[rep.steps - 1]);
	set(r, "loss_first", rep.losses[0]);
	set(r, "loss_error", loss_err);
	set(r, "held_params", held);
	set(r, "saved_params", saved);
	set(r, "shards", shards);
	if (dry)
		snprintf(r->why, sizeof r->why,
		         "a timing-only run (dry-run=yes) computes no values: no losses");
	char cpw[32] = "";
	if (l.cp > 1)
		snprintf(cpw, sizeof cpw, " cp=%d", l.cp);
	snprintf(
	    r->summary, sizeof r->summary,
	    "tp=%d pp=%d dp=%d%s on %d device%s: %s a step (one device: %s), speedup %s; bubble "
	    "%.3f",
	    l.tp, l.pp, l.dp, cpw, n, n == 1 ? "" : "s", sl_fmt_time(rep.step_s, a, sizeof a),
	    sl_fmt_time(single, b, sizeof b),
	    sl_fmt_ratio(rep.step_s > 0 ? single / rep.step_s : 0, (char[32]){0}, 32),
	    rep.bubble_fraction);
	if (!dry) {
		size_t k = strlen(r->summary);
		snprintf(r->summary + k, sizeof r->summary - k, "; loss %.6f", rep.losses[0]);
	}
	/* The screen plays the first step (its loss is that one's), so a run of
	 * several says which loss is which: lesson 11 printed the last step's
	 * beside the first step's on screen. */
	if (rep.steps > 1 && !dry) {
		size_t k = strlen(r->summary);
		snprintf(r->summary + k, sizeof r->summary - k, " at step 1, loss %.6f at step %d",
		         rep.losses[rep.steps - 1], rep.steps);
	}
	if (eng) { /* the report without its losses; the loss the lesson names */
		eng->loss = rep.losses[rep.steps - 1];
		eng->tpred = pred;
		eng->single_s = single;
		eng->trep = rep;
		eng->trep.losses = NULL;
	}
	sl_train_report_free(&rep);
	sl_train_destroy(tr);
	return SL_OK;
}

/* ---- reshard: train, save, reshard, load, train on ---- */

struct rs {
	char tmp[4096], saved[4200], moved[4200];
	sl_cluster *a, *b; /* the saving layout's devices; the loading layout's (headless) */
	sl_train *tr, *t2;
	sl_ckpt *ck, *ck2;
	float *p0, *p1; /* the saved state and the loaded one: params, mom, var */
	double *ref;
	sl_train_report r1, r2;
};

static void rs_free(struct rs *x)
{
	sl_train_report_free(&x->r1);
	sl_train_report_free(&x->r2);
	sl_ckpt_close(x->ck);
	sl_ckpt_close(x->ck2);
	sl_train_destroy(x->tr);
	sl_train_destroy(x->t2);
	sl_cluster_destroy(x->a);
	sl_cluster_destroy(x->b);
	free(x->p0);
	free(x->p1);
	free(x->ref);
	if (x->tmp[0]) {
		sl_ckpt_remove(x->saved);
		sl_ckpt_remove(x->moved);
		rmdir(x->tmp);
	}
}

static double clock_of(sl_cluster *c)
{
	double t = 0;
	for (int i = 0; i < sl_cluster_devices(c); i++) {
		sl_dev_stats st = sl_cluster_dev_stats(c, i);
		t = st.clock > t ? st.clock : t;
	}
	return t;
}

/* Train s->steps steps under the set-up's layout and save a checkpoint on
 * its devices; reshard it on c (the target layout's devices: what a front
 * end shows); load the result under the target layout, check the state, and
 * train s->steps more; the losses against one device's. */
static int run_reshard_steps(const sl_lsetup *s, sl_cluster *c, sl_runrec *r, struct rs *x,
                             sl_wl_result *eng, sl_err *e)
{
	sl_layout l = sl_lsetup_layout(s), t = sl_lsetup_target(s);
	int n = sl_layout_devices(&l), nt = sl_cluster_devices(c);
	const char *tmp = getenv("TMPDIR");
	snprintf(x->tmp, sizeof x->tmp, "%s/shardlab-lesson-XXXXXX", tmp && *tmp ? tmp : "/tmp");
	if (!mkdtemp(x->tmp)) {
		x->tmp[0] = 0;
		return sl_fail(e, SL_ESYS, "cannot create a temporary directory: %s",
		               strerror(errno));
	}
	snprintf(x->saved, sizeof x->saved, "%s/saved", x->tmp);
	snprintf(x->moved, sizeof x->moved, "%s/resharded", x->tmp);
	sl_lsetup src = *s;
	src.to_tp = src.to_pp = src.to_dp = 0;
	sl_cluster_config cfg = *sl_cluster_config_of(c);
	int rc = sl_lrun_config(SL_RUN_TRAIN, &src, 0, &cfg, e);
	size_t np = sl_model_nparams(&s->model);
	if (!rc && !(x->a = sl_cluster_create(&cfg, e)))
		rc = e->code ? e->code : SL_EINVAL;
	if (!rc && !(x->tr = sl_train_create(&s->model, &l, n, e)))
		rc = e->code ? e->code : SL_EINVAL;
	if (!rc)
		rc = sl_train_run(x->tr, x->a, s->steps, &x->r1, e);
	if (!rc && (rc = sl_ckpt_save(x->tr, x->a, x->saved, NULL, e)) == SL_OK)
		set(r, "save_time", clock_of(x->a));
	if (!rc && (!(x->p0 = malloc(3 * np * sizeof(float))) ||
	            !(x->p1 = malloc(3 * np * sizeof(float)))))
		rc = sl_fail(e, SL_ENOMEM, "out of memory");
	if (!rc)
		rc = sl_train_gather(x->tr, x->p0, x->p0 + np, x->p0 + 2 * np);
	if (!rc)
		rc = sl_ckpt_open(x->saved, &x->ck, e);
	if (rc)
		return rc;
	const sl_ckpt_info *in = sl_ckpt_info_of(x->ck);
	set(r, "ckpt_chunks", in->nchunks);
	set(r, "files", in->nfiles);
	set(r, "ckpt_bytes", (double)in->data_bytes);

	/* The reshard, on the devices a front end shows. */
	if ((rc = sl_ckpt_reshard(x->ck, &t, c, x->moved, NULL, e)))
		return rc;
	double rbytes = 0;
	for (int i = 0; i < nt; i++)
		rbytes += (double)sl_cluster_dev_stats(c, i).bytes_read;
	sl_snapshot snap;
	int reads = 0;
	double most = 0;
	if (sl_trace_snapshot(sl_cluster_trace(c), &snap) == SL_OK) {
		double dev[SL_MAX_DEVICES] = {0};
		for (size_t i = 0; i < snap.n; i++) {
			const sl_event *ev = &snap.ev[i];
			reads += ev->kind == SL_EV_READ;
			if (ev->kind == SL_EV_READ || ev->kind == SL_EV_WRITE)
				dev[ev->dev] += (double)ev->bytes;
		}
		for (int i = 0; i < nt; i++)
			most = dev[i] > most ? dev[i] : most;
		sl_snapshot_free(&snap);
	}
	set(r, "time", clock_of(c));
	set(r, "predicted", most / SL_CKPT_STORAGE_BW_DEFAULT);
	set(r, "reads", reads);
	set(r, "read_bytes", rbytes);

	/* Load what the reshard wrote under the new layout, and train on. */
	if ((rc = sl_ckpt_open(x->moved, &x->ck2, e)))
		return rc;
	set(r, "new_chunks", sl_ckpt_info_of(x->ck2)->nchunks);
	cfg = *sl_cluster_config_of(c);
	cfg.slowdown = 0;
	if (!(x->b = sl_cluster_create(&cfg, e)) ||
	    !(x->t2 = sl_train_create(&s->model, &t, nt, e)))
		return e->code ? e->code : SL_EINVAL;
	/* Who read and wrote what, for a front end that shows the reshard. */
	if (eng && ((rc = sl_ckpt_read_plan(x->ck, x->t2, &eng->reads, &eng->nreads, e)) ||
	            (rc = sl_ckpt_write_plan(x->t2, &eng->writes, &eng->nwrites, e))))
		return rc;
	if ((rc = sl_ckpt_load(x->t2, x->b, x->ck2, NULL, e)) ||
	    (rc = sl_train_gather(x->t2, x->p1, x->p1 + np, x->p1 + 2 * np)))
		return rc;
	double diff = 0;
	for (size_t i = 0; i < 3 * np; i++)
		diff = fmax(diff, fabs((double)x->p1[i] - x->p0[i]));
	set(r, "state_error", diff);
	if ((rc = sl_train_run(x->t2, x->b, s->steps, &x->r2, e)))
		return rc;
	/* One device, uninterrupted. */
	sl_ref ref;
	double worst = 0;
	if ((rc = sl_ref_init(&ref, &s->model, e)))
		return rc;
	for (int i = 0; i < 2 * s->steps && !rc; i++) {
		double want, got = i < s->steps ? x->r1.losses[i] : x->r2.losses[i - s->steps];
		if ((rc = sl_ref_step(&ref, &want, e)) == SL_OK)
			worst = fmax(worst, fabs(got - want) / fabs(want));
	}
	sl_ref_free(&ref);
	set(r, "resume_error", worst);
	set(r, "loss", x->r2.losses[s->steps - 1]);
	set(r, "loss_first", x->r1.losses[0]);
	return rc;
}

static int run_reshard(const sl_lsetup *s, sl_cluster *c, sl_runrec *r, sl_wl_result *eng,
                       sl_err *err)
{
	struct rs x;
	memset(&x, 0, sizeof x);
	sl_err e = {0};
	int rc = run_reshard_steps(s, c, r, &x, eng, &e);
	common(r, c, sl_cluster_devices(c));
	if (rc == SL_EDEVMEM) {
		set(r, "fits", 0);
		snprintf(r->why, sizeof r->why, "the layout did not fit in device memory: %s",
		         e.msg);
		snprintf(r->summary, sizeof r->summary, "did not fit: %s", e.msg);
		rs_free(&x);
		return SL_OK;
	}
	if (rc) {
		if (err)
			*err = e;
		rs_free(&x);
		return lesson_words(rc, err);
	}
	set(r, "fits", 1);
	sl_layout l = sl_lsetup_layout(s), t = sl_lsetup_target(s);
	const sl_ckpt_info *in = sl_ckpt_info_of(x.ck);
	int fig = sl_fig_find("resume_error"), rd = sl_fig_find("reads");
	char a[32], b[32];
	snprintf(r->summary, sizeof r->summary,
	         "saved at tp=%d pp=%d dp=%d: %d chunks in %d files (%s); resharded to tp=%d pp=%d "
	         "dp=%d: %.0f chunk reads, %s; resumed losses equal one device's to %.2g",
	         l.tp, l.pp, l.dp, in->nchunks, in->nfiles,
	         sl_fmt_bytes((double)in->data_bytes, a, sizeof a), t.tp, t.pp, t.dp,
	         rd >= 0 ? r->v[rd] : 0, sl_fmt_time(clock_of(c), b, sizeof b),
	         fig >= 0 ? r->v[fig] : 0);
	if (eng) { /* the manifest, in memory: its directory goes with x */
		eng->ck = x.ck;
		x.ck = NULL;
	}
	rs_free(&x);
	return SL_OK;
}

/* Every layout of the model on c's devices, ranked: the best's figures.  No
 * layout fitting is an outcome (fits = no); no valid layout at all is the
 * lesson's error. */
static int run_plan(const sl_lsetup *s, sl_cluster *c, sl_runrec *r, sl_wl_result *eng, sl_err *err)
{
	(void)eng;
	sl_plan_spec spec = {.model = s->model, .cluster = *sl_cluster_config_of(c)};
	sl_plan p;
	sl_err e = {0};
	char a[32], name[96];
	int rc = sl_plan_run(&spec, &p, &e);
	set(r, "candidates", p.n);
	set(r, "fit", p.nfit);
	if (rc && p.n > 0 && p.nfit == 0) {
		set(r, "fits", 0);
		snprintf(r->why, sizeof r->why, "%s", e.msg);
		snprintf(r->summary, sizeof r->summary, "%s", e.msg);
		sl_plan_free(&p);
		return SL_OK;
	}
	if (rc) {
		if (err)
			*err = e;
		sl_plan_free(&p);
		return lesson_words(rc, err);
	}
	const sl_plan_row *b = &p.rows[0];
	const sl_layout *l = &b->layout;
	set(r, "fits", 1);
	set(r, "time", b->est.step_s);
	set(r, "mem_peak", (double)b->est.mem_peak_bytes);
	set(r, "best_tp", l->tp);
	set(r, "best_pp", l->pp);
	set(r, "best_dp", l->dp);
	set(r, "best_mp", l->tp * l->pp);
	set(r, "best_microbatches", l->microbatches);
	set(r, "best_chunks", l->chunks);
	set(r, "best_sp", l->seq_parallel);
	set(r, "best_zero1", l->zero >= 1);
	set(r, "best_zero", l->zero);
	set(r, "best_tp_across", b->tp.used && b->tp.inter);
	set(r, "best_pp_across", b->pp.used && b->pp.inter);
	set(r, "best_dp_across", b->dp.used && b->dp.inter);
	set(r, "best_tokens", b->tokens_per_s);
	set(r, "best_flops", b->model_flops_per_dev);
	set(r, "best_comm", b->comm_share);
	set(r, "bubble", b->est.bubble_fraction);
	int ru = sl_plan_runner_up(&p);
	if (ru > 0)
		set(r, "runner_time", p.rows[ru].est.step_s);
	int mv = b->tp.used ? sl_plan_tp_moved(&p, 0, !b->tp.inter) : -1;
	if (mv > 0)
		set(r, "moved_time", p.rows[mv].est.step_s);
	else
		snprintf(r->why, sizeof r->why, "the best layout has no TP group to move");
	snprintf(r->summary, sizeof r->summary, "%d layouts, %d fit; best %s: %s a step", p.n,
	         p.nfit, sl_plan_layout_name(l, name, sizeof name),
	         sl_fmt_time(b->est.step_s, a, sizeof a));
	sl_plan_free(&p);
	return SL_OK;
}

int sl_lrun(sl_run_kind k, const sl_lsetup *s, sl_cluster *c, sl_runrec *r, sl_wl_result *eng,
            sl_err *err)
{
	if (!r->v && !(r->v = malloc(sizeof *r->v * (size_t)sl_fig_count())))
		return sl_fail(err, SL_ENOMEM, "out of memory");
	for (int i = 0; i < sl_fig_count(); i++)
		r->v[i] = NAN;
	r->why[0] = r->summary[0] = 0;
	r->kind = k;
	r->setup = *s;
	r->valid = 0;
	int rc = k == SL_RUN_MATMUL    ? run_matmul(s, c, r, eng, err)
	         : k == SL_RUN_TRAIN   ? run_train(s, c, r, eng, err)
	         : k == SL_RUN_RESHARD ? run_reshard(s, c, r, eng, err)
	         : k == SL_RUN_PLAN    ? run_plan(s, c, r, eng, err)
	                               : run_coll(s, c, r, eng, err);
	if (rc == SL_OK)
		r->valid = 1;
	return rc;
}
