/* SPDX-License-Identifier: MIT */
/* view_plot.c - the plot view: speedup against link bandwidth (log axis) or
 * device count: the model as a curve, the engine's runs as points (a sweep,
 * sweep.c, measures them in the background), the crossover where speedup
 * falls below 1 marked, step times in a table beside it. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "draw.h"
#include "play.h"
#include "sandbox.h"
#include "sweep.h"
#include "units.h"

static double xpos(double x, double lo, double hi, int logx)
{
	return logx ? (log(x) - log(lo)) / (log(hi) - log(lo)) : (x - lo) / (hi - lo);
}

static void xlabel(double x, sl_sweep_kind k, char *b, size_t n)
{
	if (k == SL_SWEEP_BANDWIDTH)
		sl_fmt_rate(x, b, n);
	else
		snprintf(b, n, "%d", (int)x);
}

/* The view's own state: the sweep, and which plot it shows. */
struct plot {
	sl_sweep *sweep;
	sl_sweep_kind kind;
};

static void draw_plot(const sl_view *v, sl_rect r)
{
	const struct plot *pl = v->own;
	const sl_sweep *sw = pl ? pl->sweep : NULL;
	const sl_glyphs *g = v->th->g;
	attr_t norm = sl_theme_role(v->th, SL_ROLE_NORMAL), dim = sl_theme_role(v->th, SL_ROLE_DIM);
	attr_t key = sl_theme_role(v->th, SL_ROLE_KEY), head = sl_theme_role(v->th, SL_ROLE_HEAD);
	const sl_sweep_point *pts;
	int n = sw ? sl_sweep_points(sw, &pts) : 0;
	sl_sweep_kind kind = sw ? sl_sweep_kind_of(sw) : SL_SWEEP_BANDWIDTH;
	const sl_scenario *sc = sw ? sl_sweep_scenario(sw) : v->sc;
	char title[160];
	if (kind == SL_SWEEP_BANDWIDTH)
		snprintf(title, sizeof title,
		         "Plot: speedup against %s-node link bandwidth, %s %d%s%d%s%d",
		         sw && sl_sweep_inter(sw) ? "inter" : "intra",
		         sl_split_name(sc->gemm.split), sc->gemm.m, g->times, sc->gemm.k, g->times,
		         sc->gemm.n);
	else
		snprintf(title, sizeof title, "Plot: speedup against device count, %s %d%s%d%s%d",
		         sl_split_name(sc->gemm.split), sc->gemm.m, g->times, sc->gemm.k, g->times,
		         sc->gemm.n);
	sl_rect in = sl_box(v, r, title);
	if (n < 2) {
		sl_put(in.y + 1, in.x + 2, in.w - 2, dim, "no points to plot for this scenario");
		return;
	}
	int total, done = sl_sweep_progress(sw, &total);
	/* The table on the right where there is room. */
	int tw = in.w >= 96 ? 34 : 0;
	int ax = in.x + 7, aw = in.w - 8 - tw - 1;
	int ay = in.y + 1, ah = in.h - 5;
	if (aw < 20 || ah < 4) {
		sl_put(in.y, in.x + 1, in.w - 1, dim, "(too small for the plot)");
		return;
	}
	int logx = kind == SL_SWEEP_BANDWIDTH;
	double lo = pts[0].x, hi = pts[n - 1].x;
	/* The y range: ideal speedup (the device count) or what was seen. */
	double ymax = 1.2;
	for (int i = 0; i < n; i++) {
		double sp = pts[i].predicted > 0 ? pts[i].single / pts[i].predicted : 0;
		if (sp > ymax)
			ymax = sp;
		if (pts[i].done && pts[i].rc == 0 && pts[i].time > 0 &&
		    pts[i].single / pts[i].time > ymax)
			ymax = pts[i].single / pts[i].time;
	}
	if (kind == SL_SWEEP_DEVICES && hi > ymax)
		ymax = hi;
	ymax *= 1.1;
	sl_put(in.y, in.x + 1, 8, head, "speedup");
	sl_putf(in.y, ax + aw - 30, 30, dim, "%s measured  %s model", g->point, g->curve);
	/* Axes. */
	for (int yy = 0; yy < ah; yy++)
		sl_put(ay + yy, ax - 1, 1, dim, g->v);
	sl_rep(ay + ah, ax, aw, dim, g->h);
	sl_put(ay + ah, ax - 1, 1, dim, g->bl);
	/* Round y labels, and always 1. */
	double ystep = ymax > 8 ? 2 : ymax > 4 ? 1 : ymax > 2 ? 0.5 : 0.25;
	for (double yv = 0; yv <= ymax; yv += ystep) {
		int yy = ay + ah - 1 - (int)lround((ah - 1) * yv / ymax);
		sl_putf(yy, in.x, 6, dim, "%5.4g", yv);
	}
	/* Speedup 1: the line below which parallelism loses. */
	int y1 = ay + ah - 1 - (int)lround((ah - 1) * 1.0 / ymax);
	for (int c = 0; c < aw; c += 2)
		sl_put(y1, ax + c, 1, dim, g->curve);
	/* The model, densely. */
	for (int c = 0; c < aw; c++) {
		double f = (c + 0.5) / aw;
		double x = logx ? exp(log(lo) + f * (log(hi) - log(lo))) : lo + f * (hi - lo);
		sl_scenario t = *sc;
		if (kind == SL_SWEEP_BANDWIDTH) {
			if (sl_sweep_inter(sw))
				t.cluster.inter.bandwidth = x;
			else
				t.cluster.intra.bandwidth = x;
		} else {
			t.cluster.devices = (int)lround(x);
			if (t.cluster.devices_per_node > 0 &&
			    t.cluster.devices % t.cluster.devices_per_node)
				t.cluster.devices_per_node = 0;
			if (t.cluster.devices_per_node > t.cluster.devices)
				t.cluster.devices_per_node = 0;
		}
		double pred = sl_play_predict(&t, t.cluster.intra, t.cluster.inter);
		if (!(pred > 0))
			continue;
		double sp = sl_play_single_time(&t) / pred;
		int yy = ay + ah - 1 - (int)lround((ah - 1) * (sp < ymax ? sp : ymax) / ymax);
		sl_put(yy, ax + c, 1, sl_theme_state(v->th, SL_DS_SEND), g->curve);
	}
	/* The crossover. */
	int measured = 0;
	double xc = kind == SL_SWEEP_BANDWIDTH ? sl_sweep_crossover(pts, n, &measured) : 0;
	if (xc > 0) {
		int c = (int)lround(xpos(xc, lo, hi, logx) * (aw - 1));
		for (int yy = 0; yy < ah; yy++)
			sl_put(ay + yy, ax + c, 1, sl_theme_role(v->th, SL_ROLE_WARN),
			       g->cross_mark);
	}
	/* The current figure. */
	double cur = kind == SL_SWEEP_BANDWIDTH ? (sl_sweep_inter(sw) ? sc->cluster.inter.bandwidth
	                                                              : sc->cluster.intra.bandwidth)
	                                        : sc->cluster.devices;
	int cc = (int)lround(xpos(cur, lo, hi, logx) * (aw - 1));
	if (cc >= 0 && cc < aw)
		sl_put(ay + ah + 1, ax + cc, 1, key, g->caret);
	/* The engine's points. */
	for (int i = 0; i < n; i++) {
		if (!pts[i].done || pts[i].rc || !(pts[i].time > 0))
			continue;
		double sp = pts[i].single / pts[i].time;
		int c = (int)lround(xpos(pts[i].x, lo, hi, logx) * (aw - 1));
		int yy = ay + ah - 1 - (int)lround((ah - 1) * (sp < ymax ? sp : ymax) / ymax);
		sl_put(yy, ax + c, 1, key, g->point);
	}
	/* x labels. */
	int next_free = ax - 6;
	for (int i = 0; i < n; i++) {
		char lab[24];
		xlabel(pts[i].x, kind, lab, sizeof lab);
		int c = ax + (int)lround(xpos(pts[i].x, lo, hi, logx) * (aw - 1));
		int lw = sl_cols(lab), x = c - lw / 2;
		if (x < ax - 6)
			x = ax - 6;
		/* Inside the frame, or not at all (a label past it wrapped onto
		 * the next row, over the border). */
		if (x < next_free || x + lw > ax + aw + 4 || x + lw > in.x + in.w - 1)
			continue;
		sl_put(ay + ah + 2, x, lw, dim, lab);
		next_free = x + lw + 2;
	}
	char a[32];
	int fy = ay + ah + 3;
	/* The progress takes the line's right end while points are measured:
	 * the sentence stops short of it rather than under it. */
	int fw = in.w - tw - 2 - (done < total ? 24 : 0);
	if (kind == SL_SWEEP_BANDWIDTH) {
		if (xc > 0) {
			char cx[128];
			int k =
			    snprintf(cx, sizeof cx, "%s crossover: speedup falls below 1 under %s",
			             g->cross_mark, sl_fmt_rate(xc, a, sizeof a));
			snprintf(cx + k, sizeof cx - (size_t)k, " (%s)",
			         measured ? "measured" : "model");
			if (sl_cols(cx) > fw) /* whole words, never "(m" */
				cx[k] = 0;
			sl_put(fy, in.x + 1, fw, sl_theme_role(v->th, SL_ROLE_WARN), cx);
		} else
			sl_put(fy, in.x + 1, fw, dim, "no crossover in this range");
	} else {
		sl_put(fy, in.x + 1, fw, dim, "ideal speedup is the device count");
	}
	if (done < total)
		sl_putf(fy - 0, in.x + in.w - tw - 24, 22, dim, " measuring %d/%d...", done + 1,
		        total);
	/* The table: step time and speedup per point. */
	if (tw) {
		int tx = in.x + in.w - tw;
		sl_putf(in.y, tx, tw, head, "%-10s %10s %8s",
		        kind == SL_SWEEP_BANDWIDTH ? "bandwidth" : "devices", "time", "speedup");
		for (int i = 0; i < n && i + 1 < in.h; i++) {
			char xl[24], tl[24];
			xlabel(pts[i].x, kind, xl, sizeof xl);
			if (pts[i].done && pts[i].rc == 0 && pts[i].time > 0) {
				sl_fmt_time(pts[i].time, tl, sizeof tl);
				sl_putf(in.y + 1 + i, tx, tw, norm, "%-10s %10s %7.2fx", xl, tl,
				        pts[i].single / pts[i].time);
			} else {
				sl_fmt_time(pts[i].predicted, tl, sizeof tl);
				sl_putf(
				    in.y + 1 + i, tx, tw, dim, "%-10s %10s %7.2fx model", xl, tl,
				    pts[i].predicted > 0 ? pts[i].single / pts[i].predicted : 0);
			}
		}
	}
}

