/* SPDX-License-Identifier: MIT */
/* trace.h - the event trace: every operation of every device.
 *
 * Devices append to their own lists; readers (reports, the TUI) take a
 * snapshot, so drawing never races with the device threads. */
#ifndef SL_TRACE_H
#define SL_TRACE_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "status.h"

typedef enum sl_ev_kind {
	SL_EV_COMPUTE, /* a GEMM or element-wise work */
	SL_EV_SEND,    /* bytes leaving on link dev->peer */
	SL_EV_RECV,    /* bytes arriving from peer, copied */
	SL_EV_REDUCE,  /* bytes arriving from peer, summed in */
	SL_EV_WAIT,    /* blocked on a peer */
	SL_EV_WRITE,   /* bytes written to storage (a checkpoint chunk) */
	SL_EV_READ,    /* bytes read from storage */
	SL_EV_NKINDS
} sl_ev_kind;

/* The phase of a collective an exchange belongs to. */
typedef enum sl_coll_phase {
	SL_PHASE_NONE,
	SL_PHASE_RS,      /* reduce-scatter (a ring all-reduce's first half) */
	SL_PHASE_AG,      /* all-gather (its second half) */
	SL_PHASE_REDUCE,  /* toward a root, summing (a tree all-reduce's first half) */
	SL_PHASE_BCAST,   /* from a root (its second half) */
	SL_PHASE_GATHER,  /* blocks toward a root */
	SL_PHASE_SCATTER, /* blocks from a root */
	SL_PHASE_N
} sl_coll_phase;

/* What a collective's event is, in fields the engine fills where the work
 * is issued (coll.c): readers never parse the label, which is for people
 * and traces.  op is -1 for an event that is no collective's. */
typedef struct sl_ev_coll {
	signed char op;     /* sl_coll_op, or -1 */
	signed char algo;   /* sl_algo */
	signed char phase;  /* sl_coll_phase */
	short step, nsteps; /* the logical step of the collective (0-based) and their count:
	                       the same for every device of the group */
	short first, count; /* the blocks (one per group rank, in rank order) the message
	                       moves: count of them from first, wrapping; count 0: none */
	short p;            /* the group's size */
	short leader;       /* the group's first device: with seq, names the collective */
	int seq;            /* the device's how-many-th collective of the run (from 0) */
} sl_ev_coll;

/* A training step's compute, in fields (train.c fills them; the label
 * says the same for people: "F b1 fc1", "B b0 qkv dW", "F b2 scores h3"). */
typedef enum sl_work_pass { SL_PASS_NONE, SL_PASS_FWD, SL_PASS_BWD } sl_work_pass;
typedef enum sl_work_part {
	SL_PART_NONE,
	SL_PART_QKV,    /* the QKV projection */
	SL_PART_SCORES, /* attention scores Q K^T (one head) */
	SL_PART_PV,     /* softmax times V (one head) */
	SL_PART_PROJ,   /* the output projection */
	SL_PART_FC1,
	SL_PART_FC2,
	SL_PART_DP, /* backward of attention, one head: dP, dV, dQ, dK */
	SL_PART_DV,
	SL_PART_DQ,
	SL_PART_DK,
	SL_PART_HEAD, /* the LM head's product (vocabulary-parallel) */
	SL_PART_N
} sl_work_part;
typedef enum sl_work_grad { SL_GRAD_NONE, SL_GRAD_W, SL_GRAD_X } sl_work_grad;
typedef struct sl_ev_work {
	signed char pass; /* sl_work_pass; SL_PASS_NONE: no training compute */
	signed char part; /* sl_work_part */
	signed char grad; /* sl_work_grad: a backward GEMM's weight or input gradient */
	short block;      /* the transformer block (global index) */
	short head;       /* the device's own head index, or -1 */
} sl_ev_work;

/* A pipeline's point-to-point message, in fields (train_step.c fills them
 * where it builds the message; the label only says "trn_pipeline p2p"):
 * forward activations from a stage to the next or a backward gradient to
 * the one before, for one micro-batch.  Both ends' events carry it. */
typedef enum sl_p2p_kind { SL_P2P_NONE, SL_P2P_ACT, SL_P2P_GRAD } sl_p2p_kind;
typedef struct sl_ev_p2p {
	signed char kind;  /* sl_p2p_kind; SL_P2P_NONE: no pipeline message */
	short from, to;    /* the pipeline stages of the sender and the receiver */
	short chunk;       /* the global model chunk whose result it carries (interleaved
	                      schedules: stage + stages * local chunk; else the stage) */
	short mb;          /* the micro-batch */
	short iter;        /* the training step of the run it belongs to (from 0) */
	signed char share; /* the transfers the busier of its two ports carried at once, this
	                      one counted (sl_port_share): it ran at the link's bandwidth over
	                      this; 0 or 1: the link's */
} sl_ev_p2p;

