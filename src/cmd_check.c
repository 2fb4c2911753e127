/* SPDX-License-Identifier: MIT */
/* cmd_check.c - the command lines of `shardlab check FILE...` and
 * `shardlab lesson`, on the shared option code (cliutil.h): check lints
 * lessons (text or JSON); lesson opens one on the screen or hands it to the
 * headless runner (cmd_lesson.c). */
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include <jansson.h>

#include "catalog.h"
#include "cli.h"
#include "cmd_lesson.h"
#include "lesson.h"
#include "lesson_ui.h"
#include "report.h"

/* ---- check ---- */

static void check_help(void)
{
	printf("Usage: shardlab check [--format=text|json] FILE|NAME...\n\n"
	       "Checks lessons without running them: every label, jump, parameter and\n"
	       "expression resolved.  Errors read FILE:LINE: message, on stderr.  NAME is an\n"
	       "installed lesson (01, 02-colwise, ...).  Exit status: 0 when every lesson is\n"
	       "good, 1 when one is not, 2 for a bad command line.  JSON: one object with a\n"
	       "row per lesson, its errors included.\n\n");
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
	json_object_set_new(r, "ok", json_boolean(l != NULL));
	json_object_set_new(r, "title", l ? json_string(sl_lesson_title(l)) : json_null());
	json_object_set_new(r, "estimated_s",
			    l ? json_integer((json_int_t)sl_lesson_minutes(l) * 60) : json_null());
	json_object_set_new(r, "steps", l ? json_integer(sl_lesson_length(l)) : json_null());
	json_t *errs = json_array();
	if (!l && (!d || d->n == 0) && msg)
		json_array_append_new(errs, json_string(msg));
	for (int k = 0; !l && d && k < d->n; k++)
		json_array_append_new(errs, json_string(d->msg[k]));
	json_object_set_new(r, "errors", errs);
	json_object_set_new(r, "more_errors", json_boolean(!l && d && d->more));
	return r;
}

int sl_cmd_check(int argc, char **argv)
{
	sl_opts o;
	sl_opts_init(&o);
	int first;
	int rc = sl_cli_parse_operands("check", SL_CMD_CHECK, argc, argv, &o, no_own, NULL, check_help, &first);
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
				json_array_append_new(rows, check_row(argv[i], NULL, NULL, NULL, err.msg));
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
				json_array_append_new(rows, check_row(argv[i], path, NULL, &d, err.msg));
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

/* ---- lesson: options ---- */

static void lesson_help(void)
{
	printf("Usage: shardlab lesson [--start=LABEL|LINE] [--fresh] [display options] FILE|NAME\n"
	       "       shardlab lesson --headless [--start=LABEL|LINE | --resume] [--fresh]\n"
	       "                       [--no-save] [--demo] FILE|NAME\n\n"
	       "Follows a lesson: on the terminal, its narration with each run animated (the\n"
	       "sandbox's views), or with --headless as text, reading answers from standard\n"
	       "input.  NAME is an installed lesson (01, 02-colwise, ...); `shardlab` alone\n"
	       "opens the menu of them.  Progress is kept in $XDG_STATE_HOME/shardlab.\n\n");
	sl_opts_help(stdout, SL_CMD_LESSON, SL_KG_LESSON, 0);
	sl_opts_help(stdout, SL_CMD_LESSON, SL_KG_OUTPUT, 0);
	printf("                          (headless only; the answers still come from stdin)\n");
	sl_opts_help(stdout, SL_CMD_LESSON, SL_KG_DISPLAY, 0);
	printf("\n"
	       "Exit status: 0; 1 when a check of the lesson failed; 2 for a bad command\n"
	       "line or a lesson that does not load.  See shardlab(1), shardlab-lesson(5).\n");
}

struct lesson_args {
	sl_headless_opts o;
	struct sl_tui_options t;
	int headless;
};

static int lesson_option(void *ctx, int code, const char *arg, sl_err *err)
{
	struct lesson_args *a = ctx;
	switch (code) {
	case SL_OPT_HEADLESS:
		a->headless = 1;
		break;
	case SL_OPT_START:
		if (!*arg)
			return sl_fail(err, SL_EINVAL, "--start: empty label");
		a->o.start = arg;
		break;
	case SL_OPT_RESUME:
		a->o.resume = 1;
		break;
	case SL_OPT_FRESH:
		a->o.fresh = 1;
		break;
	case SL_OPT_NO_SAVE:
		a->o.save = 0;
		break;
	case SL_OPT_DEMO:
		a->o.autoplay = 1;
		break;
	case SL_OPT_NO_COLOR:
		a->t.no_color = 1;
		break;
	case SL_OPT_ASCII:
		a->t.ascii = 1;
		break;
	case SL_OPT_HIGH_CONTRAST:
		a->t.high_contrast = 1;
		break;
	default:
		return sl_fail(err, SL_EINVAL, "option code %d has no handler", code);
	}
	return SL_OK;
}

int sl_cmd_lesson(int argc, char **argv)
{
	struct lesson_args a = {.o = {.save = 1}};
	sl_tui_options_default(&a.t);
	sl_opts so;
	sl_opts_init(&so);
	int first;
	int rc = sl_cli_parse_operands("lesson", SL_CMD_LESSON, argc, argv, &so, lesson_option, &a, lesson_help,
				       &first);
	if (rc != SL_CLI_GO)
		return rc;
	sl_headless_opts o = a.o;
	o.json = so.format == SL_FORMAT_JSON;
	if (so.format == SL_FORMAT_CSV)
		return sl_cli_usage("lesson", "--format=csv is for the tables of coll, compare and plan");
	if (sl_opts_given(&so, SL_OPT_FORMAT) && !a.headless)
		return sl_cli_usage("lesson", "--format is for --headless (the screen draws the lesson)");
	if (first >= argc)
		return sl_cli_usage("lesson", "no lesson given");
	if (first + 1 < argc)
		return sl_cli_usage("lesson", "one lesson at a time ('%s' and '%s')", argv[first],
				    argv[first + 1]);
	const char *what = argv[first];
	if (o.resume && o.start)
		return sl_cli_usage("lesson", "--resume and --start say different places to begin");
	char path[1024];
	sl_err err = {0};
	if (sl_lesson_find(what, path, sizeof path, &err)) {
		sl_cli_error("lesson: %s", err.msg);
		return SL_EXIT_USAGE;
	}
	if (!a.headless) {
		if (o.autoplay || o.resume || !o.save)
			return sl_cli_usage("lesson", "--demo, --resume and --no-save are for --headless "
						      "(the screen goes on where the learner left off)");
		int st = sl_tui_lessons(path, o.start, o.fresh, &a.t);
		fflush(stdout);
		return st;
	}
	o.interactive = isatty(STDIN_FILENO);
	/* The JSON comes at the end: a learner at a terminal would answer
	 * questions nobody shows. */
	if (o.json && o.interactive && !o.autoplay)
		return sl_cli_usage("lesson", "--format=json prints the lesson when it ends: give the "
				    "answers on standard input from a file or a pipe, or add --demo");
	o.echo = !o.interactive;
	if (o.autoplay) /* a demonstration is not the learner's progress */
		o.save = 0;
	return sl_lesson_headless(path, &o, stdin, stdout, stderr);
}
