/* SPDX-License-Identifier: MIT */
/* draw.h - what the views share: the read-only state they draw from, and
 * small curses helpers that clip to a width.
 *
 * Views only draw.  They get a const sl_view (the scene built for this
 * tick, the theme, the selection) and never change anything; the loops in
 * sandbox.c and lesson_ui.c call them once per tick. */
#ifndef SL_TUI_DRAW_H
#define SL_TUI_DRAW_H

#include <curses.h>

#include "keys.h"
#include "layout.h"
#include "scene.h"
#include "theme.h"

typedef enum sl_sel_kind { SL_SEL_NONE, SL_SEL_DEVICE, SL_SEL_LINK } sl_sel_kind;

typedef struct sl_selection {
	sl_sel_kind kind;
	int dev;      /* SL_SEL_DEVICE */
	int src, dst; /* SL_SEL_LINK */
} sl_selection;

typedef struct sl_view {
	const sl_theme *th;
	const sl_scene *m;
	const sl_scenario *sc;
	const sl_screen_layout *lay;
	sl_selection sel;
	int knob_inter; /* the class knobs turn when no link is selected */
	int multi_node;
	double slowdown;
	int auto_speed, playing, planning, stale, live;
	int help_scroll;
	void *own;       /* the view's own state (sandbox.h: its row's make), or NULL;
	                    a table's scroll moves as it draws */
	const char *msg; /* feedback for the last key, or "" */
	int mode;        /* sl_keymode */
	int help_of;     /* the sl_keymode the help shown was opened from */
	int from_menu;   /* the sandbox was opened from the lesson menu: q goes back */
} sl_view;

/* Text clipped to w columns (every glyph used is one column wide);
 * returns the columns written. */
int sl_put(int y, int x, int w, attr_t a, const char *s);
/* printf into a line clipped to w columns. */
int sl_putf(int y, int x, int w, attr_t a, const char *fmt, ...)
    __attribute__((format(printf, 5, 6)));
/* A glyph repeated n times. */
void sl_rep(int y, int x, int n, attr_t a, const char *glyph);
/* Blank a rectangle. */
void sl_clear_rect(sl_rect r, attr_t a);
/* s word-wrapped over h rows of w columns; returns the rows used. */
int sl_put_wrapped(int y, int x, int w, int h, attr_t a, const char *s);
/* A box with a title in its top border; returns the inner rectangle. */
sl_rect sl_box(const sl_view *v, sl_rect r, const char *title);
/* Columns a UTF-8 string takes. */
int sl_cols(const char *s);

/* The views (view_*.c). */
void sl_draw_title(const sl_view *v, sl_rect r);
void sl_draw_devices(const sl_view *v, sl_rect r);
void sl_draw_links(const sl_view *v, sl_rect r);
void sl_draw_matrices(const sl_view *v, sl_rect r);
void sl_draw_numbers(const sl_view *v, sl_rect r);
void sl_draw_timeline(const sl_view *v, sl_rect r);
/* Layouts side by side (sbs.h) in r: the time scale, a band per layout,
 * the legend; a short r loses the axis's ticks, then the memory legend
 * (view_sbs.c). */
struct sl_sbs;
void sl_draw_sbs(const sl_theme *th, const struct sl_sbs *s, sl_rect r);
/* The scene's sentence, word-wrapped over r. */
void sl_draw_sentence(const sl_view *v, sl_rect r);
/* The sandbox's status line: v's message, then the keys of acts (play
 * says pause while playing, q says menu when opened from it). */
void sl_draw_status(const sl_view *v, sl_rect r, const sl_action *acts, size_t n);
/* A status line of keys: v's message, then for each action its key (keys[i]
 * if given and not 0, else its first in mode) and its word (words[i] if
 * given and not NULL, else the table's). */
void sl_draw_keys(const sl_view *v, sl_rect r, sl_keymode mode, const sl_action *acts,
                  const int *keys, const char *const *words, size_t n);
void sl_draw_help(const sl_view *v, sl_rect r);
void sl_draw_too_small(const sl_view *v, int rows, int cols);

/* Which device or link is drawn at screen row y of its panel (for mouse
 * selection); -1 if none. */
int sl_devices_row_item(const sl_view *v, sl_rect r, int y);
int sl_links_row_item(const sl_view *v, sl_rect r, int y);
/* Lines the help opened from mode from has in a box width columns wide
 * (for scrolling). */
int sl_help_lines(int from, int width);

#endif
