/* SPDX-License-Identifier: MIT */
/* test_cli_plan.c - `shardlab plan` and `--dry-run` from the outside: exit
 * statuses and one-line errors, the JSON report's fields and order, and a
 * dry run's figures against the full run's. */
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

static json_t *json_of(const char *args, tu_result *r)
{
	tu_run(args, r);
	if (!r->exited || r->status != 0)
		fail_msg("'%s' exited %d: %s", args, r->status, r->err);
	json_error_t je;
	json_t *j = json_loads(r->out, 0, &je);
	if (!j)
		fail_msg("'%s': not JSON: %s", args, je.text);
	return j;
}

/* ---- plan ---- */

static void test_plan_bad_input(void **state)
{
	(void)state;
	static const struct {
		const char *args, *says;
	} bad[] = {
	    {"plan --devices=8 --layers=1 --heads=3 --hidden=9 --batch=1",
	     "no layout fills 8 devices"},
	    {"plan --devices=4 --memory=4KiB", "no layout fits in 4.00 KiB per device"},
	    /* 70B's 16 bytes a parameter over 8 devices: the batch cannot help
	     * (the message whole, its end not cut) */
	    {"plan --model=llama-3-70b --devices=8 --batch=8 --preset=h100",
	     "of it weights, gradients and Adam state; add devices or memory, or shrink the model "
	     "(--seq, --batch cannot help)"},
	    {"plan --preset=a100 --devices=128 --model=megatron-1t --batch=128",
	     "(--seq, --batch cannot help)"},
	    {"plan --devices=20000", "out of range"},
	    {"plan --devices=12 --devices-per-node=5", "does not divide"},
	    {"plan --heads=5", "--hidden=128 does not split into 5 heads"},
	    {"plan --top=-1", "--top"},
	    {"plan --trace=x.json", "unknown option '--trace'"},
	    {"plan --timing=measured", "unknown option '--timing'"},
	    {"plan --layers=0", "--layers"},
	    {"plan --grad-accumulation=sometimes",
	     "--grad-accumulation: unknown value 'sometimes' (one of: fused, separate)"},
	    {"plan extra", "unexpected argument"},
	    {"plan --devices=8 --cp=2 --attention=materialized",
	     "--cp=2 runs ring attention as fused kernels"},
	    {"plan --devices=6 --cp=4 --attention=flash", "--cp=4 does not divide the 6 devices"},
	};
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		tu_result r;
		tu_run(bad[i].args, &r);
		tu_expect_one_error(bad[i].args, 2, &r);
		if (!strstr(r.err, bad[i].says))
			fail_msg("'%s': want '%s' in: %s", bad[i].args, bad[i].says, r.err);
		tu_result_free(&r);
	}
}

static void test_plan_text(void **state)
{
	(void)state;
	tu_result r;
	tu_run("plan --devices=8 --top=5", &r);
	assert_true(r.exited && r.status == 0);
	assert_non_null(strstr(r.out, "shardlab plan:"));
	assert_non_null(strstr(r.out, "rank"));
	assert_non_null(strstr(r.out, "\nBest: "));
	assert_non_null(strstr(r.out, "--top=0 shows them all"));
	tu_result_free(&r);
	tu_run("plan --help", &r);
	assert_true(r.exited && r.status == 0);
	assert_non_null(strstr(r.out, "Usage: shardlab plan"));
	tu_result_free(&r);
}

/* Every row, ranked by step time, then memory; rejected rows last, each
 * over the device's memory and saying so; best = rank 1. */
/* Uneven stages from the outside: --stage-layers keeps the plan to one
 * split (JSON names it in the constraints and in every pipelined row), and
 * CSV's last column names each row's. */
