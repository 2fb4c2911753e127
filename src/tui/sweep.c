/* SPDX-License-Identifier: MIT */
/* sweep.c - measuring the plot's points on a background thread. */
#include "sweep.h"

#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "knobs.h"
#include "play.h"

struct job {
	sl_sweep *s;
	sl_scenario sc;
	sl_sweep_kind kind;
	int inter;
	int n;
	sl_sweep_point pts[SL_SWEEP_MAX]; /* (mu) measured fields */
	int fresh;                        /* (mu) points since the last collect */
	int cancelled;                    /* (mu) */
	int finished;                     /* (mu) its thread is gone */
	sl_cluster *c;                    /* (mu) while a run is in progress */
};

struct sl_sweep {
	pthread_mutex_t mu;
	pthread_cond_t cv;
	int wake_fd;
	int threads;     /* (mu) */
	struct job *job; /* (mu) the current sweep; the thread frees a cancelled one */
	/* The UI thread's copy. */
	sl_scenario sc;
	sl_sweep_kind kind;
	int inter, active;
	int n;
	sl_sweep_point pts[SL_SWEEP_MAX];
};

static void wake(sl_sweep *s)
{
	char b = 1;
	if (s->wake_fd >= 0 && write(s->wake_fd, &b, 1) < 0 && errno != EAGAIN)
		return;
}

/* The scenario for point x. */
static int point_scenario(const struct job *j, double x, sl_scenario *out)
{
	*out = j->sc;
	out->cluster.slowdown = 0;
	if (j->kind == SL_SWEEP_BANDWIDTH) {
		if (j->inter)
			out->cluster.inter.bandwidth = x;
		else
			out->cluster.intra.bandwidth = x;
	} else {
		out->cluster.devices = (int)x;
		if (out->cluster.devices_per_node > out->cluster.devices ||
		    (out->cluster.devices_per_node > 0 &&
		     out->cluster.devices % out->cluster.devices_per_node))
			out->cluster.devices_per_node = 0;
		if (out->gemm.split == SL_SPLIT_SINGLE)
			out->gemm.split = SL_SPLIT_COL;
	}
	sl_err err;
	if (sl_cluster_config_check(&out->cluster, &err))
		return -1;
	int t = out->gemm.split == SL_SPLIT_SINGLE ? 1 : out->cluster.devices;
	return sl_gemm_check(&out->gemm, t, &err) ? -1 : 0;
}

static int publish(void *ctx, sl_cluster *c)
{
	struct job *j = ctx;
	pthread_mutex_lock(&j->s->mu);
	j->c = c;
	int give_up = c && j->cancelled;
	pthread_mutex_unlock(&j->s->mu);
	return give_up;
}

static void *worker(void *arg)
{
	struct job *j = arg;
	sl_sweep *s = j->s;
	for (int i = 0; i < j->n; i++) {
		pthread_mutex_lock(&s->mu);
		int stop = j->cancelled;
		pthread_mutex_unlock(&s->mu);
		if (stop)
			break;
		sl_scenario sc;
		sl_run_info info;
		int rc = SL_EINVAL;
		double t = 0;
		if (point_scenario(j, j->pts[i].x, &sc) == 0) {
			rc = sl_play_run_headless(&sc, NULL, &info, publish, j);
			t = info.res.emulated_time_s;
			sl_run_info_free(&info);
		}
		pthread_mutex_lock(&s->mu);
		j->pts[i].done = 1;
		j->pts[i].rc = rc;
		j->pts[i].time = t;
		j->fresh = 1;
		pthread_mutex_unlock(&s->mu);
		wake(s);
	}
	pthread_mutex_lock(&s->mu);
	/* A job still current stays for the UI; a dropped one is ours. */
	if (s->job == j)
		j->finished = 1;
	else
		free(j);
	s->threads--;
	pthread_cond_broadcast(&s->cv);
	pthread_mutex_unlock(&s->mu);
	return NULL;
}

sl_sweep *sl_sweep_create(int wake_fd)
{
	sl_sweep *s = calloc(1, sizeof *s);
	if (!s)
		return NULL;
	pthread_mutex_init(&s->mu, NULL);
	pthread_cond_init(&s->cv, NULL);
	s->wake_fd = wake_fd;
	return s;
}

