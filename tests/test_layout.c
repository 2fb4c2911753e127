/* SPDX-License-Identifier: MIT */
/* The screen layout as a pure function: from 80x24 to 300x100 and for 1 to
 * 16 devices, the main view's panels stay on screen, never overlap, keep a
 * usable size and leave no row of the screen unused; below 80x24 the layout
 * says the terminal is too small.  No curses. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include <cmocka.h>

#include "layout.h"
#include "sbs.h"

static int one_line(int p)
{
	return p == SL_PANEL_TITLE || p == SL_PANEL_SENTENCE || p == SL_PANEL_STATUS;
}

/* Everything the layout promises, checked cell by cell. */
static void check(int rows, int cols, int ndev)
{
	sl_screen_layout L;
	assert_int_equal(sl_screen_layout_compute(rows, cols, ndev, &L), 0);
	assert_false(L.too_small);
	static unsigned char owner[100][300];
	for (int y = 0; y < rows; y++)
		for (int x = 0; x < cols; x++)
			owner[y][x] = 0xff;
	for (int p = 0; p < SL_PANEL_NMAIN; p++) {
		sl_rect r = L.r[p];
		if (r.y < 0 || r.x < 0 || r.y + r.h > rows || r.x + r.w > cols)
			fail_msg("%dx%d, %d devices: %s (%d,%d %dx%d) is off screen", cols, rows,
			         ndev, sl_panel_name(p), r.y, r.x, r.w, r.h);
		if (one_line(p)) {
			if (r.h < 1 || r.w != cols)
				fail_msg("%dx%d: %s is not a full-width line", cols, rows,
				         sl_panel_name(p));
		} else if (r.h < 3 || r.w < 20) {
			/* A box needs its border and at least one line. */
			fail_msg("%dx%d, %d devices: %s is only %dx%d", cols, rows, ndev,
			         sl_panel_name(p), r.w, r.h);
		}
		for (int y = r.y; y < r.y + r.h; y++)
			for (int x = r.x; x < r.x + r.w; x++) {
				if (owner[y][x] != 0xff)
					fail_msg(
					    "%dx%d, %d devices: %s and %s overlap at row %d col %d",
					    cols, rows, ndev, sl_panel_name(owner[y][x]),
					    sl_panel_name(p), y, x);
				owner[y][x] = (unsigned char)p;
			}
	}
	/* The main view uses the whole screen. */
	for (int y = 0; y < rows; y++)
		for (int x = 0; x < cols; x++)
			if (owner[y][x] == 0xff)
				fail_msg("%dx%d, %d devices: cell %d,%d belongs to no panel", cols,
				         rows, ndev, y, x);
	/* The full-screen views' body sits between the title and the
	 * sentence, covering the same rows as the boxed panels. */
	sl_rect b = L.r[SL_PANEL_BODY];
	assert_int_equal(b.y, 1);
	assert_int_equal(b.w, cols);
	assert_int_equal(b.y + b.h, L.r[SL_PANEL_SENTENCE].y);
	/* The timeline shows every device when the terminal has the rows. */
	int tl_rows = L.r[SL_PANEL_TIMELINE].h - 3;
	if (rows >= 3 * (ndev + 3) + 4)
		assert_true(tl_rows >= ndev);
	assert_true(tl_rows >= 2);
}

static void test_every_size(void **state)
{
	(void)state;
	for (int ndev = 1; ndev <= 16; ndev++)
		for (int rows = 24; rows <= 100; rows++)
			for (int cols = 80; cols <= 300; cols += (cols < 130 ? 1 : 7))
				check(rows, cols, ndev);
	/* The corners exactly. */
	check(24, 80, 16);
	check(100, 300, 1);
	check(100, 300, 16);
}

