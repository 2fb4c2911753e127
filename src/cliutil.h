/* SPDX-License-Identifier: MIT */
/* cliutil.h - what every subcommand shares: exit statuses, one-line errors
 * (every message for the user goes through sl_cli_error: one line on stderr
 * that starts with "shardlab: "), option parsing, and checks.  The
 * subcommands include this, not cli.h (the table that calls them), so the
 * dependencies run one way. */
#ifndef SL_CLIUTIL_H
#define SL_CLIUTIL_H

#include <getopt.h>
#include <stdio.h>

#include "opts.h"
#include "status.h"

/* Exit statuses (documented in man/shardlab.1). */
enum {
	SL_EXIT_OK = 0,
	SL_EXIT_FAIL = 1,  /* the run failed: device out of memory, wrong result, I/O */
	SL_EXIT_USAGE = 2, /* bad command line or impossible configuration */
};

/* "shardlab: " + the message + newline, on stderr. */
void sl_cli_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* The last message sl_cli_error printed (without "shardlab: "), or "". */
const char *sl_cli_last_error(void);
/* The same for a usage error of command cmd, with a pointer to its --help;
 * returns SL_EXIT_USAGE. */
int sl_cli_usage(const char *cmd, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Print an engine error ("shardlab: CMD: message") and return the exit
 * status it deserves: SL_EINVAL is a usage error, anything else a failed
 * run. */
int sl_cli_fail(const char *cmd, const sl_err *err);

/* A command's own options: called with every code sl_opts does not handle.
 * Returns SL_OK, or SL_EINVAL with err filled. */
typedef int (*sl_cli_optfn)(void *ctx, int code, const char *arg, sl_err *err);

/* Run getopt_long over argv with the knob table's rows that command bit
 * takes (and -h, --help), giving shared codes to o and the others to own.
 * Then sl_opts_finish.
 * Returns SL_CLI_GO to go on; else an exit status to return at once, after
 * printing the error (usage errors) or help (SL_EXIT_OK, from help()). */
#define SL_CLI_GO (-1)
int sl_cli_parse(const char *cmd, unsigned bit, int argc, char **argv, sl_opts *o, sl_cli_optfn own,
                 void *ctx, void (*help)(void));

/* The same for a command that takes operands (check FILE..., lesson
 * NAME): they may stand among the options; *first is set to the index of
 * the first, argv[*first .. argc-1] (getopt moves them there). */
int sl_cli_parse_operands(const char *cmd, unsigned bit, int argc, char **argv, sl_opts *o,
                          sl_cli_optfn own, void *ctx, void (*help)(void), int *first);

/* --help's cluster and output sections for command bit cmd, with the
 * note on units between them. */
void sl_cli_help_cluster(unsigned cmd);

/* Refuse a run whose buffers would not fit this host: every emulated
 * device's memory lives in the host's.  what names the buffers.  Returns 0
 * or SL_EXIT_USAGE after printing why. */
int sl_cli_host_fits(const char *cmd, double bytes, const char *what);
/* The same for a command that takes --dry-run: the message says so. */
int sl_cli_host_fits_or_dry(const char *cmd, double bytes, const char *what);

/* Check that path can take a trace file (not a directory, its directory
 * exists; "-" is stdout); 0 or SL_EXIT_USAGE after printing why. */
int sl_cli_check_output(const char *cmd, const char *path);
/* Where the report goes: stdout, or stderr when the trace (--trace=-) takes
 * stdout, so the trace stays one JSON document a pipe can read. */
FILE *sl_cli_report_stream(const char *trace);

/* Flush stdout; on a write error print it and return SL_EXIT_FAIL. */
int sl_cli_flush(int status);

#endif
