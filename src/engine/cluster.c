/* SPDX-License-Identifier: MIT */
/* cluster.c - devices, links, the run loop, memory accounting and compute. */
#include "cluster.h"
#include "knobs.h"
#include "device.h"

#include <errno.h>
#include <malloc.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include <cblas.h>

#include "internal.h"
#include "preset.h"
#include "units.h"

double sl_wall_now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static double thread_cpu_now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

void sl_cluster_config_default(sl_cluster_config *cfg)
{
	memset(cfg, 0, sizeof *cfg);
	cfg->devices = 4;
	cfg->devices_per_node = 0;
	cfg->topology = SL_TOPO_FULL;
	cfg->timing = SL_TIMING_MODEL;
	cfg->slowdown = 0;
	/* The closed-form machine the engine's tests and the lessons' formulas
	 * assume: the preset's BF16 peak for every GEMM, nothing else costs
	 * time, elements of 4 bytes.  Commands choose a real machine over it
	 * (sl_opts_finish). */
	cfg->precision = SL_PREC_BF16;
	sl_preset_apply(sl_preset_find(SL_PRESET_DEFAULT), cfg);
	cfg->precision = SL_PREC_FP32;
	cfg->efficiency = SL_EFF_IDEAL;
}

static int config_check(const sl_cluster_config *cfg, int maxdev, sl_err *err);

int sl_cluster_config_check(const sl_cluster_config *cfg, sl_err *err)
{
	return config_check(cfg, SL_MAX_DEVICES, err);
}

int sl_cluster_config_check_plan(const sl_cluster_config *cfg, sl_err *err)
{
	return config_check(cfg, SL_MAX_PLAN_DEVICES, err);
}

static int config_check(const sl_cluster_config *cfg, int maxdev, sl_err *err)
{
	char a[32], b[32];
	if (cfg->devices < 1 || cfg->devices > maxdev)
		return sl_fail(err, SL_EINVAL, "device count %d is out of range (1 to %d)",
		               cfg->devices, maxdev);
	/* Past this, threads sharing the host's cores doing real arithmetic on
	 * real buffers tell nothing a timing-only run does not. */
	if (cfg->devices > SL_MAX_FULL_DEVICES && !cfg->timing_only)
		return sl_fail(err, SL_EINVAL,
		               "%d devices: runs that compute go up to %d devices; more need a "
		               "timing-only run (--dry-run)",
		               cfg->devices, SL_MAX_FULL_DEVICES);
	if (cfg->timing_only && cfg->timing != SL_TIMING_MODEL)
		return sl_fail(err, SL_EINVAL,
		               "a timing-only run computes nothing to measure: it needs model "
		               "timing, not measured");
	if (cfg->devices_per_node < 0 || cfg->devices_per_node > cfg->devices)
		return sl_fail(err, SL_EINVAL,
		               "devices per node %d is out of range (1 to %d devices)",
		               cfg->devices_per_node, cfg->devices);
	if (cfg->devices_per_node > 0 && cfg->devices % cfg->devices_per_node != 0)
		return sl_fail(err, SL_EINVAL,
		               "%d devices do not split into nodes of %d: the node size must "
		               "divide the device count",
		               cfg->devices, cfg->devices_per_node);
	if (cfg->topology == SL_TOPO_RING && cfg->devices_per_node > 0 &&
	    cfg->devices_per_node != cfg->devices)
		return sl_fail(err, SL_EINVAL,
		               "the ring topology is one node: drop --devices-per-node");
	if (!(cfg->flops > 0) || !isfinite(cfg->flops))
		return sl_fail(err, SL_EINVAL, "device compute rate must be positive");
	if (cfg->memory == 0)
		return sl_fail(err, SL_EINVAL, "device memory must be positive");
	const sl_record_filter *rf = &cfg->record;
	if (rf->nranges < 0 || rf->nranges > SL_RECORD_RANGES)
		return sl_fail(err, SL_EINVAL, "the devices traced are %d ranges: at most %d",
		               rf->nranges, SL_RECORD_RANGES);
	for (int r = 0; r < rf->nranges; r++)
		if (rf->ranges[r][0] < 0 || rf->ranges[r][0] > rf->ranges[r][1] ||
		    rf->ranges[r][1] >= cfg->devices) {
			char which[32];
			int n = snprintf(which, sizeof which, "%d", rf->ranges[r][0]);
			if (rf->ranges[r][1] != rf->ranges[r][0])
				snprintf(which + n, sizeof which - (size_t)n, "-%d",
				         rf->ranges[r][1]);
			return sl_fail(err, SL_EINVAL,
			               "device%s %s to trace: the run has %d device%s (0 to %d)",
			               rf->ranges[r][1] != rf->ranges[r][0] ? "s" : "", which,
			               cfg->devices, cfg->devices == 1 ? "" : "s",
			               cfg->devices - 1);
		}
	if (rf->step_lo < 0 || rf->step_lo > rf->step_hi || (rf->step_hi > 0 && rf->step_lo < 1))
		return sl_fail(err, SL_EINVAL,
		               "steps %d-%d to trace: from 1, the first no later than "
		               "the last",
		               rf->step_lo, rf->step_hi);
	/* The ranges are the options' (knobs.c). */
	const sl_link_spec *sp[2] = {&cfg->intra, &cfg->inter};
	const sl_knob *bw = sl_knob_of(SL_OPT_BANDWIDTH), *lat = sl_knob_of(SL_OPT_LATENCY);
	const sl_knob *slow = sl_knob_of(SL_OPT_SLOWDOWN);
	for (int i = 0; i < 2; i++) {
		const char *which = i ? "inter-node" : "intra-node";
		if (!(sp[i]->bandwidth > 0) || !isfinite(sp[i]->bandwidth))
			return sl_fail(err, SL_EINVAL, "%s bandwidth must be positive", which);
		if (sp[i]->bandwidth < bw->lo || sp[i]->bandwidth > bw->hi)
			return sl_fail(err, SL_EINVAL, "%s bandwidth %s is out of range (%s)",
			               which, sl_fmt_rate(sp[i]->bandwidth, a, sizeof a),
			               bw->range);
		if (!(sp[i]->latency >= lat->lo) || sp[i]->latency > lat->hi)
			return sl_fail(err, SL_EINVAL, "%s latency %s is out of range (%s)", which,
			               sl_fmt_time(sp[i]->latency, b, sizeof b), lat->range);
	}
	if (cfg->slowdown != 0 && !(cfg->slowdown >= slow->lo && cfg->slowdown <= slow->hi))
		return sl_fail(err, SL_EINVAL, "slowdown %g is out of range (%s, or 0 for none)",
		               cfg->slowdown, slow->range);
	return SL_OK;
}

