/* SPDX-License-Identifier: MIT */
/* lesson_show.h - what a lesson's runs become on its screen.
 *
 * The lesson screen animates each product, training step, reshard and lone
 * collective the lesson runs, through the sandbox's own playback (play.c),
 * from the trace of the lesson's own run: the vm executes a run once (on a
 * worker thread, lesson_ui.c), and the playback replays what it recorded.
 * A reshard's view reads the checkpoint that run saved, whose manifest the
 * run hands over with its plans (sl_vm_execute_into).  No drawing here. */
#ifndef SL_TUI_LESSON_SHOW_H
#define SL_TUI_LESSON_SHOW_H

#include "lesson.h"
#include "play.h"
#include "sbs.h"
#include "setup.h"
#include "workload.h"

typedef struct sl_lshow {
	sl_play *play;    /* what the scenario view shows */
	int on;           /* the lesson's last run is animated: the view shows it */
	int stepped;      /* the lesson has stepped the run shown (from its start) */
	int orphans;      /* a replaced playback's thread was still computing: leave with _exit */
	int replaced;     /* the playback was replaced: lay the screen out again, then clear */
	sl_wl_result eng; /* what the run shown returned (a reshard's checkpoint and plans) */
	char msg[240];    /* why a run is not shown, or "" */
} sl_lshow;

/* Show the run of kind k on set-up s that has just happened on c (the vm's
 * cluster, which stays the vm's) in the view, playing at once; eng is what
 * it returned, taken over (NULL: nothing beyond the trace).  A run the view
 * cannot take (a plan, too many devices) turns the view off. */
void sl_lshow_done(sl_lshow *v, sl_run_kind k, const sl_lsetup *s, sl_cluster *c, sl_wl_result *eng,
                   double now);
/* The bands of a `show side-by-side` step (lesson.h): each run's name and
 * layout ("tpl: tp=4"), its figures and its last step's events, copied into
 * s; no model or machine line.  Returns SL_OK or SL_ENOMEM (s empty). */
int sl_sbs_from_lesson(sl_sbs *s, const sl_shown_run *r, int n);

/* Free what the view kept of its run (once its playback is gone). */
void sl_lshow_free(sl_lshow *v);

#endif
