/* SPDX-License-Identifier: MIT */
/* play.h - playback of a scenario for the TUI: a plan, a live run, a clock.
 *
 * No curses here.  Three things make up what the screen shows:
 *
 * - The plan: the scenario run headless on a background thread (exactly what
 *   `shardlab run` does), giving every event with its emulated start and
 *   end.  In model timing the live run repeats these times exactly, so the
 *   plan tells where each step ends before the live run gets there.
 * - The live run: the same scenario on a paced cluster (a slowdown), on its
 *   own thread, where bytes really cross the links while the screen shows
 *   them.  Its breakpoint follows the display clock, so it never runs ahead
 *   of what is shown; knobs turned during it apply to transfers in flight.
 * - The display clock t: moves at wall time / slowdown while playing, stops
 *   exactly at step ends, and goes back by replaying the recorded events.
 *
 * Turning a knob during a live run makes the plan stale (the live run now
 * differs from it): the screen then draws from the live trace and the live
 * link states, and a step forward stops at the first operation that ends
 * (found as it happens).  When that run completes, its trace becomes the
 * plan.  Knob changes outside a live run just plan the scenario again.
 *
 * Background threads never call curses; they write one byte to wake_fd when
 * they have something for sl_play_collect. */
#ifndef SL_TUI_PLAY_H
#define SL_TUI_PLAY_H

#include <stdint.h>

#include "cluster.h"
#include "gemm.h"
#include "scenario.h"
#include "ckpt.h"
#include "steps.h"
#include "trace.h"
#include "train.h"
#include "workload.h"

typedef struct sl_play sl_play;

/* What a finished run (the plan, or a completed live run) left. */
typedef struct sl_run_info {
	int done; /* the run finished (rc tells how) */
	int rc;
	sl_err err;
	sl_snapshot snap; /* every event, sorted by (t0, dev) */
	sl_gemm_result res;
	int ndev;
	sl_dev_stats st[SL_MAX_FULL_DEVICES];
	double end; /* the last event's end (emulated s) */
	/* A training step: the engine's report (its losses
	 * taken into loss and freed), the analytic prediction (the plan's
	 * only) and one device's step time. */
	sl_train_report trep;
	sl_train_prediction tpred;
	double single_s, loss;
} sl_run_info;

/* What a play shows is a workload (workload.h): the scenario's product, or a
 * training step, a reshard or a lone collective on the scenario's cluster
 * (which must then have the devices the workload needs; its gemm part is
 * not used). */

/* Flags returned by sl_play_collect and sl_play_tick. */
enum {
	SL_PLAY_CHANGED = 1, /* something to draw changed */
	SL_PLAY_STOPPED = 2, /* the clock stopped (end of a step or of the run) */
};

/* Automatic speed: the scenario lasts this long on screen. */
#define SL_PLAY_AUTO_SECONDS 4.0
#define SL_PLAY_MIN_SLOWDOWN 1.0
#define SL_PLAY_MAX_SLOWDOWN 1e6

/* sc must be valid (sl_cluster_config_check); slowdown 0 means automatic. */
sl_play *sl_play_create(const sl_scenario *sc, int wake_fd, sl_err *err);
/* The same on another workload (w is copied; NULL: sc's product). */
sl_play *sl_play_create_workload(const sl_scenario *sc, const sl_workload *w, int wake_fd,
                                 sl_err *err);
/* The same on a run of w that has already happened on c (a lesson's),
 * which left r (NULL: nothing beyond c's trace): its events are the plan,
 * and nothing runs again unless a knob or a new scenario asks.  c and r
 * stay the caller's. */
sl_play *sl_play_create_done(const sl_scenario *sc, const sl_workload *w, sl_cluster *c,
                             const sl_wl_result *r, int wake_fd, sl_err *err);
/* The workload shown (never NULL; a product's gemm is the scenario's). */
const sl_workload *sl_play_workload(const sl_play *p);
/* Cancel everything and wait up to max_wait_s for the background threads.
 * Returns 1 when they are all gone; 0 when some are still in the middle of a
 * BLAS call (they hold p, which is then not freed): the caller should leave
 * with _exit, since library destructors at exit() would pull memory from
 * under them. */
int sl_play_destroy(sl_play *p, double max_wait_s);

/* Take in what background threads finished. */
unsigned sl_play_collect(sl_play *p);
/* Move the display clock to wall time now (CLOCK_MONOTONIC seconds). */
unsigned sl_play_tick(sl_play *p, double now);
/* Does the clock move by itself (so the UI needs ticks)? */
int sl_play_animating(const sl_play *p);