static int node_of(const sl_cluster_config *cfg, int d)
{
	return cfg->devices_per_node > 0 ? d / cfg->devices_per_node : 0;
}

static int config_hops(const sl_cluster_config *cfg, int src, int dst)
{
	if (src == dst)
		return 0;
	if (cfg->topology != SL_TOPO_RING)
		return 1;
	int d = abs(src - dst);
	return d < cfg->devices - d ? d : cfg->devices - d;
}

int sl_cluster_hops(const sl_cluster *c, int src, int dst)
{
	return config_hops(&c->cfg, src, dst);
}

int sl_cluster_same_node(const sl_cluster *c, int a, int b)
{
	return sl_cluster_config_same_node(&c->cfg, a, b);
}

static int rank_node(const sl_cluster_config *cfg, const int *ranks, int i)
{
	return node_of(cfg, ranks ? ranks[i] : i);
}

double sl_cluster_ring_stripes(const sl_cluster *c, const int *ranks, int p, int r)
{
	sl_cluster *m = (sl_cluster *)c;
	pthread_mutex_lock(&m->pair_mu);
	sl_cluster_config t = c->cfg;
	t.intra = c->tuned_intra;
	t.inter = c->tuned_inter;
	pthread_mutex_unlock(&m->pair_mu);
	return sl_ring_stripes(&t, ranks, p, r);
}

double sl_ring_stripes_runs(const sl_cluster_config *cfg, int p, int ka, int kb)
{
	if (cfg->efficiency != SL_EFF_REALISTIC || cfg->topology != SL_TOPO_FULL || p < 3 ||
	    cfg->devices_per_node < 2 || !(cfg->inter.bandwidth > 0))
		return 1;
	double k = ka < kb ? ka : kb, cap = cfg->intra.bandwidth / cfg->inter.bandwidth;
	if (k > cap)
		k = cap;
	return k > 1 ? k : 1;
}

double sl_ring_stripes(const sl_cluster_config *cfg, const int *ranks, int p, int r)
{
	if (sl_ring_stripes_runs(cfg, p, 2, 2) == 1)
		return 1;
	int a = rank_node(cfg, ranks, r), b = rank_node(cfg, ranks, (r + 1) % p);
	if (a == b)
		return 1;
	int ka = 0, kb = 0, runs_a = 0, runs_b = 0;
	for (int i = 0, prev = rank_node(cfg, ranks, p - 1); i < p; i++) {
		int n = rank_node(cfg, ranks, i);
		ka += n == a;
		kb += n == b;
		runs_a += n == a && prev != a;
		runs_b += n == b && prev != b;
		prev = n;
	}
	if (runs_a != 1 || runs_b != 1)
		return 1;
	return sl_ring_stripes_runs(cfg, p, ka, kb);
}

int sl_cluster_config_same_node(const sl_cluster_config *cfg, int a, int b)
{
	return node_of(cfg, a) == node_of(cfg, b);
}

int sl_ports_shared(const sl_cluster_config *cfg)
{
	return cfg->efficiency == SL_EFF_REALISTIC && cfg->topology == SL_TOPO_FULL;
}

int sl_port_share(const sl_cluster_config *cfg, int dev, const int *peers, int n, int i)
{
	if (n < 2 || !sl_ports_shared(cfg))
		return 1;
	int same = node_of(cfg, peers[i]) == node_of(cfg, dev), k = 0;
	for (int j = 0; j < n; j++)
		k += (node_of(cfg, peers[j]) == node_of(cfg, dev)) == same;
	return k;
}

sl_link_spec sl_cluster_config_link(const sl_cluster_config *cfg, int src, int dst)
{
	const sl_link_spec *sp = node_of(cfg, src) == node_of(cfg, dst) ? &cfg->intra : &cfg->inter;
	sl_link_spec r = {sp->bandwidth, sp->latency * config_hops(cfg, src, dst)};
	return r;
}

/* The figures of link s->d by its class (call with pair_mu held, or before
 * any other thread can turn a knob). */
static sl_link_spec class_spec(const sl_cluster *c, int s, int d)
{
	return sl_cluster_config_link(&c->cfg, s, d);
}

/* The class figures of a pair as they were when the run started. */
static sl_link_spec tuned_class(const sl_cluster *c, int s, int d)
{
	sl_cluster_config t = c->cfg;
	t.intra = c->tuned_intra;
	t.inter = c->tuned_inter;
	return sl_cluster_config_link(&t, s, d);
}

static void link_reset_spec(sl_cluster *c, struct sl_pair *p, int s, int d)
{
	sl_link_spec sp = class_spec(c, s, d);
	atomic_store(&p->link.bandwidth, sp.bandwidth);
	atomic_store(&p->link.latency, sp.latency);
}

struct sl_pair *sl_pair_make(sl_cluster *c, int src, int dst)
{
	size_t i = (size_t)src * c->n + dst;
	pthread_mutex_lock(&c->pair_mu);
	struct sl_pair *p = atomic_load(&c->pair[i]);
	if (p)
		goto out;
	if (c->nmade == c->capmade) {
		size_t cap = c->capmade ? 2 * c->capmade : 64;
		struct sl_pair **m = realloc(c->made, cap * sizeof *m);
		if (!m)
			goto out;
		c->made = m;
		c->capmade = cap;
	}
	if (!(p = calloc(1, sizeof *p)))
		goto out;
	p->src = src;
	p->dst = dst;
	link_reset_spec(c, p, src, dst);
	p->link.tuned = tuned_class(c, src, dst);
	pthread_mutex_init(&p->chan.mu, NULL);
	pthread_cond_init(&p->chan.cv, NULL);
	c->made[c->nmade++] = p;
	atomic_store_explicit(&c->pair[i], p, memory_order_release);
out:
	pthread_mutex_unlock(&c->pair_mu);
	return p;
}

