/* SPDX-License-Identifier: MIT */
/* cmd_check.c - `shardlab check FILE...`: lints lessons without running
 * them (text or JSON). */
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include <jansson.h>

#include "catalog.h"
#include "cli.h"
#include "lesson.h"
#include "lesson_ui.h"
#include "report.h"

/* ---- check ---- */

static void check_help(void)
{
	printf("Usage: shardlab check [--format=text|json] FILE|NAME...\n\n"
	       "Checks lessons without running them: every label, jump, parameter and\n"
	       "expression resolved; every numeric question with two likely mistakes at\n"
	       "least; no question answered by the text shown before it.  Errors read\n"
	       "FILE:LINE: message, on stderr.  NAME is an installed lesson (01,\n"
	       "02-colwise, ...).  Exit status: 0 when every lesson is good, 1 when one is\n"
	       "not, 2 for a bad command line.  JSON: one object with a row per lesson, its\n"
	       "errors included.\n\n");
	sl_opts_help(stdout, SL_CMD_CHECK, SL_KG_OUTPUT, 0);
	printf("\nSee shardlab-lesson(5).\n");
}

static int no_own(void *ctx, int code, const char *arg, sl_err *err)
{
	(void)ctx;
	(void)arg;
	return sl_fail(err, SL_EINVAL, "option code %d has no handler", code);
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
	int first;
	int rc = sl_cli_parse_operands("check", SL_CMD_CHECK, argc, argv, &o, no_own, NULL,
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
