/* SPDX-License-Identifier: MIT */
/* test_cli.c - the shardlab program from the outside: exit statuses and
 * one-line errors for bad input, the JSON reports, and emulated times
 * against the closed forms, computed here. */
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <jansson.h>

#include "testutil.h"

#include "clirun.h"

/* ---- running the program ---- */

/* ---- bad input ---- */

struct bad {
	const char *args;
	int status;
};

static const struct bad bad_inputs[] = {
    /* device counts */
    {"run --devices=0", 2},
    {"run --devices=-1", 2},
    {"run --devices=65", 2},
    {"run --devices=1000000000000", 2},
    {"run --devices=4x", 2},
    {"run --devices=", 2},
    {"run --devices", 2},
    {"run --devices=6 --devices-per-node=4", 2},
    {"run --devices=4 --devices-per-node=8", 2},
    {"run --devices-per-node=-1", 2}, /* 0 is one node */
    {"run --topology=ring --devices=4 --devices-per-node=2", 2},
    /* sizes */
    {"run --m=0", 2},
    {"run --k=-5", 2},
    {"run --n=1e3", 2},
    {"run --m=2000000", 2},
    {"run --m=100000 --k=100000", 2},
    {"run --m=12 --n=7 --k=5 --devices=8", 2},
    {"run --strategy=rowwise --k=4 --devices=8", 2},
    {"run --devices=64 --m=44000 --k=44000 --n=44000", 2},
    {"run --memory=0", 2},
    {"run --memory=-1GiB", 2},
    {"run --memory=12QB", 2},
    {"run --memory=1e30", 2},
    /* rates and times */
    {"run --bandwidth=100XB/s", 2},
    {"run --bandwidth=-5GB/s", 2},
    {"run --bandwidth=0", 2},
    {"run --bandwidth=450GB", 2},
    {"run --bandwidth=nan", 2},
    {"run --bandwidth=1e99GB/s", 2},
    {"run --inter-bandwidth=fast", 2},
    {"run --latency=5parsecs", 2},
    {"run --latency=-1us", 2},
    {"run --latency=20s", 2},
    {"run --inter-latency=2uss", 2},
    {"run --flops=0", 2},
    {"run --flops=1e30", 2},
    {"run --flops=10TB/s", 2},
    /* a rate or a time needs a unit: a bare 5 was 5 s */
    {"run --latency=5", 2},
    {"run --inter-latency=1e-6", 2},
    {"run --bandwidth=100", 2},
    {"run --inter-bandwidth=25e9", 2},
    {"run --flops=1e12", 2},
    {"ckpt reshard x --out=y --storage-bandwidth=2e9", 2},
    {"run --bandwidth=100GBPS", 2},
    {"run --slowdown=0.5", 2},
    {"run --slowdown=2x", 2},
    {"run --slowdown=1e9", 2},
    /* decimal numbers and exact units only, on every numeric option path */
    {"run --m=+64", 2},
    /* --layouts sizes go through the integer parser (sscanf took these). */
    {"compare --devices=4 --layouts=+2x1x1", 2},
    {"compare --devices=4 --layouts=1x+2x1", 2},
    {"compare --devices=4 --layouts=99999999999x1x1", 2},
    {"compare --devices=4 --layouts=2x1x2x1", 2},
    {"run --m=0x40", 2},
    {"run --m=99999999999999999999", 2},
    {"run --devices=0x8", 2},
    {"run --devices=8abc", 2},
    {"run --devices=+8", 2},
    {"run --seed=0x10", 2},
    {"run --bandwidth=0x1p4GB/s", 2},
    {"run --bandwidth=25gb/s", 2},
    {"run --bandwidth=25MBPS", 2},
    {"run --bandwidth=+5GB/s", 2},
    {"run --bandwidth=inf", 2},
    {"run --latency=2US", 2},
    {"run --inter-latency=0x1p-20", 2},
    {"run --memory=80gib", 2},
    {"run --flops=+1e12", 2},
    {"run --slowdown=0x10", 2},
    {"run --slowdown=inf", 2},
    {"coll --bytes=+4KiB", 2},
    {"coll --bytes=4kib", 2},
    {"train --tp=+2", 2},
    {"train --steps=1e3", 2},
    {"train --lr=0x1p-4", 2},
    {"train --hidden=0x80", 2},
    {"plan --top=+3", 2},
    /* names */
    {"run --strategy=diagonal", 2},
    {"run --preset=tpu", 2},
    {"run --topology=torus", 2},
    {"run --algorithm=butterfly", 2},
    {"run --timing=fast", 2},
    {"run --format=xml", 2},
    {"run --seed=abc", 2},
    {"run --strategy=colwize", 2},
    {"coll --op=allreduse", 2},
    {"run --preset=h10", 2},
    {"rnu", 2},
    /* the command line itself */
    {"run --frobnicate", 2},
    {"run --frobnicate=3", 2},
    {"run --inter=3", 2},
    {"run --bandwith=1GB/s", 2},
    {"run --bandwidth 1GB/s --latncy 2us", 2},
    {"run --help=yes", 2},
    {"run -x", 2},
    {"run extra", 2},
    {"run --trace=", 2},
    {"run --trace=/", 2},
    {"run --trace=/nonexistent-dir/t.json", 2},
    {"frobnicate", 2},
    {"--frobnicate", 2},
    {"--version extra", 2},
    /* coll */
    {"coll --op=alltoallv", 2},
    {"coll -f 1", 2},
    {"coll -n 0", 2},
    {"coll -b 2M -e 1M", 2},
    {"coll --human --format=json", 2},
    {"run --format=csv", 2},
    {"coll --bytes=0", 2},
    {"coll --bytes=2", 2},
    {"coll --bytes=-4", 2},
    {"coll --bytes=abc", 2},
    {"coll --bytes=4KB/s", 2},
    {"coll --bytes=1MiB:512KiB", 2},
    {"coll --bytes=1KiB:", 2},
    {"coll --bytes=:4KiB", 2},
    {"coll --bytes=2PiB", 2},
    {"coll --devices=64 --bytes=64TiB", 2},
    {"coll --devices=100", 2},
    {"coll --m=3", 2},
    {"coll --strategy=rowwise", 2},
    {"coll --algorithm=ring --op", 2},
    /* a shard that does not fit a device: the run fails */
    {"run --memory=1MiB --m=1024 --k=1024 --n=1024", 1},
    {"run --strategy=rowwise --devices=2 --memory=3MiB --m=1024 --k=1024 --n=1024", 1},
    {"run --strategy=single --memory=100KiB --m=256 --k=256 --n=256", 1},
    {"coll --memory=1MiB --bytes=2MiB", 1},
};