sl_cluster *sl_cluster_create(const sl_cluster_config *cfg, sl_err *err)
{
	if (sl_cluster_config_check(cfg, err))
		return NULL;
	sl_cluster *c = calloc(1, sizeof *c);
	if (!c) {
		sl_fail(err, SL_ENOMEM, "out of host memory");
		return NULL;
	}
	c->cfg = *cfg;
	c->tuned_intra = cfg->intra;
	c->tuned_inter = cfg->inter;
	int n = c->n = cfg->devices;
	c->dev = calloc((size_t)n, sizeof *c->dev);
	c->pair = calloc((size_t)n * n, sizeof *c->pair);
	c->trace = sl_trace_create(n);
	const sl_record_filter *rf = &cfg->record;
	if (rf->nranges > 0)
		c->rec_dev = calloc((size_t)n, 1);
	if (!c->dev || !c->pair || !c->trace || (rf->nranges > 0 && !c->rec_dev)) {
		free(c->dev);
		free(c->pair);
		free(c->rec_dev);
		sl_trace_destroy(c->trace);
		free(c);
		sl_fail(err, SL_ENOMEM, "out of host memory");
		return NULL;
	}
	for (int r = 0; r < rf->nranges; r++)
		for (int d = rf->ranges[r][0]; d <= rf->ranges[r][1]; d++)
			c->rec_dev[d] = 1;
	c->rec_off = rf->off;
	c->rec_lo = rf->step_lo;
	c->rec_hi = rf->step_hi;
	for (int i = 0; i < n; i++) {
		c->dev[i].c = c;
		c->dev[i].id = i;
		c->dev[i].node = node_of(cfg, i);
		c->dev[i].batch = 1;
		pthread_mutex_init(&c->dev[i].mu, NULL);
	}
	pthread_mutex_init(&c->pair_mu, NULL);
	pthread_condattr_t ca;
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_mutex_init(&c->pace_mu, NULL);
	pthread_cond_init(&c->pace_cv, &ca);
	pthread_condattr_destroy(&ca);
	pthread_mutex_init(&c->bar_mu, NULL);
	pthread_cond_init(&c->bar_cv, NULL);
	c->slowdown = cfg->slowdown;
	c->breakpoint = INFINITY;
	return c;
}

void sl_cluster_destroy(sl_cluster *c)
{
	if (!c)
		return;
	for (size_t i = 0; i < c->nmade; i++) {
		pthread_mutex_destroy(&c->made[i]->chan.mu);
		pthread_cond_destroy(&c->made[i]->chan.cv);
		free(c->made[i]);
	}
	free(c->made);
	free(c->pair);
	pthread_mutex_destroy(&c->pair_mu);
	for (int i = 0; i < c->n; i++)
		pthread_mutex_destroy(&c->dev[i].mu);
	pthread_mutex_destroy(&c->pace_mu);
	pthread_cond_destroy(&c->pace_cv);
	pthread_mutex_destroy(&c->bar_mu);
	pthread_cond_destroy(&c->bar_cv);
	sl_trace_destroy(c->trace);
	free(c->rec_dev);
	free(c->dev);
	free(c);
}

void sl_dev_set_step(sl_dev *d, int step)
{
	d->step = step;
}

const sl_cluster_config *sl_cluster_config_of(const sl_cluster *c)
{
	return &c->cfg;
}

int sl_cluster_devices(const sl_cluster *c)
{
	return c->n;
}

sl_trace *sl_cluster_trace(sl_cluster *c)
{
	return c->trace;
}

/* ---- cancellation and knobs ---- */

static void wake_everyone(sl_cluster *c)
{
	/* A pair made after this sees the cancel flag before it ever waits. */
	pthread_mutex_lock(&c->pair_mu);
	for (size_t i = 0; i < c->nmade; i++) {
		struct sl_chan *ch = &c->made[i]->chan;
		pthread_mutex_lock(&ch->mu);
		pthread_cond_broadcast(&ch->cv);
		pthread_mutex_unlock(&ch->mu);
	}
	pthread_mutex_unlock(&c->pair_mu);
	pthread_mutex_lock(&c->pace_mu);
	pthread_cond_broadcast(&c->pace_cv);
	pthread_mutex_unlock(&c->pace_mu);
	pthread_mutex_lock(&c->bar_mu);
	pthread_cond_broadcast(&c->bar_cv);
	pthread_mutex_unlock(&c->bar_mu);
}

void sl_cluster_cancel(sl_cluster *c)
{
	atomic_store(&c->cancel, 1);
	wake_everyone(c);
}

int sl_cluster_cancelled(const sl_cluster *c)
{
	return atomic_load(&((sl_cluster *)c)->cancel);
}

static void pace_wake(sl_cluster *c)
{
	pthread_mutex_lock(&c->pace_mu);
	pthread_cond_broadcast(&c->pace_cv);
	pthread_mutex_unlock(&c->pace_mu);
}

/* A knob on one pair holds only on a made pair, so the pairs it names are
 * made (all n*n of them for src = dst = -1: on a large cluster prefer the
 * class knob below). */
void sl_cluster_set_link(sl_cluster *c, int src, int dst, double bandwidth, double latency)
{
	for (int s = 0; s < c->n; s++)
		for (int d = 0; d < c->n; d++) {
			if (s == d || (src >= 0 && s != src) || (dst >= 0 && d != dst))
				continue;
			struct sl_pair *p = sl_pair_at(c, s, d);
			if (!p)
				continue; /* out of host memory: the knob cannot hold */
			if (bandwidth > 0)
				atomic_store(&p->link.bandwidth, bandwidth);
			if (latency >= 0)
				atomic_store(&p->link.latency, latency);
		}
	pace_wake(c);
}

