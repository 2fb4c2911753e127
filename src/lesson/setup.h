/* SPDX-License-Identifier: MIT */
/* setup.h - what a lesson can set up, run, and refer to.
 *
 * Three tables a lesson is checked against: setup keys (key=value on a
 * `setup` line, and the knobs of an `explore`), run kinds (`run matmul`,
 * `run collective`) and figures (the names checks, questions and narration
 * use).  A new kind of run (training layouts: tp, pp, dp, schedule,
 * microbatches) adds rows to these tables and a runner in lrun.c; the
 * parser and the interpreter need no change. */
#ifndef SL_LESSON_SETUP_H
#define SL_LESSON_SETUP_H

#include <stdint.h>

#include "coll.h"
#include "expr.h"
#include "lesson.h"
#include "scenario.h"
#include "train.h"
#include "workload.h"

/* Everything a lesson has set up: the matmul scenario, the collective, and
 * the model with its training layout. */
typedef struct sl_lsetup {
	sl_scenario sc;
	sl_coll_op op;
	double bytes; /* the collective's buffer */
	sl_model_spec model;
	sl_layout layout;
	int steps;                  /* training steps per run */
	int to_tp, to_pp, to_dp;    /* the layout a reshard loads under (0: the saved one's) */
	int given_mb, given_v;      /* microbatches and chunks were set (else they follow pp) */
	const struct sl_preset *hw; /* the preset or hardware file set (NULL: the default) */
	uint64_t figs[2];           /* a bit per knob row of a figure set over it since */
	unsigned touched;           /* SL_FIG_KIND bits of the kinds whose keys were set */
} sl_lsetup;

/* 4 h100 devices in one node; colwise 1024 x 4096 x 4096; an all-reduce of
 * 64 MiB over a ring; 4 MLP blocks of width 128 (ffn 512) trained one step
 * on 16 sequences, on one device. */
void sl_lsetup_default(sl_lsetup *s);
/* The layout with the defaults that follow other keys (chunks for an
 * interleaved schedule, micro-batches to fill the pipeline twice). */
sl_layout sl_lsetup_layout(const sl_lsetup *s);
/* The layout a reshard run loads the checkpoint under: to-tp, to-pp and
 * to-dp over the saved layout, with its other defaults (no ZeRO-1 without
 * replicas, no sequence parallelism without tensor parallelism). */
sl_layout sl_lsetup_target(const sl_lsetup *s);

/* Set key to value (parsed with the engine's unit parsers).  Unknown keys and
 * bad values fail with a message that names the fix. */
int sl_lsetup_set(sl_lsetup *s, const char *key, const char *value, sl_err *err);
/* The index of a setup key, or -1; the list of keys for messages. */
int sl_setup_key(const char *key);
const char *sl_setup_key_name(int i);
const char *sl_setup_keys(void);

/* One line describing the set-up, for SETUP steps. */
void sl_lsetup_describe(const sl_lsetup *s, char *buf, size_t n);

/* ---- figures ---- */

/* Where a figure's value comes from. */
#define SL_FIG_SETUP (1u << SL_RUN_NKINDS) /* the set-up (current, or a named run's) */
#define SL_FIG_KIND(k) (1u << (k))         /* the results of a run of kind k */

typedef struct sl_figdef {
	const char *name;
	sl_dim dim;
	int flag;         /* yes/no */
	unsigned from;    /* SL_FIG_SETUP or a mask of SL_FIG_KIND() */
	const char *what; /* for the manual and messages */
} sl_figdef;

int sl_fig_count(void);
const sl_figdef *sl_fig(int i);
int sl_fig_find(const char *name);
/* The figures of the set-up itself, always available. */
double sl_fig_setup_value(int fig, const sl_lsetup *s);

/* ---- runs ---- */

int sl_run_kind_parse(const char *s, sl_run_kind *k);
/* "matmul, collective" for messages. */
const char *sl_run_kinds(void);

/* What one run measured. */
typedef struct sl_runrec {
	int valid;
	sl_run_kind kind;
	sl_lsetup setup; /* as it was when it ran */
	double *v;       /* sl_fig_count() values; NaN: none (why says why) */
	char why[300];
	char summary[400];
} sl_runrec;

void sl_runrec_init(sl_runrec *r);
void sl_runrec_free(sl_runrec *r);
int sl_runrec_copy(sl_runrec *dst, const sl_runrec *src);

/* Check that a run of kind k on s is valid and within a lesson's limits
 * (host memory, work) before building anything. */
int sl_lrun_check(sl_run_kind k, const sl_lsetup *s, sl_err *err);
/* The cluster the run needs (one device for the single strategy). */
int sl_lrun_config(sl_run_kind k, const sl_lsetup *s, double slowdown, sl_cluster_config *cfg,
                   sl_err *err);
/* Run on c and fill rec.  A layout that does not fit device memory is an
 * outcome, not an error: rec gets fits = no and why.  eng, if not NULL,
 * gets what the engine returned beside c's trace, for a front end that
 * shows this run (a product's check, a training step's report and loss, a
 * reshard's checkpoint, kept open, and its plans); free it with
 * sl_wl_result_free. */
int sl_lrun(sl_run_kind k, const sl_lsetup *s, sl_cluster *c, sl_runrec *rec, sl_wl_result *eng,
            sl_err *err);

#endif
