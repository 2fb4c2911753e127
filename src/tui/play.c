/* SPDX-License-Identifier: MIT */
/* play.c - the playback state machine: the plan, the live run and the
 * display clock (see play.h); the runs themselves are playrun.c's. */
#include "device.h"
#include "play.h"

#include "playrun.h"

#include "steps.h"

#include <dirent.h>
#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "cost.h"

/* ---- the play ---- */

struct live {
	sl_cluster *c;
	sl_workload wl;
	int refs; /* (mu) the play's and the runner's */
	int started;
	int done;         /* (mu) */
	int rc;           /* (mu) */
	sl_err err;       /* (mu) */
	sl_wl_result res; /* (mu) */
};

struct planjob {
	sl_play *p;
	sl_scenario sc;
	sl_workload wl;
	sl_link_spec *links; /* n*n */
	sl_cluster *c;       /* (mu) while it runs */
	int cancelled;       /* (mu) */
	sl_run_info info;
};

struct runjob {
	sl_play *p;
	struct live *L;
};

enum queued { Q_NONE, Q_TOGGLE, Q_STEP, Q_END };

struct sl_play {
	pthread_mutex_t mu; /* shared with the background threads: fields marked (mu) */
	pthread_cond_t cv;
	int wake_fd;
	int threads; /* (mu) background threads alive */

	sl_scenario sc;
	sl_workload wl;   /* a product's gemm is sc's */
	double predicted; /* wl's prediction on the live links, when pred_ok */
	int pred_ok;
	int done_only;           /* a finished run given to show: nothing runs until a knob moves */
	struct live *live;       /* always there: the cluster to run (and the knobs') */
	struct planjob *pj;      /* (mu) the plan being computed */
	struct planjob *pj_done; /* (mu) a plan waiting for collect */

	sl_run_info plan; /* what the screen draws when exact */
	int have_plan;
	int plan_pure; /* the plan is the current scenario run from zero */
	int stale;     /* a knob moved the live run away from the plan */
	double *steps;
	size_t nsteps;
	double *phases; /* where the plan's phases end (sl_phase_stops) */
	size_t nphases;
	sl_step_index plan_idx; /* the plan's steps, built once with it */
	sl_run_info livei;      /* the live run's, once collected */
	sl_snapshot livesnap;
	size_t livesnap_count;
	sl_step_index live_idx; /* livesnap's steps, built when first asked for */
	int live_idx_ok;
	sl_snapshot empty;
	enum queued queued; /* an action that waits for the plan */
	int queued_steps;   /* how many steps it is, for Q_STEP */

	double t, stop_at, anchor_t, anchor_wall, slowdown, frontier;
	int playing, auto_speed, discovering, end_pending;
	double disc_from;
	double last_tick, live_changed; /* wall times, for the stale case */
};

static void wake(sl_play *p)
{
	char b = 1;
	if (p->wake_fd >= 0 && write(p->wake_fd, &b, 1) < 0 && errno != EAGAIN)
		return; /* the UI drains the pipe; a full pipe is a pending wake-up */
}

static void thread_exit(sl_play *p)
{
	pthread_mutex_lock(&p->mu);
	p->threads--;
	pthread_cond_broadcast(&p->cv);
	pthread_mutex_unlock(&p->mu);
}

static int spawn(sl_play *p, void *(*fn)(void *), void *arg)
{
	pthread_t th;
	pthread_attr_t at;
	pthread_attr_init(&at);
	pthread_attr_setdetachstate(&at, PTHREAD_CREATE_DETACHED);
	pthread_mutex_lock(&p->mu);
	p->threads++;
	pthread_mutex_unlock(&p->mu);
	int rc = pthread_create(&th, &at, fn, arg);
	pthread_attr_destroy(&at);
	if (rc != 0)
		thread_exit(p);
	return rc;
}

static double clampd(double v, double lo, double hi)
{
	return v < lo ? lo : v > hi ? hi : v;
}

/* -- the live run -- */

static void live_free(struct live *L)
{
	sl_wl_result_free(&L->res);
	sl_cluster_destroy(L->c);
	free(L);
}

