/* SPDX-License-Identifier: MIT */
/* sbs.h - layouts side by side: what `shardlab compare --side-by-side`
 * shows (view_sbs.c draws it), one band per layout on one time axis.
 *
 * Each band holds one layout's figures (the training report's, as compare's
 * table prints them) and the events of its last training step.  What a
 * band's row shows is worked out here, without curses: each cell of a row
 * is the state that took most of the time its slice of the axis covers,
 * over the devices the row stands for, so a row of several devices (more
 * devices than rows) is their honest sum, not one device picked.  A band
 * whose devices communicated on side streams has two lanes a row. */
#ifndef SL_TUI_SBS_H
#define SL_TUI_SBS_H

#include <stdint.h>

#include "scene.h"
#include "trace.h"
#include "train.h"

#define SL_SBS_MAX 3

typedef struct sl_sbs_band {
	char name[48]; /* "tp=4", as compare's table names it */
	int ndev;
	double step_s;           /* emulated time per step (the run's mean) */
	double t0, span;         /* the recorded step: its start and length */
	uint64_t mem_peak, sent; /* the most of any device, per step */
	sl_train_dev *dev;       /* ndev devices' figures */
	sl_snapshot ev;          /* the last step's events */
} sl_sbs_band;

typedef struct sl_sbs {
	char model[320]; /* the model and data, in words */
	char machine[160];
	int n;
	sl_sbs_band band[SL_SBS_MAX];
} sl_sbs;

void sl_sbs_free(sl_sbs *s);

/* The band's recorded step, t0 and span, from its events. */
void sl_sbs_band_span(sl_sbs_band *b);

/* The time the shared axis spans: the longest band's step. */
double sl_sbs_axis(const sl_sbs *s);

/* Devices per row when a band of ndev devices has rows rows: one a row
 * when they fit, else the fewest that fit, made a divisor of ndev when one
 * is at most twice that (rows of equal size). */
int sl_sbs_per_row(int ndev, int rows);

/* The cells of a row: devices [lo, hi) of b over width cells of axis
 * seconds from the step's start.  Each is SL_DS_COMPUTE, SL_DS_SEND (any
 * transfer: send, receive, reduce), SL_DS_WAIT or SL_DS_IDLE, whichever
 * took most of the devices' time in its slice; past the band's step,
 * SL_DS_COUNT.  Pure, tested. */
void sl_sbs_cells(const sl_sbs_band *b, int lo, int hi, double axis, int width, sl_dstate *out);

/* A band's lanes a row: 1, or 2 when its devices ran work on side streams
 * (cluster.h's Streams: communication beside compute), the compute
 * stream's lane and under it the side streams'. */
int sl_sbs_lanes(const sl_sbs_band *b);
/* sl_sbs_cells of one lane's events: 0 the compute stream's, 1 the side
 * streams'; with one lane, every event (as sl_sbs_cells). */
void sl_sbs_lane_cells(const sl_sbs_band *b, int lane, int lo, int hi, double axis, int width,
                       sl_dstate *out);

/* The row's memory anatomy: of devices [lo, hi), the one with the highest
 * peak; its five figures (parameters, gradients, optimizer state,
 * activations, workspace) in out.  Returns the device. */
int sl_sbs_anatomy(const sl_sbs_band *b, int lo, int hi, uint64_t out[5]);
/* The largest sum of the five figures of any device of any band: the
 * memory bars' common scale. */
uint64_t sl_sbs_mem_scale(const sl_sbs *s);

#endif
