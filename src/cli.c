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
	printf("Usage: shardlab [COMMAND [OPTION...]]\n"
	       "       shardlab --help | --version | --list-presets\n\n"
	       "Threads play GPUs: each emulated device multiplies its shard with OpenBLAS and\n"
	       "exchanges results over links throttled to a bandwidth and a latency; every\n"
	       "device keeps an emulated clock, so times are those of the hardware emulated.\n\n"
	       "Without a command, opens the menu of guided lessons; without a terminal,\n"
	       "prints the default scenario's report (4 devices of the h100 preset, a\n"
	       "column-wise 1024 x 4096 x 4096 product).\n\n"
	       "Commands:\n");
	for (const struct sl_cmd *c = cmds; c->name; c++)
		printf("  %-8s %s\n", c->name, c->summary);
	printf("\nOptions:\n"
	       "  -h, --help          this help\n"
	       "  -V, --version       the version and the OpenBLAS kernel in use\n"
	       "  --list-presets      the hardware presets, their figures and sources\n\n"
	       "Run 'shardlab COMMAND --help' for a command's options; see shardlab(1).\n");
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
static int run_default(void)
{
	if (isatty(STDIN_FILENO) && isatty(STDOUT_FILENO)) {
		/* The sandbox chosen from the menu comes back to it on q. */
		int st = sl_tui_lessons(NULL, NULL, 0, NULL);
		while (st == SL_TUI_LESSONS_SANDBOX &&
		       (st = sl_sandbox_default(1)) == SL_TUI_MENU)
			st = sl_tui_lessons(NULL, NULL, 0, NULL);
		return st;
	}
	sl_opts o;
	sl_err err = {0};
	sl_opts_init(&o);
	if (sl_opts_finish(&o, &err))
		return sl_cli_fail("run", &err);
	return sl_run_and_report("run", &o);
}

int sl_cli_main(int argc, char **argv)
{
	if (argc < 2)
		return run_default();
	const char *a = argv[1];
	if (a[0] == '-') {
		if (argc > 2)
			return sl_cli_usage(NULL, "'%s' takes no further arguments; "
						  "options go after a command",
					    a);
		if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
			print_help();
			return sl_cli_flush(SL_EXIT_OK);
		}
		if (strcmp(a, "--version") == 0 || strcmp(a, "-V") == 0)
			return print_version();
		if (strcmp(a, "--list-presets") == 0) {
			sl_report_presets(stdout);
			return sl_cli_flush(SL_EXIT_OK);
		}
		return sl_cli_usage(NULL, "unknown option '%s'", a);
	}
	for (const struct sl_cmd *c = cmds; c->name; c++)
		if (strcmp(a, c->name) == 0)
			return c->fn(argc - 1, argv + 1);
	return sl_cli_usage(NULL, "unknown command '%s'", a);
}
