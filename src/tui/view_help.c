/* SPDX-License-Identifier: MIT */
/* view_help.c - the help screens, generated from the key tables: the keys
 * of the screen the help was opened from and of its siblings, and a legend
 * of the glyphs and colours that screen draws. */
#include <stdio.h>
#include <string.h>

#include "draw.h"
#include "keys.h"

struct help_ctx {
	const sl_view *v; /* NULL: only count the lines */
	sl_rect in;
	int line; /* the help line about to be written */
	int keyw; /* width of the key column */
};

/* One line of n parts, each in its own attribute (keys: the first part is
 * the key column). */
static void out_parts(struct help_ctx *h, int keys, int n, const attr_t *a, const char *const *t)
{
	int row = h->line++ - (h->v ? h->v->help_scroll : 0);
	if (!h->v || row < 0 || row >= h->in.h)
		return;
	int y = h->in.y + row, x = h->in.x + 1, end = h->in.x + h->in.w;
	for (int i = 0; i < n && x < end; i++) {
		int w = sl_put(y, x, keys && i == 0 ? h->keyw : end - x, a[i], t[i]);
		x += keys && i == 0 ? h->keyw + 1 : w;
	}
}

static attr_t role(const struct help_ctx *h, sl_role r)
{
	return h->v ? sl_theme_role(h->v->th, r) : 0;
}

/* text wrapped at spaces: under a key column (keys, or NULL for none). */
static void wrapped(struct help_ctx *h, const char *keys, sl_role r, const char *text)
{
	attr_t a[2] = {role(h, SL_ROLE_KEY), role(h, r)};
	int w = h->in.w - 2 - (keys ? h->keyw + 1 : 0);
	if (w < 20)
		w = 20;
	const char *p = text;
	do {
		char line[256];
		/* The longest run of words that fits w columns (glyphs are
		 * several bytes, one column). */
		size_t n = strlen(p);
		snprintf(line, sizeof line, "%s", p);
		if (sl_cols(line) > w) {
			size_t fit = 0;
			for (size_t i = 1; i <= n; i++) {
				if (p[i] != ' ' && p[i])
					continue;
				snprintf(line, sizeof line, "%.*s", (int)i, p);
				if (sl_cols(line) > w)
					break;
				fit = i;
			}
			n = fit ? fit : (size_t)w;
		}
		snprintf(line, sizeof line, "%.*s", (int)n, p);
		const char *t[2] = {p == text ? keys : "", line};
		if (keys)
			out_parts(h, 1, 2, a, t);
		else
			out_parts(h, 0, 1, a + 1, t + 1);
		p += n;
		while (*p == ' ')
			p++;
	} while (*p);
}

static void out_line(struct help_ctx *h, sl_role r, const char *text)
{
	wrapped(h, NULL, r, text);
}

static void entry(void *ctx, const char *keys, const char *note)
{
	wrapped(ctx, keys, SL_ROLE_NORMAL, note);
}

/* What the scenario views draw: the sandbox's, and the lesson screen's top. */
static void states_legend(struct help_ctx *h)
{
	char legend[200] = "";
	if (h->v) {
		const sl_glyphs *g = h->v->th->g;
		snprintf(
		    legend, sizeof legend,
		    "States: %s compute  %s send  %s recv  %s reduce  %s wait; device digits and "
		    "colours name owners.",
		    g->state[SL_DS_COMPUTE], g->state[SL_DS_SEND], g->state[SL_DS_RECV],
		    g->state[SL_DS_REDUCE], g->state[SL_DS_WAIT]);
	}
	out_line(h, SL_ROLE_NORMAL, legend);
	out_line(h, SL_ROLE_NORMAL,
	         "Times are emulated (the modelled hardware's), not this machine's wall clock.");
}

/* The lesson panel's colours, each shown in its own. */
static void lesson_legend(struct help_ctx *h)
{
	attr_t a[] = {role(h, SL_ROLE_NORMAL), role(h, SL_ROLE_HEAD),   role(h, SL_ROLE_NORMAL),
	              role(h, SL_ROLE_KEY),    role(h, SL_ROLE_NORMAL), role(h, SL_ROLE_PASS),
	              role(h, SL_ROLE_NORMAL), role(h, SL_ROLE_WARN),   role(h, SL_ROLE_NORMAL),
	              role(h, SL_ROLE_FAIL),   role(h, SL_ROLE_NORMAL), role(h, SL_ROLE_DIM)};
	const char *t[] = {
	    "Lesson panel: ", "a question", "  ", "> your answer", "  ", "right",
	    "              ", "not quite",  "  ", "check FAILED",  "  ", "setup, run, result"};
	/* Two lines, to fit 80 columns. */
	out_parts(h, 0, 6, a, t);
	out_parts(h, 0, 6, a + 6, t + 6);
}

static void menu_legend(struct help_ctx *h)
{
	out_line(h, SL_ROLE_NORMAL,
	         "> marks the lesson chosen; beside it, its minutes and whether it is started or "
	         "done.");
}

static int help_body(struct help_ctx *h, sl_keymode from)
{
	if (from == SL_MODE_MENU) {
		menu_legend(h);
	} else {
		states_legend(h);
		if (from == SL_MODE_LESSON || from == SL_MODE_INPUT)
			lesson_legend(h);
	}
	sl_keymode ms[SL_MODE_COUNT];
	int n = sl_keys_help_modes(from, ms, SL_MODE_COUNT);
	for (int i = 0; i < n; i++) {
		char title[120];
		snprintf(title, sizeof title, "%s%s", sl_keymode_title(ms[i]),
		         ms[i] == from ? "  (this screen)" : "");
		out_line(h, SL_ROLE_NORMAL, "");
		out_line(h, SL_ROLE_HEAD, title);
		sl_keys_help(ms[i], entry, h);
	}
	out_line(h, SL_ROLE_NORMAL, "");
	out_line(h, SL_ROLE_DIM, "Esc, q or ? closes this help; F10 quits.");
	return h->line;
}

int sl_help_lines(int from, int width)
{
	struct help_ctx h = {NULL, {0, 0, 0, width - 2}, 0, 18};
	return help_body(&h, (sl_keymode)from);
}

void sl_draw_help(const sl_view *v, sl_rect r)
{
	sl_rect in = sl_box(v, r, "Help: keys (generated from the key table; also in shardlab(1))");
	struct help_ctx h = {v, in, 0, 18};
	help_body(&h, (sl_keymode)v->help_of);
}