static void test_too_small(void **state)
{
	(void)state;
	sl_screen_layout L;
	const int sizes[][2] = {{23, 80}, {24, 79}, {10, 40}, {1, 1}, {0, 0}, {23, 300}, {100, 79}};
	for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
		assert_int_equal(sl_screen_layout_compute(sizes[i][0], sizes[i][1], 4, &L), 1);
		assert_true(L.too_small);
		assert_int_equal(L.rows, sizes[i][0]);
		assert_int_equal(L.cols, sizes[i][1]);
	}
	assert_int_equal(sl_screen_layout_compute(24, 80, 4, &L), 0);
}

/* Devices beyond what the layout is tuned for still lay out. */
static void test_many_devices(void **state)
{
	(void)state;
	for (int ndev = 17; ndev <= 64; ndev += 7)
		check(24, 80, ndev);
	check(40, 120, 64);
	check(24, 80, 0);
}

/* The sentence has two lines at every size: at 80x24 one line cut it
 * before the step's span. */
static void test_sentence_two_lines(void **state)
{
	(void)state;
	sl_screen_layout L;
	for (int rows = 24; rows <= 40; rows++) {
		assert_int_equal(sl_screen_layout_compute(rows, 80, 4, &L), 0);
		assert_int_equal(L.r[SL_PANEL_SENTENCE].h, 2);
	}
}

/* The lesson screen's compact layout (24 to 30 rows): the figure and the
 * narration together, every cell owned once, the timeline showing every
 * device that fits a third of the screen, the narration keeping at least
 * half the rows. */
static void check_lesson(int rows, int cols, int ndev)
{
	sl_screen_layout L;
	sl_rect narr;
	assert_int_equal(sl_lesson_layout_compute(rows, cols, ndev, &L, &narr), 0);
	static unsigned char owner[40][300];
	for (int y = 0; y < rows; y++)
		for (int x = 0; x < cols; x++)
			owner[y][x] = 0xff;
	sl_rect rs[SL_PANEL_NMAIN + 1];
	for (int p = 0; p < SL_PANEL_NMAIN; p++)
		rs[p] = L.r[p];
	rs[SL_PANEL_NMAIN] = narr;
	for (int p = 0; p <= SL_PANEL_NMAIN; p++) {
		sl_rect r = rs[p];
		int shown = p == SL_PANEL_TITLE || p == SL_PANEL_DEVICES ||
		            p == SL_PANEL_TIMELINE || p == SL_PANEL_SENTENCE ||
		            p == SL_PANEL_STATUS || p == SL_PANEL_NMAIN;
		if (!shown) {
			assert_int_equal(r.h, 0);
			continue;
		}
		if (r.y < 0 || r.x < 0 || r.y + r.h > rows || r.x + r.w > cols || r.h < 1 ||
		    r.w < 20)
			fail_msg("%dx%d, %d devices: panel %d (%d,%d %dx%d) is off screen or empty",
			         cols, rows, ndev, p, r.y, r.x, r.w, r.h);
		for (int y = r.y; y < r.y + r.h; y++)
			for (int x = r.x; x < r.x + r.w; x++) {
				if (owner[y][x] != 0xff)
					fail_msg("%dx%d, %d devices: panels %d and %d overlap",
					         cols, rows, ndev, owner[y][x], p);
				owner[y][x] = (unsigned char)p;
			}
	}
	for (int y = 0; y < rows; y++)
		for (int x = 0; x < cols; x++)
			if (owner[y][x] == 0xff)
				fail_msg("%dx%d: cell %d,%d belongs to no panel", cols, rows, y, x);
	assert_int_equal(L.r[SL_PANEL_SENTENCE].h, 2);
	int tl_rows = L.r[SL_PANEL_TIMELINE].h - 3;
	assert_true(tl_rows >= 2);
	if (ndev + 3 <= rows / 3)
		assert_true(tl_rows >= ndev);
	assert_true(L.r[SL_PANEL_DEVICES].h == L.r[SL_PANEL_TIMELINE].h);
	assert_true(narr.h * 2 >= rows);
}

