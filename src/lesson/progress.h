/* SPDX-License-Identifier: MIT */
/* progress.h - the learner's progress, kept in the XDG state directory.
 *
 * $XDG_STATE_HOME/shardlab/progress/ID (or ~/.local/state/shardlab/...), one
 * small text file per lesson, replaced atomically (a temporary file renamed
 * over it), so a crash leaves the old state or the new one, never half.
 * Nothing else is ever written: a lesson cannot name a file. */
#ifndef SL_LESSON_PROGRESS_H
#define SL_LESSON_PROGRESS_H

#include <stddef.h>
#include <stdint.h>

#include "status.h"

typedef struct sl_progress {
	int done;                 /* finished at least once */
	int asked, right;         /* the score of the last finished session */
	int position;             /* where to resume; -1: nothing to resume */
	int now_asked, now_right; /* the score so far of the unfinished session */
	uint64_t hash;            /* of the lesson text the position belongs to */
} sl_progress;

/* The state directory (not created). */
int sl_state_dir(char *buf, size_t n, sl_err *err);
/* A lesson's id: its file name without directory and ".lesson", reduced to
 * letters, digits, '-', '_' and '.'. */
void sl_progress_id(const char *lesson_path, char *id, size_t n);
/* Missing or unreadable progress is a fresh start (p zeroed, position -1). */
int sl_progress_load(const char *id, sl_progress *p, sl_err *err);
int sl_progress_save(const char *id, const sl_progress *p, sl_err *err);
/* A fresh start: forget everything about the lesson. */
int sl_progress_forget(const char *id, sl_err *err);
/* Every lesson's fresh start: remove each progress file of the progress
 * directory (a regular file named as an id whose first line is ours).
 * Nothing else there or elsewhere is touched.  *removed (may be NULL)
 * gets how many went; no directory yet is nothing to forget. */
int sl_progress_forget_all(int *removed, sl_err *err);

#endif