static void live_idx_drop(sl_play *p)
{
	sl_step_index_free(&p->live_idx);
	p->live_idx_ok = 0;
}

/* The plan's steps and stops go with it. */
static void plan_steps_drop(sl_play *p)
{
	sl_step_index_free(&p->plan_idx);
	free(p->steps);
	p->steps = NULL;
	p->nsteps = 0;
	free(p->phases);
	p->phases = NULL;
	p->nphases = 0;
}

static void live_release(sl_play *p)
{
	struct live *L = p->live;
	if (!L)
		return;
	p->live = NULL;
	pthread_mutex_lock(&p->mu);
	sl_cluster_cancel(L->c);
	int last = --L->refs == 0;
	pthread_mutex_unlock(&p->mu);
	if (last)
		live_free(L);
	sl_run_info_free(&p->livei);
	sl_snapshot_free(&p->livesnap);
	p->livesnap_count = 0;
	live_idx_drop(p);
}

/* A fresh cluster for the scenario, with the links of the old one. */
static int live_new(sl_play *p, sl_err *err)
{
	sl_cluster_config cfg = sl_playrun_cluster_cfg(&p->sc, &p->wl);
	cfg.slowdown = p->slowdown;
	struct live *L = calloc(1, sizeof *L);
	if (!L)
		return sl_fail(err, SL_ENOMEM, "out of host memory");
	L->c = sl_cluster_create(&cfg, err);
	if (!L->c) {
		free(L);
		return err->code ? err->code : SL_EINVAL;
	}
	struct live *old = p->live;
	if (old && sl_cluster_devices(old->c) == cfg.devices) {
		for (int s = 0; s < cfg.devices; s++)
			for (int d = 0; d < cfg.devices; d++)
				if (s != d) {
					sl_link_spec ls = sl_cluster_link(old->c, s, d);
					sl_cluster_set_link(L->c, s, d, ls.bandwidth, ls.latency);
				}
	}
	L->wl = p->wl;
	L->refs = 1;
	/* Nothing runs past what the screen shows. */
	sl_cluster_set_breakpoint(L->c, 0);
	live_release(p);
	p->live = L;
	p->frontier = 0;
	return SL_OK;
}

static void *runner(void *arg)
{
	struct runjob *r = arg;
	sl_play *p = r->p;
	struct live *L = r->L;
	free(r);
	sl_wl_result res;
	memset(&res, 0, sizeof res);
	sl_err err = {0};
	int rc = sl_workload_exec(&L->wl, L->c, &res, 0, &err);
	sl_train_report_free(&res.trep); /* the losses: the first is kept */
	pthread_mutex_lock(&p->mu);
	L->rc = rc;
	L->err = err;
	L->res = res;
	L->done = 1;
	int last = --L->refs == 0;
	pthread_mutex_unlock(&p->mu);
	if (last)
		live_free(L);
	wake(p);
	thread_exit(p);
	return NULL;
}

static void live_start(sl_play *p)
{
	struct live *L = p->live;
	if (!L || L->started)
		return;
	struct runjob *r = malloc(sizeof *r);
	if (!r)
		return;
	r->p = p;
	r->L = L;
	L->started = 1;
	pthread_mutex_lock(&p->mu);
	L->refs++;
	pthread_mutex_unlock(&p->mu);
	sl_cluster_set_slowdown(L->c, p->slowdown);
	sl_cluster_set_breakpoint(L->c, p->t);
	p->frontier = p->t;
	if (spawn(p, runner, r) != 0) {
		free(r);
		pthread_mutex_lock(&p->mu);
		L->refs--;
		L->done = 1;
		L->rc = sl_fail(&L->err, SL_ESYS, "cannot start the live run");
		pthread_mutex_unlock(&p->mu);
	}
}

static int live_running(const sl_play *p)
{
	struct live *L = p->live;
	if (!L || !L->started)
		return 0;
	pthread_mutex_lock((pthread_mutex_t *)&p->mu);
	int done = L->done;
	pthread_mutex_unlock((pthread_mutex_t *)&p->mu);
	return !done;
}

