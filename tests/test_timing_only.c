/* SPDX-License-Identifier: MIT */
/* test_timing_only.c - the engine's timing-only mode: the same clocks,
 * traffic, memory and events as a full run, with no buffers; and its
 * limits (model timing only, up to SL_MAX_DEVICES devices). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "coll.h"
#include "cost.h"
#include "gemm.h"
#include "testutil.h"
#include "trace.h"

/* Every figure a device reports and every event of the trace, bit for bit
 * (wall times and host CPU time aside). */
static void same_run(sl_cluster *full, sl_cluster *dry, const char *what)
{
	int n = sl_cluster_devices(full);
	assert_int_equal(sl_cluster_devices(dry), n);
	for (int i = 0; i < n; i++) {
		sl_dev_stats a = sl_cluster_dev_stats(full, i), b = sl_cluster_dev_stats(dry, i);
		if (a.clock != b.clock || a.compute_s != b.compute_s || a.comm_s != b.comm_s ||
		    a.wait_s != b.wait_s || a.flops != b.flops || a.bytes_sent != b.bytes_sent ||
		    a.bytes_received != b.bytes_received || a.mem_peak != b.mem_peak ||
		    a.mem_current != b.mem_current)
			fail_msg("%s: device %d differs: clock %.17g/%.17g comm %.17g/%.17g sent "
			         "%llu/%llu "
			         "peak %llu/%llu",
			         what, i, a.clock, b.clock, a.comm_s, b.comm_s,
			         (unsigned long long)a.bytes_sent, (unsigned long long)b.bytes_sent,
			         (unsigned long long)a.mem_peak, (unsigned long long)b.mem_peak);
		assert_true(b.cpu_s == 0);
	}
	sl_snapshot sa, sb;
	assert_int_equal(sl_trace_snapshot(sl_cluster_trace(full), &sa), SL_OK);
	assert_int_equal(sl_trace_snapshot(sl_cluster_trace(dry), &sb), SL_OK);
	if (sa.n != sb.n)
		fail_msg("%s: %zu events in the full run, %zu timing-only", what, sa.n, sb.n);
	for (size_t i = 0; i < sa.n; i++) {
		const sl_event *x = &sa.ev[i], *y = &sb.ev[i];
		if (x->dev != y->dev || x->peer != y->peer || x->kind != y->kind ||
		    x->t0 != y->t0 || x->t1 != y->t1 || x->bytes != y->bytes ||
		    x->flops != y->flops || strcmp(x->label, y->label) != 0)
			fail_msg(
			    "%s: event %zu differs: %s %s [%.17g, %.17g] vs %s %s [%.17g, %.17g]",
			    what, i, sl_ev_kind_name(x->kind), x->label, x->t0, x->t1,
			    sl_ev_kind_name(y->kind), y->label, y->t0, y->t1);
	}
	sl_snapshot_free(&sa);
	sl_snapshot_free(&sb);
}

/* ---- the sharded GEMM scenario ---- */

static void test_gemm_same_as_full(void **state)
{
	(void)state;
	const int grid[][6] = {
	    /* split, devices, per node, m, k, n */
	    {SL_SPLIT_COL, 4, 0, 64, 96, 128},   {SL_SPLIT_ROW, 4, 0, 64, 96, 128},
	    {SL_SPLIT_COL, 8, 4, 33, 70, 101},   {SL_SPLIT_ROW, 6, 3, 40, 61, 17},
	    {SL_SPLIT_SINGLE, 1, 0, 50, 60, 70}, {SL_SPLIT_ROW, 3, 0, 5, 3, 7}};
	for (size_t g = 0; g < sizeof grid / sizeof grid[0]; g++)
		for (int algo = 0; algo < SL_ALGO_NALGOS; algo++) {
			const int *x = grid[g];
			sl_gemm_spec s = {(sl_split)x[0], x[3], x[4], x[5], (sl_algo)algo, 7};
			sl_cluster_config cfg = tu_config(x[1], 40e9, 3e-6);
			cfg.devices_per_node = x[2];
			cfg.inter.bandwidth = 5e9;
			cfg.inter.latency = 9e-6;
			sl_cluster *full = tu_create(&cfg);
			cfg.timing_only = 1;
			sl_cluster *dry = tu_create(&cfg);
			sl_gemm_result rf, rd;
			sl_err err = {0};
			assert_int_equal(sl_gemm_run(full, &s, &rf, &err), SL_OK);
			assert_int_equal(sl_gemm_run(dry, &s, &rd, &err), SL_OK);
			char what[64];
			snprintf(what, sizeof what, "gemm %s %d devices %s", sl_split_name(s.split),
			         x[1], sl_algo_name(s.algo));
			same_run(full, dry, what);
			assert_true(rf.checked && !rd.checked);
			assert_true(rf.emulated_time_s == rd.emulated_time_s);
			assert_true(rf.predicted_s == rd.predicted_s);
			assert_true(rf.bytes_moved == rd.bytes_moved);
			assert_true(rf.single_time_s == rd.single_time_s);
			sl_cluster_destroy(full);
			sl_cluster_destroy(dry);
		}
}

