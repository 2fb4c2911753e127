/* SPDX-License-Identifier: MIT */
/* view_plan.c - the plan view: every layout of the training model on the
 * devices shown, as the planner ranks them (sl_plan_run), in a table sorted
 * by any column; the best's explanation under it; the selected row in the
 * sentence, ready to open in the main view.  The planner's thread and the
 * table's order are plantable.c's. */
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "draw.h"
#include "keys.h"
#include "plantable.h"
#include "sandbox.h"
#include "term.h"
#include "train.h"
#include "units.h"

/* The table's columns after rank and layout, in the order drawn; on a
 * narrow screen those at the end go first, before the layout's name is cut. */
enum { C_STEP, C_MEM, C_COMM, C_BUBBLE, C_TOKENS, C_ACROSS, C_FLOPS, C_N };
#define MIN_COLS 3 /* step, memory and comm stay */
#define NAME_W 36  /* a name of up to this many columns is worth a column */
static const struct {
	const char *head;
	int w;
	int sort; /* the sl_pt_col it shows, or -1 */
} cols[C_N] = {
    {"step", 10, SL_PT_STEP},    {"peak mem", 10, SL_PT_MEM},   {"comm", 6, SL_PT_COMM},
    {"bubble", 6, SL_PT_BUBBLE}, {"tokens/s", 8, SL_PT_TOKENS}, {"across", 8, -1},
    {"TFLOP/s", 7, -1},
};

static void cell(const sl_plan_row *r, int c, char *b, size_t n)
{
	switch (c) {
	case C_STEP:
		sl_fmt_time(r->est.step_s, b, n);
		break;
	case C_MEM:
		sl_fmt_bytes((double)r->est.mem_peak_bytes, b, n);
		break;
	case C_COMM:
		snprintf(b, n, "%.1f%%", 100 * r->comm_share);
		break;
	case C_BUBBLE:
		snprintf(b, n, "%.1f%%", 100 * r->est.bubble_fraction);
		break;
	case C_TOKENS:
		sl_fmt_count(r->tokens_per_s, b, n);
		break;
	case C_FLOPS:
		snprintf(b, n, "%.0f", r->model_flops_per_dev / 1e12);
		break;
	default:
		sl_plan_across(r, b, n);
		break;
	}
}

/* The layout's name in w columns: "interleaved v=4" becomes "v=4" when the
 * whole does not fit (the sentence under the table has the whole). */
static const char *short_name(const sl_layout *l, int w, char *buf, size_t n)
{
	sl_plan_layout_name(l, buf, n);
	if ((int)strlen(buf) > w)
		sl_plan_layout_brief(l, buf, n);
	return buf;
}

