/* SPDX-License-Identifier: MIT */
/* gemm.c - the sharded matrix multiply scenario. */
#include "gemm.h"
#include "device.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cluster.h"

#include "cost.h"

static const char *const split_names[SL_SPLIT_N] = {"single", "colwise", "rowwise"};

const char *sl_split_name(sl_split s)
{
	return s >= 0 && s < SL_SPLIT_N ? split_names[s] : "?";
}

int sl_split_parse(const char *s, sl_split *out)
{
	for (int i = 0; i < SL_SPLIT_N; i++)
		if (strcmp(s, split_names[i]) == 0) {
			*out = (sl_split)i;
			return SL_OK;
		}
	return SL_EINVAL;
}

/* splitmix64: tiny, good enough, and the same on every machine. */
static uint64_t mix(uint64_t *s)
{
	uint64_t z = (*s += 0x9e3779b97f4a7c15ULL);
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return z ^ (z >> 31);
}

void sl_fill_random(float *x, size_t n, uint64_t seed)
{
	uint64_t s = seed;
	for (size_t i = 0; i < n; i++)
		x[i] = (float)((double)(mix(&s) >> 40) / (double)(1ULL << 24) * 2.0 - 1.0);
}

#define MAX_DIM 1000000

double sl_gemm_single_s(const sl_cluster_config *cfg, const sl_gemm_spec *s)
{
	return sl_gemm_s(cfg, s->m, s->n, s->k, 1);
}

double sl_gemm_predict(const sl_cluster_config *cfg, const sl_gemm_spec *s, int t, double maxshard,
                       sl_link_spec bn)
{
	double m = s->m, n = s->n, k = s->k;
	double bytes = m * n * sl_elem_bytes(cfg);
	if (s->split == SL_SPLIT_ROW)
		return sl_gemm_s(cfg, m, n, maxshard, 1) +
		       sl_cost_coll_terms(SL_COLL_ALLREDUCE, s->algo, t, bytes, bn.latency,
		                          bn.bandwidth, cfg->topology, NULL, NULL);
	return sl_gemm_s(cfg, m, maxshard, k, 1) +
	       sl_cost_coll_terms(SL_COLL_ALLGATHER, s->algo, t, bytes, bn.latency, bn.bandwidth,
	                          cfg->topology, NULL, NULL);
}

int sl_gemm_check(const sl_gemm_spec *s, int t, sl_err *err)
{
	const int dims[3] = {s->m, s->k, s->n};
	const char *names[3] = {"m", "k", "n"};
	for (int i = 0; i < 3; i++)
		if (dims[i] < 1 || dims[i] > MAX_DIM)
			return sl_fail(err, SL_EINVAL, "%s=%d is out of range (1 to %d)", names[i],
			               dims[i], MAX_DIM);
	if ((double)s->m * s->k > 2e9 || (double)s->k * s->n > 2e9 || (double)s->m * s->n > 2e9)
		return sl_fail(err, SL_EINVAL,
		               "m=%d k=%d n=%d: a matrix of over 2^31 elements is too large", s->m,
		               s->k, s->n);
	if (s->split == SL_SPLIT_SINGLE && t != 1)
		return sl_fail(err, SL_EINVAL, "the single strategy runs on one device, not %d", t);
	if (s->split == SL_SPLIT_COL && s->n < t)
		return sl_fail(err, SL_EINVAL,
		               "cannot split n=%d output columns over %d devices column-wise: "
		               "every device needs at least one column",
		               s->n, t);
	if (s->split == SL_SPLIT_ROW && s->k < t)
		return sl_fail(err, SL_EINVAL,
		               "cannot split k=%d input rows over %d devices row-wise: every "
		               "device needs at least one row of W",
		               s->k, t);
	return SL_OK;
}

struct job {
	const sl_gemm_spec *s;
	int t;
	const float *x, *w;
	float *y;
	int dry;                        /* timing only: no host matrices, no device buffers */
	size_t off[SL_MAX_DEVICES + 1]; /* the split dimension's shard starts */
};

/* A device's three buffers: allocated, or on a timing-only cluster only
 * counted (the pointers stay NULL). */
struct bufs {
	float *p[3];
	size_t bytes[3];
	int held, dry;
};

/* n fp32 values on the host; the device accounts them at the precision's
 * element size. */