/* The engine may go as far as the display has. */
static void follow(sl_play *p)
{
	if (p->live && p->live->started && p->t > p->frontier) {
		p->frontier = p->t;
		sl_cluster_set_breakpoint(p->live->c, p->frontier);
	}
}

/* -- the plan -- */

static int job_publish(void *ctx, sl_cluster *c)
{
	struct planjob *j = ctx;
	pthread_mutex_lock(&j->p->mu);
	j->c = c;
	int give_up = c && j->cancelled;
	pthread_mutex_unlock(&j->p->mu);
	return give_up;
}

static void job_free(struct planjob *j)
{
	if (!j)
		return;
	sl_run_info_free(&j->info);
	free(j->links);
	free(j);
}

static void *planner(void *arg)
{
	struct planjob *j = arg;
	sl_play *p = j->p;
	/* A burst of knob presses makes one plan, not one each. */
	struct timespec ts = {0, 60 * 1000 * 1000};
	nanosleep(&ts, NULL);
	pthread_mutex_lock(&p->mu);
	int go = !j->cancelled;
	pthread_mutex_unlock(&p->mu);
	if (go)
		sl_playrun_run(&j->sc, &j->wl, j->links, &j->info, job_publish, j);
	pthread_mutex_lock(&p->mu);
	if (!j->cancelled && p->pj == j) {
		p->pj = NULL;
		job_free(p->pj_done);
		p->pj_done = j;
		j = NULL;
	}
	pthread_mutex_unlock(&p->mu);
	job_free(j);
	wake(p);
	thread_exit(p);
	return NULL;
}

static void plan_cancel(sl_play *p)
{
	pthread_mutex_lock(&p->mu);
	if (p->pj) {
		p->pj->cancelled = 1;
		if (p->pj->c)
			sl_cluster_cancel(p->pj->c);
		p->pj = NULL;
	}
	job_free(p->pj_done);
	p->pj_done = NULL;
	pthread_mutex_unlock(&p->mu);
}

/* Plan the scenario as it stands (links of the live cluster). */
static void replan(sl_play *p)
{
	plan_cancel(p);
	struct planjob *j = calloc(1, sizeof *j);
	int n = sl_cluster_devices(p->live->c);
	if (j)
		j->links = malloc((size_t)n * n * sizeof *j->links);
	if (!j || !j->links) {
		job_free(j);
		return;
	}
	j->p = p;
	j->sc = p->sc;
	j->wl = p->wl;
	for (int s = 0; s < n; s++)
		for (int d = 0; d < n; d++)
			j->links[s * n + d] = sl_cluster_link(p->live->c, s, d);
	pthread_mutex_lock(&p->mu);
	p->pj = j;
	pthread_mutex_unlock(&p->mu);
	if (spawn(p, planner, j) != 0) {
		pthread_mutex_lock(&p->mu);
		p->pj = NULL;
		pthread_mutex_unlock(&p->mu);
		job_free(j);
	}
}

static void set_plan(sl_play *p, sl_run_info *info, int pure)
{
	sl_run_info_free(&p->plan);
	p->plan = *info;
	memset(info, 0, sizeof *info);
	p->have_plan = 1;
	p->plan_pure = pure;
	plan_steps_drop(p);
	if (sl_step_index_build(&p->plan.snap, &p->plan_idx) == 0) {
		p->nsteps = sl_step_stops(p->plan_idx.st, p->plan_idx.ns, &p->steps);
		p->nphases = sl_phase_stops(p->plan_idx.st, p->plan_idx.ns, &p->phases);
	}
}

/* -- the clock -- */

static void anchor(sl_play *p, double now)
{
	p->anchor_t = p->t;
	p->anchor_wall = now;
}

double sl_play_end(const sl_play *p)
{
	if (sl_play_exact(p))
		return p->plan.end;
	if (p->livei.done)
		return p->livei.end;
	return -1;
}

static double next_step(const sl_play *p, double t)
{
	for (size_t i = 0; i < p->nsteps; i++)
		if (p->steps[i] > t * (1 + 1e-12) + 1e-300)
			return p->steps[i];
	return -1;
}

