/* testutil.h - shared helpers for the cmocka suites. */
#ifndef SL_TESTUTIL_H
#define SL_TESTUTIL_H

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "cluster.h"
#include "preset.h"

/* A headless, model-timed cluster of p devices on one node with links of
 * bandwidth bw and latency lat, and plenty of memory. */
static inline sl_cluster *tu_cluster(int p, double bw, double lat)
{
	sl_cluster_config cfg;
	sl_cluster_config_default(&cfg);
	cfg.devices = p;
	cfg.intra.bandwidth = cfg.inter.bandwidth = bw;
	cfg.intra.latency = cfg.inter.latency = lat;
	cfg.memory = (uint64_t)1 << 34;
	sl_err err = {0};
	sl_cluster *c = sl_cluster_create(&cfg, &err);
	if (!c)
		fail_msg("cluster: %s", err.msg);
	return c;
}

/* Simple deterministic values that sum exactly in fp32: small integers. */
static inline float tu_val(int rank, size_t i)
{
	return (float)((int)((i * 7 + (size_t)rank * 13) % 17) - 8);
}

#endif