static void test_plan_stage_layers(void **state)
{
	(void)state;
	tu_result r;
	const char *model = "plan --devices=2 --layers=7 --hidden=16 --ffn=32 --heads=4 --seq=4 "
	                    "--batch=8";
	char args[400];
	snprintf(args, sizeof args, "%s --stage-layers=ends --format=json", model);
	json_t *j = json_of(args, &r);
	assert_string_equal(
	    json_string_value(json_object_get(json_object_get(j, "constraints"), "stage_layers")),
	    "ends");
	json_t *rows = json_object_get(j, "layouts");
	int pipelined = 0;
	for (size_t i = 0; i < json_array_size(rows); i++) {
		json_t *l = json_array_get(rows, i);
		assert_string_equal(json_string_value(json_object_get(l, "stage_layers")), "ends");
		pipelined += tu_num(l, "pp") > 1;
	}
	assert_true(pipelined > 0);
	json_decref(j);
	tu_result_free(&r);
	snprintf(args, sizeof args, "%s --format=csv", model);
	tu_run(args, &r);
	assert_int_equal(r.status, 0);
	const char *nl = strchr(r.out, '\n');
	assert_non_null(nl);
	const char *tail = ",stage_layers,cp,cp_comm,overlap,bucket_bytes";
	size_t tl = strlen(tail);
	assert_true(nl - r.out > (long)tl && strncmp(nl - tl, tail, tl) == 0);
	/* (h100's realistic machine: overlap on, PyTorch's 25 MiB bucket
	 * unless the search moved it) */
	assert_non_null(strstr(r.out, ",ends,1,ring,on,"));
	assert_non_null(strstr(r.out, ",even,1,ring,on,26214400\n"));
	tu_result_free(&r);
}

static void test_plan_json(void **state)
{
	(void)state;
	tu_result r;
	json_t *j =
	    json_of("plan --devices=8 --devices-per-node=4 --layers=4 --hidden=64 --ffn=256 "
	            "--heads=4 --seq=64 --batch=16 --memory=2MiB --format=json",
	            &r);
	json_t *rows = json_object_get(j, "layouts");
	assert_true(json_is_array(rows));
	size_t n = json_array_size(rows);
	int fit = (int)tu_num(j, "fit");
	assert_int_equal((int)tu_num(j, "candidates"), (int)n);
	assert_true(fit > 0 && (size_t)fit < n);
	double mem = tu_num(json_object_get(j, "cluster"), "memory_per_device_bytes");
	double prev = 0;
	for (size_t i = 0; i < n; i++) {
		json_t *o = json_array_get(rows, i);
		int fits = json_is_true(json_object_get(o, "fits"));
		assert_int_equal(fits, (int)i < fit);
		double peak = tu_num(o, "memory_peak_bytes");
		if (fits) {
			assert_int_equal((int)tu_num(o, "rank"), (int)i + 1);
			double t = tu_num(o, "step_time_s");
			assert_true(t >= prev * (1 - 1e-12));
			prev = t;
			assert_true(peak <= mem);
			assert_true(tu_num(o, "tokens_per_s") > 0 &&
			            tu_num(o, "device_model_flop_per_s") > 0);
			assert_true(tu_num(o, "comm_fraction") >= 0 &&
			            tu_num(o, "comm_fraction") <= 1);
			assert_true(tu_num(o, "bubble_fraction") >= 0);
			assert_non_null(json_object_get(o, "tp_link"));
		} else {
			assert_true(json_is_null(json_object_get(o, "rank")));
			assert_true(peak > mem);
			assert_true(json_is_string(json_object_get(o, "rejected")));
		}
		assert_true(tu_num(o, "memory_params_bytes") + tu_num(o, "memory_grads_bytes") +
		                tu_num(o, "memory_optimizer_bytes") +
		                tu_num(o, "memory_activations_peak_bytes") <=
		            peak);
	}
	json_t *best = json_object_get(j, "best");
	assert_int_equal((int)tu_num(best, "rank"), 1);
	assert_true(tu_num(best, "step_time_s") == tu_num(json_array_get(rows, 0), "step_time_s"));
	assert_true(strstr(json_string_value(json_object_get(j, "explanation")), "Best: ") != NULL);
	json_decref(j);
	tu_result_free(&r);
}