/* The end of the step before t: the plan's steps when exact, else (a knob
 * moved the live run away from the plan) the live trace's. */
static double prev_step(const sl_play *p, const sl_snapshot *s, double t)
{
	double best = 0;
	if (sl_play_exact(p)) {
		for (size_t i = 0; i < p->nsteps; i++)
			if (p->steps[i] < t * (1 - 1e-12))
				best = p->steps[i];
		return best;
	}
	double *v;
	size_t n = sl_step_ends(s, &v);
	for (size_t i = 0; i < n; i++)
		if (v[i] < t * (1 - 1e-12))
			best = v[i];
	free(v);
	return best;
}

/* Returns whether the live trace grew. */
static int refresh_livesnap(sl_play *p)
{
	if (!p->live || !p->live->started)
		return 0;
	sl_trace *tr = sl_cluster_trace(p->live->c);
	size_t n = sl_trace_count(tr);
	if (n == p->livesnap_count && p->livesnap.ev)
		return 0;
	sl_snapshot s;
	if (sl_trace_snapshot(tr, &s) != SL_OK)
		return 0;
	sl_snapshot_free(&p->livesnap);
	p->livesnap = s;
	p->livesnap_count = n;
	live_idx_drop(p);
	return 1;
}

static void play_from(sl_play *p, double stop_at, double now)
{
	if (p->t <= 0 && p->live && !p->live->started && sl_play_exact(p) && !p->done_only)
		live_start(p);
	p->playing = 1;
	p->stop_at = stop_at;
	anchor(p, now);
}

static int busy_planning(const sl_play *p)
{
	return sl_play_planning(p) && !p->stale;
}

void sl_play_toggle(sl_play *p, double now)
{
	if (p->playing) {
		p->playing = 0;
		p->discovering = 0;
		return;
	}
	if (busy_planning(p)) {
		p->queued = Q_TOGGLE;
		return;
	}
	if (p->have_plan && p->plan.rc != SL_OK && !p->stale)
		return;
	double end = sl_play_end(p);
	if (end >= 0 && p->t >= end)
		p->t = 0;
	play_from(p, INFINITY, now);
}

void sl_play_step(sl_play *p, int forward, double now)
{
	const sl_snapshot *ev = sl_play_events(p);
	if (!forward) {
		if (busy_planning(p) && !p->have_plan)
			return;
		p->playing = 0;
		p->discovering = 0;
		p->t = prev_step(p, ev, p->t);
		return;
	}
	if (busy_planning(p)) {
		p->queued_steps = p->queued == Q_STEP ? p->queued_steps + 1 : 1;
		p->queued = Q_STEP;
		return;
	}
	if (p->have_plan && p->plan.rc != SL_OK && !p->stale)
		return;
	double end = sl_play_end(p);
	if (end >= 0 && p->t >= end)
		return;
	if (sl_play_exact(p)) {
		/* Pressed again while a step plays: one more step (a presenter's
		 * clicker sends them faster than steps animate). */
		int extend = p->playing && isfinite(p->stop_at);
		double target = next_step(p, extend ? p->stop_at : p->t);
		if (target < 0)
			return;
		if (extend)
			p->stop_at = target;
		else
			play_from(p, target, now);
		return;
	}
	/* Stale: a step the live trace already holds, else the next operation
	 * that ends, found as the live run gets there. */
	double best = INFINITY;
	for (size_t i = 0; i < ev->n; i++) {
		const sl_event *e = &ev->ev[i];
		if (e->kind != SL_EV_WAIT && e->t1 > p->t * (1 + 1e-12) && e->t1 < best)
			best = e->t1;
	}
	if (best < INFINITY) {
		play_from(p, best, now);
		return;
	}
	play_from(p, INFINITY, now);
	p->discovering = 1;
	p->disc_from = p->t;
}

/* A phase at a time, over the plan's phase ends; without them (a knob
 * moved the live run away from the plan, or none is known yet) a step. */
