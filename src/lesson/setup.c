/* setup.c - setup keys and figures: the names a lesson may use. */
#include "setup.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "preset.h"
#include "units.h"

void sl_lsetup_default(sl_lsetup *s)
{
	memset(s, 0, sizeof *s);
	sl_scenario_default(&s->sc);
	s->op = SL_COLL_ALLREDUCE;
	s->bytes = 64.0 * 1024 * 1024;
}

/* ---- setup keys ---- */

enum key {
	K_PRESET, K_DEVICES, K_PER_NODE, K_TOPOLOGY, K_BANDWIDTH, K_LATENCY, K_INTER_BANDWIDTH,
	K_INTER_LATENCY, K_FLOPS, K_MEMORY, K_TIMING, K_STRATEGY, K_M, K_K, K_N, K_ALGO, K_OP,
	K_BYTES, K_SEED, K_NKEYS
};

static const char *const key_names[K_NKEYS] = {
	"preset", "devices", "per-node", "topology", "bandwidth", "latency", "inter-bandwidth",
	"inter-latency", "flops", "memory", "timing", "strategy", "m", "k", "n", "algo", "op",
	"bytes", "seed",
};

int sl_setup_key(const char *key)
{
	for (int i = 0; i < K_NKEYS; i++)
		if (strcmp(key, key_names[i]) == 0)
			return i;
	return -1;
}

const char *sl_setup_key_name(int i)
{
	return i >= 0 && i < K_NKEYS ? key_names[i] : "?";
}

const char *sl_setup_keys(void)
{
	return "preset devices per-node topology bandwidth latency inter-bandwidth inter-latency "
	       "flops memory timing strategy m k n algo op bytes seed";
}

static int word_list(const char *key, const char *value, const char *choices, sl_err *err)
{
	return sl_fail(err, SL_EINVAL, "%s: '%s' is not one of: %s", key, value, choices);
}

