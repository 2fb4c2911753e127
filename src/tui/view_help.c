/* SPDX-License-Identifier: MIT */
/* view_help.c - the help screen, generated from the key tables. */
#include <stdio.h>
#include <string.h>

#include "draw.h"
#include "keys.h"

struct help_ctx {
	const sl_view *v;
	sl_rect in;
	int line; /* the help line about to be written */
	int keyw; /* width of the key column */
};

static void out_line(struct help_ctx *h, attr_t a, const char *keys, attr_t b, const char *text)
{
	int row = h->line++ - h->v->help_scroll;
	if (row < 0 || row >= h->in.h)
		return;
	int y = h->in.y + row, x = h->in.x + 1;
	if (keys) {
		sl_put(y, x, h->keyw, a, keys);
		x += h->keyw + 1;
	}
	sl_put(y, x, h->in.x + h->in.w - x, b, text);
}

static void entry(void *ctx, const char *keys, const char *note)
{
	struct help_ctx *h = ctx;
	out_line(h, sl_theme_role(h->v->th, SL_ROLE_KEY), keys,
	         sl_theme_role(h->v->th, SL_ROLE_NORMAL), note);
}

static void count_entry(void *ctx, const char *keys, const char *note)
{
	(void)keys;
	(void)note;
	(*(int *)ctx)++;
}

int sl_help_lines(void)
{
	int n = 4;
	for (int m = 0; m < SL_MODE_COUNT; m++) {
		n += 2;
		sl_keys_help((sl_keymode)m, count_entry, &n);
	}
	return n;
}

void sl_draw_help(const sl_view *v, sl_rect r)
{
	sl_rect in = sl_box(v, r, "Help: keys (generated from the key table; also in shardlab(1))");
	struct help_ctx h = {v, in, 0, 18};
	const sl_glyphs *g = v->th->g;
	attr_t norm = sl_theme_role(v->th, SL_ROLE_NORMAL),
	       head = sl_theme_role(v->th, SL_ROLE_HEAD);
	char legend[200];
	snprintf(legend, sizeof legend,
	         "States: %s compute  %s send  %s recv  %s reduce  %s wait; device digits and "
	         "colours name "
	         "owners.",
	         g->state[SL_DS_COMPUTE], g->state[SL_DS_SEND], g->state[SL_DS_RECV],
	         g->state[SL_DS_REDUCE], g->state[SL_DS_WAIT]);
	out_line(&h, norm, NULL, norm, legend);
	out_line(&h, norm, NULL, norm,
	         "Times are emulated (the modelled hardware's), not this machine's wall clock.");
	for (int m = 0; m < SL_MODE_COUNT; m++) {
		out_line(&h, norm, NULL, norm, "");
		out_line(&h, head, NULL, head, sl_keymode_title((sl_keymode)m));
		sl_keys_help((sl_keymode)m, entry, &h);
	}
	out_line(&h, norm, NULL, norm, "");
	out_line(&h, sl_theme_role(v->th, SL_ROLE_DIM), NULL, sl_theme_role(v->th, SL_ROLE_DIM),
	         "Esc or ? closes this help.");
}