/* Playback. */
void sl_play_toggle(sl_play *p, double now);
void sl_play_step(sl_play *p, int forward, double now);
/* To the end of the phase under way, or back to the end of the one before
 * (sl_phase_stops: a run of steps of one kind); a step where the phases
 * are not known (the live run away from the plan). */
void sl_play_phase(sl_play *p, int forward, double now);
void sl_play_restart(sl_play *p);
void sl_play_to_end(sl_play *p, double now);
void sl_play_set_slowdown(sl_play *p, double slowdown, double now);
void sl_play_auto_speed(sl_play *p, double now);
double sl_play_slowdown(const sl_play *p);
int sl_play_auto(const sl_play *p);
int sl_play_playing(const sl_play *p);

/* Knobs: bandwidth in bytes/s (<= 0 keeps it), latency in s (< 0 keeps it).
 * A class change resets that class's links (also single-link changes). */
void sl_play_set_class(sl_play *p, int inter_node, double bandwidth, double latency);
void sl_play_set_link(sl_play *p, int src, int dst, double bandwidth, double latency);
/* A link as it stands now (the live cluster's, or the one to be run). */
sl_link_spec sl_play_link(const sl_play *p, int src, int dst);
/* Is the link between devices of different nodes? */
int sl_play_inter(const sl_play *p, int src, int dst);

/* A new scenario (devices, strategy, size, preset...): rerun from zero. */
void sl_play_set_scenario(sl_play *p, const sl_scenario *sc);
/* The scenario being shown, with the current class figures. */
const sl_scenario *sl_play_scenario(const sl_play *p);
/* Devices of the cluster shown (1 for the single strategy). */
int sl_play_devices(const sl_play *p);

/* What to draw. */
double sl_play_time(const sl_play *p);
/* The events the screen draws from: the plan when it is exact, else the
 * live trace (both sorted by (t0, dev)).  Never NULL. */
const sl_snapshot *sl_play_events(const sl_play *p);
/* The steps of sl_play_events(p) and its events in order of end, built
 * once per plan and once per growth of the live trace, so a frame sorts
 * nothing; NULL when they could not be built (the caller builds its own). */
const sl_step_index *sl_play_steps(sl_play *p);
/* Is the event source the complete schedule (the plan, valid)? */
int sl_play_exact(const sl_play *p);
/* The end of the scenario (emulated s), or a negative value if unknown. */
double sl_play_end(const sl_play *p);
/* A plan is being computed. */
int sl_play_planning(const sl_play *p);
/* The finished run the numbers come from (plan or live), or NULL. */
const sl_run_info *sl_play_result(const sl_play *p);
/* The live run: started, finished (and its figures once finished). */
int sl_play_live_started(const sl_play *p);
const sl_run_info *sl_play_live_result(const sl_play *p);
/* Live link state (for the stale case: transfers the trace does not hold
 * yet). */
sl_link_state sl_play_link_state(const sl_play *p, int src, int dst);
/* Has a knob changed the live run away from the plan? */
int sl_play_stale(const sl_play *p);
/* The analytic prediction of the whole scenario with the current links. */
double sl_play_predicted(const sl_play *p);

/* The analytic (alpha-beta) prediction of a GEMM scenario, as sl_gemm_run
 * computes it, for links of the given classes (ring bottleneck over devices
 * 0..p-1; ring topology multiplies latency by hops).  Used for the plot's
 * curve, where no cluster exists. */
double sl_play_predict(const sl_scenario *sc, sl_link_spec intra, sl_link_spec inter);
/* The same product on one device. */
double sl_play_single_time(const sl_scenario *sc);

/* Run a scenario headless (as the plan does) and fill info; for sweeps and
 * tests.  links, if not NULL, holds the n*n link figures to use (n the
 * cluster's devices).  publish, if not NULL, is called with the cluster once
 * it exists and with NULL before it goes, so another thread may cancel it
 * meanwhile; a non-zero answer gives up (SL_ECANCEL).  Free info with
 * sl_run_info_free. */
typedef int (*sl_publish_fn)(void *ctx, sl_cluster *c);
int sl_play_run_headless(const sl_scenario *sc, const sl_link_spec *links, sl_run_info *info,
                         sl_publish_fn publish, void *ctx);
void sl_run_info_free(sl_run_info *info);
/* The same for another workload (a training step as `shardlab train
 * --steps=1` runs it). */
int sl_play_run_workload_headless(const sl_scenario *sc, const sl_workload *w,
                                  const sl_link_spec *links, sl_run_info *info,
                                  sl_publish_fn publish, void *ctx);

#endif
