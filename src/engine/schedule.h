/* SPDX-License-Identifier: MIT */
/* schedule.h - pipeline schedules: in which order a stage runs the forward
 * and backward passes of its micro-batches.
 *
 * p stages, m micro-batches, v model chunks per stage.  Stage s holds the
 * model chunks s, s+p, s+2p, ... (global chunk g = c*p + s for its local
 * chunk c), so with v > 1 a micro-batch visits every stage v times.  A
 * schedule is a pure function of (kind, p, m, v, s): no data, no devices. */
#ifndef SL_SCHEDULE_H
#define SL_SCHEDULE_H

#include "status.h"

typedef enum sl_sched {
	SL_SCHED_GPIPE,       /* all forwards, then all backwards */
	SL_SCHED_1F1B,        /* PipeDream-Flush: p-s-1 warm-up forwards, then one F one B */
	SL_SCHED_INTERLEAVED, /* Megatron-LM's interleaved 1F1B over v chunks */
	SL_SCHED_N
} sl_sched;

const char *sl_sched_name(sl_sched k);
int sl_sched_parse(const char *s, sl_sched *out);

typedef struct sl_pp_action {
	int bwd;    /* 0 forward, 1 backward */
	int mb;     /* micro-batch 0..m-1 */
	int chunk;  /* local chunk 0..v-1 */
	int joined; /* runs right after the previous action with no exchange between:
	               the interleaved steady state's F+B pairs, whose results go out and
	               whose next inputs come in together (Megatron-LM's
	               send_forward_backward_recv_forward_backward) */
} sl_pp_action;

/* Check that the schedule exists for (p, m, v); the message says what to
 * change. */
int sl_pp_check(sl_sched k, int p, int m, int v, sl_err *err);

/* Write stage s's 2*m*v actions, in order, to out. */
int sl_pp_schedule(sl_sched k, int p, int m, int v, int s, sl_pp_action *out, sl_err *err);

/* The most (micro-batch, chunk) pairs whose forward has run and backward
 * has not, at any point of the action list: how many activation sets the
 * stage holds at its peak. */
int sl_pp_inflight_peak(const sl_pp_action *a, int n);

#endif
