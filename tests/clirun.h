/* SPDX-License-Identifier: MIT */
/* clirun.h - running the shardlab program from a test, as a user would:
 * its words, its exit status, and both streams captured.  The suites that
 * link tests/clirun.c are compiled with -DSHARDLAB_BIN. */
#ifndef SL_CLIRUN_H
#define SL_CLIRUN_H

#include <stddef.h>

#include <jansson.h>

typedef struct tu_result {
	int exited, status, signal, core; /* status: the exit status, or -1 if killed */
	char *out, *err;
} tu_result;

/* Run shardlab with the words of args (split on spaces); stdout goes to
 * out_path if not NULL (e.g. /dev/full), else it is captured.  A run that
 * takes five minutes is killed: never a hang. */
void tu_run_to(const char *args, const char *out_path, tu_result *r);
void tu_run(const char *args, tu_result *r);
void tu_result_free(tu_result *r);

int tu_count_lines(const char *s);

/* The whole file at path, NUL-terminated, its length in *len; NULL if it
 * cannot be opened. */
char *tu_read_file(const char *path, size_t *len);

/* Exit status want, no signal, and exactly one line "shardlab: ..." on
 * stderr. */
void tu_expect_one_error(const char *args, int want, const tu_result *r);

/* Run, require exit status 0, and parse stdout as JSON. */
json_t *tu_run_json(const char *args);

/* The number key of o; a test failure if there is none. */
double tu_num(const json_t *o, const char *key);

#endif
