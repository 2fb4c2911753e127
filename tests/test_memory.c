/* SPDX-License-Identifier: MIT */
/* Device memory accounting and the out-of-memory error.
 *
 * Device programs run on their own threads, where cmocka cannot fail a
 * test: they record what they saw and the main thread checks it. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "coll.h"
#include "gemm.h"
#include "scenario.h"
#include "testutil.h"

#define KiB 1024u
#define MiB (1024u * 1024u)
#define MAXOBS 16

struct obs {
	uint64_t cur, peak;
	int rc;
};

struct mem_job {
	int mode;
	int fail_dev, fail_after; /* which device runs out, after how many all-reduces */
	struct obs o[SL_MAX_DEVICES][MAXOBS];
	int nobs[SL_MAX_DEVICES];
	int rc[SL_MAX_DEVICES];
	sl_err err[SL_MAX_DEVICES];
};

static void see(sl_dev *d, struct mem_job *j, int rc)
{
	int id = sl_dev_id(d);
	sl_dev_stats s = sl_cluster_dev_stats(sl_dev_cluster(d), id);
	if (j->nobs[id] < MAXOBS)
		j->o[id][j->nobs[id]++] = (struct obs){s.mem_current, s.mem_peak, rc};
}

/* ---- accounting ---- */

/* In units of u = (id + 1) KiB, so every device's figures differ:
 * alloc 10, reserve 50, free 10, alloc 30, release 50, alloc 5, free 30, free 5. */
static const uint64_t acc_cur[] = {10, 60, 50, 80, 30, 35, 5, 0};
static const uint64_t acc_peak[] = {10, 60, 60, 80, 80, 80, 80, 80};

static int accounting_prog(sl_dev *d, void *arg, sl_err *err)
{
	struct mem_job *j = arg;
	size_t u = KiB * (size_t)(sl_dev_id(d) + 1);
	if (j->mode == 1) { /* the second run: one small buffer */
		void *p = sl_dev_alloc(d, 7 * u, "small", err);
		see(d, j, p ? SL_OK : err->code);
		sl_dev_free(d, p, 7 * u);
		return SL_OK;
	}
	char *a = sl_dev_alloc(d, 10 * u, "a", err);
	see(d, j, a ? SL_OK : err->code);
	see(d, j, sl_dev_reserve(d, 50 * u, "reserved", err));
	memset(a, 1, 10 * u); /* the buffer is real host memory */
	sl_dev_free(d, a, 10 * u);
	see(d, j, SL_OK);
	char *b = sl_dev_alloc(d, 30 * u, "b", err);
	see(d, j, b ? SL_OK : err->code);
	sl_dev_release(d, 50 * u);
	see(d, j, SL_OK);
	char *c = sl_dev_alloc(d, 5 * u, "c", err);
	see(d, j, c ? SL_OK : err->code);
	sl_dev_free(d, b, 30 * u);
	see(d, j, SL_OK);
	sl_dev_free(d, c, 5 * u);
	see(d, j, SL_OK);
	return SL_OK;
}

static void test_accounting(void **st)
{
	(void)st;
	int p = 3;
	sl_cluster_config cfg = tu_config(p, 100e9, 1e-6);
	cfg.memory = 1 * MiB;
	sl_cluster *c = tu_create(&cfg);
	struct mem_job *j = calloc(1, sizeof *j);
	sl_err err = {0};
	assert_int_equal(sl_cluster_run(c, accounting_prog, j, &err), SL_OK);
	for (int d = 0; d < p; d++) {
		uint64_t u = KiB * (uint64_t)(d + 1);
		assert_int_equal(j->nobs[d], 8);
		for (int i = 0; i < 8; i++) {
			assert_int_equal(j->o[d][i].rc, SL_OK);
			if (j->o[d][i].cur != acc_cur[i] * u || j->o[d][i].peak != acc_peak[i] * u)
				fail_msg(
				    "device %d step %d: current %llu peak %llu, want %llu and %llu",
				    d, i, (unsigned long long)j->o[d][i].cur,
				    (unsigned long long)j->o[d][i].peak,
				    (unsigned long long)(acc_cur[i] * u),
				    (unsigned long long)(acc_peak[i] * u));
		}
		sl_dev_stats s = sl_cluster_dev_stats(c, d);
		assert_int_equal(s.mem_current, 0);
		assert_int_equal(s.mem_peak, 80 * u);
	}
	/* A new run starts its peaks afresh. */
	memset(j, 0, sizeof *j);
	j->mode = 1;
	assert_int_equal(sl_cluster_run(c, accounting_prog, j, &err), SL_OK);
	for (int d = 0; d < p; d++) {
		uint64_t u = KiB * (uint64_t)(d + 1);
		assert_int_equal(j->o[d][0].cur, 7 * u);
		assert_int_equal(sl_cluster_dev_stats(c, d).mem_peak, 7 * u);
	}
	free(j);
	sl_cluster_destroy(c);
}

