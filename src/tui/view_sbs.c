/* SPDX-License-Identifier: MIT */
/* view_sbs.c - layouts side by side (sbs.h): one band per layout on one
 * time axis, each device's compute, communication and waiting over a
 * training step, its figures beside it and a bar of its memory's anatomy;
 * a screen of its own in the one loop (loop.h). */
#include <locale.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "draw.h"
#include "loop.h"
#include "sbs.h"
#include "term.h"
#include "tui.h"
#include "units.h"

#define LABEL_W 10 /* "dev 12-15 " */
#define MIN_ROWS SL_LAYOUT_MIN_ROWS
#define MIN_COLS SL_LAYOUT_MIN_COLS

struct sbs_ui {
	const sl_sbs *s;
	sl_theme th;
	sl_loop_help help;
	int rows, cols;
	char msg[96];
};

/* The memory anatomy's colours, in sl_glyphs.anatomy's order (the legend
 * in glyphs.c says the same). */
static const sl_role anatomy_role[5] = {SL_ROLE_STATE0 + SL_DS_SEND, SL_ROLE_STATE0 + SL_DS_REDUCE,
                                        SL_ROLE_BWD, SL_ROLE_STATE0 + SL_DS_COMPUTE, SL_ROLE_DIM};
static const char *const anatomy_word[5] = {"parameters", "gradients", "optimizer", "activations",
                                            "workspace"};

/* The figure in a rectangle: the time scale, the bands and the legend. */
struct fig {
	const sl_theme *th;
	const sl_sbs *s;
	int x, w; /* the columns it takes */
};

/* The columns: labels, the timeline, the memory bar and its figure. */
struct cols {
	int tl_x, tl_w, mem_x, mem_w;
};

static struct cols columns(const struct fig *f)
{
	struct cols c;
	c.mem_w = f->w / 5 < 8 ? 8 : f->w / 5;
	c.tl_x = f->x + LABEL_W;
	/* the bar with its ends, a space and a figure ("123.4 MB") after it */
	c.tl_w = f->w - LABEL_W - 1 - (c.mem_w + 2 + 10);
	c.mem_x = c.tl_x + c.tl_w + 1;
	return c;
}

/* The scale's labels on row y, and (ticks) its axis on the row below. */
static void draw_scale(const struct fig *f, int y, struct cols c, double axis, int ticks)
{
	const sl_glyphs *g = f->th->g;
	attr_t dim = sl_theme_role(f->th, SL_ROLE_DIM), head = sl_theme_role(f->th, SL_ROLE_HEAD);
	char t[32];
	sl_put(y, f->x, LABEL_W, head, "time");
	/* Labels over the quarters, the ends first, the others where they
	 * leave a blank on each side. */
	static const int order[5] = {0, 4, 2, 1, 3};
	int lx[5], w[5], drawn[5] = {0};
	for (int i = 0; i < 5; i++) {
		int q = order[i], x = c.tl_x + (c.tl_w - 1) * q / 4;
		sl_fmt_time(axis * q / 4, t, sizeof t);
		w[q] = q == 0 ? 1 : sl_cols(t);
		lx[q] = q == 0 ? x : q == 4 ? x - w[q] + 1 : x - w[q] / 2;
		int clear = 1;
		for (int k = 0; k < 5; k++)
			if (drawn[k] && lx[q] <= lx[k] + w[k] && lx[k] <= lx[q] + w[q])
				clear = 0;
		if (clear) {
			sl_put(y, lx[q], w[q], dim, q == 0 ? "0" : t);
			drawn[q] = 1;
		}
	}
	char m[32];
	sl_fmt_bytes((double)sl_sbs_mem_scale(f->s), m, sizeof m);
	if (ticks) {
		sl_rep(y + 1, c.tl_x, c.tl_w, dim, g->h);
		for (int q = 0; q <= 4; q++)
			sl_put(y + 1, c.tl_x + (c.tl_w - 1) * q / 4, 1, dim, g->tick);
		sl_put(y, c.mem_x, c.mem_w + 12, head, "memory per device");
		sl_putf(y + 1, c.mem_x, c.mem_w + 12, dim, "%s0 to %s%s", g->mem_l, m, g->mem_r);
	} else {
		sl_putf(y, c.mem_x, c.mem_w + 12, head, "memory 0 to %s", m);
	}
}