/* The rows of plan `all` that have tp=2, 2 micro-batches and (plain)
 * neither sequence parallelism nor ZeRO-1 are exactly plan `some`'s, with
 * the same step times. */
static void same_subset(json_t *all, json_t *some, int plain)
{
	json_t *ar = json_object_get(all, "layouts"), *sr = json_object_get(some, "layouts");
	size_t want = 0;
	for (size_t i = 0; i < json_array_size(ar); i++) {
		json_t *o = json_array_get(ar, i);
		if (tu_num(o, "tp") != 2 || tu_num(o, "microbatches") != 2)
			continue;
		if (plain && (json_is_true(json_object_get(o, "sequence_parallel")) ||
		              json_is_true(json_object_get(o, "zero1"))))
			continue;
		want++;
		int found = 0;
		for (size_t k = 0; k < json_array_size(sr) && !found; k++) {
			json_t *q = json_array_get(sr, k);
			const char *keys[] = {"pp", "dp", "chunks"};
			int same = 1;
			for (int x = 0; x < 3; x++)
				same &= tu_num(q, keys[x]) == tu_num(o, keys[x]);
			same &=
			    json_equal(json_object_get(q, "schedule"),
			               json_object_get(o, "schedule")) &&
			    json_equal(json_object_get(q, "sequence_parallel"),
			               json_object_get(o, "sequence_parallel")) &&
			    json_equal(json_object_get(q, "zero1"), json_object_get(o, "zero1")) &&
			    json_equal(json_object_get(q, "mesh_order"),
			               json_object_get(o, "mesh_order"));
			if (same) {
				found = 1;
				assert_true(tu_num(q, "step_time_s") == tu_num(o, "step_time_s"));
			}
		}
		assert_true(found);
	}
	assert_true(want > 0);
	assert_int_equal(json_array_size(sr), want);
}

/* --tp, --pp, --dp and --microbatches keep the plan to those layouts, and
 * --no-sequence-parallel --no-zero1 to those without either: the
 * constrained plan lists exactly the unconstrained plan's rows of that
 * kind, with the same figures. */
/* --grad-accumulation: the report names it, and on the realistic machine
 * the separate pass makes the same layout's step longer (by the bytes
 * test_estimate's closed form counts); the FLOPs are the same. */
static void test_plan_grad_accumulation(void **state)
{
	(void)state;
	const char *base =
	    "plan --preset=a100 --devices=8 --tp=2 --pp=2 --microbatches=4 --layers=4 "
	    "--hidden=256 --ffn=1024 --heads=4 --seq=128 --batch=16 --top=1 "
	    "--format=json";
	double t[2] = {0}, fl[2] = {0};
	for (int sep = 0; sep < 2; sep++) {
		char args[400];
		snprintf(args, sizeof args, "%s%s", base,
		         sep ? " --grad-accumulation=separate" : "");
		tu_result r;
		json_t *j = json_of(args, &r);
		json_t *ga = json_object_get(json_object_get(j, "model"), "grad_accumulation");
		assert_string_equal(json_string_value(ga), sep ? "separate" : "fused");
		json_t *row = json_array_get(json_object_get(j, "layouts"), 0);
		t[sep] = tu_num(row, "step_time_s");
		fl[sep] = tu_num(j, "step_model_flop");
		json_decref(j);
		tu_result_free(&r);
	}
	assert_true(t[1] > t[0]);
	assert_true(fl[1] == fl[0]);
}