/* The figures are the time model's, not an accident of both runs: a
 * column-wise product on 4 devices of one node is one shard's GEMM, then a
 * ring all-gather of m*n floats, (p-1) steps of a + m*n/p*4/B. */
static void test_gemm_closed_form(void **state)
{
	(void)state;
	int p = 4, m = 64, k = 96, n = 128;
	double bw = 40e9, lat = 3e-6, rate = 1e12;
	sl_cluster_config cfg = tu_config(p, bw, lat);
	cfg.flops = rate;
	cfg.timing_only = 1;
	sl_cluster *c = tu_create(&cfg);
	sl_gemm_spec s = {SL_SPLIT_COL, m, k, n, SL_ALGO_RING, 1};
	sl_gemm_result r;
	sl_err err = {0};
	assert_int_equal(sl_gemm_run(c, &s, &r, &err), SL_OK);
	double want = 2.0 * m * (n / p) * k / rate + (p - 1) * (lat + (double)m * n / p * 4 / bw);
	tu_check_close(r.emulated_time_s, want, 1e-12, "column-wise emulated time");
	/* Memory: X, the W shard and Y, counted though never allocated. */
	uint64_t bytes = 4 * ((uint64_t)m * k + (uint64_t)k * (n / p) + (uint64_t)m * n);
	for (int i = 0; i < p; i++) {
		sl_dev_stats st = sl_cluster_dev_stats(c, i);
		assert_int_equal(st.mem_peak, bytes);
		assert_int_equal(st.mem_current, 0);
		assert_int_equal(st.bytes_sent, (uint64_t)(p - 1) * m * (n / p) * 4);
	}
	sl_cluster_destroy(c);
}

/* Memory is still checked: a shard past capacity fails the same way. */
static void test_gemm_out_of_memory(void **state)
{
	(void)state;
	sl_cluster_config cfg = tu_config(2, 40e9, 1e-6);
	cfg.memory = 230000; /* X 64*96*4 = 24576 B, W shard 96*500*4 = 192000 B, Y 256000 B */
	sl_gemm_spec s = {SL_SPLIT_COL, 64, 96, 1000, SL_ALGO_RING, 1};
	sl_gemm_result r;
	sl_err ef = {0}, ed = {0};
	sl_cluster *full = tu_create(&cfg);
	cfg.timing_only = 1;
	sl_cluster *dry = tu_create(&cfg);
	assert_int_equal(sl_gemm_run(full, &s, &r, &ef), SL_EDEVMEM);
	assert_int_equal(sl_gemm_run(dry, &s, &r, &ed), SL_EDEVMEM);
	/* Which device reports first is up to the threads; the rest is the same. */
	assert_string_equal(strchr(ef.msg, ':'), strchr(ed.msg, ':'));
	assert_non_null(strstr(ed.msg, "Y (gathered)"));
	sl_cluster_destroy(full);
	sl_cluster_destroy(dry);
}

/* ---- collectives on no buffers ---- */

struct cjob {
	sl_coll_op op;
	sl_algo algo;
	size_t count;
	float *bufs[SL_MAX_FULL_DEVICES];
};