void sl_cluster_set_class(sl_cluster *c, int inter_node, double bandwidth, double latency)
{
	pthread_mutex_lock(&c->pair_mu);
	sl_link_spec *sp = inter_node ? &c->cfg.inter : &c->cfg.intra;
	if (bandwidth > 0)
		sp->bandwidth = bandwidth;
	if (latency >= 0)
		sp->latency = latency;
	/* Pairs not made yet will start from the new figures. */
	for (size_t i = 0; i < c->nmade; i++) {
		int s = c->made[i]->src, d = c->made[i]->dst;
		if (s != d && !sl_cluster_same_node(c, s, d) == !!inter_node)
			link_reset_spec(c, c->made[i], s, d);
	}
	pthread_mutex_unlock(&c->pair_mu);
	pace_wake(c);
}

void sl_cluster_set_slowdown(sl_cluster *c, double slowdown)
{
	pthread_mutex_lock(&c->pace_mu);
	double now = sl_wall_now();
	if (c->slowdown > 0 && slowdown > 0) {
		double emul_now = (now - c->origin) / c->slowdown;
		c->origin = now - emul_now * slowdown;
	}
	c->slowdown = slowdown;
	pthread_cond_broadcast(&c->pace_cv);
	pthread_mutex_unlock(&c->pace_mu);
}

void sl_cluster_pause(sl_cluster *c, int paused)
{
	pthread_mutex_lock(&c->pace_mu);
	double now = sl_wall_now();
	if (paused && !c->paused) {
		c->paused = 1;
		c->pause_wall = now;
	} else if (!paused && c->paused) {
		c->origin += now - c->pause_wall;
		c->paused = 0;
	}
	pthread_cond_broadcast(&c->pace_cv);
	pthread_mutex_unlock(&c->pace_mu);
}

int sl_cluster_paused(const sl_cluster *c)
{
	sl_cluster *m = (sl_cluster *)c;
	pthread_mutex_lock(&m->pace_mu);
	int p = m->paused;
	pthread_mutex_unlock(&m->pace_mu);
	return p;
}

static double playback_locked(const sl_cluster *c)
{
	if (!(c->slowdown > 0))
		return INFINITY;
	double wall = c->paused ? c->pause_wall : sl_wall_now();
	double t = (wall - c->origin) / c->slowdown;
	if (t < 0)
		t = 0;
	return t < c->breakpoint ? t : c->breakpoint;
}

void sl_cluster_set_breakpoint(sl_cluster *c, double t)
{
	pthread_mutex_lock(&c->pace_mu);
	/* Playback that stood still at the old breakpoint goes on from there,
	 * not from where the wall clock would have taken it meanwhile. */
	if (c->slowdown > 0 && isfinite(c->breakpoint)) {
		double wall = c->paused ? c->pause_wall : sl_wall_now();
		if ((wall - c->origin) / c->slowdown > c->breakpoint)
			c->origin = wall - c->breakpoint * c->slowdown;
	}
	c->breakpoint = t;
	pthread_cond_broadcast(&c->pace_cv);
	pthread_mutex_unlock(&c->pace_mu);
}

double sl_cluster_now(const sl_cluster *c)
{
	sl_cluster *m = (sl_cluster *)c;
	pthread_mutex_lock(&m->pace_mu);
	double t = playback_locked(m);
	pthread_mutex_unlock(&m->pace_mu);
	return t;
}

double sl_cluster_slowdown(const sl_cluster *c)
{
	sl_cluster *m = (sl_cluster *)c;
	pthread_mutex_lock(&m->pace_mu);
	double s = m->slowdown;
	pthread_mutex_unlock(&m->pace_mu);
	return s;
}

/* Readers do not make pairs: one not made yet has its class's figures and
 * has carried nothing. */
static struct sl_pair *pair_peek(const sl_cluster *c, int src, int dst)
{
	return atomic_load_explicit(&c->pair[(size_t)src * c->n + dst], memory_order_acquire);
}

sl_link_spec sl_cluster_link(const sl_cluster *c, int src, int dst)
{
	struct sl_pair *p = pair_peek(c, src, dst);
	if (p) {
		sl_link_spec s = {atomic_load(&p->link.bandwidth), atomic_load(&p->link.latency)};
		return s;
	}
	sl_cluster *m = (sl_cluster *)c;
	pthread_mutex_lock(&m->pair_mu);
	sl_link_spec s = class_spec(c, src, dst);
	pthread_mutex_unlock(&m->pair_mu);
	return s;
}

sl_link_spec sl_cluster_link_tuned(const sl_cluster *c, int src, int dst)
{
	struct sl_pair *p = pair_peek(c, src, dst);
	if (p)
		return p->link.tuned;
	sl_cluster *m = (sl_cluster *)c;
	pthread_mutex_lock(&m->pair_mu);
	sl_link_spec s = tuned_class(c, src, dst);
	pthread_mutex_unlock(&m->pair_mu);
	return s;
}

sl_link_state sl_cluster_link_state(const sl_cluster *c, int src, int dst)
{
	struct sl_pair *p = pair_peek(c, src, dst);
	sl_link_state s = {0, 0, 0};
	if (p) {
		s.inflight_done = atomic_load(&p->link.inflight_done);
		s.inflight_total = atomic_load(&p->link.inflight_total);
		s.total = atomic_load(&p->link.total);
	}
	return s;
}

sl_dev_stats sl_cluster_dev_stats(const sl_cluster *c, int dev)
{
	struct sl_dev *d = &c->dev[dev];
	pthread_mutex_lock(&d->mu);
	sl_dev_stats s = d->st;
	s.clock = d->clock;
	pthread_mutex_unlock(&d->mu);
	return s;
}

/* ---- pacing ---- */