/* ---- the view's row ---- */

static void draw(const sl_view *v, const sl_screen_layout *L)
{
	draw_plot(v, L->r[SL_PANEL_BODY]);
}

static void status(const sl_view *v, sl_rect r)
{
	static const sl_action acts[] = {SL_A_PLOT,   SL_A_BW_DOWN, SL_A_BW_UP, SL_A_DEV_DOWN,
	                                 SL_A_DEV_UP, SL_A_CLOSE,   SL_A_HELP,  SL_A_LEAVE};
	sl_draw_status(v, r, acts, sizeof acts / sizeof acts[0]);
}

static void *make(int wake_fd)
{
	struct plot *pl = calloc(1, sizeof *pl);
	if (pl && !(pl->sweep = sl_sweep_create(wake_fd))) {
		free(pl);
		pl = NULL;
	}
	return pl;
}

static int release(void *own, double wait)
{
	struct plot *pl = own;
	int clean = sl_sweep_destroy(pl->sweep, wait);
	free(pl);
	return clean;
}

static int collect(void *own)
{
	return sl_sweep_collect(((struct plot *)own)->sweep);
}

/* The sweeps run the product: a workload of another kind has no plot. */
static const int plots[SL_WL_KINDS] = {[SL_WL_PRODUCT] = 1};