static void test_plan_fixed_degrees(void **state)
{
	(void)state;
	const char *model = "--devices=8 --devices-per-node=4 --layers=4 --hidden=64 --ffn=256 "
	                    "--heads=4 --seq=64 --batch=16 --format=json --top=0";
	char args[400];
	tu_result ra, rb, rc;
	snprintf(args, sizeof args, "plan %s", model);
	json_t *all = json_of(args, &ra);
	snprintf(args, sizeof args, "plan %s --tp=2 --microbatches=2", model);
	json_t *some = json_of(args, &rb);
	same_subset(all, some, 0);
	/* and without sequence parallelism and ZeRO-1 (a 2021 run's layouts) */
	snprintf(args, sizeof args,
	         "plan %s --tp=2 --microbatches=2 --no-sequence-parallel --no-zero1", model);
	json_t *plain = json_of(args, &rc);
	same_subset(all, plain, 1);
	/* and the report says what it was kept to (null: every value tried) */
	json_t *ka = json_object_get(all, "constraints"),
	       *kp = json_object_get(plain, "constraints");
	assert_true(json_is_null(json_object_get(ka, "tp")) &&
	            json_is_null(json_object_get(ka, "zero1")));
	assert_true(tu_num(kp, "tp") == 2 && tu_num(kp, "microbatches") == 2 &&
	            json_is_null(json_object_get(kp, "pp")) &&
	            json_is_false(json_object_get(kp, "sequence_parallel")) &&
	            json_is_false(json_object_get(kp, "zero1")));
	/* each filter alone drops its own kind only */
	const char *alone[] = {"--no-sequence-parallel", "--no-zero1"};
	for (int f = 0; f < 2; f++) {
		tu_result rf;
		snprintf(args, sizeof args, "plan %s %s", model, alone[f]);
		json_t *one = json_of(args, &rf);
		json_t *rows = json_object_get(one, "layouts");
		int sp = 0, z1 = 0;
		for (size_t i = 0; i < json_array_size(rows); i++) {
			json_t *o = json_array_get(rows, i);
			sp += json_is_true(json_object_get(o, "sequence_parallel"));
			z1 += json_is_true(json_object_get(o, "zero1"));
		}
		assert_true(f == 0 ? sp == 0 && z1 > 0 : z1 == 0 && sp > 0);
		json_decref(one);
		tu_result_free(&rf);
	}
	/* a schedule and chunk count: only those rows, and the report says so */
	{
		tu_result rs;
		snprintf(args, sizeof args, "plan %s --schedule=interleaved --chunks=2", model);
		json_t *one = json_of(args, &rs);
		json_t *rows = json_object_get(one, "layouts"),
		       *k = json_object_get(one, "constraints");
		assert_true(json_array_size(rows) > 0);
		for (size_t i = 0; i < json_array_size(rows); i++) {
			json_t *o = json_array_get(rows, i);
			assert_string_equal(json_string_value(json_object_get(o, "schedule")),
			                    "interleaved");
			assert_true(tu_num(o, "chunks") == 2);
		}
		assert_string_equal(json_string_value(json_object_get(k, "schedule")),
		                    "interleaved");
		assert_true(tu_num(k, "chunks") == 2);
		json_decref(one);
		tu_result_free(&rs);
	}
	json_decref(all);
	json_decref(some);
	json_decref(plain);
	tu_result_free(&ra);
	tu_result_free(&rb);
	tu_result_free(&rc);
	/* A degree no layout has: one line saying which. */
	tu_result r;
	tu_run("plan --devices=8 --tp=3 --layers=4 --hidden=64 --ffn=256 --heads=4", &r);
	tu_expect_one_error("plan --tp=3", 2, &r);
	assert_non_null(strstr(r.err, "no valid layout of 8 devices has tp=3"));
	tu_result_free(&r);
	/* with a schedule too, the degree is still what the line blames */
	tu_run(
	    "plan --devices=8 --tp=3 --schedule=gpipe --layers=4 --hidden=64 --ffn=256 --heads=4",
	    &r);
	tu_expect_one_error("plan --tp=3 --schedule=gpipe", 2, &r);
	assert_non_null(strstr(r.err, "no valid layout of 8 devices has tp=3"));
	tu_result_free(&r);
	/* a schedule that cannot have the chunks asked for says why */
	tu_run("plan --devices=8 --chunks=2 --schedule=1f1b --layers=4 --hidden=64 --ffn=256 "
	       "--heads=4",
	       &r);
	tu_expect_one_error("plan --chunks=2 --schedule=1f1b", 2, &r);
	assert_non_null(strstr(r.err, "only the interleaved schedule has more than one chunk"));
	tu_result_free(&r);
	tu_run("plan --devices=8 --chunks=1 --schedule=interleaved --layers=4 --hidden=64 "
	       "--ffn=256 --heads=4",
	       &r);
	tu_expect_one_error("plan --chunks=1 --schedule=interleaved", 2, &r);
	assert_non_null(strstr(r.err, "the interleaved schedule has 2 chunks a device or more"));
	assert_null(strstr(r.err, " given")); /* nothing else was fixed */
	tu_result_free(&r);
	/* degrees that allow layouts, but none of this schedule: the line
	 * says what was given, and the schedule's rules */
	tu_run("plan --devices=8 --pp=2 --microbatches=1 --schedule=interleaved --layers=4 "
	       "--hidden=64 --ffn=256 --heads=4 --batch=8",
	       &r);
	tu_expect_one_error("plan --pp=2 --microbatches=1 --schedule=interleaved", 2, &r);
	assert_non_null(strstr(r.err, "no valid layout of 8 devices with the degrees and "
	                              "micro-batches given has schedule interleaved"));
	assert_non_null(strstr(r.err, "a micro-batch count that pp divides"));
	tu_result_free(&r);
	/* and a chunk count above the 8 the plan tries unasked is planned */
	tu_run("plan --devices=8 --pp=2 --chunks=16 --layers=32 --hidden=64 --ffn=256 --heads=4 "
	       "--batch=4 --format=json",
	       &r);
	assert_int_equal(r.status, 0);
	assert_non_null(strstr(r.out, "\"chunks\": 16"));
	tu_result_free(&r);
}