static int hold(sl_dev *d, struct bufs *b, size_t n, const char *what, sl_err *err)
{
	int i = b->held;
	size_t bytes = (size_t)((double)n * sl_elem_bytes(sl_cluster_config_of(sl_dev_cluster(d))));
	b->p[i] = NULL;
	b->bytes[i] = bytes;
	int rc = sl_dev_reserve(d, bytes, what, err);
	if (rc)
		return rc;
	if (!b->dry && !(b->p[i] = malloc(n ? n * sizeof(float) : 1))) {
		sl_dev_release(d, bytes);
		return sl_fail(err, SL_ENOMEM, "device %d: the host cannot allocate %s",
		               sl_dev_id(d), what);
	}
	b->held++;
	return SL_OK;
}

static void drop_all(sl_dev *d, struct bufs *b)
{
	for (int i = 0; i < b->held; i++) {
		free(b->p[i]);
		sl_dev_release(d, b->bytes[i]);
	}
	b->held = 0;
}

static int run_col(sl_dev *d, struct job *j, sl_err *err)
{
	const sl_gemm_spec *s = j->s;
	int r = sl_dev_id(d);
	size_t m = (size_t)s->m, k = (size_t)s->k, n = (size_t)s->n;
	size_t c0 = j->off[r], nr = j->off[r + 1] - c0;
	size_t counts[SL_MAX_DEVICES];
	for (int i = 0; i < j->t; i++)
		counts[i] = m * (j->off[i + 1] - j->off[i]);
	struct bufs b = {.dry = j->dry};
	int rc;
	if ((rc = hold(d, &b, m * k, "X (replicated)", err)) ||
	    (rc = hold(d, &b, k * nr, "its column shard of W", err)) ||
	    (rc = hold(d, &b, m * n, "Y (gathered)", err)))
		goto out;
	float *x = b.p[0], *w = b.p[1], *y = b.p[2];
	if (!b.dry) {
		memcpy(x, j->x, m * k * sizeof *x);
		for (size_t i = 0; i < k; i++)
			memcpy(w + i * nr, j->w + i * n + c0, nr * sizeof *w);
	}
	/* My block of the gathered buffer is Y[:, c0:c0+nr] stored densely. */
	float *mine = b.dry ? NULL : y + m * c0;
	rc = sl_dev_sgemm(d, 0, 0, (int)m, (int)nr, (int)k, 1.0f, x, (int)k, w, (int)nr, 0.0f, mine,
	                  (int)nr, "sgemm column shard", err);
	if (rc == SL_OK) {
		sl_group g = sl_group_all(j->t);
		rc = sl_allgather(d, &g, y, m * n, counts, s->algo, err);
	}
	if (rc == SL_OK && r == 0 && !b.dry)
		for (int q = 0; q < j->t; q++) {
			size_t bc = j->off[q], bn = j->off[q + 1] - bc;
			const float *blk = y + m * bc;
			for (size_t i = 0; i < m; i++)
				memcpy(j->y + i * n + bc, blk + i * bn, bn * sizeof *blk);
		}
out:
	drop_all(d, &b);
	return rc;
}

static int run_row(sl_dev *d, struct job *j, sl_err *err)
{
	const sl_gemm_spec *s = j->s;
	int r = sl_dev_id(d);
	size_t m = (size_t)s->m, k = (size_t)s->k, n = (size_t)s->n;
	size_t k0 = j->off[r], kr = j->off[r + 1] - k0;
	struct bufs b = {.dry = j->dry};
	int rc;
	if ((rc = hold(d, &b, m * kr, "its column slice of X", err)) ||
	    (rc = hold(d, &b, kr * n, "its row shard of W", err)) ||
	    (rc = hold(d, &b, m * n, "its partial Y", err)))
		goto out;
	float *x = b.p[0], *w = b.p[1], *y = b.p[2];
	if (!b.dry) {
		for (size_t i = 0; i < m; i++)
			memcpy(x + i * kr, j->x + i * k + k0, kr * sizeof *x);
		memcpy(w, j->w + k0 * n, kr * n * sizeof *w);
	}
	rc = sl_dev_sgemm(d, 0, 0, (int)m, (int)n, (int)kr, 1.0f, x, (int)kr, w, (int)n, 0.0f, y,
	                  (int)n, "sgemm row shard", err);
	if (rc == SL_OK) {
		sl_group g = sl_group_all(j->t);
		rc = sl_allreduce(d, &g, y, m * n, s->algo, err);
	}
	if (rc == SL_OK && r == 0 && !b.dry)
		memcpy(j->y, y, m * n * sizeof *y);
out:
	drop_all(d, &b);
	return rc;
}