/* The cells of a row's lane (sl_sbs_lane_cells). */
static void draw_cells(const struct fig *f, int y, struct cols c, const sl_sbs_band *b, int lane,
                       int lo, int hi, double axis)
{
	const sl_theme *th = f->th;
	sl_dstate cell[512];
	int w = c.tl_w < 512 ? c.tl_w : 512;
	sl_sbs_lane_cells(b, lane, lo, hi, axis, w, cell);
	for (int x = 0; x < w; x++) {
		if (cell[x] == SL_DS_COUNT)
			continue; /* past the band's step */
		sl_put(y, c.tl_x + x, 1, sl_theme_state(th, cell[x]), th->g->state[cell[x]]);
	}
}

/* lane: the compute stream's (0), or every event (-1: no side lane drawn). */
static void draw_row(const struct fig *f, int y, struct cols c, const sl_sbs_band *b, int lane,
                     int lo, int hi, double axis, uint64_t scale)
{
	const sl_theme *th = f->th;
	const sl_glyphs *g = th->g;
	attr_t dim = sl_theme_role(th, SL_ROLE_DIM);
	if (hi - lo == 1)
		sl_putf(y, f->x, LABEL_W, sl_theme_dev(th, lo), "dev %d", lo);
	else
		sl_putf(y, f->x, LABEL_W, sl_theme_role(th, SL_ROLE_NORMAL), "dev %d-%d", lo,
		        hi - 1);
	draw_cells(f, y, c, b, lane, lo, hi, axis);
	/* The anatomy of the row's device with the highest peak, on the scale
	 * of every band's largest. */
	uint64_t part[5];
	int d = sl_sbs_anatomy(b, lo, hi, part);
	sl_put(y, c.mem_x, 1, dim, g->mem_l);
	double cum = 0;
	int x0 = 0;
	for (int k = 0; k < 5 && scale; k++) {
		cum += (double)part[k];
		int x1 = (int)(cum / (double)scale * c.mem_w + 0.5);
		if (x1 > c.mem_w)
			x1 = c.mem_w;
		sl_rep(y, c.mem_x + 1 + x0, x1 - x0, sl_theme_role(th, anatomy_role[k]),
		       g->anatomy[k]);
		x0 = x1 > x0 ? x1 : x0;
	}
	sl_put(y, c.mem_x + 1 + c.mem_w, 1, dim, g->mem_r);
	char m[32];
	sl_fmt_bytes((double)b->dev[d].mem_peak_bytes, m, sizeof m);
	int mx = c.mem_x + c.mem_w + 3;
	sl_put(y, mx, f->x + f->w - mx, dim, m);
}

static void draw_band(const struct fig *f, int y, int h, struct cols c, const sl_sbs_band *b,
                      double axis, uint64_t scale)
{
	const sl_theme *th = f->th;
	char t[32], m[32], s[32], head[200];
	int x = f->x + sl_put(y, f->x, f->w, sl_theme_role(th, SL_ROLE_HEAD), b->name);
	sl_fmt_time(b->step_s, t, sizeof t);
	sl_fmt_bytes((double)b->mem_peak, m, sizeof m);
	sl_fmt_bytes((double)b->sent, s, sizeof s);
	snprintf(head, sizeof head, "  %d device%s %s step %s %s per device: peak %s, sent %s",
	         b->ndev, b->ndev == 1 ? "" : "s", th->g->dot, t, th->g->dot, m, s);
	/* Narrow (a lesson's figure at 80 columns), the rows' labels count
	 * the devices: the figures come first. */
	if (x + sl_cols(head) > f->x + f->w)
		snprintf(head, sizeof head, "  step %s %s per device: peak %s, sent %s", t,
		         th->g->dot, m, s);
	sl_put(y, x, f->x + f->w - x, sl_theme_role(th, SL_ROLE_NORMAL), head);
	/* With side streams a row is two lanes: the compute stream's, and
	 * under it, marked, the communication beside it. */
	int rows = h - 1, lanes = sl_sbs_lanes(b);
	if (rows < lanes)
		lanes = 1; /* one row: everything on it */
	int per = sl_sbs_per_row(b->ndev, rows / lanes);
	for (int lo = 0, r = 0; lo < b->ndev && r + lanes <= rows; lo += per, r += lanes) {
		int hi = lo + per < b->ndev ? lo + per : b->ndev;
		draw_row(f, y + 1 + r, c, b, lanes > 1 ? 0 : -1, lo, hi, axis, scale);
		if (lanes > 1) {
			sl_put(y + 2 + r, f->x + 4, LABEL_W - 4,
			       hi - lo == 1 ? sl_theme_dev(th, lo)
			                    : sl_theme_role(th, SL_ROLE_NORMAL),
			       th->g->lane);
			draw_cells(f, y + 2 + r, c, b, 1, lo, hi, axis);
		}
	}
}

