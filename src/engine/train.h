/* SPDX-License-Identifier: MIT */
/* train.h - training steps of the model under tensor, pipeline and data
 * parallelism and their combinations, with accounting.
 *
 * A layout puts t*p*d devices on a mesh.  Device ids follow the mesh order
 * (fastest-varying axis first); the default "tp-dp-pp" (Megatron-LM's) is
 *     id = tp + t * (dp + d * pp)
 * so a TP group is t consecutive devices (one node when t = devices per
 * node), DP groups stride by t, and pipeline stages by t*d.
 *
 * Tensor parallel (Megatron): fc1 and QKV column-parallel (QKV by heads),
 * fc2 and the output projection row-parallel, one all-reduce of b*s*h
 * values per sub-block forward and one backward; the row-parallel biases
 * are replicated and added once after the reduction.  With sequence
 * parallelism each all-reduce becomes a reduce-scatter (of rows) plus an
 * all-gather, the residual stream is split by rows, and the replicated
 * biases' gradients are all-reduced over the TP group once per step.
 * Pipeline parallel: L blocks in p stages (v chunks per device when
 * interleaved); activations and their gradients go by send/recv.  Data
 * parallel: replica r trains on its slice of the batch; gradients are
 * all-reduced once per step (each replica's are already scaled by the
 * global batch, so the sum is the average), or with ZeRO-1 reduce-scattered
 * to the owner of each slice of the optimizer state, which updates it and
 * all-gathers the parameters.
 *
 * Time: compute is the GEMMs (element-wise work is recorded, and charged
 * at its CPU time in measured timing, but costs no emulated time in model
 * timing, as in the usual model-FLOPs convention).  Every step starts with
 * all devices at the same emulated time and ends when the last one is done. */
#ifndef SL_TRAIN_H
#define SL_TRAIN_H

#include <stddef.h>
#include <stdint.h>

#include "cluster.h"
#include "coll.h"
#include "model.h"
#include "schedule.h"

typedef enum sl_axis { SL_AXIS_TP, SL_AXIS_PP, SL_AXIS_DP, SL_NAXES } sl_axis;

/* Activation recomputation (Korthikanti et al. 2022, as Megatron-LM sets
 * it): none; selective, the attention core's forward (scores, softmax,
 * dropout and the product with V, as Megatron-LM's checkpointed core
 * attention) run again in the backward pass instead of keeping the s x s
 * probabilities; full,
 * only each block's input kept, the block's forward run again before its
 * backward (its tensor-parallel collectives too). */
typedef enum sl_recompute {
	SL_RECOMPUTE_NONE,
	SL_RECOMPUTE_SELECTIVE,
	SL_RECOMPUTE_FULL,
	SL_RECOMPUTE_N
} sl_recompute;

const char *sl_recompute_name(sl_recompute r);
int sl_recompute_parse(const char *s, sl_recompute *out);

/* How the attention core runs: materialized, the scores and probabilities
 * of every head in device memory and the softmax as its own kernel (as
 * Megatron-LM in 2021); flash, FlashAttention's one fused kernel per pass
 * (Dao et al. 2022), the s x s matrices only on chip, the backward pass
 * computing them again (so selective recomputation has nothing left to
 * save).  The values are the same: only time and memory differ. */
typedef enum sl_attention { SL_ATTN_MATERIALIZED, SL_ATTN_FLASH, SL_ATTN_N } sl_attention;

const char *sl_attention_name(sl_attention a);
int sl_attention_parse(const char *s, sl_attention *out);

/* How the L layers fall on the p pipeline stages (sl_layout.stages):
 * even, L/p each and the first L%p stages one more (the default); ends,
 * the middle stages ceil(L/p) each and the deficit taken off the first and
 * the last stage alternately, which also hold the embedding and the LM
 * head (Llama 3 405B's 126 layers on 16 stages: 7, 8, ..., 8, 7, Dubey et
 * al. 2024, arXiv 2407.21783, section 3.3.2; Megatron-LM's
 * --decoder-first-pipeline-num-layers and --decoder-last-pipeline-num-layers);
 * list, stage_list's counts, one a stage. */
