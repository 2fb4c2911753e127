/* SPDX-License-Identifier: MIT */
/* test_plantable.c - the TUI's plan view without a terminal: its table
 * shows the plan's fitting layouts in the plan's order, sorts by each
 * column (ties in the plan's order) with the selection on its best row,
 * scrolls to keep the selection in sight; the background job gives the plan that
 * sl_plan_run gives, keeps it for the same model and cluster, reports a
 * model that fits nowhere with the planner's line, and stops when the view
 * goes away. */
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "plantable.h"
#include "testutil.h"

static sl_model_spec model(int layers, int batch)
{
	return tu_model(layers, 64, 256, 4, 16, batch);
}

static void plan_of(const sl_model_spec *m, const sl_cluster_config *c, sl_plan *p)
{
	sl_plan_spec s = {.model = *m, .cluster = *c};
	sl_err err = {0};
	if (sl_plan_run(&s, p, &err))
		fail_msg("plan: %s", err.msg);
}

/* The column's value, better = smaller, computed here from the row. */
static double better_low(const sl_plan_row *r, sl_pt_col c)
{
	switch (c) {
	case SL_PT_STEP:
		return sl_plan_time_key(r->est.step_s);
	case SL_PT_TOKENS:
		return -r->tokens_per_s;
	case SL_PT_MEM:
		return (double)r->est.mem_peak_bytes;
	case SL_PT_COMM:
		return r->comm_share;
	case SL_PT_BUBBLE:
		return r->est.bubble_fraction;
	default:
		return (double)(r->layout.tp * r->layout.pp);
	}
}

static void test_table(void **state)
{
	(void)state;
	sl_model_spec m = model(4, 16);
	sl_cluster_config c = tu_h100(8, 4);
	sl_plan p;
	plan_of(&m, &c, &p);
	assert_true(p.nfit > 20);
	sl_plantable *v = sl_plantable_create(-1);
	assert_non_null(v);
	sl_pt_reset(v, &p);
	assert_int_equal(sl_pt_count(v), p.nfit);
	for (int i = 0; i < p.nfit; i++) {
		assert_ptr_equal(sl_pt_row(v, i), &p.rows[i]);
		assert_int_equal(sl_pt_rank(v, i), i + 1);
	}
	assert_null(sl_pt_row(v, p.nfit));
	assert_int_equal(sl_pt_selected(v), 0);

	/* Each column, both ways; the selection goes to the first row. */
	for (int col = 0; col < SL_PT_NCOLS; col++)
		for (int rev = 0; rev < 2; rev++) {
			sl_pt_move(v, 7);
			sl_pt_sort(v, (sl_pt_col)col, rev);
			int r2;
			assert_int_equal(sl_pt_sorted_by(v, &r2), col);
			assert_int_equal(r2, rev);
			assert_int_equal(sl_pt_selected(v), 0);
			assert_int_equal(sl_pt_top(v, 5), 0);
			int seen[4096] = {0};
			for (int i = 0; i < sl_pt_count(v); i++) {
				int k = sl_pt_rank(v, i) - 1;
				assert_true(k >= 0 && k < p.nfit && !seen[k]);
				seen[k] = 1;
				if (i == 0)
					continue;
				double a = better_low(sl_pt_row(v, i - 1), (sl_pt_col)col);
				double b = better_low(sl_pt_row(v, i), (sl_pt_col)col);
				if (rev ? a < b : a > b)
					fail_msg("column %s%s: row %d out of order",
					         sl_pt_col_name(col), rev ? " reversed" : "", i);
				if (a == b)
					assert_true(sl_pt_rank(v, i - 1) < sl_pt_rank(v, i));
			}
		}
	/* By step time, better first, is the plan's own order. */
	sl_pt_sort(v, SL_PT_STEP, 0);
	for (int i = 0; i < p.nfit; i++)
		assert_int_equal(sl_pt_rank(v, i), i + 1);

	/* Moving clamps; the top keeps the selection in a window of 5. */
	sl_pt_move(v, -1000);
	assert_int_equal(sl_pt_selected(v), 0);
	assert_int_equal(sl_pt_top(v, 5), 0);
	sl_pt_move(v, 12);
	assert_int_equal(sl_pt_selected(v), 12);
	assert_int_equal(sl_pt_top(v, 5), 8);
	sl_pt_move(v, -2);
	assert_int_equal(sl_pt_top(v, 5), 8);
	sl_pt_move(v, -5);
	assert_int_equal(sl_pt_top(v, 5), 5);
	sl_pt_move(v, 100000);
	assert_int_equal(sl_pt_selected(v), p.nfit - 1);
	assert_int_equal(sl_pt_top(v, 5), p.nfit - 5);
	/* a window taller than the table starts at the top */
	assert_int_equal(sl_pt_top(v, p.nfit + 10), 0);
	sl_plantable_destroy(v);
	sl_plan_free(&p);
}

/* Wait for the job's byte on the pipe (the watchdog ends a hang). */
static void wait_wake(int fd)
{
	struct pollfd q = {.fd = fd, .events = POLLIN};
	assert_int_equal(poll(&q, 1, 60000), 1);
	char b[16];
	assert_true(read(fd, b, sizeof b) >= 1);
}

