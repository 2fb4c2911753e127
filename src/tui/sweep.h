/* SPDX-License-Identifier: MIT */
/* sweep.h - the plot's measurements: the current scenario run headless in
 * model timing over a range of link bandwidths or device counts, on a
 * background thread, one point after the other.
 *
 * No curses.  The thread writes a byte to wake_fd after every point;
 * sl_sweep_collect copies what is new for the UI thread. */
#ifndef SL_TUI_SWEEP_H
#define SL_TUI_SWEEP_H

#include "scenario.h"

#define SL_SWEEP_MAX 24

typedef enum sl_sweep_kind { SL_SWEEP_BANDWIDTH, SL_SWEEP_DEVICES } sl_sweep_kind;

typedef struct sl_sweep_point {
	double x;         /* bandwidth (bytes/s) or device count */
	double predicted; /* the analytic model's time (s) */
	double single;    /* one device's time (s) */
	int done;         /* measured */
	int rc;           /* the run's status; SL_OK when time holds a figure */
	double time;      /* emulated time of the run (s) */
} sl_sweep_point;

typedef struct sl_sweep sl_sweep;

sl_sweep *sl_sweep_create(int wake_fd);
/* Cancel and wait up to max_wait_s for the thread; 1 when it is gone (see
 * sl_play_destroy). */
int sl_sweep_destroy(sl_sweep *s, double max_wait_s);

/* Start (or keep, when nothing changed) a sweep of sc.  inter: sweep the
 * inter-node links' bandwidth (else intra-node). */
void sl_sweep_start(sl_sweep *s, const sl_scenario *sc, sl_sweep_kind kind, int inter);
/* Stop measuring (the plot is closed). */
void sl_sweep_stop(sl_sweep *s);
/* Take the points measured since the last call; returns whether any. */
int sl_sweep_collect(sl_sweep *s);

/* The points (in x order) as of the last collect. */
int sl_sweep_points(const sl_sweep *s, const sl_sweep_point **pts);
sl_sweep_kind sl_sweep_kind_of(const sl_sweep *s);
int sl_sweep_inter(const sl_sweep *s);
const sl_scenario *sl_sweep_scenario(const sl_sweep *s);
/* Points measured so far / in all. */
int sl_sweep_progress(const sl_sweep *s, int *total);

/* The bandwidth where speedup crosses 1 (log interpolation between two
 * points of pts, by the measured times where both are, else by the model),
 * or 0 if it does not cross in the range.  *measured tells which. */
double sl_sweep_crossover(const sl_sweep_point *pts, int n, int *measured);

#endif