static void test_lesson_compact(void **state)
{
	(void)state;
	for (int ndev = 1; ndev <= 64; ndev += ndev < 16 ? 1 : 16)
		for (int rows = 24; rows < SL_LAYOUT_LESSON_SPLIT; rows++)
			for (int cols = 80; cols <= 300; cols += (cols < 130 ? 1 : 7))
				check_lesson(rows, cols, ndev);
	sl_screen_layout L;
	sl_rect narr;
	assert_int_equal(sl_lesson_layout_compute(23, 80, 4, &L, &narr), 1);
	assert_true(L.too_small);
	/* 80x24 with four devices: all four on the timeline. */
	sl_lesson_layout_compute(24, 80, 4, &L, &narr);
	assert_int_equal(L.r[SL_PANEL_TIMELINE].h - 3, 4);
}

static void test_overlap_helper(void **state)
{
	(void)state;
	sl_rect a = {0, 0, 2, 2}, b = {1, 1, 2, 2}, c = {2, 0, 1, 5}, e = {0, 0, 0, 5};
	assert_true(sl_rect_overlap(a, b));
	assert_false(sl_rect_overlap(a, c));
	assert_false(sl_rect_overlap(a, e));
}

/* ---- the side-by-side screen's rows (sbs.c) ---- */

static sl_event ev(int dev, sl_ev_kind k, double t0, double t1)
{
	sl_event e = {.dev = dev, .peer = -1, .kind = k, .t0 = t0, .t1 = t1};
	return e;
}

/* Cells of 5 s over a 10 s step starting at 100 s, on a 20 s axis. */
static void test_sbs_cells(void **state)
{
	(void)state;
	sl_event e[] = {
	    ev(0, SL_EV_COMPUTE, 100, 105),
	    ev(0, SL_EV_SEND, 105, 110),
	    ev(1, SL_EV_COMPUTE, 100, 104),
	    ev(1, SL_EV_WAIT, 104, 110),
	    /* two transfers at once: their times add up */
	    ev(2, SL_EV_SEND, 105, 110),
	    ev(2, SL_EV_RECV, 105, 110),
	};
	sl_sbs_band b = {.ndev = 3, .t0 = 100, .span = 10, .ev = {3, sizeof e / sizeof e[0], e}};
	sl_dstate c[4];
	sl_sbs_cells(&b, 0, 1, 20, 4, c);
	assert_int_equal(c[0], SL_DS_COMPUTE);
	assert_int_equal(c[1], SL_DS_SEND);
	assert_int_equal(c[2], SL_DS_COUNT); /* past the step */
	assert_int_equal(c[3], SL_DS_COUNT);
	sl_sbs_cells(&b, 1, 2, 20, 4, c);
	assert_int_equal(c[0], SL_DS_COMPUTE); /* 4 s of 5 */
	assert_int_equal(c[1], SL_DS_WAIT);
	sl_sbs_cells(&b, 2, 3, 20, 4, c);
	assert_int_equal(c[0], SL_DS_IDLE);
	assert_int_equal(c[1], SL_DS_SEND);
	/* A row of the three: 9 s of compute, 5 idle, 1 wait in the first
	 * slice; in the second 5 s of wait against 15 of transfers. */
	sl_sbs_cells(&b, 0, 3, 20, 4, c);
	assert_int_equal(c[0], SL_DS_COMPUTE);
	assert_int_equal(c[1], SL_DS_SEND);
	/* An event across cells is split by the time in each. */
	sl_event one[] = {ev(0, SL_EV_COMPUTE, 100, 107)};
	sl_sbs_band b1 = {.ndev = 1, .t0 = 100, .span = 10, .ev = {1, 1, one}};
	sl_sbs_cells(&b1, 0, 1, 10, 2, c);
	assert_int_equal(c[0], SL_DS_COMPUTE);
	assert_int_equal(c[1], SL_DS_IDLE); /* 2 s of 5 */
}

/* A band whose devices communicated on a side stream has two lanes a row:
 * the compute stream's events on the first, the side stream's on the
 * second; one lane holds them all (as sl_sbs_cells). */