void sl_play_phase(sl_play *p, int forward, double now)
{
	if (!sl_play_exact(p) || !p->nphases || (forward && busy_planning(p))) {
		sl_play_step(p, forward, now);
		return;
	}
	if (!forward) {
		double best = 0;
		for (size_t i = 0; i < p->nphases; i++)
			if (p->phases[i] < p->t * (1 - 1e-12))
				best = p->phases[i];
		p->playing = 0;
		p->discovering = 0;
		p->t = best;
		return;
	}
	if (p->have_plan && p->plan.rc != SL_OK)
		return;
	/* Pressed again while a phase plays: to the end of the next one. */
	int extend = p->playing && isfinite(p->stop_at);
	double from = extend ? p->stop_at : p->t;
	for (size_t i = 0; i < p->nphases; i++)
		if (p->phases[i] > from * (1 + 1e-12) + 1e-300) {
			if (extend)
				p->stop_at = p->phases[i];
			else
				play_from(p, p->phases[i], now);
			return;
		}
}

void sl_play_restart(sl_play *p)
{
	sl_err err = {0};
	p->playing = 0;
	p->discovering = 0;
	p->end_pending = 0;
	p->queued = Q_NONE;
	p->t = 0;
	if (p->done_only)
		return; /* the run shown is the one given: replay it */
	live_new(p, &err);
	if (!p->plan_pure || p->stale) {
		p->stale = 0;
		replan(p);
	}
}

void sl_play_to_end(sl_play *p, double now)
{
	if (busy_planning(p)) {
		p->queued = Q_END;
		return;
	}
	p->playing = 0;
	p->discovering = 0;
	/* The live run has nothing left to show: let it finish at full speed. */
	if (live_running(p)) {
		sl_cluster_set_slowdown(p->live->c, 0);
		sl_cluster_set_breakpoint(p->live->c, INFINITY);
		p->frontier = INFINITY;
	}
	double end = sl_play_end(p);
	if (end >= 0)
		p->t = end;
	else
		p->end_pending = 1;
	anchor(p, now);
}

void sl_play_set_slowdown(sl_play *p, double s, double now)
{
	p->slowdown = clampd(s, SL_PLAY_MIN_SLOWDOWN, SL_PLAY_MAX_SLOWDOWN);
	p->auto_speed = 0;
	anchor(p, now);
	if (live_running(p) && sl_cluster_slowdown(p->live->c) > 0)
		sl_cluster_set_slowdown(p->live->c, p->slowdown);
}

static double auto_slowdown(const sl_play *p)
{
	double total = p->have_plan && p->plan.rc == SL_OK && p->plan.end > 0
	                   ? p->plan.end
	                   : sl_play_predicted(p);
	if (!(total > 0))
		return SL_PLAY_MAX_SLOWDOWN;
	return clampd(SL_PLAY_AUTO_SECONDS / total, SL_PLAY_MIN_SLOWDOWN, SL_PLAY_MAX_SLOWDOWN);
}

void sl_play_auto_speed(sl_play *p, double now)
{
	sl_play_set_slowdown(p, auto_slowdown(p), now);
	p->auto_speed = 1;
}

double sl_play_slowdown(const sl_play *p)
{
	return p->slowdown;
}

int sl_play_auto(const sl_play *p)
{
	return p->auto_speed;
}

int sl_play_playing(const sl_play *p)
{
	return p->playing;
}

int sl_play_animating(const sl_play *p)
{
	/* When stale, the live trace is what is drawn: keep looking while it
	 * still grows (the engine catching up), then rest. */
	return p->playing || p->end_pending ||
	       (p->stale && live_running(p) && p->last_tick - p->live_changed < 0.5);
}

