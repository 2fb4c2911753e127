/* SPDX-License-Identifier: MIT */
/* plan.h - the layout planner: every valid way to lay a model out on a
 * cluster (tp, pp, dp, micro-batches, schedule and chunks, sequence
 * parallelism, ZeRO-1, mesh order), each one's step as sl_train_estimate
 * figures it (the step functions recorded and replayed, which the tests
 * prove equal to a run), rejected with the reason when it does not fit in
 * device memory, and ranked by step time.
 *
 * The candidates are the even splits: dp divides the batch and the
 * micro-batch count m divides each replica's share (an uneven split only
 * makes the largest share everyone's step); tp divides the device count
 * and the head count, pp the rest; the layers on the stages even, and
 * where they do not divide, also ends (sl_layout.stages: the first and the
 * last stage, which hold the embedding and the head, fewer), or the one
 * split fix_stages names; schedules GPipe, 1F1B and interleaved with every
 * chunk count v from 2 to MAX_PLAN_CHUNKS that divides the fullest stage's
 * layers, or the one count fix_chunks names (with pp = 1 there is
 * no pipeline: one 1F1B row, gradient accumulation over m; with m = 1
 * GPipe is 1F1B, listed once, as 1F1B unless fix_schedule names GPipe); the
 * mesh orders are the six permutations of tp, pp and dp, less those that
 * put every device on the same kinds of links as one listed before (the
 * same figures, so the same row). */
#ifndef SL_PLAN_H
#define SL_PLAN_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include "cluster.h"
#include "model.h"
#include "train.h"

/* Chunk counts v tried for the interleaved schedule: 2 up to this
 * (NVIDIA's Nemotron-4 340B recipe interleaves 12). */
#define MAX_PLAN_CHUNKS 16
/* The plan evaluates layouts on up to this many threads (one per core). */
#define MAX_PLAN_THREADS 16

typedef struct sl_plan_spec {
	sl_model_spec model;
	sl_cluster_config cluster; /* devices, nodes, device and link figures, memory */
	int threads;               /* 0: one per core (at most MAX_PLAN_THREADS) */
	/* The least recomputation every layout uses (SL_RECOMPUTE_NONE: the
	 * plan turns it on only for layouts that do not fit without it). */
	sl_recompute min_recompute;
	sl_attention attention; /* every layout's attention core */
	/* When > 0, only layouts with this tensor, pipeline or data parallel
	 * degree, or this many micro-batches (a published run's layout). */
	int fix_tp, fix_pp, fix_dp, fix_microbatches;
	/* fix_schedule nonzero: only layouts of schedule `schedule`; fix_chunks
	 * > 0: only layouts of this many chunks per device (a published run's
	 * schedule; pp = 1's one row counts as 1F1B of one chunk) */
	int fix_schedule, fix_chunks;
	sl_sched schedule;
	/* fix_stages nonzero: only layouts of stages_of's split of the layers
	 * (sl_layout.stages; a list: only pp of its length) */
	int fix_stages;
	sl_layout stages_of;
	/* Nonzero: no layout with sequence parallelism, or with ZeRO-1 (a run
	 * from before either, as Narayanan et al.'s of 2021). */
	int no_sp, no_zero1;
	/* fix_zero nonzero: only layouts of ZeRO stage `zero` */
	int fix_zero, zero;
	/* every layout's context parallelism (sl_layout's cp, 0 or 1: none; it
	 * needs attention flash) and how it moves keys and values */
	int cp, cp_comm;
	/* ZeRO-3 rows keep each block's gathered parameters for its backward */
	int zero_keep;
	/* every layout's overlap and gradient bucket (sl_layout's); with
	 * overlap auto on the realistic machine, the best layouts' are
	 * searched (off against on), and their bucket unless fix_bucket */
	int overlap;
	double bucket_bytes;
	int fix_bucket;
	/* When not NULL: set to nonzero (from any thread) to stop the plan
	 * between layouts, and sl_plan_run returns SL_ECANCEL (the TUI quits). */
	const atomic_int *cancel;
	/* 0: every row that fits is timed (the TUI, JSON and CSV list them
	 * all).  K > 0: only the rows that can rank among the first K (at
	 * least 3, what sl_plan_explain compares) are sure to be timed: a
	 * layout whose compute alone, with the pipeline's fill and drain
	 * (sl_est_compute_floor), is slower than K rows already timed is not replayed, and its rows
	 * keep their memory figures with timed = 0, after every timed row.
	 * The first K rows are the same as with 0. */
	int exact_top;
	/* When not NULL: set to the number of layout shapes to evaluate, and
	 * counted up as each is done (from any thread), for a progress line. */
	atomic_int *total, *done;
} sl_plan_spec;

