/* SPDX-License-Identifier: MIT */
/* train_internal.h - what the training step's files share (train.c: the
 * state and the run; train_mesh.c: layouts and the mesh; train_step.c: one
 * device's step, as block functions over a handful of wrappers;
 * train_est.c: the prediction, recorded and replayed).  Nobody else sees
 * it. */
#ifndef SL_TRAIN_INTERNAL_H
#define SL_TRAIN_INTERNAL_H

#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include "coll.h"
#include "schedule.h"
#include "train.h"
#include "xfer.h"

#define FL sizeof(float)
#define MAX_CHUNKS 64

struct blk {
	int index;  /* global block */
	int ah, qc; /* local query heads, local QKV columns ((a/G + 2) d per local group) */
	int h0;     /* the first local query head's global index */
	int ft;     /* local MLP width: fc2 rows (fc1 columns are twice that for SwiGLU) */
	int zc;     /* local fc1 columns */
	size_t w[SL_T_PER_BLOCK]; /* where each tensor's shard starts in the flat arrays */
};

struct dstate {
	int id, tp, pp, dp; /* dp: the place on the dp axis (replica dp / cp, context rank cp) */
	int cp;
	int built;
	sl_group *tpg, *dpg, *cpg; /* dpg: the dp x cp devices that share a gradient */
	struct blk *blk;
	int cfirst[MAX_CHUNKS + 1]; /* local chunk c's blocks: blk[cfirst[c] .. cfirst[c+1]) */
	size_t n;
	size_t rep_lo, rep_n; /* the replicated biases, kept together at the end */
	/* ZeRO's units (sl_dev_state's): [ulo[u], ulo[u+1]); under ZeRO-2 and 3
	 * unit u < nblocks is block u's split tensors, the last the root */
	int nunit;
	size_t *ulo;
	size_t *blo;  /* nb + 1: where each local block's split tensors start; blo[nb] their end */
	size_t *uown; /* nunit + 1: where this device's slice of unit u starts in its
	                 moments; uown[nunit], their length (n without ZeRO) */
	float *P, *G, *M, *V;
	float
	    *GS; /* ZeRO-2 and 3: the gradient's slices, summed over micro-batches (uown[nunit]) */
	sl_shard *shards;
	int nshards;
	sl_pp_action *acts;
	int nacts;
};

struct sl_train {
	sl_model_spec m;
	sl_layout l;
	/* l as checkpoints see it: dp x cp replicas of the parameters, no cp
	 * (context parallelism splits tokens, never a tensor or its state) */
	sl_layout store;
	int ndev, v, nchunks;
	int values; /* 0: shapes only (sl_train_create_timing_only) */
	long step;
	struct dstate *dev;       /* ndev */
	sl_train_step_fn on_step; /* sl_train_on_step's, or NULL */
	void *on_step_arg;
};

struct bstash {
	float *xa, *qkv, *p, *o; /* attention: input, Q K V, probabilities, heads' outputs */
	float *pd, *mask;        /* attention dropout: dropped probabilities, the mask (bytes) */
	float *xm, *z, *a;       /* MLP: input, fc1 output, GeLU output */
	float *xin;              /* full recomputation: the block's input, all it keeps */
	float *hmask[2];  /* hidden dropout: attention's and the MLP's output masks (bytes) */
	float *xla, *xlm; /* pre-norm: the norms' inputs (the device's rows; xa and xm
	                     hold their outputs) */
	float *wfull;     /* ZeRO-3: the block's gathered parameters (accounted, held in P) */
	float *lse;       /* context parallelism: each query row's log-sum-exp of its scores */
};

struct cstash {
	struct bstash *b;
	float *dyl; /* the loss gradient, on the last chunk */
	/* with a vocabulary, on the last chunk: the final norm's input, the LM
	 * head's input (the device's rows), its fp32 softmax (r x V/t); on the
	 * first, the embedding dropout's mask (bytes) */
	float *hl, *hx, *lg, *em;
};

struct alloc {
	float *p;
	size_t bytes;
	int cat;
	int real; /* p is the host's (malloc), not a handle */
};