unsigned sl_play_tick(sl_play *p, double now)
{
	unsigned f = 0;
	p->last_tick = now;
	if (p->stale && refresh_livesnap(p)) {
		/* The live run catching up with the screen: draw it. */
		p->live_changed = now;
		f |= SL_PLAY_CHANGED;
	}
	if (!p->playing)
		return f;
	double t = p->anchor_t + (now - p->anchor_wall) / p->slowdown;
	double stop = p->stop_at, end = sl_play_end(p);
	if (end >= 0 && end < stop)
		stop = end;
	f |= SL_PLAY_CHANGED;
	if (t >= stop) {
		t = stop;
		p->playing = 0;
		p->discovering = 0;
		f |= SL_PLAY_STOPPED;
	}
	if (p->discovering) {
		/* The first operation to end past where the step began. */
		const sl_snapshot *s = &p->livesnap;
		double best = INFINITY;
		for (size_t i = 0; i < s->n; i++) {
			const sl_event *e = &s->ev[i];
			if (e->kind != SL_EV_WAIT && e->t1 > p->disc_from * (1 + 1e-12) &&
			    e->t1 <= t && e->t1 < best)
				best = e->t1;
		}
		if (best < INFINITY) {
			t = best;
			p->playing = 0;
			p->discovering = 0;
			f |= SL_PLAY_STOPPED;
		}
	}
	p->t = t;
	follow(p);
	return f;
}

/* -- knobs -- */

/* A knob outside a live run changes the scenario to plan; during one, it
 * changes the run itself. */
static void knob_changed(sl_play *p)
{
	p->pred_ok = 0;
	p->done_only = 0;
	if (live_running(p)) {
		p->stale = 1;
		p->queued = Q_NONE;
		refresh_livesnap(p);
		p->live_changed = p->last_tick;
		return;
	}
	if (p->live && p->live->started) {
		/* The finished run keeps its figures; the next one gets the knob. */
		sl_err err = {0};
		live_new(p, &err);
	}
	p->stale = 0;
	replan(p);
}

void sl_play_set_class(sl_play *p, int inter, double bw, double lat)
{
	sl_cluster_set_class(p->live->c, inter, bw, lat);
	sl_link_spec *sp = inter ? &p->sc.cluster.inter : &p->sc.cluster.intra;
	if (bw > 0)
		sp->bandwidth = bw;
	if (lat >= 0)
		sp->latency = lat;
	knob_changed(p);
}

void sl_play_set_link(sl_play *p, int src, int dst, double bw, double lat)
{
	sl_cluster_set_link(p->live->c, src, dst, bw, lat);
	knob_changed(p);
}

sl_link_spec sl_play_link(const sl_play *p, int src, int dst)
{
	return sl_cluster_link(p->live->c, src, dst);
}

int sl_play_inter(const sl_play *p, int src, int dst)
{
	return !sl_cluster_same_node(p->live->c, src, dst);
}

sl_link_state sl_play_link_state(const sl_play *p, int src, int dst)
{
	sl_link_state z = {0, 0, 0};
	if (!p->live || !p->live->started)
		return z;
	return sl_cluster_link_state(p->live->c, src, dst);
}

/* The workload's own model on the live links, kept until they change. */
double sl_play_predicted(const sl_play *p)
{
	sl_play *q = (sl_play *)p; /* a cache, not a state */
	if (!q->pred_ok) {
		q->predicted = sl_workload_ops_of(p->wl.kind)->predict(&p->wl, p->live->c);
		q->pred_ok = 1;
	}
	return q->predicted;
}

/* -- scenario -- */

/* The product is the scenario's: a new scenario is a new product.  The
 * other kinds keep what they run. */
static void product_follows(sl_workload *w, const sl_scenario *sc)
{
	w->gemm = sc->gemm;
}

static void (*const follows[SL_WL_KINDS])(sl_workload *w, const sl_scenario *sc) = {
    [SL_WL_PRODUCT] = product_follows,
};

static void follow_scenario(sl_workload *w, const sl_scenario *sc)
{
	if (follows[w->kind])
		follows[w->kind](w, sc);
}

void sl_play_set_scenario(sl_play *p, const sl_scenario *sc)
{
	sl_err err = {0};
	sl_scenario old = p->sc;
	p->sc = *sc;
	follow_scenario(&p->wl, sc);
	p->pred_ok = 0;
	p->done_only = 0;
	live_release(p);
	if (live_new(p, &err) != SL_OK) {
		/* The caller checked it; keep the old one rather than nothing. */
		p->sc = old;
		follow_scenario(&p->wl, &old);
		live_new(p, &err);
	}
	p->t = 0;
	p->playing = 0;
	p->discovering = 0;
	p->end_pending = 0;
	p->queued = Q_NONE;
	p->stale = 0;
	p->have_plan = 0;
	sl_run_info_free(&p->plan);
	plan_steps_drop(p);
	if (p->auto_speed)
		p->slowdown = auto_slowdown(p);
	replan(p);
}

