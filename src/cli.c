/* SPDX-License-Identifier: MIT */
/* cli.c - the command line: the table of subcommands, the global options,
 * help and version.  What the subcommands share is cliutil.c's. */
#include "cli.h"

#include "config.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cblas.h>

#include "cliutil.h"
#include "lesson_ui.h"
#include "report.h"
#include "units.h"

/* The subcommands.  Adding one is one line here and its declaration in
 * cli.h. */
static const struct sl_cmd {
	const char *name;
	sl_cmd_fn fn;
	const char *summary;
} cmds[] = {
    {"run", sl_cmd_run, "run one sharded matrix multiply headless and report it"},
    {"coll", sl_cmd_coll, "time a collective over one size or a range, nccl-tests style"},
    {"train", sl_cmd_train, "train a small model under TP, PP and DP; loss, time, memory, traffic"},
    {"compare", sl_cmd_compare, "train the same model under several layouts; one table"},
    {"sandbox", sl_cmd_sandbox, "the interactive view of a scenario, with live link knobs"},
    {"check", sl_cmd_check, "check lesson files without running them"},
    {"lesson", sl_cmd_lesson, "follow a guided lesson (--headless: without the screen)"},
    {"plan", sl_cmd_plan, "rank every layout (tp, pp, dp, schedule, ...) of a model on a cluster"},
    {"ckpt", sl_cmd_ckpt, "inspect, verify or reshard a sharded checkpoint"},
    {NULL, NULL, NULL},
};

static void print_help(void)
{
	printf("Usage: shardlab [--no-color] [--ascii] [--high-contrast] [--presenter]\n"
	       "       shardlab COMMAND [OPTION...]\n"
	       "       shardlab --help | --version | --list-presets [--format=text|json]\n"
	       "       shardlab --list-options\n\n"
	       "Threads play GPUs: each emulated device multiplies its shard with OpenBLAS and\n"
	       "exchanges results over links throttled to a bandwidth and a latency; every\n"
	       "device keeps an emulated clock, so times are those of the hardware emulated.\n\n"
	       "Without a command, opens the menu of guided lessons; without a terminal\n"
	       "(a pipe, TERM unset or dumb), prints the default scenario's report (4\n"
	       "devices of the h100 preset, a column-wise 1024 x 4096 x 4096 product).\n\n"
	       "Commands:\n");
	for (const struct sl_cmd *c = cmds; c->name; c++)
		printf("  %-8s %s\n", c->name, c->summary);
	printf("\nOptions:\n"
	       "  -h, --help          this help\n"
	       "  -V, --version       the version and the OpenBLAS kernel in use\n"
	       "  --list-presets      the hardware presets, their figures and sources; with\n"
	       "                      --format=json, as hardware files (shardlab-hardware(5))\n"
	       "  --list-options      every command option, its kind and its values, one a line\n"
	       "                      (for completion scripts)\n"
	       "  --no-color          the menu (and the sandbox it opens) in monochrome\n"
	       "  --ascii             ... in ASCII glyphs\n"
	       "  --high-contrast     ... in the high-contrast palette\n"
	       "  --presenter         ... in presenter mode: no scores, no log lines (key p)\n\n"
	       "Run 'shardlab COMMAND --help' for a command's options; see shardlab(1).\n");
}

