/* SPDX-License-Identifier: MIT */
/* testutil.h - shared helpers for the cmocka suites. */
#ifndef SL_TESTUTIL_H
#define SL_TESTUTIL_H

#include <math.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <unistd.h>

#include <cmocka.h>

#include "cluster.h"
#include "coll.h"
#include "model.h"
#include "preset.h"
#include "train.h"

/* The configuration tu_cluster builds: headless, model-timed, p devices on
 * one node with links of bandwidth bw and latency lat, and plenty of memory.
 * Tests adjust it before tu_create. */
static inline sl_cluster_config tu_config(int p, double bw, double lat)
{
	sl_cluster_config cfg;
	sl_cluster_config_default(&cfg);
	cfg.devices = p;
	cfg.intra.bandwidth = cfg.inter.bandwidth = bw;
	cfg.intra.latency = cfg.inter.latency = lat;
	cfg.memory = (uint64_t)1 << 34;
	cfg.timing = SL_TIMING_MODEL;
	cfg.slowdown = 0;
	return cfg;
}

static inline sl_cluster *tu_create(const sl_cluster_config *cfg)
{
	sl_err err = {0};
	sl_cluster *c = sl_cluster_create(cfg, &err);
	if (!c)
		fail_msg("cluster: %s", err.msg);
	return c;
}

static inline sl_cluster *tu_cluster(int p, double bw, double lat)
{
	sl_cluster_config cfg = tu_config(p, bw, lat);
	return tu_create(&cfg);
}

/* A lone collective on every device of the cluster, timing only (no
 * buffer): sl_cluster_run(c, tu_coll_prog, &job, err). */
typedef struct tu_coll_job {
	sl_coll_op op;
	sl_algo algo;
	size_t count;
} tu_coll_job;

static inline int tu_coll_prog(sl_dev *d, void *arg, sl_err *err)
{
	const tu_coll_job *j = arg;
	sl_group g = sl_group_all(sl_cluster_devices(sl_dev_cluster(d)));
	return sl_coll_run(d, &g, j->op, NULL, j->count, j->algo, err);
}

/* Simple deterministic values that sum exactly in fp32: small integers. */
static inline float tu_val(int rank, size_t i)
{
	return (float)((int)((i * 7 + (size_t)rank * 13) % 17) - 8);
}

/* |got - want| <= rel * |want| (exact when want is 0). */
static inline int tu_close(double got, double want, double rel)
{
	return fabs(got - want) <= rel * fabs(want);
}

/* Fail with a message naming what was compared unless got is close to want. */
static inline void tu_check_close(double got, double want, double rel, const char *what)
{
	if (!tu_close(got, want, rel))
		fail_msg("%s: got %.17g, want %.17g (relative difference %.3g, allowed %.3g)", what,
		         got, want, want != 0 ? fabs(got - want) / fabs(want) : fabs(got), rel);
}

/* An H100-like configuration written out here (not the preset's figures):
 * n devices in nodes of g, NVLink inside (450 GB/s, 2 us), InfiniBand
 * between (50 GB/s, 5 us), 989 TFLOP/s and 80 GiB each. */
static inline sl_cluster_config tu_h100(int n, int g)
{
	sl_cluster_config cfg;
	sl_cluster_config_default(&cfg);
	cfg.devices = n;
	cfg.devices_per_node = g < n ? g : 0;
	cfg.intra.bandwidth = 450e9;
	cfg.intra.latency = 2e-6;
	cfg.inter.bandwidth = 50e9;
	cfg.inter.latency = 5e-6;
	cfg.flops = 989e12;
	cfg.memory = (uint64_t)80 << 30;
	return cfg;
}

/* A model of the given sizes; the rest (seed, learning rate) as defaults. */
static inline sl_model_spec tu_model(int layers, int hidden, int ffn, int heads, int seq, int batch)
{
	sl_model_spec m;
	sl_model_default(&m);
	m.layers = layers;
	m.hidden = hidden;
	m.ffn = ffn;
	m.heads = heads;
	m.seq = seq;
	m.batch = batch;
	return m;
}

/* A layout of tp x pp x dp under schedule k with m micro-batches and v
 * chunks; the rest as defaults. */
static inline sl_layout tu_layout(int tp, int pp, int dp, sl_sched k, int m, int v)
{
	sl_layout l;
	sl_layout_default(&l);
	l.tp = tp;
	l.pp = pp;
	l.dp = dp;
	l.schedule = k;
	l.microbatches = m;
	l.chunks = v;
	return l;
}

/* The largest difference of got from want in any of the model's tensors,
 * over that tensor's largest |want|; *worst (if not NULL) names the tensor. */
static inline double tu_tensor_rel(const sl_model_spec *m, const float *got, const float *want,
                                   int *worst)
{
	double rel = 0;
	for (int i = 0; i < sl_model_ntensors(m); i++) {
		sl_tensor_info t;
		sl_model_tensor(m, i, &t);
		double d = 0, mx = 0;
		for (size_t k = t.offset; k < t.offset + t.count; k++) {
			double e = fabs((double)got[k] - want[k]);
			if (!(e <= d))
				d = e;
			if (fabs(want[k]) > mx)
				mx = fabs(want[k]);
		}
		double r = mx > 0 ? d / mx : d;
		if (!(r <= rel)) {
			rel = r;
			if (worst)
				*worst = i;
		}
	}
	return rel;
}

/* A hang must fail the suite rather than stall make check: a test that
 * could block arms this first.  The handler only writes and exits. */
static inline void tu_watchdog_fire(int sig)
{
	static const char msg[] = "watchdog: the test did not finish in time (a hang?)\n";
	ssize_t r = write(2, msg, sizeof msg - 1);
	(void)r;
	(void)sig;
	_exit(99);
}

static inline void tu_watchdog(unsigned seconds)
{
	signal(SIGALRM, tu_watchdog_fire);
	alarm(seconds);
}

#endif