const sl_scenario *sl_play_scenario(const sl_play *p)
{
	return &p->sc;
}

int sl_play_devices(const sl_play *p)
{
	return sl_cluster_devices(p->live->c);
}

/* -- what to draw -- */

double sl_play_time(const sl_play *p)
{
	return p->t;
}

int sl_play_planning(const sl_play *p)
{
	pthread_mutex_lock((pthread_mutex_t *)&p->mu);
	int planning = p->pj != NULL || p->pj_done != NULL;
	pthread_mutex_unlock((pthread_mutex_t *)&p->mu);
	return planning;
}

int sl_play_exact(const sl_play *p)
{
	return p->have_plan && !p->stale && p->plan.rc == SL_OK;
}

const sl_snapshot *sl_play_events(const sl_play *p)
{
	if (p->stale)
		return &p->livesnap;
	if (p->have_plan)
		return &p->plan.snap;
	return &p->empty;
}

const sl_step_index *sl_play_steps(sl_play *p)
{
	const sl_snapshot *s = sl_play_events(p);
	if (s == &p->plan.snap)
		return p->plan_idx.of || s->n == 0 ? &p->plan_idx : NULL;
	if (s != &p->livesnap)
		return NULL;
	if (!p->live_idx_ok)
		p->live_idx_ok = sl_step_index_build(s, &p->live_idx) == 0;
	return p->live_idx_ok ? &p->live_idx : NULL;
}

const sl_run_info *sl_play_result(const sl_play *p)
{
	if (p->have_plan && !p->stale)
		return &p->plan;
	return p->livei.done ? &p->livei : NULL;
}

int sl_play_live_started(const sl_play *p)
{
	return p->live && p->live->started;
}

const sl_run_info *sl_play_live_result(const sl_play *p)
{
	return p->livei.done ? &p->livei : NULL;
}

int sl_play_stale(const sl_play *p)
{
	return p->stale;
}

/* Steps pressed while planning: all but the last jump, the last animates. */
static void step_queued(sl_play *p, int n, double now)
{
	for (int i = 1; i < n && sl_play_exact(p); i++) {
		double target = next_step(p, p->t);
		if (target < 0)
			break;
		play_from(p, target, now);
		p->t = target;
		p->playing = 0;
		follow(p);
	}
	sl_play_step(p, 1, now);
}