static void test_bad_input(void **state)
{
	(void)state;
	for (size_t i = 0; i < sizeof bad_inputs / sizeof *bad_inputs; i++) {
		tu_result r;
		tu_run(bad_inputs[i].args, &r);
		tu_expect_one_error(bad_inputs[i].args, bad_inputs[i].status, &r);
		/* Usage errors print nothing else, but for the error object
		 * --format=json asks for (test_json checks it). */
		if (bad_inputs[i].status == 2 && r.out[0] && !strstr(bad_inputs[i].args, "=json"))
			fail_msg("'%s' wrote to stdout: %s", bad_inputs[i].args, r.out);
		tu_result_free(&r);
	}
}

static void test_out_of_memory_message(void **state)
{
	(void)state;
	tu_result r;
	const char *args = "run --memory=1MiB --m=1024 --k=1024 --n=1024";
	tu_run(args, &r);
	tu_expect_one_error(args, 1, &r);
	/* It names the device, what was asked and what is free. */
	assert_non_null(strstr(r.err, "device 0"));
	assert_non_null(strstr(r.err, "2.00 MiB")); /* X, 1024 x 1024 bf16 elements */
	assert_non_null(strstr(r.err, "free"));
	tu_result_free(&r);
}

static void test_write_error(void **state)
{
	(void)state;
	tu_result r;
	const char *args = "run --m=64 --k=64 --n=64";
	tu_run_to(args, "/dev/full", &r);
	tu_expect_one_error(args, 1, &r);
	tu_result_free(&r);
}

/* What a user reads for a value without a unit and for a misspelling: one
 * line that says what to write. */
