/* SPDX-License-Identifier: MIT */
/* Sharded GEMM against a naive triple-loop product written here.
 *
 * The inputs come from sl_fill_random with the seeds gemm.h documents (that
 * function is only the data source); the reference product is accumulated in
 * double, independently of BLAS.  An element passes when it is within the
 * fp32 error bound of a k-term dot product plus p-1 summed partials:
 * |y - exact| <= (k + p) u sum_l |x_il w_lj|, with u = 2^-24. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cblas.h>

#include "gemm.h"
#include "scenario.h"
#include "testutil.h"

#define U (1.0 / 16777216.0) /* fp32 unit roundoff, 2^-24 */

struct ref {
	int m, k, n;
	float *x, *w;
	double *exact, *mag; /* the product, and sum |x||w| per element */
	double maxexact;
};

static void ref_make(struct ref *r, int m, int k, int n, uint64_t seed)
{
	r->m = m;
	r->k = k;
	r->n = n;
	r->x = malloc((size_t)m * k * sizeof *r->x);
	r->w = malloc((size_t)k * n * sizeof *r->w);
	r->exact = malloc((size_t)m * n * sizeof *r->exact);
	r->mag = malloc((size_t)m * n * sizeof *r->mag);
	assert_non_null(r->x);
	assert_non_null(r->w);
	assert_non_null(r->exact);
	assert_non_null(r->mag);
	sl_fill_random(r->x, (size_t)m * k, seed * 2 + 1);
	sl_fill_random(r->w, (size_t)k * n, seed * 2 + 2);
	r->maxexact = 0;
	for (int i = 0; i < m; i++)
		for (int j = 0; j < n; j++) {
			double s = 0, a = 0;
			for (int l = 0; l < k; l++) {
				double xv = r->x[(size_t)i * k + l], wv = r->w[(size_t)l * n + j];
				s += xv * wv;
				a += fabs(xv * wv);
			}
			r->exact[(size_t)i * n + j] = s;
			r->mag[(size_t)i * n + j] = a;
			if (fabs(s) > r->maxexact)
				r->maxexact = fabs(s);
		}
}

static void ref_free(struct ref *r)
{
	free(r->x);
	free(r->w);
	free(r->exact);
	free(r->mag);
}

/* Run one case and check the product, the engine's error figures, the
 * shards each device got and the bytes moved. */