/* A checkpoint chunk moved between a device and storage, in fields
 * (ckpt.c fills them where it reads or writes the chunk): a SL_EV_WRITE
 * or SL_EV_READ event's tensor and chunk in the manifest it belongs to
 * (the one read, or the one being written). */
typedef enum sl_io_kind { SL_IO_NONE, SL_IO_WRITE, SL_IO_READ } sl_io_kind;
typedef struct sl_ev_io {
	signed char kind; /* sl_io_kind; SL_IO_NONE: no checkpoint I/O */
	short tensor;     /* the tensor's index in the manifest */
	short chunk;      /* the chunk's index among the tensor's chunks */
	short nchunks;    /* how many chunks the tensor has */
	int id;           /* the chunk's id: its position among all the manifest's chunks */
} sl_ev_io;

typedef struct sl_event {
	int dev;
	int peer; /* the other end for transfers, else -1 */
	sl_ev_kind kind;
	int op;        /* operation id shared by the devices taking part */
	int mb;        /* micro-batch, -1 for none */
	int step;      /* the training step, from 1 in the run; 0 for none */
	double t0, t1; /* emulated seconds */
	double w0, w1; /* wall seconds since the run began */
	uint64_t bytes;
	double flops;
	sl_ev_coll coll;
	sl_ev_work work;
	sl_ev_p2p p2p;
	sl_ev_io io;
	int stream; /* the device's stream it ran on (0: compute; sl_dev_stream) */
	/* 1: an SL_EV_WAIT of its stream for another stream's work
	 * (sl_dev_wait_event: communication not hidden), not for a peer */
	int waits_stream;
	char label[40];
} sl_event;

typedef struct sl_trace sl_trace;

sl_trace *sl_trace_create(int ndev);
void sl_trace_destroy(sl_trace *t);
void sl_trace_clear(sl_trace *t);
/* Append (device threads). */
void sl_trace_add(sl_trace *t, const sl_event *ev);

/* A consistent copy of all events, sorted by (t0, dev, t1); events that
 * tie keep each device's order.  Free with free(). */
typedef struct sl_snapshot {
	int ndev;
	size_t n;
	sl_event *ev;
} sl_snapshot;
int sl_trace_snapshot(sl_trace *t, sl_snapshot *out);
/* The same order, the events moved out rather than copied: the trace is
 * empty afterwards (for a writer of a finished run's trace, whose memory
 * it halves). */
int sl_trace_take(sl_trace *t, sl_snapshot *out);
void sl_snapshot_free(sl_snapshot *s);
size_t sl_trace_count(sl_trace *t);

const char *sl_ev_kind_name(sl_ev_kind k);
/* "fc1", "qkv", "scores", ... ("" for none): the label's word for a part. */
const char *sl_work_part_tag(sl_work_part p);

/* Chrome Trace Event JSON (Perfetto, chrome://tracing), streamed event by
 * event (chrome.c): a process per node with a compute, a send and a
 * receive track per device, a "run" process with the steps of the step
 * model, a slice per collective and a bytes-in-flight counter, a "links"
 * process with a track per link, and flows from each send to its receive.
 * Emulated microseconds. */
typedef struct sl_trace_opts {
	int known;            /* the cluster's shape is known: name nodes and links */
	int devices_per_node; /* as sl_cluster_config (0: all devices in one node) */
} sl_trace_opts;
/* Where the bytes go: returns 0, or nonzero when the write failed. */
typedef int (*sl_trace_sink)(void *ctx, const char *buf, size_t len);
int sl_trace_write_chrome_to(const sl_snapshot *s, const sl_trace_opts *opt, sl_trace_sink sink,
                             void *ctx, sl_err *err);
/* To a stream; opt NULL: the shape is unknown (one process, no nodes). */
int sl_trace_write_chrome_opts(const sl_snapshot *s, const sl_trace_opts *opt, FILE *f,
                               sl_err *err);
int sl_trace_write_chrome(const sl_snapshot *s, FILE *f, sl_err *err);
/* Gzip-compressed to path (zlib). */
int sl_trace_write_chrome_gz(const sl_snapshot *s, const sl_trace_opts *opt, const char *path,
                             sl_err *err);

#endif