enum { CAT_ACT, CAT_WS };

struct drun {
	struct cstash *st;  /* m * v */
	struct bstash *bst; /* backing store of st[].b */
	struct alloc *live; /* every buffer held, so a failed run frees them all */
	int nlive, caplive;
	uint64_t act_cur, act_peak, ws_cur, ws_peak;
	uint64_t live_cur, live_peak; /* both together: what the engine's peak adds up */
	uint64_t sent[SL_TR_NKINDS], recv[SL_TR_NKINDS];
	uint64_t reserved;
	uintptr_t handles; /* timing-only and recording: buffers handed out */
	double *loss;      /* per step: this device's sum of squared errors */
	/* per step */
	double *t0, *pipe_end, *pipe_busy, *t_end, *compute, *comm, *flops;
	double *exposed; /* communication the compute stream waited for */
	double *side;    /* compute on a side stream (beside the compute stream's) */
};

struct run {
	sl_train *tr;
	sl_cluster *c;
	int steps;
	/* With on_step: per step, the devices that finished it; the next
	 * step to report, under mu (steps are reported in order). */
	atomic_int *done;
	int next;
	pthread_mutex_t mu;
	double clk[SL_MAX_DEVICES];
	struct drun dr[SL_MAX_DEVICES];
};

/* A message of the pipeline: peer, size, which tensor, and its buffer. */
struct pmsg {
	int peer;
	size_t n;   /* floats sent: the whole tensor, or this rank's slice of it */
	size_t off; /* where they start in buf (floats) */
	int key;
	float *buf;
	sl_ev_p2p info; /* what it is, for the events of both ends */
};

#define MAX_UNIT_MSGS 4

/* The recording of one device's step, which the prediction replays: the
 * same step functions run with no device and append what they would do. */
enum { PO_COMPUTE, PO_COLL, PO_XFER, PO_PIPE_END, PO_BARRIER, PO_ACTION, PO_WAIT, PO_MARK };

/* Event slots (kctx.ev, the prediction's pdev.ev); a PO_WAIT of slot
 * EV_PP_RECV waits for the last exchange's receives (sl_dev_wait_spans). */
enum { EV_SLOTS = 6, EV_PP_RECV = EV_SLOTS };

struct pop {
	int type;
	double flops;  /* PO_COMPUTE, PO_ACTION: GEMM FLOPs */
	double sec;    /* the same work's realistic time (device.h); 0 when ideal */
	sl_coll_op op; /* PO_COLL: the collective, its group, kind and size */
	int dp_group;
	int cp_group; /* the context-parallel group's (dp_group 0) */
	sl_traffic_kind kind;
	size_t count;
	int rows;       /* > 0: blocks of whole rows of h (sequence parallelism) */
	int m0, ns, nr; /* PO_XFER: its sends msg[m0..m0+ns), then its receives */
	int tm;         /* PO_ACTION: the template it runs */
	int stream;     /* PO_COMPUTE, PO_COLL, PO_XFER: the stream it runs on; PO_WAIT: the stream
	                   the compute stream waits for; PO_MARK: the stream an event marks */
	int slot;       /* PO_MARK: the event's slot; PO_WAIT: the event waited for, -1: the
	                   whole stream; PO_XFER: 1 for an exchange's first round */
};

/* A message of a recorded exchange: the peer by its pipeline stage (it
 * has the same TP and DP ranks), so a recording holds for any mesh order. */
struct xmsg {
	int stage, key;
	size_t n;
};

struct plist {
	struct pop *op;
	int n, cap;
	struct xmsg *msg;
	int nmsg, capmsg;
};

/* Every micro-batch of one shape does the same work in a chunk: the
 * forward (or backward) of chunk c for micro-batches of nb sequences is
 * recorded once, alone, as a template: its computes and collectives, and
 * what it does to the memory held (by category: activations, workspace,
 * and both), measured from its start with its input buffer held. */
enum { MEM_ACT, MEM_WS, MEM_LIVE };

