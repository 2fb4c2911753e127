/* SPDX-License-Identifier: MIT */
/* lesson_show.h - what a lesson's runs become on its screen.
 *
 * The lesson screen animates each product, training step, reshard and lone
 * collective the lesson runs, through the sandbox's own playback (play.c),
 * while the vm's headless run gives the figures.  A reshard's view reads a
 * checkpoint made here, in a scratch directory, exactly as the lesson's run
 * makes its own.  No drawing here. */
#ifndef SL_TUI_LESSON_SHOW_H
#define SL_TUI_LESSON_SHOW_H

#include "ckpt.h"
#include "lesson.h"
#include "play.h"

typedef struct sl_lshow {
	sl_play *play; /* what the scenario view shows */
	int on;        /* the lesson's last run is animated: the view shows it */
	int stepped;   /* the lesson has stepped the run shown (from its start) */
	int orphans;   /* a replaced playback's thread was still computing: leave with _exit */
	int replaced;  /* the playback was replaced: lay the screen out again, then clear */
	struct sl_lshow_ckpt {
		char dir[4096]; /* a scratch directory holding it, removed after */
		sl_ckpt *ck;
		sl_ckpt_move *reads, *writes;
	} ck;          /* the checkpoint a reshard's playback reads */
	char msg[240]; /* why a run is not shown, or "" */
} sl_lshow;

/* Show the run of step st (a SL_STEP_RUN, or the last run before a lesson's
 * start) in the view, playing once planned; a run the view cannot take (a
 * plan, too large) turns the view off. */
void sl_lshow_run(sl_lshow *v, const sl_step *st, double now);
/* Remove the checkpoint the view read (once its playback is gone). */
void sl_lshow_free_ckpt(sl_lshow *v);

#endif
