/* SPDX-License-Identifier: MIT */
/* draw.c - clipped text, boxes, and the one-line views (title, sentence,
 * status, too-small). */
#include "draw.h"
#include "play.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "keys.h"
#include "units.h"

int sl_cols(const char *s)
{
	int n = 0;
	for (; *s; s++)
		if (((unsigned char)*s & 0xc0) != 0x80)
			n++;
	return n;
}

int sl_put(int y, int x, int w, attr_t a, const char *s)
{
	if (w <= 0)
		return 0;
	/* Cut at w columns, never inside a UTF-8 sequence. */
	int cols = 0;
	const char *p = s;
	while (*p) {
		if (((unsigned char)*p & 0xc0) != 0x80) {
			if (cols == w)
				break;
			cols++;
		}
		p++;
	}
	attrset(a);
	if (p > s)
		mvaddnstr(y, x, s, (int)(p - s));
	attrset(A_NORMAL);
	return cols;
}

int sl_putf(int y, int x, int w, attr_t a, const char *fmt, ...)
{
	char buf[512];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(buf, sizeof buf, fmt, ap);
	va_end(ap);
	return sl_put(y, x, w, a, buf);
}

void sl_rep(int y, int x, int n, attr_t a, const char *g)
{
	attrset(a);
	for (int i = 0; i < n; i++)
		mvaddstr(y, x + i, g);
	attrset(A_NORMAL);
}

void sl_clear_rect(sl_rect r, attr_t a)
{
	for (int y = 0; y < r.h; y++)
		sl_rep(r.y + y, r.x, r.w, a, " ");
}

sl_rect sl_box(const sl_view *v, sl_rect r, const char *title)
{
	const sl_glyphs *g = v->th->g;
	attr_t b = sl_theme_role(v->th, SL_ROLE_BORDER);
	sl_clear_rect(r, sl_theme_role(v->th, SL_ROLE_NORMAL));
	sl_rep(r.y, r.x + 1, r.w - 2, b, g->h);
	sl_rep(r.y + r.h - 1, r.x + 1, r.w - 2, b, g->h);
	for (int y = 1; y < r.h - 1; y++) {
		sl_rep(r.y + y, r.x, 1, b, g->v);
		sl_rep(r.y + y, r.x + r.w - 1, 1, b, g->v);
	}
	sl_rep(r.y, r.x, 1, b, g->tl);
	sl_rep(r.y, r.x + r.w - 1, 1, b, g->tr);
	sl_rep(r.y + r.h - 1, r.x, 1, b, g->bl);
	sl_rep(r.y + r.h - 1, r.x + r.w - 1, 1, b, g->br);
	if (title && *title)
		sl_putf(r.y, r.x + 2, r.w - 4, sl_theme_role(v->th, SL_ROLE_HEAD), " %s ", title);
	sl_rect in = {r.y + 1, r.x + 1, r.h - 2, r.w - 2};
	return in;
}

/* How much slower than real time: "1/93.8k". */
static void fmt_slowdown(double s, char *b, size_t n)
{
	if (s <= 1.0001)
		snprintf(b, n, "real time");
	else if (s < 1e3)
		snprintf(b, n, "speed 1/%.3g", s);
	else if (s < 1e6 - 0.5)
		snprintf(b, n, "speed 1/%.3gk", s / 1e3);
	else
		snprintf(b, n, "speed 1/%.3gM", s / 1e6);
}

/* What ran, after the clock, in the words of its kind; what matters first
 * comes first: narrow terminals cut the end. */
static int nodes_of(const sl_scenario *sc)
{
	return sc->cluster.devices_per_node > 0 ? sc->cluster.devices / sc->cluster.devices_per_node
	                                        : 1;
}