/* --list-options: "--name KIND [WORD...]" a line, from the knob table. */
static int list_options(void)
{
	static const char *const kinds[] = {"flag", "int",   "real", "rate", "time",
	                                    "size", "flops", "word", "text"};
	for (int i = 0; i < sl_knob_count(); i++) {
		const sl_knob *k = &sl_knobs()[i];
		if (!k->cmds || (i > 0 && sl_knob_named(k->name, 0) != k))
			continue; /* a lesson's own, or a second row of a name */
		printf("--%s %s", k->name, kinds[k->type]);
		for (const char *w = sl_knob_choices(k); k->type == SL_KT_WORD && *w;) {
			size_t l = strcspn(w, ",");
			printf(" %.*s", (int)l, w);
			w += l;
			w += strspn(w, ", ");
		}
		if (k->code == SL_OPT_STAGE_LAYERS) /* its rules; a list is the user's */
			printf(" even ends");
		if (k->code == SL_OPT_ORDER) { /* the six orders of the mesh's axes */
			static const sl_axis p[6][3] = {{0, 1, 2}, {0, 2, 1}, {1, 0, 2},
			                                {1, 2, 0}, {2, 0, 1}, {2, 1, 0}};
			char name[32];
			for (int j = 0; j < 6; j++)
				printf(" %s", sl_mesh_order_name(p[j], name, sizeof name));
		}
		putchar('\n');
	}
	return sl_cli_flush(SL_EXIT_OK);
}

static int print_version(void)
{
	const char *core = openblas_get_corename();
	printf("%s %s (OpenBLAS core: %s)\n"
	       "Copyright (c) 2026 The shardlab authors. MIT License: see COPYING.\n"
	       "This is free software; there is NO WARRANTY, to the extent permitted by law.\n"
	       "Report bugs to <%s>.\n",
	       PACKAGE_NAME, PACKAGE_VERSION, core && *core ? core : "unknown", PACKAGE_BUGREPORT);
	return sl_cli_flush(SL_EXIT_OK);
}

/* No command: the lesson menu, the product's front door; without a
 * terminal (a pipe, a script), the default scenario's report. */
static int run_default(const struct sl_tui_options *t)
{
	const char *term = getenv("TERM");
	int tty = isatty(STDIN_FILENO) && isatty(STDOUT_FILENO);
	int can_draw = term && *term && strcmp(term, "dumb") != 0;
	if (tty && can_draw) {
		/* The menu's sandbox (a screen of the same loop) opens on the
		 * scenario `shardlab sandbox` opens on. */
		sl_scenario sc;
		int st = sl_sandbox_default(&sc);
		if (st != SL_EXIT_OK)
			return st;
		struct sl_tui_options o = *t;
		o.sandbox = &sc;
		return sl_tui_lessons(NULL, NULL, 0, &o);
	}
	/* A terminal that cannot be drawn on gets what a pipe gets. */
	if (tty)
		sl_cli_error("%s: the report instead of the lesson menu "
		             "('shardlab lesson --headless 01' follows a lesson as text)",
		             term && *term ? "TERM is dumb" : "TERM is not set");
	sl_opts o;
	sl_err err = {0};
	sl_opts_init(&o);
	if (sl_opts_finish(&o, &err))
		return sl_cli_fail("run", &err);
	return sl_run_and_report("run", &o);
}

/* Whether argv asks for --format=json (wherever it stands, so a usage
 * error before it is answered in JSON too), and whether --trace=- takes
 * stdout. */
static int wants_json(int argc, char **argv, int *trace_stdout)
{
	int json = 0;
	*trace_stdout = 0;
	for (int i = 2; i < argc && strcmp(argv[i], "--") != 0; i++) {
		const char *v = NULL;
		if (strncmp(argv[i], "--format=", 9) == 0)
			v = argv[i] + 9;
		else if (strcmp(argv[i], "--format") == 0 && i + 1 < argc)
			v = argv[++i];
		if (v)
			json = strcmp(v, "json") == 0;
		if (strcmp(argv[i], "--trace=-") == 0 ||
		    (strcmp(argv[i], "--trace") == 0 && i + 1 < argc &&
		     strcmp(argv[i + 1], "-") == 0))
			*trace_stdout = 1;
	}
	return json;
}

/* A failed command under --format=json that printed no report answers
 * with an error object (the same exit status), where the report would
 * have gone: a script reading stdout never meets an empty document. */