typedef enum sl_stage_rule {
	SL_STAGES_EVEN,
	SL_STAGES_ENDS,
	SL_STAGES_LIST,
	SL_STAGES_N
} sl_stage_rule;
/* The most stages a list can name (a rule covers any pp). */
#define SL_MAX_STAGE_LIST 128

typedef struct sl_layout {
	int tp, pp, dp;
	sl_sched schedule;
	int chunks;           /* v: model chunks per device (interleaved only; 1 otherwise) */
	sl_stage_rule stages; /* how the layers fall on the stages */
	int stage_n;          /* SL_STAGES_LIST: the counts named (sl_layout_check wants pp) */
	unsigned short stage_list[SL_MAX_STAGE_LIST]; /* SL_STAGES_LIST: stage s's layers */
	int microbatches;                             /* m: micro-batches per replica and step */
	int seq_parallel;                             /* sequence parallelism inside TP groups */
	/* ZeRO stage over the DP group (Rajbhandari et al. 2020): 0 none; 1
	 * Adam's state sharded; 2 gradients too, reduce-scattered unit by
	 * unit after each micro-batch's backward (FSDP's SHARD_GRAD_OP); 3
	 * parameters too, each unit all-gathered before each micro-batch's
	 * forward and again before its backward, freed after use (FSDP's
	 * FULL_SHARD).  Stages 2 and 3 shard unit by unit: each block's split
	 * tensors, and the root (embedding, head, replicated tensors), which
	 * stage 3 gathers once a step and keeps, as FSDP2 keeps its root. */
	int zero;
	/* ZeRO-3: 0 frees each block's gathered parameters after its forward
	 * and gathers them again for its backward (FSDP's
	 * reshard_after_forward=True); 1 keeps them from the micro-batch's
	 * forward to its backward (False): one gather less, more memory. */
	int zero_keep;
	/* Context parallelism (Liu et al. 2023's ring attention, as Megatron-Core
	 * and Llama 3 run it): cp devices share every sequence of a replica,
	 * each holding two of its 2 cp chunks (chunk i and chunk 2 cp - 1 - i,
	 * which balances the causal mask's work); attention brings them every
	 * chunk's keys and values, by cp_comm.  In the mesh the cp devices of a
	 * replica are consecutive along the dp axis (Megatron-Core's tp-cp-dp-pp
	 * under the default order), and gradients and ZeRO's shards span dp x cp
	 * (Megatron-Core's data-and-context group). */
	int cp;
	int cp_comm; /* SL_CP_RING or SL_CP_ALLGATHER */
	/* Communication beside compute (sl_dev_stream), as PyTorch DDP and FSDP
	 * and Megatron-LM run it: the last micro-batch's data-parallel gradient
	 * all-reduce in buckets of bucket_bytes while its backward goes on
	 * (per model chunk); ZeRO-2/3's reduce-scatters after each block's
	 * backward, and ZeRO-3's gathers of the next block during this one's.
	 * SL_OVERLAP_AUTO: on when the machine is realistic, off on the ideal
	 * one (whose closed forms have none). */
	int overlap;
	double bucket_bytes; /* 0: 25 MiB, PyTorch DDP's default (bucket_cap_mb) */
	sl_recompute recompute;
	sl_attention attention;
	sl_axis order[SL_NAXES]; /* mesh order, fastest-varying first */
	sl_algo algo;            /* collective algorithm */
} sl_layout;

enum { SL_OVERLAP_AUTO, SL_OVERLAP_ON, SL_OVERLAP_OFF, SL_OVERLAP_N };
/* How context parallelism moves keys and values: a ring of cp - 1 hops,
 * each beside the attention on the chunks already held (ring attention);
 * or one all-gather before the attention and a reduce-scatter of their
 * gradients after its backward (Llama 3's long-context stage). */
