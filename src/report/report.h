/* SPDX-License-Identifier: MIT */
/* report.h - the headless reports: text and JSON (jansson) for a run and a
 * collective sweep, the preset list, and the Chrome trace file.
 *
 * Reports only format what the engine measured; they decide nothing (the
 * pass/fail tolerance and exit statuses belong to the commands). */
#ifndef SL_REPORT_H
#define SL_REPORT_H

#include <stdint.h>
#include <stdio.h>

#include <jansson.h>

#include "cluster.h"
#include "coll.h"
#include "gemm.h"
#include "scenario.h"
#include "status.h"
#include "train.h"

/* Every preset (sl_hw_list: the built-in names, then the files'), with its
 * figures in human units and its source; json: a JSON array whose entries
 * are hardware files (shardlab-hardware(5)).  The files that cannot be
 * read are left out and their messages returned in *bad (as sl_hw_list). */
int sl_report_presets(FILE *f, int json, sl_err **bad, int *nbad, sl_err *err);

/* One sharded product, after sl_scenario_run. */
typedef struct sl_run_report {
	const sl_scenario *sc;
	const char *overrides;     /* preset figures replaced by options ("" if none) */
	const sl_cluster *cluster; /* the cluster that ran: per-device statistics */
	const sl_gemm_result *res;
	double tolerance; /* max_rel_error allowed by the check */
	int pass;         /* max_rel_error <= tolerance */
	double wall_s;    /* wall-clock seconds of the run */
} sl_run_report;

void sl_report_run_text(FILE *f, const sl_run_report *r);
/* A new JSON object (caller owns it); NULL if out of memory. */
json_t *sl_report_run_json(const sl_run_report *r);

/* One collective at one size. */
typedef struct sl_coll_row {
	double bytes;        /* each device's buffer */
	size_t count;        /* fp32 elements */
	double time_s;       /* the slowest device's emulated clock */
	double predicted_s;  /* sl_cost_coll on the ring's bottleneck link */
	double algbw, busbw; /* bytes/s; 0 when time_s is 0 (one device) */
	uint64_t wrong;      /* elements that differ from the expected result */
} sl_coll_row;

typedef struct sl_coll_report {
	sl_coll_op op;
	sl_algo algo;
	const sl_scenario *sc; /* the cluster figures and preset */
	const char *overrides;
	sl_link_spec bottleneck; /* the link the prediction uses */
	size_t nrows;
	const sl_coll_row *rows;
	double factor; /* sizes grow by it (nccl-tests' -f) */
	int iters;     /* iterations per size (-n); time is per iteration */
	int predicted; /* nccl-tests' text: a 14th column, the prediction */
} sl_coll_report;

/* Text: the header once, then one line per size as it completes. */
void sl_report_coll_header(FILE *f, const sl_coll_report *r);
void sl_report_coll_row(FILE *f, const sl_coll_row *row);
json_t *sl_report_coll_json(const sl_coll_report *r);
/* nccl-tests' 13 columns: size (B), count, type, redop, root, then time
 * (us), algbw and busbw (GB/s) and #wrong out of place and again in place,
 * and predicted (us) as a 14th with r->predicted; a units row
 * under the names, and their footer (out-of-bounds values, the average
 * bus bandwidth) after the rows.  nrows and rows of r must be set before
 * the header (it names the first and last size). */
void sl_report_coll_nccl_header(FILE *f, const sl_coll_report *r);
void sl_report_coll_nccl_row(FILE *f, const sl_coll_report *r, const sl_coll_row *row);
void sl_report_coll_nccl_footer(FILE *f, const sl_coll_report *r);
/* CSV with the JSON report's names, in SI units (s, bytes/s). */
void sl_report_coll_csv_header(FILE *f);
void sl_report_coll_csv_row(FILE *f, const sl_coll_report *r, const sl_coll_row *row);

/* The hardware, links and layout lines of a report, each starting with
 * lead, and the same figures as JSON fields of o (for other commands'
 * reports, e.g. train). */
void sl_report_hardware_text(FILE *f, const char *lead, const sl_cluster_config *cfg,
                             const char *preset, const char *overrides);
void sl_report_cluster_json(json_t *o, const sl_cluster_config *cfg, const char *preset,
                            const char *overrides);

/* A training layout as JSON fields of o: tp, pp, dp, schedule, chunks,
 * microbatches, sequence_parallel, zero1, mesh_order. */
void sl_report_layout_json(json_t *o, const sl_layout *l);

/* The JSON reports' format: format_version of every --format=json output
 * (shardlab(1), OUTPUT).  Raise it when a key changes meaning or name.
 * Reports build their objects under the names the man page's OUTPUT section
 * states (snake_case, units as suffixes); tests/test_json.c checks every key
 * of every command against them. */
#define SL_JSON_FORMAT_VERSION 1

/* Pretty-print the object j (stolen) after shardlab_version and
 * format_version, with a final newline; -1 on a write error, out of memory,
 * or when j is not an object. */
int sl_report_json_print(FILE *f, json_t *j);
/* Whether a JSON report was printed: the error object on failure is only
 * for a run that printed none (cli.c). */
int sl_report_json_printed(void);

/* Write the cluster's trace to path as Chrome Trace Event JSON: "-" is
 * stdout, a path ending in .gz is gzip-compressed.  The events are moved
 * out (sl_trace_take): the cluster's trace is empty afterwards. */
int sl_report_trace(sl_cluster *c, const char *path, sl_err *err);

#endif