/* ---- the capacity boundary ---- */

static int boundary_prog(sl_dev *d, void *arg, sl_err *err)
{
	struct mem_job *j = arg;
	uint64_t cap = sl_cluster_config_of(sl_dev_cluster(d))->memory;
	char *all = sl_dev_alloc(d, cap, "everything", err);
	see(d, j, all ? SL_OK : err->code);               /* exactly the capacity fits */
	see(d, j, sl_dev_reserve(d, 1, "one byte", err)); /* one more byte does not */
	sl_dev_free(d, all, cap);
	see(d, j, sl_dev_reserve(d, cap - 100, "most", err));
	see(d, j, sl_dev_reserve(d, 101, "101 bytes", err));
	see(d, j, sl_dev_reserve(d, 100, "the last 100 bytes", err));
	sl_dev_release(d, cap);
	/* A request larger than the whole device, and one that would wrap. */
	see(d, j, sl_dev_reserve(d, cap + 1, "too much", err));
	see(d, j, sl_dev_reserve(d, UINT64_MAX, "absurd", err));
	return SL_OK;
}

static void test_capacity_boundary(void **st)
{
	(void)st;
	sl_cluster_config cfg = tu_config(2, 100e9, 1e-6);
	cfg.memory = 3 * MiB + 17;
	sl_cluster *c = tu_create(&cfg);
	struct mem_job *j = calloc(1, sizeof *j);
	sl_err err = {0};
	assert_int_equal(sl_cluster_run(c, boundary_prog, j, &err), SL_OK);
	uint64_t cap = cfg.memory;
	for (int d = 0; d < 2; d++) {
		const struct obs *o = j->o[d];
		assert_int_equal(o[0].rc, SL_OK);
		assert_int_equal(o[0].cur, cap);
		assert_int_equal(o[1].rc, SL_EDEVMEM);
		assert_int_equal(o[1].cur, cap); /* a refused request changes nothing */
		assert_int_equal(o[2].rc, SL_OK);
		assert_int_equal(o[3].rc, SL_EDEVMEM);
		assert_int_equal(o[3].cur, cap - 100);
		assert_int_equal(o[4].rc, SL_OK);
		assert_int_equal(o[4].cur, cap);
		assert_int_equal(o[5].rc, SL_EDEVMEM);
		assert_int_equal(o[5].cur, 0);
		assert_int_equal(o[6].rc, SL_EDEVMEM);
		assert_int_equal(o[6].cur, 0);
		assert_int_equal(o[6].peak, cap);
	}
	free(j);
	sl_cluster_destroy(c);
}

/* ---- out of memory in a run ---- */

/* Everyone does fail_after all-reduces, then the failing device asks for
 * more than is free while the others start one more all-reduce and wait
 * for it: the run returns its error, the others are cancelled. */
static int oom_prog(sl_dev *d, void *arg, sl_err *err)
{
	struct mem_job *j = arg;
	int id = sl_dev_id(d);
	sl_group g = sl_group_all(sl_cluster_devices(sl_dev_cluster(d)));
	size_t count = 4096;
	float *buf = sl_dev_alloc(d, count * sizeof *buf, "all-reduce buffer", err);
	int rc = buf ? SL_OK : err->code;
	for (size_t i = 0; buf && i < count; i++)
		buf[i] = tu_val(id, i);
	for (int r = 0; r < j->fail_after && rc == SL_OK; r++)
		rc = sl_allreduce(d, &g, buf, count, SL_ALGO_RING, err);
	if (rc == SL_OK && id == j->fail_dev) {
		/* 16 KiB held; 768 KiB of weights, then 512 KiB with 240 KiB free. */
		if ((rc = sl_dev_reserve(d, 768 * KiB, "weights", err)) == SL_OK) {
			void *act = sl_dev_alloc(d, 512 * KiB, "activations", err);
			see(d, j, act ? SL_OK : err->code);
			rc = act ? SL_OK : err->code;
			sl_dev_free(d, act, 512 * KiB);
			sl_dev_release(d, 768 * KiB);
		}
	} else if (rc == SL_OK) {
		rc = sl_allreduce(d, &g, buf, count, SL_ALGO_RING, err);
	}
	sl_dev_free(d, buf, count * sizeof *buf);
	j->rc[id] = rc;
	j->err[id] = *err;
	return rc;
}