enum { SL_CP_RING, SL_CP_ALLGATHER, SL_CP_N };
const char *sl_cp_comm_name(int c);
/* "yes" (0: ZeRO-3 frees after the forward) or "no" (1: keeps them). */
const char *sl_reshard_fwd_name(int keep);
int sl_cp_comm_parse(const char *s, int *out);
/* The data-parallel axis's extent in the mesh: dp x cp. */
int sl_layout_dpc(const sl_layout *l);
/* The devices the layout takes: tp x cp x pp x dp. */
int sl_layout_devices(const sl_layout *l);
const char *sl_overlap_name(int o);
#define SL_BUCKET_DEFAULT (25.0 * 1024 * 1024)

/* One device, 1F1B, one micro-batch, order tp-dp-pp, ring. */
void sl_layout_default(sl_layout *l);
/* Every way a layout can be wrong for this model and device count gets one
 * line saying what to change. */
int sl_layout_check(const sl_model_spec *m, const sl_layout *l, int ndev, sl_err *err);

/* "tp-dp-pp" and the other five permutations. */
int sl_mesh_order_parse(const char *s, sl_axis order[SL_NAXES]);
const char *sl_mesh_order_name(const sl_axis order[SL_NAXES], char *buf, size_t n);
/* dp here is the device's place on the data-parallel axis, 0 to dp x cp - 1:
 * replica dp / cp, context rank dp % cp. */
int sl_mesh_device(const sl_layout *l, int tp, int pp, int dp);
void sl_mesh_coords(const sl_layout *l, int dev, int *tp, int *pp, int *dp);
/* sl_ring_stripes of the hop from dev to the next member of its TP ring
 * (axis 0), DP ring (1, its dp x cp devices) or CP ring (2) under l's
 * algorithm: a mesh ring's device ids
 * grow with its rank, so each node's members are one run, found by walking
 * from the hop (no count over the whole ring). */
double sl_mesh_ring_stripes(const sl_layout *l, const sl_cluster_config *cfg, int dev, int axis);

/* "even", "ends" or a comma-separated list of counts (one a stage, summing
 * to the layers; the sum and the count of stages are sl_layout_check's):
 * set l's stages.  SL_EINVAL with one line saying which count is wrong. */
int sl_stage_layers_parse(const char *s, sl_layout *l, sl_err *err);
/* Set dst's stages as src's. */
void sl_layout_copy_stages(sl_layout *dst, const sl_layout *src);
/* "even", "ends" or the list, as sl_stage_layers_parse reads it. */
const char *sl_stage_layers_name(const sl_layout *l, char *buf, size_t n);
/* The layers pipeline stage s holds under l's rule (below 1 when the rule
 * cannot fill it; sl_layout_check refuses that). */
int sl_layout_stage_layers(const sl_model_spec *m, const sl_layout *l, int s);
/* Does every stage hold the same number of layers? */
int sl_layout_stages_even(const sl_model_spec *m, const sl_layout *l);

/* Which blocks pipeline stage s holds as its local chunk c: [*first, *first + *count).
 * A stage's layers split over its v chunks as evenly as can be, the first
 * chunks one more; model chunk c*p + s follows c*p + s - 1 in the model. */
void sl_layout_blocks(const sl_model_spec *m, const sl_layout *l, int s, int c, int *first,
                      int *count);
/* Sequences [*first, *first + *count) of the global batch that replica r's
 * micro-batch j holds. */
void sl_layout_microbatch(const sl_model_spec *m, const sl_layout *l, int r, int j, int *first,
                          int *count);

/* ---- accounting ---- */