/* 1024 devices are allowed in a plan (it runs nothing). */
static void test_plan_many_devices(void **state)
{
	(void)state;
	tu_result r;
	json_t *j =
	    json_of("plan --devices=1024 --layers=4 --hidden=64 --ffn=256 --heads=8 --seq=16 "
	            "--batch=1024 --format=json",
	            &r);
	assert_int_equal((int)tu_num(json_object_get(j, "cluster"), "devices"), 1024);
	assert_int_equal((int)tu_num(json_object_get(j, "cluster"), "nodes"), 128);
	assert_true(tu_num(j, "fit") > 0);
	json_decref(j);
	tu_result_free(&r);
}

/* OPT-175B's published layout (Zhang et al. 2022, section 2.4: 992 80GB
 * A100s, fully sharded data parallel with 8-way tensor parallelism) fits
 * only sharded: under ZeRO-1 each device keeps an eighth of 175B bf16
 * weights and gradients, 4 * 175e9 / 8 bytes = 81.5 GiB, over its 80;
 * under ZeRO-3 the weights are split 124 ways too. */
static void test_plan_opt_175b(void **state)
{
	(void)state;
	const char *base = "plan --model=opt-175b --devices=992 --devices-per-node=8 --preset=a100 "
	                   "--tp=8 --pp=1 --microbatches=1 --format=json --top=0";
	char args[300];
	tu_result r1;
	snprintf(args, sizeof args, "%s --zero=1", base);
	tu_run(args, &r1);
	tu_expect_one_error(args, 2, &r1);
	if (!strstr(r1.err, "weights, gradients and Adam state; shard them over the replicas "
	                    "(--zero=3), add devices"))
		fail_msg("%s: %s", args, r1.err);
	tu_result_free(&r1);
	for (int z = 2; z <= 3; z++) {
		tu_result r;
		snprintf(args, sizeof args, "%s --zero=%d", base, z);
		json_t *j = json_of(args, &r);
		json_t *rows = json_object_get(j, "layouts");
		assert_true(json_array_size(rows) > 0);
		for (size_t i = 0; i < json_array_size(rows); i++) {
			json_t *o = json_array_get(rows, i);
			assert_int_equal((int)tu_num(o, "tp"), 8);
			assert_int_equal((int)tu_num(o, "dp"), 124);
			assert_int_equal((int)tu_num(o, "zero"), z);
			/* ZeRO-2 keeps the weights whole; ZeRO-3 splits the blocks' 124
			 * ways (350 MB) and keeps the root whole (the embedding and
			 * positions, 205 MB) */
			double w = tu_num(o, "memory_params_bytes");
			assert_true(z == 2 ? w >= 2.0 * 174e9 / 8 : w < 0.6e9);
		}
		assert_true(tu_num(j, "fit") > 0 &&
		            json_is_true(json_object_get(json_array_get(rows, 0), "fits")));
		json_decref(j);
		tu_result_free(&r);
	}
}

