/* lrun.c - the runs a lesson asks for, on the engine, and their figures. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cost.h"
#include "gemm.h"
#include "setup.h"
#include "units.h"

/* A lesson is untrusted: what one run may take of the host.  Every device
 * really holds its buffers and really multiplies, so these bound memory and
 * CPU time whatever the emulated hardware is. */
#define HOST_BYTES_LIMIT (1024.0 * 1024 * 1024)
#define HOST_WORK_LIMIT 2e11 /* FLOP of a product: a few seconds of one core */

static const char *const kind_names[SL_RUN_NKINDS] = {"matmul", "collective"};

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
	return "matmul collective";
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
	if (k == SL_RUN_MATMUL && s->sc.gemm.split == SL_SPLIT_SINGLE) {
		cfg->devices = 1;
		cfg->devices_per_node = 0;
	}
	return sl_cluster_config_check(cfg, err);
}

int sl_lrun_check(sl_run_kind k, const sl_lsetup *s, sl_err *err)
{
	sl_cluster_config cfg;
	char a[32], b[32];
	if (sl_lrun_config(k, s, 0, &cfg, err))
		return SL_EINVAL;
	double mem = (double)cfg.memory, host;
	if (k == SL_RUN_MATMUL) {
		if (sl_gemm_check(&s->sc.gemm, cfg.devices, err))
			return SL_EINVAL;
		double m = s->sc.gemm.m, kk = s->sc.gemm.k, n = s->sc.gemm.n;
		double need = matmul_need(s, cfg.devices);
		host = 4 * (m * kk + kk * n + 2 * m * n) + cfg.devices * fmin(need, mem);
		if (2 * m * kk * n > HOST_WORK_LIMIT)
			return sl_fail(err, SL_EINVAL,
				       "m=%d k=%d n=%d is %.3g FLOP: more than a lesson may run on this host "
				       "(%.0e); use smaller matrices",
				       s->sc.gemm.m, s->sc.gemm.k, s->sc.gemm.n, 2 * m * kk * n, HOST_WORK_LIMIT);
	} else {
		host = cfg.devices * fmin(s->bytes, mem);
	}
	if (host > HOST_BYTES_LIMIT)
		return sl_fail(err, SL_EINVAL,
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

static int run_matmul(const sl_lsetup *s, sl_cluster *c, sl_runrec *r, sl_err *err)
{
	int t = sl_cluster_devices(c);
	sl_gemm_result res;
	sl_err e = {0};
	char a[32], b[32];
	set(r, "mem_need", matmul_need(s, t));
	int rc = sl_gemm_run(c, &s->sc.gemm, &res, &e);
	common(r, c, t);
	if (rc == SL_EDEVMEM) {
		set(r, "fits", 0);
		snprintf(r->why, sizeof r->why, "the matmul did not fit in device memory: %s", e.msg);
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
		sl_coll_op op = s->sc.gemm.split == SL_SPLIT_ROW ? SL_COLL_ALLREDUCE : SL_COLL_ALLGATHER;
		sl_link_spec bn = sl_cost_ring_bottleneck(c, t);
		double ybytes = 4.0 * s->sc.gemm.m * s->sc.gemm.n;
		double comm = sl_cost_coll(op, s->sc.gemm.algo, t, ybytes, bn.latency, bn.bandwidth);
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
			 "%d devices, %s: %s (one device: %s), speedup %.2f; compute %s, %s %s",
			 t, sl_split_name(s->sc.gemm.split), sl_fmt_time(res.emulated_time_s, a, sizeof a),
			 sl_fmt_time(res.single_time_s, b, sizeof b), res.speedup,
			 sl_fmt_time(res.compute_s, (char[32]){0}, 32), coll,
			 sl_fmt_time(res.comm_s, (char[32]){0}, 32));
	else
		snprintf(r->summary, sizeof r->summary, "one device: %s for %s",
			 sl_fmt_time(res.emulated_time_s, a, sizeof a),
			 sl_value_fmt(2.0 * s->sc.gemm.m * s->sc.gemm.k * s->sc.gemm.n, SL_DIM_WORK, 0, 0, b,
				      sizeof b));
	return SL_OK;
}

struct coll_job {
	sl_coll_op op;
	sl_algo algo;
	size_t count;
};

static int coll_prog(sl_dev *d, void *arg, sl_err *err)
{
	struct coll_job *j = arg;
	size_t bytes = j->count * sizeof(float);
	float *buf = sl_dev_alloc(d, bytes, "the collective's buffer", err);
	if (!buf)
		return err ? err->code : SL_EDEVMEM;
	sl_fill_random(buf, j->count, (uint64_t)sl_dev_id(d) + 1);
	sl_group g = sl_group_all(sl_cluster_devices(sl_dev_cluster(d)));
	int rc = sl_coll_run(d, &g, j->op, buf, j->count, j->algo, err);
	sl_dev_free(d, buf, bytes);
	return rc;
}

static int run_coll(const sl_lsetup *s, sl_cluster *c, sl_runrec *r, sl_err *err)
{
	int p = sl_cluster_devices(c);
	struct coll_job j = {s->op, s->sc.gemm.algo, (size_t)(s->bytes / 4)};
	sl_err e = {0};
	char a[32], b[32], d[32], f[32];
	int rc = sl_cluster_run(c, coll_prog, &j, &e);
	common(r, c, p);
	if (rc == SL_EDEVMEM) {
		set(r, "fits", 0);
		snprintf(r->why, sizeof r->why, "the buffer did not fit in device memory: %s", e.msg);
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
	sl_link_spec bn = sl_cost_ring_bottleneck(c, p);
	double bytes = (double)j.count * 4;
	set(r, "fits", 1);
	set(r, "time", t);
	set(r, "predicted", sl_cost_coll(s->op, j.algo, p, bytes, bn.latency, bn.bandwidth));
	set(r, "latency_term", sl_cost_coll(s->op, j.algo, p, bytes, bn.latency, INFINITY));
	set(r, "bandwidth_term", sl_cost_coll(s->op, j.algo, p, bytes, 0, bn.bandwidth));
	if (t > 0) {
		set(r, "algbw", bytes / t);
		set(r, "busbw", bytes / t * sl_busbw_factor(s->op, p));
	} else {
		snprintf(r->why, sizeof r->why, "a collective on one device takes no time");
	}
	snprintf(r->summary, sizeof r->summary,
		 "%s of %s over %d devices (%s): %s; algbw %s, busbw %s", sl_coll_op_name(s->op),
		 sl_fmt_bytes(bytes, a, sizeof a), p, sl_algo_name(j.algo), sl_fmt_time(t, b, sizeof b),
		 t > 0 ? sl_fmt_rate(bytes / t, d, sizeof d) : "-",
		 t > 0 ? sl_fmt_rate(bytes / t * sl_busbw_factor(s->op, p), f, sizeof f) : "-");
	return SL_OK;
}

int sl_lrun(sl_run_kind k, const sl_lsetup *s, sl_cluster *c, sl_runrec *r, sl_err *err)
{
	if (!r->v && !(r->v = malloc(sizeof *r->v * (size_t)sl_fig_count())))
		return sl_fail(err, SL_ENOMEM, "out of memory");
	for (int i = 0; i < sl_fig_count(); i++)
		r->v[i] = NAN;
	r->why[0] = r->summary[0] = 0;
	r->kind = k;
	r->setup = *s;
	r->valid = 0;
	int rc = k == SL_RUN_MATMUL ? run_matmul(s, c, r, err) : run_coll(s, c, r, err);
	if (rc == SL_OK)
		r->valid = 1;
	return rc;
}