static void test_units_and_spelling_messages(void **state)
{
	(void)state;
	const struct {
		const char *args, *want;
	} cases[] = {
	    {"run --latency=5",
	     "shardlab: run: --latency: '5' has no unit: write it with one of ns, "
	     "us, ms, s (for example 5us) (see 'shardlab run --help')\n"},
	    {"run --bandwidth=100",
	     "shardlab: run: --bandwidth: '100' has no unit: write it with one "
	     "of B/s, GB/s, GiB/s, GBps (bytes) or Gb/s, Gbit/s, Gbps (bits), "
	     "where G may be K, M or T (for example 100GB/s) (see 'shardlab "
	     "run --help')\n"},
	    {"run --bandwith=1GB/s", "shardlab: run: unknown option '--bandwith' (did you mean "
	                             "'--bandwidth'?) (see 'shardlab run --help')\n"},
	    {"run --strategy=colwize", "shardlab: run: --strategy: unknown value 'colwize': did "
	                               "you mean 'colwise'? (one of: single, colwise, rowwise) "
	                               "(see 'shardlab run --help')\n"},
	    {"coll --op=allreduse", "shardlab: coll: --op: unknown value 'allreduse': did you "
	                            "mean 'allreduce'? (one of: allreduce, allgather, "
	                            "reducescatter, broadcast, reduce, gather, scatter, alltoall, "
	                            "sendrecv) (see 'shardlab coll --help')\n"},
	    {"rnu",
	     "shardlab: unknown command 'rnu' (did you mean 'run'?) (see 'shardlab --help')\n"},
	    /* Too far from any name, or too short to guess: no suggestion. */
	    {"run --x=3", "shardlab: run: unknown option '--x' (see 'shardlab run --help')\n"},
	};
	for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
		tu_result r;
		tu_run(cases[i].args, &r);
		assert_int_equal(r.status, 2);
		assert_string_equal(r.err, cases[i].want);
		tu_result_free(&r);
	}
	tu_result r;
	tu_run("run --preset=h10", &r);
	assert_non_null(strstr(r.err, "--preset: unknown preset 'h10': did you mean 'h100'?"));
	tu_result_free(&r);

	/* B is a byte and b a bit, whether "/s" or "ps" follows; 0 needs no
	 * unit. */
	const struct {
		const char *bw;
		double want;
	} rates[] = {{"100GBps", 100e9},
	             {"100GB/s", 100e9},
	             {"100Gbps", 12.5e9},
	             {"10GiBps", 10.0 * 1073741824}};
	for (size_t i = 0; i < sizeof rates / sizeof *rates; i++) {
		char args[128];
		snprintf(args, sizeof args,
		         "run --m=16 --k=16 --n=16 --latency=0 --bandwidth=%s "
		         "--format=json",
		         rates[i].bw);
		json_t *j = tu_run_json(args);
		if (tu_num(j, "bandwidth_bytes_per_s") != rates[i].want)
			fail_msg("%s: %.17g bytes/s, want %.17g", args,
			         tu_num(j, "bandwidth_bytes_per_s"), rates[i].want);
		assert_true(tu_num(j, "latency_s") == 0);
		json_decref(j);
	}
}

/* ---- help, version, presets ---- */

static void test_help_version_presets(void **state)
{
	(void)state;
	tu_result r;
	tu_run("--help", &r);
	assert_int_equal(r.status, 0);
	assert_non_null(strstr(r.out, "run"));
	assert_non_null(strstr(r.out, "coll"));
	assert_non_null(strstr(r.out, "shardlab COMMAND --help"));
	assert_string_equal(r.err, "");
	tu_result_free(&r);

	tu_run("--version", &r);
	assert_int_equal(r.status, 0);
	assert_true(strncmp(r.out, "shardlab ", 9) == 0);
	assert_non_null(strstr(r.out, "OpenBLAS"));
	assert_non_null(strstr(r.out, "MIT License"));
	assert_non_null(strstr(r.out, "Report bugs to <"));
	tu_result_free(&r);

	tu_run("--list-presets", &r);
	assert_int_equal(r.status, 0);
	for (const sl_preset *p = sl_presets(); p->name; p++)
		assert_non_null(strstr(r.out, p->name));
	assert_non_null(strstr(r.out, "989 TFLOP/s"));
	assert_non_null(strstr(r.out, "source"));
	tu_result_free(&r);

	const char *helps[] = {"run --help", "coll --help", "run -h"};
	for (size_t i = 0; i < 3; i++) {
		tu_run(helps[i], &r);
		assert_int_equal(r.status, 0);
		assert_non_null(strstr(r.out, "--devices"));
		assert_string_equal(r.err, "");
		tu_result_free(&r);
	}
}