int sl_pace_until(sl_cluster *c, double t)
{
	pthread_mutex_lock(&c->pace_mu);
	for (;;) {
		if (atomic_load(&c->cancel)) {
			pthread_mutex_unlock(&c->pace_mu);
			return SL_ECANCEL;
		}
		if (c->paused || t > c->breakpoint) {
			pthread_cond_wait(&c->pace_cv, &c->pace_mu);
			continue;
		}
		if (!(c->slowdown > 0))
			break;
		double deadline = c->origin + t * c->slowdown;
		/* A passed deadline is not slept on: even a zero sleep costs tens
		 * of microseconds here. */
		if (sl_wall_now() >= deadline)
			break;
		struct timespec ts;
		ts.tv_sec = (time_t)deadline;
		ts.tv_nsec = (long)((deadline - (double)ts.tv_sec) * 1e9);
		if (ts.tv_nsec >= 1000000000L) {
			ts.tv_sec++;
			ts.tv_nsec -= 1000000000L;
		}
		pthread_cond_timedwait(&c->pace_cv, &c->pace_mu, &ts);
	}
	pthread_mutex_unlock(&c->pace_mu);
	return SL_OK;
}

/* ---- host memory: an address-space limit (ulimit -v) ---- */

/* OpenBLAS takes one buffer per concurrent caller (128 MiB in Debian's
 * build) on first use and keeps it for reuse; when malloc refuses one it
 * retries forever.  So under a limit the buffer is made once, here, after
 * checking that it fits, and calls are serialized so that one suffices.
 * With no limit nothing changes. */
#define BLAS_BUFFER_PROBE ((size_t)160 << 20)
#define THREAD_SPACE (((size_t)1 << 20) + ((size_t)64 << 10)) /* a device stack and its guard */
#define RUN_SLACK ((size_t)32 << 20)                          /* malloc's own room */

static pthread_once_t blas_once = PTHREAD_ONCE_INIT;
static int blas_limited, blas_ready;
static pthread_mutex_t blas_mu = PTHREAD_MUTEX_INITIALIZER;

/* The address space left under RLIMIT_AS, or SIZE_MAX with no limit. */
static size_t as_headroom(void)
{
	struct rlimit rl;
	if (getrlimit(RLIMIT_AS, &rl) != 0 || rl.rlim_cur == RLIM_INFINITY)
		return SIZE_MAX;
	unsigned long pages = 0;
	FILE *f = fopen("/proc/self/statm", "r");
	if (f) {
		if (fscanf(f, "%lu", &pages) != 1)
			pages = 0;
		fclose(f);
	}
	size_t used = (size_t)pages * (size_t)sysconf(_SC_PAGESIZE);
	return used < rl.rlim_cur ? (size_t)rl.rlim_cur - used : 0;
}

static void blas_init(void)
{
	if (as_headroom() == SIZE_MAX) {
		blas_ready = 1;
		return;
	}
	blas_limited = 1;
	/* Each thread's first malloc may reserve a 64 MiB arena of its own (up
	 * to 8 per core): under a limit that space is what device stacks then
	 * lack.  One arena is plenty for threads that mostly wait. */
	mallopt(M_ARENA_MAX, 1);
	void *p = mmap(NULL, BLAS_BUFFER_PROBE, PROT_NONE,
	               MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (p == MAP_FAILED)
		return;
	munmap(p, BLAS_BUFFER_PROBE);
	float a = 1, b = 1, c = 0; /* OpenBLAS makes its buffer now, while it surely fits */
	cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, 1, 1, 1, 1.0f, &a, 1, &b, 1, 0.0f,
	            &c, 1);
	blas_ready = 1;
}

int sl_host_blas_ready(sl_err *err)
{
	pthread_once(&blas_once, blas_init);
	if (blas_ready)
		return SL_OK;
	return sl_fail(err, SL_ENOMEM,
	               "out of memory: OpenBLAS needs about %zu MiB of address space "
	               "for its buffer and the limit (ulimit -v) leaves %zu MiB",
	               BLAS_BUFFER_PROBE >> 20, as_headroom() >> 20);
}

static void blas_enter(void)
{
	if (blas_limited)
		pthread_mutex_lock(&blas_mu);
}

static void blas_leave(void)
{
	if (blas_limited)
		pthread_mutex_unlock(&blas_mu);
}

void sl_host_sgemm(int trans_a, int trans_b, int m, int n, int k, float alpha, const float *a,
                   int lda, const float *b, int ldb, float beta, float *c, int ldc)
{
	pthread_once(&blas_once, blas_init);
	blas_enter();
	cblas_sgemm(CblasRowMajor, trans_a ? CblasTrans : CblasNoTrans,
	            trans_b ? CblasTrans : CblasNoTrans, m, n, k, alpha, a, lda, b, ldb, beta, c,
	            ldc);
	blas_leave();
}

/* Refuse a run whose device threads cannot all start under the limit,
 * before any starts: one clear line instead of a thread failing midway. */
static int check_host_room(const sl_cluster *c, sl_err *err)
{
	if (!c->cfg.timing_only && sl_host_blas_ready(err))
		return SL_ENOMEM;
	size_t room = as_headroom();
	if (room == SIZE_MAX)
		return SL_OK;
	size_t need = (size_t)c->n * THREAD_SPACE + RUN_SLACK;
	if (need > room)
		return sl_fail(
		    err, SL_ENOMEM,
		    "out of memory: %d device threads need about %zu MiB of "
		    "address space and the limit (ulimit -v) leaves %zu MiB: use fewer devices "
		    "or raise the limit",
		    c->n, need >> 20, room >> 20);
	return SL_OK;
}

/* ---- the run ---- */

static void *device_main(void *p)
{
	struct sl_dev *d = p;
	sl_cluster *c = d->c;
	d->err.code = 0;
	d->err.msg[0] = 0;
	d->rc = c->prog(d, c->arg, &d->err);
	if (d->rc != SL_OK)
		sl_cluster_cancel(c);
	return NULL;
}

static atomic_ulong runs_started;

unsigned long sl_cluster_runs_started(void)
{
	return atomic_load(&runs_started);
}

