/* SPDX-License-Identifier: MIT */
/* opts.h - the command line's options, from the knob table.
 *
 * Every option is a row of the knob table (src/engine/knobs.h): its name,
 * type, range, choices, the commands that take it and where its value
 * lives.  sl_cli_parse (cliutil.h) builds a command's getopt table from the
 * rows its command bit selects and hands every code to sl_opts_handle,
 * which parses and records the rows whose value lives in the scenario, the
 * model or the layout (and --preset, --hardware, --model, --mesh-order,
 * --format, --trace); the others go to the command's own handler, which
 * may parse them with sl_knob_parse.
 *
 * Values are only recorded while parsing; sl_opts_finish applies the preset
 * (or hardware file) first, then a --model file, then the explicit options
 * over them, so an explicit figure wins whatever its place on the command
 * line. */
#ifndef SL_OPTS_H
#define SL_OPTS_H

#include <getopt.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "knobs.h"
#include "preset.h"
#include "scenario.h"
#include "status.h"
#include "train.h"

/* Room for any command's getopt table. */
#define SL_OPTS_MAX 96
/* Room for a value per row of the knob table. */
#define SL_KNOBS_MAX 128

/* sl_opts_handle's answer for a code that is not a shared option. */
#define SL_OPTS_NOT_MINE (-1)

typedef enum sl_format {
	SL_FORMAT_TEXT,
	SL_FORMAT_JSON,
	SL_FORMAT_CSV, /* only where the command sets sl_opts.csv_ok (coll, compare, plan) */
} sl_format;

struct sl_train_opts;

typedef struct sl_opts {
	/* Results, valid after sl_opts_finish. */
	sl_scenario sc;
	sl_format format;
	int csv_ok;        /* set before parsing by the commands with a table to plot */
	int max_devices;   /* plan sets SL_MAX_PLAN_DEVICES: a cluster only planned */
	const char *trace; /* --trace file, or NULL */
	/* The explicit options that changed the preset's figures, for reports
	 * ("bandwidth, latency"); empty when none. */
	char overrides[128];
	unsigned cmd; /* the command's SL_CMD_ bit (sl_cli_parse sets it) */
	/* The model and layout options' home (sl_train_opts_init sets it);
	 * without it they are the command's own. */
	struct sl_train_opts *train;

	/* Recorded while parsing; private to opts.c. */
	uint64_t given[(SL_KNOBS_MAX + 63) / 64]; /* a bit per knob row given */
	sl_knob_val val[SL_KNOBS_MAX];
	const sl_preset *hw;     /* --preset's or --hardware's figures, found while parsing */
	sl_axis order[SL_NAXES]; /* --mesh-order */
	sl_layout stages;        /* --stage-layers: its stages, stage_n and stage_list */
} sl_opts;

/* Defaults: sl_scenario_default (4 devices, h100, colwise 1024x4096x4096),
 * text output, no trace. */
void sl_opts_init(sl_opts *o);

/* Handle one getopt_long code and its argument.  Returns SL_OK,
 * SL_OPTS_NOT_MINE for a code that is the command's own (nothing changed),
 * or SL_EINVAL with err naming the option and what is wrong with the
 * value. */
int sl_opts_handle(sl_opts *o, int code, const char *arg, sl_err *err);

/* Did the command line give this option? */
int sl_opts_given(const sl_opts *o, int code);
/* Did it give any option of the group? */
int sl_opts_given_group(const sl_opts *o, sl_knob_group g);

/* Build the scenario: the preset (--preset, else sc.preset, which a command
 * may change after sl_opts_init to get another default), then every
 * explicit option over it; the node size from the preset when the device
 * count exceeds one of its nodes and --devices-per-node was not given; then
 * the cluster configuration is checked.  Other defaults a command sets in
 * sc after sl_opts_init (device count, shape) stay unless an option is
 * given.  SL_EINVAL with err filled when the combination is invalid. */
int sl_opts_finish(sl_opts *o, sl_err *err);

/* The long name of a code ("bandwidth"), or NULL. */
const char *sl_opts_name(int code);

/* The getopt table of the rows command bit cmd takes (and --help); returns
 * the count.  out holds SL_OPTS_MAX entries and ends with a zero one. */
size_t sl_opts_getopt(unsigned cmd, struct option *out);

/* Print the help lines of the rows of group g that command cmd takes
 * ("  --name=META   what it does"), after the group's title unless title is
 * 0; nothing when there are none. */
void sl_opts_help(FILE *f, unsigned cmd, sl_knob_group g, int title);

/* ---- the training options ---- */

typedef struct sl_train_opts {
	sl_opts *o;
	int devices_follow; /* the device count is tp*pp*dp unless --devices */
	sl_model_spec m;
	sl_layout l;
	int steps;
	/* After sl_opts_finish: which were given (--model gives the sequence). */
	int given_m, given_v, given_steps, given_seq, given_sched;
	int given_zero;      /* --zero or --zero1 */
	const char *layouts; /* compare's --layouts (compare handles it) */
} sl_train_opts;

/* The model defaults of train and compare (4 blocks of width 128, ffn 512,
 * 4 heads, 32 tokens, batch 16), one device, `steps` steps; also
 * sl_opts_init(o), and o's model and layout options go to a. */
void sl_train_opts_init(sl_train_opts *a, sl_opts *o, int steps);
/* Was this model field given, by its option or by --model's file? */
int sl_train_opts_model_given(const sl_train_opts *a, int code);
/* The model's defaults that depend on other options: without attention a
 * sequence is one token unless --seq was given. */
void sl_train_opts_model_finish(sl_train_opts *a);
/* Defaults that depend on other options: interleaving's chunks, and enough
 * micro-batches to fill the pipeline twice when the batch allows it. */
void sl_train_layout_defaults(const sl_model_spec *m, sl_layout *l, int given_m, int given_v);
/* The cluster of a layout's run: base's hardware, n devices, in nodes of
 * base's size (one node when n fits in one).  SL_EINVAL when n does not
 * fill whole nodes. */
int sl_train_cluster_config(const sl_cluster_config *base, int n, sl_cluster_config *out,
                            sl_err *err);

#endif