static void test_oom_in_run(void **st)
{
	(void)st;
	tu_watchdog(120);
	int p = 4;
	sl_cluster_config cfg = tu_config(p, 100e9, 1e-6);
	cfg.memory = 1 * MiB;
	sl_cluster *c = tu_create(&cfg);
	for (int fail_dev = 0; fail_dev < p; fail_dev++)
		for (int after = 0; after <= 2; after++) {
			struct mem_job *j = calloc(1, sizeof *j);
			j->fail_dev = fail_dev;
			j->fail_after = after;
			sl_err err = {0};
			int rc = sl_cluster_run(c, oom_prog, j, &err);
			if (rc != SL_EDEVMEM)
				fail_msg(
				    "device %d failing after %d all-reduces: run returned %d (%s)",
				    fail_dev, after, rc, err.msg);
			assert_int_equal(err.code, SL_EDEVMEM);
			/* The message names the device, what was asked and what is free. */
			char dev[32];
			snprintf(dev, sizeof dev, "device %d ", fail_dev);
			const char *want[] = {dev, "activations", "512 KiB", "240 KiB", "free"};
			for (size_t w = 0; w < sizeof want / sizeof *want; w++)
				if (!strstr(err.msg, want[w]))
					fail_msg("the message does not say '%s': %s", want[w],
					         err.msg);
			/* A refused request leaves the accounting as it was. */
			assert_int_equal(j->nobs[fail_dev], 1);
			assert_int_equal(j->o[fail_dev][0].rc, SL_EDEVMEM);
			assert_int_equal(j->o[fail_dev][0].cur, 784 * KiB);
			assert_int_equal(j->o[fail_dev][0].peak, 784 * KiB);
			for (int d = 0; d < p; d++) {
				if (d == fail_dev)
					assert_int_equal(j->rc[d], SL_EDEVMEM);
				else if (j->rc[d] != SL_ECANCEL)
					fail_msg("device %d (waiting in an all-reduce) "
					         "returned %d, not SL_ECANCEL: %s",
					         d, j->rc[d], j->err[d].msg);
				assert_int_equal(sl_cluster_dev_stats(c, d).mem_current, 0);
			}
			free(j);
		}
	/* The cluster is usable after a failed run. */
	struct mem_job *j = calloc(1, sizeof *j);
	j->fail_dev = -1;
	j->fail_after = 1;
	sl_err err = {0};
	if (sl_cluster_run(c, oom_prog, j, &err))
		fail_msg("a clean run after the failures: %s", err.msg);
	free(j);
	sl_cluster_destroy(c);
	alarm(0);
}

/* ---- a GEMM whose shard does not fit ---- */

/* m=16, k=n=512: W is 1 MiB.  With 512 KiB per device W fits neither on one
 * device nor as half of it row-wise, but a quarter of it does. */
static int gemm_fits(sl_split split, int p, sl_gemm_result *res, sl_err *err, uint64_t *peak)
{
	sl_scenario sc;
	sl_scenario_default(&sc);
	sc.cluster = tu_config(p, 100e9, 1e-6);
	sc.cluster.memory = 512 * KiB;
	sc.gemm = (sl_gemm_spec){.split = split, .m = 16, .k = 512, .n = 512, .seed = 3};
	sl_cluster *c = NULL;
	int rc = sl_scenario_run(&sc, &c, res, err);
	*peak = 0;
	for (int d = 0; c && d < sl_cluster_devices(c); d++) {
		sl_dev_stats s = sl_cluster_dev_stats(c, d);
		if (s.mem_peak > *peak)
			*peak = s.mem_peak;
		assert_int_equal(s.mem_current, 0);
	}
	sl_cluster_destroy(c);
	return rc;
}

static void test_gemm_does_not_fit(void **st)
{
	(void)st;
	tu_watchdog(120);
	struct {
		sl_split split;
		int p, fits;
	} cases[] = {
	    {SL_SPLIT_SINGLE, 1, 0}, {SL_SPLIT_ROW, 2, 0}, {SL_SPLIT_COL, 2, 0},
	    {SL_SPLIT_COL, 4, 1},    {SL_SPLIT_ROW, 4, 1},
	};
	for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
		sl_gemm_result res;
		sl_err err = {0};
		uint64_t peak;
		int rc = gemm_fits(cases[i].split, cases[i].p, &res, &err, &peak);
		const char *name = sl_split_name(cases[i].split);
		if (cases[i].fits) {
			if (rc)
				fail_msg("%s over %d should fit in 512 KiB: %s", name, cases[i].p,
				         err.msg);
			/* Every device held at least its quarter of W, and never more than it has.
			 */
			assert_true(peak >= 512u * 512u * 4u / 4u);
			assert_true(peak <= 512 * KiB);
			assert_true(res.max_rel_error < 1e-5);
		} else {
			if (rc != SL_EDEVMEM)
				fail_msg("%s over %d: want SL_EDEVMEM, got %d (%s)", name,
				         cases[i].p, rc, err.msg);
			if (!strstr(err.msg, "device ") || !strstr(err.msg, "out of memory") ||
			    !strstr(err.msg, "free"))
				fail_msg("%s over %d: unclear message: %s", name, cases[i].p,
				         err.msg);
			assert_true(peak <= 512 * KiB);
		}
	}
	alarm(0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_accounting),
	    cmocka_unit_test(test_capacity_boundary),
	    cmocka_unit_test(test_oom_in_run),
	    cmocka_unit_test(test_gemm_does_not_fit),
	};
	return cmocka_run_group_tests_name("device memory", tests, NULL, NULL);
}