/* A note after a legend: the long words if they fit, else the short. */
static void put_fitting(const struct fig *f, int y, int x, const char *lng, const char *shrt)
{
	int end = f->x + f->w;
	const char *w = x + sl_cols(lng) <= end ? lng : x + sl_cols(shrt) <= end ? shrt : "";
	sl_put(y, x, end - x, sl_theme_role(f->th, SL_ROLE_DIM), w);
}

/* The legend on row y, and (memory) the memory's on the row below. */
static void draw_legend(const struct fig *f, int y, int grouped, int lanes, int memory)
{
	const sl_theme *th = f->th;
	const sl_glyphs *g = th->g;
	attr_t norm = sl_theme_role(th, SL_ROLE_NORMAL);
	static const sl_dstate st[] = {SL_DS_COMPUTE, SL_DS_SEND, SL_DS_WAIT};
	static const char *const words[] = {"compute", "communicate", "wait"};
	int x = f->x, end = f->x + f->w;
	for (int i = 0; i < 3; i++) {
		x += sl_put(y, x, end - x, sl_theme_state(th, st[i]), g->state[st[i]]);
		x += sl_putf(y, x, end - x, norm, " %s  ", words[i]);
	}
	x += sl_put(y, x, end - x, norm, "(blank) idle");
	/* The side streams' lanes, named where they are drawn. */
	if (lanes && x + 4 + sl_cols(g->lane) + 16 <= end) {
		x += sl_put(y, x, end - x, norm, "  ");
		x += sl_put(y, x, end - x, norm, g->lane);
		x += sl_put(y, x, end - x, norm, " comm lane");
	}
	if (grouped)
		put_fitting(f, y, x, "   a row of devices: what took most of their time",
		            "   rows of devices: summed");
	if (!memory)
		return;
	x = f->x + sl_put(y + 1, f->x, f->w, norm, "memory: ");
	for (int k = 0; k < 5; k++) {
		x += sl_put(y + 1, x, end - x, sl_theme_role(th, anatomy_role[k]), g->anatomy[k]);
		x += sl_putf(y + 1, x, end - x, norm, " %s  ", anatomy_word[k]);
	}
	if (grouped)
		put_fitting(f, y + 1, x, "(a row's: its device of highest peak)", "(highest)");
}

void sl_draw_sbs(const sl_theme *th, const sl_sbs *s, sl_rect r)
{
	struct fig f = {th, s, r.x, r.w};
	struct cols c = columns(&f);
	double axis = sl_sbs_axis(s);
	uint64_t scale = sl_sbs_mem_scale(s);
	/* The scale and the legend take two rows each; on a short figure
	 * (a lesson's at 80x24) the axis's ticks go, then the memory's
	 * legend, before a band has no row of its own. */
	int scale_h = 2, legend_h = 2;
	if (r.h - scale_h - legend_h < 2 * s->n)
		scale_h = 1;
	if (r.h - scale_h - legend_h < 2 * s->n)
		legend_h = 1;
	draw_scale(&f, r.y, c, axis, scale_h == 2);
	/* The bands share the rows left: each its header and a row a device
	 * with a blank row between two, or without the blanks, or in equal
	 * shares, whichever is the first that fits. */
	int avail = r.h - scale_h - legend_h, need = 0, grouped = 0, lanes = 0;
	for (int i = 0; i < s->n; i++) {
		need += s->band[i].ndev * sl_sbs_lanes(&s->band[i]) + 1;
		lanes |= sl_sbs_lanes(&s->band[i]) > 1;
	}
	int gap = need + s->n - 1 <= avail ? 1 : 0;
	int y = r.y + scale_h;
	for (int i = 0; i < s->n; i++) {
		int want = s->band[i].ndev * sl_sbs_lanes(&s->band[i]) + 1;
		int h = need <= avail ? want : avail / s->n + (i < avail % s->n);
		h = h < want ? h : want;
		if (h < 1)
			break;
		grouped |= h < want;
		draw_band(&f, y, h, c, &s->band[i], axis, scale);
		y += h + gap;
	}
	draw_legend(&f, r.y + r.h - legend_h, grouped, lanes, legend_h == 2);
}

