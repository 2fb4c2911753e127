/* SPDX-License-Identifier: MIT */
/* internal.h - the cluster's insides, shared by cluster.c and xfer.c only. */
#ifndef SL_INTERNAL_H
#define SL_INTERNAL_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>

#include "cluster.h"
#include "trace.h"
#include "xfer.h"

/* One direction of one device pair.  bandwidth and latency are knobs that
 * any thread may turn; free_at is touched only by the receiving device,
 * which is the one that moves the bytes. */
struct sl_link {
	_Atomic double bandwidth, latency;
	double free_at;
	sl_link_spec tuned; /* the figures when the run started (sl_cluster_link_tuned) */
	_Atomic uint64_t inflight_done, inflight_total, total;
};

/* The rendezvous for messages src->dst.  The sender posts a description of
 * its buffer and waits; the receiver pulls the bytes and reports the
 * emulated times.  A device has at most one message in flight per peer. */
struct sl_chan {
	pthread_mutex_t mu;
	pthread_cond_t cv;
	unsigned posted, taken; /* sequence numbers */
	const char *buf;
	size_t off[2], len[2];
	int nseg;
	double t_ready;        /* sender's clock when posted */
	int share;             /* the sender's port count for it (sl_port_share) */
	double t_start, t_end; /* filled by the receiver */
	int shared;            /* filled by the receiver: the port count that bound it */
	double w_start, w_end;
	int failed; /* receiver's status: SL_EINVAL refused (size), SL_ECANCEL */
	int busy;   /* the receiver is reading the sender's buffer */
};

/* Everything one ordered pair src->dst holds.  Made on first use: a layout
 * talks to a few peers per device (its TP group, its pipeline and DP
 * neighbours), and 1024 devices would otherwise hold a million of these. */
struct sl_pair {
	struct sl_link link;
	struct sl_chan chan;
	int src, dst;
};

struct sl_dev {
	sl_cluster *c;
	int id, node;
	pthread_t thread;
	double clock; /* the current stream's */
	/* Streams (sl_dev_stream): the current one, every other one's clock,
	 * and since when each has been busy without a gap (a side stream's
	 * kernels share the device with the compute beside them) */
	int stream;
	double sclock[SL_STREAMS], sbusy[SL_STREAMS];
	/* the receives of its last sl_xfer (sl_dev_recv_spans), the last
	 * holding any past SL_RECV_SPANS */
	sl_span rsp[SL_RECV_SPANS];
	int nrsp;
	/* Within a collective, when the device's ejection port is next free,
	 * inside its node and from other nodes (NVSwitch, the NIC): the bytes
	 * of one receive at a time each.  Reset as each collective starts:
	 * messages of separate operations (a pipeline's, say) are not held
	 * to it. */
	double rx_free[2];
	int op, mb;
	sl_ev_coll coll; /* the collective step under way (op -1: none); its events carry it */
	int coll_seq;    /* collectives started this run */
	sl_ev_work work; /* the training compute under way (pass NONE: none); its events carry it */
	sl_ev_p2p p2p;   /* the pipeline message being recorded (kind NONE: none) */
	sl_ev_io io;     /* the checkpoint chunk being recorded (kind NONE: none) */
	int batch;       /* the next kernels are each one of this many fused in one (>= 1) */
	int fused;       /* the next products are inside one fused attention kernel */
	double share;    /* in it, the share of each product executed (a causal mask's tiles) */
	int step;        /* the training step under way, from 1 in the run (0: none) */
	pthread_mutex_t mu; /* guards stats for readers on other threads */
	sl_dev_stats st;
	int rc;
	sl_err err;
};

struct sl_cluster {
	sl_cluster_config cfg;
	int n;
	struct sl_dev *dev;
	_Atomic(struct sl_pair *) *pair; /* n*n, index src*n+dst; NULL until first used */
	pthread_mutex_t pair_mu;         /* making pairs; the class figures new pairs start from */
	struct sl_pair **made;           /* the pairs made so far, in order (under pair_mu) */
	size_t nmade, capmade;
	/* The class figures when the run started: what pairs made during the
	 * run tune by, whatever knobs turn meanwhile. */
	sl_link_spec tuned_intra, tuned_inter;
	sl_trace *trace;
	/* What sl_dev_record keeps: cfg.record, as the cluster was created. */
	int rec_off, rec_lo, rec_hi;
	unsigned char *rec_dev; /* n flags, or NULL: every device */
	atomic_int cancel;

	/* Pacing: wall = origin + emulated * slowdown, re-anchored when the
	 * slowdown changes so playback stays continuous. */
	pthread_mutex_t pace_mu;
	pthread_cond_t pace_cv; /* CLOCK_MONOTONIC; woken on cancel and knob changes */
	double origin, slowdown, wall0;
	int paused; /* the playback clock is frozen at pause_wall */
	double pause_wall;
	double breakpoint; /* no operation ends past this emulated time */

	/* Wall-clock barrier. */
	pthread_mutex_t bar_mu;
	pthread_cond_t bar_cv;
	int bar_count;
	unsigned bar_gen;

	sl_program prog;
	void *arg;
};

/* The pair src->dst, made if it does not exist yet (NULL only when the host
 * is out of memory). */
struct sl_pair *sl_pair_make(sl_cluster *c, int src, int dst);

static inline struct sl_pair *sl_pair_at(sl_cluster *c, int src, int dst)
{
	struct sl_pair *p =
	    atomic_load_explicit(&c->pair[(size_t)src * c->n + dst], memory_order_acquire);
	return p ? p : sl_pair_make(c, src, dst);
}

double sl_wall_now(void);
/* Block until the wall time of emulated time t (no-op when headless or the
 * deadline has passed).  Returns SL_ECANCEL if cancelled meanwhile. */
int sl_pace_until(sl_cluster *c, double t_emulated);
/* The number of the collective a device starts now (0, 1, ... per run). */
int sl_dev_next_coll(sl_dev *d);
void sl_dev_record(sl_dev *d, sl_ev_kind kind, int peer, double t0, double t1, double w0, double w1,
                   uint64_t bytes, double flops, const char *label);

#endif