typedef enum sl_traffic_kind {
	SL_TR_TP_ALLREDUCE,     /* activations (and, with SP, replicated biases' gradients) */
	SL_TR_TP_ALLGATHER,     /* sequence parallelism; a received stage tensor (scatter/gather) */
	SL_TR_TP_REDUCESCATTER, /* sequence parallelism */
	SL_TR_PP_SENDRECV,      /* activations and their gradients between stages */
	SL_TR_DP_ALLREDUCE,     /* gradients */
	SL_TR_DP_REDUCESCATTER, /* gradients, ZeRO-1 */
	SL_TR_DP_ALLGATHER,     /* parameters, ZeRO-1 */
	SL_TR_CP_KV,            /* context parallelism: keys, values and their gradients */
	SL_TR_NKINDS
} sl_traffic_kind;

const char *sl_traffic_name(sl_traffic_kind k);

typedef struct sl_train_dev {
	int tp, pp, dp, cp;
	/* memory by category (bytes); activations are what is kept for the
	 * backward pass; workspace is everything transient */
	uint64_t params_bytes, grads_bytes, optimizer_bytes;
	uint64_t act_peak_bytes, workspace_peak_bytes;
	uint64_t mem_peak_bytes; /* all of it, as the engine counted it */
	/* per step (means over the run) */
	double compute_s, comm_s, idle_s, flops;
	double comm_exposed_s; /* of comm_s, what the compute waited for (not hidden beside it) */
	double pipe_busy_s;    /* compute + communication during the pipeline phase */
	uint64_t sent[SL_TR_NKINDS], received[SL_TR_NKINDS];
} sl_train_dev;

typedef struct sl_train_report {
	int steps;
	long first_step;        /* Adam steps done before this run */
	double *losses;         /* steps values, the loss before each update */
	double step_s;          /* emulated time per step (mean) */
	double pipeline_s;      /* from the step's start to the last backward */
	double ideal_s;         /* the busiest device's compute + communication in that phase */
	double bubble_fraction; /* (pipeline_s - ideal_s) / ideal_s */
	double idle_fraction;   /* idle share of all devices' step time */
	double flops_per_step;  /* all devices' GEMM FLOPs */
	int ndev;
	sl_train_dev dev[SL_MAX_DEVICES];
} sl_train_report;

void sl_train_report_free(sl_train_report *r);

/* ---- the training state ---- */

typedef struct sl_train sl_train;

/* Check the layout, split the model's parameters over the devices, and set
 * them to the model's initial values (Adam's state zero, step 0). */
sl_train *sl_train_create(const sl_model_spec *m, const sl_layout *l, int ndev, sl_err *err);
/* The same without any values (shards, schedule and shapes only): what a
 * timing-only run of a model too large for the host needs.  It runs only
 * on a timing-only cluster; gather and scatter refuse it. */
sl_train *sl_train_create_timing_only(const sl_model_spec *m, const sl_layout *l, int ndev,
                                      sl_err *err);
int sl_train_has_values(const sl_train *tr);
/* What the host holds for a full run: the reference's state and
 * activations, and every device's (an upper bound; the command line and
 * the TUI check it against the host's memory). */
double sl_train_host_bytes(const sl_model_spec *m, const sl_layout *l);
void sl_train_destroy(sl_train *tr);
const sl_model_spec *sl_train_model(const sl_train *tr);
const sl_layout *sl_train_layout(const sl_train *tr);
/* The layout as its checkpoints record it: the same devices, with the
 * dp x cp devices that share a gradient as dp replicas and no cp (context
 * parallelism splits tokens, never a tensor or its optimizer state). */
const sl_layout *sl_train_store_layout(const sl_train *tr);

/* Run `steps` training steps on c (whose device count must match),
 * carrying on from the state's step.  Fills rep (free it with
 * sl_train_report_free).  A device that runs out of memory fails the run
 * with the engine's message.  On a timing-only cluster the same schedule,
 * collectives, clocks, traffic and memory figures come out, the values are
 * left as they were and the losses are NaN. */
int sl_train_run(sl_train *tr, sl_cluster *c, int steps, sl_train_report *rep, sl_err *err);