/* ---- JSON ---- */

static const char *str(const json_t *o, const char *key)
{
	json_t *v = json_object_get(o, key);
	if (!v || !json_is_string(v))
		fail_msg("no string '%s' in the JSON", key);
	return json_string_value(v);
}

static int near(double got, double want, double rel)
{
	return fabs(got - want) <= rel * fabs(want);
}

static void test_run_json_fields(void **state)
{
	(void)state;
	json_t *j =
	    tu_run_json("run --strategy=rowwise --devices=3 --m=40 --k=50 --n=30 --format=json");
	assert_string_equal(str(j, "strategy"), "rowwise");
	assert_int_equal((int)tu_num(j, "devices"), 3);
	assert_string_equal(str(j, "timing"), "model");
	assert_string_equal(str(j, "preset"), "h100");
	double t = tu_num(j, "emulated_time_s");
	assert_true(t > 0);
	assert_true(tu_num(j, "speedup") > 0);
	assert_true(tu_num(j, "predicted_s") > 0);
	assert_true(tu_num(j, "max_abs_error") >= 0);
	assert_true(tu_num(j, "max_rel_error") < 1e-5);
	/* the h100 preset's NVLink, at the 82.2% of its line rate collectives
	 * reach (realistic, the preset's default) */
	assert_true(tu_num(j, "bandwidth_bytes_per_s") == 450e9 * 0.822);
	assert_true(tu_num(j, "latency_s") == 2e-6);
	json_t *devs = json_object_get(j, "per_device");
	assert_true(json_is_array(devs));
	assert_int_equal(json_array_size(devs), 3);
	double sent = 0;
	for (size_t i = 0; i < 3; i++) {
		json_t *d = json_array_get(devs, i);
		assert_int_equal((int)tu_num(d, "id"), (int)i);
		double c = tu_num(d, "compute_s"), m = tu_num(d, "comm_s"),
		       idle = tu_num(d, "idle_s");
		assert_true(c > 0 && m > 0 && idle >= -1e-15);
		assert_true(fabs(c + m + idle - t) <= 1e-12 * t);
		/* rowwise: device i holds k/t rows of W; 50 = 17 + 17 + 16 */
		double rows = i < 2 ? 17 : 16;
		assert_true(near(tu_num(d, "flop"), 2.0 * 40 * 30 * rows, 1e-12));
		sent += tu_num(d, "sent_bytes");
		assert_true(tu_num(d, "received_bytes") > 0);
		/* X slice, W shard, partial Y: (40 + 30) * rows + 40 * 30 elements
		 * of 2 bytes (bf16, the preset's) */
		assert_true(tu_num(d, "memory_peak_bytes") >= 2 * ((40 + 30) * rows + 40 * 30));
	}
	assert_true(tu_num(j, "moved_bytes") == sent);
	json_decref(j);
}

/* ---- emulated time against the closed forms ---- */

static void check_closed_form(const char *strategy, int t, int m, int k, int n, double bw,
                              double lat, double flops, const char *link)
{
	char args[512];
	snprintf(args, sizeof args,
	         "run --strategy=%s --devices=%d --m=%d --k=%d --n=%d %s --efficiency=ideal "
	         "--precision=fp32 --format=json",
	         strategy, t, m, k, n, link);
	json_t *j = tu_run_json(args);
	double N = (double)m * n * 4, want;
	if (strcmp(strategy, "colwise") == 0)
		want = 2.0 * m * n * k / t / flops + (t - 1) * lat + (t - 1.0) / t * N / bw;
	else if (strcmp(strategy, "rowwise") == 0)
		want = 2.0 * m * n * k / t / flops + 2 * (t - 1) * lat + 2 * (t - 1.0) / t * N / bw;
	else
		want = 2.0 * m * n * k / flops;
	double got = tu_num(j, "emulated_time_s");
	if (!near(got, want, 1e-9))
		fail_msg("%s: emulated %.17g s, closed form %.17g s", args, got, want);
	/* Against one device of the same kind. */
	assert_true(near(tu_num(j, "speedup"), 2.0 * m * n * k / flops / want, 1e-9));
	assert_true(tu_num(j, "max_rel_error") < 1e-5);
	json_decref(j);
}