/* Where a group's traffic runs: the slowest link its ring (or, for the
 * pipeline, its hops) crosses, and whether that is between nodes. */
typedef struct sl_plan_path {
	int used;  /* the group has 2 or more devices */
	int inter; /* some of it crosses nodes */
	sl_link_spec slowest;
} sl_plan_path;

typedef struct sl_plan_row {
	sl_layout layout;
	int fits; /* 0: peak memory over the device's capacity */
	/* 1: est holds the step's times; 0 (a row that fits, with exact_top):
	 * not replayed, its compute alone (floor_s) being slower than
	 * exact_top rows that were; only its memory figures are set */
	int timed;
	double floor_s;
	sl_estimate est;
	double tokens_per_s;
	double model_flops_per_dev; /* the model's FLOPs per step / step time / devices */
	double hw_flops_per_dev;    /* the GEMM FLOPs executed per step / step time / devices */
	double mfu, hfu;            /* those over the device's peak rate */
	double comm_share;          /* mean communication time over the step time */
	double exposed_share;       /* of it, what the compute waited for (not hidden) */
	sl_plan_path tp, pp, dp;
} sl_plan_row;

typedef struct sl_plan {
	sl_plan_spec spec;
	sl_plan_row *rows; /* fitting rows by step time (the untimed after them, by
	                    * their floors), then the rejected by peak memory */
	int n, nfit;
	int nuntimed;       /* rows that fit but were not timed (exact_top) */
	double model_flops; /* per step, forward and backward GEMMs (sl_model_step_flops) */
} sl_plan;

/* Enumerate, evaluate and rank.  When no layout is valid at all, or none
 * fits, fails with SL_EINVAL and one line saying what is missing (the plan
 * still holds the rejected rows in the second case). */
int sl_plan_run(const sl_plan_spec *s, sl_plan *out, sl_err *err);
void sl_plan_free(sl_plan *p);

/* Step times are ranked to 12 significant digits: replays that add the
 * same times in another order differ only in rounding. */
double sl_plan_time_key(double seconds);

/* "tp=8 pp=4 dp=2 1f1b m=16 sp z1 tp-dp-pp" */
char *sl_plan_layout_name(const sl_layout *l, char *buf, size_t n);
/* The same, the interleaved schedule as its "v=4" alone (a narrow column). */
char *sl_plan_layout_brief(const sl_layout *l, char *buf, size_t n);

/* "tp,dp": the groups of r whose traffic crosses nodes; "-" for none. */
char *sl_plan_across(const sl_plan_row *r, char *buf, size_t n);
/* Does any group of r's layout cross nodes (sl_plan_across is not "-")? */
int sl_plan_crosses(const sl_plan_row *r);

/* A few sentences on why rows[0] wins, drawn from the figures: against the
 * runner-up (what differs, and which link its traffic crosses, how much
 * slower that link is), and against the same layout with its TP group on
 * the other side of the node boundary when there is one. */
void sl_plan_explain(const sl_plan *p, char *buf, size_t n);

/* The runner-up: the first row after the best that is not the best but
 * for ZeRO-1 (what the explanation compares with); -1 when none. */
int sl_plan_runner_up(const sl_plan *p);

/* The row of the same layout as rows[i] but with its mesh order changed
 * so that the TP group sits across nodes (want_inter = 1) or inside one
 * (0), the fastest such; -1 when the plan has none. */
int sl_plan_tp_moved(const sl_plan *p, int i, int want_inter);

#endif
