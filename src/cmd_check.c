/* SPDX-License-Identifier: MIT */
/* cmd_check.c - `shardlab check FILE...`: lints lessons without running
 * them (text or JSON). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <jansson.h>

#include "catalog.h"
#include "cli.h"
#include "headless.h"
#include "lesson.h"
#include "lesson_ui.h"
#include "report.h"

/* ---- check ---- */

static void check_help(void)
{
	printf("Usage: shardlab check [--run] [--format=text|json] FILE|NAME...\n\n"
	       "Checks lessons without running them: every label, jump, parameter and\n"
	       "expression resolved; every numeric question with two likely mistakes at\n"
	       "least; no question answered by the text shown before it.  Errors read\n"
	       "FILE:LINE: message, on stderr.  NAME is an installed lesson (01,\n"
	       "02-colwise, ...).  With --run, each lesson is also played through and every\n"
	       "check or claim its runs contradict is an error.  Exit status: 0 when every\n"
	       "lesson is good, 1 when one is not, 2 for a bad command line.  JSON: one\n"
	       "object with a row per lesson, its errors included.\n\n");
	sl_opts_help(stdout, SL_CMD_CHECK, SL_KG_LESSON, 0);
	sl_opts_help(stdout, SL_CMD_CHECK, SL_KG_OUTPUT, 0);
	printf("\nSee shardlab-lesson(5).\n");
}

static int own_option(void *ctx, int code, const char *arg, sl_err *err)
{
	(void)arg;
	if (code == SL_OPT_CHECK_RUN) {
		*(int *)ctx = 1;
		return SL_OK;
	}
	return sl_fail(err, SL_EINVAL, "option code %d has no handler", code);
}

/* --run: the lesson played through as `lesson --headless --demo` plays it
 * (emulated runs: the same on every machine); every check that fails,
 * a claim in prose among them, joins d as "file:line: message".  Returns
 * the number added. */
static int play_through(const char *path, sl_lesson_diags *d)
{
	char *obuf = NULL, *ebuf = NULL;
	size_t olen = 0, elen = 0;
	FILE *in = fopen("/dev/null", "r");
	FILE *out = open_memstream(&obuf, &olen), *err = open_memstream(&ebuf, &elen);
	int added = 0;
	if (!in || !out || !err) {
		snprintf(d->msg[d->n++], sizeof d->msg[0],
		         "%.200s: could not play it: out of memory", path);
		added = 1;
	} else {
		sl_headless_opts ho = {.autoplay = 1};
		int rc = sl_lesson_headless(path, &ho, in, out, err);
		fflush(out);
		fflush(err);
		static const char mark[] = "[check] FAILED at ";
		for (char *p = obuf; p && (p = strstr(p, mark)); p++) {
			char *e = strchr(p, '\n');
			int len = e ? (int)(e - p) : (int)strlen(p);
			len -= (int)sizeof mark - 1;
			if (d->n < SL_LESSON_MAX_DIAGS) {
				snprintf(d->msg[d->n++], sizeof d->msg[0], "%.*s", len,
				         p + sizeof mark - 1);
				added++;
			} else {
				d->more = 1;
			}
		}
		if (rc == 2 && d->n < SL_LESSON_MAX_DIAGS) {
			char *nl = ebuf ? strchr(ebuf, '\n') : NULL;
			if (nl)
				*nl = 0;
			snprintf(d->msg[d->n++], sizeof d->msg[0], "%s",
			         ebuf && *ebuf ? ebuf : "the lesson did not play to its end");
			added++;
		}
	}
	if (in)
		fclose(in);
	if (out)
		fclose(out);
	if (err)
		fclose(err);
	free(obuf);
	free(ebuf);
	return added;
}