static void test_sbs_lanes(void **state)
{
	(void)state;
	sl_event e[] = {
	    ev(0, SL_EV_COMPUTE, 100, 110),
	    ev(0, SL_EV_SEND, 100, 102), /* beside the compute, on stream 1 */
	    ev(0, SL_EV_WAIT, 110, 115), /* the compute stream waits for it */
	    ev(0, SL_EV_SEND, 105, 115),
	};
	e[1].stream = e[3].stream = 1;
	sl_sbs_band b = {.ndev = 1, .t0 = 100, .span = 15, .ev = {1, sizeof e / sizeof e[0], e}};
	assert_int_equal(sl_sbs_lanes(&b), 2);
	sl_dstate c[3];
	sl_sbs_lane_cells(&b, 0, 0, 1, 15, 3, c);
	assert_int_equal(c[0], SL_DS_COMPUTE);
	assert_int_equal(c[1], SL_DS_COMPUTE);
	assert_int_equal(c[2], SL_DS_WAIT);
	sl_sbs_lane_cells(&b, 1, 0, 1, 15, 3, c);
	assert_int_equal(c[0], SL_DS_IDLE); /* 2 s of 5 */
	assert_int_equal(c[1], SL_DS_SEND);
	assert_int_equal(c[2], SL_DS_SEND);
	e[1].stream = e[3].stream = 0;
	assert_int_equal(sl_sbs_lanes(&b), 1);
	sl_sbs_lane_cells(&b, 1, 0, 1, 15, 3, c); /* one lane: every event */
	assert_int_equal(c[2], SL_DS_SEND);
}

static void test_sbs_per_row(void **state)
{
	(void)state;
	assert_int_equal(sl_sbs_per_row(4, 6), 1);
	assert_int_equal(sl_sbs_per_row(6, 6), 1);
	assert_int_equal(sl_sbs_per_row(16, 6), 4); /* 3 does not divide 16 */
	assert_int_equal(sl_sbs_per_row(7, 3), 3);  /* no divisor near: rows of 3, 3, 1 */
	assert_int_equal(sl_sbs_per_row(1024, 6), 256);
	assert_int_equal(sl_sbs_per_row(5, 0), 5);
}

/* The memory bars' scale is the largest sum of any device's five figures,
 * and a row's anatomy is its device of highest peak. */
static void test_sbs_memory(void **state)
{
	(void)state;
	sl_train_dev d[2] = {{.params_bytes = 10,
	                      .grads_bytes = 10,
	                      .optimizer_bytes = 60,
	                      .act_peak_bytes = 5,
	                      .workspace_peak_bytes = 1,
	                      .mem_peak_bytes = 80},
	                     {.params_bytes = 10,
	                      .grads_bytes = 10,
	                      .optimizer_bytes = 60,
	                      .act_peak_bytes = 30,
	                      .workspace_peak_bytes = 2,
	                      .mem_peak_bytes = 100}};
	sl_sbs s = {.n = 1};
	s.band[0].ndev = 2;
	s.band[0].dev = d;
	assert_int_equal(sl_sbs_mem_scale(&s), 112);
	uint64_t part[5];
	assert_int_equal(sl_sbs_anatomy(&s.band[0], 0, 2, part), 1);
	assert_int_equal(part[3], 30);
	assert_int_equal(sl_sbs_anatomy(&s.band[0], 0, 1, part), 0);
	assert_int_equal(part[3], 5);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_every_size),         cmocka_unit_test(test_too_small),
	    cmocka_unit_test(test_many_devices),       cmocka_unit_test(test_overlap_helper),
	    cmocka_unit_test(test_sentence_two_lines), cmocka_unit_test(test_lesson_compact),
	    cmocka_unit_test(test_sbs_cells),          cmocka_unit_test(test_sbs_lanes),
	    cmocka_unit_test(test_sbs_per_row),        cmocka_unit_test(test_sbs_memory),
	};
	return cmocka_run_group_tests_name("layout", tests, NULL, NULL);
}
