/* SPDX-License-Identifier: MIT */
/* headless.h - a lesson without the screen (headless.c): `shardlab lesson
 * --headless` and the tests that play the course. */
#ifndef SL_HEADLESS_H
#define SL_HEADLESS_H

#include <stdio.h>

typedef struct sl_headless_opts {
	const char *start; /* a label or a line number; NULL: the top (or the saved position) */
	int resume;        /* continue at the saved position */
	int fresh;         /* forget saved progress first */
	int save;          /* keep progress in the state directory */
	int interactive;   /* wait for Enter at pauses (stdin is a terminal) */
	int echo;          /* echo what was read (stdin is not a terminal) */
	int autoplay;      /* play it through: the lesson's own answers and demos */
	int json;          /* no text: one JSON report of every step at the end */
} sl_headless_opts;

/* Run a lesson file without curses: steps to out (as text, or with json as
 * one report at the end), the learner's answers from in, errors to err.
 * Returns 0 when every check held, 1 when one failed, 2 when the lesson
 * could not be run to its end. */
int sl_lesson_headless(const char *path, const sl_headless_opts *o, FILE *in, FILE *out, FILE *err);

#endif
