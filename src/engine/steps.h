/* SPDX-License-Identifier: MIT */
/* steps.h - the step model: a run's events grouped into the logical
 * operations a person steps through.
 *
 * One step is one logical operation across the devices that take part: a
 * product's compute phase (every device's shard, however unevenly long), or
 * one logical step of a collective (coll.c numbers them the same on every
 * device of the group, so a ring whose devices fall out of step is still
 * 2(p-1) steps), or one GEMM of a training step (the same block's part for
 * the same pass and micro-batch on every device that does it: a tensor-
 * parallel group and its data-parallel replicas), or one pipeline message
 * (a stage's result for one micro-batch, forward or backward: its sends
 * and receives on every rank that moves a copy), or one checkpoint chunk
 * (written by its owner, or a stored chunk read by every device whose new
 * shards it overlaps).  A step's span runs from
 * the earliest start to the latest end of its events; steps are in the
 * order of their stops: a step's end, or for a collective's step the latest
 * end of it and of the logical steps before it, so the steps of one
 * collective come in logical order (two can stop together: a binomial tree
 * over 6 devices runs two levels side by side).  Work that does not
 * describe itself in fields (element-wise work) is one step per distinct
 * end time.
 *
 * The sandbox, the lesson screen and the lesson language's `step N` all
 * count these steps. */
#ifndef SL_STEPS_H
#define SL_STEPS_H

#include <stddef.h>
#include <stdint.h>

#include "trace.h"

typedef struct sl_opstep {
	double t0, t1;          /* the span: earliest start, latest end */
	double t_stop;          /* where a person stepping through stops for it: its end, or for a
	                           collective's step the latest end of it and its logical predecessors */
	size_t rep;             /* an event of the step (an index into the snapshot) */
	uint64_t devs;          /* the devices taking part (bit d; devices past 63 are not shown) */
	int ndevs;              /* how many devices take part */
	int nxfer;              /* sends among its events */
	uint64_t bytes;         /* the largest send's bytes */
	int compute;            /* a compute phase (1) or not (0) */
	const sl_ev_coll *coll; /* a collective's step: its fields (of rep); NULL otherwise */
	const sl_ev_p2p *p2p;   /* a pipeline message's step: its fields (of rep); or NULL */
	const sl_ev_io *io;     /* a checkpoint chunk's step: its fields (of rep); or NULL */
	double slow_s;          /* the longest single event (the slow hop of a ring step) */
} sl_opstep;

/* The steps of a snapshot.  Returns their count; *out (free() it) is NULL
 * when there are none or memory ran out.  With step_of non-NULL, *step_of
 * (free() it) gives each event's step, -1 for waits and empty events. */
size_t sl_steps_build(const sl_snapshot *s, sl_opstep **out, int **step_of);

/* The times a person stepping through the run stops at: the distinct ends
 * of its steps, sorted (two logical steps that end together are one stop).
 * Returns the count; *out (free() it) is NULL on failure. */
size_t sl_step_ends(const sl_snapshot *s, double **out);
/* The same from steps built already (sl_steps_build's, in their order). */
size_t sl_step_stops(const sl_opstep *st, size_t ns, double **out);

/* Phases: what a person skips through when a run has hundreds of steps.
 * A phase is a maximal run of consecutive steps (in the order above) of
 * one kind: compute, a collective of one operation, pipeline messages,
 * checkpoint writes, checkpoint reads.  A collective's steps also break
 * where its phase changes (a ring all-reduce's reduce-scatter, then its
 * all-gather) and where the next collective begins (its first logical
 * step), so a row-wise product is three phases: compute, reduce-scatter,
 * all-gather; a pipeline's are its rounds, every stage's work on its
 * micro-batch and then the messages between the stages.
 * sl_step_phase_break says whether b, the step after a, starts a phase. */
int sl_step_phase_break(const sl_opstep *a, const sl_opstep *b);
/* Where the phases of st (sl_steps_build's, in their order) end: the stop
 * of each one's last step, sorted, distinct.  Returns the count; *out
 * (free() it) is NULL on failure. */
size_t sl_phase_stops(const sl_opstep *st, size_t ns, double **out);

/* What a reader that draws a snapshot many times (a frame each) needs of
 * it that costs a sort, built once: its steps (sl_steps_build), each
 * event's step, and every event's index in order of end (then device,
 * then index: the order a replay of what has arrived applies them in).
 * Rebuild it when the snapshot changes. */
typedef struct sl_step_index {
	sl_opstep *st; /* NULL when there are none */
	size_t ns;
	int *of;        /* per event, or NULL when there are no events */
	size_t *by_end; /* per event, or NULL when there are no events */
} sl_step_index;
/* Returns 0, or -1 when memory ran out (x then holds nothing). */
int sl_step_index_build(const sl_snapshot *s, sl_step_index *x);
/* by_end alone (free() it; NULL when memory ran out). */
size_t *sl_snapshot_by_end(const sl_snapshot *s);
void sl_step_index_free(sl_step_index *x);

#endif