static void draw_plan(const sl_view *v, sl_rect r)
{
	sl_plantable *pv = v->own;
	attr_t norm = sl_theme_role(v->th, SL_ROLE_NORMAL), dim = sl_theme_role(v->th, SL_ROLE_DIM);
	attr_t head = sl_theme_role(v->th, SL_ROLE_HEAD), key = sl_theme_role(v->th, SL_ROLE_KEY);
	attr_t sel = sl_theme_role(v->th, SL_ROLE_SELECT);
	const sl_err *err = NULL;
	int state = pv ? sl_plantable_state(pv, &err) : 0;
	const sl_plan *p = pv ? sl_plantable_plan(pv) : NULL;
	char title[200], a[32], b[32];
	if (p) {
		int rev;
		sl_pt_col by = sl_pt_sorted_by(pv, &rev);
		snprintf(title, sizeof title, "Plan: %d layouts on %d devices, by %s%s", p->n,
		         p->spec.cluster.devices, sl_pt_col_name(by), rev ? ", worst first" : "");
	} else {
		snprintf(title, sizeof title, "Plan");
	}
	sl_rect in = sl_box(v, r, title);
	if (state == 1 || state == 0) {
		sl_put(in.y + 1, in.x + 2, in.w - 2, dim,
		       "planning: every layout of the model on these devices, timed as a run "
		       "would time it...");
		return;
	}
	if (state < 0 || !p) {
		int y = in.y + 1;
		y += sl_put_wrapped(y, in.x + 2, in.w - 3, 3, sl_theme_role(v->th, SL_ROLE_FAIL),
		                    err && err->msg[0] ? err->msg : "the plan failed");
		sl_put(y + 1, in.x + 2, in.w - 2, dim, "Esc goes back to the main view.");
		return;
	}
	const sl_cluster_config *cfg = &p->spec.cluster;
	int x0 = in.x + 1, w = in.w - 2;
	sl_putf(in.y, x0, w, dim,
	        "%d fit in %s per device, %d do not; %s per device; rank: by step time", p->nfit,
	        sl_fmt_bytes((double)cfg->memory, a, sizeof a), p->n - p->nfit,
	        sl_fmt_flops(cfg->flops, b, sizeof b));
	/* The whole name if the columns at the end can make room for it (up to
	 * NAME_W; longer ones are written short). */
	int name_w = 6, used = 5, ncols = C_N;
	for (int i = 0; i < sl_pt_count(pv); i++) {
		char nm[96];
		int len =
		    (int)strlen(sl_plan_layout_name(&sl_pt_row(pv, i)->layout, nm, sizeof nm));
		name_w = len > name_w ? len : name_w;
	}
	for (int c = 0; c < C_N; c++)
		used += cols[c].w + 1;
	while (ncols > MIN_COLS && used + (name_w < NAME_W ? name_w : NAME_W) > w)
		used -= cols[--ncols].w + 1;
	if (name_w > w - used)
		name_w = w - used > 6 ? w - used : 6;
	/* The header: the sorted column stands out. */
	int rev;
	sl_pt_col by = sl_pt_sorted_by(pv, &rev);
	int y = in.y + 2;
	sl_putf(y, x0, w, head, "%4s %-*s", "rank", name_w, "layout");
	int x = x0 + 5 + name_w;
	for (int c = 0; c < ncols; c++) {
		int sorted = cols[c].sort == (int)by;
		sl_putf(y, x, 1, head, " ");
		sl_putf(y, x + 1, cols[c].w, sorted ? key | A_UNDERLINE : head, "%*s", cols[c].w,
		        cols[c].head);
		x += cols[c].w + 1;
	}
	/* The explanation of the best takes the last lines, the rows the rest. */
	char expl[2048];
	sl_plan_explain(p, expl, sizeof expl);
	int ex_h = in.h >= 30 ? 6 : in.h >= 16 ? 4 : in.h >= 10 ? 2 : 0;
	int rows = in.h - 3 - (ex_h ? ex_h + 1 : 0);
	if (rows < 1)
		rows = 1;
	int top = sl_pt_top(pv, rows);
	for (int i = top; i < sl_pt_count(pv) && i < top + rows; i++) {
		const sl_plan_row *row = sl_pt_row(pv, i);
		attr_t at = i == sl_pt_selected(pv) ? sel : norm;
		char nm[96], c[32];
		y = in.y + 3 + (i - top);
		sl_clear_rect((sl_rect){y, x0, 1, w}, at);
		sl_putf(y, x0, w, at, "%4d %-*.*s", sl_pt_rank(pv, i), name_w, name_w,
		        short_name(&row->layout, name_w, nm, sizeof nm));
		x = x0 + 5 + name_w;
		for (int k = 0; k < ncols; k++) {
			cell(row, k, c, sizeof c);
			sl_putf(y, x, cols[k].w + 1, at, "%*s", cols[k].w + 1, c);
			x += cols[k].w + 1;
		}
	}
	if (ex_h)
		sl_put_wrapped(in.y + in.h - ex_h, x0, w, ex_h, dim, expl);
}