static void title_reshard(const sl_view *v, int y, int x, int end)
{
	const sl_scenario *sc = v->sc;
	const sl_scene *m = v->m;
	const sl_glyphs *g = v->th->g;
	const sl_workload *w = m->wl;
	const sl_layout *l = &w->l, *s = &sl_ckpt_info_of(w->ck)->layout;
	sl_putf(y, x, end - x, sl_theme_role(v->th, SL_ROLE_NORMAL),
	        "%s reshard tp=%d pp=%d dp=%d %s tp=%d pp=%d dp=%d %s %d%s%s", g->v, s->tp, s->pp,
	        s->dp, g->arrow, l->tp, l->pp, l->dp, g->dot, m->ndev, g->times,
	        sc->preset[0] ? sc->preset : "custom");
}

static void title_collective(const sl_view *v, int y, int x, int end)
{
	const sl_scenario *sc = v->sc;
	const sl_scene *m = v->m;
	const sl_glyphs *g = v->th->g;
	const sl_workload *w = m->wl;
	int nodes = nodes_of(sc);
	char b[32];
	sl_putf(y, x, end - x, sl_theme_role(v->th, SL_ROLE_NORMAL),
	        "%s %s of %s %s %s %d%s%s %s %d node%s", g->v, sl_coll_op_name(w->op),
	        sl_fmt_bytes((double)w->count * sizeof(float), b, sizeof b), sl_algo_name(w->algo),
	        g->dot, m->ndev, g->times, sc->preset[0] ? sc->preset : "custom", g->dot, nodes,
	        nodes > 1 ? "s" : "");
}

static void title_train(const sl_view *v, int y, int x, int end)
{
	const sl_scenario *sc = v->sc;
	const sl_scene *m = v->m;
	const sl_glyphs *g = v->th->g;
	const sl_layout *l = &m->wl->l;
	int nodes = nodes_of(sc);
	char cpw[24] = "";
	if (l->cp > 1)
		snprintf(cpw, sizeof cpw, " cp=%d", l->cp);
	sl_putf(y, x, end - x, sl_theme_role(v->th, SL_ROLE_NORMAL),
	        "%s train tp=%d%s pp=%d dp=%d %s %s %d mb %s %d%s%s %s %d node%s", g->v, l->tp, cpw,
	        l->pp, l->dp, g->dot, sl_sched_name(l->schedule), l->microbatches, g->dot, m->ndev,
	        g->times, sc->preset[0] ? sc->preset : "custom", g->dot, nodes,
	        nodes > 1 ? "s" : "");
}

static void title_product(const sl_view *v, int y, int x, int end)
{
	const sl_scenario *sc = v->sc;
	const sl_scene *m = v->m;
	const sl_glyphs *g = v->th->g;
	int nodes = nodes_of(sc);
	/* The sizes whole, or abbreviated (8k) when the line is short of room;
	 * then only whole words, never "256×819". */
	char buf[256];
	for (int abbr = 0; abbr < 2; abbr++) {
		char dm[3][16];
		const int d[3] = {sc->gemm.m, sc->gemm.k, sc->gemm.n};
		for (int i = 0; i < 3; i++)
			snprintf(dm[i], sizeof dm[i],
			         abbr && d[i] >= 1024 && d[i] % 1024 == 0 ? "%dk" : "%d",
			         abbr && d[i] >= 1024 && d[i] % 1024 == 0 ? d[i] / 1024 : d[i]);
		snprintf(buf, sizeof buf, "%s %s %s%s%s%s%s %s %d%s%s %s %d node%s%s %s %s", g->v,
		         sl_split_name(sc->gemm.split), dm[0], g->times, dm[1], g->times, dm[2],
		         g->dot, m->ndev, g->times, sc->preset[0] ? sc->preset : "custom", g->dot,
		         nodes, nodes > 1 ? "s" : "",
		         sc->cluster.topology == SL_TOPO_RING ? " ring-wired" : "", g->dot,
		         sl_algo_name(sc->gemm.algo));
		if (sl_cols(buf) <= end - x)
			break;
	}
	while (sl_cols(buf) > end - x) {
		char *sp = strrchr(buf, ' ');
		if (!sp)
			break;
		*sp = 0;
	}
	sl_put(y, x, end - x, sl_theme_role(v->th, SL_ROLE_NORMAL), buf);
}

