/* SPDX-License-Identifier: MIT */
/* loop.h - the one terminal event loop: the sandbox, the lesson menu and the
 * lesson screen all run in it (htop's ScreenManager_run, redis's aeMain).
 *
 * Each pass waits on the terminal, the background threads' wake-up pipe
 * and a frame timer (sl_term_wait), hands each key to the front end's
 * handler with its action in the key table of the screen shown, lets the
 * clock tick, and draws at most once.  Handlers only change state and
 * return flags of what changed; while nothing animates and nothing is
 * pending, the loop blocks with no timeout, so a paused screen costs no
 * CPU.  Resizing, F10 (quit), Ctrl-L (redraw) and the help (? or F1) are
 * the loop's own, on every screen. */
#ifndef SL_TUI_LOOP_H
#define SL_TUI_LOOP_H

#include "keys.h"

enum {
	SL_LOOP_DRAW = 1,   /* draw (at the next frame time) */
	SL_LOOP_LAYOUT = 2, /* lay the screen out again first */
	SL_LOOP_CLEAR = 4,  /* repaint every cell (a palette change, a resize) */
	SL_LOOP_QUIT = 8,   /* leave the loop */
	SL_LOOP_NOW = 16,   /* draw at once, not at the next frame time */
	SL_LOOP_SNAP = 32,  /* once drawn, write the screen to a file (the snapshot key) */
};

/* The help over a front end's screens.  The loop opens it (? or F1 on
 * every screen), scrolls and closes it; the front end draws it when open
 * (sl_draw_help, from the screen it was opened from) and records the box it
 * drew, for scrolling. */
typedef struct sl_loop_help {
	int open;
	sl_keymode of;  /* the screen it was opened from */
	int scroll;     /* lines scrolled off the top */
	int rows, cols; /* the box drawn last, borders included */
} sl_loop_help;

/* A front end, as a table of functions on its own state (ctx). */
typedef struct sl_loop_mode {
	/* The key table of the screen shown now, under the help (a view, the
	 * menu, the answer line...). */
	sl_keymode (*keys)(void *ctx);
	/* The front end's help state. */
	sl_loop_help *(*help)(void *ctx);
	/* With SL_MODE_INPUT, how many characters are typed (may be NULL). */
	size_t (*typed)(void *ctx);
	/* Key ch, whose action in that table is a (SL_A_NONE if unbound, and
	 * for a key the answer line types).  Returns SL_LOOP_* flags. */
	unsigned (*key)(void *ctx, int ch, sl_action a, double now);
	/* A background thread has news (may be NULL).  Returns flags. */
	unsigned (*wake)(void *ctx);
	/* Each pass: the clock moves (may be NULL).  Returns flags. */
	unsigned (*tick)(void *ctx, double now);
	/* Something moves on screen: the loop then wakes every frame. */
	int (*animating)(void *ctx);
	/* Lay the screen out for the terminal's size. */
	void (*layout)(void *ctx);
	/* Draw the whole screen once, from the state as it is. */
	void (*draw)(void *ctx);
	/* The front end is computing something its keys would need (a
	 * lesson's run on a worker thread; may be NULL): keys that leave or
	 * look (sl_loop_passes) still go through, the others wait their turn
	 * and are dispatched, in order, once it is done. */
	int (*busy)(void *ctx);
	/* The screen shows what it will show until a key comes: nothing it
	 * waits for is computing (may be NULL: always).  A snapshot taken
	 * once, without a terminal, waits for it. */
	int (*settled)(void *ctx);
} sl_loop_mode;

/* Does key ch go through while m is busy (a resize, the help, F10, Ctrl-L,
 * and whatever leaves the screen: q, Esc)?  Pure, tested. */
int sl_loop_passes(const sl_loop_mode *m, void *ctx, int ch);

/* One key: a resize; a key the answer line types goes to the handler; then
 * the bindings every screen shares (F10 quits, Ctrl-L repaints, ? and F1
 * open the help, whose own keys the loop handles), then the mode's handler
 * with the key's action.  No curses calls (tested without a terminal).
 * Returns flags. */
unsigned sl_loop_dispatch(const sl_loop_mode *m, void *ctx, int ch, double now);

/* How long the loop may wait before its next pass, in milliseconds: -1 (no
 * limit) when nothing is to be drawn and nothing animates, else until the
 * next frame time (0 if it has passed). */
int sl_loop_timeout(unsigned pending, int animating, double next_frame, double now);

/* What the loop has done, for a test's diagnosis (SHARDLAB_TUI_STATS, and
 * gdb: `print sl_loop_stat`). */
typedef struct sl_loop_counts {
	unsigned long draws; /* frames drawn by the loop */
	double last_draw;    /* when the last frame was drawn (sl_loop_now) */
} sl_loop_counts;
const sl_loop_counts *sl_loop_counters(void);

/* Run m until a handler returns SL_LOOP_QUIT, a quit signal arrives or the
 * terminal goes away, drawing at most fps frames a second.  The terminal
 * must be started (sl_term_start).  Returns the quit signal, or 0. */
int sl_loop_run(const sl_loop_mode *m, void *ctx, double fps);

/* --snapshot: the terminal to be started is an off-screen one
 * (sl_term_offscreen, of sl_term_offscreen_size), and the next sl_loop_run
 * draws until the screen is settled (and not busy), writes it to path
 * (snapshot.h) and returns 0.  Call before sl_term_start. */
void sl_loop_snapshot_once(const char *path);
/* Why the last snapshot could not be written, or "". */
const char *sl_loop_snapshot_error(void);

/* CLOCK_MONOTONIC in seconds: the loop's clock. */
double sl_loop_now(void);

#endif
