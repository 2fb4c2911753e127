/* SPDX-License-Identifier: MIT */
/* theme.h - colour roles and glyph tables, chosen once at start-up.
 *
 * Colours carry meaning but never alone: every state also has its own glyph
 * and word, every device its own digit, so the monochrome scheme (NO_COLOR,
 * --no-color, a terminal without colours) and the ASCII glyphs (--ascii, a
 * locale that is not UTF-8) lose nothing.  Device colours come from the
 * Okabe-Ito palette, which stays distinct for colour-blind viewers; the
 * high-contrast theme (key c, --high-contrast) is for washed-out projectors. */
#ifndef SL_TUI_THEME_H
#define SL_TUI_THEME_H

#include <curses.h>

#include "scene.h"

typedef enum sl_role {
	SL_ROLE_NORMAL,
	SL_ROLE_DIM,
	SL_ROLE_TITLE,
	SL_ROLE_BORDER,
	SL_ROLE_HEAD, /* panel titles */
	SL_ROLE_STATUS,
	SL_ROLE_KEY,    /* a key name on the status line and in the help */
	SL_ROLE_SELECT, /* the selected device or link */
	SL_ROLE_CURSOR, /* the timeline's current time */
	SL_ROLE_PASS,
	SL_ROLE_FAIL,
	SL_ROLE_WARN,
	SL_ROLE_INTRA,
	SL_ROLE_INTER,
	SL_ROLE_BWD,    /* the timeline: a backward pass's compute (input gradients) */
	SL_ROLE_WGRAD,  /* a backward pass's weight gradients */
	SL_ROLE_STATE0, /* + sl_dstate: compute, send, ... */
	SL_ROLE_DEV0 = SL_ROLE_STATE0 + SL_DS_COUNT, /* + device % SL_THEME_NDEV */
	SL_ROLE_DEVBG0 = SL_ROLE_DEV0 + 8,           /* a device's colour as background */
	SL_ROLE_COUNT = SL_ROLE_DEVBG0 + 8
} sl_role;

#define SL_THEME_NDEV 8

typedef struct sl_glyphs {
	int utf8;
	const char *h, *v, *tl, *tr, *bl, *br; /* box */
	const char *state[SL_DS_COUNT];        /* one cell per device state */
	const char *level[5];                  /* empty, 1/4 .. full: partial sums */
	const char *incoming;                  /* a block arriving */
	const char *line_done, *line_todo, *line_head, *line_inter; /* a link's transfer */
	const char *bar[9];                     /* eighths of a cell, for bars */
	const char *arrow;                      /* "->" */
	const char *larrow;                     /* "<-" */
	const char *tick;                       /* a time-scale tick */
	const char *caret;                      /* under the timeline's cursor */
	const char *point, *curve, *cross_mark; /* the plot */
	const char *pass, *fail;
	const char *bwd,
	    *wgrad; /* the timeline's compute of a backward pass: input, weight gradients */
	const char *fwd2, *bwd2, *wgrad2; /* the same, a device's second model chunk on */
	const char *more;          /* the timeline: more passes start here than columns name */
	const char *lane;          /* the timeline: a device's side-stream lane, under its own */
	const char *replica;       /* a matrix every device holds whole (X column-wise) */
	const char *unknown;       /* a block whose state is not known yet */
	const char *mem_l, *mem_r; /* the ends of a device's memory bar */
	const char *anatomy[5];    /* a memory anatomy: parameters, gradients, optimizer state,
	                              activations, workspace */
	const char *custom;        /* after a link's figures: turned away from its class's */
	const char *dot;           /* a separator */
	const char *times;         /* "x" in sizes */
} sl_glyphs;

extern const sl_glyphs sl_glyphs_utf8, sl_glyphs_ascii;

/* The legend: every glyph of sl_glyphs and every colour role, with what it
 * means where it is drawn.  The help draws it; tests/test_keys.c holds it
 * complete (every glyph slot, every role) and each group's glyphs apart
 * (in a group, one glyph means one thing, in UTF-8 and in ASCII). */
typedef enum sl_legend_group {
	SL_LG_STATES, /* the timeline, and each device's state in the devices panel */
	SL_LG_SCALE,  /* the timeline's time scale */
	SL_LG_BLOCKS, /* matrices, buffers, a device's copy of Y, checkpoint tensors */
	SL_LG_LINKS,
	SL_LG_MEMORY, /* a device's memory bar */
	SL_LG_PLOT,
	SL_LG_TEXT,    /* checks, separators and frames */
	SL_LG_COLOURS, /* colours that are not a glyph's */
	SL_LG_COUNT
} sl_legend_group;

#define SL_LEGEND_NO_GLYPH ((size_t)-1)

typedef struct sl_legend_item {
	sl_legend_group group;
	size_t off;   /* offsetof(sl_glyphs, slot), or SL_LEGEND_NO_GLYPH */
	int n;        /* slots from off it covers (a bar's eighths), else 1 */
	sl_role role; /* the colour it is drawn in */
	const char *meaning;
} sl_legend_item;

/* The legend's items, and how many (in drawing order, by group). */
const sl_legend_item *sl_legend(size_t *n);
const char *sl_legend_group_name(sl_legend_group g);
/* Slot k of a glyph table, by offset. */
const char *sl_glyph_at(const sl_glyphs *g, size_t off, int k);

typedef struct sl_theme {
	int color; /* colours in use (else monochrome attributes) */
	int high_contrast;
	const sl_glyphs *g;
	attr_t attr[SL_ROLE_COUNT];
} sl_theme;

/* Decide colours and glyphs: ascii forces ASCII glyphs (else UTF-8 only
 * with a UTF-8 locale); no_color forces monochrome (as do NO_COLOR set and
 * non-empty, and a terminal without colours).  Call after initscr. */
void sl_theme_init(sl_theme *th, int no_color, int ascii, int high_contrast);
/* Switch the high-contrast palette (colour terminals only). */
void sl_theme_contrast(sl_theme *th, int on);
/* The contrast key: high contrast switched, and what to say in msg.
 * Returns 1 when the palette changed (the screen is repainted), 0 in
 * monochrome, which has no contrast of its own to switch. */
int sl_theme_contrast_key(sl_theme *th, char *msg, size_t n);

attr_t sl_theme_role(const sl_theme *th, sl_role r);
attr_t sl_theme_dev(const sl_theme *th, int dev);
attr_t sl_theme_devbg(const sl_theme *th, int dev);
attr_t sl_theme_state(const sl_theme *th, sl_dstate s);
/* The character naming a device in one cell: 0-9, a-z, A-Z. */
char sl_dev_char(int dev);

/* Should colours be off?  Pure: NO_COLOR's value and the option. */
int sl_theme_want_mono(const char *no_color_env, int no_color_opt);
/* Should glyphs be ASCII?  Pure: the locale's codeset and the option. */
int sl_theme_want_ascii(const char *codeset, int ascii_opt);

#endif