static void test_closed_forms(void **state)
{
	(void)state;
	const char *link1 = "--bandwidth=100GB/s --latency=5us --flops=100TFLOP/s";
	const char *link2 = "--latency=0 --flops=20TFLOP/s --bandwidth=200Gb/s";
	const int ts[] = {2, 4, 8};
	for (int i = 0; i < 3; i++) {
		check_closed_form("colwise", ts[i], 64, 128, 96, 100e9, 5e-6, 100e12, link1);
		check_closed_form("rowwise", ts[i], 64, 128, 96, 100e9, 5e-6, 100e12, link1);
		check_closed_form("colwise", ts[i], 16, 64, 256, 25e9, 0, 20e12, link2);
		check_closed_form("rowwise", ts[i], 16, 64, 256, 25e9, 0, 20e12, link2);
	}
	check_closed_form("single", 1, 64, 128, 96, 100e9, 5e-6, 100e12, link1);
}

/* A preset first, explicit options over it, in either order. */
static void test_preset_and_overrides(void **state)
{
	(void)state;
	const char *orders[] = {
	    "run --m=16 --k=16 --n=16 --format=json --preset=a100 --bandwidth=100GB/s",
	    "run --m=16 --k=16 --n=16 --format=json --bandwidth=100GB/s --preset=a100",
	};
	for (int i = 0; i < 2; i++) {
		json_t *j = tu_run_json(orders[i]);
		assert_string_equal(str(j, "preset"), "a100");
		assert_true(tu_num(j, "bandwidth_bytes_per_s") == 100e9);
		assert_true(tu_num(j, "device_flop_per_s") == 312e12);
		assert_true(tu_num(j, "latency_s") == 2e-6);
		assert_true(tu_num(j, "inter_bandwidth_bytes_per_s") == 25e9 * 0.94);
		json_decref(j);
	}
	/* Node size: the preset's when the devices exceed a node and it divides
	 * them; one node otherwise; as given when given. */
	const struct {
		const char *args;
		int per_node, nodes;
	} layouts[] = {
	    {"--devices=16", 8, 2},
	    {"--devices=12", 12, 1},
	    {"--devices=8", 8, 1},
	    {"--devices=16 --devices-per-node=4", 4, 4},
	    {"--devices=16 --topology=ring", 16, 1},
	    {"--devices=16 --preset=host", 16, 1},
	};
	for (size_t i = 0; i < sizeof layouts / sizeof *layouts; i++) {
		char args[256];
		snprintf(args, sizeof args, "run --m=8 --k=32 --n=32 --format=json %s",
		         layouts[i].args);
		json_t *j = tu_run_json(args);
		assert_int_equal((int)tu_num(j, "devices_per_node"), layouts[i].per_node);
		assert_int_equal((int)tu_num(j, "nodes"), layouts[i].nodes);
		json_decref(j);
	}
}

/* Pacing changes wall time, never emulated time. */
static void test_slowdown_same_emulated_time(void **state)
{
	(void)state;
	const char *base = "run --strategy=rowwise --devices=2 --m=32 --k=64 --n=32 --format=json "
	                   "--bandwidth=1GB/s --latency=10us";
	char paced[256];
	snprintf(paced, sizeof paced, "%s --slowdown=1", base);
	json_t *a = tu_run_json(base), *b = tu_run_json(paced);
	assert_true(tu_num(a, "emulated_time_s") == tu_num(b, "emulated_time_s"));
	assert_true(tu_num(b, "slowdown") == 1);
	json_decref(a);
	json_decref(b);
}

/* ---- coll ---- */

