/* SPDX-License-Identifier: MIT */
/* planview.h - the plan as a view of the TUI: the planner run on a
 * background thread on the model and devices shown, its layouts as a table
 * sorted by any column, and a selection to open in the sandbox.
 *
 * No curses.  The thread writes a byte to wake_fd when the plan is done;
 * sl_planview_collect takes it in on the UI thread.  The table's order and
 * selection are plain functions of the plan, tested without a terminal. */
#ifndef SL_TUI_PLANVIEW_H
#define SL_TUI_PLANVIEW_H

#include "plan.h"

/* The columns the table sorts by, each in its better-first direction. */
typedef enum sl_pv_col {
	SL_PV_STEP,   /* step time, shortest first */
	SL_PV_TOKENS, /* tokens per second, most first */
	SL_PV_MEM,    /* peak memory per device, least first */
	SL_PV_COMM,   /* share of the step in communication, least first */
	SL_PV_BUBBLE, /* pipeline bubble, least first */
	SL_PV_MP,     /* tp*pp, the devices one replica spans, fewest first */
	SL_PV_NCOLS
} sl_pv_col;

const char *sl_pv_col_name(sl_pv_col c);

typedef struct sl_planview sl_planview;

sl_planview *sl_planview_create(int wake_fd);
/* Waits for a plan in progress (a plan of up to 64 devices takes seconds at
 * most). */
void sl_planview_destroy(sl_planview *v);

/* Plan m on cfg's devices in the background, every layout's attention core
 * run as attn and recomputing at least rc (a plan already done for the same
 * model, cluster, attention and recomputation is kept). */
int sl_planview_start(sl_planview *v, const sl_model_spec *m, const sl_cluster_config *cfg,
                      sl_attention attn, sl_recompute rc, sl_err *err);
/* After a wake: 1 when the plan finished since the last call. */
int sl_planview_collect(sl_planview *v);
/* 0 nothing asked, 1 planning, 2 done, -1 failed (err says why). */
int sl_planview_state(const sl_planview *v, const sl_err **err);
/* The plan, once done (rows: fitting ones by step time, then the others). */
const sl_plan *sl_planview_plan(const sl_planview *v);

/* ---- the table (pure) ---- */

/* Take p's fitting rows in its rank order; selection on the first.  For
 * tests and the collect: the view does not own p. */
void sl_pv_reset(sl_planview *v, const sl_plan *p);
/* Sort by col, better first (reverse: worse first); ties keep the plan's
 * rank.  The selection goes to the first row: the best by that column. */
void sl_pv_sort(sl_planview *v, sl_pv_col col, int reverse);
sl_pv_col sl_pv_sorted_by(const sl_planview *v, int *reverse);
/* Rows shown, and the plan's row at display position i. */
int sl_pv_count(const sl_planview *v);
const sl_plan_row *sl_pv_row(const sl_planview *v, int i);
/* The plan's rank of the row at display position i (1 = best). */
int sl_pv_rank(const sl_planview *v, int i);
/* Move the selection by delta rows, within the table. */
void sl_pv_move(sl_planview *v, int delta);
int sl_pv_selected(const sl_planview *v);
/* The first row to draw so that the selection shows in `height` rows. */
int sl_pv_top(sl_planview *v, int height);

#endif