static void draw_status(const struct sbs_ui *u)
{
	static const sl_action acts[] = {SL_A_LEAVE, SL_A_HELP, SL_A_CONTRAST, SL_A_SNAPSHOT};
	static const sl_action help[] = {SL_A_SCROLL_DOWN, SL_A_CLOSE, SL_A_QUIT};
	sl_view v = {.th = &u->th, .msg = u->msg};
	sl_rect r = {u->rows - 1, 0, 1, u->cols};
	if (u->help.open)
		sl_draw_keys(&v, r, SL_MODE_HELP, help, NULL, NULL, sizeof help / sizeof help[0]);
	else
		sl_draw_keys(&v, r, SL_MODE_SBS, acts, NULL, NULL, sizeof acts / sizeof acts[0]);
}

static void draw(void *ctx)
{
	struct sbs_ui *u = ctx;
	const sl_sbs *s = u->s;
	erase();
	sl_view v = {.th = &u->th, .msg = u->msg, .mode = SL_MODE_SBS, .help_of = SL_MODE_SBS};
	if (u->rows < MIN_ROWS || u->cols < MIN_COLS) {
		sl_draw_too_small(&v, u->rows, u->cols);
		sl_term_show();
		return;
	}
	attr_t title = sl_theme_role(&u->th, SL_ROLE_TITLE);
	sl_putf(0, 0, u->cols, title,
	        "shardlab compare: %d layouts side by side, one training step", s->n);
	if (u->help.open) {
		u->help.rows = u->rows - 2;
		u->help.cols = u->cols;
		v.help_of = u->help.of;
		sl_draw_help(&v, (sl_rect){1, 0, u->help.rows, u->help.cols});
		draw_status(u);
		sl_term_show();
		return;
	}
	sl_putf(1, 0, u->cols, sl_theme_role(&u->th, SL_ROLE_DIM), "model: %s", s->model);
	sl_putf(2, 0, u->cols, sl_theme_role(&u->th, SL_ROLE_DIM), "hardware: %s", s->machine);
	sl_draw_sbs(&u->th, s, (sl_rect){3, 0, u->rows - 4, u->cols});
	draw_status(u);
	sl_term_show();
}

static sl_keymode keys(void *ctx)
{
	(void)ctx;
	return SL_MODE_SBS;
}

static sl_loop_help *help_of(void *ctx)
{
	return &((struct sbs_ui *)ctx)->help;
}

static unsigned on_key(void *ctx, int ch, sl_action a, double now)
{
	struct sbs_ui *u = ctx;
	(void)ch;
	(void)now;
	u->msg[0] = 0;
	switch (a) {
	case SL_A_LEAVE:
		return SL_LOOP_QUIT;
	case SL_A_CONTRAST:
		return sl_theme_contrast_key(&u->th, u->msg, sizeof u->msg)
		           ? SL_LOOP_DRAW | SL_LOOP_CLEAR
		           : SL_LOOP_DRAW;
	default:
		return 0;
	}
}

static int still(void *ctx)
{
	(void)ctx;
	return 0;
}

static void relayout(void *ctx)
{
	struct sbs_ui *u = ctx;
	getmaxyx(stdscr, u->rows, u->cols);
}

static const sl_loop_mode sbs_mode = {keys,  help_of,  NULL, on_key, NULL, NULL,
                                      still, relayout, draw, NULL,   NULL};

int sl_sbs_main(const sl_sbs *s, const struct sl_tui_options *opt)
{
	struct sl_tui_options o;
	if (sl_tui_begin(&o, opt, "compare --side-by-side needs a terminal (or --snapshot=FILE)"))
		return 1;
	sl_err err = {0};
	if (sl_term_init(&err) != SL_OK) {
		fprintf(stderr, "shardlab: %s\n", err.msg);
		return 1;
	}
	if (sl_term_start(1, &err) != SL_OK) {
		sl_term_done();
		fprintf(stderr, "shardlab: %s\n", err.msg);
		return 1;
	}
	struct sbs_ui u = {.s = s};
	sl_theme_init(&u.th, o.no_color, o.ascii, o.high_contrast);
	relayout(&u);
	int sig = sl_loop_run(&sbs_mode, &u, o.fps > 0 ? o.fps : SL_TUI_DEFAULT_FPS);
	sl_term_stop();
	int status = 0;
	if (o.snapshot && sl_loop_snapshot_error()[0]) {
		fprintf(stderr, "shardlab: %s\n", sl_loop_snapshot_error());
		status = 1;
	}
	return sl_term_finish(sig, 1, status);
}