static int gemm_prog(sl_dev *d, void *arg, sl_err *err)
{
	struct job *j = arg;
	return j->s->split == SL_SPLIT_ROW ? run_row(d, j, err) : run_col(d, j, err);
}

static double cpu_now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

int sl_gemm_run(sl_cluster *c, const sl_gemm_spec *s, sl_gemm_result *res, sl_err *err)
{
	return sl_gemm_run_y(c, s, NULL, res, err);
}

int sl_gemm_run_y(sl_cluster *c, const sl_gemm_spec *s, float *y_out, sl_gemm_result *res,
                  sl_err *err)
{
	int t = sl_cluster_devices(c);
	const sl_cluster_config *cfg = sl_cluster_config_of(c);
	memset(res, 0, sizeof *res);
	int rc = sl_gemm_check(s, t, err);
	if (rc)
		return rc;
	size_t m = (size_t)s->m, k = (size_t)s->k, n = (size_t)s->n;
	if (cfg->timing_only && y_out)
		return sl_fail(err, SL_EINVAL, "a timing-only run computes no product to return");
	struct job j = {.s = s, .t = t, .dry = cfg->timing_only};
	sl_block_offsets(s->split == SL_SPLIT_ROW ? k : n, t, NULL, j.off);
	float *x = NULL, *w = NULL, *y = NULL, *ref = NULL;
	double ref_cpu = 0;
	if (j.dry) {
		rc = sl_cluster_run(c, gemm_prog, &j, err);
		if (rc)
			goto out;
		goto figures;
	}
	x = malloc(m * k * sizeof *x);
	w = malloc(k * n * sizeof *w);
	y = calloc(m * n, sizeof *y);
	ref = malloc(m * n * sizeof *ref);
	if (!x || !w || !y || !ref) {
		rc = sl_fail(err, SL_ENOMEM, "the host cannot hold the matrices of m=%d k=%d n=%d",
		             s->m, s->k, s->n);
		goto out;
	}
	sl_fill_random(x, m * k, s->seed * 2 + 1);
	sl_fill_random(w, k * n, s->seed * 2 + 2);

	j.x = x;
	j.w = w;
	j.y = y;
	rc = sl_cluster_run(c, gemm_prog, &j, err);
	if (rc)
		goto out;

	/* The reference: one plain sgemm on this thread. */
	double c0 = cpu_now();
	sl_host_sgemm(0, 0, s->m, s->n, s->k, 1.0f, x, s->k, w, s->n, 0.0f, ref, s->n);
	ref_cpu = cpu_now() - c0;
	double maxref = 0, maxdiff = 0;
	for (size_t i = 0; i < m * n; i++) {
		double dv = fabs((double)y[i] - (double)ref[i]);
		if (!(dv <= maxdiff))
			maxdiff = dv; /* also catches NaN */
		if (fabs(ref[i]) > maxref)
			maxref = fabs(ref[i]);
	}
	if (y_out)
		memcpy(y_out, y, m * n * sizeof *y);
	res->max_abs_error = maxdiff;
	res->max_rel_error = maxref > 0 ? maxdiff / maxref : maxdiff;
	res->checked = 1;

figures:;
	int slow = 0;
	for (int i = 0; i < t; i++) {
		sl_dev_stats st = sl_cluster_dev_stats(c, i);
		res->bytes_moved += st.bytes_sent;
		if (st.clock > sl_cluster_dev_stats(c, slow).clock)
			slow = i;
	}
	sl_dev_stats ss = sl_cluster_dev_stats(c, slow);
	res->emulated_time_s = ss.clock;
	res->compute_s = ss.compute_s;
	res->comm_s = ss.comm_s;
	res->single_time_s = cfg->timing != SL_TIMING_MODEL ? ref_cpu : sl_gemm_single_s(cfg, s);
	res->speedup = res->emulated_time_s > 0 ? res->single_time_s / res->emulated_time_s : 0;

	size_t maxshard = 0;
	for (int i = 0; i < t; i++)
		if (j.off[i + 1] - j.off[i] > maxshard)
			maxshard = j.off[i + 1] - j.off[i];
	sl_link_spec bn = sl_cost_ring_bottleneck_op(c, t, SL_COLL_ALLREDUCE, s->algo);
	res->predicted_s = sl_gemm_predict(cfg, s, t, (double)maxshard, bn);
out:
	free(x);
	free(w);
	free(y);
	free(ref);
	return rc;
}