int sl_cluster_run(sl_cluster *c, sl_program prog, void *arg, sl_err *err)
{
	atomic_fetch_add(&runs_started, 1);
	atomic_store(&c->cancel, 0);
	sl_trace_clear(c->trace);
	for (int i = 0; i < c->n; i++) {
		struct sl_dev *d = &c->dev[i];
		d->clock = 0;
		d->stream = 0;
		memset(d->sclock, 0, sizeof d->sclock);
		memset(d->sbusy, 0, sizeof d->sbusy);
		d->rx_free[0] = d->rx_free[1] = 0;
		d->op = -1;
		d->coll.op = -1;
		d->coll_seq = 0;
		d->batch = 1;
		d->share = 1;
		memset(&d->work, 0, sizeof d->work);
		memset(&d->p2p, 0, sizeof d->p2p);
		memset(&d->io, 0, sizeof d->io);
		d->mb = -1;
		d->rc = SL_OK;
		memset(&d->st, 0, sizeof d->st);
	}
	pthread_mutex_lock(&c->pair_mu);
	c->tuned_intra = c->cfg.intra;
	c->tuned_inter = c->cfg.inter;
	for (size_t i = 0; i < c->nmade; i++) {
		struct sl_link *l = &c->made[i]->link;
		l->free_at = 0;
		l->tuned.bandwidth = atomic_load(&l->bandwidth);
		l->tuned.latency = atomic_load(&l->latency);
		atomic_store(&l->inflight_done, 0);
		atomic_store(&l->inflight_total, 0);
		atomic_store(&l->total, 0);
		c->made[i]->chan.posted = c->made[i]->chan.taken = 0;
	}
	pthread_mutex_unlock(&c->pair_mu);
	c->bar_count = 0;
	c->prog = prog;
	c->arg = arg;
	pthread_mutex_lock(&c->pace_mu);
	c->wall0 = c->origin = sl_wall_now();
	if (c->paused)
		c->pause_wall = c->origin;
	pthread_mutex_unlock(&c->pace_mu);

	int started = 0, rc = check_host_room(c, err);
	if (rc != SL_OK)
		return rc;
	pthread_attr_t at;
	pthread_attr_init(&at);
	/* Device programs keep their data in accounted heap buffers. */
	pthread_attr_setstacksize(&at, 1 << 20);
	for (; started < c->n; started++) {
		int e = pthread_create(&c->dev[started].thread, &at, device_main, &c->dev[started]);
		if (e == EAGAIN ||
		    e == ENOMEM) { /* pthread_create returns its error, errno is stale */
			rc = sl_fail(err, SL_ENOMEM,
			             "out of memory: cannot start device thread %d of %d: %s",
			             started, c->n, strerror(e));
			sl_cluster_cancel(c);
			break;
		}
		if (e != 0) {
			rc = sl_fail(err, SL_ESYS, "cannot start device thread %d: %s", started,
			             strerror(e));
			sl_cluster_cancel(c);
			break;
		}
	}
	pthread_attr_destroy(&at);
	for (int i = 0; i < started; i++)
		pthread_join(c->dev[i].thread, NULL);
	if (rc != SL_OK)
		return rc;
	/* The first real error wins over the cancellations it caused. */
	for (int i = 0; i < c->n; i++)
		if (c->dev[i].rc != SL_OK && c->dev[i].rc != SL_ECANCEL) {
			if (err)
				*err = c->dev[i].err;
			return c->dev[i].rc;
		}
	for (int i = 0; i < c->n; i++)
		if (c->dev[i].rc != SL_OK)
			return sl_fail(err, SL_ECANCEL, "the run was cancelled");
	return SL_OK;
}

/* ---- on a device thread ---- */

static void dev_record(sl_dev *d, sl_ev_kind kind, int peer, double t0, double t1, double w0,
                       double w1, uint64_t bytes, double flops, const char *label,
                       int waits_stream);

int sl_dev_id(const sl_dev *d)
{
	return d->id;
}

int sl_dev_node(const sl_dev *d)
{
	return d->node;
}

sl_cluster *sl_dev_cluster(sl_dev *d)
{
	return d->c;
}

double sl_dev_clock(const sl_dev *d)
{
	return d->clock;
}

void sl_dev_stream(sl_dev *d, int s)
{
	if (s == d->stream || s < 0 || s >= SL_STREAMS)
		return;
	double now = d->clock;
	pthread_mutex_lock(&d->mu);
	d->sclock[d->stream] = now;
	d->stream = s;
	/* back to the compute stream: it goes on from its own clock */
	if (s == SL_STREAM_COMPUTE) {
		d->clock = d->sclock[s];
	} else if (now > d->sclock[s]) {
		/* idle until now: its next busy stretch starts here */
		d->sbusy[s] = now;
		d->clock = now;
	} else {
		d->clock = d->sclock[s];
	}
	pthread_mutex_unlock(&d->mu);
}

double sl_dev_stream_now(const sl_dev *d, int s)
{
	return s == d->stream ? d->clock : d->sclock[s];
}

void sl_dev_stream_wait(sl_dev *d, int s)
{
	if (s == d->stream || s < 0 || s >= SL_STREAMS)
		return;
	sl_dev_wait_event(d, d->sclock[s]);
}

/* The clock forward to t as a wait, counted in *sum (a stat of d's). */
static void wait_to(sl_dev *d, double t, const char *label, double *sum)
{
	if (t <= d->clock)
		return;
	double w = sl_wall_now();
	/* a wait for another stream is communication not hidden (waits_stream) */
	dev_record(d, SL_EV_WAIT, -1, d->clock, t, w, w, 0, 0, label, sum == &d->st.stream_wait_s);
	pthread_mutex_lock(&d->mu);
	*sum += t - d->clock;
	d->clock = t;
	pthread_mutex_unlock(&d->mu);
}

void sl_dev_wait_event(sl_dev *d, double t)
{
	wait_to(d, t, "waits for communication", &d->st.stream_wait_s);
}

int sl_dev_stream_of(const sl_dev *d)
{
	return d->stream;
}

void sl_dev_set_op(sl_dev *d, int op_id, int microbatch)
{
	d->op = op_id;
	d->mb = microbatch;
}

void sl_dev_set_work(sl_dev *d, const sl_ev_work *w)
{
	if (w)
		d->work = *w;
	else
		memset(&d->work, 0, sizeof d->work);
}