static void plan_sentence(const sl_view *v, char *buf, size_t n)
{
	sl_plantable *pv = v->own;
	const sl_plan *p = pv ? sl_plantable_plan(pv) : NULL;
	int i = pv ? sl_pt_selected(pv) : 0;
	const sl_plan_row *r = p ? sl_pt_row(pv, i) : NULL;
	if (!r) {
		snprintf(buf, n,
		         "The planner tries every tp, pp and dp, micro-batch count, "
		         "schedule, sequence parallelism, ZeRO-1 and mesh order.");
		return;
	}
	char nm[96], a[32], b[32], x[16];
	int rank = sl_pt_rank(pv, i);
	double best = p->rows[0].est.step_s;
	int len = snprintf(buf, n, "%s: rank %d of %d, %s a step",
	                   sl_plan_layout_name(&r->layout, nm, sizeof nm), rank, p->nfit,
	                   sl_fmt_time(r->est.step_s, a, sizeof a));
	if (rank > 1 && best > 0 && len < (int)n)
		len += snprintf(buf + len, n - (size_t)len, " (%+.1f%% on the best)",
		                100 * (r->est.step_s / best - 1));
	if (len < (int)n)
		snprintf(buf + len, n - (size_t)len,
		         ", %s peak per device; crossing nodes: %s.  Enter opens it in the main "
		         "view.",
		         sl_fmt_bytes((double)r->est.mem_peak_bytes, b, sizeof b),
		         sl_plan_crosses(r) ? sl_plan_across(r, x, sizeof x) : "none");
}

/* ---- the view's row ---- */

static void draw(const sl_view *v, const sl_screen_layout *L)
{
	draw_plan(v, L->r[SL_PANEL_BODY]);
}

/* The selected layout against the best, word-wrapped. */
static void sentence(const sl_view *v, sl_rect r)
{
	char buf[512];
	plan_sentence(v, buf, sizeof buf);
	sl_clear_rect(r, sl_theme_role(v->th, SL_ROLE_NORMAL));
	sl_put_wrapped(r.y, r.x, r.w, r.h, sl_theme_role(v->th, SL_ROLE_NORMAL), buf);
}

static void status(const sl_view *v, sl_rect r)
{
	static const sl_action acts[] = {SL_A_ROW_DOWN, SL_A_ROW_UP, SL_A_SORT, SL_A_SORT_REVERSE,
	                                 SL_A_OPEN,     SL_A_CLOSE,  SL_A_HELP, SL_A_LEAVE};
	sl_draw_status(v, r, acts, sizeof acts / sizeof acts[0]);
}

static void *make(int wake_fd)
{
	return sl_plantable_create(wake_fd);
}

static int release(void *own, double wait)
{
	(void)wait;
	sl_plantable_destroy(own); /* stops between layouts */
	return 1;
}

static int collect(void *own)
{
	return sl_plantable_collect(own);
}

/* The planner lays out a training model: a workload of another kind has
 * none to plan, nor a layout to swap for another. */
static const int plans[SL_WL_KINDS] = {[SL_WL_TRAIN] = 1};

/* Plan the training model on the devices and link classes shown (as the
 * knobs left them). */
static unsigned open_plan(sl_sandbox *a)
{
	const sl_workload *tr = sl_play_workload(a->play);
	if (!plans[tr->kind]) {
		snprintf(a->msg, sizeof a->msg,
		         "the plan is for a training model: run sandbox with model or layout "
		         "options (e.g. --tp=2 --pp=2)");
		return SL_LOOP_DRAW;
	}
	sl_err err = {0};
	if (sl_plantable_start(a->own[SL_MODE_PLAN], &tr->m, &sl_play_scenario(a->play)->cluster,
	                       tr->l.attention, tr->l.recompute, &err)) {
		snprintf(a->msg, sizeof a->msg, "cannot plan: %.180s", err.msg);
		return SL_LOOP_DRAW;
	}
	sl_sandbox_show(a, SL_MODE_PLAN);
	return SL_LOOP_DRAW;
}

/* Would a full run of tr hold on this host (the live run and the one
 * replaced, at most, at once)?  A timing-only run holds no values. */
static int train_host_fits(const sl_scenario *sc, const sl_workload *tr, char *why, size_t n)
{
	long pages = sysconf(_SC_PHYS_PAGES), psize = sysconf(_SC_PAGESIZE);
	if (sc->cluster.timing_only || pages <= 0 || psize <= 0)
		return 1;
	double bytes = 2 * (double)sl_train_host_bytes(&tr->m, &tr->l);
	double limit = (double)pages * (double)psize / 2;
	if (bytes <= limit)
		return 1;
	char b1[32], b2[32];
	snprintf(why, n, "it would take %s of host memory (limit %s): try sandbox --dry-run",
	         sl_fmt_bytes(bytes, b1, sizeof b1), sl_fmt_bytes(limit, b2, sizeof b2));
	return 0;
}