/* Called as each step of sl_train_run (and of a checkpointed run) ends on
 * every device, in step order, on a device thread: the step's number from
 * the training's start (first is 0), its mean loss (NaN in a timing-only
 * run) and its emulated time.  So a front end can show a long run's steps
 * as they end; fn must be quick and thread-safe (it blocks the device). */
typedef void (*sl_train_step_fn)(void *arg, long step, double loss, double step_s);
void sl_train_on_step(sl_train *tr, sl_train_step_fn fn, void *arg);

/* Steps done: Adam's step count, and the next batch's index. */
long sl_train_step(const sl_train *tr);
void sl_train_set_step(sl_train *tr, long step);

/* What a device holds.  Its parameters, gradients and (without ZeRO-1) Adam
 * moments are flat arrays of n floats, made of shards: the part of a model
 * tensor that the device's TP rank owns, stored densely in the tensor's own
 * row-major order (a column shard of an r x c matrix is r x len, a row
 * shard len x c).  The flat array is cut into nunit units, unit u
 * [ulo[u], ulo[u+1]) (one unit below ZeRO-2).  With ZeRO the moments cover
 * only this device's slice of each unit (sl_train_unit_slice), one after the
 * other (mom[0] is the first slice's first element's); under ZeRO-3 the
 * parameters outside those slices are stale between steps. */
typedef struct sl_shard {
	int tensor;     /* index for sl_model_tensor() */
	int start, len; /* along the tensor's split axis (axis 0's whole range when replicated) */
	size_t offset;  /* into the device's flat arrays */
	size_t count;
	int primary; /* this device is the one copy to save (dp 0, and tp 0 if replicated) */
} sl_shard;

typedef struct sl_dev_state {
	float *params, *grads, *mom, *var;
	size_t n;
	int zero, dp, dp_rank; /* the layout's stage, DP degree, and this device's DP rank */
	int nunit;
	const size_t *ulo; /* nunit + 1 */
	size_t nown;       /* elements of the moments */
	const sl_shard *shards;
	int nshards;
} sl_dev_state;

sl_dev_state sl_train_dev_state(sl_train *tr, int dev);
/* DP rank r's slice of unit u of a device state like st: [*lo, *lo + *cnt)
 * of the flat array (the whole unit without ZeRO). */
void sl_train_unit_slice(const sl_dev_state *st, int u, int r, size_t *lo, size_t *cnt);

/* The whole model in canonical form (sl_model.h's flat order): gather
 * parameters and Adam moments from the devices that hold them, or scatter
 * them to every device that holds a copy.  NULL skips an array. */
int sl_train_gather(const sl_train *tr, float *params, float *mom, float *var);
int sl_train_scatter(sl_train *tr, const float *params, const float *mom, const float *var);

/* ---- prediction ---- */

typedef struct sl_train_prediction {
	double step_s, pipeline_s, ideal_s, bubble_fraction;
	double compute_s[SL_MAX_DEVICES], comm_s[SL_MAX_DEVICES];
} sl_train_prediction;

/* The analytic model of one step on c's devices and links: FLOPs over the
 * device rate, alpha-beta transfers, collectives as the exchanges their
 * algorithm makes, and the schedule's dependencies.  In model timing with
 * ring collectives it equals what the emulation produces. */
int sl_train_predict(const sl_train *tr, const sl_cluster *c, sl_train_prediction *out,
                     sl_err *err);

/* ---- estimates without a cluster (the planner's) ---- */

/* How much of the mesh the replay of sl_train_estimate covers. */
typedef enum sl_est_method {
	SL_EST_AUTO,    /* the cheapest that is exact for this layout and topology */
	SL_EST_STAGE,   /* one device per pipeline stage */
	SL_EST_SLICE,   /* of one data-parallel replica, the TP ranks of one period of the
	                   TP ring's links (all of them at worst) */
	SL_EST_REPLICA, /* every device of one replica per kind of replica (replicas
	                   whose TP rings and pipeline hops cross the same links) */
	SL_EST_FULL,    /* every device */
} sl_est_method;