static unsigned open_plot(sl_sandbox *a)
{
	if (!plots[sl_play_workload(a->play)->kind]) {
		snprintf(a->msg, sizeof a->msg, "the plots are for the sharded product");
		return SL_LOOP_DRAW;
	}
	((struct plot *)a->own[SL_MODE_PLOT])->kind = SL_SWEEP_BANDWIDTH;
	sl_sandbox_show(a, SL_MODE_PLOT);
	return SL_LOOP_DRAW;
}

/* g again: the device-count plot, then back to the main view. */
static unsigned act(sl_sandbox *a, sl_action ac, double now)
{
	struct plot *pl = a->own[SL_MODE_PLOT];
	(void)now;
	if (ac != SL_A_PLOT)
		return SL_VIEW_PASS;
	if (pl->kind == SL_SWEEP_BANDWIDTH)
		pl->kind = SL_SWEEP_DEVICES;
	else
		sl_sandbox_show(a, SL_MODE_MAIN);
	return SL_LOOP_DRAW;
}

/* Whatever changed (a knob, the preset, the devices), the points follow. */
static void after(sl_sandbox *a)
{
	struct plot *pl = a->own[SL_MODE_PLOT];
	sl_sweep_start(pl->sweep, sl_play_scenario(a->play), pl->kind, a->knob_inter);
}

static void leave(sl_sandbox *a)
{
	sl_sweep_stop(((struct plot *)a->own[SL_MODE_PLOT])->sweep);
}

const sl_view_row sl_view_plot = {
    .make = make,
    .free = release,
    .draw = draw,
    .sentence = sl_draw_sentence,
    .status = status,
    .collect = collect,
    .opener = SL_A_PLOT,
    .open = open_plot,
    .act = act,
    .after = after,
    .leave = leave,
};