int sl_lsetup_set(sl_lsetup *s, const char *key, const char *value, sl_err *err)
{
	int k = sl_setup_key(key);
	sl_cluster_config *c = &s->sc.cluster;
	double d;
	long l;
	sl_err e = {0};
	if (k < 0)
		return sl_fail(err, SL_EINVAL, "unknown setup key '%s' (keys: %s)", key, sl_setup_keys());
	if (!value || !*value)
		return sl_fail(err, SL_EINVAL, "%s needs a value: %s=VALUE", key, key);
	switch ((enum key)k) {
	case K_PRESET: {
		const sl_preset *p = sl_preset_find(value);
		if (!p) {
			char names[160] = "";
			for (const sl_preset *q = sl_presets(); q->name; q++)
				snprintf(names + strlen(names), sizeof names - strlen(names), "%s%s",
					 names[0] ? " " : "", q->name);
			return sl_fail(err, SL_EINVAL, "preset: unknown preset '%s' (presets: %s)", value, names);
		}
		sl_preset_apply(p, c);
		snprintf(s->sc.preset, sizeof s->sc.preset, "%s", p->name);
		return SL_OK;
	}
	case K_DEVICES:
	case K_PER_NODE:
		if (sl_parse_int(value, k == K_DEVICES ? 1 : 0, SL_MAX_DEVICES, key, &l, &e))
			return sl_fail(err, SL_EINVAL, "%s", e.msg);
		if (k == K_DEVICES)
			c->devices = (int)l;
		else
			c->devices_per_node = (int)l;
		return SL_OK;
	case K_TOPOLOGY:
		if (strcmp(value, "full") == 0)
			c->topology = SL_TOPO_FULL;
		else if (strcmp(value, "ring") == 0)
			c->topology = SL_TOPO_RING;
		else
			return word_list(key, value, "full ring", err);
		return SL_OK;
	case K_BANDWIDTH:
	case K_INTER_BANDWIDTH:
		if (sl_parse_rate(value, &d, &e))
			return sl_fail(err, SL_EINVAL, "%s: %s", key, e.msg);
		if (d < 1e3 || d > 1e15)
			return sl_fail(err, SL_EINVAL, "%s: %s is out of range (1KB/s to 1PB/s)", key, value);
		(k == K_BANDWIDTH ? &c->intra : &c->inter)->bandwidth = d;
		s->sc.preset[0] = 0;
		return SL_OK;
	case K_LATENCY:
	case K_INTER_LATENCY:
		if (sl_parse_time(value, &d, &e))
			return sl_fail(err, SL_EINVAL, "%s: %s", key, e.msg);
		if (d > 1)
			return sl_fail(err, SL_EINVAL, "%s: %s is out of range (0 to 1s)", key, value);
		(k == K_LATENCY ? &c->intra : &c->inter)->latency = d;
		s->sc.preset[0] = 0;
		return SL_OK;
	case K_FLOPS:
		if (sl_parse_flops(value, &d, &e))
			return sl_fail(err, SL_EINVAL, "flops: %s", e.msg);
		if (d < 1e6 || d > 1e18)
			return sl_fail(err, SL_EINVAL, "flops: %s is out of range (1MFLOP/s to 1000PFLOP/s)",
				       value);
		c->flops = d;
		s->sc.preset[0] = 0;
		return SL_OK;
	case K_MEMORY:
		if (sl_parse_bytes(value, &d, &e))
			return sl_fail(err, SL_EINVAL, "memory: %s", e.msg);
		if (d < 1024 || d > 1e15)
			return sl_fail(err, SL_EINVAL, "memory: %s is out of range (1KiB to 1PB)", value);
		c->memory = (uint64_t)d;
		s->sc.preset[0] = 0;
		return SL_OK;
	case K_TIMING:
		if (strcmp(value, "model") == 0)
			c->timing = SL_TIMING_MODEL;
		else if (strcmp(value, "measured") == 0)
			c->timing = SL_TIMING_MEASURED;
		else
			return word_list(key, value, "model measured", err);
		return SL_OK;
	case K_STRATEGY:
		if (sl_split_parse(value, &s->sc.gemm.split))
			return word_list(key, value, "single colwise rowwise", err);
		return SL_OK;
	case K_M:
	case K_K:
	case K_N:
		if (sl_parse_int(value, 1, 1000000, key, &l, &e))
			return sl_fail(err, SL_EINVAL, "%s", e.msg);
		*(k == K_M ? &s->sc.gemm.m : k == K_K ? &s->sc.gemm.k : &s->sc.gemm.n) = (int)l;
		return SL_OK;
	case K_ALGO:
		if (sl_algo_parse(value, &s->sc.gemm.algo))
			return word_list(key, value, "ring tree", err);
		return SL_OK;
	case K_OP:
		if (sl_coll_op_parse(value, &s->op))
			return word_list(key, value,
					 "allreduce allgather reducescatter broadcast reduce gather scatter", err);
		return SL_OK;
	case K_BYTES:
		if (sl_parse_bytes(value, &d, &e))
			return sl_fail(err, SL_EINVAL, "bytes: %s", e.msg);
		if (d < 4 || d > 1e12)
			return sl_fail(err, SL_EINVAL, "bytes: %s is out of range (4B to 1TB)", value);
		s->bytes = floor(d / 4) * 4; /* whole fp32 elements */
		return SL_OK;
	case K_SEED:
		if (sl_parse_int(value, 0, 1000000000L, key, &l, &e))
			return sl_fail(err, SL_EINVAL, "%s", e.msg);
		s->sc.gemm.seed = (uint64_t)l;
		return SL_OK;
	case K_NKEYS:
		break;
	}
	return sl_fail(err, SL_EINVAL, "unknown setup key '%s'", key);
}