/* Context parallelism kept to: every row has cp = 2 and dp the devices
 * over tp x cp x pp, and one row fits; Llama 3.1 405B on 576 H100s at
 * NeMo's TP8 PP9 CP2 (make bench times it) fits without full recomputation. */
static void test_plan_cp(void **state)
{
	(void)state;
	tu_result r;
	json_t *j = json_of("plan --devices=8 --cp=2 --attention=flash --heads=4 --hidden=32 "
	                    "--ffn=64 --seq=24 --batch=8 --layers=4 --format=json --top=0",
	                    &r);
	json_t *rows = json_object_get(j, "layouts");
	assert_true(json_array_size(rows) > 0);
	for (size_t i = 0; i < json_array_size(rows); i++) {
		json_t *o = json_array_get(rows, i);
		int tp = (int)tu_num(o, "tp"), pp = (int)tu_num(o, "pp"), dp = (int)tu_num(o, "dp");
		assert_int_equal((int)tu_num(o, "cp"), 2);
		assert_int_equal(tp * pp * dp * 2, 8);
	}
	assert_true(json_is_true(json_object_get(json_array_get(rows, 0), "fits")));
	json_decref(j);
	tu_result_free(&r);
}

/* ---- --dry-run ---- */

static void test_run_dry_run(void **state)
{
	(void)state;
	tu_result a, b;
	json_t *full = json_of("run --devices=8 --devices-per-node=4 --m=256 --k=512 --n=512 "
	                       "--strategy=rowwise --format=json",
	                       &a);
	json_t *dry = json_of("run --devices=8 --devices-per-node=4 --m=256 --k=512 --n=512 "
	                      "--strategy=rowwise --format=json --dry-run",
	                      &b);
	assert_true(json_is_false(json_object_get(full, "timing_only")));
	assert_true(json_is_true(json_object_get(dry, "timing_only")));
	assert_string_equal(json_string_value(json_object_get(dry, "check")), "none");
	assert_true(json_is_null(json_object_get(dry, "max_rel_error")));
	assert_string_equal(json_string_value(json_object_get(full, "check")), "pass");
	static const char *same[] = {"emulated_time_s", "predicted_s", "compute_s", "comm_s",
	                             "moved_bytes"};
	for (size_t i = 0; i < sizeof same / sizeof *same; i++)
		if (tu_num(full, same[i]) != tu_num(dry, same[i]))
			fail_msg("%s: %.17g full, %.17g dry run", same[i], tu_num(full, same[i]),
			         tu_num(dry, same[i]));
	json_decref(full);
	json_decref(dry);
	tu_result_free(&a);
	tu_result_free(&b);
}

