/* SPDX-License-Identifier: MIT */
/* workload.h - the thing being run: a product, a lone collective, a
 * training step or a reshard.
 *
 * Each kind is one row of functions (sl_workload_ops, after nvtop's
 * gpu_vendor and tmux's window modes): check its options, say how many
 * devices it needs, run it on a cluster, predict its model time, and
 * describe it in one line.  The command line, the sandbox, the lesson
 * runner and the lesson screen all go through the row of the kind they
 * hold, so no front end tests flags to know what it runs. */
#ifndef SL_WORKLOAD_H
#define SL_WORKLOAD_H

#include <stddef.h>

#include "ckpt.h"
#include "cluster.h"
#include "coll.h"
#include "gemm.h"
#include "train.h"

typedef enum sl_wl_kind {
	SL_WL_PRODUCT,    /* Y = X W, sharded (gemm) */
	SL_WL_COLLECTIVE, /* one collective over every device, on random buffers */
	SL_WL_TRAIN,      /* training steps of a model under a layout */
	SL_WL_RESHARD,    /* a checkpoint read into another layout and written again */
	SL_WL_KINDS
} sl_wl_kind;

typedef struct sl_workload {
	sl_wl_kind kind;
	/* SL_WL_PRODUCT */
	sl_gemm_spec gemm;
	/* SL_WL_TRAIN: m under l for steps steps (0: one).  SL_WL_RESHARD: ck
	 * (whose model is m) read into l's devices, which then write their
	 * shards (into a scratch directory, removed after); the plans say who
	 * reads and writes what (events: op = chunk id).  ck and the plans
	 * belong to the caller. */
	sl_model_spec m;
	sl_layout l;
	int steps;
	const sl_ckpt *ck;
	const sl_ckpt_move *reads, *writes;
	int nreads, nwrites;
	/* SL_WL_COLLECTIVE: op by algo over count floats a device. */
	sl_coll_op op;
	sl_algo algo;
	size_t count;
} sl_workload;

/* What a run leaves beside the cluster's trace and statistics. */
typedef struct sl_wl_result {
	sl_gemm_result gemm;       /* a product's */
	sl_train_report trep;      /* a training run's: free with sl_wl_result_free */
	double loss;               /* its first step's loss */
	sl_train_prediction tpred; /* with a prediction asked: the analytic step */
	double single_s;           /* and the same step on one device */
	/* A reshard a caller ran itself (a lesson's): the checkpoint it read,
	 * still open, and who read and wrote what; all freed with the result. */
	sl_ckpt *ck;
	sl_ckpt_move *reads, *writes;
	int nreads, nwrites;
} sl_wl_result;

typedef struct sl_workload_ops {
	const char *name; /* "product", "collective", "training step", "reshard" */
	/* Can w run on devices devices?  A size that cannot be split says
	 * which and why. */
	int (*check)(const sl_workload *w, int devices, sl_err *err);
	/* How many devices w needs on a cluster configured as cfg. */
	int (*devices)(const sl_workload *w, const sl_cluster_config *cfg);
	/* Run w on c (with_prediction: a training step's analytic figures
	 * too); r may be NULL for nothing beyond the trace. */
	int (*run)(const sl_workload *w, sl_cluster *c, sl_wl_result *r, int with_prediction,
	           sl_err *err);
	/* The model-time estimate on c's links (a negative value: none). */
	double (*predict)(const sl_workload *w, const sl_cluster *c);
	/* One line for people. */
	void (*describe)(const sl_workload *w, int devices, char *buf, size_t n);
} sl_workload_ops;

const sl_workload_ops *sl_workload_ops_of(sl_wl_kind k);

/* A product of the spec, the other kinds zeroed. */
sl_workload sl_workload_product(const sl_gemm_spec *g);
/* The cluster w runs on: base with the devices it needs (one device: one
 * node). */
sl_cluster_config sl_workload_cluster(const sl_workload *w, const sl_cluster_config *base);
/* Check w on the devices it needs of base, make that cluster and run w on
 * it, which is returned (out NULL: destroyed). */
int sl_workload_run(const sl_workload *w, const sl_cluster_config *base, sl_cluster **out,
                    sl_wl_result *r, sl_err *err);
/* ops->run of w's kind. */
int sl_workload_exec(const sl_workload *w, sl_cluster *c, sl_wl_result *r, int with_prediction,
                     sl_err *err);
void sl_wl_result_free(sl_wl_result *r);

#endif
