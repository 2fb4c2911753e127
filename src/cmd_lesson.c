/* SPDX-License-Identifier: MIT */
/* cmd_lesson.c - `shardlab lesson`: opens a lesson on the screen, or hands
 * it to the headless runner (headless.c). */
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include <jansson.h>

#include "catalog.h"
#include "cli.h"
#include "headless.h"
#include "lesson.h"
#include "lesson_ui.h"
#include "report.h"

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
	case SL_OPT_PRESENTER:
		a->t.presenter = 1;
		break;
	case SL_OPT_SNAPSHOT:
		if (!*arg)
			return sl_fail(err, SL_EINVAL, "--snapshot: empty file name");
		a->t.snapshot = arg;
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
	int rc = sl_cli_parse_operands("lesson", SL_CMD_LESSON, argc, argv, &so, lesson_option, &a,
	                               lesson_help, &first);
	if (rc != SL_CLI_GO)
		return rc;
	sl_headless_opts o = a.o;
	o.json = so.format == SL_FORMAT_JSON;
	if (so.format == SL_FORMAT_CSV)
		return sl_cli_usage("lesson",
		                    "--format=csv is for the tables of coll, compare and plan");
	if (sl_opts_given(&so, SL_OPT_FORMAT) && !a.headless)
		return sl_cli_usage("lesson",
		                    "--format is for --headless (the screen draws the lesson)");
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
			return sl_cli_usage("lesson",
			                    "--demo, --resume and --no-save are for --headless "
			                    "(the screen goes on where the learner left off)");
		int st = sl_tui_lessons(path, o.start, o.fresh, &a.t);
		fflush(stdout);
		return st;
	}
	o.interactive = isatty(STDIN_FILENO);
	/* The JSON comes at the end: a learner at a terminal would answer
	 * questions nobody shows. */
	if (o.json && o.interactive && !o.autoplay)
		return sl_cli_usage(
		    "lesson", "--format=json prints the lesson when it ends: give the "
		              "answers on standard input from a file or a pipe, or add --demo");
	o.echo = !o.interactive;
	if (o.autoplay) /* a demonstration is not the learner's progress */
		o.save = 0;
	return sl_lesson_headless(path, &o, stdin, stdout, stderr);
}