static void (*const title_of[SL_WL_KINDS])(const sl_view *v, int y, int x, int end) = {
    [SL_WL_PRODUCT] = title_product,
    [SL_WL_COLLECTIVE] = title_collective,
    [SL_WL_TRAIN] = title_train,
    [SL_WL_RESHARD] = title_reshard,
};

void sl_draw_title(const sl_view *v, sl_rect r)
{
	const sl_scenario *sc = v->sc;
	const sl_scene *m = v->m;
	attr_t a = sl_theme_role(v->th, SL_ROLE_TITLE), norm = sl_theme_role(v->th, SL_ROLE_NORMAL);
	sl_clear_rect(r, norm);
	char t[32], e[32], sd[32];
	sl_fmt_time(m->t, t, sizeof t);
	if (m->end >= 0)
		sl_fmt_time(m->end, e, sizeof e);
	else
		snprintf(e, sizeof e, "?");
	fmt_slowdown(v->slowdown, sd, sizeof sd);
	const char *state = v->planning && !v->stale ? "planning"
	                    : v->playing             ? "playing"
	                                             : "paused";
	int x = r.x, end = r.x + r.w;
	x += sl_put(r.y, x, end - x, a, "shardlab  ");
	x += sl_putf(r.y, x, end - x, a, "t %s / %s", t, e);
	x += sl_put(r.y, x, end - x, norm, "  ");
	x += sl_put(r.y, x, end - x, sl_theme_role(v->th, v->playing ? SL_ROLE_PASS : SL_ROLE_WARN),
	            state);
	x += sl_putf(r.y, x, end - x, sl_theme_role(v->th, SL_ROLE_DIM), "  %s%s  ", sd,
	             v->auto_speed ? " (auto)" : "");
	if (sc->cluster.timing_only)
		x += sl_put(r.y, x, end - x, sl_theme_role(v->th, SL_ROLE_WARN), "dry run  ");
	title_of[m->kind](v, r.y, x, end);
}

int sl_put_wrapped(int y, int x, int w, int h, attr_t a, const char *s)
{
	int row = 0;
	for (; row < h && *s; row++) {
		int len = (int)strlen(s);
		int cut = len;
		if (sl_cols(s) > w && row + 1 < h) {
			/* The last space that keeps the line within the width. */
			int cols = 0;
			cut = 0;
			for (int i = 0; s[i] && cols <= w; i++) {
				if (((unsigned char)s[i] & 0xc0) != 0x80)
					cols++;
				if (s[i] == ' ' && cols <= w)
					cut = i;
			}
			if (cut == 0)
				cut = len;
		}
		char line[512];
		snprintf(line, sizeof line, "%.*s", cut, s);
		if (row + 1 == h && sl_cols(s) > w && w > 4) {
			/* The last row and more than it holds: whole words and
			 * "...", never a figure cut to "46.7". */
			int cols = 0, keep = 0;
			for (int i = 0; s[i] && cols <= w - 3; i++) {
				if (((unsigned char)s[i] & 0xc0) != 0x80)
					cols++;
				if (s[i] == ' ' && cols <= w - 3)
					keep = i;
			}
			snprintf(line, sizeof line, "%.*s...", keep, s);
		}
		sl_put(y + row, x, w, a, line);
		s += cut;
		while (*s == ' ')
			s++;
	}
	return row;
}

/* Word-wrapped over the rows it has. */
void sl_draw_sentence(const sl_view *v, sl_rect r)
{
	attr_t a = sl_theme_role(v->th, v->m->failed ? SL_ROLE_FAIL : SL_ROLE_NORMAL);
	sl_clear_rect(r, sl_theme_role(v->th, SL_ROLE_NORMAL));
	sl_put_wrapped(r.y, r.x, r.w, r.h, a, v->m->sentence);
}