static void test_dry_run_limits(void **state)
{
	(void)state;
	tu_result r;
	tu_run("run --devices=100", &r);
	tu_expect_one_error("run --devices=100", 2, &r);
	assert_non_null(strstr(r.err, "--dry-run"));
	tu_result_free(&r);
	tu_run("run --dry-run --timing=measured", &r);
	tu_expect_one_error("run --dry-run --timing=measured", 2, &r);
	tu_result_free(&r);
	tu_run("run --devices=1025 --dry-run", &r);
	tu_expect_one_error("run --devices=1025 --dry-run", 2, &r);
	tu_result_free(&r);
	/* A plan runs no device: it goes further (3,072 devices here, a
	 * published run's), its groups not. */
	json_t *p3 = json_of("plan --devices=3072 --devices-per-node=8 --layers=64 --hidden=512 "
	                     "--ffn=2048 --heads=8 --seq=64 --batch=3072 --tp=8 --pp=64 "
	                     "--microbatches=8 --format=json",
	                     &r);
	json_t *best = json_object_get(p3, "best");
	assert_int_equal(json_integer_value(json_object_get(best, "dp")), 6);
	assert_int_equal(
	    json_integer_value(json_object_get(json_object_get(p3, "cluster"), "devices")), 3072);
	json_decref(p3);
	tu_result_free(&r);
	/* and to 16,384 (Llama 3 405B's 16,384 H100s: arXiv 2407.21783, Table 4,
	 * TP8 PP16 DP128), every degree within a group's 1,024 */
	json_t *p4 = json_of("plan --devices=16384 --devices-per-node=8 --layers=16 --hidden=512 "
	                     "--ffn=2048 --heads=8 --seq=64 --batch=2048 --tp=8 --pp=16 "
	                     "--microbatches=4 --schedule=1f1b --format=json",
	                     &r);
	best = json_object_get(p4, "best");
	assert_int_equal(json_integer_value(json_object_get(best, "dp")), 16384 / (8 * 16));
	assert_int_equal(
	    json_integer_value(json_object_get(json_object_get(p4, "cluster"), "devices")), 16384);
	json_decref(p4);
	tu_result_free(&r);
	tu_run("plan --devices=16385", &r);
	tu_expect_one_error("plan --devices=16385", 2, &r);
	assert_non_null(strstr(r.err, "16384"));
	tu_result_free(&r);
	/* a degree over 1,024 is no layout, and the refusal says so */
	tu_run("plan --devices=2048 --tp=1 --pp=1", &r);
	tu_expect_one_error("plan --devices=2048 --tp=1 --pp=1", 2, &r);
	assert_non_null(strstr(r.err, "each at most 1024"));
	tu_result_free(&r);
	tu_run("plan --devices=2053 --heads=0 --batch=2053", &r);
	tu_expect_one_error("plan --devices=2053 --heads=0 --batch=2053", 2, &r);
	assert_non_null(strstr(r.err, "each at most 1024"));
	tu_result_free(&r);
	tu_run("run --devices=3072 --dry-run", &r);
	tu_expect_one_error("run --devices=3072 --dry-run", 2, &r);
	assert_non_null(strstr(r.err, "1024"));
	tu_result_free(&r);
	tu_run("run --devices=256 --dry-run --m=64 --k=1024 --n=64 --strategy=rowwise", &r);
	assert_true(r.exited && r.status == 0);
	assert_non_null(strstr(r.out, "dry run     timing only"));
	assert_non_null(strstr(r.out, "check           none"));
	tu_result_free(&r);
}

/* train --dry-run: the same step time, bubble, memory and traffic as the
 * full run, no losses, and models no host could hold. */
static void test_train_dry_run(void **state)
{
	(void)state;
	tu_result a, b;
	const char *args =
	    "train --tp=2 --pp=2 --dp=2 --microbatches=4 --sequence-parallel --zero1 "
	    "--steps=2 --format=json";
	char dargs[300];
	snprintf(dargs, sizeof dargs, "%s --dry-run", args);
	json_t *full = json_of(args, &a);
	json_t *dry = json_of(dargs, &b);
	assert_string_equal(json_string_value(json_object_get(full, "check")), "pass");
	assert_string_equal(json_string_value(json_object_get(dry, "check")), "none");
	assert_true(json_is_true(json_object_get(dry, "timing_only")));
	assert_true(json_is_null(json_array_get(json_object_get(dry, "losses"), 0)));
	static const char *same[] = {"step_time_s", "predicted_step_s", "bubble_fraction",
	                             "idle_fraction", "step_flop"};
	for (size_t i = 0; i < sizeof same / sizeof *same; i++)
		if (tu_num(full, same[i]) != tu_num(dry, same[i]))
			fail_msg("%s: %.17g full, %.17g dry run", same[i], tu_num(full, same[i]),
			         tu_num(dry, same[i]));
	json_t *df = json_object_get(full, "per_device"), *dd = json_object_get(dry, "per_device");
	for (size_t i = 0; i < json_array_size(df); i++)
		assert_true(tu_num(json_array_get(df, i), "memory_peak_bytes") ==
		            tu_num(json_array_get(dd, i), "memory_peak_bytes"));
	json_decref(full);
	json_decref(dry);
	tu_result_free(&a);
	tu_result_free(&b);

	/* a model no host holds: refused in full, run timing-only */
	const char *big = "train --tp=8 --layers=2 --hidden=8192 --ffn=32768 --heads=64 --seq=2048 "
	                  "--batch=8 --microbatches=8 --steps=1";
	tu_run(big, &a);
	tu_expect_one_error(big, 2, &a);
	assert_non_null(strstr(a.err, "--dry-run"));
	tu_result_free(&a);
	snprintf(dargs, sizeof dargs, "%s --dry-run --format=json", big);
	dry = json_of(dargs, &b);
	assert_true(tu_num(dry, "step_time_s") > 0);
	json_decref(dry);
	tu_result_free(&b);
}

