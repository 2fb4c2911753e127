/* SPDX-License-Identifier: MIT */
/* tui.h - the terminal user interface: an animated, steppable view of a
 * scenario (the split, the exchange, the timing) with live link knobs. */
#ifndef SL_TUI_H
#define SL_TUI_H

#include "play.h"
#include "scenario.h"

struct sl_tui_options {
	int no_color;      /* monochrome (NO_COLOR set and non-empty does it too) */
	int ascii;         /* ASCII glyphs (a locale that is not UTF-8 does it too) */
	int high_contrast; /* the high-contrast palette (key c switches it) */
	int no_mouse;      /* leave the mouse to the terminal */
	int play;          /* start playing at once (else paused at time zero) */
	int presenter;     /* lessons: presenter mode (no log lines, no scores; key p) */
	double fps;        /* frames per second while animating; 0: the default */
	const char *trace; /* on quitting, write the shown run's Chrome trace here */
	/* Draw off screen (no terminal needed), write the first settled screen
	 * here as SVG and text (snapshot.h), and leave; NULL: the terminal. */
	const char *snapshot;
	/* What to show instead of the scenario's product (a training step,
	 * sandbox --tp/--pp/--dp; a reshard, --load), or NULL; the scenario's
	 * cluster then has the devices it needs. */
	const sl_workload *workload;
	int from_menu; /* opened from the lesson menu: q goes back to it */
	/* The lesson menu's: the scenario its sandbox opens on (the command
	 * line's defaults), or NULL for no sandbox key. */
	const sl_scenario *sandbox;
};

#define SL_TUI_DEFAULT_FPS 25.0

void sl_tui_options_default(struct sl_tui_options *o);

/* The start of a screen's main: *o is opt (or the defaults), the locale
 * the terminal's for characters and C for numbers, and a snapshot armed
 * when o asks for one.  Without one and without a terminal, prints
 * "shardlab: " and no_tty on stderr and returns 1; else 0. */
int sl_tui_begin(struct sl_tui_options *o, const struct sl_tui_options *opt, const char *no_tty);

/* Run the TUI on sc until the user quits; returns the process exit status:
 * 0; 1 after printing one line on stderr (no terminal, a terminal curses
 * cannot drive, a trace that cannot be written); 2 for a scenario that
 * cannot run (a shape that does not split, more than the host can hold).
 * A quit signal restores the terminal and then ends the process by that
 * signal. */
int sl_tui_main(const sl_scenario *sc, const struct sl_tui_options *opt);

/* The sandbox as a screen of a loop another front end runs (the lesson
 * menu's, loop.h): open it on sc in a started terminal, run its loop mode
 * (sl_sandbox_loop) on it, and close it; with opt->from_menu, q leaves its
 * loop with sl_sandbox_to_menu set.  close waits up to wait seconds for its
 * threads and returns whether they all went (else leave with _exit). */
typedef struct sl_sandbox sl_sandbox;
sl_sandbox *sl_sandbox_open(const sl_scenario *sc, const struct sl_tui_options *opt, sl_err *err);
const struct sl_loop_mode *sl_sandbox_loop(void);
int sl_sandbox_to_menu(const sl_sandbox *s);
int sl_sandbox_close(sl_sandbox *s, double wait);

/* Layouts side by side (sbs.h, view_sbs.c) until the user quits, or, with
 * opt->snapshot, written to that file.  Returns the exit status: 0, or 1
 * after one line on stderr. */
struct sl_sbs;
int sl_sbs_main(const struct sl_sbs *s, const struct sl_tui_options *opt);

#endif
