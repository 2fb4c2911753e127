/* SPDX-License-Identifier: MIT */
/* test_schedule.c - pipeline schedules: every pass exactly once, in an
 * order that respects its data, with the activation footprint each
 * schedule is known for. */
#include "testutil.h"

#include <stdlib.h>
#include <string.h>

#include "schedule.h"

/* Each (micro-batch, chunk) forward and backward once; backward after
 * forward; joined actions only as the backward half of an F+B pair. */
static void check_valid(sl_sched k, int p, int m, int v)
{
	int n = 2 * m * v;
	sl_pp_action *a = malloc(sizeof *a * n);
	for (int s = 0; s < p; s++) {
		sl_err err;
		assert_int_equal(sl_pp_schedule(k, p, m, v, s, a, &err), SL_OK);
		char *seen = calloc((size_t)2 * m * v, 1);
		for (int i = 0; i < n; i++) {
			assert_in_range(a[i].mb, 0, m - 1);
			assert_in_range(a[i].chunk, 0, v - 1);
			int key = a[i].mb * v + a[i].chunk;
			assert_int_equal(seen[a[i].bwd * m * v + key], 0);
			seen[a[i].bwd * m * v + key] = 1;
			if (a[i].bwd)
				assert_int_equal(seen[key], 1);
			if (a[i].joined) {
				assert_int_equal(k, SL_SCHED_INTERLEAVED);
				assert_true(i > 0 && a[i].bwd && !a[i - 1].bwd);
			}
		}
		free(seen);
	}
	free(a);
}

static void test_every_pass_once(void **state)
{
	(void)state;
	for (int p = 1; p <= 5; p++)
		for (int m = 1; m <= 9; m++) {
			check_valid(SL_SCHED_GPIPE, p, m, 1);
			check_valid(SL_SCHED_1F1B, p, m, 1);
			for (int v = 2; v <= 4 && p > 1; v++)
				if (m % p == 0)
					check_valid(SL_SCHED_INTERLEAVED, p, m, v);
		}
}

/* GPipe holds all m micro-batches at once; 1F1B at most p - s; interleaved
 * (Megatron-LM) its warm-up forwards plus one. */
static void test_inflight_peaks(void **state)
{
	(void)state;
	sl_pp_action a[512];
	sl_err err;
	for (int p = 1; p <= 5; p++)
		for (int m = 1; m <= 12; m++)
			for (int s = 0; s < p; s++) {
				sl_pp_schedule(SL_SCHED_GPIPE, p, m, 1, s, a, &err);
				assert_int_equal(sl_pp_inflight_peak(a, 2 * m), m);
				sl_pp_schedule(SL_SCHED_1F1B, p, m, 1, s, a, &err);
				assert_int_equal(sl_pp_inflight_peak(a, 2 * m),
				                 m < p - s ? m : p - s);
				for (int v = 2; v <= 3 && p > 1 && m % p == 0; v++) {
					sl_pp_schedule(SL_SCHED_INTERLEAVED, p, m, v, s, a, &err);
					int warm = m == p ? m * v : (p - s - 1) * 2 + (v - 1) * p;
					int peak = warm >= m * v ? m * v : warm + 1;
					assert_int_equal(sl_pp_inflight_peak(a, 2 * m * v), peak);
				}
			}
}

static void test_1f1b_order(void **state)
{
	(void)state;
	sl_pp_action a[8];
	sl_err err;
	/* p=3, m=4, stage 0: two warm-up forwards, then F B F B, then B B. */
	sl_pp_schedule(SL_SCHED_1F1B, 3, 4, 1, 0, a, &err);
	const int bwd[8] = {0, 0, 0, 1, 0, 1, 1, 1}, mb[8] = {0, 1, 2, 0, 3, 1, 2, 3};
	for (int i = 0; i < 8; i++) {
		assert_int_equal(a[i].bwd, bwd[i]);
		assert_int_equal(a[i].mb, mb[i]);
	}
}

static void test_invalid(void **state)
{
	(void)state;
	sl_err err;
	assert_int_equal(sl_pp_check(SL_SCHED_1F1B, 2, 4, 2, &err), SL_EINVAL);
	assert_non_null(strstr(err.msg, "--chunks=2 needs --schedule=interleaved"));
	assert_int_equal(sl_pp_check(SL_SCHED_INTERLEAVED, 1, 4, 2, &err), SL_EINVAL);
	assert_non_null(strstr(err.msg, "needs pp of 2 or more"));
	assert_int_equal(sl_pp_check(SL_SCHED_INTERLEAVED, 2, 4, 1, &err), SL_EINVAL);
	assert_non_null(strstr(err.msg, "--chunks of 2 or more"));
	assert_int_equal(sl_pp_check(SL_SCHED_INTERLEAVED, 4, 6, 2, &err), SL_EINVAL);
	assert_non_null(strstr(err.msg, "6 is not a multiple of 4"));
	sl_sched k;
	assert_int_equal(sl_sched_parse("interleaved", &k), SL_OK);
	assert_int_equal(k, SL_SCHED_INTERLEAVED);
	assert_int_equal(sl_sched_parse("zigzag", &k), SL_EINVAL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_every_pass_once),
	    cmocka_unit_test(test_inflight_peaks),
	    cmocka_unit_test(test_1f1b_order),
	    cmocka_unit_test(test_invalid),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