static void test_background(void **state)
{
	(void)state;
	int fds[2];
	assert_int_equal(pipe(fds), 0);
	sl_plantable *v = sl_plantable_create(fds[1]);
	const sl_err *e = NULL;
	assert_int_equal(sl_plantable_state(v, &e), 0);
	assert_null(sl_plantable_plan(v));

	sl_model_spec m = model(4, 16);
	sl_cluster_config c = tu_h100(8, 4);
	sl_err err = {0};
	assert_int_equal(
	    sl_plantable_start(v, &m, &c, SL_ATTN_MATERIALIZED, SL_RECOMPUTE_NONE, &err), SL_OK);
	assert_int_equal(sl_plantable_state(v, NULL), 1);
	wait_wake(fds[0]);
	assert_int_equal(sl_plantable_collect(v), 1);
	assert_int_equal(sl_plantable_collect(v), 0);
	assert_int_equal(sl_plantable_state(v, NULL), 2);
	const sl_plan *got = sl_plantable_plan(v);
	assert_non_null(got);
	sl_plan want;
	plan_of(&m, &c, &want);
	assert_int_equal(got->n, want.n);
	assert_int_equal(got->nfit, want.nfit);
	for (int i = 0; i < want.n; i++) {
		assert_true(got->rows[i].est.step_s == want.rows[i].est.step_s);
		assert_true(got->rows[i].est.mem_peak_bytes == want.rows[i].est.mem_peak_bytes);
	}
	assert_int_equal(sl_pt_count(v), want.nfit);

	/* The same model and cluster: the plan is kept, no new job. */
	sl_pt_move(v, 3);
	assert_int_equal(
	    sl_plantable_start(v, &m, &c, SL_ATTN_MATERIALIZED, SL_RECOMPUTE_NONE, &err), SL_OK);
	assert_int_equal(sl_plantable_state(v, NULL), 2);
	assert_int_equal(sl_pt_selected(v), 3);

	/* Another link speed is another plan. */
	c.inter.bandwidth = 12.5e9;
	assert_int_equal(
	    sl_plantable_start(v, &m, &c, SL_ATTN_MATERIALIZED, SL_RECOMPUTE_NONE, &err), SL_OK);
	assert_int_equal(sl_plantable_state(v, NULL), 1);
	wait_wake(fds[0]);
	assert_int_equal(sl_plantable_collect(v), 1);
	assert_true(sl_plantable_plan(v)->spec.cluster.inter.bandwidth == 12.5e9);
	assert_int_equal(sl_pt_selected(v), 0);

	/* The sandbox's recomputation is the plan's least: another plan, and
	 * every row recomputes at least that much. */
	assert_int_equal(
	    sl_plantable_start(v, &m, &c, SL_ATTN_MATERIALIZED, SL_RECOMPUTE_SELECTIVE, &err),
	    SL_OK);
	assert_int_equal(sl_plantable_state(v, NULL), 1);
	wait_wake(fds[0]);
	assert_int_equal(sl_plantable_collect(v), 1);
	for (int i = 0; i < sl_plantable_plan(v)->n; i++)
		assert_true(sl_plantable_plan(v)->rows[i].layout.recompute >=
		            SL_RECOMPUTE_SELECTIVE);

	/* A model that fits nowhere: the planner's line. */
	c.memory = 4096;
	assert_int_equal(
	    sl_plantable_start(v, &m, &c, SL_ATTN_MATERIALIZED, SL_RECOMPUTE_NONE, &err), SL_OK);
	wait_wake(fds[0]);
	assert_int_equal(sl_plantable_collect(v), 1);
	assert_int_equal(sl_plantable_state(v, &e), -1);
	assert_non_null(strstr(e->msg, "no layout fits in 4.00 KiB per device"));
	assert_null(sl_plantable_plan(v));
	assert_int_equal(sl_pt_count(v), 0);
	sl_pt_move(v, 1); /* nothing to move: no harm */
	assert_null(sl_pt_row(v, 0));

	sl_plan_free(&want);
	sl_plantable_destroy(v);
	close(fds[0]);
	close(fds[1]);
}

/* The view goes away mid-plan: the planner stops between layouts, and so
 * does a plan cancelled by its own flag. */
static void test_cancel(void **state)
{
	(void)state;
	sl_model_spec m = model(8, 64);
	sl_cluster_config c = tu_h100(64, 8);
	sl_plantable *v = sl_plantable_create(-1);
	sl_err err = {0};
	assert_int_equal(
	    sl_plantable_start(v, &m, &c, SL_ATTN_MATERIALIZED, SL_RECOMPUTE_NONE, &err), SL_OK);
	sl_plantable_destroy(v);

	atomic_int stop;
	atomic_init(&stop, 1);
	sl_plan_spec s = {.model = m, .cluster = c, .cancel = &stop};
	sl_plan p;
	assert_int_equal(sl_plan_run(&s, &p, &err), SL_ECANCEL);
	sl_plan_free(&p);
}

int main(void)
{
	tu_watchdog(300);
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_table),
	    cmocka_unit_test(test_background),
	    cmocka_unit_test(test_cancel),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