/* The selected layout in the main view: one training step of it, on the
 * same devices. */
static unsigned open_layout(sl_sandbox *a)
{
	sl_plantable *pv = a->own[SL_MODE_PLAN];
	const sl_plan *pl = sl_plantable_plan(pv);
	int i = sl_pt_selected(pv);
	const sl_plan_row *row = pl ? sl_pt_row(pv, i) : NULL;
	const sl_workload *cur = sl_play_workload(a->play);
	if (!row || !plans[cur->kind]) {
		snprintf(a->msg, sizeof a->msg, "no layout to open yet");
		return SL_LOOP_DRAW;
	}
	sl_workload tr = *cur;
	tr.l = row->layout;
	sl_scenario sc = *sl_play_scenario(a->play);
	char why[160];
	if (!train_host_fits(&sc, &tr, why, sizeof why)) {
		snprintf(a->msg, sizeof a->msg, "cannot open: %s", why);
		return SL_LOOP_DRAW;
	}
	sl_err err = {0};
	sl_play *np = sl_play_create_workload(&sc, &tr, sl_term_wake_fd(), &err);
	if (!np) {
		snprintf(a->msg, sizeof a->msg, "cannot open: %.180s", err.msg);
		return SL_LOOP_DRAW;
	}
	if (!sl_play_destroy(a->play, 2.0))
		a->orphans = 1;
	a->play = np;
	a->sel.kind = SL_SEL_NONE;
	sl_sandbox_show(a, SL_MODE_MAIN);
	char nm[96];
	snprintf(a->msg, sizeof a->msg, "opened rank %d: %s", sl_pt_rank(pv, i),
	         sl_plan_layout_name(&tr.l, nm, sizeof nm));
	return SL_LOOP_DRAW | SL_LOOP_LAYOUT | SL_LOOP_CLEAR;
}

static unsigned act(sl_sandbox *a, sl_action ac, double now)
{
	sl_plantable *pv = a->own[SL_MODE_PLAN];
	(void)now;
	switch (ac) {
	case SL_A_PLAN: /* back to the main view; the plan is kept */
		sl_sandbox_show(a, SL_MODE_MAIN);
		return SL_LOOP_DRAW;
	case SL_A_ROW_UP:
	case SL_A_ROW_DOWN:
		sl_pt_move(pv, ac == SL_A_ROW_DOWN ? 1 : -1);
		return SL_LOOP_DRAW;
	case SL_A_PAGE_UP:
	case SL_A_PAGE_DOWN: {
		int page = a->lay.r[SL_PANEL_BODY].h - 10;
		page = page < 1 ? 1 : page;
		sl_pt_move(pv, ac == SL_A_PAGE_DOWN ? page : -page);
		return SL_LOOP_DRAW;
	}
	case SL_A_SORT:
	case SL_A_SORT_REVERSE: {
		int rev;
		sl_pt_col by = sl_pt_sorted_by(pv, &rev);
		if (ac == SL_A_SORT)
			sl_pt_sort(pv, (sl_pt_col)((by + 1) % SL_PT_NCOLS), 0);
		else
			sl_pt_sort(pv, by, !rev);
		by = sl_pt_sorted_by(pv, &rev);
		snprintf(a->msg, sizeof a->msg, "sorted by %s, %s first", sl_pt_col_name(by),
		         rev ? "worst" : "best");
		return SL_LOOP_DRAW;
	}
	case SL_A_OPEN:
		return open_layout(a);
	default:
		return SL_VIEW_PASS;
	}
}

const sl_view_row sl_view_plan = {
    .make = make,
    .free = release,
    .draw = draw,
    .sentence = sentence,
    .status = status,
    .collect = collect,
    .opener = SL_A_PLAN,
    .open = open_plan,
    .act = act,
};