static void test_sandbox_dry_run_limit(void **state)
{
	(void)state;
	tu_result r;
	tu_run("sandbox --tp=8 --pp=16 --dry-run", &r);
	tu_expect_one_error("sandbox --tp=8 --pp=16 --dry-run", 2, &r);
	assert_non_null(strstr(r.err, "up to 64"));
	tu_result_free(&r);
	/* checkpoints hold values: a dry run has none to save or show */
	static const char *none[] = {"train --dry-run --save=/nonexistent/ck",
	                             "train --dry-run --load=/nonexistent/ck",
	                             "sandbox --dry-run --load=/nonexistent/ck"};
	for (size_t i = 0; i < sizeof none / sizeof *none; i++) {
		tu_run(none[i], &r);
		tu_expect_one_error(none[i], 2, &r);
		assert_non_null(strstr(r.err, "--dry-run"));
		tu_result_free(&r);
	}
}

/* Without attention a sequence is one token unless --seq says otherwise,
 * for plan as for train: the same options plan what train runs. */
static void test_seq_without_attention(void **state)
{
	(void)state;
	tu_result r;
	const char *cases[][2] = {{"--seq=512", "512"}, {"", "1"}};
	for (int i = 0; i < 2; i++) {
		char args[256];
		snprintf(args, sizeof args,
		         "plan --devices=4 --heads=0 %s --batch=16 --top=1 --format=json",
		         cases[i][0]);
		json_t *j = json_of(args, &r);
		assert_int_equal((int)tu_num(json_object_get(j, "model"), "seq"),
		                 atoi(cases[i][1]));
		json_decref(j);
		tu_result_free(&r);
		snprintf(
		    args, sizeof args,
		    "train --devices=1 --heads=0 %s --batch=16 --steps=1 --dry-run --format=json",
		    cases[i][0]);
		j = json_of(args, &r);
		assert_int_equal((int)tu_num(json_object_get(j, "model"), "seq"),
		                 atoi(cases[i][1]));
		json_decref(j);
		tu_result_free(&r);
	}
}

int main(void)
{
	tu_watchdog(900);
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_plan_bad_input),
	    cmocka_unit_test(test_plan_text),
	    cmocka_unit_test(test_plan_json),
	    cmocka_unit_test(test_plan_stage_layers),
	    cmocka_unit_test(test_plan_many_devices),
	    cmocka_unit_test(test_plan_opt_175b),
	    cmocka_unit_test(test_plan_cp),
	    cmocka_unit_test(test_plan_grad_accumulation),
	    cmocka_unit_test(test_plan_fixed_degrees),
	    cmocka_unit_test(test_run_dry_run),
	    cmocka_unit_test(test_dry_run_limits),
	    cmocka_unit_test(test_train_dry_run),
	    cmocka_unit_test(test_sandbox_dry_run_limit),
	    cmocka_unit_test(test_seq_without_attention),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
