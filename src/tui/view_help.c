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

/* The legend of every glyph and colour (theme.c's table), a line an item:
 * the glyphs in the colour they are drawn in, then what they mean there. */
static void glyph_legend(struct help_ctx *h)
{
	size_t n;
	const sl_legend_item *L = sl_legend(&n);
	int group = -1;
	for (size_t i = 0; i < n; i++) {
		if ((int)L[i].group != group) {
			group = (int)L[i].group;
			out_line(h, SL_ROLE_NORMAL, "");
			out_line(h, SL_ROLE_HEAD, sl_legend_group_name(L[i].group));
		}
		char gl[64] = "";
		if (h->v && L[i].off != SL_LEGEND_NO_GLYPH) {
			size_t len = 0;
			for (int k = 0; k < L[i].n && len < sizeof gl - 1; k++)
				len += (size_t)snprintf(gl + len, sizeof gl - len, "%s",
				                        sl_glyph_at(h->v->th->g, L[i].off, k));
		} else if (h->v && L[i].group == SL_LG_BLOCKS) {
			snprintf(gl, sizeof gl, "0 1 2");
		} else if (h->v) {
			snprintf(gl, sizeof gl, "colour");
		}
		attr_t a[2] = {role(h, L[i].role), role(h, SL_ROLE_NORMAL)};
		if (L[i].role == SL_ROLE_DEV0 || L[i].role == SL_ROLE_DEVBG0)
			a[0] = h->v ? (L[i].role == SL_ROLE_DEV0 ? sl_theme_dev(h->v->th, 0)
			                                         : sl_theme_devbg(h->v->th, 0))
			            : 0;
		int w = h->in.w - 2 - h->keyw - 1;
		const char *p = L[i].meaning;
		int first = 1;
		/* The meaning wrapped under itself, the glyphs on its first row. */
		do {
			char line[256];
			size_t len = strlen(p), cut = len;
			if ((int)len > w && w > 10) {
				cut = (size_t)w;
				while (cut > 0 && p[cut] != ' ')
					cut--;
				if (cut == 0)
					cut = (size_t)w;
			}
			snprintf(line, sizeof line, "%.*s", (int)cut, p);
			const char *t[2] = {first ? gl : "", line};
			out_parts(h, 1, 2, a, t);
			first = 0;
			p += cut;
			while (*p == ' ')
				p++;
		} while (*p);
	}
}

static void states_legend(struct help_ctx *h)
{
	out_line(h, SL_ROLE_NORMAL,
	         "Times are emulated (the modelled hardware's), not this machine's wall clock. "
	         "Every glyph and colour is listed after the keys (Down scrolls).");
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
		states_legend(h);
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
	glyph_legend(h);
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
