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
 * parallel group and its data-parallel replicas).  A step's span runs from
 * the earliest start to the latest end of its events; steps are in the
 * order of their stops: a step's end, or for a collective's step the latest
 * end of it and of the logical steps before it, so the steps of one
 * collective come in logical order (two can stop together: a binomial tree
 * over 6 devices runs two levels side by side).  Work that does not
 * describe itself in fields yet (pipeline sends, element-wise work,
 * checkpoint I/O) is one step per distinct end time.
 *
 * The sandbox, the lesson screen and the lesson language's `step N` all
 * count these steps. */
#ifndef SL_STEPS_H
#define SL_STEPS_H

#include <stddef.h>
#include <stdint.h>

#include "trace.h"

typedef struct sl_opstep {
	double t0, t1;     /* the span: earliest start, latest end */
	double t_stop;     /* where a person stepping through stops for it: its end, or for a
	                      collective's step the latest end of it and its logical predecessors */
	size_t rep;        /* an event of the step (an index into the snapshot) */
	uint64_t devs;     /* the devices taking part (bit d; devices past 63 are not shown) */
	int ndevs;         /* how many devices take part */
	int nxfer;         /* sends among its events */
	uint64_t bytes;    /* the largest send's bytes */
	int compute;       /* a compute phase (1) or not (0) */
	const sl_ev_coll *coll; /* a collective's step: its fields (of rep); NULL otherwise */
	double slow_s;     /* the longest single event (the slow hop of a ring step) */
} sl_opstep;

/* The steps of a snapshot.  Returns their count; *out (free() it) is NULL
 * when there are none or memory ran out.  With step_of non-NULL, *step_of
 * (free() it) gives each event's step, -1 for waits and empty events. */
size_t sl_steps_build(const sl_snapshot *s, sl_opstep **out, int **step_of);

/* The times a person stepping through the run stops at: the distinct ends
 * of its steps, sorted (two logical steps that end together are one stop).
 * Returns the count; *out (free() it) is NULL on failure. */
size_t sl_step_ends(const sl_snapshot *s, double **out);

#endif
