/* opts.h - the scenario options shared by the headless commands.
 *
 * Two groups of long options fill an sl_scenario (src/engine/scenario.h)
 * plus the output options:
 *   sl_opts_cluster: devices, nodes, topology, preset, links, compute rate,
 *                    memory, timing, slowdown, collective algorithm, format,
 *                    trace file (run, coll, train, sandbox);
 *   sl_opts_gemm:    the sharded product: strategy, m, k, n, seed (run,
 *                    sandbox);
 *   sl_opts_dry_run: --dry-run, a timing-only run (run, train, sandbox).
 * A command concatenates the groups it takes with its own options and hands
 * every code getopt_long returns to sl_opts_handle first:
 *
 *	static const struct option mine[] = {{"layers", required_argument, NULL, MY_LAYERS},
 *					     {NULL, 0, NULL, 0}};
 *	struct option lo[SL_OPTS_MAX];
 *	size_t n = sl_opts_append(lo, 0, SL_OPTS_MAX, sl_opts_cluster);
 *	n = sl_opts_append(lo, n, SL_OPTS_MAX, mine);
 *	sl_opts o;
 *	sl_opts_init(&o);
 *	... getopt_long loop: rc = sl_opts_handle(&o, code, optarg, &err);
 *	    rc == SL_OPTS_NOT_MINE: the code is the command's own ...
 *	sl_opts_finish(&o, &err);
 *
 * sl_cli_parse (cli.h) runs that loop and reports errors the usual way.
 *
 * Option values are only recorded while parsing; sl_opts_finish applies the
 * preset first and the explicit options after it, so an explicit figure wins
 * whatever its place on the command line. */
#ifndef SL_OPTS_H
#define SL_OPTS_H

#include <getopt.h>
#include <stddef.h>
#include <stdint.h>

#include "scenario.h"
#include "status.h"

/* Room for any command's concatenated table. */
#define SL_OPTS_MAX 64

/* getopt_long codes of the shared options.  A command's own options use
 * plain characters or codes from SL_OPT_USER up. */
enum sl_opt_code {
	SL_OPT_DEVICES = 0x100,
	SL_OPT_DEVICES_PER_NODE,
	SL_OPT_TOPOLOGY,
	SL_OPT_PRESET,
	SL_OPT_BANDWIDTH,
	SL_OPT_LATENCY,
	SL_OPT_INTER_BANDWIDTH,
	SL_OPT_INTER_LATENCY,
	SL_OPT_FLOPS,
	SL_OPT_MEMORY,
	SL_OPT_TIMING,
	SL_OPT_SLOWDOWN,
	SL_OPT_ALGORITHM,
	SL_OPT_FORMAT,
	SL_OPT_TRACE,
	/* sl_opts_gemm */
	SL_OPT_STRATEGY,
	SL_OPT_M,
	SL_OPT_K,
	SL_OPT_N,
	SL_OPT_SEED,
	/* sl_opts_dry_run */
	SL_OPT_DRY_RUN,
	SL_OPT_NCODES,
	SL_OPT_USER = 0x200
};

/* sl_opts_handle's answer for a code that is not a shared option. */
#define SL_OPTS_NOT_MINE (-1)

typedef enum sl_format {
	SL_FORMAT_TEXT,
	SL_FORMAT_JSON,
} sl_format;

/* Terminated by an all-zero entry. */
extern const struct option sl_opts_cluster[];
extern const struct option sl_opts_gemm[];
/* --dry-run: a timing-only run (run, train, sandbox). */
extern const struct option sl_opts_dry_run[];
/* --help text of each group (lines of "  --name=VALUE  what it does"). */
extern const char sl_opts_cluster_help[];
extern const char sl_opts_gemm_help[];
extern const char sl_opts_dry_run_help[];

typedef struct sl_opts {
	/* Results, valid after sl_opts_finish. */
	sl_scenario sc;
	sl_format format;
	const char *trace;        /* --trace file, or NULL */
	/* The explicit options that changed the preset's figures, for reports
	 * ("bandwidth, latency"); empty when none. */
	char overrides[128];

	/* Recorded while parsing; private to opts.c. */
	uint32_t given;           /* bit (code - SL_OPT_DEVICES) per option seen */
	int devices, devices_per_node;
	sl_topo topology;
	const char *preset;
	double bandwidth, latency, inter_bandwidth, inter_latency, flops, memory, slowdown;
	sl_timing timing;
	sl_algo algo;
	sl_split split;
	int m, k, n;
	uint64_t seed;
} sl_opts;

/* Defaults: sl_scenario_default (4 devices, h100, colwise 1024x4096x4096),
 * text output, no trace. */
void sl_opts_init(sl_opts *o);

/* Handle one getopt_long code and its argument.  Returns SL_OK,
 * SL_OPTS_NOT_MINE for a code it does not know (nothing changed), or
 * SL_EINVAL with err naming the option and what is wrong with the value. */
int sl_opts_handle(sl_opts *o, int code, const char *arg, sl_err *err);

/* Did the command line give this option? */
int sl_opts_given(const sl_opts *o, int code);

/* Build the scenario: the preset (--preset, else sc.preset, which a command
 * may change after sl_opts_init to get another default), then every
 * explicit option over it; the node size from the preset when the device
 * count exceeds one of its nodes and --devices-per-node was not given; then
 * the cluster configuration is checked.  Other defaults a command sets in
 * sc after sl_opts_init (device count, shape) stay unless an option is
 * given.  SL_EINVAL with err filled when the combination is invalid. */
int sl_opts_finish(sl_opts *o, sl_err *err);

/* Append the entries of src (up to its zero terminator) to dst, which holds
 * n entries and room for cap; dst stays zero-terminated.  Returns the new
 * count, or cap when it did not fit (a programming error; asserted). */
size_t sl_opts_append(struct option *dst, size_t n, size_t cap, const struct option *src);

/* The long name of a code in the shared tables ("bandwidth"), or NULL. */
const char *sl_opts_name(int code);

#endif