/* One lesson's row of check --format=json. */
static json_t *check_row(const char *what, const char *path, const sl_lesson *l,
                         const sl_lesson_diags *d, const char *msg)
{
	json_t *r = json_object();
	json_object_set_new(r, "name", json_string(what));
	json_object_set_new(r, "file", path ? json_string(path) : json_null());
	int ok = l && (!d || d->n == 0);
	json_object_set_new(r, "ok", json_boolean(ok));
	json_object_set_new(r, "title", l ? json_string(sl_lesson_title(l)) : json_null());
	json_object_set_new(r, "estimated_s",
	                    l ? json_integer((json_int_t)sl_lesson_minutes(l) * 60) : json_null());
	json_object_set_new(r, "steps", l ? json_integer(sl_lesson_length(l)) : json_null());
	json_t *errs = json_array();
	if (!l && (!d || d->n == 0) && msg)
		json_array_append_new(errs, json_string(msg));
	for (int k = 0; d && k < d->n; k++)
		json_array_append_new(errs, json_string(d->msg[k]));
	json_object_set_new(r, "errors", errs);
	json_object_set_new(r, "more_errors", json_boolean(d && d->more));
	return r;
}

int sl_cmd_check(int argc, char **argv)
{
	sl_opts o;
	sl_opts_init(&o);
	int first, run = 0;
	int rc = sl_cli_parse_operands("check", SL_CMD_CHECK, argc, argv, &o, own_option, &run,
	                               check_help, &first);
	if (rc != SL_CLI_GO)
		return rc;
	if (first >= argc)
		return sl_cli_usage("check", "no lesson given");
	int json = o.format == SL_FORMAT_JSON, bad = 0;
	json_t *rows = json ? json_array() : NULL;
	for (int i = first; i < argc; i++) {
		char path[1024];
		sl_err err = {0};
		if (sl_lesson_find(argv[i], path, sizeof path, &err)) {
			sl_cli_error("check: %s", err.msg);
			if (rows)
				json_array_append_new(
				    rows, check_row(argv[i], NULL, NULL, NULL, err.msg));
			bad++;
			continue;
		}
		sl_lesson *l;
		sl_lesson_diags d;
		if (sl_lesson_load(path, &l, &d, &err)) {
			if (d.n == 0)
				fprintf(stderr, "%s\n", err.msg);
			for (int k = 0; k < d.n; k++)
				fprintf(stderr, "%s\n", d.msg[k]);
			if (d.more)
				fprintf(stderr, "%s: more errors follow; fix these first\n", path);
			if (rows)
				json_array_append_new(rows,
				                      check_row(argv[i], path, NULL, &d, err.msg));
			bad++;
			continue;
		}
		/* The rules for questions: a lesson that breaks them plays, but is
		 * not good. */
		if (sl_lesson_lint(l, &d)) {
			for (int k = 0; k < d.n; k++)
				fprintf(stderr, "%s\n", d.msg[k]);
			if (d.more)
				fprintf(stderr, "%s: more errors follow; fix these first\n", path);
			if (rows)
				json_array_append_new(rows, check_row(argv[i], path, l, &d, NULL));
			sl_lesson_free(l);
			bad++;
			continue;
		}
		d.n = d.more = 0;
		if (run && play_through(path, &d)) {
			for (int k = 0; k < d.n; k++)
				fprintf(stderr, "%s\n", d.msg[k]);
			if (rows)
				json_array_append_new(rows, check_row(argv[i], path, l, &d, NULL));
			sl_lesson_free(l);
			bad++;
			continue;
		}
		if (rows)
			json_array_append_new(rows, check_row(argv[i], path, l, NULL, NULL));
		else
			printf("%s: ok: \"%s\", %d minutes, %d steps\n", path, sl_lesson_title(l),
			       sl_lesson_minutes(l), sl_lesson_length(l));
		sl_lesson_free(l);
	}
	int status = bad ? SL_EXIT_FAIL : SL_EXIT_OK;
	if (json) {
		json_t *j = json_object();
		json_object_set_new(j, "ok", json_boolean(!bad));
		json_object_set_new(j, "lessons", rows);
		if (sl_report_json_print(stdout, j))
			status = SL_EXIT_FAIL;
	}
	return sl_cli_flush(status);
}