static void check_case(sl_split split, sl_algo algo, int p, int m, int k, int n)
{
	char what[128];
	snprintf(what, sizeof what, "%s %s p=%d m=%d k=%d n=%d", sl_split_name(split),
	         sl_algo_name(algo), p, m, k, n);
	uint64_t seed = (uint64_t)(p * 1000003 + m * 101 + k * 11 + n + (int)split * 7);
	struct ref r;
	ref_make(&r, m, k, n, seed);

	sl_cluster *c = tu_cluster(p, 100e9, 1e-6);
	sl_gemm_spec s = {.split = split, .m = m, .k = k, .n = n, .algo = algo, .seed = seed};
	sl_gemm_result res;
	sl_err err = {0};
	float *y = malloc((size_t)m * n * sizeof *y);
	assert_non_null(y);
	for (size_t i = 0; i < (size_t)m * n; i++)
		y[i] = NAN; /* anything the engine fails to write shows */
	int rc = sl_gemm_run_y(c, &s, y, &res, &err);
	if (rc)
		fail_msg("%s: %s", what, err.msg);

	/* 1. The product, element by element, against the exact one. */
	double gamma = (k + p) * U / (1 - (k + p) * U);
	double myabs = 0, bmax = 0;
	for (int i = 0; i < m; i++)
		for (int j = 0; j < n; j++) {
			size_t e = (size_t)i * n + j;
			double d = fabs((double)y[e] - r.exact[e]);
			double bound = gamma * r.mag[e];
			if (!(d <= bound))
				fail_msg(
				    "%s: Y[%d,%d] = %.9g, exact %.17g, off by %.3g (bound %.3g)",
				    what, i, j, (double)y[e], r.exact[e], d, bound);
			if (d > myabs)
				myabs = d;
			/* What a plain k-term fp32 product may differ from the exact one. */
			double bk = k * U / (1 - k * U) * r.mag[e];
			if (bk > bmax)
				bmax = bk;
		}

	/* 2. The engine's figures are against a single cblas_sgemm of the same
	 * inputs: recompute that here and compare, and tie them to the exact
	 * comparison by the triangle inequality. */
	float *yb = malloc((size_t)m * n * sizeof *yb);
	assert_non_null(yb);
	cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, m, n, k, 1.0f, r.x, k, r.w, n, 0.0f,
	            yb, n);
	double blasabs = 0;
	for (size_t e = 0; e < (size_t)m * n; e++) {
		double d = fabs((double)y[e] - (double)yb[e]);
		if (!(d <= blasabs))
			blasabs = d;
	}
	if (!(res.max_abs_error >= 0 && res.max_rel_error >= 0))
		fail_msg("%s: error figures %g %g", what, res.max_abs_error, res.max_rel_error);
	if (res.max_abs_error != blasabs)
		fail_msg(
		    "%s: engine reports max_abs_error %.17g; against cblas_sgemm here it is %.17g",
		    what, res.max_abs_error, blasabs);
	if (fabs(res.max_abs_error - myabs) > bmax)
		fail_msg(
		    "%s: engine's max_abs_error %.3g vs %.3g against the exact product, more apart "
		    "than a BLAS product can be from it (%.3g)",
		    what, res.max_abs_error, myabs, bmax);
	if (fabs(res.max_rel_error * r.maxexact - res.max_abs_error) >
	    res.max_rel_error * bmax + 1e-300)
		fail_msg("%s: max_rel_error %.3g is not max_abs_error %.3g over max |Y| %.6g", what,
		         res.max_rel_error, res.max_abs_error, r.maxexact);
	/* One device computing the whole product does exactly what the reference sgemm does. */
	if (p == 1 && res.max_abs_error != 0)
		fail_msg("%s: one device, yet max_abs_error is %.3g", what, res.max_abs_error);

	/* 3. The shards: every device got one, sizes differ by at most one and add
	 * up to the split dimension; the flops say how big each was. */
	int dim = split == SL_SPLIT_ROW ? k : n;
	double other = split == SL_SPLIT_ROW ? 2.0 * m * n : 2.0 * m * k;
	int lo = dim / p, hi = (dim + p - 1) / p, total = 0;
	for (int d = 0; d < p; d++) {
		sl_dev_stats st = sl_cluster_dev_stats(c, d);
		double shard = st.flops / other;
		if (shard != floor(shard) || shard < lo || shard > hi)
			fail_msg("%s: device %d computed a shard of %g (want %d..%d)", what, d,
			         shard, lo, hi);
		total += (int)shard;
		if (st.mem_current != 0)
			fail_msg("%s: device %d still holds %llu bytes", what, d,
			         (unsigned long long)st.mem_current);
	}
	if (total != dim)
		fail_msg("%s: shards add up to %d, not %d", what, total, dim);

	/* 4. Ring collectives send every block p-1 times per pass: all-gather one
	 * pass, all-reduce two (reduce-scatter then all-gather). */
	if (algo == SL_ALGO_RING) {
		uint64_t ybytes = (uint64_t)m * n * sizeof(float);
		uint64_t want = split == SL_SPLIT_ROW ? 2 * (uint64_t)(p - 1) * ybytes
		                                      : (uint64_t)(p - 1) * ybytes;
		if (res.bytes_moved != want)
			fail_msg("%s: %llu bytes moved, want %llu", what,
			         (unsigned long long)res.bytes_moved, (unsigned long long)want);
	}

	free(y);
	free(yb);
	sl_cluster_destroy(c);
	ref_free(&r);
}

/* Every p the split allows, up to 8. */
static void sweep(int m, int k, int n)
{
	for (int p = 1; p <= 8; p++) {
		if (n >= p)
			check_case(SL_SPLIT_COL, SL_ALGO_RING, p, m, k, n);
		if (k >= p)
			check_case(SL_SPLIT_ROW, SL_ALGO_RING, p, m, k, n);
	}
	check_case(SL_SPLIT_SINGLE, SL_ALGO_RING, 1, m, k, n);
}

static void test_one_by_one(void **st)
{
	(void)st;
	sweep(1, 1, 1);
}

/* A single output element: only row-wise splits beyond one device. */
static void test_dot_product(void **st)
{
	(void)st;
	sweep(1, 9, 1);
	sweep(1, 8, 1);
}

static void test_3_5_7(void **st)
{
	(void)st;
	sweep(3, 5, 7);
	sweep(7, 5, 3);
}

static void test_primes(void **st)
{
	(void)st;
	sweep(13, 17, 19);
	sweep(2, 31, 11);
}

/* 120 divides by 1..6 and 8: even shards except at p = 7. */
static void test_even(void **st)
{
	(void)st;
	sweep(8, 120, 120);
}

/* Shards that differ in size at almost every p. */
static void test_uneven(void **st)
{
	(void)st;
	sweep(10, 67, 53);
	sweep(5, 9, 10); /* n = p + 2 at p = 8: two shards of 2, six of 1 */
}

/* Large enough that OpenBLAS blocks the shards. */
static void test_blocked(void **st)
{
	(void)st;
	check_case(SL_SPLIT_COL, SL_ALGO_RING, 3, 64, 300, 190);
	check_case(SL_SPLIT_ROW, SL_ALGO_RING, 8, 64, 300, 190);
	check_case(SL_SPLIT_SINGLE, SL_ALGO_RING, 1, 64, 300, 190);
}

/* The tree algorithms assemble the same product. */
static void test_tree(void **st)
{
	(void)st;
	for (int p = 1; p <= 8; p++) {
		check_case(SL_SPLIT_COL, SL_ALGO_TREE, p, 6, 11, 13);
		check_case(SL_SPLIT_ROW, SL_ALGO_TREE, p, 6, 11, 13);
	}
}

/* A shape that cannot be split: SL_EINVAL naming the dimension, from the
 * check, the run and the scenario alike. */
