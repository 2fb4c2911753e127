/* SPDX-License-Identifier: MIT */
/* opts.h - the scenario options shared by the headless commands.
 *
 * Two groups of long options fill an sl_scenario (src/engine/scenario.h)
 * plus the output options:
 *   sl_opts_cluster: devices, nodes, topology, preset or hardware file,
 *                    links, compute rate,
 *                    memory, timing, slowdown, collective algorithm, format,
 *                    trace file (run, coll, train, sandbox);
 *   sl_opts_gemm:    the sharded product: strategy, m, k, n, seed (run,
 *                    sandbox);
 *   sl_opts_dry_run: --dry-run, a timing-only run (run, train, sandbox);
 * and two groups fill an sl_train_opts (a model, a layout, steps):
 *   sl_opts_layout:  tp, pp, dp, schedule, chunks, microbatches,
 *                    sequence-parallel, zero1, mesh-order (train, sandbox);
 *   sl_opts_model:   model (a name or file), layers, hidden, ffn, heads, seq,
 *                    batch, steps, seed, lr
 *                    (train, compare, sandbox); their codes go to
 *                    sl_train_opts_handle.
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

#include "preset.h"
#include "scenario.h"
#include "status.h"
#include "train.h"

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
	SL_OPT_PRECISION,
	SL_OPT_EFFICIENCY,
	SL_OPT_HARDWARE,
	/* sl_opts_gemm */
	SL_OPT_STRATEGY,
	SL_OPT_M,
	SL_OPT_K,
	SL_OPT_N,
	SL_OPT_SEED,
	/* sl_opts_dry_run */
	SL_OPT_DRY_RUN,
	SL_OPT_NCODES,
	/* sl_opts_layout and sl_opts_model (sl_train_opts_handle) */
	SL_OPT_TP = 0x180,
	SL_OPT_PP,
	SL_OPT_DP,
	SL_OPT_SCHEDULE,
	SL_OPT_CHUNKS,
	SL_OPT_MICROBATCHES,
	SL_OPT_SP,
	SL_OPT_ZERO1,
	SL_OPT_ORDER,
	SL_OPT_LAYERS,
	SL_OPT_HIDDEN,
	SL_OPT_FFN,
	SL_OPT_HEADS,
	SL_OPT_SEQ,
	SL_OPT_BATCH,
	SL_OPT_STEPS,
	SL_OPT_MODEL_SEED,
	SL_OPT_LR,
	SL_OPT_RECOMPUTE,
	SL_OPT_MODEL,
	SL_OPT_KV_HEADS, /* model shape too, after the range above */
	SL_OPT_FFN_KIND,
	SL_OPT_ATTENTION,
	SL_OPT_ATTN_DROPOUT,
	SL_OPT_HIDDEN_DROPOUT,
	SL_OPT_NORM, /* model shape too */
	SL_OPT_VOCAB, /* model shape too, as the next two */
	SL_OPT_UNTIE,
	SL_OPT_POS_EMB,
	SL_OPT_TIE, /* --untie-embeddings' opposite (its bit in given_shape) */
	SL_OPT_GRAD_ACCUM,
	SL_OPT_USER = 0x200
};

/* sl_opts_handle's answer for a code that is not a shared option. */
#define SL_OPTS_NOT_MINE (-1)

typedef enum sl_format {
	SL_FORMAT_TEXT,
	SL_FORMAT_JSON,
	SL_FORMAT_CSV, /* only where the command sets sl_opts.csv_ok (coll, compare, plan) */
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
	int csv_ok;               /* set before parsing by the commands with a table to plot */
	int max_devices;          /* --devices' bound (0: SL_MAX_DEVICES; plan sets more) */
	const char *trace;        /* --trace file, or NULL */
	/* The explicit options that changed the preset's figures, for reports
	 * ("bandwidth, latency"); empty when none. */
	char overrides[128];

	/* Recorded while parsing; private to opts.c. */
	uint32_t given;           /* bit (code - SL_OPT_DEVICES) per option seen */
	int devices, devices_per_node;
	sl_topo topology;
	const char *preset;
	const sl_preset *hw;      /* --preset's or --hardware's figures, found while parsing */
	double bandwidth, latency, inter_bandwidth, inter_latency, flops, memory, slowdown;
	sl_timing timing;
	sl_precision precision;
	sl_efficiency efficiency;
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

/* Refuse arg, which is none of list ("ring, tree"): "--opt: unknown what
 * 'arg' (one of: list)", with "did you mean" for a near miss. */
int sl_opts_unknown(sl_err *err, const char *opt, const char *what, const char *arg,
		    const char *list);

/* ---- the training groups ---- */

extern const struct option sl_opts_layout[];
extern const struct option sl_opts_model[];
extern const char sl_opts_layout_help[];
extern const char sl_opts_model_help[];

typedef struct sl_train_opts {
	sl_opts *o;
	int devices_follow; /* the device count is tp*pp*dp unless --devices */
	sl_model_spec m;
	sl_layout l;
	int steps;
	int given_m, given_v, given_steps, given_seq, given_sched;
	unsigned given_shape; /* bit (code - SL_OPT_LAYERS) per explicit shape option */
	const char *layouts; /* compare's --layouts (compare handles it) */
} sl_train_opts;

/* The model defaults of train and compare (4 blocks of width 128, ffn 512,
 * 4 heads, 32 tokens, batch 16), one device, `steps` steps; also
 * sl_opts_init(o). */
void sl_train_opts_init(sl_train_opts *a, sl_opts *o, int steps);
/* As sl_opts_handle, for the codes of sl_opts_layout and sl_opts_model. */
int sl_train_opts_handle(sl_train_opts *a, int code, const char *arg, sl_err *err);
/* Defaults that depend on other options: interleaving's chunks, and enough
 * micro-batches to fill the pipeline twice when the batch allows it. */
/* The model's defaults that depend on other options: without attention a
 * sequence is one token unless --seq was given. */
void sl_train_opts_model_finish(sl_train_opts *a);
void sl_train_layout_defaults(const sl_model_spec *m, sl_layout *l, int given_m, int given_v);
/* The cluster of a layout's run: base's hardware, n devices, in nodes of
 * base's size (one node when n fits in one).  SL_EINVAL when n does not
 * fill whole nodes. */
int sl_train_cluster_config(const sl_cluster_config *base, int n, sl_cluster_config *out,
			    sl_err *err);

#endif