void sl_lsetup_describe(const sl_lsetup *s, char *buf, size_t n)
{
	const sl_cluster_config *c = &s->sc.cluster;
	char fl[32], mem[32], bw[32], lat[32], ibw[32], ilat[32], by[32];
	int nodes = c->devices_per_node > 0 ? c->devices / c->devices_per_node : 1;
	sl_fmt_flops(c->flops, fl, sizeof fl);
	sl_fmt_bytes((double)c->memory, mem, sizeof mem);
	sl_fmt_rate(c->intra.bandwidth, bw, sizeof bw);
	sl_fmt_time(c->intra.latency, lat, sizeof lat);
	sl_fmt_rate(c->inter.bandwidth, ibw, sizeof ibw);
	sl_fmt_time(c->inter.latency, ilat, sizeof ilat);
	sl_fmt_bytes(s->bytes, by, sizeof by);
	int len = snprintf(buf, n, "%d device%s%s%s (%s, %s each)", c->devices,
			   c->devices == 1 ? "" : "s", s->sc.preset[0] ? " like " : "", s->sc.preset,
			   fl, mem);
	if (len < 0 || (size_t)len >= n)
		return;
	if (nodes > 1)
		len += snprintf(buf + len, n - (size_t)len,
				" in %d nodes of %d; links %s + %s inside a node, %s + %s between", nodes,
				c->devices_per_node, bw, lat, ibw, ilat);
	else
		len += snprintf(buf + len, n - (size_t)len, " in one node%s; links %s + %s",
				c->topology == SL_TOPO_RING ? " wired as a ring" : "", bw, lat);
	if (len < 0 || (size_t)len >= n)
		return;
	snprintf(buf + len, n - (size_t)len, "; matmul %s m=%d k=%d n=%d%s; collective %s of %s, %s%s",
		 sl_split_name(s->sc.gemm.split), s->sc.gemm.m, s->sc.gemm.k, s->sc.gemm.n,
		 s->sc.gemm.split == SL_SPLIT_SINGLE && c->devices > 1 ? " (on one device)" : "",
		 sl_coll_op_name(s->op), by, sl_algo_name(s->sc.gemm.algo),
		 c->timing == SL_TIMING_MEASURED ? "; measured timing" : "");
}

/* ---- figures ---- */

#define MM SL_FIG_KIND(SL_RUN_MATMUL)
#define CO SL_FIG_KIND(SL_RUN_COLLECTIVE)
#define SU SL_FIG_SETUP

enum fig {
	F_DEVICES, F_NODES, F_PER_NODE, F_BANDWIDTH, F_LATENCY, F_INTER_BANDWIDTH, F_INTER_LATENCY,
	F_FLOPS, F_MEMORY, F_M, F_K, F_N, F_BYTES, F_X_BYTES, F_W_BYTES, F_Y_BYTES, F_WORK,
	F_NSETUP
};