static void expect_einval(sl_split split, int p, int m, int k, int n, const char *dim)
{
	sl_gemm_spec s = {.split = split, .m = m, .k = k, .n = n, .algo = SL_ALGO_RING, .seed = 1};
	sl_err err = {0};
	char name[32];
	snprintf(name, sizeof name, "%s=%d", dim, dim[0] == 'n' ? n : k);

	assert_int_equal(sl_gemm_check(&s, p, &err), SL_EINVAL);
	assert_int_equal(err.code, SL_EINVAL);
	if (!strstr(err.msg, name))
		fail_msg("check %s p=%d: message does not name %s: %s", sl_split_name(split), p,
		         name, err.msg);

	sl_cluster *c = tu_cluster(p, 100e9, 1e-6);
	sl_gemm_result res;
	memset(&err, 0, sizeof err);
	assert_int_equal(sl_gemm_run(c, &s, &res, &err), SL_EINVAL);
	if (!strstr(err.msg, name))
		fail_msg("run %s p=%d: message does not name %s: %s", sl_split_name(split), p, name,
		         err.msg);
	sl_cluster_destroy(c);

	sl_scenario sc;
	sl_scenario_default(&sc);
	sc.cluster.devices = p;
	sc.gemm = s;
	sl_cluster *out = NULL;
	memset(&err, 0, sizeof err);
	assert_int_equal(sl_scenario_run(&sc, &out, &res, &err), SL_EINVAL);
	assert_null(out);
	if (!strstr(err.msg, name))
		fail_msg("scenario %s p=%d: message does not name %s: %s", sl_split_name(split), p,
		         name, err.msg);
}

static void test_cannot_split(void **st)
{
	(void)st;
	expect_einval(SL_SPLIT_COL, 2, 1, 1, 1, "n");
	expect_einval(SL_SPLIT_COL, 8, 3, 5, 7, "n");
	expect_einval(SL_SPLIT_COL, 5, 9, 40, 4, "n");
	expect_einval(SL_SPLIT_ROW, 2, 1, 1, 1, "k");
	expect_einval(SL_SPLIT_ROW, 6, 3, 5, 7, "k");
	expect_einval(SL_SPLIT_ROW, 8, 40, 7, 40, "k");
	/* The single strategy on a cluster of several devices is a misuse too. */
	sl_cluster *c = tu_cluster(2, 100e9, 1e-6);
	sl_gemm_spec s = {.split = SL_SPLIT_SINGLE, .m = 4, .k = 4, .n = 4, .seed = 1};
	sl_gemm_result res;
	sl_err err = {0};
	assert_int_equal(sl_gemm_run(c, &s, &res, &err), SL_EINVAL);
	assert_non_null(strstr(err.msg, "single"));
	sl_cluster_destroy(c);
}

/* The scenario path (what the command line uses) runs the same product:
 * single forces one device, and its figures match a direct run. */
static void test_scenario(void **st)
{
	(void)st;
	sl_scenario sc;
	sl_scenario_default(&sc);
	sc.cluster = tu_config(4, 100e9, 1e-6);
	sc.cluster.flops = 1e12;
	sc.gemm = (sl_gemm_spec){.split = SL_SPLIT_SINGLE, .m = 12, .k = 20, .n = 28, .seed = 5};
	sl_cluster *out = NULL;
	sl_gemm_result res;
	sl_err err = {0};
	if (sl_scenario_run(&sc, &out, &res, &err))
		fail_msg("single scenario: %s", err.msg);
	assert_int_equal(sl_cluster_devices(out), 1);
	tu_check_close(res.emulated_time_s, 2.0 * 12 * 20 * 28 / 1e12, 1e-12, "single: 2mnk/F");
	assert_true(res.max_abs_error == 0);
	sl_cluster_destroy(out);

	sc.gemm.split = SL_SPLIT_ROW;
	sc.cluster.devices = 3;
	if (sl_scenario_run(&sc, NULL, &res, &err))
		fail_msg("rowwise scenario: %s", err.msg);
	sl_cluster_config cfg = sc.cluster;
	sl_cluster *c = tu_create(&cfg);
	sl_gemm_result direct;
	if (sl_gemm_run(c, &sc.gemm, &direct, &err))
		fail_msg("rowwise direct: %s", err.msg);
	assert_true(res.max_abs_error == direct.max_abs_error);
	assert_true(res.emulated_time_s == direct.emulated_time_s);
	assert_int_equal(res.bytes_moved, direct.bytes_moved);
	sl_cluster_destroy(c);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_one_by_one),   cmocka_unit_test(test_dot_product),
	    cmocka_unit_test(test_3_5_7),        cmocka_unit_test(test_primes),
	    cmocka_unit_test(test_even),         cmocka_unit_test(test_uneven),
	    cmocka_unit_test(test_blocked),      cmocka_unit_test(test_tree),
	    cmocka_unit_test(test_cannot_split), cmocka_unit_test(test_scenario),
	};
	return cmocka_run_group_tests_name("sharded gemm", tests, NULL, NULL);
}