/* Drop the current job: the thread frees it when it notices. */
static void cancel_locked(sl_sweep *s)
{
	struct job *j = s->job;
	if (!j)
		return;
	j->cancelled = 1;
	if (j->c)
		sl_cluster_cancel(j->c);
	s->job = NULL;
}

void sl_sweep_stop(sl_sweep *s)
{
	pthread_mutex_lock(&s->mu);
	struct job *j = s->job;
	if (j && j->finished) {
		s->job = NULL;
		free(j);
	} else {
		cancel_locked(s);
	}
	pthread_mutex_unlock(&s->mu);
	s->active = 0;
}

/* Field by field: struct padding is not part of a scenario. */
static int same_link(sl_link_spec a, sl_link_spec b)
{
	return a.bandwidth == b.bandwidth && a.latency == b.latency;
}

static int same_scenario(const sl_scenario *a, const sl_scenario *b)
{
	const sl_cluster_config *x = &a->cluster, *y = &b->cluster;
	return strcmp(a->preset, b->preset) == 0 && x->devices == y->devices &&
	       x->devices_per_node == y->devices_per_node && x->topology == y->topology &&
	       x->flops == y->flops && x->memory == y->memory && same_link(x->intra, y->intra) &&
	       same_link(x->inter, y->inter) && x->timing == y->timing &&
	       a->gemm.split == b->gemm.split && a->gemm.m == b->gemm.m && a->gemm.k == b->gemm.k &&
	       a->gemm.n == b->gemm.n && a->gemm.algo == b->gemm.algo &&
	       a->gemm.seed == b->gemm.seed;
}

/* The same sweep: everything but the swept figure (and the playback speed)
 * equal, and the swept figure inside the range measured. */
static int same_sweep(const sl_sweep *s, const sl_scenario *sc, sl_sweep_kind kind, int inter)
{
	if (!s->active || s->kind != kind || s->inter != inter || s->n < 2)
		return 0;
	sl_scenario x = s->sc, y = *sc;
	x.cluster.slowdown = y.cluster.slowdown = 0;
	double cur;
	if (kind == SL_SWEEP_BANDWIDTH) {
		sl_link_spec *a = inter ? &x.cluster.inter : &x.cluster.intra;
		sl_link_spec *b = inter ? &y.cluster.inter : &y.cluster.intra;
		cur = b->bandwidth;
		a->bandwidth = b->bandwidth = 0;
	} else {
		cur = y.cluster.devices;
		x.cluster.devices = y.cluster.devices = 0;
		x.cluster.devices_per_node = y.cluster.devices_per_node = 0;
	}
	if (!same_scenario(&x, &y))
		return 0;
	return cur >= s->pts[0].x && cur <= s->pts[s->n - 1].x;
}

void sl_sweep_start(sl_sweep *s, const sl_scenario *sc, sl_sweep_kind kind, int inter)
{
	if (same_sweep(s, sc, kind, inter)) {
		/* Only the marker of the current figure moves. */
		s->sc = *sc;
		return;
	}
	sl_sweep_stop(s);
	struct job *j = calloc(1, sizeof *j);
	if (!j)
		return;
	j->s = s;
	j->sc = *sc;
	memset(j->sc.preset, 0, sizeof j->sc.preset);
	snprintf(j->sc.preset, sizeof j->sc.preset, "%s", sc->preset);
	j->kind = kind;
	j->inter = inter;
	if (kind == SL_SWEEP_BANDWIDTH) {
		double cur = inter ? sc->cluster.inter.bandwidth : sc->cluster.intra.bandwidth;
		/* Three decades below the current figure and one above: where
		 * tensor parallelism stops paying is usually below. */
		static const double f[] = {1e-3, 3e-3, 1e-2, 3e-2, 1e-1, 0.3, 1, 3, 10};
		const sl_knob *k = sl_knob_of(SL_OPT_BANDWIDTH); /* the option's range */
		for (size_t i = 0; i < sizeof f / sizeof f[0]; i++) {
			double x = cur * f[i];
			if (x >= k->lo && x <= k->hi)
				j->pts[j->n++].x = x;
		}
	} else {
		static const int counts[] = {1, 2, 3, 4, 6, 8, 12, 16};
		for (size_t i = 0; i < sizeof counts / sizeof counts[0]; i++) {
			sl_scenario t;
			if (point_scenario(j, counts[i], &t) == 0)
				j->pts[j->n++].x = counts[i];
		}
	}
	for (int i = 0; i < j->n; i++) {
		sl_scenario t;
		if (point_scenario(j, j->pts[i].x, &t) == 0) {
			j->pts[i].predicted = sl_play_predict(&t, t.cluster.intra, t.cluster.inter);
			j->pts[i].single = sl_play_single_time(&t);
		}
	}
	s->sc = *sc;
	s->kind = kind;
	s->inter = inter;
	s->n = j->n;
	memcpy(s->pts, j->pts, sizeof s->pts);
	s->active = 1;
	pthread_mutex_lock(&s->mu);
	s->job = j;
	s->threads++;
	pthread_mutex_unlock(&s->mu);
	pthread_t th;
	pthread_attr_t at;
	pthread_attr_init(&at);
	pthread_attr_setdetachstate(&at, PTHREAD_CREATE_DETACHED);
	if (pthread_create(&th, &at, worker, j) != 0) {
		pthread_mutex_lock(&s->mu);
		s->job = NULL;
		s->threads--;
		pthread_mutex_unlock(&s->mu);
		free(j);
	}
	pthread_attr_destroy(&at);
}

