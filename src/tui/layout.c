/* SPDX-License-Identifier: MIT */
/* layout.c - the screen's panels as rectangles (no curses here).
 *
 *   row 0        title: the scenario and the playback state
 *   rows 1..     devices | matrices     (left column, right column)
 *                links   | numbers
 *                timeline (full width, one row per device; with side
 *                streams, a lane per stream under it)
 *   rows the sentence saying what the current step does, with its
 *                span (two lines, so the span is never cut off)
 *   row R-1      status: the keys that matter now
 */
#include "layout.h"

#include <string.h>

static const char *const names[SL_PANEL_COUNT] = {
    "title", "devices", "links", "matrices", "numbers", "timeline", "sentence", "status", "body"};

const char *sl_panel_name(sl_panel p)
{
	return p >= 0 && p < SL_PANEL_COUNT ? names[p] : "?";
}

static int clampi(int v, int lo, int hi)
{
	return v < lo ? lo : v > hi ? hi : v;
}

static sl_rect rect(int y, int x, int h, int w)
{
	sl_rect r = {y, x, h, w};
	return r;
}

int sl_rect_overlap(sl_rect a, sl_rect b)
{
	if (a.h <= 0 || a.w <= 0 || b.h <= 0 || b.w <= 0)
		return 0;
	return a.y < b.y + b.h && b.y < a.y + a.h && a.x < b.x + b.w && b.x < a.x + a.w;
}

int sl_screen_layout_compute(int rows, int cols, int ndev, sl_screen_layout *L)
{
	memset(L, 0, sizeof *L);
	L->rows = rows;
	L->cols = cols;
	if (rows < SL_LAYOUT_MIN_ROWS || cols < SL_LAYOUT_MIN_COLS) {
		L->too_small = 1;
		return 1;
	}
	if (ndev < 1)
		ndev = 1;
	/* Two lines for the sentence: at 80 columns one line cuts it before
	 * the step's span. */
	int sent = 2;
	int body = rows - 2 - sent; /* >= 21 */
	L->r[SL_PANEL_TITLE] = rect(0, 0, 1, cols);
	L->r[SL_PANEL_SENTENCE] = rect(rows - 1 - sent, 0, sent, cols);
	L->r[SL_PANEL_STATUS] = rect(rows - 1, 0, 1, cols);
	L->r[SL_PANEL_BODY] = rect(1, 0, body, cols);

	/* The timeline wants a row per device plus its border and time scale,
	 * but never more than two fifths of the body: the panels above carry
	 * the picture.  At 80x24 that leaves 13 rows above it. */
	int tl = clampi(ndev + 3, 5, body * 2 / 5);
	int upper = body - tl;
	/* Left: devices and links; right: matrices and numbers. */
	int lw = clampi(cols * 2 / 5, 36, 72);
	int rw = cols - lw;
	int dh = clampi(ndev + 2, 3, upper - 4);
	int nh = clampi(upper / 2, 7, 12);
	int mh = upper - nh;

	L->r[SL_PANEL_DEVICES] = rect(1, 0, dh, lw);
	L->r[SL_PANEL_LINKS] = rect(1 + dh, 0, upper - dh, lw);
	L->r[SL_PANEL_MATRICES] = rect(1, lw, mh, rw);
	L->r[SL_PANEL_NUMBERS] = rect(1 + mh, lw, nh, rw);
	L->r[SL_PANEL_TIMELINE] = rect(1 + upper, 0, tl, cols);
	return 0;
}

int sl_lesson_layout_compute(int rows, int cols, int ndev, sl_screen_layout *L, sl_rect *narr)
{
	memset(L, 0, sizeof *L);
	*narr = (sl_rect){0, 0, 0, 0};
	L->rows = rows;
	L->cols = cols;
	if (rows < SL_LAYOUT_MIN_ROWS || cols < SL_LAYOUT_MIN_COLS) {
		L->too_small = 1;
		return 1;
	}
	if (ndev < 1)
		ndev = 1;
	/* The figure: a row per device plus the borders and the time scale,
	 * but at most a third of the screen, so the narration keeps at least
	 * half of it (at 80x24: 8 rows of figure, 12 of narration). */
	int fh = clampi(ndev + 3, 5, rows / 3);
	int sent = 2;
	int lw = clampi(cols * 2 / 5, 36, 60);
	L->r[SL_PANEL_TITLE] = rect(0, 0, 1, cols);
	L->r[SL_PANEL_DEVICES] = rect(1, 0, fh, lw);
	L->r[SL_PANEL_TIMELINE] = rect(1, lw, fh, cols - lw);
	L->r[SL_PANEL_SENTENCE] = rect(1 + fh, 0, sent, cols);
	L->r[SL_PANEL_STATUS] = rect(rows - 1, 0, 1, cols);
	L->r[SL_PANEL_BODY] = rect(1, 0, rows - 2 - sent, cols);
	*narr = rect(1 + fh + sent, 0, rows - 2 - fh - sent, cols);
	return 0;
}
