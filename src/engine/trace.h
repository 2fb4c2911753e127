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

typedef struct sl_event {
	int dev;
	int peer;          /* the other end for transfers, else -1 */
	sl_ev_kind kind;
	int op;            /* operation id shared by the devices taking part */
	int mb;            /* micro-batch, -1 for none */
	double t0, t1;     /* emulated seconds */
	double w0, w1;     /* wall seconds since the run began */
	uint64_t bytes;
	double flops;
	sl_ev_coll coll;
	char label[40];
} sl_event;

typedef struct sl_trace sl_trace;

sl_trace *sl_trace_create(int ndev);
void sl_trace_destroy(sl_trace *t);
void sl_trace_clear(sl_trace *t);
/* Append (device threads). */
void sl_trace_add(sl_trace *t, const sl_event *ev);

/* A consistent copy of all events, sorted by (t0, dev).  Free with free(). */
typedef struct sl_snapshot {
	int ndev;
	size_t n;
	sl_event *ev;
} sl_snapshot;
int sl_trace_snapshot(sl_trace *t, sl_snapshot *out);
void sl_snapshot_free(sl_snapshot *s);
size_t sl_trace_count(sl_trace *t);

const char *sl_ev_kind_name(sl_ev_kind k);

/* Chrome Trace Event JSON (Perfetto, chrome://tracing): one track per device
 * and one per link, emulated microseconds. */
int sl_trace_write_chrome(const sl_snapshot *s, FILE *f, sl_err *err);

#endif