static void test_coll_busbw_is_link_bandwidth(void **state)
{
	(void)state;
	const char *ops[] = {"allreduce", "allgather", "reducescatter"};
	const int ps[] = {2, 4, 8};
	for (int o = 0; o < 3; o++)
		for (int i = 0; i < 3; i++) {
			char args[256];
			snprintf(args, sizeof args,
			         "coll --op=%s --devices=%d --bytes=1MiB --bandwidth=100GB/s "
			         "--latency=0 --format=json",
			         ops[o], ps[i]);
			json_t *j = tu_run_json(args);
			assert_string_equal(str(j, "op"), ops[o]);
			assert_string_equal(str(j, "algorithm"), "ring");
			assert_int_equal((int)tu_num(j, "devices"), ps[i]);
			assert_true(tu_num(j, "size_bytes") == 1048576);
			double bus = tu_num(j, "busbw_bytes_per_s");
			if (!near(bus, 100e9, 1e-9))
				fail_msg("%s: busbw %.17g, want the link's 1e11", args, bus);
			/* algbw = bytes / time, and the closed form of the time */
			double p = ps[i], f = o == 0 ? 2 * (p - 1) / p : (p - 1) / p;
			assert_true(near(tu_num(j, "algbw_bytes_per_s"),
			                 1048576 / tu_num(j, "emulated_time_s"), 1e-12));
			assert_true(near(tu_num(j, "emulated_time_s"), f * 1048576 / 100e9, 1e-9));
			assert_true(
			    near(tu_num(j, "predicted_s"), tu_num(j, "emulated_time_s"), 1e-9));
			json_t *rows = json_object_get(j, "results");
			assert_int_equal(json_array_size(rows), 1);
			assert_true(tu_num(json_array_get(rows, 0), "busbw_bytes_per_s") == bus);
			assert_int_equal((int)tu_num(j, "wrong"), 0);
			json_decref(j);
		}
}

/* --dry-run: the full run's emulated times exactly, for every op (the
 * closed form is checked above and in test_time); and sizes no host holds.
 * Across two realistic A100 nodes of 8 the ring's busbw is eight adapters'
 * (the preset's 23.5 GB/s each), capped by nothing: 8 x 23.5 < 240. */
/* The sandbox's first screen shows a split that pays: its default product
 * on the realistic machine, timed as the view times it, is faster on the
 * four devices than on one (the review found run's default there, whose
 * quarter takes as long as the whole: one wave of output tiles each). */
static void test_sandbox_default_pays(void **state)
{
	(void)state;
	json_t *j = tu_run_json("sandbox --format=json");
	assert_true(tu_num(j, "n") > tu_num(j, "k"));
	if (!(tu_num(j, "speedup") > 1))
		fail_msg("the sandbox's default split runs at %gx of one device",
		         tu_num(j, "speedup"));
	json_decref(j);
	/* run's default is what it was. */
	j = tu_run_json("run --format=json");
	assert_true(tu_num(j, "n") == 4096);
	json_decref(j);
}

static void test_coll_dry_run(void **state)
{
	(void)state;
	const char *all[] = {"allreduce", "allgather", "reducescatter", "broadcast", "reduce",
	                     "gather",    "scatter",   "alltoall",      "sendrecv"};
	for (int i = 0; i < 9; i++) {
		char args[256];
		snprintf(args, sizeof args,
		         "coll --op=%s --devices=16 --preset=a100 --bytes=1MiB --format=json",
		         all[i]);
		json_t *full = tu_run_json(args);
		strcat(args, " --dry-run");
		json_t *dry = tu_run_json(args);
		if (tu_num(full, "emulated_time_s") != tu_num(dry, "emulated_time_s"))
			fail_msg("%s: %.17g, the full run %.17g", args,
			         tu_num(dry, "emulated_time_s"), tu_num(full, "emulated_time_s"));
		assert_int_equal((int)tu_num(dry, "wrong"), 0);
		json_decref(full);
		json_decref(dry);
	}
	json_t *j = tu_run_json("coll --devices=16 --preset=a100 --bytes=64GiB --dry-run "
	                        "--format=json");
	double p = 16, n = 64.0 * (1 << 30),
	       bx = tu_num(json_object_get(j, "inter"), "bandwidth_bytes_per_s");
	double a = tu_num(json_object_get(j, "inter"), "latency_s");
	double want = 2 * (p - 1) * a + 2 * (p - 1) / p * n / (8 * bx);
	if (!near(tu_num(j, "emulated_time_s"), want, 1e-12))
		fail_msg("64 GiB over 2 nodes: %.17g s, want %.17g", tu_num(j, "emulated_time_s"),
		         want);
	json_decref(j);
}

