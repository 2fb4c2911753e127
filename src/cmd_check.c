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

enum { OPT_HEADLESS = SL_OPT_USER, OPT_START, OPT_RESUME, OPT_FRESH, OPT_NO_SAVE, OPT_DEMO,
       OPT_NO_COLOR, OPT_ASCII, OPT_HIGH_CONTRAST };

static void check_help(void)
{
	printf("Usage: shardlab check [--format=text|json] FILE|NAME...\n\n"
	       "Checks lessons without running them: every label, jump, parameter and\n"
	       "expression resolved.  Errors read FILE:LINE: message, on stderr.  NAME is an\n"
	       "installed lesson (01, 02-colwise, ...).  Exit status: 0 when every lesson is\n"
	       "good, 1 when one is not, 2 for a bad command line.\n\n"
	       "  --format=text|json      report format (default text; json: one object with\n"
	       "                          a row per lesson, its errors included)\n\n"
	       "See shardlab-lesson(5).\n");
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
	static const struct option lo[] = {
		{"format", required_argument, NULL, SL_OPT_FORMAT},
		{NULL, 0, NULL, 0},
	};
	sl_opts o;
	sl_opts_init(&o);
	int first;
	int rc = sl_cli_parse_operands("check", argc, argv, lo, &o, no_own, NULL, check_help, &first);
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
	       "opens the menu of them.  Progress is kept in $XDG_STATE_HOME/shardlab.\n\n"
	       "  --start=LABEL|LINE      begin at a label or a line (for authors)\n"
	       "  --fresh                 forget the progress kept and start at the top\n"
	       "  --headless              print the lesson, read answers from stdin\n"
	       "  --resume                (headless) go on where the learner left off\n"
	       "  --no-save               (headless) keep no progress\n"
	       "  --demo                  (headless) play it through, answering by itself\n"
	       "  --format=text|json      (headless) the text, or one JSON report of every step\n"
	       "                          at the end (answers still come from stdin)\n"
	       "  --no-color              monochrome (so is a non-empty NO_COLOR)\n"
	       "  --ascii                 ASCII glyphs (so is a locale that is not UTF-8)\n"
	       "  --high-contrast         the high-contrast palette, for projectors (key c)\n\n"
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
	case OPT_HEADLESS:
		a->headless = 1;
		break;
	case OPT_START:
		if (!*arg)
			return sl_fail(err, SL_EINVAL, "--start: empty label");
		a->o.start = arg;
		break;
	case OPT_RESUME:
		a->o.resume = 1;
		break;
	case OPT_FRESH:
		a->o.fresh = 1;
		break;
	case OPT_NO_SAVE:
		a->o.save = 0;
		break;
	case OPT_DEMO:
		a->o.autoplay = 1;
		break;
	case OPT_NO_COLOR:
		a->t.no_color = 1;
		break;
	case OPT_ASCII:
		a->t.ascii = 1;
		break;
	case OPT_HIGH_CONTRAST:
		a->t.high_contrast = 1;
		break;
	default:
		return sl_fail(err, SL_EINVAL, "option code %d has no handler", code);
	}
	return SL_OK;
}

int sl_cmd_lesson(int argc, char **argv)
{
	static const struct option lo[] = {
		{"headless", no_argument, NULL, OPT_HEADLESS},
		{"start", required_argument, NULL, OPT_START},
		{"resume", no_argument, NULL, OPT_RESUME},
		{"fresh", no_argument, NULL, OPT_FRESH},
		{"no-save", no_argument, NULL, OPT_NO_SAVE},
		{"demo", no_argument, NULL, OPT_DEMO},
		{"no-color", no_argument, NULL, OPT_NO_COLOR},
		{"ascii", no_argument, NULL, OPT_ASCII},
		{"high-contrast", no_argument, NULL, OPT_HIGH_CONTRAST},
		{"format", required_argument, NULL, SL_OPT_FORMAT},
		{NULL, 0, NULL, 0},
	};
	struct lesson_args a = {.o = {.save = 1}};
	sl_tui_options_default(&a.t);
	sl_opts so;
	sl_opts_init(&so);
	int first;
	int rc = sl_cli_parse_operands("lesson", argc, argv, lo, &so, lesson_option, &a, lesson_help,
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