/* The status line (see draw.h). */
void sl_draw_keys(const sl_view *v, sl_rect r, sl_keymode mode, const sl_action *acts,
                  const int *keys, const char *const *words, size_t n)
{
	attr_t norm = sl_theme_role(v->th, SL_ROLE_STATUS), key = sl_theme_role(v->th, SL_ROLE_KEY);
	sl_clear_rect(r, norm);
	int x = r.x, end = r.x + r.w;
	if (v->msg && *v->msg) {
		x += sl_putf(r.y, x, end - x, sl_theme_role(v->th, SL_ROLE_WARN), "%s", v->msg);
		x += sl_put(r.y, x, end - x, norm, "  ");
	}
	for (size_t i = 0; i < n && x < end; i++) {
		int k = keys && keys[i] ? keys[i] : sl_keys_first(mode, acts[i]);
		if (k < 0)
			continue;
		char name[24];
		const char *word = words && words[i] ? words[i] : sl_action_word(acts[i]);
		if (acts[i] == SL_A_ROW_DOWN || acts[i] == SL_A_ROW_UP) {
			/* One entry for both: "Up/Down select". */
			if (acts[i] == SL_A_ROW_UP)
				continue;
			char n1[12], n2[12];
			int up = sl_keys_first(mode, SL_A_ROW_UP);
			x += sl_putf(r.y, x, end - x, key, "%s/%s", sl_key_name(up, n1, sizeof n1),
			             sl_key_name(k, n2, sizeof n2));
			x += sl_putf(r.y, x, end - x, norm, " %s  ",
			             words && words[i] ? word : "select");
			continue;
		}
		if (acts[i] == SL_A_BW_DOWN || acts[i] == SL_A_BW_UP) {
			/* What the knobs turn now. */
			if (acts[i] == SL_A_BW_UP)
				continue;
			int kd = sl_keys_first(mode, SL_A_BW_DOWN);
			int ku = sl_keys_first(mode, SL_A_BW_UP);
			char n1[8], n2[8], what[32];
			if (v->sel.kind == SL_SEL_LINK)
				snprintf(what, sizeof what, "bw %d%s%d", v->sel.src,
				         v->th->g->arrow, v->sel.dst);
			else
				snprintf(what, sizeof what, "%s bw",
				         v->knob_inter ? "inter" : "intra");
			x += sl_putf(r.y, x, end - x, key, "%s%s", sl_key_name(kd, n1, sizeof n1),
			             sl_key_name(ku, n2, sizeof n2));
			x += sl_putf(r.y, x, end - x, norm, " %s  ", what);
			continue;
		}
		/* A word that does not fit whole is left out, not cut. */
		sl_key_name(k, name, sizeof name);
		if (x + sl_cols(name) + 1 + sl_cols(word) > end)
			break;
		x += sl_put(r.y, x, end - x, key, name);
		x += sl_putf(r.y, x, end - x, norm, " %s  ", word);
	}
}

/* The sandbox's keys that matter now, from the key table (each view's row
 * says which). */
void sl_draw_status(const sl_view *v, sl_rect r, const sl_action *acts, size_t n)
{
	const char *words[16] = {0};
	n = n < 16 ? n : 16;
	for (size_t i = 0; i < n; i++) {
		if (acts[i] == SL_A_PLAY && v->playing)
			words[i] = "pause";
		if (acts[i] == SL_A_LEAVE && v->from_menu)
			words[i] = "menu";
	}
	sl_draw_keys(v, r, (sl_keymode)v->mode, acts, NULL, words, n);
}

void sl_draw_too_small(const sl_view *v, int rows, int cols)
{
	erase();
	char l1[80], l2[80];
	snprintf(l1, sizeof l1, "Please enlarge the terminal to at least %dx%d.",
	         SL_LAYOUT_MIN_COLS, SL_LAYOUT_MIN_ROWS);
	snprintf(l2, sizeof l2, "It is %dx%d now.  q quits.", cols, rows);
	int y = rows / 2 - 1 > 0 ? rows / 2 - 1 : 0;
	int w1 = (int)strlen(l1), w2 = (int)strlen(l2);
	sl_put(y, cols > w1 ? (cols - w1) / 2 : 0, cols, sl_theme_role(v->th, SL_ROLE_WARN), l1);
	if (y + 1 < rows)
		sl_put(y + 1, cols > w2 ? (cols - w2) / 2 : 0, cols,
		       sl_theme_role(v->th, SL_ROLE_NORMAL), l2);
}