int sl_sweep_collect(sl_sweep *s)
{
	int changed = 0;
	pthread_mutex_lock(&s->mu);
	struct job *j = s->job;
	if (j && j->fresh) {
		memcpy(s->pts, j->pts, sizeof s->pts);
		j->fresh = 0;
		changed = 1;
	}
	pthread_mutex_unlock(&s->mu);
	return changed;
}

int sl_sweep_points(const sl_sweep *s, const sl_sweep_point **pts)
{
	*pts = s->pts;
	return s->n;
}

sl_sweep_kind sl_sweep_kind_of(const sl_sweep *s)
{
	return s->kind;
}

int sl_sweep_inter(const sl_sweep *s)
{
	return s->inter;
}

const sl_scenario *sl_sweep_scenario(const sl_sweep *s)
{
	return &s->sc;
}

int sl_sweep_progress(const sl_sweep *s, int *total)
{
	int d = 0;
	for (int i = 0; i < s->n; i++)
		d += s->pts[i].done;
	*total = s->n;
	return d;
}

double sl_sweep_crossover(const sl_sweep_point *p, int n, int *measured)
{
	for (int pass = 0; pass < 2; pass++) {
		for (int i = 0; i + 1 < n; i++) {
			double t0, t1;
			if (pass == 0) {
				if (!p[i].done || !p[i + 1].done || p[i].rc || p[i + 1].rc)
					continue;
				t0 = p[i].time;
				t1 = p[i + 1].time;
			} else {
				t0 = p[i].predicted;
				t1 = p[i + 1].predicted;
			}
			double s0 = p[i].single / t0, s1 = p[i + 1].single / t1;
			if (!(t0 > 0 && t1 > 0) || (s0 - 1) * (s1 - 1) > 0 || s0 == s1)
				continue;
			double f = (1 - s0) / (s1 - s0);
			*measured = pass == 0;
			return exp(log(p[i].x) + f * (log(p[i + 1].x) - log(p[i].x)));
		}
	}
	*measured = 0;
	return 0;
}

int sl_sweep_destroy(sl_sweep *s, double max_wait_s)
{
	if (!s)
		return 1;
	sl_sweep_stop(s);
	struct timespec until;
	clock_gettime(CLOCK_REALTIME, &until);
	double d = until.tv_nsec * 1e-9 + max_wait_s;
	until.tv_sec += (time_t)d;
	until.tv_nsec = (long)((d - floor(d)) * 1e9);
	pthread_mutex_lock(&s->mu);
	while (s->threads > 0)
		if (pthread_cond_timedwait(&s->cv, &s->mu, &until) == ETIMEDOUT)
			break;
	int left = s->threads;
	pthread_mutex_unlock(&s->mu);
	if (left > 0)
		return 0; /* its thread still holds s */
	pthread_mutex_destroy(&s->mu);
	pthread_cond_destroy(&s->cv);
	free(s);
	return 1;
}