struct tmpl {
	int bwd, chunk, nb;
	int last; /* the last micro-batch's backward, which sends gradient buckets */
	struct plist pl;
	int64_t net[3]; /* held at its end, less at its start */
	uint64_t up[3]; /* the most held above the start at any point */
	size_t out;     /* floats of the buffer it hands on (workspace), 0: none */
	double flops, sec;
};

struct tstore {
	struct tmpl *t;
	int n, cap;
};

struct kctx {
	sl_dev *d; /* NULL: record the work into pl instead of doing it */
	struct plist *pl;
	struct tstore *ts; /* recording with templates (NULL: every micro-batch in full) */
	double times;      /* recording: how many identical copies the next GEMMs stand for */
	const sl_train *tr;
	struct dstate *ds;
	struct drun *dr;
	int dry;         /* timing-only cluster: account everything, compute nothing */
	long step;       /* the batch index */
	int ks;          /* the step's index in this run */
	sl_ev_work work; /* what the next GEMM is (WORK) */
	/* The device's figures: the cluster's on a device, the estimate's when
	 * recording (NULL: fp32, ideal).  Recording, a realistic machine's
	 * kernel times are taken at their shapes (device.h). */
	const sl_cluster_config *hw;
	int realistic; /* hw's efficiency is SL_EFF_REALISTIC */
	double eb;     /* emulated bytes of an activation or gradient element */
	int batch;     /* the next kernels are each one of this many fused (attention heads) */
	int fused;     /* the next kernels are parts of one fused attention kernel */
	double share;  /* in it, the share of each product's tiles executed (causal mask) */
	int stream;    /* the stream the next operations run on (sl_dev_stream) */
	int overlap;   /* the layout's overlap on this machine */
	size_t bk_lo, bk_hi; /* the data-parallel bucket being filled: [bk_lo, bk_hi) of G */
	/* on a device: events (sl_dev_stream_now): 0, 1 ZeRO-3's gathers; 2, 3
	 * context parallelism's ring of blocks (and TP's dX), 4, 5 its gradients */
	double ev[EV_SLOTS];
	sl_span rsp[MAX_UNIT_MSGS]; /* the receives of the exchange under way */
	int nrsp;
	sl_err *err;
};

/* Emulated bytes of a device's parameter, gradient and optimizer arrays per
 * element: fp32 keeps 4, 4 and Adam's two moments (8); bf16 mixed precision
 * keeps bf16 weights and gradients (2, 2) and fp32 master weights and
 * moments (12). */
double trn_param_elem_bytes(const sl_cluster_config *hw);
double trn_opt_elem_bytes(const sl_cluster_config *hw);
/* Set k's hw, realistic and eb. */
void trn_set_hw(struct kctx *k, const sl_cluster_config *hw);
/* What device ds holds all step, in elements: under ZeRO-2 and 3 its
 * slices of the blocks and the whole root (its gradient summed over the
 * micro-batches; under ZeRO-3 its parameters gathered for the step); n
 * otherwise.  And the bytes of its parameters, gradients and Adam state, were
 * it DP rank dp_rank (a recording's device stands in for others). */
size_t trn_held(const sl_train *tr, const struct dstate *ds);
void trn_state_bytes(const sl_train *tr, const struct dstate *ds, int dp_rank,
                     const sl_cluster_config *hw, uint64_t *params, uint64_t *grads, uint64_t *opt);
/* Device ds's own slice of unit u (sl_train_unit_slice's). */
void trn_own_slice(const sl_train *tr, const struct dstate *ds, int u, size_t *lo, size_t *cnt);

/* Across the files: a device's state (train.c), its step and the run's
 * device program (train_step.c), the plan check (train_est.c). */
int trn_train_prog(sl_dev *d, void *arg, sl_err *err);
/* Device id finished step s of the run: the last of them reports it. */
void trn_step_done(struct run *R, int id, int s);
int trn_build_dev(sl_train *tr, struct dstate *ds, sl_err *err);
void trn_free_dev(struct dstate *ds);
void trn_free_all(struct kctx *k);
int trn_pipeline(struct kctx *k);
int trn_rec_mark(struct kctx *k, int type);
int trn_sync_and_update(struct kctx *k);
int trn_check_plan(const sl_train *tr, sl_err *err);

#endif