/* One step's figures, as a run in model timing with ring collectives
 * reports them (sl_train_report). */
typedef struct sl_estimate {
	sl_est_method method; /* what was replayed */
	int replayed;         /* how many devices */
	double step_s, pipeline_s, ideal_s, bubble_fraction, idle_fraction;
	double flops_per_step;    /* all devices' GEMM FLOPs */
	double compute_s, comm_s; /* means over the devices */
	double comm_exposed_s;    /* of comm_s, the mean the compute waited for */
	double comm_max_s;        /* the device that communicates most */
	/* the device with the highest peak memory, and its categories */
	int peak_dev;
	uint64_t mem_peak_bytes, params_bytes, grads_bytes, optimizer_bytes;
	uint64_t act_peak_bytes, workspace_peak_bytes;
	/* per kind, the most any device sends (receives) in a step */
	uint64_t sent[SL_TR_NKINDS], received[SL_TR_NKINDS];
} sl_estimate;

/* The step of model m under layout l on a cluster of cfg's figures (class
 * links, cfg->devices devices), without a cluster, threads or values: the
 * same step functions recorded and replayed as sl_train_predict does, on
 * as few devices as the mesh's symmetry allows (how = SL_EST_AUTO), which
 * is what makes 1024 devices cheap.  Any method gives the same figures
 * when it applies; a method that does not apply falls to the next one.
 * Invalid layouts are refused with sl_layout_check's message. */
int sl_train_estimate(const sl_model_spec *m, const sl_layout *l, const sl_cluster_config *cfg,
                      sl_est_method how, sl_estimate *out, sl_err *err);

/* The same in two halves, for many mesh orders or topologies of one
 * layout: the recording (which does not depend on either, and holds the
 * memory figures), then a replay per order (NULL: the layout's own) and
 * set of link figures. */
typedef struct sl_est_rec sl_est_rec;
/* literal = 0 records each chunk's forward and backward once per
 * micro-batch shape and reuses it (what makes many micro-batches cheap);
 * literal = 1 records every micro-batch's work in full (the reference the
 * tests compare with; SL_EST_FULL estimates use it). */
/* hw: the device figures (precision; and, when its efficiency is
 * realistic, its kernels' times at their shapes, device.h) the replays use
 * whatever their cfg says; NULL: fp32, ideal. */
int sl_est_record(const sl_model_spec *m, const sl_layout *l, int ndev, int literal,
                  const sl_cluster_config *hw, sl_est_rec **out, sl_err *err);
void sl_est_rec_memory(const sl_est_rec *r, sl_estimate *out);
int sl_est_replay(const sl_est_rec *r, const sl_axis order[SL_NAXES], const sl_cluster_config *cfg,
                  sl_est_method how, sl_estimate *out, sl_err *err);
/* A floor under the step time of any replay of r on cfg's rates (any mesh
 * order, any links): its busiest device's compute alone, or the
 * pipeline's passes one after another (the fill, the busiest stage's passes
 * and the drain) when that is longer. */
double sl_est_compute_floor(const sl_est_rec *r, const sl_cluster_config *cfg);
void sl_est_rec_free(sl_est_rec *r);

/* One step of the same model on one device of c's kind, its attention
 * core run as like's (NULL: the default): the baseline of speedup.  Model timing: its
 * prediction (on the ideal machine, the executed GEMM FLOPs over the rate).  Measured timing: a
 * real one-device step when it fits in a device's memory
 * (*estimated = 0), else the FLOPs over the rate (*estimated = 1). */
int sl_train_single_step_s(const sl_model_spec *m, const sl_layout *like,
                           const sl_cluster_config *cfg, double *out, int *estimated, sl_err *err);

#endif