static int cprog(sl_dev *d, void *arg, sl_err *err)
{
	struct cjob *j = arg;
	sl_group g = sl_group_all(sl_cluster_devices(sl_dev_cluster(d)));
	float *b = j->bufs[0] ? j->bufs[sl_dev_id(d)] : NULL;
	return sl_coll_run(d, &g, j->op, b, j->count, j->algo, err);
}

static void test_collectives_same_as_full(void **state)
{
	(void)state;
	const int sizes[][3] = {{2, 0, 1000}, {5, 0, 4099}, {8, 4, 100000}, {6, 2, 7}};
	for (size_t z = 0; z < sizeof sizes / sizeof sizes[0]; z++)
		for (int op = 0; op < SL_COLL_NOPS; op++)
			for (int algo = 0; algo < SL_ALGO_NALGOS; algo++) {
				int p = sizes[z][0];
				struct cjob j = {
				    (sl_coll_op)op, (sl_algo)algo, (size_t)sizes[z][2], {NULL}};
				sl_cluster_config cfg = tu_config(p, 25e9, 2e-6);
				cfg.devices_per_node = sizes[z][1];
				cfg.inter.bandwidth = 3e9;
				sl_cluster *full = tu_create(&cfg);
				cfg.timing_only = 1;
				sl_cluster *dry = tu_create(&cfg);
				for (int r = 0; r < p; r++) {
					j.bufs[r] = malloc(j.count * sizeof(float));
					for (size_t i = 0; i < j.count; i++)
						j.bufs[r][i] = tu_val(r, i);
				}
				sl_err err = {0};
				assert_int_equal(sl_cluster_run(full, cprog, &j, &err), SL_OK);
				for (int r = 0; r < p; r++) {
					free(j.bufs[r]);
					j.bufs[r] = NULL;
				}
				assert_int_equal(sl_cluster_run(dry, cprog, &j, &err), SL_OK);
				char what[64];
				snprintf(what, sizeof what, "%s %s p=%d n=%zu",
				         sl_coll_op_name(j.op), sl_algo_name(j.algo), p, j.count);
				same_run(full, dry, what);
				sl_cluster_destroy(full);
				sl_cluster_destroy(dry);
			}
}

/* A full run still refuses a collective without a buffer. */
static void test_full_run_needs_buffers(void **state)
{
	(void)state;
	struct cjob j = {SL_COLL_ALLREDUCE, SL_ALGO_RING, 16, {NULL}};
	sl_cluster *c = tu_cluster(2, 1e9, 0);
	sl_err err = {0};
	assert_int_equal(sl_cluster_run(c, cprog, &j, &err), SL_EINVAL);
	assert_non_null(strstr(err.msg, "no buffer"));
	sl_cluster_destroy(c);
}

/* ---- many devices ---- */

struct bjob {
	size_t count;
};

static int bprog(sl_dev *d, void *arg, sl_err *err)
{
	struct bjob *j = arg;
	sl_group g = sl_group_all(sl_cluster_devices(sl_dev_cluster(d)));
	return sl_broadcast(d, &g, NULL, j->count, 0, SL_ALGO_TREE, err);
}

/* A binomial-tree broadcast from device 0 on 1024 timing-only devices in
 * nodes of 8, against the tree walked here: a device that has the data
 * sends it to v + 2^k for every 2^k below its lowest set bit, largest
 * first, each send starting when the previous one ends (the sender's clock)
 * and lasting a + n/B of its link. */
