/* SPDX-License-Identifier: MIT */
/* scene.h - what the screen shows at emulated time t, derived from events.
 *
 * A pure function of the events, the time and the scenario (no curses, no
 * threads), so the views only draw and tests can check what is derived:
 * device states, link fills, which block of Y each device holds, the
 * numbers, and the sentence that says what the step does. */
#ifndef SL_TUI_SCENE_H
#define SL_TUI_SCENE_H

#include <stdint.h>

#include "cluster.h"
#include "play.h"
#include "scenario.h"
#include "steps.h"
#include "trace.h"

typedef enum sl_dstate {
	SL_DS_IDLE, /* nothing to do (before the start, or finished) */
	SL_DS_COMPUTE,
	SL_DS_SEND,
	SL_DS_RECV,
	SL_DS_REDUCE,
	SL_DS_WAIT,  /* blocked on a peer */
	SL_DS_BUSY,  /* running something the live trace does not show yet */
	SL_DS_WRITE, /* writing a checkpoint chunk to storage */
	SL_DS_READ,  /* reading a checkpoint chunk from storage */
	SL_DS_COUNT
} sl_dstate;

const char *sl_dstate_name(sl_dstate s);

typedef struct sl_scene_dev {
	sl_dstate state;
	int send_to, recv_from;           /* peers of transfers in flight, or -1 */
	double fill;                      /* progress of the current operation, 0..1 */
	const char *label;                /* the current operation's label, or "" */
	double compute_s, comm_s, wait_s; /* up to t */
	double io_s;                      /* reading and writing storage, up to t */
	uint64_t sent, received;          /* bytes, up to t */
	uint64_t mem;                     /* bytes held */
	/* Of comm_s, what the compute stream waited for (its own transfers and
	 * its waits for a side stream), up to t; with no side streams, comm_s. */
	double exposed_s;
	int mem_known;
	int finished;   /* its last operation ended by t */
	int64_t lo, hi; /* its shard of the split dimension */
} sl_scene_dev;

typedef struct sl_scene_link {
	int src, dst;
	int inter;                 /* between nodes */
	double bandwidth, latency; /* now */
	double fill;               /* the transfer in flight, 0..1; < 0 when idle */
	uint64_t inflight;         /* its size */
	uint64_t moved;            /* bytes delivered by t */
	uint64_t total;            /* bytes it carries over the whole run */
} sl_scene_link;

/* Blocks of the collective's buffer (Y): for every device and block, the set
 * of devices whose contribution it holds (bit i for device i).  Column-wise:
 * a complete block has one contribution, its owner's.  Row-wise: a block is
 * complete when it holds everyone's partial sum. */
typedef struct sl_scene_blocks {
	int valid; /* the picture is known for this collective */
	int p;
	uint64_t full; /* the mask of a complete block */
	uint64_t have[SL_MAX_FULL_DEVICES][SL_MAX_FULL_DEVICES];
	float incoming[SL_MAX_FULL_DEVICES]
	              [SL_MAX_FULL_DEVICES]; /* fill of a block arriving, or -1 */
} sl_scene_blocks;

/* The views show up to SL_MAX_FULL_DEVICES devices (a block is a bit of a
 * 64-bit mask; a bigger timing-only cluster is for the headless commands). */
#define SL_SCENE_MAX_LINKS (SL_MAX_FULL_DEVICES * 4)

