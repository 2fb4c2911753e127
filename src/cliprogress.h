/* SPDX-License-Identifier: MIT */
/* cliprogress.h - a one-line progress display on stderr for the long
 * headless commands (plan, train, a dry run): what is being done, how far,
 * and the time left, redrawn four times a second on a thread of its own.
 * Only when stderr is a terminal: a pipe or a file gets nothing, so reports
 * and logs stay as they were. */
#ifndef SL_CLIPROGRESS_H
#define SL_CLIPROGRESS_H

#include <stdatomic.h>
#include <stdio.h>

typedef struct sl_cliprog sl_cliprog;

/* "WHAT: DONE of TOTAL UNIT, P%, about T left".  NULL when stderr is not
 * a terminal (or SHARDLAB_PROGRESS=0), and then every call is a no-op. */
sl_cliprog *sl_cliprog_start(const char *what, const char *unit, long total);
/* How far: done of total; any thread. */
void sl_cliprog_set(sl_cliprog *p, long done);
void sl_cliprog_set_total(sl_cliprog *p, long total);
/* Or read them from counters another thread keeps (the planner's). */
void sl_cliprog_watch(sl_cliprog *p, const atomic_int *done, const atomic_int *total);
/* Print a line of the report on f without the progress line in its way:
 * the line is cleared first and redrawn after. */
void sl_cliprog_print(sl_cliprog *p, FILE *f, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* Clear the line and stop; p is freed. */
void sl_cliprog_stop(sl_cliprog *p);

#endif
