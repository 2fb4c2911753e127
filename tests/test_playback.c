/* SPDX-License-Identifier: MIT */
/* Pause and breakpoints: the controls the TUI steps with. */
#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include <time.h>

#include "coll.h"
#include "trace.h"
#include "testutil.h"

#define N 4096

struct job {
	sl_cluster *c;
	float *buf[4];
	int rc;
	sl_err err;
};

static int prog(sl_dev *d, void *arg, sl_err *err)
{
	struct job *j = arg;
	sl_group g = sl_group_all(4);
	return sl_allreduce(d, &g, j->buf[sl_dev_id(d)], N, SL_ALGO_RING, err);
}

static void *runner(void *arg)
{
	struct job *j = arg;
	j->rc = sl_cluster_run(j->c, prog, j, &j->err);
	return NULL;
}

static void nap(void)
{
	struct timespec ts = {0, 30 * 1000 * 1000};
	nanosleep(&ts, NULL);
}

static double last_end(sl_cluster *c)
{
	sl_snapshot s;
	assert_int_equal(sl_trace_snapshot(sl_cluster_trace(c), &s), SL_OK);
	double t = 0;
	for (size_t i = 0; i < s.n; i++)
		if (s.ev[i].t1 > t)
			t = s.ev[i].t1;
	sl_snapshot_free(&s);
	return t;
}

/* With a = 1 us and B = 1 GB/s, each of the 6 ring steps of a 16 KiB
 * all-reduce over 4 devices lasts 1 us + 4096 B / 1 GB/s = 5.096 us. */
static void test_breakpoint_steps(void **state)
{
	(void)state;
	struct job j = {0};
	j.c = tu_cluster(4, 1e9, 1e-6);
	for (int i = 0; i < 4; i++) {
		j.buf[i] = malloc(N * sizeof(float));
		for (int k = 0; k < N; k++)
			j.buf[i][k] = (float)i;
	}
	double step = 1e-6 + (N * 4.0 / 4) / 1e9;
	sl_cluster_set_breakpoint(j.c, 0);
	pthread_t th;
	pthread_create(&th, NULL, runner, &j);
	nap();
	assert_true(last_end(j.c) <= 0);
	for (int k = 1; k <= 6; k++) {
		sl_cluster_set_breakpoint(j.c, k * step * (1 + 1e-9));
		/* Wait until the step's events land; never past the breakpoint. */
		for (int tries = 0; tries < 1000 && last_end(j.c) < k * step * (1 - 1e-9); tries++)
			nap();
		double t = last_end(j.c);
		assert_true(fabs(t - k * step) <= 1e-9 * k * step);
	}
	sl_cluster_set_breakpoint(j.c, INFINITY);
	pthread_join(th, NULL);
	assert_int_equal(j.rc, SL_OK);
	for (int i = 0; i < 4; i++) {
		assert_true(j.buf[i][7] == 6.0f);
		free(j.buf[i]);
	}
	sl_cluster_destroy(j.c);
}

static void test_pause_holds_and_cancel_frees(void **state)
{
	(void)state;
	struct job j = {0};
	j.c = tu_cluster(4, 1e9, 1e-6);
	for (int i = 0; i < 4; i++)
		j.buf[i] = calloc(N, sizeof(float));
	sl_cluster_pause(j.c, 1);
	assert_true(sl_cluster_paused(j.c));
	pthread_t th;
	pthread_create(&th, NULL, runner, &j);
	nap();
	assert_true(last_end(j.c) <= 0);
	/* Quitting while paused mid-run ends the run. */
	sl_cluster_cancel(j.c);
	pthread_join(th, NULL);
	assert_int_equal(j.rc, SL_ECANCEL);
	sl_cluster_pause(j.c, 0);
	/* The cluster runs again afterwards, to completion. */
	runner(&j);
	assert_int_equal(j.rc, SL_OK);
	for (int i = 0; i < 4; i++)
		free(j.buf[i]);
	sl_cluster_destroy(j.c);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_breakpoint_steps),
	    cmocka_unit_test(test_pause_holds_and_cancel_frees),
	};
	return cmocka_run_group_tests_name("playback", tests, NULL, NULL);
}
