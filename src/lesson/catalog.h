/* SPDX-License-Identifier: MIT */
/* catalog.h - finding lessons by name, and listing them for the menu.
 *
 * Lessons live in the directories of $SHARDLAB_LESSON_PATH when it is set
 * (colon-separated, and then the only place looked in: the test suite points
 * it at exactly the lessons it means).  Otherwise a program run from its
 * build tree looks in the source tree's lessons/ first, then in the installed
 * package data directory (pkgdatadir/lessons). */
#ifndef SL_LESSON_CATALOG_H
#define SL_LESSON_CATALOG_H

#include <stddef.h>

#include "status.h"

/* A path as given (it names an existing file), or a NAME: "02",
 * "02-colwise", "colwise".  Fills path; an unknown or ambiguous name fails
 * with the candidates in the message. */
int sl_lesson_find(const char *name, char *path, size_t n, sl_err *err);

typedef struct sl_catalog_entry {
	char path[512];
	char id[64];
	char title[128];
	char about[256];
	int minutes;
	int track; /* sl_track: in the 90-minute class, optional, or neither */
	int ok;    /* it passed the check; else error holds why */
	char error[256];
} sl_catalog_entry;

/* All lessons of the first directory that has any, sorted by file name.
 * Free *out with free(). */
int sl_catalog_list(sl_catalog_entry **out, int *n, sl_err *err);

/* The course's minutes in all, and the 90-minute class's (its `track
 * class` lessons) and its optional additions'. */
typedef struct sl_course_time {
	int all, class_minutes, optional;
	int nclass, noptional;
} sl_course_time;
sl_course_time sl_catalog_time(const sl_catalog_entry *cat, int n);

/* The lesson to go on with, by the saved progress: the first one started
 * and not finished; else the first not done after the last one done; else
 * the first. */
int sl_catalog_next(const sl_catalog_entry *cat, int n);

#endif
