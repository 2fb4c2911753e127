/* SPDX-License-Identifier: MIT */
/* plantable.h - what the plan view shows, without drawing it: the planner
 * run on a background thread on the model and devices shown, its layouts as
 * a table sorted by any column, and a selection to open in the sandbox
 * (view_plan.c draws it and takes its keys).
 *
 * No curses.  The thread writes a byte to wake_fd when the plan is done;
 * sl_plantable_collect takes it in on the UI thread.  The table's order and
 * selection are plain functions of the plan, tested without a terminal. */
#ifndef SL_TUI_PLANTABLE_H
#define SL_TUI_PLANTABLE_H

#include "plan.h"

/* The columns the table sorts by, each in its better-first direction. */
typedef enum sl_pt_col {
	SL_PT_STEP,   /* step time, shortest first */
	SL_PT_TOKENS, /* tokens per second, most first */
	SL_PT_MEM,    /* peak memory per device, least first */
	SL_PT_COMM,   /* share of the step in communication, least first */
	SL_PT_BUBBLE, /* pipeline bubble, least first */
	SL_PT_MP,     /* tp*pp, the devices one replica spans, fewest first */
	SL_PT_NCOLS
} sl_pt_col;

const char *sl_pt_col_name(sl_pt_col c);

typedef struct sl_plantable sl_plantable;

sl_plantable *sl_plantable_create(int wake_fd);
/* Waits for a plan in progress (a plan of up to 64 devices takes seconds at
 * most). */
void sl_plantable_destroy(sl_plantable *v);

/* Plan m on cfg's devices in the background, every layout's attention core
 * run as attn and recomputing at least rc (a plan already done for the same
 * model, cluster, attention and recomputation is kept). */
int sl_plantable_start(sl_plantable *v, const sl_model_spec *m, const sl_cluster_config *cfg,
                       sl_attention attn, sl_recompute rc, sl_err *err);
/* After a wake: 1 when the plan finished since the last call. */
int sl_plantable_collect(sl_plantable *v);
/* 0 nothing asked, 1 planning, 2 done, -1 failed (err says why). */
int sl_plantable_state(const sl_plantable *v, const sl_err **err);
/* The plan, once done (rows: fitting ones by step time, then the others). */
const sl_plan *sl_plantable_plan(const sl_plantable *v);

/* ---- the table (pure) ---- */

/* Take p's fitting rows in its rank order; selection on the first.  For
 * tests and the collect: the view does not own p. */
void sl_pt_reset(sl_plantable *v, const sl_plan *p);
/* Sort by col, better first (reverse: worse first); ties keep the plan's
 * rank.  The selection goes to the first row: the best by that column. */
void sl_pt_sort(sl_plantable *v, sl_pt_col col, int reverse);
sl_pt_col sl_pt_sorted_by(const sl_plantable *v, int *reverse);
/* Rows shown, and the plan's row at display position i. */
int sl_pt_count(const sl_plantable *v);
const sl_plan_row *sl_pt_row(const sl_plantable *v, int i);
/* The plan's rank of the row at display position i (1 = best). */
int sl_pt_rank(const sl_plantable *v, int i);
/* Move the selection by delta rows, within the table. */
void sl_pt_move(sl_plantable *v, int delta);
int sl_pt_selected(const sl_plantable *v);
/* The first row to draw so that the selection shows in `height` rows. */
int sl_pt_top(sl_plantable *v, int height);

#endif