static int json_error(int argc, char **argv, int status)
{
	int trace_stdout;
	if (status == SL_EXIT_OK || !wants_json(argc, argv, &trace_stdout) ||
	    sl_report_json_printed())
		return status;
	json_t *e = json_object(), *o = json_object();
	json_object_set_new(e, "message", json_string(sl_cli_last_error()));
	json_object_set_new(e, "exit_status", json_integer(status));
	json_object_set_new(o, "error", e);
	if (sl_report_json_print(trace_stdout ? stderr : stdout, o) && status == SL_EXIT_OK)
		status = SL_EXIT_FAIL;
	fflush(stdout);
	return status;
}

/* The display options the program takes without a command; 0, or the
 * index of the first argument that is not one. */
static int display_options(int argc, char **argv, struct sl_tui_options *t)
{
	sl_tui_options_default(t);
	int i = 1;
	for (; i < argc; i++) {
		if (strcmp(argv[i], "--no-color") == 0)
			t->no_color = 1;
		else if (strcmp(argv[i], "--ascii") == 0)
			t->ascii = 1;
		else if (strcmp(argv[i], "--high-contrast") == 0)
			t->high_contrast = 1;
		else if (strcmp(argv[i], "--presenter") == 0)
			t->presenter = 1;
		else
			break;
	}
	return i;
}

int sl_cli_main(int argc, char **argv)
{
	struct sl_tui_options t;
	int shown = display_options(argc, argv, &t);
	if (shown == argc)
		return run_default(&t);
	if (shown > 1)
		return sl_cli_usage(NULL,
		                    "'%s' goes only with --no-color, --ascii, --presenter and "
		                    "--high-contrast, without a command (a command takes its own)",
		                    argv[1]);
	const char *a = argv[1];
	if (strcmp(a, "--list-presets") == 0) {
		int json = 0;
		if (argc > 3 || (argc == 3 && strcmp(argv[2], "--format=json") != 0 &&
		                 strcmp(argv[2], "--format=text") != 0))
			return sl_cli_usage(NULL, "--list-presets takes only --format=text|json");
		json = argc == 3 && strcmp(argv[2], "--format=json") == 0;
		sl_err err = {0}, *bad = NULL;
		int nbad = 0;
		if (sl_report_presets(stdout, json, &bad, &nbad, &err)) {
			sl_cli_error("%s", err.msg);
			return err.code == SL_EINVAL ? SL_EXIT_USAGE : SL_EXIT_FAIL;
		}
		/* On stderr in both formats: the JSON array's entries are
		 * hardware files, and a bad one is not. */
		for (int i = 0; i < nbad; i++)
			sl_cli_error("%s (left out of the list)", bad[i].msg);
		free(bad);
		return sl_cli_flush(SL_EXIT_OK);
	}
	if (a[0] == '-') {
		if (argc > 2)
			return sl_cli_usage(NULL,
			                    "'%s' takes no further arguments; "
			                    "options go after a command",
			                    a);
		if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
			print_help();
			return sl_cli_flush(SL_EXIT_OK);
		}
		if (strcmp(a, "--version") == 0 || strcmp(a, "-V") == 0)
			return print_version();
		if (strcmp(a, "--list-options") == 0)
			return list_options();
		return sl_cli_usage(NULL, "unknown option '%s'", a);
	}
	for (const struct sl_cmd *c = cmds; c->name; c++)
		if (strcmp(a, c->name) == 0) {
			int status = c->fn(argc - 1, argv + 1);
			return json_error(argc, argv, status);
		}
	const char *names[sizeof cmds / sizeof *cmds];
	int n = 0;
	for (const struct sl_cmd *c = cmds; c->name; c++)
		names[n++] = c->name;
	const char *near = sl_closest(a, names, n);
	if (near)
		return sl_cli_usage(NULL, "unknown command '%s' (did you mean '%s'?)", a, near);
	return sl_cli_usage(NULL, "unknown command '%s'", a);
}