unsigned sl_play_collect(sl_play *p)
{
	unsigned f = 0;
	pthread_mutex_lock(&p->mu);
	struct planjob *j = p->pj_done;
	p->pj_done = NULL;
	int live_done = p->live && p->live->started && p->live->done && !p->livei.done;
	pthread_mutex_unlock(&p->mu);
	if (j) {
		int at_end = p->have_plan && p->t >= p->plan.end && p->t > 0;
		set_plan(p, &j->info, 1);
		job_free(j);
		if (p->auto_speed)
			p->slowdown = auto_slowdown(p);
		if (p->plan.rc == SL_OK && (at_end || p->t > p->plan.end))
			p->t = p->plan.end;
		f |= SL_PLAY_CHANGED;
		double now = 0;
		struct timespec ts;
		clock_gettime(CLOCK_MONOTONIC, &ts);
		now = (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
		enum queued q = p->queued;
		p->queued = Q_NONE;
		if (q == Q_TOGGLE)
			sl_play_toggle(p, now);
		else if (q == Q_STEP)
			step_queued(p, p->queued_steps, now);
		else if (q == Q_END)
			sl_play_to_end(p, now);
	}
	if (live_done) {
		struct live *L = p->live;
		sl_err err = L->err;
		sl_playrun_info_fill(&p->livei, L->c, L->rc, &err);
		sl_playrun_info_result(&p->livei, &L->res);
		if (p->have_plan) { /* the live run has no prediction of its own */
			p->livei.tpred = p->plan.tpred;
			p->livei.single_s = p->plan.single_s;
		}
		refresh_livesnap(p);
		if (p->stale) {
			/* What the live run did is now the whole story. */
			sl_run_info copy = p->livei;
			copy.snap.ev = NULL;
			if (sl_trace_snapshot(sl_cluster_trace(L->c), &copy.snap) == SL_OK) {
				set_plan(p, &copy, 0);
				p->stale = 0;
			}
		}
		if (p->end_pending) {
			p->end_pending = 0;
			p->t = sl_play_end(p) >= 0 ? sl_play_end(p) : p->t;
		}
		f |= SL_PLAY_CHANGED;
	}
	return f;
}

/* -- life -- */

sl_play *sl_play_create(const sl_scenario *sc, int wake_fd, sl_err *err)
{
	return sl_play_create_workload(sc, NULL, wake_fd, err);
}

const sl_workload *sl_play_workload(const sl_play *p)
{
	return &p->wl;
}

static sl_play *play_new(const sl_scenario *sc, const sl_workload *w, int wake_fd, sl_err *err)
{
	sl_play *p = calloc(1, sizeof *p);
	if (!p) {
		sl_fail(err, SL_ENOMEM, "out of host memory");
		return NULL;
	}
	p->wl = w ? *w : sl_workload_product(&sc->gemm);
	pthread_mutex_init(&p->mu, NULL);
	pthread_cond_init(&p->cv, NULL);
	p->wake_fd = wake_fd;
	p->sc = *sc;
	p->slowdown = sc->cluster.slowdown > 0 ? sc->cluster.slowdown : SL_PLAY_MAX_SLOWDOWN;
	p->auto_speed = !(sc->cluster.slowdown > 0);
	if (live_new(p, err) != SL_OK) {
		pthread_mutex_destroy(&p->mu);
		pthread_cond_destroy(&p->cv);
		free(p);
		return NULL;
	}
	return p;
}

sl_play *sl_play_create_workload(const sl_scenario *sc, const sl_workload *w, int wake_fd,
                                 sl_err *err)
{
	sl_play *p = play_new(sc, w, wake_fd, err);
	if (!p)
		return NULL;
	if (p->auto_speed) {
		p->slowdown = auto_slowdown(p);
		sl_cluster_set_slowdown(p->live->c, p->slowdown);
	}
	replan(p);
	return p;
}

sl_play *sl_play_create_done(const sl_scenario *sc, const sl_workload *w, sl_cluster *c,
                             const sl_wl_result *r, int wake_fd, sl_err *err)
{
	sl_play *p = play_new(sc, w, wake_fd, err);
	if (!p)
		return NULL;
	sl_run_info info;
	memset(&info, 0, sizeof info);
	sl_playrun_info_fill(&info, c, SL_OK, NULL);
	if (r)
		sl_playrun_info_result(&info, r);
	set_plan(p, &info, 1);
	p->done_only = 1;
	if (p->auto_speed)
		p->slowdown = auto_slowdown(p);
	return p;
}

int sl_play_destroy(sl_play *p, double max_wait_s)
{
	if (!p)
		return 1;
	plan_cancel(p);
	live_release(p);
	struct timespec until;
	clock_gettime(CLOCK_REALTIME, &until);
	double d = until.tv_nsec * 1e-9 + max_wait_s;
	until.tv_sec += (time_t)d;
	until.tv_nsec = (long)((d - floor(d)) * 1e9);
	pthread_mutex_lock(&p->mu);
	while (p->threads > 0)
		if (pthread_cond_timedwait(&p->cv, &p->mu, &until) == ETIMEDOUT)
			break;
	int left = p->threads;
	pthread_mutex_unlock(&p->mu);
	if (left > 0)
		return 0; /* still in a BLAS call; they hold p */
	sl_run_info_free(&p->plan);
	sl_run_info_free(&p->livei);
	sl_snapshot_free(&p->livesnap);
	plan_steps_drop(p);
	live_idx_drop(p);
	pthread_mutex_destroy(&p->mu);
	pthread_cond_destroy(&p->cv);
	free(p);
	return 1;
}