static void test_1024_devices_tree_broadcast(void **state)
{
	(void)state;
	enum { P = SL_MAX_DEVICES, G = 8 };
	double bw_in = 450e9, lat_in = 2e-6, bw_out = 50e9, lat_out = 5e-6;
	struct bjob j = {1 << 20};
	double bytes = (double)j.count * 4;
	sl_cluster_config cfg = tu_config(P, bw_in, lat_in);
	cfg.devices_per_node = G;
	cfg.inter.bandwidth = bw_out;
	cfg.inter.latency = lat_out;
	cfg.timing_only = 1;
	sl_cluster *c = tu_create(&cfg);
	sl_err err = {0};
	assert_int_equal(sl_cluster_run(c, bprog, &j, &err), SL_OK);

	static double clock[P];
	for (int v = 0; v < P; v++)
		clock[v] = 0;
	for (int v = 0; v < P; v++) { /* parents come before their children */
		int top = P;
		if (v > 0)
			top = v & -v;
		for (int mask = top >> 1; mask > 0; mask >>= 1) {
			int ch = v + mask;
			if (ch >= P)
				continue;
			int same = v / G == ch / G;
			clock[ch] =
			    clock[v] + (same ? lat_in : lat_out) + bytes / (same ? bw_in : bw_out);
			clock[v] = clock[ch];
		}
	}
	for (int v = 0; v < P; v++) {
		sl_dev_stats st = sl_cluster_dev_stats(c, v);
		char what[48];
		snprintf(what, sizeof what, "device %d's clock", v);
		tu_check_close(st.clock, clock[v], 1e-12, what);
		assert_int_equal(st.bytes_received, v ? (uint64_t)bytes : 0);
	}
	sl_cluster_destroy(c);
}

/* Link figures of pairs that never carried anything follow the class
 * knobs like the others; a pair's own knob holds. */
static void test_links_of_unused_pairs(void **state)
{
	(void)state;
	sl_cluster_config cfg = tu_config(256, 100e9, 1e-6);
	cfg.devices_per_node = 8;
	cfg.inter.bandwidth = 10e9;
	cfg.inter.latency = 4e-6;
	cfg.timing_only = 1;
	sl_cluster *c = tu_create(&cfg);
	sl_link_spec a = sl_cluster_link(c, 3, 200), b = sl_cluster_link(c, 3, 4);
	assert_true(a.bandwidth == 10e9 && a.latency == 4e-6);
	assert_true(b.bandwidth == 100e9 && b.latency == 1e-6);
	sl_cluster_set_class(c, 1, 20e9, -1);
	sl_cluster_set_link(c, 5, 6, 1e9, 7e-6);
	a = sl_cluster_link(c, 3, 200);
	b = sl_cluster_link(c, 5, 6);
	assert_true(a.bandwidth == 20e9 && a.latency == 4e-6);
	assert_true(b.bandwidth == 1e9 && b.latency == 7e-6);
	assert_true(sl_cluster_link(c, 6, 5).bandwidth == 100e9);
	sl_link_state st = sl_cluster_link_state(c, 100, 101);
	assert_true(st.total == 0 && st.inflight_total == 0);
	sl_cluster_destroy(c);
}

/* ---- configuration ---- */

static void test_config_limits(void **state)
{
	(void)state;
	sl_err err = {0};
	sl_cluster_config cfg = tu_config(4, 1e9, 0);
	cfg.timing_only = 1;
	cfg.timing = SL_TIMING_MEASURED;
	assert_int_equal(sl_cluster_config_check(&cfg, &err), SL_EINVAL);
	assert_non_null(strstr(err.msg, "model timing"));

	cfg = tu_config(SL_MAX_FULL_DEVICES + 1, 1e9, 0);
	if (SL_MAX_FULL_DEVICES < SL_MAX_DEVICES) {
		assert_int_equal(sl_cluster_config_check(&cfg, &err), SL_EINVAL);
		assert_non_null(strstr(err.msg, "timing-only"));
		cfg.timing_only = 1;
		assert_int_equal(sl_cluster_config_check(&cfg, &err), SL_OK);
	}
	cfg = tu_config(SL_MAX_DEVICES + 1, 1e9, 0);
	cfg.timing_only = 1;
	assert_int_equal(sl_cluster_config_check(&cfg, &err), SL_EINVAL);
}

int main(void)
{
	tu_watchdog(600);
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_gemm_same_as_full),
	    cmocka_unit_test(test_gemm_closed_form),
	    cmocka_unit_test(test_gemm_out_of_memory),
	    cmocka_unit_test(test_collectives_same_as_full),
	    cmocka_unit_test(test_full_run_needs_buffers),
	    cmocka_unit_test(test_1024_devices_tree_broadcast),
	    cmocka_unit_test(test_links_of_unused_pairs),
	    cmocka_unit_test(test_config_limits),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
