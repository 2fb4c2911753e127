/* SPDX-License-Identifier: MIT */
/* cli.h - the command line: subcommands, option parsing, errors, exit status.
 *
 * cli.c holds the table of subcommands.  A new one is a function with the
 * signature of sl_cmd_fn (declared below) and one line in that table.  The
 * conventions they share (errors, parsing, exit statuses) are cliutil.h's. */
#ifndef SL_CLI_H
#define SL_CLI_H

#include "cliutil.h"

/* A subcommand: argv[0] is its name; returns the exit status. */
typedef int (*sl_cmd_fn)(int argc, char **argv);

int sl_cmd_run(int argc, char **argv);
int sl_cmd_coll(int argc, char **argv);
int sl_cmd_train(int argc, char **argv);
int sl_cmd_compare(int argc, char **argv);
int sl_cmd_ckpt(int argc, char **argv);
int sl_cmd_sandbox(int argc, char **argv);
/* The scenario `shardlab sandbox` opens on with no options (the lesson
 * menu's sandbox).  Returns 0, or an exit status after an error line. */
struct sl_scenario;
int sl_sandbox_default(struct sl_scenario *sc);
int sl_cmd_check(int argc, char **argv);
int sl_cmd_lesson(int argc, char **argv);
int sl_cmd_plan(int argc, char **argv);

/* Parse and run; returns the process exit status. */
int sl_cli_main(int argc, char **argv);

/* Run the scenario of o and print its report (cmd_run.c); the no-argument
 * default of the program uses it too. */
int sl_run_and_report(const char *cmd, const sl_opts *o);

#endif
