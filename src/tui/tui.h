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
	double fps;        /* frames per second while animating; 0: the default */
	const char *trace; /* on quitting, write the shown run's Chrome trace here */
	/* A training step to show instead of the product (sandbox --tp/--pp/
	 * --dp), or NULL; the scenario's cluster then has tp*pp*dp devices. */
	const sl_play_train *train;
	int from_menu; /* opened from the lesson menu: q goes back to it */
};

#define SL_TUI_DEFAULT_FPS 25.0

void sl_tui_options_default(struct sl_tui_options *o);

/* Run the TUI on sc until the user quits; returns the process exit status:
 * 0; 1 after printing one line on stderr (no terminal, a terminal curses
 * cannot drive, a trace that cannot be written); 2 for a scenario that
 * cannot run (a shape that does not split, more than the host can hold).
 * A quit signal restores the terminal and then ends the process by that
 * signal. */
int sl_tui_main(const sl_scenario *sc, const struct sl_tui_options *opt);

/* Returned by sl_tui_main instead of 0 when q left a sandbox opened from
 * the lesson menu (the terminal is back to normal by then): the caller
 * opens the menu again. */
#define SL_TUI_MENU 101

#endif