static void test_coll_range_and_rounding(void **state)
{
	(void)state;
	json_t *j =
	    tu_run_json("coll --op=broadcast --algorithm=tree --devices=5 --bytes=4KiB:64KiB "
	                "--format=json");
	json_t *rows = json_object_get(j, "results");
	assert_int_equal(json_array_size(rows), 5);
	for (size_t i = 0; i < 5; i++) {
		json_t *row = json_array_get(rows, i);
		assert_true(tu_num(row, "size_bytes") == 4096.0 * (1 << i));
		assert_int_equal((int)tu_num(row, "wrong"), 0);
		assert_true(tu_num(row, "emulated_time_s") > 0);
	}
	assert_true(tu_num(j, "size_bytes") == 4096);
	json_decref(j);

	/* Whole fp32 elements: 1001 B is 250 of them, and it says so. */
	tu_result r;
	tu_run("coll --devices=3 --op=gather --bytes=1001 --format=json", &r);
	assert_int_equal(r.status, 0);
	assert_int_equal(tu_count_lines(r.err), 1);
	assert_non_null(strstr(r.err, "1000"));
	json_t *k = json_loads(r.out, 0, NULL);
	assert_non_null(k);
	assert_true(tu_num(k, "size_bytes") == 1000);
	assert_true(tu_num(k, "count") == 250);
	json_decref(k);
	tu_result_free(&r);

	/* Every collective gives the right answer, uneven splits included. */
	const char *all[] = {"allreduce", "allgather", "reducescatter", "broadcast", "reduce",
	                     "gather",    "scatter",   "alltoall",      "sendrecv"};
	for (int i = 0; i < 9; i++)
		for (int a = 0; a < 2; a++) {
			char args[256];
			snprintf(args, sizeof args,
			         "coll --op=%s --algorithm=%s --devices=7 --bytes=4004", all[i],
			         a ? "tree" : "ring");
			tu_run(args, &r);
			if (r.status != 0)
				fail_msg("'%s' exited %d: %s", args, r.status, r.err);
			assert_non_null(strstr(r.out, "#wrong"));
			assert_non_null(strstr(r.out, "# Out of bounds values : 0 OK"));
			tu_result_free(&r);
		}
}

/* ---- trace ---- */

static void test_trace_file(void **state)
{
	(void)state;
	char path[256];
	const char *dir = getenv("TMPDIR");
	snprintf(path, sizeof path, "%s/test_cli_trace_%d.json", dir && *dir ? dir : "/tmp",
	         (int)getpid());
	char args[512];
	snprintf(args, sizeof args, "run --devices=3 --m=16 --k=24 --n=30 --trace=%s", path);
	tu_result r;
	tu_run(args, &r);
	assert_int_equal(r.status, 0);
	assert_non_null(strstr(r.out, "PASS"));
	tu_result_free(&r);
	json_error_t jerr;
	json_t *j = json_load_file(path, 0, &jerr);
	if (!j)
		fail_msg("trace is not JSON: %s", jerr.text);
	json_t *ev = json_object_get(j, "traceEvents");
	assert_true(json_is_array(ev));
	size_t compute = 0, sends = 0;
	for (size_t i = 0; i < json_array_size(ev); i++) {
		json_t *e = json_array_get(ev, i), *a = json_object_get(e, "args");
		const char *kind = a ? json_string_value(json_object_get(a, "kind")) : NULL;
		if (kind && strcmp(kind, "compute") == 0)
			compute++;
		if (kind && strcmp(kind, "send") == 0)
			sends++;
	}
	assert_int_equal(compute, 3); /* one sgemm per device */
	assert_true(sends >= 3 * 2);  /* ring all-gather: p-1 steps per device */
	json_decref(j);
	unlink(path);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_bad_input),
	    cmocka_unit_test(test_units_and_spelling_messages),
	    cmocka_unit_test(test_out_of_memory_message),
	    cmocka_unit_test(test_write_error),
	    cmocka_unit_test(test_help_version_presets),
	    cmocka_unit_test(test_run_json_fields),
	    cmocka_unit_test(test_closed_forms),
	    cmocka_unit_test(test_preset_and_overrides),
	    cmocka_unit_test(test_slowdown_same_emulated_time),
	    cmocka_unit_test(test_coll_busbw_is_link_bandwidth),
	    cmocka_unit_test(test_coll_range_and_rounding),
	    cmocka_unit_test(test_coll_dry_run),
	    cmocka_unit_test(test_sandbox_default_pays),
	    cmocka_unit_test(test_trace_file),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