int sl_dev_next_coll(sl_dev *d)
{
	return d->coll_seq++;
}

void sl_dev_record(sl_dev *d, sl_ev_kind kind, int peer, double t0, double t1, double w0, double w1,
                   uint64_t bytes, double flops, const char *label)
{
	dev_record(d, kind, peer, t0, t1, w0, w1, bytes, flops, label, 0);
}

static void dev_record(sl_dev *d, sl_ev_kind kind, int peer, double t0, double t1, double w0,
                       double w1, uint64_t bytes, double flops, const char *label, int waits_stream)
{
	const sl_cluster *c = d->c;
	if (c->rec_off || (c->rec_dev && !c->rec_dev[d->id]) ||
	    (c->rec_hi && (d->step < c->rec_lo || d->step > c->rec_hi)))
		return;
	sl_event ev;
	memset(&ev, 0, sizeof ev);
	ev.dev = d->id;
	ev.peer = peer;
	ev.kind = kind;
	ev.op = d->op;
	ev.mb = d->mb;
	ev.step = d->step;
	ev.coll = d->coll;
	ev.work = d->work;
	ev.p2p = d->p2p;
	ev.io = d->io;
	ev.stream = d->stream;
	ev.waits_stream = waits_stream;
	ev.t0 = t0;
	ev.t1 = t1;
	ev.w0 = w0 - d->c->wall0;
	ev.w1 = w1 - d->c->wall0;
	ev.bytes = bytes;
	ev.flops = flops;
	if (label)
		snprintf(ev.label, sizeof ev.label, "%s", label);
	sl_trace_add(d->c->trace, &ev);
}

double sl_overlap_extra(const sl_cluster_config *cfg, int stream, const double *busy,
                        const double *sclock, double t0, double dt)
{
	double f = cfg && cfg->efficiency == SL_EFF_REALISTIC ? cfg->dm.overlap_slowdown : 0;
	if (!(f > 0) || stream != SL_STREAM_COMPUTE)
		return 0;
	/* The side streams' busy stretches after t0, by start, merged. */
	double a[SL_STREAMS], b[SL_STREAMS];
	int n = 0;
	for (int s = 1; s < SL_STREAMS; s++)
		if (sclock[s] > t0 && sclock[s] > busy[s]) {
			double x = busy[s] > t0 ? busy[s] : t0, y = sclock[s];
			int j = n++;
			for (; j > 0 && a[j - 1] > x; j--) {
				a[j] = a[j - 1];
				b[j] = b[j - 1];
			}
			a[j] = x;
			b[j] = y;
		}
	int m = 0;
	for (int i = 0; i < n; i++) {
		if (m > 0 && a[i] <= b[m - 1]) {
			if (b[i] > b[m - 1])
				b[m - 1] = b[i];
			continue;
		}
		a[m] = a[i];
		b[m++] = b[i];
	}
	n = m;
	/* The kernel's work progresses at 1/(1 + f) while a stretch lasts: the
	 * same end whether kernels run one by one or as one. */
	double t = t0, left = dt;
	for (int i = 0; i < n; i++) {
		if (a[i] > t) {
			if (left <= a[i] - t)
				return 0;
			left -= a[i] - t;
			t = a[i];
		}
		double cap = (b[i] - t) / (1 + f);
		if (left <= cap)
			return t + left * (1 + f) - t0 - dt;
		left -= cap;
		t = b[i];
	}
	return t + left - t0 - dt;
}

void sl_dev_wait_until(sl_dev *d, double t)
{
	wait_to(d, t, "idle", &d->st.wait_s);
}

int sl_dev_reserve(sl_dev *d, uint64_t bytes, const char *what, sl_err *err)
{
	char a[32], b[32], cap[32];
	pthread_mutex_lock(&d->mu);
	uint64_t cur = d->st.mem_current, capacity = d->c->cfg.memory;
	if (bytes > capacity || cur > capacity - bytes) {
		pthread_mutex_unlock(&d->mu);
		return sl_fail(err, SL_EDEVMEM,
		               "device %d is out of memory: %s needs %s but only %s of %s is free",
		               d->id, what ? what : "a buffer",
		               sl_fmt_bytes((double)bytes, a, sizeof a),
		               sl_fmt_bytes((double)(capacity - cur), b, sizeof b),
		               sl_fmt_bytes((double)capacity, cap, sizeof cap));
	}
	d->st.mem_current = cur + bytes;
	if (d->st.mem_current > d->st.mem_peak)
		d->st.mem_peak = d->st.mem_current;
	pthread_mutex_unlock(&d->mu);
	return SL_OK;
}

void sl_dev_release(sl_dev *d, uint64_t bytes)
{
	pthread_mutex_lock(&d->mu);
	d->st.mem_current = bytes > d->st.mem_current ? 0 : d->st.mem_current - bytes;
	pthread_mutex_unlock(&d->mu);
}

void *sl_dev_alloc(sl_dev *d, size_t bytes, const char *what, sl_err *err)
{
	if (sl_dev_reserve(d, bytes, what, err))
		return NULL;
	void *p = malloc(bytes ? bytes : 1);
	if (!p) {
		sl_dev_release(d, bytes);
		char a[32];
		sl_fail(err, SL_ENOMEM, "device %d: the host cannot allocate %s for %s", d->id,
		        sl_fmt_bytes((double)bytes, a, sizeof a), what ? what : "a buffer");
	}
	return p;
}

void sl_dev_free(sl_dev *d, void *p, size_t bytes)
{
	if (!p)
		return;
	free(p);
	sl_dev_release(d, bytes);
}

double sl_dev_cpu_mark(void)
{
	return thread_cpu_now();
}