static const sl_figdef figs[] = {
	/* The set-up. */
	{"devices", SL_DIM_NONE, 0, SU, "number of devices"},
	{"nodes", SL_DIM_NONE, 0, SU, "number of nodes"},
	{"per_node", SL_DIM_NONE, 0, SU, "devices per node"},
	{"bandwidth", SL_DIM_RATE, 0, SU, "link bandwidth inside a node"},
	{"latency", SL_DIM_TIME, 0, SU, "link latency inside a node"},
	{"inter_bandwidth", SL_DIM_RATE, 0, SU, "link bandwidth between nodes"},
	{"inter_latency", SL_DIM_TIME, 0, SU, "link latency between nodes"},
	{"flops", SL_DIM_FLOPS, 0, SU, "compute rate of one device"},
	{"memory", SL_DIM_BYTES, 0, SU, "memory of one device"},
	{"m", SL_DIM_NONE, 0, SU, "rows of X and Y (the batch)"},
	{"k", SL_DIM_NONE, 0, SU, "columns of X, rows of W"},
	{"n", SL_DIM_NONE, 0, SU, "columns of W and Y"},
	{"bytes", SL_DIM_BYTES, 0, SU, "the collective's buffer"},
	{"x_bytes", SL_DIM_BYTES, 0, SU, "size of X in fp32"},
	{"w_bytes", SL_DIM_BYTES, 0, SU, "size of W in fp32"},
	{"y_bytes", SL_DIM_BYTES, 0, SU, "size of Y in fp32"},
	{"work", SL_DIM_WORK, 0, SU, "FLOP of the whole product, 2mkn"},
	/* What runs measured. */
	{"time", SL_DIM_TIME, 0, MM | CO, "emulated time of the run (the slowest device)"},
	{"predicted", SL_DIM_TIME, 0, MM | CO, "the analytic model's time"},
	{"traffic", SL_DIM_BYTES, 0, MM | CO, "bytes sent over links, all devices together"},
	{"fits", SL_DIM_NONE, 1, MM | CO, "whether every device's buffers fitted in its memory"},
	{"mem_peak", SL_DIM_BYTES, 0, MM | CO, "the most memory one device held"},
	{"link_bw", SL_DIM_RATE, 0, MM | CO, "bandwidth of the slowest link the ring crosses"},
	{"link_latency", SL_DIM_TIME, 0, MM | CO, "latency of the slowest link the ring crosses"},
	{"single_time", SL_DIM_TIME, 0, MM, "the same product on one device"},
	{"speedup", SL_DIM_NONE, 0, MM, "single_time / time"},
	{"compute_time", SL_DIM_TIME, 0, MM, "compute part of the slowest device"},
	{"comm_time", SL_DIM_TIME, 0, MM, "communication part of the slowest device"},
	{"error", SL_DIM_NONE, 0, MM, "largest relative error against one plain sgemm"},
	{"mem_need", SL_DIM_BYTES, 0, MM, "memory one device needs for its shard of the product"},
	{"crossover_bw", SL_DIM_RATE, 0, MM,
	 "link bandwidth below which the split is slower than one device (model)"},
	{"algbw", SL_DIM_RATE, 0, CO, "bytes / time"},
	{"busbw", SL_DIM_RATE, 0, CO, "algbw times the NCCL bus factor"},
	{"latency_term", SL_DIM_TIME, 0, CO, "the model's latency part (alpha terms)"},
	{"bandwidth_term", SL_DIM_TIME, 0, CO, "the model's bandwidth part (bytes / B terms)"},
};

int sl_fig_count(void)
{
	return (int)(sizeof figs / sizeof figs[0]);
}

const sl_figdef *sl_fig(int i)
{
	return i >= 0 && i < sl_fig_count() ? &figs[i] : NULL;
}

int sl_fig_find(const char *name)
{
	for (int i = 0; i < sl_fig_count(); i++)
		if (strcmp(figs[i].name, name) == 0)
			return i;
	return -1;
}

double sl_fig_setup_value(int fig, const sl_lsetup *s)
{
	const sl_cluster_config *c = &s->sc.cluster;
	double m = s->sc.gemm.m, k = s->sc.gemm.k, n = s->sc.gemm.n;
	switch ((enum fig)fig) {
	case F_DEVICES: return c->devices;
	case F_NODES: return c->devices_per_node > 0 ? c->devices / c->devices_per_node : 1;
	case F_PER_NODE: return c->devices_per_node > 0 ? c->devices_per_node : c->devices;
	case F_BANDWIDTH: return c->intra.bandwidth;
	case F_LATENCY: return c->intra.latency;
	case F_INTER_BANDWIDTH: return c->inter.bandwidth;
	case F_INTER_LATENCY: return c->inter.latency;
	case F_FLOPS: return c->flops;
	case F_MEMORY: return (double)c->memory;
	case F_M: return m;
	case F_K: return k;
	case F_N: return n;
	case F_BYTES: return s->bytes;
	case F_X_BYTES: return 4 * m * k;
	case F_W_BYTES: return 4 * k * n;
	case F_Y_BYTES: return 4 * m * n;
	case F_WORK: return 2 * m * k * n;
	case F_NSETUP: break;
	}
	return NAN;
}
