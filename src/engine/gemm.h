/* SPDX-License-Identifier: MIT */
/* gemm.h - Y = X W sharded over the devices of a cluster.
 *
 * Column-wise: device r holds W[:, cols_r] and all of X, computes Y[:, cols_r],
 * and an all-gather assembles Y.  Row-wise: device r holds W[rows_r, :] and
 * X[:, rows_r], computes a partial Y, and an all-reduce sums the partials.
 * Uneven splits get uneven shards. */
#ifndef SL_GEMM_H
#define SL_GEMM_H

#include <stdint.h>

#include "cluster.h"
#include "coll.h"

typedef enum sl_split { SL_SPLIT_SINGLE, SL_SPLIT_COL, SL_SPLIT_ROW, SL_SPLIT_N } sl_split;

const char *sl_split_name(sl_split s);
int sl_split_parse(const char *s, sl_split *out);

typedef struct sl_gemm_spec {
	sl_split split;
	int m, k, n;
	sl_algo algo;
	uint64_t seed;
} sl_gemm_spec;

typedef struct sl_gemm_result {
	double emulated_time_s; /* the slowest device's clock at the end */
	double single_time_s;   /* the same product on one device of the same kind */
	double speedup;
	double predicted_s;                  /* the analytic model's figure */
	double compute_s;                    /* the slowest device's compute part */
	double comm_s;                       /* the slowest device's communication part */
	uint64_t bytes_moved;                /* sum over devices of bytes sent */
	double max_abs_error, max_rel_error; /* against a single cblas_sgemm on the host */
	int checked; /* 0 on a timing-only run: nothing was computed to check */
} sl_gemm_result;

/* The analytic model of the product on cfg's devices (all t of them),
 * its collective over a ring whose slowest link is bn: the largest shard's
 * GEMM (at the device's rate, or realistic kernel time, device.h) plus the
 * collective of the m x n result at the precision's element size.  And
 * the same product on one device. */
double sl_gemm_predict(const sl_cluster_config *cfg, const sl_gemm_spec *s, int t, double maxshard,
                       sl_link_spec bn);
double sl_gemm_single_s(const sl_cluster_config *cfg, const sl_gemm_spec *s);

/* Check that the shape can be split over t devices; message says which
 * dimension and why not. */
int sl_gemm_check(const sl_gemm_spec *s, int t, sl_err *err);

/* Run the scenario on c (which must have 1 device for SL_SPLIT_SINGLE, any
 * number otherwise) and fill res.  Device statistics stay in c. */
int sl_gemm_run(sl_cluster *c, const sl_gemm_spec *s, sl_gemm_result *res, sl_err *err);
/* The same, and when y is not NULL copy the assembled Y [m,n] (row-major)
 * there, so a caller can check the product itself. */
int sl_gemm_run_y(sl_cluster *c, const sl_gemm_spec *s, float *y, sl_gemm_result *res, sl_err *err);

/* Deterministic test data in [-1, 1) from a seed.  sl_gemm_run multiplies
 * X [m,k] = sl_fill_random(seed * 2 + 1) by W [k,n] = sl_fill_random(seed * 2 + 2),
 * both row-major. */
void sl_fill_random(float *x, size_t n, uint64_t seed);

#endif