/* Advance the clock by one compute of dt and record it. */
static int account_compute(sl_dev *d, double dt, double flops, double cpu_s, double w0,
                           const char *label, sl_err *err)
{
	double t0 = d->clock;
	dt += sl_overlap_extra(&d->c->cfg, d->stream, d->sbusy, d->sclock, t0, dt);
	double t1 = t0 + dt;
	if (sl_pace_until(d->c, t1))
		return sl_fail(err, SL_ECANCEL, "cancelled");
	sl_dev_record(d, SL_EV_COMPUTE, -1, t0, t1, w0, sl_wall_now(), 0, flops, label);
	pthread_mutex_lock(&d->mu);
	d->clock = t1;
	d->st.compute_s += dt;
	if (d->stream != SL_STREAM_COMPUTE)
		d->st.compute_side_s += dt;
	d->st.flops += flops;
	d->st.cpu_s += cpu_s;
	pthread_mutex_unlock(&d->mu);
	return SL_OK;
}

void sl_dev_set_batch(sl_dev *d, int batch)
{
	d->batch = batch > 1 ? batch : 1;
}

void sl_dev_set_fused(sl_dev *d, int on, double share)
{
	d->fused = on;
	d->share = on ? share : 1;
}

/* A product's FLOPs as executed: inside a fused kernel, its tiles' share. */
static double gemm_flops(const sl_dev *d, int m, int n, int k)
{
	double fl = 2.0 * m * n * k;
	return d->fused ? fl * d->share : fl;
}

/* Model timing: this product's share of the batched kernel it is part of. */
static double gemm_dt(const sl_dev *d, int m, int n, int k, double cpu_s)
{
	const sl_cluster_config *cfg = &d->c->cfg;
	if (cfg->timing != SL_TIMING_MODEL)
		return cpu_s;
	if (d->fused)
		return sl_attn_s(cfg, gemm_flops(d, m, n, k));
	if (cfg->efficiency != SL_EFF_REALISTIC)
		return 2.0 * m * n * k / cfg->flops;
	return sl_gemm_s(cfg, m, n, k, d->batch) / d->batch;
}

int sl_dev_sgemm(sl_dev *d, int trans_a, int trans_b, int m, int n, int k, float alpha,
                 const float *a, int lda, const float *b, int ldb, float beta, float *c, int ldc,
                 const char *label, sl_err *err)
{
	if (atomic_load(&d->c->cancel))
		return sl_fail(err, SL_ECANCEL, "cancelled");
	if (m < 0 || n < 0 || k < 0)
		return sl_fail(err, SL_EINVAL, "negative GEMM shape");
	double fl = gemm_flops(d, m, n, k);
	if (d->c->cfg.timing_only)
		return account_compute(d, gemm_dt(d, m, n, k, 0), fl, 0, sl_wall_now(), label, err);
	double w0 = sl_wall_now(), c0 = thread_cpu_now();
	if (m > 0 && n > 0 && k > 0)
		sl_host_sgemm(trans_a, trans_b, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
	else if (m > 0 && n > 0 && beta != 1.0f)
		for (int i = 0; i < m; i++)
			for (int j = 0; j < n; j++)
				c[(size_t)i * ldc + j] *= beta;
	double cpu = thread_cpu_now() - c0;
	return account_compute(d, gemm_dt(d, m, n, k, cpu), fl, cpu, w0, label, err);
}

int sl_dev_compute(sl_dev *d, double flops, double cpu_mark, const char *label, sl_err *err)
{
	if (atomic_load(&d->c->cancel))
		return sl_fail(err, SL_ECANCEL, "cancelled");
	double now = sl_wall_now(), cpu = thread_cpu_now() - cpu_mark;
	double dt = d->c->cfg.timing == SL_TIMING_MODEL ? flops / d->c->cfg.flops : cpu;
	return account_compute(d, dt, flops, cpu, now, label, err);
}

int sl_dev_ew(sl_dev *d, double bytes, double cpu_mark, const char *label, sl_err *err)
{
	const sl_cluster_config *cfg = &d->c->cfg;
	if (cfg->timing == SL_TIMING_MODEL && (cfg->efficiency != SL_EFF_REALISTIC || d->fused))
		return SL_OK;
	if (atomic_load(&d->c->cancel))
		return sl_fail(err, SL_ECANCEL, "cancelled");
	double now = sl_wall_now(), cpu = thread_cpu_now() - cpu_mark;
	double dt =
	    cfg->timing == SL_TIMING_MODEL ? sl_mem_s(cfg, bytes * d->batch) / d->batch : cpu;
	return account_compute(d, dt, 0, cpu, now, label, err);
}

int sl_dev_storage(sl_dev *d, int write, uint64_t bytes, double bandwidth, const sl_ev_io *io,
                   const char *label, sl_err *err)
{
	if (atomic_load(&d->c->cancel))
		return sl_fail(err, SL_ECANCEL, "cancelled");
	if (!(bandwidth > 0))
		return sl_fail(err, SL_EINVAL, "the storage bandwidth must be positive");
	double w0 = sl_wall_now();
	double t0 = d->clock, t1 = t0 + (double)bytes / bandwidth;
	if (sl_pace_until(d->c, t1))
		return sl_fail(err, SL_ECANCEL, "cancelled");
	if (io)
		d->io = *io;
	sl_dev_record(d, write ? SL_EV_WRITE : SL_EV_READ, -1, t0, t1, w0, sl_wall_now(), bytes, 0,
	              label);
	memset(&d->io, 0, sizeof d->io);
	pthread_mutex_lock(&d->mu);
	d->clock = t1;
	d->st.io_s += t1 - t0;
	if (write)
		d->st.bytes_written += bytes;
	else
		d->st.bytes_read += bytes;
	pthread_mutex_unlock(&d->mu);
	return SL_OK;
}

int sl_dev_wall_barrier(sl_dev *d)
{
	sl_cluster *c = d->c;
	pthread_mutex_lock(&c->bar_mu);
	unsigned gen = c->bar_gen;
	if (++c->bar_count == c->n) {
		c->bar_count = 0;
		c->bar_gen++;
		pthread_cond_broadcast(&c->bar_cv);
	} else {
		while (gen == c->bar_gen && !atomic_load(&c->cancel))
			pthread_cond_wait(&c->bar_cv, &c->bar_mu);
	}
	pthread_mutex_unlock(&c->bar_mu);
	return atomic_load(&c->cancel) ? SL_ECANCEL : SL_OK;
}