typedef struct sl_scene {
	double t, end; /* end < 0: not known yet */
	int exact;
	int ndev;
	sl_split split;
	sl_scene_dev dev[SL_MAX_FULL_DEVICES];
	int nlinks; /* links that carry traffic, in (src, dst) order */
	sl_scene_link link[SL_SCENE_MAX_LINKS];
	int links_omitted; /* more than fit in the table */
	sl_scene_blocks blk;
	const sl_snapshot *ev; /* for the timeline */
	const size_t *by_end;  /* ev's events in order of end while the caller's step index
	                          lives (sl_scene_in.steps), else NULL */

	/* steps */
	int step, nsteps; /* steps ended by t; all (0 if unknown) */
	int at_step_end;  /* t is exactly a step's end */
	char sentence[320];

	/* numbers */
	double predicted_s, single_s, total_s; /* total_s < 0 if unknown */
	double speedup, efficiency;
	int crit;                                  /* the device whose clock ends last */
	double crit_compute, crit_comm, crit_wait; /* its split, up to t */
	double crit_exposed;                       /* of crit_comm, not hidden beside compute */
	unsigned side_streams; /* bit s: some device ran events on side stream s (cluster.h's
	                          Streams); 0: everything ran on the compute streams */
	uint64_t moved, moved_total;
	char coll_name[24];
	int coll_state; /* 0 none, 1 running, 2 done */
	double coll_time, busbw, algbw;
	int checked; /* the result is known (t at the end) */
	double max_abs_error, max_rel_error;
	int pass;
	int failed; /* the run failed: error holds why */
	char error[256];

	/* What ran (never NULL once built) and its kind.  A training step:
	 * the engine's report once the run is known (have_report), and the
	 * loss; blk is valid for a product only. */
	const sl_workload *wl;
	sl_wl_kind kind;
	sl_workload product; /* wl when the input named none */
	int have_report;
	const sl_train_report *trep;
	double loss;
} sl_scene;

typedef struct sl_scene_in {
	const sl_snapshot *ev;
	/* ev's steps and its events in order of end (sl_step_index_build),
	 * kept by the caller while ev does not change, so a frame sorts
	 * nothing; NULL: sl_scene_build makes them for the call. */
	const sl_step_index *steps;
	double t, end;
	int exact;
	const sl_scenario *sc;
	int ndev;
	const sl_run_info *result; /* the finished run, or NULL */
	double predicted_s;
	const sl_workload *wl; /* what ran; NULL: the scenario's product */
	/* Link figures and live state; live may be NULL (nothing live). */
	sl_link_spec (*link)(void *ctx, int src, int dst);
	int (*inter)(void *ctx, int src, int dst);
	sl_link_state (*live)(void *ctx, int src, int dst);
	void *ctx;
} sl_scene_in;

/* The correctness check passes when the largest error relative to the
 * largest element of the single-device result stays under this (the same
 * mark as `shardlab run`). */
#define SL_CHECK_REL_TOL 1e-5

void sl_scene_build(const sl_scene_in *in, sl_scene *m);
/* The step counter and the sentence of m (sentence.c), from the engine's
 * steps at in->t: sl_scene_build calls it once the rest of m is built. */
void sl_scene_sentence(const sl_scene_in *in, sl_scene *m);

/* sl_scene_build from playback p at its current time: its events, its
 * scenario or training step, and its links (live ones while a run is
 * under way). */
void sl_scene_build_play(sl_play *p, sl_scene *m);

/* The state of device d at time t per the events alone, with the peer of a
 * transfer in flight (sends and receives both set). */
sl_dstate sl_scene_state_at(const sl_snapshot *s, int d, double t, int *send_to, int *recv_from);

/* A reshard (SL_WL_RESHARD): how far device dev has got at m->t with
 * reading (write = 0) or writing (1) the chunk with id `chunk` (the stored
 * manifest's for reads, the new one's for writes): 0 not begun, 1 done,
 * between while the bytes move; -1 when the events hold no such operation. */
double sl_scene_io_fill(const sl_scene *m, int write, int dev, int chunk);

/* A lone collective (all-reduce, reduce-scatter or all-gather, ring or tree)
 * at the scene's time, replayed from the blocks each finished exchange moved
 * (the events' fields): cnt[b] for each of
 * the p blocks of its buffer, the number of devices' data the block sums
 * (all-reduce, reduce-scatter: 1 to p) or 1 if the block is there at all
 * (all-gather: 0 or 1).  Returns 0, or -1 for another op. */
int sl_scene_coll_blocks(const sl_scene *m, int dev, int p, int *cnt);

#endif
